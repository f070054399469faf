// This file proves --peers parsing: well-formed lists parse, anything else
// is a clear error and never a panic (fuzzed).
package main

import (
	"strings"
	"testing"
)

func TestParsePeers(t *testing.T) {
	peers, err := parsePeers("n1=127.0.0.1:7001/127.0.0.1:9001, n2=h:1/h:2")
	if err != nil || len(peers) != 2 || peers[1].ID != "n2" || peers[1].RaftAddr != "h:1" || peers[1].GRPCAddr != "h:2" {
		t.Fatalf("parsePeers = %+v, %v", peers, err)
	}
	for _, bad := range []string{"", "n1", "n1=a", "=a/b", "n1=/b", "n1=a/", "n1=a/b,"} {
		if _, err := parsePeers(bad); err == nil {
			t.Errorf("parsePeers(%q) succeeded, want an error", bad)
		}
	}
}

func FuzzParsePeers(f *testing.F) {
	f.Add("n1=127.0.0.1:7001/127.0.0.1:9001,n2=a/b")
	f.Add("=/,")
	f.Fuzz(func(t *testing.T, s string) {
		peers, err := parsePeers(s)
		if err != nil {
			return
		}
		for _, p := range peers {
			if p.ID == "" || p.RaftAddr == "" || p.GRPCAddr == "" || strings.Contains(p.ID, ",") {
				t.Fatalf("parsePeers(%q) accepted %+v", s, p)
			}
		}
	})
}

func TestApplyDial(t *testing.T) {
	peers, _ := parsePeers("n1=a:1/a:2,n2=b:1/b:2")
	got, err := applyDial(peers, "n2=p:1/p:2")
	if err != nil || got[1].RaftTarget() != "p:1" || got[1].GRPCTarget() != "p:2" || got[1].RaftAddr != "b:1" || got[0].RaftTarget() != "a:1" {
		t.Fatalf("applyDial = %+v, %v", got, err)
	}
	if _, err := applyDial(peers, "n9=p:1/p:2"); err == nil {
		t.Error("applyDial(unknown node) succeeded, want an error")
	}
}
