#!/usr/bin/env bash
# What the reference-increment filters gain, and the ratio / partial-read trade-off of the
# frame size (issue 4). Deterministic: every figure is a byte count or a ratio, so the output
# is the same on any machine and may be committed (docs/benchmarks/2026-11-23-filters/).
# No timings are taken; filter speeds are scripts/bench-filters.sh's job.
#
#   scripts/filter-ratios.sh > table.md       # 64 MiB doubles matrix (adz-datagen doubles, seed 1)
#   SIZE=16777216 scripts/filter-ratios.sh    # a smaller matrix
#
# Environment:
#   SIZE   bytes of the doubles matrix (default 67108864 = 64 MiB)
#   SEED   adz-datagen seed (default 1)
#   WORK   scratch directory (default: a fresh temporary directory, removed at the end)
#
# Method: `adz compress -T 1 -c CODEC [--filter LIST]` with the default 1 MiB frames. One
# compression thread makes the stream of decisions the same on every run (with more workers,
# the static strategy's probe mode after an incompressible block depends on when measurements
# arrive). Ratio = raw bytes / bytes of the .adz file (headers and index included). Every
# output is decompressed and compared with the input.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=${SIZE:-67108864}
SEED=${SEED:-1}
cargo build --release -q -p adz-cli -p adz-datagen
ADZ=$PWD/target/release/adz
GEN=$PWD/target/release/adz-datagen
if [[ -z ${WORK:-} ]]; then
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
IN=$WORK/doubles.bin
"$GEN" doubles "$SIZE" "$SEED" > "$IN"

# ratio ARGS...: compress IN with ARGS, check the round trip, print raw/stored with 3 decimals.
ratio() {
    "$ADZ" compress -q -f -T 1 "$@" "$IN" "$WORK/out.adz"
    "$ADZ" decompress -q -f "$WORK/out.adz" "$WORK/back.bin"
    cmp -s "$IN" "$WORK/back.bin" || { echo "round trip differs: $*" >&2; exit 1; }
    awk -v r="$SIZE" -v s="$(stat -c %s "$WORK/out.adz")" 'BEGIN { printf "%.3f", r / s }'
}

echo "## Ratio by filter and codec"
echo
echo "adz-datagen doubles $SIZE $SEED; \`adz compress -T 1 -c CODEC --filter LIST\`, 1 MiB frames."
echo
FILTERS=(none shuffle:8 xor:8 shuffle:8,xor:8 xor:8,shuffle:8 delta:8 delta:8,shuffle:8)
CODECS=(zstd:3 lz4 xz:6)
printf '| filters |'; printf ' %s |' "${CODECS[@]}"; echo
printf '|---|'; printf -- '---:|%.0s' "${CODECS[@]}"; echo
for f in "${FILTERS[@]}"; do
    printf '| %s |' "$f"
    for c in "${CODECS[@]}"; do
        if [[ $f == none ]]; then r=$(ratio -c "$c"); else r=$(ratio -c "$c" --filter "$f"); fi
        printf ' %s |' "$r"
    done
    echo
done

echo
echo "## Ratio vs frame size, and the cost of a small read"
echo
echo "\`adz compress -T 1 -c zstd:3 [--filter xor:8,shuffle:8] -B SIZE\`. A 4 KiB read at a"
echo "random offset decodes the frame that holds it (two when it crosses a frame end), so the"
echo "raw bytes it decodes are on average F + 4095 for frames of F bytes, and it reads about"
echo "(F + 4095) / ratio stored bytes."
echo
echo "| frame size | frames | ratio zstd:3 | ratio zstd:3 xor:8,shuffle:8 | raw bytes decoded per 4 KiB read | stored bytes read per 4 KiB read (xor:8,shuffle:8) |"
echo "|---:|---:|---:|---:|---:|---:|"
for kib in 64 128 256 512 1024 2048 4096 8192 16384; do
    plain=$(ratio -c zstd:3 -B "${kib}K")
    filt=$(ratio -c zstd:3 --filter xor:8,shuffle:8 -B "${kib}K")
    frames=$(( (SIZE + kib * 1024 - 1) / (kib * 1024) ))
    awk -v k="$kib" -v n="$frames" -v p="$plain" -v f="$filt" 'BEGIN {
        dec = k * 1024 + 4095
        printf "| %d KiB | %d | %s | %s | %d | %.0f |\n", k, n, p, f, dec, dec / f }'
done

echo
echo "## Where \`--frame-size auto\` lands"
echo
echo "\`adz compress -T 1 -c zstd:3 --filter xor:8,shuffle:8 --frame-size auto --hint reads-per-write=K\`"
echo "(equal read and write links)."
echo
echo "| reads-per-write | frame size chosen | ratio |"
echo "|---:|---:|---:|"
for k in 0 1 10; do
    r=$(ratio -c zstd:3 --filter xor:8,shuffle:8 --frame-size auto --hint "reads-per-write=$k")
    bs=$("$ADZ" inspect --json "$WORK/out.adz" | awk -F'[:,]' '/"block_size"/ { gsub(/ /, "", $2); print $2 }')
    printf '| %s | %d KiB | %s |\n' "$k" $((bs / 1024)) "$r"
done
