package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/seatledger/seatledger/delivery"
	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The webhook registrations' Admin calls (admin.proto, docs/WEBHOOKS.md).
// They change the catalog group's list; every group's leader rereads it
// within delivery.PollIntervalDefault. Secrets go in and never come out.

// webhookAddRequestPrefix keeps a caller's request ids for registrations
// apart from the random ones of the registry's other commands.
const webhookAddRequestPrefix = "webhook-add:"

// AddWebhook registers a URL for events (none listed: all of them).
func (a *Admin) AddWebhook(ctx context.Context, req *ledgerpb.WebhookAddRequest) (*ledgerpb.WebhookResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	// With a request id, the webhook id is derived from it, so a retry
	// proposes the very same command and the ledger replays the first
	// registration (exactly once, like every write); without one, both
	// are random and a retry registers again.
	requestID := ""
	var raw [8]byte
	if req.RequestId != "" {
		if n := fsm.RequestIDLenMax - len(webhookAddRequestPrefix); !fsm.ValidID(req.RequestId, n) {
			return nil, fieldError(&fsm.FieldError{Field: "request_id", Message: fmt.Sprintf("must be 1..%d characters of [A-Za-z0-9._:-]", n)})
		}
		requestID = webhookAddRequestPrefix + req.RequestId
		sum := sha256.Sum256([]byte(requestID))
		copy(raw[:], sum[:])
	} else {
		rand.Read(raw[:])
	}
	add := &ledgerpb.WebhookAddCmd{WebhookId: "wh_" + hex.EncodeToString(raw[:]), Url: req.Url, Secret: req.Secret}
	for i, name := range req.Events {
		t, ok := delivery.ParseType(name)
		if !ok {
			return nil, fieldError(&fsm.FieldError{Field: fmt.Sprintf("events[%d]", i),
				Message: fmt.Sprintf("%q is not an event type: one of %v", name, delivery.TypeNames())})
		}
		add.Events = append(add.Events, t)
	}
	op := &ledgerpb.WebhookCmd{Op: &ledgerpb.WebhookCmd_Add{Add: add}}
	if fe := fsm.ValidateWebhookCmd(op); fe != nil {
		return nil, fieldError(fe)
	}
	res, err := a.proposeWebhook(ctx, requestID, op)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.WebhookResponse{Webhook: webhookInfo(&ledgerpb.WebhookRecord{WebhookId: add.WebhookId, Url: add.Url,
		Events: add.Events, CreatedAtMs: res.AppliedAtMs}), Revision: res.Revision}, nil
}

// ListWebhooks lists the registrations, without their secrets: read at
// the catalog group's leader, so that an operator sees the webhook just
// added.
func (a *Admin) ListWebhooks(ctx context.Context, _ *ledgerpb.WebhookListRequest) (*ledgerpb.WebhookList, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeoutDefault)
	defer cancel()
	recs, rev, err := a.router.Webhooks(ctx, true)
	if err != nil {
		return nil, routeError(err)
	}
	out := &ledgerpb.WebhookList{Revision: rev}
	for _, r := range recs {
		out.Webhooks = append(out.Webhooks, webhookInfo(r))
	}
	return out, nil
}

// DeleteWebhook removes a registration; its deliveries stop within a poll
// interval.
func (a *Admin) DeleteWebhook(ctx context.Context, req *ledgerpb.WebhookDeleteRequest) (*ledgerpb.WebhookResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	op := &ledgerpb.WebhookCmd{Op: &ledgerpb.WebhookCmd_Delete{Delete: &ledgerpb.WebhookDeleteCmd{WebhookId: req.WebhookId}}}
	if fe := fsm.ValidateWebhookCmd(op); fe != nil {
		return nil, fieldError(fe)
	}
	res, err := a.proposeWebhook(ctx, "", op)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.WebhookResponse{Webhook: &ledgerpb.WebhookInfo{WebhookId: req.WebhookId}, Revision: res.Revision}, nil
}

// proposeWebhook applies a registration command in the catalog group under
// a fresh request id, as proposeNode does: the id is new on every call, so
// a caller's retry registers a second webhook only if the first call's
// outcome was unknown, and deleting twice answers WEBHOOK_NOT_FOUND.
func (a *Admin) proposeWebhook(ctx context.Context, requestID string, op *ledgerpb.WebhookCmd) (*ledgerpb.Result, error) {
	if requestID == "" {
		var id [12]byte
		rand.Read(id[:])
		requestID = "webhook-" + hex.EncodeToString(id[:])
	}
	cmd := &ledgerpb.Command{ClientId: registryClient, RequestId: requestID, Op: &ledgerpb.Command_Webhook{Webhook: op}}
	pctx, cancel := context.WithTimeout(ctx, requestTimeoutDefault)
	defer cancel()
	res, err := a.router.ProposeCatalog(pctx, cmd)
	if err != nil {
		return nil, routeError(err)
	}
	if err := resultError(res, opOther); err != nil {
		return nil, err
	}
	return res, nil
}

// webhookInfo is a registration as the API shows it: no secret.
func webhookInfo(r *ledgerpb.WebhookRecord) *ledgerpb.WebhookInfo {
	info := &ledgerpb.WebhookInfo{WebhookId: r.WebhookId, Url: r.Url, CreatedAtMs: r.CreatedAtMs}
	for _, t := range r.Events {
		info.Events = append(info.Events, delivery.TypeName(t))
	}
	return info
}
