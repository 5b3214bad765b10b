#!/usr/bin/env python3
"""The real write time of each rung the predict table checks, as the median of RUNS runs.

   ADZ=path/to/adz DATA=dir RUNS=5 python3 statics.py > statics.csv

DATA holds `adz-datagen KIND 536870912 1` as KIND.bin (the bench's inputs); each run is
`adz compress -f -s static=RUNG --throttle LINK -T 2 DATA/KIND.bin - > /dev/null`, as in
scripts/bench-predict.sh, and its seconds are the raw bytes over adz's reported MB/s. The
runs of one row are interleaved with the other rows' (round-robin), so a slow spell of the
machine does not fall on one row only."""
import os, re, statistics, subprocess, sys

ADZ = os.environ.get("ADZ", "target/release/adz")
DATA = os.environ.get("DATA", "/dev/shm/p")
RUNS = int(os.environ.get("RUNS", "5"))
KINDS = os.environ.get("KINDS", "text doubles sparse random mixed").split()
rows = [(k, l, r) for k in KINDS for l in ("1GbE", "10GbE", "ib-fdr4") for r in ("zstd:1", "lz4:1")]
times = {row: [] for row in rows}
for i in range(RUNS):
    for kind, link, rung in rows:
        path = f"{DATA}/{kind}.bin"
        p = subprocess.run([ADZ, "compress", "-f", "-s", f"static={rung}", "--throttle", link,
                            "-T", "2", path, "-"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, check=True)
        mbs = float(re.search(r"([0-9.]+) MB/s", p.stderr).group(1))
        times[(kind, link, rung)].append(os.path.getsize(path) / (mbs * 1e6))
    print(f"round {i + 1} of {RUNS} done", file=sys.stderr)
print("kind,link,rung,median_s,min_s,max_s,runs")
for (kind, link, rung), t in times.items():
    print(f"{kind},{link},{rung},{statistics.median(t):.4f},{min(t):.4f},{max(t):.4f},{len(t)}")
