// This file proves the watchers' event stream parser: every event's kind
// and id, whatever the pieces the stream arrives in (cut anywhere, one
// byte at a time, or whole), long data lines skipped, keepalives, retry
// lines and unknown kinds as the old line reader read them, and no
// allocation per piece.
package main

import (
	"slices"
	"strings"
	"testing"
)

type sseSeen struct {
	kind string
	id   uint64
}

func parseAll(pieces [][]byte) []sseSeen {
	var p sseParser
	var seen []sseSeen
	for _, b := range pieces {
		p.feed(b, func(kind string, id uint64) { seen = append(seen, sseSeen{kind, id}) })
	}
	return seen
}

// sseStream is a node's stream: headers gone, a retry line, a seat map, a
// keepalive, changes (one with a data line longer than any buffer), a
// reset and an event of a kind this reader does not know.
func sseStream() (string, []sseSeen) {
	long := `{"changes":[` + strings.Repeat(`{"seat_id":"A1","state":"SEAT_STATE_HELD"},`, 3000) + `]}`
	s := "retry: 1000\n\n" +
		"id: 7\nevent: snapshot\ndata: {\"snapshot\":{}}\n\n" +
		": keepalive\n\n" +
		"id: 9\nevent: changes\ndata: {\"changes\":[]}\n\n" +
		"id: 12\nevent: changes\ndata: " + long + "\n\n" +
		"id: 18446744073709551615\nevent: changes\ndata: {}\n\n" +
		"id: 40\nevent: reset\ndata: {\"snapshot\":{}}\n\n" +
		"id: 41\nevent: offer\ndata: {}\n\n" +
		"event: changes\ndata: {}\n\n" // no id line: the last id stands
	return s, []sseSeen{{"snapshot", 7}, {"changes", 9}, {"changes", 12}, {"changes", 1<<64 - 1},
		{"reset", 40}, {"other", 41}, {"changes", 41}}
}

func TestSSEParserPieces(t *testing.T) {
	s, want := sseStream()
	if got := parseAll([][]byte{[]byte(s)}); !slices.Equal(got, want) {
		t.Fatalf("whole stream: events %v, want %v", got, want)
	}
	var bytewise [][]byte
	for i := range len(s) {
		bytewise = append(bytewise, []byte(s[i:i+1]))
	}
	if got := parseAll(bytewise); !slices.Equal(got, want) {
		t.Fatalf("a byte at a time: events %v, want %v", got, want)
	}
	for _, size := range []int{2, 3, 5, 7, 13, 63, 64, 65, 100, 4096} {
		for off := 0; off < size && off < len(s); off += max(1, size/5) {
			pieces := [][]byte{[]byte(s[:off])}
			for i := off; i < len(s); i += size {
				pieces = append(pieces, []byte(s[i:min(i+size, len(s))]))
			}
			if got := parseAll(pieces); !slices.Equal(got, want) {
				t.Fatalf("pieces of %d from %d: events %v, want %v", size, off, got, want)
			}
		}
	}
}

func TestParseRevision(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"0", 0}, {"1", 1}, {"12345", 12345}, {"18446744073709551615", 1<<64 - 1},
		{"18446744073709551616", 0}, {"", 0}, {"12a", 0}, {"-1", 0}, {" 1", 0},
	} {
		if got := parseRevision([]byte(tc.in)); got != tc.want {
			t.Errorf("parseRevision(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestSSEParserAllocations(t *testing.T) {
	piece := []byte("id: 123456\nevent: changes\ndata: {\"changes\":[{\"seat_id\":\"A1\"}]}\n\nid: 1234")
	rest := []byte("57\nevent: changes\ndata: {}\n\n")
	var p sseParser
	n := 0
	event := func(kind string, id uint64) { n++ }
	p.feed(piece, event) // the cut line's buffer, once
	p.feed(rest, event)
	allocs := testing.AllocsPerRun(100, func() {
		p.feed(piece, event)
		p.feed(rest, event)
	})
	if allocs != 0 {
		t.Errorf("feed: %v allocations per two pieces, want 0", allocs)
	}
	if want := 2 * 102; n != want {
		t.Errorf("%d events, want %d", n, want)
	}
}
