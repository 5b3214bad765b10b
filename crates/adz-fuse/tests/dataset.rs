//! Committed datasets (many writers, one file) in a real mount of a local source: shown as
//! one read-only file, read part by part, a damaged frame failing only its range, changes
//! refused with EPERM, and a later commit seen after the name cache while an open handle
//! keeps its version.

mod common;

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use adz_core::dataset::{Dataset, DatasetWriter, Placement};
use adz_core::store::{LocalStorage, Storage};
use adz_core::{Reader, ReaderOptions, WriteOptions};
use common::{data, serial, Mounted};

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

fn errno_of<T: std::fmt::Debug>(r: std::io::Result<T>) -> Option<i32> {
    r.expect_err("must fail").raw_os_error()
}

fn write_options() -> WriteOptions {
    // 64 KiB frames, 2 threads; a fixed codec, so that frames are compressed.
    let mut o = common::test_options().write;
    o.strategy = "static=zstd:1".parse().unwrap();
    o
}

/// Writes `parts` as parts of dataset `name` at their offsets (writer ids `r0`...), and
/// commits; returns their concatenation.
fn write_parts(store: &dyn Storage, name: &str, parts: &[Vec<u8>], first: usize) -> Vec<u8> {
    let mut at = 0;
    let mut all = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let id = format!("r{}", first + i);
        let mut w =
            DatasetWriter::create(store, name, &id, Placement::At(at), write_options()).unwrap();
        w.write(p).unwrap();
        w.finish().unwrap();
        at += p.len() as u64;
        all.extend_from_slice(p);
    }
    all
}

/// Four parts of different sizes (several 64 KiB frames each).
fn four_parts(seed: u64) -> Vec<Vec<u8>> {
    [300_000, 200_001, 65_536, 250_000]
        .iter()
        .enumerate()
        .map(|(i, &n)| data(n, seed + i as u64))
        .collect()
}

/// A source holding dataset `ds` (4 parts, committed): the mount and the dataset's bytes.
fn mounted_dataset(fill: impl FnOnce(&Path)) -> Option<(Mounted, Vec<u8>)> {
    let mut all = Vec::new();
    let m = Mounted::new(|src| {
        let store = LocalStorage::new(src).unwrap();
        all = write_parts(&store, "ds", &four_parts(7), 0);
        Dataset::commit(&store, "ds", None).unwrap();
        fill(src);
    })?;
    Some((m, all))
}

/// A deterministic xorshift position in `0..n`.
fn positions(n: u64, count: usize) -> Vec<u64> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        })
        .collect()
}

#[test]
fn a_committed_dataset_is_one_read_only_file_that_reads_as_its_parts() {
    let _serial = serial();
    let Some((m, all)) = mounted_dataset(|src| fs::write(src.join("plain.txt"), b"x").unwrap())
    else {
        return;
    };
    let mnt = &m.mnt;
    assert_eq!(names(mnt), ["ds", "plain.txt"], "the manifest and parts directories are hidden");
    for hidden in ["ds.manifest", "ds.parts"] {
        assert_eq!(errno_of(fs::metadata(mnt.join(hidden))), Some(libc::ENOENT), "{hidden}");
    }
    let meta = fs::metadata(mnt.join("ds")).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.len(), all.len() as u64);
    assert_eq!(meta.mode() & 0o7777, 0o444);
    let manifest = fs::metadata(m.src.join(adz_core::dataset::manifest_name("ds", 1))).unwrap();
    assert_eq!(meta.mtime(), manifest.mtime());

    assert!(fs::read(mnt.join("ds")).unwrap() == all, "the whole read is the concatenation");
    let f = File::open(mnt.join("ds")).unwrap();
    let n = all.len() as u64;
    for (k, off) in positions(n, 50).into_iter().enumerate() {
        let len = [1, 4096, 100_000, 400_000][k % 4];
        let mut buf = vec![0; len];
        let got = f.read_at(&mut buf, off).unwrap();
        let want = &all[off as usize..(off as usize + len).min(all.len())];
        assert!(got > 0 && buf[..got] == want[..got], "range {off}+{len}");
    }
    // Past the end: nothing.
    assert_eq!(f.read_at(&mut [0; 10], n).unwrap(), 0);
}

#[test]
fn a_range_reads_only_the_parts_it_touches() {
    let _serial = serial();
    let Some((m, all)) = mounted_dataset(|src| {
        // Part r3 is gone: reads of the others must not need it.
        let parts = fs::read_dir(src.join("ds.parts")).unwrap();
        for p in parts.map(|e| e.unwrap().path()) {
            if p.file_name().unwrap().to_str().unwrap().starts_with("r3.") {
                fs::remove_file(p).unwrap();
            }
        }
    }) else {
        return;
    };
    let f = File::open(m.mnt.join("ds")).unwrap();
    let mut buf = vec![0; 1000];
    assert_eq!(f.read_at(&mut buf, 10_000).unwrap(), 1000);
    assert!(buf[..] == all[10_000..11_000]);
    let r3 = (300_000 + 200_001 + 65_536) as u64;
    assert_eq!(errno_of(f.read_at(&mut buf, r3 + 10)), Some(libc::EIO), "the missing part");
    // (The kernel reads whole pages: the last page before part r3 reaches into it.)
    let before = r3 / 4096 * 4096 - 500;
    assert_eq!(f.read_at(&mut buf[..500], before).unwrap(), 500, "the part before it still reads");
    assert!(buf[..500] == all[before as usize..before as usize + 500]);
}

#[test]
fn a_damaged_frame_fails_only_its_range_and_the_other_parts_read() {
    let _serial = serial();
    let mut bad = 0..0;
    let Some((m, all)) = mounted_dataset(|src| {
        // Flip a byte in the middle of frame 2 of part r1 (dataset bytes 300,000...).
        let dir = src.join("ds.parts");
        let part = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("r1."))
            .unwrap();
        let store: Arc<dyn Storage> = Arc::new(LocalStorage::new(&dir).unwrap());
        let name = part.file_name().unwrap().to_str().unwrap();
        let r = Reader::open(store, name, ReaderOptions::default()).unwrap();
        let e = &r.index().entries()[2];
        bad = 300_000 + e.raw_offset..300_000 + e.raw_offset + u64::from(e.raw_len);
        let mut bytes = fs::read(&part).unwrap();
        let at = (e.file_offset + u64::from(e.stored_len) / 2) as usize;
        bytes[at] ^= 0x55;
        fs::write(&part, bytes).unwrap();
    }) else {
        return;
    };
    let f = File::open(m.mnt.join("ds")).unwrap();
    let mut buf = vec![0; 4096];
    assert_eq!(errno_of(f.read_at(&mut buf, bad.start + 100)), Some(libc::EIO));
    // The other frames of that part, and the other parts, read.
    // (The kernel reads whole pages: those around the bad frame's ends fail too.)
    let after = bad.end.next_multiple_of(4096);
    for off in [0, 299_000, 300_050, after, 600_000, all.len() as u64 - 4096] {
        assert_eq!(f.read_at(&mut buf, off).unwrap(), 4096, "at {off}");
        assert!(buf[..] == all[off as usize..off as usize + 4096], "at {off}");
    }
}

#[test]
fn changes_to_a_dataset_are_refused_with_eperm_and_the_source_is_unchanged() {
    let _serial = serial();
    let Some((m, all)) = mounted_dataset(|src| fs::write(src.join("other"), b"o").unwrap()) else {
        return;
    };
    let ds = m.mnt.join("ds");
    let eperm = Some(libc::EPERM);
    assert_eq!(errno_of(OpenOptions::new().write(true).open(&ds)), eperm, "open for writing");
    assert_eq!(errno_of(OpenOptions::new().append(true).open(&ds)), eperm, "append");
    assert_eq!(errno_of(OpenOptions::new().read(true).truncate(true).write(true).open(&ds)), eperm);
    assert_eq!(
        errno_of(nix::unistd::truncate(&ds, 0).map_err(std::io::Error::from)),
        eperm,
        "truncate"
    );
    assert_eq!(errno_of(fs::remove_file(&ds)), eperm, "unlink");
    assert_eq!(errno_of(fs::rename(&ds, m.mnt.join("moved"))), eperm, "rename it");
    assert_eq!(errno_of(fs::rename(m.mnt.join("other"), &ds)), eperm, "rename over it");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(errno_of(fs::set_permissions(&ds, fs::Permissions::from_mode(0o644))), eperm);
    assert_eq!(
        errno_of(OpenOptions::new().write(true).create_new(true).open(&ds)),
        Some(libc::EEXIST)
    );
    assert!(fs::read(&ds).unwrap() == all);
    assert_eq!(fs::read(m.mnt.join("other")).unwrap(), b"o");
    assert!(m.src.join(adz_core::dataset::manifest_name("ds", 1)).is_file());
    assert!(!m.src.join("ds.adz").exists() && !m.src.join("moved").exists());
}

#[test]
fn a_dataset_hides_an_adz_file_and_a_plain_file_of_its_name() {
    let _serial = serial();
    let Some((m, all)) = mounted_dataset(|src| {
        fs::write(src.join("ds"), b"plain").unwrap();
        fs::write(src.join("ds.adz"), common::adz_bytes(b"adz file", 64 << 10)).unwrap();
        // Not committed: shown as the directories they are.
        let store = LocalStorage::new(src).unwrap();
        write_parts(&store, "pending", &[b"p".to_vec()], 0);
    }) else {
        return;
    };
    assert_eq!(names(&m.mnt), ["ds", "pending.parts"]);
    assert_eq!(fs::metadata(m.mnt.join("ds")).unwrap().len(), all.len() as u64);
    assert!(fs::read(m.mnt.join("ds")).unwrap() == all);
}

#[test]
fn a_later_commit_shows_after_the_name_cache_and_an_open_handle_keeps_its_version() {
    let _serial = serial();
    let Some((m, v1)) = mounted_dataset(|_| {}) else {
        return;
    };
    let ds = m.mnt.join("ds");
    let old = File::open(&ds).unwrap();
    let mut buf = vec![0; 1000];
    assert_eq!(old.read_at(&mut buf, 0).unwrap(), 1000);

    // Version 2: part r1 rewritten with other bytes, and a fifth part appended.
    let store = LocalStorage::new(&m.src).unwrap();
    let parts = four_parts(7);
    let new_r1 = data(parts[1].len(), 99);
    let mut w =
        DatasetWriter::create(&store, "ds", "r1", Placement::At(300_000), write_options()).unwrap();
    w.write(&new_r1).unwrap();
    w.finish().unwrap();
    let tail = data(123_457, 100);
    let mut w =
        DatasetWriter::create(&store, "ds", "r9", Placement::Append, write_options()).unwrap();
    w.write(&tail).unwrap();
    w.finish().unwrap();
    assert_eq!(Dataset::commit(&store, "ds", None).unwrap().version, 2);
    let mut v2 = v1.clone();
    v2[300_000..300_000 + new_r1.len()].copy_from_slice(&new_r1);
    v2.extend_from_slice(&tail);

    // The open handle reads version 1 (or fails where its part was replaced), never v2.
    for off in positions(v1.len() as u64, 50) {
        match old.read_at(&mut buf, off) {
            Ok(n) => {
                let want = &v1[off as usize..(off as usize + n).min(v1.len())];
                assert!(n > 0 && buf[..n] == *want, "at {off}: not version 1's bytes");
            }
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EIO), "at {off}: {e}");
                // (The kernel reads whole pages, and ahead: a request may reach into it.)
                let near = off + (256 << 10) >= 300_000 && off < 500_001 + 4096;
                assert!(near, "at {off}: not near the replaced part r1");
            }
        }
    }
    assert_eq!(old.read_at(&mut buf, v1.len() as u64).unwrap(), 0, "version 1 ends there");

    // After the name cache (1 s), a new lookup sees version 2.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(fs::metadata(&ds).unwrap().len(), v2.len() as u64);
    assert!(fs::read(&ds).unwrap() == v2);
}

#[test]
fn read_ahead_goes_on_into_the_next_part() {
    use std::io::Read;
    let _serial = serial();
    const FRAME: usize = 64 << 10;
    // Three parts of 8 frames each; a window of 16 frames.
    let parts: Vec<Vec<u8>> = (0..3).map(|i| data(8 * FRAME, 60 + i)).collect();
    let mut o = common::test_options();
    o.cache_bytes = 8 << 20;
    o.read_ahead_bytes = 1 << 20;
    // The kernel asks for 2 frames at a time: a window of a whole part would read part 0 in
    // one request, before the mount's read-ahead has a sequence to follow.
    o.kernel_read_ahead_bytes = 128 << 10;
    let mut all = Vec::new();
    let Some(m) = Mounted::with(o, |src| {
        let store = LocalStorage::new(src).unwrap();
        all = write_parts(&store, "ds", &parts, 0);
        Dataset::commit(&store, "ds", None).unwrap();
    }) else {
        return;
    };
    let mut f = File::open(m.mnt.join("ds")).unwrap();
    // Part 0's first 4 frames, then a wait: the window covers part 0's other 4 frames and
    // then part 1's 8. The old read-ahead stopped at part 0's end (at most 4 frames).
    let mut head = vec![0; 4 * FRAME];
    f.read_exact(&mut head).unwrap();
    assert!(head == all[..4 * FRAME]);
    let start = std::time::Instant::now();
    while m.stats().frames_read_ahead < 12 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let s = m.stats();
    assert!(s.frames_read_ahead >= 8, "frames of part 1 were read ahead: {s:?}");
    let mut rest = Vec::new();
    f.read_to_end(&mut rest).unwrap();
    assert!(rest == all[4 * FRAME..]);
    let s = m.stats();
    assert_eq!(s.frames_decoded + s.frames_read_ahead, 24, "each frame once: {s:?}");
    // The reads of part 1 continued the sequence: part 2 was read ahead as well.
    assert!(s.frames_read_ahead >= 16, "{s:?}");
}
