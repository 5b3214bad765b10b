"""Dump the real netCDF-4 datasets of bench.py, cut into its chunks (flat, the last one
zero-padded), back to back to OUTDIR/real-raw.bin for crates/adz-hdf5/examples/encode_speed.rs.
Prints the layout argument; the datasets go to stderr. Usage: python dump_real.py REAL_HDF5
OUTDIR"""

import os
import sys
import types

import numpy as np

# bench.py's readers without adz or hdf5plugin.
for m in ("adz", "adz.hdf5", "hdf5plugin"):
    sys.modules.setdefault(m, types.ModuleType(m))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

groups = []
with open(os.path.join(sys.argv[2], "real-raw.bin"), "wb") as out:
    for name, a in bench.real_datasets(sys.argv[1]).items():
        per = int(np.prod(bench.chunks_for(a))) * a.itemsize
        flat = np.ascontiguousarray(a).reshape(-1).view(np.uint8).tobytes()
        kind = "f" if a.dtype.kind == "f" else "i"
        for o in range(0, len(flat), per):
            piece = flat[o:o + per]
            out.write(piece + bytes(per - len(piece)))
            groups.append(f"{a.itemsize}{kind}:1x{per}")
        print(name, a.dtype.str, a.shape, file=sys.stderr)
print(",".join(groups))
