"""Issue 22 item 5 from an `adz-bench ab` CSV whose builds are the static rungs and the
strategies (see README.md): per file and link, S2's and S3's time over their targets (raw's
time, 1.5 x raw's), their ratio over that of the best static rung finishing within the target
(+5 %), and whether S1 <= S2 <= S3 in ratio. Usage: python3 strategies.py AB.csv"""

import csv
import statistics
import sys
from collections import defaultdict

STATIC = ["none", "lz4", "z1", "z3", "z6", "z9"]
F = 1.5
TOL = 1.05

rows = list(csv.DictReader(open(sys.argv[1])))
t, r = defaultdict(list), defaultdict(list)
for row in rows:
    k = (row["dataset"], float(row["link_mbs"]), row["build"])
    t[k].append(float(row["seconds"]))
    r[k].append(float(row["ratio"]))
med = {k: (statistics.median(v), statistics.median(r[k])) for k, v in t.items()}
cells = sorted({(d, l) for d, l, _ in med})

print("| file | link MB/s | raw s | S2 / raw | S3 / (1.5 raw) | S2 ratio / best static <= raw | "
      "S3 ratio / best static <= 1.5 raw | ratio S1 / S2 / S3 | S1 <= S2 <= S3 |")
print("|---|---|---|---|---|---|---|---|---|")
out = defaultdict(list)
for d, l in cells:
    g = lambda b: med.get((d, l, b))
    raw = g("none")[0]
    s1, s2, s3 = g("s1"), g("s2"), g("s3")

    def best(limit):
        ok = [(g(b)[1], b) for b in STATIC if g(b) and g(b)[0] <= limit * TOL]
        return max(ok) if ok else (1.0, "none")

    b2, b3 = best(raw), best(F * raw)
    order = s1[1] <= s2[1] * 1.01 and s2[1] <= s3[1] * 1.01
    row = (s2[0] / raw, s3[0] / (F * raw), s2[1] / b2[0], s3[1] / b3[0])
    for k, v in zip(["s2t", "s3t", "s2r", "s3r"], row):
        out[(k, l)].append(v)
    out[("order", l)].append(order)
    print(f"| {d} | {l:.0f} | {raw:.3f} | {row[0]:.3f} | {row[1]:.3f} | {row[2]:.3f} ({b2[1]} {b2[0]:.2f}) | "
          f"{row[3]:.3f} ({b3[1]} {b3[0]:.2f}) | {s1[1]:.2f} / {s2[1]:.2f} / {s3[1]:.2f} | "
          f"{'yes' if order else '**no**'} |")
print()
for l in sorted({l for _, l in cells}):
    def rng(k):
        v = out[(k, l)]
        return f"{min(v):.3f}-{max(v):.3f}"
    inside = lambda k: sum(abs(x - 1) <= 0.05 for x in out[(k, l)])
    n = len(out[("s2t", l)])
    print(f"- {l:.0f} MB/s: S2 / raw {rng('s2t')} ({inside('s2t')} of {n} within 1.00 +- 0.05), "
          f"S3 / target {rng('s3t')} ({inside('s3t')} of {n}); ratio over the best static rung "
          f"within the target: S2 {rng('s2r')}, S3 {rng('s3r')}; S1 <= S2 <= S3 in "
          f"{sum(out[('order', l)])} of {n} (1 % tolerance)")
