package raftnode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// The wire format of a heartbeat frame (heartbeat.go). A frame is a big-endian
// uint32 length and that many bytes: a uvarint count, then per item its
// fields as uvarints and length-prefixed byte strings. Hand-written rather
// than msgpack (as raft's own transport) because a heartbeat has six fields
// and the point of coalescing is to spend little per beat.
const (
	// beatsPerFrameMax bounds the heartbeats in one frame: one per group
	// this node leads with a replica at the peer, so far above any cluster.
	beatsPerFrameMax = 4096
	// beatFrameBytesMax bounds a frame; a reader refuses a longer one
	// before allocating it.
	beatFrameBytesMax = 1 << 20
	// beatFieldBytesMax bounds one byte string (a node id or address, an
	// error message).
	beatFieldBytesMax = 1 << 10
)

var errBeatFrame = errors.New("raftnode: malformed heartbeat frame")

// beatReq is one group's heartbeat in a request frame, addressed to the
// incarnation of the group's replica the leader's configuration names
// (incarnation.go). commit is the leader's commit index for that group (0:
// none), read when the frame was built; the heartbeat's term goes with it
// (heartbeat_serve.go, leader_commit.go).
type beatReq struct {
	group       uint32
	incarnation uint64
	req         raft.AppendEntriesRequest
	commit      uint64
}

// beatReply is the answer to one beatReq: raft's response, or the error
// the receiving node had for that heartbeat alone.
type beatReply struct {
	err  string
	resp raft.AppendEntriesResponse
}

func encodeBeatReqs(beats []beatReq) []byte {
	b := binary.AppendUvarint(make([]byte, 4, 64*len(beats)+8), uint64(len(beats)))
	for i := range beats {
		r := &beats[i].req
		b = binary.AppendUvarint(b, uint64(beats[i].group))
		b = binary.AppendUvarint(b, beats[i].incarnation)
		b = appendHeader(b, r.RPCHeader)
		b = binary.AppendUvarint(b, r.Term)
		b = appendBytes(b, r.Leader)
		b = binary.AppendUvarint(b, beats[i].commit)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func decodeBeatReqs(p []byte) ([]beatReq, error) {
	d := beatDecoder{p: p}
	n := d.count()
	out := make([]beatReq, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var br beatReq
		br.group = uint32(d.uvarint(1<<32 - 1))
		br.incarnation = d.uvarint(1<<64 - 1)
		br.req.RPCHeader = d.header()
		br.req.Term = d.uvarint(1<<64 - 1)
		br.req.Leader = d.bytes()
		br.commit = d.uvarint(1<<64 - 1)
		out = append(out, br)
	}
	return out, d.done()
}

func encodeBeatReplies(replies []beatReply) []byte {
	b := binary.AppendUvarint(make([]byte, 4, 64*len(replies)+8), uint64(len(replies)))
	for i := range replies {
		b = appendAnswer(b, replies[i].err, &replies[i].resp)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// appendAnswer appends one answer to an AppendEntries, heartbeat or not:
// the error the receiving node had for it (empty: none) and raft's
// response.
func appendAnswer(b []byte, err string, r *raft.AppendEntriesResponse) []byte {
	b = appendBytes(b, []byte(err))
	b = appendHeader(b, r.RPCHeader)
	b = binary.AppendUvarint(b, r.Term)
	b = binary.AppendUvarint(b, r.LastLog)
	var flags uint64
	if r.Success {
		flags |= 1
	}
	if r.NoRetryBackoff {
		flags |= 2
	}
	return binary.AppendUvarint(b, flags)
}

// answer reads what appendAnswer wrote.
func (d *beatDecoder) answer() (err string, r raft.AppendEntriesResponse) {
	err = string(d.bytes())
	r.RPCHeader = d.header()
	r.Term = d.uvarint(1<<64 - 1)
	r.LastLog = d.uvarint(1<<64 - 1)
	flags := d.uvarint(3)
	r.Success, r.NoRetryBackoff = flags&1 != 0, flags&2 != 0
	return err, r
}

func decodeBeatReplies(p []byte) ([]beatReply, error) {
	d := beatDecoder{p: p}
	n := d.count()
	out := make([]beatReply, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var br beatReply
		br.err, br.resp = d.answer()
		out = append(out, br)
	}
	return out, d.done()
}

// readBeatFrame reads one length-prefixed heartbeat frame body.
func readBeatFrame(r *bufio.Reader) ([]byte, error) {
	return readFrame(r, beatFrameBytesMax, errBeatFrame)
}

// readFrame reads one length-prefixed frame body of at most max bytes;
// a longer one fails with malformed.
func readFrame(r *bufio.Reader, max uint32, malformed error) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > max {
		return nil, fmt.Errorf("%w: %d bytes", malformed, size)
	}
	p := make([]byte, size)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, err
	}
	return p, nil
}

func appendHeader(b []byte, h raft.RPCHeader) []byte {
	b = binary.AppendUvarint(b, uint64(h.ProtocolVersion))
	b = appendBytes(b, h.ID)
	return appendBytes(b, h.Addr)
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// beatDecoder reads fields until the first error, which sticks: callers
// check it once, at done.
type beatDecoder struct {
	p   []byte
	err error
}

func (d *beatDecoder) uvarint(max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 || v > max {
		d.err = errBeatFrame
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *beatDecoder) count() int {
	return int(d.uvarint(beatsPerFrameMax))
}

// bytes reads a byte string of up to beatFieldBytesMax, a copy (nil if
// empty).
func (d *beatDecoder) bytes() []byte {
	if s := d.span(beatFieldBytesMax); s != nil {
		return append([]byte(nil), s...)
	}
	return nil
}

// span reads a byte string of up to max bytes, pointing into the frame
// (nil if empty).
func (d *beatDecoder) span(max uint64) []byte {
	n := d.uvarint(max)
	if d.err != nil {
		return nil
	}
	if uint64(len(d.p)) < n {
		d.err = errBeatFrame
		return nil
	}
	if n == 0 {
		return nil
	}
	s := d.p[:n:n]
	d.p = d.p[n:]
	return s
}

func (d *beatDecoder) header() raft.RPCHeader {
	return raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersion(d.uvarint(1<<31 - 1)),
		ID:              d.bytes(),
		Addr:            d.bytes(),
	}
}

// done reports the first error, or trailing bytes.
func (d *beatDecoder) done() error {
	if d.err == nil && len(d.p) != 0 {
		d.err = errBeatFrame
	}
	return d.err
}
