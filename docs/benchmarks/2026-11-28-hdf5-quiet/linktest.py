"""How fast the benchmark's throttled file object really writes, and S1 told other link rates.

Usage: python linktest.py REAL_HDF5 OUTDIR DATA ROUND   (DATA: real | vpic)

In one fresh process: one untimed write, then for each filter (order rotated by ROUND) a write
through `Throttled` at 117 MB/s and a local write. Prints CSV lines
data,round,filter,throttled_s,local_s,file_bytes (file_bytes: of the local write). The link
time of a write is taken as throttled minus local; file_bytes over it is the rate the
throttled file delivered.
"""

import os
import sys

import adz.hdf5

from common import bench
from rounds import load


def main():
    real, out, data, rnd = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    arrays, chunking = load(real, data)
    filters = [("lz4:1", adz.hdf5.Adz(codec="lz4:1")), ("zstd:1", adz.hdf5.Adz(codec="zstd:1")),
               ("none", {})]
    for link in ["117MB/s", "100MB/s", "90MB/s"]:
        filters.append((f"S1@{link}", adz.hdf5.Adz(strategy="throughput", link=link)))
    k = rnd % len(filters)
    filters = filters[k:] + filters[:k]
    path = os.path.join(out, f"linktest-{data}.h5")
    bench.write(path, arrays, chunking, {}, None, 117e6)
    for name, kw in filters:
        t = bench.write(path, arrays, chunking, kw, None, 117e6)
        local = bench.write(path, arrays, chunking, kw, None, None)
        print(f"{data},{rnd},{name},{t:.4f},{local:.4f},{os.path.getsize(path)}", flush=True)
    os.remove(path)


if __name__ == "__main__":
    main()
