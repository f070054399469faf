// This file mixes webhook registrations and delivery cursors into the
// generated histories (gen.hooks), and proves that replicas applying them
// agree: results, digests and restores from a snapshot, with registrations
// added, retried, refused and deleted, and cursors moved, held back and
// forgotten. Webhook commands are admin commands and cursors leader-issued,
// like a catalog group's; the state machine applies them in any group.
package fsm

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

var genWebhooks = []string{"wh_a", "wh_b", "wh_c", "kafka:bookings"}

// hookCommand returns a webhook registration, deletion or cursor command.
func (g *gen) hookCommand() *ledgerpb.Command {
	id := g.pick(genWebhooks)
	switch p := g.ch.intn(10); {
	case p < 4:
		urls := []string{"https://backend.example.com/h", "http://10.0.0.7:8080/in", "ftp://nope", ""}
		secrets := []string{"0123456789abcdef", "short", "a-much-longer-secret-for-signing"}
		var events []ledgerpb.WebhookEventType
		for range g.ch.intn(3) {
			events = append(events, ledgerpb.WebhookEventType(g.ch.intn(9)))
		}
		return g.remember(cmdWebhook(g.request(), &ledgerpb.WebhookCmd{Op: &ledgerpb.WebhookCmd_Add{Add: &ledgerpb.WebhookAddCmd{
			WebhookId: id, Url: g.pick(urls), Secret: g.pick(secrets), Events: events}}}))
	case p < 6:
		return g.remember(cmdWebhook(g.request(), &ledgerpb.WebhookCmd{Op: &ledgerpb.WebhookCmd_Delete{Delete: &ledgerpb.WebhookDeleteCmd{WebhookId: id}}}))
	default:
		var cursors []*ledgerpb.WebhookCursor
		for range 1 + g.ch.intn(3) {
			// Revisions near the log's head, behind it and (rarely) ahead of it.
			rev := g.next - uint64(g.ch.intn(int(min(g.next, 40))))
			if g.ch.intn(8) == 0 {
				rev = g.next + uint64(g.ch.intn(100))
			}
			cursors = append(cursors, &ledgerpb.WebhookCursor{SinkId: g.pick(genWebhooks), Revision: rev, AppliedAtMs: g.at - int64(g.ch.intn(5000))})
		}
		return cmdCursor(cursors...)
	}
}

func TestDeterminismWebhooks(t *testing.T) {
	seed := testSeed(t)
	for run := range 4 {
		g := newGen(randChooser{rand.New(rand.NewPCG(seed, 91+uint64(run)))})
		g.hooks = true
		a := newTestMachine(t, newTestDB(t), 7)
		b := newTestMachine(t, newTestDB(t), 7)
		c := newTestMachine(t, newTestDB(t), 7)
		feed(t, g, 200, a, b)
		if err := c.Restore(bytes.NewReader(snapshotBytes(t, a))); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		feed(t, g, 200, a, b, c)
		if g.hooksAdded == 0 {
			t.Fatalf("run %d registered no webhook: the generator does not reach them", run)
		}
	}
}
