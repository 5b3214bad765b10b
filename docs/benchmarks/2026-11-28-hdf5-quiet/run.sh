#!/usr/bin/env bash
# ROUNDS interleaved rounds of rounds.py on both data sets; CSV to $CSV (results.csv).
# Usage: docs/benchmarks/2026-11-28-hdf5-quiet/run.sh [ROUNDS] [RATE_MB_S | local]
set -euo pipefail
cd "$(dirname "$0")"
PY="${PY:-../../../.cache/venv/bin/python}"
REAL="${REAL:-/dev/shm/real/real-hdf5.nc}"
OUT="${OUT:-/dev/shm/h5q}"
mkdir -p "$OUT"
CSV="${CSV:-results.csv}"
echo "data,round,position,filter,seconds,ratio" > "$CSV"
for r in $(seq 0 $(( ${1:-6} - 1 ))); do
    for d in real vpic; do
        "$PY" rounds.py "$REAL" "$OUT" "$d" "$r" "${2:-117}" >> "$CSV"
    done
done
