package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // a city's zone is checked and read here as on the server, whatever this machine's tz database

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The checks of a catalog file before anything is sent: each object with
// the rules the server applies (the fsm validators the gateway calls, so
// there is one set of rules), ids unique per kind, and references resolved
// within the file. References to objects the file does not define are
// returned for the plan to resolve against the cluster.

// reference is an id a file names but does not define: the cluster must
// have it.
type reference struct {
	obj   *object
	field string // "movie_id"
	kind  string // kindCity, kindCinema or kindMovie
	id    string
	// screen is the screen a show names, when kind is kindCinema.
	screen string
}

// checkCatalog checks every object of a parsed file, sets each object's id,
// and returns the problems (sorted by line) and the references the file
// leaves to the cluster. References are checked only when no object was
// dropped for its shape, so a typo does not also show up as a missing id.
func checkCatalog(f *catalogFile, shapeOK bool) (problems, []reference) {
	var ps problems
	first := map[string]*object{}
	for _, o := range f.objects {
		checkObject(o, &ps)
		key := o.kind + "\x00" + o.id
		if prev, dup := first[key]; dup && o.id != "" {
			ps.add(o.path, o.line(""), "%s %s is defined twice, first at %s (line %d)", o.kind, o.id, prev.path, prev.line(""))
			continue
		}
		first[key] = o
	}
	var refs []reference
	if shapeOK {
		for _, o := range f.objects {
			refs = append(refs, checkReferences(f, o, &ps)...)
		}
	}
	slices.SortStableFunc(ps, func(a, b problem) int { return cmp.Compare(a.Line, b.Line) })
	return ps, refs
}

// checkObject checks one object with the server's rules and sets its id.
func checkObject(o *object, ps *problems) {
	fieldProblem := func(fe *fsm.FieldError, prefix string) {
		if fe != nil {
			rel := strings.TrimPrefix(strings.TrimPrefix(fe.Field, prefix), ".")
			ps.add(joinPath(o.path, rel), o.line(rel), "%s", fe.Message)
		}
	}
	switch m := o.msg.(type) {
	case *ledgerpb.City:
		o.id = m.CityId
		if fe := fsm.ValidateCity(m); fe != nil {
			fieldProblem(fe, "city")
		} else if _, err := time.LoadLocation(m.TimeZone); err != nil {
			ps.add(o.path+".time_zone", o.line("time_zone"), "is not a known IANA time zone (such as Europe/Berlin)")
		}
	case *ledgerpb.Movie:
		o.id = m.MovieId
		fieldProblem(fsm.ValidateMovie(m), "movie")
	case *ledgerpb.Cinema:
		o.id = m.CinemaId
		fieldProblem(fsm.ValidateCinema(m), "cinema")
	case *ledgerpb.ScheduleShowRequest:
		checkShow(o, m, ps)
	default:
		panic(fmt.Sprintf("seatctl: catalog object of type %T", o.msg))
	}
}

// checkShow checks a show as ScheduleShow would and names it: its show_id,
// or the one ScheduleShow derives from cinema, screen and start.
func checkShow(o *object, m *ledgerpb.ScheduleShowRequest, ps *problems) {
	if m.StartsAt == nil || !m.StartsAt.IsValid() {
		ps.add(o.path+".starts_at", o.line("starts_at"), "is required: an RFC 3339 time such as 2027-01-15T20:00:00+01:00")
		return
	}
	for _, f := range []struct{ name, id string }{{"cinema_id", m.CinemaId}, {"screen_id", m.ScreenId}, {"movie_id", m.MovieId}} {
		if fe := fsm.ValidateCatalogID(f.name, f.id); fe != nil {
			ps.add(o.path+"."+f.name, o.line(f.name), "%s", fe.Message)
			return
		}
	}
	o.id = m.ShowId
	if o.id == "" {
		o.id = gateway.ScheduledShowID(m.CinemaId, m.ScreenId, m.StartsAt.AsTime())
	}
	ls := &ledgerpb.ListShowCmd{ShowId: o.id, CinemaId: m.CinemaId, ScreenId: m.ScreenId, MovieId: m.MovieId, StartsAtMs: m.StartsAt.AsTime().UnixMilli()}
	if fe := fsm.ValidateListShow(ls); fe != nil {
		ps.add(o.path+"."+fe.Field, o.line(fe.Field), "%s", fe.Message)
	}
}

// checkReferences resolves the ids an object names within the file, and
// returns those the file does not define.
func checkReferences(f *catalogFile, o *object, ps *problems) []reference {
	ref := func(field, kind, id, screen string) reference {
		return reference{obj: o, field: field, kind: kind, id: id, screen: screen}
	}
	var out []reference
	switch m := o.msg.(type) {
	case *ledgerpb.Cinema:
		if f.find(kindCity, m.CityId) == nil {
			out = append(out, ref("city_id", kindCity, m.CityId, ""))
		}
	case *ledgerpb.ScheduleShowRequest:
		if c := f.find(kindCinema, m.CinemaId); c == nil {
			out = append(out, ref("cinema_id", kindCinema, m.CinemaId, m.ScreenId))
		} else if msg := screenProblem(c.msg.(*ledgerpb.Cinema), m.ScreenId); msg != "" {
			ps.add(o.path+".screen_id", o.line("screen_id"), "%s (%s, line %d)", msg, c.path, c.line(""))
		}
		if f.find(kindMovie, m.MovieId) == nil {
			out = append(out, ref("movie_id", kindMovie, m.MovieId, ""))
		}
	}
	return out
}

// screenProblem says why a cinema has no screen of that id ("" if it has).
func screenProblem(c *ledgerpb.Cinema, screen string) string {
	var ids []string
	for _, s := range c.Screens {
		if s.ScreenId == screen {
			return ""
		}
		ids = append(ids, s.ScreenId)
	}
	return fmt.Sprintf("cinema %s has no screen %q (its screens: %s)", c.CinemaId, screen, strings.Join(ids, ", "))
}

// joinPath appends a relative path to an object's path.
func joinPath(base, rel string) string {
	switch {
	case rel == "":
		return base
	case base == "" || strings.HasPrefix(rel, "["):
		return base + rel
	}
	return base + "." + rel
}
