#!/usr/bin/env bash
# Issue 3's bench: write speed and ratio of static rungs, raw, and the adaptive strategies
# S1 (throughput), S2 (keep-pace), S3 (prolong=1.5), side by side in one run, on text (a
# prefix of linux.tar) and a doubles matrix, through throttled links of 117, 1200 and
# 6000 MB/s. Output goes through adz's throttle into a pipe to /dev/null, so the link is the
# only sink cost. Results: CSV and a markdown summary in $OUT (default .cache/bench/strategies).
#
#   scripts/bench-strategies.sh                      # the full matrix
#   SIZE=134217728 LINKS="117MB/s" scripts/bench-strategies.sh   # smaller
#   RUNS=3 scripts/bench-strategies.sh               # each configuration 3 times, interleaved;
#                                                    # the summary takes medians
#   WAIT_IDLE=300 scripts/bench-strategies.sh        # before each round, wait (up to 300 s) until
#                                                    # the machine is 92 % idle over 2 s
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-.cache}
OUT=${OUT:-$CACHE/bench/strategies}
SIZE=${SIZE:-268435456}                       # 256 MiB per dataset
LINKS=${LINKS:-"117MB/s 1200MB/s 6000MB/s"}
THREADS=${THREADS:-0}
RUNS=${RUNS:-1}
STATIC=${STATIC:-"none lz4:50 lz4:8 lz4:1 zstd:-4 zstd:-1 zstd:1 zstd:3 zstd:6 zstd:9 zstd:12 xz:0"}
ADAPTIVE=${ADAPTIVE:-"throughput keep-pace prolong=1.5"}
ADZ=target/release/adz
mkdir -p "$OUT"

cargo build --release -p adz-cli -p adz-datagen >&2
scripts/datasets.sh text-1g >&2
text="$OUT/text.bin"
doubles="$OUT/doubles.bin"
[ "$(stat -c %s "$text" 2>/dev/null || echo 0)" = "$SIZE" ] || head -c "$SIZE" "$CACHE/datasets/text-1g" > "$text"
[ "$(stat -c %s "$doubles" 2>/dev/null || echo 0)" = "$SIZE" ] || target/release/adz-datagen doubles "$SIZE" 1 > "$doubles"

# A shared machine: wait until nothing else runs (at most WAIT_IDLE seconds; 0: never wait).
WAIT_IDLE=${WAIT_IDLE:-0}
wait_idle() {
    [ "$WAIT_IDLE" -gt 0 ] || return 0
    local start=$SECONDS a b c d e f g rest t1 i1 t2 i2
    while :; do
        read -r _ a b c d e f g rest < /proc/stat; t1=$((a+b+c+d+e+f+g)); i1=$d
        sleep 2
        read -r _ a b c d e f g rest < /proc/stat; t2=$((a+b+c+d+e+f+g)); i2=$d
        [ $((100 * (i2 - i1) / (t2 - t1 + 1))) -ge 92 ] && return 0
        if [ $((SECONDS - start)) -ge "$WAIT_IDLE" ]; then
            echo "bench-strategies: the machine was not idle within ${WAIT_IDLE}s; running anyway" >&2
            return 0
        fi
    done
}

csv="$OUT/results.csv"
echo "dataset,link_mbs,config,kind,run,seconds,ratio,write_mbs,configs" > "$csv"
for ds in text doubles; do
    file="$OUT/$ds.bin"
    cat "$file" > /dev/null   # page cache: measure the link and the CPU, not the input disk
    for link in $LINKS; do
      for run in $(seq "$RUNS"); do
        wait_idle
        for cfg in $STATIC $ADAPTIVE; do
            case $cfg in throughput|keep-pace|prolong=*) kind=adaptive; s=$cfg;; *) kind=static; s="static=$cfg";; esac
            log=$("$ADZ" compress -f -T "$THREADS" -s "$s" --throttle "$link" "$file" - 2>&1 >/dev/null)
            # The time from the write speed (one decimal of MB/s), not the printed seconds
            # (two decimals: 20 % of a 45 ms write at 6000 MB/s).
            wmbs=$(echo "$log" | sed -nE '1s/.* [0-9.]+ s, ([0-9.]+) MB\/s$/\1/p')
            secs=$(awk -v b="$SIZE" -v m="$wmbs" 'BEGIN { printf "%.4f", b / (m * 1e6) }')
            ratio=$(echo "$log" | sed -nE '1s/.*ratio ([0-9.]+),.*/\1/p')
            used=$(echo "$log" | sed -nE '2s/^  strategy [^:]+: //p' | tr ',' ';')
            mbs=$(awk -v b="$SIZE" -v s="$secs" 'BEGIN { printf "%.1f", b / s / 1e6 }')
            lmbs=$(echo "$link" | sed -E 's/MB\/s//')
            echo "$ds,$lmbs,$cfg,$kind,$run,$secs,$ratio,$mbs,\"$used\"" >> "$csv"
            printf '%-8s %6s %-12s run %s %7ss ratio %6s %8s MB/s\n' "$ds" "$lmbs" "$cfg" "$run" "$secs" "$ratio" "$mbs" >&2
        done
      done
    done
done

# Summary: per (dataset, link) the best static configuration in hindsight, S1 against it and
# against raw, and S2/S3 against their target durations (S2: raw size / link; S3: 1.5 x that).
python3 - "$csv" "$SIZE" > "$OUT/summary.md" <<'PY'
import csv, statistics, sys
runs = list(csv.DictReader(open(sys.argv[1])))
size = int(sys.argv[2])
# One row per (dataset, link, config): the median time of its runs, and the runs' times.
rows, times = [], {}
for r in runs:
    times.setdefault((r["dataset"], r["link_mbs"], r["config"]), []).append(r)
for (ds, link, cfg), rs in times.items():
    med = statistics.median(float(x["seconds"]) for x in rs)
    rows.append(dict(rs[0], seconds=str(med), ratio=str(statistics.median(float(x["ratio"]) for x in rs)),
                     all=[float(x["seconds"]) for x in rs]))
print("| dataset | link MB/s | raw s | best static | its s | S1 s (ratio) | S1 / best | S1 vs raw | S2 s / target | S3 s / target |")
print("|---|---|---|---|---|---|---|---|---|---|")
for ds in dict.fromkeys(r["dataset"] for r in rows):
    for link in dict.fromkeys(r["link_mbs"] for r in rows if r["dataset"] == ds):
        cell = [r for r in rows if r["dataset"] == ds and r["link_mbs"] == link]
        by = {r["config"]: r for r in cell}
        static = [r for r in cell if r["kind"] == "static"]
        best = min(static, key=lambda r: float(r["seconds"]))
        raw = float(by["none"]["seconds"])
        s1 = by.get("throughput"); s2 = by.get("keep-pace"); s3 = by.get("prolong=1.5")
        target = size / (float(link) * 1e6)
        def f(r, t):
            if not r:
                return "-"
            spread = "" if len(r["all"]) < 2 else f", {min(r['all'])/t:.2f}-{max(r['all'])/t:.2f}"
            return f"{float(r['seconds']):.3f} / {t:.3f} ({float(r['seconds'])/t:.2f}{spread})"
        s1s = float(s1["seconds"]) if s1 else float("nan")
        print(f"| {ds} | {link} | {raw:.3f} | {best['config']} | {float(best['seconds']):.3f} | "
              f"{s1s:.3f} ({float(s1['ratio']) if s1 else float('nan'):.3f}) | {float(best['seconds'])/s1s:.2f} | {raw/s1s:.2f}x | "
              f"{f(s2, target)} | {f(s3, 1.5*target)} |")
print()
print("S1 / best: the best static time divided by S1's (1.00 = as fast as the best static rung in hindsight; the issue asks >= 0.95).")
print("S1 vs raw: raw time / S1 time. S2/S3: duration / target duration (the issue asks within 5 %; below 1 means faster than the target).")
print("With several runs every time is the median of its configuration's runs; S2/S3 also give the runs' range.")
PY
cat "$OUT/summary.md"
