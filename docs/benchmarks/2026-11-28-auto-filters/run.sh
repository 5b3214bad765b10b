#!/usr/bin/env bash
# shellcheck disable=SC2016  # the wrappers' $1 and $@ are theirs, expanded when they run
# S1 with the filters chosen by measurement (decision 0059) against S1 with
# `--hint filters=none` and static zstd:3, one binary, side by side (adz-bench ab).
# Usage: run.sh ADZ OUT.csv [ROUNDS]   (inputs: the real corpus in /dev/shm/real and the
# first 128 MiB of the demo's data; outputs in /dev/shm/abf)
set -euo pipefail
ADZ=$(realpath "$1"); OUT=$2; ROUNDS=${3:-3}
W=$(mktemp -d /dev/shm/abw.XXXX)
printf '#!/bin/sh\ncmd=$1; shift\nexec %s "$cmd" --hint filters=none "$@"\n' "$ADZ" > "$W/nofilt"
printf '#!/bin/bash\ncmd=$1; shift; a=()\nfor x in "$@"; do [ "$x" = throughput ] && x=static=zstd:3; a+=("$x"); done\nexec %s "$cmd" "${a[@]}"\n' "$ADZ" > "$W/z3"
chmod +x "$W/nofilt" "$W/z3"
R=/dev/shm/real
FILES=$R/real-concat.bin,$R/real-fastq.fq,$R/real-fits.fits,$R/real-grib.grib,$R/real-hdf5.nc,$R/real-nifti.nii,$R/real-source.tar,$R/real-compressed.tar.xz,/dev/shm/real-demo128.bin
mkdir -p /dev/shm/abf
adz-bench ab --files "$FILES" --build nofilt="$W/nofilt" --build filt="$ADZ" --build z3="$W/z3" \
    --links 117,1200 --rounds "$ROUNDS" --tmp /dev/shm/abf --out "$OUT"
rm -rf "$W"
