#!/usr/bin/env bash
# Cross-check of the harness through a real pipe (issue 22): the same comparison as adz-bench's
# sync rows, S1 against `zstd --adapt`, but each tool writes to stdout and `pv -L RATE` is the
# link, a link with the pipe's and pv's buffering that treats both tools alike:
#
#   adz compress -s throughput --link auto -T N - - < f | pv -q -L RATE > $SHM/out
#   zstd -T N --adapt -c f                          | pv -q -L RATE > $SHM/out
#
# Runs are interleaved (run 1 of every row, then run 2, ...); the summary has the median
# seconds and the ratio of each (dataset, rate, tool), and adz's speed relative to zstd's.
# With HARNESS=1 the same rows also run through adz-bench (s1 and zstd-adapt, sync, the given
# rates) into $OUT/harness, and its summary follows, to compare harness and pipe.
#
#   scripts/bench-pipe.sh                          # real-concat at 117 and 1200 MB/s, 3 runs
#   DATASETS=real-fits,text RATES="117" RUNS=1 scripts/bench-pipe.sh
#   FILES="/dev/shm/a.bin" scripts/bench-pipe.sh   # files instead of adz-bench datasets
#   SIZE=8388608 RUNS=1 scripts/bench-pipe.sh      # a smoke run on 8 MiB prefixes
#
# Environment: DATASETS (adz-bench dataset names, comma-separated; default real-concat), FILES
# (paths, overrides DATASETS), SIZE (bytes of each input used, a prefix; default the whole
# file), RATES (MB/s, space-separated: 117 means pv -L 117000000; a value with a pv suffix such
# as 117m, which pv reads as MiB/s, is passed as given; default "117 1200"), RUNS (default 3),
# THREADS (default 2), SHM (where inputs and outputs live; default /dev/shm), OUT (default
# $CACHE/bench/pipe), CACHE (default .cache), HARNESS=1 (also run adz-bench), BIN (the directory
# of adz and adz-bench to use; default: build them in release mode).
# Needs pv and zstd (scripts/deps.sh bench). Do not trust timings from a busy machine.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-.cache}
OUT=${OUT:-$CACHE/bench/pipe}
RATES=${RATES:-117 1200}
RUNS=${RUNS:-3}
THREADS=${THREADS:-2}
SHM=${SHM:-/dev/shm}
DATASETS=${DATASETS:-real-concat}

die() { echo "bench-pipe: error: $*" >&2; exit 1; }
for tool in pv zstd python3; do
    command -v "$tool" >/dev/null || die "$tool is needed (scripts/deps.sh bench)"
done
if [ -z "${BIN:-}" ]; then
    cargo build --release -p adz-cli -p adz-bench >&2
    BIN=${CARGO_TARGET_DIR:-target}/release
fi
mkdir -p "$OUT"

# name<TAB>path of every input.
inputs=()
if [ -n "${FILES:-}" ]; then
    for f in $FILES; do
        [ -s "$f" ] || die "$f is missing or empty"
        inputs+=("$(basename "$f")	$f")
    done
else
    size_arg=()
    [ -n "${SIZE:-}" ] && size_arg=(--size "$SIZE")
    while IFS=$'\t' read -r name path _; do
        inputs+=("$name	$path")
    done < <("$BIN/adz-bench" datasets --cache "$CACHE" --datasets "$DATASETS" "${size_arg[@]}")
fi

work=$(mktemp -d "$SHM/adz-bench-pipe.XXXXXX")
trap 'rm -rf "$work"' EXIT
csv="$OUT/pipe.csv"
echo "dataset,bytes,rate,tool,run,seconds,stored_bytes,ratio" > "$csv"

now() { date +%s.%N; }
pv_rate() { case "$1" in *[!0-9]*) echo "$1" ;; *) echo "${1}000000" ;; esac; }

# Copy each input (or its SIZE prefix) into $SHM: reads from memory, as the harness'.
declare -A file_of bytes_of
for entry in "${inputs[@]}"; do
    name=${entry%%	*} path=${entry#*	}
    f="$work/$name.in"
    if [ -n "${SIZE:-}" ]; then head -c "$SIZE" "$path" > "$f"; else cp "$path" "$f"; fi
    file_of[$name]=$f
    bytes_of[$name]=$(stat -c %s "$f")
done

run_one() { # name rate tool run
    local name=$1 rate=$2 tool=$3 run=$4 f=${file_of[$1]} out="$work/out" t0 t1
    local lim
    lim=$(pv_rate "$rate")
    rm -f "$out"
    # Every run starts from the same state: its input just read.
    cat "$f" > /dev/null
    t0=$(now)
    case "$tool" in
        adz-s1) "$BIN/adz" compress -q -s throughput --link auto -T "$THREADS" - - < "$f" \
                    | pv -q -L "$lim" > "$out" ;;
        zstd-adapt) zstd -q -T"$THREADS" --adapt -c "$f" | pv -q -L "$lim" > "$out" ;;
    esac
    t1=$(now)
    local stored
    stored=$(stat -c %s "$out")
    if [ "$run" = 1 ]; then # the output is the input again
        case "$tool" in
            adz-s1) "$BIN/adz" decompress -q "$out" - | cmp -s - "$f" ;;
            zstd-adapt) zstd -q -dc "$out" | cmp -s - "$f" ;;
        esac || die "$tool on $name: the output does not decompress to the input"
    fi
    python3 -c "import sys; b,s,t0,t1=map(float,sys.argv[1:]); print(f'{t1-t0:.4f},{int(s)},{b/s:.4f}')" \
        "${bytes_of[$name]}" "$stored" "$t0" "$t1" \
        | sed "s/^/$name,${bytes_of[$name]},$rate,$tool,$run,/" >> "$csv"
    tail -1 "$csv" >&2
}

for run in $(seq 1 "$RUNS"); do
    for entry in "${inputs[@]}"; do
        name=${entry%%	*}
        for rate in $RATES; do
            # The two tools' order alternates from run to run.
            tools=(adz-s1 zstd-adapt)
            [ $((run % 2)) = 0 ] && tools=(zstd-adapt adz-s1)
            for tool in "${tools[@]}"; do
                run_one "$name" "$rate" "$tool" "$run"
            done
        done
    done
done

python3 - "$csv" > "$OUT/summary.md" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cells = {}
for r in rows:
    cells.setdefault((r["dataset"], r["rate"]), {}).setdefault(r["tool"], []).append(r)
print("| dataset | rate (pv -L) | adz S1 s | ratio | zstd --adapt s | ratio | adz / zstd speed | runs |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for (d, rate), tools in cells.items():
    med = {t: statistics.median(float(x["seconds"]) for x in v) for t, v in tools.items()}
    ratio = {t: statistics.median(float(x["ratio"]) for x in v) for t, v in tools.items()}
    a, z = med.get("adz-s1"), med.get("zstd-adapt")
    rel = f"{z / a:.2f}" if a and z else "-"
    n = min(len(v) for v in tools.values())
    print(f"| {d} | {rate} | {a:.3f} | {ratio['adz-s1']:.2f} | {z:.3f} | {ratio['zstd-adapt']:.2f} | {rel} | {n} |")
EOF
{
    echo
    echo "Medians of $RUNS interleaved runs; inputs and outputs in $SHM; -T $THREADS; $(nproc) cores."
    echo "Versions: $("$BIN/adz" --version); $(zstd --version | head -1); $(pv --version | head -1)"
} >> "$OUT/summary.md"

if [ -n "${HARNESS:-}" ]; then
    links=$(echo "$RATES" | tr ' ' ',')
    [ -n "${FILES:-}" ] && die "HARNESS=1 needs DATASETS (adz-bench runs datasets by name)"
    size_arg=()
    [ -n "${SIZE:-}" ] && size_arg=(--size "$SIZE")
    "$BIN/adz-bench" run --cache "$CACHE" --out "$OUT/harness" --fresh --datasets "$DATASETS" \
        "${size_arg[@]}" --links "$links" --workloads sync --static none --adaptive s1-auto \
        --external zstd-adapt -T "$THREADS" > /dev/null
    {
        echo
        echo "The harness on the same data (adz-bench run, sync, s1-auto and zstd --adapt):"
        echo
        python3 - "$OUT/harness/results.csv" <<'EOF'
import csv, sys
print("| dataset | link MB/s | config | seconds | ratio |")
print("| --- | --- | --- | --- | --- |")
for r in csv.DictReader(open(sys.argv[1])):
    if r["config"] != "none":
        print(f"| {r['dataset']} | {r['link_mbs']} | {r['config']} | {float(r['seconds']):.3f} | {float(r['ratio']):.2f} |")
EOF
    } >> "$OUT/summary.md"
fi
cat "$OUT/summary.md"
echo "results: $csv, $OUT/summary.md" >&2
