"""Dump the VPIC-like data's chunks, zero-padded as HDF5 stores edge chunks, back to back to
OUTDIR/vpic-raw.bin for crates/adz-hdf5/examples/encode_speed.rs (layout
4f:56x1048576,8i:8x2097152). Usage: python dump_vpic.py OUTDIR (from this directory)."""

import os
import sys

import numpy as np

# Only vpic_like() of the earlier benchmark, without its h5py/hdf5plugin/adz imports.
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-27-hdf5",
                        "bench.py")).read()
ns = {"np": np}
exec(src[src.index("def vpic_like"):src.index("def filters")], ns)
fields, particles = ns["vpic_like"]()
with open(os.path.join(sys.argv[1], "vpic-raw.bin"), "wb") as out:
    for a in list(fields.values()) + list(particles.values()):
        c = 16 * 128 * 128 if a.ndim == 3 else 262144
        flat = a.reshape(-1)
        for o in range(0, flat.size, c):
            b = np.zeros(c, a.dtype)
            s = flat[o:o + c]
            b[:len(s)] = s
            out.write(b.tobytes())
