#!/usr/bin/env python3
"""Predicted write time per rung (predict-*.json, with the pipeline's costs measured on the
sample: `pipeline` below) against the median real write of statics.csv; and for data of one
kind, the same formula with the constants PATH_COST and SERIAL_COST instead (0.22 and
0.2 ns, measured on the VM of 2026-11-25). Run in this directory: python3 compare.py"""
import csv, json

LINK = {"1GbE": 117e6, "10GbE": 1200e6, "ib-fdr4": 6000e6}
BLOCK, THREADS, CPUS = 1 << 20, 2, 2
PATH_COST, SERIAL_COST = 0.22e-9, 0.2e-9


def formula(d, est, link, c_cpu, c1):
    s, f = est["speed"], max(est["ratio"], 1.0)
    c = max(d / (THREADS * s), (d / s + d * c_cpu) / CPUS, d * c1)
    t = d / (f * link)
    b = min(BLOCK, d)
    return max(c, t) + (b / (f * link) if c >= t else b / s)


def pct(p, r):
    return f"{(p / r - 1) * 100:+.1f} %"


print("| data | link | rung | real s (median of 5, min-max) | pipeline c1 / c, ns | predicted s | error | with the constants | error |")
print("|---|---|---|---|---|---|---|---|---|")
within = {"measured": {}, "constants": {}}
errors = {"measured": [], "constants": [], "measured, one kind": []}
for r in csv.DictReader(open("statics.csv")):
    pred = json.load(open(f"predict-{r['kind']}-{r['link']}.json"))["prediction"]
    est = next((x for x in pred["rungs"] if x["spec"] == r["rung"]), None)
    real = float(r["median_s"])
    spread = f"{real:.3f} ({float(r['min_s']):.3f}-{float(r['max_s']):.3f})"
    costs = f"{pred['serial_cost'] * 1e9:.2f} / {pred['path_cost'] * 1e9:.2f}"
    if est is None or est.get("time") is None:
        print(f"| {r['kind']} | {r['link']} | {r['rung']} | {spread} | {costs} | not measured | | | |")
        continue
    new = est["time"]
    one_kind = len(pred["kinds"]) <= 1
    old = formula(pred["data_bytes"], est, LINK[r["link"]], PATH_COST, SERIAL_COST) if one_kind else None
    for k, v in (("measured", new), ("constants", old)):
        if v is not None:
            within[k].setdefault(r["link"], []).append(abs(v / real - 1) <= 0.07)
            errors[k].append(abs(v / real - 1))
    if one_kind:
        errors["measured, one kind"].append(abs(new / real - 1))
    cell = f"{old:.3f} | {pct(old, real)}" if old is not None else "- | -"
    print(f"| {r['kind']} | {r['link']} | {r['rung']} | {spread} | {costs} | {new:.3f} | {pct(new, real)} | {cell} |")
print()
for k in ("measured", "constants"):
    parts = [f"{l}: {sum(v)} of {len(v)}" for l, v in within[k].items()]
    print(f"Within 7 %, {k}: " + ", ".join(parts))
for k, v in errors.items():
    print(f"Mean |error|, {k}: {100 * sum(v) / len(v):.1f} % over {len(v)} rows")
