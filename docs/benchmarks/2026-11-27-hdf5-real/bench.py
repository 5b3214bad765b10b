"""adz's HDF5 filter against hdf5plugin's on real netCDF-4/HDF5 data and on a VPIC-like
writer, through h5py. Usage: python bench.py REAL_HDF5 OUTDIR [REPEATS]

REAL_HDF5 is the real corpus' `real-hdf5.nc` (`adz-bench datasets --real`): 16 netCDF-4
files back to back. Every numeric dataset of at least 64 KiB with data stored in them (not
netCDF's dimensions without values) is read (decompressed where the file deflates it) and
rewritten with each filter, chunked along its first axis
into chunks of about 1 MiB. The VPIC-like data is the earlier benchmark's
(docs/benchmarks/2026-11-27-hdf5/bench.py).

Per filter and data: the median write time (create, write, close) and read time (open, read
every dataset) over REPEATS runs, to OUTDIR (tmpfs or the page cache), and the ratio (raw
bytes / stored chunk bytes). The "modelled" link columns are computed: HDF5's filter
compresses a chunk and then writes it on the same thread, so a write through the link takes
the local write time plus stored / L; `write_chunks` writes while the next chunks compress,
so it takes the longer of the local write time and stored / L. The "throttled" tables are
measured: h5py writes through a Python file object (HDF5's file-object driver) whose every
write blocks until its bytes would have crossed a 117 MB/s link (`Throttled`). BENCH_ONLY=
local or throttled runs one part.
"""

import importlib.util
import io
import os
import re
import statistics
import sys
import tempfile
import time

import h5py
import hdf5plugin
import numpy as np

import adz.hdf5

LINKS = {"1GbE": 117e6, "10GbE": 1170e6}
HERE = os.path.dirname(os.path.abspath(__file__))
THREADS = os.cpu_count()


def real_datasets(path):
    """The numeric datasets (>= 64 KiB, with data stored) of the concatenated netCDF-4 files
    at `path`."""
    data = open(path, "rb").read()
    sig = re.escape(b"\x89HDF\r\n\x1a\n")
    offs = [m.start() for m in re.finditer(sig, data)] + [len(data)]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k, (a, b) in enumerate(zip(offs, offs[1:])):
            part = os.path.join(tmp, f"{k}.nc")
            with open(part, "wb") as f:
                f.write(data[a:b])
            with h5py.File(part) as f:
                def take(name, obj, k=k):
                    # Not the netCDF dimensions without values (nothing stored: fill).
                    if (isinstance(obj, h5py.Dataset) and obj.dtype.kind in "iuf"
                            and obj.nbytes >= 65536 and obj.id.get_storage_size() > 0):
                        out[f"f{k}/{name}"] = obj[...]
                f.visititems(take)
    return out


def chunks_for(a, target=1 << 20):
    """About `target` bytes per chunk, along the first axis (and the second if one row is
    larger)."""
    shape = list(a.shape)
    row = a.itemsize * int(np.prod(shape[1:], dtype=np.int64))
    shape[0] = max(1, min(shape[0], target // max(row, 1)))
    if len(shape) > 1 and row > target:
        rest = row // shape[1]
        shape[1] = max(1, min(shape[1], target // max(rest, 1)))
    return tuple(shape)


def vpic_datasets():
    spec = importlib.util.spec_from_file_location(
        "hdf5bench", os.path.join(HERE, "..", "2026-11-27-hdf5", "bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fields, particles = mod.vpic_like()
    out = {f"fields/{k}": v for k, v in fields.items()}
    out.update({f"particles/{k}": v for k, v in particles.items()})
    return out


def vpic_chunks(a):
    return (16, 128, 128) if a.ndim == 3 else (262144,)


def filters():
    """(name, create_dataset keywords, write_chunks threads or None)."""
    yield "none", {}, None
    yield "adz lz4:1", adz.hdf5.Adz(codec="lz4:1"), None
    yield "adz zstd:1", adz.hdf5.Adz(codec="zstd:1"), None
    yield "adz zstd:3", adz.hdf5.Adz(codec="zstd:3"), None
    yield "adz S1 1GbE", adz.hdf5.Adz(strategy="throughput", link="1GbE"), None
    yield "adz S1 10GbE", adz.hdf5.Adz(strategy="throughput", link="10GbE"), None
    yield f"adz lz4:1, write_chunks x{THREADS}", adz.hdf5.Adz(codec="lz4:1"), THREADS
    yield f"adz zstd:1, write_chunks x{THREADS}", adz.hdf5.Adz(codec="zstd:1"), THREADS
    yield f"adz S1 1GbE, write_chunks x{THREADS}", \
        adz.hdf5.Adz(strategy="throughput", link="1GbE"), THREADS
    yield "hdf5plugin Zstd(1)", dict(hdf5plugin.Zstd(clevel=1)), None
    yield "hdf5plugin Zstd(3)", dict(hdf5plugin.Zstd(clevel=3)), None
    yield "hdf5plugin Blosc2 zstd:3+shuffle", dict(hdf5plugin.Blosc2(
        cname="zstd", clevel=3, filters=hdf5plugin.Blosc2.SHUFFLE)), None
    yield "hdf5plugin Blosc2 lz4:5+shuffle", dict(hdf5plugin.Blosc2(
        cname="lz4", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)), None
    yield "hdf5plugin LZ4", dict(hdf5plugin.LZ4()), None
    yield "hdf5plugin Bitshuffle+LZ4", dict(hdf5plugin.Bitshuffle(cname="lz4")), None


class Throttled(io.RawIOBase):
    """A file whose writes block until their bytes would have crossed a link of `rate`
    bytes/s, one after the other (a synchronous network file system): h5py writes through it
    with HDF5's file-object driver. Reads and seeks are free."""

    def __init__(self, path, rate):
        self.f = open(path, "w+b")
        self.rate = rate
        self.free = time.perf_counter()

    def write(self, b):
        n = self.f.write(b)
        now = time.perf_counter()
        self.free = max(self.free, now) + n / self.rate
        time.sleep(max(0.0, self.free - now))
        return n

    def readinto(self, b):
        return self.f.readinto(b)

    def seek(self, pos, whence=0):
        return self.f.seek(pos, whence)

    def tell(self):
        return self.f.tell()

    def truncate(self, size=None):
        return self.f.truncate(size)

    def readable(self):
        return True

    def writable(self):
        return True

    def seekable(self):
        return True

    def flush(self):
        if not self.f.closed:
            self.f.flush()

    def close(self):
        super().close()
        self.f.close()


def write(path, arrays, chunking, kw, threads, rate=None):
    t = time.perf_counter()
    target = Throttled(path, rate) if rate else path
    with h5py.File(target, "w") as f:
        for name, a in arrays.items():
            if threads is None:
                f.create_dataset(name, data=a, chunks=chunking(a), **kw)
            else:
                d = f.create_dataset(name, shape=a.shape, dtype=a.dtype, chunks=chunking(a),
                                     **kw)
                adz.hdf5.write_chunks(d, a, threads=threads)
    if rate:
        target.close()
    return time.perf_counter() - t


def read(path, arrays):
    t = time.perf_counter()
    stored = 0
    with h5py.File(path) as f:
        for name in arrays:
            d = f[name]
            d[...]
            stored += d.id.get_storage_size()
    return time.perf_counter() - t, stored


def check(path, arrays):
    with h5py.File(path) as f:
        for name, a in arrays.items():
            np.testing.assert_array_equal(f[name][...], a)


def bench_throttled(label, arrays, chunking, out, repeats, rate):
    """Write times through a Throttled file at `rate`, median of `repeats`."""
    print(f"\n## {label}, written through a link throttled to {rate / 1e6:.0f} MB/s\n")
    print("| filter | write s (throttled) |")
    print("|---|---|")
    for name, kw, threads in filters():
        path = os.path.join(out, "bench.h5")
        w = [write(path, arrays, chunking, kw, threads, rate) for _ in range(repeats)]
        check(path, arrays)
        print(f"| {name} | {statistics.median(w):.3f} |", flush=True)
        os.remove(path)


def bench(label, arrays, chunking, out, repeats):
    raw = sum(a.nbytes for a in arrays.values())
    print(f"\n## {label}: {len(arrays)} datasets, {raw / 2**20:.1f} MiB raw\n")
    print("| filter | ratio | write s | read s | write MB/s | 1GbE s (modelled) "
          "| 10GbE s (modelled) |")
    print("|---|---|---|---|---|---|---|")
    for name, kw, threads in filters():
        path = os.path.join(out, "bench.h5")
        w, r = [], []
        for _ in range(repeats):
            w.append(write(path, arrays, chunking, kw, threads))
            t, stored = read(path, arrays)
            r.append(t)
        check(path, arrays)
        wm, rm = statistics.median(w), statistics.median(r)
        if threads is None:
            link = {k: wm + stored / v for k, v in LINKS.items()}
        else:
            link = {k: max(wm, stored / v) for k, v in LINKS.items()}
        print(f"| {name} | {raw / stored:.3f} | {wm:.3f} | {rm:.3f} | {raw / wm / 1e6:.0f} | "
              f"{link['1GbE']:.3f} | {link['10GbE']:.3f} |", flush=True)
        os.remove(path)


def main():
    real, out = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    print(f"# {THREADS} CPUs, load {os.getloadavg()[0]:.1f}, h5py {h5py.__version__}, "
          f"HDF5 {h5py.version.hdf5_version}, hdf5plugin {hdf5plugin.version}")
    only = os.environ.get("BENCH_ONLY", "local,throttled")
    real_arrays, vpic = real_datasets(real), vpic_datasets()
    if "local" in only:
        bench("real netCDF-4 (real-hdf5.nc)", real_arrays, chunks_for, out, repeats)
        bench("VPIC-like", vpic, vpic_chunks, out, repeats)
    if "throttled" in only:
        for rate in (117e6,):
            bench_throttled("real netCDF-4", real_arrays, chunks_for, out, repeats, rate)
            bench_throttled("VPIC-like", vpic, vpic_chunks, out, repeats, rate)
    print()
    for c in adz.hdf5.controller_status():
        print(f"- {c['status']} ({c['chunks']} chunks)")
    print(f"\nload at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
