// This file proves DropGroup without force (membership_ask.go) over real
// TCP: a replica cut off from its leader while the leader removes it never
// hears of its removal, yet DropGroup drops it once the leader, reachable
// again, confirms its committed configuration omits it; DropGroup refuses
// with ErrStillMember while the leader still names the replica, while no
// leader can be reached, and while the removal is not committed (the
// leader has lost its quorum), naming what each node answered; and the
// question's wire format round-trips (and is fuzzed).
package raftnode

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestDropGroupAfterAnUnseenRemoval(t *testing.T) {
	tc, gates := startProxiedCluster(t)
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	mustPropose(t, leader, holdCmd("c", "r1", 60_000, "A1"))
	fi := (li + 1) % 3
	fnode, lnode := tc.peers[fi].ID, tc.peers[li].ID
	fg, err := tc.nodes[fi].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	err = tc.nodes[fi].DropGroup(ctx, 0, false)
	if !errors.Is(err, ErrStillMember) || !strings.Contains(err.Error(), lnode+" "+configNames.String()) {
		t.Fatalf("DropGroup on member %s = %v, want ErrStillMember naming %s's answer %q", fnode, err, lnode, configNames)
	}

	// Cut the follower off from its leader, both ways: the leader's one
	// best-effort append of the removal fails at once.
	gates[[2]string{lnode, fnode}].refuse()
	gates[[2]string{fnode, lnode}].refuse()
	if err := leader.RemoveVoter(ctx, fnode); err != nil {
		t.Fatalf("RemoveVoter(%s) = %v", fnode, err)
	}
	time.Sleep(3 * tc.cfg(li).HeartbeatTimeout)
	if sid, ok := fg.memberID(fnode); !ok || sid != fg.self {
		t.Fatalf("%s learned of its removal (it names %q): the test no longer shows an unseen removal", fnode, sid)
	}
	err = tc.nodes[fi].DropGroup(ctx, 0, false)
	if !errors.Is(err, ErrStillMember) || !strings.Contains(err.Error(), lnode+" did not answer") {
		t.Fatalf("DropGroup with the leader %s out of reach = %v, want ErrStillMember saying it did not answer", lnode, err)
	}
	t.Logf("refused while cut off: %v", err)

	gates[[2]string{lnode, fnode}].heal()
	gates[[2]string{fnode, lnode}].heal()
	if err := tc.nodes[fi].DropGroup(ctx, 0, false); err != nil {
		t.Fatalf("DropGroup after the leader committed the removal = %v, want nil", err)
	}
	if _, err := tc.nodes[fi].Group(0); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("%s still hosts the group after DropGroup (%v)", fnode, err)
	}
	if _, err := os.Stat(filepath.Join(tc.nodes[fi].groupDir(0), tombstoneFile)); err != nil {
		t.Fatalf("no tombstone after DropGroup: %v", err)
	}
	mustPropose(t, leader, holdCmd("c", "r2", 60_000, "A2"))
}

// Behaviour while the removal is not committed: the leader appended the
// configuration without the follower, but the one other voter of that
// configuration is down. The follower may even hold the new configuration
// (the leader's best-effort append reaches it): it still may not go.
func TestDropGroupRefusesAnUncommittedRemoval(t *testing.T) {
	// A lease long enough for the leader to keep leading, for a while,
	// without a quorum of its new configuration.
	tc := startTestCluster(t, func(c *Config) {
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, 2*time.Second
	})
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	fi, oi := (li+1)%3, (li+2)%3
	fnode := tc.peers[fi].ID
	fg, err := tc.nodes[fi].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes[oi].Close()
	tc.nodes[oi] = nil

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	removed := make(chan error, 1)
	go func() { removed <- leader.RemoveVoter(ctx, fnode) }()
	defer func() { <-removed }() // fails once the leader steps down
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, ok := leader.memberID(fnode); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader never appended the removal")
		}
	}
	if got := leader.configOf(fg.self, 200*time.Millisecond); got != configUnconfirmed && leader.IsLeader() {
		t.Fatalf("the leader answers %q about an uncommitted removal, want %q", got, configUnconfirmed)
	}
	err = tc.nodes[fi].DropGroup(ctx, 0, false)
	if !errors.Is(err, ErrStillMember) {
		t.Fatalf("DropGroup during an uncommitted removal = %v, want ErrStillMember", err)
	}
	t.Logf("refused: %v", err)
	if _, err := tc.nodes[fi].Group(0); err != nil {
		t.Fatalf("the replica is gone after a refused DropGroup: %v", err)
	}
}

func TestConfigQuestionWire(t *testing.T) {
	q, err := encodeConfigQuestion(7, "n2#00000000000000ff")
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _, _ = a.Write(q) }()
	hdr, err := readHeader(b)
	if err != nil || !hdr.config || hdr.group != 7 {
		t.Fatalf("readHeader = %+v, %v; want a configuration question for group 7", hdr, err)
	}
	sid, err := readConfigID(b)
	if err != nil || sid != "n2#00000000000000ff" {
		t.Fatalf("readConfigID = %q, %v; want n2#00000000000000ff", sid, err)
	}
	for _, bad := range []string{"", strings.Repeat("x", configIDBytesMax+1)} {
		if _, err := encodeConfigQuestion(7, raft.ServerID(bad)); err == nil {
			t.Errorf("encodeConfigQuestion(%d-byte id) = nil error, want one", len(bad))
		}
	}
}

// A configuration question crosses the Mux as raft traffic does: over
// mutual TLS, only within the cluster, answered by the node (not a group's
// layer), and a Mux that answers none says the group is not hosted.
func TestConfigQuestionAtTheMux(t *testing.T) {
	pki := newTestPKI(t)
	const sid = "n2#00000000000000ff"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewTLSMux(ln, testClusterID, nil, *pki.muxTLS(t, "n1", true))
	if err != nil {
		t.Fatal(err)
	}
	m.configs = func(group uint32, id raft.ServerID) configState {
		if group == 3 && id == sid {
			return configOmits
		}
		return configFollows
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		m.Serve()
	}()
	t.Cleanup(func() {
		m.Close()
		<-served
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	peer := serveTestMux(t, headerTimeout, pki.muxTLS(t, "n2", true))
	if got, err := peer.configAt(ctx, m.Addr().String(), 3, sid); err != nil || got != configOmits {
		t.Fatalf("configAt(group 3, %s) = %v, %v; want %v", sid, got, err, configOmits)
	}
	if got, err := peer.configAt(ctx, m.Addr().String(), 4, sid); err != nil || got != configFollows {
		t.Fatalf("configAt(group 4, %s) = %v, %v; want %v", sid, got, err, configFollows)
	}
	stranger := serveClusterMux(t, headerTimeout, pki.muxTLS(t, "x1", true), ClusterID{9})
	if got, err := stranger.configAt(ctx, m.Addr().String(), 3, sid); err == nil {
		t.Fatalf("a node of another cluster was answered %v", got)
	}
	plain := newTestMux(t, headerTimeout)
	if got, err := newTestMux(t, headerTimeout).configAt(ctx, plain.Addr().String(), 3, sid); err != nil || got != configNotHosted {
		t.Fatalf("configAt a Mux that answers no questions = %v, %v; want %v", got, err, configNotHosted)
	}
}

// FuzzConfigQuestion: the question's body decoder never panics, reads no
// more than its length byte says, and what it accepts encodes back to the
// same bytes.
func FuzzConfigQuestion(f *testing.F) {
	q, err := encodeConfigQuestion(7, "n2#00000000000000ff")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(q[muxPrefixBytes:])
	f.Add([]byte{0})
	f.Add([]byte{3, 'n', '1'})
	f.Fuzz(func(t *testing.T, p []byte) {
		sid, err := readConfigID(bytes.NewReader(p))
		if err != nil {
			return
		}
		q, err := encodeConfigQuestion(7, sid)
		if err != nil || !bytes.Equal(q[muxPrefixBytes:], p[:1+len(sid)]) {
			t.Errorf("id %q from %x encodes to %x, %v", sid, p, q, err)
		}
	})
}
