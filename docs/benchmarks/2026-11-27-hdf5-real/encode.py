"""adz's encoding speed per byte filter and codec on the VPIC-like chunks, one thread: every
chunk through `_adz.hdf5_encode_chunks` (what the filter and write_chunks run), best of 5.
Usage: python encode.py (from the repository root)."""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from adz import _adz  # noqa: E402


def chunks():
    out = []
    for a in bench.vpic_datasets().values():
        c = bench.vpic_chunks(a)
        for o in range(0, a.shape[0], c[0]):
            b = np.zeros(c, a.dtype)
            s = a[o:o + c[0]]
            b[:len(s)] = s
            out.append((a.itemsize, a.dtype.kind, b))
    return out


def cd(codec, level, filters, size, kind):
    # Layout version 1, static mode, codec id, level, no link, no factor, filter choice
    # (0 auto: shuffle by element size, 1 none), element size, type class + 1, chunk size.
    return [1, 0, codec, level & 0xFFFFFFFF, 0, 0, filters, size, 2 if kind == "f" else 1, 0]


def main():
    cs = chunks()
    raw = sum(b.nbytes for _, _, b in cs)
    print(f"# {raw / 2**20:.1f} MiB, load {os.getloadavg()[0]:.1f}\n")
    print("| encoding | s (best of 5) | MB/s | ratio |")
    print("|---|---|---|---|")
    for label, codec, level, filters in [("frame and checksums only (codec none)", 0, 0, 1),
                                         ("lz4:1 without shuffle", 1, 1, 1),
                                         ("lz4:1 with shuffle", 1, 1, 0),
                                         ("zstd:-4 with shuffle", 3, -4, 0),
                                         ("zstd:1 with shuffle", 3, 1, 0)]:
        best, stored = float("inf"), 0
        for _ in range(5):
            t = time.perf_counter()
            stored = sum(len(_adz.hdf5_encode_chunks(cd(codec, level, filters, size, kind),
                                                     [b], 1)[0]) for size, kind, b in cs)
            best = min(best, time.perf_counter() - t)
        print(f"| {label} | {best:.3f} | {raw / best / 1e6:.0f} | {raw / stored:.3f} |")


if __name__ == "__main__":
    main()
