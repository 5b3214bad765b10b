"""Ten local h5py writes of the real netCDF-4 data with one filter, for `perf record`:
python profile_one.py REAL_HDF5 OUTDIR adz|bitshuffle"""

import os
import sys

import hdf5plugin

import adz.hdf5

from common import bench

arrays = bench.real_datasets(sys.argv[1])
if sys.argv[3] == "adz":
    kw = adz.hdf5.Adz(codec="lz4:1")
else:
    kw = dict(hdf5plugin.Bitshuffle(cname="lz4"))
for _ in range(10):
    bench.write(os.path.join(sys.argv[2], "profile.h5"), arrays, bench.chunks_for, kw, None, None)
