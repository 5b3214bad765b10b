#!/usr/bin/env bash
# Filter speeds: how fast shuffle:8, delta:8, xor:8 and their chains run, encoding and
# decoding, on a doubles matrix, through the `adz` binary. A benchmark, not a test: it prints
# figures and writes hyperfine exports; it passes or fails nothing. Run it on a quiet machine;
# commit a run next to docs/benchmarks/2026-11-23-filters/README.md with this exact command.
# (The ratios of the same filters are deterministic: scripts/filter-ratios.sh.)
#
#   scripts/bench-filters.sh
#   SIZE=268435456 RUNS=5 RESULTS=/tmp/r scripts/bench-filters.sh
#
# Environment:
#   SIZE     bytes of the doubles matrix (default 1073741824 = 1 GiB)
#   RUNS     timed runs per command (default 10), after one warmup run
#   RESULTS  where the exports go (default .cache/bench/filters-<date>)
#   WORK     scratch directory for the input and outputs (default .cache/bench/filters)
#
# Method: `adz compress -T 1 -c none --filter LIST` stores the filtered bytes with no codec, so
# the time above the `-c none` baseline (which copies the data) is the filter's; `adz
# decompress` of that file times the inverse filters. One thread, so the figure is per core;
# `-T 0` rows (all cores) show how the pipeline scales. The input is read once first so every
# run finds it in the page cache; outputs go to the same local filesystem and are deleted
# before each run. Then the filters with zstd:3 and lz4, where they matter to users.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=${SIZE:-1073741824}
RUNS=${RUNS:-10}
WORK=${WORK:-.cache/bench/filters}
RESULTS=${RESULTS:-.cache/bench/filters-$(date -u +%Y-%m-%d)}
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }

cargo build --release -q -p adz-cli -p adz-datagen
ADZ=$PWD/target/release/adz
GEN=$PWD/target/release/adz-datagen
mkdir -p "$WORK" "$RESULTS"
IN=$WORK/doubles.bin
if [[ ! -s $IN || $(stat -c %s "$IN") != "$SIZE" ]]; then
    "$GEN" doubles "$SIZE" 1 > "$IN"
fi
cat "$IN" > /dev/null

{
    echo "# filter speeds, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "adz $("$ADZ" --version), $(nproc) cores, $(uname -sr)"
    echo "input: adz-datagen doubles $SIZE 1"
} | tee "$RESULTS/env.txt"

FILTERS=(none shuffle:8 delta:8 xor:8 xor:8,shuffle:8 shuffle:8,xor:8)

# encode / decode with codec none: the filters alone.
for threads in 1 0; do
    enc=() dec=()
    for f in "${FILTERS[@]}"; do
        out=$WORK/none-$f-T$threads.adz
        args=(-T "$threads" -c none)
        [[ $f == none ]] || args+=(--filter "$f")
        "$ADZ" compress -q -f "${args[@]}" "$IN" "$out"
        enc+=(-n "encode $f -T $threads" "$ADZ compress -q -f ${args[*]} $IN $WORK/enc.adz")
        dec+=(-n "decode $f" "$ADZ decompress -q -f $out $WORK/dec.bin")
    done
    hyperfine -w 1 -r "$RUNS" --prepare "rm -f $WORK/enc.adz; sync" \
        --export-markdown "$RESULTS/filters-none-T$threads.md" \
        --export-json "$RESULTS/filters-none-T$threads.json" "${enc[@]}"
    if [[ $threads == 1 ]]; then
        hyperfine -w 1 -r "$RUNS" --prepare "rm -f $WORK/dec.bin; sync" \
            --export-markdown "$RESULTS/filters-none-decode.md" \
            --export-json "$RESULTS/filters-none-decode.json" "${dec[@]}"
    fi
done

# With the codecs users pair them with.
for codec in zstd:3 lz4; do
    cmds=()
    for f in "${FILTERS[@]}"; do
        args=(-T 1 -c "$codec")
        [[ $f == none ]] || args+=(--filter "$f")
        cmds+=(-n "$codec $f" "$ADZ compress -q -f ${args[*]} $IN $WORK/enc.adz")
    done
    hyperfine -w 1 -r "$RUNS" --prepare "rm -f $WORK/enc.adz; sync" \
        --export-markdown "$RESULTS/filters-$codec.md" \
        --export-json "$RESULTS/filters-$codec.json" "${cmds[@]}"
done
rm -f "$WORK/enc.adz" "$WORK/dec.bin"
echo "results in $RESULTS"
