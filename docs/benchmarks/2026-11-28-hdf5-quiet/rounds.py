"""Issue 26's goal 2 measured again on a quiet machine, with the filters interleaved: every
serial filter of ../2026-11-27-hdf5-real/bench.py writes one data set through the throttled
file object, once each, in an order rotated from round to round, and each round is a fresh
process (so adz's per-process controller starts cold, as a user's job does), after one
untimed write without a filter.

Usage: python rounds.py REAL_HDF5 OUTDIR DATA ROUND [RATE_MB_S | local]
  DATA: real | vpic. Prints one CSV line per filter: data,round,position,filter,seconds,ratio
  (ratio: raw bytes over stored chunk bytes of the file written). `local`: written by HDF5's
  own file driver to OUTDIR, no link.
"""

import os
import sys

import h5py

from common import bench


def stored_bytes(path, names):
    with h5py.File(path) as f:
        return sum(f[n].id.get_storage_size() for n in names)


def load(real, data):
    """The arrays of data set `data` (real | vpic) and their chunking."""
    if data == "real":
        return bench.real_datasets(real), bench.chunks_for
    return bench.vpic_datasets(), bench.vpic_chunks


def run_round(real, out, data, rnd, filters, rate, prefix="round"):
    """One round: every (name, keywords) of `filters` writes the data set once, in an order
    rotated by `rnd`, through the throttled file at `rate` bytes/s (None: locally), after one
    untimed write without a filter; prints one CSV line per filter."""
    arrays, chunking = load(real, data)
    raw = sum(a.nbytes for a in arrays.values())
    k = rnd % len(filters)
    order = filters[k:] + filters[:k]
    path = os.path.join(out, f"{prefix}-{data}.h5")
    # One untimed write first: the process's first write pays for page faults and HDF5's
    # set-up, whichever filter it uses.
    bench.write(path, arrays, chunking, {}, None, rate)
    os.remove(path)
    for pos, (name, kw) in enumerate(order):
        t = bench.write(path, arrays, chunking, kw, None, rate)
        bench.check(path, arrays)
        ratio = raw / stored_bytes(path, arrays)
        print(f"{data},{rnd},{pos},{name},{t:.4f},{ratio:.4f}", flush=True)
        os.remove(path)


def main():
    real, out, data, rnd = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    arg = sys.argv[5] if len(sys.argv) > 5 else "117"
    rate = None if arg == "local" else float(arg) * 1e6
    serial = [(n, kw) for n, kw, threads in bench.filters() if threads is None]
    run_round(real, out, data, rnd, serial, rate)

if __name__ == "__main__":
    main()
