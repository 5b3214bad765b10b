"""adz.hdf5: the HDF5 filter through h5py (and h5netcdf/xarray): round trips, the automatic
shuffle by element size, adaptive mode, and damaged chunks that raise instead of reading."""

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
import adz  # noqa: E402
import adz.hdf5  # noqa: E402

SHAPE, CHUNKS = (1000, 37), (300, 16)  # edge chunks only partly filled in both dimensions
MODES = [
    {"codec": "zstd:3"},
    {"codec": "lz4:1"},
    {"strategy": "throughput", "link": "1GbE"},
    {"strategy": "keep-pace", "link": "10GbE"},
    {"strategy": "prolong=1.5", "link": "500MB/s"},
]


def data(dtype, shape=SHAPE, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    # A random walk in quarter steps: exact in every type, and compressible.
    smooth = (np.cumsum(rng.integers(-2, 3, size=n)) * 0.25).reshape(shape)
    if np.dtype(dtype).kind == "f":
        return smooth.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(smooth * 3, info.min, info.max).astype(dtype)


def write(path, arr, chunks=CHUNKS, **adz_kwargs):
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=arr, chunks=chunks, **adz.hdf5.Adz(**adz_kwargs))


@pytest.mark.parametrize("mode", MODES, ids=lambda m: ",".join(f"{k}={v}" for k, v in m.items()))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint8"])
def test_round_trip(tmp_path, dtype, mode):
    arr = data(dtype)
    path = tmp_path / "x.h5"
    write(path, arr, **mode)
    with h5py.File(path) as f:
        d = f["x"]
        assert adz.hdf5.FILTER_ID in [int(k) for k in d._filters]
        np.testing.assert_array_equal(d[...], arr)
        np.testing.assert_array_equal(d[950:, 30:], arr[950:, 30:])  # an edge chunk alone
        # Every chunk on disk is adz frames, none stored without the filter.
        for i in range(d.id.get_num_chunks()):
            info = d.id.get_chunk_info(i)
            assert info.filter_mask == 0
            mask, raw = d.id.read_direct_chunk(info.chunk_offset)
            assert raw[:4] == b"ADZF"
            assert adz.hdf5.describe_chunk(raw)


def test_compresses_and_shuffles_by_element_size(tmp_path):
    """set_local records the element size and type: wider numbers are shuffled by their
    size without being asked, bytes are not, and the smooth data shrinks."""
    for dtype, want in [("float32", "zstd:3 shuffle:4"), ("float64", "zstd:3 shuffle:8"),
                        ("int16", "zstd:3 shuffle:2"), ("uint8", "zstd:3")]:
        arr = data(dtype)
        path = tmp_path / f"{dtype}.h5"
        write(path, arr, codec="zstd:3")
        with h5py.File(path) as f:
            d = f["x"]
            _, raw = d.id.read_direct_chunk((0, 0))
            assert adz.hdf5.describe_chunk(raw) == [want], dtype
            opts = d.id.get_create_plist().get_filter_by_id(adz.hdf5.FILTER_ID)[1]
            # version, static, zstd, level 3, -, -, auto; then element size, class, chunk bytes
            assert opts[:4] == (1, 0, 3, 3)
            assert opts[7] == np.dtype(dtype).itemsize
            assert opts[9] == CHUNKS[0] * CHUNKS[1] * np.dtype(dtype).itemsize
            stored = sum(d.id.get_chunk_info(i).size for i in range(d.id.get_num_chunks()))
        if dtype != "uint8":
            assert stored < arr.nbytes * 0.8, (dtype, stored, arr.nbytes)
    with h5py.File(tmp_path / "none.h5", "w") as f:
        f.create_dataset("x", data=data("float32"), chunks=CHUNKS,
                         **adz.hdf5.Adz(codec="zstd:3", filters="none"))
        assert adz.hdf5.describe_chunk(f["x"].id.read_direct_chunk((0, 0))[1]) == ["zstd:3"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint8"])
def test_bitshuffle_by_element_size_when_asked(tmp_path, dtype):
    """filters="bitshuffle" transposes each chunk's bits by the element size (bytes too),
    as hdf5plugin's Bitshuffle does, and cd_values word 6 says so (4)."""
    arr = data(dtype)
    size = np.dtype(dtype).itemsize
    path = tmp_path / "b.h5"
    write(path, arr, codec="lz4:1", filters="bitshuffle")
    with h5py.File(path) as f:
        d = f["x"]
        np.testing.assert_array_equal(d[...], arr)
        np.testing.assert_array_equal(d[950:, 30:], arr[950:, 30:])  # an edge chunk alone
        _, raw = d.id.read_direct_chunk((0, 0))
        assert adz.hdf5.describe_chunk(raw) == [f"lz4:1 bitshuffle:{size}"]
        opts = d.id.get_create_plist().get_filter_by_id(adz.hdf5.FILTER_ID)[1]
        assert opts[:7] == (1, 0, 1, 1, 0, 0, 4)
    assert adz.hdf5.Adz(codec="lz4:1", filters="bitshuffle")["compression_opts"][6] == 4


def test_bitshuffle_stores_less_than_shuffle_on_particle_floats(tmp_path):
    """Particle positions (a cell plus a uniform offset) as f32 with LZ4: the bit planes of
    the slowly changing high bits are runs that a byte shuffle leaves mixed with noise."""
    rng = np.random.default_rng(5)
    n = 1 << 18
    pos = ((np.arange(n) // 8) % 64 + rng.random(n)).astype("float32")
    stored = {}
    for filters in ["shuffle", "bitshuffle"]:
        path = tmp_path / f"{filters}.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=pos, chunks=(1 << 16,),
                             **adz.hdf5.Adz(codec="lz4:1", filters=filters))
        with h5py.File(path) as f:
            d = f["x"]
            np.testing.assert_array_equal(d[...], pos)
            stored[filters] = sum(d.id.get_chunk_info(i).size
                                  for i in range(d.id.get_num_chunks()))
    assert stored["bitshuffle"] < 0.9 * stored["shuffle"], stored


def test_adaptive_controller_learns_across_datasets(tmp_path):
    path = tmp_path / "a.h5"
    with h5py.File(path, "w") as f:
        for k in range(3):
            f.create_dataset(f"x{k}", data=data("float64", seed=k), chunks=(100, 37),
                             **adz.hdf5.Adz(strategy="throughput", link="1GbE"))
    status = adz.hdf5.controller_status()
    s1 = [c for c in status if c["controller"] == "throughput@117000000 auto"]
    assert len(s1) == 1 and s1[0]["status"].startswith("throughput"), status
    # One controller for the three datasets: it decided every chunk of them (30 chunks, more
    # with earlier tests in this process), not 10 each.
    assert s1[0]["chunks"] >= 30, s1
    with h5py.File(path) as f:
        for k in range(3):
            np.testing.assert_array_equal(f[f"x{k}"][...], data("float64", seed=k))


def test_each_filter_choice_has_its_own_adaptive_controller(tmp_path):
    # Byte planes and bit planes are different data to a codec: S1 datasets with different
    # filters learn apart, each named by its key (a link rate no other test uses).
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        for k, filters in enumerate(["bitshuffle", "auto", "bitshuffle"]):
            f.create_dataset(f"x{k}", data=data("float32", seed=k), chunks=(100, 37),
                             **adz.hdf5.Adz(strategy="throughput", link="117003kB/s",
                                            filters=filters))
    mine = {c["controller"]: c["chunks"] for c in adz.hdf5.controller_status()
            if c["controller"].startswith("throughput@117003000 ")}
    assert mine == {"throughput@117003000 auto": 10, "throughput@117003000 bitshuffle": 20}, mine
    with h5py.File(path) as f:
        for k in range(3):
            np.testing.assert_array_equal(f[f"x{k}"][...], data("float32", seed=k))


def flip_byte_in_chunk(path, index, where=0.5):
    with h5py.File(path) as f:
        info = f["x"].id.get_chunk_info(index)
    pos = info.byte_offset + int(info.size * where)
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([b[0] ^ 0x04]))
    return info


@pytest.mark.parametrize("where", [0.01, 0.5, 0.99])  # frame header, payload, payload end
@pytest.mark.parametrize("mode", [{"codec": "zstd:3"}, {"strategy": "throughput"}],
                         ids=["static", "adaptive"])
def test_damaged_chunk_raises_and_others_read(tmp_path, where, mode):
    arr = data("float32")
    path = tmp_path / "x.h5"
    write(path, arr, **mode)
    with h5py.File(path) as f:
        offsets = [f["x"].id.get_chunk_info(i).chunk_offset
                   for i in range(f["x"].id.get_num_chunks())]
    bad = flip_byte_in_chunk(path, 5, where)
    with h5py.File(path) as f:
        d = f["x"]
        with pytest.raises(OSError):
            d[...]
        r0, c0 = bad.chunk_offset
        with pytest.raises(OSError):
            d[r0:r0 + 1, c0:c0 + 1]
        for off in offsets:
            if off == bad.chunk_offset:
                continue
            r, c = off
            sl = (slice(r, r + CHUNKS[0]), slice(c, c + CHUNKS[1]))
            np.testing.assert_array_equal(d[sl], arr[sl])


def test_truncated_chunk_raises(tmp_path):
    """A chunk cut short (stored size reduced through write_direct_chunk) fails to read."""
    arr = data("int16")
    path = tmp_path / "x.h5"
    write(path, arr, codec="zstd:3")
    with h5py.File(path, "r+") as f:
        d = f["x"]
        mask, raw = d.id.read_direct_chunk((300, 16))
        d.id.write_direct_chunk((300, 16), raw[:-3], mask)
    with h5py.File(path) as f:
        with pytest.raises(OSError):
            f["x"][300:600, 16:32]
        np.testing.assert_array_equal(f["x"][:300], arr[:300])


def test_bad_options_are_refused():
    with pytest.raises(adz.ConfigError):
        adz.hdf5.Adz(codec="gzip:9")
    with pytest.raises(adz.ConfigError):
        adz.hdf5.Adz(strategy="fastest")
    with pytest.raises(adz.ConfigError, match="rate"):
        adz.hdf5.Adz(strategy="throughput", link="auto")
    with pytest.raises(adz.ConfigError, match="bitshuffle"):
        adz.hdf5.Adz(codec="zstd:3", filters="bitshufle")
    with pytest.raises(ValueError):
        adz.hdf5.Adz(codec="zstd:3", strategy="throughput")


def test_unknown_cd_values_version_fails_the_write(tmp_path):
    with h5py.File(tmp_path / "x.h5", "w") as f:
        with pytest.raises((OSError, ValueError)):
            f.create_dataset("x", data=data("float32"), chunks=CHUNKS,
                             compression=adz.hdf5.FILTER_ID, compression_opts=(2, 0, 3, 3))


def test_default_is_static_zstd3():
    kw = adz.hdf5.Adz()
    assert kw == {"compression": 429, "compression_opts": (1, 0, 3, 3, 0, 0, 0)}
    assert adz.hdf5.Adz(strategy="s1", link="1GbE")["compression_opts"] == \
        (1, 1, 0, 0, 117000, 0, 0)


def test_xarray_h5netcdf_round_trip(tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    ds = xr.Dataset(
        {"t": (("time", "y", "x"), data("float32", (10, 50, 40))),
         "q": (("time", "y", "x"), data("int16", (10, 50, 40), seed=3))},
        coords={"time": np.arange(10), "y": np.arange(50.0), "x": np.arange(40.0)},
    )
    path = tmp_path / "ds.nc"
    enc = {v: {**adz.hdf5.Adz(strategy="throughput", link="1GbE"), "chunksizes": (2, 50, 40)}
           for v in ("t", "q")}
    ds.to_netcdf(path, engine="h5netcdf", encoding=enc)
    with h5py.File(path) as f:
        assert str(adz.hdf5.FILTER_ID) in f["t"]._filters
    back = xr.open_dataset(path, engine="h5netcdf")
    xr.testing.assert_identical(back.load(), ds)
    back.close()


def test_import_is_what_registers_the_filter(tmp_path):
    """In a fresh interpreter h5py alone cannot read an adz dataset; after `import adz.hdf5`
    it can, with nothing else set up."""
    import subprocess
    import sys

    arr = data("float64")
    path = tmp_path / "x.h5"
    write(path, arr, codec="zstd:3")
    read = ("import sys, h5py, numpy as np\n"
            "{imp}\n"
            "with h5py.File(sys.argv[1]) as f:\n"
            "    print(float(f['x'][...].sum()))\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "HDF5_PLUGIN_PATH"}
    bare = subprocess.run([sys.executable, "-c", read.format(imp=""), str(path)],
                          capture_output=True, text=True, env=env)
    assert bare.returncode != 0
    ok = subprocess.run([sys.executable, "-c", read.format(imp="import adz.hdf5"), str(path)],
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    assert float(ok.stdout) == float(arr.sum())


def test_adaptive_codec_follows_the_link_rate(tmp_path):
    """S1 spends effort where the link is slow and none where it is far faster than any
    codec: the chunks' frames say which codec each got."""
    rng = np.random.default_rng(0)
    arr = np.cumsum(rng.integers(-2, 3, size=2_000_000)) * 0.25
    codecs = {}
    for link in ["5MB/s", "100GB/s"]:
        path = tmp_path / "x.h5"
        with h5py.File(path, "w") as f:
            d = f.create_dataset("x", data=arr, chunks=(65536,),
                                 **adz.hdf5.Adz(strategy="throughput", link=link))
            codecs[link] = [adz.hdf5.describe_chunk(d.id.read_direct_chunk((i * 65536,))[1])[0]
                            for i in range(d.id.get_num_chunks())]
        with h5py.File(path) as f:
            np.testing.assert_array_equal(f["x"][...], arr)
    slow = codecs["5MB/s"][-10:]
    assert all(c.startswith(("zstd:", "xz:")) and "shuffle:8" in c for c in slow), slow
    assert all(int(c.split()[0].split(":")[1]) >= 3 for c in slow if c.startswith("zstd")), slow
    fast = codecs["100GB/s"]
    assert sum(c.startswith("none") for c in fast) >= len(fast) - 2, fast


def _plugin_env():
    """The environment of a fresh process that knows the filter only from HDF5_PLUGIN_PATH."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    env["HDF5_PLUGIN_PATH"] = adz.hdf5.plugin_path()
    return env


def _fresh(code, *args, env):
    """Run `code` in a fresh interpreter that never imports adz; its stdout."""
    import subprocess
    import sys

    assert "adz" not in code
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_package_ships_the_plugin_on_hdf5_plugin_path():
    """`import adz` put the shipped plugin's directory on HDF5_PLUGIN_PATH."""
    import os

    d = adz.hdf5.plugin_path()
    assert os.path.isfile(os.path.join(d, "libadz_hdf5.so"))
    assert d in os.environ["HDF5_PLUGIN_PATH"].split(os.pathsep)


def test_h5py_alone_writes_and_reads_through_the_plugin_path(tmp_path):
    """A fresh h5py process with only HDF5_PLUGIN_PATH (no adz import, no registration)
    writes with filter 429, static and adaptive, and reads back; so does another one."""
    path = tmp_path / "p.h5"
    env = _plugin_env()
    static = adz.hdf5.Adz(codec="zstd:3")["compression_opts"]
    s1 = adz.hdf5.Adz(strategy="throughput", link="1GbE")["compression_opts"]
    write_code = (
        "import sys, h5py, numpy as np\n"
        "rng = np.random.default_rng(0)\n"
        "x = (np.cumsum(rng.integers(-2, 3, size=200_000)) * 0.25).reshape(1000, 200)\n"
        "with h5py.File(sys.argv[1], 'w') as f:\n"
        "    for name, opts in (('static', sys.argv[2]), ('s1', sys.argv[3])):\n"
        "        f.create_dataset(name, data=x, chunks=(300, 64), compression=429,\n"
        "                         compression_opts=tuple(map(int, opts.split(','))))\n"
        "print(float(x.sum()))\n")
    total = float(_fresh(write_code, path, ",".join(map(str, static)), ",".join(map(str, s1)),
                         env=env))
    read_code = (
        "import sys, h5py\n"
        "with h5py.File(sys.argv[1]) as f:\n"
        "    for name in ('static', 's1'):\n"
        "        d = f[name]\n"
        "        assert d.id.get_create_plist().get_filter(0)[0] == 429\n"
        "        print(name, float(d[...].sum()), d.id.get_storage_size() < d.nbytes)\n")
    lines = _fresh(read_code, path, env=env).split("\n")
    assert lines[:2] == [f"static {total} True", f"s1 {total} True"], lines
    # And this process (registered through the extension) reads the same chunks.
    with h5py.File(path) as f:
        assert float(f["static"][...].sum()) == total
        frames = adz.hdf5.describe_chunk(f["static"].id.read_direct_chunk((0, 0))[1])
        assert frames and frames[0].startswith("zstd:3"), frames


def test_netcdf4_python_reads_through_the_plugin_path(tmp_path):
    """netCDF4-python (its own bundled HDF5) reads a netCDF-4 file whose variable is
    compressed with filter 429, in a fresh process with only HDF5_PLUGIN_PATH; without it the
    read fails."""
    pytest.importorskip("netCDF4")
    h5netcdf = pytest.importorskip("h5netcdf")
    path = tmp_path / "v.nc"
    arr = data("float32", shape=(400, 90))
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"y": 400, "x": 90}
        f.create_variable("v", ("y", "x"), data=arr, chunks=(100, 45),
                          **adz.hdf5.Adz(codec="zstd:3"))
    with h5py.File(path) as f:
        assert f["v"].id.get_create_plist().get_filter(0)[0] == 429
    code = ("import sys, netCDF4\n"
            "with netCDF4.Dataset(sys.argv[1]) as ds:\n"
            "    v = ds['v']\n"
            "    print(float(v[...].astype('float64').sum()))\n")
    out = _fresh(code, path, env=_plugin_env()).split()
    assert float(out[-1]) == float(arr.astype("float64").sum())
    import os
    import subprocess
    import sys

    bare = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                       text=True, env=bare, timeout=300)
    assert r.returncode != 0, r.stdout


@pytest.mark.parametrize("mode", [{"codec": "zstd:3"}, {"codec": "lz4:1", "filters": "xor"},
                                  {"strategy": "throughput", "link": "1GbE"}],
                         ids=["zstd3", "lz4-xor", "s1"])
@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8"])
def test_write_chunks_in_parallel_reads_back_through_the_filter(tmp_path, dtype, mode):
    """write_chunks compresses chunks on threads and writes them with H5Dwrite_chunk: the
    normal read path (the filter) reads them back equal, partial edge chunks included, and a
    static mode stores exactly the chunks the filter itself writes."""
    arr = data(dtype, seed=3)
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=arr.shape, dtype=arr.dtype, chunks=CHUNKS,
                             **adz.hdf5.Adz(**mode))
        adz.hdf5.write_chunks(d, arr, threads=3, batch=5)
        f.create_dataset("ref", data=arr, chunks=CHUNKS, **adz.hdf5.Adz(**mode))
    with h5py.File(path) as f:
        d = f["x"]
        np.testing.assert_array_equal(d[...], arr)
        np.testing.assert_array_equal(d[950:, 30:], arr[950:, 30:])
        n = d.id.get_num_chunks()
        assert n == 4 * 3
        for i in range(n):
            info = d.id.get_chunk_info(i)
            _, raw = d.id.read_direct_chunk(info.chunk_offset)
            assert adz.hdf5.describe_chunk(raw)
            if "codec" in mode:
                _, ref = f["ref"].id.read_direct_chunk(info.chunk_offset)
                assert raw == ref, info.chunk_offset


def test_write_chunks_refuses_what_it_cannot_write(tmp_path):
    arr = data("float32")
    with h5py.File(tmp_path / "x.h5", "w") as f:
        other = f.create_dataset("gzip", shape=arr.shape, dtype=arr.dtype, chunks=CHUNKS,
                                 compression="gzip")
        with pytest.raises(ValueError, match="only filter is adz"):
            adz.hdf5.write_chunks(other, arr)
        two = f.create_dataset("two", shape=arr.shape, dtype=arr.dtype, chunks=CHUNKS,
                               shuffle=True, **adz.hdf5.Adz())
        with pytest.raises(ValueError, match="only filter is adz"):
            adz.hdf5.write_chunks(two, arr)
        d = f.create_dataset("x", shape=arr.shape, dtype=arr.dtype, chunks=CHUNKS,
                             **adz.hdf5.Adz())
        with pytest.raises(ValueError, match="shape"):
            adz.hdf5.write_chunks(d, arr[:10])
