#!/usr/bin/env bash
# The prediction's sample planned to its time budget (issue 6): predicted against real
# ratio and write time, before and after, and what sampling costs a fast write.
#
#   run.sh ADZ_BEFORE ADZ_AFTER WORKDIR
#
# WORKDIR (on /dev/shm: this VM drops the page cache of other files) must hold text.bin (the
# first 256 MiB of .cache/datasets/text-1g, a Linux source tar), doubles.bin
# (adz-datagen doubles 268435456 1) and mixed.bin (adz-datagen mixed 536870912 1).
set -euo pipefail
BEFORE=$1
AFTER=$2
WORK=$3
HERE=$(cd "$(dirname "$0")" && pwd)
for who in before after; do
  adz=$BEFORE; [ $who = after ] && adz=$AFTER
  mkdir -p "$HERE/$who"
  for kind in text doubles mixed; do
    for link in 1GbE 10GbE; do
      "$adz" predict "$WORK/$kind.bin" --link $link --check --json > "$HERE/$who/predict-$kind-$link.json"
    done
  done
done
python3 "$HERE/summarize.py" "$HERE"
# The cost at a fast link: static none (no prediction after the change) against S1, 10 pairs.
for who in before after; do
  adz=$BEFORE; [ $who = after ] && adz=$AFTER
  for i in $(seq 10); do
    for s in static=none throughput; do
      mbs=$("$adz" compress -f -s $s --throttle 6000MB/s "$WORK/text.bin" - 2>&1 >/dev/null | head -1 | sed -E 's/.* ([0-9.]+) MB\/s$/\1/')
      echo "$who $s $mbs"
    done
  done
done | tee "$HERE/fast-link.txt"
