// This file proves `seatctl show import` against a real 3-node cluster of
// seatd processes: a dry run of the example catalog plans every object as
// created and writes nothing; the import creates them all; the Catalog API
// then lists them (cities, a cinema's layouts, a day's shows, a search, a
// show by id) and the shows are bookable with their screens' layouts;
// importing the same file again, or its JSON rendering, changes nothing and
// says so; a file that conflicts with the cluster is refused naming the
// object and the field, with nothing of it written; an id neither the file
// nor the cluster has exits 2; and a file may name a cluster's cinemas and
// movies without defining them.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// importBrowseWait bounds how long the test waits for the import's writes
// to show in browse reads (stale by at most 2 s).
const importBrowseWait = 10 * time.Second

func TestImportEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real seatd processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	dir := t.TempDir()
	c := startCluster(t, ctx, dir, proccluster.Config{})
	sc := clusterCtl(t, ctx, c)
	// The test browses one node, which may be a follower: its first reads
	// after the import poll until the import's writes show there.
	catalog := dialCatalog(t, c.Nodes()[0].GRPCAddr)

	// Without the admin token an import is refused before it reads.
	if _, errOut, code := sc.runAs("", "show", "import", exampleCatalog); code != exitFailure || !strings.Contains(errOut, "admin token") {
		t.Fatalf("show import without the admin token = exit %d, stderr %q; want exit 1 naming the admin token", code, errOut)
	}
	r := sc.importJSON(exampleCatalog, "--dry-run")
	wantActions(t, "dry run", r, actionCreate, 13)
	if _, err := catalog.GetCity(ctx, &ledgerpb.GetCityRequest{CityId: "berlin"}); !isNotFound(err) {
		t.Fatalf("GetCity(berlin) after a dry run = %v, want NOT_FOUND: a dry run writes nothing", err)
	}

	r = sc.importJSON(exampleCatalog)
	wantActions(t, "import", r, actionCreated, 13)
	if got := r.Summary[kindShow][actionCreated]; got != 6 || r.Summary[kindCity][actionCreated] != 2 || r.Summary[kindMovie][actionCreated] != 3 {
		t.Errorf("import summary = %v, want 2 cities, 3 movies and 6 shows created", r.Summary)
	}
	browseImported(t, ctx, sc, catalog)

	// The same file again, and the same objects as JSON: nothing to do.
	wantActions(t, "import again", sc.importJSON(exampleCatalog), actionUnchanged, 13)
	wantActions(t, "import of the JSON rendering", sc.importJSON(jsonRendering(t, dir)), actionUnchanged, 13)
	if out := sc.ok("show", "import", exampleCatalog); !strings.Contains(out, "show    0        6          0       0") {
		t.Errorf("import again (table) =\n%s\nwant 6 shows unchanged in the summary", out)
	}

	importConflict(t, ctx, sc, catalog, dir)
	importReferences(t, ctx, sc, catalog, dir)
}

// browseImported reads the example catalog back through the Catalog API.
func browseImported(t *testing.T, ctx context.Context, sc *seatctl, catalog ledgerpb.CatalogClient) {
	want := []string{"abaton.gross.20270115T1830Z", "abaton.klein.20270115T2100Z"}
	var err error
	waitFor(t, "ListShows(abaton, 2027-01-15)", func() (bool, string) {
		resp, err := catalog.ListShows(ctx, &ledgerpb.ListShowsRequest{CinemaId: "abaton", Date: "2027-01-15"})
		var got []string
		for _, s := range resp.GetShows() {
			got = append(got, s.ShowId)
		}
		return err == nil && slices.Equal(got, want), strings.Join(got, ",")
	})
	cities, err := catalog.ListCities(ctx, &ledgerpb.ListCitiesRequest{})
	if err != nil || len(cities.Cities) != 2 || cities.Cities[0].CityId != "berlin" || cities.Cities[1].TimeZone != "Europe/Berlin" {
		t.Errorf("ListCities = %v, %v; want berlin and hamburg", cities, err)
	}
	b, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	f, _, _ := parseChecked(t, b)
	fileCinema := proto.Clone(f.find(kindCinema, "abaton").msg).(*ledgerpb.Cinema)
	got, err := catalog.GetCinema(ctx, &ledgerpb.GetCinemaRequest{CinemaId: "abaton"})
	if err != nil || len(got.Screens) != 2 || got.Screens[0].SeatCount != 80 || got.Screens[1].SeatCount != 30 {
		t.Fatalf("GetCinema(abaton) = %v, %v; want screens of 80 and 30 seats", got, err)
	}
	clearSeatCounts(got)
	if !proto.Equal(got, fileCinema) {
		t.Errorf("GetCinema(abaton) = %v\nwant the file's %v", got, fileCinema)
	}
	search, err := catalog.Search(ctx, &ledgerpb.SearchRequest{Q: "metropolis"})
	if err != nil || len(search.Shows) != 2 || search.Shows[0].ShowId != "zoo-palast.1.20270115T1900Z" || search.Shows[1].CinemaName != "Abaton Kino" {
		t.Errorf("Search(metropolis) = %v, %v; want its show at the Zoo Palast, then the one at the Abaton", search, err)
	}
	var l *ledgerpb.ShowListing
	waitFor(t, "GetShowListing(abaton-das-boot-premiere), the last show created", func() (bool, string) {
		l, err = catalog.GetShowListing(ctx, &ledgerpb.GetShowListingRequest{ShowId: "abaton-das-boot-premiere"})
		return err == nil, fmt.Sprint(err)
	})
	if l.MovieTitle != "Das Boot" || l.ScreenName != "Kleiner Saal" || l.TotalSeats != 30 || l.CityId != "hamburg" {
		t.Errorf("GetShowListing(abaton-das-boot-premiere) = %v; want Das Boot in the Kleiner Saal, 30 seats, hamburg", l)
	}
	// The show is bookable with its screen's layout.
	if out := sc.ok("seatmap", "abaton-das-boot-premiere"); !strings.Contains(out, "free 30") || !strings.Contains(out, "C  ..........") {
		t.Errorf("seatmap abaton-das-boot-premiere =\n%s\nwant the Kleiner Saal's 30 free seats in rows A..C", out)
	}
}

// importConflict imports a file whose cinema differs from the cluster's,
// with a new movie and show: refused, naming the field, and nothing of it
// is written.
func importConflict(t *testing.T, ctx context.Context, sc *seatctl, catalog ledgerpb.CatalogClient, dir string) {
	b, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(b), "{name: C, seats: 10, category: premium}", "{name: C, seats: 10, category: standard}", 1)
	doc = strings.Replace(doc, "movies:\n", "movies:\n  - {movie_id: m-new, title: New}\n", 1)
	doc += "  - {cinema_id: zoo-palast, screen_id: \"1\", movie_id: m-new, starts_at: \"2027-02-01T20:00:00+01:00\", show_id: new-show}\n"
	file := filepath.Join(dir, "conflict.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := sc.run("show", "import", file)
	want := `conflict.yaml:35: cinemas[1]: cinema abaton exists in the cluster with other fields: screens[1].rows[2].category is "premium" in the cluster, "standard" in the file`
	if code != exitFailure || !strings.Contains(errOut, want) || !strings.Contains(errOut, "1 object conflicts with the cluster (listed above); nothing was written") {
		t.Fatalf("import of a conflicting file = exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1 and %q", code, out, errOut, want)
	}
	if !strings.Contains(out, "create     movie   m-new") || !strings.Contains(out, "conflict   cinema  abaton") {
		t.Errorf("import of a conflicting file printed the plan\n%s\nwant m-new to create and abaton in conflict", out)
	}
	if _, err := catalog.GetMovie(ctx, &ledgerpb.GetMovieRequest{MovieId: "m-new"}); !isNotFound(err) {
		t.Errorf("GetMovie(m-new) after a refused import = %v, want NOT_FOUND", err)
	}
	if _, err := catalog.GetShowListing(ctx, &ledgerpb.GetShowListingRequest{ShowId: "new-show"}); !isNotFound(err) {
		t.Errorf("GetShowListing(new-show) after a refused import = %v, want NOT_FOUND", err)
	}
}

// importReferences imports shows that name the cluster's cinemas and
// movies: an unknown movie exits 2 and writes nothing; known ones work.
func importReferences(t *testing.T, ctx context.Context, sc *seatctl, catalog ledgerpb.CatalogClient, dir string) {
	file := filepath.Join(dir, "more-shows.yaml")
	doc := "shows:\n  - {cinema_id: zoo-palast, screen_id: \"1\", movie_id: das-boot, starts_at: \"2027-01-20T20:00:00+01:00\"}\n" +
		"  - {cinema_id: abaton, screen_id: klein, movie_id: m-missing, starts_at: \"2027-01-20T20:00:00+01:00\"}\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := sc.run("show", "import", file)
	if want := `more-shows.yaml:3: shows[1].movie_id: no movie "m-missing" in the file or the cluster`; code != exitUsage || !strings.Contains(errOut, want) {
		t.Fatalf("import naming an unknown movie = exit %d, stderr %q; want exit 2 and %q", code, errOut, want)
	}
	if _, err := catalog.GetShowListing(ctx, &ledgerpb.GetShowListingRequest{ShowId: "zoo-palast.1.20270120T1900Z"}); !isNotFound(err) {
		t.Errorf("GetShowListing(zoo-palast.1.20270120T1900Z) after a refused import = %v, want NOT_FOUND", err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(doc, "m-missing", "metropolis", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sc.importJSON(file)
	wantActions(t, "import of shows of the cluster's cinemas and movies", r, actionCreated, 2)
}

// importJSON runs `seatctl show import -o json` and returns its report.
func (sc *seatctl) importJSON(args ...string) importReport {
	sc.t.Helper()
	out := sc.ok(append([]string{"show", "import", "-o", "json"}, args...)...)
	var r importReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		sc.t.Fatalf("show import -o json printed %q: %v", out, err)
	}
	return r
}

// wantActions checks that a report has n objects, all with one action.
func wantActions(t *testing.T, what string, r importReport, action string, n int) {
	t.Helper()
	for _, o := range r.Objects {
		if o.Action != action {
			t.Errorf("%s: %s %s (%s) is %s %q, want %s", what, o.Kind, o.ID, o.Path, o.Action, o.Detail, action)
		}
	}
	if len(r.Objects) != n {
		t.Errorf("%s: %d objects, want %d", what, len(r.Objects), n)
	}
}

// jsonRendering writes the example catalog as JSON and returns its path.
func jsonRendering(t *testing.T, dir string) string {
	b, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	j, err := json.MarshalIndent(nodeValue(doc.Content[0]), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(path, j, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func dialCatalog(t *testing.T, addr string) ledgerpb.CatalogClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return ledgerpb.NewCatalogClient(conn)
}

// waitFor polls cond until it holds, for up to importBrowseWait.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(importBrowseWait)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %s after %v", what, got, importBrowseWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
