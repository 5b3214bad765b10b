#!/usr/bin/env python3
"""Tables for README.md from what scripts/bench-predict.sh wrote here (log.txt, predict-*.json,
trace-*.jsonl). Run from this directory: python3 summarize.py"""
import collections
import json
import re

KINDS = ["text", "doubles", "sparse", "random", "mixed"]
LINKS = ["1GbE", "10GbE", "ib-fdr4"]

# Real runs from the log: "## KIND LINK STRATEGY [--predict P]" then adz's summary line.
runs = {}
head = None
for line in open("log.txt"):
    m = re.match(r"## (\S+) (\S+) (\S+)(?: --predict (\S+))?$", line.strip())
    if m:
        head = m.groups()
        continue
    m = re.search(r"ratio ([0-9.]+), \d+ frames, ([0-9.]+) s,", line)
    if m and head:
        runs[head] = (float(m.group(2)), float(m.group(1)))
        head = None


def settle(path):
    """Blocks until the run settles: the first block from which every later block of the
    run's main class uses a rung the second half of the run used at least 10 % of the time."""
    rows = [json.loads(l) for l in open(path)]
    main = collections.Counter(r["class"] for r in rows).most_common(1)[0][0]
    rows = [r for r in rows if r["class"] == main]
    half = rows[len(rows) // 2:]
    counts = collections.Counter(r["config"] for r in half)
    common = {c for c, n in counts.items() if n >= 0.1 * len(half)}
    k = len(rows)
    while k > 0 and rows[k - 1]["config"] in common:
        k -= 1
    return rows[k]["seq"] if k < len(rows) else None


print("## Prediction: chosen start, and its error against the whole input (--check)\n")
print("| data | link | decision | start | predicted ratio | ratio error | predicted time s | "
      "time error | max abs ratio error (rungs measured) | predict ms (budget ms) |")
print("|---|---|---|---|---|---|---|---|---|---|")
ratio_errs, time_errs = [], []
for kind in KINDS:
    for link in LINKS:
        d = json.load(open(f"predict-{kind}-{link}.json"))
        p = d["prediction"]
        start = p.get("start") or "raw"
        rung = next((r for r in p["rungs"] if r["spec"] == start), None)
        chk = next((c for c in d.get("check", []) if c["spec"] == start), None)
        errs = [abs(c["ratio_error"]) for c in d.get("check", [])]
        ratio_errs += errs
        time_errs += [abs(c["time_error"]) for c in d.get("check", [])]
        decision = "compress" if p["pays"] else "raw"
        if p.get("incompressible"):
            decision += " (incompressible)"
        pr = f"{rung['ratio']:.3f}" if rung else "-"
        pt = f"{rung['time']:.3f}" if rung else f"{p['time_raw']:.3f} (raw)"
        re_ = f"{chk['ratio_error'] * 100:+.1f} %" if chk else "-"
        te = f"{chk['time_error'] * 100:+.1f} %" if chk else "-"
        mx = f"{max(errs) * 100:.1f} % ({len(errs)})" if errs else "- (0)"
        print(f"| {kind} | {link} | {decision} | {start} | {pr} | {re_} | {pt} | {te} | {mx} | "
              f"{p['seconds'] * 1000:.1f} ({p['budget_seconds'] * 1000:.1f}) |")
if ratio_errs:
    print(f"\nOver every rung measured: mean |ratio error| {sum(ratio_errs) / len(ratio_errs) * 100:.1f} %, "
          f"max {max(ratio_errs) * 100:.1f} %; mean |time error| {sum(time_errs) / len(time_errs) * 100:.1f} %, "
          f"max {max(time_errs) * 100:.1f} % ({len(ratio_errs)} rung predictions)")

print("\n## Predicted write time against a real throttled write of the same rung\n")
print("| data | link | rung | predicted s | real s (static run) | error |")
print("|---|---|---|---|---|---|")
for kind in KINDS:
    for link in LINKS:
        p = json.load(open(f"predict-{kind}-{link}.json"))["prediction"]
        for r in p["rungs"]:
            real = runs.get((kind, link, f"static={r['spec']}", None))
            if real:
                print(f"| {kind} | {link} | {r['spec']} | {r['time']:.3f} | {real[0]:.2f} | "
                      f"{(r['time'] / real[0] - 1) * 100:+.1f} % |")

print("\n## Starting at the predicted rung (--predict auto) against a fixed start (--predict off)\n")
print("| data | link | strategy | auto: s, ratio, settled at block | off: s, ratio, settled at block | "
      "static zstd:1 s | static lz4:1 s |")
print("|---|---|---|---|---|---|---|")
for kind in KINDS:
    for link in LINKS:
        for strat in ["throughput", "keep-pace"]:
            cells = []
            for pr in ["auto", "off"]:
                t, r = runs[(kind, link, strat, pr)]
                s = settle(f"trace-{kind}-{link}-{strat}-{pr}.jsonl")
                cells.append(f"{t:.2f}, {r:.3f}, {s if s is not None else 'never'}")
            z = runs[(kind, link, "static=zstd:1", None)][0]
            l4 = runs[(kind, link, "static=lz4:1", None)][0]
            print(f"| {kind} | {link} | {strat} | {cells[0]} | {cells[1]} | {z:.2f} | {l4:.2f} |")
