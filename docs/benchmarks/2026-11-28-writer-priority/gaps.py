import json,sys
for f in sys.argv[1:]:
    rows=[json.loads(l) for l in open(f)]
    prev=None; gaps=[]
    for r in rows:
        t=r['t_s']; busy=r['sink_s']
        if prev is not None and r['backlogged']:
            gaps.append(max(0,t-busy-prev))
        prev=t
    gaps.sort()
    tot=rows[-1]['t_s']-rows[0]['t_s']
    print(f, 'backlogged writes', len(gaps), 'gap sum %.1f ms'%(sum(gaps)*1000), 'of %.0f ms'%(tot*1000), 'p50 %.2f p90 %.2f max %.2f ms'%(gaps[len(gaps)//2]*1000, gaps[int(len(gaps)*.9)]*1000, gaps[-1]*1000), '>1ms:', sum(1 for g in gaps if g>1e-3))
