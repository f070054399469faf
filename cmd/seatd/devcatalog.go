package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The demo catalog `seatd dev` creates so that a new user can browse right
// away: two cities, three cinemas, four movies, and shows over the next
// devCatalogDays days. The demo show is listed too, on the Grand Rex's
// Grande Salle, whose layout is the demo show's. Every call is idempotent
// (derived request and show ids), so a restart on the same data dir adds
// only the shows of days it had not scheduled yet.

// devCatalogDays is how many days, from today, get shows.
const devCatalogDays = 3

// devScreening is one daily show of a movie on a screen, at a local time.
type devScreening struct {
	cinema, screen, movie string
	hour, minute          int
}

var (
	devCities = []*ledgerpb.City{
		{CityId: "london", Name: "London", TimeZone: "Europe/London"},
		{CityId: "paris", Name: "Paris", TimeZone: "Europe/Paris"},
	}
	devMovies = []*ledgerpb.Movie{
		{MovieId: "dune-part-two", Title: "Dune: Part Two", DurationMinutes: 166},
		{MovieId: "the-matrix", Title: "The Matrix", DurationMinutes: 136},
		{MovieId: "amelie", Title: "Le Fabuleux Destin d'Amélie Poulain", DurationMinutes: 122},
		{MovieId: "spirited-away", Title: "Spirited Away", DurationMinutes: 125},
	}
	devScreenings = []devScreening{
		{"odeon-leicester-square", "1", "dune-part-two", 14, 0},
		{"odeon-leicester-square", "1", "dune-part-two", 20, 30},
		{"odeon-leicester-square", "imax", "the-matrix", 18, 0},
		{"prince-charles", "main", "spirited-away", 16, 0},
		{"prince-charles", "main", "the-matrix", 21, 0},
		{"le-grand-rex", "grande-salle", "dune-part-two", 19, 0},
		{"le-grand-rex", "salle-2", "amelie", 17, 15},
	}
)

// devCinemas builds the demo cinemas.
func devCinemas() []*ledgerpb.Cinema {
	gbp := func(std, prem int64) []*ledgerpb.Category {
		return []*ledgerpb.Category{{Name: "standard", PriceMinor: std, Currency: "GBP"}, {Name: "premium", PriceMinor: prem, Currency: "GBP"}}
	}
	demo := demoShow()
	return []*ledgerpb.Cinema{
		{CinemaId: "odeon-leicester-square", CityId: "london", Name: "Odeon Luxe Leicester Square", Address: "24-26 Leicester Square, London WC2H 7JY",
			Screens: []*ledgerpb.Screen{
				{ScreenId: "1", Name: "Screen 1", Rows: devRows("ABCDEFGH", 16, 6), Categories: gbp(1400, 1900)},
				{ScreenId: "imax", Name: "IMAX", Rows: devRows("ABCDEFGHIJKL", 24, 8), Categories: gbp(2100, 2600)},
			}},
		{CinemaId: "prince-charles", CityId: "london", Name: "Prince Charles Cinema", Address: "7 Leicester Place, London WC2H 7BY",
			Screens: []*ledgerpb.Screen{{ScreenId: "main", Name: "Main Screen", Rows: devRows("ABCDEFGHIJ", 14, 7), Categories: gbp(1000, 1300)}}},
		{CinemaId: "le-grand-rex", CityId: "paris", Name: "Le Grand Rex", Address: "1 Boulevard Poissonnière, 75002 Paris",
			Screens: []*ledgerpb.Screen{
				// The demo show's layout, so that the demo show can be listed here.
				{ScreenId: "grande-salle", Name: "Grande Salle", Rows: demo.Rows, Categories: demo.Categories},
				{ScreenId: "salle-2", Name: "Salle 2", Rows: devRows("ABCDEF", 12, 4),
					Categories: []*ledgerpb.Category{{Name: "standard", PriceMinor: 1100, Currency: "EUR"}, {Name: "premium", PriceMinor: 1400, Currency: "EUR"}}},
			}},
	}
}

// devRows names rows by letters, every row of seats seats, the first
// standard ones "standard" and the rest "premium".
func devRows(names string, seats uint32, standard int) []*ledgerpb.Row {
	var rows []*ledgerpb.Row
	for i, n := range names {
		cat := "standard"
		if i >= standard {
			cat = "premium"
		}
		rows = append(rows, &ledgerpb.Row{Name: string(n), Seats: seats, Category: cat})
	}
	return rows
}

// createDemoCatalog creates the demo catalog through node 1's gateway.
func (cl *devCluster) createDemoCatalog(ctx context.Context, now time.Time) error {
	c := gateway.NewCatalog(cl.nodes[0].router)
	for _, city := range devCities {
		if err := devRetry(ctx, func() error { _, err := c.CreateCity(ctx, &ledgerpb.CreateCityRequest{City: city}); return err }); err != nil {
			return fmt.Errorf("city %s: %w", city.CityId, err)
		}
	}
	for _, cinema := range devCinemas() {
		if err := devRetry(ctx, func() error { _, err := c.CreateCinema(ctx, &ledgerpb.CreateCinemaRequest{Cinema: cinema}); return err }); err != nil {
			return fmt.Errorf("cinema %s: %w", cinema.CinemaId, err)
		}
	}
	for _, m := range devMovies {
		if err := devRetry(ctx, func() error { _, err := c.CreateMovie(ctx, &ledgerpb.CreateMovieRequest{Movie: m}); return err }); err != nil {
			return fmt.Errorf("movie %s: %w", m.MovieId, err)
		}
	}
	zones := map[string]*time.Location{}
	for _, city := range devCities {
		loc, err := time.LoadLocation(city.TimeZone)
		if err != nil {
			return err
		}
		zones[city.CityId] = loc
	}
	cityOf := map[string]string{"odeon-leicester-square": "london", "prince-charles": "london", "le-grand-rex": "paris"}
	var reqs []*ledgerpb.ScheduleShowRequest
	for d := range devCatalogDays {
		for _, s := range devScreenings {
			day := now.In(zones[cityOf[s.cinema]]).AddDate(0, 0, d)
			at := time.Date(day.Year(), day.Month(), day.Day(), s.hour, s.minute, 0, 0, day.Location())
			reqs = append(reqs, &ledgerpb.ScheduleShowRequest{CinemaId: s.cinema, ScreenId: s.screen, MovieId: s.movie, StartsAt: timestamppb.New(at)})
		}
	}
	// The demo show, tomorrow evening in Paris; once listed it stays at
	// that time, so a later run's SHOW_LISTED is expected.
	day := now.In(zones["paris"]).AddDate(0, 0, 1)
	reqs = append(reqs, &ledgerpb.ScheduleShowRequest{ShowId: demoShowID, CinemaId: "le-grand-rex", ScreenId: "grande-salle",
		MovieId: "the-matrix", StartsAt: timestamppb.New(time.Date(day.Year(), day.Month(), day.Day(), 21, 30, 0, 0, day.Location()))})
	for _, req := range reqs {
		err := devRetry(ctx, func() error { _, err := c.ScheduleShow(ctx, req); return err })
		if err != nil && !(req.ShowId == demoShowID && gateway.IsAlreadyExists(err)) {
			return fmt.Errorf("schedule %s on %s/%s: %w", req.MovieId, req.CinemaId, req.ScreenId, err)
		}
	}
	return nil
}

// devRetry calls fn until it succeeds or fails for a reason other than an
// unavailable group (a dev cluster is still electing its leaders).
func devRetry(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if status.Code(err) != codes.Unavailable {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}
