import csv, os, sys, statistics, collections, math
ROOT = os.environ.get('ROOT', '/dev/shm')
# compare.py A-RUNS B-RUNS (comma-separated folders under $ROOT, default /dev/shm): S1 median time per cell per build, b/a ratio (time), and ratio
def load(name):
    out = collections.defaultdict(dict)
    for r in csv.DictReader(open(f"{ROOT}/{name}/results.csv")):
        if r['kind'] in ('static','raw') or r['config']=='s1':
            out[(r['workload'], float(r['link_mbs']), r['dataset'])][r['config']] = (float(r['seconds']), float(r['ratio']))
    return out
A = [load(n) for n in sys.argv[1].split(',')]
B = [load(n) for n in sys.argv[2].split(',')]
print("| workload | link | dataset | base S1 s (ratio) | new S1 s (ratio) | new/base speed | best static (median over all runs) | base / best | new / best |")
print("|---|---|---|---|---|---|---|---|---|")
g = collections.defaultdict(list)
for k in sorted(A[0]):
    med = lambda runs, c, i: statistics.median(r[k][c][i] for r in runs)
    a, b = med(A,'s1',0), med(B,'s1',0)
    statics = [c for c in A[0][k] if c != 's1']
    best = min((med(A+B, c, 0), c) for c in statics)
    g[(k[0],'speed')].append(a/b); g[(k[0],'a')].append(best[0]/a); g[(k[0],'b')].append(best[0]/b)
    print(f"| {k[0]} | {int(k[1])} | {k[2]} | {a:.3f} ({med(A,'s1',1):.2f}) | {b:.3f} ({med(B,'s1',1):.2f}) | {a/b:.3f} | {best[1]} {best[0]:.3f} | {best[0]/a:.3f} | {best[0]/b:.3f} |")
gm = lambda v: math.exp(sum(map(math.log, v))/len(v))
for w in sorted({k[0] for k in A[0]}):
    print(f"\n{w}: new/base speed {gm(g[(w,'speed')]):.3f}; S1/best static base {gm(g[(w,'a')]):.3f}, new {gm(g[(w,'b')]):.3f}")
