package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The catalog: cities, cinemas with their screens, movies, and the listing
// of shows. It lives in one group, the catalog group, while each show lives
// in its own group; the gateway creates a show there before it lists it
// here, so a listed show always exists (see doc.go).
//
// Catalog records never change once written: creating a record again with
// the same content is OK and writes nothing, so that a retry after the
// request-id horizon still succeeds, while the same id with other content
// is CODE_*_EXISTS (CODE_SHOW_LISTED for a listing).

// catalog applies a catalog command whose fields validateOp checked.
func (tx *txn) catalog(c *ledgerpb.CatalogCmd) *ledgerpb.Result {
	switch op := c.Op.(type) {
	case *ledgerpb.CatalogCmd_CreateCity:
		return tx.createCity(op.CreateCity.City)
	case *ledgerpb.CatalogCmd_CreateCinema:
		return tx.createCinema(op.CreateCinema.Cinema)
	case *ledgerpb.CatalogCmd_CreateMovie:
		return tx.createMovie(op.CreateMovie.Movie)
	case *ledgerpb.CatalogCmd_ListShow:
		return tx.listShow(op.ListShow)
	}
	panic(fmt.Sprintf("fsm: catalog command without op at index %d", tx.index))
}

// putOnce writes a catalog record unless the key holds one. It returns
// whether the stored record (if any) equals rec: false means another record
// has the id.
func (tx *txn) putOnce(key []byte, rec, stored proto.Message) (same bool) {
	if !tx.get(key, stored) {
		tx.put(key, rec)
		return true
	}
	return proto.Equal(stored, rec)
}

// mark writes an empty index key.
func (tx *txn) mark(key []byte) {
	tx.set(key, nil)
}

// raiseLast stores at under key unless a later time is stored there: the
// last start of any show a browse index entry stands for.
func (tx *txn) raiseLast(key []byte, at int64) {
	v, closer, err := tx.store().Get(key)
	switch {
	case err == nil:
		if len(v) != 8 {
			violated("last-start record of %d bytes", len(v))
		}
		prev := int64(binary.BigEndian.Uint64(v))
		closer.Close()
		if prev >= at {
			return
		}
	case !errors.Is(err, pebble.ErrNotFound):
		must(err, "read last start")
	}
	tx.set(key, u64(uint64(at)))
}
