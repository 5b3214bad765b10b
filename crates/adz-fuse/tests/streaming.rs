//! Real mounts: files written in order stream through the pipeline while they are written
//! (decision 0042), and every change that cannot stream falls back to staging with the right
//! bytes, the old version intact until the close or fsync.

mod common;

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{adz_bytes, data, decode, noise, serial, Mounted};

/// The temporaries of commits in progress in `dir` for `name` (`.NAME.adz.adz-tmp-*`).
fn temporaries(dir: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!(".{name}.adz.adz-tmp-");
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .collect()
}

fn staged(src: &Path) -> usize {
    fs::read_dir(src.join(".adz-staging")).unwrap().count()
}

/// Wait until `cond` holds (at most 20 s).
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_file_written_in_order_is_compressed_while_it_is_written() {
    let _serial = serial();
    let Some(m) = Mounted::new(|src| {
        fs::write(src.join("old.adz"), adz_bytes(&data(200_000, 1), 64 << 10)).unwrap();
    }) else {
        return;
    };
    let raw = data(3_000_000, 2);
    let mut f = File::create(m.mnt.join("new")).unwrap();
    for chunk in raw.chunks(100_000) {
        f.write_all(chunk).unwrap();
    }
    // Before the close: frames are in the temporary next to the name, nothing is staged,
    // and the name still holds the empty file the create made.
    wait_for("frames in the temporary", || {
        temporaries(&m.src, "new").iter().any(|t| fs::metadata(t).is_ok_and(|md| md.len() > 0))
    });
    assert_eq!(staged(&m.src), 0, "nothing staged");
    assert_eq!(m.stats().bytes_streamed, raw.len() as u64);
    assert_eq!(decode(&m.src.join("new.adz")), b"", "not published before the close");
    assert_eq!(f.metadata().unwrap().len(), raw.len() as u64, "the size is what was written");
    drop(f);
    assert_eq!(decode(&m.src.join("new.adz")), raw);
    assert!(temporaries(&m.src, "new").is_empty());
    assert_eq!(fs::read(m.mnt.join("new")).unwrap(), raw);

    // O_TRUNC of an existing file streams too; the old version stays until the close.
    let raw2 = data(500_000, 3);
    let mut f = OpenOptions::new().write(true).truncate(true).open(m.mnt.join("old")).unwrap();
    f.write_all(&raw2).unwrap();
    assert_eq!(decode(&m.src.join("old.adz")), data(200_000, 1), "old version until the close");
    drop(f);
    assert_eq!(decode(&m.src.join("old.adz")), raw2);
    assert_eq!(m.stats().bytes_streamed, (raw.len() + raw2.len()) as u64);
    assert_eq!(m.stats().stream_fallbacks, 0);
}

#[test]
fn changes_that_cannot_stream_fall_back_to_staging_with_the_right_bytes() {
    let _serial = serial();
    let old = data(300_000, 4);
    let Some(mut m) = Mounted::new(|src| {
        for name in ["seek", "hole", "shrink", "read", "append", "fsync"] {
            fs::write(src.join(format!("{name}.adz")), adz_bytes(&old, 64 << 10)).unwrap();
        }
    }) else {
        return;
    };
    let raw = data(1_000_000, 5);
    let open_trunc = |name: &str| {
        OpenOptions::new().read(true).write(true).truncate(true).open(m.mnt.join(name))
    };
    let check = |m: &Mounted, name: &str, f: File, want: &[u8]| {
        assert_eq!(decode(&m.src.join(format!("{name}.adz"))), old, "{name}: old until the close");
        let mut got = Vec::new();
        (&f).seek(SeekFrom::Start(0)).unwrap();
        (&f).read_to_end(&mut got).unwrap();
        assert!(got == want, "{name}: the mount reads the new bytes before the close");
        drop(f);
        assert!(decode(&m.src.join(format!("{name}.adz"))) == want, "{name}: committed");
        assert!(fs::read(m.mnt.join(name)).unwrap() == want, "{name}: read after the close");
    };

    // A write back into what was streamed.
    let mut f = open_trunc("seek").unwrap();
    f.write_all(&raw).unwrap();
    f.write_all_at(b"PATCHED", 123_456).unwrap();
    f.write_all(b" and on").unwrap();
    let mut want = raw.clone();
    want[123_456..123_463].copy_from_slice(b"PATCHED");
    want.extend_from_slice(b" and on");
    check(&m, "seek", f, &want);
    assert_eq!(m.stats().stream_fallbacks, 1);

    // A write past the end: a hole of zeros.
    let f = open_trunc("hole").unwrap();
    f.write_all_at(&raw[..400_000], 0).unwrap();
    f.write_all_at(b"far", 600_000).unwrap();
    let mut want = raw[..400_000].to_vec();
    want.resize(600_000, 0);
    want.extend_from_slice(b"far");
    check(&m, "hole", f, &want);

    // A truncate to less than was streamed; then writing on.
    let mut f = open_trunc("shrink").unwrap();
    f.write_all(&raw).unwrap();
    f.set_len(250_000).unwrap();
    f.seek(SeekFrom::Start(250_000)).unwrap();
    f.write_all(b"end").unwrap();
    let mut want = raw[..250_000].to_vec();
    want.extend_from_slice(b"end");
    check(&m, "shrink", f, &want);

    // A read of what was streamed, then writing on in order.
    let mut f = open_trunc("read").unwrap();
    f.write_all(&raw[..500_000]).unwrap();
    let mut r = File::open(m.mnt.join("read")).unwrap();
    let mut got = Vec::new();
    r.read_to_end(&mut got).unwrap();
    assert!(got == raw[..500_000], "a reader sees what was streamed");
    f.write_all(&raw[500_000..]).unwrap();
    drop(r);
    check(&m, "read", f, &raw);

    // Reopen and append to a file with content: staged from the committed version.
    let mut f = OpenOptions::new().read(true).append(true).open(m.mnt.join("append")).unwrap();
    f.write_all(b"appended").unwrap();
    let mut want = old.clone();
    want.extend_from_slice(b"appended");
    check(&m, "append", f, &want);

    // fsync of a stream commits the whole file; writing on stages from that version.
    let mut f = open_trunc("fsync").unwrap();
    f.write_all(&raw[..600_000]).unwrap();
    f.sync_all().unwrap();
    assert!(decode(&m.src.join("fsync.adz")) == raw[..600_000], "fsync commits the stream");
    f.write_all(&raw[600_000..]).unwrap();
    drop(f);
    assert!(decode(&m.src.join("fsync.adz")) == raw);

    m.unmount();
    assert_eq!(staged(&m.src), 0, "no staging left");
    for name in ["seek", "hole", "shrink", "read", "append", "fsync"] {
        assert!(temporaries(&m.src, name).is_empty(), "{name}: no temporary left");
    }
}

#[test]
fn a_stream_renamed_or_unlinked_while_open_behaves_as_a_staged_file() {
    let _serial = serial();
    let Some(m) = Mounted::new(|_| {}) else { return };
    let raw = data(700_000, 6);
    let mut f = File::create(m.mnt.join("a")).unwrap();
    f.write_all(&raw[..300_000]).unwrap();
    fs::rename(m.mnt.join("a"), m.mnt.join("b")).unwrap();
    f.write_all(&raw[300_000..]).unwrap();
    drop(f);
    assert_eq!(decode(&m.src.join("b.adz")), raw);
    assert!(!m.src.join("a.adz").exists());

    // A directory that moves while a file below it streams.
    fs::create_dir(m.mnt.join("d")).unwrap();
    let mut f = File::create(m.mnt.join("d/x")).unwrap();
    f.write_all(&raw[..300_000]).unwrap();
    fs::rename(m.mnt.join("d"), m.mnt.join("e")).unwrap();
    f.write_all(&raw[300_000..]).unwrap();
    drop(f);
    assert_eq!(decode(&m.src.join("e/x.adz")), raw);

    // Unlinked while streaming: the open file keeps working, nothing is published.
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(m.mnt.join("gone"))
        .unwrap();
    f.write_all(&raw).unwrap();
    fs::remove_file(m.mnt.join("gone")).unwrap();
    f.write_all(b"more").unwrap();
    let md = f.metadata().unwrap();
    assert!(md.is_file() && md.len() == raw.len() as u64 + 4, "{md:?}");
    let mut got = Vec::new();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.read_to_end(&mut got).unwrap();
    assert!(got[..raw.len()] == raw[..] && got.ends_with(b"more"), "the open file reads back");
    drop(f);
    assert!(!m.src.join("gone.adz").exists());
    assert!(temporaries(&m.src, "gone").is_empty(), "the unlinked stream's temporary is gone");
}

/// Not a test by itself: the daemon that the kill test starts in a child process (this test
/// binary again) and kills.
#[test]
fn streaming_daemon_helper() {
    let (Some(src), Some(mnt)) =
        (std::env::var_os("ADZ_FUSE_TEST_SRC"), std::env::var_os("ADZ_FUSE_TEST_MNT"))
    else {
        return;
    };
    let mut opts = common::test_options();
    opts.throttle = std::env::var("ADZ_FUSE_TEST_THROTTLE").ok().map(|r| r.parse().unwrap());
    let m = adz_fuse::mount(src.as_ref(), mnt.as_ref(), opts).unwrap();
    std::thread::sleep(Duration::from_secs(120));
    drop(m);
}

#[test]
fn killing_the_daemon_mid_stream_keeps_the_old_version_and_recover_salvages_the_new() {
    let _serial = serial();
    if !common::fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    fs::create_dir(&src).unwrap();
    fs::create_dir(&mnt).unwrap();
    struct Guard<'a>(&'a Path);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            common::lazy_unmount(self.0);
        }
    }
    let _g = Guard(&mnt);
    let old = data(300_000, 7);
    fs::write(src.join("s.adz"), adz_bytes(&old, 64 << 10)).unwrap();
    // The stream's output paced to 1 MB/s: writing 6 MB takes seconds, the kill lands in it.
    let mut daemon = Command::new(std::env::current_exe().unwrap())
        .args(["streaming_daemon_helper", "--exact", "--nocapture", "--test-threads=1"])
        .env("ADZ_FUSE_TEST_SRC", &src)
        .env("ADZ_FUSE_TEST_MNT", &mnt)
        .env("ADZ_FUSE_TEST_THROTTLE", "1000000")
        .spawn()
        .unwrap();
    common::wait_mounted(&mnt);
    let new = data(6_000_000, 8);
    let new_file = dir.path().join("new");
    fs::write(&new_file, &new).unwrap();
    // A writer process of its own (see killing_the_daemon_mid_write_keeps_the_old_version):
    // O_TRUNC, then 64 KiB writes in order, no fsync.
    let mut writer = Command::new("python3")
        .arg("-c")
        .arg(
            "import os, sys\n\
             fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)\n\
             data = open(sys.argv[2], 'rb').read()\n\
             for i in range(0, len(data), 65536):\n    os.write(fd, data[i:i + 65536])\n\
             sys.stdin.read()\n",
        )
        .arg(mnt.join("s"))
        .arg(&new_file)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut tmp = None;
    wait_for("the stream's temporary holds frames", || {
        tmp = temporaries(&src, "s")
            .into_iter()
            .find(|p| fs::metadata(p).is_ok_and(|m| m.len() > 300_000));
        tmp.is_some()
    });
    let tmp = tmp.unwrap();
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    let _ = writer.kill();
    let _ = writer.wait();
    common::lazy_unmount(&mnt);

    assert_eq!(decode(&src.join("s.adz")), old, "the old version is intact");
    assert_eq!(fs::read_dir(src.join(".adz-staging")).unwrap().count(), 0, "nothing staged");
    assert!(tmp.exists(), "the temporary is left for recover");
    // What `adz recover TEMPORARY OUT.adz` does: the complete frames, a prefix of the new bytes.
    let store = adz_core::store::LocalStorage::new(&src).unwrap();
    let len = fs::metadata(&tmp).unwrap().len();
    let out = adz_core::store::Storage::create(&store, "salvaged.adz").unwrap();
    let report = adz_core::recover_sized(File::open(&tmp).unwrap(), len, out).unwrap();
    assert!(!report.complete, "{report:?}");
    let got = decode(&src.join("salvaged.adz"));
    assert!(got.len() >= 64 << 10, "at least one frame salvaged: {} bytes", got.len());
    assert!(got.len() < new.len());
    assert!(got == new[..got.len()], "the salvaged bytes are the new version's first ones");
}

#[test]
fn a_mount_that_stages_writes_streams_nothing() {
    let _serial = serial();
    let mut opts = common::test_options();
    opts.stream_writes = false;
    let Some(m) = Mounted::with(opts, |_| {}) else { return };
    let raw = data(400_000, 9);
    let mut f = File::create(m.mnt.join("f")).unwrap();
    f.write_all(&raw).unwrap();
    assert_eq!(staged(&m.src), 1, "staged raw");
    assert!(temporaries(&m.src, "f").is_empty(), "nothing compressed before the close");
    drop(f);
    assert_eq!(decode(&m.src.join("f.adz")), raw);
    assert_eq!(m.stats().bytes_streamed, 0);
}

/// A tmpfs of `bytes` mounted on `dir` for a test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// None if tmpfs cannot be mounted here (not root).
    fn mount(dir: &Path, bytes: u64) -> Option<Tmpfs> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A source whose file system fills up during a stream (issue 25: "nothing wrong is ever
/// returned", and a failed write never leaves a file that looks complete): a write or the
/// close fails with ENOSPC, the old version stays under the name, no temporary is left, and
/// once there is room again the same file streams and commits.
#[test]
fn a_stream_that_fills_the_source_fails_and_keeps_the_old_version() {
    let _serial = serial();
    let old = data(200_000, 8);
    // Declared before the mount, so that it is unmounted after it.
    let mut fs_guard = None;
    let Some(mut m) = Mounted::new(|src| {
        fs_guard = Tmpfs::mount(src, 3 << 20);
        fs::write(src.join("f.adz"), adz_bytes(&old, 64 << 10)).unwrap();
    }) else {
        return;
    };
    if fs_guard.is_none() {
        eprintln!("skipped: cannot mount a tmpfs (not root)");
        return;
    }
    // Random bytes do not compress: 8 MiB cannot fit in 3 MiB.
    let raw = noise(8 << 20, 10);
    let mut f = OpenOptions::new().write(true).truncate(true).open(m.mnt.join("f")).unwrap();
    let mut failed = raw.chunks(128 << 10).map(|c| f.write_all(c)).find_map(Result::err);
    let closed = f.sync_all();
    drop(f);
    if failed.is_none() {
        failed = closed.err();
    }
    let err = failed.expect("a write or the fsync fails when the source is full");
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "ENOSPC, not EIO: {err}");
    assert_eq!(decode(&m.src.join("f.adz")), old, "the old version stays under the name");
    assert!(temporaries(&m.src, "f").is_empty(), "no temporary left");
    assert_eq!(fs::read(m.mnt.join("f")).unwrap(), old, "the mount reads the old version");

    // With room again, the same name streams and commits.
    let small = data(1_000_000, 9);
    fs::write(m.mnt.join("f"), &small).unwrap();
    assert_eq!(decode(&m.src.join("f.adz")), small);
    m.unmount();
}
