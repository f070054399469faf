package fsm

import (
	"encoding/binary"
	"errors"
)

// Key kinds inside a group's range; see doc.go for the layout.
const (
	kindMeta        byte = 0x01
	kindShow        byte = 0x02
	kindHold        byte = 0x04 // a hold that ended
	kindLiveHold    byte = 0x05 // a show's live hold or booking
	kindRequest     byte = 0x06 // by hour of log time (requestBucketMs)
	kindShowKey     byte = 0x08 // a show's hold-token key
	kindEvent       byte = 0x0A // a show's seat changes at one revision, by time bucket
	kindEventBucket byte = 0x0B // the first revision of each bucket of changes
	kindEventFloor  byte = 0x0C // the revision up to which changes are pruned
	kindQueueEntry  byte = 0x0D // a waiting-queue entry by id
	kindQueueLine   byte = 0x0E // a show's waiting entries in join order
	kindQueueOwner  byte = 0x0F // a client's waiting entry in a show
	kindQueueStat   byte = 0x10 // a show's waiting count and seats asked for
	kindBooking     byte = 0x11 // a client's bookings by confirm index
	kindRevoked     byte = 0x13 // a show's refunded bookings by revision
	kindRoom        byte = 0x14 // a show's open waiting room
	kindRoomEntry   byte = 0x15 // a waiting room's entries
	kindEventRev    byte = 0x16 // the change records of a bucket by revision
	// kindEnd bounds the kinds a snapshot may hold: past the catalog's
	// (0x20..0x29), leaving room for the seat ledger's below 0x20.
	kindEnd byte = 0x30

	groupPrefixLen = 5
	metaLen        = 16
)

// groupPrefix is 'G' + group (big-endian): every key of a group starts with it.
func groupPrefix(group uint32) []byte {
	p := make([]byte, groupPrefixLen)
	p[0] = 'G'
	binary.BigEndian.PutUint32(p[1:], group)
	return p
}

// groupEnd is the exclusive upper bound of a group's range.
func groupEnd(group uint32) []byte {
	// Not groupPrefix(group+1): that wraps to group 0 for the last id.
	return prefixEnd(groupPrefix(group))
}

func (m *Machine) key(kind byte, parts ...[]byte) []byte {
	n := len(m.prefix) + 1
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 0, n)
	k = append(k, m.prefix...)
	k = append(k, kind)
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

// keyOf starts a key of kind with room for n more bytes, for the hot keys
// that append their parts themselves (key's parts cost an allocation each).
func (m *Machine) keyOf(kind byte, n int) []byte {
	k := make([]byte, 0, len(m.prefix)+1+n)
	k = append(k, m.prefix...)
	return append(k, kind)
}

// appendLenPrefixed appends lenPrefixed(s) to k.
func appendLenPrefixed(k []byte, s string) []byte {
	if len(s) >= 256 {
		violated("length-prefixed part of %d bytes", len(s))
	}
	return append(append(k, byte(len(s))), s...)
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// lenPrefixed keeps "a"+"bc" and "ab"+"c" apart.
func lenPrefixed(s string) []byte {
	if len(s) >= 256 {
		violated("length-prefixed part of %d bytes", len(s))
	}
	b := make([]byte, 0, 1+len(s))
	b = append(b, byte(len(s)))
	return append(b, s...)
}

func (m *Machine) metaKey() []byte          { return m.key(kindMeta) }
func (m *Machine) showKey(id string) []byte { return m.key(kindShow, []byte(id)) }
func (m *Machine) holdKey(id string) []byte { return m.appendHoldKey(nil, id) }

// appendKind appends the group's prefix and kind to dst: the start of a key
// built in a reused buffer (txn.keyBuf) instead of a new slice.
func (m *Machine) appendKind(dst []byte, kind byte) []byte {
	return append(append(dst, m.prefix...), kind)
}

func (m *Machine) appendHoldKey(dst []byte, id string) []byte {
	return append(m.appendKind(dst, kindHold), id...)
}

func (m *Machine) showTokenKey(id string) []byte { return m.key(kindShowKey, []byte(id)) }

func (m *Machine) queueEntryKey(id string) []byte { return m.key(kindQueueEntry, []byte(id)) }
func (m *Machine) queueLinePrefix(show string) []byte {
	return m.key(kindQueueLine, lenPrefixed(show))
}

func (m *Machine) queueLineKey(show string, index uint64, pos uint32) []byte {
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], pos)
	return m.key(kindQueueLine, lenPrefixed(show), u64(index), p[:])
}

func (m *Machine) queueOwnerKey(show, client string) []byte {
	return m.key(kindQueueOwner, lenPrefixed(show), lenPrefixed(client))
}

func (m *Machine) queueStatKey(show string) []byte { return m.key(kindQueueStat, []byte(show)) }

func (m *Machine) bookingPrefix(client string) []byte { return m.key(kindBooking, lenPrefixed(client)) }
func (m *Machine) appendBookingKey(dst []byte, client string, index uint64, hold string) []byte {
	k := binary.BigEndian.AppendUint64(appendLenPrefixed(m.appendKind(dst, kindBooking), client), index)
	return append(k, hold...)
}

// livePrefix is the prefix of a show's liveKeys: the records of its live
// holds and bookings, from which load and snapshot readers learn who owns
// which seat (the seats themselves are not stored). A hold's record moves
// to its holdKey when it ends.
func (m *Machine) livePrefix(show string) []byte { return m.key(kindLiveHold, lenPrefixed(show)) }

// revokedKey lists a booking refunded at revision (raft index) in its
// show's revocation feed (View.Revocations).
func (m *Machine) revokedKey(show string, revision uint64, hold string) []byte {
	k := binary.BigEndian.AppendUint64(appendLenPrefixed(m.keyOf(kindRevoked, 9+len(show)+len(hold)), show), revision)
	return append(k, hold...)
}

func (m *Machine) revokedPrefix(show string) []byte { return m.key(kindRevoked, lenPrefixed(show)) }

func (m *Machine) liveKey(show, hold string) []byte { return m.appendLiveKey(nil, show, hold) }

func (m *Machine) appendLiveKey(dst []byte, show, hold string) []byte {
	return append(appendLenPrefixed(m.appendKind(dst, kindLiveHold), show), hold...)
}

// requestBucketMs is the span of log time whose request records share a
// key prefix (their bucket), so that pruning forgets a whole hour with one
// range deletion instead of a retention index written and read per request.
const requestBucketMs = 60 * 60 * 1000

// requestBucket is the bucket of a record applied at log time at.
func requestBucket(at int64) uint64 { return uint64(max(at, 0)) / requestBucketMs }

// requestKey holds the record of a request applied in bucket.
func (m *Machine) requestKey(bucket uint64, client, request string) []byte {
	return m.appendRequestKey(nil, bucket, client, request)
}

func (m *Machine) appendRequestKey(dst []byte, bucket uint64, client, request string) []byte {
	k := binary.BigEndian.AppendUint64(m.appendKind(dst, kindRequest), bucket)
	return append(appendLenPrefixed(k, client), request...)
}

var errBadKey = errors.New("fsm: malformed key")

// decodeRequestKey returns the bucket, client and request of a request key.
func decodeRequestKey(k []byte) (uint64, string, string, error) {
	if len(k) < groupPrefixLen+1+8+1 || k[groupPrefixLen] != kindRequest {
		return 0, "", "", errBadKey
	}
	body := k[groupPrefixLen+1:]
	bucket := binary.BigEndian.Uint64(body)
	body = body[8:]
	n := int(body[0])
	if len(body) < 1+n {
		return 0, "", "", errBadKey
	}
	return bucket, string(body[1 : 1+n]), string(body[1+n:]), nil
}

// encodeMeta and decodeMeta store the applied index and clock.
func encodeMeta(applied uint64, clock int64) []byte {
	b := make([]byte, metaLen)
	binary.BigEndian.PutUint64(b, applied)
	binary.BigEndian.PutUint64(b[8:], uint64(clock))
	return b
}

func decodeMeta(b []byte) (uint64, int64, error) {
	if len(b) != metaLen {
		return 0, 0, errors.New("fsm: meta record has wrong length")
	}
	return binary.BigEndian.Uint64(b), int64(binary.BigEndian.Uint64(b[8:])), nil
}

// Key kinds of the catalog (catalog.go), from 0x20 so that the seat
// ledger's own kinds can grow below them. See doc.go for the layout.
const (
	kindCity          byte = 0x20 // city_id -> City
	kindCinema        byte = 0x21 // cinema_id -> Cinema
	kindMovie         byte = 0x22 // movie_id -> Movie
	kindListing       byte = 0x23 // show_id -> ListingRecord
	kindCityCinema    byte = 0x24 // a city's cinemas
	kindCinemaShow    byte = 0x25 // a cinema's shows by start time
	kindCityShow      byte = 0x26 // a city's shows by start time
	kindShowTime      byte = 0x27 // every listed show by start time
	kindCityMovie     byte = 0x28 // a city's movies, with their last start
	kindCityMovieCine byte = 0x29 // a city's cinemas per movie, with their last start
	// kindNode is the node registry (node.go), kept in the catalog group
	// too; last below kindEnd so that the catalog's kinds can grow.
	kindNode byte = 0x2F // node_id -> NodeRecord
)

func (m *Machine) cityKey(id string) []byte    { return m.key(kindCity, []byte(id)) }
func (m *Machine) cinemaKey(id string) []byte  { return m.key(kindCinema, []byte(id)) }
func (m *Machine) movieKey(id string) []byte   { return m.key(kindMovie, []byte(id)) }
func (m *Machine) listingKey(id string) []byte { return m.key(kindListing, []byte(id)) }

// The browse indexes: each is a prefix (kind and the fixed parts) and a
// suffix that orders the entries; page tokens are suffixes.
func (m *Machine) cityCinemaPrefix(city string) []byte {
	return m.key(kindCityCinema, lenPrefixed(city))
}
func (m *Machine) cinemaShowPrefix(cinema string) []byte {
	return m.key(kindCinemaShow, lenPrefixed(cinema))
}
func (m *Machine) cityShowPrefix(city string) []byte { return m.key(kindCityShow, lenPrefixed(city)) }
func (m *Machine) showTimePrefix() []byte            { return m.key(kindShowTime) }
func (m *Machine) cityMoviePrefix(city string) []byte {
	return m.key(kindCityMovie, lenPrefixed(city))
}
func (m *Machine) cityMovieCinemaPrefix(city, movie string) []byte {
	return m.key(kindCityMovieCine, lenPrefixed(city), lenPrefixed(movie))
}

// timeSuffix orders shows by start time, then id.
func timeSuffix(startsAtMs int64, show string) []byte {
	return append(u64(uint64(startsAtMs)), show...)
}
