package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/watch"
)

// Live seat maps: Watch over gRPC (a server stream) and over HTTP as
// Server-Sent Events. Both admit the watch here (validation, the node's
// watcher limit), let the watch hub serve it from a replica of the
// show's group, and end it when the client leaves or the node shuts down.

const (
	// WatchersMaxDefault bounds the watches one node serves at once, gRPC
	// and SSE together, forwarded ones included (seatd serve
	// --watchers-max): each holds a connection (a file descriptor), its
	// buffers and one goroutine, and wakes on each change of its show.
	// Sized to memory: docs/PERFORMANCE.md measures a watcher's share.
	WatchersMaxDefault = 50000
	// watchKeepalive is how often an idle SSE stream gets a comment line,
	// and how often gRPC pings an idle connection: proxies keep the stream
	// open and a dead client is found.
	watchKeepalive = 15 * time.Second
	// watchWriteTimeout bounds one SSE write: a client that stops reading
	// is dropped instead of holding its watcher slot (and its socket's
	// buffers) for ever. Long enough for a phone on a poor network.
	watchWriteTimeout = 30 * time.Second
	// sseRetry is the reconnection delay an EventSource is told to use.
	sseRetry = time.Second
)

var (
	errTooManyWatchers = errors.New("gateway: too many watchers on this node")
	errDraining        = errors.New("gateway: node shutting down")
	errSinkClosed      = errors.New("gateway: event stream closed")
)

// watchProto is the wire a watch is served on, a label of seatledger_watchers.
type watchProto int

const (
	watchGRPC watchProto = iota
	watchSSE
	watchProtos // how many there are
)

func (p watchProto) String() string { return [...]string{"grpc", "sse"}[p] }

// watchers admits watches up to a limit and ends them all on shutdown.
type watchers struct {
	mu struct {
		sync.Mutex
		next     uint64
		cancel   map[uint64]context.CancelCauseFunc
		live     [watchProtos]int // admitted, not yet released, by wire
		draining bool
	}
}

// admit registers a watch: it returns the watch's context, which Drain
// cancels, and a release func to call when the watch ends.
func (w *watchers) admit(ctx context.Context, max int, proto watchProto) (context.Context, func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.draining {
		return nil, nil, errDraining
	}
	if len(w.mu.cancel) >= max {
		return nil, nil, errTooManyWatchers
	}
	if w.mu.cancel == nil {
		w.mu.cancel = map[uint64]context.CancelCauseFunc{}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w.mu.next++
	id := w.mu.next
	w.mu.cancel[id] = cancel
	w.mu.live[proto]++
	return ctx, func() {
		w.mu.Lock()
		delete(w.mu.cancel, id)
		w.mu.live[proto]--
		w.mu.Unlock()
		cancel(nil)
	}, nil
}

// count is the number of watches admitted and not yet released.
func (w *watchers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.mu.cancel)
}

// live is the number of watches admitted and not yet released, by wire.
func (w *watchers) live() [watchProtos]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.live
}

// drain ends every watch and refuses new ones.
func (w *watchers) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.draining = true
	for _, cancel := range w.mu.cancel {
		cancel(errDraining)
	}
}

// SetWatchersMax sets the node's watcher limit (WatchersMaxDefault if n is
// 0); call before serving.
func (s *Server) SetWatchersMax(n int) {
	if n == 0 {
		n = WatchersMaxDefault
	}
	s.watchersMax.Store(int64(n))
}

// DrainWatches ends every watch this server serves and refuses new ones, so
// that a graceful shutdown does not wait for streams that never end on their
// own. Clients resume at another node from their last revision. Call it
// before stopping the gRPC and HTTP servers.
func (s *Server) DrainWatches() {
	s.watches.drain()
	s.hub.Close()
}

// Watch streams a show's seat changes (see watch.Hub.Watch for the order
// of events and resume semantics).
func (s *Server) Watch(req *ledgerpb.WatchRequest, stream grpc.ServerStreamingServer[ledgerpb.WatchEvent]) error {
	if !fsm.ValidID(req.ShowId, fsm.ShowIDLenMax) {
		return fieldError(&fsm.FieldError{Field: "show_id", Message: "is not a show id"})
	}
	ctx, release, err := s.watches.admit(stream.Context(), int(s.watchersMax.Load()), watchGRPC)
	if err != nil {
		return watchError(stream.Context(), err)
	}
	defer release()
	err = s.hub.Watch(ctx, req.ShowId, req.FromRevision, watch.Forwarded(stream.Context()), grpcSink{stream})
	return watchError(ctx, err)
}

// grpcSink sends a watch over a gRPC stream. The header tells a forwarding
// node that the watch opened. Shared frames go out as the bytes the show's
// feed encoded once (watchCodec).
type grpcSink struct {
	stream grpc.ServerStreamingServer[ledgerpb.WatchEvent]
}

func (g grpcSink) Open(servedBy string) error        { return g.stream.SendHeader(watch.OpenHeader(servedBy)) }
func (g grpcSink) OpenShared(servedBy string) error  { return g.Open(servedBy) }
func (g grpcSink) Send(e *ledgerpb.WatchEvent) error { return g.stream.Send(e) }
func (g grpcSink) Format() watch.Format              { return grpcFormat{} }
func (g grpcSink) IdleInterval() time.Duration       { return 0 } // gRPC pings idle connections itself
func (g grpcSink) Idle() error                       { return nil }

func (g grpcSink) SendFrames(frames []*watch.Frame) error {
	for _, f := range frames {
		b, err := f.Encoded(grpcFormat{})
		if err != nil {
			return err
		}
		if err := g.stream.SendMsg(encodedEvent(b)); err != nil {
			return err
		}
	}
	return nil
}

// grpcFormat is a WatchEvent as a gRPC message: its protobuf encoding.
type grpcFormat struct{}

func (grpcFormat) EncodeWatchEvent(e *ledgerpb.WatchEvent) ([]byte, error) { return proto.Marshal(e) }

// encodedEvent is a WatchEvent already encoded by grpcFormat: watchCodec
// sends its bytes as they are.
type encodedEvent []byte

// watchCodec is the server's codec: protobuf, except that an encodedEvent
// is sent as it is, so a change encoded once goes to every gRPC watcher,
// and a Batch's answer is encoded by hand (batchencode.go).
type watchCodec struct{ encoding.CodecV2 }

func (c watchCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case encodedEvent:
		return mem.BufferSlice{mem.SliceBuffer(m)}, nil
	case *ledgerpb.BatchResponse: // batchencode.go
		// From grpc's buffer pool, as its codec takes them, at about a
		// hold's answer a result; append grows it if that is short.
		pool := mem.DefaultBufferPool()
		buf := pool.Get(batchResultBytes * max(len(m.Results), 1))
		if b, ok := appendBatchResponse((*buf)[:0], m); ok {
			*buf = b
			return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
		}
		pool.Put(buf)
	}
	return c.CodecV2.Marshal(v)
}

// batchResultBytes is about the encoding of a hold's answer in a Batch.
const batchResultBytes = 192

// ---- Server-Sent Events ----

// serveEvents is GET /v1/shows/{show_id}/events: the watch as SSE. Each
// event is "id: <revision>", "event: snapshot|changes|reset" and "data:" the
// WatchEvent as JSON (proto field names). A client resumes with the
// Last-Event-ID header (what EventSource sends when it reconnects) or
// ?from_revision=; the header wins, being the later of the two. Errors before
// the stream starts are the API's usual JSON error bodies.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	show := r.PathValue("show_id")
	if !fsm.ValidID(show, fsm.ShowIDLenMax) {
		writeHTTPError(w, r, fieldError(&fsm.FieldError{Field: "show_id", Message: "is not a show id"}))
		return
	}
	from, fe := resumeRevision(r)
	if fe != nil {
		writeHTTPError(w, r, fieldError(fe))
		return
	}
	// The watch runs on a goroutine of its own, from the admission on,
	// so that once it takes the connection over the handler can return:
	// net/http then lets go of the request, the response and their
	// buffers, and of the handler's goroutine and its grown stack, which
	// would otherwise live as long as the stream. Its owner is the node's
	// watcher set (drain stops it); the sink's read of the connection
	// learns when the client leaves.
	ctx, release, err := s.watches.admit(context.WithoutCancel(r.Context()), int(s.watchersMax.Load()), watchSSE)
	if err != nil {
		writeHTTPError(w, r, watchError(r.Context(), err))
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	sink := &sseSink{w: w, rc: http.NewResponseController(w), tls: r.TLS != nil, keepalive: time.Duration(s.watchKeepalive.Load()),
		writeMax: time.Duration(s.watchWriteMax.Load()), takenOver: make(chan struct{})}
	ended := make(chan error, 1)
	go func() {
		err := s.hub.Watch(ctx, show, from, false, sink)
		if sink.conn == nil {
			ended <- err // the handler still owns the response
			return
		}
		sink.close()
		cancel()
		release()
	}()
	select {
	case <-sink.takenOver:
		return
	case err = <-ended:
	case <-r.Context().Done(): // the client left: net/http's read saw it
		cancel()
		select {
		case <-sink.takenOver:
			return
		case err = <-ended:
		}
	}
	sink.close()
	cancel()
	release()
	if !sink.opened {
		writeHTTPError(w, r, watchError(ctx, err))
	}
	// An open stream just ends: the client reconnects with Last-Event-ID.
}

// resumeRevision reads the revision a client resumes after.
func resumeRevision(r *http.Request) (uint64, *fsm.FieldError) {
	field, v := "Last-Event-ID", r.Header.Get("Last-Event-ID")
	if v == "" {
		field, v = "from_revision", r.URL.Query().Get("from_revision")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, &fsm.FieldError{Field: field, Message: "is not a revision"}
	}
	return n, nil
}

func writeHTTPError(w http.ResponseWriter, r *http.Request, err error) {
	writeError(r.Context(), nil, jsonMarshaler, w, r, err)
}

// sseFormat is a WatchEvent as one Server-Sent Event: "id: <revision>",
// "event: snapshot|changes|reset" and "data:" the event as JSON.
type sseFormat struct{}

func (sseFormat) EncodeWatchEvent(e *ledgerpb.WatchEvent) ([]byte, error) {
	data, err := jsonMarshaler.Marshal(e)
	if err != nil {
		return nil, err
	}
	kind := "changes"
	switch {
	case e.Snapshot != nil && e.Reset_:
		kind = "reset"
	case e.Snapshot != nil:
		kind = "snapshot"
	}
	// protojson writes one line: no newline can end the data field early.
	b := make([]byte, 0, len(data)+48)
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, e.Revision, 10)
	b = append(b, "\nevent: "...)
	b = append(b, kind...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...), nil
}

var sseKeepalive = []byte(": keepalive\n\n")

// sseSink writes a watch as Server-Sent Events. A watch over plain
// HTTP/1.x takes the connection over from net/http: the stream is then the
// connection's own bytes, written without chunking, and the show's feed
// (of this node's replica or relayed) writes each change straight to the
// socket (watch.DirectSink) while the client keeps up. Everything else,
// keepalives included, is written from the watch's one goroutine
// (watch.SharedSink).
type sseSink struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	keepalive time.Duration
	writeMax  time.Duration // watchWriteTimeout
	tls       bool          // the request came over TLS

	mu     sync.Mutex // guards writes to w and conn, and closed
	closed bool

	opened bool // set by Open, read after the watch returned
	// conn is the connection taken over from net/http (nil: the stream
	// goes through w); raw is its socket, for TryWrite (nil: not a
	// plain TCP socket, so the feed does not write to it itself).
	conn net.Conn
	raw  syscall.RawConn
	// takenOver is closed once conn is the stream's: the handler returns
	// and w and rc are no longer the sink's to use.
	takenOver chan struct{}
}

// Open is OpenShared: the hub serves every watch, relayed ones too, as a
// watch.SharedSink, whose keepalives come from Idle.
func (s *sseSink) Open(servedBy string) error { return s.OpenShared(servedBy) }

// OpenShared sends the stream's headers; the watch calls Idle for the
// keepalives. A plain TCP connection is taken over, so that the show's
// feed can write to it (Direct); a TLS one could not be written to from
// the feed, and keeps net/http's.
func (s *sseSink) OpenShared(servedBy string) error { return s.open(servedBy, !s.tls) }

// open sends the stream's headers, on the connection taken over from
// net/http if takeOver and it can.
func (s *sseSink) open(servedBy string, takeOver bool) error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	h.Set("X-Served-By", servedBy)
	retry := []byte("retry: " + strconv.FormatInt(sseRetry.Milliseconds(), 10) + "\n\n")
	var conn net.Conn
	var brw *bufio.ReadWriter
	err := errors.ErrUnsupported
	if takeOver {
		conn, brw, err = s.rc.Hijack()
	}
	if err != nil {
		// Not taken over: a relayed or TLS stream, HTTP/2, or a writer
		// that cannot hand its connection over.
		s.w.WriteHeader(http.StatusOK)
		s.opened = true
		return s.write(retry)
	}
	s.opened = true
	s.conn = conn
	s.w, s.rc = nil, nil // net/http's, and dead once the handler returns
	defer close(s.takenOver)
	// The stream is written to conn, and its client sends nothing: drop
	// net/http's buffers of the connection, which would live as long as
	// the watch (they are the caller's once taken over).
	*brw.Reader, *brw.Writer = bufio.Reader{}, bufio.Writer{}
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			s.raw = raw
		}
	}
	// Without a length or chunks, the body ends when the connection does.
	h.Set("Connection", "close") // h is read here, before the handler returns
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	h.Write(&head)
	head.WriteString("\r\n")
	head.Write(retry)
	return s.write(head.Bytes())
}

func (s *sseSink) Format() watch.Format        { return sseFormat{} }
func (s *sseSink) IdleInterval() time.Duration { return s.keepalive }
func (s *sseSink) Idle() error                 { return s.write(sseKeepalive) }
func (s *sseSink) Direct() bool                { return directWrites && s.raw != nil }
func (s *sseSink) Keepalive() []byte           { return sseKeepalive }
func (s *sseSink) Write(b []byte) error        { return s.write(b) }

// Wait reads the connection until Wake or the client leaves: an event
// stream's client sends nothing, so a read returns only when it goes.
func (s *sseSink) Wait() error {
	var b [64]byte
	_, err := s.conn.Read(b[:])
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Woken: clear the deadline for the next Wait. A Wake between
		// the two is not lost: the watch looks for the feed's signal,
		// sent before Wake, before it waits again.
		return s.conn.SetReadDeadline(time.Time{})
	}
	return err
}

// Wake ends a Wait.
func (s *sseSink) Wake() { s.conn.SetReadDeadline(time.Unix(1, 0)) }

// TryWrite writes what fits of b in the socket's buffer now (the feed's
// goroutine calls it; watch.DirectSink).
func (s *sseSink) TryWrite(b []byte) (int, error) { return tryWrite(s.raw, b) }

// Send writes one event.
func (s *sseSink) Send(e *ledgerpb.WatchEvent) error {
	b, err := sseFormat{}.EncodeWatchEvent(e)
	if err != nil {
		return err
	}
	return s.write(b)
}

// SendFrames writes frames in one write: the bytes the show's feed
// encoded.
func (s *sseSink) SendFrames(frames []*watch.Frame) error {
	blocks := make([][]byte, len(frames))
	for i, f := range frames {
		b, err := f.Encoded(sseFormat{})
		if err != nil {
			return err
		}
		blocks[i] = b
	}
	return s.write(blocks...)
}

// write writes blocks within writeMax. A client that stops reading fills
// its socket's buffers (the bound on what it may fall behind), then this
// write times out and the watch ends: the client resumes from its last
// revision. The show's feed never waits for it.
func (s *sseSink) write(blocks ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errSinkClosed
	}
	if s.conn != nil {
		if err := s.conn.SetWriteDeadline(time.Now().Add(s.writeMax)); err != nil {
			return err
		}
		b := blocks[0]
		if len(blocks) > 1 {
			b = bytes.Join(blocks, nil) // one write
		}
		if _, err := s.conn.Write(b); err != nil {
			return err
		}
		// The feed's writes (TryWrite) never wait, and an expired
		// deadline would fail them.
		return s.conn.SetWriteDeadline(time.Time{})
	}
	// Not every ResponseWriter supports deadlines (tests' recorders).
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.writeMax))
	for _, b := range blocks {
		if _, err := s.w.Write(b); err != nil {
			return err
		}
	}
	return s.rc.Flush()
}

// close closes a connection taken over; no write happens after it
// returns.
func (s *sseSink) close() {
	s.mu.Lock()
	s.closed = true
	if s.conn != nil {
		s.conn.Close()
	}
	s.mu.Unlock()
}
