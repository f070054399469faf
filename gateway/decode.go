package gateway

import (
	"context"
	"slices"
	"sync"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Requests that cannot be decoded. grpc-go answers a request message that
// does not parse (random bytes, invalid UTF-8 in a string) with Internal,
// which reads as a server fault, and writes that status itself as soon as
// its codec fails, before any handler or interceptor could change it. So:
//
//   - the server's codec (requestCodec) never fails a request: it records
//     the failure against the message instead;
//   - every service is registered through guardedServer, whose handlers
//     look the failure up after decoding and answer INVALID_ARGUMENT
//     (undecodableRequest, errors.go) without calling the method;
//   - a service may have a check that runs before a byte of its request is
//     decoded: the Peer service refuses a caller without the admin token
//     before it parses what the caller sent;
//   - Booking.Batch is handed the server's interceptor chain, through which
//     it runs each of its calls (batch.go).

// requestCodec is the proto codec with request failures recorded, not
// returned. Marshal is the proto codec's.
type requestCodec struct {
	encoding.CodecV2
	// failed maps a message being decoded to its decode error until the
	// guard that asked for it takes it (every service is guarded, so
	// nothing is left behind).
	failed sync.Map
}

func newRequestCodec() *requestCodec {
	return &requestCodec{CodecV2: encoding.GetCodecV2(proto.Name)}
}

func (c *requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*ledgerpb.BatchRequest); ok {
		var b []byte
		if len(data) == 1 {
			b = data[0].ReadOnlyData() // decodeBatch copies what it keeps
		} else {
			b = data.Materialize()
		}
		if decodeBatch(b, m) {
			return nil
		}
	}
	if err := c.CodecV2.Unmarshal(data, v); err != nil {
		c.failed.Store(v, err)
	}
	return nil
}

// decoded runs dec into m and reports the status of a message that did not
// decode.
func (c *requestCodec) decoded(dec func(any) error, m any) error {
	if err := dec(m); err != nil {
		return err
	}
	if err, ok := c.failed.LoadAndDelete(m); ok {
		return undecodableRequest(err.(error))
	}
	return nil
}

// guardedServer registers services with their handlers guarded.
type guardedServer struct {
	*grpc.Server
	codec *requestCodec
}

// RegisterService registers desc's service with no check before decoding.
func (g guardedServer) RegisterService(desc *grpc.ServiceDesc, impl any) {
	g.registerChecked(desc, nil, impl)
}

// registerChecked registers desc's service; check, if not nil, runs before
// each call's request is decoded.
func (g guardedServer) registerChecked(desc *grpc.ServiceDesc, check func(context.Context) error, impl any) {
	g.Server.RegisterService(g.codec.guard(desc, check), impl)
}

// guard returns a copy of desc whose methods and streams run check first
// and refuse requests that did not decode.
func (c *requestCodec) guard(desc *grpc.ServiceDesc, check func(context.Context) error) *grpc.ServiceDesc {
	d := *desc
	d.Methods = slices.Clone(desc.Methods)
	for i, m := range d.Methods {
		h := m.Handler
		if "/"+desc.ServiceName+"/"+m.MethodName == methodBatch {
			h = withChain(h)
		}
		d.Methods[i].Handler = c.guardUnary(h, check)
	}
	d.Streams = slices.Clone(desc.Streams)
	for i, s := range d.Streams {
		d.Streams[i].Handler = c.guardStream(s.Handler, check)
	}
	return &d
}

func (c *requestCodec) guardUnary(h grpc.MethodHandler, check func(context.Context) error) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
		if check != nil {
			if err := check(ctx); err != nil {
				return nil, err
			}
		}
		return h(srv, ctx, func(m any) error { return c.decoded(dec, m) }, in)
	}
}

func (c *requestCodec) guardStream(h grpc.StreamHandler, check func(context.Context) error) grpc.StreamHandler {
	return func(srv any, ss grpc.ServerStream) error {
		if check != nil {
			if err := check(ss.Context()); err != nil {
				return err
			}
		}
		return h(srv, decodeStream{ServerStream: ss, codec: c})
	}
}

// decodeStream is a server stream that refuses received messages that did
// not decode.
type decodeStream struct {
	grpc.ServerStream
	codec *requestCodec
}

func (s decodeStream) RecvMsg(m any) error { return s.codec.decoded(s.ServerStream.RecvMsg, m) }
