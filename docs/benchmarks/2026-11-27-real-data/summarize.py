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
print()
print("| dataset | link | S1 predicted / --predict off | S2 time / raw (ratio) | S3 time / raw (ratio) | best static within raw's time (ratio) | within 1.5x raw's |")
print("|---|---|---|---|---|---|---|")
for d, l in cells:
    k = lambda c: (d, l, c)
    raw = med[k("B --codec none")]
    statics = {c: med[k(c)] for dd, ll, c in med if (dd, ll) == (d, l) and c.startswith("B --codec")}
    within = lambda f: max((ratio[k(c)] for c, t in statics.items() if t <= f * raw * 1.0), default=1.0)
    po = med[k("B -s throughput --predict off")] / med[k("B -s throughput")]
    s2, s3 = med[k("B -s keep-pace")], med[k("B -s prolong=1.5")]
    print(f"| {d} | {l} | {po:.2f} | {s2 / raw:.2f} ({ratio[k('B -s keep-pace')]:.2f}) | {s3 / raw:.2f} ({ratio[k('B -s prolong=1.5')]:.2f}) "
          f"| {within(1.0):.2f} | {within(1.5):.2f} |")
for l, v in gm.items():
    g = lambda i: statistics.geometric_mean([x[i] for x in v])
    print(f"\ngeometric mean at {l}: S1 A/best {g(0):.3f}, S1 B/best {g(1):.3f}, B over A {g(2):.3f}")
