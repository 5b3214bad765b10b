"""Write and read a VPIC-like HDF5 file (fields and particles) through adz's filter and
hdf5plugin's, timing each with h5py. Usage: python bench.py OUTDIR [REPEATS]

Per filter: the median write time (create, write, close) and read time (open, read every
dataset) over REPEATS runs, and the ratio (raw bytes / stored chunk bytes). The time through
a link is modelled, not measured: HDF5 compresses and writes a chunk in the same thread, one
after the other, so a write to a link of L bytes/s takes about the local write time plus
stored bytes / L (the local file is on tmpfs or the page cache).
"""

import os
import statistics
import sys
import time

import h5py
import hdf5plugin
import numpy as np

import adz.hdf5

LINKS = {"1GbE": 117e6, "10GbE": 1170e6}


def vpic_like(seed=0):
    """Fields on a 3-D grid (smooth waves plus a little noise) and particles (positions in
    cells, Maxwellian momenta, ids in blocks), as float32/int64 like VPIC's dumps."""
    rng = np.random.default_rng(seed)
    nx, ny, nz = 64, 128, 128
    x, y, z = np.meshgrid(*(np.linspace(0, 2 * np.pi, n, dtype=np.float32) for n in (nx, ny, nz)),
                          indexing="ij")
    fields = {}
    for k, name in enumerate(["ex", "ey", "ez", "bx", "by", "bz"]):
        f = np.sin(x * (k + 1)) * np.cos(y * 2) + 0.5 * np.sin(z + k)
        fields[name] = (f + rng.normal(scale=1e-3, size=f.shape)).astype(np.float32)
    n = 2_000_000
    cell = np.sort(rng.integers(0, nx * ny * nz, size=n))
    particles = {
        "x": (cell % nx + rng.random(n)).astype(np.float32),
        "y": ((cell // nx) % ny + rng.random(n)).astype(np.float32),
        "ux": rng.normal(scale=0.1, size=n).astype(np.float32),
        "uy": rng.normal(scale=0.1, size=n).astype(np.float32),
        "id": (np.arange(n, dtype=np.int64) // 4) * 4 + np.arange(n) % 4,
    }
    return fields, particles


def filters():
    yield "none", {}
    yield "adz zstd:1", adz.hdf5.Adz(codec="zstd:1")
    yield "adz zstd:3", adz.hdf5.Adz(codec="zstd:3")
    yield "adz lz4:1", adz.hdf5.Adz(codec="lz4:1")
    yield "adz S1 1GbE", adz.hdf5.Adz(strategy="throughput", link="1GbE")
    yield "adz S1 10GbE", adz.hdf5.Adz(strategy="throughput", link="10GbE")
    yield "hdf5plugin Zstd(3)", dict(hdf5plugin.Zstd(clevel=3))
    yield "hdf5plugin Blosc2 zstd:3+shuffle", dict(hdf5plugin.Blosc2(
        cname="zstd", clevel=3, filters=hdf5plugin.Blosc2.SHUFFLE))
    yield "hdf5plugin LZ4", dict(hdf5plugin.LZ4())
    yield "hdf5plugin Bitshuffle+LZ4", dict(hdf5plugin.Bitshuffle(cname="lz4"))


def write(path, fields, particles, kw):
    t = time.perf_counter()
    with h5py.File(path, "w") as f:
        for name, a in fields.items():
            f.create_dataset(f"fields/{name}", data=a, chunks=(16, 128, 128), **kw)
        for name, a in particles.items():
            f.create_dataset(f"particles/{name}", data=a, chunks=(262144,), **kw)
    return time.perf_counter() - t


def read(path):
    t = time.perf_counter()
    stored = 0
    with h5py.File(path) as f:
        for g in ("fields", "particles"):
            for d in f[g].values():
                d[...]
                stored += d.id.get_storage_size()
    return time.perf_counter() - t, stored


def main():
    out = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    fields, particles = vpic_like()
    raw = sum(a.nbytes for a in [*fields.values(), *particles.values()])
    print(f"# {raw / 2**20:.0f} MiB raw, {os.cpu_count()} CPUs, h5py {h5py.__version__}, "
          f"HDF5 {h5py.version.hdf5_version}, hdf5plugin {hdf5plugin.version}")
    print("| filter | ratio | write s | read s | write MB/s | modelled 1GbE s | modelled 10GbE s |")
    print("|---|---|---|---|---|---|---|")
    for name, kw in filters():
        path = os.path.join(out, "bench.h5")
        w, r = [], []
        for _ in range(repeats):
            w.append(write(path, fields, particles, kw))
            t, stored = read(path)
            r.append(t)
        wm, rm = statistics.median(w), statistics.median(r)
        link = {k: wm + stored / v for k, v in LINKS.items()}
        print(f"| {name} | {raw / stored:.3f} | {wm:.3f} | {rm:.3f} | {raw / wm / 1e6:.0f} | "
              f"{link['1GbE']:.3f} | {link['10GbE']:.3f} |", flush=True)
        os.remove(path)
    print()
    print("adaptive controllers:", adz.hdf5.controller_status())


if __name__ == "__main__":
    main()
