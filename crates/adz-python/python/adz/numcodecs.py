"""`Adz`, a numcodecs codec: zarr and xarray store chunks as small adz files, each block with
the codec and level adz chose for it (recorded in the block, so decoding needs no settings).

    import adz.numcodecs, zarr
    z = zarr.create_array(store, shape=(1000, 1000), chunks=(100, 1000), dtype="f8",
                          compressors=adz.numcodecs.Adz(), zarr_format=2)

Importing this module registers the codec under the id "adz" (and the package declares the
numcodecs entry point, so `numcodecs.get_codec({"id": "adz"})` finds it without the import).
zarr arrays of format 3 take zarr v3 codecs instead: `adz.zarr.Adz` wraps this one.
"""

from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy
from numcodecs.registry import register_codec

from . import _adz

class Adz(Codec):
    """Compress chunks with adz.

    strategy: "static=zstd:3" (the default, like `adz compress`), "archive", or an adaptive
    one with a link ("keep-pace" with link="1GbE"); dtype: the element type for the shuffle
    filter ("f8", "i4", ...); None infers it from arrays of 2-, 4- or 8-byte numbers;
    block_size: raw bytes per block; threads: compression threads per chunk (1: chunks are
    usually compressed in parallel by the caller).
    """

    codec_id = "adz"

    def __init__(self, strategy="static=zstd:3", link="auto", dtype=None, block_size=1 << 20,
                 threads=1):
        self.strategy = strategy
        self.link = link
        self.dtype = dtype
        self.block_size = int(block_size)
        self.threads = int(threads)

    def _hint(self, dtype):
        """The shuffle hint for elements of the codec's dtype, else of `dtype` (the data's)."""
        import numpy as np

        dt = np.dtype(self.dtype) if self.dtype is not None else np.dtype(dtype)
        if dt.kind == "f" and dt.itemsize in (4, 8):
            return [f"dtype=f{dt.itemsize * 8}"]
        if dt.kind in "fiucmM" and dt.itemsize in (2, 4, 8):
            # The shuffle filter needs only the element size.
            return [f"dtype=u{dt.itemsize * 8}"]
        return []

    def encode(self, buf):
        arr = ensure_contiguous_ndarray(buf)
        return self.encode_as(arr, arr.dtype)

    def encode_as(self, buf, dtype):
        """Compress the bytes of `buf` (anything with the buffer protocol), taking them as
        elements of `dtype` for the shuffle filter unless the codec has its own dtype. The
        zarr v3 codec (`adz.zarr.Adz`) calls this with the array's dtype, since zarr hands it
        plain bytes."""
        return _adz.compress(buf, strategy=self.strategy, link=self.link, threads=self.threads,
                             block_size=self.block_size, hints=self._hint(dtype))

    def decode(self, buf, out=None):
        # With `out`, its size bounds the output exactly; otherwise decompress's default.
        if out is not None:
            data = _adz.decompress(ensure_contiguous_ndarray(buf),
                                   limit=ensure_contiguous_ndarray(out).nbytes)
        else:
            data = _adz.decompress(ensure_contiguous_ndarray(buf))
        return ndarray_copy(data, out)

    def __repr__(self):
        return (f"Adz(strategy={self.strategy!r}, link={self.link!r}, dtype={self.dtype!r}, "
                f"block_size={self.block_size}, threads={self.threads})")


register_codec(Adz)
