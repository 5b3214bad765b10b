//! The filter's encoding speed on chunks dumped to a file, one thread, as the filter runs:
//! `encode_speed FILE LAYOUT MODE...`, LAYOUT as `4f:56x1048576,8i:8x2097152` (element size,
//! `f` float or `i` integer, chunk count and bytes; the chunks lie back to back in FILE), MODE
//! a static codec (`lz4:1`, `zstd:1`, `none`; `,noshuffle` appended: no shuffle; `,bitshuffle`:
//! bit planes instead of the byte shuffle) or `s1@RATE` (adaptive S1 through RATE bytes/s, one
//! controller for all passes as in one process).
//! Prints MB/s (best of 5 passes) and ratio; for S1 also the codecs of the last pass's chunks
//! in runs (`ADZ_TRACE=1`: of every pass). MODE `oracle@RATE` (with the same suffixes) times
//! every chunk at each of [`ORACLE_RUNGS`] (best of 3) and prints, for a serial write through
//! RATE bytes/s (encode, then send), each rung's time, and the time of the best rung chosen
//! chunk by chunk in hindsight: what no adaptive choice can beat.

use std::time::Instant;

/// The static rungs [`oracle`] chooses from, chunk by chunk.
const ORACLE_RUNGS: [&str; 10] = [
    "none", "lz4:50", "lz4:8", "lz4:1", "zstd:-4", "zstd:-1", "zstd:1", "zstd:2", "zstd:3",
    "zstd:6",
];

use adz_core::control::Strategy;
use adz_hdf5::{describe_chunk, encode_chunk, FilterChoice, Mode, Params};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, layout, modes @ ..] = &args[..] else {
        return Err("usage: encode_speed FILE LAYOUT MODE...".into());
    };
    let data = std::fs::read(file)?;
    let mut chunks = Vec::new();
    let mut pos = 0;
    for group in layout.split(',') {
        let (kind, rest) = group.split_once(':').ok_or("layout")?;
        let (count, bytes) = rest.split_once('x').ok_or("layout")?;
        let class = if kind.ends_with('f') { 2 } else { 1 };
        let elem: u32 = kind.trim_end_matches(['f', 'i']).parse()?;
        for _ in 0..count.parse::<usize>()? {
            let n: usize = bytes.parse()?;
            chunks.push((elem, class, &data[pos..pos + n]));
            pos += n;
        }
    }
    let raw: usize = chunks.iter().map(|c| c.2.len()).sum();
    let mut out = Vec::new();
    for mode in modes {
        let (spec, filters) = if let Some(s) = mode.strip_suffix(",noshuffle") {
            (s, FilterChoice::None)
        } else if let Some(s) = mode.strip_suffix(",bitshuffle") {
            (s, FilterChoice::Bitshuffle)
        } else {
            (mode.as_str(), FilterChoice::Auto)
        };
        if let Some(rate) = spec.strip_prefix("oracle@") {
            oracle(&chunks, rate.parse()?, filters)?;
            continue;
        }
        let mode = match spec.strip_prefix("s1@") {
            Some(rate) => Mode::Adaptive { strategy: Strategy::Throughput, link: rate.parse()? },
            None => Mode::Static(spec.parse()?),
        };
        let trace = std::env::var_os("ADZ_TRACE").is_some();
        let (mut best, mut stored) = (f64::INFINITY, 0);
        let mut runs: Vec<(String, usize)> = Vec::new();
        let mut last = 0.0;
        for pass in 0..5 {
            let t = Instant::now();
            stored = 0;
            runs.clear();
            for &(elem_size, type_class, c) in &chunks {
                let p = Params { mode, filters, elem_size, type_class, chunk_bytes: 0 };
                encode_chunk(&p, c, &mut out)?;
                stored += out.len();
                if matches!(mode, Mode::Adaptive { .. }) {
                    let d = describe_chunk(&out)?.join("+");
                    match runs.last_mut() {
                        Some((last, n)) if *last == d => *n += 1,
                        _ => runs.push((d, 1)),
                    }
                }
            }
            last = t.elapsed().as_secs_f64();
            best = best.min(last);
            if trace || pass == 4 {
                let r: Vec<String> = runs.iter().map(|(d, n)| format!("{n}x {d}")).collect();
                if !r.is_empty() {
                    println!("  pass {pass}: {}", r.join(", "));
                }
            }
        }
        let (mbs, ratio) = (raw as f64 / best / 1e6, raw as f64 / stored as f64);
        // The last pass written serially through 1GbE (117 MB/s): encoding, then the bytes.
        let serial = last + stored as f64 / 117e6;
        println!(
            "{mode:<24} {mbs:6.0} MB/s  ratio {ratio:.3}  last pass + stored at 1GbE {serial:.3} s",
            mode = args_label(spec, filters)
        );
        if trace {
            for c in adz_hdf5::controller_status() {
                println!("  controller {}: {} ({} chunks)", c.key, c.status, c.chunks);
            }
        }
    }
    Ok(())
}

/// Each chunk at each of [`ORACLE_RUNGS`] (one thread, best of 3): the serial write time of
/// every rung alone, and of the best rung per chunk, through `rate` bytes/s.
fn oracle(
    chunks: &[(u32, u32, &[u8])],
    rate: f64,
    filters: FilterChoice,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    let mut per_rung = Vec::new();
    let mut best = vec![f64::INFINITY; chunks.len()];
    for spec in ORACLE_RUNGS {
        let mode = Mode::Static(spec.parse()?);
        let (mut total, mut stored) = (0.0, 0usize);
        for (k, &(elem_size, type_class, c)) in chunks.iter().enumerate() {
            let p = Params { mode, filters, elem_size, type_class, chunk_bytes: 0 };
            let mut secs = f64::INFINITY;
            for _ in 0..3 {
                let t = Instant::now();
                encode_chunk(&p, c, &mut out)?;
                secs = secs.min(t.elapsed().as_secs_f64());
            }
            let serial = secs + out.len() as f64 / rate;
            best[k] = best[k].min(serial);
            total += serial;
            stored += out.len();
        }
        per_rung.push((spec, total, stored));
    }
    let raw: usize = chunks.iter().map(|c| c.2.len()).sum();
    let oracle: f64 = best.iter().sum();
    for (spec, total, stored) in &per_rung {
        let ratio = raw as f64 / *stored as f64;
        println!(
            "  {spec:<8} serial {total:.3} s  ratio {ratio:.3}  oracle / it {:.3}",
            total / oracle
        );
    }
    let fastest = per_rung.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    println!(
        "oracle@{rate:.0}: best rung per chunk {oracle:.3} s, best single rung {fastest:.3} s \
         (the oracle gains {:.1} %)",
        (fastest / oracle - 1.0) * 100.0
    );
    Ok(())
}

fn args_label(spec: &str, f: FilterChoice) -> String {
    match f {
        FilterChoice::None => format!("{spec} (no shuffle)"),
        FilterChoice::Bitshuffle => format!("{spec} (bitshuffle)"),
        _ => spec.to_owned(),
    }
}
