// Package checker decides whether a harness history (jepsen/history) is one a
// correct seatledger could have produced. Check runs every check and returns
// a Report; nothing here talks to a cluster.
//
// The checks, and what each one catches:
//
//   - "linearizable" (S5): per show, porcupine searches for an order of the
//     operations that respects real time and the sequential seat model
//     (model.go), with revisions and log clocks as extra constraints. It
//     catches lost or phantom effects, stale reads, double grants, wrong
//     rejections, expiry ignored or too early. A search that runs out of its
//     time budget is "unknown": neither proven nor violated.
//   - "ordering": per show, (a) real time against log positions: an op that
//     returned before another was called must carry a revision and log clock
//     no later than the other's (a stale read breaks this); (b) a replay of
//     the definite ops in revision order through the same model, which
//     checks shows too large for porcupine and points at the first bad op.
//   - "S1": no seat held or booked by two holds at once, from the
//     acknowledged holds' certain lives in the log and from the final reads.
//   - "S2": an acknowledged confirm is CONFIRMED in the final reads with its
//     seats BOOKED; every BOOKED seat has a confirm in the history behind it.
//   - "S3": an acknowledged hold's seats are not read FREE, its GetHold not
//     EXPIRED/CANCELLED, nor its seats granted to another hold, before its
//     release, confirm or expiry could have happened.
//   - "S4": a re-sent request gets the original answer, one request id never
//     names two holds nor takes effect twice, and no seat ends HELD or BOOKED
//     that no hold asked for.
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
//   - The revision replay cannot place info ops; from the earliest revision
//     one could have been applied at, its effect becomes possible ("may"
//     flags), never certain.
//   - The invariant checks use only lower bounds on how long an acknowledged
//     hold certainly lived, counting an info release as early as it could
//     have been applied.
//
// Known limits: many info ops pending together can exhaust porcupine's
// budget (then "unknown"; a prefix of the show is still tried, as a prefix
// that is not linearizable refutes the whole); revisions are compared per
// show, so a show must stay in one raft group for the run; a hold asking for
// no TTL is assumed to get fsm's default; the final-read checks trust the
// runner to list every hold id it learned of.
package checker
