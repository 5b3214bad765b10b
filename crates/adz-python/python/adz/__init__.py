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

Errors: `adz.Error` is the base of `CorruptData`, `StorageError` (and its `NotFound`),
`ConfigError` and `WriteFailed`.
"""

import io
import os
import warnings

from . import _adz
from ._adz import (
    ConfigError,
    CorruptData,
    Error,
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


class Writer(io.RawIOBase):
    """A binary file object that compresses what is written to it into an adz file."""

    def __init__(self, path, **options):
        super().__init__()
        self._w = _adz.open_writer(path, **options)
        self.name = path
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

    def __init__(self, path, threads=None, cache_bytes=None, max_range_bytes=None):
        super().__init__()
        self._r = _adz.open_reader(path, threads=threads, cache_bytes=cache_bytes,
                                   max_range_bytes=max_range_bytes)
        self.name = path

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
