#!/usr/bin/env bash
# The stampede with a full house of live seat maps against the stampede
# alone (issue 21's "time to sell out ≤ 1.25× the stampede without them",
# docs/PERFORMANCE.md): PAIRS pairs of `seatbench --workload stampede`, the
# first of a pair without watchers, the second with WATCHERS SSE watchers of
# the stampeded show, each on a fresh local 3-node cluster, with PAUSE
# seconds of rest before every run. It prints each run's sold-out time and,
# at the end, both sums and their ratio.
#
# A sold-out takes about half a second, so what the run before left behind
# moves it: a run started right after one with 9,000 watchers (whose
# processes, sockets and memory the kernel is still tearing down) sold out in
# 0.55-0.85 s against 0.47-0.59 s after a quiet machine. The pause keeps the
# runs apart. seatbench itself starts each stampede on a settled cluster
# (settle.go), so no leadership move lands inside it.
#
#   cmd/seatbench/stampede-watchers.sh BINDIR [PAIRS]   # BINDIR holds seatd and seatbench
#   PAUSE=10 WATCHERS=9000 cmd/seatbench/stampede-watchers.sh .bin 20
set -euo pipefail
BIN=$(cd "$1" && pwd)
PAIRS=${2:-10}
PAUSE=${PAUSE:-10}
WATCHERS=${WATCHERS:-9000}
OUT=${OUT:-$(mktemp -d /tmp/seatbench-stampede-watchers-XXXX)}
mkdir -p "$OUT"
echo "runs in $OUT"
sold_out() { # file
	sed -n 's/^sold_out_s: \([0-9.]*\)$/\1/p' "$1"
}
sum0=0
sumw=0
for i in $(seq 1 "$PAIRS"); do
	for w in 0 "$WATCHERS"; do
		sleep "$PAUSE"
		f="$OUT/$i-$w.txt"
		if ! "$BIN/seatbench" --seatd "$BIN/seatd" --workload stampede --watchers "$w" >"$f" 2>&1; then
			echo "pair $i, $w watchers: seatbench failed, see $f" >&2
			exit 1
		fi
		s=$(sold_out "$f")
		if [ -z "$s" ]; then
			echo "pair $i, $w watchers: no sold-out time, see $f" >&2
			exit 1
		fi
		echo "pair $i, $w watchers: sold out in $s s ($(grep -h -E '^leader_changes' "$f" || true))"
		if [ "$w" = 0 ]; then sum0=$(awk "BEGIN{print $sum0 + $s}"); else sumw=$(awk "BEGIN{print $sumw + $s}"); fi
	done
done
echo "sold out, sum over $PAIRS pairs: $sum0 s without watchers, $sumw s with $WATCHERS: $(awk "BEGIN{printf \"%.2f\", $sumw / $sum0}")x"
