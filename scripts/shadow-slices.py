#!/usr/bin/env python3
"""What a shadow measurement sees of each 1 MiB block: the ratios of the block's middle 64 KiB
(adz-core's shadow slice) at the same rungs as the block table, for the trace-driven simulator
(crates/adz-control/tests/real_traces.rs reads NAME.slices next to NAME.tsv).

Usage: scripts/shadow-slices.py ADZ INPUT OUT.slices

ADZ is an `adz` binary. The slices of every whole block are concatenated into one file and
compressed with `-B 64KiB -c RUNG --trace` on one thread, one frame per slice.
"""
import json
import os
import subprocess
import sys
import tempfile

BLOCK = 1 << 20
SLICE = 64 << 10
RUNGS = "lz4:50 lz4:1 zstd:-4 zstd:1 zstd:3 zstd:6 zstd:12 xz:1".split()


def main():
    adz, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // BLOCK
    at = (BLOCK - SLICE) // 2
    cols = []
    with tempfile.TemporaryDirectory() as tmp:
        slices = os.path.join(tmp, "slices.bin")
        with open(slices, "wb") as f:
            for j in range(n):
                f.write(data[j * BLOCK + at : j * BLOCK + at + SLICE])
        for rung in RUNGS:
            trace = os.path.join(tmp, "trace.jsonl")
            cmd = [adz, "compress", "-q", "-f", "-T", "1", "-c", rung, "-B", "64KiB"]
            cmd += ["--trace", trace, slices, os.path.join(tmp, "out.adz")]
            subprocess.run(cmd, check=True)
            rows = [json.loads(line) for line in open(trace)]
            rows = sorted((r for r in rows if "seq" in r), key=lambda r: r["seq"])
            if len(rows) != n:
                sys.exit(f"{path}: {len(rows)} frames at {rung}, expected {n}")
            cols.append([1.0 if r["stored_raw"] else r["raw"] / r["stored"] for r in rows])
    with open(out, "w") as f:
        f.write("\t".join(RUNGS) + "\n")
        for j in range(n):
            f.write("\t".join(f"{c[j]:.5g}" for c in cols) + "\n")


if __name__ == "__main__":
    main()
