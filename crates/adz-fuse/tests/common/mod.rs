//! Real FUSE mounts for the tests: a source and a mount point in a temporary directory, and
//! a guard that always unmounts.
#![allow(dead_code)]

pub mod apps;
pub mod oracle;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use adz_fuse::{Mount, MountOptions};

/// Whether the tests may mount. Without /dev/fuse they fail, unless ADZ_FUSE_OPTIONAL=1
/// says that skipping is fine here.
pub fn fuse_available() -> bool {
    if Path::new("/dev/fuse").exists() {
        return true;
    }
    if std::env::var("ADZ_FUSE_OPTIONAL").as_deref() == Ok("1") {
        eprintln!("skipped: /dev/fuse is missing and ADZ_FUSE_OPTIONAL=1");
        return false;
    }
    panic!(
        "/dev/fuse is missing: the mount tests need FUSE (set ADZ_FUSE_OPTIONAL=1 to skip them)"
    );
}

/// The tests of one test binary one at a time, where they hold files open for writing or
/// spawn processes: a spawned child holds the descriptors other tests have open until its
/// exec closes them, and that close is a FUSE flush, which commits (ends) their streams.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A source directory mounted on a mount point; unmounted when dropped.
pub struct Mounted {
    pub dir: tempfile::TempDir,
    pub src: PathBuf,
    pub mnt: PathBuf,
    mount: Option<Mount>,
}

/// Small frames and few threads, so that tests cover many frames with little data.
pub fn test_options() -> MountOptions {
    let mut o = MountOptions::default();
    o.write.block_size = 64 << 10;
    o.write.threads = 2;
    o.cache_bytes = 1 << 20;
    o.decode_threads = 2;
    o
}

impl Mounted {
    /// Mount an empty source (filled by `fill` first), or None if the tests are skipped.
    pub fn new(fill: impl FnOnce(&Path)) -> Option<Mounted> {
        Mounted::with(test_options(), fill)
    }

    pub fn with(opts: MountOptions, fill: impl FnOnce(&Path)) -> Option<Mounted> {
        if !fuse_available() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&src).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        fill(&src);
        let mount = adz_fuse::mount(&src, &mnt, opts).expect("mount");
        wait_mounted(&mnt);
        Some(Mounted { dir, src, mnt, mount: Some(mount) })
    }

    /// What the mount's read path has done so far.
    pub fn stats(&self) -> adz_fuse::MountStats {
        self.mount.as_ref().expect("mounted").stats()
    }

    pub fn unmount(&mut self) {
        if let Some(m) = self.mount.take() {
            if m.unmount().is_err() {
                lazy_unmount(&self.mnt);
            }
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.unmount();
    }
}

pub fn lazy_unmount(mnt: &Path) {
    let _ = Command::new("umount").arg("-l").arg(mnt).stderr(std::process::Stdio::null()).status();
}

pub fn is_mounted(mnt: &Path) -> bool {
    let want = std::fs::canonicalize(mnt).unwrap_or_else(|_| mnt.to_path_buf());
    let want = want.to_string_lossy().replace(' ', "\\040");
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

pub fn wait_mounted(mnt: &Path) {
    let start = Instant::now();
    while !is_mounted(mnt) {
        assert!(start.elapsed() < Duration::from_secs(20), "{} not mounted", mnt.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A deterministic xorshift stream from `seed`.
fn xorshift(seed: u64) -> impl Iterator<Item = u64> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    })
}

/// Deterministic bytes that do not compress.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    xorshift(seed).take(len).map(|x| x as u8).collect()
}

/// Deterministic bytes that compress somewhat: words from a small vocabulary.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let words: [&[u8]; 8] =
        [b"alpha ", b"beta ", b"gamma ", b"delta ", b"0.125 ", b"3.5e-7 ", b"\n", b"temperature "];
    let mut out = Vec::with_capacity(len + 16);
    for x in xorshift(seed) {
        if out.len() >= len {
            break;
        }
        if x % 5 == 0 {
            out.extend_from_slice(&x.to_le_bytes()[..3]);
        } else {
            out.extend_from_slice(words[(x % 8) as usize]);
        }
    }
    out.truncate(len);
    out
}

/// An adz file of `raw` with frames of `block` bytes.
pub fn adz_bytes(raw: &[u8], block: u32) -> Vec<u8> {
    let opts = adz_core::FrameWriterOptions { block_size: block, ..Default::default() };
    let mut w = adz_core::FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_data(raw).unwrap();
    w.finish().unwrap().0
}

/// The raw bytes of the adz file at `path`, every checksum checked.
pub fn decode(path: &Path) -> Vec<u8> {
    adz_core::open::decompress_slice(&std::fs::read(path).unwrap(), None)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Run a program (bounded in time) and require success.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `timeout 60 PROGRAM`.
pub fn bounded(program: &str) -> Command {
    let mut c = Command::new("timeout");
    c.arg("60").arg(program);
    c
}

/// A Python with h5py: `ADZ_TEST_PYTHON`, the venv of `make python-test`, or python3.
pub fn python_with_h5py() -> Option<std::path::PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/venv/bin/python");
    let candidates =
        [std::env::var_os("ADZ_TEST_PYTHON").map(Into::into), Some(venv), Some("python3".into())];
    candidates.into_iter().flatten().find(|p: &std::path::PathBuf| {
        Command::new(p)
            .args(["-c", "import h5py, numpy"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// A python process that runs `script` with `args` and holds its descriptors open (until
/// killed) once it printed "ready".
pub fn python_holding(script: &str, args: &[&Path]) -> std::process::Child {
    use std::io::BufRead;
    let mut p = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(p.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the writer failed");
    p
}

/// An adz file of `raw` (8 frames of 64 KiB) with a byte flipped in the middle of frame 2's
/// payload (the frames are about the same size).
pub fn damaged_adz(raw: &[u8]) -> Vec<u8> {
    let mut file = adz_bytes(raw, 64 << 10);
    let per = (file.len() - 32) / 8;
    let at = 32 + 2 * per + per / 2;
    file[at] ^= 0x55;
    file
}

/// Reads in each of the 8 frames of [`damaged_adz`] at `path`: only frame 2's fails, with EIO;
/// the others return the right bytes.
pub fn only_frame_2_fails(path: &Path, raw: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path).unwrap();
    let k = 64 << 10;
    let mut buf = vec![0; 4096];
    for frame in 0..8 {
        match f.read_at(&mut buf, (frame * k + 100) as u64) {
            Ok(n) => {
                assert_ne!(frame, 2, "the damaged frame must fail");
                assert_eq!(&buf[..n], &raw[frame * k + 100..frame * k + 100 + n], "frame {frame}")
            }
            Err(e) => {
                assert_eq!((frame, e.raw_os_error()), (2, Some(libc::EIO)), "frame {frame}: {e}")
            }
        }
    }
}

/// A store that counts the keys its listings return (`list`, and `list_with_delimiter`,
/// forwarded so that the inner store's delimiter listing is used where it has one).
#[derive(Debug, Default)]
pub struct KeyCounter<S> {
    pub inner: S,
    pub keys_listed: std::sync::atomic::AtomicU64,
}

impl<S: adz_store::Storage> adz_store::Storage for KeyCounter<S> {
    fn create(&self, name: &str) -> adz_store::Result<Box<dyn adz_store::Upload>> {
        self.inner.create(name)
    }
    fn put_if_absent(&self, name: &str, data: &[u8]) -> adz_store::Result<()> {
        self.inner.put_if_absent(name, data)
    }
    fn get_range(&self, name: &str, range: std::ops::Range<u64>) -> adz_store::Result<Vec<u8>> {
        self.inner.get_range(name, range)
    }
    fn get(&self, name: &str) -> adz_store::Result<Vec<u8>> {
        self.inner.get(name)
    }
    fn get_tail(&self, name: &str, max_len: u64) -> adz_store::Result<adz_store::Tail> {
        self.inner.get_tail(name, max_len)
    }
    fn size(&self, name: &str) -> adz_store::Result<u64> {
        self.inner.size(name)
    }
    fn delete(&self, name: &str) -> adz_store::Result<()> {
        self.inner.delete(name)
    }
    fn list(&self, prefix: &str) -> adz_store::Result<Vec<adz_store::ObjectMeta>> {
        let v = self.inner.list(prefix)?;
        self.count(v.len());
        Ok(v)
    }
    fn list_with_delimiter(&self, prefix: &str) -> adz_store::Result<adz_store::Listing> {
        let l = self.inner.list_with_delimiter(prefix)?;
        self.count(l.objects.len() + l.prefixes.len());
        Ok(l)
    }
    fn copy(&self, from: &str, to: &str) -> adz_store::Result<()> {
        self.inner.copy(from, to)
    }
}

impl<S> KeyCounter<S> {
    pub fn new(inner: S) -> KeyCounter<S> {
        KeyCounter { inner, keys_listed: Default::default() }
    }

    fn count(&self, n: usize) {
        self.keys_listed.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }
}
