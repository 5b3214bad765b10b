#!/usr/bin/env python3
"""Predicted write time per rung, with the path-cost term (this commit's predict-*.json) and
without it (the same measured speed and ratio through the earlier formula), against the
median real write of statics.csv. Run in this directory: python3 compare.py"""
import csv, json

LINK = {"1GbE": 117e6, "10GbE": 1200e6, "ib-fdr4": 6000e6}
THREADS, BLOCK = 2, 1 << 20


def old_time(d, speed, ratio, link):
    c, t = d / (THREADS * speed), d / (max(ratio, 1.0) * link)
    fill = min(BLOCK, d) / (max(ratio, 1.0) * link) if c >= t else min(BLOCK, d) / speed
    return max(c, t) + fill


def pct(p, r):
    return f"{(p / r - 1) * 100:+.1f} %"


rows = list(csv.DictReader(open("statics.csv")))
print("| data | link | rung | real s (median of 5, min-max) | predicted s, with the term | error | without | error |")
print("|---|---|---|---|---|---|---|---|")
within = {"new": {}, "old": {}}
errors = {"new": [], "old": []}
for r in rows:
    pred = json.load(open(f"predict-{r['kind']}-{r['link']}.json"))["prediction"]
    est = next((x for x in pred["rungs"] if x["spec"] == r["rung"]), None)
    real = float(r["median_s"])
    if est is None or est.get("time") is None:
        print(f"| {r['kind']} | {r['link']} | {r['rung']} | {real:.3f} ({float(r['min_s']):.3f}-{float(r['max_s']):.3f}) | not measured | | | |")
        continue
    d = pred["data_bytes"]
    new = est["time"]
    old = old_time(d, est["speed"], est["ratio"], LINK[r["link"]])
    for k, v in (("new", new), ("old", old)):
        within[k].setdefault(r["link"], []).append(abs(v / real - 1) <= 0.07)
        errors[k].append(abs(v / real - 1))
    print(f"| {r['kind']} | {r['link']} | {r['rung']} | {real:.3f} ({float(r['min_s']):.3f}-{float(r['max_s']):.3f}) "
          f"| {new:.3f} | {pct(new, real)} | {old:.3f} | {pct(old, real)} |")
print()
for k, name in (("new", "with the term"), ("old", "without")):
    parts = [f"{l}: {sum(v)} of {len(v)}" for l, v in within[k].items()]
    mean = 100 * sum(errors[k]) / len(errors[k])
    print(f"Within 7 % {name}: " + ", ".join(parts) + f"; mean |error| {mean:.1f} %")
