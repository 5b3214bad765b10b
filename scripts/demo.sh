#!/usr/bin/env bash
# The main job: write generated data through simulated 1GbE and 10GbE links with adz's
# adaptive throughput strategy (S1), and compare it with writing raw and with a static codec
# through the same link: ratio, time and speedup. Then read the file back and check it.
set -euo pipefail
cd "$(dirname "$0")/.."
ADZ=target/release/adz
GEN=target/release/adz-datagen
CACHE=${CACHE:-.cache}
SIZE=${DEMO_BYTES:-524288000}     # 500 MiB: long enough for the controller to settle
LINKS=${DEMO_LINKS:-1GbE 10GbE}
dir="$CACHE/demo"
mkdir -p "$dir"
data="$dir/mixed-$SIZE.bin"

if [ ! -f "$data" ]; then
    echo "== generating $SIZE bytes of mixed data (text, doubles, sparse records, random)"
    "$GEN" mixed "$SIZE" 1 > "$data.tmp" && mv "$data.tmp" "$data"
fi
cat "$data" > /dev/null   # warm the page cache: measure the link, not the input disk

# The outputs go to memory (/dev/shm) when it has room for them: the link is simulated, and a
# busy disk's write-back would otherwise be the bottleneck of the 10GbE runs. DEMO_OUT overrides.
out_dir=${DEMO_OUT:-}
if [ -z "$out_dir" ]; then
    out_dir=$dir
    free_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
    if [ -n "$free_kb" ] && [ "$free_kb" -gt $(( 3 * SIZE / 1024 )) ]; then
        out_dir=$(mktemp -d /dev/shm/adz-demo.XXXXXX)
        trap 'rm -rf "$out_dir"' EXIT
    fi
fi
echo "== outputs in $out_dir"

declare -A secs ratio
for link in $LINKS; do
    echo "== writing $(( SIZE / 1048576 )) MiB through a simulated $link link (--throttle $link)"
    for cfg in static=none static=zstd:3 throughput; do
        out="$out_dir/out.$cfg.adz"
        log="$dir/out.$cfg.$link.log"
        "$ADZ" compress --force --strategy "$cfg" --throttle "$link" \
            --trace "$dir/trace.$cfg.$link.jsonl" "$data" "$out" 2> "$log"
        secs[$cfg]=$(sed -nE 's/.* ([0-9.]+) s, [0-9.]+ MB\/s$/\1/p' "$log" | head -1)
        ratio[$cfg]=$(sed -nE 's/.*ratio ([0-9.]+),.*/\1/p' "$log" | head -1)
    done
    echo
    printf '  %-16s %8s %9s %10s\n' strategy ratio "time s" "speedup"
    for cfg in static=none static=zstd:3 throughput; do
        awk -v c="$cfg" -v r="${ratio[$cfg]}" -v s="${secs[$cfg]}" -v raw="${secs[static=none]}" \
            'BEGIN { printf "  %-16s %8.3f %9.2f %9.2fx\n", c, r, s, raw / s }'
    done
    awk -v s1="${secs[throughput]}" -v z="${secs[static=zstd:3]}" -v l="$link" \
        'BEGIN { printf "  at %s S1 took %.2f of static zstd:3'"'"'s time (%s)\n\n", l, s1 / z, s1 <= z ? "S1 ahead" : "zstd:3 ahead" }'
done
echo "  speedup: time of the raw write divided by the time of this write, same link, same data."
echo "  What S1 chose, block by block: $dir/trace.throughput.<link>.jsonl"

echo
echo "== adz inspect (throughput)"
"$ADZ" inspect "$out_dir/out.throughput.adz" | head -8

echo
echo "== adz verify, then decompress and compare with the original"
"$ADZ" verify "$out_dir/out.throughput.adz"
"$ADZ" decompress --force --quiet "$out_dir/out.throughput.adz" "$out_dir/check.bin"
cmp "$data" "$out_dir/check.bin" && echo "  identical: $SIZE bytes"
rm -f "$out_dir/check.bin"
