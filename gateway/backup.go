package gateway

import (
	"bufio"
	"errors"
	"fmt"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// snapshotChunkBytes bounds the stream bytes of one SnapshotChunk, well
// under gRPC's default 4 MiB message limit.
const snapshotChunkBytes = 256 << 10

// SnapshotGroup streams a group's fsm snapshot from this node, which must
// lead the group: raftnode.Group.Backup runs a barrier first, so the
// snapshot holds every write acknowledged before the call.
func (a *Admin) SnapshotGroup(req *ledgerpb.SnapshotGroupRequest, stream ledgerpb.Admin_SnapshotGroupServer) error {
	ctx := stream.Context()
	if err := a.auth.admin(ctx); err != nil {
		return err
	}
	g, err := a.router.Node().Group(req.Group)
	if err != nil {
		return fieldError(&fsm.FieldError{Field: "group", Message: fmt.Sprintf("this node hosts no group %d", req.Group)})
	}
	snap, err := g.Backup(ctx)
	switch {
	case errors.Is(err, raftnode.ErrNotLeader):
		return notLeaderError(g.Leader())
	case err != nil:
		return newStatus("UNAVAILABLE", fmt.Sprintf("snapshot of group %d: %v", req.Group, err))
	}
	defer snap.Close()
	d, err := snap.Digest()
	if err != nil {
		return newStatus("INTERNAL", fmt.Sprintf("digest of group %d: %v", req.Group, err))
	}
	cw := &chunkWriter{stream: stream, first: &ledgerpb.SnapshotChunk{Group: req.Group, AppliedIndex: d.Applied, ClockMs: d.Clock, Digest: d.Sum[:]}}
	bw := bufio.NewWriterSize(cw, snapshotChunkBytes)
	if _, err := snap.WriteTo(bw); err != nil {
		return newStatus("UNAVAILABLE", fmt.Sprintf("stream snapshot of group %d: %v", req.Group, err))
	}
	if err := bw.Flush(); err != nil {
		return newStatus("UNAVAILABLE", fmt.Sprintf("stream snapshot of group %d: %v", req.Group, err))
	}
	if cw.first != nil { // an empty stream cannot happen (header and trailer), but say what the snapshot is
		return stream.Send(cw.first)
	}
	return nil
}

// chunkWriter sends each write as SnapshotChunks of at most
// snapshotChunkBytes; the first carries the snapshot's metadata.
type chunkWriter struct {
	stream ledgerpb.Admin_SnapshotGroupServer
	first  *ledgerpb.SnapshotChunk // sent with the first bytes, then nil
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		size := min(len(p), snapshotChunkBytes)
		msg := &ledgerpb.SnapshotChunk{}
		if w.first != nil {
			msg, w.first = w.first, nil
		}
		msg.Data = p[:size]
		// Send marshals before it returns, so p may be reused after.
		if err := w.stream.Send(msg); err != nil {
			return n, err
		}
		n += size
		p = p[size:]
	}
	return n, nil
}
