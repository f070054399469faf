package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The node log's room: blocks written ahead of bbolt's pages.
//
// bbolt grows its file by truncating it larger, which leaves a hole, and
// writes new pages into the hole. On ext4 (this machine's) a write into a hole
// allocates blocks, so the fdatasync of that commit must also commit the
// filesystem's journal; an overwrite of blocks already written needs only
// the data flushed. While the log grows, that is every commit: on this
// machine an fdatasync of pages written into a hole cost 100-125 µs of CPU
// and 205-230 µs of wall time, the same into blocks written before 70-85
// µs and 125-145 µs (docs/PERFORMANCE-JOURNAL.md, "The node log's room").
// Databases that sync a growing file keep such room: Pebble recycles its
// WAL files, etcd's WAL preallocates its segments, TigerBeetle sizes its
// data file up front.
//
// So the writer keeps the file logRoomAhead bytes past bbolt's pages,
// writing zeros past the end of the file logRoomChunk at a time, between
// requests (bbolt since 1.4 grows the file only when its size is short,
// so it never truncates what room lies ahead). It is always safe:
//   - it runs on the writer goroutine, which makes every write but a
//     group's first bounds record, and under the lock that record is
//     written under (nodeLog.mu), so no bbolt commit runs meanwhile;
//   - it writes only past the file's end as it finds it then, where bbolt
//     has no page: bbolt's pages and their order are untouched;
//   - a crash leaves at most zeros past them, which bbolt never reads (its
//     pages end at the meta page's high-water mark).
//
// The zeros are not synced: the first commit that syncs after them writes
// them back, once per chunk. Once raft's compactions free pages that
// bbolt reuses, the file stops growing and so does the room.
//
// Reading the high-water mark parses bbolt's meta pages (page header, then
// magic, version, page size, flags, root bucket, freelist page, high
// water, txid, checksum: FNV-64a of the meta before the checksum; native
// byte order, little-endian on every platform seatd ships for). A file
// whose meta pages do not parse gets no room, and the log works as before.
const (
	logRoomAhead = 16 << 20
	logRoomChunk = 1 << 20
	// logRoomLookEvery: the writer reads the high-water mark again after
	// this many commits: a commit adds a few pages at most, so the room
	// can shrink by well under logRoomAhead in between.
	logRoomLookEvery = 32
)

// logRoomZeros is what a chunk writes: untouched, its pages are the
// kernel's zero page.
var logRoomZeros [logRoomChunk]byte

// logRoom keeps written blocks ahead of bbolt's pages in the node log's
// file. Owned by the writer.
type logRoom struct {
	file *os.File // bbolt's own file (bbolt.Options.OpenFile); nil: no room
	// size is the file's size as the room last saw or made it; high is
	// bbolt's high-water mark at the last look.
	size, high int64
	// commits counts the commits since the last look; it starts at
	// logRoomLookEvery (newLogRoom), so the first step looks.
	commits int
	// err stops the room: the log works without it.
	err error
}

// newLogRoom keeps room in file, bbolt's own (bbolt.Options.OpenFile).
func newLogRoom(file *os.File) *logRoom { return &logRoom{file: file, commits: logRoomLookEvery} }

// committed tells the room a commit went by.
func (r *logRoom) committed() {
	if r != nil {
		r.commits++
	}
}

// lookNext makes the room's next step read the high-water mark again: a
// tidy request (tests) then leaves logRoomAhead past bbolt's pages as
// they are, not as they were up to logRoomLookEvery commits before.
func (r *logRoom) lookNext() {
	if r != nil {
		r.commits = logRoomLookEvery
	}
}

// due reports whether the room has work: a look, or a chunk to write.
func (r *logRoom) due() bool {
	if r == nil || r.file == nil || r.err != nil {
		return false
	}
	return r.commits >= logRoomLookEvery || r.size-r.high < logRoomAhead
}

// step looks at the high-water mark if a look is due, else writes one
// chunk of zeros at the end of the file, as the file says it is now: if
// bbolt grew the file since the last look, the chunk goes past that.
func (r *logRoom) step() error {
	fi, err := r.file.Stat()
	if err != nil {
		return r.fail(err)
	}
	r.size = fi.Size()
	if r.commits >= logRoomLookEvery {
		r.commits = 0
		if r.high, err = boltHighWater(r.file); err != nil {
			return r.fail(err)
		}
		return nil
	}
	n, err := r.file.WriteAt(logRoomZeros[:], r.size)
	r.size += int64(n)
	if err != nil {
		return r.fail(err)
	}
	return nil
}

func (r *logRoom) fail(err error) error {
	r.err = fmt.Errorf("raftnode: room for the raft log: %w", err)
	return r.err
}

// errBoltMeta: neither of bbolt's meta pages parses.
var errBoltMeta = errors.New("no valid bbolt meta page")

const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltPageHeader  = 16 // id, flags, count, overflow
	boltMetaSumFrom = boltPageHeader
	boltMetaSumTo   = boltPageHeader + 56 // the meta's fields before its checksum
)

// boltHighWater returns the end of bbolt's pages in f: the high-water
// page id of the newer valid meta page, times the page size.
func boltHighWater(f io.ReaderAt) (int64, error) {
	var page [boltMetaSumTo + 8]byte
	best, bestTx := int64(-1), uint64(0)
	pageSize := int64(0)
	for i := int64(0); i < 2; i++ {
		if _, err := f.ReadAt(page[:], i*pageSize); err != nil {
			return 0, err
		}
		m := page[boltPageHeader:]
		le := binary.LittleEndian
		h := fnv.New64a()
		h.Write(page[boltMetaSumFrom:boltMetaSumTo])
		ps := int64(le.Uint32(m[8:]))
		if le.Uint32(m[0:]) == boltMagic && le.Uint32(m[4:]) == boltVersion && le.Uint64(m[56:]) == h.Sum64() && ps >= 1024 {
			if tx := le.Uint64(m[48:]); best < 0 || tx > bestTx {
				best, bestTx = int64(le.Uint64(m[40:]))*ps, tx
			}
			pageSize = ps
		} else if i == 0 {
			// The first meta page names the page size, so the second
			// can be found; bbolt creates files with the OS page size.
			pageSize = int64(os.Getpagesize())
		}
	}
	if best < 0 {
		return 0, errBoltMeta
	}
	return best, nil
}
