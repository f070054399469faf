// This file proves nothing by itself: it builds the seatd binary that the
// end-to-end tests start as real processes, once for the whole package
// instead of once per test (each build links the whole server).
package main

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/internal/proccluster"
)

// seatdBuild is the package's one build of ./cmd/seatd.
var seatdBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// seatdBinary returns the path of a seatd built from this checkout, building
// it on first use.
func seatdBinary(t *testing.T) string {
	t.Helper()
	seatdBuild.once.Do(func() {
		seatdBuild.dir, seatdBuild.err = os.MkdirTemp("", "seatctl-e2e-bin-")
		if seatdBuild.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		seatdBuild.path = filepath.Join(seatdBuild.dir, "seatd")
		seatdBuild.err = proccluster.Build(ctx, seatdBuild.path)
	})
	if seatdBuild.err != nil {
		t.Fatalf("build seatd: %v", seatdBuild.err)
	}
	return seatdBuild.path
}

// startCluster starts a cluster of real seatd processes in dir for an
// end-to-end test and stops it when the test ends: cfg's binary is this
// package's build, and unset nodes and groups default to 3 and e2eGroups.
func startCluster(t *testing.T, ctx context.Context, dir string, cfg proccluster.Config) *proccluster.Cluster {
	t.Helper()
	cfg.Binary, cfg.Dir = seatdBinary(t), dir
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Groups == 0 {
		cfg.Groups = e2eGroups
	}
	// One ticket key for every node, as a real cluster has: seatctl asks
	// any node for the public key of a ticket another node signed.
	key := filepath.Join(dir, "ticket.key")
	if err := os.WriteFile(key, []byte(base64.RawURLEncoding.EncodeToString(gateway.NewTicketKey().Seed())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Args = append(cfg.Args, "--ticket-key", key)
	c, err := proccluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMain removes the built binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if seatdBuild.dir != "" {
		os.RemoveAll(seatdBuild.dir)
	}
	os.Exit(code)
}
