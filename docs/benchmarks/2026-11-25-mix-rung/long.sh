#!/bin/bash
# S1 against static lz4:25/lz4:50 and raw on 1 GiB of the kernel tar (/dev/shm/s/text1g.bin,
# the first 1 GiB of text-1g) through 1200 MB/s: does the start's fixed cost fade on a longer
# write? Each round waits for an idle machine and runs one warm-up write first.
# Usage: long.sh [ROUNDS] [ADZ]
cd /dev/shm/s
adz=${2:-/work/main/target/release/adz}
wait_idle=$(dirname "$(readlink -f "$0")")/../2026-11-25-cpu-time/waitidle.sh
run() { "$adz" compress -f -s "$1" --throttle 1200MB/s text1g.bin - 2>&1 >/dev/null | head -1 | sed -E 's/.*ratio ([0-9.]+),.* ([0-9.]+) MB\/s$/\1,\2/'; }
echo "round,config,ratio,write_mbs"
for round in $(seq 1 "${1:-5}"); do
  "$wait_idle" 300 >&2 || true
  run static=none > /dev/null
  for cfg in throughput static=lz4:25 static=lz4:50 static=none; do
    echo "$round,$cfg,$(run $cfg)"
  done
done
