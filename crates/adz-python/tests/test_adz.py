"""The adz Python module: round trips, numpy, async writes, errors, the numcodecs codec."""

import gc
import io
import os
import shutil
import tarfile
import threading
import warnings

import numpy as np
import pytest

import adz

STRATEGIES = ["throughput", "keep-pace", "prolong=1.5", "archive", "static=zstd:3",
              "static=lz4", "static=none"]


def sample(n=3_000_000, seed=0):
    rng = np.random.default_rng(seed)
    text = (b"simulation step %d: temperature field written\n" * 1000)
    noise = rng.integers(0, 256, size=n // 3, dtype=np.uint8).tobytes()
    smooth = np.cumsum(rng.normal(size=n // 24)).astype(np.float64).tobytes()
    return (text + noise + smooth)[:n]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_round_trip_every_strategy(tmp_path, strategy):
    data = sample()
    p = tmp_path / "x.adz"
    link = "1GbE" if strategy in ("keep-pace", "prolong=1.5") else "auto"
    with adz.open(p, "wb", strategy=strategy, link=link, threads=2) as f:
        for i in range(0, len(data), 700_001):
            assert f.write(data[i:i + 700_001]) == len(data[i:i + 700_001])
    s = f.summary
    assert s["raw_bytes"] == len(data)
    assert s["stored_bytes"] == os.path.getsize(p)
    assert s["frames"] == -(-len(data) // (1 << 20))  # 1 MiB blocks
    with adz.open(p, "rb") as r:
        assert r.read() == data


def test_write_is_invisible_until_close(tmp_path):
    p = tmp_path / "x.adz"
    f = adz.open(p, "wb", threads=1)
    f.write(b"abc" * 100_000)
    assert not p.exists()
    summary = f.close()
    assert p.exists() and summary["raw_bytes"] == 300_000
    assert f.close() == summary  # closing again is harmless


def test_exception_in_with_block_commits_nothing(tmp_path):
    p = tmp_path / "x.adz"
    with pytest.raises(RuntimeError):
        with adz.open(p, "wb", threads=1) as f:
            f.write(b"partial" * 1000)
            raise RuntimeError("solver diverged")
    assert not p.exists()
    assert [x for x in os.listdir(tmp_path)] == []


def test_unclosed_writer_commits_nothing_and_warns(tmp_path):
    p = tmp_path / "x.adz"
    f = adz.open(p, "wb", threads=1)
    f.write(b"x" * 10_000)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        del f
        gc.collect()
    assert any(issubclass(x.category, ResourceWarning) for x in w)
    assert not p.exists()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("dtype", ["f8", "f4", "i2", "u4", "i8", "u1"])
def test_numpy_arrays_with_dtype_hint(tmp_path, dtype):
    rng = np.random.default_rng(1)
    a = (np.cumsum(rng.normal(size=400_000)) * 100).astype(dtype)
    p = tmp_path / "a.adz"
    hint = {"f8": "f64", "f4": "f32", "i2": "i16", "u4": "u32", "i8": "i64", "u1": "u8"}[dtype]
    with adz.open(p, "wb", strategy="static=zstd:3", hints=[f"dtype={hint}"], threads=2) as f:
        f.write(a)
    with adz.open(p, "rb") as r:
        back = np.frombuffer(r.read(), dtype=dtype)
    np.testing.assert_array_equal(back, a)
    if a.itemsize > 1:
        assert any("shuffle" in c for c in f.summary["configs"]), f.summary["configs"]


def test_adaptive_writes_choose_filters_unless_told_not_to(tmp_path):
    # 32-bit pixels: a smooth image plus noise in the low byte; a shuffle by 4 pays. 64 MiB:
    # the start's filter search gets what is left of the prediction's budget (2 % of the
    # write's predicted time) and the probes one chance every few blocks, so on 16 MiB the
    # choice was missed in about one run in four.
    rng = np.random.default_rng(2)
    smooth = 70_000 + 3_000 * np.sin(np.arange(16 << 20) / 300.0)
    a = (smooth + rng.integers(0, 256, size=smooth.size)).astype("<u4")
    for hints, filtered in [([], True), (["filters=none"], False)]:
        p = tmp_path / f"a{len(hints)}.adz"
        with adz.open(p, "wb", strategy="throughput", link="1GbE", threads=2, hints=hints) as f:
            f.write(a)
        with adz.open(p, "rb") as r:
            np.testing.assert_array_equal(np.frombuffer(r.read(), dtype="<u4"), a)
        configs = f.summary["configs"]
        assert any("shuffle" in c for c in configs) == filtered, (hints, configs)


def test_non_contiguous_array_is_written_in_c_order(tmp_path):
    a = np.arange(200 * 300, dtype=np.float64).reshape(200, 300)
    view = a[:, ::2]
    assert not view.flags.c_contiguous
    p = tmp_path / "v.adz"
    with adz.open(p, "wb", threads=1) as f:
        assert f.write(view) == view.nbytes
        f.write_async(view.T).wait()
    with adz.open(p, "rb") as r:
        back = np.frombuffer(r.read(), dtype=np.float64)
    np.testing.assert_array_equal(back[:view.size], view.ravel())
    np.testing.assert_array_equal(back[view.size:], np.ascontiguousarray(view.T).ravel())


def test_async_writes_overlap_numpy_work(tmp_path):
    rng = np.random.default_rng(2)
    arrays = [np.cumsum(rng.normal(size=1 << 19)) for _ in range(6)]
    expected = b"".join(a.tobytes() for a in arrays)
    p = tmp_path / "async.adz"
    with adz.open(p, "wb", strategy="static=zstd:9", threads=2, hints=["dtype=f64"]) as f:
        futures = []
        for a in arrays:
            futures.append(f.write_async(a))
            # numpy work on other data while the writer compresses `a`
            np.linalg.norm(rng.normal(size=(200, 200)) @ rng.normal(size=(200, 200)))
        for fut, a in zip(futures, arrays):
            assert fut.wait() == a.nbytes
            assert fut.done()
            assert fut.result() == a.nbytes  # waiting again returns the same
    with adz.open(p, "rb") as r:
        assert r.read() == expected


def test_gil_is_released_while_writing(tmp_path):
    """A Python thread makes progress while the main thread is inside write()/close()."""
    data = np.cumsum(np.random.default_rng(3).normal(size=3 << 20))
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)

    t = threading.Thread(target=ticker)
    p = tmp_path / "gil.adz"
    import time
    with adz.open(p, "wb", strategy="static=xz:6", threads=1) as f:
        t.start()
        while not ticks:
            time.sleep(0.001)
        before = len(ticks)
        t0 = time.perf_counter()
        f.write(data)
        f.close()
        seconds = time.perf_counter() - t0
        during = len(ticks) - before
    stop.set()
    t.join()
    # Holding the GIL, the ticker would get at most a tick or two in (one switch interval);
    # released, it ticks about every millisecond for as long as the calls take.
    assert seconds < 0.05 or during >= 10, (seconds, during)


def test_future_timeout(tmp_path):
    data = np.cumsum(np.random.default_rng(4).normal(size=2 << 20))
    with adz.open(tmp_path / "t.adz", "wb", strategy="static=xz:9", threads=1) as f:
        fut = f.write_async(data)
        try:
            fut.wait(timeout=0.0)
        except TimeoutError:
            pass  # expected unless the machine is very fast
        assert fut.wait(timeout=120) == data.nbytes


def test_filters_hint_names_bitshuffle(tmp_path):
    # f32 particle positions: a cell plus a uniform offset; bit planes for LZ4.
    rng = np.random.default_rng(6)
    a = ((np.arange(1 << 19) // 8) % 64 + rng.random(1 << 19)).astype("<f4")
    p = tmp_path / "b.adz"
    with adz.open(p, "wb", strategy="static=lz4:1", threads=2,
                  hints=["filters=bitshuffle:4"]) as f:
        f.write(a)
        f.advise(a.nbytes, 2 * a.nbytes, "filters=xor:4,bitshuffle:4")
        f.write(a)
    assert set(f.summary["configs"]) == {"lz4:1 bitshuffle:4", "lz4:1 xor:4,bitshuffle:4"}, \
        f.summary["configs"]
    with adz.open(p, "rb") as r:
        np.testing.assert_array_equal(np.frombuffer(r.read(), dtype="<f4"), np.tile(a, 2))
    with pytest.raises(adz.ConfigError, match="1..=255"):
        adz.open(tmp_path / "x.adz", "wb", hints=["filters=bitshuffle:0"])


def test_advise_and_hints_with_ranges(tmp_path):
    rng = np.random.default_rng(5)
    noise = rng.integers(0, 256, size=2 << 20, dtype=np.uint8).tobytes()
    text = b"hello adz " * 200_000
    p = tmp_path / "h.adz"
    with adz.open(p, "wb", strategy="static=zstd:3", threads=2, block_size=1 << 18,
                  hints=[f"no-compress@0..{len(noise)}"]) as f:
        f.write(noise)
        f.advise(len(noise), len(noise) + len(text), "dtype=u16")
        f.write(text)
    configs = f.summary["configs"]
    assert any(k.startswith("none") for k in configs), configs
    with adz.open(p, "rb") as r:
        assert r.read() == noise + text


def test_file_object_protocols(tmp_path):
    data = sample(1_500_000, seed=6)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    p = tmp_path / "copy.adz"
    with open(src, "rb") as i, adz.open(p, "wb", threads=1) as o:
        shutil.copyfileobj(i, o)
    out = io.BytesIO()
    with adz.open(p, "rb") as r:
        shutil.copyfileobj(r, out, length=12345)
    assert out.getvalue() == data

    # tarfile streams into a writer and reads back through a buffered reader
    t = tmp_path / "t.tar.adz"
    with adz.open(t, "wb", threads=1) as o:
        with tarfile.open(fileobj=o, mode="w|") as tar:
            tar.add(src, arcname="src.bin")
    with adz.open(t, "rb") as r:
        with tarfile.open(fileobj=io.BufferedReader(r), mode="r|") as tar:
            member = tar.next()
            assert tar.extractfile(member).read() == data

    # numpy's file-object writers (ndarray.tofile needs a real file descriptor)
    a = np.arange(100_000, dtype=np.int64).reshape(1000, 100)
    with adz.open(tmp_path / "n.adz", "wb", threads=1) as o:
        np.save(o, a)
    with adz.open(tmp_path / "n.adz", "rb") as r:
        np.testing.assert_array_equal(np.load(io.BytesIO(r.read())), a)


def test_reader_read_sizes_readinto_tell(tmp_path):
    data = sample(2_500_000, seed=7)
    p = tmp_path / "r.adz"
    with adz.open(p, "wb", threads=2, block_size=100_000) as f:
        f.write(data)
    with adz.open(p, "rb") as r:
        assert r.readable() and r.seekable()
        assert r.read(0) == b""
        first = r.read(1000)
        buf = bytearray(250_000)
        n = r.readinto(buf)
        assert 0 < n <= len(buf)
        assert r.tell() == 1000 + n
        rest = r.read()
        assert first + bytes(buf[:n]) + rest == data
        assert r.read() == b""
        assert r.seek(0) == 0
        assert r.read(10) == data[:10]
    with pytest.raises(ValueError):
        r.read()
    with pytest.raises(ValueError):
        r.pread(0, 1)


def test_random_seeks_and_preads_equal_the_source(tmp_path):
    data = sample(3_000_000, seed=11)
    p = tmp_path / "ra.adz"
    with adz.open(p, "wb", strategy="static=zstd:1", threads=2, block_size=100_000) as f:
        f.write(data)
    rng = np.random.default_rng(12)
    with adz.open(p, "rb") as r:
        assert r.size == len(data)
        for _ in range(200):
            off = int(rng.integers(0, len(data) + 1000))
            n = int(rng.integers(0, 300_000))
            assert r.pread(off, n) == data[off:off + n]
            whence = int(rng.integers(0, 3))
            base = (0, r.tell(), len(data))[whence]
            target = int(rng.integers(0, len(data)))
            assert r.seek(target - base, whence) == target
            assert r.tell() == target
            got = r.read(n)
            assert got == data[target:target + n]
            assert r.tell() == target + len(got)
        # pread does not move the position
        r.seek(1234)
        r.pread(2_000_000, 10)
        assert r.tell() == 1234
        # past the end: empty reads; before the start: an error, the position unchanged
        assert r.seek(10, io.SEEK_END) == len(data) + 10
        assert r.read(5) == b"" and r.readinto(bytearray(5)) == 0
        with pytest.raises(ValueError):
            r.seek(-1)
        with pytest.raises(ValueError):
            r.seek(0, 7)
        with pytest.raises(ValueError):
            r.pread(-1, 10)
        assert r.tell() == len(data) + 10
        # a small read decodes only the frames it overlaps
        before = r.stats()["frames_decoded"]
        r.pread(2_950_000, 10)
        assert r.stats()["frames_decoded"] - before <= 1


def test_numpy_slices_through_seek_and_readinto(tmp_path):
    a = np.random.default_rng(13).normal(size=(500, 400))
    p = tmp_path / "a.adz"
    with adz.open(p, "wb", hints=["dtype=f64"], block_size=1 << 16, threads=2) as f:
        f.write(a)
    with adz.open(p, "rb") as r:
        row = np.empty(400, dtype=np.float64)
        for i in (0, 17, 250, 499):
            r.seek(i * row.nbytes)
            assert r.readinto(row) == row.nbytes
            np.testing.assert_array_equal(row, a[i])
        col = np.frombuffer(r.pread(123 * 3200, 3200), dtype=np.float64)
        np.testing.assert_array_equal(col, a[123])


def test_preads_from_many_threads_share_one_reader(tmp_path):
    data = sample(2_000_000, seed=14)
    p = tmp_path / "t.adz"
    with adz.open(p, "wb", threads=2, block_size=1 << 16) as f:
        f.write(data)
    errors = []
    with adz.open(p, "rb", cache_bytes=1 << 18) as r:
        def worker(seed):
            rng = np.random.default_rng(seed)
            for _ in range(100):
                off = int(rng.integers(0, len(data)))
                n = int(rng.integers(1, 100_000))
                if r.pread(off, n) != data[off:off + n]:
                    errors.append((off, n))
        ts = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert errors == []


def test_tarfile_random_access_mode(tmp_path):
    src = tmp_path / "a.bin"
    src.write_bytes(sample(400_000, seed=15))
    src2 = tmp_path / "b.bin"
    src2.write_bytes(sample(300_000, seed=16))
    t = tmp_path / "t.tar.adz"
    with adz.open(t, "wb", threads=1, block_size=1 << 16) as o:
        with tarfile.open(fileobj=o, mode="w|") as tar:
            tar.add(src, arcname="a.bin")
            tar.add(src2, arcname="b.bin")
    with adz.open(t, "rb") as r:
        # "r:" seeks to each member instead of streaming through the archive
        with tarfile.open(fileobj=r, mode="r:") as tar:
            assert tar.extractfile("b.bin").read() == src2.read_bytes()
            assert tar.extractfile("a.bin").read() == src.read_bytes()


def test_writer_is_not_seekable_and_modes(tmp_path):
    with adz.open(tmp_path / "m.adz", "wb", threads=1) as f:
        assert f.writable() and not f.seekable()
        with pytest.raises(io.UnsupportedOperation):
            f.seek(0)
        f.write(b"abc")
        assert f.tell() == 3
    with pytest.raises(ValueError):
        adz.open(tmp_path / "m.adz", "ab")
    with pytest.raises(FileExistsError):
        adz.open(tmp_path / "m.adz", "xb")
    with pytest.raises(ValueError):
        f.write(b"more")


def test_errors_map_to_exceptions(tmp_path):
    assert issubclass(adz.CorruptData, adz.Error)
    assert issubclass(adz.NotFound, adz.StorageError)
    assert issubclass(adz.StorageError, adz.Error)
    with pytest.raises(adz.ConfigError, match="throughput"):
        adz.open(tmp_path / "x.adz", "wb", strategy="fastest")
    with pytest.raises(adz.ConfigError):
        adz.open(tmp_path / "x.adz", "wb", link="warp9")
    with pytest.raises(adz.ConfigError):
        adz.open(tmp_path / "x.adz", "wb", hints=["lukewarm"])
    with pytest.raises(adz.ConfigError):
        adz.open(tmp_path / "x.adz", "wb", block_size=0)
    with pytest.raises(adz.ConfigError):
        adz.open("s3://bucket", "wb")  # no key
    if "s3" not in adz.features:
        with pytest.raises(adz.ConfigError, match="feature `s3`"):
            adz.open("s3://bucket/x.adz", "wb")
    with pytest.raises(adz.NotFound):
        adz.open(tmp_path / "missing.adz", "rb")
    with pytest.raises(adz.StorageError):
        adz.open(tmp_path / "no-such-dir" / "x.adz", "wb")
    with pytest.raises(adz.Error):
        adz.open(tmp_path / "x.adz", "wb", threads=1).advise(10, 5, "hot")


def test_not_an_adz_file(tmp_path):
    p = tmp_path / "plain.adz"
    p.write_bytes(b"this is not an adz file at all" * 10)
    with pytest.raises(adz.CorruptData):
        with adz.open(p, "rb") as r:
            r.read()


def test_corrupt_file_raises_and_never_returns_wrong_bytes(tmp_path):
    data = sample(2_000_000, seed=8)
    p = tmp_path / "c.adz"
    with adz.open(p, "wb", strategy="static=zstd:3", threads=2, block_size=1 << 18) as f:
        f.write(data)
    good = p.read_bytes()
    rng = np.random.default_rng(9)
    for _ in range(12):
        bad = bytearray(good)
        i = int(rng.integers(32, len(good) - 40))
        bad[i] ^= 1 << int(rng.integers(0, 8))
        p.write_bytes(bad)
        got = bytearray()
        with pytest.raises(adz.Error):
            with adz.open(p, "rb") as r:
                while chunk := r.read(65536):
                    got += chunk
        # Whatever came out before the error is a correct prefix of the data.
        assert bytes(got) == data[:len(got)]
    # Truncated: no trailer, reported as damaged, with the way to salvage it
    p.write_bytes(good[:len(good) // 2])
    with pytest.raises(adz.CorruptData, match="adz recover"):
        adz.open(p, "rb")
    # A damaged footer: the same
    bad = bytearray(good)
    bad[-3] ^= 0xFF
    p.write_bytes(bad)
    with pytest.raises(adz.CorruptData):
        adz.open(p, "rb")


def test_compress_decompress_functions():
    data = sample(500_000, seed=10)
    c = adz.compress(data)
    assert len(c) < len(data)
    assert adz.decompress(c) == data
    assert adz.decompress(memoryview(c)) == data
    with pytest.raises(adz.ConfigError):
        adz.decompress(c, limit=1000)
    bad = bytearray(c)
    bad[len(bad) // 2] ^= 0xFF
    with pytest.raises(adz.CorruptData):
        adz.decompress(bad)
