package shard

import (
	"context"
	"fmt"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// Webhook registrations live in the catalog group (fsm/webhook.go); every
// group's leader reads them to deliver its shows' events, and the Admin API
// lists them. Both read them as browse reads: within BrowseStalenessMax,
// from any replica, which is fresh enough for a list that changes by hand.

// Webhooks reads the registrations, secrets included: callers that show
// them to people drop the secrets (the gateway does).
func (r *Router) Webhooks(ctx context.Context, linearizable bool) ([]*ledgerpb.WebhookRecord, uint64, error) {
	req := &ledgerpb.ReadRequest{GroupId: r.smap.CatalogGroup(), Kind: ledgerpb.ReadKind_READ_KIND_WEBHOOKS, Linearizable: linearizable}
	resp, err := r.browse(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	if resp.Code != ledgerpb.Code_CODE_OK {
		return nil, 0, fmt.Errorf("%w: webhook read answered %v", raftnode.ErrUnavailable, resp.Code)
	}
	return resp.Webhooks, resp.WebhooksRevision, nil
}

// serveWebhooks is the browse read of the registrations on one view.
func serveWebhooks(v *fsm.View, resp *ledgerpb.ReadResponse) error {
	hooks, err := v.Webhooks()
	if err != nil {
		return err
	}
	resp.Webhooks, resp.WebhooksRevision = hooks, v.Applied()
	return nil
}
