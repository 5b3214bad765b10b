//! The object-store source of the mount (`mount_store`, as for `s3://`) over an in-memory
//! store, so that it runs without a server: lookups list one level (a delimiter listing), and
//! a committed dataset shows as one read-only file.

mod common;

use std::fs::{self, File};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use adz_core::dataset::{Dataset, DatasetWriter, Placement};
use adz_core::store::{MemoryStorage, Storage};
use common::{data, serial};

/// A memory store (its delimiter listing is the default, grouping its full listing) that
/// counts the keys its listings return.
type OneLevel = common::KeyCounter<MemoryStorage>;

struct StoreMounted<S = OneLevel> {
    store: Arc<S>,
    _dir: tempfile::TempDir,
    mnt: PathBuf,
    mount: Option<adz_fuse::Mount>,
}

impl<S> Drop for StoreMounted<S> {
    fn drop(&mut self) {
        if let Some(m) = self.mount.take() {
            if m.unmount().is_err() {
                common::lazy_unmount(&self.mnt);
            }
        }
    }
}

/// `store`'s prefix `run/` mounted (as `s3://mem/run`).
fn mount(store: OneLevel) -> Option<StoreMounted> {
    mount_any(Arc::new(store))
}

fn mount_any<S: Storage + 'static>(store: Arc<S>) -> Option<StoreMounted<S>> {
    mount_with(store, common::test_options())
}

fn mount_with<S: Storage + 'static>(
    store: Arc<S>,
    mut opts: adz_fuse::MountOptions,
) -> Option<StoreMounted<S>> {
    if !common::fuse_available() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    opts.spool = Some(dir.path().join("spool"));
    let dyn_store: Arc<dyn Storage> = Arc::clone(&store) as Arc<dyn Storage>;
    let m = adz_fuse::mount_store(dyn_store, "run/", "s3://mem/run", &mnt, opts).expect("mount");
    common::wait_mounted(&mnt);
    Some(StoreMounted { store, _dir: dir, mnt, mount: Some(m) })
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

#[test]
fn a_lookup_lists_one_level_not_the_keys_below_it() {
    let _serial = serial();
    let store = OneLevel::default();
    let raw = data(100_000, 3);
    store.put("run/big/x.adz", &common::adz_bytes(&raw, 64 << 10)).unwrap();
    for i in 0..20 {
        for j in 0..100 {
            store.put(&format!("run/big/sub{i:02}/obj{j}"), b"o").unwrap();
        }
    }
    let Some(m) = mount(store) else { return };
    m.store.keys_listed.store(0, Relaxed);
    assert_eq!(fs::metadata(m.mnt.join("big/x")).unwrap().len(), raw.len() as u64);
    assert_eq!(fs::read(m.mnt.join("big/x")).unwrap(), raw);
    let mut want: Vec<String> = (0..20).map(|i| format!("sub{i:02}")).collect();
    want.push("x".to_owned());
    assert_eq!(names(&m.mnt.join("big")), want);
    let listed = m.store.keys_listed.load(Relaxed);
    // The root and big/ (a few times at most): 21 entries each, never the 2,000 keys below.
    assert!(listed < 200, "{listed} keys listed for a lookup and a readdir of big/");
}

#[test]
fn a_committed_dataset_in_an_object_store_is_one_read_only_file() {
    let _serial = serial();
    let store = OneLevel::default();
    let mut all = Vec::new();
    let mut opts = common::test_options().write;
    opts.strategy = "static=zstd:1".parse().unwrap();
    let mut at = 0;
    for (i, n) in [150_000, 70_000, 200_000, 1000].into_iter().enumerate() {
        let p = data(n, 40 + i as u64);
        let id = format!("r{i}");
        let mut w = DatasetWriter::create(&store, "run/d/ds", &id, Placement::At(at), opts.clone())
            .unwrap();
        w.write(&p).unwrap();
        w.finish().unwrap();
        at += n as u64;
        all.extend_from_slice(&p);
    }
    Dataset::commit(&store, "run/d/ds", None).unwrap();
    let Some(m) = mount(store) else { return };
    let ds = m.mnt.join("d/ds");
    assert_eq!(names(&m.mnt.join("d")), ["ds"]);
    let meta = fs::metadata(&ds).unwrap();
    assert_eq!((meta.len(), meta.mode() & 0o7777), (all.len() as u64, 0o444));
    assert!(fs::read(&ds).unwrap() == all);
    let f = File::open(&ds).unwrap();
    let mut buf = vec![0; 50_000];
    for off in [0u64, 149_990, 219_999, 300_000, all.len() as u64 - 10] {
        let n = f.read_at(&mut buf, off).unwrap();
        assert!(n > 0 && buf[..n] == all[off as usize..off as usize + n], "at {off}");
    }
    let eperm = Some(libc::EPERM);
    assert_eq!(fs::OpenOptions::new().write(true).open(&ds).unwrap_err().raw_os_error(), eperm);
    assert_eq!(fs::remove_file(&ds).unwrap_err().raw_os_error(), eperm);
    assert_eq!(fs::rename(&ds, m.mnt.join("d/moved")).unwrap_err().raw_os_error(), eperm);

    // A second commit (a part appended) shows after the listing's and the name's caches.
    let tail = data(33_333, 50);
    let mut w =
        DatasetWriter::create(&*m.store, "run/d/ds", "r9", Placement::Append, opts).unwrap();
    w.write(&tail).unwrap();
    w.finish().unwrap();
    assert_eq!(Dataset::commit(&*m.store, "run/d/ds", None).unwrap().version, 2);
    let mut old = vec![0; 100];
    assert_eq!(f.read_at(&mut old, all.len() as u64).unwrap(), 0, "the open handle keeps v1");
    std::thread::sleep(std::time::Duration::from_millis(2200));
    all.extend_from_slice(&tail);
    assert_eq!(fs::metadata(&ds).unwrap().len(), all.len() as u64);
    assert!(fs::read(&ds).unwrap() == all);
}

/// A full store (adz-store's fault injection, as MinIO's 507 `XMinioStorageFull`): a stream
/// and a staged change each fail with ENOSPC, not EIO, at the write or at the close, and the
/// old object stays whole; with room again the same file commits.
#[test]
fn a_full_store_fails_writes_with_enospc_and_keeps_the_old_version() {
    use adz_core::store::{FaultPlan, Faulty};
    use std::io::Write;
    let _serial = serial();
    let store = Faulty::pass_through(MemoryStorage::new());
    let old = data(300_000, 21);
    store.put("run/f.adz", &common::adz_bytes(&old, 64 << 10)).unwrap();
    let Some(m) = mount_any(Arc::new(store)) else { return };
    let f = m.mnt.join("f");
    assert!(fs::read(&f).unwrap() == old);
    m.store.set_plan(FaultPlan::new().storage_full_after(0));

    // The errors of `write` and of `close` (a commit), as an application sees them.
    let attempt = |file: File, write: &dyn Fn(&File) -> std::io::Result<()>| {
        let wrote = write(&file);
        // A drop would not say how the close went.
        let closed = nix::unistd::close(file).map_err(std::io::Error::from);
        let errors: Vec<_> = [wrote.err(), closed.err()].into_iter().flatten().collect();
        assert!(!errors.is_empty(), "a write to a full store must fail");
        for e in errors {
            assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
        }
    };
    // A new version streamed from offset 0.
    let new = data(2_000_000, 22);
    let file = fs::OpenOptions::new().write(true).truncate(true).open(&f).unwrap();
    attempt(file, &|mut file: &File| new.chunks(128 << 10).try_for_each(|c| file.write_all(c)));
    assert!(fs::read(&f).unwrap() == old, "the old version reads whole");
    // A change in the middle: staged, compressed into a new upload at the close.
    let file = fs::OpenOptions::new().write(true).open(&f).unwrap();
    attempt(file, &|file: &File| file.write_all_at(b"changed", 1000));
    assert!(fs::read(&f).unwrap() == old, "the old version reads whole");
    assert!(m.store.faults_injected() >= 2);
    let stored = m.store.inner().get("run/f.adz").unwrap();
    assert_eq!(stored, common::adz_bytes(&old, 64 << 10), "the old object is untouched");

    m.store.set_plan(FaultPlan::new());
    fs::write(&f, &new).unwrap();
    assert!(fs::read(&f).unwrap() == new);
}

/// An object store answers each request after a round trip: a sequential read through the
/// mount fetches its frames in runs (read-ahead asks for `RUN_FRAMES` per decoding thread),
/// not one request per frame.
#[test]
fn a_sequential_read_fetches_runs_of_frames_not_one_per_frame() {
    let _serial = serial();
    let raw = data(32 << 20, 5);
    let counted = Arc::new(adz_store::Counting::new(MemoryStorage::new()));
    counted.put("run/f.adz", &common::adz_bytes(&raw, 1 << 20)).unwrap();
    let mut o = common::test_options();
    o.cache_bytes = 64 << 20;
    let Some(m) = mount_with(Arc::clone(&counted), o) else { return };
    let stats = counted.stats_handle();
    let before = stats.snapshot();
    let back = fs::read(m.mnt.join("f")).unwrap();
    assert!(back == raw, "the read differs from the data");
    let reads = stats.snapshot().since(&before).reads;
    // 32 frames: 34 requests with read-ahead chunks of one frame per thread, 18 with runs of
    // 4 (the reads' own fetches, where they overtake the read-ahead, add some).
    assert!(reads <= 24, "{reads} range requests for 32 frames");
}
