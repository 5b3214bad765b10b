#!/bin/bash
cd /dev/shm/s
run() { /dev/shm/adz-$1 compress -f -s $2 --throttle $3 $4 - 2>&1 >/dev/null | head -1 | sed -E 's/.*ratio ([0-9.]+),.* ([0-9.]+) MB\/s$/\1 \2/'; }
echo "dataset,link,round,binary,config,ratio,write_mbs"
for spec in text:1200MB/s text:117MB/s doubles:1200MB/s; do
  ds=${spec%%:*}; link=${spec#*:}
  for round in 1 2 3 4; do
   "$(dirname "$0")"/waitidle.sh 240 >&2 || true
   for cfg in head:throughput new4:throughput new3:throughput head:static=lz4:50 head:static=zstd:1 head:static=none; do
     b=${cfg%%:*}; s=${cfg#*:}
     echo "$ds,${link%MB/s},$round,$b,$s,$(run $b $s $link $ds.bin | tr ' ' ',')"
   done
  done
done
