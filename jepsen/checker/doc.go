// Package checker decides whether a harness history (jepsen/history) is one a
// correct seatledger could have produced. Check runs every check and returns
// a Report; nothing here talks to a cluster.
//
// The model covers every booking operation: holds of named seats and of the
// best available (count seats, of a category or of any), confirm, release,
// extend, refund, seat-map reads and GetHold. Its rules, per operation:
//
//   - hold: granted seats must be free where the hold is linearized (a seat
//     of a hold expired by the log clock is free); SEATS_TAKEN needs the
//     seats it names taken. A best-available grant must also number count
//     distinct seats of the show, all of the category asked for; the model
//     does not check that they are the *best* ones (fsm/best.go's policy:
//     side by side, no orphans, nearest the centre), only that they were
//     free. SOLD_OUT needs fewer than count seats of the category free:
//     it is refused when at least count of them were certainly free.
//   - extend: OK only on a live hold, and the expiry it reports must be
//     max(old expiry, log clock + TTL), capped at the hold's creation + 45
//     min; it becomes the hold's expiry for every later judgement (reads,
//     confirms, S3). HOLD_CONFIRMED for a booking (refunded or not),
//     HOLD_CANCELLED for a released hold, HOLD_EXPIRED as for confirm.
//   - refund: OK on a booking, which becomes REFUNDED and frees its seats;
//     OK again on a refunded one; HOLD_NOT_CONFIRMED for a live or released
//     hold. Confirm answers HOLD_CONFIRMED for a refunded booking, release
//     too.
//   - TOO_MANY_HOLDS and HOLD_TOKEN_INVALID (like UNKNOWN_SEAT and the
//     gateway's rejections) are definite no-ops: they change nothing and
//     the model does not judge them (not the per-client limit, nor which
//     token is right).
//   - the waiting queue (queue.go): a best-available hold that asked to
//     wait and is answered QUEUED is judged like SOLD_OUT (the server queues
//     exactly where it would refuse) and changes no seat. The queue's offers
//     are holds no client requested, so they are derived from what waiters
//     read. An entry's first read answering OFFERED becomes an acknowledged
//     best-available hold of the seats read (count and category of the
//     entry, in the waiter's name), called at the latest call of a join
//     naming the entry or of a read that found it WAITING (each was
//     linearized while it waited) and returning when that read returned.
//     Its hold id (h<group>-<index>-<pos>) names the raft index that made
//     it and its expiry, read before the waiter could extend it, is the log
//     clock there + the claim window (fsm.QueueClaimWindowMs, restated), so
//     the offer is pinned to its place in the log: its seats must be free
//     there, and from there on it is a hold like any other (S1, S3, the
//     waiter's confirm, release, extend, the final reads). An entry left
//     (leave OK, or read LEFT) was never offered: an offered entry cannot
//     leave. Any other entry may have been offered unseen: it becomes an
//     info best-available hold of the entry's count and category (a
//     wildcard, below) called where its offer window opens. An entry read
//     OFFERED and also left, or read WAITING by a read called after one
//     that found it OFFERED returned, is an ordering violation.
//     GetQueueEntry and LeaveQueue themselves are checked for real-time
//     order by revision (ordering (a)) and for same answers on resends
//     (S4); the model does not judge NOT_QUEUED, positions, or whether an
//     offer went to the right waiter, to the best seats, or was made at all
//     (an entry that waits forever while seats are free passes).
//
// The checks, and what each one catches:
//
//   - "linearizable" (S5): per show, porcupine searches for an order of the
//     operations that respects real time and the sequential seat model
//     (model.go), with revisions and log clocks as extra constraints. It
//     catches lost or phantom effects, stale reads, double grants, wrong
//     rejections, expiry ignored or too early, an extension ignored or
//     misreported, a refund's seats granted before it, SOLD_OUT with seats
//     free. A search that runs out of its time budget is "unknown": neither
//     proven nor violated.
//   - "ordering": per show, (a) real time against log positions: an op that
//     returned before another was called must carry a revision and log clock
//     no later than the other's (a stale read breaks this); (b) a replay of
//     the definite ops in revision order through the same model, which
//     checks shows too large for porcupine and points at the first bad op.
//   - "S1": no seat held or booked by two holds at once, from the
//     acknowledged holds' certain lives in the log and from the final reads.
//   - "S2": an acknowledged confirm is CONFIRMED in the final reads with its
//     seats BOOKED, unless an acknowledged or info refund of it was sent:
//     then it may end REFUNDED (its seats sold again or free). REFUNDED with
//     no refund sent, or CONFIRMED after an acknowledged refund, is a
//     violation. Every BOOKED seat has a confirm in the history behind it.
//   - "S3": an acknowledged hold's seats are not read FREE, its GetHold not
//     EXPIRED/CANCELLED/REFUNDED, nor its seats granted to another hold,
//     before its release, refund, confirm or expiry could have happened; the
//     expiry is the latest an acknowledged extend reported.
//   - "S4": a re-sent request gets the original answer (the same hold, the
//     same best-available seats, the same extended expiry), one request id
//     never names two holds nor takes effect twice, and no seat ends HELD or
//     BOOKED that no hold asked for or was granted.
//   - "S6": the replicas of each group report equal state digests.
//
// Soundness comes first: a reported violation is a history no correct server
// can produce. Indeterminate (info) ops are the difficulty: an info op may
// take effect at any point after its call, or never, and an info hold's id
// and expiry are unknown. How each check copes:
//
//   - Porcupine gives an info op an infinite return time. The model is
//     deterministic: an info op takes effect where porcupine linearizes it
//     if it can, and one that cannot is only accepted once every definite op
//     is linearized (failing has no effect, the same as never happening, and
//     an op that never returns can always come last). An info hold's expiry
//     is known to lie in [clock at its call + TTL, unbounded], narrowed by
//     what later ops observe; the bounds do not depend on where it is
//     linearized, so porcupine's state cache collapses equivalent orders.
//     Info ops that could not have taken effect anywhere are dropped first.
//     An info extend, where linearized, moves the expiry bounds to
//     [max(lo, clock at its call + TTL), hi + TTL]: it may or may not have
//     moved the expiry, and not past that. An info refund frees the
//     booking's seats where linearized, and cannot apply to a hold not yet
//     confirmed there. An info best-available hold's seats are unknown: it
//     is a wildcard that may explain count seats of its category held while
//     it may be live (reads, SEATS_TAKEN, SOLD_OUT), and never certainly
//     holds a seat. The runner re-sends such holds after healing to learn
//     their seats, so wildcards are rare in its histories.
//   - The revision replay cannot place info ops; from the earliest revision
//     one could have been applied at, its effect becomes possible ("may"
//     flags), never certain; an info extend keeps the expiry's upper bound
//     open by its TTL even above a later exact expiry.
//   - The invariant checks use only lower bounds on how long an acknowledged
//     hold certainly lived, counting an info release or refund as early as
//     it could have been applied and ignoring info extends.
//
// Known limits: many info ops pending together can exhaust porcupine's
// budget (then "unknown"; a prefix of the show is still tried, as a prefix
// that is not linearizable refutes the whole); revisions are compared per
// show, so a show must stay in one raft group for the run; a hold or extend
// asking for no TTL is assumed to get fsm's default, and the lifetime cap is
// restated from fsm; the final-read checks trust the runner to list every
// hold id it learned of. Categories need the show's layout in the history
// (history.Layout): without one, a category is not judged (a best-available
// grant or SOLD_OUT of a category passes), and SOLD_OUT counts only seats
// some read or answer showed to exist. Wildcards lose precision: any seat of
// a wildcard's category read HELD is explained by it for as long as it may
// live, which is unbounded; and a queue entry's wildcard may be placed
// before the join that made the entry, so around a join of unknown fate a
// SOLD_OUT or SEATS_TAKEN is judged more loosely. The runner leaves or reads
// every entry of unknown fate after healing to keep them rare. An offer
// whose hold id does not name its index has no certain start in the log:
// S1 and S3 skip it (the model still places it within its window).
package checker
