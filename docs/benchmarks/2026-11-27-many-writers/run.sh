#!/usr/bin/env bash
# N `adz dataset write` processes to one dataset on a 4-node erasure-coded MinIO on loopback
# (scripts/minio.sh start-dist), then one commit and one whole read; raw and S1.
#
#   docs/benchmarks/2026-11-27-many-writers/run.sh > results.csv
#
# ADZ (default target/release/adz), DATAGEN (target/release/adz-datagen), MINIO (as for
# scripts/minio.sh), SIZE_MIB per writer (default 32), WRITERS (default "1 2 4 8"),
# STRATEGIES (default "static=none S1"), REPEATS (default 2). Each writer compresses with one
# thread (-T 1), as one rank of a job on its own core would; here all share the machine.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
ADZ="${ADZ:-$ROOT/target/release/adz}"
DATAGEN="${DATAGEN:-$ROOT/target/release/adz-datagen}"
SIZE_MIB="${SIZE_MIB:-32}"
WRITERS="${WRITERS:-1 2 4 8}"
STRATEGIES="${STRATEGIES:-static=none S1}"
REPEATS="${REPEATS:-2}"

state="$(mktemp -d "${TMPDIR:-/tmp}/adz-mw-state.XXXXXX")"
work="$(mktemp -d "${TMPDIR:-/tmp}/adz-mw-work.XXXXXX")"
trap '"$ROOT/scripts/minio.sh" stop "$state"; rm -rf "$state" "$work"' EXIT
"$ROOT/scripts/minio.sh" start-dist "$state" >&2
# shellcheck disable=SC1091
. "$state/env"

max=0
for n in $WRITERS; do ((n > max)) && max=$n; done
for i in $(seq 0 $((max - 1))); do
    "$DATAGEN" mixed $((SIZE_MIB << 20)) "$i" >"$work/in$i"
done

now() { date +%s.%N; }
echo "writers,strategy,repeat,raw_mib,stored_mib,write_s,aggregate_raw_mbs,commit_s,read_s,read_mbs"
run=0
for rep in $(seq 1 "$REPEATS"); do
    for strategy in $STRATEGIES; do
        for n in $WRITERS; do
            run=$((run + 1))
            ds="s3://$ADZ_S3_BUCKET/bench/run$run/ds"
            t0="$(now)"
            pids=()
            for i in $(seq 0 $((n - 1))); do
                "$ADZ" dataset write "$ds" "$work/in$i" --id "w$i" \
                    --part-offset $((i * (SIZE_MIB << 20))) -s "$strategy" -T 1 \
                    2>"$work/w$i.log" &
                pids+=($!)
            done
            for p in "${pids[@]}"; do wait "$p"; done
            t1="$(now)"
            "$ADZ" dataset commit "$ds" >/dev/null
            t2="$(now)"
            "$ADZ" dataset cat "$ds" >/dev/null
            t3="$(now)"
            stored="$("$ADZ" dataset ls "$ds" --json | python3 -c \
                'import json,sys; print(sum(p["stored"] for p in json.load(sys.stdin)["parts"]))')"
            python3 - "$n" "$strategy" "$rep" "$SIZE_MIB" "$stored" "$t0" "$t1" "$t2" "$t3" <<'PY'
import sys
n, strategy, rep, size_mib, stored = sys.argv[1:6]
t0, t1, t2, t3 = map(float, sys.argv[6:10])
n, size_mib, stored = int(n), int(size_mib), int(stored)
raw = n * size_mib * 2**20
w, c, r = t1 - t0, t2 - t1, t3 - t2
print(f"{n},{strategy},{rep},{raw / 2**20:.0f},{stored / 2**20:.1f},{w:.2f},{raw / w / 1e6:.1f},{c:.2f},{r:.2f},{raw / r / 1e6:.1f}")
PY
        done
    done
done
