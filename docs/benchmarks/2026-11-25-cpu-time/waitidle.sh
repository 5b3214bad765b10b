#!/bin/bash
# wait until the machine is idle (>= 92% idle over 2 s), at most $1 seconds (default 600)
max=${1:-600}; start=$(date +%s)
while :; do
  read -r _ a b c d e f g _ < /proc/stat; t1=$((a+b+c+d+e+f+g)); i1=$d
  sleep 2
  read -r _ a b c d e f g _ < /proc/stat; t2=$((a+b+c+d+e+f+g)); i2=$d
  idle=$(( 100*(i2-i1)/(t2-t1) ))
  [ $idle -ge 92 ] && exit 0
  [ $(( $(date +%s) - start )) -ge $max ] && { echo "waitidle: not idle after ${max}s ($idle%)" >&2; exit 1; }
done
