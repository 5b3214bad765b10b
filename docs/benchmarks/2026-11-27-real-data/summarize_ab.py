import csv,statistics,sys
from collections import defaultdict
d=defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])): d[(r['dataset'],r['link'],r['config'])].append(float(r['seconds']))
m={k:statistics.median(v) for k,v in d.items()}
a_name,b_name=sys.argv[2],sys.argv[3]
print(f"| dataset | link | {a_name} s | {b_name} s | {b_name} speed / {a_name} |")
print("|---|---|---|---|---|")
for link in sorted({k[1] for k in m}, key=lambda l: float(l[:-4])):
    rows=[]
    for ds in sorted({k[0] for k in m}):
        a=m[(ds,link,a_name)]; b=m[(ds,link,b_name)]
        rows.append(a/b); print(f"| {ds} | {link} | {a:.3f} | {b:.3f} | {a/b:.2f} |")
    print(f"| **geometric mean** | {link} | | | **{statistics.geometric_mean(rows):.3f}** |")
