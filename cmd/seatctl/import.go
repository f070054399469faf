package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// seatctl show import: a catalog file applied through the Catalog API, in
// three phases, so that a file is either refused whole or applied in an
// order that never needs undoing:
//
//  1. check: the file alone (shapes, the server's field rules, unique ids,
//     references within the file). Problems exit 2; nothing is sent.
//  2. plan: read each object, and each id the file names but does not
//     define, from the cluster (GetCity, GetMovie, GetCinema,
//     GetShowListing): absent is "create", equal is "unchanged", different
//     is a conflict. A missing reference exits 2, a conflict exits 1;
//     either way nothing is written. --dry-run stops here.
//  3. apply: create cities, movies, cinemas, then shows, stopping at the
//     first failure (the rest are "skipped"; a cluster that fails one call
//     would fail the next).
//
// Every create is exactly once: its client id is importClientID and its
// request id is derived from the object's content (ScheduleShow derives
// its own from the show), and creating a record again with the same
// content is a no-op. So re-running the same file after a failure or an
// unknown outcome finishes the work and duplicates nothing.
//
// The plan's reads are browse reads, sent to the catalog group's leader
// when Admin Status names it, so that they see every acknowledged write.
// Should the leader be unknown or change meanwhile, they are stale by at
// most 2 s: an object created in the last 2 s may then be counted
// "created" when it was already there. The create answers OK either way,
// and a conflict the plan missed is still refused by the create
// (CITY_EXISTS, ...).

// importClientID is the client id of the commands an import proposes.
const importClientID = "seatctl-import"

// Actions of a plan, and outcomes of an import.
const (
	actionCreate    = "create"
	actionUnchanged = "unchanged"
	actionConflict  = "conflict"
	actionCreated   = "created"
	actionFailed    = "failed"
	actionSkipped   = "skipped"
)

// conflictDiffsShownMax bounds the differing fields named per conflict.
const conflictDiffsShownMax = 5

// importStep is what an import does, or did, with one object.
type importStep struct {
	obj    *object
	action string
	detail string // what a show is, a conflict's differences, a failure
}

func newShowImportCmd(a *app) *cobra.Command {
	var dryRun bool
	c := &cobra.Command{
		Use:   "import FILE",
		Short: "Load a catalog (cities, cinemas and screens, movies, shows) from a JSON or YAML file (- reads stdin)",
		Long: `import reads one JSON or YAML document with the lists cities, cinemas (with
their screens and seat layouts), movies and shows, whose objects have the
fields of catalog.proto (City, Cinema, Movie, ScheduleShowRequest), and creates
them through the Catalog API with the admin token.

The whole file is checked before anything is sent: unknown fields, values of
the wrong type, the server's rules (ids, names, layouts), ids defined twice,
bad times, and references: a cinema's city and a show's cinema, screen and
movie must be in the file or already in the cluster. Every problem is printed
with its path and line, and the command exits 2.

Then each object is read from the cluster: one that exists with the same
fields is "unchanged", one that exists with other fields is a conflict, named
with the fields that differ; on any conflict nothing is written (exit 1).
--dry-run prints this plan and stops.

Objects are created in the order cities, movies, cinemas, shows, each exactly
once: request ids are derived from the content. After a failure or an unknown
outcome, run the same command again: what was done counts as unchanged.`,
		Example: `  seatctl --admin-token-file seatd-data/admin.token show import cmd/seatctl/testdata/catalog.yaml --dry-run
  seatctl show import season.yaml -o json
  generate-program | seatctl show import -

  # a catalog file (cmd/seatctl/testdata/catalog.yaml is a complete one)
  cities:
    - {city_id: berlin, name: Berlin, time_zone: Europe/Berlin}
  cinemas:
    - cinema_id: zoo-palast
      city_id: berlin
      name: Zoo Palast
      screens:
        - screen_id: "1"
          name: Saal 1
          rows: [{name: A, seats: 12, category: std}]
          categories: [{name: std, price_minor: 1150, currency: EUR}]
  movies:
    - {movie_id: metropolis, title: Metropolis, duration_minutes: 153}
  shows:
    - {cinema_id: zoo-palast, screen_id: "1", movie_id: metropolis, starts_at: "2027-01-15T20:00:00+01:00"}`,
		Args: exactArgs(1, "FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.importCatalog(c.Context(), args[0], c.InOrStdin(), dryRun)
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "check the file and print the plan (create, unchanged, conflict); write nothing")
	return c
}

// importReport is what an import prints with -o json.
type importReport struct {
	File     string                    `json:"file"`
	DryRun   bool                      `json:"dry_run"`
	Problems []problem                 `json:"problems,omitempty"`
	Objects  []reportObject            `json:"objects"`
	Summary  map[string]map[string]int `json:"summary"`
}

// reportObject is one object's action or outcome.
type reportObject struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Path   string `json:"path"`
	Line   int    `json:"line,omitempty"`
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
}

// importCatalog runs the three phases on one file.
func (a *app) importCatalog(ctx context.Context, path string, stdin io.Reader, dryRun bool) error {
	name := path
	if path == "-" {
		name = "stdin"
	}
	f, refs, err := a.readCatalog(path, name, stdin)
	if err != nil {
		return err
	}
	im := newImporter(a)
	if err := im.preferCatalogLeader(ctx, dryRun); err != nil {
		return err
	}
	steps, ps, err := im.plan(ctx, f, refs)
	if err != nil {
		return err
	}
	if len(ps) > 0 {
		a.reportProblems(name, ps, dryRun)
		return usagef("%s: %s the file names but neither it nor the cluster has; nothing was written", name, plural(len(ps), "id"))
	}
	conflicts := 0
	for _, s := range steps {
		if s.action == actionConflict {
			conflicts++
			fmt.Fprintf(a.errOut, "%s:%d: %s: %s %s %s\n", name, s.obj.line(""), s.obj.path, s.obj.kind, s.obj.id, s.detail)
		}
	}
	if conflicts == 0 && !dryRun {
		im.apply(ctx, steps)
	}
	if err := a.printImport(name, dryRun, steps); err != nil {
		return err
	}
	if conflicts > 0 {
		return fmt.Errorf("%s: %s with the cluster (listed above); nothing was written", name, plural(conflicts, "object conflicts", "objects conflict"))
	}
	for _, s := range steps {
		if s.action == actionFailed {
			return fmt.Errorf("%s: %s %s (%s): %s", name, s.obj.kind, s.obj.id, s.obj.path, s.detail)
		}
	}
	return nil
}

// readCatalog reads, parses and checks a catalog file; every problem is
// printed (as FILE:LINE: path: message) and makes a usage error.
func (a *app) readCatalog(path, name string, stdin io.Reader) (*catalogFile, []reference, error) {
	var r io.Reader = stdin
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return nil, nil, usagef("%v", err)
		}
		defer file.Close()
		r = file
	}
	b, err := io.ReadAll(io.LimitReader(r, catalogFileBytesMax+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > catalogFileBytesMax {
		return nil, nil, usagef("%s: larger than %d bytes: split it", name, catalogFileBytesMax)
	}
	f, ps := parseCatalog(b)
	if f != nil {
		more, refs := checkCatalog(f, len(ps) == 0)
		if ps = append(ps, more...); len(ps) == 0 {
			return f, refs, nil
		}
	}
	a.reportProblems(name, ps, false)
	return nil, nil, usagef("%s: %s; nothing was sent", name, plural(len(ps), "problem"))
}

// reportProblems prints a file's problems on stderr, at most
// problemsShownMax of them, and with -o json also as a report on stdout.
func (a *app) reportProblems(name string, ps problems, dryRun bool) {
	for i, p := range ps {
		if i == problemsShownMax {
			fmt.Fprintf(a.errOut, "%s: ... and %d more\n", name, len(ps)-i)
			break
		}
		if p.Line > 0 {
			fmt.Fprintf(a.errOut, "%s:%d: %s: %s\n", name, p.Line, p.Path, p.Message)
		} else {
			fmt.Fprintf(a.errOut, "%s: %s: %s\n", name, p.Path, p.Message)
		}
	}
	if a.json() {
		writeJSON(a.out, importReport{File: name, DryRun: dryRun, Problems: ps, Objects: []reportObject{}, Summary: map[string]map[string]int{}})
	}
}

// plural is "1 problem" or "3 problems"; forms gives the singular and
// plural phrases when adding an s will not do.
func plural(n int, forms ...string) string {
	one, many := forms[0], forms[0]+"s"
	if len(forms) > 1 {
		many = forms[1]
	}
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// requestIDOf derives an object's request id from its kind, id and
// content: the same object always gets the same id, a changed one another.
func requestIDOf(o *object) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(o.msg)
	if err != nil {
		panic(fmt.Sprintf("seatctl: encode %T: %v", o.msg, err)) // a decoded message always encodes
	}
	sum := sha256.Sum256(b)
	return "import-" + o.kind + ":" + o.id + ":" + hex.EncodeToString(sum[:8])
}

// isNotFound reports whether a read found no such record.
func isNotFound(err error) bool {
	return status.Code(err) == codes.NotFound
}

// showDetail says what a show is: "metropolis on zoo-palast/1 at 2027-...".
func showDetail(m *ledgerpb.ScheduleShowRequest) string {
	return fmt.Sprintf("%s on %s/%s at %s", m.MovieId, m.CinemaId, m.ScreenId, timeText(m.StartsAt.AsTime()))
}

// summarize counts each kind's actions; every kind and every column of the
// mode is present, so a JSON reader finds zeros rather than gaps.
func summarize(steps []importStep, columns []string) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, k := range applyOrder {
		out[k] = map[string]int{}
		for _, c := range columns {
			out[k][c] = 0
		}
	}
	for _, s := range steps {
		out[s.obj.kind][s.action]++
	}
	return out
}

// summaryColumns are the actions a summary shows.
func summaryColumns(dryRun bool, steps []importStep) []string {
	cols := []string{actionCreated, actionUnchanged, actionFailed, actionSkipped}
	if dryRun {
		cols = []string{actionCreate, actionUnchanged}
	}
	for _, s := range steps {
		if s.action == actionConflict {
			return []string{actionCreate, actionUnchanged, actionConflict}
		}
	}
	return cols
}

// printImport prints the plan (dry run or conflicts) or the outcome: with
// -o table, a line per object (a real run leaves out unchanged ones; the
// summary counts them) and a summary per kind.
func (a *app) printImport(name string, dryRun bool, steps []importStep) error {
	cols := summaryColumns(dryRun, steps)
	sum := summarize(steps, cols)
	if a.json() {
		r := importReport{File: name, DryRun: dryRun, Objects: []reportObject{}, Summary: sum}
		for _, s := range steps {
			r.Objects = append(r.Objects, reportObject{Kind: s.obj.kind, ID: s.obj.id, Path: s.obj.path,
				Line: s.obj.line(""), Action: s.action, Detail: s.detail})
		}
		return writeJSON(a.out, r)
	}
	planned := cols[0] == actionCreate
	t := newTable(a.out)
	t.row("ACTION", "KIND", "ID", "PATH", "DETAIL")
	for _, s := range steps {
		if planned || s.action != actionUnchanged {
			t.row(s.action, s.obj.kind, s.obj.id, s.obj.path, dash(s.detail))
		}
	}
	t.flush()
	fmt.Fprintln(a.out)
	t = newTable(a.out)
	header := []string{"KIND"}
	for _, c := range cols {
		header = append(header, strings.ToUpper(c))
	}
	t.row(header...)
	for _, k := range applyOrder {
		cells := []string{k}
		for _, c := range cols {
			cells = append(cells, fmt.Sprint(sum[k][c]))
		}
		t.row(cells...)
	}
	t.flush()
	if dryRun {
		fmt.Fprintf(a.out, "dry run of %s: nothing was written\n", name)
	}
	return nil
}
