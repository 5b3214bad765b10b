#!/usr/bin/env python3
"""S1 through a throttled link with two adz binaries, alternating round by round (a shared
VM drifts), and static none (raw) beside them. Prints the median MB/s over ROUNDS runs, the
ratio of the medians and the rounds NEW won.

  A=adz-before B=adz-after G=.cache/datasets ROUNDS=5 python3 ab.py > ab.txt
"""
import os, re, statistics, subprocess

A, B = os.environ["A"], os.environ["B"]
G = os.environ.get("G", ".cache/datasets")
ROUNDS = int(os.environ.get("ROUNDS", "5"))
DATA = {
    "matrix": f"{G}/gen/matrix-268435456-1.bin",
    "climate": f"{G}/gen/climate-268435456-1.bin",
    "incompressible": f"{G}/linux-source-6.1.tar.xz",
    "text": f"{G}/gen/text-268435456-1.bin",
    "mixed": f"{G}/gen/mixed-268435456-1.bin",
}


def mbs(binary, strategy, link, path):
    p = subprocess.run([binary, "compress", "-f", "-s", strategy, "--link", link, "--throttle",
                        link, "-T", "2", path, "-"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, check=True)
    return float(re.search(r"([0-9.]+) MB/s", p.stderr).group(1))


print(f"{'data':15} {'link':8} {'raw':>7} {'S1 A':>7} {'S1 B':>7} {'B/A':>5} {'B won':>6} {'A/raw':>6} {'B/raw':>6}")
for name, path in DATA.items():
    for link in ("1200MB/s", "6000MB/s"):
        a, b, raw = [], [], []
        for i in range(ROUNDS):
            order = [(A, a), (B, b)] if i % 2 == 0 else [(B, b), (A, a)]
            for binary, into in order:
                into.append(mbs(binary, "throughput", link, path))
            raw.append(mbs(B, "static=none", link, path))
        ma, mb, mr = (statistics.median(x) for x in (a, b, raw))
        wins = sum(y > x for x, y in zip(a, b))
        print(f"{name:15} {link:8} {mr:7.0f} {ma:7.0f} {mb:7.0f} {mb / ma:5.2f} {wins:3}/{ROUNDS} {ma / mr:6.2f} {mb / mr:6.2f}", flush=True)
