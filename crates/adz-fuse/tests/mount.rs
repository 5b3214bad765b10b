//! Real mounts (root and /dev/fuse): the namespace, reads, writes, unmodified programs,
//! a damaged frame, and a daemon killed mid-write.

mod common;

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use common::{adz_bytes, apps, bounded, data, decode, noise, run, serial, Mounted};

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

/// A writer process of its own: truncates argv[1], writes argv[2]'s bytes, says "ready", fsyncs
/// (the commit, where the tests kill the daemon) and holds the file open until stdin closes.
const REPLACE_AND_FSYNC: &str = "import os, sys\n\
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)\n\
    os.write(fd, open(sys.argv[2], 'rb').read())\n\
    print('ready', flush=True)\n\
    try:\n    os.fsync(fd)\nexcept OSError:\n    pass\n\
    sys.stdin.read()\n";

/// As [`REPLACE_AND_FSYNC`], but the first write lands past the end, so the file is staged
/// rather than streamed (decision 0042) and the fsync compresses it all.
const STAGE_AND_FSYNC: &str = "import os, sys\n\
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)\n\
    os.pwrite(fd, b'x', 1)\n\
    os.pwrite(fd, open(sys.argv[2], 'rb').read(), 0)\n\
    print('ready', flush=True)\n\
    try:\n    os.fsync(fd)\nexcept OSError:\n    pass\n\
    sys.stdin.read()\n";

#[test]
fn namespace_shows_adz_files_by_their_raw_name_and_size() {
    let _serial = serial();
    let raw = data(300_000, 1);
    let Some(m) = Mounted::new(|src| {
        fs::write(src.join("a.adz"), adz_bytes(&raw, 64 << 10)).unwrap();
        fs::set_permissions(src.join("a.adz"), fs::Permissions::from_mode(0o640)).unwrap();
        fs::write(src.join("plain.txt"), b"as is").unwrap();
        fs::create_dir(src.join("d")).unwrap();
        // A plain file shadowed by an adz file of the same visible name.
        fs::write(src.join("b"), b"shadowed").unwrap();
        fs::write(src.join("b.adz"), adz_bytes(b"bee", 64 << 10)).unwrap();
    }) else {
        return;
    };
    let mnt = &m.mnt;
    assert_eq!(names(mnt), ["a", "b", "d", "plain.txt"]);
    let meta = fs::metadata(mnt.join("a")).unwrap();
    assert_eq!(meta.len(), raw.len() as u64);
    assert_eq!(meta.mode() & 0o7777, 0o640);
    assert!(meta.is_file());
    let src_meta = fs::metadata(m.src.join("a.adz")).unwrap();
    assert_eq!(meta.mtime(), src_meta.mtime());
    assert_eq!(fs::read(mnt.join("a")).unwrap(), raw);
    assert_eq!(fs::read(mnt.join("b")).unwrap(), b"bee");
    assert_eq!(fs::read(mnt.join("plain.txt")).unwrap(), b"as is");
    assert!(fs::metadata(mnt.join("a.adz")).is_err(), "the suffix is not visible");
    assert!(fs::metadata(mnt.join(".adz-staging")).is_err(), "the staging directory is hidden");

    // Directory operations pass through to the source.
    fs::create_dir(mnt.join("d/e")).unwrap();
    assert!(m.src.join("d/e").is_dir());
    fs::rename(mnt.join("a"), mnt.join("d/e/a2")).unwrap();
    assert!(m.src.join("d/e/a2.adz").is_file());
    assert_eq!(fs::read(mnt.join("d/e/a2")).unwrap(), raw);
    assert_eq!(fs::remove_dir(mnt.join("d/e")).unwrap_err().raw_os_error(), Some(libc::ENOTEMPTY));
    fs::remove_file(mnt.join("d/e/a2")).unwrap();
    assert!(!m.src.join("d/e/a2.adz").exists());
    fs::remove_dir(mnt.join("d/e")).unwrap();
    assert!(!m.src.join("d/e").exists());

    // chmod, utimens, symlinks, statfs.
    fs::set_permissions(mnt.join("b"), fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(fs::metadata(m.src.join("b.adz")).unwrap().mode() & 0o7777, 0o600);
    let t = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    File::options().write(true).open(mnt.join("plain.txt")).unwrap().set_modified(t).unwrap();
    assert_eq!(fs::metadata(mnt.join("plain.txt")).unwrap().modified().unwrap(), t);
    let f = File::open(mnt.join("b")).unwrap();
    f.set_modified(t).unwrap();
    drop(f);
    assert_eq!(fs::metadata(m.src.join("b.adz")).unwrap().modified().unwrap(), t);
    std::os::unix::fs::symlink("b", mnt.join("link")).unwrap();
    assert_eq!(fs::read_link(mnt.join("link")).unwrap(), Path::new("b"));
    assert_eq!(fs::read(mnt.join("link")).unwrap(), b"bee");
    let out = run(Command::new("stat").arg("-f").arg("-c").arg("%b %S").arg(mnt));
    assert!(!out.trim().starts_with("0 "), "statfs reports the source's blocks: {out}");
    // Hard links are refused with a clear errno.
    assert_eq!(
        fs::hard_link(mnt.join("b"), mnt.join("b2")).unwrap_err().raw_os_error(),
        Some(libc::EPERM)
    );
}

#[test]
fn files_written_through_the_mount_are_adz_files_in_the_source() {
    let _serial = serial();
    let Some(mut m) = Mounted::new(|_| {}) else { return };
    let raw = data(1_000_000, 2);
    fs::write(m.mnt.join("new.bin"), &raw).unwrap();
    assert_eq!(fs::metadata(m.mnt.join("new.bin")).unwrap().len(), raw.len() as u64);
    assert_eq!(fs::read(m.mnt.join("new.bin")).unwrap(), raw);
    // Committed on close: the source holds an adz file of it (S1 on a fast disk may store
    // the frames raw, so no claim on its size).
    assert_eq!(decode(&m.src.join("new.bin.adz")), raw);

    // Overwrite in the middle, append, truncate, each through a reopened file.
    let f = OpenOptions::new().write(true).open(m.mnt.join("new.bin")).unwrap();
    f.write_all_at(b"MIDDLE", 500_000).unwrap();
    drop(f);
    let mut f = OpenOptions::new().append(true).open(m.mnt.join("new.bin")).unwrap();
    f.write_all(b"TAIL").unwrap();
    drop(f);
    let mut want = raw.clone();
    want[500_000..500_006].copy_from_slice(b"MIDDLE");
    want.extend_from_slice(b"TAIL");
    assert_eq!(fs::read(m.mnt.join("new.bin")).unwrap(), want);
    OpenOptions::new().write(true).open(m.mnt.join("new.bin")).unwrap().set_len(100).unwrap();
    want.truncate(100);
    assert_eq!(fs::read(m.mnt.join("new.bin")).unwrap(), want);
    // truncate(2) with no open file, growing: a hole of zeros.
    run(Command::new("truncate").arg("-s").arg("200000").arg(m.mnt.join("new.bin")));
    want.resize(200_000, 0);
    assert_eq!(fs::read(m.mnt.join("new.bin")).unwrap(), want);
    // A write past the end leaves a hole.
    let f = OpenOptions::new().write(true).open(m.mnt.join("new.bin")).unwrap();
    f.write_all_at(b"far", 300_000).unwrap();
    drop(f);
    want.resize(300_000, 0);
    want.extend_from_slice(b"far");
    assert_eq!(fs::read(m.mnt.join("new.bin")).unwrap(), want);
    // O_TRUNC on open.
    fs::write(m.mnt.join("new.bin"), b"short").unwrap();
    assert_eq!(fs::read(m.mnt.join("new.bin")).unwrap(), b"short");

    // An empty file exists as soon as it is created.
    let f = File::create(m.mnt.join("empty")).unwrap();
    assert!(m.src.join("empty.adz").is_file());
    drop(f);
    assert_eq!(fs::metadata(m.mnt.join("empty")).unwrap().len(), 0);

    m.unmount();
    assert_eq!(decode(&m.src.join("new.bin.adz")), b"short");
    assert_eq!(decode(&m.src.join("empty.adz")), b"");
    assert_eq!(fs::read_dir(m.src.join(".adz-staging")).unwrap().count(), 0, "no staging left");
}

#[test]
fn a_reader_sees_the_writer_and_fsync_commits() {
    let _serial = serial();
    let Some(m) = Mounted::new(|_| {}) else { return };
    let p = m.mnt.join("log");
    let mut w = File::create(&p).unwrap();
    w.write_all(b"first ").unwrap();
    let mut r = File::open(&p).unwrap();
    let mut s = String::new();
    r.read_to_string(&mut s).unwrap();
    assert_eq!(s, "first ", "a reader through the mount sees the bytes written so far");
    // Not yet committed: the source still holds the empty file.
    assert_eq!(decode(&m.src.join("log.adz")), b"");
    w.write_all(b"second").unwrap();
    w.sync_all().unwrap();
    assert_eq!(decode(&m.src.join("log.adz")), b"first second", "fsync commits");
    r.seek(SeekFrom::Start(0)).unwrap();
    s.clear();
    r.read_to_string(&mut s).unwrap();
    assert_eq!(s, "first second");
}

#[test]
fn random_reads_decode_only_what_they_need_and_match() {
    let _serial = serial();
    let raw = data(2_000_000, 3);
    let Some(m) =
        Mounted::new(|src| fs::write(src.join("big.adz"), adz_bytes(&raw, 64 << 10)).unwrap())
    else {
        return;
    };
    let f = File::open(m.mnt.join("big")).unwrap();
    let mut x: u64 = 7;
    for _ in 0..300 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        let off = (x >> 20) % raw.len() as u64;
        let len = 1 + ((x >> 8) % 200_000) as usize;
        let mut buf = vec![0; len];
        let n = f.read_at(&mut buf, off).unwrap();
        let end = (off as usize + len).min(raw.len());
        assert_eq!(&buf[..n], &raw[off as usize..end], "read {len} at {off}");
    }
}

#[test]
fn a_damaged_frame_fails_only_its_own_reads_with_eio() {
    let _serial = serial();
    let raw = data(64 << 10 << 3, 4); // 8 frames of 64 KiB
    let Some(m) = Mounted::new(|src| {
        fs::write(src.join("hurt.adz"), common::damaged_adz(&raw)).unwrap();
    }) else {
        return;
    };
    common::only_frame_2_fails(&m.mnt.join("hurt"), &raw);
    // Reading the whole file fails rather than returning wrong bytes.
    let mut all = Vec::new();
    let r = File::open(m.mnt.join("hurt")).unwrap().read_to_end(&mut all);
    assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EIO));
}

#[test]
fn a_damaged_raw_frame_fails_with_eio_and_raw_frames_read_back_exactly() {
    let _serial = serial();
    // Incompressible bytes: every frame is stored raw, served from its fetched bytes.
    let raw = noise(64 << 10 << 3, 11);
    let good = adz_bytes(&raw, 64 << 10);
    assert!(good.len() > raw.len(), "stored raw");
    let Some(m) = Mounted::new(|src| {
        fs::write(src.join("raw.adz"), &good).unwrap();
        fs::write(src.join("hurt.adz"), common::damaged_adz(&raw)).unwrap();
    }) else {
        return;
    };
    assert_eq!(fs::read(m.mnt.join("raw")).unwrap(), raw);
    common::only_frame_2_fails(&m.mnt.join("hurt"), &raw);
    let mut all = Vec::new();
    let r = File::open(m.mnt.join("hurt")).unwrap().read_to_end(&mut all);
    assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EIO));
}

#[test]
fn cp_tar_and_dd_work_through_the_mount() {
    let _serial = serial();
    let Some(m) = Mounted::new(|_| {}) else { return };
    let work = m.dir.path().join("work");
    fs::create_dir_all(work.join("tree/sub")).unwrap();
    let a = data(700_000, 5);
    fs::write(work.join("tree/a.dat"), &a).unwrap();
    fs::write(work.join("tree/sub/b.txt"), data(5_000, 6)).unwrap();
    fs::write(work.join("tree/sub/empty"), b"").unwrap();
    std::os::unix::fs::symlink("../a.dat", work.join("tree/sub/link")).unwrap();

    // cp in and out.
    run(bounded("cp").arg(work.join("tree/a.dat")).arg(m.mnt.join("a.dat")));
    run(bounded("cmp").arg(work.join("tree/a.dat")).arg(m.mnt.join("a.dat")));
    run(bounded("cp").arg(m.mnt.join("a.dat")).arg(work.join("back.dat")));
    assert_eq!(fs::read(work.join("back.dat")).unwrap(), a);

    // tar x into the mount, tar c out of it: the same tree.
    run(bounded("tar").arg("-C").arg(&work).arg("-cf").arg(work.join("t.tar")).arg("tree"));
    run(bounded("tar").arg("-C").arg(&m.mnt).arg("-xf").arg(work.join("t.tar")));
    run(bounded("tar").arg("-C").arg(&m.mnt).arg("-cf").arg(work.join("t2.tar")).arg("tree"));
    fs::create_dir(work.join("out")).unwrap();
    run(bounded("tar").arg("-C").arg(work.join("out")).arg("-xf").arg(work.join("t2.tar")));
    run(bounded("diff")
        .arg("-r")
        .arg("--no-dereference")
        .arg(work.join("tree"))
        .arg(work.join("out/tree")));
    assert!(m.src.join("tree/a.dat.adz").is_file());
    assert!(m.src.join("tree/sub/link").is_symlink());
    // tar x restores mtimes, after close: they land on the adz files.
    let want = fs::metadata(work.join("tree/sub/b.txt")).unwrap().mtime();
    assert_eq!(fs::metadata(m.mnt.join("tree/sub/b.txt")).unwrap().mtime(), want);

    // dd seek= (overwrite in place) and skip= (read from an offset).
    let patch = data(10_000, 7);
    fs::write(work.join("patch"), &patch).unwrap();
    run(bounded("dd")
        .arg(format!("if={}", work.join("patch").display()))
        .arg(format!("of={}", m.mnt.join("a.dat").display()))
        .args(["bs=1000", "seek=300", "conv=notrunc", "status=none"]));
    let mut want = a.clone();
    want[300_000..310_000].copy_from_slice(&patch);
    assert_eq!(fs::read(m.mnt.join("a.dat")).unwrap(), want);
    run(bounded("dd")
        .arg(format!("if={}", m.mnt.join("a.dat").display()))
        .arg(format!("of={}", work.join("skip").display()))
        .args(["bs=1000", "skip=299", "count=12", "status=none"]));
    assert_eq!(fs::read(work.join("skip")).unwrap(), &want[299_000..311_000]);
    assert_eq!(decode(&m.src.join("a.dat.adz")), want);
}

#[test]
fn python_reads_and_numpy_memmaps_through_the_mount() {
    let _serial = serial();
    let values = apps::f64_values();
    let Some(m) =
        Mounted::new(|src| fs::write(src.join("v.f64.adz"), adz_bytes(&values, 64 << 10)).unwrap())
    else {
        return;
    };
    let out = run(bounded("python3").arg("-c").arg(apps::NUMPY_READ).arg(m.mnt.join("v.f64")));
    eprintln!("{out}");
    run(bounded("python3").arg("-c").arg(apps::MMAP_WRITE).arg(m.mnt.join("mapped")));
    let want = apps::mmap_written();
    assert_eq!(fs::read(m.mnt.join("mapped")).unwrap(), want);
    assert_eq!(decode(&m.src.join("mapped.adz")), want);
}

#[test]
fn sqlite_inserts_and_reads_back_through_the_mount() {
    let _serial = serial();
    apps::require_sqlite();
    let Some(mut m) = Mounted::new(|_| {}) else { return };
    let db = m.mnt.join("t.db");
    apps::sqlite_workload(&db);
    apps::sqlite_check(&db);
    m.unmount();
    // The database is an adz file in the source, and intact.
    let plain = m.dir.path().join("plain.db");
    fs::write(&plain, decode(&m.src.join("t.db.adz"))).unwrap();
    apps::sqlite_check(&plain);
}

#[test]
fn read_only_mounts_refuse_changes_with_erofs() {
    let _serial = serial();
    let mut o = common::test_options();
    o.read_only = true;
    let Some(m) =
        Mounted::with(o, |src| fs::write(src.join("r.adz"), adz_bytes(b"ro", 1024)).unwrap())
    else {
        return;
    };
    assert_eq!(fs::read(m.mnt.join("r")).unwrap(), b"ro");
    let e = OpenOptions::new().write(true).open(m.mnt.join("r")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS));
    assert_eq!(fs::write(m.mnt.join("n"), b"x").unwrap_err().raw_os_error(), Some(libc::EROFS));
    assert_eq!(fs::create_dir(m.mnt.join("d")).unwrap_err().raw_os_error(), Some(libc::EROFS));
}

/// The kernel's read-ahead window of a mount, KiB: its backing device's sysfs file.
fn kernel_read_ahead_kb(mnt: &Path) -> u64 {
    let dev = fs::metadata(mnt).unwrap().dev();
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    let path = format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb");
    fs::read_to_string(&path).unwrap().trim().parse().unwrap()
}

#[test]
fn the_kernel_reads_ahead_a_whole_request_or_what_it_is_told() {
    let _serial = serial();
    let Some(m) = Mounted::new(|_| {}) else { return };
    assert_eq!(kernel_read_ahead_kb(&m.mnt), 1024, "the default: one whole 1 MiB request");
    drop(m);
    let mut o = common::test_options();
    o.kernel_read_ahead_bytes = 3 << 20;
    let Some(m) = Mounted::with(o, |_| {}) else { return };
    assert_eq!(kernel_read_ahead_kb(&m.mnt), 3072);
    drop(m);
    let mut o = common::test_options();
    o.kernel_read_ahead_bytes = 0;
    let Some(m) = Mounted::with(o, |_| {}) else { return };
    let kept = kernel_read_ahead_kb(&m.mnt);
    assert!(kept != 1024 && kept != 3072, "0 keeps the kernel's own window, not {kept} KiB");
}

/// Not a test by itself: the daemon that `killing_the_daemon_*` starts in a child process
/// (this test binary again) and kills.
#[test]
fn daemon_helper() {
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

fn spawn_daemon(src: &Path, mnt: &Path) -> std::process::Child {
    spawn_daemon_at(src, mnt, None)
}

/// The daemon, its commits paced to `throttle` bytes/s when given.
fn spawn_daemon_at(src: &Path, mnt: &Path, throttle: Option<f64>) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["daemon_helper", "--exact", "--nocapture", "--test-threads=1"])
        .env("ADZ_FUSE_TEST_SRC", src)
        .env("ADZ_FUSE_TEST_MNT", mnt);
    if let Some(rate) = throttle {
        cmd.env("ADZ_FUSE_TEST_THROTTLE", rate.to_string());
    }
    let child = cmd.spawn().unwrap();
    common::wait_mounted(mnt);
    child
}

#[test]
fn killing_the_daemon_mid_write_keeps_the_old_version() {
    let _serial = serial();
    if !common::fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    fs::create_dir(&src).unwrap();
    fs::create_dir(&mnt).unwrap();
    let old = data(500_000, 8);
    fs::write(src.join("f.adz"), adz_bytes(&old, 64 << 10)).unwrap();
    let mut child = spawn_daemon(&src, &mnt);
    struct Guard<'a>(&'a Path);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            common::lazy_unmount(self.0);
        }
    }
    let _g = Guard(&mnt);

    // Overwrite part of the file and append, without closing; then the daemon dies. The writes
    // come from a process of their own: a process that forks (this test harness runs other
    // tests that spawn programs) hands its descriptors to the child, whose close-on-exec sends
    // FUSE a flush, and a flush commits (docs/MOUNT.md).
    let patch = dir.path().join("patch");
    fs::write(&patch, data(100_000, 9)).unwrap();
    let script = "import os, sys\n\
        fd = os.open(sys.argv[1], os.O_WRONLY)\n\
        os.pwrite(fd, open(sys.argv[2], 'rb').read(), 200000)\n\
        os.pwrite(fd, b'new tail', 500000)\n\
        print('ready', flush=True)\n\
        sys.stdin.read()\n";
    let mut holder = common::python_holding(script, &[&mnt.join("f"), &patch]);
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    common::lazy_unmount(&mnt);

    assert_eq!(decode(&src.join("f.adz")), old, "the old version is intact");
    // The new bytes are in the staging file, raw, for whoever wants them.
    let staged: Vec<_> =
        fs::read_dir(src.join(".adz-staging")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(staged.len(), 1, "{staged:?}");
    let bytes = fs::read(&staged[0]).unwrap();
    assert_eq!(&bytes[500_000..], b"new tail");

    // Killed while committing: the source holds the old or the new version, whole.
    let big_old = data(6_000_000, 10);
    fs::write(src.join("g.adz"), adz_bytes(&big_old, 64 << 10)).unwrap();
    let mut child = spawn_daemon(&src, &mnt);
    let big_new = data(6_000_000, 11);
    let new_file = dir.path().join("new");
    fs::write(&new_file, &big_new).unwrap();
    // The commit (fsync) is where the daemon is killed; the writer is again a process of its own.
    let mut holder = common::python_holding(REPLACE_AND_FSYNC, &[&mnt.join("g"), &new_file]);
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    common::lazy_unmount(&mnt);
    let now = decode(&src.join("g.adz"));
    let first_diff = |v: &[u8]| now.iter().zip(v).position(|(a, b)| a != b);
    assert!(
        now == big_old || now == big_new,
        "a whole version, never a mix: {} bytes; first difference from the old at {:?}, from \
         the new at {:?}",
        now.len(),
        first_diff(&big_old),
        first_diff(&big_new)
    );
}

#[test]
fn recover_salvages_the_temporary_of_a_commit_killed_midway() {
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
    let old = data(300_000, 12);
    fs::write(src.join("h.adz"), adz_bytes(&old, 64 << 10)).unwrap();
    // Commits paced to 1 MB/s: the commit of 6 MB takes seconds, so the kill lands in it.
    let mut child = spawn_daemon_at(&src, &mnt, Some(1e6));
    let new = data(6_000_000, 13);
    let new_file = dir.path().join("new");
    fs::write(&new_file, &new).unwrap();
    let mut holder = common::python_holding(STAGE_AND_FSYNC, &[&mnt.join("h"), &new_file]);
    // Wait until the commit's temporary holds a few frames, then kill the daemon.
    let start = std::time::Instant::now();
    let tmp = loop {
        let found = fs::read_dir(&src).unwrap().map(|e| e.unwrap().path()).find(|p| {
            p.file_name().unwrap().to_string_lossy().starts_with(".h.adz.adz-tmp-")
                && fs::metadata(p).is_ok_and(|m| m.len() > 300_000)
        });
        if let Some(p) = found {
            break p;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no temporary of the commit");
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    common::lazy_unmount(&mnt);

    assert_eq!(decode(&src.join("h.adz")), old, "the old version is intact");
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
    assert_eq!(got, new[..got.len()], "the salvaged bytes are the new version's first ones");
}

#[test]
fn rsync_round_trips_through_the_mount() {
    let _serial = serial();
    if Command::new("rsync").arg("--version").output().is_err() {
        eprintln!("skipped: rsync is missing (scripts/deps.sh installs it)");
        return;
    }
    let Some(m) = Mounted::new(|_| {}) else { return };
    let work = m.dir.path().join("work");
    fs::create_dir_all(work.join("tree/sub")).unwrap();
    fs::write(work.join("tree/a.dat"), data(900_000, 20)).unwrap();
    fs::write(work.join("tree/sub/b.txt"), data(3_000, 21)).unwrap();
    fs::write(work.join("tree/sub/empty"), b"").unwrap();
    std::os::unix::fs::symlink("../a.dat", work.join("tree/sub/link")).unwrap();
    let rsync = |from: &Path, to: &Path| {
        run(bounded("rsync").arg("-a").arg(format!("{}/", from.display())).arg(to));
    };
    // In (rsync writes a temporary name and renames it), out again, and an update in place.
    rsync(&work.join("tree"), &m.mnt.join("tree"));
    rsync(&m.mnt.join("tree"), &work.join("back"));
    run(bounded("diff")
        .arg("-r")
        .arg("--no-dereference")
        .arg(work.join("tree"))
        .arg(work.join("back")));
    let mut changed = data(900_000, 20);
    changed[400_000..400_007].copy_from_slice(b"CHANGED");
    fs::write(work.join("tree/a.dat"), &changed).unwrap();
    run(bounded("rsync")
        .arg("-a")
        .arg("--no-whole-file")
        .arg("--inplace")
        // Same size, and perhaps the same mtime second: compare contents.
        .arg("--checksum")
        .arg(format!("{}/", work.join("tree").display()))
        .arg(m.mnt.join("tree")));
    assert!(decode(&m.src.join("tree/a.dat.adz")) == changed, "rsync --inplace updated it");
    rsync(&m.mnt.join("tree"), &work.join("back2"));
    run(bounded("diff")
        .arg("-r")
        .arg("--no-dereference")
        .arg(work.join("tree"))
        .arg(work.join("back2")));
    assert_eq!(
        fs::metadata(m.mnt.join("tree/a.dat")).unwrap().mtime(),
        fs::metadata(work.join("tree/a.dat")).unwrap().mtime()
    );
}

#[test]
fn h5py_writes_and_reads_a_chunked_file_through_the_mount() {
    let _serial = serial();
    let Some(python) = common::python_with_h5py() else {
        eprintln!("skipped: no Python with h5py (make python-test makes .cache/venv)");
        return;
    };
    let Some(mut m) = Mounted::new(|_| {}) else { return };
    apps::h5py(&python, apps::H5PY_WRITE, &m.mnt.join("d.h5"));
    apps::h5py(&python, apps::H5PY_CHECK, &m.mnt.join("d.h5"));
    m.unmount();
    let raw = decode(&m.src.join("d.h5.adz"));
    assert_eq!(&raw[..8], b"\x89HDF\r\n\x1a\n", "an HDF5 file in the adz file");
}
