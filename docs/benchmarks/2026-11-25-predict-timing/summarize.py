#!/usr/bin/env python3
"""Tables for README.md from what scripts/bench-predict.sh wrote here (log.txt, predict-*.json,
trace-*.jsonl). Run from this directory: python3 summarize.py

Copied from ../2026-11-23-predict-timing/summarize.py, with: real write times from the raw
bytes over adz's MB/s (adz prints seconds with two decimals, 5 % of a 0.1 s write), per-rung
speed errors (--check), and the write-time table of the directory named in BEFORE beside
this one's. BEFORE and KINDS (space-separated) may be given in the environment."""
import collections
import json
import os
import re

BEFORE = os.environ.get("BEFORE", "../2026-11-23-predict-timing")

# The inputs: KINDS="linux matrix ..." for a run with EVAL=1.
KINDS = os.environ.get("KINDS", "text doubles sparse random mixed").split()
LINKS = ["1GbE", "10GbE", "ib-fdr4"]

def parse_runs(path):
    """Real runs from a log: "## KIND LINK STRATEGY [--predict P]" then adz's summary line:
    (seconds, ratio), the seconds from the raw bytes over the MB/s where it has them."""
    runs = {}
    head = None
    for line in open(path):
        m = re.match(r"## (\S+) (\S+) (\S+)(?: --predict (\S+))?$", line.strip())
        if m:
            head = m.groups()
            continue
        m = re.search(r": (\d+) -> \d+ bytes, ratio ([0-9.]+), \d+ frames, ([0-9.]+) s, "
                      r"([0-9.]+) MB/s", line)
        if m and head:
            raw, ratio, secs, mbs = int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4))
            runs[head] = (raw / (mbs * 1e6) if mbs > 0 else secs, ratio)
            head = None
    return runs


runs = parse_runs("log.txt")


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

print("\n## Predicted speed of one thread against the whole input's (--check, one thread)\n")
print("| data | link | sample bytes (slices) | " + " | ".join(["lz4:1", "zstd:-1", "zstd:1", "zstd:3"]) + " |")
print("|---|---|---|---|---|---|---|")
speed_errs = []
for kind in KINDS:
    for link in LINKS:
        d = json.load(open(f"predict-{kind}-{link}.json"))
        p = d["prediction"]
        chk = {c["spec"]: c for c in d.get("check", [])}
        if not chk:
            continue
        cells = []
        for spec in ["lz4:1", "zstd:-1", "zstd:1", "zstd:3"]:
            r = next((r for r in p["rungs"] if r["spec"] == spec), None)
            if r and spec in chk:
                e = chk[spec]["speed_error"]
                speed_errs.append(abs(e))
                cells.append(f"{r['speed'] / 1e6:.0f} / {chk[spec]['speed'] / 1e6:.0f} MB/s ({e * 100:+.0f} %)")
            else:
                cells.append("-")
        print(f"| {kind} | {link} | {p['sampled_bytes']} ({p['slices']}) | " + " | ".join(cells) + " |")
if speed_errs:
    print(f"\nMean |speed error| {sum(speed_errs) / len(speed_errs) * 100:.1f} %, max "
          f"{max(speed_errs) * 100:.1f} % ({len(speed_errs)} rung predictions)")

before = {}
if os.path.exists(os.path.join(BEFORE, "log.txt")):
    runs_b = parse_runs(os.path.join(BEFORE, "log.txt"))
    for kind in KINDS:
        for link in LINKS:
            f = os.path.join(BEFORE, f"predict-{kind}-{link}.json")
            if not os.path.exists(f):
                continue
            for r in json.load(open(f))["prediction"]["rungs"]:
                real = runs_b.get((kind, link, f"static={r['spec']}", None))
                if real and r["time"]:
                    before[(kind, link, r["spec"])] = (r["time"], real[0])

print("\n## Predicted write time against a real throttled write of the same rung\n")
print(f"Before: {BEFORE} (real seconds recomputed from its log the same way).\n")
print("| data | link | rung | predicted s | real s (static run) | error | before: predicted s, real s, error |")
print("|---|---|---|---|---|---|---|")
write_errs = collections.defaultdict(list)
for kind in KINDS:
    for link in LINKS:
        p = json.load(open(f"predict-{kind}-{link}.json"))["prediction"]
        for r in p["rungs"]:
            real = runs.get((kind, link, f"static={r['spec']}", None))
            if real:
                e = r["time"] / real[0] - 1
                write_errs[link].append(abs(e))
                b = before.get((kind, link, r["spec"]))
                bc = f"{b[0]:.3f}, {b[1]:.3f}, {(b[0] / b[1] - 1) * 100:+.1f} %" if b else "-"
                print(f"| {kind} | {link} | {r['spec']} | {r['time']:.3f} | {real[0]:.3f} | "
                      f"{e * 100:+.1f} % | {bc} |")
for link in LINKS:
    if write_errs[link]:
        e = write_errs[link]
        print(f"\n{link}: {sum(x <= 0.07 for x in e)} of {len(e)} within 7 %, max |error| {max(e) * 100:.1f} %", end="")
print()

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
