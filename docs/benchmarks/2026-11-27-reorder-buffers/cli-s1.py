# usage: python3 cli-s1.py FILE LINK ROUNDS  (from the repository root; adz at target/release/adz)
import os, re, statistics, subprocess, sys
F = sys.argv[1]; link = sys.argv[2]; rounds = int(sys.argv[3])
cfgs = [("none", ["-s", "static=none"]), ("s1 b6", ["-s", "throughput"]), ("s1 b10", ["-s", "throughput", "--buffers", "10"]), ("s1 b16", ["-s", "throughput", "--buffers", "16"])]
res = {k: [] for k, _ in cfgs}
for i in range(rounds):
    for k, a in (cfgs if i % 2 == 0 else cfgs[::-1]):
        p = subprocess.run(["target/release/adz", "compress", "-f", "--link", link, "--throttle", link, "-T", "2", *a, F, "-"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
        m = re.search(r"ratio ([0-9.]+).*?([0-9.]+) MB/s", p.stderr)
        res[k].append((float(m.group(2)), float(m.group(1))))
for k, v in res.items():
    print(k, "%.0f MB/s" % statistics.median(x for x, _ in v), "ratio %.2f" % statistics.median(r for _, r in v), "rel %.2f" % (statistics.median(x for x, _ in v) / statistics.median(x for x, _ in res["none"])))
