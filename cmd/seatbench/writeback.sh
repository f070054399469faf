#!/usr/bin/env bash
# How much the nodes leave dirty in the page cache during a uniform run:
# Dirty plus Writeback from /proc/meminfo, every 200 ms over the measured
# phase. Bursts there are what a raft-log fdatasync waits behind
# (docs/DEPLOY.md, "Write-back"); the machine's other writers count too,
# so run it on a quiet machine, and alternate builds.
#
#   cmd/seatbench/writeback.sh BINDIR SECONDS   # BINDIR holds seatd and seatbench
#   cmd/seatbench/writeback.sh .bin 150
#
# It prints the p50, p99 and largest Dirty+Writeback, the samples over
# 32 MB, and the run's hold line and node CPU per command.
set -euo pipefail
BIN=$(cd "$1" && pwd)
SECS=${2:-100}
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
"$BIN/seatbench" --seatd "$BIN/seatd" --workload uniform --duration "${SECS}s" >"$OUT" 2>&1 &
BENCH=$!
# The measured phase starts once the shows exist (a few seconds).
sleep 8
python3 - "$SECS" <<'PY'
import sys, time
secs = int(sys.argv[1])
vals = []
end = time.time() + secs
while time.time() < end:
    kb = 0
    for line in open('/proc/meminfo'):
        if line.startswith(('Dirty:', 'Writeback:')):
            kb += int(line.split()[1])
    vals.append(kb / 1024)
    time.sleep(0.2)
vals.sort()
print("dirty+writeback MB: p50 %.1f p99 %.1f max %.1f; samples over 32 MB: %d of %d" % (
    vals[len(vals) // 2], vals[int(len(vals) * .99)], vals[-1], sum(v > 32 for v in vals), len(vals)))
PY
wait "$BENCH"
grep -E '^(call|hold) ' "$OUT"
grep -E 'node_cpu_us_per_command' "$OUT"
