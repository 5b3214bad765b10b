#!/usr/bin/env bash
# The main job as it stands: generate ~100 MB of mixed data (text, doubles, sparse records,
# incompressible noise), compress it with adz, look inside, decompress, and compare.
set -euo pipefail
cd "$(dirname "$0")/.."
ADZ=target/release/adz
GEN=target/release/adz-datagen
CACHE=${CACHE:-.cache}
SIZE=${DEMO_BYTES:-104857600}
dir="$CACHE/demo"
mkdir -p "$dir"
data="$dir/mixed.bin"

if [ ! -f "$data" ] || [ "$(stat -c %s "$data")" != "$SIZE" ]; then
    echo "== generating $SIZE bytes of mixed data into $data"
    "$GEN" mixed "$SIZE" 1 > "$data.tmp" && mv "$data.tmp" "$data"
fi

now() { date +%s.%N; }

echo
echo "== compress with two static codecs"
for codec in lz4:1 zstd:3; do
    out="$dir/mixed.$codec.adz"
    t0=$(now)
    "$ADZ" compress --codec "$codec" --force --quiet "$data" "$out"
    t1=$(now)
    awk -v c="$codec" -v raw="$SIZE" -v out="$(stat -c %s "$out")" -v t0="$t0" -v t1="$t1" \
        'BEGIN { s = t1 - t0; printf "  %-8s ratio %6.3f  %6.2f s  %7.1f MB/s\n", c, raw / out, s, raw / s / 1e6 }'
done

echo
echo "== adz inspect (zstd:3)"
"$ADZ" inspect "$dir/mixed.zstd:3.adz"

echo
echo "== adz verify"
"$ADZ" verify "$dir/mixed.zstd:3.adz"

echo
echo "== decompress and compare with the original"
"$ADZ" decompress --force --quiet "$dir/mixed.zstd:3.adz" "$dir/mixed.out"
cmp "$data" "$dir/mixed.out" && echo "  identical: $SIZE bytes"
rm -f "$dir/mixed.out"

echo
echo "The adaptive pipeline (S1/S2/S3 over a simulated link) is not built yet: see the open issues."
