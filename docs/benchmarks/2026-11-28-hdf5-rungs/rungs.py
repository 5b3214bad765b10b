"""Issue 26's goal 1 against every hdf5plugin filter with adz's whole fast end of the ladder:
each round (a fresh process) writes one data set locally (HDF5's own file driver) once with
every filter below, in an order rotated from round to round, after one untimed write without
a filter, and checks it reads back equal.

Usage: python rungs.py REAL_HDF5 OUTDIR DATA ROUND
  DATA: real | vpic. Prints data,round,position,filter,seconds,ratio per filter (ratio: raw
  bytes over the stored chunk bytes of the file written).
"""

import os
import sys

import hdf5plugin

import adz.hdf5

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "2026-11-28-hdf5-quiet"))
from rounds import run_round  # noqa: E402

ADZ_RUNGS = ["lz4:50", "lz4:16", "lz4:8", "lz4:4", "lz4:2", "lz4:1",
             "zstd:-4", "zstd:-1", "zstd:1", "zstd:3"]


def filters():
    yield "none", {}
    for c in ADZ_RUNGS:
        yield f"adz {c}", adz.hdf5.Adz(codec=c)
    yield "hdf5plugin LZ4", dict(hdf5plugin.LZ4())
    yield "hdf5plugin Bitshuffle+LZ4", dict(hdf5plugin.Bitshuffle(cname="lz4"))
    yield "hdf5plugin Blosc2 lz4:5+shuffle", dict(hdf5plugin.Blosc2(
        cname="lz4", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE))
    yield "hdf5plugin Zstd(1)", dict(hdf5plugin.Zstd(clevel=1))
    yield "hdf5plugin Zstd(3)", dict(hdf5plugin.Zstd(clevel=3))
    yield "hdf5plugin Blosc2 zstd:3+shuffle", dict(hdf5plugin.Blosc2(
        cname="zstd", clevel=3, filters=hdf5plugin.Blosc2.SHUFFLE))


def main():
    real, out, data, rnd = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    run_round(real, out, data, rnd, list(filters()), None, prefix="rungs")


if __name__ == "__main__":
    main()
