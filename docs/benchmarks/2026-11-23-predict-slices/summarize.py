#!/usr/bin/env python3
"""Predicted against real ratio, before and after, from `adz predict --check --json` files
(predict-INPUT-LINK.json) in two directories. Ratios only: the real ratio and the sample are
deterministic, times are not (so which rungs beyond the three cheapest were measured can
differ between runs). Usage: python3 summarize.py BEFORE_DIR AFTER_DIR"""
import json
import os
import sys

RUNS = [(k, l) for k in ["text", "doubles", "sparse", "random", "mixed"] for l in ["1GbE", "10GbE"]]
EXTRA = [(k, l) for k in ["mixed-shift", "linux256"] for l in ["1GbE", "10GbE", "keep-pace-1GbE"]]


def load(d, kind, link):
    path = os.path.join(d, f"predict-{kind}-{link}.json")
    return json.load(open(path)) if os.path.exists(path) else None


def sample(p):
    kinds = p.get("kinds") or []
    k = f", {len(kinds)} kinds" if len(kinds) > 1 else ""
    return f"{p['slices']} slices{k}, {p['sampled_bytes'] / 1e3:.0f} kB"


def start(p):
    s = p["start"]
    return s + (" (extrapolated)" if p.get("extrapolated") else "")


def table(before, after, runs):
    print("| data | link | rung | real | before | error | after | error |")
    print("|---|---|---|---|---|---|---|---|")
    worst = {}
    for kind, link in runs:
        b, a = load(before, kind, link), load(after, kind, link)
        if not (b and a):
            continue
        pb, pa = b["prediction"], a["prediction"]
        real = {c["spec"]: c["ratio"] for c in b.get("check", []) + a.get("check", [])}
        eb = {r["spec"]: r["ratio"] for r in pb["rungs"]}
        ea = {r["spec"]: r["ratio"] for r in pa["rungs"]}
        specs = [r["spec"] for r in pb["rungs"]]
        specs += [s for s in ea if s not in specs]
        print(f"| {kind} | {link} | sample, start | | {sample(pb)}; {start(pb)} | | "
              f"{sample(pa)}; {start(pa)} | |")
        if not specs:
            print(f"| {kind} | {link} | (random: nothing compressed, raw) | 1.000 | raw | | raw | |")
        for s in specs:
            if s not in real:
                continue
            cells = []
            for e, tag in ((eb, "before"), (ea, "after")):
                if s in e:
                    err = e[s] / real[s] - 1
                    worst.setdefault((kind, tag), []).append(abs(err))
                    cells += [f"{e[s]:.3f}", f"{err * 100:+.1f} %"]
                else:
                    cells += ["-", "-"]
            print(f"| {kind} | {link} | {s} | {real[s]:.3f} | " + " | ".join(cells) + " |")
        x = pa.get("extrapolated")
        if x and x["spec"] in real:
            print(f"| {kind} | {link} | {x['spec']} (extrapolated start, not measured) | "
                  f"{real[x['spec']]:.3f} | - | - | >= {x['ratio']:.3f} (the best measured) | |")
    print()
    for kind in dict.fromkeys(k for k, _ in runs):
        b, a = worst.get((kind, "before")), worst.get((kind, "after"))
        if b and a:
            print(f"- {kind}: max |error| {max(b) * 100:.1f} % before, {max(a) * 100:.1f} % after")
    print()


before, after = sys.argv[1], sys.argv[2]
print("## The five datagen kinds (512 MiB, seed 1), S1\n")
table(before, after, RUNS)
print("## Also: mixed shifted by 1234567 bytes, and the first 256 MiB of linux.tar\n")
table(before, after, EXTRA)
