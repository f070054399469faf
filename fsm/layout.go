package fsm

import (
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// FieldError names the request field that breaks a rule. The gateway returns
// it as 400 with the field; the FSM returns it as CODE_INVALID_ARGUMENT.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return "fsm: invalid " + e.Field + ": " + e.Message }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// layout is a show's seat layout indexed for lookups. Nothing in it
// changes once made, and the ledger's shows with the same rows and
// categories (a screen's shows) share their geometry (sharedLayout).
type layout struct {
	show *ledgerpb.Show
	*geometry
	// tokenKey is the show's hold-token key (token.go), stored apart from
	// the show and cached with it: neither ever changes.
	tokenKey []byte
}

// geometry is what a layout derives from its show's rows and categories.
type geometry struct {
	rows    map[string]int // row name -> index into show.Rows
	offsets []int          // first seat index of each row
	prices  map[string]*ledgerpb.Category
	total   int
	// byLetter is each one-letter row's index + 1 ('A' first), 0 for
	// none, and rowPrice each row's price (price): the hold path finds
	// seats and sums prices without a map lookup.
	byLetter [26]int32
	rowPrice []int64
	// showRows and categories are the rows and categories it was made
	// of: the shows sharing it hold these.
	showRows   []*ledgerpb.Row
	categories []*ledgerpb.Category
}

func newLayout(show *ledgerpb.Show) *layout {
	return &layout{show: show, geometry: newGeometry(show)}
}

func newGeometry(show *ledgerpb.Show) *geometry {
	g := &geometry{
		rows:       make(map[string]int, len(show.Rows)),
		offsets:    make([]int, len(show.Rows)),
		prices:     make(map[string]*ledgerpb.Category, len(show.Categories)),
		showRows:   show.Rows,
		categories: show.Categories,
	}
	for i, r := range show.Rows {
		g.rows[r.Name] = i
		if len(r.Name) == 1 && isUpper(r.Name[0]) {
			g.byLetter[r.Name[0]-'A'] = int32(i) + 1 // the last row of a name, as rows has it
		}
		g.offsets[i] = g.total
		g.total += int(r.Seats)
	}
	for _, c := range show.Categories {
		g.prices[c.Name] = c
	}
	g.rowPrice = make([]int64, len(show.Rows))
	for i, r := range show.Rows {
		g.rowPrice[i] = g.price(r)
	}
	return g
}

// rowIndex returns the index of the row named name.
func (g *geometry) rowIndex(name string) (int, bool) {
	if len(name) == 1 && isUpper(name[0]) {
		i := g.byLetter[name[0]-'A']
		return int(i) - 1, i != 0
	}
	ri, ok := g.rows[name]
	return ri, ok
}

// sharedLayout is newLayout for the ledger: a show whose rows and
// categories equal an earlier show's shares that show's geometry, and
// holds the same rows and categories (equal in value to its own). A
// node with 20,000 shows of one screen plan keeps one geometry, not
// 20,000: less memory, and less for the garbage collector to mark.
func (led *ledger) sharedLayout(show *ledgerpb.Show) *layout {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&ledgerpb.Show{Rows: show.Rows, Categories: show.Categories})
	must(err, "encode a show's geometry")
	g := led.geometries[string(b)]
	if g == nil {
		g = newGeometry(show)
		led.geometries[string(b)] = g
	}
	show.Rows, show.Categories = g.showRows, g.categories
	return &layout{show: show, geometry: g}
}

// seatIndex maps "B12" to its position in the layout.
func (l *layout) seatIndex(seatID string) (uint16, bool) {
	row, num, ok := splitSeatID(seatID)
	if !ok {
		return 0, false
	}
	ri, ok := l.rowIndex(row)
	if !ok || num < 1 || num > int(l.showRows[ri].Seats) {
		return 0, false
	}
	return uint16(l.offsets[ri] + num - 1), true
}

// seat returns row, number and category of a seat index.
func (l *layout) seat(idx int) (row *ledgerpb.Row, number int) {
	i := l.seatRow(idx)
	return l.showRows[i], idx - l.offsets[i] + 1
}

// seatRow returns the index of the row of a seat index. The layout's
// geometry answers, which the shows of a screen share, so the hold path
// reads no show of its own (l.show).
func (g *geometry) seatRow(idx int) int {
	for i := len(g.offsets) - 1; i >= 0; i-- {
		if idx >= g.offsets[i] {
			return i
		}
	}
	panic("fsm: seat index below the first row")
}

// seatID names a seat index: "B12".
func (l *layout) seatID(idx int) string {
	row, n := l.seat(idx)
	return row.Name + strconv.Itoa(n)
}

// seatIDs returns the ids of seats idx, their bytes in one string.
func (l *layout) seatIDs(idx []int) []string {
	ids := make([]string, len(idx))
	if len(idx) == 0 {
		return ids
	}
	var ends [SeatsPerHoldMax]int
	// Built on the stack when they fit (a hold's seats always do): the
	// string is then the only allocation besides ids.
	var buf [SeatsPerHoldMax * SeatIDLenMax]byte
	b := buf[:0]
	for i, n := range idx {
		b = l.appendSeatID(b, n)
		if i < len(ends) {
			ends[i] = len(b)
		}
	}
	if len(idx) > len(ends) {
		for i, n := range idx {
			ids[i] = l.seatID(n)
		}
		return ids
	}
	all := string(b)
	start := 0
	for i := range idx {
		ids[i], start = all[start:ends[i]], ends[i]
	}
	return ids
}

// appendSeatID appends seatID(idx) to b.
func (l *layout) appendSeatID(b []byte, idx int) []byte {
	row, n := l.seat(idx)
	return strconv.AppendInt(append(b, row.Name...), int64(n), 10)
}

func (g *geometry) price(row *ledgerpb.Row) int64 {
	if c, ok := g.prices[row.Category]; ok {
		return c.PriceMinor
	}
	return 0
}

func (g *geometry) currency() string {
	if len(g.categories) > 0 {
		return g.categories[0].Currency
	}
	return ""
}

// splitSeatID splits "AB12" into "AB" and 12.
func splitSeatID(id string) (string, int, bool) {
	if len(id) == 0 || len(id) > SeatIDLenMax {
		return "", 0, false
	}
	i := 0
	for i < len(id) && isUpper(id[i]) {
		i++
	}
	if i == 0 || i == len(id) || i > RowNameLenMax || id[i] == '0' {
		return "", 0, false
	}
	for j := i; j < len(id); j++ {
		if id[j] < '0' || id[j] > '9' {
			return "", 0, false // Atoi would take a sign: "A+1"
		}
	}
	n, err := strconv.Atoi(id[i:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return id[:i], n, true
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

// ValidID reports whether s is a valid show id: 1..ShowIDLenMax of
// [A-Za-z0-9._-].
func ValidID(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// ValidateShow checks a show and its layout against the limits.
func ValidateShow(s *ledgerpb.Show) *FieldError {
	if s == nil {
		return fieldErr("show", "is required")
	}
	if !ValidID(s.ShowId, ShowIDLenMax) {
		return fieldErr("show.show_id", "must be 1..%d characters of [A-Za-z0-9._:-]", ShowIDLenMax)
	}
	if len(s.Title) > TitleLenMax {
		return fieldErr("show.title", "longer than %d bytes", TitleLenMax)
	}
	if len(s.Categories) == 0 || len(s.Categories) > CategoriesPerShowMax {
		return fieldErr("show.categories", "must list 1..%d categories", CategoriesPerShowMax)
	}
	cats := make(map[string]bool, len(s.Categories))
	for i, c := range s.Categories {
		f := fmt.Sprintf("show.categories[%d]", i)
		if !ValidID(c.Name, CategoryNameLenMax) || cats[c.Name] {
			return fieldErr(f+".name", "must be a unique name of 1..%d characters", CategoryNameLenMax)
		}
		cats[c.Name] = true
		if c.PriceMinor < 0 || c.PriceMinor > PriceMinorMax {
			return fieldErr(f+".price_minor", "must be in 0..%d", PriceMinorMax)
		}
		if len(c.Currency) != 3 || !isUpper(c.Currency[0]) || !isUpper(c.Currency[1]) || !isUpper(c.Currency[2]) {
			return fieldErr(f+".currency", "must be an ISO 4217 code such as EUR")
		}
		if c.Currency != s.Categories[0].Currency {
			return fieldErr(f+".currency", "all categories of a show must use one currency")
		}
	}
	return validateRows(s.Rows, cats)
}

func validateRows(rows []*ledgerpb.Row, cats map[string]bool) *FieldError {
	if len(rows) == 0 || len(rows) > RowsPerShowMax {
		return fieldErr("show.rows", "must list 1..%d rows", RowsPerShowMax)
	}
	names := make(map[string]bool, len(rows))
	total := 0
	for i, r := range rows {
		f := fmt.Sprintf("show.rows[%d]", i)
		if !validRowName(r.Name) || names[r.Name] {
			return fieldErr(f+".name", "must be a unique name of 1..%d capital letters", RowNameLenMax)
		}
		names[r.Name] = true
		if r.Seats < 1 || r.Seats > SeatsPerRowMax {
			return fieldErr(f+".seats", "must be in 1..%d", SeatsPerRowMax)
		}
		if !cats[r.Category] {
			return fieldErr(f+".category", "names no category of the show")
		}
		total += int(r.Seats)
	}
	if total > SeatsPerShowMax {
		return fieldErr("show.rows", "a show has at most %d seats", SeatsPerShowMax)
	}
	return nil
}

func validRowName(s string) bool {
	if len(s) == 0 || len(s) > RowNameLenMax {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isUpper(s[i]) {
			return false
		}
	}
	return true
}

// ValidateIdentity checks the exactly-once identity of a client request.
func ValidateIdentity(clientID, requestID string) *FieldError {
	if !ValidID(clientID, ClientIDLenMax) {
		return fieldErr("client_id", "must be 1..%d characters of [A-Za-z0-9._:-]", ClientIDLenMax)
	}
	if !ValidID(requestID, RequestIDLenMax) {
		return fieldErr("request_id", "must be 1..%d characters of [A-Za-z0-9._:-]", RequestIDLenMax)
	}
	return nil
}

// ValidateHold checks a hold request's fields (not the seats' existence):
// either explicit seat_ids or a best-available count, not both.
func ValidateHold(c *ledgerpb.HoldCmd) *FieldError {
	if !ValidID(c.ShowId, ShowIDLenMax) {
		return fieldErr("show_id", "must be 1..%d characters of [A-Za-z0-9._:-]", ShowIDLenMax)
	}
	if fe := validateHoldSeats(c); fe != nil {
		return fe
	}
	if c.TtlMs != 0 && (c.TtlMs < HoldTTLMinMs || c.TtlMs > HoldTTLMaxMs) {
		return fieldErr("ttl_seconds", "must be in %d..%d seconds", HoldTTLMinMs/1000, HoldTTLMaxMs/1000)
	}
	if len(c.AdmissionToken) > AdmissionTokenLenMax {
		return fieldErr("admission_token", "is not an admission token")
	}
	return nil
}

func validateHoldSeats(c *ledgerpb.HoldCmd) *FieldError {
	if len(c.SeatIds) == 0 {
		if c.Count == 0 {
			return fieldErr("seat_ids", "name 1..%d seats, or ask for a count of best available seats", SeatsPerHoldMax)
		}
		if c.Count > SeatsPerHoldMax {
			return fieldErr("count", "must be in 1..%d when no seat_ids are named", SeatsPerHoldMax)
		}
		if c.Category != "" && !ValidID(c.Category, CategoryNameLenMax) {
			return fieldErr("category", "is not a category name")
		}
		return nil
	}
	if c.Count != 0 || c.Category != "" {
		return fieldErr("count", "name seat_ids or ask for a count (best available), not both")
	}
	if c.Wait {
		return fieldErr("wait", "only a best-available hold (count) can wait in the queue")
	}
	if len(c.SeatIds) > SeatsPerHoldMax {
		return fieldErr("seat_ids", "must name 1..%d seats", SeatsPerHoldMax)
	}
	// At most SeatsPerHoldMax seats: comparing each with those before it
	// is cheaper than hashing them into a set.
	for i, s := range c.SeatIds {
		if len(s) == 0 || len(s) > SeatIDLenMax {
			return fieldErr("seat_ids", "seat id %q is not a seat id such as A1", s)
		}
		if slices.Contains(c.SeatIds[:i], s) {
			return fieldErr("seat_ids", "seat %s is named twice", s)
		}
	}
	return nil
}

// ValidateHoldRef checks the show and hold ids of a confirm or release.
func ValidateHoldRef(showID, holdID string) *FieldError {
	if !ValidID(showID, ShowIDLenMax) {
		return fieldErr("show_id", "must be 1..%d characters of [A-Za-z0-9._:-]", ShowIDLenMax)
	}
	if !ValidID(holdID, HoldIDLenMax) {
		return fieldErr("hold_id", "must be 1..%d characters of [A-Za-z0-9._:-]", HoldIDLenMax)
	}
	return nil
}

// ValidateConfirm checks a confirm request's fields.
func ValidateConfirm(c *ledgerpb.ConfirmCmd) *FieldError {
	if fe := ValidateHoldRef(c.ShowId, c.HoldId); fe != nil {
		return fe
	}
	if len(c.PaymentRef) == 0 || len(c.PaymentRef) > PaymentRefLenMax {
		return fieldErr("payment_ref", "must be 1..%d bytes", PaymentRefLenMax)
	}
	return ValidateHoldToken(c.HoldToken)
}

// ValidateHoldToken checks that a request that acts on a hold carries a
// token of the issued shape.
func ValidateHoldToken(token string) *FieldError {
	if token == "" {
		return fieldErr("hold_token", "is required: the token the hold was issued with")
	}
	if !ValidID(token, HoldTokenLenMax) {
		return fieldErr("hold_token", "is not a hold token")
	}
	return nil
}

// ValidateRelease checks a release request's fields.
func ValidateRelease(c *ledgerpb.ReleaseCmd) *FieldError {
	if fe := ValidateHoldRef(c.ShowId, c.HoldId); fe != nil {
		return fe
	}
	return ValidateHoldToken(c.HoldToken)
}

// ValidateExtend checks an extend request's fields.
func ValidateExtend(c *ledgerpb.ExtendCmd) *FieldError {
	if fe := ValidateHoldRef(c.ShowId, c.HoldId); fe != nil {
		return fe
	}
	if fe := ValidateHoldToken(c.HoldToken); fe != nil {
		return fe
	}
	if c.TtlMs != 0 && (c.TtlMs < HoldTTLMinMs || c.TtlMs > HoldTTLMaxMs) {
		return fieldErr("ttl_seconds", "must be in %d..%d seconds", HoldTTLMinMs/1000, HoldTTLMaxMs/1000)
	}
	return nil
}

// ValidateLeaveQueue checks a leave request's fields.
func ValidateLeaveQueue(c *ledgerpb.LeaveQueueCmd) *FieldError {
	if !ValidID(c.ShowId, ShowIDLenMax) {
		return fieldErr("show_id", "must be 1..%d characters of [A-Za-z0-9._:-]", ShowIDLenMax)
	}
	if !ValidID(c.EntryId, HoldIDLenMax) {
		return fieldErr("entry_id", "must be 1..%d characters of [A-Za-z0-9._:-]", HoldIDLenMax)
	}
	if c.QueueToken == "" || !ValidID(c.QueueToken, HoldTokenLenMax) {
		return fieldErr("queue_token", "is required: the token the queue entry was issued with")
	}
	return nil
}

// ValidateRefund checks a refund request's fields.
func ValidateRefund(c *ledgerpb.RefundCmd) *FieldError {
	if fe := ValidateHoldRef(c.ShowId, c.HoldId); fe != nil {
		return fe
	}
	if fe := ValidateHoldToken(c.HoldToken); fe != nil {
		return fe
	}
	if len(c.Reason) > RefundReasonLenMax {
		return fieldErr("reason", "longer than %d bytes", RefundReasonLenMax)
	}
	return nil
}
