package gateway

import (
	"context"
	"fmt"
	"net/textproto"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/metadata"

	"github.com/seatledger/seatledger/fsm"
)

// A write may say when the client first sent it, the same on every retry:
// the FSM then refuses a retry that comes after its request record may
// have been pruned instead of running it again (fsm.RequestHorizonMs).
// Unix milliseconds, as every time in the ledger's commands, so a client
// stamps it with no formatting and no time zone to get wrong.

const (
	// FirstSentKey is the gRPC metadata key of the first send time.
	FirstSentKey = "seatledger-first-sent-at"
	// FirstSentHeader is the same over HTTP.
	FirstSentHeader = "Seatledger-First-Sent-At"
	// firstSentLenMax bounds the value: Unix ms up to fsm.ClockMaxMs has
	// 15 digits.
	firstSentLenMax = 16
)

// firstSentAt returns the first send time a call states (0 when it states
// none), checked against the node's clock: garbage, or a time more than
// fsm.FirstSentAheadMaxMs ahead, is INVALID_ARGUMENT naming the header.
// The FSM checks again against the log clock.
func firstSentAt(ctx context.Context, now time.Time) (int64, error) {
	var vs []string
	if b, ok := ctx.Value(firstSentCallKey{}).(*batchFirstSent); ok {
		if b.ms != 0 {
			// A batched call's own, checked as the metadata is.
			return checkFirstSent(b.ms, now)
		}
		vs = b.md
	} else {
		// ValueFromIncomingContext copies only this key's values, where
		// FromIncomingContext would copy every header of every call.
		vs = metadata.ValueFromIncomingContext(ctx, FirstSentKey)
	}
	if len(vs) == 0 {
		return 0, nil
	}
	ms, err := parseFirstSent(vs)
	if err != nil {
		return 0, fieldError(&fsm.FieldError{Field: FirstSentKey, Message: err.Error()})
	}
	return checkFirstSent(ms, now)
}

// checkFirstSent checks a first send time against the node's clock, with
// the status the metadata's check answers.
func checkFirstSent(ms int64, now time.Time) (int64, error) {
	if ms <= 0 {
		return 0, fieldError(&fsm.FieldError{Field: FirstSentKey, Message: fmt.Sprintf("%d: %s", ms, firstSentWant)})
	}
	if fe := fsm.ValidateFirstSent(ms, now.UnixMilli()); fe != nil {
		return 0, fieldError(&fsm.FieldError{Field: FirstSentKey, Message: fe.Message})
	}
	return ms, nil
}

// firstSentWant says what a first send time must be.
const firstSentWant = "must be the Unix time in milliseconds (digits only, e.g. 1767225600000) of the request's first send, the same on every retry"

// parseFirstSent reads one value of 1..firstSentLenMax digits, not zero.
func parseFirstSent(vs []string) (int64, error) {
	const want = firstSentWant
	if len(vs) != 1 {
		return 0, fmt.Errorf("given %d times: %s", len(vs), want)
	}
	v := vs[0]
	if len(v) == 0 || len(v) > firstSentLenMax {
		return 0, fmt.Errorf("%s", want)
	}
	var ms int64
	for i := range len(v) {
		if v[i] < '0' || v[i] > '9' {
			return 0, fmt.Errorf("%q: %s", v, want)
		}
		ms = ms*10 + int64(v[i]-'0')
	}
	if ms == 0 {
		return 0, fmt.Errorf("0: %s", want)
	}
	return ms, nil
}

// incomingHeader is grpc-gateway's header matcher plus the first send
// time, which the default does not forward (it forwards only standard
// headers, prefixed, and Grpc-Metadata-*).
func incomingHeader(key string) (string, bool) {
	if textproto.CanonicalMIMEHeaderKey(key) == FirstSentHeader {
		return FirstSentKey, true
	}
	return runtime.DefaultHeaderMatcher(key)
}

// batchFirstSent is where a batched call's first send time comes from
// (batch.go): its own, ms, when it states one, else the Batch's metadata,
// md, read once for all its calls.
type batchFirstSent struct {
	ms int64
	md []string
}

// firstSentCtx is a batched call's context when the call states its own
// first send time: Value answers firstSentCallKey with it. A batch makes
// them in one slice (batchRun.callCtxs), where context.WithValue cost two
// allocations a call, the context and the boxed value.
type firstSentCtx struct {
	context.Context
	fs batchFirstSent
}

func (c *firstSentCtx) Value(key any) any {
	if _, ok := key.(firstSentCallKey); ok {
		return &c.fs
	}
	return c.Context.Value(key)
}
