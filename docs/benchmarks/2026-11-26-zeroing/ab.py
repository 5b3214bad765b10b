#!/usr/bin/env python3
"""A/B of two adz binaries, rounds alternating (ABAB...), so that a drift in the machine's
speed (a shared VM) falls on both alike. For each case: median wall and CPU seconds of each,
the ratio of the medians, and in how many rounds B was faster than A.

  OLD=... NEW=... DATA=/dev/shm/p ROUNDS=15 python3 ab.py > ab.txt
"""
import os, statistics, subprocess, time

OLD, NEW = os.environ["OLD"], os.environ["NEW"]
DATA = os.environ.get("DATA", "/dev/shm/p")
ROUNDS = int(os.environ.get("ROUNDS", "15"))
CASES = ["none random", "none text", "lz4:1 sparse", "lz4:1 random", "lz4:1 text",
         "lz4:25 text", "zstd:1 doubles", "zstd:1 text"]


def run(binary, rung, data):
    cmd = [binary, "compress", "-q", "-f", "-s", f"static={rung}", "-T", "2",
           f"{DATA}/{data}.bin", "-"]
    with open(os.devnull, "wb") as null:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=null)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
    assert status == 0, cmd
    return wall, ru.ru_utime + ru.ru_stime


print("case            old wall  new wall  new/old  new faster  old cpu  new cpu  new/old")
for case in CASES:
    rung, data = case.split()
    run(OLD, rung, data), run(NEW, rung, data)  # warm-up
    a, b = [], []
    for i in range(ROUNDS):
        pair = [(OLD, a), (NEW, b)] if i % 2 == 0 else [(NEW, b), (OLD, a)]
        for binary, into in pair:
            into.append(run(binary, rung, data))
    med = lambda xs, k: statistics.median(x[k] for x in xs)
    wins = sum(1 for x, y in zip(a, b) if y[0] < x[0])
    print(f"{case:15} {med(a,0):8.3f}  {med(b,0):8.3f}  {med(b,0)/med(a,0):7.2f}  "
          f"{wins:4}/{ROUNDS:<5}  {med(a,1):7.3f}  {med(b,1):7.3f}  {med(b,1)/med(a,1):7.2f}",
          flush=True)
