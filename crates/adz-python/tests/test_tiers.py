"""Storage tiers from Python (`adz.open_tiers`, docs/TIERS.md): three local tiers small enough
that a write spills down them; whole and random-range reads equal to the source; status within
capacity; evicting the top tier, then reading again; gc; writes from a path and a file object;
the exceptions for a bad configuration, a missing dataset, a full hierarchy and a range past
the end; and a MinIO bottom tier when `make python-test` runs one. The costs are the built-in tables (profile=False), so the machine's profile, if any,
does not change what is tested."""

import io
import random
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest

import adz

CONFIG = """
block_size = "64KiB"
batch = "4MiB"

[[tier]]
name = "shm"
path = "shm"
capacity = "{top}"
bandwidth = "8GB/s"

[[tier]]
name = "nvme"
path = "nvme"
capacity = "{mid}"
bandwidth = "1GB/s"

[[tier]]
name = "pfs"
path = "pfs"
{bottom}
bandwidth = "100MB/s"
"""


def config(tmp_path, top="1MiB", mid="2MiB", bottom=""):
    path = tmp_path / "tiers.toml"
    path.write_text(CONFIG.format(top=top, mid=mid, bottom=bottom))
    return path


def source(n=8 << 20, seed=27):
    """Text rows and pseudo-random runs: compressible, but not enough to fit on the top tier."""
    rng = random.Random(seed)
    out = bytearray()
    i = 0
    while len(out) < n:
        out += b"step %06d particle x=%.6f y=%.6f\n" % (i, rng.random(), rng.random()) * 40
        out += rng.randbytes(rng.randrange(1000, 40_000))
        i += 1
    return bytes(out[:n])


def check_reads(t, name, expected, seed=3):
    assert t.read(name) == expected
    rng = random.Random(seed)
    for _ in range(20):
        off = rng.randrange(len(expected))
        n = rng.randrange(0, min(300_000, len(expected) - off) + 1)
        assert t.read(name, off, n) == expected[off:off + n], (off, n)


def check_within_capacity(t):
    for s in t.status():
        if s["capacity"] is not None:
            assert s["used"] <= s["capacity"], s


def test_write_spills_down_the_tiers_and_reads_back(tmp_path):
    t = adz.open_tiers(config(tmp_path), profile=False, threads=2)
    assert t.names == ["shm", "nvme", "pfs"]
    assert "built-in" in t.costs_source
    data = source()
    summary = t.write("step0", data)
    assert summary["raw_bytes"] == len(data)
    assert list(summary["tiers"]) == ["shm", "nvme", "pfs"]
    assert sum(summary["tiers"].values()) == summary["stored_bytes"]
    # The top tier cannot hold it all: the write spilled below it.
    assert summary["tiers"]["shm"] > 0
    assert summary["tiers"]["nvme"] + summary["tiers"]["pfs"] > 0

    status = t.status()
    assert [s["tier"] for s in status] == ["shm", "nvme", "pfs"]
    assert status[0]["capacity"] == 1 << 20 and status[2]["capacity"] is None
    assert sum(s["raw"] for s in status) == len(data)
    assert sum(s["segments"] for s in status) == summary["segments"]
    check_within_capacity(t)
    assert t.datasets() == [{"name": "step0", "raw_bytes": len(data),
                             "segments": summary["segments"]}]
    check_reads(t, "step0", data)

    # A seekable file object over the same dataset.
    with t.open("step0") as f:
        assert f.size == len(data)
        f.seek(1234)
        assert f.read(5000) == data[1234:6234]
        assert f.pread(len(data) - 10, 100) == data[-10:]

    report = t.evict("shm")
    assert report["moved"] >= 1 and report["bytes_out"] > 0
    status = t.status()
    assert status[0]["segments"] == 0
    check_within_capacity(t)
    check_reads(t, "step0", data, seed=4)
    # Reopened tiers (a new process) read the same.
    check_reads(adz.open_tiers(config(tmp_path), profile=False), "step0", data, seed=5)

    assert isinstance(t.flush()["moved"], int)
    freed = t.gc()
    assert isinstance(freed, int) and freed >= 0
    check_reads(t, "step0", data, seed=6)


def test_write_from_a_path_and_from_a_file_object(tmp_path):
    t = adz.open_tiers(config(tmp_path), profile=False, threads=1)
    data = source(3 << 20, seed=9)
    f = tmp_path / "in.bin"
    f.write_bytes(data)
    assert t.write("from-path", f)["raw_bytes"] == len(data)
    assert t.write("from-str", str(f))["raw_bytes"] == len(data)
    with open(f, "rb") as fo:
        assert t.write("from-file", fo)["raw_bytes"] == len(data)
    assert t.write("from-bytesio", io.BytesIO(data))["raw_bytes"] == len(data)
    assert t.write("from-memoryview", memoryview(bytearray(data)))["raw_bytes"] == len(data)
    for name in ["from-path", "from-str", "from-file", "from-bytesio", "from-memoryview"]:
        assert t.read(name) == data, name
    assert t.write("empty", b"")["raw_bytes"] == 0
    assert t.read("empty") == b""
    with pytest.raises(adz.NotFound):
        t.write("nothing", tmp_path / "no-such-input")


class Failing(io.RawIOBase):
    """A file object whose read fails after some bytes."""

    def __init__(self, good):
        self.left = good

    def readable(self):
        return True

    def read(self, n=-1):
        if self.left <= 0:
            raise OSError("the instrument went away")
        k = min(n, self.left, 10_000)
        self.left -= k
        return b"x" * k


def test_a_failing_input_raises_its_own_error_and_keeps_the_old_dataset(tmp_path):
    t = adz.open_tiers(config(tmp_path), profile=False, threads=1)
    t.write("ds", b"old contents " * 1000)
    with pytest.raises(OSError, match="the instrument went away"):
        t.write("ds", Failing(200_000))
    assert t.read("ds") == b"old contents " * 1000


def test_errors(tmp_path):
    with pytest.raises(adz.NotFound, match="tiers.toml"):
        adz.open_tiers(tmp_path / "tiers.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[tier]]\nname = 'a'\npath = 'a'\ncapacity = 'lots'\n")
    with pytest.raises(adz.ConfigError, match="tier configuration"):
        adz.open_tiers(bad, profile=False)
    bad.write_text("this is [not toml")
    with pytest.raises(adz.ConfigError):
        adz.open_tiers(bad, profile=False)
    with pytest.raises(adz.ConfigError, match="machine profile"):
        adz.open_tiers(config(tmp_path), profile=tmp_path / "no-profile.json")

    t = adz.open_tiers(config(tmp_path), profile=False, threads=1)
    with pytest.raises(adz.NotFound, match="no-such"):
        t.read("no-such")
    with pytest.raises(adz.NotFound):
        t.open("no-such")
    t.write("small", b"0123456789" * 100)
    with pytest.raises(adz.ConfigError, match="past the end"):
        t.read("small", 990, 11)
    with pytest.raises(ValueError):
        t.read("small", -1, 5)
    with pytest.raises(adz.ConfigError, match="no tier named"):
        t.evict("tape")
    with pytest.raises(adz.ConfigError, match="last"):
        t.evict("pfs")
    with pytest.raises(adz.Error):
        t.write("../escape", b"data")


def test_a_write_that_does_not_fit_raises_and_keeps_the_old_dataset(tmp_path):
    t = adz.open_tiers(config(tmp_path, top="64KiB", mid="64KiB", bottom='capacity = "256KiB"'),
                       profile=False, threads=1)
    t.write("ds", b"fits " * 1000)
    with pytest.raises(adz.WriteFailed, match="do not fit"):
        t.write("ds", random.Random(1).randbytes(2 << 20))
    assert t.read("ds") == b"fits " * 1000
    check_within_capacity(t)


def test_gil_is_released_while_writing(tmp_path):
    t = adz.open_tiers(config(tmp_path, top="64MiB", mid="64MiB"), profile=False, threads=1)
    data = source(24 << 20, seed=11)
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    th = threading.Thread(target=count)
    th.start()
    try:
        started = time.monotonic()
        t.write("big", data)
        took = time.monotonic() - started
    finally:
        done.set()
        th.join()
    # A thread that needs the GIL ran during the write (at most 1 tick per ms).
    if took > 0.05:
        assert ticks >= 5, (ticks, took)


def test_flush_while_a_file_object_is_written_does_not_deadlock(tmp_path):
    """A write reading a Python file object takes the GIL back for each read while it holds
    the tiers; a flush called meanwhile from another thread must wait without the GIL. Run in
    a child process, so that a deadlock fails the test instead of hanging it."""
    cfg = config(tmp_path)
    code = textwrap.dedent(f"""
        import io, threading, time, adz
        class Slow(io.RawIOBase):
            def __init__(self):
                self.left = 4 << 20
            def readable(self):
                return True
            def read(self, n=-1):
                time.sleep(0.002)
                k = min(n, self.left, 65536)
                self.left -= k
                return bytes(range(256)) * (k // 256) + b"x" * (k % 256)
        t = adz.open_tiers({str(cfg)!r}, profile=False, threads=1)
        w = threading.Thread(target=t.write, args=("slow", Slow()))
        w.start()
        time.sleep(0.05)
        t.flush(); t.gc(); t.status()
        w.join()
        assert len(t.read("slow")) == 4 << 20
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_an_s3_bottom_tier(tmp_path, s3_bucket):
    bucket = s3_bucket
    prefix = f"py-tiers/{uuid.uuid4().hex}"
    path = tmp_path / "tiers.toml"
    path.write_text(f"""
catalog = "catalog"
block_size = "64KiB"

[[tier]]
name = "shm"
path = "shm"
capacity = "1MiB"
bandwidth = "8GB/s"

[[tier]]
name = "minio"
path = "s3://{bucket}/{prefix}"
bandwidth = "100MB/s"
""")
    t = adz.open_tiers(path, profile=False, threads=2)
    data = source(4 << 20, seed=13)
    summary = t.write("step0", data)
    assert summary["tiers"]["shm"] > 0 and summary["tiers"]["minio"] > 0
    check_within_capacity(t)
    check_reads(t, "step0", data)
    assert t.evict("shm")["moved"] >= 1
    assert t.status()[0]["segments"] == 0
    check_reads(t, "step0", data, seed=8)
    assert t.gc() >= 0
