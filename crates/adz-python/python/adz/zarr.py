"""`Adz`, a zarr v3 codec: arrays of zarr format 3 store chunks as small adz files.

    import adz.zarr, zarr
    z = zarr.create_array(store, shape=(1000, 1000), chunks=(100, 1000), dtype="f8",
                          compressors=adz.zarr.Adz(), zarr_format=3)

zarr 3 arrays of format 3 cannot take numcodecs codecs directly, so this is a
`zarr.abc.codec.BytesBytesCodec` (a "compressor") around `adz.numcodecs.Adz`, which does the
work: the same settings, the same chunk bytes. The array metadata records it as
`{"name": "adz", "configuration": {...}}`. Importing this module registers the codec under
that name, and the package declares the `zarr.codecs` entry point, so zarr opens such an
array without the import.

The element type for the shuffle filter comes from the array's dtype (zarr hands the codec
plain bytes; the chunk's spec says what they are) unless `dtype=` is given.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from zarr.abc.codec import BytesBytesCodec
from zarr.core.common import parse_named_configuration
from zarr.registry import register_codec

from . import numcodecs as _numcodecs

#: The codec's name in zarr metadata. Stable: arrays written with it keep opening.
CODEC_NAME = "adz"


def _native_dtype(chunk_spec):
    """The numpy dtype of a chunk (zarr >= 3.1 gives a ZDType, 3.0 a numpy dtype)."""
    dt = chunk_spec.dtype
    to_native = getattr(dt, "to_native_dtype", None)
    return np.dtype(to_native() if to_native is not None else dt)


@dataclass(frozen=True)
class Adz(BytesBytesCodec):
    """Compress zarr v3 chunks with adz (see `adz.numcodecs.Adz` for the settings).

    strategy: "static=zstd:3" (the default, like `adz compress`), "archive", or an adaptive
    one with a link ("keep-pace" with link="1GbE"); dtype: the element type for the shuffle
    filter ("f8", "i4", ...), None for the array's; block_size: raw bytes per block;
    threads: compression threads per chunk.
    """

    is_fixed_size = False

    strategy: str = "static=zstd:3"
    link: str = "auto"
    dtype: str | None = None
    block_size: int = 1 << 20
    threads: int = 1

    def __init__(self, *, strategy="static=zstd:3", link="auto", dtype=None,
                 block_size=1 << 20, threads=1):
        # Build the numcodecs codec once here so that bad settings fail at construction.
        if dtype is not None:
            np.dtype(dtype)  # fails on a name numpy does not know
            dtype = str(dtype)
        core = _numcodecs.Adz(strategy=str(strategy), link=str(link), dtype=dtype,
                              block_size=block_size, threads=threads)
        object.__setattr__(self, "strategy", core.strategy)
        object.__setattr__(self, "link", core.link)
        object.__setattr__(self, "dtype", core.dtype)
        object.__setattr__(self, "block_size", core.block_size)
        object.__setattr__(self, "threads", core.threads)

    @classmethod
    def from_dict(cls, data):
        _, configuration = parse_named_configuration(data, CODEC_NAME,
                                                     require_configuration=False)
        return cls(**(configuration or {}))

    def to_dict(self):
        configuration = {
            "strategy": self.strategy,
            "link": self.link,
            "block_size": self.block_size,
            "threads": self.threads,
        }
        if self.dtype is not None:
            configuration["dtype"] = self.dtype
        return {"name": CODEC_NAME, "configuration": configuration}

    @cached_property
    def _core(self):
        return _numcodecs.Adz(strategy=self.strategy, link=self.link, dtype=self.dtype,
                              block_size=self.block_size, threads=self.threads)

    def _encode_sync(self, chunk_bytes, chunk_spec):
        data = self._core.encode_as(chunk_bytes.as_numpy_array(), _native_dtype(chunk_spec))
        return chunk_spec.prototype.buffer.from_bytes(data)

    def _decode_sync(self, chunk_bytes, chunk_spec):
        data = self._core.decode(chunk_bytes.as_numpy_array())
        return chunk_spec.prototype.buffer.from_bytes(data)

    async def _encode_single(self, chunk_bytes, chunk_spec):
        return await asyncio.to_thread(self._encode_sync, chunk_bytes, chunk_spec)

    async def _decode_single(self, chunk_bytes, chunk_spec):
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    def compute_encoded_size(self, _input_byte_length, _chunk_spec):
        raise NotImplementedError


register_codec(CODEC_NAME, Adz)
