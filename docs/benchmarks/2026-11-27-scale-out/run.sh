#!/usr/bin/env bash
# Issue 29's scale-out benchmark on one machine: N `adz dataset write` processes into one
# dataset on a 4-node erasure-coded MinIO on loopback (scripts/minio.sh start-dist), each
# writer on a link of its own (--throttle RATE per writer, a node's NIC) or unthrottled; then
# 4 KiB random reads of the dataset against the same data written one file per rank.
#
#   docs/benchmarks/2026-11-27-scale-out/run.sh
#
# Writes write.csv and reads.csv into OUT (default: this folder). ADZ (default
# target/release/adz), DATAGEN (target/release/adz-datagen), MINIO (as for scripts/minio.sh),
# SIZE_MIB per writer (default 16), WRITERS (default "1 2 4 8 16"), THROTTLES (default
# "30MB/s none"), STRATEGIES (default "static=none S1"), REPEATS (default 2), READS (random
# reads per layout, default 60), RANKS (writers of the read test, default 4). Each writer
# compresses with one thread (-T 1), as one rank on its own core would; here all share 2 cores.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
OUT="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ADZ="${ADZ:-$ROOT/target/release/adz}"
DATAGEN="${DATAGEN:-$ROOT/target/release/adz-datagen}"
SIZE_MIB="${SIZE_MIB:-16}"
WRITERS="${WRITERS:-1 2 4 8 16}"
THROTTLES="${THROTTLES:-30MB/s none}"
STRATEGIES="${STRATEGIES:-static=none S1}"
REPEATS="${REPEATS:-2}"
READS="${READS:-60}"
RANKS="${RANKS:-4}"

state="$(mktemp -d "${TMPDIR:-/tmp}/adz-so-state.XXXXXX")"
work="$(mktemp -d "${TMPDIR:-/tmp}/adz-so-work.XXXXXX")"
trap '"$ROOT/scripts/minio.sh" stop "$state"; rm -rf "$state" "$work"' EXIT
"$ROOT/scripts/minio.sh" start-dist "$state" >&2
# shellcheck disable=SC1091
. "$state/env"
B="s3://$ADZ_S3_BUCKET/bench"

max=$RANKS
for n in $WRITERS; do ((n > max)) && max=$n; done
for i in $(seq 0 $((max - 1))); do
    "$DATAGEN" mixed $((SIZE_MIB << 20)) "$i" >"$work/in$i"
done
now() { date +%s.%N; }

echo "writers,throttle,strategy,repeat,raw_mib,stored_mib,write_s,aggregate_raw_mbs" >"$OUT/write.csv"
run=0
for rep in $(seq 1 "$REPEATS"); do
    for throttle in $THROTTLES; do
        for strategy in $STRATEGIES; do
            for n in $WRITERS; do
                run=$((run + 1))
                ds="$B/run$run/ds"
                limit=()
                [ "$throttle" != none ] && limit=(--throttle "$throttle")
                t0="$(now)"
                pids=()
                for i in $(seq 0 $((n - 1))); do
                    "$ADZ" dataset write "$ds" "$work/in$i" --id "w$i" \
                        --part-offset $((i * (SIZE_MIB << 20))) -s "$strategy" -T 1 \
                        "${limit[@]}" 2>"$work/w$i.log" &
                    pids+=($!)
                done
                for p in "${pids[@]}"; do wait "$p"; done
                t1="$(now)"
                "$ADZ" dataset commit "$ds" >/dev/null
                stored="$("$ADZ" dataset ls "$ds" --json | python3 -c \
                    'import json,sys; print(sum(p["stored"] for p in json.load(sys.stdin)["parts"]))')"
                python3 - "$n" "$throttle" "$strategy" "$rep" "$SIZE_MIB" "$stored" "$t0" "$t1" \
                    >>"$OUT/write.csv" <<'PY'
import sys
n, throttle, strategy, rep, size_mib, stored, t0, t1 = sys.argv[1:9]
n, size_mib, stored = int(n), int(size_mib), int(stored)
raw = n * size_mib * 2**20
w = float(t1) - float(t0)
print(f"{n},{throttle},{strategy},{rep},{raw / 2**20:.0f},{stored / 2**20:.1f},{w:.2f},{raw / w / 1e6:.1f}")
PY
                echo "write: $n writers, $throttle, $strategy, repeat $rep" >&2
            done
        done
    done
done

# Reads: the same RANKS inputs as one dataset (S1) and as one adz object per rank (S1).
ds="$B/read/ds"
pids=()
for i in $(seq 0 $((RANKS - 1))); do
    "$ADZ" dataset write "$ds" "$work/in$i" --id "w$i" --part-offset $((i * (SIZE_MIB << 20))) \
        -s S1 -T 1 2>/dev/null &
    pids+=($!)
    "$ADZ" compress -q -s S1 -T 1 "$work/in$i" "$B/rank/rank$i.adz" 2>/dev/null &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
"$ADZ" dataset commit "$ds" >/dev/null
echo "layout,op,seconds" >"$OUT/reads.csv"
total=$((RANKS * (SIZE_MIB << 20)))
t0="$(now)"; "$ADZ" dataset cat "$ds" >/dev/null; t1="$(now)"
echo "dataset,whole,$(python3 -c "print(f'{$t1 - $t0:.4f}')")" >>"$OUT/reads.csv"
t0="$(now)"
for i in $(seq 0 $((RANKS - 1))); do "$ADZ" cat "$B/rank/rank$i.adz" >/dev/null; done
t1="$(now)"
echo "per-rank,whole,$(python3 -c "print(f'{$t1 - $t0:.4f}')")" >>"$OUT/reads.csv"
for k in $(seq 1 "$READS"); do
    off=$(python3 -c "import random; random.seed($k); print(random.randrange(0, $total - 4096))")
    rank=$((off / (SIZE_MIB << 20)))
    local_off=$((off % (SIZE_MIB << 20)))
    # Alternate which layout goes first, so neither always finds a warmer store.
    for layout in $( ((k % 2)) && echo "dataset per-rank" || echo "per-rank dataset"); do
        t0="$(now)"
        if [ "$layout" = dataset ]; then
            "$ADZ" dataset cat "$ds" -o "$off" -n 4096 >/dev/null
        else
            "$ADZ" cat "$B/rank/rank$rank.adz" -o "$local_off" -n 4096 >/dev/null
        fi
        t1="$(now)"
        echo "$layout,random4k,$(python3 -c "print(f'{$t1 - $t0:.4f}')")" >>"$OUT/reads.csv"
    done
done
echo "done" >&2
