#!/usr/bin/env python3
"""Medians per (dataset, link, config) of ab.sh's CSV, and S1 (A and B) over the best static
row of the same run. Usage: summarize.py runs.csv"""
import csv, statistics, sys
from collections import defaultdict

rows = defaultdict(list)
ratio = {}
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["dataset"], r["link"], r["config"])
    rows[k].append(float(r["seconds"]))
    ratio[k] = float(r["ratio"])
med = {k: statistics.median(v) for k, v in rows.items()}
cells = sorted({(d, l) for d, l, _ in med})
print("| dataset | link | S1 A s (ratio) | S1 B s (ratio) | best static s (ratio) | A/best | B/best | B/A |")
print("|---|---|---|---|---|---|---|---|")
gm = defaultdict(list)
for d, l in cells:
    statics = {c: med[(d, l, c)] for dd, ll, c in med if (dd, ll) == (d, l) and c.startswith("B --codec")}
    best = min(statics, key=statics.get)
    a, b = med[(d, l, "A -s throughput")], med[(d, l, "B -s throughput")]
    sa, sb = statics[best] / a, statics[best] / b
    gm[l].append((sa, sb, a / b))
    print(f"| {d} | {l} | {a:.3f} ({ratio[(d, l, 'A -s throughput')]:.2f}) | {b:.3f} ({ratio[(d, l, 'B -s throughput')]:.2f}) "
          f"| {best.split()[-1]} {statics[best]:.3f} ({ratio[(d, l, best)]:.2f}) | {sa:.2f} | {sb:.2f} | {a / b:.2f} |")
for l, v in gm.items():
    g = lambda i: statistics.geometric_mean([x[i] for x in v])
    print(f"\ngeometric mean at {l}: S1 A/best {g(0):.3f}, S1 B/best {g(1):.3f}, B over A {g(2):.3f}")
