# usage: python3 cli-none.py FILE LINK ROUNDS STRATEGY  (from the repository root)
import re, statistics, subprocess, sys
F = sys.argv[1]; link = sys.argv[2]; rounds = int(sys.argv[3]); s = sys.argv[4]
cfgs = [(b, ["-s", s, "--buffers", b]) for b in ("6", "10")]
res = {k: [] for k, _ in cfgs}
for i in range(rounds):
    for k, a in (cfgs if i % 2 == 0 else cfgs[::-1]):
        p = subprocess.run(["target/release/adz", "compress", "-f", "--link", link, "--throttle", link, "-T", "2", *a, F, "-"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
        res[k].append(float(re.search(r"([0-9.]+) MB/s", p.stderr).group(1)))
for k, v in res.items():
    print(s, "buffers", k, "%.0f MB/s" % statistics.median(v), sorted(round(x) for x in v))
