#!/usr/bin/env bash
# ROUNDS rounds of bits.py on both data sets (each a fresh process) in MODE (local | 117);
# CSV to $CSV (results-MODE.csv).
# Usage: docs/benchmarks/2026-11-29-hdf5-bitshuffle/run.sh ROUNDS MODE
set -euo pipefail
cd "$(dirname "$0")"
PY="${PY:-../../../.cache/venv/bin/python}"
REAL="${REAL:-/dev/shm/real/real-hdf5.nc}"
OUT="${OUT:-/dev/shm/h5b}"
MODE="${2:-local}"
mkdir -p "$OUT"
CSV="${CSV:-results-$MODE.csv}"
echo "data,round,position,filter,seconds,ratio" > "$CSV"
for r in $(seq 0 $(( ${1:-8} - 1 ))); do
    for d in real vpic; do
        "$PY" bits.py "$REAL" "$OUT" "$d" "$r" "$MODE" >> "$CSV"
    done
done
