#!/usr/bin/env bash
# Nothing worse off S3: `adz compress -s throughput --throttle 117MB/s` to a /dev/shm file, each
# build of BUILDS (/dev/shm/adz-NAME; default "s3old s3b") in turn, 5 interleaved rounds.
# Usage: throttle.sh >throttle.csv
set -eu
BUILDS="${BUILDS:-s3old s3b}"
echo "round,input,build,raw,stored,seconds"
for r in 1 2 3 4 5; do
    for f in /dev/shm/real/real-fits.fits /dev/shm/real/real-nifti.nii /dev/shm/real/real-source.tar; do
        for b in $BUILDS; do
            out=/dev/shm/s3start/thr-$b.adz
            rm -f "$out"
            t0=$(date +%s.%N)
            "/dev/shm/adz-$b" compress -q -s throughput --throttle 117MB/s -f "$f" "$out"
            t1=$(date +%s.%N)
            echo "$r,$(basename "$f"),$b,$(stat -L -c %s "$f"),$(stat -c %s "$out"),$(echo "$t1 - $t0" | bc)"
        done
    done
done
