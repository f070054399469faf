// Package fsm is seatledger's deterministic seat state machine.
//
// A Machine applies committed raft entries (ledgerpb.Command) for one raft
// group. Apply is a pure function of (state, entry): no wall clock, no
// randomness, no goroutines, no map-order dependence. Time comes from the
// log: the leader stamps proposed_at_ms and the machine keeps clock =
// max(clock, proposed_at) in the same meta record as the applied index, so a
// replayed entry (index <= applied) is skipped and time never goes backwards.
//
// The seat ledger lives in memory (ledger.go): every show's seats, live
// holds and bookings, clients' live holds, live holds by expiry (expiry.go)
// and the waiting lines' totals. The hold, confirm, release, extend, refund
// and expire paths read nothing else, and a request filter (requests.go)
// tells a new request id without a store read. Each batch of entries writes
// its records, with the applied index, to the group's overlay in memory
// (overlay.go), and checkpoints fold the overlay into the group's key range
// in the node's Pebble database, atomically (checkpoint.go): at every raft
// snapshot, past overlayBytesMax and as a node closes. Pebble has no WAL:
// the raft log is the write-ahead log. A restart loads the ledger from
// Pebble as the group's last checkpoint left it, and raft replays the
// entries above that applied index (checkpoint.go argues why it can).
//
// Reads of seat maps and holds come from the ledger too, between apply
// batches (View.inLedger): apply holds the machine's lock while it applies
// and publishes a batch, readers hold it for reading. The change log, the
// waiting line's entries, clients' bookings, the catalog and the node
// registry are read from the overlay, as published at a commit, over a
// Pebble snapshot taken with it (View.snapshot).
//
// Bad input is a result; impossible state is a crash. Every rejection is a
// ledgerpb.Code, checked in this order for each client command:
//
//  1. CODE_INVALID_ARGUMENT  a missing client_id/request_id, or a field out of
//     its limits (limits.go); Result.field names the field.
//  2. CODE_REQUEST_ID_REUSED the (client_id, request_id) was applied before with
//     a different payload. With the same payload the stored result is returned
//     again, with replayed=true (exactly-once, S4). Records are kept
//     RequestRetentionMs (and up to an hour more) of log time after apply.
//  3. For a request without a record that states when it was first sent
//     (first_sent_at_ms): CODE_INVALID_ARGUMENT for a time more than
//     FirstSentAheadMaxMs past the clock, then CODE_REQUEST_EXPIRED when it
//     was first sent more than RequestHorizonMs ago: its record may have
//     been pruned after it ran, so it is not executed (requests.go,
//     sendLimit). Neither is remembered. A request that does not state it
//     runs as new once its record is pruned.
//  4. CODE_SHOW_NOT_FOUND / CODE_SHOW_EXISTS
//  5. Hold: CODE_UNKNOWN_SEAT (seat_ids lists them) or, for best available,
//     CODE_INVALID_ARGUMENT for a category the show lacks and CODE_SOLD_OUT
//     when too few seats are free (best.go states the choice policy); then
//     CODE_TOO_MANY_HOLDS (HoldsPerClientPerShowMax live holds of the client
//     in the show; holds expired by the clock do not count); then
//     CODE_SEATS_TAKEN (seat_ids lists the taken ones, alternative_seat_ids
//     the best available set of the same size). A seat held by a hold whose
//     expiry has passed by the log clock counts as free: that hold is
//     expired first. A successful hold returns its hold_token.
//  6. Confirm/Release/Extend/Refund: CODE_HOLD_NOT_FOUND (unknown id, or
//     another show's), CODE_NOT_HOLD_OWNER, CODE_HOLD_TOKEN_INVALID, then
//     the hold's state: CODE_HOLD_EXPIRED (expired, or live by state but
//     clock >= expires_at), then per command: confirm refuses CANCELLED
//     (CODE_HOLD_CANCELLED) and REFUNDED or another payment's booking
//     (CODE_HOLD_CONFIRMED), and confirming again with the same payment_ref
//     returns the same booking; release refuses bookings
//     (CODE_HOLD_CONFIRMED) and succeeds again on a released hold; extend
//     refuses bookings and released holds and never moves expires_at earlier
//     or past created_at + HoldLifetimeMaxMs; refund refuses holds that are
//     not bookings (CODE_HOLD_NOT_CONFIRMED) and succeeds again on a
//     refunded one.
//
// A best-available hold with wait set joins the show's waiting queue instead
// of CODE_SOLD_OUT (CODE_QUEUED, or CODE_QUEUE_FULL past QueueLenMax); at the
// end of every entry that freed seats the queue's waiters are offered them in
// line order (queue.go states the policy). LeaveQueue: CODE_NOT_QUEUED
// (unknown entry, or already offered), CODE_NOT_HOLD_OWNER,
// CODE_QUEUE_TOKEN_INVALID; leaving again succeeds.
//
// While a show's waiting room is open (waitroom.go), a hold in it is
// CODE_ADMISSION_REQUIRED (after CODE_UNKNOWN_SEAT, a category the show
// lacks and CODE_SOLD_OUT of 5 above, before CODE_TOO_MANY_HOLDS) unless its
// client's latest room entry is admitted, not expired by the log clock, and
// admission_token is that entry's; a best-available hold with wait that
// finds the show sold out joins the queue without one. A hold in a show
// whose closed room is armed counts as an arrival there, and the one that
// reaches the threshold opens the room and is CODE_ADMISSION_REQUIRED
// itself (roomauto.go). SetRoom:
// CODE_SHOW_NOT_FOUND. JoinRoom: CODE_SHOW_NOT_FOUND, CODE_ROOM_CLOSED (no
// open room), CODE_ROOM_FULL (RoomEntriesMax); a client with an entry that
// is not expired gets that entry again. A join that makes an entry is
// recorded by the entry rather than a request record (joinroom.go): a retry
// gets its answer, and the id with another payload CODE_REQUEST_ID_REUSED,
// as for every request. Admit, like Expire, is a leader
// command without an identity.
//
// Hold tokens are HMAC-SHA256(show's token key, hold id) (token.go): the key
// is random bytes the proposing gateway put in CreateShow, so replicas issue
// and check the same tokens deterministically.
//
// A failed Pebble write, an undecodable entry or record, an unknown op, or a
// broken invariant panics: a replica that cannot apply an entry exactly like
// its peers must stop rather than diverge.
//
// Keys (all under the group prefix 'G' + uint32 group, big-endian; seats,
// the expiry index and the clients' live holds are not stored: load
// derives them from the live holds and bookings, which 0x05 holds):
//
//	0x01                                  meta: applied index, clock
//	0x02 show_id                          ledgerpb.Show
//	0x04 hold_id                          ledgerpb.HoldRecord of a hold that ended (cancelled, expired, refunded)
//	0x05 len(show) show hold_id           ledgerpb.HoldRecord of a live hold or booking, by show
//	0x06 hour(u64) len(client) client request   ledgerpb.RequestRecord (hour of log time applied: requests.go)
//	0x08 show_id                          raw bytes: the show's hold-token key
//	0x0A bucket(u64) len(show_id) show_id revision(u64)   ledgerpb.SeatEventRecord
//	0x0B bucket(u64)                      u64: the bucket's first revision
//	0x16 bucket(u64) revision(u64)        the shows the entry changed, each len-prefixed: changes by revision
//	0x0C                                  u64: change log floor
//	0x0D entry_id                         ledgerpb.QueueEntryRecord
//	0x0E len(show) show join_index(u64) join_pos(u32)   entry_id: the line (waiting only)
//	0x0F len(show) show len(client) client               entry_id: a client's waiting entry
//	0x10 show_id                          waiting(u32) seats(u32): the line's totals
//	0x11 len(client) client confirm_index(u64) hold_id   empty: a client's bookings
//	0x13 len(show) show revision(u64) hold_id   empty: the show's refunded bookings (revocation feed)
//	0x1C sink_id                          ledgerpb.WebhookCursor: how far the group's events reached a sink (webhook.go)
//	0x14 show_id                          ledgerpb.RoomRecord: the show's open waiting room (waitroom.go)
//	0x15 len(show) show entry_id          ledgerpb.RoomEntryRecord: an entry of that room, and the record of the join that made it
//	0x1E show_id                          ledgerpb.RoomAutoRecord: the show's room, armed to open by itself (roomauto.go)
//
// The catalog (catalog.go), written only in the catalog group; its records
// never change once written, and a browse page is one walk of an index:
//
//	0x20 city_id                          ledgerpb.City
//	0x21 cinema_id                        ledgerpb.Cinema (screens with layouts)
//	0x22 movie_id                         ledgerpb.Movie
//	0x23 show_id                          ledgerpb.ListingRecord (a listed show)
//	0x24 len(city) city cinema_id         empty: the city's cinemas
//	0x25 len(cinema) cinema starts_at(u64) show_id   empty: the cinema's shows by time
//	0x26 len(city) city starts_at(u64) show_id       empty: the city's shows by time
//	0x27 starts_at(u64) show_id           empty: every listed show by time
//	0x28 len(city) city movie_id          u64: latest start of the movie's shows in the city
//	0x29 len(city) city len(movie) movie cinema_id   u64: latest start of the movie at the cinema
//
// The node registry (node.go), written only in the catalog group:
//
//	0x2F node_id                          ledgerpb.NodeRecord (REMOVED ones stay: the id is retired)
//
// Webhook registrations (webhook.go), written only in the catalog group:
//
//	0x2D webhook_id                       ledgerpb.WebhookRecord (with its secret)
//
// Registry rejections, after 1 to 3 above: AddNode CODE_NODE_REMOVED, then
// CODE_NODE_ADDRESS_TAKEN, then CODE_INVALID_ARGUMENT past NodesMax (a seed
// AddNode refuses nothing and adds only unseen ids); SetNodeState
// CODE_NODE_NOT_FOUND, then CODE_NODE_REMOVED (removal is final).
//
// Catalog rejections, after 1 to 3 above: CreateCinema CODE_CITY_NOT_FOUND;
// ListShow CODE_CINEMA_NOT_FOUND, CODE_SCREEN_NOT_FOUND, CODE_MOVIE_NOT_FOUND;
// then CODE_CITY_EXISTS / CODE_CINEMA_EXISTS / CODE_MOVIE_EXISTS /
// CODE_SHOW_LISTED when the id holds a different record (the same record
// again is CODE_OK and writes nothing).
//
// # Change log
//
// Every seat write reports the seat's new state; at the end of each raft
// entry the changes become one SeatEventRecord per show the entry touched
// (0x0A, keyed by the bucket of log time it was applied in, then the show
// and the entry's index: the revision), written in sorted show
// order with the entry's other writes. A record lists every change
// in the order the entry made it: a Batch of many commands yields one record
// per show, and a hold that takes the seats of a hold expired by the log
// clock lists those seats FREE and then HELD. The log is replicated state:
// snapshots and digests cover it, so any replica serves it identically.
//
// Records are kept in buckets of eventBucketMs of log time; the first
// record of a bucket notes the bucket's first revision (0x0B). Expire
// entries drop every bucket that ended EventRetentionMs before their clock,
// with one range deletion, and raise the group-wide floor (0x0C) to just
// below the first revision of the oldest bucket kept: a record is kept at
// least EventRetentionMs and at most eventBucketMs longer, and pruning
// writes nothing per record. View.SeatEvents(show, after) returns
// ErrEventsPruned when after is below the floor: the reader may have missed
// a change and must start again from a seat map. Because the floor is per
// group, a reader of a show that did not change may be sent back to a seat
// map too; that costs a seat map, never a missed change.
//
// A seat map (View.SeatMap) shows the seats of a hold expired by the log
// clock as FREE as soon as the clock passes its expiry, because a hold would
// find them free. The change log reports them FREE only when an entry frees
// them: the leader's Expire entry (proposed within its expiry interval,
// ~100 ms) or a later hold that takes one of them. A watcher's map thus
// shows such seats HELD a little longer than a fresh seat map would.
package fsm
