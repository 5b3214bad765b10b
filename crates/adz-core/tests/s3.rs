//! Datasets on a real S3-compatible server: MinIO on 127.0.0.1, started by `make s3-test`
//! (`scripts/minio.sh start`). Many writer threads, one commit through the conditional put,
//! racing commits, readers during commits, gc; and a 4-node erasure-coded MinIO (started here
//! with `scripts/minio.sh start-dist`) that loses a node in the middle of a write.
//!
//! Without `AWS_ENDPOINT_URL` each test says why it is skipped and passes, unless
//! `ADZ_REQUIRE_S3=1`.
#![cfg(feature = "s3")]

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use adz_core::dataset::{
    manifest_name, manifest_prefix, parts_prefix, Dataset, DatasetError, DatasetReader,
    DatasetWriter, GcOptions, Placement,
};
use adz_core::store::s3::{S3Config, S3Storage};
use adz_core::store::{self, ObjectMeta, Storage, Tail, Upload};
use adz_core::{open, ReaderOptions, WriteOptions};
use adz_datagen::{generate, Kind};

fn required() -> bool {
    std::env::var("ADZ_REQUIRE_S3").is_ok_and(|v| v == "1")
}

/// The bucket, or `None` (after saying why) to skip.
fn bucket() -> Option<String> {
    adz_store::conformance::s3_test_bucket()
}

macro_rules! bucket_or_skip {
    () => {
        match bucket() {
            Some(b) => b,
            None => return,
        }
    };
}

/// The store (as every front end opens it: S3 behind `Retrying`) and a dataset name of its
/// own for each test and run.
fn dataset(bucket: &str, test: &str) -> (Arc<dyn Storage>, String) {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let url = format!("s3://{bucket}/adz-core-tests/{test}-{}-{nanos}/ds", std::process::id());
    open::storage_for(&url).unwrap()
}

fn opts() -> WriteOptions {
    WriteOptions {
        strategy: "static=zstd:1".parse().unwrap(),
        threads: 1,
        block_size: 64 << 10,
        ..Default::default()
    }
}

/// Part `i`'s bytes: text and random bytes in turn, each part distinct.
fn part_data(i: usize, len: usize) -> Vec<u8> {
    let kind = if i % 2 == 0 { Kind::Text } else { Kind::Random };
    generate(kind, len, 1000 + i as u64)
}

fn write_part(store: &dyn Storage, name: &str, id: &str, at: Placement, data: &[u8]) {
    let mut w = DatasetWriter::create(store, name, id, at, opts()).unwrap();
    for chunk in data.chunks(50_000) {
        w.write(chunk).unwrap();
    }
    w.finish().unwrap();
}

/// `count` ranges of at most `max_len` bytes in `0..len`, from a fixed seed.
fn ranges(len: u64, count: usize, max_len: u64) -> Vec<Range<u64>> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..count)
        .map(|_| {
            let start = next() % len;
            start..(start + 1 + next() % max_len).min(len)
        })
        .collect()
}

fn check_reads(r: &DatasetReader, expected: &[u8], count: usize) {
    assert_eq!(r.len(), expected.len() as u64);
    assert!(r.read_range(0, r.len()).unwrap() == expected, "the whole dataset differs");
    for range in ranges(r.len(), count, 400_000) {
        let got = r.read_range(range.start, range.end - range.start).unwrap();
        assert!(
            got == expected[range.start as usize..range.end as usize],
            "range {range:?} differs"
        );
    }
}

#[test]
fn writer_threads_commit_read_and_gc() {
    let bucket = bucket_or_skip!();
    let (store, name) = dataset(&bucket, "threads");
    // 8 writers at once: 4 placed at their displacement (as MPI ranks), 4 appended at commit.
    let data: Vec<Vec<u8>> = (0..8).map(|i| part_data(i, 200_000 + i * 7_000)).collect();
    let placed_len: usize = data[..4].iter().map(Vec::len).sum();
    std::thread::scope(|s| {
        let mut at = 0;
        for (i, d) in data.iter().enumerate() {
            let placement = if i < 4 { Placement::At(at) } else { Placement::Append };
            at += if i < 4 { d.len() as u64 } else { 0 };
            let (store, name) = (&store, &name);
            s.spawn(move || write_part(&**store, name, &format!("w{i}"), placement, d));
        }
    });
    assert!(Dataset::latest(&*store, &name).unwrap().is_none(), "visible before the commit");

    let m = Dataset::commit(&*store, &name, None).unwrap();
    let expected = data.concat();
    assert_eq!((m.version, m.parts.len(), m.len), (1, 8, expected.len() as u64));
    assert_eq!(m.parts[4].offset, placed_len as u64, "appended parts follow the placed ones");
    assert!(m.gaps().is_empty());
    assert_eq!(Dataset::latest(&*store, &name).unwrap().as_ref(), Some(&m));

    let r = DatasetReader::open(store.clone(), &name, ReaderOptions::default()).unwrap();
    check_reads(&r, &expected, 50);
    // Across every boundary between two parts.
    let mut at = 0usize;
    for d in &data[..7] {
        at += d.len();
        let got = r.read_range(at as u64 - 100, 200).unwrap();
        assert!(got == expected[at - 100..at + 100], "across the boundary at {at}");
    }

    // A writer that finished after the commit: not in the dataset, listed and removed by gc.
    write_part(&*store, &name, "late", Placement::Append, b"late bytes");
    let dry = Dataset::gc(&*store, &name, GcOptions::dry_run()).unwrap();
    let late = format!("{}late.append.adz", parts_prefix(&name));
    assert_eq!(dry.parts, vec![late.clone()]);
    assert!(store.size(&late).is_ok(), "a dry run removes nothing");
    let done = Dataset::gc(&*store, &name, GcOptions::default()).unwrap();
    assert_eq!(done.parts, vec![late.clone()]);
    assert!(matches!(store.size(&late), Err(store::Error::NotFound { .. })));
    assert_eq!(store.list(&parts_prefix(&name)).unwrap().len(), 8);
    check_reads(&r, &expected, 5);
}

#[test]
fn put_if_absent_creates_once_on_minio() {
    let bucket = bucket_or_skip!();
    let (store, name) = dataset(&bucket, "put-if-absent");
    let obj = format!("{name}.x");
    store.put_if_absent(&obj, b"first").unwrap();
    let err = store.put_if_absent(&obj, b"second").unwrap_err();
    assert!(matches!(err, store::Error::AlreadyExists { .. }), "{err:?}");
    assert_eq!(store.get(&obj).unwrap(), b"first");
}

#[test]
fn racing_commits_one_wins_each_version() {
    let bucket = bucket_or_skip!();
    let (store, name) = dataset(&bucket, "race");
    for i in 0..2 {
        write_part(&*store, &name, &format!("w{i}"), Placement::Append, &part_data(i, 30_000));
    }
    const RACERS: usize = 6;
    for round in 0..3u64 {
        let barrier = Barrier::new(RACERS);
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..RACERS)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        Dataset::commit(&*store, &name, Some(round))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let wins = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "round {round}: {results:?}");
        for e in results.iter().filter_map(|r| r.as_ref().err()) {
            assert!(matches!(e, DatasetError::CommitConflict { .. }), "{e:?}");
            assert!(e.to_string().contains("retry the commit"), "{e}");
        }
        assert_eq!(Dataset::latest_version(&*store, &name).unwrap(), round + 1);
    }
    // The conditional put decided: no candidate was ever written (they are left by no one).
    for o in store.list(&manifest_prefix(&name)).unwrap() {
        assert!(o.name[manifest_prefix(&name).len()..].starts_with('v'), "{}", o.name);
    }
}

/// A store that, just before a commit writes manifest `vN`, lets a rival commit write its own
/// `vN` first (unconditionally, as one that won the race a moment earlier would have).
#[derive(Debug)]
struct RivalFirst {
    inner: Arc<dyn Storage>,
    manifest: String,
}

impl RivalFirst {
    fn rival_wins(&self, name: &str) {
        if name == self.manifest && self.inner.size(name).is_err() {
            self.inner.put(name, b"{\"rival\": true}").unwrap();
        }
    }
}

impl Storage for RivalFirst {
    fn create(&self, name: &str) -> store::Result<Box<dyn Upload>> {
        self.rival_wins(name);
        self.inner.create(name)
    }
    fn put(&self, name: &str, data: &[u8]) -> store::Result<()> {
        self.rival_wins(name);
        self.inner.put(name, data)
    }
    fn put_if_absent(&self, name: &str, data: &[u8]) -> store::Result<()> {
        self.rival_wins(name);
        self.inner.put_if_absent(name, data)
    }
    fn get_range(&self, name: &str, range: Range<u64>) -> store::Result<Vec<u8>> {
        self.inner.get_range(name, range)
    }
    fn get(&self, name: &str) -> store::Result<Vec<u8>> {
        self.inner.get(name)
    }
    fn get_tail(&self, name: &str, max_len: u64) -> store::Result<Tail> {
        self.inner.get_tail(name, max_len)
    }
    fn size(&self, name: &str) -> store::Result<u64> {
        self.inner.size(name)
    }
    fn delete(&self, name: &str) -> store::Result<()> {
        self.inner.delete(name)
    }
    fn list(&self, prefix: &str) -> store::Result<Vec<ObjectMeta>> {
        self.inner.list(prefix)
    }
}

#[test]
fn a_commit_that_loses_the_version_fails_and_keeps_the_winner() {
    let bucket = bucket_or_skip!();
    let (inner, name) = dataset(&bucket, "lose");
    write_part(&*inner, &name, "w0", Placement::Append, &part_data(0, 10_000));
    let store = RivalFirst { inner: inner.clone(), manifest: manifest_name(&name, 1) };
    let err = Dataset::commit(&store, &name, None).unwrap_err();
    assert!(matches!(err, DatasetError::CommitConflict { version: 1, .. }), "{err:?}");
    assert_eq!(inner.get(&manifest_name(&name, 1)).unwrap(), b"{\"rival\": true}");
}

/// A store whose conditional put is sent twice, the first answer lost: what `Retrying` does
/// after a timeout on a request that the server did carry out.
#[derive(Debug)]
struct LostAnswer(Arc<dyn Storage>);

impl Storage for LostAnswer {
    fn create(&self, name: &str) -> store::Result<Box<dyn Upload>> {
        self.0.create(name)
    }
    fn put_if_absent(&self, name: &str, data: &[u8]) -> store::Result<()> {
        self.0.put_if_absent(name, data)?;
        self.0.put_if_absent(name, data)
    }
    fn get_range(&self, name: &str, range: Range<u64>) -> store::Result<Vec<u8>> {
        self.0.get_range(name, range)
    }
    fn size(&self, name: &str) -> store::Result<u64> {
        self.0.size(name)
    }
    fn delete(&self, name: &str) -> store::Result<()> {
        self.0.delete(name)
    }
    fn list(&self, prefix: &str) -> store::Result<Vec<ObjectMeta>> {
        self.0.list(prefix)
    }
}

#[test]
fn a_retried_conditional_put_of_the_commit_is_its_own() {
    let bucket = bucket_or_skip!();
    let (inner, name) = dataset(&bucket, "retried");
    write_part(&*inner, &name, "w0", Placement::Append, &part_data(0, 10_000));
    let m = Dataset::commit(&LostAnswer(inner.clone()), &name, None).unwrap();
    assert_eq!(m.version, 1);
    assert_eq!(Dataset::latest(&*inner, &name).unwrap(), Some(m));
}

#[test]
fn readers_during_commits_see_one_whole_version() {
    let bucket = bucket_or_skip!();
    let (store, name) = dataset(&bucket, "readers");
    let data: Vec<Vec<u8>> = (0..5).map(|i| part_data(i, 40_000 + i * 1000)).collect();
    // Version v holds parts 0..v: what a reader of version v must see, whole.
    let expected: Vec<Vec<u8>> = (0..=data.len()).map(|v| data[..v].concat()).collect();
    write_part(&*store, &name, "p0", Placement::Append, &data[0]);
    Dataset::commit(&*store, &name, None).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let seen = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut seen = std::collections::BTreeSet::new();
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let r = DatasetReader::open(store.clone(), &name, ReaderOptions::default())
                    .unwrap_or_else(|e| panic!("open during a commit: {e}"));
                let v = r.manifest().version as usize;
                let got = r.read_range(0, r.len()).unwrap();
                assert!(got == expected[v], "version {v} read other bytes than its parts");
                seen.insert(v);
            }
            seen
        });
        for (i, d) in data.iter().enumerate().skip(1) {
            write_part(&*store, &name, &format!("p{i}"), Placement::Append, d);
            Dataset::commit(&*store, &name, None).unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
        reader.join().unwrap()
    });
    eprintln!("the reader saw versions {seen:?}");
    assert!(!seen.is_empty());
}

/// A 4-node MinIO of `scripts/minio.sh start-dist`, stopped (data removed) on drop.
struct DistMinio {
    state: tempfile::TempDir,
    env: HashMap<String, String>,
}

fn minio_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/minio.sh")
}

impl DistMinio {
    /// Starts it with the MinIO binary `ADZ_MINIO_BIN` (written by `minio.sh start`), or
    /// `None` (after saying why) to skip.
    fn start() -> Option<DistMinio> {
        let Ok(bin) = std::env::var("ADZ_MINIO_BIN") else {
            assert!(!required(), "ADZ_REQUIRE_S3=1 but ADZ_MINIO_BIN is not set");
            eprintln!("skipping the 4-node test: ADZ_MINIO_BIN is not set (make s3-test sets it)");
            return None;
        };
        let state = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let status = Command::new(minio_sh())
            .arg("start-dist")
            .arg(state.path())
            .env("MINIO", &bin)
            .status()
            .unwrap();
        assert!(status.success(), "scripts/minio.sh start-dist failed: {status}");
        eprintln!("4-node MinIO up in {:.1} s", t.elapsed().as_secs_f64());
        let text = std::fs::read_to_string(state.path().join("env")).unwrap();
        let env = text
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
            .collect();
        Some(DistMinio { state, env })
    }

    fn store(&self) -> S3Storage {
        let config = S3Config::default()
            .endpoint(&self.env["AWS_ENDPOINT_URL"])
            .credentials(&self.env["AWS_ACCESS_KEY_ID"], &self.env["AWS_SECRET_ACCESS_KEY"])
            .allow_http(true)
            .timeouts(Duration::from_secs(30), Duration::from_secs(5));
        S3Storage::new(&self.env["ADZ_S3_BUCKET"], config).unwrap()
    }

    fn kill_node(&self, node: u32) {
        let status = Command::new(minio_sh())
            .arg("kill-node")
            .arg(self.state.path())
            .arg(node.to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill-node {node}: {status}");
    }
}

impl Drop for DistMinio {
    fn drop(&mut self) {
        let _ = Command::new(minio_sh()).arg("stop").arg(self.state.path()).status();
    }
}

#[test]
fn four_node_minio_loses_a_node_mid_write_and_keeps_every_byte() {
    let _ = bucket_or_skip!();
    let Some(minio) = DistMinio::start() else { return };
    let store: Arc<dyn Storage> = Arc::new(minio.store().retrying());
    let name = "dist/ds";
    const WRITERS: usize = 4;
    // 12 MiB each, incompressible half and text half: the first 7 MiB go out (a 5 MiB part of
    // a multipart upload at least) before node 3 dies, the rest after.
    let data: Vec<Vec<u8>> = (0..WRITERS)
        .map(|i| {
            let mut d = generate(Kind::Random, 7 << 20, i as u64);
            d.extend(generate(Kind::Text, 5 << 20, i as u64));
            d
        })
        .collect();
    let before_kill = Barrier::new(WRITERS + 1);
    let after_kill = Barrier::new(WRITERS + 1);
    let t = Instant::now();
    let reruns = std::thread::scope(|s| {
        let writers: Vec<_> = data
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let (store, before_kill, after_kill) = (&store, &before_kill, &after_kill);
                s.spawn(move || {
                    let id = format!("w{i}");
                    let at = Placement::At((i * d.len()) as u64);
                    let mut w = DatasetWriter::create(&**store, name, &id, at, opts()).unwrap();
                    let (first, rest) = d.split_at(7 << 20);
                    let mut failed = first.chunks(1 << 20).try_for_each(|c| w.write(c)).err();
                    before_kill.wait();
                    after_kill.wait();
                    if failed.is_none() {
                        failed = rest.chunks(1 << 20).try_for_each(|c| w.write(c)).err();
                    }
                    let failed = match failed {
                        None => w.finish().err(),
                        Some(e) => {
                            drop(w); // aborts its upload
                            Some(e)
                        }
                    };
                    // A write may fail cleanly when the node dies under it; a rerun succeeds.
                    if let Some(e) = failed {
                        eprintln!("writer {i} failed ({e}); rerunning it");
                        write_part(&**store, name, &id, at, d);
                        return 1;
                    }
                    0
                })
            })
            .collect();
        before_kill.wait();
        minio.kill_node(3);
        after_kill.wait();
        writers.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
    });
    eprintln!(
        "{WRITERS} writers, {} MiB, node 3 killed mid-write: {:.1} s, {reruns} rerun(s)",
        (WRITERS * data[0].len()) >> 20,
        t.elapsed().as_secs_f64()
    );

    // Commit and read with node 3 still down.
    let m = Dataset::commit(&*store, name, None).unwrap();
    let expected = data.concat();
    assert_eq!((m.parts.len(), m.len), (WRITERS, expected.len() as u64));
    let r = DatasetReader::open(store.clone(), name, ReaderOptions::default()).unwrap();
    check_reads(&r, &expected, 20);
    eprintln!("committed and read back in {:.1} s in all", t.elapsed().as_secs_f64());
}
