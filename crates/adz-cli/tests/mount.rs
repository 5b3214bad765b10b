//! `adz mount`: in the background (returns once mounted), in the foreground (SIGTERM
//! unmounts and commits), and its errors. Needs /dev/fuse; skipped only with
//! ADZ_FUSE_OPTIONAL=1 where it is missing.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::adz;

fn fuse_available() -> bool {
    if Path::new("/dev/fuse").exists() {
        return true;
    }
    if std::env::var("ADZ_FUSE_OPTIONAL").as_deref() == Ok("1") {
        return false;
    }
    panic!(
        "/dev/fuse is missing: the mount tests need FUSE (set ADZ_FUSE_OPTIONAL=1 to skip them)"
    );
}

fn is_mounted(mnt: &Path) -> bool {
    let want = std::fs::canonicalize(mnt).unwrap().to_string_lossy().replace(' ', "\\040");
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

/// Unmounts (lazily) when dropped, whatever the test did.
struct Unmount<'a>(&'a Path);
impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.0)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

fn wait(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn mount_in_the_background_then_umount() {
    if !fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    std::fs::create_dir(&src).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    let _u = Unmount(&mnt);
    // The daemon keeps stderr (for its log): capturing it would wait for the daemon's end.
    let status = adz()
        .arg("mount")
        .arg(&src)
        .arg(&mnt)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(is_mounted(&mnt), "mounted when `adz mount` returns");
    std::fs::write(mnt.join("hello.txt"), b"hello through the mount").unwrap();
    assert_eq!(std::fs::read(mnt.join("hello.txt")).unwrap(), b"hello through the mount");
    assert!(Command::new("umount").arg(&mnt).status().unwrap().success());
    let out = adz().arg("decompress").arg(src.join("hello.txt.adz")).arg("-").output().unwrap();
    assert_eq!(out.stdout, b"hello through the mount");
}

#[test]
fn sigterm_unmounts_a_foreground_mount_and_commits() {
    if !fuse_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    std::fs::create_dir(&src).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    let _u = Unmount(&mnt);
    let mut child = adz().args(["mount", "--foreground"]).arg(&src).arg(&mnt).spawn().unwrap();
    wait("the mount", || is_mounted(&mnt));
    std::fs::write(mnt.join("a"), b"committed before the signal").unwrap();
    assert!(Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap()
        .success());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "adz mount did not end on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(!is_mounted(&mnt));
    assert!(src.join("a.adz").is_file());
}

#[test]
fn mount_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let out = adz().arg("mount").arg(dir.path().join("nope")).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
    let out = adz().arg("mount").arg(dir.path()).arg(dir.path().join("nope")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mount point is not a directory"));
}
