// Package checker decides whether a harness history (jepsen/history) is one a
// correct seatledger could have produced. Check runs every check and returns
// a Report; nothing here talks to a cluster.
//
// The checks, and what each one catches:
//
//   - "linearizable" (S5): per show, porcupine searches for an order of the
//     operations that respects real time and the sequential seat model
//     (model.go). It catches lost or phantom effects, stale reads, double
//     grants, wrong rejections. A search that runs out of its time budget is
//     "unknown": neither proven nor violated.
//   - "ordering": per show, (a) real time against revisions: an operation that
//     returned before another was called must carry a revision and log clock
//     no later than the other's (a stale read breaks this); (b) a replay of
//     the definite operations sorted by revision through the same model, so
//     that shows too large for porcupine are still checked.
//   - "S1": no seat held or booked by two holds at once, from the acknowledged
//     holds' live intervals in log time and from the final reads.
//   - "S2": an acknowledged confirm is CONFIRMED in the final reads with its
//     seats BOOKED; every BOOKED seat has a confirm in the history behind it.
//   - "S3": an acknowledged hold's seats are not observed FREE, nor granted to
//     another hold, before its release, confirm or expiry.
//   - "S4": a re-sent request gets the original answer, one request id never
//     names two holds, and no seat ends HELD or BOOKED that no hold asked for.
//   - "S6": the replicas of each group report equal state digests.
//
// Soundness comes first: a reported violation is a history no correct server
// can produce. Indeterminate (info) operations are the main difficulty: an
// info operation may take effect at any point after its call, or never.
// Porcupine handles that by giving it an infinite return time: linearized at
// the end it has no visible effect, so the model may always apply it where it
// is linearized (a deterministic model, which avoids the power-set blow-up of
// porcupine's NondeterministicModel). The hold an info hold makes has an
// unknown id and an expiry known only within bounds, narrowed by what later
// operations observe. The revision replay cannot place info operations, so
// there they only widen what the model accepts ("may" flags) from the
// earliest revision they could have been applied at.
package checker
