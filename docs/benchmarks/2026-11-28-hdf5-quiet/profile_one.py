"""Ten local h5py writes of the real netCDF-4 data with one filter, for `perf record`:
python profile_one.py REAL_HDF5 OUTDIR adz|bitshuffle"""

import importlib.util
import os
import sys

import hdf5plugin

import adz.hdf5

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "hdf5real", os.path.join(HERE, "..", "2026-11-27-hdf5-real", "bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

arrays = bench.real_datasets(sys.argv[1])
if sys.argv[3] == "adz":
    kw = adz.hdf5.Adz(codec="lz4:1")
else:
    kw = dict(hdf5plugin.Bitshuffle(cname="lz4"))
for _ in range(10):
    bench.write(os.path.join(sys.argv[2], "profile.h5"), arrays, bench.chunks_for, kw, None, None)
