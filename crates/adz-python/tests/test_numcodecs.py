"""The numcodecs codec: numcodecs' own codec checks, and zarr arrays stored with it."""

import numpy as np
import pytest

numcodecs = pytest.importorskip("numcodecs")

import adz.numcodecs  # noqa: E402  (registers the codec)
from adz.numcodecs import Adz  # noqa: E402


def field(shape=(200, 300), dtype="f8", seed=0):
    rng = np.random.default_rng(seed)
    return (np.cumsum(rng.normal(size=shape), axis=-1) * 10).astype(dtype)


@pytest.mark.parametrize("dtype", ["f8", "f4", "i4", "u2", "i8", "u1", "f2"])
def test_encode_decode_dtypes(dtype):
    a = field(dtype=dtype)
    codec = Adz()
    enc = codec.encode(a)
    assert len(enc) < a.nbytes or dtype == "u1"
    dec = codec.decode(enc)
    np.testing.assert_array_equal(np.frombuffer(dec, dtype=dtype).reshape(a.shape), a)
    out = np.empty_like(a)
    codec.decode(enc, out=out)
    np.testing.assert_array_equal(out, a)


def test_dtype_hint_shuffles_floats():
    a = field(shape=(400, 500))
    shuffled = len(Adz().encode(a))
    plain = len(Adz(dtype="u1").encode(a))
    assert shuffled < plain


@pytest.mark.parametrize("strategy", ["static=zstd:3", "archive", "static=lz4", "throughput"])
def test_config_round_trip_and_registry(strategy):
    codec = Adz(strategy=strategy, dtype="f8", block_size=65536)
    cfg = codec.get_config()
    assert cfg["id"] == "adz"
    again = numcodecs.get_codec(cfg)
    assert isinstance(again, Adz) and again == codec
    a = field()
    assert again.decode(codec.encode(a)) == a.tobytes()


def test_numcodecs_checks():
    common = pytest.importorskip("numcodecs.tests.common")
    check_encode_decode, check_config = common.check_encode_decode, common.check_config

    arrays = [
        np.arange(1000, dtype="i4"),
        np.linspace(1000, 1001, 1000, dtype="f8"),
        np.random.default_rng(1).normal(size=(100, 10)),
        np.random.default_rng(2).integers(0, 2**16, size=1000, dtype="u2"),
        np.array([b"a", b"bb", b"ccc"] * 100, dtype="S3"),
    ]
    for a in arrays:
        check_encode_decode(a, Adz())
    check_config(Adz())
    r = "Adz(strategy='static=zstd:3', link='auto', dtype=None, block_size=1048576, threads=1)"
    assert repr(Adz()) == r


def test_corrupt_chunk_raises():
    enc = bytearray(Adz().encode(field()))
    enc[len(enc) // 2] ^= 0x10
    with pytest.raises(adz.CorruptData):
        Adz().decode(enc)


def test_zarr_array_round_trip(tmp_path):
    zarr = pytest.importorskip("zarr")
    a = field(shape=(256, 512))
    path = str(tmp_path / "z.zarr")
    z = zarr.create_array(store=path, shape=a.shape, chunks=(64, 512), dtype=a.dtype,
                          compressors=Adz(), zarr_format=2)
    z[:] = a
    back = zarr.open_array(path, mode="r")
    np.testing.assert_array_equal(back[:], a)
    np.testing.assert_array_equal(back[10:70, 100:200], a[10:70, 100:200])
    # Each chunk is an adz file.
    import os
    chunk = open(os.path.join(path, "0.0"), "rb").read()
    assert chunk[:4] == adz.compress(b"x")[:4]
    assert len(chunk) < 64 * 512 * 8
