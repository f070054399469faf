// This file is the tripwire of the seam into hashicorp/raft (raftseam.go):
// each behaviour of raft v1.7.3 that raftnode relies on but raft's API does
// not promise is checked here against the real library, on in-memory
// stores and transports, apart from raftnode's own machinery. An upgrade of
// raft fails here first, loudly, naming what to re-check.
package raftnode

import (
	"errors"
	"io"
	"net"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// raftVersionPinned is the hashicorp/raft whose behaviours the seam was
// checked against.
const raftVersionPinned = "v1.7.3"

func TestRaftIsTheVersionTheSeamWasCheckedAgainst(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mod)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "github.com/hashicorp/raft" {
			continue
		}
		if f[1] != raftVersionPinned {
			t.Fatalf("go.mod requires hashicorp/raft %s, the seam was checked against %s: re-check each behaviour raftseam.go lists, then update raftVersionPinned", f[1], raftVersionPinned)
		}
		return
	}
	t.Fatal("go.mod does not require github.com/hashicorp/raft")
}

// Every test the seam's list names exists, so the list cannot drift from
// the tests that pin it.
func TestRaftSeamNamesItsTests(t *testing.T) {
	seam, err := os.ReadFile("raftseam.go")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`\bTest\w+`).FindAllString(string(seam), -1)
	if len(named) == 0 {
		t.Fatal("raftseam.go names no test")
	}
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var tests strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f.Name(), "_test.go") {
			b, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			tests.Write(b)
		}
	}
	for _, name := range named {
		if !strings.Contains(tests.String(), "func "+name+"(") {
			t.Errorf("raftseam.go names %s, which no test file declares", name)
		}
	}
}

// contractHeartbeatTimeout is raft's HeartbeatTimeout in these tests.
const contractHeartbeatTimeout = 500 * time.Millisecond

// contractTransport is raft's in-memory transport, recording the
// AppendEntries raft sends and the heartbeat handler raft sets; with
// consumer set, raft serves RPCs from it instead (as from relay.go's).
type contractTransport struct {
	*raft.InmemTransport
	consumer chan raft.RPC
	handler  atomic.Pointer[func(raft.RPC)]

	mu struct {
		sync.Mutex
		// appends are the AppendEntries sent, in order; guarded by mu.
		appends []sentAppend
		// asked are the servers asked for a vote or pre-vote; guarded by
		// mu.
		asked []raft.ServerID
	}
}

type sentAppend struct {
	req        raft.AppendEntriesRequest
	start, end time.Time
}

func newContractTransport() *contractTransport {
	_, t := raft.NewInmemTransport("")
	return &contractTransport{InmemTransport: t}
}

func (c *contractTransport) Consumer() <-chan raft.RPC {
	if c.consumer != nil {
		return c.consumer
	}
	return c.InmemTransport.Consumer()
}

func (c *contractTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	c.handler.Store(&cb)
	c.InmemTransport.SetHeartbeatHandler(cb)
}

func (c *contractTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	start := time.Now()
	err := c.InmemTransport.AppendEntries(id, target, args, resp)
	c.mu.Lock()
	c.mu.appends = append(c.mu.appends, sentAppend{req: *args, start: start, end: time.Now()})
	c.mu.Unlock()
	return err
}

func (c *contractTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	c.noteAsked(id)
	return c.InmemTransport.RequestVote(id, target, args, resp)
}

func (c *contractTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	c.noteAsked(id)
	return c.InmemTransport.RequestPreVote(id, target, args, resp)
}

func (c *contractTransport) noteAsked(id raft.ServerID) {
	c.mu.Lock()
	c.mu.asked = append(c.mu.asked, id)
	c.mu.Unlock()
}

// sent returns the AppendEntries sent so far and forgets them.
func (c *contractTransport) sent() []sentAppend {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.mu.appends
	c.mu.appends = nil
	return out
}

// countFSM counts the entries raft applies.
type countFSM struct{ applied atomic.Uint64 }

func (f *countFSM) Apply(*raft.Log) any { f.applied.Add(1); return nil }

func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) {
	return nil, errors.New("contract tests take no snapshots")
}

func (f *countFSM) Restore(rc io.ReadCloser) error { return rc.Close() }

// startContractRaft starts raft server id on trans with in-memory stores,
// bootstrapped with servers unless there are none. Raft's empty appends
// (CommitTimeout) are pushed an hour apart: between entries, a leader sends
// heartbeats only.
func startContractRaft(t *testing.T, id raft.ServerID, trans raft.Transport, fsm raft.FSM, servers []raft.Server) *raft.Raft {
	t.Helper()
	cfg := raft.DefaultConfig()
	cfg.LocalID = id
	cfg.HeartbeatTimeout = contractHeartbeatTimeout
	cfg.ElectionTimeout = contractHeartbeatTimeout
	cfg.LeaderLeaseTimeout = contractHeartbeatTimeout / 2
	cfg.CommitTimeout = time.Hour
	cfg.Logger = hclog.NewNullLogger()
	logs, stable, snaps := raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	if len(servers) > 0 {
		if err := raft.BootstrapCluster(cfg, logs, stable, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := raft.NewRaft(cfg, fsm, logs, stable, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown().Error() })
	return r
}

// contractHeader is the RPC header of a leader that exists only in the test.
var contractHeader = raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("c9"), Addr: []byte("leader-c9")}

func contractHeartbeat(term uint64) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{RPCHeader: contractHeader, Term: term, Leader: contractHeader.Addr}
}

// Behaviours 1 and 2: between entries a leader sends only heartbeats; each
// is what isHeartbeat recognises and carries nothing a frame drops; and a
// periodic one follows the previous answer by heartbeatGapMin at least.
func TestRaftContractHeartbeatShape(t *testing.T) {
	ta, tb := newContractTransport(), newContractTransport()
	ta.Connect(tb.LocalAddr(), tb.InmemTransport)
	tb.Connect(ta.LocalAddr(), ta.InmemTransport)
	servers := []raft.Server{
		{Suffrage: raft.Voter, ID: "a", Address: ta.LocalAddr()},
		{Suffrage: raft.Voter, ID: "b", Address: tb.LocalAddr()},
	}
	ra := startContractRaft(t, "a", ta, &countFSM{}, servers)
	rb := startContractRaft(t, "b", tb, &countFSM{}, servers)
	var leader *raft.Raft
	var lt *contractTransport
	for deadline := time.Now().Add(10 * time.Second); leader == nil; time.Sleep(10 * time.Millisecond) {
		switch {
		case ra.State() == raft.Leader:
			leader, lt = ra, ta
		case rb.State() == raft.Leader:
			leader, lt = rb, tb
		case time.Now().After(deadline):
			t.Fatal("no leader elected")
		}
	}
	if err := leader.Apply([]byte("x"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	lt.sent()
	quiet := 20 * heartbeatGapMin(contractHeartbeatTimeout)
	time.Sleep(quiet)
	beats := lt.sent()
	if len(beats) < 3 {
		t.Fatalf("the leader sent %d AppendEntries in %v of quiet, want heartbeats every %v or so", len(beats), quiet, heartbeatGapMin(contractHeartbeatTimeout))
	}
	for i, b := range beats {
		if !isHeartbeat(&b.req) {
			t.Fatalf("raft's heartbeat %+v is not what isHeartbeat recognises: heartbeats would no longer be coalesced", b.req)
		}
		got, err := decodeBeatReqs(encodeBeatReqs([]beatReq{{req: b.req}})[4:])
		if err != nil || !reflect.DeepEqual(got[0].req, b.req) {
			t.Fatalf("raft's heartbeat %+v comes out of a frame as %+v (%v): frames would drop what raft now sends", b.req, got, err)
		}
		if i > 0 {
			if gap := b.start.Sub(beats[i-1].end); gap < heartbeatGapMin(contractHeartbeatTimeout) {
				t.Fatalf("raft sent a periodic heartbeat %v after the previous answer, want at least heartbeatGapMin %v: periodic heartbeats would count as urgent", gap, heartbeatGapMin(contractHeartbeatTimeout))
			}
		}
	}
}

// Behaviour 9: a candidate asks voters only, so a learner's vote never
// counts, in an election or a leadership transfer's.
func TestRaftContractCandidatesAskVotersOnly(t *testing.T) {
	trans, rafts := startContractCluster(t, []raft.ServerID{"a", "b", "c", "learner"}, "learner")
	first := rafts[contractLeader(t, rafts)]
	if err := first.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("LeadershipTransfer = %v", err)
	}
	contractLeader(t, rafts)
	asked := 0
	for _, tr := range trans {
		tr.mu.Lock()
		for _, id := range tr.mu.asked {
			asked++
			if id == "learner" {
				t.Errorf("a candidate asked the non-voter for its vote: a learner could help elect a leader that lacks committed entries")
			}
		}
		tr.mu.Unlock()
	}
	if asked == 0 {
		t.Fatal("no vote was asked for: the test saw no election")
	}
}

// Behaviour 3: raft's heartbeat handler answers before it returns, and
// not at all once raft has shut down.
func TestRaftContractHeartbeatHandler(t *testing.T) {
	tr := newContractTransport()
	r := startContractRaft(t, "a", tr, &countFSM{}, nil)
	fn := tr.handler.Load()
	if fn == nil {
		t.Fatal("NewRaft set no heartbeat handler on its transport")
	}
	resp, err := answerHeartbeat(*fn, contractHeartbeat(3))
	if err != nil {
		t.Fatalf("raft's heartbeat handler: %v; want an answer before it returns", err)
	}
	if !resp.Success || resp.Term != 3 {
		t.Fatalf("heartbeat of term 3 answered %+v, want success in term 3", resp)
	}
	if err := r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := answerHeartbeat(*fn, contractHeartbeat(3)); !errors.Is(err, errHeartbeatUnanswered) {
		t.Fatalf("heartbeat handler after shutdown: %v, want %v", err, errHeartbeatUnanswered)
	}
}

// Behaviours 4 and 5: a follower served commitAppend on its Consumer
// channel commits and applies up to that entry, and no further than what
// it holds; every answer's LastLog is from before the request's entries.
func TestRaftContractCommitAppend(t *testing.T) {
	tr := newContractTransport()
	tr.consumer = make(chan raft.RPC)
	fsm := &countFSM{}
	r := startContractRaft(t, "a", tr, fsm, nil)
	serve := func(req *raft.AppendEntriesRequest) *raft.AppendEntriesResponse {
		t.Helper()
		ch := make(chan raft.RPCResponse, 1)
		select {
		case tr.consumer <- raft.RPC{Command: req, RespChan: ch}:
		case <-time.After(5 * time.Second):
			t.Fatal("raft does not serve its transport's Consumer channel")
		}
		select {
		case res := <-ch:
			if res.Error != nil {
				t.Fatal(res.Error)
			}
			return res.Response.(*raft.AppendEntriesResponse)
		case <-time.After(5 * time.Second):
			t.Fatal("raft did not answer an AppendEntries from its Consumer channel")
		}
		return nil
	}
	var entries []*raft.Log
	for i := uint64(1); i <= 3; i++ {
		entries = append(entries, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	app := &raft.AppendEntriesRequest{RPCHeader: contractHeader, Term: 1, Leader: contractHeader.Addr, Entries: entries}
	resp := serve(app)
	if !resp.Success || resp.LastLog != 0 {
		t.Fatalf("append of entries 1-3 to an empty log answered %+v, want success with LastLog 0 (the log before the append)", resp)
	}
	if last, ok := answeredLastIndex(app, resp, nil); !ok || last != 3 {
		t.Fatalf("answeredLastIndex = %d, %v; want 3", last, ok)
	}
	hb := contractHeartbeat(1)
	if resp := serve(hb); !resp.Success || resp.LastLog != 3 {
		t.Fatalf("heartbeat answered %+v, want success with LastLog 3", resp)
	}
	if c := r.CommitIndex(); c != 0 {
		t.Fatalf("commit index %d before any commit index was sent, want 0", c)
	}
	if resp := serve(commitAppend(hb, 2, 1)); !resp.Success {
		t.Fatalf("commitAppend(2, 1) answered %+v, want success", resp)
	}
	for deadline := time.Now().Add(5 * time.Second); fsm.applied.Load() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after commitAppend(2, 1) the follower applied %d entries, want 2", fsm.applied.Load())
		}
	}
	if resp := serve(commitAppend(hb, 7, 1)); resp.Success {
		t.Fatalf("commitAppend of an entry the follower lacks answered %+v, want a refusal", resp)
	}
	if c, last, applied := r.CommitIndex(), r.LastIndex(), fsm.applied.Load(); c != 2 || last != 3 || applied != 2 {
		t.Fatalf("commit index %d, last index %d, applied %d; want 2, 3, 2: commitAppend changed more than the commit index", c, last, applied)
	}
}

// Behaviour 6: the log cache passes IsMonotonic on, through the wrappers
// raftnode puts under it (group.go).
func TestRaftContractLogCacheIsMonotonic(t *testing.T) {
	c, err := raft.NewLogCache(8, timedLogs{checkedLogs{LogStore: raft.NewInmemStore()}, prometheus.ObserverFunc(func(float64) {})})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := any(c).(raft.MonotonicLogStore); !ok || !m.IsMonotonic() {
		t.Fatal("raft's log cache over checkedLogs is not a monotonic log store: a follower that installs a snapshot would keep a gap in its log")
	}
}

// Behaviour 7: on a connection it dials, raft's transport writes an RPC
// before it reads anything.
func TestRaftContractTransportSpeaksFirst(t *testing.T) {
	layer := &pipeLayer{dialed: make(chan net.Conn, 1), closed: make(chan struct{})}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: layer, MaxPool: 1, Timeout: 5 * time.Second, Logger: hclog.NewNullLogger()})
	defer trans.Close()
	done := make(chan error, 1)
	go func() {
		var resp raft.RequestVoteResponse
		done <- trans.RequestVote("b", "peer-b", &raft.RequestVoteRequest{RPCHeader: contractHeader, Term: 1}, &resp)
	}()
	var peer net.Conn
	select {
	case peer = <-layer.dialed:
	case <-time.After(5 * time.Second):
		t.Fatal("raft's transport dialed no connection for an RPC")
	}
	if err := peer.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := io.ReadFull(peer, b[:]); err != nil {
		t.Fatalf("nothing came on a connection raft dialed before the peer spoke (%v): the Mux would hold it until headerTimeout and drop it", err)
	}
	peer.Close()
	<-done
}

// Behaviour 8: raft starts in the term its stable store holds under
// keyCurrentTerm.
func TestRaftContractTermKey(t *testing.T) {
	cfg := raft.DefaultConfig()
	cfg.LocalID = "a"
	cfg.Logger = hclog.NewNullLogger()
	stable := raft.NewInmemStore()
	if err := stable.SetUint64(keyCurrentTerm, 5); err != nil {
		t.Fatal(err)
	}
	r, err := raft.NewRaft(cfg, &countFSM{}, raft.NewInmemStore(), stable, raft.NewInmemSnapshotStore(), newContractTransport())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown()
	if got := r.CurrentTerm(); got != 5 {
		t.Fatalf("raft started in term %d with %d under %q, want 5: seeded groups would start in the wrong term", got, 5, keyCurrentTerm)
	}
}

// pipeLayer is a raft.StreamLayer whose Dial hands the other end of an
// in-memory pipe to the test.
type pipeLayer struct {
	dialed chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *pipeLayer) Dial(raft.ServerAddress, time.Duration) (net.Conn, error) {
	a, b := net.Pipe()
	l.dialed <- b
	return a, nil
}

func (l *pipeLayer) Accept() (net.Conn, error) {
	<-l.closed
	return nil, net.ErrClosed
}

func (l *pipeLayer) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeLayer) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// Behaviour 10, first half: raft does not tell a configuration's index,
// neither by GetConfiguration nor by Stats, so commitment is proved by a
// Barrier after reading the configuration (Group.configOf). Should an
// upgrade report the index, comparing it with the commit index becomes
// possible; comparing this one would call every configuration committed.
func TestRaftContractConfigurationIndexUnknown(t *testing.T) {
	tr := newContractTransport()
	r := startContractRaft(t, "a", tr, &countFSM{}, []raft.Server{{Suffrage: raft.Voter, ID: "a", Address: tr.LocalAddr()}})
	for deadline := time.Now().Add(10 * time.Second); r.State() != raft.Leader; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the single voter did not lead")
		}
	}
	if err := r.Barrier(time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	f := r.GetConfiguration()
	if err := f.Error(); err != nil || len(f.Configuration().Servers) != 1 {
		t.Fatalf("GetConfiguration = %v, %v; want the bootstrap configuration", f.Configuration(), err)
	}
	if got := f.Index(); got != 0 {
		t.Errorf("GetConfiguration().Index() = %d, want 0 (raft now tells the index: re-check membership_ask.go)", got)
	}
	if got := r.Stats()["latest_configuration_index"]; got != "0" {
		t.Errorf(`Stats()["latest_configuration_index"] = %s, want 0 (raft now tells the index: re-check membership_ask.go)`, got)
	}
}

// Behaviour 10, second half: a follower cut off from its leader while the
// leader removes it never hears of its removal once reconnected: the
// leader stopped replicating to it when it appended the change.
func TestRaftContractRemovedFollowerMayNotLearn(t *testing.T) {
	ids := []raft.ServerID{"a", "b", "c"}
	trans, rafts := startContractCluster(t, ids, "")
	li := contractLeader(t, rafts)
	fi := (li + 1) % len(ids)
	if err := rafts[li].Barrier(time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	trans[li].Disconnect(trans[fi].LocalAddr())
	trans[fi].Disconnect(trans[li].LocalAddr())
	if err := rafts[li].RemoveServer(ids[fi], 0, time.Second).Error(); err != nil {
		t.Fatalf("RemoveServer(%s) = %v", ids[fi], err)
	}
	// The best-effort append waits out a failure back-off first (10 to
	// 20 ms after a failure or two): reconnecting sooner lets it through
	// (1 run in 8 did).
	time.Sleep(contractHeartbeatTimeout)
	trans[li].Connect(trans[fi].LocalAddr(), trans[fi].InmemTransport)
	trans[fi].Connect(trans[li].LocalAddr(), trans[li].InmemTransport)
	time.Sleep(3 * contractHeartbeatTimeout)
	f := rafts[fi].GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool { return s.ID == ids[fi] }) {
		t.Fatalf("the removed follower %s learned its removal (%v): raft replicates to removed servers again; DropGroup's question to the leader (membership_ask.go) may be simpler now", ids[fi], f.Configuration().Servers)
	}
}

// startContractCluster starts a raft server per id over connected
// in-memory transports, all voters but learner (if named), which is a
// non-voter.
func startContractCluster(t *testing.T, ids []raft.ServerID, learner raft.ServerID) ([]*contractTransport, []*raft.Raft) {
	t.Helper()
	var trans []*contractTransport
	var servers []raft.Server
	for _, id := range ids {
		tr := newContractTransport()
		trans = append(trans, tr)
		s := raft.Server{Suffrage: raft.Voter, ID: id, Address: tr.LocalAddr()}
		if id == learner {
			s.Suffrage = raft.Nonvoter
		}
		servers = append(servers, s)
	}
	for _, a := range trans {
		for _, b := range trans {
			if a != b {
				a.Connect(b.LocalAddr(), b.InmemTransport)
			}
		}
	}
	var rafts []*raft.Raft
	for i, id := range ids {
		rafts = append(rafts, startContractRaft(t, id, trans[i], &countFSM{}, servers))
	}
	return trans, rafts
}

// contractLeader waits up to 10 s for one of rafts to lead and returns
// its position.
func contractLeader(t *testing.T, rafts []*raft.Raft) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for i, r := range rafts {
			if r.State() == raft.Leader {
				return i
			}
		}
	}
	t.Fatal("no leader elected")
	return -1
}

// Behaviour 11: append frames (append_wire.go) carry every field of raft's
// AppendEntries request, entry and answer; a field added by an upgrade
// would be dropped on the way, so it fails here until the frames carry it.
func TestRaftContractAppendFields(t *testing.T) {
	for _, c := range []struct {
		v    any
		want []string
	}{
		{raft.AppendEntriesRequest{}, []string{"RPCHeader", "Term", "Leader", "PrevLogEntry", "PrevLogTerm", "Entries", "LeaderCommitIndex"}},
		{raft.AppendEntriesResponse{}, []string{"RPCHeader", "Term", "LastLog", "Success", "NoRetryBackoff"}},
		{raft.RPCHeader{}, []string{"ProtocolVersion", "ID", "Addr"}},
		{raft.Log{}, []string{"Index", "Term", "Type", "Data", "Extensions", "AppendedAt"}},
	} {
		typ := reflect.TypeOf(c.v)
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("raft.%s has fields %v; append frames carry %v (append_wire.go)", typ.Name(), got, c.want)
		}
	}
}
