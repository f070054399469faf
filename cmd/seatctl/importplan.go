package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// The plan and apply phases of seatctl show import (see import.go).

// importer reads and writes the catalog for one import.
type importer struct {
	a *app
	// records caches the cluster's records by kind and id; a nil value
	// means the cluster has none. Only the command's goroutine uses it.
	records map[string]proto.Message
}

func newImporter(a *app) *importer {
	return &importer{a: a, records: map[string]proto.Message{}}
}

// onAnyCatalog runs f against the endpoints in turn, moving on after a
// retryable error, for up to the retry window. Writes repeat with the same
// request ids, so a repeat is answered exactly once.
func (a *app) onAnyCatalog(ctx context.Context, f func(ctx context.Context, c ledgerpb.CatalogClient) error) error {
	attempt := 0
	return a.retry(ctx, a.retryWindow(), func(ctx context.Context) error {
		ep := a.endpoints[attempt%len(a.endpoints)]
		attempt++
		conn, err := a.conn(ep)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, a.timeout)
		defer cancel()
		return f(ctx, ledgerpb.NewCatalogClient(conn))
	})
}

// preferCatalogLeader puts the catalog group's leader first among the
// endpoints. A leader's browse reads include every write it acknowledged,
// so the plan of a re-run sees all that the last run created; any other
// node may lag by up to the 2 s staleness bound. Finding the leader takes
// Admin Status, an admin call: without the admin token it fails, and an
// import (not a dry run) is refused before it reads anything. Otherwise it
// is best effort: without a known leader the endpoints stay as they are.
func (im *importer) preferCatalogLeader(ctx context.Context, dryRun bool) error {
	a := im.a
	_, err := a.status(ctx, a.endpoints[0], false)
	if c := status.Code(err); !dryRun && (c == codes.Unauthenticated || c == codes.PermissionDenied) {
		return fmt.Errorf("show import creates through admin calls: %s", describe(err))
	}
	v, err := a.pollView(ctx, false)
	if err != nil {
		return nil
	}
	g := v.group(shard.Map{Groups: uint32(len(v.Groups))}.CatalogGroup())
	if g == nil || g.Leader == "" || !v.up(g.Leader) {
		return nil
	}
	if n := v.node(g.Leader); n != nil && n.GRPCAddr != "" {
		rest := slices.DeleteFunc(slices.Clone(a.endpoints), func(e string) bool { return e == n.GRPCAddr })
		a.endpoints = append([]string{n.GRPCAddr}, rest...)
	}
	return nil
}

// record reads a city, movie or cinema, or a show's listing, once per
// import; nil, nil when the cluster has none.
func (im *importer) record(ctx context.Context, kind, id string) (proto.Message, error) {
	key := kind + "\x00" + id
	if m, ok := im.records[key]; ok {
		return m, nil
	}
	var m proto.Message
	err := im.a.onAnyCatalog(ctx, func(ctx context.Context, c ledgerpb.CatalogClient) error {
		var err error
		switch kind {
		case kindCity:
			m, err = c.GetCity(ctx, &ledgerpb.GetCityRequest{CityId: id})
		case kindMovie:
			m, err = c.GetMovie(ctx, &ledgerpb.GetMovieRequest{MovieId: id})
		case kindCinema:
			m, err = c.GetCinema(ctx, &ledgerpb.GetCinemaRequest{CinemaId: id})
		case kindShow:
			m, err = c.GetShowListing(ctx, &ledgerpb.GetShowListingRequest{ShowId: id})
		default:
			panic("seatctl: no read for kind " + kind)
		}
		return err
	})
	switch {
	case isNotFound(err):
		m = nil
	case err != nil:
		return nil, fmt.Errorf("read %s %s from the cluster: %s", kind, id, describe(err))
	}
	im.records[key] = m
	return m, nil
}

// plan resolves the file's references against the cluster (a missing one
// is a problem), then gives each object its action: create, unchanged or
// conflict. It writes nothing.
func (im *importer) plan(ctx context.Context, f *catalogFile, refs []reference) ([]importStep, problems, error) {
	var ps problems
	for _, r := range refs {
		m, err := im.record(ctx, r.kind, r.id)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case m == nil:
			ps.add(r.obj.path+"."+r.field, r.obj.line(r.field), "no %s %q in the file or the cluster", r.kind, r.id)
		case r.kind == kindCinema:
			if msg := screenProblem(m.(*ledgerpb.Cinema), r.screen); msg != "" {
				ps.add(r.obj.path+".screen_id", r.obj.line("screen_id"), "%s (in the cluster)", msg)
			}
		}
	}
	if len(ps) > 0 {
		return nil, ps, nil
	}
	var steps []importStep
	for _, kind := range applyOrder {
		for _, o := range f.ofKind(kind) {
			cur, err := im.record(ctx, o.kind, o.id)
			if err != nil {
				return nil, nil, err
			}
			steps = append(steps, planStep(o, cur))
		}
	}
	return steps, nil, nil
}

// planStep compares an object with the cluster's record of it (nil: none).
func planStep(o *object, cur proto.Message) importStep {
	s := importStep{obj: o, action: actionCreate}
	if m, ok := o.msg.(*ledgerpb.ScheduleShowRequest); ok {
		s.detail = showDetail(m)
	}
	if cur == nil {
		return s
	}
	var diffs []string
	if m, ok := o.msg.(*ledgerpb.ScheduleShowRequest); ok {
		diffs = diffListing(cur.(*ledgerpb.ShowListing), m)
	} else {
		have, want := proto.Clone(cur), proto.Clone(o.msg)
		if c, ok := have.(*ledgerpb.Cinema); ok {
			clearSeatCounts(c, want.(*ledgerpb.Cinema))
		}
		diffMessages("", have.ProtoReflect(), want.ProtoReflect(), &diffs)
	}
	if len(diffs) == 0 {
		s.action = actionUnchanged
		return s
	}
	if n := len(diffs); n > conflictDiffsShownMax {
		diffs = append(diffs[:conflictDiffsShownMax], fmt.Sprintf("and %d more", n-conflictDiffsShownMax))
	}
	s.action = actionConflict
	s.detail = "exists in the cluster with other fields: " + strings.Join(diffs, "; ")
	return s
}

// clearSeatCounts zeroes the screens' seat_count, an output the server
// computes, so that it never counts as a difference.
func clearSeatCounts(cs ...*ledgerpb.Cinema) {
	for _, c := range cs {
		for _, s := range c.Screens {
			s.SeatCount = 0
		}
	}
}

// diffListing lists how a listed show differs from the file's schedule.
func diffListing(l *ledgerpb.ShowListing, m *ledgerpb.ScheduleShowRequest) []string {
	var out []string
	for _, f := range []struct{ name, have, want string }{
		{"cinema_id", l.CinemaId, m.CinemaId},
		{"screen_id", l.ScreenId, m.ScreenId},
		{"movie_id", l.MovieId, m.MovieId},
	} {
		if f.have != f.want {
			out = append(out, fmt.Sprintf("%s is %q in the cluster, %q in the file", f.name, f.have, f.want))
		}
	}
	if !l.StartsAt.AsTime().Equal(m.StartsAt.AsTime()) {
		out = append(out, fmt.Sprintf("starts_at is %s in the cluster, %s in the file", timeText(l.StartsAt.AsTime()), timeText(m.StartsAt.AsTime())))
	}
	return out
}

// diffMessages appends, for each field where the cluster's record (have)
// and the file's object (want) differ, its path and both values:
// `screens[1].rows[0].category is "std" in the cluster, "vip" in the file`.
func diffMessages(prefix string, have, want protoreflect.Message, out *[]string) {
	fields := have.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		path := joinPath(prefix, string(fd.Name()))
		switch {
		case fd.IsList():
			lh, lw := have.Get(fd).List(), want.Get(fd).List()
			if lh.Len() != lw.Len() {
				*out = append(*out, fmt.Sprintf("%s has %d in the cluster, %d in the file", path, lh.Len(), lw.Len()))
				continue
			}
			for j := range lh.Len() {
				diffValues(fmt.Sprintf("%s[%d]", path, j), fd, lh.Get(j), lw.Get(j), out)
			}
		case fd.IsMap():
			panic("seatctl: no catalog message has a map field") // none does; keep diff honest if one is added
		default:
			diffValues(path, fd, have.Get(fd), want.Get(fd), out)
		}
	}
}

// diffValues compares one value of a field (an element, for a list).
func diffValues(path string, fd protoreflect.FieldDescriptor, have, want protoreflect.Value, out *[]string) {
	if fd.Kind() == protoreflect.MessageKind {
		diffMessages(path, have.Message(), want.Message(), out)
		return
	}
	if have.Equal(want) {
		return
	}
	text := func(v protoreflect.Value) string {
		if fd.Kind() == protoreflect.StringKind {
			return fmt.Sprintf("%q", v.String())
		}
		return v.String()
	}
	*out = append(*out, fmt.Sprintf("%s is %s in the cluster, %s in the file", path, text(have), text(want)))
}

// apply creates the objects the plan says to create, in plan order
// (cities, movies, cinemas, shows), and stops at the first failure: the
// objects not attempted are skipped. Each step's action becomes its outcome.
func (im *importer) apply(ctx context.Context, steps []importStep) {
	failed := false
	for i := range steps {
		s := &steps[i]
		if s.action != actionCreate {
			continue
		}
		if failed {
			s.action = actionSkipped
			continue
		}
		if err := im.create(ctx, s.obj); err != nil {
			s.action, s.detail, failed = actionFailed, describe(err), true
			if retryable(err) {
				s.detail += "; the outcome is unknown: run the same command again (request ids come from the content, so nothing is created twice)"
			}
			continue
		}
		s.action = actionCreated
	}
}

// create creates one object, exactly once.
func (im *importer) create(ctx context.Context, o *object) error {
	rid := requestIDOf(o)
	return im.a.onAnyCatalog(ctx, func(ctx context.Context, c ledgerpb.CatalogClient) error {
		var err error
		switch m := o.msg.(type) {
		case *ledgerpb.City:
			_, err = c.CreateCity(ctx, &ledgerpb.CreateCityRequest{City: m, ClientId: importClientID, RequestId: rid})
		case *ledgerpb.Movie:
			_, err = c.CreateMovie(ctx, &ledgerpb.CreateMovieRequest{Movie: m, ClientId: importClientID, RequestId: rid})
		case *ledgerpb.Cinema:
			_, err = c.CreateCinema(ctx, &ledgerpb.CreateCinemaRequest{Cinema: m, ClientId: importClientID, RequestId: rid})
		case *ledgerpb.ScheduleShowRequest:
			// The show id the plan read; ScheduleShow derives its
			// request ids from the show itself.
			req := proto.Clone(m).(*ledgerpb.ScheduleShowRequest)
			req.ShowId = o.id
			_, err = c.ScheduleShow(ctx, req)
		default:
			panic(fmt.Sprintf("seatctl: catalog object of type %T", o.msg))
		}
		return err
	})
}
