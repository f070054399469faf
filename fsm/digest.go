package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Digest identifies a group's state at an applied index: replicas at the same
// index must have equal digests (S6).
type Digest struct {
	Group   uint32
	Applied uint64
	Clock   int64
	Sum     [32]byte
}

func (d Digest) String() string {
	return fmt.Sprintf("group %d @%d clock %d: %s", d.Group, d.Applied, d.Clock, hex.EncodeToString(d.Sum[:8]))
}

// Digest hashes every record of the view's range with its applied index and
// clock.
func (v *View) Digest() (Digest, error) {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	err := v.each(func(k, val []byte) error {
		h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(k)))])
		h.Write(k)
		h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(val)))])
		h.Write(val)
		return nil
	})
	if err != nil {
		return Digest{}, fmt.Errorf("fsm: digest: %w", err)
	}
	h.Write(encodeMeta(v.applied, v.clock))
	d := Digest{Group: v.m.group, Applied: v.applied, Clock: v.clock}
	copy(d.Sum[:], h.Sum(nil))
	return d, nil
}

// Digest is a convenience that opens a view, digests it and closes it.
func (m *Machine) Digest() (Digest, error) {
	v, err := m.View()
	if err != nil {
		return Digest{}, err
	}
	defer v.Close()
	return v.Digest()
}
