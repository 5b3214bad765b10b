"""Medians per (file, build, tool) of run.sh's CSV, and each cell against the best static
tool of the same build and file (above 1: faster)."""

import csv
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    runs[(r["file"], r["build"], r["tool"])].append((float(r["seconds"]), int(r["stored"])))
files = sorted({k[0] for k in runs})
print("| file | build | tool | seconds (median) | all runs | stored MB | best static / it |")
print("|---|---|---|---|---|---|---|")
for f in files:
    cells = {k: v for k, v in runs.items() if k[0] == f}
    for (_, b, t), v in sorted(cells.items()):
        med = statistics.median(s for s, _ in v)
        statics = [statistics.median(s for s, _ in w) for (_, b2, t2), w in cells.items()
                   if b2 == b and t2.startswith("static")]
        rel = f"{min(statics) / med:.3f}" if statics else "-"
        runs_s = " ".join(f"{s:.2f}" for s, _ in v)
        mb = statistics.median(n for _, n in v) / 1e6
        print(f"| {f} | {b} | {t} | {med:.3f} | {runs_s} | {mb:.1f} | {rel} |")
