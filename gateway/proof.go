package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Client proofs. Listing a client's bookings reveals its payments, so it
// needs the backend key, or a proof the backend issued to that client's
// browser: SLC1.<expires_at_ms>.<mac>, the mac HMAC-SHA256 under the
// backend key of "SLC1|<client_id>|<expires_at_ms>", unpadded base64url.
// The backend makes proofs itself, with no call to the ledger (any language
// with HMAC-SHA256 can; ClientProof is the Go one), as it would sign a
// session cookie; every node checks them with the same key. A proof names
// one client and expires, at most clientProofTTLMax after it is checked,
// so a leaked proof exposes one client for a bounded time.

// clientProofPrefix names the proof format and its version.
const clientProofPrefix = "SLC1"

// clientProofLenMax bounds a proof's length (a real one is about 65 bytes).
const clientProofLenMax = 256

// clientProofTTLMax bounds how far ahead a proof's expiry may be.
const clientProofTTLMax = 24 * time.Hour

// ClientProof makes the proof that the holder is client, valid until
// expires, under the backend key.
func ClientProof(backendKey, client string, expires time.Time) string {
	ms := strconv.FormatInt(expires.UnixMilli(), 10)
	return clientProofPrefix + "." + ms + "." + clientProofMAC(backendKey, client, ms)
}

func clientProofMAC(backendKey, client, ms string) string {
	m := hmac.New(sha256.New, []byte(backendKey))
	m.Write([]byte(clientProofPrefix + "|" + client + "|" + ms))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkClientProof reports why proof does not prove client at now under
// backendKey, or nil.
func checkClientProof(backendKey, client, proof string, now time.Time) error {
	if backendKey == "" {
		return fmt.Errorf("this cluster has no backend key (--backend-key-file), so it issues no client proofs")
	}
	parts := strings.Split(proof, ".")
	if len(parts) != 3 || parts[0] != clientProofPrefix {
		return fmt.Errorf("client_proof is not a %s proof", clientProofPrefix)
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return fmt.Errorf("client_proof has no expiry")
	}
	if !hmac.Equal([]byte(parts[2]), []byte(clientProofMAC(backendKey, client, parts[1]))) {
		return fmt.Errorf("client_proof is not the backend's proof for client %s", client)
	}
	exp := time.UnixMilli(ms)
	if !now.Before(exp) {
		return fmt.Errorf("client_proof expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if exp.Sub(now) > clientProofTTLMax {
		return fmt.Errorf("client_proof expires more than %s ahead", clientProofTTLMax)
	}
	return nil
}
