"""The ratio of each element type of the real netCDF-4 file and the VPIC-like data with lz4:1
and zstd:1, byte-shuffled against bit-shuffled (local writes; sizes only, not timed).
Usage: python pertype.py REAL_HDF5 OUTDIR"""

import collections
import os
import sys

import h5py

import adz.hdf5

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "2026-11-28-hdf5-quiet"))
from common import bench  # noqa: E402

real, out = sys.argv[1], sys.argv[2]
for data in ("real", "vpic"):
    if data == "real":
        arrays, chunking = bench.real_datasets(real), bench.chunks_for
    else:
        arrays, chunking = bench.vpic_datasets(), bench.vpic_chunks
    for codec in ("lz4:1", "zstd:1"):
        tot = collections.defaultdict(lambda: [0, 0, 0])
        for i, fil in enumerate(("shuffle", "bitshuffle")):
            path = os.path.join(out, f"pertype-{fil}.h5")
            bench.write(path, arrays, chunking, adz.hdf5.Adz(codec=codec, filters=fil), None, None)
            with h5py.File(path) as f:
                for n, a in arrays.items():
                    k = f"{a.dtype.kind}{a.dtype.itemsize}"
                    if i == 0:
                        tot[k][0] += a.nbytes
                    tot[k][1 + i] += f[n].id.get_storage_size()
            os.remove(path)
        for k, (raw, s, b) in sorted(tot.items()):
            print(f"{data} {codec} {k}: raw {raw / 1e6:.1f} MB  shuffle {raw / s:.3f}  "
                  f"bitshuffle {raw / b:.3f}")
