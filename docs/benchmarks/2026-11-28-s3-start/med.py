"""Medians over the runs of several run.sh folders: seconds, ratio, and S1 given's median / each."""
import csv, statistics as st, collections, sys
d = collections.defaultdict(list)
for f in sys.argv[1:]:
    for r in csv.DictReader(open(f + "/results.csv")):
        d[(r["input"], r["tool"])].append((float(r["seconds"]), float(r["ratio"])))
med = {k: st.median(x for x, _ in v) for k, v in d.items()}
print("| input | tool | runs | median s | median ratio | given / this | all runs (s) |")
print("|---|---|---|---|---|---|---|")
for (inp, t) in sorted(d):
    v = d[(inp, t)]
    g = med[(inp, "s1-given")]
    print("| %s | %s | %d | %.3f | %.2f | %.3f | %s |" % (inp, t, len(v), med[(inp, t)],
          st.median(y for _, y in v), g / med[(inp, t)], " ".join("%.2f" % x for x, _ in v)))
