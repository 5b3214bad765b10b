#!/usr/bin/env python3
"""S1 auto against S1 given, the best static rung and zstd --adapt (medians per cell), for
one or more results.csv of the real-links run.sh, side by side.

usage: compare.py LABEL=results.csv [LABEL=results.csv ...]
"""
import csv
import statistics
import sys
from collections import defaultdict


def medians(path):
    runs = defaultdict(list)
    for r in csv.DictReader(open(path)):
        runs[(r["sink"], r["input"], r["tool"])].append(float(r["seconds"]))
    return {k: statistics.median(v) for k, v in runs.items()}


def main():
    runs = [(a.split("=", 1)[0], medians(a.split("=", 1)[1])) for a in sys.argv[1:]]
    cells = sorted({(s, i) for _, m in runs for (s, i, _) in m})
    head = "| sink | input |"
    for label, _ in runs:
        head += f" {label}: vs given | vs best static | vs zstd --adapt |"
    print(head)
    print("|---|---|" + "---|---|---|" * len(runs))
    for sink, inp in cells:
        line = f"| {sink} | {inp.removeprefix('real-').split('.')[0]} |"
        for _, m in runs:
            auto = m.get((sink, inp, "s1-auto"))
            given = m.get((sink, inp, "s1-given"))
            statics = [v for (s, i, t), v in m.items() if (s, i) == (sink, inp) and t.startswith("static:")]
            adapt = m.get((sink, inp, "zstd-adapt"))
            f = lambda x: f"{x / auto:.3f}" if x and auto else "-"
            line += f" {f(given)} | {f(min(statics) if statics else None)} | {f(adapt)} |"
        print(line)


if __name__ == "__main__":
    main()
