package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// A write a node forwards to its group's leader says so in its response
// header, alone or in a Batch; a write the node leads does not.
func TestForwardedCallsSayTheyWere(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	n1 := bc.nodes[0].client // n1 leads group 0 only
	ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
	defer cancel()
	forwarded := func(md metadata.MD) bool { return len(md.Get(ForwardedKey)) > 0 }

	for g, want := range []bool{false, true} {
		var md metadata.MD
		if _, err := n1.Hold(ctx, &ledgerpb.HoldRequest{ShowId: bc.show[g], SeatIds: []string{"A1"}, ClientId: "fw", RequestId: "unary"}, grpc.Header(&md)); err != nil {
			t.Fatalf("Hold in group %d through n1: %v", g, err)
		}
		if forwarded(md) != want {
			t.Errorf("Hold in group %d through n1: header %v, want %s set: %v", g, md, ForwardedKey, want)
		}
	}
	// Over HTTP the header is Grpc-Metadata-Seatledger-Forwarded.
	for g, want := range []bool{false, true} {
		body := fmt.Sprintf(`{"seat_ids":["A6"],"client_id":"fw","request_id":"http%d"}`, g)
		resp, err := http.Post(bc.nodes[0].http.URL+"/v1/shows/"+bc.show[g]+"/holds", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST hold in group %d through n1: %s", g, resp.Status)
		}
		if got := resp.Header.Get("Grpc-Metadata-Seatledger-Forwarded") != ""; got != want {
			t.Errorf("POST hold in group %d through n1: headers %v, want Grpc-Metadata-Seatledger-Forwarded set: %v", g, resp.Header, want)
		}
	}
	for _, tc := range []struct {
		name  string
		calls []*ledgerpb.BatchCall
		want  bool
	}{
		{"n1's group alone", []*ledgerpb.BatchCall{holdCall(bc.show[0], "fw", "b1", "A2"), holdCall(bc.show[0], "fw", "b2", "A3")}, false},
		{"one call forwarded", []*ledgerpb.BatchCall{holdCall(bc.show[0], "fw", "b3", "A4"), holdCall(bc.show[1], "fw", "b4", "A4")}, true},
		{"a batch of one, forwarded", []*ledgerpb.BatchCall{holdCall(bc.show[1], "fw", "b5", "A5")}, true},
	} {
		var md metadata.MD
		resp, err := n1.Batch(ctx, &ledgerpb.BatchRequest{Calls: tc.calls}, grpc.Header(&md))
		if err != nil {
			t.Fatalf("%s: Batch: %v", tc.name, err)
		}
		for i, r := range resp.Results {
			if err := errOf(r); err != nil {
				t.Fatalf("%s: call %d: %v", tc.name, i, err)
			}
		}
		if forwarded(md) != tc.want {
			t.Errorf("%s: header %v, want %s set: %v", tc.name, md, ForwardedKey, tc.want)
		}
	}
}
