package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// Catalog implements ledgerpb.CatalogServer: admin calls that build the
// catalog in the catalog group (shard.CatalogKey), and browse calls
// (browse.go) that read it within a stated staleness bound.
// The admin calls require the admin token (auth.go); browsing is open.
type Catalog struct {
	ledgerpb.UnimplementedCatalogServer
	router *shard.Router
	// auth guards the create and schedule calls; browsing is open.
	auth    *Auth
	timeout time.Duration
	// now is the gateway's clock: browse listings start "from now on"
	// here. Tests may set it before serving.
	now func() time.Time
}

// scheduleTimeout bounds ScheduleShow: several reads and two proposals.
const scheduleTimeout = 2 * requestTimeoutDefault

// catalogClient is the client_id of the commands ScheduleShow derives.
const catalogClient = "catalog"

// NewCatalog serves the Catalog API through router.
func NewCatalog(router *shard.Router) *Catalog {
	return &Catalog{router: router, timeout: requestTimeoutDefault, now: time.Now}
}

// CreateCity adds a city.
func (c *Catalog) CreateCity(ctx context.Context, req *ledgerpb.CreateCityRequest) (*ledgerpb.CreateCityResponse, error) {
	if err := c.auth.admin(ctx); err != nil {
		return nil, err
	}
	if fe := fsm.ValidateCity(req.City); fe != nil {
		return nil, fieldError(fe)
	}
	// The FSM checks the zone's shape only (replicas may have different
	// tz databases); here it must exist.
	if tz := req.City.TimeZone; tz != "" {
		if _, err := time.LoadLocation(tz); err != nil {
			return nil, fieldError(&fsm.FieldError{Field: "city.time_zone", Message: "is not a known IANA time zone"})
		}
	}
	op := &ledgerpb.CatalogCmd{Op: &ledgerpb.CatalogCmd_CreateCity{CreateCity: &ledgerpb.CreateCityCmd{City: req.City}}}
	res, err := c.proposeCatalog(ctx, req.ClientId, req.RequestId, "create-city:"+req.City.CityId, op)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.CreateCityResponse{CityId: req.City.CityId, Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)}, nil
}

// CreateCinema adds a cinema with its screens.
func (c *Catalog) CreateCinema(ctx context.Context, req *ledgerpb.CreateCinemaRequest) (*ledgerpb.CreateCinemaResponse, error) {
	if err := c.auth.admin(ctx); err != nil {
		return nil, err
	}
	if fe := fsm.ValidateCinema(req.Cinema); fe != nil {
		return nil, fieldError(fe)
	}
	op := &ledgerpb.CatalogCmd{Op: &ledgerpb.CatalogCmd_CreateCinema{CreateCinema: &ledgerpb.CreateCinemaCmd{Cinema: req.Cinema}}}
	res, err := c.proposeCatalog(ctx, req.ClientId, req.RequestId, "create-cinema:"+req.Cinema.CinemaId, op)
	if err != nil {
		return nil, err
	}
	seats := uint32(0)
	for _, s := range req.Cinema.Screens {
		for _, r := range s.Rows {
			seats += r.Seats
		}
	}
	return &ledgerpb.CreateCinemaResponse{CinemaId: req.Cinema.CinemaId, ScreenCount: uint32(len(req.Cinema.Screens)),
		SeatCount: seats, Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)}, nil
}

// CreateMovie adds a movie.
func (c *Catalog) CreateMovie(ctx context.Context, req *ledgerpb.CreateMovieRequest) (*ledgerpb.CreateMovieResponse, error) {
	if err := c.auth.admin(ctx); err != nil {
		return nil, err
	}
	if fe := fsm.ValidateMovie(req.Movie); fe != nil {
		return nil, fieldError(fe)
	}
	op := &ledgerpb.CatalogCmd{Op: &ledgerpb.CatalogCmd_CreateMovie{CreateMovie: &ledgerpb.CreateMovieCmd{Movie: req.Movie}}}
	res, err := c.proposeCatalog(ctx, req.ClientId, req.RequestId, "create-movie:"+req.Movie.MovieId, op)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.CreateMovieResponse{MovieId: req.Movie.MovieId, Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)}, nil
}

// proposeCatalog applies a catalog command in the catalog group. Without a
// request_id, one is derived from the payload, so creating the same record
// twice replays and creating another under a taken id is refused.
func (c *Catalog) proposeCatalog(ctx context.Context, client, request, kind string, op *ledgerpb.CatalogCmd) (*ledgerpb.Result, error) {
	if client == "" {
		client = "admin"
	}
	if request == "" {
		var err error
		if request, err = derivedID(kind, op); err != nil {
			return nil, err
		}
	}
	if fe := fsm.ValidateIdentity(client, request); fe != nil {
		return nil, fieldError(fe)
	}
	cmd := &ledgerpb.Command{ClientId: client, RequestId: request, Op: &ledgerpb.Command_Catalog{Catalog: op}}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.router.ProposeCatalog(ctx, cmd)
	if err != nil {
		return nil, routeError(err)
	}
	return res, resultError(res, opOther)
}

// derivedID is prefix plus a hash of msg: the same payload always gets the
// same request id.
func derivedID(prefix string, msg proto.Message) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return "", newStatus("INTERNAL", fmt.Sprintf("encode %T: %v", msg, err))
	}
	sum := sha256.Sum256(b)
	return prefix + ":" + hex.EncodeToString(sum[:8]), nil
}

// ScheduleShow creates a show from a screen's layout and lists it:
//
//  1. read the cinema (its screen's layout) and the movie from the catalog
//     group's leader, and refuse a show id listed with other fields;
//  2. propose CreateShow (layout, movie title, start) to the show's own
//     group; a show that exists there already is adopted when its layout
//     is the screen's (the demo show, or a retry past the request-id
//     horizon), else SHOW_EXISTS;
//  3. propose ListShow to the catalog group.
//
// Both proposals use request ids derived from their payloads, so a retry of
// the same call replays what was done and finishes what was not: that is
// how a schedule cut off between 2 and 3 (a 503) is repaired. The order
// means the catalog never lists a show that does not exist; a half-done
// schedule leaves a bookable show nobody can browse to, until the retry.
func (c *Catalog) ScheduleShow(ctx context.Context, req *ledgerpb.ScheduleShowRequest) (*ledgerpb.ScheduleShowResponse, error) {
	if err := c.auth.admin(ctx); err != nil {
		return nil, err
	}
	ls, err := listShowCmd(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, scheduleTimeout)
	defer cancel()
	cinema, screen, movie, err := c.scheduleTargets(ctx, ls)
	if err != nil {
		return nil, err
	}
	show := fsm.ScreenShow(ls.ShowId, movie.Title, ls.StartsAtMs, screen)
	if err := c.ensureShow(ctx, show); err != nil {
		return nil, err
	}
	request, err := derivedID("list-show:"+ls.ShowId, ls)
	if err != nil {
		return nil, err
	}
	cmd := &ledgerpb.Command{ClientId: catalogClient, RequestId: request,
		Op: &ledgerpb.Command_Catalog{Catalog: &ledgerpb.CatalogCmd{Op: &ledgerpb.CatalogCmd_ListShow{ListShow: ls}}}}
	res, err := c.router.ProposeCatalog(ctx, cmd)
	if err != nil {
		return nil, routeError(err)
	}
	if err := resultError(res, opOther); err != nil {
		return nil, err
	}
	listing := c.withSeats(ctx, []*ledgerpb.ListingRecord{{ShowId: ls.ShowId, MovieId: movie.MovieId, MovieTitle: movie.Title,
		CinemaId: cinema.CinemaId, CinemaName: cinema.Name, ScreenId: screen.ScreenId, ScreenName: screen.Name,
		CityId: cinema.CityId, StartsAtMs: ls.StartsAtMs, TotalSeats: screen.SeatCount}})[0]
	return &ledgerpb.ScheduleShowResponse{Show: listing, Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)}, nil
}

// listShowCmd validates a schedule request and derives the show id when it
// has none: cinema, screen and start (UTC), so that a retry names the same
// show, hashed when that would not fit the show id limit.
func listShowCmd(req *ledgerpb.ScheduleShowRequest) (*ledgerpb.ListShowCmd, error) {
	if req.StartsAt == nil || !req.StartsAt.IsValid() {
		return nil, fieldError(&fsm.FieldError{Field: "starts_at", Message: "is required (RFC 3339)"})
	}
	// The ids a show id derives from come first: a bad one is named, not
	// the show id it would have made.
	for _, f := range []struct{ name, id string }{{"cinema_id", req.CinemaId}, {"screen_id", req.ScreenId}} {
		if fe := fsm.ValidateCatalogID(f.name, f.id); fe != nil {
			return nil, fieldError(fe)
		}
	}
	ls := &ledgerpb.ListShowCmd{ShowId: req.ShowId, CinemaId: req.CinemaId, ScreenId: req.ScreenId,
		MovieId: req.MovieId, StartsAtMs: req.StartsAt.AsTime().UnixMilli()}
	if ls.ShowId == "" {
		ls.ShowId = ScheduledShowID(ls.CinemaId, ls.ScreenId, req.StartsAt.AsTime())
	}
	if fe := fsm.ValidateListShow(ls); fe != nil {
		return nil, fieldError(fe)
	}
	return ls, nil
}

// ScheduledShowID is the show id ScheduleShow gives a show scheduled
// without one: cinema, screen and start (UTC, to the minute), hashed when
// that would not fit the show id limit. Clients that must name the show
// before scheduling it (seatctl show import) call it too.
func ScheduledShowID(cinemaID, screenID string, startsAt time.Time) string {
	id := strings.Join([]string{cinemaID, screenID, startsAt.UTC().Format("20060102T1504Z")}, ".")
	if len(id) > fsm.ShowIDLenMax {
		sum := sha256.Sum256([]byte(id))
		id = "show-" + hex.EncodeToString(sum[:12])
	}
	return id
}

// scheduleTargets reads what a schedule needs from the catalog group's
// leader (an admin must see the cinema it just created): the cinema, its
// screen and the movie, and whether the show id is listed with other fields.
func (c *Catalog) scheduleTargets(ctx context.Context, ls *ledgerpb.ListShowCmd) (*ledgerpb.Cinema, *ledgerpb.Screen, *ledgerpb.Movie, error) {
	read := func(q *ledgerpb.CatalogQuery) (*ledgerpb.CatalogAnswer, error) {
		rctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		return c.router.Catalog(rctx, q, true)
	}
	ans, err := read(&ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_CINEMA, CinemaId: ls.CinemaId})
	if err != nil {
		return nil, nil, nil, routeError(err)
	}
	cinema := ans.Cinemas[0]
	var screen *ledgerpb.Screen
	for _, s := range cinema.Screens {
		if s.ScreenId == ls.ScreenId {
			screen = s
		}
	}
	if screen == nil {
		return nil, nil, nil, newStatus("SCREEN_NOT_FOUND", fmt.Sprintf("cinema %s has no screen %s", ls.CinemaId, ls.ScreenId))
	}
	if ans, err = read(&ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_MOVIE, MovieId: ls.MovieId}); err != nil {
		return nil, nil, nil, routeError(err)
	}
	movie := ans.Movies[0]
	ans, err = read(&ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_LISTING, ShowId: ls.ShowId})
	switch {
	case err == nil:
		if l := ans.Listings[0]; l.CinemaId != ls.CinemaId || l.ScreenId != ls.ScreenId || l.MovieId != ls.MovieId || l.StartsAtMs != ls.StartsAtMs {
			return nil, nil, nil, newStatus("SHOW_LISTED", fmt.Sprintf("show %s is listed with another screen, movie or start time", ls.ShowId))
		}
	case !isNotListed(err):
		return nil, nil, nil, routeError(err)
	}
	return cinema, screen, movie, nil
}

// ensureShow creates the show in its group, or adopts the show that is
// there when its layout is the same.
func (c *Catalog) ensureShow(ctx context.Context, show *ledgerpb.Show) error {
	key := make([]byte, fsm.TokenKeyBytes)
	rand.Read(key)
	// The token key is not part of the payload hash: a retry replays.
	request, err := derivedID("schedule-show:"+show.ShowId, show)
	if err != nil {
		return err
	}
	cmd := &ledgerpb.Command{ClientId: catalogClient, RequestId: request,
		Op: &ledgerpb.Command_CreateShow{CreateShow: &ledgerpb.CreateShowCmd{Show: show, TokenKey: key}}}
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.router.Propose(pctx, show.ShowId, cmd)
	if err != nil {
		return routeError(err)
	}
	if res.Code != ledgerpb.Code_CODE_SHOW_EXISTS {
		return resultError(res, opOther)
	}
	sm, err := c.router.SeatMap(pctx, show.ShowId, ledgerpb.Consistency_LINEARIZABLE)
	if err != nil {
		return routeError(err)
	}
	if !sameLayout(sm, show) {
		return newStatus("SHOW_EXISTS", fmt.Sprintf("show %s exists with another layout than the screen's", show.ShowId))
	}
	return nil
}

// sameLayout reports whether a seat map has the show's rows (names, sizes,
// categories, in order) and categories.
func sameLayout(sm *ledgerpb.SeatMap, show *ledgerpb.Show) bool {
	var rows []*ledgerpb.Row
	for _, s := range sm.Seats {
		if n := len(rows); n == 0 || rows[n-1].Name != s.Row {
			rows = append(rows, &ledgerpb.Row{Name: s.Row, Category: s.Category})
		}
		rows[len(rows)-1].Seats++
	}
	if len(rows) != len(show.Rows) || len(sm.Categories) != len(show.Categories) {
		return false
	}
	for i, r := range rows {
		if !proto.Equal(r, show.Rows[i]) {
			return false
		}
	}
	for i, cat := range sm.Categories {
		if !proto.Equal(cat, show.Categories[i]) {
			return false
		}
	}
	return true
}
