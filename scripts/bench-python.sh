#!/usr/bin/env bash
# Issue 8's bench (not part of make test; run on a quiet machine):
#  1. Python writing a 1 GiB numpy array through adz.open vs `adz compress` on the same bytes,
#     same strategy, link and threads, both into files in $OUT: the binding should add no
#     copies, so its time should be within a few percent of the CLI's.
#  2. zarr (format 2) with adz's numcodecs codec vs Blosc (zstd and lz4, byte shuffle) on the
#     same array: ratio, write and read time. There is no climate dataset in
#     scripts/datasets.sh yet; the array is adz-datagen's `doubles` (smooth float64 fields).
#
#   scripts/bench-python.sh                       # 1 GiB
#   SIZE=268435456 THREADS=4 scripts/bench-python.sh
# Results: $OUT/results.md (default .cache/bench/python).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-$PWD/.cache}
OUT=${OUT:-$CACHE/bench/python}
SIZE=${SIZE:-1073741824}
THREADS=${THREADS:-0}
RUNS=${RUNS:-3}
CONFIGS=${CONFIGS:-"static=zstd:1|auto static=zstd:3|auto keep-pace|1GbE throughput|10GbE"}
mkdir -p "$OUT"

cargo build --release -p adz-cli -p adz-datagen >&2
scripts/python-test.sh -q -k round_trip_every_strategy >&2   # builds the module (release) in the venv
PY="$CACHE/venv/bin/python"
ADZ=target/release/adz
data="$OUT/doubles.bin"
[ "$(stat -c %s "$data" 2>/dev/null || echo 0)" = "$SIZE" ] || target/release/adz-datagen doubles "$SIZE" 1 > "$data"
cat "$data" > /dev/null   # page cache

results="$OUT/results.md"
{
    echo "# adz Python binding vs CLI ($(date -u +%F), $(nproc) cores, SIZE=$SIZE, THREADS=$THREADS)"
    echo
    echo "| strategy | link | run | CLI s | Python s | Python/CLI |"
    echo "|---|---|---|---|---|---|"
} > "$results"
for cfg in $CONFIGS; do
    strategy=${cfg%|*}
    link=${cfg#*|}
    for run in $(seq "$RUNS"); do
        t0=$(date +%s.%N)
        "$ADZ" compress -q -f -T "$THREADS" -s "$strategy" --link "$link" "$data" "$OUT/cli.adz"
        t1=$(date +%s.%N)
        cli=$(awk "BEGIN { print $t1 - $t0 }")
        py=$("$PY" - "$data" "$OUT/py.adz" "$strategy" "$link" "$THREADS" <<'PY'
import sys, time
import numpy as np
import adz
data, out, strategy, link, threads = sys.argv[1:6]
a = np.fromfile(data, dtype=np.float64)          # loaded before the clock starts
t0 = time.perf_counter()
with adz.open(out, "wb", strategy=strategy, link=link, threads=int(threads) or None) as f:
    f.write(a)
print(f"{time.perf_counter() - t0:.3f}")
PY
)
        printf '| %s | %s | %s | %.3f | %.3f | %.3f |\n' "$strategy" "$link" "$run" "$cli" "$py" \
            "$(awk "BEGIN { print $py / $cli }")" >> "$results"
    done
done

"$PY" - "$data" "$OUT" >> "$results" <<'PY'
import os, shutil, sys, time
import numpy as np
import numcodecs, zarr
import adz.numcodecs

data, out = sys.argv[1:3]
a = np.fromfile(data, dtype=np.float64).reshape(-1, 1024)
codecs = {
    "adz static=zstd:3 (default)": adz.numcodecs.Adz(),
    "adz archive": adz.numcodecs.Adz(strategy="archive"),
    "adz static=lz4": adz.numcodecs.Adz(strategy="static=lz4"),
    "blosc zstd:5 shuffle": numcodecs.Blosc(cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    "blosc lz4:5 shuffle (zarr 2 default)": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
}
print()
print(f"## zarr (format 2), {a.shape[0]} x 1024 float64, chunks 1024 x 1024 (8 MiB)")
print()
print("| codec | ratio | write s | read s |")
print("|---|---|---|---|")
for name, codec in codecs.items():
    path = os.path.join(out, "z.zarr")
    shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    z = zarr.create_array(store=path, shape=a.shape, chunks=(1024, 1024), dtype=a.dtype,
                          compressors=codec, zarr_format=2)
    z[:] = a
    t1 = time.perf_counter()
    back = zarr.open_array(path, mode="r")[:]
    t2 = time.perf_counter()
    assert np.array_equal(back, a)
    stored = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs
                 if not f.startswith("."))
    print(f"| {name} | {a.nbytes / stored:.3f} | {t1 - t0:.2f} | {t2 - t1:.2f} |")
PY
cat "$results"
