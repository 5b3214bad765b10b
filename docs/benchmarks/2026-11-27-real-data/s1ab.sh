#!/usr/bin/env bash
# S1 of several builds on the corpus, interleaved: dataset,link,build,round,seconds,ratio
set -euo pipefail
rounds=$1; shift; links=$1; shift; bins=("$@")
out=/dev/shm/s1ab.adz
echo "dataset,link,config,round,seconds,ratio"
for r in $(seq 1 $rounds); do for f in /dev/shm/real/real-*; do n=$(basename $f); size=$(stat -c %s $f)
for link in $links; do
  # Rotate the builds' order every round: the first run of a cell is not always the same build.
  k=$(( r % ${#bins[@]} )); order=("${bins[@]:k}" "${bins[@]:0:k}")
  for b in "${order[@]}"; do
  t0=$(date +%s.%N); $b compress -q -f -s throughput --throttle $link $f $out; t1=$(date +%s.%N)
  echo "$n,$link,$(basename $b),$r,$(echo "$t1 - $t0" | bc),$(echo "scale=4; $size / $(stat -c %s $out)" | bc)"
done; done; done; done
