//! A corrupted object: one byte changed on MinIO's disk (issue 7, "Faults and bad input").
//!
//! MinIO (one drive, as `scripts/minio.sh` runs it) keeps an object of more than 128 KiB in
//! `DATA/BUCKET/KEY/<data dir uuid>/part.N`, one file per uploaded part, each a run of blocks of
//! `[32-byte HighwayHash of the block][up to 1 MiB of the part's bytes]` (its streaming bitrot
//! format). When it reads a block whose hash does not match, it has already sent `206` and
//! breaks the connection off without sending a byte: every ranged GET that overlaps the
//! damaged MiB fails, every other range reads. With no parity (one drive) it cannot repair the
//! block, and it leaves the object in place.
//!
//! So adz's own frame checksums never see the changed byte over S3; what this test checks is
//! that the failure is reported per frame: a read of a frame whose stored bytes overlap the
//! damaged MiB fails with [`Error::FrameFetch`] naming that frame, a read of any other frame
//! returns exactly the original bytes, and coalesced requests do not widen the damage.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adz_core::format::FRAME_HEADER_LEN;
use adz_core::store::s3::{S3Config, S3Storage};
use adz_core::store::{RetryPolicy, Storage};
use adz_core::{Error, Reader, ReaderOptions};
use adz_datagen::{generate, Kind};

use super::{adz, bucket, stderr};

/// Data bytes per block of a MinIO part file (its erasure block size, one data shard).
const BLOCK: u64 = 1 << 20;
/// The bitrot hash in front of each block.
const HASH: u64 = 32;

/// The MinIO data directory (`ADZ_MINIO_DATA`, written by `scripts/minio.sh start`), or `None`
/// (after saying why) to skip.
fn data_dir() -> Option<PathBuf> {
    let required = std::env::var("ADZ_REQUIRE_S3").is_ok_and(|v| v == "1");
    match std::env::var_os("ADZ_MINIO_DATA") {
        Some(d) if Path::new(&d).is_dir() => Some(PathBuf::from(d)),
        _ => {
            let why = "ADZ_MINIO_DATA is not MinIO's data directory (scripts/minio.sh sets it)";
            assert!(!required, "ADZ_REQUIRE_S3=1 but {why}");
            eprintln!("skipping S3 corruption test: {why}");
            None
        }
    }
}

/// The part files of `key` on MinIO's disk, in part order, checked against the object's
/// bytes: stripped of their block hashes and joined they must be exactly `object`.
fn part_files(data: &Path, bucket: &str, key: &str, object: &[u8]) -> Vec<(PathBuf, u64)> {
    let dir = data.join(bucket).join(key);
    assert!(dir.join("xl.meta").is_file(), "no {}/xl.meta: MinIO's layout changed?", dir.display());
    let mut parts: Vec<(u32, PathBuf)> = Vec::new();
    for sub in std::fs::read_dir(&dir).unwrap() {
        let sub = sub.unwrap().path();
        if !sub.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sub).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if let Some(n) = name.strip_prefix("part.").and_then(|n| n.parse().ok()) {
                parts.push((n, f));
            }
        }
    }
    parts.sort();
    assert!(!parts.is_empty(), "no part files under {}: stored inline in xl.meta?", dir.display());
    let mut joined = Vec::with_capacity(object.len());
    let mut out = Vec::new();
    for (_, path) in parts {
        let bytes = std::fs::read(&path).unwrap();
        let start = joined.len() as u64;
        for block in bytes.chunks((BLOCK + HASH) as usize) {
            assert!(
                block.len() as u64 > HASH,
                "{}: a block of {} bytes",
                path.display(),
                block.len()
            );
            joined.extend_from_slice(&block[HASH as usize..]);
        }
        out.push((path, start));
    }
    assert!(
        joined == object,
        "MinIO's part files, without a {HASH}-byte hash per {BLOCK} bytes, are not the object: \
         its on-disk layout changed, and this test must learn the new one"
    );
    out
}

/// Changes the byte at `offset` of the object in its part file; returns the object's byte
/// range that MinIO's damaged block covers.
fn damage(parts: &[(PathBuf, u64)], object_len: u64, offset: u64) -> std::ops::Range<u64> {
    let (path, start) = parts.iter().rev().find(|(_, start)| *start <= offset).unwrap();
    let in_part = offset - start;
    let at = in_part / BLOCK * (BLOCK + HASH) + HASH + in_part % BLOCK;
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x5a;
    std::fs::write(path, &bytes).unwrap();
    let part_end = parts.iter().map(|(_, s)| *s).find(|s| *s > *start).unwrap_or(object_len);
    let block_start = start + in_part / BLOCK * BLOCK;
    block_start..(block_start + BLOCK).min(part_end)
}

#[test]
fn a_byte_changed_on_the_servers_disk_fails_that_frame_only() {
    let Some(bucket) = bucket() else { return };
    let Some(data_dir) = data_dir() else { return };
    // 12 MiB of text in 64 KiB frames: about 4 MiB stored, so MinIO blocks of good frames on
    // either side of the damaged one.
    let data = generate(Kind::Text, 12 << 20, 21);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("text.bin");
    std::fs::write(&input, &data).unwrap();
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let key = format!("adz-cli-tests/corrupt-{}-{nanos}/text.adz", std::process::id());
    let url = format!("s3://{bucket}/{key}");
    let o = adz()
        .args(["compress", "-q", "-c", "zstd:3", "-B", "64K", input.to_str().unwrap(), &url])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    // Short retries: every failing fetch below is tried and given up on.
    let config = S3Config::from_env().retry(RetryPolicy::new(3, Duration::from_millis(20)));
    let store: Arc<dyn Storage> = Arc::new(S3Storage::new(&bucket, config).unwrap().retrying());
    let object = store.get(&key).unwrap();
    let parts = part_files(&data_dir, &bucket, &key, &object);
    let reader = |cache_bytes| {
        let opts = ReaderOptions { cache_bytes, ..Default::default() };
        Reader::open(Arc::clone(&store), &key, opts).unwrap()
    };
    let r = reader(0);
    let entries = r.index().entries().to_vec();
    assert!(entries.len() >= 48, "{} frames", entries.len());
    let blocks = object.len() as u64 / BLOCK;
    assert!(blocks >= 3, "{} bytes stored: too few MinIO blocks", object.len());

    // The frame in the middle of a MinIO block in the middle of the object: change a byte of
    // its payload.
    let middle = blocks / 2 * BLOCK + BLOCK / 2;
    let target = entries.iter().position(|e| e.file_range().contains(&middle)).unwrap();
    let t = &entries[target];
    let header = FRAME_HEADER_LEN as u64;
    let byte = t.file_offset + header + (t.file_range().end - t.file_offset - header) / 2;
    let bad = damage(&parts, object.len() as u64, byte);
    let overlaps = |i: usize| {
        let f = entries[i].file_range();
        f.start < bad.end && bad.start < f.end
    };
    let lost: Vec<usize> = (0..entries.len()).filter(|&i| overlaps(i)).collect();
    eprintln!(
        "changed object byte {byte} (frame {target}); MinIO block {bad:?} holds frames {}..={} of {}",
        lost[0],
        lost[lost.len() - 1],
        entries.len()
    );
    assert!(lost.contains(&target));
    assert!(lost[0] > 0 && *lost.last().unwrap() < entries.len() - 1, "{lost:?}");
    let raw = |i: usize| entries[i].raw_offset as usize..entries[i].raw_range().end as usize;
    let expect_fetch_error = |err: Error, frame: usize| {
        match &err {
            Error::FrameFetch { frame: f, offset, .. } => {
                assert_eq!((*f, *offset), (frame as u64, entries[frame].file_offset), "{err}");
            }
            other => panic!("frame {frame}: expected FrameFetch, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("frame {frame} at offset ")), "{msg}");
    };

    // The damaged frame: an error naming it, never bytes.
    expect_fetch_error(r.read_range(raw(target).start as u64 + 10, 100).unwrap_err(), target);
    // Every frame alone: those stored in the damaged MiB fail naming themselves, every other
    // one reads back exactly.
    for i in 0..entries.len() {
        let range = raw(i);
        match r.read_range(range.start as u64, range.len() as u64) {
            Ok(got) => {
                assert!(!overlaps(i), "frame {i} in the damaged block read");
                assert!(got == data[range], "frame {i} read back wrong");
            }
            Err(e) => {
                assert!(overlaps(i), "frame {i}, outside the damaged block, failed: {e}");
                expect_fetch_error(e, i);
            }
        }
    }
    // Long reads up to the damage on either side are coalesced and read.
    let before = r.stats();
    let (a, b) = (raw(0).start, raw(lost[0] - 1).end);
    assert!(r.read_range(a as u64, (b - a) as u64).unwrap() == data[a..b]);
    let (a, b) = (raw(lost[lost.len() - 1] + 1).start, data.len());
    assert!(r.read_range(a as u64, (b - a) as u64).unwrap() == data[a..b]);
    let after = r.stats();
    let frames = (lost[0] + entries.len() - lost[lost.len() - 1] - 1) as u64;
    assert_eq!(after.frames_decoded - before.frames_decoded, frames);
    assert!(after.fetches - before.fetches < frames, "neighbouring frames were fetched together");
    // A read from good frames into the damage fails naming the first damaged frame (its
    // coalesced request failed; frame by frame, that is the first to fail); the same good
    // frames read alone still read.
    let (a, b) = (raw(lost[0] - 3).start, raw(lost[0] + 1).end);
    expect_fetch_error(r.read_range(a as u64, (b - a) as u64).unwrap_err(), lost[0]);
    let b = raw(lost[0] - 1).end;
    assert!(r.read_range(a as u64, (b - a) as u64).unwrap() == data[a..b]);
    // The whole object, on several threads: the first damaged frame is named.
    let cached = reader(64 << 20);
    expect_fetch_error(cached.copy_to(std::io::sink(), 2).unwrap_err(), lost[0]);
    expect_fetch_error(cached.read_range(0, data.len() as u64).unwrap_err(), lost[0]);

    // The CLI: one clear line naming the frame, exit 1, within a bounded time.
    let cat = |offset: usize, length: usize| {
        adz()
            .args(["cat", &url, "--offset", &offset.to_string(), "--length", &length.to_string()])
            .output()
            .unwrap()
    };
    let start = Instant::now();
    let o = cat(raw(target).start + 1000, 64);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "no bytes of a damaged frame");
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    let named = format!("frame {target} at offset {}", t.file_offset);
    assert!(e.starts_with("adz: error: ") && e.contains(&named), "{e}");
    assert!(start.elapsed() < Duration::from_secs(30), "bounded retries");
    for i in [0, lost[0] - 1, lost[lost.len() - 1] + 1, entries.len() - 1] {
        let o = cat(raw(i).start + 5, 1000);
        assert!(o.status.success(), "frame {i}: {}", stderr(&o));
        assert!(o.stdout == data[raw(i).start + 5..raw(i).start + 1005], "cat of frame {i}");
    }
    // MinIO kept the object; nothing else changed.
    assert_eq!(store.size(&key).unwrap(), object.len() as u64);
    store.delete(&key).unwrap();
}
