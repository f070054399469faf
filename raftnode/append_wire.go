package raftnode

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// The wire format of append frames (append.go), in heartbeat frames' style
// (heartbeat_wire.go): a big-endian uint32 length, then a uvarint count and
// per item its fields as uvarints and length-prefixed byte strings. An
// entry's data and extensions are byte strings of up to appendFrameBytesMax;
// the decoder points them into the frame, which it never reuses.
const (
	// appendsPerFrameMax bounds the appends in one frame; the sender puts
	// at most one per group it leads with a follower at the peer, and the
	// replies at most one per group the peer leads here.
	appendsPerFrameMax = 4096
	// appendEntriesMax bounds the entries of one append (raft sends at
	// most MaxAppendEntries).
	appendEntriesMax = 1 << 16
	// appendFrameBytesMax bounds a frame; a reader refuses a longer one
	// before allocating it.
	appendFrameBytesMax = 8 << 20
	// appendFrameFill is where the sender stops adding appends to a frame
	// (the rest go in the next), and appendViaFrameMax the entry bytes
	// above which an append goes on its group's own connection instead
	// (a follower catching up): a frame never holds more than
	// appendFrameFill plus one append.
	appendFrameFill   = 1 << 20
	appendViaFrameMax = 1 << 20
)

// appendReq is one group's AppendEntries in a request frame, addressed to
// the incarnation of the group's replica the leader's configuration names
// (incarnation.go); id names it in the reply frame.
type appendReq struct {
	id          uint64
	group       uint32
	incarnation uint64
	req         raft.AppendEntriesRequest
}

// appendReply answers the appendReq with the same id: raft's response, or
// the error the receiving node had for that append alone.
type appendReply struct {
	id   uint64
	err  string
	resp raft.AppendEntriesResponse
}

// appendBytesOf is an approximation of the bytes req takes in a frame,
// for filling frames: its entries' data and extensions and a bound on the
// rest.
func appendBytesOf(req *raft.AppendEntriesRequest) int {
	n := 64 + len(req.RPCHeader.ID) + len(req.RPCHeader.Addr) + len(req.Leader)
	for _, e := range req.Entries {
		n += 48 + len(e.Data) + len(e.Extensions)
	}
	return n
}

func encodeAppendReqs(reqs []appendReq) []byte { return appendAppendReqs(nil, reqs) }

// appendAppendReqs encodes reqs as encodeAppendReqs does, in dst's array
// if it has room.
func appendAppendReqs(dst []byte, reqs []appendReq) []byte {
	size := 8
	for i := range reqs {
		size += appendBytesOf(&reqs[i].req) + 24
	}
	if cap(dst) < size {
		dst = make([]byte, 0, size)
	}
	b := binary.AppendUvarint(append(dst[:0], 0, 0, 0, 0), uint64(len(reqs)))
	for i := range reqs {
		r := &reqs[i].req
		b = binary.AppendUvarint(b, reqs[i].id)
		b = binary.AppendUvarint(b, uint64(reqs[i].group))
		b = binary.AppendUvarint(b, reqs[i].incarnation)
		b = appendHeader(b, r.RPCHeader)
		b = binary.AppendUvarint(b, r.Term)
		b = appendBytes(b, r.Leader)
		b = binary.AppendUvarint(b, r.PrevLogEntry)
		b = binary.AppendUvarint(b, r.PrevLogTerm)
		b = binary.AppendUvarint(b, r.LeaderCommitIndex)
		b = binary.AppendUvarint(b, uint64(len(r.Entries)))
		for _, e := range r.Entries {
			b = binary.AppendUvarint(b, e.Index)
			b = binary.AppendUvarint(b, e.Term)
			b = binary.AppendUvarint(b, uint64(e.Type))
			b = appendBytes(b, e.Data)
			b = appendBytes(b, e.Extensions)
			if e.AppendedAt.IsZero() {
				b = append(b, 0)
			} else {
				b = append(b, 1)
				b = binary.AppendVarint(b, e.AppendedAt.UnixNano())
			}
		}
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func decodeAppendReqs(p []byte) ([]appendReq, error) {
	d := beatDecoder{p: p}
	n := d.uvarint(appendsPerFrameMax)
	out := make([]appendReq, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		var ar appendReq
		ar.id = d.uvarint(1<<64 - 1)
		ar.group = uint32(d.uvarint(1<<32 - 1))
		ar.incarnation = d.uvarint(1<<64 - 1)
		r := &ar.req
		// The header's and leader's bytes point into the frame, as the
		// entries' data does: readFrame makes each frame afresh, and the
		// entries keep it anyway. Three allocations an append fewer.
		r.RPCHeader = d.spanHeader()
		r.Term = d.uvarint(1<<64 - 1)
		r.Leader = d.span(beatFieldBytesMax)
		r.PrevLogEntry = d.uvarint(1<<64 - 1)
		r.PrevLogTerm = d.uvarint(1<<64 - 1)
		r.LeaderCommitIndex = d.uvarint(1<<64 - 1)
		// Each entry takes at least five bytes: a count beyond what is
		// left is malformed, and is refused before it is allocated.
		entries := d.uvarint(min(appendEntriesMax, uint64(len(d.p))/5))
		if entries > 0 {
			logs := make([]raft.Log, entries)
			r.Entries = make([]*raft.Log, entries)
			for j := range logs {
				e := &logs[j]
				e.Index = d.uvarint(1<<64 - 1)
				e.Term = d.uvarint(1<<64 - 1)
				e.Type = raft.LogType(d.uvarint(255))
				e.Data = d.blob()
				e.Extensions = d.blob()
				if d.uvarint(1) == 1 {
					e.AppendedAt = time.Unix(0, d.varint())
				}
				r.Entries[j] = e
			}
		}
		out = append(out, ar)
	}
	return out, appendFrameErr(d.done())
}

func encodeAppendReplies(replies []appendReply) []byte { return appendAppendReplies(nil, replies) }

// appendAppendReplies encodes replies as encodeAppendReplies does, in
// dst's array if it has room.
func appendAppendReplies(dst []byte, replies []appendReply) []byte {
	if size := 64*len(replies) + 8; cap(dst) < size {
		dst = make([]byte, 0, size)
	}
	b := binary.AppendUvarint(append(dst[:0], 0, 0, 0, 0), uint64(len(replies)))
	for i := range replies {
		b = binary.AppendUvarint(b, replies[i].id)
		b = appendAnswer(b, replies[i].err, &replies[i].resp)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func decodeAppendReplies(p []byte) ([]appendReply, error) {
	d := beatDecoder{p: p}
	n := d.uvarint(appendsPerFrameMax)
	out := make([]appendReply, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		var ar appendReply
		ar.id = d.uvarint(1<<64 - 1)
		ar.err, ar.resp = d.answer()
		out = append(out, ar)
	}
	return out, appendFrameErr(d.done())
}

var errAppendFrame = errors.New("raftnode: malformed append frame")

// appendFrameErr names the decoder's error (heartbeat_wire.go's) as an
// append frame's.
func appendFrameErr(err error) error {
	if err != nil {
		return errAppendFrame
	}
	return nil
}

// spanHeader is header with its byte strings pointing into the frame.
func (d *beatDecoder) spanHeader() raft.RPCHeader {
	return raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersion(d.uvarint(1<<31 - 1)),
		ID:              d.span(beatFieldBytesMax),
		Addr:            d.span(beatFieldBytesMax),
	}
}

// blob reads a byte string of up to the frame's size, pointing into the
// frame (nil if empty).
func (d *beatDecoder) blob() []byte { return d.span(appendFrameBytesMax) }

// varint reads a signed varint.
func (d *beatDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.p)
	if n <= 0 {
		d.err = errBeatFrame
		return 0
	}
	d.p = d.p[n:]
	return v
}
