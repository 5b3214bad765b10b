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
#   OUT=/dev/shm/adz-bench ZARR=0 RUNS=15 scripts/bench-python.sh  # part 1 only, on tmpfs
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
# One Python process loads the array once, then alternates: the CLI on the file (a child
# process, timed from its start to its exit) and adz.open on the array, each into its own
# output in $OUT, which it removes just before it writes. On a VM whose balloon reports free
# pages to the host (virtio-balloon free page reporting), writing into pages the host has
# taken back costs kernel time in the copy into the sink, up to 2 s per GiB; freeing the old
# output just before writing the new one reuses pages that are still backed, the same way
# for both sides (docs/benchmarks/2026-11-23-bind, "Why the first measurement was erratic").
# WARM bytes of tmpfs are touched and freed first for the same reason.
WARM=${WARM:-4294967296}
if [ "$WARM" != 0 ]; then
    dd if=/dev/zero of="$OUT/warm" bs=1M count=$((WARM / 1048576)) status=none
    rm -f "$OUT/warm"
fi
"$PY" - "$data" "$OUT" "$ADZ" "$THREADS" "$RUNS" "$SIZE" $CONFIGS > "$results" <<'PY'
import os, resource, statistics, subprocess, sys, time
import numpy as np
import adz
data, out, exe, threads, runs, size = sys.argv[1:7]
configs = [c.split("|") for c in sys.argv[7:]]
a = np.fromfile(data, dtype=np.float64)          # loaded before any clock starts
cli_out, py_out = os.path.join(out, "cli.adz"), os.path.join(out, "py.adz")
print(f"# adz Python binding vs CLI ({time.strftime('%F')}, {os.cpu_count()} cores, "
      f"SIZE={size}, THREADS={threads}, RUNS={runs})")
print()
print("user, sys: CPU seconds of the writing process (the CLI child's, or the Python")
print("process's during the write). Odd runs start with the CLI, even runs with Python.")
print()
print("| strategy | link | run | CLI s | Python s | Python/CLI | CLI user | CLI sys "
      "| Python user | Python sys |")
print("|---|---|---|---|---|---|---|---|---|---|")
summary = []
def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime, r.ru_stime
def timed(who, f):
    # Each side removes its previous output just before it writes, so it reuses pages it
    # freed a moment ago (see the comment above the script).
    (u0, s0), t0 = cpu(who), time.perf_counter()
    f()
    t, (u1, s1) = time.perf_counter() - t0, cpu(who)
    return t, u1 - u0, s1 - s0
def cli_write(strategy, link):
    if os.path.exists(cli_out):
        os.remove(cli_out)
    return timed(resource.RUSAGE_CHILDREN, lambda: subprocess.run(
        [exe, "compress", "-q", "-f", "-T", threads, "-s", strategy, "--link", link, data,
         cli_out], check=True))
def py_write(strategy, link):
    if os.path.exists(py_out):
        os.remove(py_out)
    def go():
        with adz.open(py_out, "wb", strategy=strategy, link=link,
                      threads=int(threads) or None) as f:
            f.write(a)
    return timed(resource.RUSAGE_SELF, go)
for strategy, link in configs:
    clis, pys = [], []
    for run in range(1, int(runs) + 1):
        if run % 2:
            c = cli_write(strategy, link)
            p = py_write(strategy, link)
        else:
            p = py_write(strategy, link)
            c = cli_write(strategy, link)
        assert os.path.getsize(py_out) > 0 and os.path.getsize(cli_out) > 0
        clis.append(c)
        pys.append(p)
        print(f"| {strategy} | {link} | {run} | {c[0]:.3f} | {p[0]:.3f} | {p[0] / c[0]:.3f} | "
              f"{c[1]:.2f} | {c[2]:.2f} | {p[1]:.2f} | {p[2]:.2f} |", flush=True)
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    summary.append((strategy, link, med(clis, 0), med(pys, 0), min(c[0] for c in clis),
                    min(p[0] for p in pys), med(clis, 1), med(pys, 1), med(clis, 2),
                    med(pys, 2)))
print()
print("Medians and minimums over the runs:")
print()
print("| strategy | link | CLI median s | Python median s | Python/CLI (median) | "
      "CLI min s | Python min s | Python/CLI (min) | user CLI / Python | sys CLI / Python |")
print("|---|---|---|---|---|---|---|---|---|---|")
for s, l, cm, pm, cn, pn, cu, pu, cs, ps in summary:
    print(f"| {s} | {l} | {cm:.3f} | {pm:.3f} | {pm / cm:.3f} | {cn:.3f} | {pn:.3f} | "
          f"{pn / cn:.3f} | {cu:.2f} / {pu:.2f} | {cs:.2f} / {ps:.2f} |")
PY

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
