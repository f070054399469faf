// This file proves the catalog's documented semantics (doc.go, catalog.go):
// each script under testdata/catalog drives one Machine on a real Pebble
// database through catalog commands (and, where a script needs them, the
// seat commands of scenario_test.go) and states the Result each entry must
// return and what every browse read must list afterwards, page by page.
//
// The format is scenario_test.go's, plus these commands ('_' in a name,
// title, address or query reads as a space):
//
//	city <client> <request> <city_id> name=<n> [tz=<zone>]
//	cinema <client> <request> <cinema_id> city=<c> name=<n> screens=<id,...> rows=<spec> cats=<spec> [address=<a>]
//	movie <client> <request> <movie_id> title=<t> [mins=<n>]
//	list <client> <request> <show_id> cinema=<c> screen=<s> movie=<m> starts=<ms>
//
// (every screen of a cinema command gets the same rows and cats), and these
// checks, which page through the whole listing with page=<n> entries a page
// (default PageSizeMax) and compare the ids in order ('-' for none);
// pages=<k> also checks how many pages it took:
//
//	cities => <ids>
//	movies <city> now=<ms> => <ids>
//	cinemas <city> [movie=<m>] now=<ms> => <ids>
//	shows <cinema> from=<ms> to=<ms> => <show ids>
//	search [q=<words>] [city=<c>] from=<ms> to=<ms> => <show ids>
//	listing <show> <field>=<value>... | listing <show> absent
//	screen <cinema> <screen> seats=<n>
//	seatcounts <show> total=<n> free=<n>
//
// and the node registry's (node_test.go):
//
//	node-add <client> <request> <id>@<raft>@<grpc>[,...] [seed]
//	node-state <client> <request> <id> ACTIVE|DRAINING|REMOVED
//	nodes => <id>/<state>/<revision>,...   (every record, in id order)
//	node <id> <raft> <grpc>                (a record's addresses)
package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestCatalogScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/catalog/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario scripts under testdata/catalog (%v)", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runCatalogScenario(t, f)
		})
	}
}

func runCatalogScenario(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &scenario{t: t, file: filepath.Base(path), m: newTestMachine(t, newTestDB(t), 0), next: 1}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := scriptFields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		s.line = n
		s.catalogStatement(fields)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// catalogStatement runs a catalog command or check, or else hands the line
// to the seat scenarios' statement.
func (s *scenario) catalogStatement(f []string) {
	switch f[0] {
	case "city", "cinema", "movie", "list":
		cmd, want := s.parseCatalogEntry(f)
		cmd.ProposedAtMs = s.at
		s.apply(cmd, []*expect{want})
	case "cities", "movies", "cinemas", "shows", "search":
		s.checkBrowse(f)
	case "listing":
		s.checkListing(f)
	case "screen":
		s.checkScreen(f)
	case "seatcounts":
		s.checkSeatCounts(f)
	case "node-add", "node-state":
		cmd, want := s.parseNodeEntry(f) // node_test.go
		cmd.ProposedAtMs = s.at
		s.apply(cmd, []*expect{want})
	case "nodes", "node":
		s.checkNodes(f)
	case "batch":
		s.fatalf("batches are not supported in catalog scripts")
	default:
		s.statement(f)
	}
}

func (s *scenario) parseCatalogEntry(f []string) (*ledgerpb.Command, *expect) {
	arrow := slices.Index(f, "->")
	if arrow < 0 {
		s.fatalf("command without -> expectation")
	}
	pos := positional(f[:arrow])
	if len(pos) != 4 {
		s.fatalf("%s wants <client> <request> <id>, got %q", f[0], strings.Join(pos, " "))
	}
	arg := func(i int) string {
		if pos[i] == "-" {
			return ""
		}
		return pos[i]
	}
	opt := func(key string) string {
		v, _ := option(f[:arrow], key)
		if v == "-" {
			return ""
		}
		return strings.ReplaceAll(v, "_", " ")
	}
	cc := &ledgerpb.CatalogCmd{}
	switch f[0] {
	case "city":
		cc.Op = &ledgerpb.CatalogCmd_CreateCity{CreateCity: &ledgerpb.CreateCityCmd{City: &ledgerpb.City{
			CityId: arg(3), Name: opt("name"), TimeZone: opt("tz")}}}
	case "cinema":
		cc.Op = &ledgerpb.CatalogCmd_CreateCinema{CreateCinema: &ledgerpb.CreateCinemaCmd{Cinema: s.parseCinema(arg(3), f[:arrow], opt)}}
	case "movie":
		cc.Op = &ledgerpb.CatalogCmd_CreateMovie{CreateMovie: &ledgerpb.CreateMovieCmd{Movie: &ledgerpb.Movie{
			MovieId: arg(3), Title: opt("title"), DurationMinutes: uint32(s.optInt(f[:arrow], "mins"))}}}
	case "list":
		cc.Op = &ledgerpb.CatalogCmd_ListShow{ListShow: &ledgerpb.ListShowCmd{ShowId: arg(3),
			CinemaId: opt("cinema"), ScreenId: opt("screen"), MovieId: opt("movie"), StartsAtMs: s.optInt(f[:arrow], "starts")}}
	}
	want, err := parseExpect(f[arrow+1:])
	if err != nil {
		s.fatalf("%v", err)
	}
	return &ledgerpb.Command{ClientId: arg(1), RequestId: arg(2), Op: &ledgerpb.Command_Catalog{Catalog: cc}}, want
}

func (s *scenario) parseCinema(id string, f []string, opt func(string) string) *ledgerpb.Cinema {
	c := &ledgerpb.Cinema{CinemaId: id, CityId: opt("city"), Name: opt("name"), Address: opt("address")}
	rv, _ := option(f, "rows")
	cv, _ := option(f, "cats")
	for _, sid := range splitList(strings.ReplaceAll(opt("screens"), " ", "")) {
		rows, err := parseRows(rv)
		if err != nil {
			s.fatalf("rows: %v", err)
		}
		cats, err := parseCats(cv)
		if err != nil {
			s.fatalf("cats: %v", err)
		}
		c.Screens = append(c.Screens, &ledgerpb.Screen{ScreenId: sid, Name: "Screen " + sid, Rows: rows, Categories: cats})
	}
	return c
}

// optInt returns a numeric key=value option, 0 when absent.
func (s *scenario) optInt(f []string, key string) int64 {
	v, ok := option(f, key)
	if !ok {
		return 0
	}
	return s.parseInt(v)
}

// checkBrowse pages through one listing and compares the ids it lists.
func (s *scenario) checkBrowse(f []string) {
	arrow := slices.Index(f, "=>")
	if arrow < 0 || arrow != len(f)-2 {
		s.fatalf("%s check wants '=> <ids>' at the end", f[0])
	}
	args := f[1:arrow]
	want := f[arrow+1]
	if want == "-" {
		want = ""
	}
	size := int(s.optInt(args, "page"))
	if size == 0 {
		size = PageSizeMax
	}
	v := s.view()
	defer v.Close()
	var ids []string
	var after []byte
	pages := 0
	for {
		got, next, err := s.browsePage(v, f[0], args, after, size)
		if err != nil {
			s.fatalf("%s page %d: %v", f[0], pages+1, err)
		}
		pages++
		if len(got) > size {
			s.errorf("%s page %d listed %d entries, want at most %d", f[0], pages, len(got), size)
		}
		ids = append(ids, got...)
		if next == nil {
			break
		}
		if pages > 1000 {
			s.fatalf("%s: more than 1000 pages", f[0])
		}
		after = next
	}
	if got := strings.Join(ids, ","); got != want {
		s.errorf("%s %s = %s, want %s", f[0], strings.Join(args, " "), orDash(got), orDash(want))
	}
	if wp := s.optInt(args, "pages"); wp != 0 && int64(pages) != wp {
		s.errorf("%s %s took %d pages, want %d", f[0], strings.Join(args, " "), pages, wp)
	}
}

// browsePage reads one page of the listing a check names.
func (s *scenario) browsePage(v *View, what string, args []string, after []byte, size int) ([]string, []byte, error) {
	pos := positional(args)
	opt := func(key string) string {
		x, _ := option(args, key)
		return strings.ReplaceAll(x, "_", " ")
	}
	now := s.optInt(args, "now")
	var ids []string
	switch what {
	case "cities":
		cs, next, err := v.Cities(after, size)
		for _, c := range cs {
			ids = append(ids, c.CityId)
		}
		return ids, next, err
	case "movies":
		ms, next, err := v.MoviesInCity(pos[0], now, after, size)
		for _, m := range ms {
			ids = append(ids, m.MovieId)
		}
		return ids, next, err
	case "cinemas":
		cs, next, err := v.CinemasInCity(pos[0], opt("movie"), now, after, size)
		for _, c := range cs {
			ids = append(ids, c.CinemaId)
			for _, sc := range c.Screens {
				if len(sc.Rows) > 0 || len(sc.Categories) > 0 {
					s.errorf("CinemasInCity(%s) lists screen %s of %s with its layout, want without", pos[0], sc.ScreenId, c.CinemaId)
				}
			}
		}
		return ids, next, err
	case "shows":
		ls, next, err := v.ShowsAtCinema(pos[0], s.optInt(args, "from"), s.optInt(args, "to"), after, size)
		return listingIDs(ls), next, err
	default: // search
		q := ShowSearch{Words: SearchWords(opt("q")), City: opt("city"), FromMs: s.optInt(args, "from"), ToMs: s.optInt(args, "to")}
		ls, next, err := v.SearchShows(q, after, size)
		return listingIDs(ls), next, err
	}
}

func listingIDs(ls []*ledgerpb.ListingRecord) []string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.ShowId
	}
	return ids
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (s *scenario) checkListing(f []string) {
	if len(f) < 3 {
		s.fatalf("listing wants a show id and field=value pairs or absent")
	}
	v := s.view()
	defer v.Close()
	l, err := v.Listing(f[1])
	if f[2] == "absent" {
		if !errors.Is(err, ErrNotFound) {
			s.errorf("Listing(%s) = %v, %v, want ErrNotFound", f[1], l, err)
		}
		return
	}
	if err != nil {
		s.fatalf("Listing(%s): %v", f[1], err)
	}
	got := map[string]string{"movie": l.MovieId, "title": l.MovieTitle, "cinema": l.CinemaId, "cinema_name": l.CinemaName,
		"screen": l.ScreenId, "screen_name": l.ScreenName, "city": l.CityId,
		"starts": strconv.FormatInt(l.StartsAtMs, 10), "seats": strconv.FormatUint(uint64(l.TotalSeats), 10)}
	for _, kv := range f[2:] {
		k, want, _ := strings.Cut(kv, "=")
		want = strings.ReplaceAll(want, "_", " ")
		g, ok := got[k]
		if !ok {
			s.fatalf("listing has no field %q", k)
		}
		if g != want {
			s.errorf("Listing(%s).%s = %q, want %q", f[1], k, g, want)
		}
	}
}

func (s *scenario) checkScreen(f []string) {
	if len(f) != 4 {
		s.fatalf("screen wants <cinema> <screen> seats=<n>")
	}
	v := s.view()
	defer v.Close()
	c, err := v.Cinema(f[1])
	if err != nil {
		s.fatalf("Cinema(%s): %v", f[1], err)
	}
	for _, sc := range c.Screens {
		if sc.ScreenId == f[2] {
			if got, want := fmt.Sprint(sc.SeatCount), strings.TrimPrefix(f[3], "seats="); got != want {
				s.errorf("Cinema(%s) screen %s seat_count = %s, want %s", f[1], f[2], got, want)
			}
			return
		}
	}
	s.errorf("Cinema(%s) has no screen %s", f[1], f[2])
}

func (s *scenario) checkSeatCounts(f []string) {
	v := s.view()
	defer v.Close()
	total, free, err := v.SeatCounts(f[1])
	if err != nil {
		s.fatalf("SeatCounts(%s): %v", f[1], err)
	}
	if wt, wf := s.optInt(f, "total"), s.optInt(f, "free"); int64(total) != wt || int64(free) != wf {
		s.errorf("SeatCounts(%s) = total %d free %d, want total %d free %d", f[1], total, free, wt, wf)
	}
}

// catalogOpName names a catalog command in failure messages.
func catalogOpName(c *ledgerpb.CatalogCmd) string {
	switch op := c.GetOp().(type) {
	case *ledgerpb.CatalogCmd_CreateCity:
		return fmt.Sprintf("CreateCity(%s)", op.CreateCity.GetCity().GetCityId())
	case *ledgerpb.CatalogCmd_CreateCinema:
		return fmt.Sprintf("CreateCinema(%s)", op.CreateCinema.GetCinema().GetCinemaId())
	case *ledgerpb.CatalogCmd_CreateMovie:
		return fmt.Sprintf("CreateMovie(%s)", op.CreateMovie.GetMovie().GetMovieId())
	case *ledgerpb.CatalogCmd_ListShow:
		return fmt.Sprintf("ListShow(%s)", op.ListShow.ShowId)
	}
	return "Catalog(?)"
}
