#!/bin/bash
# demo-ab2.sh ROUNDS LINK: old/new binaries interleaved, zstd:3 and S1
R=$1; L=$2; F=${3:-/dev/shm/mixed.bin}
for r in $(seq 1 $R); do
  for bin in head deep2; do  # head: 225d8ec; deep, deep2: see README
  for cfg in "static=zstd:3" "throughput"; do
    /dev/shm/adz-$bin compress --force --strategy $cfg --throttle $L "$F" /dev/shm/demo-out.adz 2> /dev/shm/demo-ab.log
    t=$(sed -nE 's/.* ([0-9.]+) s, [0-9.]+ MB\/s$/\1/p' /dev/shm/demo-ab.log | head -1)
    ra=$(sed -nE 's/.*ratio ([0-9.]+),.*/\1/p' /dev/shm/demo-ab.log | head -1)
    echo "$L|$bin|$cfg|$r|$t|$ra"
  done; done
done
