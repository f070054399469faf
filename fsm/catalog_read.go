package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Catalog reads. A listing is one page of an index (keys.go) in key order;
// after, where given, is the suffix of the last entry of the previous page
// (the page token), and each page returns the suffix to continue after, nil
// when nothing follows. A page reads at most BrowseScanMax index entries,
// so a page whose filter skips many entries may come back short, with a
// token.

// City returns a city, ErrNotFound if there is none.
func (v *View) City(id string) (*ledgerpb.City, error) {
	c := &ledgerpb.City{}
	return c, v.record(v.m.cityKey(id), c)
}

// Cinema returns a cinema with its screens and layouts.
func (v *View) Cinema(id string) (*ledgerpb.Cinema, error) {
	c := &ledgerpb.Cinema{}
	return c, v.record(v.m.cinemaKey(id), c)
}

// Movie returns a movie.
func (v *View) Movie(id string) (*ledgerpb.Movie, error) {
	m := &ledgerpb.Movie{}
	return m, v.record(v.m.movieKey(id), m)
}

// Listing returns a listed show.
func (v *View) Listing(showID string) (*ledgerpb.ListingRecord, error) {
	l := &ledgerpb.ListingRecord{}
	return l, v.record(v.m.listingKey(showID), l)
}

func (v *View) record(key []byte, msg proto.Message) error {
	ok, err := v.get(key, msg)
	if err != nil {
		return fmt.Errorf("fsm: read %T: %w", msg, err)
	}
	if !ok {
		return ErrNotFound
	}
	return nil
}

// Cities lists cities by id.
func (v *View) Cities(after []byte, size int) ([]*ledgerpb.City, []byte, error) {
	var out []*ledgerpb.City
	next, err := v.scan(v.m.key(kindCity), nil, nil, after, size, func(_, val []byte) (bool, error) {
		c := &ledgerpb.City{}
		if err := proto.Unmarshal(val, c); err != nil {
			return false, fmt.Errorf("fsm: decode city: %w", err)
		}
		out = append(out, c)
		return true, nil
	})
	return out, next, err
}

// MoviesInCity lists by id the movies with a show in the city starting at
// or after nowMs.
func (v *View) MoviesInCity(city string, nowMs int64, after []byte, size int) ([]*ledgerpb.Movie, []byte, error) {
	var out []*ledgerpb.Movie
	next, err := v.scan(v.m.cityMoviePrefix(city), nil, nil, after, size, func(movie, last []byte) (bool, error) {
		if int64(binary.BigEndian.Uint64(last)) < nowMs {
			return false, nil
		}
		m, err := v.Movie(string(movie))
		if err != nil {
			return false, fmt.Errorf("fsm: movie %s of city %s: %w", movie, city, err)
		}
		out = append(out, m)
		return true, nil
	})
	return out, next, err
}

// CinemasInCity lists by id the cinemas of a city; with a movie, only those
// with a show of it starting at or after nowMs. Screens come without their
// layouts.
func (v *View) CinemasInCity(city, movie string, nowMs int64, after []byte, size int) ([]*ledgerpb.Cinema, []byte, error) {
	prefix := v.m.cityCinemaPrefix(city)
	if movie != "" {
		prefix = v.m.cityMovieCinemaPrefix(city, movie)
	}
	var out []*ledgerpb.Cinema
	next, err := v.scan(prefix, nil, nil, after, size, func(cinema, last []byte) (bool, error) {
		if movie != "" && int64(binary.BigEndian.Uint64(last)) < nowMs {
			return false, nil
		}
		c, err := v.Cinema(string(cinema))
		if err != nil {
			return false, fmt.Errorf("fsm: cinema %s of city %s: %w", cinema, city, err)
		}
		for _, s := range c.Screens {
			s.Rows, s.Categories = nil, nil
		}
		out = append(out, c)
		return true, nil
	})
	return out, next, err
}

// ShowsAtCinema lists a cinema's shows starting in [fromMs, toMs), by start
// time.
func (v *View) ShowsAtCinema(cinema string, fromMs, toMs int64, after []byte, size int) ([]*ledgerpb.ListingRecord, []byte, error) {
	var out []*ledgerpb.ListingRecord
	next, err := v.scanShows(v.m.cinemaShowPrefix(cinema), fromMs, toMs, after, size, func(l *ledgerpb.ListingRecord) bool {
		out = append(out, l)
		return true
	})
	return out, next, err
}

// ShowSearch is what a search looks for: shows starting in [FromMs, ToMs),
// of one city unless City is empty, whose movie title or cinema name has a
// word beginning with each of Words (lower case, see SearchWords).
type ShowSearch struct {
	Words        []string
	City         string
	FromMs, ToMs int64
}

// SearchShows lists the shows that match s, by start time.
func (v *View) SearchShows(s ShowSearch, after []byte, size int) ([]*ledgerpb.ListingRecord, []byte, error) {
	prefix := v.m.showTimePrefix()
	if s.City != "" {
		prefix = v.m.cityShowPrefix(s.City)
	}
	var out []*ledgerpb.ListingRecord
	next, err := v.scanShows(prefix, s.FromMs, s.ToMs, after, size, func(l *ledgerpb.ListingRecord) bool {
		if !matchesWords(s.Words, l) {
			return false
		}
		out = append(out, l)
		return true
	})
	return out, next, err
}

// scanShows walks a by-time show index between two times, reading each
// show's listing.
func (v *View) scanShows(prefix []byte, fromMs, toMs int64, after []byte, size int, keep func(*ledgerpb.ListingRecord) bool) ([]byte, error) {
	lo, hi := u64(uint64(max(fromMs, 0))), u64(uint64(max(toMs, 0)))
	return v.scan(prefix, lo, hi, after, size, func(suffix, _ []byte) (bool, error) {
		if len(suffix) <= 8 {
			return false, fmt.Errorf("fsm: show index key of %d bytes", len(suffix))
		}
		l, err := v.Listing(string(suffix[8:]))
		if err != nil {
			return false, fmt.Errorf("fsm: listing of indexed show %s: %w", suffix[8:], err)
		}
		return keep(l), nil
	})
}

// matchesWords reports whether each word begins a word of the show's movie
// title or cinema name.
func matchesWords(words []string, l *ledgerpb.ListingRecord) bool {
	if len(words) == 0 {
		return true
	}
	have := append(SearchWords(l.MovieTitle), SearchWords(l.CinemaName)...)
	for _, w := range words {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.HasPrefix(h, w) }) {
			return false
		}
	}
	return true
}

// scan walks the entries of prefix whose suffixes lie in [lo, hi) (nil: no
// bound) and follow after, giving each to fn, which says whether it kept
// it. It stops after size kept entries or BrowseScanMax read ones and
// returns the suffix to continue after, nil when no entry follows.
func (v *View) scan(prefix, lo, hi, after []byte, size int, fn func(suffix, val []byte) (bool, error)) ([]byte, error) {
	opts := &pebble.IterOptions{LowerBound: append(slices.Clip(prefix), lo...), UpperBound: prefixEnd(prefix)}
	if hi != nil {
		opts.UpperBound = append(slices.Clip(prefix), hi...)
	}
	if size <= 0 {
		size = PageSizeDefault
	}
	size = min(size, PageSizeMax)
	it, err := v.snapIter(opts)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	start := opts.LowerBound
	if after != nil {
		// Strictly after: the smallest key greater than prefix+after.
		if k := append(append(slices.Clip(prefix), after...), 0); bytes.Compare(k, start) > 0 {
			start = k
		}
	}
	kept, read := 0, 0
	var last []byte
	for ok := it.SeekGE(start); ok; ok = it.Next() {
		if kept == size || read == BrowseScanMax {
			return last, nil
		}
		read++
		last = slices.Clone(it.Key()[len(prefix):])
		keep, err := fn(last, it.Value())
		if err != nil {
			return nil, err
		}
		if keep {
			kept++
		}
	}
	return nil, it.Error()
}

// SeatCounts returns a show's seats and how many are free by the view's
// clock (as SeatMap counts them), without building the seat map: browse
// listings ask it of every show they list.
func (v *View) SeatCounts(showID string) (total, free uint32, err error) {
	l, c, err := v.showStates(showID)
	if err != nil {
		return 0, 0, err
	}
	return uint32(l.total), c.free, nil
}
