//! Tiers with an S3 bottom tier on a real MinIO (run by `make s3-test`): writing, measuring,
//! capacity and gc on S3; and a MinIO of the test's own, stopped (SIGSTOP) and then killed
//! and restarted on the same data in the middle of flushes, after which every byte reads back
//! equal to the source and evict + gc leave each segment exactly once.
//!
//! Without `AWS_ENDPOINT_URL` (and `ADZ_MINIO_BIN` for the test's own MinIO) each test says
//! why it is skipped and passes, unless `ADZ_REQUIRE_S3=1`.
#![cfg(feature = "s3")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use adz_datagen::{generate, Kind};
use adz_store::{FaultPlan, Faulty, LocalStorage, Storage};
use adz_tier::{CostTable, RungCost, Tiered, TiersConfig};
use xxhash_rust::xxh3::xxh3_64;

fn required() -> bool {
    std::env::var("ADZ_REQUIRE_S3").is_ok_and(|v| v == "1")
}

/// A key prefix of its own for each test and run.
fn unique(test: &str) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("adz-tier-tests/{test}-{}-{nanos}", std::process::id())
}

/// One rung only, lz4:1, so that the S3 tier's `rung = "zstd:3"` re-encodes on a flush.
fn lz4_only() -> CostTable {
    let cost = RungCost { speed: 500e6, ratio: 2.0 };
    CostTable::new(vec!["lz4:1".parse().unwrap()], vec![vec![cost]]).unwrap()
}

fn text(len: usize) -> Vec<u8> {
    generate(Kind::Text, len, 11)
}

/// Segments the catalog of dataset "d" places on `tier`.
fn segments_on(tiers: &Tiered, tier: &str) -> usize {
    let cat = tiers.catalog("d").unwrap();
    cat.segments.iter().filter(|s| s.copies.iter().any(|c| c.tier == tier)).count()
}

/// Dataset "d" reads back equal to `data`, and every catalogued copy is on its tier, whole.
fn check_consistent(tiers: &Tiered, data: &[u8]) {
    let r = tiers.reader("d").unwrap();
    let mut out = Vec::new();
    r.copy_to(&mut out, 2).unwrap();
    assert!(out == data, "the dataset reads back equal to the source");
    for s in &r.catalog().segments {
        assert!(!s.copies.is_empty());
        for c in &s.copies {
            let tier = tiers.tiers().iter().find(|t| t.config.name == c.tier).unwrap();
            assert_eq!(xxh3_64(&tier.store.get(&c.object).unwrap()), c.xxh3, "{c:?}");
        }
    }
}

/// Segment objects (`NAME/ID.adz`) on tier `t`.
fn segment_objects(tiers: &Tiered, t: usize) -> BTreeSet<String> {
    let objects = tiers.tiers()[t].store.list("").unwrap();
    objects.into_iter().map(|o| o.name).filter(|n| n.ends_with(".adz")).collect()
}

/// After evict + gc: the upper tier holds no segment, the bottom one exactly the catalog's
/// objects, each segment once.
fn check_each_segment_once(tiers: &Tiered) {
    assert_eq!(segment_objects(tiers, 0), BTreeSet::new(), "nothing is left on the fast tier");
    let cat = tiers.catalog("d").unwrap();
    let named: BTreeSet<String> = cat
        .segments
        .iter()
        .map(|s| {
            assert_eq!(s.copies.len(), 1, "{s:?}");
            s.copies[0].object.clone()
        })
        .collect();
    assert_eq!(named.len(), cat.segments.len());
    assert_eq!(segment_objects(tiers, 1), named, "the bottom tier holds each segment once");
}

/// Deletes everything a test left on an S3 tier.
fn clean(tiers: &Tiered, t: usize) {
    let store = &tiers.tiers()[t].store;
    for o in store.list("").unwrap() {
        store.delete(&o.name).unwrap();
    }
}

/// The shared MinIO of `make s3-test` as the bottom tier, configured from the environment:
/// a "measure"d bandwidth that leaves no object, writes placed on S3 within its capacity,
/// reads, and a failed catalog save after the S3 write whose orphan `gc` removes from S3.
#[test]
fn an_s3_bottom_tier_writes_measures_and_collects_orphans() {
    let Some(bucket) = adz_store::conformance::s3_test_bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"
        catalog = "catalog"
        batch = "512KiB"
        block_size = "64KiB"
        [[tier]]
        name = "fast"
        path = "fast"
        capacity = "1MiB"
        bandwidth = "4GB/s"
        [[tier]]
        name = "minio"
        path = "s3://{bucket}/{}"
        capacity = "64MiB"
        bandwidth = "measure"
        rung = "zstd:3"
        timeout = 20
    "#,
        unique("measure")
    );
    let mut config = TiersConfig::parse(&toml, dir.path()).unwrap();
    let tiers = Tiered::open(config.clone()).unwrap();
    assert!(tiers.tiers()[1].bandwidth > 0.0);
    assert!(tiers.tiers()[1].store.list("").unwrap().is_empty(), "the probe was deleted");

    // 4 MiB over a fast tier of 1 MiB: the rest goes to S3.
    let data = text(4 << 20);
    tiers.write("d", &mut &data[..], &lz4_only()).unwrap();
    assert!(segments_on(&tiers, "fast") > 0 && segments_on(&tiers, "minio") > 0);
    check_consistent(&tiers, &data);
    let cat = tiers.catalog("d").unwrap();
    let on_s3: u64 = cat
        .segments
        .iter()
        .flat_map(|s| &s.copies)
        .filter(|c| c.tier == "minio")
        .map(|c| c.stored)
        .sum();
    assert_eq!(tiers.used(1).unwrap(), on_s3, "capacity counts the prefix's objects");
    assert_eq!(tiers.free(1).unwrap(), (64 << 20) - on_s3);

    // The catalog save after the S3 write fails: the S3 copy is an orphan, the catalog still
    // names the fast tier, whose copy reads.
    config.tiers[1].bandwidth = Some(tiers.tiers()[1].bandwidth);
    let catalog = Arc::new(Faulty::pass_through(LocalStorage::new(&config.catalog).unwrap()));
    let stores: Vec<Arc<dyn Storage>> = tiers.tiers().iter().map(|t| t.store.clone()).collect();
    let faulty = Tiered::with_stores(config, stores, catalog.clone()).unwrap();
    let before = segment_objects(&tiers, 1);
    catalog.set_plan(FaultPlan::new().fail_commit());
    assert!(faulty.evict("fast", &lz4_only()).is_err());
    catalog.set_plan(FaultPlan::new());
    let orphans: Vec<String> = segment_objects(&tiers, 1).difference(&before).cloned().collect();
    assert_eq!(orphans.len(), 1, "the segment written to S3 before the failed save");
    assert!(segment_objects(&tiers, 0).contains(&orphans[0]), "its source is still above");
    check_consistent(&tiers, &data);
    assert!(tiers.gc().unwrap() > 0);
    assert_eq!(segment_objects(&tiers, 1), before, "gc removed the orphan from S3");
    check_consistent(&tiers, &data);

    tiers.evict("fast", &lz4_only()).unwrap();
    tiers.gc().unwrap();
    check_each_segment_once(&tiers);
    check_consistent(&tiers, &data);
    clean(&tiers, 1);
}

/// A MinIO of this test's own (`scripts/minio.sh start` on a free loopback port), so that
/// stopping it disturbs no other test; stopped, its data removed, on drop.
struct OwnMinio {
    state: tempfile::TempDir,
    endpoint: String,
}

fn minio_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/minio.sh")
}

impl OwnMinio {
    /// Starts it with the binary `ADZ_MINIO_BIN` (written by `minio.sh start`) and the
    /// environment's keys, or `None` (after saying why) to skip.
    fn start() -> Option<OwnMinio> {
        let Ok(bin) = std::env::var("ADZ_MINIO_BIN") else {
            assert!(!required(), "ADZ_REQUIRE_S3=1 but ADZ_MINIO_BIN is not set");
            eprintln!("skipping: ADZ_MINIO_BIN is not set (make s3-test sets it)");
            return None;
        };
        let state = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(minio_sh());
        cmd.arg("start").arg(state.path()).env("MINIO", &bin);
        for (var, key) in [
            ("AWS_ACCESS_KEY_ID", "ADZ_MINIO_USER"),
            ("AWS_SECRET_ACCESS_KEY", "ADZ_MINIO_PASSWORD"),
        ] {
            if let Ok(v) = std::env::var(var) {
                cmd.env(key, v);
            }
        }
        let status = cmd.status().unwrap();
        assert!(status.success(), "scripts/minio.sh start failed: {status}");
        let port = std::fs::read_to_string(state.path().join("port")).unwrap();
        Some(OwnMinio { endpoint: format!("http://127.0.0.1:{}", port.trim()), state })
    }

    fn pid(&self) -> String {
        std::fs::read_to_string(self.state.path().join("pid")).unwrap().trim().to_owned()
    }

    /// Sends `signal` (`STOP`, `CONT`) to the server.
    fn signal(&self, signal: &str) {
        let status = Command::new("kill").arg(format!("-{signal}")).arg(self.pid()).status();
        assert!(status.unwrap().success(), "kill -{signal}");
    }

    /// `minio.sh kill` (SIGKILL, as a crash) or `restart` (on the same port and data).
    fn script(&self, verb: &str) {
        let mut cmd = Command::new(minio_sh());
        cmd.arg(verb).arg(self.state.path());
        if let Ok(bin) = std::env::var("ADZ_MINIO_BIN") {
            cmd.env("MINIO", bin);
        }
        let status = cmd.status().unwrap();
        assert!(status.success(), "scripts/minio.sh {verb}: {status}");
    }
}

impl Drop for OwnMinio {
    fn drop(&mut self) {
        // A stopped server would not see the stop's SIGTERM.
        let _ = Command::new("kill").arg("-CONT").arg(self.pid()).status();
        let _ = Command::new(minio_sh()).arg("stop").arg(self.state.path()).status();
    }
}

/// Evicts the fast tier in a thread; once `after` more segments have reached the bottom
/// tier, runs `fault`. Returns whether the evict succeeded, and its seconds.
fn evict_with_fault(tiers: &Tiered, after: usize, fault: impl FnOnce()) -> (bool, f64) {
    let base = segments_on(tiers, "minio");
    let t0 = Instant::now();
    std::thread::scope(|s| {
        let flusher = s.spawn(|| {
            let r = tiers.evict("fast", &lz4_only());
            let secs = t0.elapsed().as_secs_f64();
            if let Err(e) = &r {
                eprintln!(
                    "the evict failed after {secs:.1} s: {e}: {:?}",
                    std::error::Error::source(e)
                );
            }
            (r.is_ok(), secs)
        });
        while segments_on(tiers, "minio") < base + after && !flusher.is_finished() {
            std::thread::sleep(Duration::from_millis(5));
        }
        fault();
        flusher.join().unwrap()
    })
}

#[test]
fn a_minio_bottom_tier_stopped_then_killed_and_restarted_during_flushes_loses_nothing() {
    let Some(bucket) = adz_store::conformance::s3_test_bucket() else { return };
    let Some(minio) = OwnMinio::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The bottom tier is throttled to 512 KB/s (each segment takes a few tenths of a second,
    // so the faults land in the middle), and a request fails after 2 s.
    let toml = format!(
        r#"
        catalog = "catalog"
        batch = "512KiB"
        block_size = "64KiB"
        [[tier]]
        name = "fast"
        path = "fast"
        bandwidth = "4GB/s"
        [[tier]]
        name = "minio"
        path = "s3://{bucket}/{}"
        bandwidth = "512KB/s"
        throttle = true
        rung = "zstd:3"
        endpoint = "{}"
        allow_http = true
        timeout = 2
    "#,
        unique("stop"),
        minio.endpoint
    );
    let tiers = Tiered::open(TiersConfig::parse(&toml, dir.path()).unwrap()).unwrap();
    let data = text(6 << 20);
    tiers.write("d", &mut &data[..], &lz4_only()).unwrap();
    let total = segments_on(&tiers, "fast");
    assert!(total >= 10 && segments_on(&tiers, "minio") == 0, "{total} segments, all above");

    // 1. The server stops answering (SIGSTOP) after 3 segments: the flush fails within
    // seconds (2 s per request, retries included), and the server continues.
    let (ok, secs) = evict_with_fault(&tiers, 3, || minio.signal("STOP"));
    minio.signal("CONT");
    assert!(!ok, "the flush to a stopped server must fail");
    assert!(secs < 60.0, "a stopped server failed the flush only after {secs:.0} s");
    let moved = segments_on(&tiers, "minio");
    assert!((3..total).contains(&moved), "{moved} of {total} segments moved");
    check_consistent(&tiers, &data);

    // 2. The server is killed (SIGKILL) after 2 more segments, and restarted on its data.
    let (ok, secs) = evict_with_fault(&tiers, 2, || minio.script("kill"));
    assert!(!ok, "the flush to a killed server must fail");
    assert!(secs < 60.0, "a killed server failed the flush only after {secs:.0} s");
    minio.script("restart");
    let moved_again = segments_on(&tiers, "minio");
    assert!(moved_again >= moved + 2 && moved_again < total, "{moved_again} of {total} moved");
    check_consistent(&tiers, &data);

    // 3. The flush finishes; gc leaves each segment once, on the bottom tier.
    tiers.evict("fast", &lz4_only()).unwrap();
    assert_eq!(segments_on(&tiers, "minio"), total);
    tiers.gc().unwrap();
    check_each_segment_once(&tiers);
    check_consistent(&tiers, &data);
}
