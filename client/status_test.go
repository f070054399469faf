// This file proves the readers of nodes' answers (errors.go): which
// statuses mean "not found", "unavailable here" and "the node is gone".
package client

import (
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestStatusReaders(t *testing.T) {
	for _, tt := range []struct {
		err                         error
		notFound, unavailable, gone bool
	}{
		{status.Error(codes.NotFound, "no show"), true, false, false},
		{status.Error(codes.Unavailable, "no leader"), false, true, true},
		{status.Error(codes.ResourceExhausted, "too many watchers"), false, false, true},
		{status.Error(codes.DeadlineExceeded, "late"), false, false, true},
		{status.Error(codes.Canceled, "cancelled"), false, false, true},
		{io.EOF, false, false, true}, // a stream that ended without a status
		{status.Error(codes.InvalidArgument, "bad"), false, false, false},
		{status.Error(codes.PermissionDenied, "token"), false, false, false},
		{errors.New("plain"), false, false, true}, // status.Code: Unknown
		{nil, false, false, false},
	} {
		if got := NotFound(tt.err); got != tt.notFound {
			t.Errorf("NotFound(%v) = %t, want %t", tt.err, got, tt.notFound)
		}
		if got := Unavailable(tt.err); got != tt.unavailable {
			t.Errorf("Unavailable(%v) = %t, want %t", tt.err, got, tt.unavailable)
		}
		if got := Gone(tt.err); got != tt.gone {
			t.Errorf("Gone(%v) = %t, want %t", tt.err, got, tt.gone)
		}
	}
}
