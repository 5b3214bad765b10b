#!/usr/bin/env python3
"""Predicted write time per rung along the kinds of data (this commit's predict-*.json:
`time`) and from the whole sample's averages (the same prediction's `compress_time` and
`transfer_time`, the formula before: max of the stages plus one block), against the median
real write of statics.csv; and for data of one kind, the same formula with this machine's
path costs (C_HERE, C1_HERE, measured with raw writes, README) in place of the constants
measured on the machine of 2026-11-25. Run in this directory: python3 compare.py"""
import csv, json

LINK = {"1GbE": 117e6, "10GbE": 1200e6, "ib-fdr4": 6000e6}
BLOCK = 1 << 20
THREADS = CPUS = 2
C_HERE, C1_HERE = 0.50e-9, 0.35e-9


def here(d, est, link):
    s, f = est["speed"], max(est["ratio"], 1.0)
    c = max(d / (THREADS * s), (d / s + d * C_HERE) / CPUS, d * C1_HERE)
    t = d / (f * link)
    b = min(BLOCK, d)
    return max(c, t) + (b / (f * link) if c >= t else b / s)


def averages(d, est, link):
    c, t = est["compress_time"], est["transfer_time"]
    b = min(BLOCK, d)
    fill = b / (max(est["ratio"], 1.0) * link) if c >= t else b / est["speed"]
    return max(c, t) + fill


def pct(p, r):
    return f"{(p / r - 1) * 100:+.1f} %"


rows = list(csv.DictReader(open("statics.csv")))
print("| data | link | rung | real s (median of 5, min-max) | predicted s, along the kinds | error | from the averages | error | this machine's c, c1 | error |")
print("|---|---|---|---|---|---|---|---|---|---|")
within = {"new": {}, "old": {}, "here": {}}
errors = {"new": [], "old": [], "here": []}
for r in rows:
    pred = json.load(open(f"predict-{r['kind']}-{r['link']}.json"))["prediction"]
    est = next((x for x in pred["rungs"] if x["spec"] == r["rung"]), None)
    real = float(r["median_s"])
    spread = f"{real:.3f} ({float(r['min_s']):.3f}-{float(r['max_s']):.3f})"
    if est is None or est.get("time") is None:
        print(f"| {r['kind']} | {r['link']} | {r['rung']} | {spread} | not measured | | | | | |")
        continue
    new = est["time"]
    old = averages(pred["data_bytes"], est, LINK[r["link"]])
    mine = here(pred["data_bytes"], est, LINK[r["link"]]) if len(pred["kinds"]) <= 1 else None
    for k, v in (("new", new), ("old", old), ("here", mine)):
        if v is not None:
            within[k].setdefault(r["link"], []).append(abs(v / real - 1) <= 0.07)
            errors[k].append(abs(v / real - 1))
    cell = f"{mine:.3f} | {pct(mine, real)}" if mine is not None else "- | -"
    print(f"| {r['kind']} | {r['link']} | {r['rung']} | {spread} | {new:.3f} | {pct(new, real)} | {old:.3f} | {pct(old, real)} | {cell} |")
print()
for k, name in (("new", "along the kinds"), ("old", "from the averages"), ("here", "with this machine's c, c1 (one kind only)")):
    parts = [f"{l}: {sum(v)} of {len(v)}" for l, v in within[k].items()]
    mean = 100 * sum(errors[k]) / len(errors[k])
    print(f"Within 7 % {name}: " + ", ".join(parts) + f"; mean |error| {mean:.1f} %")
