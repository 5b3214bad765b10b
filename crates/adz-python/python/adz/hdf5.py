"""adz as an HDF5 filter for h5py, h5netcdf and xarray: every chunk one adz frame.

    import adz.hdf5, h5py, numpy as np

    with h5py.File("out.h5", "w") as f:
        f.create_dataset("field", data=np.zeros((1024, 1024)), chunks=(256, 1024),
                         **adz.hdf5.Adz(strategy="throughput", link="1GbE"))
        f.create_dataset("static", data=np.arange(10**6), chunks=(65536,),
                         **adz.hdf5.Adz(codec="zstd:3"))

Importing this module registers the filter (id `FILTER_ID`, 429) with h5py's HDF5; reading
a file written with it needs the same import. The filter shuffles the bytes of integer and
float elements by element size on its own (the dataset's type is recorded when it is
created). A damaged chunk raises an OSError on read; the others still read.

HDF5 compresses one chunk at a time, on the thread that writes. In adaptive mode one
controller per process (and strategy, link and filters) picks each chunk's codec, learning
from the time the filter spends on the chunks before it; the link rate is the one given (there is no
storage back-pressure to measure from inside HDF5). The filter compresses a chunk and then
HDF5 writes it, so the controller minimises compression plus write time per chunk (the serial
objective). `write_chunks(dset, data, threads=...)` compresses chunks on several threads and
writes them with H5Dwrite_chunk instead, the same chunks the filter would write.

xarray: `ds.to_netcdf(path, engine="h5netcdf", encoding={"v": {**adz.hdf5.Adz(...),
"chunksizes": (...)}})`.

The package also ships the standalone plugin (`plugin_path()`, the directory holding
libadz_hdf5.so), and `import adz` appends that directory to HDF5_PLUGIN_PATH, so that an HDF5
initialised afterwards in this process (netCDF4-python's) finds the filter itself; other
programs (netCDF-C tools, h5py without this import) need `HDF5_PLUGIN_PATH=$(python -c
"import adz.hdf5; print(adz.hdf5.plugin_path())")`.
"""

import concurrent.futures
import itertools
import os

import h5py
import numpy as np

from . import _adz

#: The HDF5 filter id (in HDF5's range 256-511 for unregistered, testing filters).
FILTER_ID = _adz.HDF5_FILTER_ID

__all__ = ["FILTER_ID", "Adz", "describe_chunk", "controller_status", "register", "plugin_path",
           "write_chunks"]


def plugin_path():
    """The directory of the standalone filter plugin (libadz_hdf5.so) for HDF5_PLUGIN_PATH.

    Raises FileNotFoundError if this build of the package has no plugin (it is copied in
    before maturin runs: scripts/python-test.sh, docs/BINDINGS.md "HDF5")."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")
    if not os.path.isfile(os.path.join(d, "libadz_hdf5.so")):
        raise FileNotFoundError(f"no HDF5 filter plugin in {d}: this adz was built without it")
    return d


def register():
    """Register the filter with h5py's HDF5 (done on import; safe to call again)."""
    # h5py loads its libhdf5 privately: the filter finds HDF5's functions through the
    # dependencies of h5py's h5z module, as hdf5plugin does.
    _adz.hdf5_init(h5py.h5z.__file__)
    h5py.h5z.register_filter(_adz.hdf5_plugin_info())


def Adz(strategy=None, link="1GbE", codec=None, filters="auto"):
    """The `create_dataset` keyword arguments (`compression`, `compression_opts`) for adz.

    codec: a static codec and level ("zstd:3", "lz4:1", "xz:6", ...), or strategy: an
    adaptive one, "throughput" (S1, the fastest write), "keep-pace" (S2), "prolong=F" (S3),
    "archive"; link: the storage link's rate ("1GbE", "10GbE", "500MB/s"); filters: "auto"
    (shuffle integers and floats by element size), "none", "shuffle", "xor" or "bitshuffle"
    (bit planes by element size, as hdf5plugin's Bitshuffle; for LZ4 on floats).
    Neither codec nor strategy: static zstd:3.
    """
    if codec is not None and strategy is not None:
        raise ValueError("give codec (static) or strategy (adaptive), not both")
    if codec is not None:
        strategy = f"static={codec}"
    elif strategy is None:
        strategy = "static=zstd:3"
    opts = _adz.hdf5_cd_values(strategy, link, filters)
    return {"compression": FILTER_ID, "compression_opts": tuple(opts)}


def describe_chunk(chunk):
    """What the frames of one stored chunk (`dataset.id.read_direct_chunk(...)[1]`) hold,
    such as ["zstd:3 shuffle:4"]; raises adz.CorruptData for a damaged chunk."""
    return _adz.hdf5_describe_chunk(bytes(chunk))


def controller_status():
    """The adaptive controllers of this process: a list of dicts with "controller" (which one:
    "strategy@link filters", the link in bytes/s, e.g. "throughput@117000000 auto"; datasets
    with the same strategy, link and filters share one), "status" (strategy, rung, speed, ...)
    and "chunks" (how many chunk frames it has decided)."""
    return [{"controller": k, "status": s, "chunks": n}
            for k, s, n in _adz.hdf5_controller_status()]


def write_chunks(dset, data, threads=None, batch=None):
    """Write `data` (the dataset's whole shape) into `dset`, compressing its chunks on
    `threads` threads (default: the CPUs) while this thread writes the chunks compressed
    before them with H5Dwrite_chunk (`dset.id.write_direct_chunk`).

    HDF5 calls a filter one chunk at a time on the writing thread; this bypasses that, and
    writes exactly what the filter would (the same frames, read back through the normal
    filter path). `dset` must be chunked with adz as its only filter. Edge chunks are padded
    with the dataset's fill value, as HDF5 stores them. Adaptive chunks are decided by the
    process's controller for that many workers, as a pipeline (compression and writes
    overlap). `batch` chunks (default 4 per thread) are compressed at a time; two batches are
    in memory at once.
    """
    dcpl = dset.id.get_create_plist()
    filters = [dcpl.get_filter(i) for i in range(dcpl.get_nfilters())]
    if dset.chunks is None or [f[0] for f in filters] != [FILTER_ID]:
        raise ValueError("write_chunks needs a chunked dataset whose only filter is adz "
                         f"(filters: {[f[0] for f in filters]}, chunks: {dset.chunks})")
    cd = list(filters[0][2])
    data = np.asarray(data, dtype=dset.dtype)
    if data.shape != dset.shape:
        raise ValueError(f"data of shape {data.shape} for a dataset of shape {dset.shape}")
    threads = max(1, int(threads or os.cpu_count() or 1))
    batch = max(1, int(batch or 4 * threads))
    chunks = dset.chunks
    fill = dset.fillvalue

    def chunk_bytes(offset):
        sel = tuple(slice(o, min(o + c, n)) for o, c, n in zip(offset, chunks, dset.shape))
        block = data[sel]
        if block.shape != chunks:
            full = np.full(chunks, fill, dtype=dset.dtype)
            full[tuple(slice(0, s) for s in block.shape)] = block
            block = full
        return np.ascontiguousarray(block)

    grid = itertools.product(*(range(0, n, c) for n, c in zip(dset.shape, chunks)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        while True:
            offsets = list(itertools.islice(grid, batch))
            # The next batch compresses (the GIL released) while this thread writes the last.
            job = (offsets, pool.submit(_adz.hdf5_encode_chunks, cd,
                                        [chunk_bytes(o) for o in offsets], threads)) \
                if offsets else None
            if pending is not None:
                for offset, stored in zip(pending[0], pending[1].result()):
                    dset.id.write_direct_chunk(offset, stored, filter_mask=0)
            if job is None:
                break
            pending = job


register()
