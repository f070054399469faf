package shard

import (
	"context"
	"crypto/tls"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// BearerCredentials attaches the cluster's admin token to every call of a
// client connection: nodes forwarding to each other (the Peer service
// requires it), seatctl and the fault harness. It does not require
// transport security; TLS is configured separately.
type BearerCredentials string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b BearerCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	if b == "" {
		return nil, nil
	}
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (BearerCredentials) RequireTransportSecurity() bool { return false }

// SetPeerToken makes forwarded calls present the cluster's admin token;
// call before serving.
func (r *Router) SetPeerToken(token string) { r.peerToken = token }

// SetPeerTLS makes forwarded calls use TLS: cfg (certs.Node.PeerClient)
// verifies peers with the cluster CA and presents this node's certificate,
// which a peer started with --peer-mtls requires. Call before serving; nil
// keeps plaintext.
func (r *Router) SetPeerTLS(cfg *tls.Config) { r.peerTLS = cfg }

// transportCredentials is how this node dials a node's gRPC port. The
// certificate must name host, the host the peer advertises, not the address
// dialed, which in the fault harness is a proxy; "" verifies the dialled
// address's host.
func (r *Router) transportCredentials(host string) credentials.TransportCredentials {
	return peerTransport(r.peerTLS, host)
}

// peerTransport is transportCredentials with the TLS template peerTLS.
func peerTransport(peerTLS *tls.Config, host string) credentials.TransportCredentials {
	if peerTLS == nil {
		return insecure.NewCredentials()
	}
	cfg := peerTLS.Clone()
	if host != "" {
		cfg.ServerName = host
	}
	return credentials.NewTLS(cfg)
}
