#!/usr/bin/env bash
# S1 with --link auto against S1 with --link 117MB/s through `pv -L 117m` (a pipe whose reader
# takes 117 MB/s), for an old and a new adz binary, and static zstd:3 through the same pipe.
# Rounds are interleaved (every cell once per round, in a fixed order); summary = medians.
#
#   run.sh [-n ROUNDS] FILE...      (OLD=/dev/shm/adz-base NEW=target/release/adz OUT=...)
set -euo pipefail
n=3
while getopts n: o; do case $o in n) n=$OPTARG ;; *) exit 2 ;; esac; done
shift $((OPTIND - 1))
OLD=${OLD:-/dev/shm/adz-base}
NEW=${NEW:-target/release/adz}
OUT=${OUT:-/tmp/link-estimate}
RATE=${RATE:-117m}
mkdir -p "$OUT"
csv="$OUT/results.csv"
echo "round,file,binary,args,seconds,raw,stored,ratio,link_reported" >"$csv"
cells=("old|-s throughput --link auto" "new|-s throughput --link auto"
       "old|-s throughput --link 117MB/s" "new|-s throughput --link 117MB/s"
       "new|--codec zstd:3")
for r in $(seq 1 "$n"); do
    for f in "$@"; do
        raw=$(stat -c %s "$f")
        for c in "${cells[@]}"; do
            b=${c%%|*}; args=${c#*|}
            bin=$OLD; [ "$b" = new ] && bin=$NEW
            err="$OUT/err.txt"
            t0=$(date +%s.%N)
            # shellcheck disable=SC2086
            stored=$("$bin" compress $args - - <"$f" 2>"$err" | pv -q -L "$RATE" | wc -c)
            t1=$(date +%s.%N)
            link=$(grep -o 'link [0-9.]* MB/s' "$err" | head -1 | awk '{print $2}')
            secs=$(echo "$t1 - $t0" | bc -l)
            ratio=$(echo "$raw / $stored" | bc -l)
            printf '%s,%s,%s,%s,%.3f,%s,%s,%.3f,%s\n' "$r" "$(basename "$f")" "$b" "$args" \
                "$secs" "$raw" "$stored" "$ratio" "${link:-}" >>"$csv"
        done
    done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cells = {}
for r in rows:
    cells.setdefault((r["file"], r["binary"], r["args"]), []).append(r)
print("| file | binary | args | median s | ratio | link reported (MB/s) | all s |")
print("|---|---|---|---|---|---|---|")
for (f, b, a), rs in cells.items():
    s = [float(x["seconds"]) for x in rs]
    print(f"| {f} | {b} | `{a}` | {statistics.median(s):.3f} | "
          f"{statistics.median(float(x['ratio']) for x in rs):.2f} | "
          f"{', '.join(x['link_reported'] for x in rs)} | {', '.join(f'{v:.3f}' for v in s)} |")
PY
