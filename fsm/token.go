package fsm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Hold tokens. A hold's token is the capability to confirm, release, extend
// or refund it: HMAC-SHA256(show's token key, hold id), the first 16 bytes
// in unpadded base64url (22 characters). The key is random bytes the
// gateway drew when it proposed the show, stored in the log and the state,
// so every replica issues and checks the same tokens without a clock or a
// random source of its own, and a replayed hold returns the same token.
// Tokens are never stored: they are recomputed to be checked.

// holdTokenBytes is how much of the HMAC a token keeps.
const holdTokenBytes = 16

// holdTokenLen is a token's length: holdTokenBytes in unpadded base64.
const holdTokenLen = (holdTokenBytes*8 + 5) / 6

// HoldToken computes the token of hold holdID under a show's token key.
func HoldToken(key []byte, holdID string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(holdID))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:holdTokenBytes])
}

// holdTokenBytes computes the token of a hold of show with the show's
// keyed HMAC, kept in the ledger, instead of a new HMAC per token.
func (tx *txn) holdTokenBytes(show, holdID string) [holdTokenLen]byte {
	s := tx.m.led.shows[show]
	if s == nil {
		violated("token of a hold of missing show %s", show)
	}
	if s.mac == nil {
		s.mac = hmac.New(sha256.New, s.l.tokenKey)
	}
	s.mac.Reset()
	// The id and the sum go through tx's scratch: hash.Hash is an
	// interface, so a converted string or a local array would escape.
	tx.tokenBuf = append(tx.tokenBuf[:0], holdID...)
	s.mac.Write(tx.tokenBuf)
	tx.tokenBuf = s.mac.Sum(tx.tokenBuf[:0])
	var out [holdTokenLen]byte
	base64.RawURLEncoding.Encode(out[:], tx.tokenBuf[:holdTokenBytes])
	return out
}

// showTokenKey is a show's token key, from the layout cache.
func (tx *txn) showTokenKey(show string) []byte {
	l := tx.layout(show)
	if l == nil {
		violated("token key of missing show %s", show)
	}
	return l.tokenKey
}

// tokenMatches compares a presented token with the token of hold id of
// show in constant time.
func (tx *txn) tokenMatches(show, id, token string) bool {
	want := tx.holdTokenBytes(show, id)
	return len(token) == len(want) && hmac.Equal(want[:], []byte(token))
}

// badToken is the rejection for a token that is not the hold's.
func badToken(id string) *ledgerpb.Result {
	return reject(ledgerpb.Code_CODE_HOLD_TOKEN_INVALID, "hold_token is not the token of hold %s", id)
}
