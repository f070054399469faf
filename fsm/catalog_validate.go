package fsm

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The catalog's field rules. Field names are those of the API requests
// (catalog.proto), so the gateway returns them as they are.

// ValidateCatalog checks a catalog command's fields against the limits.
func ValidateCatalog(c *ledgerpb.CatalogCmd) *FieldError {
	switch op := c.GetOp().(type) {
	case *ledgerpb.CatalogCmd_CreateCity:
		return ValidateCity(op.CreateCity.City)
	case *ledgerpb.CatalogCmd_CreateCinema:
		return ValidateCinema(op.CreateCinema.Cinema)
	case *ledgerpb.CatalogCmd_CreateMovie:
		return ValidateMovie(op.CreateMovie.Movie)
	case *ledgerpb.CatalogCmd_ListShow:
		return ValidateListShow(op.ListShow)
	}
	return fieldErr("catalog", "names no catalog command")
}

// ValidateCity checks a city.
func ValidateCity(c *ledgerpb.City) *FieldError {
	if c == nil {
		return fieldErr("city", "is required")
	}
	if !ValidID(c.CityId, CatalogIDLenMax) {
		return idErr("city.city_id")
	}
	if fe := validateName("city.name", c.Name, NameLenMax, true); fe != nil {
		return fe
	}
	if !validTimeZoneName(c.TimeZone) {
		return fieldErr("city.time_zone", "must be an IANA time zone name such as Europe/London (at most %d characters)", TimeZoneLenMax)
	}
	return nil
}

// ValidateCinema checks a cinema and each screen's layout, with the rules
// of a show's layout (ValidateShow).
func ValidateCinema(c *ledgerpb.Cinema) *FieldError {
	if c == nil {
		return fieldErr("cinema", "is required")
	}
	if !ValidID(c.CinemaId, CatalogIDLenMax) {
		return idErr("cinema.cinema_id")
	}
	if !ValidID(c.CityId, CatalogIDLenMax) {
		return idErr("cinema.city_id")
	}
	if fe := validateName("cinema.name", c.Name, NameLenMax, true); fe != nil {
		return fe
	}
	if fe := validateName("cinema.address", c.Address, AddressLenMax, false); fe != nil {
		return fe
	}
	if len(c.Screens) == 0 || len(c.Screens) > ScreensPerCinemaMax {
		return fieldErr("cinema.screens", "must list 1..%d screens", ScreensPerCinemaMax)
	}
	ids := make(map[string]bool, len(c.Screens))
	for i, s := range c.Screens {
		f := "cinema.screens[" + strconv.Itoa(i) + "]"
		if !ValidID(s.ScreenId, CatalogIDLenMax) {
			return idErr(f + ".screen_id")
		}
		if ids[s.ScreenId] {
			return fieldErr(f+".screen_id", "is not unique in the cinema")
		}
		ids[s.ScreenId] = true
		if fe := validateName(f+".name", s.Name, NameLenMax, false); fe != nil {
			return fe
		}
		// One set of layout rules: a screen's layout is what its shows get.
		if fe := ValidateShow(ScreenShow("x", "", 0, s)); fe != nil {
			return fieldErr(f+strings.TrimPrefix(fe.Field, "show"), "%s", fe.Message)
		}
	}
	return nil
}

// ValidateMovie checks a movie.
func ValidateMovie(m *ledgerpb.Movie) *FieldError {
	if m == nil {
		return fieldErr("movie", "is required")
	}
	if !ValidID(m.MovieId, CatalogIDLenMax) {
		return idErr("movie.movie_id")
	}
	if fe := validateName("movie.title", m.Title, TitleLenMax, true); fe != nil {
		return fe
	}
	if m.DurationMinutes > MovieDurationMinutesMax {
		return fieldErr("movie.duration_minutes", "must be at most %d", MovieDurationMinutesMax)
	}
	return nil
}

// ValidateListShow checks a listing; its field names are ScheduleShow's.
func ValidateListShow(c *ledgerpb.ListShowCmd) *FieldError {
	if !ValidID(c.ShowId, ShowIDLenMax) {
		return fieldErr("show_id", "must be 1..%d characters of [A-Za-z0-9._:-]", ShowIDLenMax)
	}
	if !ValidID(c.CinemaId, CatalogIDLenMax) {
		return idErr("cinema_id")
	}
	if !ValidID(c.ScreenId, CatalogIDLenMax) {
		return idErr("screen_id")
	}
	if !ValidID(c.MovieId, CatalogIDLenMax) {
		return idErr("movie_id")
	}
	if c.StartsAtMs <= 0 || c.StartsAtMs > ClockMaxMs {
		return fieldErr("starts_at", "is required, between 1970 and 9999")
	}
	return nil
}

// ValidateCatalogID checks an id of a city, cinema, screen or movie in a
// request path or query.
func ValidateCatalogID(field, id string) *FieldError {
	if !ValidID(id, CatalogIDLenMax) {
		return idErr(field)
	}
	return nil
}

func idErr(field string) *FieldError {
	return fieldErr(field, "must be 1..%d characters of [A-Za-z0-9._:-]", CatalogIDLenMax)
}

// validateName checks a display name: UTF-8 without control characters,
// at most max bytes, and not blank when required.
func validateName(field, s string, max int, required bool) *FieldError {
	if required && strings.TrimSpace(s) == "" {
		return fieldErr(field, "is required")
	}
	if len(s) > max {
		return fieldErr(field, "longer than %d bytes", max)
	}
	if !utf8.ValidString(s) {
		return fieldErr(field, "is not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fieldErr(field, "contains a control character")
		}
	}
	return nil
}

// validTimeZoneName checks the shape of an IANA zone name only: whether
// the zone exists depends on the tz database of the machine, which replicas
// need not share. The gateway loads the zone before proposing.
func validTimeZoneName(s string) bool {
	if len(s) > TimeZoneLenMax {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '+' || c == '/'
		if !ok {
			return false
		}
	}
	return true
}

// ScreenShow is the show scheduled on a screen: the screen's layout (rows
// and categories) with the movie's title and start time. Scheduling
// proposes it as CreateShow.
func ScreenShow(showID, title string, startsAtMs int64, s *ledgerpb.Screen) *ledgerpb.Show {
	return &ledgerpb.Show{ShowId: showID, Title: title, StartsAtMs: startsAtMs, Rows: s.Rows, Categories: s.Categories}
}

// SearchWords splits a search query into lower-case words, as titles and
// names are split to match them.
func SearchWords(q string) []string {
	return strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// ValidateSearchQuery checks a search's keywords.
func ValidateSearchQuery(q string) *FieldError {
	if len(q) > SearchQueryLenMax {
		return fieldErr("q", "longer than %d bytes", SearchQueryLenMax)
	}
	if !utf8.ValidString(q) {
		return fieldErr("q", "is not valid UTF-8")
	}
	if n := len(SearchWords(q)); n > SearchWordsMax {
		return fieldErr("q", "has %d words, at most %d are searched", n, SearchWordsMax)
	}
	return nil
}
