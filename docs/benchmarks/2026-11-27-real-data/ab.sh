#!/usr/bin/env bash
# S1 of two builds (A, B) against static rungs on the real-data corpus through --throttle links,
# rounds interleaved, inputs and outputs in /dev/shm. Prints one CSV line per run:
#   dataset,link,config,round,seconds,ratio
# Usage: ab.sh A_BIN B_BIN ROUNDS DIR_WITH_DATASETS LINK... > runs.csv
set -euo pipefail
a=$1 b=$2 rounds=$3 dir=$4; shift 4
links=("$@")
out=/dev/shm/adz-ab-out.adz
configs=("A:-s throughput" "B:-s throughput" "B:-s throughput --predict off" "B:-s keep-pace"
         "B:-s prolong=1.5" "B:--codec none" "B:--codec lz4" "B:--codec zstd:1" "B:--codec zstd:3"
         "B:--codec zstd:6")
echo "dataset,link,config,round,seconds,ratio"
for r in $(seq 1 "$rounds"); do
  for f in "$dir"/real-*; do
    name=$(basename "$f"); size=$(stat -c %s "$f")
    for link in "${links[@]}"; do
      for c in "${configs[@]}"; do
        bin=$a; [ "${c%%:*}" = B ] && bin=$b
        args=${c#*:}
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086
        "$bin" compress -q -f $args --throttle "$link" "$f" "$out"
        t1=$(date +%s.%N)
        echo "$name,$link,${c%%:*} $args,$r,$(echo "$t1 - $t0" | bc),$(echo "scale=4; $size / $(stat -c %s "$out")" | bc)"
      done
    done
  done
done
rm -f "$out"
