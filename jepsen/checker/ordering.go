package checker

import (
	"fmt"
	"sort"

	"github.com/seatledger/seatledger/jepsen/history"
)

// groupStepsMax bounds the search for an order of the ops that share one
// revision (one raft entry). Past it the replay gives up on the show.
const groupStepsMax = 20000

// opPos is an op's place in log order: writes applied at revision r sit at
// 2r, reads at revision r at 2r+1 (after the entry's writes, before the
// next entry's). 0 when unknown.
func opPos(l *lop) uint64 {
	if l.Revision == 0 {
		return 0
	}
	if l.Kind == history.KindRead || l.Kind == history.KindGetHold || l.Kind == history.KindQueueEntry {
		return 2*l.Revision + 1
	}
	return 2 * l.Revision
}

// checkRealTime checks that an op that returned before another was called
// is no later in log order (revision) or log time (clock). ops are one
// show's logical ops.
func checkRealTime(show string, ops []*lop, rep *reporter) {
	var def []*lop
	for _, l := range ops {
		if l.Outcome != history.Info && !l.echo && (l.Revision != 0 || l.AppliedAtMs != 0) {
			def = append(def, l)
		}
	}
	byRet := append([]*lop(nil), def...)
	sort.Slice(byRet, func(i, j int) bool { return byRet[i].Return < byRet[j].Return })
	byCall := append([]*lop(nil), def...)
	sort.Slice(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	var maxPos, maxClock *lop
	k := 0
	for _, b := range byCall {
		for ; k < len(byRet) && byRet[k].Return < b.Call; k++ {
			a := byRet[k]
			if opPos(a) != 0 && (maxPos == nil || opPos(a) > opPos(maxPos)) {
				maxPos = a
			}
			if a.AppliedAtMs != 0 && (maxClock == nil || a.AppliedAtMs > maxClock.AppliedAtMs) {
				maxClock = a
			}
		}
		switch {
		case maxPos != nil && opPos(b) != 0 && opPos(b) < opPos(maxPos):
			rep.violation("ordering", show, []int{maxPos.ID, b.ID}, "%s: op %d (%s) was called after op %d (%s) returned at revision %d, yet it %s at revision %d",
				staleWord(b), b.ID, b.Kind, maxPos.ID, maxPos.Kind, maxPos.Revision, appliedWord(b), b.Revision)
		case maxClock != nil && b.AppliedAtMs != 0 && b.AppliedAtMs < maxClock.AppliedAtMs:
			rep.violation("ordering", show, []int{maxClock.ID, b.ID}, "%s: op %d (%s) was called after op %d (%s) returned at log clock %d, yet it %s at log clock %d",
				staleWord(b), b.ID, b.Kind, maxClock.ID, maxClock.Kind, maxClock.AppliedAtMs, appliedWord(b), b.AppliedAtMs)
		}
	}
}

func staleWord(l *lop) string {
	if l.Kind == history.KindRead || l.Kind == history.KindGetHold {
		return "stale read"
	}
	return "log order against real time"
}

func appliedWord(l *lop) string {
	if l.Kind == history.KindRead || l.Kind == history.KindGetHold {
		return "read"
	}
	return "was applied"
}

// replayResult is the outcome of a revision replay of one show.
type replayResult struct {
	unknown string // why the replay could not decide, if it could not
	stuck   int64  // the return time of the op it rejected, if it did
}

// replay runs a show's definite ops through the model in revision order and
// reports the first op the model rejects. Ops sharing a revision are tried
// in the orders the model accepts. Info ops only add possibilities, from
// the first revision they could have been applied at.
func (sm *showModel) replay(ops []*lop, rep *reporter) replayResult {
	var def, info []*mop
	for _, m := range sm.ops {
		switch {
		case m.outcome == history.Info:
			info = append(info, m)
		case m.pos != 0:
			def = append(def, m)
		case m.outcome == history.OK && mutating(m.kind):
			return replayResult{unknown: fmt.Sprintf("op %d (%s) is acknowledged without a revision", m.l.ID, m.kind)}
		}
	}
	sort.SliceStable(def, func(i, j int) bool { return def[i].pos < def[j].pos })
	keys := sm.infoKeys(ops, info)
	s := sm.init()
	next := 0 // next info op to apply
	for i := 0; i < len(def); {
		j := i
		for j < len(def) && def[j].pos == def[i].pos {
			j++
		}
		for ; next < len(info) && keys[next] <= def[i].pos; next++ {
			s, _ = sm.step(s, info[next], true)
		}
		end, stuck, why, exhausted := sm.orderGroup(s, def[i:j])
		switch {
		case exhausted:
			return replayResult{unknown: fmt.Sprintf("too many orders of the %d ops at revision %d", j-i, def[i].pos/2)}
		case end == nil:
			rep.violation("ordering", sm.name, stuck.l.ids, "revision replay: op %d (%s %s) at revision %d is impossible: %s",
				stuck.l.ID, stuck.kind, answerString(&stuck.l.Op), stuck.pos/2, why)
			return replayResult{stuck: stuck.ret}
		}
		s = end
		i = j
	}
	return replayResult{}
}

// infoKeys sorts info ops by the earliest position they could have taken
// effect at and returns those positions: after the revision of every op
// that returned before the info op was called, and after the hold it names.
func (sm *showModel) infoKeys(ops []*lop, info []*mop) []uint64 {
	byRet := make([]*lop, 0, len(ops))
	for _, l := range ops {
		if l.Outcome != history.Info && l.Revision != 0 {
			byRet = append(byRet, l)
		}
	}
	sort.Slice(byRet, func(i, j int) bool { return byRet[i].Return < byRet[j].Return })
	prefixMax := make([]uint64, len(byRet))
	var mx uint64
	for i, l := range byRet {
		mx = max(mx, l.Revision)
		prefixMax[i] = mx
	}
	keys := make(map[*mop]uint64, len(info))
	for _, m := range info {
		n := sort.Search(len(byRet), func(i int) bool { return byRet[i].Return >= m.call })
		var r uint64
		if n > 0 {
			r = prefixMax[n-1]
		}
		if m.kind != history.KindHold && m.slot >= 0 {
			if h := sm.slots[m.slot].op; h != nil && h.l.Revision != 0 {
				r = max(r, h.l.Revision)
			}
		}
		keys[m] = 2 * (r + 1)
	}
	sort.SliceStable(info, func(i, j int) bool { return keys[info[i]] < keys[info[j]] })
	out := make([]uint64, len(info))
	for i, m := range info {
		out[i] = keys[m]
	}
	return out
}

// orderGroup finds an order in which the model accepts every op of one
// revision, trying call order first. It returns the state after them, or nil
// with the op that could not be placed in the deepest attempt and why.
// exhausted means the search gave up.
func (sm *showModel) orderGroup(s *state, ops []*mop) (end *state, stuck *mop, why string, exhausted bool) {
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].call < ops[j].call })
	if ops[0].pos%2 == 1 {
		// Reads change nothing but the bounds they narrow, and narrowing only
		// removes states no read accepts: any order decides the same.
		for _, o := range ops {
			next, w := sm.step(s, o, true)
			if next == nil {
				return nil, o, w, false
			}
			s = next
		}
		return s, nil, "", false
	}
	used := make([]bool, len(ops))
	failed := map[string][]*state{} // (used set, state hash) already known to fail
	steps, deepest := 0, -1
	var dfs func(s *state, depth int) *state
	dfs = func(s *state, depth int) *state {
		if depth == len(ops) {
			return s
		}
		key := fmt.Sprint(used, s.hash())
		for _, f := range failed[key] {
			if f.equal(s) {
				return nil
			}
		}
		for i, o := range ops {
			if used[i] || exhausted {
				continue
			}
			if steps++; steps > groupStepsMax {
				exhausted = true
				return nil
			}
			next, w := sm.step(s, o, true)
			if next == nil {
				if depth > deepest {
					deepest, stuck, why = depth, o, w
				}
				continue
			}
			used[i] = true
			r := dfs(next, depth+1)
			used[i] = false
			if r != nil {
				return r
			}
		}
		failed[key] = append(failed[key], s)
		return nil
	}
	end = dfs(s, 0)
	return end, stuck, why, exhausted
}
