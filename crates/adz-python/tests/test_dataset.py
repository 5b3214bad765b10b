"""Many writers, one dataset, from Python: `multiprocessing` workers each write a part
(`adz.open_part`), the parent commits (`adz.commit`), and `adz.open_dataset` reads the whole
and random ranges as the concatenation; to a local directory and, when MinIO is there, to
s3:// (the same worker code). Also: a commit expecting a writer that died, racing commits,
bad ids. mpi4py runs are not tested here (not installed in the test environment)."""

import multiprocessing
import random
import uuid

import pytest

import adz

N = 4


def part_bytes(rank):
    """Rank `rank`'s rows: text and pseudo-random bytes, a length of its own."""
    rng = random.Random(rank)
    text = b"rank %d row %08d temperature 3.14159\n"
    rows = b"".join(text % (rank, i) for i in range(2000 + 700 * rank))
    noise = bytes(rng.getrandbits(8) for _ in range(20_000 + 5_000 * rank))
    return rows + noise


def write_rank(dataset, rank, placed):
    """A worker process: write rank's part, at its displacement if `placed` (the sum of the
    earlier ranks' lengths), else appended at commit. Returns the part's raw size."""
    data = part_bytes(rank)
    offset = sum(len(part_bytes(r)) for r in range(rank)) if placed else None
    with adz.open_part(dataset, id=f"r{rank}", offset=offset, strategy="static=zstd:1",
                       threads=1, block_size=16384) as f:
        for i in range(0, len(data), 50_000):
            f.write(data[i:i + 50_000])
    return f.summary["raw_bytes"]


def write_all(dataset, n=N, placed=True):
    # spawn: the workers start a fresh interpreter and import adz, as an HPC launcher would;
    # fork after the parent's native threads exist is not safe.
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(n) as pool:
        sizes = pool.starmap(write_rank, [(dataset, r, placed) for r in range(n)])
    assert sizes == [len(part_bytes(r)) for r in range(n)]
    return b"".join(part_bytes(r) for r in range(n))


def check_reads(dataset, expected):
    with adz.open_dataset(dataset) as f:
        assert f.size == len(expected)
        assert f.stats()["parts_opened"] == 0
        # One range inside the first part opens that part only.
        assert f.pread(10, 100) == expected[10:110]
        assert f.stats()["parts_opened"] == 1
        rng = random.Random(29)
        for _ in range(50):
            off = rng.randrange(len(expected) + 10)
            n = rng.randrange(1, 120_000)
            assert f.pread(off, n) == expected[off:off + n], (off, n)
        assert f.read() == expected
        f.seek(len(expected) - 5)
        assert f.read(100) == expected[-5:]


@pytest.mark.parametrize("placed", [True, False], ids=["at-offsets", "appended"])
def test_processes_write_parts_parent_commits_and_reads(tmp_path, placed):
    ds = str(tmp_path / "ckpt")
    expected = write_all(ds, placed=placed)
    with pytest.raises(adz.NotFound):
        adz.open_dataset(ds)
    m = adz.commit(ds, ids=[f"r{r}" for r in range(N)])
    assert m["version"] == 1 and m["len"] == len(expected) and m["gaps"] == []
    assert [p["offset"] for p in m["parts"]] == [
        sum(len(part_bytes(r)) for r in range(k)) for k in range(N)]
    check_reads(ds, expected)


def test_commit_expecting_a_dead_writer_commits_nothing(tmp_path):
    ds = str(tmp_path / "ckpt")
    write_all(ds, n=2)
    with pytest.raises(adz.MissingPart, match='"r2"'):
        adz.commit(ds, ids=["r0", "r1", "r2"])
    with pytest.raises(adz.NotFound):
        adz.open_dataset(ds)
    with pytest.raises(adz.ConfigError, match="writer id"):
        adz.commit(ds, ids=["r0", "../r1"])
    with pytest.raises(adz.ConfigError, match="writer id"):
        adz.open_part(ds, id="a b")
    assert adz.commit(ds, base=0)["version"] == 1
    with pytest.raises(adz.CommitConflict, match="retry"):
        adz.commit(ds, base=0)
    assert adz.commit(ds, base=1)["version"] == 2


def test_a_part_abandoned_by_an_exception_is_not_committed(tmp_path):
    ds = str(tmp_path / "ckpt")
    with adz.open_part(ds, id="r0", offset=0) as f:
        f.write(b"kept")
    with pytest.raises(RuntimeError):
        with adz.open_part(ds, id="r1", offset=4) as f:
            f.write(b"lost")
            raise RuntimeError("rank 1 died")
    assert adz.commit(ds)["len"] == 4
    with adz.open_dataset(ds) as f:
        assert f.read() == b"kept"


def test_processes_write_one_dataset_on_s3(s3_bucket):
    bucket = s3_bucket
    ds = f"s3://{bucket}/py-dataset/{uuid.uuid4().hex}/ckpt"
    expected = write_all(ds, placed=True)
    assert adz.commit(ds, ids=[f"r{r}" for r in range(N)])["version"] == 1
    check_reads(ds, expected)
