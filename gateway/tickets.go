package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"rsc.io/qr"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Tickets. A confirmed booking has one ticket per seat; each ticket's code
// is signed with the cluster's Ed25519 ticket key, so a door scanner can
// check it offline with the public key (GetTicketKey) and no call to the
// ledger. Codes are made when read, not stored: Ed25519 signatures are
// deterministic, so every node with the same key returns the same code.
// Every node of a cluster must be given the same key (seatd serve
// --ticket-key); otherwise each node's codes verify only with its own key.

// ticketCodePrefix names the code format and its version.
const ticketCodePrefix = "SLT1"

// bookingsPageDefault and bookingsPageMax bound ListBookings per group.
const (
	bookingsPageDefault = 100
	bookingsPageMax     = 1000
)

// SetTicketKey sets the key that signs ticket codes; call before serving.
func (s *Server) SetTicketKey(k ed25519.PrivateKey) { s.ticketKey = k }

// NewTicketKey draws a fresh ticket key.
func NewTicketKey() ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("gateway: draw a ticket key: %v", err))
	}
	return k
}

// TicketClaims is what a ticket code says.
type TicketClaims struct {
	ShowID, HoldID, SeatID string
	ConfirmedAtMs          int64
}

func (c TicketClaims) payload() string {
	return strings.Join([]string{c.ShowID, c.HoldID, c.SeatID, strconv.FormatInt(c.ConfirmedAtMs, 10)}, "|")
}

// SignTicket makes the code of one ticket.
func SignTicket(k ed25519.PrivateKey, c TicketClaims) string {
	p := c.payload()
	enc := base64.RawURLEncoding
	return ticketCodePrefix + "." + enc.EncodeToString([]byte(p)) + "." + enc.EncodeToString(ed25519.Sign(k, []byte(p)))
}

// ErrBadTicket is returned for a code that is malformed or not signed by
// the key.
var ErrBadTicket = errors.New("gateway: ticket code is not valid")

// VerifyTicket checks a code against the cluster's public key and returns
// its claims.
func VerifyTicket(pub ed25519.PublicKey, code string) (TicketClaims, error) {
	parts := strings.Split(code, ".")
	if len(parts) != 3 || parts[0] != ticketCodePrefix {
		return TicketClaims{}, fmt.Errorf("%w: not a %s code", ErrBadTicket, ticketCodePrefix)
	}
	enc := base64.RawURLEncoding
	p, err1 := enc.DecodeString(parts[1])
	sig, err2 := enc.DecodeString(parts[2])
	if err1 != nil || err2 != nil || len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, p, sig) {
		return TicketClaims{}, fmt.Errorf("%w: the signature does not verify", ErrBadTicket)
	}
	f := strings.Split(string(p), "|")
	if len(f) != 4 {
		return TicketClaims{}, fmt.Errorf("%w: payload has %d fields", ErrBadTicket, len(f))
	}
	at, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return TicketClaims{}, fmt.Errorf("%w: bad time", ErrBadTicket)
	}
	return TicketClaims{ShowID: f[0], HoldID: f[1], SeatID: f[2], ConfirmedAtMs: at}, nil
}

// ParseTicketKey reads a public key as GetTicketKey returns it.
func ParseTicketKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("gateway: not an Ed25519 public key in unpadded base64url")
	}
	return b, nil
}

// GetTicketKey returns the public key that verifies ticket codes.
func (s *Server) GetTicketKey(context.Context, *ledgerpb.GetTicketKeyRequest) (*ledgerpb.TicketKey, error) {
	pub := s.ticketKey.Public().(ed25519.PublicKey)
	return &ledgerpb.TicketKey{Algorithm: "Ed25519", PublicKey: base64.RawURLEncoding.EncodeToString(pub)}, nil
}

// GetBooking returns a booking with its tickets, for the holder of its
// token. A hold that is not (or no longer) a confirmed booking is 409
// HOLD_NOT_CONFIRMED with its state; a refunded booking is returned with
// tickets that carry no code.
func (s *Server) GetBooking(ctx context.Context, req *ledgerpb.GetBookingRequest) (*ledgerpb.BookingDetail, error) {
	if fe := fsm.ValidateHoldRef(req.ShowId, req.HoldId); fe != nil {
		return nil, fieldError(fe)
	}
	if fe := fsm.ValidateHoldToken(req.HoldToken); fe != nil {
		return nil, fieldError(fe)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	h, seats, err := s.router.OwnedHold(ctx, req.ShowId, req.HoldId, req.HoldToken)
	if err != nil {
		return nil, routeError(err)
	}
	if h.State != ledgerpb.HoldState_HOLD_STATE_CONFIRMED && h.State != ledgerpb.HoldState_HOLD_STATE_REFUNDED {
		return nil, newStatus("HOLD_NOT_CONFIRMED", fmt.Sprintf("hold %s is %s, not a booking", h.HoldId, h.State),
			&ledgerpb.ErrorDetail{HoldState: h.State})
	}
	out := &ledgerpb.BookingDetail{Booking: h}
	for _, st := range seats {
		t := &ledgerpb.Ticket{TicketId: h.HoldId + "/" + st.SeatId, SeatId: st.SeatId, Row: st.Row, Number: st.Number,
			Category: st.Category, PriceMinor: st.PriceMinor}
		if h.State == ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
			t.Code = SignTicket(s.ticketKey, TicketClaims{ShowID: h.ShowId, HoldID: h.HoldId, SeatID: st.SeatId,
				ConfirmedAtMs: confirmedAt(h)})
			t.QrUrl = "/v1/shows/" + url.PathEscape(h.ShowId) + "/bookings/" + url.PathEscape(h.HoldId) +
				"/tickets/" + url.PathEscape(st.SeatId) + "/qr.png?hold_token=" + url.QueryEscape(req.HoldToken)
		}
		out.Tickets = append(out.Tickets, t)
	}
	return out, nil
}

// confirmedAt is a booking's confirm time (its hold's closing time).
func confirmedAt(h *ledgerpb.HoldInfo) int64 {
	if h.ClosedAt == nil {
		return 0
	}
	return h.ClosedAt.AsTime().UnixMilli()
}

// ListBookings lists a client's bookings in every show, with their payment
// refs, so only for the booking backend or a caller with the client's proof
// (auth.go, proof.go). It answers no tokens and no codes: the backend hands
// those to the fan, who reads them with the hold token.
func (s *Server) ListBookings(ctx context.Context, req *ledgerpb.ListBookingsRequest) (*ledgerpb.ListBookingsResponse, error) {
	if !fsm.ValidID(req.ClientId, fsm.ClientIDLenMax) {
		return nil, fieldError(&fsm.FieldError{Field: "client_id", Message: "is not a client id"})
	}
	if len(req.ClientProof) > clientProofLenMax {
		return nil, fieldError(&fsm.FieldError{Field: "client_proof", Message: fmt.Sprintf("is longer than %d bytes", clientProofLenMax)})
	}
	if err := s.auth.client(ctx, req.ClientId, req.ClientProof, time.Now()); err != nil {
		return nil, err
	}
	size := req.PageSize
	if size == 0 {
		size = bookingsPageDefault
	}
	if size > bookingsPageMax {
		return nil, fieldError(&fsm.FieldError{Field: "page_size", Message: fmt.Sprintf("must be at most %d", bookingsPageMax)})
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	bs, more, err := s.router.ClientBookings(ctx, req.ClientId, size)
	if err != nil {
		return nil, routeError(err)
	}
	return &ledgerpb.ListBookingsResponse{Bookings: bs, Truncated: more}, nil
}

// revocationsPageDefault and revocationsPageMax bound a revocations page.
const (
	revocationsPageDefault = 100
	revocationsPageMax     = 1000
)

// ListRevocations is the door scanners' feed: the show's bookings refunded
// after a revision. It is public: it names hold ids and seats, which every
// ticket of them carries, and nothing of their owners.
func (s *Server) ListRevocations(ctx context.Context, req *ledgerpb.ListRevocationsRequest) (*ledgerpb.Revocations, error) {
	if !fsm.ValidID(req.ShowId, fsm.ShowIDLenMax) {
		return nil, fieldError(&fsm.FieldError{Field: "show_id", Message: "is not a show id"})
	}
	size := req.PageSize
	if size == 0 {
		size = revocationsPageDefault
	}
	if size > revocationsPageMax {
		return nil, fieldError(&fsm.FieldError{Field: "page_size", Message: fmt.Sprintf("must be at most %d", revocationsPageMax)})
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	revs, more, err := s.router.Revocations(ctx, req.ShowId, req.AfterRevision, size)
	if err != nil {
		return nil, routeError(err)
	}
	next := req.AfterRevision
	if len(revs) > 0 {
		next = revs[len(revs)-1].Revision
	}
	return &ledgerpb.Revocations{Revocations: revs, NextRevision: next, More: more}, nil
}

// qrModulePixels is the size of one QR module in the PNG.
const qrModulePixels = 6

// ticketQR serves a ticket's code as a QR PNG:
// GET /v1/shows/{show_id}/bookings/{hold_id}/tickets/{seat_id}/qr.png?hold_token=
func ticketQR(srv *Server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := srv.GetBooking(r.Context(), &ledgerpb.GetBookingRequest{ShowId: r.PathValue("show_id"),
			HoldId: r.PathValue("hold_id"), HoldToken: r.URL.Query().Get("hold_token")})
		if err != nil {
			writeError(r.Context(), nil, jsonMarshaler, w, r, err)
			return
		}
		for _, t := range b.Tickets {
			if t.SeatId != r.PathValue("seat_id") {
				continue
			}
			if t.Code == "" {
				writeError(r.Context(), nil, jsonMarshaler, w, r, newStatus("HOLD_NOT_CONFIRMED", "the booking was refunded: its tickets are void"))
				return
			}
			code, err := qr.Encode(t.Code, qr.M)
			if err != nil {
				writeError(r.Context(), nil, jsonMarshaler, w, r, newStatus("INTERNAL", "encode QR: "+err.Error()))
				return
			}
			code.Scale = qrModulePixels
			w.Header().Set("Content-Type", "image/png")
			w.Header().Set("Cache-Control", "private, no-store")
			w.Write(code.PNG())
			return
		}
		writeError(r.Context(), nil, jsonMarshaler, w, r, newStatus("NOT_FOUND", "the booking has no seat "+r.PathValue("seat_id")))
	}
}
