"""The lz4-speed rows of bench.py, interleaved: adz lz4:1 and S1 1GbE against Blosc2
lz4:5+shuffle and Bitshuffle+LZ4 (and no filter), on the real netCDF-4 data and the VPIC-like
data, written locally and through the 117 MB/s throttle. Every round writes each filter once
in turn, so load that comes and goes hits them alike; the tables give medians over the
rounds. Usage: python bench_lz4.py REAL_HDF5 OUTDIR [ROUNDS]"""

import os
import statistics
import sys

import h5py
import hdf5plugin

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import adz.hdf5  # noqa: E402


def filters():
    yield "none", {}
    yield "adz lz4:1", adz.hdf5.Adz(codec="lz4:1")
    yield "adz S1 1GbE", adz.hdf5.Adz(strategy="throughput", link="1GbE")
    yield "hdf5plugin Blosc2 lz4:5+shuffle", dict(hdf5plugin.Blosc2(
        cname="lz4", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE))
    yield "hdf5plugin Bitshuffle+LZ4", dict(hdf5plugin.Bitshuffle(cname="lz4"))


def main():
    real, out = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    print(f"# {bench.THREADS} CPUs, load {os.getloadavg()[0]:.1f}, h5py {h5py.__version__}, "
          f"HDF5 {h5py.version.hdf5_version}, hdf5plugin {hdf5plugin.version}, {rounds} rounds")
    data = {"real": (bench.real_datasets(real), bench.chunks_for),
            "VPIC": (bench.vpic_datasets(), bench.vpic_chunks)}
    names = [n for n, _ in filters()]
    times = {}  # (data, filter, "local"/"117") -> [s]
    ratio = {}
    path = os.path.join(out, "bench-lz4.h5")
    for r in range(rounds):
        for dname, (arrays, chunking) in data.items():
            raw = sum(a.nbytes for a in arrays.values())
            for fname, kw in filters():
                t = bench.write(path, arrays, chunking, kw, None)
                _, stored = bench.read(path, arrays)
                if r == 0:
                    bench.check(path, arrays)
                ratio[dname, fname] = raw / stored
                times.setdefault((dname, fname, "local"), []).append(t)
                t = bench.write(path, arrays, chunking, kw, None, rate=117e6)
                times.setdefault((dname, fname, "117"), []).append(t)
                os.remove(path)
        print(f"round {r + 1} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    print("\n| filter | real ratio | real local s | real 117 MB/s s | VPIC ratio | VPIC local s "
          "| VPIC 117 MB/s s |")
    print("|---|---|---|---|---|---|---|")
    med = lambda d, f, m: statistics.median(times[d, f, m])  # noqa: E731
    for f in names:
        print(f"| {f} | {ratio['real', f]:.3f} | {med('real', f, 'local'):.3f} | "
              f"{med('real', f, '117'):.3f} | {ratio['VPIC', f]:.3f} | "
              f"{med('VPIC', f, 'local'):.3f} | {med('VPIC', f, '117'):.3f} |")
    print("\nEvery round's times (local; 117 MB/s):\n")
    for (d, f, m), v in sorted(times.items()):
        print(f"- {d}, {f}, {m}: " + ", ".join(f"{x:.3f}" for x in v))
    print()
    for c in adz.hdf5.controller_status():
        print(f"- {c['status']} ({c['chunks']} chunks)")
    print(f"\nload at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
