#!/usr/bin/env bash
# Issue 7's bench: write speed to a MinIO on 127.0.0.1 with raw (codec none) and S1
# (throughput, link measured) as --streams varies (1, 2, 4, 8); the same through adz's throttle
# at 117 MB/s so that the link is the bottleneck; and decompression (ranged GETs) from MinIO
# against the same file read locally; 4 KiB ranged reads (`adz cat`) from MinIO and locally.
# Run it on a quiet machine: the figures are timings.
# Results: CSV in $OUT (default .cache/bench/s3).
#
#   scripts/bench-s3.sh
#   SIZE=268435456 STREAMS="1 4" scripts/bench-s3.sh      # smaller
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-.cache}
OUT=${OUT:-$CACHE/bench/s3}
SIZE=${SIZE:-1073741824}                       # 1 GiB
STREAMS=${STREAMS:-"1 2 4 8"}
THROTTLE=${THROTTLE:-117MB/s}
ADZ=target/release/adz
mkdir -p "$OUT"

cargo build --release -p adz-cli >&2
scripts/datasets.sh text-1g >&2
input="$OUT/text.bin"
[ "$(stat -c %s "$input" 2>/dev/null || echo 0)" = "$SIZE" ] || head -c "$SIZE" "$CACHE/datasets/text-1g" > "$input"
cat "$input" > /dev/null   # page cache

state="$(mktemp -d "${TMPDIR:-/tmp}/adz-bench-s3.XXXXXX")"
trap 'CACHE="$CACHE" scripts/minio.sh stop "$state"; rm -rf "$state"' EXIT
CACHE="$CACHE" scripts/minio.sh start "$state"
# shellcheck disable=SC1091
. "$state/env"
url="s3://$ADZ_S3_BUCKET/bench/text.adz"

csv="$OUT/results.csv"
echo "what,strategy,streams,throttle,seconds,ratio,mb_per_s" > "$csv"
for throttle in none "$THROTTLE"; do
    for strategy in static=none throughput; do
        for n in $STREAMS; do
            args=(compress -f -s "$strategy" --streams "$n")
            [ "$throttle" = none ] || args+=(--throttle "$throttle")
            log=$("$ADZ" "${args[@]}" "$input" "$url" 2>&1 >/dev/null)
            secs=$(echo "$log" | sed -nE '1s/.* ([0-9.]+) s, [0-9.]+ MB\/s$/\1/p')
            ratio=$(echo "$log" | sed -nE '1s/.*ratio ([0-9.]+),.*/\1/p')
            mbs=$(echo "$log" | sed -nE '1s/.* ([0-9.]+) MB\/s$/\1/p')
            echo "write,$strategy,$n,$throttle,$secs,$ratio,$mbs" | tee -a "$csv"
        done
    done
done

# Reading back: ranged GETs from MinIO vs the same file on local disk.
"$ADZ" compress -f -q -c zstd:3 "$input" "$url"
"$ADZ" compress -f -q -c zstd:3 "$input" "$OUT/text.adz"
for n in $STREAMS; do
    start=$(date +%s.%N)
    "$ADZ" decompress -q --streams "$n" "$url" - > /dev/null
    end=$(date +%s.%N)
    echo "read,zstd:3,$n,none,$(echo "$end - $start" | bc),," | tee -a "$csv"
done
start=$(date +%s.%N)
"$ADZ" decompress -q "$OUT/text.adz" - > /dev/null
end=$(date +%s.%N)
echo "read-local,zstd:3,,none,$(echo "$end - $start" | bc),," | tee -a "$csv"
# Ranged reads: `adz cat --offset O --length 4096` at RANGED random offsets (seeded), each a
# new process (open: the trailer with one ranged GET of the tail; then the frame's range), from
# MinIO and from the local file. Mean wall time per read, process start included.
RANGED=${RANGED:-50}
offsets=$(awk -v n="$RANGED" -v max="$((SIZE - 4096))" 'BEGIN { srand(7); for (i = 0; i < n; i++) printf "%d\n", int(rand() * max) }')
for where in "$url" "$OUT/text.adz"; do
    start=$(date +%s.%N)
    for o in $offsets; do
        "$ADZ" cat "$where" --offset "$o" --length 4096 > /dev/null
    done
    end=$(date +%s.%N)
    kind=ranged-s3; [ "$where" = "$url" ] || kind=ranged-local
    echo "$kind,zstd:3,,none,$(echo "($end - $start) / $RANGED" | bc -l | cut -c1-8),," | tee -a "$csv"
done
echo "results in $csv" >&2
