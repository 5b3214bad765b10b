"""s3://bucket/key through the binding, end to end against a real S3-compatible server (MinIO
on 127.0.0.1, started by `scripts/python-test.sh`, which exports its endpoint and keys).

Without `AWS_ENDPOINT_URL` these tests skip, saying why, unless `ADZ_REQUIRE_S3=1` (which
`make python-test` sets), which makes a missing server a failure. They need the module built
with the cargo feature `s3` (`maturin develop --features s3`, as the script does)."""

import concurrent.futures
import uuid

import numpy as np
import pytest

import adz


@pytest.fixture
def bucket(s3_bucket):
    return s3_bucket


def data(n=3_000_000, seed=0):
    rng = np.random.default_rng(seed)
    return (np.cumsum(rng.normal(size=n // 8)) * 10).astype("f8").tobytes()


def test_write_then_read_random_ranges(bucket):
    raw = data()
    url = f"s3://{bucket}/py/{uuid.uuid4().hex}/field.adz"
    with adz.open(url, "wb", strategy="static=zstd:3", block_size=65536,
                  hints=["dtype=f64"]) as f:
        for i in range(0, len(raw), 1 << 20):
            f.write(raw[i:i + (1 << 20)])
    assert f.summary["raw_bytes"] == len(raw)
    assert f.summary["stored_bytes"] < len(raw)

    with adz.open(url, "rb") as r:
        assert r.size == len(raw)
        assert r.read() == raw
        rng = np.random.default_rng(1)
        for _ in range(100):
            off = int(rng.integers(0, len(raw) + 1000))
            n = int(rng.integers(0, 300_000))
            assert r.pread(off, n) == raw[off:off + n], (off, n)
            r.seek(off)
            assert r.read(n) == raw[off:off + n], (off, n)
        # preads from several threads on one reader.
        ranges = [(int(o), int(n)) for o, n in zip(rng.integers(0, len(raw), 64),
                                                   rng.integers(1, 200_000, 64))]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda on: r.pread(*on), ranges))
        assert got == [raw[o:o + n] for o, n in ranges]
        assert r.stats()["frames_decoded"] > 0


def test_abandoned_write_commits_nothing(bucket):
    url = f"s3://{bucket}/py/{uuid.uuid4().hex}/abandoned.adz"
    with pytest.raises(RuntimeError):
        with adz.open(url, "wb", strategy="static=zstd:1") as f:
            f.write(data(200_000))
            raise RuntimeError("the application failed")
    with pytest.raises(adz.NotFound):
        adz.open(url, "rb")


def test_missing_object_and_missing_bucket_are_storage_errors(bucket):
    with pytest.raises(adz.NotFound):
        adz.open(f"s3://{bucket}/py/no-such-object-{uuid.uuid4().hex}.adz", "rb")
    # A missing bucket is a StorageError (not NotFound, which is for a missing object), for
    # reading at open and for writing by the time the writer commits.
    missing = f"adz-no-such-bucket-{uuid.uuid4().hex[:12]}"
    with pytest.raises(adz.StorageError, match="bucket") as e:
        adz.open(f"s3://{missing}/x.adz", "rb")
    assert not isinstance(e.value, adz.NotFound)
    with pytest.raises(adz.StorageError, match="bucket"):
        with adz.open(f"s3://{missing}/x.adz", "wb", strategy="static=zstd:1") as f:
            f.write(data(200_000))
