#!/usr/bin/env python3
"""Each async cell (dataset, link) of two runs side by side: the best static rung, raw and
the adaptive rows, as write speed (raw MB over the application's seconds), and S1 against
the best static row, the third best (the median of the five fastest: where the write hides
behind the solver, the static rows differ by the solver's own noise) and raw. Also the spread of the solver's compute seconds over
the cell's static rows, the measure of how noisy the cell is.

   python3 cells.py NEW_results.csv [OLD_results.csv] > cells.md
"""
import csv
import math
import sys


def cells(path):
    out = {}
    for r in csv.DictReader(open(path)):
        if r["workload"] != "async":
            continue
        key = (r["dataset"], float(r["link_mbs"]))
        out.setdefault(key, []).append(r)
    return out


def summary(rows):
    mbs = lambda r: float(r["write_mbs"])
    statics = [r for r in rows if r["kind"] in ("static", "raw")]
    best = max(statics, key=mbs)
    raw = next(r for r in rows if r["config"] == "none")
    ad = {r["config"]: r for r in rows if r["kind"] == "adaptive"}
    comp = [float(r["compute_seconds"]) for r in statics if r["compute_seconds"]]
    top5 = sorted((mbs(r) for r in statics), reverse=True)[:5]
    return best, raw, ad, (min(comp), max(comp)) if comp else (math.nan, math.nan), top5[len(top5) // 2]


new = cells(sys.argv[1])
old = cells(sys.argv[2]) if len(sys.argv) > 2 else {}
head = "| dataset | link MB/s | best static (MB/s) | 3rd best MB/s | raw MB/s | S1 MB/s (ratio) | S1 / best | S1 / 3rd | S1 / raw | S2 | S3 | compute s min-max |"
print(head + (" old: best static, S1 / best, compute s |" if old else ""))
print("|" + "---|" * (head.count("|") - 1 + (1 if old else 0)))
fr_best, fr_old, fr_third = [], [], []
for key in sorted(new, key=lambda k: (k[1], k[0])):
    best, raw, ad, comp, third = summary(new[key])
    s1 = ad.get("s1")
    if s1 is None or "s2" not in ad or "s3=1.5" not in ad:
        continue  # a cell not measured to its end yet
    f = float(s1["write_mbs"]) / float(best["write_mbs"])
    fr_best.append(f)
    fr_third.append(float(s1["write_mbs"]) / third)
    line = (f"| {key[0]} | {key[1]:.0f} | {best['config']} ({float(best['write_mbs']):.0f}) | {third:.0f} | "
            f"{float(raw['write_mbs']):.0f} | {float(s1['write_mbs']):.0f} ({float(s1['ratio']):.2f}) | "
            f"{f:.2f} | {fr_third[-1]:.2f} | {float(s1['write_mbs']) / float(raw['write_mbs']):.2f} | "
            f"{float(ad['s2']['write_mbs']):.0f} | {float(ad['s3=1.5']['write_mbs']):.0f} | "
            f"{comp[0]:.2f}-{comp[1]:.2f} |")
    if key in old:
        ob, _, oad, ocomp, _ = summary(old[key])
        of = float(oad["s1"]["write_mbs"]) / float(ob["write_mbs"])
        fr_old.append(of)
        line += f" {ob['config']} ({float(ob['write_mbs']):.0f}), {of:.2f}, {ocomp[0]:.2f}-{ocomp[1]:.2f} |"
    print(line)
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print(f"\nS1 / best static: geometric mean {gm(fr_best):.2f}, {sum(x >= 0.95 for x in fr_best)} of {len(fr_best)} cells at >= 0.95")
print(f"S1 / 3rd best static row: geometric mean {gm(fr_third):.2f}, {sum(x >= 0.95 for x in fr_third)} of {len(fr_third)} cells at >= 0.95")
if fr_old:
    print(f"old run: geometric mean {gm(fr_old):.2f}, {sum(x >= 0.95 for x in fr_old)} of {len(fr_old)} cells at >= 0.95")
