// This file proves that the public ports of a real node (three in-process
// nodes on loopback listeners) stand up to anyone who can reach them, each
// probe kept small enough for a shared CI machine:
//
//   - gRPC: calls carrying 1 MiB of metadata each and no message, kept open
//     on many connections, are refused, and the node's Go heap does not grow
//     with them; the server advertises its stream and header limits; a
//     client that floods pings is sent GOAWAY; a connection that never
//     sends its HTTP/2 preface is closed; a request that cannot be decoded
//     answers InvalidArgument, and a Peer call without the admin token is
//     refused as Unauthenticated before its request is decoded.
//   - HTTP: request bodies trickled a byte at a time are cut off at the body
//     deadline instead of holding their connections for ever.
//
// After each probe the node still answers a seat map over gRPC and /healthz.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

const (
	// probeConns, probeStreams and probeMetaBytes size the metadata
	// probe: 16 x 4 calls of 1 MiB, 64 MiB in all, which a node without a
	// header list limit holds until the connections close.
	probeConns     = 16
	probeStreams   = 4
	probeMetaBytes = 1 << 20
	// probeHeapGrowthMax bounds the node's heap growth per probe: a
	// quarter of what the metadata probe sends.
	probeHeapGrowthMax = 16 << 20
	// probeTrickles is how many HTTP bodies trickle at once.
	probeTrickles = 100
)

func TestPublicPortsBounded(t *testing.T) {
	c := startCluster(t, true)
	c.createShow(0, "probe-show")
	grpcAddr, httpBase := c.peers[0].GRPCAddr, "http://"+c.httpAddr[0]
	// Started first, checked last: it takes the handshake timeout.
	silent, err := net.Dial("tcp", grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silentSince := time.Now()

	t.Run("grpc metadata", func(t *testing.T) {
		before := liveHeap()
		conns := make([]net.Conn, 0, probeConns)
		defer func() {
			for _, conn := range conns {
				conn.Close()
			}
		}()
		for range probeConns {
			conn, err := bigMetadataCalls(grpcAddr, probeStreams, probeMetaBytes)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, conn)
		}
		// The connections stay open while the heap is measured.
		time.Sleep(200 * time.Millisecond)
		if grew := liveHeap() - before; grew > probeHeapGrowthMax {
			t.Errorf("%d calls with %d KiB of metadata each grew the heap by %d MiB, want at most %d MiB",
				probeConns*probeStreams, probeMetaBytes>>10, grew>>20, probeHeapGrowthMax>>20)
		}
		c.stillServing(t, httpBase)
	})

	t.Run("grpc settings and ping flood", func(t *testing.T) {
		settings, goaway, err := pingFlood(grpcAddr)
		if err != nil {
			t.Fatal(err)
		}
		if settings[http2.SettingMaxConcurrentStreams] != 256 || settings[http2.SettingMaxHeaderListSize] != 16<<10 {
			t.Errorf("server SETTINGS = %v, want MAX_CONCURRENT_STREAMS 256 and MAX_HEADER_LIST_SIZE 16384", settings)
		}
		if goaway == nil || goaway.ErrCode != http2.ErrCodeEnhanceYourCalm {
			t.Errorf("after a ping flood the server sent %v, want GOAWAY ENHANCE_YOUR_CALM", goaway)
		}
		c.stillServing(t, httpBase)
	})

	t.Run("grpc undecodable request", func(t *testing.T) {
		conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := callCtx(t)
		defer cancel()
		junk := &rawBytes{b: []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}}
		// Field 1 (show_id), a string, with invalid UTF-8.
		badUTF8 := &rawBytes{b: []byte{0x0a, 0x02, 0xff, 0xfe}}
		for _, call := range []struct {
			method string
			req    *rawBytes
			code   codes.Code
		}{
			{ledgerpb.Booking_GetSeatMap_FullMethodName, junk, codes.InvalidArgument},
			{ledgerpb.Booking_GetSeatMap_FullMethodName, badUTF8, codes.InvalidArgument},
			{ledgerpb.Booking_Hold_FullMethodName, junk, codes.InvalidArgument},
			// No token: refused before the junk is decoded.
			{ledgerpb.Peer_Propose_FullMethodName, junk, codes.Unauthenticated},
		} {
			err := conn.Invoke(ctx, call.method, call.req, &rawBytes{}, grpc.ForceCodecV2(rawCodec{}))
			if status.Code(err) != call.code {
				t.Errorf("%s(% x) = %v, want %v", call.method, call.req.b, err, call.code)
			}
		}
	})

	t.Run("http trickled bodies", func(t *testing.T) {
		before := liveHeap()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, probeTrickles)
		for range probeTrickles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- trickleBody(c.httpAddr[0], 20*time.Second)
			}()
		}
		// Midway, the node serves others.
		time.Sleep(2 * time.Second)
		c.stillServing(t, httpBase)
		if grew := liveHeap() - before; grew > probeHeapGrowthMax {
			t.Errorf("%d trickled bodies grew the heap by %d MiB, want at most %d MiB", probeTrickles, grew>>20, probeHeapGrowthMax>>20)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("trickled body: %v", err)
				break
			}
		}
		t.Logf("%d trickled bodies cut off after %v", probeTrickles, time.Since(start).Round(time.Millisecond))
		c.stillServing(t, httpBase)
	})

	t.Run("grpc silent connection", func(t *testing.T) {
		// The probes above took longer than the handshake timeout (the
		// trickled bodies alone take the body timeout, 10 s); wait at
		// least until it has passed.
		deadline := silentSince.Add(8 * time.Second)
		if soon := time.Now().Add(time.Second); soon.After(deadline) {
			deadline = soon
		}
		silent.SetReadDeadline(deadline)
		n, err := io.Copy(io.Discard, silent)
		t.Logf("silent connection: read %d bytes (the server's SETTINGS), then %v", n, err)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("a connection that sent no HTTP/2 preface is still open after %v, want closed after the handshake timeout", time.Since(silentSince).Round(time.Second))
		}
	})
}

// stillServing fails the test unless node 0 answers a seat map over gRPC
// and /healthz over HTTP.
func (c *testCluster) stillServing(t *testing.T, httpBase string) {
	t.Helper()
	ctx, cancel := callCtx(t)
	defer cancel()
	if _, err := c.clients[0].GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: "probe-show"}); err != nil {
		t.Errorf("GetSeatMap after the probe = %v, want OK", err)
	}
	resp, err := http.Get(httpBase + "/healthz")
	if err != nil {
		t.Errorf("GET /healthz after the probe: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz after the probe = %d, want 200", resp.StatusCode)
	}
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// bigMetadataCalls opens an HTTP/2 connection to addr and starts streams
// calls whose headers carry metaBytes of metadata (in 8 KiB values) and
// which never send a message. It returns the open connection, with a
// goroutine draining what the server sends.
func bigMetadataCalls(addr string, streams, metaBytes int) (net.Conn, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		conn.Close()
		return nil, err
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		conn.Close()
		return nil, err
	}
	go io.Copy(io.Discard, conn)
	value := strings.Repeat("x", 8<<10)
	for s := range streams {
		var block bytes.Buffer
		enc := hpack.NewEncoder(&block)
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", ledgerpb.Booking_GetSeatMap_FullMethodName},
			{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		for i := range metaBytes / len(value) {
			enc.WriteField(hpack.HeaderField{Name: fmt.Sprintf("x-pad-%d", i), Value: value, Sensitive: true})
		}
		if err := writeHeaderBlock(fr, uint32(2*s+1), block.Bytes()); err != nil {
			// The server refused the calls and closed the connection.
			return conn, nil
		}
	}
	return conn, nil
}

// writeHeaderBlock writes block as HEADERS and CONTINUATION frames of the
// default frame size, without END_STREAM.
func writeHeaderBlock(fr *http2.Framer, stream uint32, block []byte) error {
	const frameMax = 16 << 10
	first := block[:min(len(block), frameMax)]
	block = block[len(first):]
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: first, EndHeaders: len(block) == 0}); err != nil {
		return err
	}
	for len(block) > 0 {
		chunk := block[:min(len(block), frameMax)]
		block = block[len(chunk):]
		if err := fr.WriteContinuation(stream, len(block) == 0, chunk); err != nil {
			return err
		}
	}
	return nil
}

// pingFlood opens an HTTP/2 connection, sends pings back to back and
// returns the server's SETTINGS and the GOAWAY it answered with, if any.
func pingFlood(addr string) (map[http2.SettingID]uint32, *http2.GoAwayFrame, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return nil, nil, err
	}
	fr := http2.NewFramer(conn, bufio.NewReader(conn))
	if err := fr.WriteSettings(); err != nil {
		return nil, nil, err
	}
	for i := range 10 {
		if err := fr.WritePing(false, [8]byte{byte(i)}); err != nil {
			break // the server may already have closed the connection
		}
	}
	settings := map[http2.SettingID]uint32{}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return settings, nil, nil
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			f.ForeachSetting(func(s http2.Setting) error { settings[s.ID] = s.Val; return nil })
		case *http2.GoAwayFrame:
			return settings, f, nil
		}
	}
}

// trickleBody sends a request whose body comes a byte every 500 ms and
// reports an error unless the server ends the request (an answer or a
// closed connection) within limit.
func trickleBody(addr string, limit time.Duration) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/shows/probe-show/holds HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		conn.SetReadDeadline(start.Add(limit))
		io.Copy(io.Discard, conn) // until the server closes the connection
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ended:
			if took := time.Since(start); took >= limit {
				return fmt.Errorf("the server still read a trickled body after %v", took.Round(time.Second))
			}
			return nil
		case <-tick.C:
			conn.Write([]byte(" "))
		}
	}
}

// rawBytes is a message the rawCodec sends as it is.
type rawBytes struct{ b []byte }

// rawCodec sends hand-made request bytes, so a test can send what no
// generated client would.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*rawBytes).b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*rawBytes).b = data.Materialize()
	return nil
}
