#!/usr/bin/env bash
# How the uniform workload's cost grows with groups, clients, shows and seats
# per show (issue 4; its tables: `git show d6f12c1:docs/PERFORMANCE.md`, "How cost grows"): one short seatbench
# run per point, each on a fresh local 3-node cluster, one table per
# dimension. Node CPU per command (all three replicas together) is the
# figure that moves least when the machine is shared.
#
#   cmd/seatbench/scaling.sh            # 10 s per point, about 8 minutes
#   DURATION=20s cmd/seatbench/scaling.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10s}
OUT=${OUT:-$(mktemp -d /tmp/seatbench-scaling-XXXX)}
mkdir -p "$OUT"
go build -o .bin/ ./cmd/seatd ./cmd/seatbench

point() { # name, seatbench args...
	local name=$1
	shift
	.bin/seatbench --seatd .bin/seatd --workload uniform --duration "$DURATION" --json "$OUT/$name.json" "$@" >"$OUT/$name.txt" 2>&1 ||
		echo "seatbench $* failed: see $OUT/$name.txt" >&2
}

table() { # title, files...
	local title=$1
	shift
	python3 - "$title" "$@" <<'PY'
import json, sys
title, files = sys.argv[1], sys.argv[2:]
print(f"\n{title}\n")
print("| point | holds/s | hold p50 ms | hold p99 ms | commands/s | node cores | node CPU µs per command | commands per entry |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for f in files:
    try:
        s = json.load(open(f))
    except (OSError, ValueError):
        print(f"| {f} | failed | | | | | | |")
        continue
    calls = {c["name"]: c for c in s["calls"]}
    h = calls["hold"]
    cmds = sum(c["attempts_per_s"] for c in s["calls"])
    nodes = sum((s.get("cpu") or {}).get("node_core_share", {}).values())
    point = f"groups {s['cluster'].get('groups') or 8}, clients {s['clients']}, shows {s['shows']}, seats {s['seats_per_show']}"
    print(f"| {point} | {h['ok_per_s']:.0f} | {h['latency_ms']['p50']:.0f} | {h['latency_ms']['p99']:.0f} | {cmds:.0f} | {nodes:.2f} | {nodes*1e6/max(cmds,1):.0f} | {(s.get('extra') or {}).get('commands_per_entry','?')} |")
PY
}

for g in 1 2 4 8 16; do point "groups-$g" --groups "$g"; done
for c in 32 128 256 1024; do point "clients-$c" --clients "$c"; done
for s in 200 2000 20000 50000; do point "shows-$s" --shows "$s"; done
for n in 20 200 1000 2000; do point "seats-$n" --seats "$n"; done

{
	echo "seatbench uniform, $DURATION per point, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
	table "Groups (clients 256, shows 20,000, seats 200)" "$OUT"/groups-{1,2,4,8,16}.json
	table "Clients (groups 8, shows 20,000, seats 200)" "$OUT"/clients-{32,128,256,1024}.json
	table "Shows (groups 8, clients 256, seats 200)" "$OUT"/shows-{200,2000,20000,50000}.json
	table "Seats per show (groups 8, clients 256, shows 20,000)" "$OUT"/seats-{20,200,1000,2000}.json
} | tee "$OUT/scaling.md"
echo "raw outputs in $OUT" >&2
