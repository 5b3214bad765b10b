//! Scratch measurement for README.md (not a test of the suite): copy to
//! crates/adz-fuse/tests/scratch_count.rs and run as the README says.
mod common;
use adz_store::s3::{S3Config, S3Storage};
use adz_store::Storage;
use std::sync::Arc;

#[test]
fn count_requests_of_a_sequential_read() {
    let bucket = adz_store::conformance::s3_test_bucket().unwrap();
    let s3: Arc<dyn Storage> = Arc::new(S3Storage::new(&bucket, S3Config::from_env()).unwrap());
    let counted = Arc::new(adz_store::Counting::new(s3));
    let stats = counted.stats_handle();
    let raw = common::data(64 << 20, 3);
    let prefix = format!("scratch-count-{}/", std::process::id());
    counted.put(&format!("{prefix}f.adz"), &common::adz_bytes(&raw, 1 << 20)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mut o = adz_fuse::MountOptions::default();
    o.spool = Some(dir.path().join("spool"));
    let m = adz_fuse::mount_store(
        Arc::clone(&counted) as Arc<dyn Storage>,
        &prefix,
        "s3://t/",
        &mnt,
        o,
    )
    .unwrap();
    common::wait_mounted(&mnt);
    let before = stats.snapshot();
    let t = std::time::Instant::now();
    common::run(common::bounded("dd").arg(format!("if={}", mnt.join("f").display())).args([
        "of=/dev/null",
        "bs=1M",
        "status=none",
    ]));
    let d = stats.snapshot().since(&before);
    eprintln!(
        "mount: {:?} reads {} bytes_read {} other {}",
        t.elapsed(),
        d.reads,
        d.bytes_read,
        d.other_calls
    );
    m.unmount().unwrap();
    let before = stats.snapshot();
    let t = std::time::Instant::now();
    let r = adz_core::Reader::open(
        Arc::clone(&counted) as Arc<dyn Storage>,
        &format!("{prefix}f.adz"),
        adz_core::ReaderOptions::default(),
    )
    .unwrap();
    r.copy_to(std::io::sink(), 0).unwrap();
    let d = stats.snapshot().since(&before);
    eprintln!(
        "copy_to: {:?} reads {} bytes_read {} other {}",
        t.elapsed(),
        d.reads,
        d.bytes_read,
        d.other_calls
    );
    counted.delete(&format!("{prefix}f.adz")).unwrap();
}
