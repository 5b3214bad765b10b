#!/usr/bin/env bash
# Issue 8's bench (not part of make test; run on a quiet machine):
#  1. Python writing a 1 GiB numpy array through adz.open vs `adz compress` on the same bytes,
#     same strategy, link and threads, both into files in $OUT: the binding should add no
#     copies, so its time should be within a few percent of the CLI's.
#  2. zarr (format 3) on adz-bench's climate dataset (float32 fields with a land mask of fill
#     values) with adz's zarr v3 codec vs zarr's default (zstd) and its Blosc codec (zstd and
#     lz4, byte shuffle): ratio, write and read time.
#
#   scripts/bench-python.sh                       # 1 GiB
#   SIZE=268435456 THREADS=4 scripts/bench-python.sh
#   ZARR_SIZE=67108864 ZARR_RUNS=1 scripts/bench-python.sh   # a smaller zarr part
#   OUT=/dev/shm/adz-bench ZARR=0 RUNS=5 scripts/bench-python.sh   # part 1 only, on tmpfs
# Results: $OUT/results.md (default .cache/bench/python).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-$PWD/.cache}
OUT=${OUT:-$CACHE/bench/python}
SIZE=${SIZE:-1073741824}
THREADS=${THREADS:-0}
RUNS=${RUNS:-3}
ZARR_SIZE=${ZARR_SIZE:-268435456}   # bytes of the climate dataset for the zarr part
ZARR_RUNS=${ZARR_RUNS:-3}
ZARR=${ZARR:-1}                     # 0: leave the zarr part out
CONFIGS=${CONFIGS:-"static=zstd:1|auto static=zstd:3|auto keep-pace|1GbE throughput|10GbE"}
mkdir -p "$OUT"

cargo build --release -p adz-cli -p adz-datagen -p adz-bench >&2
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

# 2. zarr on the climate dataset (adz-bench's float32 fields, 4 variables x time steps on a 1°
#    grid with a land mask of fill values), zarr format 3: adz's zarr v3 codec against zarr's
#    default (zstd level 0) and its Blosc codec (zstd and lz4, byte shuffle).
if [ "$ZARR" != 0 ]; then
target/release/adz-bench datasets --cache "$CACHE" --datasets climate --size "$ZARR_SIZE" >&2
climate="$CACHE/datasets/gen/climate-$ZARR_SIZE-1.bin"
cat "$climate" > /dev/null
"$PY" - "$climate" "$OUT" "$ZARR_RUNS" >> "$results" <<'PY'
import os, shutil, sys, time
import numpy as np
import zarr
from zarr.codecs import BloscCodec, ZstdCodec
import adz.zarr

data, out, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
a = np.fromfile(data, dtype=np.float32)
a = a.reshape(4, -1, 180, 360)          # variable, time step, lat, lon (datasets.rs::climate)
chunks = (1, 8, 180, 360)               # 2 MiB chunks: 8 time steps of one variable
codecs = {
    "adz (default: static=zstd:3, shuffle from dtype)": adz.zarr.Adz(),
    "adz throughput, link 1GbE": adz.zarr.Adz(strategy="throughput", link="1GbE"),
    "adz archive": adz.zarr.Adz(strategy="archive"),
    "zarr default (zstd level 0)": ZstdCodec(),
    "zarr zstd level 3": ZstdCodec(level=3),
    "blosc zstd:5 shuffle": BloscCodec(cname="zstd", clevel=5, shuffle="shuffle"),
    "blosc lz4:5 shuffle": BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"),
}
print()
print(f"## zarr format 3, climate {a.shape} float32 ({a.nbytes} bytes), chunks {chunks}")
print()
print(f"zarr {zarr.__version__}, numpy {np.__version__}; times are the median of {runs} runs")
print()
print("| codec | ratio | write s | write MB/s | read s | read MB/s |")
print("|---|---|---|---|---|---|")
for name, codec in codecs.items():
    path = os.path.join(out, "z.zarr")
    writes, reads = [], []
    for _ in range(runs):
        shutil.rmtree(path, ignore_errors=True)
        t0 = time.perf_counter()
        z = zarr.create_array(store=path, shape=a.shape, chunks=chunks, dtype=a.dtype,
                              compressors=codec, zarr_format=3)
        z[:] = a
        t1 = time.perf_counter()
        back = zarr.open_array(path, mode="r")[:]
        t2 = time.perf_counter()
        assert np.array_equal(back, a)
        writes.append(t1 - t0)
        reads.append(t2 - t1)
    stored = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs
                 if f != "zarr.json")
    w, r = sorted(writes)[runs // 2], sorted(reads)[runs // 2]
    print(f"| {name} | {a.nbytes / stored:.3f} | {w:.2f} | {a.nbytes / w / 1e6:.0f} | "
          f"{r:.2f} | {a.nbytes / r / 1e6:.0f} |")
shutil.rmtree(path, ignore_errors=True)
PY
fi
cat "$results"
