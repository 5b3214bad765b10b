"""Medians of throttle.sh's csv. Usage: throttle-summary.py throttle.csv"""
import csv, statistics as st, collections, sys
d = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    d[(r["input"], r["build"])].append((float(r["seconds"]), int(r["raw"]) / int(r["stored"])))
print("| input | build | median s | runs (s) | median ratio |\n|---|---|---|---|---|")
for k, v in sorted(d.items()):
    print("| %s | %s | %.3f | %s | %.2f |" % (*k, st.median(x for x, _ in v),
          " ".join("%.2f" % x for x, _ in v), st.median(y for _, y in v)))
