package main

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/client"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// How a failed call reads to an operator: one line with the node's reason
// and what to do next, and a hint when the flags, not the cluster, are at
// fault. client.go makes the calls; this file only renders their errors.

// reasonOf and detailOf read a node's error (client/).
var (
	reasonOf = client.Reason
	detailOf = client.Detail
)

// describe renders an error for an operator on one line: the ErrorInfo
// reason (or the gRPC code), the message, and the details that say what to
// do next (taken seats, the leader, the hold's state).
func describe(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return oneLine(err.Error())
	}
	reason, msg := reasonOf(err), st.Message()
	if reason == "" {
		reason = strings.ToUpper(codeName(st.Code()))
	}
	// gRPC wraps a failed dial in two layers of prose; the dial error
	// itself ("dial tcp ...: connection refused") is what an operator needs.
	if _, dial, ok := strings.Cut(msg, "Error while dialing: "); ok {
		msg = strings.TrimSuffix(dial, `"`)
	}
	s := reason + ": " + msg
	if d := detailOf(err); d != nil {
		var extra []string
		if len(d.TakenSeatIds) > 0 {
			extra = append(extra, "taken "+strings.Join(d.TakenSeatIds, ","))
		}
		if d.LeaderHint != "" {
			extra = append(extra, "leader "+d.LeaderHint)
		}
		if d.HoldState != ledgerpb.HoldState_HOLD_STATE_UNSPECIFIED {
			extra = append(extra, "hold "+holdStateName(d.HoldState))
		}
		if len(extra) > 0 {
			s += " (" + strings.Join(extra, "; ") + ")"
		}
	}
	return oneLine(s)
}

// hint returns what to try when a call failed with msg, or "": the port
// is the HTTP one, the admin token is missing or wrong, or the TLS flags do
// not match the node's. The HTTP check comes first: an HTTP/1.1 answer also
// fails gRPC's "server preface", which would otherwise read as plaintext
// against TLS.
func (a *app) hint(msg string) string {
	if h := httpPortHint(msg); h != "" {
		return h
	}
	if h := a.tokenHint(msg); h != "" {
		return h
	}
	return a.tlsHint(msg)
}

// httpPortHint recognizes a node's HTTP port dialed as if it were gRPC:
// plaintext, an HTTP/1.1 answer where HTTP/2 frames were expected; over TLS,
// an HTTP answer (a status and content type gRPC does not speak) or no h2
// in the handshake.
func httpPortHint(msg string) string {
	for _, s := range []string{
		"looked like an HTTP/1.1 header",
		"unexpected HTTP status code received from server",
		"missing selected ALPN property",
	} {
		if strings.Contains(msg, s) {
			return "that is a node's HTTP port (seatd --http); seatctl speaks gRPC: use the node's --grpc address in --endpoints or " + endpointsEnv + " (seatd dev: " + defaultEndpoint + ")"
		}
	}
	return ""
}

// tokenHint says which flag or variable gives the admin token when a call
// was refused for want of it, or where the refused one came from.
func (a *app) tokenHint(msg string) string {
	unauthenticated := strings.Contains(msg, "UNAUTHENTICATED") || strings.Contains(msg, "code = Unauthenticated")
	switch {
	case unauthenticated && a.token == "":
		return "admin calls need the cluster's admin token: pass --admin-token-file FILE or --admin-token TOKEN, or set " + adminTokenEnv + " (seatd dev keeps it in DATA_DIR/admin.token)"
	case strings.Contains(msg, "ADMIN_TOKEN_INVALID") && a.tokenFile != "":
		return "the token in --admin-token-file " + a.tokenFile + " is not this cluster's: use the file its nodes were started with (seatd serve --admin-token-file)"
	case strings.Contains(msg, "ADMIN_TOKEN_INVALID"):
		return "the token of --admin-token or " + adminTokenEnv + " is not this cluster's: use the one its nodes were started with (seatd serve --admin-token-file)"
	}
	return ""
}

// tlsHint returns what to try when a call failed with msg because the TLS
// flags do not match the node's, or "". gRPC reports a mismatch as a bare
// transport error, and which one depends on the flags: plaintext to a TLS
// port is "server preface" or a reset; with TLS 1.3 a refused client
// certificate is often only a broken pipe.
func (a *app) tlsHint(msg string) string {
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(msg, x) {
				return true
			}
		}
		return false
	}
	switch {
	case has("certificate signed by unknown authority"):
		return "verify the nodes with the cluster's CA: --cacert ca.pem"
	case has("certificate is valid for"):
		return "the node's certificate does not name the address dialed: use the address in --peers"
	case has("first record does not look like a TLS handshake"):
		return "the node serves plaintext: drop --cacert, --cert and --key"
	case a.tls == nil && has("server preface", "connection reset by peer", "broken pipe"):
		return "if the node serves TLS, pass --cacert with the cluster's CA"
	case a.tls != nil && len(a.tls.Certificates) == 0 && has("certificate required", "broken pipe", "connection reset by peer", "EOF"):
		return "if the node requires client certificates (--client-ca), pass --cert and --key"
	case a.tls != nil && has("bad certificate", "unknown certificate authority", "certificate required"):
		return "the node refused the client certificate: use one signed by its --client-ca"
	}
	return ""
}

// codeName is a gRPC code in SCREAMING_SNAKE as in ErrorInfo reasons.
func codeName(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// holdStateName drops the enum prefix: HOLD_STATE_HELD -> HELD.
func holdStateName(s ledgerpb.HoldState) string {
	return strings.TrimPrefix(s.String(), "HOLD_STATE_")
}
