//! `S3Storage` against a real S3-compatible server (MinIO on 127.0.0.1, started by
//! `make s3-test`, which runs `scripts/minio.sh`).
//!
//! The server comes from the environment: `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `ADZ_S3_BUCKET` (see `scripts/minio.sh start`). Without an
//! endpoint each test prints why it is skipped and passes, unless `ADZ_REQUIRE_S3=1`, which
//! makes it fail. Only loopback endpoints are used.
#![cfg(feature = "s3")]

use std::time::Duration;

use adz_store::conformance::run_all;
use adz_store::s3::{S3Config, S3Storage, MIN_PART};
use adz_store::{Error, FaultPlan, Faulty, RemoteKind, RetryPolicy, Retrying, Storage};

/// The test server's configuration and bucket, or `None` (after saying why) to skip.
fn server() -> Option<(S3Config, String)> {
    let required = std::env::var("ADZ_REQUIRE_S3").is_ok_and(|v| v == "1");
    let skip = |why: &str| {
        assert!(!required, "ADZ_REQUIRE_S3=1 but {why}");
        eprintln!("skipping S3 test: {why} (run `make s3-test` to start MinIO)");
        None
    };
    let config = S3Config::from_env();
    let Some(endpoint) = config.endpoint.clone() else {
        return skip("AWS_ENDPOINT_URL is not set");
    };
    let host = endpoint.split("://").nth(1).unwrap_or("").split(['/', ':']).next().unwrap_or("");
    if !["127.0.0.1", "localhost", "[", "::1"].iter().any(|h| host.starts_with(h)) {
        return skip("AWS_ENDPOINT_URL is not on loopback; these tests only use 127.0.0.1");
    }
    let bucket = std::env::var("ADZ_S3_BUCKET").unwrap_or_else(|_| "adz-test".to_owned());
    Some((config.retry(RetryPolicy::new(3, Duration::from_millis(50))), bucket))
}

macro_rules! server_or_skip {
    () => {
        match server() {
            Some(s) => s,
            None => return,
        }
    };
}

/// Bytes that differ at every offset, so a misplaced part shows.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

fn assert_not_found<T: std::fmt::Debug>(r: adz_store::Result<T>) {
    assert!(matches!(r, Err(Error::NotFound { .. })), "expected NotFound, got {r:?}");
}

#[test]
fn conformance() {
    let (config, bucket) = server_or_skip!();
    run_all(&S3Storage::new(&bucket, config).unwrap().retrying());
}

#[test]
fn conformance_with_small_parts_and_one_stream() {
    // 5 MiB parts: the 2.5 MB uploads stay single PUTs, so run the multipart path below too.
    let (config, bucket) = server_or_skip!();
    let store = S3Storage::new(&bucket, config.part_size(MIN_PART).streams(1)).unwrap();
    adz_store::conformance::upload_commit_visible_only_after_commit(&store);
    adz_store::conformance::abort_leaves_nothing(&store);
    adz_store::conformance::overwrite(&store);
}

#[test]
fn multipart_upload_of_several_parts() {
    let (config, bucket) = server_or_skip!();
    let store = S3Storage::new(&bucket, config.part_size(MIN_PART).streams(2)).unwrap();
    let name = "adz-s3-tests/multipart/object";
    let _ = store.delete(name);
    // 4 full parts and a short last one, appended in odd-sized chunks.
    let data = pattern(4 * MIN_PART as usize + 123_457, 1);
    let mut upload = store.create(name).unwrap();
    for chunk in data.chunks(1_000_003) {
        upload.append(chunk).unwrap();
        assert_not_found(store.size(name));
    }
    assert_eq!(upload.bytes_written(), data.len() as u64);
    assert_eq!(upload.commit().unwrap(), data.len() as u64);
    assert_eq!(store.size(name).unwrap(), data.len() as u64);
    assert!(store.get(name).unwrap() == data, "the parts came back in order");
    // Ranges across part boundaries, and the tail in one request.
    for start in [MIN_PART - 10, 2 * MIN_PART - 1, 4 * MIN_PART] {
        let range = start..(start + 1000).min(data.len() as u64);
        let got = store.get_range(name, range.clone()).unwrap();
        assert!(got == data[range.start as usize..range.end as usize], "{range:?}");
    }
    let tail = store.get_tail(name, 40).unwrap();
    assert_eq!(tail.bytes, data[data.len() - 40..]);
    store.delete(name).unwrap();
}

#[test]
fn abort_after_parts_were_sent_leaves_nothing() {
    let (config, bucket) = server_or_skip!();
    let store = S3Storage::new(&bucket, config.part_size(MIN_PART).streams(2)).unwrap();
    let name = "adz-s3-tests/abort/object";
    let old = pattern(1000, 2);
    store.put(name, &old).unwrap();
    let mut upload = store.create(name).unwrap();
    upload.append(&pattern(3 * MIN_PART as usize, 3)).unwrap(); // three parts went out
    upload.abort().unwrap();
    assert_eq!(store.get(name).unwrap(), old, "the old object is untouched");

    let mut upload = store.create(name).unwrap();
    upload.append(&pattern(2 * MIN_PART as usize + 1, 4)).unwrap();
    drop(upload);
    assert_eq!(store.get(name).unwrap(), old, "a dropped upload changes nothing");
    store.delete(name).unwrap();
    assert!(store.list("adz-s3-tests/abort/").unwrap().is_empty());
}

#[test]
fn a_killed_upload_leaves_no_object() {
    let (config, bucket) = server_or_skip!();
    let store = S3Storage::new(&bucket, config.part_size(MIN_PART).streams(2)).unwrap();
    let name = "adz-s3-tests/killed/object";
    let _ = store.delete(name);
    let mut upload = store.create(name).unwrap();
    upload.append(&pattern(3 * MIN_PART as usize, 5)).unwrap();
    // A killed process neither commits nor aborts: the upload is simply forgotten.
    std::mem::forget(upload);
    std::thread::sleep(Duration::from_millis(500)); // parts still in flight land
    assert_not_found(store.size(name));
    assert!(store.list("adz-s3-tests/killed/").unwrap().is_empty());
}

#[test]
fn a_failed_upload_leaves_no_object_and_says_why() {
    let (config, bucket) = server_or_skip!();
    let good = S3Storage::new(&bucket, config.clone()).unwrap();
    let name = "adz-s3-tests/failed/object";
    let _ = good.delete(name);
    // Wrong secret: the first part fails, once, with a clear kind (no retry storm).
    let bad = S3Storage::new(
        &bucket,
        config.credentials("adz-test-user", "wrong-secret").part_size(MIN_PART),
    )
    .unwrap()
    .retrying();
    let mut upload = bad.create(name).unwrap();
    let err = upload.append(&pattern(2 * MIN_PART as usize, 6)).unwrap_err();
    assert!(
        matches!(err, Error::Remote { kind: RemoteKind::Unauthenticated, .. }),
        "expected Unauthenticated, got {err:?}"
    );
    assert!(upload.commit().is_err(), "a failed upload cannot be committed");
    assert_not_found(good.size(name));
    assert_eq!(bad.retries(), 0, "rejected credentials are not retried");
    match bad.put(name, b"small") {
        Err(Error::Remote { kind: RemoteKind::Unauthenticated, .. }) => {}
        other => panic!("expected Unauthenticated, got {other:?}"),
    }
    assert_not_found(good.size(name));
}

#[test]
fn missing_bucket_is_named() {
    let (config, _) = server_or_skip!();
    let store = S3Storage::new("adz-no-such-bucket", config).unwrap();
    match store.put("a", b"x") {
        Err(e @ Error::Remote { kind: RemoteKind::NoSuchBucket, .. }) => {
            assert!(e.to_string().contains("bucket does not exist"), "{e}")
        }
        other => panic!("expected NoSuchBucket, got {other:?}"),
    }
}

#[test]
fn retrying_rides_out_transient_failures() {
    let (config, bucket) = server_or_skip!();
    let s3 = S3Storage::new(&bucket, config).unwrap();
    let flaky = Faulty::new(s3, FaultPlan::new().transient_failures(2));
    let store = Retrying::new(flaky, RetryPolicy::new(4, Duration::from_millis(10)));
    let name = "adz-s3-tests/retry/object";
    let data = pattern(100_000, 7);
    store.put(name, &data).unwrap(); // two failures, then the put
    assert_eq!(store.retries(), 2);
    store.inner().set_plan(FaultPlan::new().transient_failures(3));
    assert_eq!(store.get_range(name, 10..20).unwrap(), data[10..20]);
    assert_eq!(store.retries(), 5);
    // An answer lost after the delete happened: the repeat finds nothing, which is success.
    store.inner().set_plan(FaultPlan::new().transient_failures_after_call(1));
    store.delete(name).unwrap();
    assert_not_found(store.size(name));
    // Persistent failure: bounded, with the last error kept.
    store.inner().set_plan(FaultPlan::new().transient_failures(100));
    match store.get(name) {
        Err(Error::RetriesExhausted { attempts: 4, .. }) => {}
        other => panic!("expected RetriesExhausted, got {other:?}"),
    }
}

/// A MinIO of this test's own (`scripts/minio.sh`), stopped when dropped.
struct OwnServer {
    state: tempfile::TempDir,
}

impl OwnServer {
    fn script() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/minio.sh")
    }

    fn run(&self, cmd: &str) {
        let status = std::process::Command::new(Self::script())
            .args([cmd, self.state.path().to_str().unwrap()])
            .status()
            .expect("run scripts/minio.sh");
        assert!(status.success(), "minio.sh {cmd} failed");
    }

    fn start() -> OwnServer {
        let server = OwnServer { state: tempfile::tempdir().unwrap() };
        server.run("start");
        server
    }

    fn endpoint(&self) -> String {
        let env = std::fs::read_to_string(self.state.path().join("env")).unwrap();
        let line = env.lines().find(|l| l.starts_with("export AWS_ENDPOINT_URL=")).unwrap();
        line.split_once('=').unwrap().1.to_owned()
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new(Self::script())
            .args(["stop", self.state.path().to_str().unwrap()])
            .status();
    }
}

#[test]
fn server_killed_mid_upload_then_restarted() {
    // Needs the MinIO binary; `make s3-test` has it. The shared server is not touched.
    let (config, bucket) = server_or_skip!();
    let server = OwnServer::start();
    let config = config
        .endpoint(server.endpoint())
        .part_size(MIN_PART)
        .streams(2)
        .retry(RetryPolicy::new(3, Duration::from_millis(100)))
        .timeouts(Duration::from_secs(10), Duration::from_secs(2));
    let store = S3Storage::new(&bucket, config).unwrap().retrying();
    let name = "adz-s3-tests/killed-server/object";
    let data = pattern(6 * MIN_PART as usize, 11);

    let mut upload = store.create(name).unwrap();
    upload.append(&data[..2 * MIN_PART as usize]).unwrap();
    server.run("kill");
    let started = std::time::Instant::now();
    // The failure shows on a later append (a part waiting for room) or at the latest on commit.
    let failed =
        upload.append(&data[2 * MIN_PART as usize..]).and_then(|()| upload.commit().map(drop));
    let err = failed.expect_err("a write to a dead server must fail");
    assert!(started.elapsed() < Duration::from_secs(30), "bounded: {:?}", started.elapsed());
    let chain = {
        let mut s = err.to_string();
        let mut e: &dyn std::error::Error = &err;
        while let Some(src) = e.source() {
            s += &format!(": {src}");
            e = src;
        }
        s
    };
    assert!(chain.contains("cannot connect") || chain.contains("connection"), "{chain}");

    server.run("restart");
    assert_not_found(store.size(name));
    assert!(store.list("adz-s3-tests/killed-server/").unwrap().is_empty());
    // Writing again succeeds.
    let mut upload = store.create(name).unwrap();
    upload.append(&data).unwrap();
    upload.commit().unwrap();
    assert!(store.get(name).unwrap() == data);
}

#[test]
fn eight_writers_then_eight_readers_of_random_ranges() {
    let (config, bucket) = server_or_skip!();
    let store = S3Storage::new(&bucket, config.part_size(MIN_PART).streams(2)).unwrap().retrying();
    let objects: Vec<(String, Vec<u8>)> = (0..8u64)
        .map(|i| {
            (
                format!("adz-s3-tests/scale/obj-{i}"),
                pattern(MIN_PART as usize + 77_777 * i as usize, 20 + i),
            )
        })
        .collect();
    std::thread::scope(|s| {
        for (name, data) in &objects {
            let store = &store;
            s.spawn(move || {
                let mut upload = store.create(name).unwrap();
                for chunk in data.chunks(1 << 20) {
                    upload.append(chunk).unwrap();
                }
                upload.commit().unwrap();
            });
        }
    });
    std::thread::scope(|s| {
        for reader in 0..8u64 {
            let (store, objects) = (&store, &objects);
            s.spawn(move || {
                let rand = pattern(8 * 32, 100 + reader);
                for (k, chunk) in rand.chunks(8).enumerate() {
                    let x = u64::from_le_bytes(chunk.try_into().unwrap());
                    let (name, data) = &objects[k % objects.len()];
                    let start = x % data.len() as u64;
                    let end = (start + 1 + (x >> 40) % 300_000).min(data.len() as u64);
                    let got = store.get_range(name, start..end).unwrap();
                    assert!(got == data[start as usize..end as usize], "{name} {start}..{end}");
                }
            });
        }
    });
    for (name, _) in &objects {
        store.delete(name).unwrap();
    }
}
