"""adz: adaptive compression on the storage I/O path, from Python.

    import adz, numpy as np

    field = np.random.default_rng(0).normal(size=(1024, 1024))
    with adz.open("field.adz", "wb", strategy="keep-pace", link="1GbE",
                  hints=["dtype=f64"]) as f:
        f.write(field)                  # returns once buffered
        fut = f.write_async(field)      # returns at once, no copy
        ...                             # compute; do not change `field` meanwhile
        fut.wait()                      # `field` may change again
    print(f.summary["ratio"])

    with adz.open("field.adz", "rb") as f:
        back = np.frombuffer(f.read(), dtype=np.float64)

Writers are `io.RawIOBase` objects: `shutil.copyfileobj`, `numpy.save` and `tarfile`
work on them (not `ndarray.tofile`, which needs a file descriptor). Nothing appears under the
path until `close()` succeeds; a writer left by an exception in a `with` block, or
garbage-collected unclosed, commits nothing.

Readers are seekable: `seek`, `tell`, `read`, `readinto` and `pread(offset, n)` decode only
the frames a range overlaps, checking every checksum; a damaged frame raises `CorruptData`
and never returns wrong bytes. A file whose writer died (no trailer) raises `CorruptData` at
open; `adz recover BROKEN OUT` salvages its complete frames.

Paths are local paths, file:// URLs and, when built with the cargo feature `s3` ("s3" in
`adz.features`), s3://bucket/key objects configured from AWS_ENDPOINT_URL, AWS_REGION,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_ALLOW_HTTP.

Many writers, one dataset: processes (`multiprocessing`, MPI ranks, nodes sharing only the
store) each write a part, and one commit joins them into a versioned dataset read as one file:

    # in each worker process
    with adz.open_part("ckpt", id=f"r{rank}", offset=rank * len(rows)) as f:
        f.write(rows)
    # in the parent, after every worker has finished
    adz.commit("ckpt", ids=[f"r{r}" for r in range(n)])
    with adz.open_dataset("ckpt") as f:
        f.pread(offset, 4096)          # opens only the part(s) the range touches

Storage tiers (docs/TIERS.md): datasets spread over tiers, fastest first, each part of the
data on the tier where the write finishes first, compressed to match that tier's speed:

    t = adz.open_tiers("tiers.toml")   # profile=None: the machine profile if there is one
    t.write("step0", field)            # buffer, path or file object -> summary per tier
    t.read("step0", offset, length)    # reads only the segments the range touches
    t.status(); t.flush(); t.evict("shm"); t.gc()

Errors: `adz.Error` is the base of `CorruptData`, `StorageError` (and its `NotFound`),
`ConfigError`, `WriteFailed`, and for datasets `CommitConflict` and `MissingPart`.
"""

import io
import os
import warnings

from . import _adz
from ._adz import (
    CommitConflict,
    ConfigError,
    CorruptData,
    Error,
    MissingPart,
    NotFound,
    StorageError,
    WriteFailed,
    compress,
    decompress,
)

__version__ = _adz.__version__

# The standalone HDF5 filter plugin shipped in the package (adz/plugins/libadz_hdf5.so): its
# directory goes on HDF5_PLUGIN_PATH, after any the user set, so that an HDF5 initialised
# after this import (netCDF4-python, a netCDF-C library) finds filter 429 by itself.
_PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")
if os.path.isfile(os.path.join(_PLUGINS, "libadz_hdf5.so")):
    _paths = [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(os.pathsep) if p]
    if _PLUGINS not in _paths:
        os.environ["HDF5_PLUGIN_PATH"] = os.pathsep.join(_paths + [_PLUGINS])
    del _paths

#: The optional features this build has: "s3" when it was built with the cargo feature `s3`
#: (`maturin develop --features s3`), so that paths may be s3://bucket/key.
features = tuple(_adz.features)

__all__ = [
    "open",
    "Writer",
    "Reader",
    "WriteFuture",
    "compress",
    "decompress",
    "Error",
    "CorruptData",
    "StorageError",
    "NotFound",
    "ConfigError",
    "WriteFailed",
    "CommitConflict",
    "MissingPart",
    "open_part",
    "commit",
    "open_dataset",
    "open_tiers",
    "Tiers",
    "features",
]

WriteFuture = _adz.WriteFuture


def open(path, mode="rb", *, strategy="throughput", link="auto", threads=None,
         block_size=None, buffers=None, hints=(), cache_bytes=None, max_range_bytes=None):
    """Open an adz file.

    mode "wb": a `Writer` through the adaptive pipeline. strategy: "throughput" (S1, the
    fastest write), "keep-pace" (S2), "prolong=F" (S3), "archive", "static=zstd:3", ...;
    link: "auto" (measured) or a speed ("1GbE", "10GbE", "500MB/s"); threads: compression
    threads (None: one per core); block_size: raw bytes per block (default 1 MiB);
    hints: strings such as "dtype=f64", "write-once", "no-compress@0..1M".

    mode "rb": a seekable `Reader` (random access: seek, pread); threads: decoding threads
    of one large read (None: one per core); cache_bytes: decoded frames kept (default 64 MiB);
    max_range_bytes: the largest single `read`/`pread` (default 1 GiB; a larger one raises
    ConfigError before allocating: read in pieces, or use readinto with your own buffer).
    """
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if mode in ("wb", "w", "xb", "x"):
        if mode.startswith("x") and os.path.exists(path):
            raise FileExistsError(path)
        if isinstance(hints, str):
            hints = [hints]
        return Writer(path, strategy=strategy, link=link, threads=threads,
                      block_size=block_size, buffers=buffers, hints=list(hints))
    if mode in ("rb", "r"):
        return Reader(path, threads=threads, cache_bytes=cache_bytes,
                      max_range_bytes=max_range_bytes)
    raise ValueError(f"invalid mode {mode!r}: use 'rb' or 'wb' (adz files are binary)")


def _text_path(path):
    path = os.fspath(path)
    return os.fsdecode(path) if isinstance(path, bytes) else path


def open_part(dataset, id, offset=None, *, strategy="throughput", link="auto", threads=None,
              block_size=None, buffers=None, hints=()):
    """Open writer `id`'s part of the dataset `dataset` (a path or s3://bucket/key): a `Writer`
    whose `close()` finishes the part. `id`: 1-64 ASCII letters, digits, "_" and "-", unique
    among the dataset's writers ("r3" for rank 3). `offset`: the part's first byte in the
    dataset (a rank's displacement), or None to append it at commit, after the placed parts,
    in id order. Other options as for `open(..., "wb")`. The part is in the dataset only after
    `commit`. Safe to call from many processes at once (`multiprocessing`, MPI ranks)."""
    if isinstance(hints, str):
        hints = [hints]
    raw = _adz.open_part_writer(_text_path(dataset), id, offset, strategy=strategy, link=link,
                                threads=threads, block_size=block_size, buffers=buffers,
                                hints=list(hints))
    return Writer(None, _raw=raw, _name=raw.path)


def commit(dataset, ids=None, base=None):
    """Commit the dataset: its next version lists the parts, and readers see it whole, at
    once. Call it once every writer has closed its part. With `ids` (a list of writer ids),
    exactly those writers' parts, and a writer with no finished part raises `MissingPart`;
    without, every part found. `base`: commit only if the latest version is `base` (0: none
    yet), else `CommitConflict`; a commit that lost a race raises it too. On an error nothing
    was committed. Returns a dict: version, len, parts (name, offset, len, stored), gaps."""
    if ids is not None:
        ids = [str(i) for i in ids]
    return _adz.commit_dataset(_text_path(dataset), ids=ids, base=base)


def open_dataset(dataset, *, threads=None, cache_bytes=None, max_range_bytes=None):
    """Open the latest committed version of a dataset as a seekable `Reader` over all of its
    bytes (read, seek, pread); a read opens only the parts its range touches. `NotFound` if
    nothing is committed."""
    dataset = _text_path(dataset)
    raw = _adz.open_dataset_reader(dataset, threads=threads, cache_bytes=cache_bytes,
                                   max_range_bytes=max_range_bytes)
    return Reader(None, _raw=raw, _name=dataset)


def open_tiers(config, *, profile=None, threads=None):
    """Open the storage tiers configured in the TOML file `config` (docs/TIERS.md): a `Tiers`.

    profile: where placement's costs come from: None, the machine profile (`adz profile`) at
    its default path if it exists, else the built-in tables (as the CLI does; a default
    profile that does not load is left out with a warning); False, the built-in tables; a
    path, that profile (one that does not load raises ConfigError). threads: the threads that
    encode a segment (None: one per core). A missing file raises NotFound; a bad one,
    ConfigError naming the key or tier."""
    if profile is False:
        path, no_profile = None, True
    elif profile is None:
        path, no_profile = None, False
    else:
        path, no_profile = _text_path(profile), False
    raw = _adz.open_tiers(_text_path(config), profile=path, no_profile=no_profile,
                          threads=threads)
    if raw.warning:
        warnings.warn(raw.warning, RuntimeWarning, stacklevel=2)
    return Tiers(raw, _text_path(config))


class Tiers:
    """Datasets on a hierarchy of storage tiers (`adz.open_tiers`). Writes, reads and flushes
    release the GIL. One process at a time writes or flushes a set of tiers; in a process,
    calls that change the tiers (write, flush, evict, gc) run one at a time, and reads may
    run alongside them."""

    def __init__(self, raw, config):
        self._t = raw
        self.config = config

    @property
    def names(self):
        """The tiers' names, fastest first."""
        return self._t.names

    @property
    def costs_source(self):
        """Where placement's costs come from: a profile or the built-in table."""
        return self._t.costs_source

    def write(self, name, data):
        """Write dataset `name` from `data`: a bytes-like object (bytes, bytearray,
        memoryview, numpy array), a path (str or os.PathLike) or a binary file object. Each
        part goes to the tier where the write finishes first, within the free capacities; an
        older dataset of that name is replaced only once the new one is committed, and on an
        error nothing changes. Returns a dict: raw_bytes, stored_bytes, tiers (stored bytes
        per tier, fastest first), segments, spilled, predicted, seconds, predicted_seconds,
        placement_seconds. Raises WriteFailed if the data does not fit on the tiers."""
        if isinstance(data, (str, os.PathLike)):
            return self._t.write_file(name, _text_path(data))
        if hasattr(data, "read") and not isinstance(data, (bytes, bytearray, memoryview)):
            return self._t.write_stream(name, data)
        return self._t.write(name, data)

    def read(self, name, offset=0, length=None):
        """`length` raw bytes of dataset `name` at `offset` (None: to the end), as bytes;
        only the segments the range touches are read, each from the fastest tier holding
        it. NotFound for no such dataset; ConfigError for a range past the end."""
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must not be negative")
        return self._t.read(name, offset, length)

    def open(self, name, *, max_range_bytes=None):
        """Dataset `name` as a seekable `Reader` (read, seek, pread)."""
        raw = self._t.open_reader(name, max_range_bytes=max_range_bytes)
        return Reader(None, _raw=raw, _name=name)

    def datasets(self):
        """The datasets on the tiers: a list of dicts (name, raw_bytes, segments)."""
        return self._t.datasets()

    def status(self):
        """Each tier's state, fastest first: a list of dicts with tier (its name), capacity
        (None: unlimited), used (bytes on it), bandwidth (bytes/s), segments, raw and stored
        (bytes of those segments)."""
        return self._t.status()

    def flush(self):
        """Move segments down as the configuration's [flush] policy says (tiers fuller than
        `high`, segments older than `max_age`). Returns a dict: moved, copied, recompressed,
        bytes_in, bytes_out. A copy is removed only once the one below is committed."""
        return self._t.flush()

    def evict(self, tier):
        """Move every segment off tier `tier` to the tiers below; returns a report as
        `flush` does. ConfigError for an unknown tier or the last one."""
        return self._t.evict(tier)

    def gc(self):
        """Remove the segment objects and temporaries a crash left behind; returns the bytes
        freed."""
        return self._t.gc()

    def __repr__(self):
        return f"<adz.Tiers config={self.config!r} tiers={self.names!r}>"


class Writer(io.RawIOBase):
    """A binary file object that compresses what is written to it into an adz file."""

    def __init__(self, path, _raw=None, _name=None, **options):
        super().__init__()
        self._w = _raw if _raw is not None else _adz.open_writer(path, **options)
        self.name = _name if _name is not None else path
        self.summary = None

    def writable(self):
        return True

    def write(self, b):
        """Write a bytes-like object (numpy arrays included); returns once it is buffered."""
        self._check_open()
        return self._w.write(b)

    def write_async(self, b):
        """Write without a copy; returns a WriteFuture at once. Do not change `b` until
        `future.wait()` returns (or `future.done()` is true)."""
        self._check_open()
        return self._w.write_async(b)

    def advise(self, start, end, hint):
        """Hint for raw bytes start..end not yet written: "no-compress", "write-once",
        "hot", "dtype=f64", ..."""
        self._check_open()
        self._w.advise(start, end, hint)

    def tell(self):
        self._check_open()
        return self._w.tell()

    def seekable(self):
        return False

    def seek(self, offset, whence=io.SEEK_SET):
        raise io.UnsupportedOperation("adz writers are sequential: seek is not supported")

    def flush(self):
        # Written data is already in the pipeline; it is durable once close() commits.
        self._check_open()

    def close(self):
        """Finish and commit the file; returns the summary dict (also in `.summary`)."""
        if not self.closed:
            try:
                self.summary = self._w.close()
            finally:
                super().close()
        return self.summary

    def abort(self):
        """Abandon the write: nothing is committed."""
        if not self.closed:
            self._w.abort()
            super().close()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        else:
            self.close()
        return False

    def __del__(self):
        w = getattr(self, "_w", None)
        if w is not None and not w.closed:
            warnings.warn(f"adz writer for {self.name!r} was never closed: nothing was "
                          "committed", ResourceWarning, stacklevel=2)
            w.abort()
        try:
            super().close()
        except Exception:
            pass

    def _check_open(self):
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def __repr__(self):
        return f"<adz.Writer name={self.name!r} closed={self.closed}>"


class Reader(io.RawIOBase):
    """A seekable binary file object over an adz file. Reads decode only the frames they
    overlap, check every checksum and run with the GIL released; a damaged frame raises
    `CorruptData` and never returns wrong bytes."""

    def __init__(self, path, threads=None, cache_bytes=None, max_range_bytes=None, _raw=None,
                 _name=None):
        super().__init__()
        if _raw is None:
            _raw = _adz.open_reader(path, threads=threads, cache_bytes=cache_bytes,
                                    max_range_bytes=max_range_bytes)
        self._r = _raw
        self.name = _name if _name is not None else path

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        self._check_open()
        return self._r.readinto(b)

    def read(self, size=-1):
        self._check_open()
        if size is None:
            size = -1
        return self._r.read(size)

    def readall(self):
        return self.read(-1)

    def pread(self, offset, length):
        """Up to `length` raw bytes at `offset` (fewer only at the end), without moving the
        position; threads may call it at once on one reader."""
        self._check_open()
        if offset < 0 or length < 0:
            raise ValueError("offset and length must not be negative")
        return self._r.pread(offset, length)

    def seek(self, offset, whence=io.SEEK_SET):
        self._check_open()
        return self._r.seek(offset, whence)

    def tell(self):
        self._check_open()
        return self._r.tell()

    @property
    def size(self):
        """Raw (decompressed) size in bytes."""
        self._check_open()
        return self._r.size()

    def stats(self):
        """Frames and bytes decoded, cache hits, storage requests and bytes fetched."""
        self._check_open()
        return self._r.stats()

    def close(self):
        if not self.closed:
            self._r.close()
            super().close()

    def _check_open(self):
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def __repr__(self):
        return f"<adz.Reader name={self.name!r} closed={self.closed}>"
