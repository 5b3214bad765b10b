"""Issue 26's two goals with adz's bit-shuffle filter (decision 0067): each round (a fresh
process) writes one data set once with every filter below, in an order rotated from round to
round, after one untimed write without a filter, and checks it reads back equal.

Usage: python bits.py REAL_HDF5 OUTDIR DATA ROUND MODE
  DATA: real | vpic. MODE: local (goal 1: HDF5's own file driver, the static rungs with byte
  and bit shuffle against hdf5plugin's fast filters) | 117 (goal 2: through the throttled file
  object at 117 MB/s, S1 with either shuffle against the fastest static filters).
  Prints data,round,position,filter,seconds,ratio per filter.
"""

import os
import sys

import hdf5plugin

import adz.hdf5

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "2026-11-28-hdf5-quiet"))
from rounds import run_round  # noqa: E402

LOCAL_RUNGS = ["lz4:50", "lz4:8", "lz4:4", "lz4:1", "zstd:-4", "zstd:1"]
LINK_RUNGS = ["lz4:1", "zstd:-1", "zstd:1"]


def hdf5plugin_fast():
    yield "hdf5plugin LZ4", dict(hdf5plugin.LZ4())
    yield "hdf5plugin Bitshuffle+LZ4", dict(hdf5plugin.Bitshuffle(cname="lz4"))
    yield "hdf5plugin Blosc2 lz4:5+shuffle", dict(hdf5plugin.Blosc2(
        cname="lz4", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE))


def filters(mode):
    yield "none", {}
    rungs = LOCAL_RUNGS if mode == "local" else LINK_RUNGS
    for c in rungs:
        yield f"adz {c}", adz.hdf5.Adz(codec=c)
        yield f"adz {c}+bitshuffle", adz.hdf5.Adz(codec=c, filters="bitshuffle")
    if mode != "local":
        yield "adz S1", adz.hdf5.Adz(strategy="throughput", link="1GbE")
        yield "adz S1+bitshuffle", adz.hdf5.Adz(strategy="throughput", link="1GbE",
                                                filters="bitshuffle")
    yield from hdf5plugin_fast()


def main():
    real, out, data, rnd, mode = (sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                  sys.argv[5])
    rate = None if mode == "local" else float(mode) * 1e6
    run_round(real, out, data, rnd, list(filters(mode)), rate, prefix=f"bits-{mode}")


if __name__ == "__main__":
    main()
