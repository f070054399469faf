package raftnode

import (
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestSnapshotListNeverSeesAReapedSnapshot: raft lists a group's
// snapshots to send one while it takes another, whose Close removes the
// oldest; the store's List waits for that Close, so no listing finds a
// snapshot directory whose metadata was just removed. The newest
// snapshot's index and size, for the metrics, follow without a listing.
func TestSnapshotListNeverSeesAReapedSnapshot(t *testing.T) {
	logs := &syncBuffer{}
	dir := t.TempDir()
	files, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := newLazySnapshots(files, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.List(); err != nil {
				t.Errorf("List: %v", err)
				return
			}
		}
	}()
	for i := range uint64(300) {
		sink, err := s.Create(raft.SnapshotVersionMax, i+1, 1, raft.Configuration{}, 1, trans)
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if metas, err := s.List(); err != nil || len(metas) != 2 || metas[0].Index != 300 || metas[0].Size != 0 {
		t.Fatalf("after 300 snapshots: %+v, %v; want the two newest, without data", metas, err)
	}
	if index, size := s.Newest(); index != 300 || size != 0 {
		t.Errorf("Newest() = %d, %d; want 300, 0", index, size)
	}
	// A snapshot with data (one received from a leader) is the newest
	// with its size, and a store opened again finds it by listing.
	sink, err := s.Create(raft.SnapshotVersionMax, 301, 1, raft.Configuration{}, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("twelve bytes")); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := newLazySnapshots(files, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*lazySnapshots{s, again} {
		if index, size := st.Newest(); index != 301 || size != 12 {
			t.Errorf("Newest() = %d, %d; want 301, 12", index, size)
		}
	}
	if out := logs.String(); strings.Contains(out, "failed to read metadata") {
		t.Fatalf("a listing raced a reap:\n%s", out)
	}
}
