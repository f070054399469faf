// This file proves the module's layering holds in every build (default and
// faults, tests included): dependencies point inward, cmd → gateway → shard
// → raftnode → fsm → proto, and hashicorp/raft is imported by raftnode
// alone, so its types and errors cannot leak into the layers above except
// through raftnode's exported API, which TestRaftnodeAPIHidesRaft checks.
package layercheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/seatledger/seatledger/"

// ranks orders the core layers: a package may import only packages of a
// lower rank, so two of one rank (raftnode and catalog) never import each
// other. Packages not listed (client, internal/*, jepsen/, deploy) are
// outside the chain and not checked here.
var ranks = map[string]int{
	"proto/ledgerpb": 0,
	"fsm":            1,
	"raftnode":       2,
	"catalog":        2,
	"shard":          3,
	"registry":       4,
	"gateway":        5,
	"cmd/seatd":      6,
}

// raftPackages are the packages of hashicorp/raft itself, which only
// raftnode may import.
var raftPackages = []string{"github.com/hashicorp/raft", "github.com/hashicorp/raft-boltdb/v2"}

// graphs memoizes imports by build tags: go list is the slow part.
var graphs sync.Map

// imports lists, for every package that ./... depends on (tests included),
// the module-relative path of the package and its direct imports.
func imports(t *testing.T, tags string) map[string][]string {
	t.Helper()
	if g, ok := graphs.Load(tags); ok {
		return g.(map[string][]string)
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goTool, "list", "-tags", tags, "-deps", "-test", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		// A test variant ("p [p.test]") or test main ("p.test") counts as p.
		pkg := strings.TrimSuffix(strings.TrimPrefix(f[0], module), ".test")
		deps := f[1:]
		if len(deps) > 0 && strings.HasPrefix(deps[0], "[") {
			deps = deps[1:]
		}
		graph[pkg] = append(graph[pkg], deps...)
	}
	graphs.Store(tags, graph)
	return graph
}

func TestDependenciesPointInward(t *testing.T) {
	for _, tags := range []string{"", "faults"} {
		for pkg, deps := range imports(t, tags) {
			rank, ok := ranks[pkg]
			if !ok {
				continue
			}
			for _, d := range deps {
				dr, ok := ranks[strings.TrimPrefix(d, module)]
				if strings.HasPrefix(d, module) && ok && dr >= rank && d != module+pkg {
					t.Errorf("tags %q: %s imports %s, a layer at or above its own", tags, pkg, d)
				}
			}
		}
	}
}

func TestRaftStaysInRaftnode(t *testing.T) {
	for _, tags := range []string{"", "faults"} {
		graph := imports(t, tags)
		if len(graph) == 0 {
			t.Fatal("go list found no package of the module")
		}
		for pkg, deps := range graph {
			if pkg == "raftnode" || pkg == "raftnode_test" {
				continue
			}
			for _, d := range deps {
				if slices.Contains(raftPackages, d) {
					t.Errorf("tags %q: %s imports %s; only raftnode may (use raftnode's Status, TransferLeadership and errors)", tags, pkg, d)
				}
			}
		}
	}
}

// No exported raftnode name may mention a hashicorp/raft type in its
// signature or exported fields: raft's types stay in their room (STYLE 20).
func TestRaftnodeAPIHidesRaft(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "..", "raftnode", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		raftName := importName(f, "github.com/hashicorp/raft")
		if raftName == "" {
			continue
		}
		for _, decl := range f.Decls {
			for name, node := range exported(decl) {
				if mentions(node, raftName) {
					t.Errorf("%s: raftnode's exported %s names a hashicorp/raft type: give the layers above a raftnode type instead",
						fset.Position(node.Pos()), name)
				}
			}
		}
	}
}

// importName is the name a file uses for an import path, "" if none.
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if strings.Trim(imp.Path.Value, `"`) == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}

// exported yields a declaration's exported API: the signatures of
// exported functions and of exported methods of exported types, and the
// exported fields of exported struct types (with their type's name).
func exported(decl ast.Decl) map[string]ast.Node {
	out := map[string]ast.Node{}
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			break
		}
		name := d.Name.Name
		if d.Recv != nil {
			recv := recvName(d.Recv.List[0].Type)
			if !ast.IsExported(recv) {
				break
			}
			name = recv + "." + name
		}
		out[name] = d.Type
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				out[ts.Name.Name] = ts.Type
				continue
			}
			for _, field := range st.Fields.List {
				for _, n := range field.Names {
					if n.IsExported() {
						out[ts.Name.Name+"."+n.Name] = field.Type
					}
				}
			}
		}
	}
	return out
}

// recvName is the type name of a method receiver.
func recvName(e ast.Expr) string {
	switch r := e.(type) {
	case *ast.StarExpr:
		return recvName(r.X)
	case *ast.IndexExpr:
		return recvName(r.X)
	case *ast.Ident:
		return r.Name
	}
	return ""
}

// mentions reports whether node refers to package pkg (pkg.Name).
func mentions(node ast.Node, pkg string) bool {
	found := false
	ast.Inspect(node, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == pkg {
				found = true
			}
		}
		return !found
	})
	return found
}
