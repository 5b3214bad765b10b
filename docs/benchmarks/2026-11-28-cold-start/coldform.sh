#!/bin/bash
# each round and rung: a write after 4 s idle (cold), then the same write at once (warm)
A=${ADZ:-target/release/adz}
for r in 1 2 3; do for c in lz4:1 zstd:1 zstd:3; do
  sleep 4
  $A compress -q -f -s static=$c --throttle 125MB/s --trace /dev/shm/cf-$c-$r-cold.jsonl /dev/shm/real/real-source.tar /dev/shm/cf.adz
  $A compress -q -f -s static=$c --throttle 125MB/s --trace /dev/shm/cf-$c-$r-warm.jsonl /dev/shm/real/real-source.tar /dev/shm/cf.adz
done; done
