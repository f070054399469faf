package fsm

// This file holds decodeEntry to its promises: it decodes what
// DecodeCommand decodes, to an equal message, or leaves the entry to it
// (FuzzDecodeEntry); it takes the hot shapes itself; and nothing of a
// decoded entry stays in the machine once applied.

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// hotEntries are entries of the shape decodeEntry takes itself.
func hotEntries() []*ledgerpb.Command {
	hold := cmdHold("c1", "r1", "s1", 5000, "A1", "A2")
	hold.FirstSentAtMs = 999
	best := cmdBest("c2", "r2", "s1", 0, 2, "vip")
	best.GetHold().Wait = true
	best.GetHold().AdmissionToken = "tok"
	return []*ledgerpb.Command{
		at(1000, cmdHold("c1", "r1", "s1", 5000, "A1")),
		at(1000, cmdConfirm("c1", "r3", "s1", "h0-2-0", "pay-1")),
		at(1000, cmdBatch(hold, best, cmdConfirm("c1", "r3", "s1", "h0-2-0", "pay-1"),
			cmdRelease("c1", "r4", "nope", "h0-2-0"), cmdExtend("c3", "r5", "s1", "h1", 60_000))),
		at(2000, cmdBatch(cmdHold("c1", "r5", "s1", 0, "B1"), cmdHold("c1", "r5", "s1", 0, "B1"))),
		at(0, cmdBatch()),
		at(3000, cmdBatch(
			&ledgerpb.Command{ClientId: "c4", RequestId: "r6", Op: &ledgerpb.Command_JoinRoom{JoinRoom: &ledgerpb.JoinRoomCmd{ShowId: "s1", Seed: []byte{1, 2, 3}}}},
			&ledgerpb.Command{ClientId: "c5", RequestId: "r7", Op: &ledgerpb.Command_JoinRoom{JoinRoom: &ledgerpb.JoinRoomCmd{ShowId: "s9"}}})),
		{Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{}}},
	}
}

// decodeMachine is a machine that knows show s1, for show ids to be its own.
func decodeMachine(t testing.TB) *Machine {
	m := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:20:std,B:10:vip", "std:1000:EUR,vip:2500:EUR"))), 1)
	return m
}

func TestDecodeEntryTakesTheHotShapes(t *testing.T) {
	m := decodeMachine(t)
	for _, c := range hotEntries() {
		data, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		d := entryDecoder{led: &m.led}
		got, ok := d.entry(data)
		if !ok {
			t.Fatalf("decodeEntry left %v to DecodeCommand", c)
		}
		if !proto.Equal(got, c) {
			t.Fatalf("decodeEntry = %v, want %v", got, c)
		}
	}
	// Show ids are the ledger's strings, others the entry's.
	data, _ := EncodeCommand(cmdHold("c1", "r1", "s1", 0, "A1"))
	d := entryDecoder{led: &m.led}
	got, _ := d.entry(data)
	if unsafe.StringData(got.GetHold().ShowId) != unsafe.StringData(m.led.shows["s1"].id) {
		t.Error("the show id of a known show is not the ledger's string")
	}
	for _, c := range []*ledgerpb.Command{
		at(1000, cmdExpire(1000, 16)),
		at(1000, cmdBatch(cmdHold("c1", "r1", "s1", 0, "A1"), cmdExpire(1000, 1))),
		at(1000, cmdShow("admin", "r1", testShow("s2", "A:2:std", "std:1:EUR"))),
		{ClientId: "c1"}, // no op
	} {
		data, _ := EncodeCommand(c)
		d := entryDecoder{led: &m.led}
		if _, ok := d.entry(data); ok {
			t.Errorf("decodeEntry took %v itself", c)
		}
	}
	// A field that is not repeated, twice (DecodeCommand keeps the last):
	// a confirm's hold_id, a join's seed.
	for _, data := range [][]byte{
		{0x62, 0x06, 0x12, 0x01, 'a', 0x12, 0x01, 'b'},
		{0x9a, 0x03, 0x06, 0x12, 0x01, 0x01, 0x12, 0x01, 0x02},
	} {
		d := entryDecoder{led: &m.led}
		if _, ok := d.entry(data); ok {
			t.Errorf("decodeEntry took %x itself", data)
		}
		if _, err := DecodeCommand(data); err != nil {
			t.Errorf("DecodeCommand(%x): %v", data, err)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	for _, c := range append(hotEntries(), seedCommands()...) {
		b, err := EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// A repeated client_id, an unknown field, a string that is not UTF-8.
	f.Add([]byte{0x12, 0x01, 'a', 0x12, 0x01, 'b', 0x5a, 0x00})
	f.Add([]byte{0x7a, 0x04, 0x0a, 0x02, 0x98, 0x01})
	f.Add([]byte{0x5a, 0x03, 0x0a, 0x01, 0xff})
	m := decodeMachine(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		want, err := DecodeCommand(data)
		d := entryDecoder{led: &m.led}
		got, ok := d.entry(data)
		if !ok {
			return // DecodeCommand's
		}
		if err != nil {
			t.Fatalf("decodeEntry(%x) decoded what DecodeCommand refuses (%v): %v", data, err, got)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("decodeEntry(%x) = %v, DecodeCommand %v", data, got, want)
		}
		if !bytesEqual(proto.MarshalOptions{Deterministic: true}, got, want) {
			t.Fatalf("decodeEntry(%x) encodes apart from DecodeCommand's", data)
		}
	})
}

func bytesEqual(o proto.MarshalOptions, a, b proto.Message) bool {
	x, err1 := o.Marshal(a)
	y, err2 := o.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// TestDecodedEntriesLeaveNothingInTheLedger applies generated entries from
// their bytes, then walks everything the machine reaches: no string, slice
// or pointer may lead into a decoded entry's memory, or one id kept by the
// ledger would keep its entry's bytes and messages alive.
func TestDecodedEntriesLeaveNothingInTheLedger(t *testing.T) {
	var arenas [][2]uintptr
	var keep []unsafe.Pointer // alive, so that no other object takes their addresses
	decodeArena = func(p unsafe.Pointer, size uintptr) {
		keep = append(keep, p)
		arenas = append(arenas, [2]uintptr{uintptr(p), uintptr(p) + size})
	}
	defer func() { decodeArena = nil }()
	for _, rooms := range []bool{false, true} {
		arenas = arenas[:0]
		m := newTestMachine(t, newTestDB(t), 1)
		g := newGen(randChooser{rand.New(rand.NewPCG(11, 12))})
		g.rooms, g.hooks = rooms, rooms
		for range 3000 {
			index, cmd := g.entry()
			res, err := applyEncodedRecover(m, index, cmd)
			if err != nil {
				t.Fatal(err)
			}
			g.observe(cmd, res)
		}
		if len(arenas) < 1000 {
			t.Fatalf("rooms %t: only %d arenas: decodeEntry took too few entries itself", rooms, len(arenas))
		}
		kept := m.led.holds.len() // with rooms: the room entries
		if rooms {
			kept = 0
			for _, r := range m.led.rooms {
				kept += len(r.entries)
			}
		}
		if kept == 0 {
			t.Fatalf("rooms %t: the ledger kept nothing to test", rooms)
		}
		// The decoder's scratch holds the last entry until the next
		// (decodeEntry): its own memory, bounded by one entry, not the
		// ledger's.
		m.decodeScratch = decodeScratch{}
		w := arenaWalk{arenas: arenas, seen: map[uintptr]bool{}}
		w.walk(reflect.ValueOf(m).Elem(), "m")
		for _, p := range w.found {
			t.Errorf("rooms %t: %s", rooms, p)
		}
	}
	runtime.KeepAlive(keep)
}

type arenaWalk struct {
	arenas [][2]uintptr
	seen   map[uintptr]bool
	found  []string
}

func (w *arenaWalk) in(p uintptr, path string) {
	for _, a := range w.arenas {
		if a[0] <= p && p < a[1] {
			if len(w.found) < 10 {
				w.found = append(w.found, path+" points into a decoded entry")
			}
			return
		}
	}
}

func (w *arenaWalk) walk(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		if v.Len() > 0 {
			w.in(uintptr(unsafe.Pointer(unsafe.StringData(v.String()))), path)
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if pkg := v.Type().Elem().PkgPath(); strings.Contains(pkg, "cockroachdb/pebble") || pkg == "sync" {
			return
		}
		p := v.Pointer()
		w.in(p, path)
		if w.seen[p] {
			return
		}
		w.seen[p] = true
		w.walk(v.Elem(), path)
	case reflect.Interface:
		if !v.IsNil() {
			w.walk(v.Elem(), path)
		}
	case reflect.Struct:
		if pkg := v.Type().PkgPath(); strings.Contains(pkg, "cockroachdb/pebble") || pkg == "sync" || pkg == "sync/atomic" {
			return
		}
		for i := range v.NumField() {
			w.walk(v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		w.in(v.Pointer(), path)
		if k := v.Type().Elem().Kind(); k <= reflect.Complex128 {
			return // numbers
		}
		all := v.Slice(0, v.Cap()) // what is past len is kept too
		for i := range all.Len() {
			w.walk(all.Index(i), path+"[]")
		}
	case reflect.Array:
		if k := v.Type().Elem().Kind(); k <= reflect.Complex128 {
			return
		}
		for i := range v.Len() {
			w.walk(v.Index(i), path+"[]")
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			w.walk(it.Key(), path+"{key}")
			w.walk(it.Value(), path+"{}")
		}
	}
}

// BenchmarkDecodeEntry decodes a six-command entry, as group commit makes
// under load, both ways: /proto is DecodeCommand, /entry decodeEntry.
func BenchmarkDecodeEntry(b *testing.B) {
	m := decodeMachine(b)
	cmds := make([]*ledgerpb.Command, 0, 6)
	for i := range 3 {
		c := cmdHold(fmt.Sprintf("fan-%06d", i), "01HZX3K5T7V9QWERTY", "s1", 300_000, "A1", "A2")
		c.FirstSentAtMs = 1_700_000_000_000
		cmds = append(cmds, c)
		cmds = append(cmds, cmdConfirm(fmt.Sprintf("fan-%06d", i), "01HZX3K5T7V9QWERTZ", "s1", "h1-123456-0", "pay-0123456789"))
	}
	data, err := EncodeCommand(at(1_700_000_000_000, cmdBatch(cmds...)))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("proto", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeCommand(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("entry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.decodeEntry(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
