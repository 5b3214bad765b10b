//! The strategies on real files, block by block, in the deterministic simulator (issue 22).
//!
//! `tests/data/*.tsv` hold what every 1 MiB block of the real-data corpus (`adz-bench datasets
//! --real`: public FITS, netCDF-4, GRIB, NIfTI, FASTQ, a source tar, a `.tar.xz`, and their
//! concatenation) cost at eight static rungs, measured with `adz compress -c RUNG --trace` on 2
//! threads and converted by `scripts/traces-to-sim.py` (the commands are in
//! docs/benchmarks/2026-11-27-real-traces). Each block becomes a one-block segment whose data
//! model is those measurements, with the class the pipeline's classifier gave it. Real data
//! varies from block to block (image volumes with empty slices, tars of text and binaries): a
//! controller tuned on generated data, whose blocks are all alike, never saw that.

use std::path::Path;

use adz_control::sim::{DataModel, Perf, Segment, SimConfig, SimReport};
use adz_control::{ClassedController, CodecSpec, ControllerConfig, Ladder, Link, Strategy};

const THREADS: usize = 2;

/// The static rungs a user would try (the "best static").
const STATIC: [&str; 5] = ["none", "lz4:1", "zstd:1", "zstd:3", "zstd:6"];

/// The blocks of one file as segments, read from its table.
fn load(path: &Path) -> Vec<Segment> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let rungs: Vec<CodecSpec> =
        lines.next().unwrap().split('\t').skip(1).map(|r| r.parse().unwrap()).collect();
    let ladder = Ladder::standard();
    lines
        .enumerate()
        .map(|(j, line)| {
            let f: Vec<&str> = line.split('\t').collect();
            let class: u8 = f[0].parse().unwrap();
            let anchors: Vec<(CodecSpec, Perf)> = rungs
                .iter()
                .enumerate()
                .map(|(k, &c)| {
                    let speed: f64 = f[1 + 2 * k].parse().unwrap();
                    let ratio: f64 = f[2 + 2 * k].parse().unwrap();
                    (c, Perf { speed, ratio })
                })
                .collect();
            let data = DataModel::from_anchors(&format!("block {j}"), &ladder, &anchors);
            Segment::new(1, data).with_class(class)
        })
        .collect()
}

fn files() -> Vec<(String, Vec<Segment>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut out: Vec<(String, Vec<Segment>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), load(&p)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 8, "the real-data tables are missing from {}", dir.display());
    out
}

fn run(strategy: Strategy, link: f64, segs: &[Segment]) -> SimReport {
    let cfg = ControllerConfig::new(strategy, Link::Fixed(link), THREADS);
    SimConfig::new(THREADS, link).run(&mut ClassedController::new(cfg), segs)
}

fn statics(link: f64, segs: &[Segment]) -> Vec<(&'static str, SimReport)> {
    STATIC.iter().map(|c| (*c, run(Strategy::Static(c.parse().unwrap()), link, segs))).collect()
}

/// S1 against the best static rung on every file and link. The targets are ≥ 0.97 on
/// every file and a geometric mean ≥ 1.02 at 117 and 1200 MB/s, ≥ 1.00 of raw at 6000 MB/s;
/// this test holds today's level (docs/benchmarks/2026-11-27-real-traces: at 117 MB/s concat
/// and source are at 0.96-0.97, at 6000 MB/s the small files lose their first blocks' CPU
/// against raw), so that a change that loses ground on real data fails here.
#[test]
fn s1_is_as_fast_as_the_best_static_rung_on_real_files() {
    // (link, each file at least, geometric mean at least)
    let floors = [(117e6, 0.95, 0.98), (1200e6, 0.95, 1.05), (6000e6, 0.75, 0.90)];
    let all = files();
    let mut misses = Vec::new();
    for (link, each, mean) in floors {
        let mut logs = 0.0;
        for (name, segs) in &all {
            let s1 = run(Strategy::Throughput, link, segs);
            let st = statics(link, segs);
            let (best, b) = st.iter().min_by(|a, b| a.1.time().total_cmp(&b.1.time())).unwrap();
            let speed = b.time() / s1.time();
            logs += speed.ln();
            eprintln!(
                "{:>5} MB/s {name:12} S1 {:.4} s ratio {:6.3} | best {best:7} {:.4} s ratio {:6.3} | S1/best {speed:.3}",
                link / 1e6,
                s1.time(),
                s1.ratio(),
                b.time(),
                b.ratio()
            );
            if speed < each {
                misses.push(format!("{name} at {} MB/s: {speed:.3}", link / 1e6));
            }
        }
        let geo = (logs / all.len() as f64).exp();
        eprintln!("{:>5} MB/s geometric mean S1/best {geo:.3}", link / 1e6);
        if geo < mean {
            misses.push(format!("geometric mean at {} MB/s: {geo:.3}", link / 1e6));
        }
    }
    assert!(misses.is_empty(), "S1 lost ground against the best static rung: {misses:?}");
}

/// S2 and S3 (prolong=1.5) against their targets, raw's time and 1.5x it (issue 22 item 5):
/// the duration where some rung can fill the time, the ratio against the best static rung that
/// finishes within the target, and S1 <= S2 <= S3 in ratio.
#[test]
fn s2_and_s3_on_real_files() {
    let all = files();
    for link in [117e6, 1200e6] {
        for (name, segs) in &all {
            let raw = run(Strategy::Static(CodecSpec::NONE), link, segs).time();
            let s1 = run(Strategy::Throughput, link, segs);
            let s2 = run(Strategy::KeepPace, link, segs);
            let s3 = run(Strategy::Prolong(1.5), link, segs);
            let st = statics(link, segs);
            let within = |f: f64| {
                st.iter()
                    .filter(|(_, r)| r.time() <= f * raw)
                    .map(|(_, r)| r.ratio())
                    .fold(1.0, f64::max)
            };
            let (t2, t3) = (s2.time() / raw, s3.time() / raw);
            eprintln!(
                "{:>5} MB/s {name:12} S1 ratio {:6.3} | S2 {:.3} of raw, ratio {:6.3} (best static within {:6.3}) | S3 {:.3} of raw, ratio {:6.3} (best within 1.5x {:6.3})",
                link / 1e6,
                s1.ratio(),
                t2,
                s2.ratio(),
                within(1.0),
                t3,
                s3.ratio(),
                within(1.5)
            );
            // Today's level (the band is 1.00 +- 0.05 of the target): S2 ends within
            // 1.07 of raw's time and S3 within 1.52 of it, S2 stores at least 0.97 of S1's
            // ratio (fastq at 117 MB/s: 0.98) and S3 at least 0.95 of S2's (concat at 1200
            // MB/s: 0.96); the issue asks S1 <= S2 <= S3.
            assert!(t2 <= 1.07 && t3 <= 1.52, "{name} at {link}: S2 {t2:.3}, S3 {t3:.3} of raw");
            assert!(s2.ratio() >= 0.97 * s1.ratio(), "{name} at {link}: S2 below S1's ratio");
            assert!(s3.ratio() >= 0.95 * s2.ratio(), "{name} at {link}: S3 below S2's ratio");
        }
    }
}
