package gateway

import (
	"cmp"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Limits of the public ports against anyone who can reach them: every input
// an unauthenticated peer can send is bounded in size and time (DESIGN §5).
// docs/OPERATIONS.md lists them with what each bounds.
const (
	// grpcHeaderListBytesMax bounds the metadata of one gRPC call (HTTP/2's
	// SETTINGS_MAX_HEADER_LIST_SIZE). grpc-go's default is large enough
	// that a few idle connections can pin hundreds of MiB of metadata
	// (issue 17 §5); seatledger's own metadata (a bearer token, a cluster
	// id, a deadline) is under 1 KiB.
	grpcHeaderListBytesMax = 16 << 10
	// grpcStreamsPerConnMax bounds the calls open at once on one
	// connection (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS; grpc-go's
	// default is unlimited). With grpcHeaderListBytesMax it bounds the
	// metadata one connection can make a node hold: 4 MiB. A connection
	// between two nodes carries a few forwarded calls and one watch per
	// show watched through it.
	grpcStreamsPerConnMax = 256
	// grpcHandshakeTimeout bounds a new connection's TLS handshake and
	// HTTP/2 preface (grpc-go's default is 120 s).
	grpcHandshakeTimeout = 5 * time.Second
	// grpcPingIntervalMin is the shortest interval at which a client may
	// send keepalive pings (grpc-go's client minimum); a client that pings
	// more often is sent GOAWAY (too_many_pings) and disconnected.
	grpcPingIntervalMin = 10 * time.Second
	// grpcConnIdleMax closes a connection that has had no call for this
	// long; a client reconnects transparently on its next call.
	grpcConnIdleMax = 5 * time.Minute

	// httpHeaderTimeout bounds reading a request's headers.
	httpHeaderTimeout = 10 * time.Second
	// httpBodyTimeout bounds reading an API request's body (at most
	// httpBodyBytesMax: 1 MiB in 10 s is 100 KB/s). It starts when the
	// handler does and ends when the body is read, so it never cuts a
	// long response such as an event stream.
	httpBodyTimeout = 10 * time.Second
	// httpIdleTimeout closes a keep-alive connection with no request for
	// this long (net/http keeps one for ever by default).
	httpIdleTimeout = 2 * time.Minute
	// httpConnsMax caps the HTTP port's open connections besides its event
	// streams (which the watcher limit bounds); beyond it and that limit
	// the listener stops accepting (connections wait in the kernel's
	// backlog) until one closes.
	httpConnsMax = 4096
)

// grpcLimits are the gRPC server options that bound what a client can make
// a node hold.
func grpcLimits() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(grpcMessageBytesMax),
		grpc.MaxHeaderListSize(grpcHeaderListBytesMax),
		grpc.MaxConcurrentStreams(grpcStreamsPerConnMax),
		grpc.ConnectionTimeout(grpcHandshakeTimeout),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: grpcPingIntervalMin, PermitWithoutStream: true}),
		// Ping idle connections, so that a Watch stream to a client that
		// vanished without closing its connection ends.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: watchKeepalive, Timeout: watchKeepaliveTimeout,
			MaxConnectionIdle: grpcConnIdleMax}),
	}
}

// NewHTTPServer returns a server of h with the HTTP port's header and idle
// timeouts. The body deadline is per request (withBodyDeadline), as a
// server-wide ReadTimeout would also end event streams.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: httpHeaderTimeout, IdleTimeout: httpIdleTimeout}
}

// LimitHTTPListener caps ln's open connections at httpConnsMax plus the
// node's watcher limit (WatchersMaxDefault if watchersMax is 0): an event
// stream holds its connection, and a cap below the watcher limit would
// leave admitted watchers waiting in the backlog.
func LimitHTTPListener(ln net.Listener, watchersMax int) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, httpConnsMax+cmp.Or(watchersMax, WatchersMaxDefault)), done: make(chan struct{})}
}

// limitListener is netutil.LimitListener whose connections also offer their
// socket (syscall.Conn), so that an event stream's feed can write to it
// without waiting (watch.DirectSink).
type limitListener struct {
	net.Listener
	sem       chan struct{} // a token per open connection
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, l: l}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn gives its token back when closed.
type limitConn struct {
	net.Conn
	l           *limitListener
	releaseOnce sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.releaseOnce.Do(func() { <-c.l.sem })
	return err
}

// SyscallConn is the socket's, if the connection has one.
func (c *limitConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// withBodyDeadline gives a request with a body httpBodyTimeout to send it:
// a body trickled a byte at a time no longer holds a connection and its
// buffers for ever. The deadline is lifted once the body is read, so a
// slow handler is not cut off by it.
func withBodyDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(httpBodyTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts its connection's read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
