//! `adz mount` over an S3 prefix: a real FUSE mount of MinIO on 127.0.0.1 (started by
//! `make s3-test`, scripts/minio.sh). Reads of adz objects and of others, cp and dd round
//! trips, files written through the mount as adz objects, unmodified programs (python and
//! numpy, sqlite, h5py), the namespace operations, a damaged frame, and a daemon killed
//! mid-write.
//!
//! Without `AWS_ENDPOINT_URL` each test says why it is skipped and passes, unless
//! `ADZ_REQUIRE_S3=1`.

mod common;

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use adz_core::{Reader, ReaderOptions};
use adz_fuse::Mount;
use adz_store::s3::{S3Config, S3Storage};
use adz_store::Storage;
use common::{adz_bytes, apps, data, run};

/// The bucket's store and a prefix of its own for each test and run, or None to skip.
fn store(test: &str) -> Option<(Arc<dyn Storage>, String)> {
    let bucket = adz_store::conformance::s3_test_bucket()?;
    if !common::fuse_available() {
        return None;
    }
    let s3 = S3Storage::new(&bucket, S3Config::from_env()).expect("the test bucket");
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    Some((Arc::new(s3), format!("adz-fuse-tests/{test}-{}-{nanos}/", std::process::id())))
}

/// A prefix mounted on a temporary mount point, with its spool; unmounted when dropped.
struct S3Mounted {
    store: Arc<dyn Storage>,
    prefix: String,
    dir: tempfile::TempDir,
    mnt: PathBuf,
    mount: Option<Mount>,
}

impl S3Mounted {
    fn new(test: &str, fill: impl FnOnce(&dyn Storage, &str)) -> Option<S3Mounted> {
        let (store, prefix) = store(test)?;
        fill(&*store, &prefix);
        Some(S3Mounted::over(store, prefix))
    }

    /// `prefix` of `store` (a decorator of the bucket's store, say) mounted.
    fn over(store: Arc<dyn Storage>, prefix: String) -> S3Mounted {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        fs::create_dir(&mnt).unwrap();
        let mut m = S3Mounted { store, prefix, dir, mnt, mount: None };
        m.remount();
        m
    }

    fn options(&self) -> adz_fuse::MountOptions {
        let mut o = common::test_options();
        o.spool = Some(self.dir.path().join("spool"));
        // A fixed codec: the adaptive default may store raw over a fast loopback link.
        o.write.strategy = "static=zstd:1".parse().unwrap();
        o
    }

    fn remount(&mut self) {
        self.unmount();
        let label = format!("s3://test/{}", self.prefix);
        let m = adz_fuse::mount_store(
            Arc::clone(&self.store),
            &self.prefix,
            &label,
            &self.mnt,
            self.options(),
        )
        .expect("mount");
        common::wait_mounted(&self.mnt);
        self.mount = Some(m);
    }

    fn unmount(&mut self) {
        if let Some(m) = self.mount.take() {
            if m.unmount().is_err() {
                common::lazy_unmount(&self.mnt);
            }
        }
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// The raw bytes of adz object `name`, every checksum checked (what `adz decompress`
    /// does with `s3://bucket/PREFIX/name`).
    fn decode(&self, name: &str) -> Vec<u8> {
        let r = Reader::open(Arc::clone(&self.store), &self.key(name), ReaderOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut out = Vec::new();
        r.copy_to(&mut out, 2).unwrap_or_else(|e| panic!("{name}: {e}"));
        out
    }

    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .store
            .list(&self.prefix)
            .unwrap()
            .into_iter()
            .map(|o| o.name[self.prefix.len()..].to_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for S3Mounted {
    fn drop(&mut self) {
        self.unmount();
        for o in self.store.list(&self.prefix).unwrap_or_default() {
            let _ = self.store.delete(&o.name);
        }
    }
}

fn ls(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

fn errno_of(r: std::io::Result<impl Sized>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

#[test]
fn reads_list_the_prefix_and_decode_ranges() {
    let _serial = common::serial();
    let raw = data(700_000, 1);
    let sub = data(100_000, 2);
    let Some(m) = S3Mounted::new("reads", |s, p| {
        s.put(&format!("{p}a.adz"), &adz_bytes(&raw, 64 << 10)).unwrap();
        s.put(&format!("{p}notes.txt"), b"plain bytes").unwrap();
        s.put(&format!("{p}sub/deep/b.adz"), &adz_bytes(&sub, 64 << 10)).unwrap();
    }) else {
        return;
    };
    assert_eq!(ls(&m.mnt), ["a", "notes.txt", "sub"]);
    assert_eq!(ls(&m.mnt.join("sub")), ["deep"]);
    assert!(fs::metadata(m.mnt.join("sub/deep")).unwrap().is_dir());
    assert_eq!(fs::metadata(m.mnt.join("a")).unwrap().len(), raw.len() as u64, "the raw size");
    assert_eq!(fs::read(m.mnt.join("a")).unwrap(), raw);
    assert_eq!(fs::read(m.mnt.join("sub/deep/b")).unwrap(), sub);
    assert_eq!(fs::read(m.mnt.join("notes.txt")).unwrap(), b"plain bytes");
    assert_eq!(errno_of(fs::metadata(m.mnt.join("a.adz"))), Some(libc::ENOENT));

    // dd with skip= reads a range from the middle (frames 2 to 4 of 64 KiB).
    let out = m.dir.path().join("range");
    run(common::bounded("dd")
        .arg(format!("if={}", m.mnt.join("a").display()))
        .arg(format!("of={}", out.display()))
        .args(["bs=4096", "skip=37", "count=40", "status=none"]));
    assert_eq!(fs::read(&out).unwrap(), &raw[37 * 4096..77 * 4096]);
    // Other objects are read as they are and cannot be written.
    let f = File::open(m.mnt.join("notes.txt")).unwrap();
    let mut buf = [0; 5];
    assert_eq!(f.read_at(&mut buf, 6).unwrap(), 5);
    assert_eq!(&buf, b"bytes");
    assert_eq!(
        errno_of(fs::OpenOptions::new().write(true).open(m.mnt.join("notes.txt"))),
        Some(libc::EPERM)
    );
}

#[test]
fn cp_round_trips_and_written_files_are_adz_objects() {
    let _serial = common::serial();
    let Some(mut m) = S3Mounted::new("cp", |_, _| {}) else { return };
    let work = m.dir.path().join("work");
    fs::create_dir(&work).unwrap();
    let big = data(3_000_000, 3);
    fs::write(work.join("big"), &big).unwrap();
    run(common::bounded("cp").arg(work.join("big")).arg(m.mnt.join("big")));
    run(common::bounded("cmp").arg(work.join("big")).arg(m.mnt.join("big")));
    assert_eq!(m.names(), ["big.adz"], "an adz object, nothing else");
    assert_eq!(m.decode("big.adz"), big, "the object decodes to what was written");
    let stored = m.store.size(&m.key("big.adz")).unwrap();
    assert!(stored < big.len() as u64 / 2, "compressed with the mount's codec: {stored} bytes");

    // Not in order: an overwrite in the middle and an append stage in the spool and are
    // compressed on close.
    {
        let f = fs::OpenOptions::new().write(true).open(m.mnt.join("big")).unwrap();
        f.write_all_at(b"PATCH", 1_000_000).unwrap();
        f.write_all_at(b"TAIL", big.len() as u64).unwrap();
    }
    let mut want = big.clone();
    want[1_000_000..1_000_005].copy_from_slice(b"PATCH");
    want.extend_from_slice(b"TAIL");
    assert_eq!(m.decode("big.adz"), want);
    assert_eq!(fs::read(m.mnt.join("big")).unwrap(), want);
    assert!(ls(&m.dir.path().join("spool")).is_empty(), "the staging file is gone");

    // A small file from a shell redirection, and the whole prefix read back after a remount.
    let mut f = File::create(m.mnt.join("small")).unwrap();
    f.write_all(b"hello s3").unwrap();
    f.sync_all().unwrap();
    drop(f);
    m.remount();
    assert_eq!(ls(&m.mnt), ["big", "small"]);
    assert_eq!(fs::read(m.mnt.join("small")).unwrap(), b"hello s3");
    assert_eq!(fs::read(m.mnt.join("big")).unwrap(), want);
    let stat = nix::sys::statvfs::statvfs(&m.mnt).unwrap();
    assert!(stat.blocks_available() > 0);

    // tar x into the mount (directories, files, and the modes and times it sets) and back.
    fs::create_dir_all(work.join("tree/sub/deeper")).unwrap();
    fs::write(work.join("tree/a.dat"), data(300_000, 10)).unwrap();
    fs::write(work.join("tree/sub/deeper/b.dat"), data(50_000, 11)).unwrap();
    fs::write(work.join("tree/sub/empty"), b"").unwrap();
    let tar = m.dir.path().join("t.tar");
    run(common::bounded("tar").arg("cf").arg(&tar).arg("-C").arg(&work).arg("tree"));
    run(common::bounded("tar").arg("xf").arg(&tar).arg("-C").arg(&m.mnt));
    run(common::bounded("diff").arg("-r").arg(work.join("tree")).arg(m.mnt.join("tree")));
    assert_eq!(m.decode("tree/sub/deeper/b.dat.adz"), data(50_000, 11));
    let back = m.dir.path().join("back.tar");
    run(common::bounded("tar").arg("cf").arg(&back).arg("-C").arg(&m.mnt).arg("tree"));
    let out = m.dir.path().join("out");
    fs::create_dir(&out).unwrap();
    run(common::bounded("tar").arg("xf").arg(&back).arg("-C").arg(&out));
    run(common::bounded("diff").arg("-r").arg(work.join("tree")).arg(out.join("tree")));

    // rsync writes a temporary and renames it (a copy and a delete on S3). Without -p: it
    // makes its temporary 0600, a mode an object store cannot keep (EPERM, which -p fails on).
    if Command::new("rsync").arg("--version").output().is_ok() {
        run(common::bounded("rsync").arg("-rt").arg(work.join("tree/")).arg(m.mnt.join("r")));
        run(common::bounded("diff").arg("-r").arg(work.join("tree")).arg(m.mnt.join("r")));
        let names = m.names();
        let temps = names.iter().filter(|n| n.contains("/.") && !n.ends_with("/.adz-dir"));
        assert_eq!(temps.count(), 0, "no temporary left: {names:?}");
    }
}

#[test]
fn a_stream_that_seeks_back_stages_from_its_spool_copy_and_publishes_only_on_close() {
    let _serial = common::serial();
    let old = data(300_000, 8);
    let Some(m) = S3Mounted::new("fallback", |s, p| {
        s.put(&format!("{p}f.adz"), &adz_bytes(&old, 64 << 10)).unwrap();
    }) else {
        return;
    };
    let new = data(400_000, 9);
    let mut f = fs::OpenOptions::new().write(true).truncate(true).open(m.mnt.join("f")).unwrap();
    f.write_all(&new).unwrap();
    let stats = m.mount.as_ref().unwrap().stats();
    assert_eq!(stats.bytes_streamed, new.len() as u64, "written in order: streamed");
    assert_eq!(m.decode("f.adz"), old, "nothing published before the close");
    // A write back in the file cannot stream: the upload is aborted and the stream's copy in
    // the spool becomes the staging file; still nothing published.
    f.write_all_at(b"BACK", 1000).unwrap();
    assert_eq!(m.mount.as_ref().unwrap().stats().stream_fallbacks, 1);
    assert_eq!(m.decode("f.adz"), old, "the fallback publishes nothing");
    assert_eq!(ls(&m.dir.path().join("spool")).len(), 1, "the staging file");
    let mut want = new.clone();
    want[1000..1004].copy_from_slice(b"BACK");
    assert_eq!(fs::read(m.mnt.join("f")).unwrap(), want, "reads see the written bytes");
    drop(f);
    assert_eq!(m.decode("f.adz"), want, "published whole on close");
    assert_eq!(m.names(), ["f.adz"]);
    assert!(ls(&m.dir.path().join("spool")).is_empty());
}

#[test]
fn random_operations_match_a_plain_directory() {
    let _serial = common::serial();
    let Some(m) = S3Mounted::new("oracle", |_, _| {}) else { return };
    common::oracle::random_operations_match(&m.mnt, &m.dir.path().join("oracle"), &|rel| {
        let name = format!("{rel}.adz");
        m.store.size(&m.key(&name)).is_ok().then(|| m.decode(&name))
    });
}

#[test]
fn rename_unlink_mkdir_and_rmdir_work_on_prefixes() {
    let _serial = common::serial();
    let Some(mut m) = S3Mounted::new("names", |_, _| {}) else { return };
    fs::create_dir(m.mnt.join("d")).unwrap();
    assert_eq!(m.names(), ["d/.adz-dir"], "an empty directory is a marker object");
    m.remount();
    assert_eq!(ls(&m.mnt), ["d"], "and it persists");
    assert!(ls(&m.mnt.join("d")).is_empty(), "the marker is hidden");
    assert_eq!(errno_of(fs::create_dir(m.mnt.join("d"))), Some(libc::EEXIST));

    let body = data(200_000, 4);
    fs::write(m.mnt.join("d/f"), &body).unwrap();
    assert_eq!(errno_of(fs::remove_dir(m.mnt.join("d"))), Some(libc::ENOTEMPTY));
    // A directory with files cannot be renamed in one step: EXDEV (mv copies file by file).
    assert_eq!(errno_of(fs::rename(m.mnt.join("d"), m.mnt.join("e"))), Some(libc::EXDEV));

    fs::rename(m.mnt.join("d/f"), m.mnt.join("g")).unwrap();
    assert_eq!(m.names(), ["d/.adz-dir", "g.adz"]);
    assert_eq!(fs::read(m.mnt.join("g")).unwrap(), body);
    assert_eq!(errno_of(fs::metadata(m.mnt.join("d/f"))), Some(libc::ENOENT));
    // Over an existing file.
    fs::write(m.mnt.join("h"), b"to be replaced").unwrap();
    fs::rename(m.mnt.join("g"), m.mnt.join("h")).unwrap();
    assert_eq!(fs::read(m.mnt.join("h")).unwrap(), body);
    assert_eq!(m.names(), ["d/.adz-dir", "h.adz"]);
    // An empty directory moves.
    fs::rename(m.mnt.join("d"), m.mnt.join("e")).unwrap();
    assert_eq!(ls(&m.mnt), ["e", "h"]);
    fs::remove_dir(m.mnt.join("e")).unwrap();
    fs::remove_file(m.mnt.join("h")).unwrap();
    assert!(m.names().is_empty(), "{:?}", m.names());
    assert!(ls(&m.mnt).is_empty());

    // What an object store cannot keep fails with a clear errno.
    fs::write(m.mnt.join("x"), b"x").unwrap();
    use std::os::unix::fs::PermissionsExt;
    let chmod = fs::set_permissions(m.mnt.join("x"), fs::Permissions::from_mode(0o600));
    assert_eq!(errno_of(chmod), Some(libc::EPERM));
    fs::set_permissions(m.mnt.join("x"), fs::Permissions::from_mode(0o644))
        .expect("the mode shown can be set");
    let symlink = std::os::unix::fs::symlink("x", m.mnt.join("l"));
    assert_eq!(errno_of(symlink), Some(libc::EPERM));
    assert_eq!(errno_of(fs::hard_link(m.mnt.join("x"), m.mnt.join("y"))), Some(libc::EPERM));
}

#[test]
fn a_rename_copies_inside_the_server_not_through_the_daemon() {
    let _serial = common::serial();
    let Some((s3, prefix)) = store("server-copy") else { return };
    let counted = Arc::new(adz_store::Counting::new(s3));
    let stats = counted.stats_handle();
    let raw = common::noise(24 << 20, 5);
    let stored = adz_bytes(&raw, 1 << 20);
    counted.put(&format!("{prefix}big.adz"), &stored).unwrap();
    let m = S3Mounted::over(Arc::clone(&counted) as Arc<dyn Storage>, prefix);
    assert_eq!(ls(&m.mnt), ["big"]);
    let before = stats.snapshot();
    fs::rename(m.mnt.join("big"), m.mnt.join("moved")).unwrap();
    let moved = stats.snapshot().since(&before);
    // The old code read the object in 8 MiB ranges into a new upload.
    assert_eq!(moved.bytes_written, 0, "{moved:?}");
    assert!(moved.bytes_read < stored.len() as u64 / 100, "{moved:?}");
    assert_eq!(m.names(), ["moved.adz"]);
    assert_eq!(m.decode("moved.adz"), raw);
}

#[test]
fn a_damaged_frame_fails_only_its_own_reads_with_eio() {
    let _serial = common::serial();
    let raw = data(64 << 10 << 3, 5); // 8 frames of 64 KiB
    let Some(m) = S3Mounted::new("damaged", |s, p| {
        s.put(&format!("{p}hurt.adz"), &common::damaged_adz(&raw)).unwrap();
    }) else {
        return;
    };
    common::only_frame_2_fails(&m.mnt.join("hurt"), &raw);
}

#[test]
fn a_committed_dataset_is_one_read_only_file_and_a_damaged_frame_fails_its_range() {
    use adz_core::dataset::{Dataset, DatasetWriter, Placement};
    let _serial = common::serial();
    let mut all = Vec::new();
    let mut bad = 0..0;
    let Some(m) = S3Mounted::new("dataset", |s, p| {
        let mut opts = common::test_options().write;
        opts.strategy = "static=zstd:1".parse().unwrap();
        let name = format!("{p}ds");
        let mut at = 0;
        for (i, n) in [300_000, 200_001, 65_536, 250_000].into_iter().enumerate() {
            let part = data(n, 60 + i as u64);
            let id = format!("r{i}");
            let mut w =
                DatasetWriter::create(s, &name, &id, Placement::At(at), opts.clone()).unwrap();
            w.write(&part).unwrap();
            w.finish().unwrap();
            at += n as u64;
            all.extend_from_slice(&part);
        }
        Dataset::commit(s, &name, None).unwrap();
        // Flip a byte in the middle of frame 2 of part r1 (dataset bytes 300,000...).
        let key = adz_core::dataset::part_name(&name, "r1", Placement::At(300_000)).unwrap();
        let store: Arc<dyn Storage> = Arc::new(
            S3Storage::new(
                &adz_store::conformance::s3_test_bucket().unwrap(),
                S3Config::from_env(),
            )
            .unwrap(),
        );
        let r = Reader::open(Arc::clone(&store), &key, ReaderOptions::default()).unwrap();
        let e = &r.index().entries()[2];
        bad = 300_000 + e.raw_offset..300_000 + e.raw_offset + u64::from(e.raw_len);
        let mut bytes = s.get(&key).unwrap();
        bytes[(e.file_offset + u64::from(e.stored_len) / 2) as usize] ^= 0x55;
        s.put(&key, &bytes).unwrap();
    }) else {
        return;
    };
    assert_eq!(ls(&m.mnt), ["ds"], "the manifest and parts prefixes are hidden");
    let ds = m.mnt.join("ds");
    let meta = fs::metadata(&ds).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((meta.len(), meta.mode() & 0o7777), (all.len() as u64, 0o444));
    let f = File::open(&ds).unwrap();
    let mut buf = vec![0; 4096];
    assert_eq!(errno_of(f.read_at(&mut buf, bad.start + 100)), Some(libc::EIO));
    // (The kernel reads whole pages: those around the bad frame's ends fail too.)
    for off in [0, 299_000, 300_050, bad.end.next_multiple_of(4096), 600_000, 811_000] {
        assert_eq!(f.read_at(&mut buf, off).unwrap(), 4096, "at {off}");
        assert!(buf[..] == all[off as usize..off as usize + 4096], "at {off}");
    }
    let eperm = Some(libc::EPERM);
    assert_eq!(errno_of(fs::OpenOptions::new().write(true).open(&ds)), eperm);
    assert_eq!(errno_of(fs::remove_file(&ds)), eperm);
    assert_eq!(errno_of(fs::rename(&ds, m.mnt.join("moved"))), eperm);
    assert!(m.names().iter().any(|n| n.starts_with("ds.manifest/v")), "still committed");
}

#[test]
fn a_lookup_lists_one_level_of_the_bucket() {
    use std::sync::atomic::Ordering::Relaxed;
    let _serial = common::serial();
    let Some((s3, prefix)) = store("one-level") else { return };
    let counted = Arc::new(common::KeyCounter::new(s3));
    let raw = data(50_000, 9);
    counted.put(&format!("{prefix}big/x.adz"), &adz_bytes(&raw, 64 << 10)).unwrap();
    for i in 0..300 {
        counted.put(&format!("{prefix}big/sub{}/o{i}", i % 3), b"o").unwrap();
    }
    let m = S3Mounted::over(Arc::clone(&counted) as Arc<dyn Storage>, prefix);
    counted.keys_listed.store(0, Relaxed);
    assert_eq!(fs::read(m.mnt.join("big/x")).unwrap(), raw);
    assert_eq!(ls(&m.mnt.join("big")), ["sub0", "sub1", "sub2", "x"]);
    let listed = counted.keys_listed.load(Relaxed);
    assert!(listed < 40, "{listed} keys listed for a lookup and a readdir of big/");
}

#[test]
fn python_reads_and_numpy_memmaps_through_the_mount() {
    let _serial = common::serial();
    let values = apps::f64_values();
    let Some(mut m) = S3Mounted::new("python", |s, p| {
        s.put(&format!("{p}v.f64.adz"), &adz_bytes(&values, 64 << 10)).unwrap();
    }) else {
        return;
    };
    // The venv's Python where there is one, so that numpy runs too.
    let python = common::python_with_h5py().unwrap_or_else(|| "python3".into());
    let python = python.to_str().unwrap();
    let out = run(common::bounded(python).arg("-c").arg(apps::NUMPY_READ).arg(m.mnt.join("v.f64")));
    eprintln!("{out}");
    run(common::bounded(python).arg("-c").arg(apps::MMAP_WRITE).arg(m.mnt.join("mapped")));
    let want = apps::mmap_written();
    assert_eq!(fs::read(m.mnt.join("mapped")).unwrap(), want);
    m.unmount();
    assert_eq!(m.decode("mapped.adz"), want, "the object holds the mapping's bytes");
    assert_eq!(m.decode("v.f64.adz"), values, "the read object is unchanged");
    assert_eq!(m.names(), ["mapped.adz", "v.f64.adz"], "no temporary left");
}

#[test]
fn sqlite_inserts_and_reads_back_through_the_mount() {
    let _serial = common::serial();
    apps::require_sqlite();
    let Some(mut m) = S3Mounted::new("sqlite", |_, _| {}) else { return };
    let db = m.mnt.join("t.db");
    apps::sqlite_workload(&db);
    apps::sqlite_check(&db);
    m.unmount();
    // The database is an adz object in the bucket, and intact; the journal is gone.
    assert_eq!(m.names(), ["t.db.adz"]);
    let db = m.decode("t.db.adz");
    let whole = apps::sqlite_size_by_header(&db);
    assert_eq!(db.len() as u64, whole, "whole: every page its header counts");
    let plain = m.dir.path().join("plain.db");
    fs::write(&plain, &db).unwrap();
    apps::sqlite_check(&plain);
}

#[test]
fn h5py_writes_and_reads_a_chunked_file_through_the_mount() {
    let _serial = common::serial();
    let Some(python) = common::python_with_h5py() else {
        eprintln!("skipped: no Python with h5py (make python-test makes .cache/venv)");
        return;
    };
    let Some(mut m) = S3Mounted::new("h5py", |_, _| {}) else { return };
    apps::h5py(&python, apps::H5PY_WRITE, &m.mnt.join("d.h5"));
    // What the file must hold, checked through the mount and again on the decoded object.
    apps::h5py(&python, apps::H5PY_CHECK, &m.mnt.join("d.h5"));
    m.unmount();
    assert_eq!(m.names(), ["d.h5.adz"]);
    let plain = m.dir.path().join("plain.h5");
    fs::write(&plain, m.decode("d.h5.adz")).unwrap();
    apps::h5py(&python, apps::H5PY_CHECK, &plain);
}

/// Not a test by itself: the daemon that the kill test starts in a child process (this test
/// binary again) and kills.
#[test]
fn daemon_helper() {
    let (Ok(prefix), Some(mnt), Some(spool)) = (
        std::env::var("ADZ_FUSE_TEST_PREFIX"),
        std::env::var_os("ADZ_FUSE_TEST_MNT"),
        std::env::var_os("ADZ_FUSE_TEST_SPOOL"),
    ) else {
        return;
    };
    let Some((store, _)) = store("daemon") else { return };
    let mut opts = common::test_options();
    opts.spool = Some(spool.into());
    let m = adz_fuse::mount_store(store, &prefix, "s3://test", mnt.as_ref(), opts).unwrap();
    std::thread::sleep(Duration::from_secs(120));
    drop(m);
}

fn spawn_daemon(m: &S3Mounted) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["daemon_helper", "--exact", "--nocapture", "--test-threads=1"])
        .env("ADZ_FUSE_TEST_PREFIX", &m.prefix)
        .env("ADZ_FUSE_TEST_MNT", &m.mnt)
        .env("ADZ_FUSE_TEST_SPOOL", m.dir.path().join("spool"));
    let child = cmd.spawn().unwrap();
    common::wait_mounted(&m.mnt);
    child
}

#[test]
fn killing_the_daemon_mid_write_keeps_the_old_object() {
    let _serial = common::serial();
    let old = data(500_000, 6);
    let Some(mut m) = S3Mounted::new("kill", |s, p| {
        s.put(&format!("{p}f.adz"), &adz_bytes(&old, 64 << 10)).unwrap();
    }) else {
        return;
    };
    m.unmount();
    let new_file = m.dir.path().join("new");
    fs::write(&new_file, data(7_000_000, 7)).unwrap();
    // Streamed (written in order from an O_TRUNC open) into a multipart upload, then killed
    // before the close; and staged (a write past the end first) in the spool, then killed.
    let streamed = "import os, sys\n\
        fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)\n\
        os.write(fd, open(sys.argv[2], 'rb').read())\n\
        print('ready', flush=True)\n\
        sys.stdin.read()\n";
    let staged = "import os, sys\n\
        fd = os.open(sys.argv[1], os.O_WRONLY)\n\
        os.pwrite(fd, b'new tail', 500000)\n\
        print('ready', flush=True)\n\
        sys.stdin.read()\n";
    let spool = m.dir.path().join("spool");
    // What each write left in the spool: all the streamed bytes (the stream's raw copy), or
    // the staged file with its new tail.
    let streamed_bytes = fs::read(&new_file).unwrap();
    type Check<'a> = &'a dyn Fn(&[u8]);
    let checks: [(&str, Check); 2] = [
        (streamed, &|b: &[u8]| assert!(b == streamed_bytes, "the streamed bytes, raw")),
        (staged, &|b: &[u8]| assert_eq!(&b[500_000..], b"new tail")),
    ];
    for (script, check) in checks {
        let mut child = spawn_daemon(&m);
        let mut holder = common::python_holding(script, &[&m.mnt.join("f"), &new_file]);
        child.kill().unwrap();
        child.wait().unwrap();
        let _ = holder.kill();
        let _ = holder.wait();
        common::lazy_unmount(&m.mnt);
        assert_eq!(m.decode("f.adz"), old, "the old object is intact");
        assert_eq!(m.names(), ["f.adz"], "nothing else appeared");
        let left = ls(&spool);
        assert_eq!(left.len(), 1, "{left:?}");
        check(&fs::read(spool.join(&left[0])).unwrap());
        fs::remove_file(spool.join(&left[0])).unwrap();
    }
}
