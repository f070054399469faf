package shard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	// Every node must read a city's dates in the same zone, whatever tz
	// database its machine has (or lacks).
	_ "time/tzdata"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// CatalogKey is the reserved key whose group holds the whole catalog (the
// catalog group): Map.GroupFor(CatalogKey). It is hashed like a show id, so
// the catalog shares its group with the shows that hash there; their keys
// never meet (fsm/doc.go). Changing it moves the catalog: it is part of the
// on-disk format.
const CatalogKey = "catalog"

// CatalogGroup returns the catalog group.
func (m Map) CatalogGroup() uint32 { return m.GroupFor(CatalogKey) }

// Browse reads (catalog listings and free-seat counts) never go through
// the booking path: no proposal, no VerifyLeader. Any replica that heard
// from its group's leader within BrowseStalenessMax serves them; one that
// did not sends them on to the leader.
const (
	// BrowseStalenessMax is the staleness bound browse answers state and
	// this node enforces. It must exceed raft's LeaderLeaseTimeout (a
	// deposed leader stops serving within it) and be well above the
	// heartbeat interval (HeartbeatTimeout/10).
	BrowseStalenessMax = 2 * time.Second
	// seatCountFanoutMax bounds the groups one listing asks for free-seat
	// counts at once; each is one read of several shows.
	seatCountFanoutMax = 8
	// seatCountTimeout bounds each group's count read: a listing comes
	// back without the counts of a group that cannot answer in time.
	seatCountTimeout = 1 * time.Second
)

// Catalog errors for reads that name something the catalog lacks.
var (
	ErrCityNotFound   = fmt.Errorf("shard: city %w", fsm.ErrNotFound)
	ErrCinemaNotFound = fmt.Errorf("shard: cinema %w", fsm.ErrNotFound)
	ErrMovieNotFound  = fmt.Errorf("shard: movie %w", fsm.ErrNotFound)
	ErrNotListed      = fmt.Errorf("shard: show listing %w", fsm.ErrNotFound)
)

// ProposeCatalog applies a catalog command in the catalog group, with
// Propose's retries.
func (r *Router) ProposeCatalog(ctx context.Context, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
	return r.Propose(ctx, CatalogKey, cmd)
}

// Catalog runs a catalog query on the catalog group, within the browse
// staleness bound; with linearizable set (the admin's schedule path), on
// the leader after it confirms its leadership.
func (r *Router) Catalog(ctx context.Context, q *ledgerpb.CatalogQuery, linearizable bool) (*ledgerpb.CatalogAnswer, error) {
	req := &ledgerpb.ReadRequest{GroupId: r.smap.CatalogGroup(), Kind: ledgerpb.ReadKind_READ_KIND_CATALOG,
		CatalogQuery: q, Linearizable: linearizable}
	resp, err := r.browse(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.Catalog, nil
}

// SeatCounts reads the free seats of shows by bounded-stale reads of their
// groups: one read per group, at most seatCountFanoutMax at once. A show
// whose group did not answer within seatCountTimeout is absent from the
// result; a show that does not exist is there with found unset.
func (r *Router) SeatCounts(ctx context.Context, showIDs []string) map[string]*ledgerpb.ShowSeatCount {
	byGroup := map[uint32][]string{}
	var groups []uint32
	for _, id := range showIDs {
		g := r.smap.GroupFor(id)
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], id)
	}
	out := make(map[string]*ledgerpb.ShowSeatCount, len(showIDs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, seatCountFanoutMax)
	for _, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			gctx, cancel := context.WithTimeout(ctx, seatCountTimeout)
			defer cancel()
			resp, err := r.browse(gctx, &ledgerpb.ReadRequest{GroupId: g, Kind: ledgerpb.ReadKind_READ_KIND_SEAT_COUNTS, ShowIds: byGroup[g]})
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, c := range resp.SeatCounts {
				out[c.ShowId] = c
			}
		}()
	}
	wg.Wait()
	return out
}

// browse sends a browse read to a replica that can serve it: this node's
// when it is fresh enough, else the one the leader hint names, retrying
// until ctx ends, or until this node's replica has known no leader for a
// while (checkLeader): a linearizable read then fails before it is tried,
// a bounded-stale one once this replica could not serve it.
func (r *Router) browse(ctx context.Context, req *ledgerpb.ReadRequest) (*ledgerpb.ReadResponse, error) {
	for backoff := retryBackoffMin; ; backoff = min(2*backoff, retryBackoffMax) {
		if req.Linearizable {
			if err := r.checkLeader(req.GroupId); err != nil {
				return nil, err
			}
		}
		resp, err := r.browseOnce(ctx, req)
		if err == nil {
			return resp, browseErr(resp)
		}
		if !retryable(err) && !errors.Is(err, raftnode.ErrStale) {
			return nil, err
		}
		if lerr := r.checkLeader(req.GroupId); lerr != nil {
			return nil, fmt.Errorf("%w (%v)", lerr, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", raftnode.ErrUnavailable, err)
		case <-time.After(backoff):
		}
	}
}

func (r *Router) browseOnce(ctx context.Context, req *ledgerpb.ReadRequest) (*ledgerpb.ReadResponse, error) {
	if g, err := r.node.Group(req.GroupId); err == nil {
		resp, err := r.serveBrowse(ctx, g, req)
		if !errors.Is(err, raftnode.ErrStale) && !errors.Is(err, raftnode.ErrNotLeader) {
			return resp, err
		}
	}
	return r.forwardRead(ctx, req, "browse read")
}

// isBrowse reports whether a read is a browse read (served by serveBrowse).
func isBrowse(k ledgerpb.ReadKind) bool {
	return k == ledgerpb.ReadKind_READ_KIND_CATALOG || k == ledgerpb.ReadKind_READ_KIND_SEAT_COUNTS ||
		k == ledgerpb.ReadKind_READ_KIND_NODES || k == ledgerpb.ReadKind_READ_KIND_WEBHOOKS
}

// serveBrowse serves a browse read from this node's replica: ErrStale or
// ErrNotLeader when it cannot, so that the caller goes to the leader.
func (r *Router) serveBrowse(ctx context.Context, g *raftnode.Group, req *ledgerpb.ReadRequest) (*ledgerpb.ReadResponse, error) {
	var v *fsm.View
	var asOf time.Time
	var err error
	if req.Linearizable {
		v, err = g.View(ctx, true)
		asOf = time.Now()
	} else {
		v, asOf, err = g.FreshView(ctx, BrowseStalenessMax)
	}
	if err != nil {
		return nil, err
	}
	defer v.Close()
	resp := &ledgerpb.ReadResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_OK, Code: ledgerpb.Code_CODE_OK}
	switch req.Kind {
	case ledgerpb.ReadKind_READ_KIND_CATALOG:
		ans, code, err := catalogQuery(v, req.GetCatalogQuery())
		if err != nil {
			return nil, err
		}
		resp.Code = code
		if ans != nil {
			ans.Revision, ans.AsOfMs, ans.ServedBy = v.Applied(), asOf.UnixMilli(), r.node.ID()
		}
		resp.Catalog = ans
	case ledgerpb.ReadKind_READ_KIND_SEAT_COUNTS:
		for _, id := range req.ShowIds {
			c := &ledgerpb.ShowSeatCount{ShowId: id, AsOfMs: asOf.UnixMilli()}
			total, free, err := v.SeatCounts(id)
			switch {
			case err == nil:
				c.Found, c.Total, c.Free = true, total, free
			case !errors.Is(err, fsm.ErrNotFound):
				return nil, err
			}
			resp.SeatCounts = append(resp.SeatCounts, c)
		}
	case ledgerpb.ReadKind_READ_KIND_NODES:
		nodes, err := v.Nodes()
		if err != nil {
			return nil, err
		}
		resp.NodeList = &ledgerpb.NodeList{Nodes: nodes, Revision: v.Applied(), AsOfMs: asOf.UnixMilli(), ServedBy: r.node.ID()}
	case ledgerpb.ReadKind_READ_KIND_WEBHOOKS:
		if err := serveWebhooks(v, resp); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("shard: %v is not a browse read", req.Kind)
	}
	return resp, nil
}

// servePeerBrowse answers a forwarded browse read: a replica that cannot
// serve it says NOT_LEADER and names the leader it knows.
func (r *Router) servePeerBrowse(ctx context.Context, g *raftnode.Group, req *ledgerpb.ReadRequest) *ledgerpb.ReadResponse {
	resp, err := r.serveBrowse(ctx, g, req)
	if errors.Is(err, raftnode.ErrStale) {
		err = fmt.Errorf("%w: %v", raftnode.ErrNotLeader, err)
	}
	if err != nil {
		return &ledgerpb.ReadResponse{Status: forwardStatus(err), Message: err.Error(), LeaderId: g.Leader()}
	}
	resp.LeaderId = g.Leader()
	return resp
}

func browseErr(resp *ledgerpb.ReadResponse) error {
	switch resp.Code {
	case ledgerpb.Code_CODE_CITY_NOT_FOUND:
		return ErrCityNotFound
	case ledgerpb.Code_CODE_CINEMA_NOT_FOUND:
		return ErrCinemaNotFound
	case ledgerpb.Code_CODE_MOVIE_NOT_FOUND:
		return ErrMovieNotFound
	case ledgerpb.Code_CODE_SHOW_NOT_FOUND:
		return ErrNotListed
	case ledgerpb.Code_CODE_INVALID_ARGUMENT:
		return fmt.Errorf("shard: invalid catalog query")
	}
	return nil
}

// catalogQuery runs a query on one view: the listing, or the code of the
// record it names that does not exist (an anchor of a listing included:
// the movies of an unknown city are not an empty list).
func catalogQuery(v *fsm.View, q *ledgerpb.CatalogQuery) (*ledgerpb.CatalogAnswer, ledgerpb.Code, error) {
	ans := &ledgerpb.CatalogAnswer{}
	size := int(q.GetPageSize())
	var err error
	switch q.GetKind() {
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_CITIES:
		ans.Cities, ans.NextAfter, err = v.Cities(q.PageAfter, size)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_MOVIES_IN_CITY:
		if _, err := v.City(q.CityId); err != nil {
			return nil, ledgerpb.Code_CODE_CITY_NOT_FOUND, notFound(err)
		}
		ans.Movies, ans.NextAfter, err = v.MoviesInCity(q.CityId, q.NowMs, q.PageAfter, size)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_CINEMAS_IN_CITY:
		if _, err := v.City(q.CityId); err != nil {
			return nil, ledgerpb.Code_CODE_CITY_NOT_FOUND, notFound(err)
		}
		if q.MovieId != "" {
			if _, err := v.Movie(q.MovieId); err != nil {
				return nil, ledgerpb.Code_CODE_MOVIE_NOT_FOUND, notFound(err)
			}
		}
		ans.Cinemas, ans.NextAfter, err = v.CinemasInCity(q.CityId, q.MovieId, q.NowMs, q.PageAfter, size)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA, ledgerpb.CatalogQueryKind_CATALOG_QUERY_SEARCH:
		return showsQuery(v, q)
	default:
		return pointQuery(v, q)
	}
	if err != nil {
		return nil, 0, err
	}
	return ans, ledgerpb.Code_CODE_OK, nil
}

// showsQuery lists shows at a cinema or by search, reading the date in the
// city's time zone.
func showsQuery(v *fsm.View, q *ledgerpb.CatalogQuery) (*ledgerpb.CatalogAnswer, ledgerpb.Code, error) {
	city := q.CityId
	if q.Kind == ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA {
		c, err := v.Cinema(q.CinemaId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_CINEMA_NOT_FOUND, notFound(err)
		}
		city = c.CityId
	}
	loc := time.UTC
	if city != "" {
		c, err := v.City(city)
		if err != nil {
			return nil, ledgerpb.Code_CODE_CITY_NOT_FOUND, notFound(err)
		}
		loc = Zone(c.TimeZone)
	}
	from, to, ok := DayWindow(q.Date, loc, q.NowMs, q.Kind == ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA)
	if !ok {
		return nil, ledgerpb.Code_CODE_INVALID_ARGUMENT, nil
	}
	ans := &ledgerpb.CatalogAnswer{}
	var err error
	if q.Kind == ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA {
		ans.Listings, ans.NextAfter, err = v.ShowsAtCinema(q.CinemaId, from, to, q.PageAfter, int(q.PageSize))
	} else {
		s := fsm.ShowSearch{Words: fsm.SearchWords(q.Query), City: q.CityId, FromMs: from, ToMs: to}
		ans.Listings, ans.NextAfter, err = v.SearchShows(s, q.PageAfter, int(q.PageSize))
	}
	if err != nil {
		return nil, 0, err
	}
	return ans, ledgerpb.Code_CODE_OK, nil
}

// pointQuery reads one record.
func pointQuery(v *fsm.View, q *ledgerpb.CatalogQuery) (*ledgerpb.CatalogAnswer, ledgerpb.Code, error) {
	ans := &ledgerpb.CatalogAnswer{}
	switch q.GetKind() {
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_CITY:
		c, err := v.City(q.CityId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_CITY_NOT_FOUND, notFound(err)
		}
		ans.Cities = append(ans.Cities, c)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_CINEMA:
		c, err := v.Cinema(q.CinemaId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_CINEMA_NOT_FOUND, notFound(err)
		}
		ans.Cinemas = append(ans.Cinemas, c)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_MOVIE:
		m, err := v.Movie(q.MovieId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_MOVIE_NOT_FOUND, notFound(err)
		}
		ans.Movies = append(ans.Movies, m)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_LISTING:
		l, err := v.Listing(q.ShowId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_SHOW_NOT_FOUND, notFound(err)
		}
		ans.Listings = append(ans.Listings, l)
	default:
		return nil, ledgerpb.Code_CODE_INVALID_ARGUMENT, nil
	}
	return ans, ledgerpb.Code_CODE_OK, nil
}

// notFound passes on a read error that is not "not found" (a code answers
// that one).
func notFound(err error) error {
	if errors.Is(err, fsm.ErrNotFound) {
		return nil
	}
	return err
}

// Zone loads a city's IANA time zone; empty (or, should a node lack it,
// unknown) is UTC.
func Zone(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// DateLayout is the date format of browse requests.
const DateLayout = "2006-01-02"

// DayWindow returns the [from, to) Unix ms of a date (YYYY-MM-DD) in loc.
// Without a date it is today in loc when today is set, else from nowMs on.
func DayWindow(date string, loc *time.Location, nowMs int64, today bool) (from, to int64, ok bool) {
	if date == "" && !today {
		return nowMs, math.MaxInt64, true
	}
	var day time.Time
	if date == "" {
		now := time.UnixMilli(nowMs).In(loc)
		day = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	} else {
		d, err := time.ParseInLocation(DateLayout, date, loc)
		if err != nil {
			return 0, 0, false
		}
		day = d
	}
	// AddDate, not 24 hours: a day with a DST change has 23 or 25.
	return day.UnixMilli(), day.AddDate(0, 0, 1).UnixMilli(), true
}
