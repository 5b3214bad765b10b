#!/usr/bin/env bash
# Issue 5's evaluation (thesis chapter 5): the matrix of static rungs, S1/S2/S3, raw and
# external tools (zstd --adapt, zstd -T, lz4, xz) on every dataset at 117/1200/6000 MB/s for
# sync and async writes, then the summary, the plots and the cost of the adaptive rows.
# Results in $OUT (default $CACHE/bench/evaluation). See docs/EVALUATION.md.
#
#   scripts/bench-evaluation.sh                  # the full matrix (hours; run on a quiet machine)
#   QUICK=1 scripts/bench-evaluation.sh          # the small subset (a few minutes)
#   SIZE=67108864 scripts/bench-evaluation.sh    # full matrix on 64 MiB per dataset
#   ARGS="--datasets text,matrix --links 117" scripts/bench-evaluation.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-.cache}
OUT=${OUT:-$CACHE/bench/evaluation${QUICK:+-quick}}
THREADS=${THREADS:-0}
cargo build --release -p adz-bench -p adz-cli >&2
BENCH=target/release/adz-bench
args=(--cache "$CACHE" --out "$OUT" -T "$THREADS")
[ -n "${QUICK:-}" ] && args+=(--quick)
[ -n "${SIZE:-}" ] && args+=(--size "$SIZE")
# shellcheck disable=SC2206
[ -n "${ARGS:-}" ] && args+=($ARGS)
"$BENCH" run "${args[@]}" --estimate >&2
"$BENCH" run "${args[@]}"
"$BENCH" plot "$OUT/results.csv" "$OUT/plots" > /dev/null
for t in "$OUT"/traces/*-sync-s1.jsonl; do
    [ -e "$t" ] && "$BENCH" plot-trace "$t" "$OUT/plots/trace-$(basename "$t" .jsonl).png"
done
target/release/adz cost --bench "$OUT/results.csv" > "$OUT/cost.txt"
{
    echo
    echo "Versions: $(target/release/adz --version); $(zstd --version 2>/dev/null | head -1); $(xz --version 2>/dev/null | head -1); $(lz4 --version 2>&1 | head -1)"
    echo "Machine: $(nproc) cores, $(uname -srm)"
    echo "Command: scripts/bench-evaluation.sh (QUICK=${QUICK:-} SIZE=${SIZE:-} THREADS=$THREADS ARGS=${ARGS:-})"
} >> "$OUT/summary.md"
cat "$OUT/summary.md"
echo "results: $OUT/results.csv, $OUT/summary.md, $OUT/plots/, $OUT/cost.txt" >&2
