"""Medians of results.csv per data set and filter, and for each hdf5plugin filter the fastest
adz rung that stores at least as much (ratio at least the filter's). The functions serve
../2026-11-29-hdf5-bitshuffle/summarize.py too."""

import csv
import statistics
import sys


def medians(rows, data):
    """{filter: (median s, median ratio, min s, max s, rounds)} of data set `data`."""
    runs = {}
    for r in rows:
        if r["data"] == data:
            runs.setdefault(r["filter"], []).append((float(r["seconds"]), float(r["ratio"])))
    return {f: (statistics.median(s for s, _ in v), statistics.median(q for _, q in v),
                min(s for s, _ in v), max(s for s, _ in v), len(v)) for f, v in runs.items()}


def print_medians(med, title):
    n = max(v[4] for v in med.values())
    print(f"\n### {title.format(n=n)}\n")
    print("| filter | write s (median) | min-max | ratio |")
    print("|---|---|---|---|")
    for f, (s, q, lo, hi, _) in sorted(med.items(), key=lambda kv: kv[1][0]):
        print(f"| {f} | {s:.3f} | {lo:.3f}-{hi:.3f} | {q:.3f} |")


def print_goal1(med):
    """For each hdf5plugin filter, the fastest adz row at the same or better ratio."""
    print("\n| hdf5plugin filter (ratio, s) | fastest adz rung at the same or better ratio (ratio, s) "
          "| adz / filter, time |")
    print("|---|---|---|")
    for f, (s, q, *_) in sorted(med.items(), key=lambda kv: kv[1][0]):
        if not f.startswith("hdf5plugin"):
            continue
        ok = [(a, v) for a, v in med.items() if a.startswith("adz") and v[1] >= q]
        if not ok:
            print(f"| {f[11:]} ({q:.3f}, {s:.3f}) | none | - |")
            continue
        a, v = min(ok, key=lambda kv: kv[1][0])
        print(f"| {f[11:]} ({q:.3f}, {s:.3f}) | {a[4:]} ({v[1]:.3f}, {v[0]:.3f}) | {v[0] / s:.2f} |")


if __name__ == "__main__":
    rows = list(csv.DictReader(open(sys.argv[1] if len(sys.argv) > 1 else "results.csv")))
    for data in ("real", "vpic"):
        med = medians(rows, data)
        print_medians(med, data + ": medians of {n} rounds, written locally (HDF5's own file "
                      "driver, /dev/shm)")
        print_goal1(med)
