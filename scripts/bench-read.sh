#!/usr/bin/env bash
# Reading back (issue 4): 4 KiB random reads in a 1 GiB file, `adz decompress` on 1 and 2
# threads against `zstd -d` / `lz4 -d`, and ratio against partial-read cost as the frame
# (block) size varies. A benchmark, not a test: it prints figures and writes them to
# $RESULTS; it passes or fails nothing. Run it on a quiet machine.
#
#   scripts/bench-read.sh
#   RUNS=5 READS=20000 RESULTS=/tmp/r scripts/bench-read.sh
#
# Environment:
#   CACHE    cache dir (default .cache): datasets in $CACHE/datasets, work files in $CACHE/bench-read
#   DATASET  dataset name from scripts/datasets.sh (default text-1g: the first GiB of linux.tar)
#   RUNS     timed runs per decompression command (default 10, after one warmup)
#   READS    random reads per file (default 10000)
#   RESULTS  where the figures go (default $CACHE/bench-read/results-<date>)
#   SIZES    frame sizes for the ratio/partial-read curve (default "64K 256K 1M 4M 16M")
#
# What each part measures:
# 1. random reads: crates/adz-core/examples/read_random on the zstd:3 and lz4:1 files (1 MiB
#    frames): frames and bytes decoded per 4 KiB read (deterministic: at most one frame, two
#    when a read crosses a frame end), the latency of a 4 KiB read against decoding the whole
#    frame it falls in, and the same reads through the default 64 MiB cache.
# 2. decompression: `adz decompress -T 1` and `-T 2` (the parallel reader) against `zstd -d`
#    and `lz4 -d` on the same data compressed by each tool at the same level; outputs are
#    files, deleted and synced before every run (adz fsyncs its output on commit, the tools do
#    not: the "+ fsync" rows make that equal).
# 3. frame size: for each of SIZES, the compressed size (ratio) and read_random's decoded bytes
#    and latency per 4 KiB read.
# 4. `--frame-size auto`: the frame size MRC picks for this file at reads-per-write 0, 1, 10.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

CACHE=${CACHE:-.cache}
RUNS=${RUNS:-10}
READS=${READS:-10000}
DATASET=${DATASET:-text-1g}
SIZES=${SIZES:-"64K 256K 1M 4M 16M"}
mkdir -p "$CACHE/bench-read"
CACHE=$(cd "$CACHE" && pwd)
WORK="$CACHE/bench-read"
RESULTS=${RESULTS:-$WORK/results-$(date +%F)}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)

log() { echo "bench-read: $*" >&2; }

log "building adz and the read_random example (release)"
cargo build --release -q -p adz-cli
cargo build --release -q -p adz-core --example read_random
export PATH="$REPO/target/release:$PATH"
READ_RANDOM="$REPO/target/release/examples/read_random"

CACHE="$CACHE" scripts/datasets.sh "$DATASET"
for tool in hyperfine lz4 zstd; do
    command -v "$tool" >/dev/null || { log "error: $tool not found (apt-get install $tool)"; exit 1; }
done

cd "$WORK"
ln -f "$CACHE/datasets/$DATASET" "$DATASET"
IN=$DATASET
{
    echo "date: $(date -u +%FT%TZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "adz: $(adz --version) (git $(git -C "$REPO" rev-parse --short HEAD))"
    echo "zstd: $(zstd --version 2>&1 | head -1)"
    echo "lz4: $(lz4 --version 2>&1 | head -1)"
    echo "dataset: $DATASET, $(stat -L -c %s "$IN") bytes, sha256 $(sha256sum -b "$IN" | cut -c1-64)"
    echo "runs: $RUNS, reads: $READS"
} | tee "$RESULTS/environment.txt"

log "making the compressed files"
adz compress -q -f -T 1 --codec zstd:3 "$IN" in.zstd.adz
adz compress -q -f -T 1 --codec lz4:1 "$IN" in.lz4.adz
zstd -3 --single-thread -f -q "$IN" -o in.zst
lz4 -1 -f -q "$IN" in.lz4
cat "$IN" in.zstd.adz in.lz4.adz in.zst in.lz4 > /dev/null

# 1. Random reads.
for f in in.zstd.adz in.lz4.adz; do
    log "== random reads in $f"
    "$READ_RANDOM" "$f" "$READS" 4096 | tee "$RESULTS/random-$f.txt"
done

# 2. Decompression, 1 and 2 threads, against the native tools.
OUTS="out.raw"
PREPARE="rm -f $OUTS; sync"
hyperfine --warmup 1 --runs "$RUNS" --prepare "$PREPARE" \
    --export-json "$RESULTS/decompress-zstd.json" --export-markdown "$RESULTS/decompress-zstd.md" \
    -n "adz decompress -T 1 (zstd:3)" "adz decompress -q -f -T 1 in.zstd.adz out.raw" \
    -n "adz decompress -T 2 (zstd:3)" "adz decompress -q -f -T 2 in.zstd.adz out.raw" \
    -n "zstd -d" "zstd -d -f -q in.zst -o out.raw" \
    -n "zstd -d + fsync" "zstd -d -f -q in.zst -o out.raw && sync out.raw"
hyperfine --warmup 1 --runs "$RUNS" --prepare "$PREPARE" \
    --export-json "$RESULTS/decompress-lz4.json" --export-markdown "$RESULTS/decompress-lz4.md" \
    -n "adz decompress -T 1 (lz4:1)" "adz decompress -q -f -T 1 in.lz4.adz out.raw" \
    -n "adz decompress -T 2 (lz4:1)" "adz decompress -q -f -T 2 in.lz4.adz out.raw" \
    -n "lz4 -d" "lz4 -d -f -q in.lz4 out.raw" \
    -n "lz4 -d + fsync" "lz4 -d -f -q in.lz4 out.raw && sync out.raw"
adz decompress -q -f -T 2 in.zstd.adz out.raw && cmp "$IN" out.raw
adz decompress -q -f -T 2 in.lz4.adz out.raw && cmp "$IN" out.raw
rm -f $OUTS

# 3. Ratio against partial-read cost, by frame size.
{
    printf '%-8s %14s %8s %s\n' "frame" "file bytes" "ratio" "(random 4 KiB reads: see frames-SIZE.txt)"
    raw=$(stat -L -c %s "$IN")
    for b in $SIZES; do
        adz compress -q -f -T 1 --codec zstd:3 -B "$b" "$IN" "frames-$b.adz"
        size=$(stat -c %s "frames-$b.adz")
        printf '%-8s %14s %8s\n' "$b" "$size" "$(awk -v r="$raw" -v s="$size" 'BEGIN { printf "%.3f", r / s }')"
        "$READ_RANDOM" "frames-$b.adz" "$((READS / 5))" 4096 > "$RESULTS/frames-$b.txt"
        rm -f "frames-$b.adz"
    done
} | tee "$RESULTS/frame-sizes.txt"
# 4. Where `--frame-size auto` (MRC) lands on that curve, for reads-per-write 0, 1 and 10 (write
#    and read link 1GbE: Bw/Br = 1).
{
    for k in 0 1 10; do
        adz compress -f -T 1 --codec zstd:3 --link 1GbE --frame-size auto \
            --hint "reads-per-write=$k" "$IN" auto.adz 2>&1 | sed -n 's/^ *frame size auto: /reads-per-write='"$k"': /p'
        rm -f auto.adz
    done
} | tee "$RESULTS/frame-size-auto.txt"
log "results in $RESULTS"
