#!/bin/sh
# How long a file in /dev/shm may sit untouched before reading it is slow again, and what that
# does to a raw adz write (see README). usage: idle-curve.sh ADZ FILE > idle-curve.txt
set -eu
adz=$1 file=$2
ms() { # milliseconds the command takes, its output dropped
    t0=$(date +%s%N); "$@" > /dev/null; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 ))
}
for idle in 0 0.5 1 2 3 5 10; do
    cat "$file" > /dev/null; cat "$file" > /dev/null
    sleep "$idle"
    echo "idle $idle s: cat $(ms cat "$file") ms"
done
for r in 1 2 3; do
    sleep 5
    echo "round $r: raw adz write after 5 s idle $(ms "$adz" compress -q -s static=none "$file" -) ms," \
        "right after $(ms "$adz" compress -q -s static=none "$file" -) ms"
done
