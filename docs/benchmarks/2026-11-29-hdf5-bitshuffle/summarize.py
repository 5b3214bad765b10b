"""Medians of a results CSV per data set and filter. Usage: python summarize.py CSV TITLE
Local runs (goal 1): for each hdf5plugin filter, the fastest adz rung that stores at least as
much (../2026-11-28-hdf5-rungs/summarize.py's table). Runs through a link (goal 2): each
adaptive row over the fastest static filter."""

import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "2026-11-28-hdf5-rungs"))
from summarize import medians, print_goal1, print_medians  # noqa: E402

path, title = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path)))
for data in ("real", "vpic"):
    med = medians(rows, data)
    print_medians(med, data + ": medians of {n} rounds, " + title)
    adaptive = [f for f in med if " S1" in f]
    if not adaptive:
        print_goal1(med)
        continue
    static = {f: v for f, v in med.items() if f not in adaptive and f != "none"}
    best, (bs, bq, *_) = min(static.items(), key=lambda kv: kv[1][0])
    print(f"\nFastest static filter: {best} ({bs:.3f} s, ratio {bq:.3f})\n")
    print("| adaptive | s | ratio | over the fastest static, time |")
    print("|---|---|---|---|")
    for f in adaptive:
        s, q, *_ = med[f]
        print(f"| {f} | {s:.3f} | {q:.3f} | {s / bs:.3f} |")
