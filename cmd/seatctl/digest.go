package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Digest check results.
const (
	digestOK           = "OK"
	digestDiverged     = "DIVERGED"
	digestNotConverged = "NOT-CONVERGED"
)

// digestShown is how many hex digits of a digest a table shows.
const digestShown = 16

func newCheckCmd(a *app) *cobra.Command {
	digest := &cobra.Command{
		Use:   "digest",
		Short: "Compare every group's state digest across its replicas at the same applied index",
		Long: `digest asks every node for Status with digests and compares, per group, the
digests of replicas at the same applied index. While replicas are at different
indexes it polls again, for up to --timeout, keeping every digest it saw.

  OK             every replica reported the same digest at one index
  DIVERGED       two replicas hold different state at the same index: S6 is broken (exit 1)
  NOT-CONVERGED  the replicas were never seen at one index (exit 1)`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			verdicts, err := a.checkDigests(c.Context())
			if err != nil {
				return err
			}
			if a.json() {
				err = writeJSON(a.out, verdicts)
			} else {
				writeDigests(a.out, verdicts)
			}
			if err != nil {
				return err
			}
			return a.digestOutcome(verdicts)
		},
	}
	return parentCmd("check", "Verify the cluster's replicas", digest)
}

// digestVerdict is the result of one group's digest check.
type digestVerdict struct {
	Group  uint32 `json:"group"`
	Result string `json:"result"`
	// Index is where the replicas were compared (OK) or differ (DIVERGED).
	Index  uint64 `json:"index,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Replicas are the replicas compared: the configured ones that answered.
	Replicas []string `json:"replicas"`
	Note     string   `json:"note,omitempty"`
}

// digestsSeen keeps every digest a check saw: group -> index -> node ->
// digest. Replicas under load rarely stop at one index together; two polls
// that catch them at the same index are as good as one.
type digestsSeen map[uint32]map[uint64]map[string]string

// add records the digests of one poll.
func (s digestsSeen) add(v clusterView) {
	for _, g := range v.Groups {
		for _, r := range g.Reports {
			if !r.Reported || r.Digest == "" {
				continue
			}
			if s[g.Group] == nil {
				s[g.Group] = map[uint64]map[string]string{}
			}
			if s[g.Group][r.DigestIndex] == nil {
				s[g.Group][r.DigestIndex] = map[string]string{}
			}
			s[g.Group][r.DigestIndex][r.Node] = r.Digest
		}
	}
}

// checkDigests polls until every group is OK or DIVERGED, or --timeout.
func (a *app) checkDigests(ctx context.Context) ([]digestVerdict, error) {
	deadline := time.Now().Add(a.timeout)
	seen := digestsSeen{}
	for {
		v, err := a.pollView(ctx, true)
		if err != nil {
			return nil, err
		}
		seen.add(v)
		var verdicts []digestVerdict
		settled := true
		for _, g := range v.Groups {
			d := judgeDigests(g, seen[g.Group])
			settled = settled && d.Result != digestNotConverged
			verdicts = append(verdicts, d)
		}
		if settled || time.Now().Add(retryPause).After(deadline) {
			return verdicts, nil
		}
		if err := sleepCtx(ctx, retryPause); err != nil {
			return nil, err
		}
	}
}

// judgeDigests decides one group from its latest view and every digest
// seen: any index with two different digests is a divergence; an index at
// which every configured replica that answered reported is a match.
func judgeDigests(g groupView, seen map[uint64]map[string]string) digestVerdict {
	d := digestVerdict{Group: g.Group, Replicas: []string{}}
	var missing []string
	latest := map[string]uint64{}
	for _, r := range g.Reports {
		configured := len(g.Replicas) == 0 || slices.Contains(g.Replicas, r.Node)
		switch {
		case !configured:
		case r.Reported && r.Digest != "":
			d.Replicas = append(d.Replicas, r.Node)
			latest[r.Node] = r.DigestIndex
		default:
			missing = append(missing, r.Node)
		}
	}
	if len(missing) > 0 {
		d.Note = strings.Join(missing, ",") + " not compared (no answer)"
	}
	indexes := slices.Sorted(maps.Keys(seen))
	for _, idx := range indexes {
		if digests := seen[idx]; distinct(digests) > 1 {
			d.Result, d.Index, d.Note = digestDiverged, idx, "different state at one index: "+pairs(digests)
			return d
		}
	}
	if len(d.Replicas) == 0 {
		d.Result, d.Note = digestNotConverged, "no configured replica reported a digest"
		return d
	}
	for _, idx := range slices.Backward(indexes) {
		digests := seen[idx]
		if hasAll(digests, d.Replicas) {
			d.Result, d.Index, d.Digest = digestOK, idx, digests[d.Replicas[0]]
			return d
		}
	}
	d.Result = digestNotConverged
	var at []string
	for _, id := range d.Replicas {
		at = append(at, fmt.Sprintf("%s@%d", id, latest[id]))
	}
	d.Note = strings.TrimPrefix(d.Note+"; never at one index: "+strings.Join(at, " "), "; ")
	return d
}

// distinct counts the different digests.
func distinct(digests map[string]string) int {
	set := map[string]bool{}
	for _, v := range digests {
		set[v] = true
	}
	return len(set)
}

// hasAll reports whether every node reported at this index.
func hasAll(digests map[string]string, nodes []string) bool {
	for _, n := range nodes {
		if _, ok := digests[n]; !ok {
			return false
		}
	}
	return true
}

// pairs prints node=digest (shortened) in node order.
func pairs(digests map[string]string) string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(digests)) {
		out = append(out, n+"="+short(digests[n]))
	}
	return strings.Join(out, " ")
}

// short shortens a digest for a table.
func short(digest string) string {
	if len(digest) > digestShown {
		return digest[:digestShown]
	}
	return digest
}

// writeDigests prints one line per group.
func writeDigests(w io.Writer, verdicts []digestVerdict) {
	t := newTable(w)
	t.row("GROUP", "RESULT", "INDEX", "DIGEST", "REPLICAS", "NOTE")
	for _, d := range verdicts {
		index := "-"
		if d.Result != digestNotConverged {
			index = fmt.Sprint(d.Index)
		}
		t.row(fmt.Sprint(d.Group), d.Result, index, dash(short(d.Digest)), dash(strings.Join(d.Replicas, ",")), dash(d.Note))
	}
	t.flush()
}

// digestOutcome fails the command for any group not OK, and shouts on
// stderr about a divergence: replicas that applied the same log to
// different states break the ledger's promise (S6).
func (a *app) digestOutcome(verdicts []digestVerdict) error {
	var diverged, notConverged []string
	for _, d := range verdicts {
		switch d.Result {
		case digestDiverged:
			diverged = append(diverged, fmt.Sprint(d.Group))
			fmt.Fprintf(a.errOut, "!!! DIVERGED: group %d: replicas hold DIFFERENT STATE at applied index %d (%s). "+
				"Invariant S6 is broken: keep the nodes' data directories for investigation.\n", d.Group, d.Index, d.Note)
		case digestNotConverged:
			notConverged = append(notConverged, fmt.Sprint(d.Group))
		}
	}
	switch {
	case len(diverged) > 0:
		return fmt.Errorf("check digest: group(s) %s DIVERGED", strings.Join(diverged, ","))
	case len(notConverged) > 0:
		return fmt.Errorf("check digest: group(s) %s NOT-CONVERGED within %v (replicas kept moving or did not answer); run it again when writes pause",
			strings.Join(notConverged, ","), a.timeout)
	}
	return nil
}
