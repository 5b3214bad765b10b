#!/bin/bash
# pipe.sh RATE ROUNDS: S1 (auto) and zstd --adapt through pv -L RATE on concat, interleaved.
f=/dev/shm/real/real-concat.bin; rate=$1
for r in $(seq 1 $2); do
  for t in s1 zad z3; do
    t0=$(date +%s.%N)
    case $t in
      s1) /dev/shm/adz-shadowrel compress -q -s throughput -T 2 - - < $f | pv -q -L $rate > /dev/shm/pipe.out;;
      z3) /dev/shm/adz-shadowrel compress -q -c zstd:3 -T 2 - - < $f | pv -q -L $rate > /dev/shm/pipe.out;;
      zad) zstd -q -T2 --adapt -c < $f | pv -q -L $rate > /dev/shm/pipe.out;;
    esac
    t1=$(date +%s.%N)
    echo "$rate $r $t $(echo "$t1 - $t0" | bc) $(stat -c %s /dev/shm/pipe.out)"
  done
done
