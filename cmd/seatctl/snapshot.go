package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/internal/backup"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// streamTimeoutDefault bounds the transfer of one group's snapshot: a large
// group takes longer than one ordinary call.
const streamTimeoutDefault = 10 * time.Minute

func newSnapshotCmd(a *app) *cobra.Command {
	var streamTimeout time.Duration
	save := &cobra.Command{
		Use:   "save FILE",
		Short: "Back up every group's state from its leader into one file",
		Long: `save fetches every raft group's state machine snapshot from the group's leader
(after a barrier, so it holds every write acknowledged before the group's
turn) and writes one backup file: a header (format version, time, group count,
each group's applied index and digest), the groups' snapshot streams, and a
sha256 over the whole file. The file is written to FILE.partial, verified end
to end, then renamed to FILE. Restore it into a new cluster with seatd restore.

Consistency: each group is saved at one applied index, one group after another,
so the backup is consistent per group, not one point in time across groups
(that would need writes stopped). A show, its holds and bookings live in one
group, so every booking is whole; a booking made while the save runs may be in
the backup or not, depending on whether its group was saved before it.`,
		Args: exactArgs(1, "FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			if streamTimeout <= 0 {
				return usagef("--stream-timeout must be positive, not %v", streamTimeout)
			}
			hdr, size, err := a.saveSnapshot(c.Context(), args[0], streamTimeout)
			if err != nil {
				return err
			}
			if a.json() {
				return writeJSON(a.out, savedView(args[0], hdr, size))
			}
			writeSaved(a.out, args[0], hdr, size)
			return nil
		},
	}
	save.Flags().DurationVar(&streamTimeout, "stream-timeout", streamTimeoutDefault, "bound on the transfer of one group's snapshot")
	return parentCmd("snapshot", "Back up the cluster's state", save)
}

// saveSnapshot writes the backup file and verifies it; it returns the
// header written and the file's size. On failure no file is left at path.
func (a *app) saveSnapshot(ctx context.Context, path string, streamTimeout time.Duration) (backup.Header, int64, error) {
	v, err := a.pollView(ctx, false)
	if err != nil {
		return backup.Header{}, 0, err
	}
	groups, err := clusterGroups(v)
	if err != nil {
		return backup.Header{}, 0, err
	}
	w, err := backup.Create(path, time.Now(), groups)
	if err != nil {
		return backup.Header{}, 0, err
	}
	for id := range uint32(groups) {
		err := a.retry(ctx, a.retryWindow(), func(ctx context.Context) error {
			_, err := w.AddGroup(func(out io.Writer) (backup.Group, error) {
				return a.fetchGroup(ctx, id, out, streamTimeout)
			})
			return err
		})
		if err != nil {
			w.Abort()
			return backup.Header{}, 0, fmt.Errorf("save group %d: %s", id, describe(err))
		}
	}
	hdr, err := w.Commit()
	if err != nil {
		return backup.Header{}, 0, err
	}
	size, err := verifyBackup(path)
	if err != nil {
		os.Remove(path)
		return backup.Header{}, 0, fmt.Errorf("the backup written does not verify, removed it: %w", err)
	}
	return hdr, size, nil
}

// clusterGroups is the cluster's group count, from the groups the nodes
// report: ids 0..n-1 whose ranges end at the top of the hash space. A group
// no node reported would leave a gap; a backup without it is refused.
func clusterGroups(v clusterView) (int, error) {
	if len(v.Groups) == 0 {
		return 0, errors.New("no node reported any group")
	}
	for i, g := range v.Groups {
		if g.Group != uint32(i) {
			return 0, fmt.Errorf("no node that answered reports group %d: every group must be saved", i)
		}
	}
	if last := v.Groups[len(v.Groups)-1]; last.RangeEnd != math.MaxUint32 {
		return 0, fmt.Errorf("groups after %d are missing (its range ends at %08x): every group must be saved", last.Group, last.RangeEnd)
	}
	return len(v.Groups), nil
}

// fetchGroup streams one group's snapshot from its current leader into out.
func (a *app) fetchGroup(ctx context.Context, id uint32, out io.Writer, streamTimeout time.Duration) (backup.Group, error) {
	v, g, err := a.groupView(ctx, id)
	if err != nil {
		return backup.Group{}, err
	}
	c, err := a.admin(v.node(g.Leader).GRPCAddr)
	if err != nil {
		return backup.Group{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, streamTimeout)
	defer cancel()
	stream, err := c.SnapshotGroup(ctx, &ledgerpb.SnapshotGroupRequest{Group: id})
	if err != nil {
		return backup.Group{}, err
	}
	var entry backup.Group
	for first := true; ; first = false {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) && !first {
			return entry, nil
		}
		if err != nil {
			return backup.Group{}, err
		}
		if first {
			if msg.Group != id || len(msg.Digest) != len(entry.Digest) {
				return backup.Group{}, fmt.Errorf("leader %s sent group %d with a %d-byte digest, want group %d", g.Leader, msg.Group, len(msg.Digest), id)
			}
			entry = backup.Group{ID: id, Applied: msg.AppliedIndex, Clock: msg.ClockMs}
			copy(entry.Digest[:], msg.Digest)
		}
		if _, err := out.Write(msg.Data); err != nil {
			return backup.Group{}, fmt.Errorf("write backup: %w", err)
		}
	}
}

// verifyBackup checks a backup as seatd restore will, returning its size.
func verifyBackup(path string) (int64, error) {
	b, err := backup.Open(path)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	if err := b.Verify(); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// savedGroup is one group of a saved backup, for -o json.
type savedGroup struct {
	Group   uint32 `json:"group"`
	Applied uint64 `json:"applied_index"`
	ClockMs int64  `json:"clock_ms"`
	Digest  string `json:"digest"`
	Bytes   uint64 `json:"bytes"`
}

type savedBackup struct {
	File    string       `json:"file"`
	Bytes   int64        `json:"bytes"`
	Created time.Time    `json:"created"`
	Groups  []savedGroup `json:"groups"`
}

func savedView(path string, hdr backup.Header, size int64) savedBackup {
	s := savedBackup{File: path, Bytes: size, Created: hdr.Created.UTC(), Groups: []savedGroup{}}
	for _, g := range hdr.Groups {
		s.Groups = append(s.Groups, savedGroup{Group: g.ID, Applied: g.Applied, ClockMs: g.Clock, Digest: g.DigestHex(), Bytes: g.Length})
	}
	return s
}

// writeSaved prints one line per group and a summary.
func writeSaved(w io.Writer, path string, hdr backup.Header, size int64) {
	t := newTable(w)
	t.row("GROUP", "INDEX", "CLOCK", "DIGEST", "BYTES")
	for _, g := range hdr.Groups {
		t.row(fmt.Sprint(g.ID), fmt.Sprint(g.Applied), time.UnixMilli(g.Clock).UTC().Format(time.RFC3339), short(g.DigestHex()), fmt.Sprint(g.Length))
	}
	t.flush()
	fmt.Fprintf(w, "saved %s: %d groups, %d bytes, verified (consistent per group)\n", path, len(hdr.Groups), size)
}
