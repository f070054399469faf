package fsm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"hash"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Hold tokens. A hold's token is the capability to confirm, release, extend
// or refund it: HMAC-SHA256(show's token key, hold id), the first 16 bytes
// in unpadded base64url (22 characters). The key is random bytes the
// gateway drew when it proposed the show, stored in the log and the state,
// so every replica issues and checks the same tokens without a clock or a
// random source of its own, and a replayed hold returns the same token.
// Tokens are recomputed to be checked, never looked up. A hold's answer,
// token included, is kept in its request record for the retry horizon
// (requests.go), so that a replayed hold returns the very answer it got;
// the show's key sits in the same store, so that copy gives away nothing
// the store did not hold already.

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

// holdTokenBytes computes the token of a hold of show: HMAC-SHA256 as
// crypto/hmac computes it (RFC 2104), from the show's key schedule kept in
// the ledger (ledger.macs) and tx's one SHA-256, instead of a new HMAC per
// token or one kept per show.
func (tx *txn) holdTokenBytes(show, holdID string) [holdTokenLen]byte {
	s := tx.m.led.shows[show]
	if s == nil {
		violated("token of a hold of missing show %s", show)
	}
	return tx.showHoldToken(s, holdID)
}

// showHoldToken is holdTokenBytes for a hold of show s, for a caller that
// has the show (a live hold's slot names it) and need not look it up.
func (tx *txn) showHoldToken(s *showState, holdID string) [holdTokenLen]byte {
	mac := &tx.m.led.macs[s.num]
	if !mac.ready() {
		*mac = newShowMAC(s.l.tokenKey)
	}
	if tx.sha == nil {
		tx.sha = sha256.New()
	}
	if tx.shaState == nil {
		tx.shaState = new([sha256StateLen]byte)
	}
	var out [holdTokenLen]byte
	tx.tokenBuf, out = mac.token(tx.sha, tx.shaState, tx.tokenBuf, holdID)
	return out
}

// token computes the token of hold id with SHA-256 d, the buffer st for
// d's state and scratch buf (the id and the sums go through it: hash.Hash
// is an interface, so a converted string or a local array would escape);
// it returns buf for reuse.
func (mac *showMAC) token(d hash.Hash, st *[sha256StateLen]byte, buf []byte, id string) ([]byte, [holdTokenLen]byte) {
	must(d.(encoding.BinaryUnmarshaler).UnmarshalBinary(sha256State(st, mac[:sha256.Size])), "restore HMAC inner state")
	buf = append(buf[:0], id...)
	d.Write(buf)
	buf = d.Sum(buf[:0])
	must(d.(encoding.BinaryUnmarshaler).UnmarshalBinary(sha256State(st, mac[sha256.Size:])), "restore HMAC outer state")
	d.Write(buf)
	buf = d.Sum(buf[:0])
	var out [holdTokenLen]byte
	base64.RawURLEncoding.Encode(out[:], buf[:holdTokenBytes])
	return buf, out
}

// showMAC is a show's HMAC-SHA256 key schedule, made on first use: the
// SHA-256 chaining values after the key's inner pad, then after its outer
// pad. 64 bytes, one cache line, where the states as crypto/sha256
// marshals them took four: the rest of such a state after one block is
// the same for every key (sha256PadState), and a token is computed for
// nearly every command, each in a show of its own. Bytes, not a hash.Hash
// per show: the garbage collector has nothing to scan in them.
type showMAC [2 * sha256.Size]byte

// ready says whether the schedule was made: chaining values of zero would
// take a preimage of SHA-256's compression function to reach (and, were
// they reached, would only be made again, alike).
func (mac *showMAC) ready() bool { return *mac != showMAC{} }

// sha256State fills st with the marshaled SHA-256 state whose chaining
// values are h, one block into the message.
func sha256State(st *[sha256StateLen]byte, h []byte) []byte {
	*st = sha256PadState
	copy(st[sha256ChainAt:], h)
	return st[:]
}

// sha256StateLen is the length of crypto/sha256's marshaled state: a
// 4-byte magic, the chaining values, the pending block (zeros after a
// whole one) and the length.
const sha256StateLen = 108

// sha256ChainAt is where the chaining values start in a marshaled state.
const sha256ChainAt = 4

// sha256PadState is the marshaled state of SHA-256 after one block,
// whatever its chaining values (newShowMAC checks each state against it).
var sha256PadState = func() (st [sha256StateLen]byte) {
	d := sha256.New()
	d.Write(make([]byte, sha256.BlockSize))
	b, err := d.(encoding.BinaryMarshaler).MarshalBinary()
	must(err, "save SHA-256 state")
	if len(b) != sha256StateLen {
		violated("crypto/sha256 state is %d bytes, not %d", len(b), sha256StateLen)
	}
	copy(st[:], b)
	return st
}()

func newShowMAC(key []byte) showMAC {
	if len(key) > sha256.BlockSize {
		sum := sha256.Sum256(key)
		key = sum[:]
	}
	var pad [sha256.BlockSize]byte
	copy(pad[:], key)
	var mac showMAC
	for i, x := range []byte{0x36, 0x5c} {
		var block [sha256.BlockSize]byte
		for j := range block {
			block[j] = pad[j] ^ x
		}
		d := sha256.New()
		d.Write(block[:])
		b, err := d.(encoding.BinaryMarshaler).MarshalBinary()
		must(err, "save HMAC state")
		h := sha256ChainAt + sha256.Size
		if len(b) != sha256StateLen || string(b[:sha256ChainAt]) != string(sha256PadState[:sha256ChainAt]) || string(b[h:]) != string(sha256PadState[h:]) {
			violated("crypto/sha256 state after a block is not the chaining values in sha256PadState")
		}
		copy(mac[i*sha256.Size:], b[sha256ChainAt:h])
	}
	return mac
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
	return tokenEqual(tx.holdTokenBytes(show, id), token)
}

// showTokenMatches is tokenMatches for a hold of show s.
func (tx *txn) showTokenMatches(s *showState, id, token string) bool {
	return tokenEqual(tx.showHoldToken(s, id), token)
}

func tokenEqual(want [holdTokenLen]byte, token string) bool {
	return len(token) == len(want) && hmac.Equal(want[:], []byte(token))
}

// badToken is the rejection for a token that is not the hold's.
func badToken(id string) *ledgerpb.Result {
	return reject(ledgerpb.Code_CODE_HOLD_TOKEN_INVALID, "hold_token is not the token of hold %s", id)
}
