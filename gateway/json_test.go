// This file proves strict JSON bodies: an unknown field is refused with its
// path (nested ones too), proto and lowerCamel names are both accepted, an
// empty body is "no body", and malformed JSON says at which line, column and
// byte it broke.
package gateway

import (
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		body      string
		field     string // "" = accepted
		msgSubstr string
	}{
		{`{"seat_ids":["A1"],"client_id":"c","request_id":"r","ttl_seconds":10}`, "", ""},
		{`{"seatIds":["A1"],"clientId":"c","ttlSeconds":10}`, "", ""},
		{`{"seat_ids":["A1"],"ttl":10}`, "ttl", "unknown field"},
		{`{"zzz":1,"aaa":2}`, "aaa", "unknown field"}, // the first in sorted order, every time
		{`{"seat_ids":["A1"`, "body", "at line 1, column 18 (offset 17)"},
		{"{\n  \"seat_ids\": }", "body", "at line 2, column 15 (offset 16)"},
		{`{"count":"x"}`, "body", "count"},
		{`{"count":1} {"count":2}`, "body", "more than one JSON value"},
		{`[1,2]`, "body", ""},
	}
	for _, tt := range tests {
		err := decodeStrict(strings.NewReader(tt.body), &ledgerpb.HoldRequest{}, protojson.UnmarshalOptions{})
		var be *bodyError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("decode %s = %v, want accepted", tt.body, err)
		case tt.field != "" && !errors.As(err, &be):
			t.Errorf("decode %s = %v, want a bodyError for %s", tt.body, err, tt.field)
		case tt.field != "" && (be.field != tt.field || !strings.Contains(be.msg, tt.msgSubstr)):
			t.Errorf("decode %s = field %q %q, want field %q with %q", tt.body, be.field, be.msg, tt.field, tt.msgSubstr)
		}
	}
}

func TestDecodeStrictNested(t *testing.T) {
	body := `{"show":{"show_id":"s","rows":[{"name":"A","seats":3},{"name":"B","sets":3}]}}`
	err := decodeStrict(strings.NewReader(body), &ledgerpb.CreateShowRequest{}, protojson.UnmarshalOptions{})
	var be *bodyError
	if !errors.As(err, &be) || be.field != "show.rows[1].sets" {
		t.Fatalf("decode %s = %v, want unknown field show.rows[1].sets", body, err)
	}
}

func TestDecodeStrictEmpty(t *testing.T) {
	for _, body := range []string{"", "  \n"} {
		if err := decodeStrict(strings.NewReader(body), &ledgerpb.HoldRequest{}, protojson.UnmarshalOptions{}); !errors.Is(err, io.EOF) {
			t.Errorf("decode %q = %v, want io.EOF (no body)", body, err)
		}
	}
}
