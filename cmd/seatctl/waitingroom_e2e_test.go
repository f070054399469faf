// This file adds the waiting room to TestEndToEnd: seatctl waitingroom
// open needs --rate; an open room refuses a hold without admission; a fan
// who joined is admitted by the leader within seconds and holds with its
// admission token (seatctl hold --admission-token); status counts it;
// after close a hold needs no admission; close --auto-open arms the room
// (with --rate) and a plain close disarms it.
package main

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The room's holds take A11 and A12, seats no other step of the scenario
// holds (the webhook step holds B12).
func (sc *seatctl) waitingRoom(show string) {
	t := sc.t
	if out := sc.ok("waitingroom", "status", show); tableValue(out, "open") != "false" {
		t.Fatalf("waitingroom status of a show without a room:\n%s", out)
	}
	if _, _, code := sc.run("waitingroom", "open", show); code != exitUsage {
		t.Fatalf("waitingroom open without --rate exited %d, want %d", code, exitUsage)
	}
	if out := sc.ok("waitingroom", "open", show, "--rate", "50"); tableValue(out, "open") != "true" || tableValue(out, "admit_per_second") != "50" {
		t.Fatalf("waitingroom open --rate 50:\n%s", out)
	}
	if _, errOut, code := sc.run("hold", show, "A11", "--client-id", "fan"); code != exitFailure || !strings.Contains(errOut, "ADMISSION_REQUIRED") {
		t.Fatalf("hold in an open room without admission: exit %d, %s", code, errOut)
	}
	conn, err := grpc.NewClient(strings.Split(sc.endpoints, ",")[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := ledgerpb.NewWaitingRoomClient(conn)
	ctx, cancel := context.WithTimeout(sc.ctx, 30*time.Second)
	defer cancel()
	e, err := w.JoinWaitingRoom(ctx, &ledgerpb.JoinWaitingRoomRequest{ShowId: show, ClientId: "fan", RequestId: "join-1"})
	if err != nil {
		t.Fatalf("JoinWaitingRoom: %v", err)
	}
	id, token := e.EntryId, e.EntryToken // a read does not echo the token
	for e.State != "ADMITTED" {
		time.Sleep(100 * time.Millisecond)
		if e, err = w.GetWaitingRoomEntry(ctx, &ledgerpb.GetWaitingRoomEntryRequest{ShowId: show, EntryId: id, EntryToken: token}); err != nil {
			t.Fatalf("GetWaitingRoomEntry: %v", err)
		}
	}
	sc.ok("hold", show, "A11", "--client-id", "fan", "--admission-token", e.AdmissionToken)
	if out := sc.ok("waitingroom", "status", show); tableValue(out, "admitted") != "1" {
		t.Fatalf("waitingroom status after one admission:\n%s", out)
	}
	if out := sc.ok("waitingroom", "close", show); tableValue(out, "open") != "false" {
		t.Fatalf("waitingroom close:\n%s", out)
	}
	sc.ok("hold", show, "A12", "--client-id", "fan")
	// Arming: --auto-open needs the rate it opens at; status shows it;
	// a plain close disarms.
	if _, _, code := sc.run("waitingroom", "close", show, "--auto-open", "1000"); code != exitUsage {
		t.Fatalf("waitingroom close --auto-open without --rate exited %d, want %d", code, exitUsage)
	}
	if out := sc.ok("waitingroom", "close", show, "--auto-open", "1000", "--rate", "20"); tableValue(out, "open") != "false" ||
		tableValue(out, "auto_open_arrivals_per_second") != "1000" || tableValue(out, "auto_open_admit_per_second") != "20" {
		t.Fatalf("waitingroom close --auto-open 1000 --rate 20:\n%s", out)
	}
	if out := sc.ok("waitingroom", "close", show); tableValue(out, "auto_open_arrivals_per_second") != "" {
		t.Fatalf("waitingroom close after arming:\n%s", out)
	}
}
