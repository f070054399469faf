package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
)

// The dev cluster's layout: where its three nodes listen for raft and for
// each other's gRPC calls. The cluster registers these addresses in its
// replicated node registry at its first start, and every node then dials
// its peers at the registered addresses, so a restart must listen on the
// same ones. The first start picks free loopback ports and saves them in
// DATA_DIR/devLayoutFile; every later start binds exactly those, and says
// so clearly if one is taken. The addresses a user sees (--http, --grpc)
// are not part of the layout: n1 serves them on listeners of their own, so
// they may change from one run to the next.

// devLayoutFile is the layout's name inside the dev data directory.
const devLayoutFile = "dev-cluster.json"

// devLayout is the saved layout, one entry per node in node order.
type devLayout struct {
	Nodes []devNodeAddrs `json:"nodes"`
}

// devNodeAddrs is one node's internal addresses.
type devNodeAddrs struct {
	ID   string `json:"id"`
	Raft string `json:"raft"`
	GRPC string `json:"grpc"`
}

// errDevLayoutMissing: a data directory with node data but no layout, made
// by a seatd dev that did not save one.
var errDevLayoutMissing = errors.New("the data directory has node data but no " + devLayoutFile)

// loadDevLayout reads the saved layout: ok is false on a first start (no
// layout and no node data).
func loadDevLayout(dataDir string) (l devLayout, ok bool, err error) {
	path := filepath.Join(dataDir, devLayoutFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(filepath.Join(dataDir, "n1")); serr == nil {
			return devLayout{}, false, fmt.Errorf("%w: it was made by an earlier seatd dev, whose nodes' addresses are lost; delete %s or use another --data-dir", errDevLayoutMissing, dataDir)
		}
		return devLayout{}, false, nil
	}
	if err != nil {
		return devLayout{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return devLayout{}, false, fmt.Errorf("%s: %w", path, err)
	}
	if len(l.Nodes) != devNodes {
		return devLayout{}, false, fmt.Errorf("%s lists %d nodes, want %d", path, len(l.Nodes), devNodes)
	}
	for i, n := range l.Nodes {
		if n.ID != devNodeID(i) || n.Raft == "" || n.GRPC == "" {
			return devLayout{}, false, fmt.Errorf("%s: node %d is %+v, want id %s with raft and gRPC addresses", path, i, n, devNodeID(i))
		}
	}
	return l, true, nil
}

// saveDevLayout writes the layout atomically (temporary file, fsync,
// rename): a torn layout would strand the data directory.
func saveDevLayout(dataDir string, l devLayout) error {
	if err := saveJSON(filepath.Join(dataDir, devLayoutFile), l); err != nil {
		return fmt.Errorf("save layout: %w", err)
	}
	return nil
}

// devNodeID names the dev cluster's node i.
func devNodeID(i int) string { return fmt.Sprintf("n%d", i+1) }

// devListeners binds every node's raft and gRPC listener: the saved
// layout's addresses, or on a first start free loopback ports, which it
// saves. On error nothing stays bound.
func devListeners(dataDir string) (raftLns, grpcLns []net.Listener, err error) {
	layout, saved, err := loadDevLayout(dataDir)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			closeAll(append(raftLns, grpcLns...))
			raftLns, grpcLns = nil, nil
		}
	}()
	for i := range devNodes {
		raftAddr, grpcAddr := "127.0.0.1:0", "127.0.0.1:0"
		if saved {
			raftAddr, grpcAddr = layout.Nodes[i].Raft, layout.Nodes[i].GRPC
		}
		rl, err := devListen(devNodeID(i), "raft", raftAddr, saved)
		if err != nil {
			return raftLns, grpcLns, err
		}
		raftLns = append(raftLns, rl)
		gl, err := devListen(devNodeID(i), "gRPC", grpcAddr, saved)
		if err != nil {
			return raftLns, grpcLns, err
		}
		grpcLns = append(grpcLns, gl)
	}
	if saved {
		return raftLns, grpcLns, nil
	}
	for i := range devNodes {
		layout.Nodes = append(layout.Nodes, devNodeAddrs{ID: devNodeID(i), Raft: raftLns[i].Addr().String(), GRPC: grpcLns[i].Addr().String()})
	}
	return raftLns, grpcLns, saveDevLayout(dataDir, layout)
}

// devListen binds one internal address; a saved one that is taken is an
// error that says what to do.
func devListen(id, what, addr string, saved bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if saved {
		return nil, fmt.Errorf("node %s's %s address %s (saved in %s at the first start; the cluster's node registry names it) cannot be bound: %w; stop whatever holds it (an earlier seatd dev still running?), or start over with another --data-dir",
			id, what, addr, devLayoutFile, err)
	}
	return nil, fmt.Errorf("listen for node %s's %s: %w", id, what, err)
}

func closeAll(lns []net.Listener) {
	for _, l := range lns {
		if l != nil {
			l.Close()
		}
	}
}

// saveJSON writes v as indented JSON to path atomically: a temporary file,
// fsync, rename, so that a crash leaves the old file or the new one.
func saveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	return err
}
