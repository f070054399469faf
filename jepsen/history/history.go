// Package history is the record of one harness run: every client operation
// with its call and return times, inputs and observed outputs, plus the final
// reads taken after the cluster healed. The runner writes it; the checkers
// read it. It is stored as JSON lines so a failed run can be re-checked and
// read by hand.
package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Kind names a client operation.
type Kind string

// The operations the workload issues.
const (
	KindHold    Kind = "hold"    // Hold(show, seats, ttl) or Hold(show, count, category, ttl): best available
	KindConfirm Kind = "confirm" // Confirm(show, hold, payment_ref)
	KindRelease Kind = "release" // Release(show, hold)
	KindRead    Kind = "read"    // GetSeatMap(show, LINEARIZABLE)
	KindGetHold Kind = "gethold" // GetHold(show, hold, LINEARIZABLE)
	KindExtend  Kind = "extend"  // Extend(show, hold, ttl)
	KindRefund  Kind = "refund"  // Refund(show, hold, reason)
	// KindQueueEntry is GetQueueEntry(show, entry, queue_token): a waiter
	// reads its place in the show's queue or the hold offered to it.
	KindQueueEntry Kind = "queueentry"
	KindLeave      Kind = "leave" // LeaveQueue(show, entry, queue_token)
	// The waiting room (its own show; jepsen/checker/room.go): a fan joins
	// (JoinWaitingRoom), reads its entry (GetWaitingRoomEntry), and holds
	// with its admission token, or without one to prove it is refused.
	KindJoin      Kind = "join"
	KindRoomEntry Kind = "roomentry"
	KindRoomHold  Kind = "roomhold"
)

// Room reports whether ops of kind k belong to the waiting room's checks,
// which the booking model does not see.
func (k Kind) Room() bool { return k == KindJoin || k == KindRoomEntry || k == KindRoomHold }

// Mutating reports whether ops of kind k change state (and carry a
// client_id and request_id).
func (k Kind) Mutating() bool {
	switch k {
	case KindHold, KindConfirm, KindRelease, KindExtend, KindRefund, KindLeave, KindJoin, KindRoomHold:
		return true
	}
	return false
}

// Outcome says whether an operation took effect.
type Outcome string

// Outcomes. Info means the client does not know: it gave up retrying an
// unknown outcome (timeout, connection lost, 503 OUTCOME_UNKNOWN) before the
// deadline. An info operation may or may not have taken effect, at any time
// after its call.
const (
	OK   Outcome = "ok"   // took effect, with the recorded outputs
	Fail Outcome = "fail" // definitely took no effect (a rejection or a definite unavailability)
	Info Outcome = "info" // indeterminate
)

// Op is one client operation. Times are nanoseconds since the run started,
// on the harness's monotonic clock; Return is 0 for Info operations.
type Op struct {
	ID      int    `json:"id"`      // dense, in call order
	Process int    `json:"process"` // the client goroutine; a process issues one op at a time
	Node    string `json:"node"`    // the node id the (last) attempt went to
	Kind    Kind   `json:"kind"`
	Show    string `json:"show"`
	Call    int64  `json:"call"`
	Return  int64  `json:"return,omitempty"`

	// Inputs.
	ClientID  string   `json:"client_id,omitempty"`
	RequestID string   `json:"request_id,omitempty"`
	Seats     []string `json:"seats,omitempty"` // hold: the seats asked for
	// Count and Category: a best-available hold asks for Count seats (of
	// Category, or of any when empty) instead of naming Seats.
	Count    int    `json:"count,omitempty"`
	Category string `json:"category,omitempty"`
	// Wait: a best-available hold that finds too few seats joins the show's
	// queue (Fail, reason QUEUED, with QueueEntryID) instead of SOLD_OUT.
	Wait bool `json:"wait,omitempty"`
	// QueueEntryID and QueueToken: the entry a QUEUED hold joined (outputs),
	// or the one a queueentry or leave op names (inputs).
	QueueEntryID string `json:"queue_entry_id,omitempty"`
	QueueToken   string `json:"queue_token,omitempty"`
	TTLms        int64  `json:"ttl_ms,omitempty"`  // hold, extend
	HoldID       string `json:"hold_id,omitempty"` // confirm, release, gethold, extend, refund
	// HoldToken is the token presented with a confirm, release, extend or
	// refund.
	HoldToken  string `json:"hold_token,omitempty"`
	PaymentRef string `json:"payment_ref,omitempty"`
	// Resend is true when this op re-sent an earlier op's request
	// (same client_id and request_id) after that op returned; Of is the
	// earlier op's ID. S4 requires the same answer.
	Resend bool `json:"resend,omitempty"`
	Of     int  `json:"of,omitempty"`

	// Outputs.
	Outcome Outcome `json:"outcome"`
	// Reason is the error's ErrorInfo reason for Fail/Info ("SEATS_TAKEN",
	// "HOLD_EXPIRED", "HOLD_GONE", "UNAVAILABLE", ...), empty for OK.
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
	OutHoldID string `json:"out_hold_id,omitempty"` // hold: the new hold
	OutToken  string `json:"out_token,omitempty"`   // hold: its token
	// OutSeats is the seats a best-available hold was granted (a hold of
	// named seats is granted Seats).
	OutSeats []string `json:"out_seats,omitempty"`
	// ExpiresAtMs: a hold's or GetHold's expires_at, or the one an extend
	// set.
	ExpiresAtMs int64  `json:"expires_at_ms,omitempty"`
	HoldState   string `json:"hold_state,omitempty"` // confirm, release, refund, gethold: HOLD_STATE_*
	// QueueState is a queueentry op's answer: WAITING, OFFERED or LEFT. When
	// OFFERED, OutHoldID, OutToken, OutSeats, HoldState and ExpiresAtMs
	// describe the hold the queue made for the waiter, and Count and
	// Category the entry's request. QueuePosition is the place in line
	// (1 = next) of a QUEUED hold or a WAITING entry.
	QueueState    string `json:"queue_state,omitempty"`
	QueuePosition int    `json:"queue_position,omitempty"`
	// Taken is the seats reported taken with SEATS_TAKEN.
	Taken []string `json:"taken,omitempty"`
	// Revision is the group's raft index the result was applied at (writes)
	// or read at (reads); AppliedAtMs the log clock there. Zero when the
	// response carried none.
	Revision    uint64 `json:"revision,omitempty"`
	AppliedAtMs int64  `json:"applied_at_ms,omitempty"`
	Replayed    bool   `json:"replayed,omitempty"`
	// SeatStates is a read's result: seat id -> FREE, HELD or BOOKED, for
	// every seat of the show.
	SeatStates map[string]string `json:"seat_states,omitempty"`

	// Waiting room ops. RoomEntryID and RoomToken: the entry a join made
	// (outputs) or a roomentry op reads (inputs); AdmissionToken: what a
	// roomhold presented (empty: none); RoomHoldID: the hold a roomhold
	// got. A roomentry's answer: RoomState, RoomPlace, AdmittedAtMs and
	// AdmissionExpiresAtMs (ledger time).
	RoomEntryID          string `json:"room_entry_id,omitempty"`
	RoomToken            string `json:"room_token,omitempty"`
	AdmissionToken       string `json:"admission_token,omitempty"`
	RoomHoldID           string `json:"room_hold_id,omitempty"`
	RoomState            string `json:"room_state,omitempty"`
	RoomPlace            uint64 `json:"room_place,omitempty"`
	AdmittedAtMs         int64  `json:"admitted_at_ms,omitempty"`
	AdmissionExpiresAtMs int64  `json:"admission_expires_at_ms,omitempty"`
}

// FinalRoom is a waiting room at the end of the run: its rate and every
// entry any join learned of, read after healing.
type FinalRoom struct {
	AdmitPerSecond uint32                    `json:"admit_per_second"`
	Entries        map[string]FinalRoomEntry `json:"entries"`
}

// FinalRoomEntry is an entry's final read; Found is false when the ledger
// has no such entry.
type FinalRoomEntry struct {
	Client       string `json:"client"`
	Found        bool   `json:"found"`
	State        string `json:"state"`
	Place        uint64 `json:"place"`
	AdmittedAtMs int64  `json:"admitted_at_ms,omitempty"`
}

// GrantedSeats is the seats an acknowledged hold took: the ones it named,
// or for best available the ones the answer listed.
func (op *Op) GrantedSeats() []string {
	if op.Count > 0 {
		return op.OutSeats
	}
	return op.Seats
}

// Layout is a show's seats and their categories, as the runner created the
// show: the checkers need it to judge best-available holds (SOLD_OUT, a
// category) and which seats one of unknown outcome may have taken.
type Layout struct {
	Show  string            `json:"show"`
	Seats map[string]string `json:"seats"` // seat id -> category
}

// Final is what the runner read after healing the cluster and waiting for
// every replica to catch up.
type Final struct {
	// Seats: show -> seat -> state, read linearizably from the leader.
	Seats map[string]map[string]string `json:"seats"`
	// Holds: every hold id any op learned of -> its final record.
	Holds map[string]FinalHold `json:"holds"`
	// Digests: group -> node -> digest, all taken at the same applied index
	// (Applied[group]); a node missing from a group's map did not reach it.
	Digests map[uint32]map[string]string `json:"digests"`
	Applied map[uint32]uint64            `json:"applied"`
	// ReadAtMs is the log clock of the final seat reads.
	ReadAtMs int64 `json:"read_at_ms"`
	// Rooms: show -> its waiting room (jepsen/checker/room.go).
	Rooms map[string]FinalRoom `json:"rooms,omitempty"`
}

// FinalHold is a hold's state at the end of the run.
type FinalHold struct {
	Show        string   `json:"show"`
	Seats       []string `json:"seats"`
	State       string   `json:"state"` // HOLD_STATE_*
	ExpiresAtMs int64    `json:"expires_at_ms"`
	PaymentRef  string   `json:"payment_ref,omitempty"`
}

// Fault is one nemesis action, for the report and the unavailability windows.
type Fault struct {
	At    int64  `json:"at"`    // ns since start
	Kind  string `json:"kind"`  // "partition-leader", "kill", "heal", ...
	Nodes string `json:"nodes"` // affected nodes, free text
}

// History is a whole run.
type History struct {
	Seed int64 `json:"seed"`
	// StartUnixNano is the wall-clock time of the run's start (the zero of
	// every op's and fault's time), to line the history up with the nodes'
	// logs; 0 when unknown.
	StartUnixNano int64 `json:"-"`
	// Layouts of the shows, when the runner recorded them; a show without
	// one is checked without categories.
	Layouts []Layout `json:"-"`
	Ops     []Op     `json:"-"`
	Faults  []Fault  `json:"-"`
	Final   *Final   `json:"-"`
}

// record is one JSON line of the file.
type record struct {
	Op     *Op     `json:"op,omitempty"`
	Fault  *Fault  `json:"fault,omitempty"`
	Final  *Final  `json:"final,omitempty"`
	Seed   *int64  `json:"seed,omitempty"`
	Start  int64   `json:"start_unix_ns,omitempty"` // with the seed
	Layout *Layout `json:"layout,omitempty"`
}

// Write stores h as JSON lines: the seed (with the start time), the show
// layouts, the ops in ID order, the faults, then the final reads.
func (h *History) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(record{Seed: &h.Seed, Start: h.StartUnixNano}); err != nil {
		return err
	}
	for i := range h.Layouts {
		if err := enc.Encode(record{Layout: &h.Layouts[i]}); err != nil {
			return err
		}
	}
	for i := range h.Ops {
		if err := enc.Encode(record{Op: &h.Ops[i]}); err != nil {
			return err
		}
	}
	for i := range h.Faults {
		if err := enc.Encode(record{Fault: &h.Faults[i]}); err != nil {
			return err
		}
	}
	if h.Final != nil {
		if err := enc.Encode(record{Final: h.Final}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Read parses a history written by Write.
func Read(r io.Reader) (*History, error) {
	h := &History{}
	dec := json.NewDecoder(r)
	for line := 1; ; line++ {
		var rec record
		err := dec.Decode(&rec)
		if err == io.EOF {
			return h, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history: record %d: %w", line, err)
		}
		switch {
		case rec.Seed != nil:
			h.Seed, h.StartUnixNano = *rec.Seed, rec.Start
		case rec.Op != nil:
			h.Ops = append(h.Ops, *rec.Op)
		case rec.Fault != nil:
			h.Faults = append(h.Faults, *rec.Fault)
		case rec.Final != nil:
			h.Final = rec.Final
		case rec.Layout != nil:
			h.Layouts = append(h.Layouts, *rec.Layout)
		default:
			return nil, fmt.Errorf("history: record %d is empty", line)
		}
	}
}

// ReadFile reads a history file.
func ReadFile(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}
