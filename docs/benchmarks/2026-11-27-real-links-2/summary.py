"""summary.md of run.sh: medians over rounds, S1 auto against the others, and the link estimate
of the S1 auto runs' traces after 64 MiB written. Usage: summary.py OUT"""
import csv, glob, json, os, statistics, sys
from collections import defaultdict

out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
TRUE = {"tcp": 125e6, "s3": 125e6, "throttle": 125e6, "pv": 117 * 1048576}
cells = defaultdict(list)
for r in rows:
    cells[(r["sink"], r["input"], r["tool"])].append(r)
med = {k: statistics.median(float(r["seconds"]) for r in v) for k, v in cells.items()}
ratio = {k: statistics.median(float(r["ratio"]) for r in v if r["ratio"]) for k, v in cells.items()
         if any(r["ratio"] for r in v)}
print("# Real links 2: medians over %d rounds\n" % max(int(r["round"]) for r in rows))
print("| sink | input | tool | seconds (median) | all runs | ratio | adz's link (round 1) |")
print("|---|---|---|---|---|---|---|")
for k in sorted(cells):
    v = cells[k]
    runs = " ".join("%.2f" % float(r["seconds"]) for r in v)
    print("| %s | %s | %s | %.3f | %s | %s | %s |" % (*k, med[k], runs,
          "%.3f" % ratio[k] if k in ratio else "", v[0]["adz_link"]))
print("\nS1 auto's speed against the others (the other's median time / S1 auto's; targets: "
      ">= 0.97, >= 0.97, >= 1.03 at 1gbit)\n")
print("| sink | input | S1 auto build | S1 with the true --link | the best static rung | zstd -T2 --adapt |")
print("|---|---|---|---|---|---|")
autos = sorted({k[2] for k in cells if k[2].startswith("s1-auto")})
for (sink, inp) in sorted({k[:2] for k in cells}):
  for auto in autos:
    g = lambda t: med.get((sink, inp, t))
    statics = {k[2]: s for k, s in med.items() if k[:2] == (sink, inp) and k[2].startswith("static:")}
    best = min(statics, key=statics.get) if statics else None
    a, gv, z = g(auto), g("s1-given"), g("zstd-adapt")
    print("| %s | %s | %s | %s | %s | %s |" % (sink, inp, auto,
          "%.3f" % (gv / a) if a and gv else "",
          "%.3f (%s)" % (statics[best] / a, best[7:]) if a and best else "",
          "%.3f" % (z / a) if a and z else ""))

print("\nThe link in use of S1 auto (trace `link_mbs`) against the true rate: after 64 MiB of "
      "output (the largest deviation from then on) and at the end; `-`: the output is shorter\n")
print("| sink | input | tool | round | true MB/s | worst after 64 MiB | at the end |")
print("|---|---|---|---|---|---|---|")
traces = []
for path in glob.glob(os.path.join(out, "logs", "*-s1-auto*.trace")):
    name, tool = os.path.basename(path)[: -len(".trace")].rsplit("-s1-auto", 1)
    rnd, sink, inp = name.split("-", 2)
    traces.append((sink, inp, "s1-auto" + tool.replace("_", "@", 1), int(rnd), path))
for sink, inp, tool, rnd, path in sorted(traces):
    true = TRUE[sink]
    written, worst, last = 0, None, None
    for line in open(path):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if "stored" not in rec:
            continue
        written += rec["stored"]
        link = rec.get("link_mbs")
        if link is None:
            continue
        last = link * 1e6 / true - 1
        if written >= 64 << 20:
            worst = last if worst is None or abs(last) > abs(worst) else worst
    f = lambda x: "%+.1f %%" % (100 * x) if x is not None else "-"
    print("| %s | %s | %s | %d | %.1f | %s | %s |" % (sink, inp, tool, rnd, true / 1e6, f(worst), f(last)))
