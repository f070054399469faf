#!/usr/bin/env bash
# A CPU profile of every node during a uniform run, for A/B comparisons of
# two builds (docs/PERFORMANCE.md, "The budget of a command"):
# three `seatd serve --admin-http` on 127.0.0.1, seatbench against them,
# and a 12 s profile (PROFILE_SECONDS) of each node from the fifth second of the measured
# phase (PROFILE_AT=40 starts it at the fortieth, for a long run's end).
# It prints the run's figures and, from the merged profiles, node
# CPU per command and the shares of a few hot spots; each node's heap
# profile, taken after the CPU profile, is left in OUTDIR/nN.heap
# (`go tool pprof -sample_index=inuse_space -top OUTDIR/n1.heap`), and
# its allocation profiles from just before and just after the CPU profile
# in OUTDIR/nN.allocs0 and nN.allocs1: what the window allocated is their
# difference (`go tool pprof -sample_index=alloc_objects -top
# -diff_base OUTDIR/n1.allocs0 OUTDIR/n1.allocs1`).
#
#   cmd/seatbench/profile.sh BINDIR OUTDIR   # BINDIR holds seatd and seatbench
#   DURATION=30s PORT=21100 cmd/seatbench/profile.sh .bin /tmp/prof-new
#   DURATION=60s PROFILE_AT=40 cmd/seatbench/profile.sh .bin /tmp/prof-late
#   DURATION=150s PROFILE_AT=30 PROFILE_SECONDS=100 cmd/seatbench/profile.sh .bin /tmp/prof-long
#   SEATD_ARGS="--max-inflight 2" cmd/seatbench/profile.sh .bin /tmp/prof-inflight2
#   WORKLOAD=browse BENCH_ARGS="--seat-states --read stale" cmd/seatbench/profile.sh .bin /tmp/prof-browse
#   ulimit -n 20000; WORKLOAD=watchers BENCH_ARGS="--clients 30000 --watch-nodes 3" cmd/seatbench/profile.sh .bin /tmp/prof-watch
#
# Ports PORT+1..PORT+3 (raft), +101.. (gRPC), +201.. (HTTP), +301.. (admin)
# must be free; the default stays below Linux's ephemeral port range, so a
# client's outgoing connection never takes one.
set -euo pipefail
BIN=$(cd "$1" && pwd)
OUT=$2
DURATION=${DURATION:-30s}
SEATD_ARGS=${SEATD_ARGS:-}
WORKLOAD=${WORKLOAD:-uniform}
BENCH_ARGS=${BENCH_ARGS:-}
PORT=${PORT:-21100}
PROFILE_AT=${PROFILE_AT:-5}
PROFILE_SECONDS=${PROFILE_SECONDS:-12}
mkdir -p "$OUT"
DATA=$(mktemp -d /tmp/seatbench-profile-XXXX)
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
		--data-dir "$DATA/n$i" --peers "$peers" --admin-token-file "$DATA/admin.token" ${SEATD_ARGS:-} >"$OUT/n$i.log" 2>&1 &
	pids+=($!)
done
endpoints="127.0.0.1:$((PORT + 101)),127.0.0.1:$((PORT + 102)),127.0.0.1:$((PORT + 103))"
api=()
if [ "$WORKLOAD" = watchers ]; then # the watchers workload speaks HTTP (SSE)
	endpoints="127.0.0.1:$((PORT + 201)),127.0.0.1:$((PORT + 202)),127.0.0.1:$((PORT + 203))"
	api=(--http)
fi
"$BIN/seatbench" --endpoints "$endpoints" "${api[@]}" --admin-token-file "$DATA/admin.token" \
	--workload "$WORKLOAD" --duration "$DURATION" $BENCH_ARGS >"$OUT/bench.txt" 2>&1 &
bench=$!
# The progress lines start with the measured phase (setup prints none).
for _ in $(seq 1 300); do
	grep -q "^\\[ *${PROFILE_AT}s\\]" "$OUT/bench.txt" && break
	kill -0 "$bench" 2>/dev/null || break
	sleep 1
done
curls=()
for i in 1 2 3; do
	curl -s -o "$OUT/n$i.allocs0" "http://127.0.0.1:$((PORT + 300 + i))/debug/pprof/allocs" || true
	curl -s -o "$OUT/n$i.prof" "http://127.0.0.1:$((PORT + 300 + i))/debug/pprof/profile?seconds=$PROFILE_SECONDS" &
	curls+=($!)
done
for c in "${curls[@]}"; do wait "$c"; done
for i in 1 2 3; do
	curl -s -o "$OUT/n$i.allocs1" "http://127.0.0.1:$((PORT + 300 + i))/debug/pprof/allocs" || true
done
for i in 1 2 3; do
	curl -s -o "$OUT/n$i.metrics" "http://127.0.0.1:$((PORT + 200 + i))/metrics" || true
	curl -s -o "$OUT/n$i.heap" "http://127.0.0.1:$((PORT + 300 + i))/debug/pprof/heap" || true
done
wait "$bench" || echo "seatbench failed: see $OUT/bench.txt" >&2
grep -v '^\[' "$OUT/bench.txt" | tail -8

go tool pprof -top -cum -nodecount=100000 "$OUT"/n{1,2,3}.prof 2>/dev/null >"$OUT/top.txt"
total=$(grep -oP 'Total samples = \K[0-9.]+' "$OUT/top.txt")
commands=$(awk '/^(hold|confirm|release) /{s += $7} END {print s}' "$OUT/bench.txt")
if [ "$WORKLOAD" != watchers ] && [ "${commands:-0}" != 0 ]; then
	echo "node CPU in the $PROFILE_SECONDS s profiles: ${total}s; per command (all three nodes): $(echo "$total / $PROFILE_SECONDS / $commands * 1000000" | bc -l | cut -d. -f1) µs"
else
	echo "node CPU in the $PROFILE_SECONDS s profiles: ${total}s"
fi
# Commands per proposed entry and per applied batch, from the leaders' and
# replicas' histograms (whole run, setup included).
awk '/^seatledger_raft_(batch_commands|apply_batch_commands)_(sum|count)/{n=$1; sub(/\{.*/, "", n); v[n] += $2}
	END {printf "  commands per proposed entry %.1f, per applied batch %.1f\n",
		v["seatledger_raft_batch_commands_sum"] / v["seatledger_raft_batch_commands_count"],
		v["seatledger_raft_apply_batch_commands_sum"] / v["seatledger_raft_apply_batch_commands_count"]}' "$OUT"/n{1,2,3}.metrics || true
for f in 'google.golang.org/grpc\.\(\*Server\)\.handleStream' 'google.golang.org/grpc\.\(\*ClientConn\)\.Invoke' \
	'github.com/seatledger/seatledger/raftnode\.\(\*adapter\)\.ApplyBatch' 'runtime\.mallocgc' 'runtime\.gcBgMarkWorker'; do
	# A hot spot the nodes never ran (the client's Invoke, a profile
	# without a collection) is left out, not an error (pipefail).
	{ grep -E " $f\$" "$OUT/top.txt" || true; } | head -1 | awk '{print "  " $5 " cumulative in " $6}'
done
