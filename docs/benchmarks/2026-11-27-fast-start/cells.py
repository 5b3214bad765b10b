#!/usr/bin/env python3
"""S1 and static none of one or more (dataset, link) cells through adz-bench, two builds
alternating round by round. Prints per build the median S1 MB/s, median none MB/s and the
median of the per-round S1/none fraction (each adz-bench run measures none and S1 back to
back, so the fraction is steadier than either speed on a contended VM).

  A=adz-bench-before B=adz-bench-after ROUNDS=9 CELLS="text:6000 matrix:1200" python3 cells.py
"""
import csv, os, statistics, subprocess, tempfile
A, B = os.environ["A"], os.environ["B"]
ROUNDS = int(os.environ.get("ROUNDS", "5"))
CELLS = [c.split(":") for c in os.environ.get("CELLS", "text:6000").split()]
SIZE = os.environ.get("SIZE", "268435456")
STRAT = os.environ.get("STRAT", "s1")

def run(binary, ds, link):
    out = tempfile.mkdtemp(prefix="abcell-")
    subprocess.run([binary, "run", "--cache", ".cache", "--size", SIZE, "--datasets", ds, "--links", link,
                    "--workloads", "sync", "--static", "none", "--adaptive", STRAT, "--no-external", "-T", "2",
                    "--out", out, "--fresh"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = {r["config"]: float(r["write_mbs"]) for r in csv.DictReader(open(f"{out}/results.csv"))}
    subprocess.run(["rm", "-rf", out])
    return rows["none"], rows[STRAT]

print(f"{'cell':16} {'none A':>7} {'S1 A':>7} {'A/none':>7} {'none B':>7} {'S1 B':>7} {'B/none':>7} {'B/A':>5}")
for ds, link in CELLS:
    res = {A: [], B: []}
    for i in range(ROUNDS):
        for binary in ([A, B] if i % 2 == 0 else [B, A]):
            res[binary].append(run(binary, ds, link))
    med = lambda xs: statistics.median(xs)
    fa = med([s / n for n, s in res[A]]); fb = med([s / n for n, s in res[B]])
    sa = med([s for n, s in res[A]]); sb = med([s for n, s in res[B]])
    print(f"{ds+':'+link:16} {med([n for n, s in res[A]]):7.0f} {sa:7.0f} {fa:7.2f} {med([n for n, s in res[B]]):7.0f} {sb:7.0f} {fb:7.2f} {sb/sa:5.2f}", flush=True)
