import json
def load(p):
    rows = [json.loads(l) for l in open(p)]
    return {x["seq"]: x for x in rows}
for c in ["lz4:1", "zstd:1", "zstd:3"]:
    for r in [1, 2, 3]:
        cold, warm = load(f"/dev/shm/cf-{c}-{r}-cold.jsonl"), load(f"/dev/shm/cf-{c}-{r}-warm.jsonl")
        ks = range(8)
        extra = [(cold[k]["wall_s"] - warm[k]["wall_s"]) * 1e3 for k in ks]
        ratio = [cold[k]["wall_s"] / warm[k]["wall_s"] for k in ks]
        cpu = [(cold[k]["cpu_s"] - warm[k]["cpu_s"]) * 1e3 for k in ks]
        print(f"{c:7} r{r} warm ms " + " ".join(f"{warm[k]['wall_s']*1e3:4.1f}" for k in ks)
              + " | cold-warm ms " + " ".join(f"{e:5.1f}" for e in extra)
              + " | cpu diff ms " + " ".join(f"{e:5.1f}" for e in cpu)
              + " | x " + " ".join(f"{q:4.1f}" for q in ratio))
