#!/usr/bin/env bash
# The long fault matrix (issue 3): each nemesis alone, then all of them
# together, for several seeds, on a 5-node cluster. Every run's verdict,
# seed and unavailability summary is appended to docs/JEPSEN-RESULTS.md;
# histories and reports stay in jepsen-out/<seed>-<nemesis>/.
#
#   SEEDS="1 2 3" DURATION=2m NODES=5 jepsen/long.sh
#
# A passing run's node data directories (0.2-1 GB each run) are deleted as
# it ends, its logs, history and report kept: 54 runs kept whole filled a
# disk once. KEEP_DATA=1 keeps them; a run that fails keeps them anyway.
set -u
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-"1 2 3"}
DURATION=${DURATION:-2m}
NODES=${NODES:-5}
NEMESES=${NEMESES:-"partition-one partition-leader partition-half partition-ring partition-flap kill-one kill-leader kill-minority kill-all pause-leader clock-skew clock-jump leader-transfer delay loss corrupt-log membership all"}
OUT=docs/JEPSEN-RESULTS.md
mkdir -p jepsen-out docs .bin
go build -tags faults -o .bin/seatd-faults ./cmd/seatd && go build -tags faults -o .bin/seatjepsen ./cmd/seatjepsen || exit 2
if [ ! -f "$OUT" ]; then
  printf '# Long Jepsen runs\n\nAppended by `make jepsen-long` (jepsen/long.sh). Replay any row with\n`make jepsen ARGS="--seed S --nodes N --duration D --nemesis X"`.\n\n| date | seed | nodes | duration | nemesis | verdict | ops | unavailability |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n' > "$OUT"
fi
fail=0
for nem in $NEMESES; do
  for seed in $SEEDS; do
    dir="jepsen-out/$seed-$nem"
    log="$dir.log"
    .bin/seatjepsen run --binary .bin/seatd-faults --seed "$seed" --nodes "$NODES" --duration "$DURATION" \
      --nemesis "$nem" --dir "$dir" >"$log" 2>&1
    rc=$?
    verdict=PASS; [ $rc -eq 1 ] && verdict=VIOLATION; [ $rc -gt 1 ] && verdict="ERROR($rc)"
    [ $rc -ne 0 ] && fail=1
    if [ $rc -eq 0 ] && [ "${KEEP_DATA:-0}" != 1 ]; then
      rm -rf "$dir"/n*/ # the nodes' data directories; nN.log files stay
    fi
    ops=$(grep -m1 -o 'ops: [0-9]*' "$log" | grep -o '[0-9]*' || true)
    gaps=$(grep -m1 -o 'unavailability over.*' "$log" || echo "-")
    writes=$(grep -m1 -oE '[0-9]* snapshot installs, [0-9]* checkpoints behind apply(, [0-9]* raft log floor moves)?' "$log" || true)
    [ -n "$writes" ] && gaps="$writes; $gaps"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(date -u +%F)" "$seed" "$NODES" "$DURATION" "$nem" "$verdict" "${ops:--}" "$gaps" >> "$OUT"
    echo "$nem seed $seed: $verdict ($log)"
  done
done
exit $fail
