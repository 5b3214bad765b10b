"""Medians of a results CSV per data set and filter. Usage: python summarize.py CSV TITLE
Local runs (goal 1): for each hdf5plugin filter, the fastest adz rung that stores at least as
much. Runs through a link (goal 2): each adaptive row over the fastest static filter."""

import csv
import statistics
import sys

path, title = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path)))
for data in ("real", "vpic"):
    runs = {}
    for r in rows:
        if r["data"] == data:
            runs.setdefault(r["filter"], []).append((float(r["seconds"]), float(r["ratio"])))
    med = {f: (statistics.median(s for s, _ in v), statistics.median(q for _, q in v),
               min(s for s, _ in v), max(s for s, _ in v), len(v)) for f, v in runs.items()}
    n = max(v[4] for v in med.values())
    print(f"\n### {data}: medians of {n} rounds, {title}\n")
    print("| filter | write s (median) | min-max | ratio |")
    print("|---|---|---|---|")
    for f, (s, q, lo, hi, _) in sorted(med.items(), key=lambda kv: kv[1][0]):
        print(f"| {f} | {s:.3f} | {lo:.3f}-{hi:.3f} | {q:.3f} |")
    adaptive = [f for f in med if " S1" in f]
    if adaptive:
        static = {f: v for f, v in med.items() if f not in adaptive and f != "none"}
        best, (bs, bq, *_) = min(static.items(), key=lambda kv: kv[1][0])
        print(f"\nFastest static filter: {best} ({bs:.3f} s, ratio {bq:.3f})\n")
        print("| adaptive | s | ratio | over the fastest static, time |")
        print("|---|---|---|---|")
        for f in adaptive:
            s, q, *_ = med[f]
            print(f"| {f} | {s:.3f} | {q:.3f} | {s / bs:.3f} |")
        continue
    print("\n| hdf5plugin filter (ratio, s) | fastest adz rung at the same or better ratio "
          "(ratio, s) | adz / filter, time |")
    print("|---|---|---|")
    for f, (s, q, *_) in sorted(med.items(), key=lambda kv: kv[1][0]):
        if not f.startswith("hdf5plugin"):
            continue
        ok = [(a, v) for a, v in med.items() if a.startswith("adz") and v[1] >= q]
        if not ok:
            print(f"| {f[11:]} ({q:.3f}, {s:.3f}) | none | - |")
            continue
        a, v = min(ok, key=lambda kv: kv[1][0])
        print(f"| {f[11:]} ({q:.3f}, {s:.3f}) | {a[4:]} ({v[1]:.3f}, {v[0]:.3f}) "
              f"| {v[0] / s:.2f} |")
