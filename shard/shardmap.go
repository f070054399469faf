// Package shard maps shows to raft groups and routes each request to its
// group's leader, on this node or forwarded to another over gRPC.
package shard

import (
	"fmt"
	"hash/fnv"
)

// Map is the shard map: show_id is hashed to a point in a fixed 32-bit space,
// which is split into Groups equal ranges, one per raft group.
type Map struct {
	Groups uint32
}

// GroupsDefault is the default number of groups.
const GroupsDefault = 8

// GroupsMax bounds the groups of a cluster.
const GroupsMax = 1024

// Validate reports a map that cannot route.
func (m Map) Validate() error {
	if m.Groups < 1 || m.Groups > GroupsMax {
		return fmt.Errorf("shard: groups must be in 1..%d, not %d", GroupsMax, m.Groups)
	}
	return nil
}

// Point hashes a show id into the range space: FNV-1a 64 with the
// splitmix64 finalizer, whose high bits are well mixed even for ids that
// differ in one trailing character, where plain FNV-1a 32 leaves groups
// visibly uneven (docs/PERFORMANCE.md). Changing it moves shows between
// groups: it is part of the on-disk format.
func Point(showID string) uint32 {
	h := fnv.New64a()
	h.Write([]byte(showID))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return uint32(x >> 32)
}

// GroupFor returns the group whose range holds the show.
func (m Map) GroupFor(showID string) uint32 {
	return uint32(uint64(Point(showID)) * uint64(m.Groups) >> 32)
}

// Range returns the [lo, hi] points of a group's range.
func (m Map) Range(group uint32) (lo, hi uint32) {
	lo = uint32((uint64(group)<<32 + uint64(m.Groups) - 1) / uint64(m.Groups))
	hi = uint32((uint64(group+1)<<32+uint64(m.Groups)-1)/uint64(m.Groups) - 1)
	return lo, hi
}

// Placement puts replicas of each group on consecutive nodes, starting at a
// different node per group, so that replicas (and, after elections, leaders)
// spread evenly.
func Placement(groups uint32, nodes []string, replicas int) map[uint32][]string {
	replicas = min(replicas, len(nodes))
	out := make(map[uint32][]string, groups)
	for g := uint32(0); g < groups; g++ {
		for i := 0; i < replicas; i++ {
			out[g] = append(out[g], nodes[(int(g)+i)%len(nodes)])
		}
	}
	return out
}

// CatalogKey is the reserved key whose group holds the whole catalog (the
// catalog group): Map.GroupFor(CatalogKey). It is hashed like a show id, so
// the catalog shares its group with the shows that hash there; their keys
// never meet (fsm/doc.go). Changing it moves the catalog: it is part of the
// on-disk format.
const CatalogKey = "catalog"

// CatalogGroup returns the catalog group.
func (m Map) CatalogGroup() uint32 { return m.GroupFor(CatalogKey) }
