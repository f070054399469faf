// Package layercheck keeps the module's layers where docs/ARCHITECTURE.md
// draws them: its test reads the import graph (go list) and fails when a
// package imports a layer above its own, or when hashicorp/raft is imported
// anywhere but raftnode. It has no code of its own.
package layercheck
