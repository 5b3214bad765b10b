#!/usr/bin/env bash
# Issue 5's evaluation (thesis chapter 5): the matrix of static rungs, S1/S2/S3, raw and
# external tools (zstd --adapt, zstd -T, lz4, xz) on every dataset at 117/1200/6000 MB/s for
# sync and async writes, then the summary, the plots and the cost of the adaptive rows.
# Results in $OUT (default $CACHE/bench/evaluation). See docs/EVALUATION.md.
#
#   scripts/bench-evaluation.sh                  # the full matrix (hours; run on a quiet machine)
#   QUICK=1 scripts/bench-evaluation.sh          # the small subset (a few minutes)
#   SIZE=67108864 scripts/bench-evaluation.sh    # full matrix on 64 MiB per dataset
#   REAL=1 scripts/bench-evaluation.sh           # the matrix on the real-data corpus (issue 22;
#                                                # downloads ~260 MB of pinned packages once)
#   ARGS="--datasets text,matrix --links 117" scripts/bench-evaluation.sh
#   MAX_MINUTES=150 scripts/bench-evaluation.sh  # run for at most 150 minutes; the same command
#                                                # again resumes where it stopped
#   FRESH=1 scripts/bench-evaluation.sh          # discard $OUT's earlier results, start over
#   SINK=/scratch/me/adz-bench.adz scripts/bench-evaluation.sh
#                                                # also write to that real store, unthrottled
#                                                # (a path or s3://bucket/key), as one more link
#
# Runs resume: rows already in $OUT/results.csv (same plan) are not run again. Every piece must
# be measured by the same source: the first run records the commit in $OUT/source.txt and a
# later run from another commit (or with local changes) is refused unless MIXED_SOURCE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-.cache}
OUT=${OUT:-$CACHE/bench/evaluation${REAL:+-real}${QUICK:+-quick}}
THREADS=${THREADS:-0}
source_id() {
    local rev
    rev=$(git rev-parse HEAD 2>/dev/null || echo unknown)
    git diff --quiet HEAD 2>/dev/null || rev="$rev (with uncommitted changes)"
    echo "$rev"
}
[ -n "${FRESH:-}" ] && rm -f "$OUT/source.txt"
if [ -f "$OUT/source.txt" ] && [ "$(cat "$OUT/source.txt")" != "$(source_id)" ] && [ -z "${MIXED_SOURCE:-}" ]; then
    echo "bench-evaluation: $OUT was measured from $(cat "$OUT/source.txt"), this is $(source_id);" >&2
    echo "  resuming would mix results of two builds. Check that commit out to resume, or set" >&2
    echo "  FRESH=1 to start over, or MIXED_SOURCE=1 to resume anyway." >&2
    exit 1
fi
cargo build --release -p adz-bench -p adz-cli >&2
BIN=${CARGO_TARGET_DIR:-target}/release
BENCH=$BIN/adz-bench
args=(--cache "$CACHE" --out "$OUT" -T "$THREADS")
[ -n "${QUICK:-}" ] && args+=(--quick)
[ -n "${REAL:-}" ] && args+=(--real)
[ -n "${SIZE:-}" ] && args+=(--size "$SIZE")
[ -n "${SINK:-}" ] && args+=(--sink "$SINK")
# shellcheck disable=SC2206
[ -n "${ARGS:-}" ] && args+=($ARGS)
"$BENCH" run "${args[@]}" --estimate >&2
run_args=()
[ -n "${MAX_MINUTES:-}" ] && run_args+=(--max-minutes "$MAX_MINUTES")
[ -n "${FRESH:-}" ] && run_args+=(--fresh)
mkdir -p "$OUT"
[ -f "$OUT/source.txt" ] || source_id > "$OUT/source.txt"
"$BENCH" run "${args[@]}" "${run_args[@]}"
"$BENCH" plot "$OUT/results.csv" "$OUT/plots" > /dev/null
for t in "$OUT"/traces/*-sync-s1.jsonl; do
    [ -e "$t" ] && "$BENCH" plot-trace "$t" "$OUT/plots/trace-$(basename "$t" .jsonl).png"
done
"$BIN/adz" cost --bench "$OUT/results.csv" > "$OUT/cost.txt"
{
    echo
    echo "Versions: $("$BIN/adz" --version); $(zstd --version 2>/dev/null | head -1); $(xz --version 2>/dev/null | head -1); $(lz4 --version 2>&1 | head -1)"
    echo "Machine: $(nproc) cores, $(uname -srm)"
    echo "Command: scripts/bench-evaluation.sh (QUICK=${QUICK:-} REAL=${REAL:-} SIZE=${SIZE:-} THREADS=$THREADS ARGS=${ARGS:-}); source $(cat "$OUT/source.txt")"
} >> "$OUT/summary.md"
cat "$OUT/summary.md"
echo "results: $OUT/results.csv, $OUT/summary.md, $OUT/plots/, $OUT/cost.txt" >&2
