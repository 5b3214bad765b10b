"""Tables of predicted against real ratio and write time, before and after (run.sh)."""
import json
import sys
from pathlib import Path

here = Path(sys.argv[1])
print("| data | link | sample before | sample after | rung | ratio error before | after | time error before | after |")
print("|---|---|---|---|---|---|---|---|---|")
for kind in ["text", "doubles", "mixed"]:
    for link in ["1GbE", "10GbE"]:
        runs = {}
        for who in ["before", "after"]:
            runs[who] = json.loads((here / who / f"predict-{kind}-{link}.json").read_text())
        def sample(d):
            p = d["prediction"]
            return f"{p['slices']} slices, {p['sampled_bytes'] // 1000} kB"
        checks = {who: {c["spec"]: c for c in runs[who]["check"]} for who in runs}
        specs = [s for s in checks["before"] if s in checks["after"]]
        for i, spec in enumerate(specs):
            b, a = checks["before"][spec], checks["after"][spec]
            pct = lambda x: "-" if x is None else f"{100 * x:+.1f} %"
            first = (kind, link, sample(runs["before"]), sample(runs["after"])) if i == 0 else ("", "", "", "")
            print(f"| {' | '.join(first)} | {spec} | {pct(b['ratio_error'])} | {pct(a['ratio_error'])} | {pct(b['time_error'])} | {pct(a['time_error'])} |")
