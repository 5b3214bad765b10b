#!/usr/bin/env bash
# ROUNDS rounds of rungs.py on both data sets (each a fresh process); CSV to $CSV (results.csv).
# Usage: docs/benchmarks/2026-11-28-hdf5-rungs/run.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")"
PY="${PY:-../../../.cache/venv/bin/python}"
REAL="${REAL:-/dev/shm/real/real-hdf5.nc}"
OUT="${OUT:-/dev/shm/h5r}"
mkdir -p "$OUT"
CSV="${CSV:-results.csv}"
echo "data,round,position,filter,seconds,ratio" > "$CSV"
for r in $(seq 0 $(( ${1:-8} - 1 ))); do
    for d in real vpic; do
        "$PY" rungs.py "$REAL" "$OUT" "$d" "$r" >> "$CSV"
    done
done
