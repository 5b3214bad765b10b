//! Random reads in an adz file: latency, and how much is decoded per read (issue 4's bench).
//!
//! ```text
//! cargo run --release -p adz-core --example read_random -- FILE.adz [READS] [READ_SIZE]
//! ```
//!
//! For READS reads of READ_SIZE bytes (default 2000 x 4096) at offsets from a fixed seed, it
//! prints: with the cache off, the latency per read and the frames and bytes decoded per read
//! (at most one frame, two when a read crosses a frame end); the latency of decoding a whole
//! frame (the same frames, read whole); and the same reads with the default 64 MiB cache.
//! The counts are deterministic; the times depend on the machine.

use std::sync::Arc;
use std::time::Instant;

use adz_core::store::LocalStorage;
use adz_core::{Reader, ReaderOptions};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn report(label: &str, mut micros: Vec<f64>) {
    micros.sort_by(f64::total_cmp);
    let mean = micros.iter().sum::<f64>() / micros.len() as f64;
    println!(
        "{label:<34} mean {mean:>9.1} us  p50 {:>9.1} us  p99 {:>9.1} us",
        percentile(&micros, 0.5),
        percentile(&micros, 0.99)
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: read_random FILE.adz [READS] [READ_SIZE]");
        std::process::exit(2);
    };
    let reads: usize = args.get(1).map_or(Ok(2000), |s| s.parse())?;
    let size: u64 = args.get(2).map_or(Ok(4096), |s| s.parse())?;
    let (store, name) = LocalStorage::for_path(path)?;
    let store = Arc::new(store);
    let open = |cache_bytes| {
        Reader::open(store.clone(), &name, ReaderOptions { cache_bytes, ..Default::default() })
    };

    let reader = open(0)?;
    let len = reader.len();
    let frames = reader.index().entries().len();
    let block = reader.index().entries().first().map_or(0, |e| e.raw_len);
    println!(
        "{path}: {len} raw bytes, {frames} frames of {block} bytes; {reads} reads of {size} bytes"
    );
    if len <= size {
        return Err("the file is smaller than one read".into());
    }
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let offsets: Vec<u64> = (0..reads)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % (len - size)
        })
        .collect();

    // Cache off: every read decodes what it needs.
    let mut micros = Vec::with_capacity(reads);
    let (mut max_frames, mut crossing) = (0, 0);
    for &off in &offsets {
        let before = reader.stats();
        let t = Instant::now();
        let got = reader.read_range(off, size)?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(got.len() as u64, size);
        let n = reader.stats().frames_decoded - before.frames_decoded;
        max_frames = max_frames.max(n);
        crossing += usize::from(n > 1);
    }
    let s = reader.stats();
    println!(
        "cache off: frames decoded per read: mean {:.3}, max {max_frames} ({crossing} reads crossed a frame end); bytes decoded per read: mean {:.0}",
        s.frames_decoded as f64 / reads as f64,
        s.bytes_decoded as f64 / reads as f64
    );
    report(&format!("{size}-byte read, cache off"), micros);

    // The whole frame each read fell in, read whole: what a reader without an index
    // inside the frame must pay anyway.
    let mut micros = Vec::with_capacity(reads);
    for &off in &offsets {
        let e = reader.index().entries()[reader.index().frames_for(off..off + 1).start];
        let t = Instant::now();
        reader.read_range(e.raw_offset, u64::from(e.raw_len))?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
    }
    report("whole frame, cache off", micros);

    // The default cache: repeated and neighbouring reads hit it.
    let cached = open(ReaderOptions::default().cache_bytes)?;
    let mut micros = Vec::with_capacity(reads);
    for &off in &offsets {
        let t = Instant::now();
        cached.read_range(off, size)?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let s = cached.stats();
    println!(
        "cache 64 MiB: {} frames decoded, {} cache hits over {reads} reads",
        s.frames_decoded, s.cache_hits
    );
    report(&format!("{size}-byte read, 64 MiB cache"), micros);
    Ok(())
}
