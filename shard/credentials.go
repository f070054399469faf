package shard

import "context"

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
