//! Files built to hurt the reading commands (issue 24): a sparse file whose footer claims a
//! huge index, frames that claim far more than the file holds, a garbage header behind a
//! valid trailer, a huge dead file to recover, a lying index entry. Each gives a clear error
//! or the right result with exit status to match, never an abort, in bounded memory and time.

mod common;

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use adz_core::format::{
    xxh3, FileHeader, FOOTER_LEN, FOOTER_MAGIC, INDEX_ENTRY_LEN, INDEX_HEADER_LEN,
};
use common::*;

#[path = "../../adz-core/tests/shared/bomb.rs"]
mod bomb;
use bomb::zeros_bomb;

/// A sparse file of `size` bytes: a valid file header, zeros, and `tail` at the end.
fn sparse(dir: &Dir, name: &str, size: u64, tail: &[u8]) -> String {
    let path = dir.path(name);
    let mut f = File::create(&path).unwrap();
    f.write_all(&FileHeader::new(1 << 20).unwrap().encode()).unwrap();
    f.set_len(size).unwrap();
    f.seek(SeekFrom::Start(size - tail.len() as u64)).unwrap();
    f.write_all(tail).unwrap();
    dir.s(name)
}

/// A footer claiming `frames` frames whose index ends a file of `size` bytes.
fn footer_claiming(size: u64, frames: u64) -> Vec<u8> {
    let trailer = (INDEX_HEADER_LEN + FOOTER_LEN) as u64 + frames * INDEX_ENTRY_LEN as u64;
    let mut f = Vec::new();
    f.extend_from_slice(&(size - trailer).to_le_bytes());
    f.extend_from_slice(&frames.to_le_bytes());
    f.extend_from_slice(&(frames << 20).to_le_bytes());
    f.extend_from_slice(&0u64.to_le_bytes());
    f.extend_from_slice(&FOOTER_MAGIC);
    f
}

fn not_killed(o: &std::process::Output) {
    assert!(o.status.code().is_some(), "killed by a signal: {}\n{}", o.status, stderr(o));
}

/// The probe's 5 GB sparse file (8 KiB on disk) with a footer claiming 125 M frames made
/// `decompress`, `cat` and `inspect` abort allocating 5 GB. Now: exit 1, saying why.
#[test]
fn a_sparse_file_claiming_a_huge_index_is_refused() {
    let dir = Dir::new();
    let size = 5_000_000_000u64;
    let frames = (size - 200) / INDEX_ENTRY_LEN as u64 - 2;
    let f = sparse(&dir, "sparse.adz", size, &footer_claiming(size, frames));
    let out = dir.s("out.bin");
    for args in [
        vec!["decompress", "-q", &f, &out],
        vec!["cat", &f],
        vec!["cat", &f, "-o", "0", "-n", "10"],
        vec!["inspect", &f],
        vec!["inspect", "--frames", &f],
    ] {
        let o = adz().args(&args).stdout(Stdio::null()).output().unwrap();
        not_killed(&o);
        let e = fail(&o);
        assert!(e.contains("frame_count"), "{args:?}: {e}");
    }
    assert!(!dir.path("out.bin").exists());
}

/// Peak resident memory of a child, polled from /proc until it exits (Linux only).
fn run_peak(args: &[&str]) -> Option<(std::process::ExitStatus, u64)> {
    let mut child = adz().args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let mut measured = false;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status_file) {
            if let Some(kb) = s
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
            {
                peak = peak.max(kb << 10);
                measured = true;
            }
        }
        if let Some(st) = child.try_wait().unwrap() {
            return measured.then_some((st, peak));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The probe's 138 KB file took 2.1-2.7 GB with `decompress -T 8` and aborted at `-T 16`
/// under 4 GB. Now the whole-file read holds at most `max_in_flight_bytes` (256 MiB).
#[test]
fn a_zeros_bomb_decodes_in_bounded_memory_at_16_threads() {
    let dir = Dir::new();
    let f = dir.write("bomb.adz", &zeros_bomb(64));
    assert!(std::fs::metadata(&f).unwrap().len() < 200_000);
    let Some((status, peak)) = run_peak(&["cat", "-T", "16", &f]) else {
        eprintln!("no /proc here: memory not measured");
        return;
    };
    assert!(status.success(), "{status}");
    eprintln!("adz cat -T 16 of the bomb: peak RSS {} MB", peak / 1_000_000);
    assert!(peak < 300_000_000, "peak RSS {peak} bytes");
}

/// `cat` of nothing, or of a range past the end, on a file whose header is garbage behind
/// a valid trailer exited 0. Now every read checks the header first.
#[test]
fn cat_of_an_empty_range_checks_the_header() {
    let dir = Dir::new();
    let data = mixed(400_000);
    let src = dir.write("d.bin", &data);
    let f = dir.s("d.adz");
    ok(&run(&["compress", "-q", "--strategy", "static=none", "-B", "64K", &src, &f]));
    let mut bytes = std::fs::read(&f).unwrap();
    assert!(bytes.len() > 64 << 10);
    bytes[..4].copy_from_slice(b"GARB");
    std::fs::write(&f, &bytes).unwrap();
    for args in [
        vec!["cat", &f, "-o", "0", "-n", "0"],
        vec!["cat", &f, "-o", "10G"],
        vec!["cat", &f, "-o", "400000", "-n", "5"],
        vec!["cat", &f, "-o", "5", "-n", "5"],
    ] {
        let e = fail(&run(&args));
        assert!(e.contains("not an adz file"), "{args:?}: {e}");
    }
}

/// `recover` read the whole rest of a dead file only to count the bytes it dropped: 15 s for
/// a 5 GB sparse file whose scan stopped at byte 32. Now the count comes from the length.
#[test]
fn recover_of_a_huge_dead_file_does_not_read_it_all() {
    let dir = Dir::new();
    let size = 200_000_000_000u64; // 200 GB, sparse: reading it all would take minutes
    let f = sparse(&dir, "dead.adz", size, b"junk");
    let out = dir.s("saved.adz");
    let t = Instant::now();
    let o = run(&["recover", "--json", &f, &out]);
    ok(&o);
    assert!(t.elapsed() < Duration::from_secs(20), "took {:?}", t.elapsed());
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["input_bytes"], size);
    assert_eq!(report["bytes_dropped"], size - 32);
    assert_eq!(report["frames_kept"], 0);
}

/// `verify` named "index entry 0" whichever entry was wrong.
#[test]
fn verify_names_the_wrong_index_entry() {
    let dir = Dir::new();
    let src = dir.write("d.bin", &mixed(5 * 4096));
    let f = dir.s("d.adz");
    ok(&run(&["compress", "-q", "--strategy", "static=zstd:1", "-B", "4K", &src, &f]));
    let mut b = std::fs::read(&f).unwrap();
    let n = b.len();
    let index = n - FOOTER_LEN - 5 * INDEX_ENTRY_LEN - INDEX_HEADER_LEN;
    // Entry 3's raw checksum (its last 8 bytes), then the index checksum made right again.
    b[index + INDEX_HEADER_LEN + 4 * INDEX_ENTRY_LEN - 1] ^= 1;
    let sum = xxh3(&b[index..n - 16]);
    b[n - 16..n - 8].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(&f, &b).unwrap();
    let o = run(&["verify", &f]);
    not_killed(&o);
    assert!(!o.status.success());
    let e = stderr(&o) + &String::from_utf8_lossy(&o.stdout);
    assert!(e.contains("index entry 3"), "{e}");
    assert!(!e.contains("index entry 0"), "{e}");
}
