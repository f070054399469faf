package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// stepTimeout bounds one membership step with its retries.
const stepTimeout = 15 * time.Second

// moveReplica changes one random group's membership during load, the way an
// operator would (raftnode/membership.go): with a node that does not host
// the group, it moves a replica there (host, add, remove, drop); when every
// node hosts it (3 nodes), it replaces a replica in place (remove, drop,
// host afresh, add). It returns what it did, for the history.
func (n *nemesis) moveReplica(ctx context.Context) string {
	group := uint32(n.rng.IntN(n.tc.cfg.Groups))
	hosts, _ := n.hosts(ctx, group)
	if len(hosts) == 0 {
		return fmt.Sprintf("group %d: no replica answers", group)
	}
	var spare []string
	for _, id := range n.tc.ids() {
		if !slices.Contains(hosts, id) && n.tc.procs.Running(id) && !slices.Contains(n.dead, id) {
			spare = append(spare, id)
		}
	}
	from := n.pick(hosts)
	if len(spare) > 0 {
		to := n.pick(spare)
		err := n.steps(ctx, group,
			func(ctx context.Context) error { return n.host(ctx, to, group) },
			func(ctx context.Context) error { return n.voter(ctx, group, to, true) },
			func(ctx context.Context) error { return n.voter(ctx, group, from, false) },
			n.drop(from, group))
		return fmt.Sprintf("group %d: move %s -> %s: %s", group, from, to, errText(err))
	}
	err := n.steps(ctx, group,
		func(ctx context.Context) error { return n.voter(ctx, group, from, false) },
		n.drop(from, group),
		func(ctx context.Context) error { return n.host(ctx, from, group) },
		func(ctx context.Context) error { return n.voter(ctx, group, from, true) })
	return fmt.Sprintf("group %d: replace %s in place: %s", group, from, errText(err))
}

func errText(err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	return "ok"
}

// steps runs each step, retrying it until it succeeds or stepTimeout.
func (n *nemesis) steps(ctx context.Context, group uint32, steps ...func(context.Context) error) error {
	for i, step := range steps {
		deadline := time.Now().Add(stepTimeout)
		for {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			err := step(cctx)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("step %d: %v", i+1, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// hosts lists the running nodes hosting group and its leader ("" if none).
func (n *nemesis) hosts(ctx context.Context, group uint32) ([]string, string) {
	var hosts []string
	leader := ""
	for _, id := range n.tc.ids() {
		st := n.tc.status(ctx, id, false)
		if st == nil {
			continue
		}
		for _, g := range st.Groups {
			if g.Group == group {
				hosts = append(hosts, id)
				if g.State == "Leader" {
					leader = id
				}
			}
		}
	}
	return hosts, leader
}

func (n *nemesis) host(ctx context.Context, id string, group uint32) error {
	_, err := n.tc.admin[id].HostGroup(ctx, &ledgerpb.GroupRequest{Group: group})
	if reasonOf(err) == "FAILED_PRECONDITION" {
		return nil // hosted already (an earlier attempt went through)
	}
	return err
}

// drop returns the step that drops a replica the leader has removed. It
// asks without force, as seatctl does: the node checks with the group's
// leader that the removal committed. Only when no leader confirmed it
// within half a step's time (a partition may cut the node off from every
// leader) does it force, as seatctl --force-drop does once RemoveVoter was
// acknowledged, which the step before made sure of.
func (n *nemesis) drop(id string, group uint32) func(context.Context) error {
	var start time.Time // the step's first try
	return func(ctx context.Context) error {
		if start.IsZero() {
			start = time.Now()
		}
		force := time.Since(start) > stepTimeout/2
		_, err := n.tc.admin[id].DropGroup(ctx, &ledgerpb.GroupRequest{Group: group, Force: force})
		if reasonOf(err) == "NOT_FOUND" {
			return nil // dropped already
		}
		return err
	}
}

// voter adds or removes node id on the group's current leader.
func (n *nemesis) voter(ctx context.Context, group uint32, id string, add bool) error {
	_, leader := n.hosts(ctx, group)
	if leader == "" {
		return fmt.Errorf("group %d has no leader", group)
	}
	req := &ledgerpb.VoterRequest{Group: group, Node: id}
	var err error
	if add {
		_, err = n.tc.admin[leader].AddVoter(ctx, req)
	} else {
		_, err = n.tc.admin[leader].RemoveVoter(ctx, req)
	}
	return err
}
