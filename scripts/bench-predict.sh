#!/usr/bin/env bash
# Predicted vs real ratio and write time, and the gain of the predicted start (issue 6).
# Run on a quiet machine; writes results under docs/benchmarks/<date>-predict-timing/, or $OUT.
#
#   [OUT=dir] [CARGO_TARGET_DIR=dir] [EVAL=1 [CACHE=dir]] scripts/bench-predict.sh [SIZE_MiB] [THREADS]
#
# The inputs are adz-datagen's text, doubles, sparse, random and mixed, or with EVAL=1 the
# evaluation's datasets (linux, incompressible, text, matrix, climate, mixed, built by
# `adz-bench datasets` into CACHE, default .cache), SIZE_MiB of each (a dataset that is
# shorter is used whole).
#
# For each datagen kind and each link (1GbE, 10GbE, ib-fdr4):
#  1. adz predict --check --json: predicted and real ratio, speed and write time per rung;
#  2. adz compress -s throughput|keep-pace through a throttled link with --predict auto and
#     --predict off, and with a fixed start (the thesis' zstd:1 / lz4:1 via -s static for
#     reference): total write time and the trace (blocks until the controller settles).
#  The compressed output goes to a pipe to /dev/null behind adz's throttle, so the throttled link
#  is the only sink cost (a local file would add the disk and its fsync, which at 10GbE and
#  above cost more than the link).
# Tables for the README: python3 docs/benchmarks/2026-11-23-predict-timing/summarize.py, run in
# the results directory.
set -euo pipefail
SIZE_MIB=${1:-512}
THREADS=${2:-$(nproc)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-"$ROOT/docs/benchmarks/$(date -u +%Y-%m-%d)-predict-timing"}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
cargo build --release -p adz-cli -p adz-datagen -p adz-bench --manifest-path "$ROOT/Cargo.toml"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
ADZ="$BIN/adz"
GEN="$BIN/adz-datagen"
# name<TAB>path of each input, made before the timed part starts.
if [ -n "${EVAL:-}" ]; then
  "$BIN/adz-bench" datasets --cache "${CACHE:-$ROOT/.cache}" --size $((SIZE_MIB << 20)) \
    --datasets linux,incompressible,text,matrix,climate,mixed |
    while IFS=$'\t' read -r name path _; do
      head -c $((SIZE_MIB << 20)) "$path" > "$WORK/$name.bin"
      echo "$name"
    done > "$WORK/kinds"
else
  for kind in text doubles sparse random mixed; do
    "$GEN" "$kind" $((SIZE_MIB << 20)) 1 > "$WORK/$kind.bin"
    echo "$kind"
  done > "$WORK/kinds"
fi
{
  echo "# adz $(git -C "$ROOT" rev-parse --short HEAD), $(uname -srm), $(nproc) cores, THREADS=$THREADS, ${SIZE_MIB} MiB"
  for kind in $(cat "$WORK/kinds"); do
    for link in 1GbE 10GbE ib-fdr4; do
      echo "## $kind $link: prediction and check"
      "$ADZ" predict "$WORK/$kind.bin" --link "$link" -T "$THREADS" --check --json \
        > "$OUT/predict-$kind-$link.json"
      "$ADZ" predict "$WORK/$kind.bin" --link "$link" -T "$THREADS" --check
      for strategy in throughput keep-pace; do
        for predict in auto off; do
          echo "## $kind $link $strategy --predict $predict"
          "$ADZ" compress -f -s "$strategy" --link auto --throttle "$link" -T "$THREADS" \
            --predict "$predict" --trace "$OUT/trace-$kind-$link-$strategy-$predict.jsonl" \
            "$WORK/$kind.bin" - > /dev/null
        done
      done
      for fixed in zstd:1 lz4:1; do
        echo "## $kind $link static=$fixed"
        "$ADZ" compress -f -s "static=$fixed" --throttle "$link" -T "$THREADS" \
          "$WORK/$kind.bin" - > /dev/null
      done
    done
  done
} 2>&1 | tee "$OUT/log.txt"
echo "results in $OUT"
