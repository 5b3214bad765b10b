#!/usr/bin/env python3
"""ab.sh's CSV -> a markdown table: per (dataset, link), the best static configuration's median
write speed, and each binary's S1 as median (range) MB/s, median ratio, and median / best static."""
import csv, statistics, sys
from collections import defaultdict
speed, ratio = defaultdict(list), defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if not r['write_mbs']:
        continue
    k = (r['dataset'], int(r['link']), r['binary'] + ':' + r['config'])
    speed[k].append(float(r['write_mbs']))
    ratio[k].append(float(r['ratio']))
bins = sorted({k[2].split(':')[0] for k in speed if k[2].endswith(':throughput')},
              key=lambda b: (b != 'head', b))
print('| dataset | link MB/s | rounds | best static: median MB/s | '
      + ' | '.join(f'S1 {b}: median (range), ratio, / best' for b in bins) + ' |')
print('|---|---|---|---|' + '---|' * len(bins))
for c in sorted({k[:2] for k in speed}):
    st = {k[2]: statistics.median(v) for k, v in speed.items() if k[:2] == c and 'static' in k[2]}
    best = max(st, key=st.get)
    cells = []
    for b in bins:
        v, q = speed.get(c + (b + ':throughput',)), ratio.get(c + (b + ':throughput',))
        cells.append(f'{statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f}), {statistics.median(q):.3f}, '
                     f'**{statistics.median(v) / st[best]:.2f}**' if v else '-')
    n = len(speed[c + (best,)])
    print(f"| {c[0]} | {c[1]} | {n} | {best.split('=')[1]} {st[best]:.0f} | " + ' | '.join(cells) + ' |')
