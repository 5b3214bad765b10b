import csv, statistics, sys
from collections import defaultdict
rows=list(csv.DictReader(open(sys.argv[1])))
g=defaultdict(list)
for r in rows:
    if not r['write_mbs']: continue
    g[(r['dataset'],r['link'],r['binary'],r['config'])].append((float(r['write_mbs']),float(r['ratio'])))
keys=sorted({(d,l) for d,l,_,_ in g}, key=lambda x:(x[0],int(x[1])))
print("| dataset | link MB/s | best static (median MB/s) | S1 head: median (range), ratio | S1 new: median (range), ratio | S1 head / best | S1 new / best | S2 head time/target | S2 new time/target |")
print("|---|---|---|---|---|---|---|---|---|")
for d,l in keys:
    st={c:statistics.median(v[0] for v in g[(d,l,'head',c)]) for (dd,ll,b,c) in g if dd==d and ll==l and c.startswith('static')}
    best=max(st,key=st.get)
    def s(b,c):
        v=g[(d,l,b,c)]; m=statistics.median(x[0] for x in v)
        return m, min(x[0] for x in v), max(x[0] for x in v), statistics.median(x[1] for x in v)
    h=s('head','throughput'); n=s('new','throughput')
    s2h=[float(l)/x[0] for x in g[(d,l,'head','keep-pace')]]; s2n=[float(l)/x[0] for x in g[(d,l,'new','keep-pace')]]
    print(f"| {d} | {l} | {best[7:]} {st[best]:.0f} | {h[0]:.0f} ({h[1]:.0f}-{h[2]:.0f}), {h[3]:.3f} | {n[0]:.0f} ({n[1]:.0f}-{n[2]:.0f}), {n[3]:.3f} | {h[0]/st[best]:.2f} | {n[0]/st[best]:.2f} | {statistics.median(s2h):.2f} ({min(s2h):.2f}-{max(s2h):.2f}) | {statistics.median(s2n):.2f} ({min(s2n):.2f}-{max(s2n):.2f}) |")
