#!/usr/bin/env python3
"""How much faster than the best static rung any per-block schedule could write each real file.

Reads crates/adz-control/tests/data/*.tsv (every 1 MiB block of the real corpus at eight static
rungs: per-thread speed and ratio, measured with `adz compress -c RUNG --trace`; see
docs/benchmarks/2026-11-27-real-traces) and prints, per file and link, the best static rung's
time and the oracle's: T = max(sum cpu / N, sum stored / L) minimised over one rung per block
(the Lagrangian sweep of adz-bench's oracle.rs, 51 weights). Pipeline fill, filters and the
start are left out, as in the oracle.

    python3 docs/benchmarks/2026-11-28-real-data-headroom/headroom.py
"""
import glob
import os

N = 2
B = 1 << 20
here = os.path.dirname(os.path.abspath(__file__))
tables = os.path.join(here, "../../../crates/adz-control/tests/data/*.tsv")
print("| file | link MB/s | best static | its time s | oracle s | headroom |")
print("|---|---|---|---|---|---|")
for f in sorted(glob.glob(tables)):
    lines = open(f).read().split("\n")
    rungs = lines[0].split("\t")[1:]
    rows = [l.split("\t") for l in lines[1:] if l.strip()]
    cpu = [[B / float(r[1 + 2 * k]) for r in rows] for k in range(len(rungs))]
    stored = [[B / float(r[2 + 2 * k]) for r in rows] for k in range(len(rungs))]
    for link in (117e6, 1200e6):
        static = {rungs[k]: max(sum(cpu[k]) / N, sum(stored[k]) / link) for k in range(len(rungs))}
        best = min(static, key=static.get)

        def schedule(lam):
            c = s = 0.0
            for j in range(len(rows)):
                k = min(range(len(rungs)),
                        key=lambda k: lam * cpu[k][j] / N + (1 - lam) * stored[k][j] / link)
                c += cpu[k][j]
                s += stored[k][j]
            return max(c / N, s / link)

        oracle = min(min(schedule(i / 50) for i in range(51)), static[best])
        name = os.path.basename(f)[:-4]
        print(f"| {name} | {link / 1e6:.0f} | {best} | {static[best]:.4f} | {oracle:.4f} "
              f"| {static[best] / oracle:.3f} |")
