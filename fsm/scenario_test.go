// This file proves the FSM's documented semantics (doc.go) command by
// command: each script under testdata/scenarios drives one Machine on a real
// Pebble database and states the Result every entry must return and the
// state (seat map, hold states, clock, applied index, expiry index, change
// log) that must follow. One script per area: create_show, hold, confirm,
// release, expire, exactly_once, horizon, clock, batch, events.
//
// Script format, one statement per line; '#' starts a comment:
//
//	at <ms>                       proposed_at_ms of the following entries
//	index <n>                     raft index of the next entry (default: last+1)
//	<command> -> <expect>         one entry holding one command
//	batch {                       one entry holding the commands up to '}'
//	  <command> -> <expect>
//	} [-> skipped]
//	seats <show> <seat>=<FREE|HELD|BOOKED>...   seat states via View.SeatMap
//	seats <show> absent           SeatMap returns ErrNotFound
//	counts <show> free=<n> held=<n> booked=<n>
//	holdstate <hold> <HELD|CONFIRMED|EXPIRED|CANCELLED|REFUNDED|absent>   via View.Hold
//	queue <show> <entry> <WAITING|OFFERED|LEFT|absent> [pos=<n>] [ahead=<n>] [hold=<id>] [seats=<s,...>]
//	                              a queue entry via View.QueueEntry
//	clock <ms> | applied <n> | nextexpiry <ms|none>
//	events <show> [after=<n>] <rev>:<seat>=<STATE>,...  ...   every change record
//	                              after n (default 0) via View.SeatEvents
//	events <show> [after=<n>] none | pruned   no record, or ErrEventsPruned
//	eventfloor <n>                View.EventFloor
//
// Commands (a lone '-' is the empty string or the empty list; {N*s} is s
// repeated N times; at=<ms> stamps that one command's proposed_at_ms,
// sent=<ms> its first_sent_at_ms):
//
//	show <client> <request> <show_id> rows=<name:seats:cat,...> cats=<name:price:cur,...> [title=<t>]
//	hold <client> <request> <show_id> <seat,...> [ttl=<ms>]
//	confirm <client> <request> <show_id> <hold_id> pay=<ref>
//	release <client> <request> <show_id> <hold_id>
//	best <client> <request> <show_id> <count> [cat=<category>] [ttl=<ms>] [wait=1]
//	leave <client> <request> <show_id> <entry_id> [token=<t>]
//	extend <client> <request> <show_id> <hold_id> [ttl=<ms>]
//	refund <client> <request> <show_id> <hold_id> [reason=<text>]
//	expire upto=<ms> [limit=<n>]
//
// confirm, release, extend and refund present the hold's token (shows here
// have no token key, so it is HoldToken(nil, hold_id)); token=<t> presents
// another ('-' for none).
//
// Expectations: "skipped" (the entry is at or below the applied index and
// Apply returns nil) or a code without its CODE_ prefix followed by any of
// hold= seats= expires= amount= currency= state= field= expired= revision=
// applied_at= alt= (suggested seats) limit= maxexp= entry= pos= ahead= and
// the flag replayed. replayed is always checked: without the
// flag the result must not be a replay.
package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario scripts under testdata/scenarios (%v)", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runScenario(t, f)
		})
	}
}

// scenario is the state of one script run.
type scenario struct {
	t    *testing.T
	file string
	line int
	m    *Machine
	at   int64
	next uint64
}

// scriptLine is one statement with its line number.
type scriptLine struct {
	n      int
	fields []string
}

func runScenario(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []scriptLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if fields := scriptFields(sc.Text()); len(fields) > 0 {
			lines = append(lines, scriptLine{n: n, fields: fields})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	s := &scenario{t: t, file: filepath.Base(path), m: newTestMachine(t, newTestDB(t), 0), next: 1}
	for i := 0; i < len(lines); i++ {
		s.line = lines[i].n
		if lines[i].fields[0] == "batch" {
			end := i + 1
			for end < len(lines) && lines[end].fields[0] != "}" {
				end++
			}
			if end == len(lines) {
				s.fatalf("batch without closing }")
			}
			s.batch(lines[i], lines[i+1:end], lines[end])
			i = end
			continue
		}
		s.statement(lines[i].fields)
	}
}

var repeatRE = regexp.MustCompile(`\{(\d+)\*([^}]*)\}`)

// scriptFields strips the comment and splits a line into expanded tokens.
func scriptFields(line string) []string {
	if i := strings.Index(line, "#"); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(line)
	for i, f := range fields {
		fields[i] = repeatRE.ReplaceAllStringFunc(f, func(m string) string {
			p := repeatRE.FindStringSubmatch(m)
			n, _ := strconv.Atoi(p[1])
			return strings.Repeat(p[2], n)
		})
	}
	return fields
}

func (s *scenario) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s:%d: %s", s.file, s.line, fmt.Sprintf(format, args...))
}

func (s *scenario) errorf(format string, args ...any) {
	s.t.Helper()
	s.t.Errorf("%s:%d: %s", s.file, s.line, fmt.Sprintf(format, args...))
}

func (s *scenario) statement(f []string) {
	switch f[0] {
	case "at":
		s.at = s.int(f, 1)
	case "index":
		s.next = uint64(s.int(f, 1))
	case "clock":
		if got, want := s.m.Clock(), s.int(f, 1); got != want {
			s.errorf("Clock() = %d, want %d", got, want)
		}
	case "applied":
		if got, want := s.m.Applied(), uint64(s.int(f, 1)); got != want {
			s.errorf("Applied() = %d, want %d", got, want)
		}
	case "seats":
		s.checkSeats(f)
	case "counts":
		s.checkCounts(f)
	case "holdstate":
		s.checkHoldState(f)
	case "queue":
		s.checkQueue(f)
	case "nextexpiry":
		s.checkNextExpiry(f)
	case "events":
		s.checkEvents(f) // events_test.go
	case "eventfloor":
		s.checkEventFloor(f)
	default:
		cmd, want := s.parseEntry(f)
		cmd.ProposedAtMs = s.at
		if v, ok := option(f, "at"); ok {
			cmd.ProposedAtMs = s.parseInt(v)
		}
		s.apply(cmd, []*expect{want})
	}
}

// batch applies one entry holding the commands of lines.
func (s *scenario) batch(open scriptLine, lines []scriptLine, closing scriptLine) {
	b := cmdBatch()
	b.ProposedAtMs = s.at
	if v, ok := option(open.fields, "at"); ok {
		b.ProposedAtMs = s.parseInt(v)
	}
	var wants []*expect
	for _, l := range lines {
		s.line = l.n
		cmd, want := s.parseEntry(l.fields)
		if v, ok := option(l.fields, "at"); ok {
			cmd.ProposedAtMs = s.parseInt(v)
		}
		b.GetBatch().Commands = append(b.GetBatch().Commands, cmd)
		wants = append(wants, want)
	}
	s.line = open.n
	if len(closing.fields) == 3 && closing.fields[1] == "->" && closing.fields[2] == "skipped" {
		wants = []*expect{{skipped: true}}
	}
	s.apply(b, wants)
}

// apply applies cmd at the next index and checks one result per expectation.
func (s *scenario) apply(cmd *ledgerpb.Command, wants []*expect) {
	s.t.Helper()
	index := s.next
	s.next++
	res, err := applyRecover(s.m, index, cmd)
	if err != nil {
		s.fatalf("%s: %v", opName(cmd), err)
	}
	if len(wants) == 1 && wants[0].skipped {
		if res != nil {
			s.errorf("Apply(%d, %s) = %d results, want nil (skipped)", index, opName(cmd), len(res))
		}
		return
	}
	if len(res) != len(wants) {
		s.fatalf("Apply(%d, %s) = %d results, want %d", index, opName(cmd), len(res), len(wants))
	}
	inner := []*ledgerpb.Command{cmd}
	if b := cmd.GetBatch(); b != nil {
		inner = b.Commands
	}
	for i, w := range wants {
		if msg := w.check(res[i]); msg != "" {
			s.errorf("%s = %s, want %s (%s)", opName(inner[i]), resultString(res[i]), w.text, msg)
		}
	}
}

// parseEntry parses "<command> -> <expect>".
func (s *scenario) parseEntry(f []string) (*ledgerpb.Command, *expect) {
	arrow := -1
	for i, x := range f {
		if x == "->" {
			arrow = i
		}
	}
	if arrow < 0 {
		s.fatalf("command without -> expectation")
	}
	cmd, err := parseCommand(f[:arrow])
	if err != nil {
		s.fatalf("%v", err)
	}
	if v, ok := option(f[:arrow], "sent"); ok {
		cmd.FirstSentAtMs = s.parseInt(v)
	}
	want, err := parseExpect(f[arrow+1:])
	if err != nil {
		s.fatalf("%v", err)
	}
	return cmd, want
}

// parseCommand parses a command's tokens; see the file comment.
func parseCommand(f []string) (*ledgerpb.Command, error) {
	pos := positional(f)
	arg := func(i int) string {
		if i >= len(pos) || pos[i] == "-" {
			return ""
		}
		return pos[i]
	}
	need := map[string]int{"show": 4, "hold": 5, "confirm": 5, "release": 5, "expire": 1, "best": 5, "extend": 5, "refund": 5, "leave": 5}
	if n, ok := need[f[0]]; !ok || len(pos) != n {
		return nil, fmt.Errorf("bad command %q: want %d positional fields", strings.Join(f, " "), n)
	}
	switch f[0] {
	case "show":
		rv, _ := option(f, "rows")
		cv, _ := option(f, "cats")
		rows, err := parseRows(rv)
		if err != nil {
			return nil, err
		}
		cats, err := parseCats(cv)
		if err != nil {
			return nil, err
		}
		title, _ := option(f, "title")
		return cmdShow(arg(1), arg(2), &ledgerpb.Show{ShowId: arg(3), Title: title, Rows: rows, Categories: cats}), nil
	case "hold", "best", "extend":
		var ttl int64
		if v, ok := option(f, "ttl"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, err
			}
			ttl = n
		}
		switch f[0] {
		case "hold":
			c := cmdHold(arg(1), arg(2), arg(3), ttl, splitList(pos[4])...)
			c.GetHold().Wait = hasOption(f, "wait", "1")
			return c, nil
		case "extend":
			return withToken(f, cmdExtend(arg(1), arg(2), arg(3), arg(4), ttl)), nil
		}
		n, err := strconv.ParseUint(pos[4], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("best count: %v", err)
		}
		cat, _ := option(f, "cat")
		c := cmdBest(arg(1), arg(2), arg(3), ttl, uint32(n), cat)
		c.GetHold().Wait = hasOption(f, "wait", "1")
		return c, nil
	case "leave":
		token := queueToken(nil, arg(4))
		if t, ok := option(f, "token"); ok {
			token = strings.TrimPrefix(t, "-")
		}
		return &ledgerpb.Command{ClientId: arg(1), RequestId: arg(2), Op: &ledgerpb.Command_LeaveQueue{
			LeaveQueue: &ledgerpb.LeaveQueueCmd{ShowId: arg(3), EntryId: arg(4), QueueToken: token}}}, nil
	case "confirm":
		pay, _ := option(f, "pay")
		if pay == "-" {
			pay = ""
		}
		return withToken(f, cmdConfirm(arg(1), arg(2), arg(3), arg(4), pay)), nil
	case "release":
		return withToken(f, cmdRelease(arg(1), arg(2), arg(3), arg(4))), nil
	case "refund":
		reason, _ := option(f, "reason")
		return withToken(f, cmdRefund(arg(1), arg(2), arg(3), arg(4), reason)), nil
	default: // expire
		uv, _ := option(f, "upto")
		lv, _ := option(f, "limit")
		upto, err := strconv.ParseInt(uv, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("expire upto: %v", err)
		}
		var limit uint64
		if lv != "" {
			if limit, err = strconv.ParseUint(lv, 10, 32); err != nil {
				return nil, fmt.Errorf("expire limit: %v", err)
			}
		}
		return cmdExpire(upto, uint32(limit)), nil
	}
}

// hasOption reports whether f holds key=value.
func hasOption(f []string, key, value string) bool {
	v, ok := option(f, key)
	return ok && v == value
}

// withToken applies a token=<t> option to a command that acts on a hold.
func withToken(f []string, c *ledgerpb.Command) *ledgerpb.Command {
	t, ok := option(f, "token")
	if !ok {
		return c
	}
	if t == "-" {
		t = ""
	}
	switch op := c.Op.(type) {
	case *ledgerpb.Command_Confirm:
		op.Confirm.HoldToken = t
	case *ledgerpb.Command_Release:
		op.Release.HoldToken = t
	case *ledgerpb.Command_Extend:
		op.Extend.HoldToken = t
	case *ledgerpb.Command_Refund:
		op.Refund.HoldToken = t
	}
	return c
}

// positional returns the tokens that are not key=value options.
func positional(f []string) []string {
	var out []string
	for _, x := range f {
		if !strings.Contains(x, "=") {
			out = append(out, x)
		}
	}
	return out
}

// option returns the value of key=value among f.
func option(f []string, key string) (string, bool) {
	for _, x := range f {
		if v, ok := strings.CutPrefix(x, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// expect is the expected Result of one command.
type expect struct {
	text    string
	skipped bool
	code    ledgerpb.Code
	fields  map[string]string
	replay  bool
}

func parseExpect(f []string) (*expect, error) {
	if len(f) == 0 {
		return nil, errors.New("empty expectation")
	}
	e := &expect{text: strings.Join(f, " "), fields: map[string]string{}}
	if f[0] == "skipped" {
		e.skipped = true
		return e, nil
	}
	c, ok := ledgerpb.Code_value["CODE_"+f[0]]
	if !ok {
		return nil, fmt.Errorf("unknown code %q", f[0])
	}
	e.code = ledgerpb.Code(c)
	known := map[string]bool{"hold": true, "seats": true, "expires": true, "amount": true, "currency": true,
		"state": true, "field": true, "expired": true, "revision": true, "applied_at": true,
		"alt": true, "limit": true, "maxexp": true, "entry": true, "pos": true, "ahead": true}
	for _, x := range f[1:] {
		if x == "replayed" {
			e.replay = true
			continue
		}
		k, v, ok := strings.Cut(x, "=")
		if !ok || !known[k] {
			return nil, fmt.Errorf("bad expectation %q", x)
		}
		e.fields[k] = v
	}
	return e, nil
}

// check returns what differs between r and the expectation, or "".
func (e *expect) check(r *ledgerpb.Result) string {
	if e.skipped {
		return "want skipped"
	}
	if r.Code != e.code {
		return "code"
	}
	if r.Replayed != e.replay {
		return fmt.Sprintf("replayed = %v", r.Replayed)
	}
	for k, v := range e.fields {
		var got string
		switch k {
		case "hold":
			got = r.HoldId
		case "seats":
			got = strings.Join(r.SeatIds, ",")
			if v == "-" {
				v = ""
			}
		case "expires":
			got = strconv.FormatInt(r.ExpiresAtMs, 10)
		case "amount":
			got = strconv.FormatInt(r.AmountMinor, 10)
		case "currency":
			got = r.Currency
		case "state":
			got = strings.TrimPrefix(r.HoldState.String(), "HOLD_STATE_")
		case "field":
			got = r.Field
		case "expired":
			got = strconv.FormatUint(uint64(r.Expired), 10)
		case "revision":
			got = strconv.FormatUint(r.Revision, 10)
		case "applied_at":
			got = strconv.FormatInt(r.AppliedAtMs, 10)
		case "alt":
			got = strings.Join(r.AlternativeSeatIds, ",")
			if v == "-" {
				v = ""
			}
		case "limit":
			got = strconv.FormatUint(uint64(r.Limit), 10)
		case "maxexp":
			got = strconv.FormatInt(r.MaxExpiresAtMs, 10)
		case "entry":
			got = r.QueueEntryId
		case "pos":
			got = strconv.FormatUint(uint64(r.QueuePosition), 10)
		case "ahead":
			got = strconv.FormatUint(uint64(r.SeatsAhead), 10)
		}
		if got != v {
			return fmt.Sprintf("%s = %q", k, got)
		}
	}
	return ""
}

func (s *scenario) view() *View {
	s.t.Helper()
	v, err := s.m.View()
	if err != nil {
		s.fatalf("View: %v", err)
	}
	return v
}

func (s *scenario) checkSeats(f []string) {
	if len(f) < 3 {
		s.fatalf("seats needs a show and seat=STATE pairs")
	}
	v := s.view()
	defer v.Close()
	sm, err := v.SeatMap(f[1])
	if len(f) == 3 && f[2] == "absent" {
		if !errors.Is(err, ErrNotFound) {
			s.errorf("SeatMap(%s) error = %v, want ErrNotFound", f[1], err)
		}
		return
	}
	if err != nil {
		s.fatalf("SeatMap(%s): %v", f[1], err)
	}
	got := map[string]string{}
	for _, seat := range sm.Seats {
		got[seat.SeatId] = seat.State.String()
	}
	for _, x := range f[2:] {
		seat, want, ok := strings.Cut(x, "=")
		if !ok {
			s.fatalf("bad seat check %q", x)
		}
		if got[seat] != want {
			s.errorf("SeatMap(%s) seat %s = %s, want %s", f[1], seat, got[seat], want)
		}
	}
}

func (s *scenario) checkCounts(f []string) {
	v := s.view()
	defer v.Close()
	sm, err := v.SeatMap(f[1])
	if err != nil {
		s.fatalf("SeatMap(%s): %v", f[1], err)
	}
	got := map[string]int64{"free": int64(sm.Free), "held": int64(sm.Held), "booked": int64(sm.Booked)}
	for _, x := range f[2:] {
		k, val, _ := strings.Cut(x, "=")
		if want := s.parseInt(val); got[k] != want {
			s.errorf("SeatMap(%s).%s = %d, want %d", f[1], k, got[k], want)
		}
	}
}

func (s *scenario) checkHoldState(f []string) {
	if len(f) != 3 {
		s.fatalf("holdstate needs a hold id and a state")
	}
	v := s.view()
	defer v.Close()
	h, err := v.Hold(f[1])
	if f[2] == "absent" {
		if !errors.Is(err, ErrNotFound) {
			s.errorf("Hold(%s) error = %v, want ErrNotFound", f[1], err)
		}
		return
	}
	if err != nil {
		s.fatalf("Hold(%s): %v", f[1], err)
	}
	if got := strings.TrimPrefix(h.State.String(), "HOLD_STATE_"); got != f[2] {
		s.errorf("Hold(%s).State = %s, want %s", f[1], got, f[2])
	}
}

func (s *scenario) checkNextExpiry(f []string) {
	v := s.view()
	defer v.Close()
	at, ok, err := v.NextExpiry()
	if err != nil {
		s.fatalf("NextExpiry: %v", err)
	}
	got := "none"
	if ok {
		got = strconv.FormatInt(at, 10)
	}
	if got != f[1] {
		s.errorf("NextExpiry() = %s, want %s", got, f[1])
	}
}

func (s *scenario) int(f []string, i int) int64 {
	if i >= len(f) {
		s.fatalf("%s needs a number", f[0])
	}
	return s.parseInt(f[i])
}

func (s *scenario) parseInt(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		s.fatalf("bad number %q", v)
	}
	return n
}

// checkQueue checks a queue entry as its owner reads it.
func (s *scenario) checkQueue(f []string) {
	pos := positional(f)
	if len(pos) != 4 {
		s.fatalf("queue needs a show, an entry and a state")
	}
	v := s.view()
	defer v.Close()
	q, err := v.QueueEntry(pos[1], pos[2], queueToken(nil, pos[2]))
	if pos[3] == "absent" {
		if !errors.Is(err, ErrNotFound) {
			s.errorf("QueueEntry(%s) = %v, want ErrNotFound", pos[2], err)
		}
		return
	}
	if err != nil {
		s.errorf("QueueEntry(%s): %v", pos[2], err)
		return
	}
	if got := strings.TrimPrefix(q.Entry.State.String(), "QUEUE_STATE_"); got != pos[3] {
		s.errorf("QueueEntry(%s).State = %s, want %s", pos[2], got, pos[3])
	}
	for _, o := range f {
		k, want, ok := strings.Cut(o, "=")
		if !ok {
			continue
		}
		var got string
		switch k {
		case "pos":
			got = strconv.Itoa(int(q.Position))
		case "ahead":
			got = strconv.Itoa(int(q.SeatsAhead))
		case "hold":
			got = q.Entry.HoldId
			if q.Hold == nil || q.HoldToken != HoldToken(nil, want) {
				s.errorf("QueueEntry(%s) offers no hold %s with its token", pos[2], want)
			}
		case "seats":
			if q.Hold != nil {
				got = strings.Join(q.Hold.SeatIds, ",")
			}
		default:
			s.fatalf("queue: unknown option %s", k)
		}
		if got != want {
			s.errorf("QueueEntry(%s).%s = %s, want %s", pos[2], k, got, want)
		}
	}
}
