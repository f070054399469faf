// This file proves that holdStrings, which makes a new hold's strings in
// one allocation, gives the id h<group>-<index>-<pos> and equal copies of
// the client and seat ids that share no memory with the command's, and
// that a fresh slice leaves the command's own untouched.
package fsm

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"
)

func TestHoldStrings(t *testing.T) {
	tests := []struct {
		group  uint32
		index  uint64
		pos    int
		client string
		seats  []string
	}{
		{0, 1, 0, "c1", []string{"A1"}},
		{1, 123456, 3, "client-with-a-longer-id", []string{"A1", "A2", "B10", "C7"}},
		{^uint32(0), ^uint64(0), 1<<31 - 1, "", nil},
		{7, 42, offerPosBase + 9, "ü-client", []string{"Z500"}},
	}
	for _, tt := range tests {
		for _, fresh := range []bool{false, true} {
			// Inputs from one buffer, as a decoded entry's are.
			src := []byte(tt.client)
			for _, s := range tt.seats {
				src = append(src, s...)
			}
			in := string(src)
			client, rest := in[:len(tt.client)], in[len(tt.client):]
			seats := make([]string, len(tt.seats))
			for i, s := range tt.seats {
				seats[i], rest = rest[:len(s)], rest[len(s):]
			}
			given := slices.Clone(seats)
			id, gotClient, gotSeats := holdStrings(tt.group, tt.index, tt.pos, client, seats, fresh)
			if want := fmt.Sprintf("h%d-%d-%d", tt.group, tt.index, tt.pos); id != want {
				t.Errorf("holdStrings(%d, %d, %d) id = %q, want %q", tt.group, tt.index, tt.pos, id, want)
			}
			if len(id) > holdIDLenMax {
				t.Errorf("id %q is longer than holdIDLenMax %d", id, holdIDLenMax)
			}
			if gotClient != tt.client || !slices.Equal(gotSeats, tt.seats) {
				t.Errorf("holdStrings(%q, %q) = %q, %q", tt.client, tt.seats, gotClient, gotSeats)
			}
			inAt := func(s string) bool {
				p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(in)))
				return len(s) > 0 && p >= lo && p < lo+uintptr(len(in))
			}
			if inAt(gotClient) {
				t.Errorf("client %q shares the command's memory", gotClient)
			}
			for _, s := range gotSeats {
				if inAt(s) {
					t.Errorf("seat %q shares the command's memory", s)
				}
			}
			if fresh && len(seats) > 0 && (&gotSeats[0] == &seats[0] || !slices.Equal(seats, given)) {
				t.Errorf("fresh: the given slice was reused or changed: %q", seats)
			}
			if !fresh && len(seats) > 0 && &gotSeats[0] != &seats[0] {
				t.Errorf("not fresh: the seat ids went to a new slice")
			}
		}
	}
}
