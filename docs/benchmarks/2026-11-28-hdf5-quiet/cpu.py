"""Wall and CPU time (user + system) of one h5py write, written locally, for Bitshuffle+LZ4,
adz lz4:1 and hdf5plugin's LZ4: are they single-threaded, and where does adz's time go?
Usage: python cpu.py REAL_HDF5 OUTDIR DATA (real | vpic). Prints the third of three writes."""

import os
import resource
import sys
import time

import hdf5plugin

import adz.hdf5

from common import bench


def main():
    real, out, data = sys.argv[1], sys.argv[2], sys.argv[3]
    if data == "real":
        arrays, chunking = bench.real_datasets(real), bench.chunks_for
    else:
        arrays, chunking = bench.vpic_datasets(), bench.vpic_chunks
    path = os.path.join(out, "cpu.h5")
    bench.write(path, arrays, chunking, {}, None, None)
    for name, kw in [("Bitshuffle+LZ4", dict(hdf5plugin.Bitshuffle(cname="lz4"))),
                     ("adz lz4:1", adz.hdf5.Adz(codec="lz4:1")),
                     ("hdf5plugin LZ4", dict(hdf5plugin.LZ4()))]:
        for _ in range(3):
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            bench.write(path, arrays, chunking, kw, None, None)
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_SELF)
        user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
        print(f"{data} {name}: wall {wall:.3f} s, user {user:.3f} s, system {system:.3f} s")
    os.remove(path)


if __name__ == "__main__":
    main()
