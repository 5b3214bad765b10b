"""Medians per data set and filter of a run.sh CSV, and adz S1's time over each filter's.
Usage: python3 summarize.py [CSV] [WHERE] (WHERE: what the title says the writes went
through; default "through 117 MB/s")."""
import csv
import statistics
import sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1] if len(sys.argv) > 1 else "results.csv")))
where = sys.argv[2] if len(sys.argv) > 2 else "through 117 MB/s"
by = defaultdict(list)
ratio = {}
for r in rows:
    by[(r["data"], r["filter"])].append(float(r["seconds"]))
    ratio[(r["data"], r["filter"])] = float(r["ratio"])
for data in dict.fromkeys(r["data"] for r in rows):
    names = [f for d, f in by if d == data]
    s1 = statistics.median(by[(data, "adz S1 1GbE")])
    print(f"\n### {data}: medians of {len(by[(data, names[0])])} rounds {where}\n")
    print("| filter | write s (median) | min-max | ratio (last round) | S1 time / filter's |")
    print("|---|---|---|---|---|")
    for f in sorted(names, key=lambda f: statistics.median(by[(data, f)])):
        t = by[(data, f)]
        m = statistics.median(t)
        print(f"| {f} | {m:.3f} | {min(t):.3f}-{max(t):.3f} | {ratio[(data, f)]:.3f} | "
              f"{s1 / m:.3f} |")
