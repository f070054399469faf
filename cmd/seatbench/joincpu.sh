#!/usr/bin/env bash
# Node CPU per waiting-room join, for A/B comparisons of two builds
# (docs/PERFORMANCE-SHAPE.md, "The waiting room"): three `seatd serve` on
# 127.0.0.1, `seatbench --workload waitingroom` against them, and the
# nodes' CPU time (user + system, from /proc) from just before seatbench
# starts to the end of its join burst, divided by the joins. With
# PROFILE=1 it also takes a CPU profile of every node during the burst.
#
#   cmd/seatbench/joincpu.sh BINDIR OUTDIR   # BINDIR holds seatd and seatbench
#   JOINS=100000 PROFILE=1 PORT=21400 cmd/seatbench/joincpu.sh .bin /tmp/join-new
#
# Ports PORT+1..PORT+3 (raft), +101.. (gRPC), +201.. (HTTP), +301.. (admin)
# must be free.
set -euo pipefail
BIN=$(cd "$1" && pwd)
OUT=$2
JOINS=${JOINS:-100000}
PORT=${PORT:-21400}
PROFILE=${PROFILE:-}
BENCH_ARGS=${BENCH_ARGS:-}
mkdir -p "$OUT"
DATA=$(mktemp -d /tmp/seatbench-joincpu-XXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$DATA"
}
trap cleanup EXIT
"$BIN/seatd" tokengen "$DATA/admin.token" >/dev/null
peers=""
for i in 1 2 3; do
	peers+="${peers:+,}n$i=127.0.0.1:$((PORT + i))/127.0.0.1:$((PORT + 100 + i))"
done
for i in 1 2 3; do
	"$BIN/seatd" serve --id "n$i" --raft "127.0.0.1:$((PORT + i))" --grpc "127.0.0.1:$((PORT + 100 + i))" \
		--http "127.0.0.1:$((PORT + 200 + i))" --admin-http "127.0.0.1:$((PORT + 300 + i))" \
		--data-dir "$DATA/n$i" --peers "$peers" --admin-token-file "$DATA/admin.token" >"$OUT/n$i.log" 2>&1 &
	pids+=($!)
done
for _ in $(seq 1 60); do
	curl -sf "http://127.0.0.1:$((PORT + 201))/readyz" >/dev/null && break
	sleep 0.5
done
sleep 2
# cpu prints the nodes' CPU seconds so far.
cpu() {
	local t=0
	for p in "${pids[@]}"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "$t / $(getconf CLK_TCK)" | bc -l
}
endpoints="127.0.0.1:$((PORT + 101)),127.0.0.1:$((PORT + 102)),127.0.0.1:$((PORT + 103))"
before=$(cpu)
"$BIN/seatbench" --endpoints "$endpoints" --admin-token-file "$DATA/admin.token" \
	--workload waitingroom --joins "$JOINS" --duration 2s $BENCH_ARGS >"$OUT/bench.txt" 2>&1 &
bench=$!
curls=()
if [ -n "$PROFILE" ]; then
	for i in 1 2 3; do
		curl -s -o "$OUT/n$i.prof" "http://127.0.0.1:$((PORT + 300 + i))/debug/pprof/profile?seconds=6" &
		curls+=($!)
	done
fi
for _ in $(seq 1 3000); do
	grep -q ' joins in ' "$OUT/bench.txt" && break
	kill -0 "$bench" 2>/dev/null || break
	sleep 0.1
done
after=$(cpu)
for c in "${curls[@]}"; do wait "$c"; done
wait "$bench" || echo "seatbench failed: see $OUT/bench.txt" >&2
grep ' joins in ' "$OUT/bench.txt" || true
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "node CPU in the burst: $(echo "$after - $before" | bc -l | cut -c1-6) s; per join (all three nodes): $(echo "($after - $before) / $JOINS * 1000000" | bc -l | cut -d. -f1) µs"
