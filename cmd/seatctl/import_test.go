// This file proves `seatctl show import` without a cluster: the example
// catalog parses clean, with the show ids ScheduleShow would derive; its
// JSON rendering means the same objects; every kind of problem (file
// syntax, unknown fields and lists, wrong types, the server's field rules,
// bad times and zones, ids defined twice, screens a cinema lacks) is
// reported with its path and line, all of them at once; ids the file names
// but does not define are left for the cluster to resolve; a record that
// differs from the file is a conflict naming each differing field, while
// a server-computed seat count is not a difference; a bad file exits 2
// before anything is dialed; and an import stops at its first failed
// create, skipping the rest and saying how to finish.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

const exampleCatalog = "testdata/catalog.yaml"

// parseChecked parses and checks a catalog file as readCatalog does.
func parseChecked(t *testing.T, b []byte) (*catalogFile, problems, []reference) {
	t.Helper()
	f, ps := parseCatalog(b)
	if f == nil {
		return nil, ps, nil
	}
	more, refs := checkCatalog(f, len(ps) == 0)
	return f, append(ps, more...), refs
}

func TestImportExampleParses(t *testing.T) {
	b, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	f, ps, refs := parseChecked(t, b)
	if len(ps) > 0 || len(refs) > 0 {
		t.Fatalf("%s: problems %v, references %v; want none", exampleCatalog, ps, refs)
	}
	want := map[string]int{kindCity: 2, kindCinema: 2, kindMovie: 3, kindShow: 6}
	for kind, n := range want {
		if got := len(f.ofKind(kind)); got != n {
			t.Errorf("%s has %d %s objects, want %d", exampleCatalog, got, kind, n)
		}
	}
	shows := f.ofKind(kindShow)
	if id := shows[0].id; id != "zoo-palast.1.20270115T1900Z" {
		t.Errorf("shows[0] id = %q, want the derived zoo-palast.1.20270115T1900Z", id)
	}
	if id := shows[5].id; id != "abaton-das-boot-premiere" {
		t.Errorf("shows[5] id = %q, want its show_id", id)
	}
	if l := f.ofKind(kindCinema)[1].line("screens[1].rows"); l != 53 {
		t.Errorf("cinemas[1].screens[1].rows is on line %d, want 53 (its key's)", l)
	}
}

func TestImportJSONMeansTheSame(t *testing.T) {
	b, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(nodeValue(doc.Content[0]))
	if err != nil {
		t.Fatal(err)
	}
	fy, _, _ := parseChecked(t, b)
	fj, ps, _ := parseChecked(t, j)
	if len(ps) > 0 || len(fj.objects) != len(fy.objects) {
		t.Fatalf("the JSON rendering: %d objects, problems %v; want %d objects", len(fj.objects), ps, len(fy.objects))
	}
	for _, o := range fy.objects {
		i := slices.IndexFunc(fj.objects, func(p *object) bool { return p.path == o.path })
		if i < 0 || fj.objects[i].id != o.id || !proto.Equal(fj.objects[i].msg, o.msg) {
			t.Errorf("%s: the JSON rendering has no object equal to the YAML's %v", o.path, o.msg)
		}
	}
}

// catalogPrefix is a valid city, cinema and movie for problem cases.
const catalogPrefix = `cities: [{city_id: b, name: B, time_zone: Europe/Berlin}]
cinemas:
  - cinema_id: c
    city_id: b
    name: C
    screens: [{screen_id: s, rows: [{name: A, seats: 5, category: std}], categories: [{name: std, currency: EUR}]}]
movies: [{movie_id: m, title: M}]
`

func TestImportProblems(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string // "path: message fragment", or "line N: path: fragment"
	}{
		{"not YAML", "cities: [", []string{"(file): not YAML or JSON"}},
		{"empty", "", []string{"(file): is empty"}},
		{"two documents", "cities: [{city_id: b, name: B}]\n---\nmovies: [{movie_id: m, title: M}]\n", []string{"(file): has more than one YAML document"}},
		{"not an object", "- a\n- b\n", []string{"(file): must be an object"}},
		{"nothing", "cities: []\n", []string{"(file): has no objects"}},
		{"unknown list", "theatres: []\n", []string{"line 1: theatres: unknown list"}},
		{"list is an object", "cities: {city_id: b}\n", []string{"cities: must be a list"}},
		{"unknown field", "cities: [{city_id: b, name: B, tz: UTC}]\n", []string{"line 1: cities[0].tz: unknown field (City has city_id, name, time_zone)"}},
		{"unknown field, JSON", `{"cities": [{"city_id": "b", "name": "B", "zone": "UTC"}]}`, []string{"cities[0].zone: unknown field"}},
		{"JSON names work", `{"cities": [{"cityId": "b", "name": "B", "timeZone": "UTC"}]}`, nil},
		{"object is a string", "movies: [metropolis]\n", []string{"movies[0]: must be an object (movie_id, title, duration_minutes)"}},
		{"number for a string", "cinemas: [{cinema_id: c, city_id: b, name: C, screens: [{screen_id: 1}]}]\n",
			[]string{`cinemas[0].screens[0].screen_id: must be a string, not "1" (quote it: "1")`}},
		{"string for a number", "movies: [{movie_id: m, title: M, duration_minutes: long}]\n", []string{"movies[0].duration_minutes: must be a whole number"}},
		{"negative count", catalogPrefix + "movies: [{movie_id: m2, title: M, duration_minutes: -1}]\n",
			[]string{"movies[0].duration_minutes: must be a whole number in 0..4294967295"}},
		{"list for a scalar", "movies: [{movie_id: [m], title: M}]\n", []string{"movies[0].movie_id: must be a string, not a list"}},
		{"bad id", "cities: [{city_id: a b, name: X}]\n", []string{"line 1: cities[0].city_id: must be 1..64 characters"}},
		{"no name", "cities: [{city_id: x}]\n", []string{"cities[0].name: is required"}},
		{"unknown zone", "cities: [{city_id: x, name: X, time_zone: Europe/Nowhere}]\n", []string{"cities[0].time_zone: is not a known IANA time zone"}},
		{"no rows", "cinemas: [{cinema_id: c, city_id: b, name: C, screens: [{screen_id: s, rows: [], categories: [{name: std, currency: EUR}]}]}]\n",
			[]string{"cinemas[0].screens[0].rows: must list 1..100 rows"}},
		{"too many seats", strings.Replace(catalogPrefix, "seats: 5", "seats: 501", 1), []string{"line 6: cinemas[0].screens[0].rows[0].seats: must be in 1..500"}},
		{"unknown category", strings.Replace(catalogPrefix, "category: std", "category: vip", 1), []string{"cinemas[0].screens[0].rows[0].category: names no category"}},
		{"defined twice", "movies: [{movie_id: m, title: M}, {movie_id: m, title: N}]\n", []string{"movies[1]: movie m is defined twice, first at movies[0] (line 1)"}},
		{"show ok", catalogPrefix + "shows: [{cinema_id: c, screen_id: s, movie_id: m, starts_at: '2027-01-15T20:00:00+01:00'}]\n", nil},
		{"unquoted time", catalogPrefix + "shows: [{cinema_id: c, screen_id: s, movie_id: m, starts_at: 2027-01-15T20:00:00+01:00}]\n", nil},
		{"no start", catalogPrefix + "shows: [{cinema_id: c, screen_id: s, movie_id: m}]\n", []string{"line 8: shows[0].starts_at: is required"}},
		{"bad start", catalogPrefix + "shows: [{cinema_id: c, screen_id: s, movie_id: m, starts_at: tomorrow}]\n", []string{"shows[0].starts_at: must be an RFC 3339 time"}},
		{"no month 13", catalogPrefix + "shows: [{cinema_id: c, screen_id: s, movie_id: m, starts_at: '2027-13-01T20:00:00Z'}]\n", []string{"shows[0].starts_at: must be an RFC 3339 time"}},
		{"before 1970", catalogPrefix + "shows: [{cinema_id: c, screen_id: s, movie_id: m, starts_at: '1969-12-31T00:00:00Z'}]\n", []string{"shows[0].starts_at: is required, between 1970 and 9999"}},
		{"bad show id", catalogPrefix + "shows: [{cinema_id: c, screen_id: s, movie_id: m, starts_at: '2027-01-15T20:00:00Z', show_id: a b}]\n", []string{"shows[0].show_id: must be 1..64"}},
		{"no such screen", catalogPrefix + "shows: [{cinema_id: c, screen_id: s2, movie_id: m, starts_at: '2027-01-15T20:00:00Z'}]\n",
			[]string{`shows[0].screen_id: cinema c has no screen "s2" (its screens: s) (cinemas[0], line 3)`}},
		{"same screen and minute", catalogPrefix + "shows:\n  - {cinema_id: c, screen_id: s, movie_id: m, starts_at: '2027-01-15T20:00:00Z'}\n  - {cinema_id: c, screen_id: s, movie_id: m, starts_at: '2027-01-15T21:00:00+01:00'}\n",
			[]string{"line 10: shows[1]: show c.s.20270115T2000Z is defined twice, first at shows[0] (line 9)"}},
		{"every problem at once", "cities: [{city_id: x, name: X, tz: UTC}]\nmovies: [{movie_id: m, title: ''}, {movie_id: 'a/b', title: T}]\n",
			[]string{"cities[0].tz: unknown field", "movies[0].title: is required", "movies[1].movie_id: must be 1..64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps, _ := parseChecked(t, []byte(tt.doc))
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems = %q, want %d: %q", got, len(tt.want), tt.want)
			}
			for _, w := range tt.want {
				if !slices.ContainsFunc(got, func(g string) bool { return problemMatches(g, w) }) {
					t.Errorf("problems = %q, want one like %q", got, w)
				}
			}
		})
	}
}

// problemMatches reports whether a problem reads as wanted: the same
// line and path, and a message that starts with the wanted fragment.
func problemMatches(got, want string) bool {
	if !strings.HasPrefix(want, "line ") {
		_, rest, found := strings.Cut(got, ": ")
		if strings.HasPrefix(got, "line ") && found {
			got = rest
		}
	}
	return strings.HasPrefix(got, want)
}

func TestImportReferences(t *testing.T) {
	doc := `cinemas: [{cinema_id: c, city_id: elsewhere, name: C, screens: [{screen_id: s, rows: [{name: A, seats: 5, category: std}], categories: [{name: std, currency: EUR}]}]}]
shows:
  - {cinema_id: c, screen_id: s, movie_id: old-movie, starts_at: '2027-01-15T20:00:00Z'}
  - {cinema_id: other, screen_id: "9", movie_id: old-movie, starts_at: '2027-01-15T20:00:00Z'}
`
	_, ps, refs := parseChecked(t, []byte(doc))
	if len(ps) > 0 {
		t.Fatalf("problems %v, want none: the cluster may have what the file names", ps)
	}
	var got []string
	for _, r := range refs {
		got = append(got, r.obj.path+"."+r.field+"="+r.kind+":"+r.id+"/"+r.screen)
	}
	want := []string{"cinemas[0].city_id=city:elsewhere/", "shows[0].movie_id=movie:old-movie/",
		"shows[1].cinema_id=cinema:other/9", "shows[1].movie_id=movie:old-movie/"}
	if !slices.Equal(got, want) {
		t.Errorf("references = %q, want %q", got, want)
	}
}

func TestImportPlanStep(t *testing.T) {
	b, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	f, _, _ := parseChecked(t, b)
	cinema := f.find(kindCinema, "abaton")
	stored := proto.Clone(cinema.msg).(*ledgerpb.Cinema)
	stored.Screens[0].SeatCount = 80 // the server computes it; the file has none
	other := proto.Clone(stored).(*ledgerpb.Cinema)
	other.Name = "Abaton"
	other.Screens[1].Rows[2].Category = "standard"
	other.Screens[1].Categories = other.Screens[1].Categories[:1]
	show := f.find(kindShow, "abaton-das-boot-premiere")
	m := show.msg.(*ledgerpb.ScheduleShowRequest)
	listed := &ledgerpb.ShowListing{ShowId: show.id, CinemaId: m.CinemaId, ScreenId: m.ScreenId, MovieId: m.MovieId, StartsAt: m.StartsAt}
	moved := proto.Clone(listed).(*ledgerpb.ShowListing)
	moved.MovieId, moved.StartsAt = "metropolis", timestamppb.New(m.StartsAt.AsTime().Add(30*60e9))

	tests := []struct {
		name   string
		obj    *object
		cur    proto.Message
		action string
		detail string
	}{
		{"new cinema", cinema, nil, actionCreate, ""},
		{"same cinema", cinema, stored, actionUnchanged, ""},
		{"other cinema", cinema, other, actionConflict, `exists in the cluster with other fields: name is "Abaton" in the cluster, "Abaton Kino" in the file; ` +
			`screens[1].rows[2].category is "standard" in the cluster, "premium" in the file; screens[1].categories has 1 in the cluster, 2 in the file`},
		{"new show", show, nil, actionCreate, "das-boot on abaton/klein at 2027-01-17T17:00:00Z"},
		{"same show", show, listed, actionUnchanged, "das-boot on abaton/klein at 2027-01-17T17:00:00Z"},
		{"moved show", show, moved, actionConflict, `exists in the cluster with other fields: movie_id is "metropolis" in the cluster, "das-boot" in the file; ` +
			`starts_at is 2027-01-17T17:30:00Z in the cluster, 2027-01-17T17:00:00Z in the file`},
	}
	for _, tt := range tests {
		s := planStep(tt.obj, tt.cur)
		if s.action != tt.action || s.detail != tt.detail {
			t.Errorf("%s: plan = %s %q, want %s %q", tt.name, s.action, s.detail, tt.action, tt.detail)
		}
	}
}

func TestImportBadFileExitsTwo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	doc := "cities: [{city_id: x, name: X, tz: UTC}]\nshows: [{cinema_id: c, screen_id: s, movie_id: m, starts_at: soon}]\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"show", "import", path}, {"show", "import", path, "-o", "json"}, {"show", "import", filepath.Join(t.TempDir(), "missing.yaml")}} {
		var out, errOut bytes.Buffer
		// Port 1 refuses: a call made before the check would fail, exit 1.
		code := run(context.Background(), append([]string{"--endpoints", "127.0.0.1:1"}, args...), &out, &errOut, func(string) string { return "" })
		if code != exitUsage {
			t.Errorf("seatctl %s = exit %d, stderr %q; want 2", strings.Join(args, " "), code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	run(context.Background(), []string{"--endpoints", "127.0.0.1:1", "show", "import", path, "-o", "json"}, &out, &errOut, func(string) string { return "" })
	for _, want := range []string{"bad.yaml:1: cities[0].tz: unknown field", "bad.yaml:2: shows[0].starts_at: must be an RFC 3339 time", "bad.yaml: 2 problems; nothing was sent"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q lacks %q", errOut.String(), want)
		}
	}
	var r importReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || len(r.Problems) != 2 || r.Problems[1].Path != "shows[0].starts_at" || r.Problems[1].Line != 2 {
		t.Errorf("-o json = %s (%v), want a report with both problems", out.String(), err)
	}
}

func TestImportStopsAtFirstFailure(t *testing.T) {
	b, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	f, _, _ := parseChecked(t, b)
	var steps []importStep
	for _, o := range f.objects[:3] { // berlin, hamburg, zoo-palast
		steps = append(steps, importStep{obj: o, action: actionCreate})
	}
	steps[1].action = actionUnchanged
	// Port 1 refuses every call: UNAVAILABLE, retried for 3x the timeout.
	a := &app{out: io.Discard, errOut: io.Discard, endpoints: []string{"127.0.0.1:1"}, timeout: 50 * time.Millisecond}
	defer a.close()
	newImporter(a).apply(context.Background(), steps)
	got := []string{steps[0].action, steps[1].action, steps[2].action}
	if want := []string{actionFailed, actionUnchanged, actionSkipped}; !slices.Equal(got, want) {
		t.Errorf("apply with no node up = %v, want %v: stop at the first failure", got, want)
	}
	if d := steps[0].detail; !strings.Contains(d, "UNAVAILABLE") || !strings.Contains(d, "run the same command again") {
		t.Errorf("failure detail = %q, want UNAVAILABLE and how to finish the import", d)
	}
}
