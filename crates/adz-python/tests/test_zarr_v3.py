"""The zarr v3 codec (`adz.zarr.Adz`): zarr_format=3 arrays written with it read back equal,
and its configuration survives the array metadata (a fresh open, and a fresh process that
finds the codec through the `zarr.codecs` entry point without importing adz)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

import adz  # noqa: E402
import adz.zarr  # noqa: E402  (registers the codec)
from adz.zarr import Adz  # noqa: E402


def field(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (np.cumsum(rng.normal(size=shape), axis=-1) * 10).astype(dtype)


def write(path, a, codec, chunks):
    z = zarr.create_array(store=path, shape=a.shape, chunks=chunks, dtype=a.dtype,
                          compressors=codec, zarr_format=3)
    z[:] = a
    return z


@pytest.mark.parametrize("dtype", ["f8", "i4"])
def test_zarr_v3_array_round_trip(tmp_path, dtype):
    a = field((256, 300), dtype)
    path = str(tmp_path / "a.zarr")
    write(path, a, Adz(), chunks=(64, 128))  # edge chunks are partial
    back = zarr.open_array(path, mode="r")
    assert back.metadata.zarr_format == 3
    np.testing.assert_array_equal(back[:], a)
    np.testing.assert_array_equal(back[10:70, 100:250], a[10:70, 100:250])
    # Each chunk is an adz file (zarr v3's default chunk keys: c/I/J).
    with open(os.path.join(path, "c", "0", "0"), "rb") as f:
        chunk = f.read()
    assert chunk[:4] == adz.compress(b"x")[:4]
    assert len(chunk) < 64 * 128 * a.dtype.itemsize


def test_dtype_of_the_array_drives_the_shuffle(tmp_path):
    a = field((128, 512), "f8")
    shuffled = write(str(tmp_path / "s.zarr"), a, Adz(), chunks=a.shape)
    plain = write(str(tmp_path / "p.zarr"), a, Adz(dtype="u1"), chunks=a.shape)
    assert shuffled.nbytes_stored() < plain.nbytes_stored()


def test_configuration_round_trips_through_metadata(tmp_path):
    codec = Adz(strategy="archive", dtype="f8", block_size=65536, threads=2)
    a = field((100, 100), "f8")
    path = str(tmp_path / "c.zarr")
    write(path, a, codec, chunks=(50, 100))
    with open(os.path.join(path, "zarr.json")) as f:
        meta = json.load(f)
    entry = [c for c in meta["codecs"] if c["name"] == "adz"]
    assert entry == [codec.to_dict()]
    assert entry[0]["configuration"] == {"strategy": "archive", "link": "auto",
                                         "block_size": 65536, "threads": 2, "dtype": "f8"}
    # A fresh open builds the same codec from the metadata.
    back = zarr.open_array(path, mode="r")
    assert back.compressors == (codec,)
    np.testing.assert_array_equal(back[:], a)
    assert Adz.from_dict(codec.to_dict()) == codec
    assert Adz.from_dict({"name": "adz"}) == Adz()


def test_fresh_process_finds_the_codec_by_entry_point(tmp_path):
    a = field((64, 64), "i4")
    path = str(tmp_path / "e.zarr")
    write(path, a, Adz(strategy="static=zstd:1"), chunks=(32, 64))
    np.save(tmp_path / "a.npy", a)
    script = (
        "import sys, numpy as np, zarr\n"
        "assert 'adz' not in sys.modules\n"
        "z = zarr.open_array(sys.argv[1], mode='r')\n"
        "[c] = z.compressors\n"
        "assert type(c).__module__ == 'adz.zarr', type(c)\n"
        "assert c.to_dict()['configuration']['strategy'] == 'static=zstd:1', c\n"
        "np.testing.assert_array_equal(z[:], np.load(sys.argv[2]))\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", script, path, str(tmp_path / "a.npy")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_bad_settings_fail_at_construction():
    with pytest.raises(TypeError):
        Adz(dtype="no-such-dtype")
    with pytest.raises(ValueError):
        Adz(block_size="big")
