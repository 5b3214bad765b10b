#!/usr/bin/env python3
"""Per-block costs of a file at several static rungs, from `adz compress -c RUNG --trace`, as
the table the trace-driven simulator reads (crates/adz-control/tests/real_traces.rs).

Usage: scripts/traces-to-sim.py OUT.tsv TRACE.jsonl...   (one trace per rung, same input)

Each line after the header is one block: its class, then per rung the CPU speed of one thread
(raw bytes/s) and the ratio (1 where the block was stored raw).
"""
import json
import sys


def blocks(path):
    rows = (json.loads(line) for line in open(path))
    return sorted((r for r in rows if "seq" in r), key=lambda r: r["seq"])


def main():
    out, traces = sys.argv[1], sys.argv[2:]
    cols = []
    for t in traces:
        rung = t.rsplit(".", 2)[-2]  # NAME.RUNG.jsonl
        cols.append((rung, blocks(t)))
    n = min(len(bs) for _, bs in cols)
    with open(out, "w") as f:
        f.write("class\t" + "\t".join(r for r, _ in cols) + "\n")
        for j in range(n):
            base = cols[0][1][j]
            if base["raw"] < (1 << 20):
                continue  # a short last block: the simulator's blocks are all nominal
            cells = [str(base["class"])]
            for _, bs in cols:
                b = bs[j]
                cpu = b["cpu_s"] if b["cpu_s"] > 0 else b["wall_s"]
                speed = b["raw"] / max(cpu, 1e-7)
                ratio = 1.0 if b["stored_raw"] else b["raw"] / b["stored"]
                cells += [f"{speed:.4g}", f"{ratio:.5g}"]
            f.write("\t".join(cells) + "\n")


if __name__ == "__main__":
    main()
