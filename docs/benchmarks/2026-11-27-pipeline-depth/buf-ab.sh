#!/bin/bash
BIN=$1; R=$2; L=$3; F=${4:-/dev/shm/mixed.bin}
for r in $(seq 1 $R); do
  for cfg in "static=zstd:3" "static=zstd:3 --buffers 16" "throughput" "throughput --buffers 16" "static=none"; do
    $BIN compress --force --strategy $cfg --throttle $L "$F" /dev/shm/demo-out.adz 2> /dev/shm/demo-ab.log
    t=$(sed -nE 's/.* ([0-9.]+) s, [0-9.]+ MB\/s$/\1/p' /dev/shm/demo-ab.log | head -1)
    ra=$(sed -nE 's/.*ratio ([0-9.]+),.*/\1/p' /dev/shm/demo-ab.log | head -1)
    echo "$L|$cfg|$r|$t|$ra"
  done
done
