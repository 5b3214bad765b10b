#!/usr/bin/env python3
"""Per S1 trace (adz compress --trace): total time, the first 32 blocks' time, the speed of the
rest, the first block's time, and the configurations of the first 12 blocks."""
import json, sys
print('| trace | total s | first block at s | first 32 blocks s | rest MB/s | blocks 0-11 |')
print('|---|---|---|---|---|---|')
for f in sys.argv[1:]:
    rows = [json.loads(l) for l in open(f)]
    t, t32 = rows[-1]['t_s'], rows[31]['t_s']
    rest = sum(r['raw'] for r in rows[32:]) / (t - t32) / 1e6
    first = ' '.join('raw' if r['stored_raw'] else r['config'] for r in rows[:12])
    print(f"| {f.split('/')[-1]} | {t:.3f} | {rows[0]['t_s']:.4f} | {t32:.3f} | {rest:.0f} | {first} |")
