package raftnode

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The header a dialer writes before any raft bytes, after the cluster
// preamble (cluster.go): muxMagic, the group id (big-endian uint32) and the
// incarnation of the group's replica the connection is addressed to
// (big-endian uint64, incarnation.go; 0 for a bootstrapped replica and for
// heartbeat frames). The magic tells raft traffic from stray clients (HTTP
// probes, port scanners). A probe (mux_incarnation.go) sends muxProbeMagic
// and the group id alone: the first muxPrefixBytes of any header. A
// configuration question (membership_ask.go) sends muxConfigMagic and the
// group id, then the server id it asks about.
const (
	muxMagic       = "SLI1"
	muxProbeMagic  = "SLQ1"
	muxConfigMagic = "SLC1"
	muxMagicLen    = len(muxMagic)
	muxGroupIDLen  = 4
	muxIncBytes    = 8
	muxPrefixBytes = muxMagicLen + muxGroupIDLen
	muxHeaderBytes = muxPrefixBytes + muxIncBytes
)

// Limits of the Mux, named once.
const (
	// headerTimeout bounds how long an accepted connection may take to send
	// its header and the first byte of its first RPC, its TLS handshake
	// included; a client that sends nothing must not hold a goroutine and
	// a file descriptor for ever. Raft writes its first RPC right after
	// the header (raftseam.go), and only then is the connection handed to
	// raft, whose transport gives each connection large buffers: idle
	// connections cost the Mux a goroutine each, never those.
	headerTimeout = 5 * time.Second

	// pendingConnsMax caps the connections still in headerTimeout (each a
	// goroutine and a few KiB); connsMax caps all the Mux's open
	// connections, those handed to raft included. A connection over either
	// cap is closed as soon as it is accepted, so a flood costs bounded
	// memory; a peer dials again. A node's peers open a few connections
	// per group they share.
	pendingConnsMax = 1024
	connsMax        = 4096

	// handshakeLogEvery bounds how often failed TLS handshakes are logged:
	// a misconfigured peer retries many times a second, and one line a
	// second names it well enough.
	handshakeLogEvery = time.Second

	// acceptQueueMax is how many routed connections a layer holds before its
	// raft transport calls Accept. Beyond it the router goroutine waits rather
	// than dropping a peer's connection.
	acceptQueueMax = 64

	// acceptBackoffMin and acceptBackoffMax bound the pause after a failed
	// Accept on the listener (for example EMFILE), so the loop neither spins
	// nor stalls for long once the condition clears.
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = 1 * time.Second
)

var (
	// ErrMuxClosed is returned when a group's layer is registered (layer,
	// layerAt) after the Mux has been closed.
	ErrMuxClosed = errors.New("raftnode: mux closed")

	// ErrGroupRegistered is returned when a group's layer is registered
	// while the group already has one: two raft instances of one group on one node would split its
	// traffic between them.
	ErrGroupRegistered = errors.New("raftnode: group already registered")

	// ErrLayerClosed is returned by a layer's Accept and Dial after the layer
	// or its Mux has been closed; raft's transport treats it as a stop.
	ErrLayerClosed = errors.New("raftnode: layer closed")

	// ErrMuxTLS is returned by NewTLSMux for an incomplete configuration.
	ErrMuxTLS = errors.New("raftnode: mux TLS needs a server config with a certificate and a client config")
)

// MuxTLS encrypts a Mux's connections, header included, so a peer's group
// ids and raft traffic never cross the network in the clear.
type MuxTLS struct {
	// Server is what accepted connections handshake with. With ClientAuth
	// RequireAndVerifyClientCert (mutual TLS) only holders of a certificate
	// from its ClientCAs get as far as the header.
	Server *tls.Config
	// Client is what the layers dial peers with; it is cloned per dial and
	// given the peer's server name.
	Client *tls.Config
	// ServerName returns the name a peer's certificate must carry when it
	// is dialed at addr; nil, or "", means addr's host. (A proxy between
	// nodes in the fault harness has another address than the peer.)
	ServerName func(addr string) string
	// Logger receives failed handshakes, at most one line per second; nil
	// drops them (they are counted in Rejected either way).
	Logger *slog.Logger
}

// Validate reports whether c can serve and dial.
func (c *MuxTLS) Validate() error {
	if c.Server == nil || c.Client == nil || (len(c.Server.Certificates) == 0 && c.Server.GetCertificate == nil) {
		return ErrMuxTLS
	}
	return nil
}

// Mux accepts connections on one listener and hands each to the raft stream layer of the group named in the connection's header.
//
// One listening port per node keeps firewall rules and peer addresses
// independent of how many groups the node hosts. Serve runs the accept loop;
// every accepted connection gets its own router goroutine, owned by the Mux,
// stopped by Close and waited for in Close.
type Mux struct {
	ln net.Listener

	// headerWait is headerTimeout, and pendingMax and openMax are
	// pendingConnsMax and connsMax, except in tests, which lower them.
	// Set before Serve starts and read-only afterwards.
	headerWait          time.Duration
	pendingMax, openMax int

	// open counts the open connections the Mux accepted: routing, queued,
	// or handed to a layer and not yet closed (muxConn).
	open atomic.Int64

	// tls, if set, encrypts every connection; read-only after NewTLSMux.
	tls *MuxTLS

	// cluster is the cluster this Mux serves and dials for, and preamble
	// its encoding (cluster.go); read-only.
	cluster  ClusterID
	preamble []byte
	// log receives refused foreign connections; nil drops them. Read-only.
	log *slog.Logger
	// foreign counts connections refused for naming another cluster;
	// lastForeignLog rate-limits their log line (Unix nanoseconds).
	foreign        atomic.Uint64
	lastForeignLog atomic.Int64

	// lastHandshakeLog is when a failed handshake was last logged (Unix
	// nanoseconds); atomic so routers rate-limit without a lock.
	lastHandshakeLog atomic.Int64

	// configs answers configuration questions (membership_ask.go); nil
	// answers that no replica of the group is hosted here. Set before
	// Serve starts and read-only afterwards.
	configs func(group uint32, sid raft.ServerID) configState

	// rejected counts connections closed for a bad header or an unknown
	// group; atomic so Rejected needs no lock.
	rejected atomic.Uint64

	// done is closed by Close so that Serve's back-off wakes up at once.
	done chan struct{}

	// routers tracks router goroutines. Add happens under mu and only while
	// the Mux is open, so Close's Wait never races an Add.
	routers sync.WaitGroup

	mu struct {
		sync.Mutex
		// closed is set once by Close; guarded by mu.
		closed bool
		// layers maps a group id to its registered layer; guarded by mu.
		layers map[uint32]*muxLayer
		// reading holds connections whose header is still being read, so
		// Close can close them instead of waiting out headerWait; guarded
		// by mu.
		reading map[net.Conn]struct{}
	}
}

// NewMux returns a Mux of cluster that will serve ln: it accepts only
// connections that name cluster, and names it on every dial. log, if not
// nil, receives refused connections of other clusters. It does not start
// serving: the caller owns the goroutine that runs Serve.
func NewMux(ln net.Listener, cluster ClusterID, log *slog.Logger) *Mux {
	m := &Mux{
		ln:         ln,
		headerWait: headerTimeout,
		pendingMax: pendingConnsMax,
		openMax:    connsMax,
		done:       make(chan struct{}),
		cluster:    cluster,
		preamble:   encodeClusterPreamble(cluster),
		log:        log,
	}
	m.mu.layers = make(map[uint32]*muxLayer)
	m.mu.reading = make(map[net.Conn]struct{})
	return m
}

// NewTLSMux returns NewMux's Mux that will serve ln with TLS: a connection must
// complete its handshake and send its header within the header timeout, and
// layers dial peers with t.Client.
func NewTLSMux(ln net.Listener, cluster ClusterID, log *slog.Logger, t MuxTLS) (*Mux, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	m := NewMux(ln, cluster, log)
	m.tls = &t
	return m, nil
}

// Addr returns the listener's address, which every group on this node
// advertises to its peers.
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

// Rejected returns how many connections were closed because their TLS
// handshake failed or their header was malformed, late, named another
// cluster or a group with no layer, or was addressed to another
// incarnation of its replica.
func (m *Mux) Rejected() uint64 { return m.rejected.Load() }

// Serve accepts connections until Close is called, then returns. It never
// reads from a connection itself: a slow or hostile client only ever holds its
// own router goroutine. If the listener is closed by someone else, Serve
// closes the Mux so that layers stop waiting for connections, and returns.
func (m *Mux) Serve() {
	var backoff time.Duration
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			if m.isClosed() {
				return
			}
			if errors.Is(err, net.ErrClosed) {
				_ = m.Close()
				return
			}
			backoff = nextAcceptBackoff(backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-m.done:
				return
			}
		}
		backoff = 0
		if !m.startRouter(conn) {
			return
		}
	}
}

// startRouter registers conn as reading and starts its router goroutine. It
// reports false, having closed conn, when the Mux is already closed. A
// connection over the caps is closed and counted as rejected.
func (m *Mux) startRouter(conn net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		_ = conn.Close()
		return false
	}
	if len(m.mu.reading) >= m.pendingMax || m.open.Load() >= int64(m.openMax) {
		m.reject(conn)
		return true
	}
	m.open.Add(1)
	m.mu.reading[conn] = struct{}{}
	m.routers.Add(1)
	go m.route(conn)
	return true
}

// route reads raw's header (after a TLS handshake if the Mux has TLS) and
// hands the connection to its group's layer, or closes it. It runs in its own
// goroutine so the accept loop never blocks on a client.
func (m *Mux) route(raw net.Conn) {
	defer m.routers.Done()
	conn, hdr, err := m.openConn(raw)
	l, open := m.finishReading(raw, hdr.group, err == nil)
	if !open {
		// Close already closed raw; a shutdown is not the client's fault.
		m.open.Add(-1)
		return
	}
	if err == nil && hdr.config {
		// Asked of the node, not of a layer: a node that hosts no replica
		// of the group says so.
		m.answerConfig(conn, raw, hdr.group)
		m.open.Add(-1)
		return
	}
	if err != nil || l == nil {
		// The raw connection, not the TLS one: its Close would try to
		// send close_notify to a client that may not read.
		m.open.Add(-1)
		m.reject(raw)
		return
	}
	if hdr.probe {
		l.answerProbe(conn, raw, m.headerWait)
		m.open.Add(-1)
		return
	}
	if hdr.incarnation != l.incarnation {
		// Addressed to another incarnation of this group's replica
		// (incarnation.go): refused before raft sees a byte of it.
		l.refuseStale(hdr.incarnation, raw)
		m.open.Add(-1)
		m.reject(raw)
		return
	}
	l.deliver(&muxConn{Conn: conn, first: hdr.first, unread: true, mux: m})
}

// muxConn is a connection handed to a layer: the first byte of its first
// RPC, which the Mux read to know the connection is live, comes first, and
// its Close frees its place under connsMax.
type muxConn struct {
	net.Conn
	first  byte
	unread bool // first is still to be read; only raft's reader reads
	mux    *Mux
	closed sync.Once
}

func (c *muxConn) Read(p []byte) (int, error) {
	if c.unread && len(p) > 0 {
		c.unread = false
		p[0] = c.first
		return 1, nil
	}
	return c.Conn.Read(p)
}

func (c *muxConn) Close() error {
	c.closed.Do(func() { c.mux.open.Add(-1) })
	return c.Conn.Close()
}

// openConn runs the TLS handshake, if any, and reads the cluster preamble,
// the header and (but for a probe) the first byte of the first RPC, all
// before one deadline: a slow handshake must not buy a client more time.
func (m *Mux) openConn(raw net.Conn) (net.Conn, muxHeader, error) {
	if err := raw.SetDeadline(time.Now().Add(m.headerWait)); err != nil {
		return nil, muxHeader{}, err
	}
	conn := raw
	if m.tls != nil {
		tc := tls.Server(raw, m.tls.Server)
		if err := tc.Handshake(); err != nil {
			m.logHandshake(raw, err)
			return nil, muxHeader{}, err
		}
		conn = tc
	}
	if err := m.readCluster(conn, raw); err != nil {
		return nil, muxHeader{}, err
	}
	hdr, err := readHeader(conn)
	if err != nil {
		return nil, muxHeader{}, err
	}
	if !hdr.probe && !hdr.config {
		var b [1]byte
		if _, err := io.ReadFull(conn, b[:]); err != nil {
			return nil, muxHeader{}, err
		}
		hdr.first = b[0]
	}
	// raft sets its own deadlines per RPC from here on.
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, muxHeader{}, err
	}
	return conn, hdr, nil
}

// logHandshake logs a failed handshake unless one was logged within the
// last handshakeLogEvery. A shutdown's closed connection is not logged.
func (m *Mux) logHandshake(conn net.Conn, err error) {
	if m.tls.Logger == nil || m.isClosed() {
		return
	}
	now, last := time.Now().UnixNano(), m.lastHandshakeLog.Load()
	if now-last < int64(handshakeLogEvery) || !m.lastHandshakeLog.CompareAndSwap(last, now) {
		return
	}
	m.tls.Logger.Warn("raft port: TLS handshake failed; connection closed", "remote", conn.RemoteAddr().String(), "err", err)
}

// finishReading removes conn from the reading set and, if the header was
// good, looks up the layer for group in the same critical section. open is
// false when the Mux was closed meanwhile.
func (m *Mux) finishReading(conn net.Conn, group uint32, lookup bool) (l *muxLayer, open bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, false
	}
	delete(m.mu.reading, conn)
	if lookup {
		l = m.mu.layers[group]
	}
	return l, true
}

// reject counts conn before closing it, so a client that sees the close can
// already see the count.
func (m *Mux) reject(conn net.Conn) {
	m.rejected.Add(1)
	_ = conn.Close()
}

// layer registers group and returns the stream layer its raft transport
// listens and dials on. Closing the layer unregisters the group, after which
// it may be registered again.
func (m *Mux) layer(group uint32) (raft.StreamLayer, error) {
	return m.layerAt(group, 0, nil)
}

// layerAt is layer for the replica of group with incarnation inc: it
// accepts only connections addressed to inc, and logs refused ones to log
// (nil: not logged).
func (m *Mux) layerAt(group uint32, inc uint64, log *slog.Logger) (*muxLayer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, ErrMuxClosed
	}
	if _, ok := m.mu.layers[group]; ok {
		return nil, fmt.Errorf("%w: %d", ErrGroupRegistered, group)
	}
	l := &muxLayer{
		mux:         m,
		group:       group,
		incarnation: inc,
		log:         log,
		conns:       make(chan net.Conn, acceptQueueMax),
		done:        make(chan struct{}),
	}
	m.mu.layers[group] = l
	return l, nil
}

// Close closes the listener, every connection still sending its header and
// every layer, then waits for all router goroutines. It does not wait for
// Serve, whose goroutine belongs to the caller. Calling it again returns nil.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	layers, reading := m.mu.layers, m.mu.reading
	m.mu.layers, m.mu.reading = nil, nil
	m.mu.Unlock()

	close(m.done)
	err := m.ln.Close()
	for conn := range reading {
		_ = conn.Close()
	}
	for _, l := range layers {
		l.shut()
	}
	m.routers.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("raftnode: close mux listener: %w", err)
	}
	return nil
}

func (m *Mux) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.closed
}

// unregister removes l from the Mux if it is still the layer for its group;
// after a Mux Close the map is gone and there is nothing to remove.
func (m *Mux) unregister(l *muxLayer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.layers[l.group] == l {
		delete(m.mu.layers, l.group)
	}
}

// muxLayer is one group's raft.StreamLayer on a Mux.
type muxLayer struct {
	mux   *Mux
	group uint32
	// incarnation is the replica's (incarnation.go); read-only.
	incarnation uint64
	// log receives refused connections (incarnation.go); read-only, may
	// be nil. lastStaleLog rate-limits it (Unix nanoseconds).
	log          *slog.Logger
	lastStaleLog atomic.Int64
	// stale counts connections refused for naming another incarnation.
	stale atomic.Uint64

	// conns queues routed connections until Accept takes them.
	conns chan net.Conn

	// done is closed once, by shut, when the layer or its Mux closes.
	done     chan struct{}
	shutOnce sync.Once
}

// Accept returns the next connection whose header named this layer's group.
func (l *muxLayer) Accept() (net.Conn, error) {
	// Checked first so a closed layer does not hand out queued connections
	// when select would pick at random.
	select {
	case <-l.done:
		return nil, ErrLayerClosed
	default:
	}
	select {
	case conn := <-l.conns:
		return conn, nil
	case <-l.done:
		return nil, ErrLayerClosed
	}
}

// Close unregisters the layer's group and closes connections queued for it.
// The Mux and its listener keep serving other groups.
func (l *muxLayer) Close() error {
	l.mux.unregister(l)
	l.shut()
	return nil
}

// Addr returns the Mux's listener address, shared by all groups.
func (l *muxLayer) Addr() net.Addr { return l.mux.Addr() }

// Dial connects to the Mux at address, runs the TLS handshake if the Mux
// has TLS, and writes the cluster preamble and this layer's header, so the
// remote Mux checks the cluster and routes the connection to the same
// group.
func (l *muxLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	select {
	case <-l.done:
		return nil, ErrLayerClosed
	default:
	}
	// The address names the incarnation of the replica it is for
	// (peerAddresses); the header passes it on for the receiver to check.
	conn, err := l.mux.dial(dialAddr(string(address)), timeout)
	if err != nil {
		return nil, fmt.Errorf("raftnode: dial group %d at %s: %w", l.group, address, err)
	}
	hdr := append(slices.Clip(l.mux.preamble), encodeHeader(l.group, incarnationOf(string(address)))...)
	if err := writeHeader(conn, hdr, timeout); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("raftnode: dial group %d at %s: %w", l.group, address, err)
	}
	return conn, nil
}

// dial connects to the Mux at addr, with TLS if this Mux has it.
func (m *Mux) dial(addr string, timeout time.Duration) (net.Conn, error) {
	dialer := net.Dialer{Timeout: timeout}
	conn, err := dialer.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if m.tls != nil {
		return m.clientHandshake(conn, addr, timeout)
	}
	return conn, nil
}

// clientHandshake wraps raw in TLS and completes the handshake within
// timeout, closing raw on failure. With TLS 1.3 a server that refuses this
// node's client certificate says so only on the first read, which raft's
// transport then reports.
func (m *Mux) clientHandshake(raw net.Conn, addr string, timeout time.Duration) (net.Conn, error) {
	cfg := m.tls.Client.Clone()
	if m.tls.ServerName != nil {
		cfg.ServerName = m.tls.ServerName(addr)
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			_ = raw.Close()
			return nil, err
		}
		cfg.ServerName = host
	}
	if timeout > 0 {
		if err := raw.SetDeadline(time.Now().Add(timeout)); err != nil {
			_ = raw.Close()
			return nil, err
		}
	}
	tc := tls.Client(raw, cfg)
	if err := tc.Handshake(); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		_ = raw.Close()
		return nil, err
	}
	return tc, nil
}

// deliver queues conn for Accept, waiting while the queue is full, or closes
// conn if the layer closes first.
func (l *muxLayer) deliver(conn net.Conn) {
	select {
	case l.conns <- conn:
	case <-l.done:
		_ = conn.Close()
		return
	}
	// The send may have won against a concurrent shut whose drain already
	// ran; draining again here leaves no connection stranded in the queue.
	select {
	case <-l.done:
		l.drain()
	default:
	}
}

// shut marks the layer closed and closes queued connections. The order
// matters: done first, then drain, so deliver either sees done or its
// connection is drained.
func (l *muxLayer) shut() {
	l.shutOnce.Do(func() { close(l.done) })
	l.drain()
}

func (l *muxLayer) drain() {
	for {
		select {
		case conn := <-l.conns:
			_ = conn.Close()
		default:
			return
		}
	}
}

// writeHeader writes a header with that deadline.
func writeHeader(conn net.Conn, hdr []byte, timeout time.Duration) error {
	if timeout > 0 {
		if err := conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
			return err
		}
	}
	if _, err := conn.Write(hdr); err != nil {
		return err
	}
	return conn.SetWriteDeadline(time.Time{})
}

// muxHeader is a decoded header, a probe's included.
type muxHeader struct {
	group       uint32
	incarnation uint64
	probe       bool
	// config marks a configuration question (membership_ask.go).
	config bool
	// first is the first byte after the header (openConn), read but for a
	// probe or a configuration question.
	first byte
}

// errMuxBadMagic never leaves the package: route turns it into a rejection.
var errMuxBadMagic = errors.New("raftnode: bad mux header magic")

// readHeader reads and decodes a header; the caller sets the deadline.
func readHeader(conn net.Conn) (muxHeader, error) {
	var prefix [muxPrefixBytes]byte
	if _, err := io.ReadFull(conn, prefix[:]); err != nil {
		return muxHeader{}, err
	}
	group := binary.BigEndian.Uint32(prefix[muxMagicLen:])
	switch string(prefix[:muxMagicLen]) {
	case muxProbeMagic:
		return muxHeader{group: group, probe: true}, nil
	case muxConfigMagic:
		return muxHeader{group: group, config: true}, nil
	case muxMagic:
		var inc [muxIncBytes]byte
		if _, err := io.ReadFull(conn, inc[:]); err != nil {
			return muxHeader{}, err
		}
		return muxHeader{group: group, incarnation: binary.BigEndian.Uint64(inc[:])}, nil
	}
	return muxHeader{}, errMuxBadMagic
}

// encodeHeader is the header of a connection to group's replica with
// incarnation inc.
func encodeHeader(group uint32, inc uint64) []byte {
	hdr := make([]byte, muxHeaderBytes)
	copy(hdr, muxMagic)
	binary.BigEndian.PutUint32(hdr[muxMagicLen:], group)
	binary.BigEndian.PutUint64(hdr[muxPrefixBytes:], inc)
	return hdr
}

// encodeProbe is the header of a probe for group's replica.
func encodeProbe(group uint32) []byte {
	hdr := make([]byte, muxPrefixBytes)
	copy(hdr, muxProbeMagic)
	binary.BigEndian.PutUint32(hdr[muxMagicLen:], group)
	return hdr
}

// nextAcceptBackoff doubles the previous pause within
// [acceptBackoffMin, acceptBackoffMax].
func nextAcceptBackoff(prev time.Duration) time.Duration {
	next := 2 * prev
	if next < acceptBackoffMin {
		next = acceptBackoffMin
	}
	if next > acceptBackoffMax {
		next = acceptBackoffMax
	}
	return next
}
