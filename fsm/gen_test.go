// This file proves nothing by itself: it generates random but plausible
// entries for the model, determinism and fuzz tests — few shows, clients and
// seats so that holds collide; reused request ids so that retries and
// REQUEST_ID_REUSED happen; clocks that advance irregularly, sometimes go
// backwards and sometimes jump past the exactly-once horizon; Expire entries
// and batches. A chooser drives every choice, so the same generator runs from
// math/rand/v2 or from a fuzzer's bytes.
package fsm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// chooser picks a number in [0, n).
type chooser interface {
	intn(n int) int
}

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

// byteChooser reads choices from fuzz input; once the input is used up every
// choice is 0.
type byteChooser struct {
	b []byte
	i int
}

func (c *byteChooser) intn(n int) int {
	if n <= 1 {
		return 0
	}
	var v int
	for k := 0; k < 2 && c.i < len(c.b); k++ {
		v = v<<8 | int(c.b[c.i])
		c.i++
	}
	return v % n
}

func (c *byteChooser) done() bool { return c.i >= len(c.b) }

// genLayouts are the shows the generator creates; "s3" is never created.
var genLayouts = map[string]*ledgerpb.Show{
	"s1": testShow("s1", "A:4:std,B:4:vip", "std:1000:EUR,vip:2500:EUR"),
	"s2": testShow("s2", "A:3:std,B:5:vip", "std:700:USD,vip:1500:USD"),
}

var (
	genShows   = []string{"s1", "s1", "s2", "s2", "s3"}
	genClients = []string{"c1", "c2", "c3"}
	genSeats   = []string{"A1", "A2", "A3", "A4", "B1", "B2", "B3", "B4", "B5"}
	genUnknown = []string{"C1", "A9", "A0", "B6"}
	genTTLs    = []int64{0, 0, 1000, 1500, 2500, 5000, 60000, HoldTTLMaxMs}
)

// genHold is a hold the generator has seen created.
type genHold struct{ id, show, client string }

// gen is the generator's memory of one sequence.
type gen struct {
	ch      chooser
	at      int64 // proposed_at of the last entry
	next    uint64
	reqSeq  int
	history []*ledgerpb.Command // client commands, for retries and reuse
	holds   []genHold
	entries []genHold // queue entries seen (id, show, client)
	// wild lets a fuzzer reach the edges: arbitrary bytes in seat ids,
	// negative Expire bounds and clocks near the end of int64.
	wild bool
	// rooms mixes in waiting-room commands (waitroom_gen_test.go); off,
	// the sequences are what they were before rooms existed.
	rooms     bool
	roomEntry []genHold // room entries seen (id, show, client)
	// hooks mixes in webhook registrations and delivery cursors
	// (webhook_gen_test.go); hooksAdded counts the registrations applied.
	hooks      bool
	hooksAdded int
}

func newGen(ch chooser) *gen { return &gen{ch: ch, at: 1_000_000, next: 1} }

func (g *gen) pick(xs []string) string { return xs[g.ch.intn(len(xs))] }

// entry returns the next entry's index and command.
func (g *gen) entry() (uint64, *ledgerpb.Command) {
	g.advanceClock()
	index := g.next
	g.next++
	var cmd *ledgerpb.Command
	if index == 1 {
		cmd = g.createShow("s1") // most sequences need a show
		if g.wild {
			cmd = cmdBatch(cmd, g.createShow("s2"))
		}
	} else if g.ch.intn(5) == 0 {
		n := 2 + g.ch.intn(5)
		inner := make([]*ledgerpb.Command, 0, n)
		retryable := false
		for range n {
			if retryable && g.ch.intn(6) == 0 {
				// Two identical requests in one batch.
				inner = append(inner, proto.Clone(inner[len(inner)-1]).(*ledgerpb.Command))
				continue
			}
			var c *ledgerpb.Command
			c, retryable = g.command()
			inner = append(inner, c)
		}
		cmd = cmdBatch(inner...)
	} else {
		cmd, _ = g.command()
	}
	cmd.ProposedAtMs = g.at
	return index, cmd
}

func (g *gen) advanceClock() {
	if g.wild && g.ch.intn(64) == 63 {
		g.at = math.MaxInt64 - int64(g.ch.intn(1<<20))
		return
	}
	switch p := g.ch.intn(100); {
	case p < 10:
	case p < 65:
		g.at += 1 + int64(g.ch.intn(3000))
	case p < 82:
		g.at += 3000 + int64(g.ch.intn(400_000))
	case p < 92:
		g.at -= 1 + int64(g.ch.intn(5000)) // a new leader with a slower clock
	case p < 94:
		g.at += RequestRetentionMs + int64(g.ch.intn(2*60*60*1000))
	default:
		g.at += int64(g.ch.intn(200))
	}
}

func (g *gen) request() string {
	g.reqSeq++
	return fmt.Sprintf("r%d", g.reqSeq)
}

// command returns one client command or an Expire, and whether it may be
// sent again as a retry.
func (g *gen) command() (*ledgerpb.Command, bool) {
	if g.rooms && g.ch.intn(4) == 0 {
		return g.roomCommand(), true
	}
	if g.hooks && g.ch.intn(6) == 0 {
		return g.hookCommand(), true
	}
	p := g.ch.intn(100)
	switch {
	case p < 30:
		return g.remember(g.hold(g.pick(genClients), g.request())), true
	case p < 38:
		return g.remember(g.best(g.pick(genClients), g.request())), true
	case p < 50:
		return g.remember(g.confirmOrRelease(true)), true
	case p < 60:
		return g.remember(g.confirmOrRelease(false)), true
	case p < 64 && len(g.entries) > 0 && g.ch.intn(3) == 0:
		return g.remember(g.leave()), true
	case p < 64:
		return g.remember(g.extendOrRefund(g.ch.intn(2) == 0)), true
	case p < 72:
		limits := []uint32{0, 1, 2, 3, 8}
		upto := max(0, g.at+int64(g.ch.intn(10_000))-5000)
		if g.wild && g.ch.intn(16) == 15 {
			upto = -int64(g.ch.intn(1 << 20))
		}
		return cmdExpire(upto, limits[g.ch.intn(len(limits))]), true
	case p < 76:
		return g.remember(g.createShow(g.pick(genShows))), true
	case p < 88 && len(g.history) > 0:
		// A retry: the same request again, byte for byte.
		return proto.Clone(g.history[g.ch.intn(len(g.history))]).(*ledgerpb.Command), true
	case p < 94 && len(g.history) > 0:
		// Reuse: another request under an old (client, request) pair. It
		// may happen to equal the old one, which makes it a retry.
		old := g.history[g.ch.intn(len(g.history))]
		c := g.hold(old.ClientId, old.RequestId)
		if g.ch.intn(2) == 0 {
			c = g.confirmOrRelease(g.ch.intn(2) == 0)
			c.ClientId, c.RequestId = old.ClientId, old.RequestId
		}
		return c, true
	default:
		c := g.invalid()
		if len(g.history) > 0 && g.ch.intn(3) == 0 && c.ClientId != "" && c.RequestId != "" {
			// An invalid payload under an id already used.
			old := g.history[g.ch.intn(len(g.history))]
			c.ClientId, c.RequestId = old.ClientId, old.RequestId
		}
		return g.remember(c), true
	}
}

func (g *gen) remember(c *ledgerpb.Command) *ledgerpb.Command {
	if g.ch.intn(4) == 0 {
		// A client that states its first send, mostly recent; its retries
		// (clones) state the same, and may come past the horizon.
		c.FirstSentAtMs = max(1, g.at-int64(g.ch.intn(2*FirstSentAheadMaxMs))+FirstSentAheadMaxMs/2)
	}
	g.history = append(g.history, c)
	return c
}

func (g *gen) createShow(id string) *ledgerpb.Command {
	show, ok := genLayouts[id]
	if !ok {
		show = testShow(id, "A:2:std", "std:100:EUR")
	}
	return cmdShow("admin", g.request(), proto.Clone(show).(*ledgerpb.Show))
}

func (g *gen) hold(client, request string) *ledgerpb.Command {
	n := 1 + g.ch.intn(4)
	seen := map[string]bool{}
	var seats []string
	for range n {
		s := g.pick(genSeats)
		if g.ch.intn(20) == 0 {
			s = g.pick(genUnknown)
		}
		if !seen[s] {
			seen[s] = true
			seats = append(seats, s)
		}
	}
	if g.wild && g.ch.intn(4) == 3 {
		seats[g.ch.intn(len(seats))] = g.rawSeat() // one odd seat id among plausible ones
	}
	ttl := genTTLs[g.ch.intn(len(genTTLs))]
	return cmdHold(client, request, g.pick(genShows), ttl, seats...)
}

// rawSeat is a seat id the fuzzer shapes: usually a row-like part, maybe a
// sign or separator, and a number-like part; sometimes 1..8 bytes of any
// printable ASCII (a decoded entry never carries invalid UTF-8: proto3
// rejects it).
func (g *gen) rawSeat() string {
	if g.ch.intn(4) == 3 {
		b := make([]byte, 1+g.ch.intn(SeatIDLenMax))
		for i := range b {
			b[i] = byte(' ' + g.ch.intn(95))
		}
		return string(b)
	}
	var b []byte
	for range g.ch.intn(4) {
		b = append(b, "ABa"[g.ch.intn(3)])
	}
	if c := g.ch.intn(8); c < 5 {
		b = append(b, "+-0 _"[c])
	}
	for range g.ch.intn(4) {
		b = append(b, "0123456789123451234512345"[g.ch.intn(25)])
	}
	return string(b)
}

// best asks for 1..4 best available seats, sometimes of a category (one
// the generated shows lack among them).
func (g *gen) best(client, request string) *ledgerpb.Command {
	cat := g.pick([]string{"", "", "std", "vip", "balcony"})
	c := cmdBest(client, request, g.pick(genShows), genTTLs[g.ch.intn(len(genTTLs))], uint32(1+g.ch.intn(4)), cat)
	c.GetHold().Wait = g.ch.intn(2) == 0
	return c
}

// leave takes a known queue entry out, usually by its owner with its token.
func (g *gen) leave() *ledgerpb.Command {
	e := g.entries[g.ch.intn(len(g.entries))]
	client, token := e.client, queueToken(nil, e.id)
	if g.ch.intn(6) == 0 {
		client = g.pick(genClients)
	}
	if g.ch.intn(8) == 0 {
		token = queueToken(nil, "q0-1-0")
	}
	return &ledgerpb.Command{ClientId: client, RequestId: g.request(),
		Op: &ledgerpb.Command_LeaveQueue{LeaveQueue: &ledgerpb.LeaveQueueCmd{ShowId: e.show, EntryId: e.id, QueueToken: token}}}
}

// extendOrRefund names a known hold like confirmOrRelease.
func (g *gen) extendOrRefund(extend bool) *ledgerpb.Command {
	c := g.confirmOrRelease(true)
	cf := c.GetConfirm()
	if extend {
		c.Op = &ledgerpb.Command_Extend{Extend: &ledgerpb.ExtendCmd{ShowId: cf.ShowId, HoldId: cf.HoldId,
			HoldToken: cf.HoldToken, TtlMs: genTTLs[g.ch.intn(len(genTTLs))]}}
	} else {
		c.Op = &ledgerpb.Command_Refund{Refund: &ledgerpb.RefundCmd{ShowId: cf.ShowId, HoldId: cf.HoldId,
			HoldToken: cf.HoldToken, Reason: g.pick([]string{"", "changed plans"})}}
	}
	return c
}

// confirmOrRelease names a known hold, usually with its own show and client
// and the hold's token.
func (g *gen) confirmOrRelease(confirm bool) *ledgerpb.Command {
	h := genHold{id: fmt.Sprintf("h0-%d-0", g.ch.intn(int(g.next)+1)), show: g.pick(genShows), client: g.pick(genClients)}
	if len(g.holds) > 0 && g.ch.intn(10) < 8 {
		h = g.holds[g.ch.intn(len(g.holds))]
	}
	client, show := h.client, h.show
	if g.ch.intn(5) == 0 {
		client = g.pick(genClients)
	}
	if g.ch.intn(8) == 0 {
		show = g.pick(genShows)
	}
	var c *ledgerpb.Command
	if confirm {
		c = cmdConfirm(client, g.request(), show, h.id, g.pick([]string{"p1", "p2"}))
	} else {
		c = cmdRelease(client, g.request(), show, h.id)
	}
	if g.ch.intn(12) == 0 {
		// Another hold's token, or none at all.
		token := g.pick([]string{testToken("h0-1-0"), ""})
		if cf := c.GetConfirm(); cf != nil {
			cf.HoldToken = token
		} else {
			c.GetRelease().HoldToken = token
		}
	}
	return c
}

// invalid returns a command with one field out of its limits (or without
// an identity).
func (g *gen) invalid() *ledgerpb.Command {
	switch g.ch.intn(9) {
	case 0:
		return cmdHold(g.pick(genClients), g.request(), "s1", 0)
	case 1:
		return cmdHold(g.pick(genClients), g.request(), "s1", 0, "A1", "B1", "C1", "D1", "E1", "F1", "G1", "H1", "I1", "J1", "K1")
	case 2:
		return cmdHold(g.pick(genClients), g.request(), "s1", 0, "A1", "A1")
	case 3:
		return cmdHold(g.pick(genClients), g.request(), "s1", 500, "A1")
	case 4:
		return cmdConfirm(g.pick(genClients), g.request(), "s1", "h0-1-0", "")
	case 5:
		return cmdRelease(g.pick(genClients), g.request(), "s1", "")
	case 6:
		return cmdShow("admin", g.request(), &ledgerpb.Show{ShowId: "s1", Categories: genLayouts["s1"].Categories})
	case 7:
		return cmdHold("", g.request(), "s1", 0, "A1")
	default:
		return cmdRelease(g.pick(genClients), "", "s1", "h0-1-0")
	}
}

// observe learns the holds an entry created.
func (g *gen) observe(cmd *ledgerpb.Command, res []*ledgerpb.Result) {
	inner := []*ledgerpb.Command{cmd}
	if b := cmd.GetBatch(); b != nil {
		inner = b.Commands
	}
	for i, r := range res {
		if i < len(inner) && inner[i].GetHold() != nil && r.Code == ledgerpb.Code_CODE_QUEUED && !r.Replayed {
			g.entries = append(g.entries, genHold{id: r.QueueEntryId, show: inner[i].GetHold().ShowId, client: inner[i].ClientId})
		}
		if i < len(inner) && inner[i].GetJoinRoom() != nil && r.RoomEntry != nil && !r.Replayed {
			g.roomEntry = append(g.roomEntry, genHold{id: r.RoomEntry.EntryId, show: inner[i].GetJoinRoom().ShowId, client: inner[i].ClientId})
		}
		if i < len(inner) && inner[i].GetWebhook().GetAdd() != nil && r.Code == ledgerpb.Code_CODE_OK && !r.Replayed {
			g.hooksAdded++
		}
		if i < len(inner) && inner[i].GetHold() != nil && r.Code == ledgerpb.Code_CODE_OK && !r.Replayed && r.HoldId != "" {
			g.holds = append(g.holds, genHold{id: r.HoldId, show: inner[i].GetHold().ShowId, client: inner[i].ClientId})
		}
	}
}
