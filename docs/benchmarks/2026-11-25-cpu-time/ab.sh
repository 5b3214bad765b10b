#!/bin/bash
# A/B: S1 and S2 of the previous HEAD (d2e66cd, /dev/shm/adz-head) against this change (/dev/shm/adz-new), with static references, interleaved; each round waits for an idle machine.
cd /dev/shm/s
run() { /dev/shm/adz-$1 compress -f -s $2 --throttle $3 $4 - 2>&1 >/dev/null | head -1 | sed -E 's/.*ratio ([0-9.]+),.* ([0-9.]+) MB\/s$/\1 \2/'; }
echo "dataset,link,round,binary,config,ratio,write_mbs"
for ds in text doubles; do
 for link in 117MB/s 1200MB/s 6000MB/s; do
  for round in 1 2 3; do
   "$(dirname "$0")"/waitidle.sh 300 >&2 || true
   for cfg in head:throughput new:throughput head:keep-pace new:keep-pace head:static=none head:static=lz4:50 head:static=zstd:1 head:static=zstd:3; do
     b=${cfg%%:*}; s=${cfg#*:}
     echo "$ds,${link%MB/s},$round,$b,$s,$(run $b $s $link $ds.bin | tr ' ' ',')"
   done
  done
 done
done
