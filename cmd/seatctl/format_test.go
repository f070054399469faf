// This file proves seatctl's pure parts without a cluster: the cluster view
// picks the right leader and configuration and shows down and missing
// replicas with their lag; the digest judge calls a divergence at any shared
// index, a match only when every configured replica was seen at one index,
// and otherwise not converged; a removal that would break a quorum is
// refused; the seat map and status tables draw as documented; show files
// parse from YAML and JSON strictly; errors read as one line with their
// reason; and the command line exits 2 for usage errors and 1 for failures.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func info(id string) *ledgerpb.NodeInfo {
	st := ledgerpb.NodeState_NODE_STATE_ACTIVE
	if id == "n3" {
		st = ledgerpb.NodeState_NODE_STATE_DRAINING
	}
	return &ledgerpb.NodeInfo{Id: id, RaftAddr: "r-" + id, GrpcAddr: "g-" + id, State: st}
}

func gs(group uint32, state, leader string, term, applied uint64, replicas ...string) *ledgerpb.GroupStatus {
	return &ledgerpb.GroupStatus{Group: group, State: state, LeaderId: leader, Term: term,
		CommitIndex: applied, AppliedIndex: applied, Replicas: replicas, RangeStart: group << 28, RangeEnd: group<<28 | 0x0fffffff}
}

func up(id string, groups ...*ledgerpb.GroupStatus) nodeAnswer {
	return nodeAnswer{info: info(id), resp: &ledgerpb.StatusResponse{NodeId: id, Version: "v1", Groups: groups}}
}

func down(id string) nodeAnswer {
	return nodeAnswer{info: info(id), err: status.Error(codes.Unavailable, "connection refused")}
}

func TestBuildView(t *testing.T) {
	all := []string{"n1", "n2", "n3"}
	tests := []struct {
		name       string
		answers    []nodeAnswer
		wantLeader string
		wantTerm   uint64
		wantStates string // node:state:lag, in node order
	}{
		{"all up", []nodeAnswer{
			up("n1", gs(0, "Leader", "n1", 2, 10, all...)),
			up("n2", gs(0, "Follower", "n1", 2, 8, all...)),
			up("n3", gs(0, "Follower", "n1", 2, 10, all...)),
		}, "n1", 2, "n1:Leader:0 n2:Follower:2 n3:Follower:0"},
		{"node down", []nodeAnswer{
			up("n1", gs(0, "Follower", "n2", 3, 7, all...)),
			up("n2", gs(0, "Leader", "n2", 3, 7, all...)),
			down("n3"),
		}, "n2", 3, "n1:Follower:0 n2:Leader:0 n3:down:0"},
		{"stale leader at an old term loses", []nodeAnswer{
			up("n1", gs(0, "Leader", "n1", 2, 5, all...)),
			up("n2", gs(0, "Leader", "n2", 3, 6, all...)),
			up("n3", gs(0, "Follower", "n2", 3, 6, all...)),
		}, "n2", 3, "n1:Leader:1 n2:Leader:0 n3:Follower:0"},
		{"leader down: named by the replicas", []nodeAnswer{
			down("n1"),
			up("n2", gs(0, "Follower", "n1", 4, 9, all...)),
			up("n3", gs(0, "Follower", "n1", 4, 9, all...)),
		}, "n1", 4, "n1:down:0 n2:Follower:0 n3:Follower:0"},
		{"configured but not hosted", []nodeAnswer{
			up("n1", gs(0, "Leader", "n1", 1, 3, all...)),
			up("n2", gs(0, "Follower", "n1", 1, 3, all...)),
			up("n3"),
		}, "n1", 1, "n1:Leader:0 n2:Follower:0 n3:absent:0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := buildView(tt.answers)
			if len(v.Nodes) != 3 || len(v.Groups) != 1 {
				t.Fatalf("view has %d nodes, %d groups; want 3, 1", len(v.Nodes), len(v.Groups))
			}
			g := v.Groups[0]
			var states []string
			for _, r := range g.Reports {
				states = append(states, r.Node+":"+r.State+":"+fmt.Sprint(r.Lag))
			}
			if g.Leader != tt.wantLeader || g.Term != tt.wantTerm || strings.Join(states, " ") != tt.wantStates {
				t.Errorf("group = leader %q term %d reports %q; want %q %d %q",
					g.Leader, g.Term, strings.Join(states, " "), tt.wantLeader, tt.wantTerm, tt.wantStates)
			}
			if !slices.Equal(g.Replicas, all) {
				t.Errorf("replicas = %v, want %v", g.Replicas, all)
			}
		})
	}
}

func TestWriteStatusAndShards(t *testing.T) {
	v := buildView([]nodeAnswer{
		up("n1", gs(1, "Leader", "n1", 2, 10, "n1", "n2", "n3"), gs(0, "Follower", "n2", 2, 4, "n1", "n2", "n3")),
		up("n2", gs(1, "Follower", "n1", 2, 9, "n1", "n2", "n3"), gs(0, "Leader", "n2", 2, 4, "n1", "n2", "n3")),
		down("n3"),
	})
	var b bytes.Buffer
	writeStatus(&b, v)
	out := b.String()
	for _, want := range []string{
		"n3    r-n3       g-n3       draining  down",
		"n1    r-n1       g-n1       active    up      v1",
		"0      00000000-0fffffff  n2      2     n1,n2,n3  n1       Follower  4       4        0",
		"                                                n3       down      -       -        -",
		"1      10000000-1fffffff  n1      2     n1,n2,n3  n1       Leader    10      10       0",
		"                                                n2       Follower  9       9        1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	writeShards(&b, shardRows(v))
	want := "RANGE              GROUP  REPLICAS  LEADER\n" +
		"00000000-0fffffff  0      n1,n2,n3  n2\n" +
		"10000000-1fffffff  1      n1,n2,n3  n1\n"
	if b.String() != want {
		t.Errorf("shards =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestJudgeDigests(t *testing.T) {
	g := func(reports ...replicaView) groupView {
		return groupView{Group: 1, Replicas: []string{"n1", "n2", "n3"}, Reports: reports}
	}
	r := func(node string, idx uint64, digest string) replicaView {
		return replicaView{Node: node, Reported: true, DigestIndex: idx, Digest: digest}
	}
	missing := replicaView{Node: "n3", State: "down"}
	tests := []struct {
		name       string
		group      groupView
		polls      [][]replicaView // earlier polls, then the group's own reports
		wantResult string
		wantIndex  uint64
		wantNote   string
	}{
		{"equal at one index", g(r("n1", 5, "aa"), r("n2", 5, "aa"), r("n3", 5, "aa")), nil, digestOK, 5, ""},
		{"different at one index", g(r("n1", 5, "aa"), r("n2", 5, "bb"), r("n3", 5, "aa")), nil, digestDiverged, 5, "n1=aa n2=bb n3=aa"},
		{"different indexes", g(r("n1", 6, "cc"), r("n2", 5, "aa"), r("n3", 6, "cc")), nil, digestNotConverged, 0, "n1@6 n2@5 n3@6"},
		{"matched across polls",
			g(r("n1", 7, "dd"), r("n2", 6, "cc"), r("n3", 7, "dd")),
			[][]replicaView{{r("n1", 6, "cc"), r("n3", 6, "cc")}}, digestOK, 6, ""},
		{"diverged in an earlier poll",
			g(r("n1", 7, "dd"), r("n2", 7, "dd"), r("n3", 7, "dd")),
			[][]replicaView{{r("n1", 6, "cc"), r("n2", 6, "xx")}}, digestDiverged, 6, "n1=cc n2=xx"},
		{"a replica down is not compared", g(r("n1", 5, "aa"), r("n2", 5, "aa"), missing), nil, digestOK, 5, "n3 not compared"},
		{"not configured is ignored",
			groupView{Group: 1, Replicas: []string{"n1", "n2"}, Reports: []replicaView{r("n1", 5, "aa"), r("n2", 5, "aa"), r("n3", 3, "zz")}},
			nil, digestOK, 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := digestsSeen{}
			for _, p := range tt.polls {
				seen.add(clusterView{Groups: []groupView{{Group: 1, Reports: p}}})
			}
			seen.add(clusterView{Groups: []groupView{tt.group}})
			d := judgeDigests(tt.group, seen[1])
			if d.Result != tt.wantResult || d.Index != tt.wantIndex || !strings.Contains(d.Note, tt.wantNote) {
				t.Errorf("judgeDigests = %s at %d (%q), want %s at %d (note with %q)",
					d.Result, d.Index, d.Note, tt.wantResult, tt.wantIndex, tt.wantNote)
			}
		})
	}
}

func TestCheckRemoval(t *testing.T) {
	isUp := func(ids ...string) func(string) bool {
		return func(id string) bool { return slices.Contains(ids, id) }
	}
	tests := []struct {
		name     string
		replicas []string
		node     string
		up       func(string) bool
		wantErr  string
	}{
		{"healthy group", []string{"n1", "n2", "n3"}, "n3", isUp("n1", "n2", "n3"), ""},
		{"removing the dead one", []string{"n1", "n2", "n3"}, "n3", isUp("n1", "n2"), ""},
		{"removing a live one while another is down", []string{"n1", "n2", "n3"}, "n1", isUp("n1", "n2"), "below its quorum of 2"},
		{"after adding a fourth", []string{"n1", "n2", "n3", "n4"}, "n1", isUp("n1", "n2", "n3", "n4"), ""},
		{"only replica", []string{"n1"}, "n1", isUp("n1"), "only replica"},
		{"not a member", []string{"n1", "n2"}, "n3", isUp(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRemoval(1, tt.replicas, tt.node, tt.up)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("checkRemoval(%v, %s) = %v, want error containing %q", tt.replicas, tt.node, err, tt.wantErr)
			}
		})
	}
}

func TestNumberHeader(t *testing.T) {
	tests := []struct {
		width uint32
		want  []string
	}{
		{3, []string{"123"}},
		{12, []string{"         111", "123456789012"}},
		{101, []string{strings.Repeat(" ", 99) + "11", strings.Repeat(" ", 9) + tens(101), units(101)}},
	}
	for _, tt := range tests {
		if got := numberHeader(tt.width); !slices.Equal(got, tt.want) {
			t.Errorf("numberHeader(%d) =\n%q\nwant\n%q", tt.width, got, tt.want)
		}
	}
}

// tens and units spell the expected header lines digit by digit.
func tens(width int) string {
	var b strings.Builder
	for n := 10; n <= width; n++ {
		b.WriteByte(byte('0' + n/10%10))
	}
	return b.String()
}

func units(width int) string {
	var b strings.Builder
	for n := 1; n <= width; n++ {
		b.WriteByte(byte('0' + n%10))
	}
	return b.String()
}

func TestDrawSeatMap(t *testing.T) {
	seat := func(row string, n uint32, s ledgerpb.SeatState) *ledgerpb.Seat {
		return &ledgerpb.Seat{Row: row, Number: n, State: s}
	}
	var seats []*ledgerpb.Seat
	for n := uint32(1); n <= 12; n++ {
		st := ledgerpb.SeatState_FREE
		switch n {
		case 3, 4:
			st = ledgerpb.SeatState_HELD
		case 11:
			st = ledgerpb.SeatState_BOOKED
		}
		seats = append(seats, seat("A", n, st))
	}
	for n := uint32(1); n <= 5; n++ {
		seats = append(seats, seat("BB", n, ledgerpb.SeatState_FREE))
	}
	sm := &ledgerpb.SeatMap{ShowId: "demo", Title: "Demo", Seats: seats, Free: 14, Held: 2, Booked: 1, Revision: 42}
	var b bytes.Buffer
	drawSeatMap(&b, sm)
	want := `show demo "Demo"  revision 42  (linearizable)
             111
    123456789012
A   ..hh......X.
BB  .....
free 14  held 2  booked 1    (. free  h held  X booked)
`
	if b.String() != want {
		t.Errorf("drawSeatMap =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestParseShow(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
		want    string // show_id/rows/first price
	}{
		{"yaml", "show_id: s1\ntitle: T\nrows:\n  - {name: A, seats: 20, category: std}\ncategories:\n  - {name: std, price_minor: 1200, currency: EUR}\n", "", "s1/1/1200"},
		{"json", `{"show_id":"s2","rows":[{"name":"A","seats":5},{"name":"B","seats":5}],"categories":[{"name":"std","price_minor":"900"}]}`, "", "s2/2/900"},
		{"POST body", `{"show": {"show_id": "s3", "rows": [{"name": "A", "seats": 1}], "categories": [{"name": "c", "price_minor": 1}]}}`, "", "s3/1/1"},
		{"lowerCamel", "showId: s4\nrows: [{name: A, seats: 1}]\ncategories: [{name: c, priceMinor: 7}]\n", "", "s4/1/7"},
		{"unknown field", "show_id: s5\nrowz: []\n", "unknown field", ""},
		{"not an object", "- a\n- b\n", "want a show object", ""},
		{"no show_id", "title: T\n", "show_id is missing", ""},
		{"bad yaml", "show_id: [\n", "not YAML or JSON", ""},
		{"float seats", "show_id: s6\nrows: [{name: A, seats: 1.5}]\n", "not a show", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			show, err := parseShow([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseShow = %v, %v; want error containing %q", show, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseShow: %v", err)
			}
			got := show.ShowId + "/" + fmt.Sprint(len(show.Rows)) + "/"
			if len(show.Categories) > 0 {
				got += fmt.Sprint(show.Categories[0].PriceMinor)
			}
			if got != tt.want {
				t.Errorf("parseShow = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestTTLSeconds(t *testing.T) {
	tests := []struct {
		in      time.Duration
		want    uint32
		wantErr bool
	}{
		{0, 0, false},
		{90 * time.Second, 90, false},
		{1500 * time.Millisecond, 2, false},
		{-time.Second, 0, true},
	}
	for _, tt := range tests {
		got, err := ttlSeconds(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ttlSeconds(%v) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestDescribe(t *testing.T) {
	taken, _ := status.New(codes.Aborted, "seats taken").WithDetails(
		&errdetails.ErrorInfo{Reason: "SEATS_TAKEN", Domain: "seatledger"},
		&ledgerpb.ErrorDetail{TakenSeatIds: []string{"A1", "A2"}})
	notLeader, _ := status.New(codes.Unavailable, "call the leader").WithDetails(
		&errdetails.ErrorInfo{Reason: "NOT_LEADER"}, &ledgerpb.ErrorDetail{LeaderHint: "n2"})
	tests := []struct {
		err       error
		want      string
		retryable bool
	}{
		{taken.Err(), "SEATS_TAKEN: seats taken (taken A1,A2)", false},
		{notLeader.Err(), "NOT_LEADER: call the leader (leader n2)", true},
		{status.Error(codes.DeadlineExceeded, "slow"), "DEADLINE_EXCEEDED: slow", true},
		{status.Error(codes.FailedPrecondition, "no"), "FAILED_PRECONDITION: no", false},
		{errors.New("two\nlines"), "two lines", false},
		{errNoLeader, "no leader known", true},
		{fmt.Errorf("%w: FAILED_PRECONDITION: n2 did not answer", errRemovalUnconfirmed),
			"no leader confirmed the removal yet: FAILED_PRECONDITION: n2 did not answer", true},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`),
			"UNAVAILABLE: dial tcp 127.0.0.1:1: connect: connection refused", true},
	}
	for _, tt := range tests {
		if got := describe(tt.err); got != tt.want || retryable(tt.err) != tt.retryable {
			t.Errorf("describe(%v) = %q (retryable %v), want %q (%v)", tt.err, got, retryable(tt.err), tt.want, tt.retryable)
		}
	}
}

// TestExitStatus runs the command line in-process: usage errors exit 2,
// a cluster that does not answer exits 1, and SEATCTL_ENDPOINTS is used
// when --endpoints is not given.
func TestExitStatus(t *testing.T) {
	const dead = "127.0.0.1:1" // nothing listens on port 1
	tests := []struct {
		args     []string
		env      string
		want     int
		wantErr  string
		wantOut  string
		oneLiner bool
	}{
		{[]string{"--help"}, "", exitOK, "", "seatctl operates", false},
		{[]string{}, "", exitOK, "", "Available Commands", false},
		{[]string{"bogus"}, "", exitUsage, `unknown command "bogus"`, "", true},
		{[]string{"group", "bogus"}, "", exitUsage, `unknown command "bogus" for "seatctl group"`, "", true},
		{[]string{"group", "add-replica", "1"}, "", exitUsage, "takes GROUP NODE, got 1", "", true},
		{[]string{"leader", "transfer", "x"}, "", exitUsage, "GROUP must be a group number", "", true},
		{[]string{"status", "-o", "yaml"}, "", exitUsage, "-o/-w must be table or json", "", true},
		{[]string{"status", "-w", "yaml"}, "", exitUsage, "-o/-w must be table or json, not \"yaml\"", "", true},
		{[]string{"status", "--write-out=yaml"}, "", exitUsage, "-o/-w must be table or json", "", true},
		{[]string{"status", "--nope"}, "", exitUsage, "unknown flag: --nope", "", true},
		{[]string{"confirm", "s", "h"}, "", exitUsage, "needs --token and --payment-ref", "", true},
		{[]string{"release", "s", "h"}, "", exitUsage, "needs --token", "", true},
		{[]string{"hold", "s", "A1", "--ttl", "-1s"}, "", exitUsage, "--ttl must not be negative", "", true},
		{[]string{"status", "--endpoints", dead, "--timeout", "2s"}, "", exitFailure, "no endpoint answered Status: " + dead, "", true},
		{[]string{"status", "--timeout", "2s"}, dead, exitFailure, "no endpoint answered Status: " + dead, "", true},
		{[]string{"show", "create", "/nonexistent.yaml"}, dead, exitFailure, "no such file", "", true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := func(k string) string {
				if k == endpointsEnv {
					return tt.env
				}
				return ""
			}
			got := run(context.Background(), tt.args, &out, &errOut, env)
			if got != tt.want || !strings.Contains(errOut.String(), tt.wantErr) || !strings.Contains(out.String(), tt.wantOut) {
				t.Fatalf("seatctl %v = exit %d, stderr %q, stdout %.80q; want exit %d, stderr with %q, stdout with %q",
					tt.args, got, errOut.String(), out.String(), tt.want, tt.wantErr, tt.wantOut)
			}
			if tt.oneLiner && strings.Count(errOut.String(), "\n") != 1 {
				t.Errorf("stderr is not one line: %q", errOut.String())
			}
		})
	}
}
