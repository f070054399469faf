package client

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc/metadata"
)

// Every write names when its request was first sent, so that a retry the
// ledger can no longer match with its record (past the retry horizon) is
// refused, not run again (docs/API.md, Exactly-once). Invoke
// stamps a write's first attempt and sends the same stamp to every node it
// tries; a caller that retries a request_id over several calls fixes the
// stamp with WithFirstSent, or each call would state a later first send.

// FirstSentKey is the metadata key of a write's first send time (Unix
// milliseconds); over HTTP it is the Seatledger-First-Sent-At header.
const FirstSentKey = "seatledger-first-sent-at"

// WithFirstSent returns ctx stating that the request of the calls made with
// it was first sent at t: pass the same t to every retry of a request_id.
func WithFirstSent(ctx context.Context, t time.Time) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(FirstSentKey, strconv.FormatInt(t.UnixMilli(), 10))
	return metadata.NewOutgoingContext(ctx, md)
}

// FirstSentOf returns the first send time ctx states ("" for none), for a
// caller that speaks HTTP too and sends it as the Seatledger-First-Sent-At
// header.
func FirstSentOf(ctx context.Context) string {
	md, _ := metadata.FromOutgoingContext(ctx)
	if vs := md.Get(FirstSentKey); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// stampFirstSent returns ctx with now as the first send time of a write
// (a call with a request_id) that does not state one yet.
func stampFirstSent(ctx context.Context, args any, now time.Time) context.Context {
	r, ok := args.(interface{ GetRequestId() string })
	if !ok || r.GetRequestId() == "" {
		return ctx
	}
	if FirstSentOf(ctx) != "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, FirstSentKey, strconv.FormatInt(now.UnixMilli(), 10))
}
