#!/bin/bash
# A/B of the mix rung: S1 of b1d9967 (/dev/shm/adz-head) against a new build (/dev/shm/adz-$NEW, default mix),
# with static references, interleaved; each round waits for an idle machine.
# Inputs in /dev/shm/s (see ../2026-11-25-cpu-time/README.md). Usage: ab.sh [ROUNDS_1200] [ROUNDS_OTHER]
cd /dev/shm/s
wait_idle=$(dirname "$(readlink -f "$0")")/../2026-11-25-cpu-time/waitidle.sh
run() { /dev/shm/adz-$1 compress -f -s $2 --throttle $3 $4 - 2>&1 >/dev/null | head -1 | sed -E 's/.*ratio ([0-9.]+),.* ([0-9.]+) MB\/s$/\1 \2/'; }
echo "dataset,link,round,binary,config,ratio,write_mbs"
for cell in text:1200:${1:-10} text:117:${2:-3} doubles:1200:${2:-3} text:6000:${2:-3} doubles:6000:${2:-3}; do
  IFS=: read -r ds link rounds <<< "$cell"
  for round in $(seq 1 "$rounds"); do
    "$wait_idle" 300 >&2 || true
    run head static=none ${link}MB/s $ds.bin > /dev/null   # warm-up: the first run after idle is slow
    for cfg in head:throughput ${NEW:-mix}:throughput ${NEW2:+$NEW2:throughput} head:static=none head:static=lz4:50 head:static=lz4:25 head:static=zstd:1; do
      b=${cfg%%:*}; s=${cfg#*:}
      echo "$ds,$link,$round,$b,$s,$(run $b $s ${link}MB/s $ds.bin | tr ' ' ',')"
    done
  done
done
