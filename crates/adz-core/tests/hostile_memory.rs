//! Memory of the reader on a file whose frames claim far more than the file holds (issue
//! 24): 64 frames of 64 MiB of zeros, 138 KB on disk. The old `copy_to` kept 2 × threads
//! runs of 4 frames (gigabytes at 8 threads); now it holds at most `max_in_flight_bytes`.
//! Measured as the process's peak resident memory (Linux: VmHWM, reset through
//! /proc/self/clear_refs), so this binary holds one test, and nothing else runs meanwhile.
//! (The fuzz target `read_capped` checks the same under a capped allocator.)

use std::io::{self, Read};
use std::sync::Arc;

use adz_core::store::{MemoryStorage, Storage};
use adz_core::{Reader, ReaderOptions};

#[path = "shared/bomb.rs"]
mod bomb;
use bomb::zeros_bomb;

/// Peak resident bytes since the last [`reset_peak`], or `None` where Linux's /proc is not.
fn peak() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb << 10)
}

fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[test]
fn decoding_a_zeros_bomb_stays_within_the_budget_whatever_the_threads() {
    let file = zeros_bomb(64);
    assert!(file.len() < 200_000, "{}", file.len());
    let store = MemoryStorage::new();
    store.put("bomb.adz", &file).unwrap();
    if !reset_peak() || peak().is_none() {
        eprintln!("no /proc/self/clear_refs or VmHWM here: memory not measured");
        return;
    }
    let budget = ReaderOptions::default().max_in_flight_bytes;
    for threads in [2, 16] {
        let r =
            Reader::open(Arc::new(store.clone()), "bomb.adz", ReaderOptions::default()).unwrap();
        assert!(reset_peak());
        let base = peak().unwrap();
        let n = r.copy_to(io::sink(), threads).unwrap();
        assert_eq!(n, 64 << 26);
        let used = peak().unwrap().saturating_sub(base);
        eprintln!("copy_to, {threads} threads: peak +{} MiB", used >> 20);
        // The budget, plus a little for codec contexts and thread stacks.
        assert!(used <= budget + (32 << 20), "{threads} threads: {used} bytes");
    }
    // A cursor holds the cache (64 MiB) and the frame it decodes.
    let r = Reader::open(Arc::new(store), "bomb.adz", ReaderOptions::default()).unwrap();
    assert!(reset_peak());
    let base = peak().unwrap();
    let mut c = r.cursor();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    for _ in 0..300 {
        total += c.read(&mut buf).unwrap() as u64;
    }
    assert_eq!(total, 300 << 20);
    let used = peak().unwrap().saturating_sub(base);
    eprintln!("cursor: peak +{} MiB", used >> 20);
    assert!(used <= (64 + 64 + 32) << 20, "cursor: {used} bytes");
    // The limit on one read_range holds before anything is allocated.
    assert!(r.read_range(0, 64 << 26).is_err());
}
