// This file proves best available under contention over HTTP on a real
// 3-node cluster: 30 fans ask at once for the best pair of a 20-seat show
// through different nodes; exactly 10 get a pair, no seat goes to two of
// them, every pair is side by side, and the other 20 are told SOLD_OUT.
package main

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
)

func TestClusterBestAvailableUnderContention(t *testing.T) {
	c := startCluster(t, true)
	httpCall(t, "POST", "http://"+c.httpAddr[0]+"/v1/shows", `{"show":{"show_id":"best-1","rows":[{"name":"A","seats":10,"category":"std"},
		{"name":"B","seats":10,"category":"std"}],"categories":[{"name":"std","price_minor":900,"currency":"EUR"}]}}`).
		wantStatus(t, "POST /v1/shows", http.StatusOK)
	const fans = 30
	results := make([]httpResult, fans)
	var wg sync.WaitGroup
	for i := range fans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := "http://" + c.httpAddr[i%len(c.httpAddr)]
			results[i] = httpCall(t, "POST", base+"/v1/shows/best-1/holds",
				fmt.Sprintf(`{"count":2,"client_id":"fan-%d","request_id":"r1"}`, i))
		}()
	}
	wg.Wait()
	owner := map[string]int{}
	won, soldOut := 0, 0
	for i, r := range results {
		switch {
		case r.code == http.StatusOK:
			won++
			seats, _ := r.body["seat_ids"].([]any)
			if len(seats) != 2 || !sideBySide(fmt.Sprint(seats[0]), fmt.Sprint(seats[1])) {
				t.Errorf("fan %d got %v, want two seats side by side", i, seats)
			}
			for _, s := range seats {
				if prev, taken := owner[fmt.Sprint(s)]; taken {
					t.Errorf("seat %v went to fans %d and %d", s, prev, i)
				}
				owner[fmt.Sprint(s)] = i
			}
		case r.code == http.StatusConflict && strings.Contains(r.raw, "SOLD_OUT"):
			soldOut++
		default:
			t.Errorf("fan %d: %d %s, want 200 or 409 SOLD_OUT", i, r.code, r.raw)
		}
	}
	if won != 10 || soldOut != fans-10 {
		t.Errorf("%d fans got a pair and %d were told SOLD_OUT, want 10 and %d", won, soldOut, fans-10)
	}
	r := httpCall(t, "GET", "http://"+c.httpAddr[0]+"/v1/shows/best-1/seats", "").wantStatus(t, "GET seats", http.StatusOK)
	if r.body["held"] != float64(20) {
		t.Errorf("seat map after the rush = %s, want all 20 seats held", r.raw)
	}
	held := make([]string, 0, len(owner))
	for s := range owner {
		held = append(held, s)
	}
	sort.Strings(held)
	t.Logf("seats granted: %v", held)
}

// sideBySide reports whether two seat ids are neighbours in one row.
func sideBySide(a, b string) bool {
	var ra, rb byte
	var na, nb int
	fmt.Sscanf(a, "%c%d", &ra, &na)
	fmt.Sscanf(b, "%c%d", &rb, &nb)
	return ra == rb && (na-nb == 1 || nb-na == 1)
}
