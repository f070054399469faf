package fsm

import (
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// decodeEntry decodes a log entry as DecodeCommand does, without garbage
// per command for the shape group commit proposes under load: a Batch (or
// a single command) of holds, confirms, releases, extends and waiting-room
// joins.
//
// proto.Unmarshal makes every message and every string apart, about eight
// allocations per command. Here an entry's strings share one copy of its
// bytes, its messages come from one array of slots, and show ids are the
// ledger's own strings: an entry costs a handful of allocations however
// many commands it carries.
//
// Anything else (another op, a nested batch, an unknown, repeated or
// mistyped field, a string that is not UTF-8) goes to DecodeCommand whole,
// so both give equal messages (FuzzDecodeEntry) and the same errors.
//
// Sharing has a rule: a string of the entry must not outlive it in the
// ledger, or one id would keep the whole entry's bytes in memory. apply
// copies what it keeps (createHold: the client and the seat ids; confirm:
// the payment reference; joinRoom: the client and the request id); show
// ids need nothing, being the ledger's.
// TestDecodedEntriesLeaveNothingInTheLedger walks the machine to hold
// that rule. Only the apply goroutine calls it (it reads the ledger).
//
// The messages are decoded into the machine's scratch (decodeScratch), the
// same memory for every entry: a decoded command is good until the next
// entry is decoded, and nothing may keep it, nor its ops and batch, past
// its apply (the same test holds that too).
func (m *Machine) decodeEntry(data []byte) (*ledgerpb.Command, error) {
	d := entryDecoder{led: &m.led, scratch: &m.decodeScratch}
	if cmd, ok := d.entry(data); ok {
		return cmd, nil
	}
	return DecodeCommand(data)
}

// decodeArena, when set (tests), learns the memory each decoded entry's
// strings and slots live in, size bytes at p.
var decodeArena func(p unsafe.Pointer, size uintptr)

// cmdSlot is one command's messages, every op the fast path knows: one
// allocation per entry for all of them.
type cmdSlot struct {
	cmd       ledgerpb.Command
	hold      ledgerpb.HoldCmd
	holdOp    ledgerpb.Command_Hold
	confirm   ledgerpb.ConfirmCmd
	confirmOp ledgerpb.Command_Confirm
	release   ledgerpb.ReleaseCmd
	releaseOp ledgerpb.Command_Release
	extend    ledgerpb.ExtendCmd
	extendOp  ledgerpb.Command_Extend
	join      ledgerpb.JoinRoomCmd
	joinOp    ledgerpb.Command_JoinRoom
}

// entryOuter is a batch entry's own messages.
type entryOuter struct {
	cmd     ledgerpb.Command
	batch   ledgerpb.Batch
	batchOp ledgerpb.Command_Batch
}

// decodeScratch is the memory entries' messages are decoded into, the
// machine's, reused from entry to entry (decodeEntry); apply goroutine
// only. An entry's strings and seat id lists are its own: results may
// keep them.
//
// It keeps slots for decodeSlotsKept commands (with the strings of the
// last entry that fit them, until the next): about 160 KiB a machine.
type decodeScratch struct {
	slots []cmdSlot
	outer entryOuter
	cmds  []*ledgerpb.Command
}

// decodeSlotsKept is the most commands an entry decodes into the
// machine's scratch; a larger entry's messages get memory of their own.
const decodeSlotsKept = 256

type entryDecoder struct {
	led     *ledger
	scratch *decodeScratch
	str     string   // the entry's bytes, once, for its strings
	n       int      // commands in the entry
	seats   []string // every hold's seat ids, one array
	bytes   []byte   // every join's seed, one array
}

// entry decodes data, or says it cannot.
func (d *entryDecoder) entry(data []byte) (*ledgerpb.Command, bool) {
	n, batch, ok := countBatch(data)
	if !ok {
		return nil, false
	}
	d.str, d.n = string(data), n
	if d.scratch == nil {
		d.scratch = &decodeScratch{} // memory of the entry's own
	}
	sc := d.scratch
	var slots []cmdSlot
	switch {
	case n > decodeSlotsKept:
		slots = make([]cmdSlot, n) // not kept: the scratch stays small
	case cap(sc.slots) < max(n, 1):
		sc.slots = make([]cmdSlot, max(n, 1), decodeSlotsKept)
		slots = sc.slots
	default:
		slots = sc.slots[:max(n, 1)]
		clear(slots)
	}
	d.arena(unsafe.Pointer(unsafe.StringData(d.str)), uintptr(len(d.str)))
	d.arena(unsafe.Pointer(&slots[0]), uintptr(len(slots))*unsafe.Sizeof(slots[0]))
	if !batch {
		if !d.command(data, 0, &slots[0]) {
			return nil, false
		}
		return &slots[0].cmd, true
	}
	out := &sc.outer
	*out = entryOuter{}
	var cmds []*ledgerpb.Command
	switch {
	case n > decodeSlotsKept:
		cmds = make([]*ledgerpb.Command, 0, n)
	case cap(sc.cmds) < n:
		sc.cmds = make([]*ledgerpb.Command, 0, decodeSlotsKept)
		cmds = sc.cmds
	default:
		cmds = sc.cmds[:0]
	}
	d.arena(unsafe.Pointer(out), unsafe.Sizeof(*out))
	if n > 0 {
		d.arena(unsafe.Pointer(unsafe.SliceData(cmds[:1])), uintptr(n)*unsafe.Sizeof(cmds[0]))
	}
	seenBatch := false
	for b, off := data, 0; len(b) > 0; {
		num, typ, tn := protowire.ConsumeTag(b)
		if tn < 0 {
			return nil, false
		}
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, vn := protowire.ConsumeVarint(b[tn:])
			if vn < 0 || out.cmd.ProposedAtMs != 0 {
				return nil, false // a repeated field: DecodeCommand keeps the last
			}
			out.cmd.ProposedAtMs = int64(v)
			b, off = b[tn+vn:], off+tn+vn
			continue
		case num == 15 && typ == protowire.BytesType && !seenBatch:
			seenBatch = true
			v, vn := protowire.ConsumeBytes(b[tn:])
			if vn < 0 {
				return nil, false
			}
			start := off + tn + (vn - len(v))
			for cb, coff := v, start; len(cb) > 0; {
				cnum, ctyp, ctn := protowire.ConsumeTag(cb)
				if ctn < 0 || cnum != 1 || ctyp != protowire.BytesType {
					return nil, false
				}
				c, cvn := protowire.ConsumeBytes(cb[ctn:])
				if cvn < 0 {
					return nil, false
				}
				i := len(cmds)
				if !d.command(c, coff+ctn+(cvn-len(c)), &slots[i]) {
					return nil, false
				}
				cmds = append(cmds, &slots[i].cmd)
				cb, coff = cb[ctn+cvn:], coff+ctn+cvn
			}
			b, off = b[tn+vn:], off+tn+vn
			continue
		}
		return nil, false
	}
	if !seenBatch {
		return nil, false
	}
	if len(cmds) > 0 {
		out.batch.Commands = cmds
	}
	out.batchOp.Batch = &out.batch
	out.cmd.Op = &out.batchOp
	return &out.cmd, true
}

// arena tells decodeArena, if set, of size bytes of the entry's at p.
func (d *entryDecoder) arena(p unsafe.Pointer, size uintptr) {
	if decodeArena != nil && size > 0 {
		decodeArena(p, size)
	}
}

// countBatch tells whether data is a batch entry, and counts its commands
// (1 for an entry that is not a batch): no more than a walk of the tags.
func countBatch(data []byte) (n int, batch bool, ok bool) {
	for b := data; len(b) > 0; {
		num, typ, tn := protowire.ConsumeTag(b)
		if tn < 0 {
			return 0, false, false
		}
		vn := protowire.ConsumeFieldValue(num, typ, b[tn:])
		if vn < 0 {
			return 0, false, false
		}
		if num == 15 && typ == protowire.BytesType {
			if batch {
				return 0, false, false
			}
			batch = true
			v, _ := protowire.ConsumeBytes(b[tn:])
			for cb := v; len(cb) > 0; {
				cnum, ctyp, ctn := protowire.ConsumeTag(cb)
				if ctn < 0 {
					return 0, false, false
				}
				cvn := protowire.ConsumeFieldValue(cnum, ctyp, cb[ctn:])
				if cvn < 0 {
					return 0, false, false
				}
				n++
				cb = cb[ctn+cvn:]
			}
		}
		b = b[tn+vn:]
	}
	if !batch {
		return 1, false, true
	}
	return n, true, true
}

// command decodes one command at data, which starts at off within the
// entry, into s. A command without an op is DecodeCommand's to decode.
func (d *entryDecoder) command(data []byte, off int, s *cmdSlot) bool {
	c := &s.cmd
	var seen uint32 // fields 1..4 seen, by bit
	hasOp := false
	for b := data; len(b) > 0; {
		num, typ, tn := protowire.ConsumeTag(b)
		if tn < 0 {
			return false
		}
		if num >= 1 && num <= 4 {
			if seen&(1<<num) != 0 {
				return false
			}
			seen |= 1 << num
		}
		switch {
		case (num == 1 || num == 4) && typ == protowire.VarintType:
			v, vn := protowire.ConsumeVarint(b[tn:])
			if vn < 0 {
				return false
			}
			if num == 1 {
				c.ProposedAtMs = int64(v)
			} else {
				c.FirstSentAtMs = int64(v)
			}
			b, off = b[tn+vn:], off+tn+vn
		case (num == 2 || num == 3) && typ == protowire.BytesType:
			v, vn := protowire.ConsumeBytes(b[tn:])
			str, ok := d.string(v, off+tn+(vn-len(v)), vn)
			if !ok {
				return false
			}
			if num == 2 {
				c.ClientId = str
			} else {
				c.RequestId = str
			}
			b, off = b[tn+vn:], off+tn+vn
		case typ == protowire.BytesType && !hasOp && (num == 11 || num == 12 || num == 13 || num == 16 || num == 51):
			hasOp = true
			v, vn := protowire.ConsumeBytes(b[tn:])
			if vn < 0 {
				return false
			}
			start := off + tn + (vn - len(v))
			var ok bool
			switch num {
			case 11:
				ok = d.hold(v, start, &s.hold)
				s.holdOp.Hold = &s.hold
				c.Op = &s.holdOp
			case 12:
				ok = d.confirm(v, start, &s.confirm)
				s.confirmOp.Confirm = &s.confirm
				c.Op = &s.confirmOp
			case 13:
				ok = d.release(v, start, &s.release)
				s.releaseOp.Release = &s.release
				c.Op = &s.releaseOp
			case 16:
				ok = d.extend(v, start, &s.extend)
				s.extendOp.Extend = &s.extend
				c.Op = &s.extendOp
			case 51:
				ok = d.joinRoom(v, start, &s.join)
				s.joinOp.JoinRoom = &s.join
				c.Op = &s.joinOp
			}
			if !ok {
				return false
			}
			b, off = b[tn+vn:], off+tn+vn
		default:
			return false
		}
	}
	return hasOp
}

// string returns the string field v, read at off within the entry (vn is
// what ConsumeBytes returned): a piece of d.str, or not ok.
func (d *entryDecoder) string(v []byte, off, vn int) (string, bool) {
	if vn < 0 || !utf8.Valid(v) {
		return "", false
	}
	if len(v) == 0 {
		return "", true
	}
	return d.str[off : off+len(v)], true
}

// show is string for a show id: the ledger's own string when it knows the
// show.
func (d *entryDecoder) show(v []byte, off, vn int) (string, bool) {
	if s := d.led.shows[string(v)]; s != nil && vn >= 0 {
		return s.id, true
	}
	return d.string(v, off, vn)
}

// fields walks a message's fields: fn gets each field's number, wire
// type, value bytes (for bytes fields) or varint, and the value's offset
// within the entry; it says whether the field is known. varints and
// repeated are sets of field numbers, by bit: the varint fields, and the
// fields that may come more than once (any other coming twice is left to
// DecodeCommand, which keeps the last).
func (d *entryDecoder) fields(data []byte, off int, fn func(num protowire.Number, v []byte, x uint64, voff, vn int) bool, varints, repeated uint64) bool {
	var seen uint64
	for b := data; len(b) > 0; {
		num, typ, tn := protowire.ConsumeTag(b)
		if tn < 0 || num > 63 {
			return false
		}
		if seen&(1<<num) != 0 && repeated&(1<<num) == 0 {
			return false
		}
		seen |= 1 << num
		isVarint := varints&(1<<num) != 0
		var v []byte
		var x uint64
		var vn int
		switch {
		case isVarint && typ == protowire.VarintType:
			x, vn = protowire.ConsumeVarint(b[tn:])
		case !isVarint && typ == protowire.BytesType:
			v, vn = protowire.ConsumeBytes(b[tn:])
		default:
			return false
		}
		if vn < 0 || !fn(num, v, x, off+tn+(vn-len(v)), vn) {
			return false
		}
		b, off = b[tn+vn:], off+tn+vn
	}
	return true
}

// The commands' fields: numbers as in ledger.proto and waitroom.proto.

func (d *entryDecoder) hold(data []byte, off int, h *ledgerpb.HoldCmd) bool {
	const varints = 1<<3 | 1<<4 | 1<<6
	first := len(d.seats)
	ok := d.fields(data, off, func(num protowire.Number, v []byte, x uint64, voff, vn int) bool {
		var ok bool
		switch num {
		case 1:
			h.ShowId, ok = d.show(v, voff, vn)
		case 2:
			var s string
			s, ok = d.string(v, voff, vn)
			if d.seats == nil {
				d.seats = make([]string, 0, d.n*SeatsPerHoldMax/2)
				d.arena(unsafe.Pointer(unsafe.SliceData(d.seats[:1])), uintptr(cap(d.seats))*unsafe.Sizeof(""))
			}
			if len(d.seats) == cap(d.seats) {
				d.seats = append(d.seats, s)
				d.arena(unsafe.Pointer(unsafe.SliceData(d.seats)), uintptr(cap(d.seats))*unsafe.Sizeof(""))
			} else {
				d.seats = append(d.seats, s)
			}
		case 3:
			h.TtlMs, ok = int64(x), true
		case 4:
			h.Count, ok = uint32(x), true
		case 5:
			h.Category, ok = d.string(v, voff, vn)
		case 6:
			h.Wait, ok = x != 0, true
		case 50:
			h.AdmissionToken, ok = d.string(v, voff, vn)
		}
		return ok
	}, varints, 1<<2) // seat_ids repeats
	if !ok {
		return false
	}
	if len(d.seats) > first {
		h.SeatIds = d.seats[first:len(d.seats):len(d.seats)]
	}
	return true
}

func (d *entryDecoder) confirm(data []byte, off int, c *ledgerpb.ConfirmCmd) bool {
	return d.fields(data, off, func(num protowire.Number, v []byte, _ uint64, voff, vn int) bool {
		var ok bool
		switch num {
		case 1:
			c.ShowId, ok = d.show(v, voff, vn)
		case 2:
			c.HoldId, ok = d.string(v, voff, vn)
		case 3:
			c.PaymentRef, ok = d.string(v, voff, vn)
		case 4:
			c.HoldToken, ok = d.string(v, voff, vn)
		}
		return ok
	}, 0, 0)
}

func (d *entryDecoder) release(data []byte, off int, c *ledgerpb.ReleaseCmd) bool {
	return d.fields(data, off, func(num protowire.Number, v []byte, _ uint64, voff, vn int) bool {
		var ok bool
		switch num {
		case 1:
			c.ShowId, ok = d.show(v, voff, vn)
		case 2:
			c.HoldId, ok = d.string(v, voff, vn)
		case 3:
			c.HoldToken, ok = d.string(v, voff, vn)
		}
		return ok
	}, 0, 0)
}

func (d *entryDecoder) extend(data []byte, off int, c *ledgerpb.ExtendCmd) bool {
	return d.fields(data, off, func(num protowire.Number, v []byte, x uint64, voff, vn int) bool {
		var ok bool
		switch num {
		case 1:
			c.ShowId, ok = d.show(v, voff, vn)
		case 2:
			c.HoldId, ok = d.string(v, voff, vn)
		case 3:
			c.HoldToken, ok = d.string(v, voff, vn)
		case 4:
			c.TtlMs, ok = int64(x), true
		}
		return ok
	}, 1<<4, 0)
}

func (d *entryDecoder) joinRoom(data []byte, off int, j *ledgerpb.JoinRoomCmd) bool {
	return d.fields(data, off, func(num protowire.Number, v []byte, _ uint64, voff, vn int) bool {
		var ok bool
		switch num {
		case 1:
			j.ShowId, ok = d.show(v, voff, vn)
		case 2:
			j.Seed, ok = d.copyBytes(v), true
		}
		return ok
	}, 0, 0)
}

// copyBytes is a bytes field's value: a copy in the entry's one array
// for them, never the entry's own bytes, which the caller may reuse.
// Empty, it is empty and not nil, as proto.Unmarshal makes it.
func (d *entryDecoder) copyBytes(v []byte) []byte {
	if d.bytes == nil {
		d.bytes = make([]byte, 0, len(d.str))
		d.arena(unsafe.Pointer(unsafe.SliceData(d.bytes[:1])), uintptr(cap(d.bytes)))
	}
	start := len(d.bytes)
	d.bytes = append(d.bytes, v...) // the array holds the whole entry: never grows
	return d.bytes[start:len(d.bytes):len(d.bytes)]
}
