//! The strategies on real files, block by block, in the deterministic simulator (issue 22).
//!
//! `tests/data/*.tsv` hold what every 1 MiB block of the real-data corpus (`adz-bench datasets
//! --real`: public FITS, netCDF-4, GRIB, NIfTI, FASTQ, a source tar, a `.tar.xz`, and their
//! concatenation) cost at eight static rungs, measured with `adz compress -c RUNG --trace` on 2
//! threads and converted by `scripts/traces-to-sim.py` (the commands are in
//! docs/benchmarks/2026-11-27-real-traces). `tests/data/*.slices` hold each block's middle
//! 64 KiB at the same rungs (`scripts/shadow-slices.py`): what a shadow measurement sees, which
//! misjudges rungs relative to each other as real shadows do. Each block becomes a one-block segment whose data
//! model is those measurements, with the class the pipeline's classifier gave it. Real data
//! varies from block to block (image volumes with empty slices, tars of text and binaries): a
//! controller tuned on generated data, whose blocks are all alike, never saw that.

use std::path::Path;

use adz_control::sim::{ColdStart, DataModel, Perf, Segment, SimConfig, SimReport};
use adz_control::{ClassedController, CodecSpec, ControllerConfig, Ladder, Link, Strategy};

const THREADS: usize = 2;

/// The static rungs a user would try (the "best static").
const STATIC: [&str; 5] = ["none", "lz4:1", "zstd:1", "zstd:3", "zstd:6"];

/// The blocks of one file as segments, read from its table, with the ratios of each block's
/// middle 64 KiB (what a shadow measures) from `NAME.slices` where it exists.
fn load(path: &Path) -> Vec<Segment> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let rungs: Vec<CodecSpec> =
        lines.next().unwrap().split('\t').skip(1).map(|r| r.parse().unwrap()).collect();
    let slices = std::fs::read_to_string(path.with_extension("slices")).ok();
    let mut slice_rows = slices.as_deref().map(|t| {
        let mut l = t.lines();
        let head: Vec<CodecSpec> =
            l.next().unwrap().split('\t').map(|r| r.parse().unwrap()).collect();
        assert_eq!(head, rungs, "{}: the slice table's rungs differ", path.display());
        l
    });
    let ladder = Ladder::standard();
    lines
        .enumerate()
        .map(|(j, line)| {
            let f: Vec<&str> = line.split('\t').collect();
            let class: u8 = f[0].parse().unwrap();
            let speeds: Vec<f64> =
                (0..rungs.len()).map(|k| f[1 + 2 * k].parse().unwrap()).collect();
            let ratios: Vec<f64> =
                (0..rungs.len()).map(|k| f[2 + 2 * k].parse().unwrap()).collect();
            let model = |ratios: &[f64]| {
                let anchors: Vec<(CodecSpec, Perf)> = (0..rungs.len())
                    .map(|k| (rungs[k], Perf { speed: speeds[k], ratio: ratios[k] }))
                    .collect();
                DataModel::from_anchors(&format!("block {j}"), &ladder, &anchors)
            };
            let seg = Segment::new(1, model(&ratios)).with_class(class);
            match slice_rows.as_mut() {
                Some(rows) => {
                    let row = rows
                        .next()
                        .unwrap_or_else(|| panic!("{}: slice row {j} missing", path.display()));
                    let r: Vec<f64> = row.split('\t').map(|v| v.parse().unwrap()).collect();
                    seg.with_slice(model(&r))
                }
                None => seg,
            }
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
    let misses = below_floors(
        // (link, each file at least, geometric mean at least)
        &[(117e6, 0.95, 0.98), (1200e6, 0.95, 1.05), (6000e6, 0.75, 0.90)],
        |link, segs| {
            let s1 = run(Strategy::Throughput, link, segs);
            let best = statics(link, segs).iter().map(|(_, r)| r.time()).fold(f64::MAX, f64::min);
            (s1, best)
        },
    );
    assert!(misses.is_empty(), "S1 lost ground against the best static rung: {misses:?}");
}

/// Every file at every link of `floors` (link, each file at least, geometric mean at least):
/// S1's speed against the best static rung's, where `write` gives S1's run and the best
/// static time; returns what fell below its floor.
fn below_floors(
    floors: &[(f64, f64, f64)],
    write: impl Fn(f64, &[Segment]) -> (SimReport, f64),
) -> Vec<String> {
    let all = files();
    let mut misses = Vec::new();
    for &(link, each, mean) in floors {
        let mut logs = 0.0;
        for (name, segs) in &all {
            let (s1, best) = write(link, segs);
            let speed = best / s1.time();
            logs += speed.ln();
            eprintln!(
                "{:>5} MB/s {name:12} S1 {:.4} s ratio {:6.3} | best static {best:.4} s | S1/best {speed:.3}",
                link / 1e6,
                s1.time(),
                s1.ratio()
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
    misses
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

/// A recorded run's decisions, block by block, replayed through the simulator: the rung of
/// every block comes from a real `--trace`, everything else from a static controller.
struct Replay {
    inner: adz_control::Controller,
    rungs: Vec<CodecSpec>,
    next: usize,
}

impl adz_control::Control for Replay {
    fn next_block(&mut self, ctx: &adz_control::BlockContext) -> adz_control::Decision {
        let mut d = self.inner.next_block(ctx);
        d.codec = self.rungs.get(self.next).copied().unwrap_or(CodecSpec::NONE);
        self.next += 1;
        d
    }
    fn record_block(&mut self, m: &adz_control::BlockMeasurement) {
        self.inner.record_block(m)
    }
    fn record_sink(&mut self, m: &adz_control::SinkMeasurement) {
        self.inner.record_sink(m)
    }
    fn keep_threshold(&self) -> f64 {
        self.inner.keep_threshold()
    }
    fn status(&self) -> adz_control::Status {
        self.inner.status()
    }
    fn record_shadow(&mut self, m: &adz_control::ShadowMeasurement) {
        self.inner.record_shadow(m)
    }
    fn set_path_cost(&mut self, cpu: f64, serial: f64) {
        self.inner.set_path_cost(cpu, serial)
    }
    fn set_start(&mut self, rung: CodecSpec) {
        self.inner.set_start(rung)
    }
    fn start_incompressible(&mut self, class: u8) {
        adz_control::Control::start_incompressible(&mut self.inner, class)
    }
}

/// The codec of every frame of a `--trace` file (filters dropped: the tables have none).
fn trace_rungs(path: &Path) -> Vec<CodecSpec> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let c = l.split("\"config\":\"").nth(1).unwrap().split('"').next().unwrap();
            c.split(' ').next().unwrap().parse().unwrap()
        })
        .collect()
}

/// The start rung of every class of a `--trace` file: its first block's codec.
fn trace_starts(path: &Path) -> Vec<(u8, CodecSpec)> {
    let mut out: Vec<(u8, CodecSpec)> = Vec::new();
    for l in std::fs::read_to_string(path).unwrap().lines() {
        let field = |k: &str| l.split(&format!("\"{k}\":")).nth(1).unwrap().to_string();
        let class: u8 = field("class").split(',').next().unwrap().parse().unwrap();
        let c = field("config");
        let rung: CodecSpec =
            c.trim_start_matches('"').split(['"', ' ']).next().unwrap().parse().unwrap();
        if !out.iter().any(|(k, _)| *k == class) {
            out.push((class, rung));
        }
    }
    out
}

/// Diagnostic, not a check: how much of a real run's loss its decisions explain. For every
/// `NAME.LABEL.LINK.jsonl` trace in `$ADZ_REPLAY_DIR` (NAME as the tables, LINK in MB/s), the
/// simulator's time for that run's rungs against its S1 and best static rung on the same
/// blocks. Run: `ADZ_REPLAY_DIR=dir cargo test -p adz-control --test real_traces -- --ignored
/// --nocapture replay`.
#[test]
#[ignore]
fn replay_recorded_runs() {
    let Ok(dir) = std::env::var("ADZ_REPLAY_DIR") else { return };
    let all = files();
    let mut traces: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    traces.sort();
    for t in traces.iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")) {
        let stem = t.file_stem().unwrap().to_string_lossy().into_owned();
        let parts: Vec<&str> = stem.split('.').collect();
        let (name, label, link) = (parts[0], parts[1], parts[2].parse::<f64>().unwrap() * 1e6);
        let Some((_, segs)) = all.iter().find(|(n, _)| n == name) else { continue };
        let rungs = trace_rungs(t);
        let cfg = ControllerConfig::new(Strategy::Static(CodecSpec::NONE), Link::Fixed(link), 2);
        let mut replay = Replay { inner: adz_control::Controller::new(cfg), rungs, next: 0 };
        let r = SimConfig::new(THREADS, link).run(&mut replay, segs);
        let s1 = run(Strategy::Throughput, link, segs);
        // S1 in the simulator from the recorded run's start rungs (its prediction).
        let mut started = ClassedController::new(ControllerConfig::new(
            Strategy::Throughput,
            Link::Fixed(link),
            THREADS,
        ));
        for (class, rung) in trace_starts(t) {
            adz_control::Control::set_start_of(&mut started, class, rung);
        }
        let s1_started = SimConfig::new(THREADS, link).run(&mut started, segs);
        let st = statics(link, segs);
        let (best, b) = st.iter().min_by(|a, b| a.1.time().total_cmp(&b.1.time())).unwrap();
        eprintln!(
            "{name:10} {label:8} {:>5} MB/s replay {:.4} s ratio {:6.3} | sim S1 {:.4}, from its starts {:.4} | best {best} {:.4} | replay/best {:.3}",
            link / 1e6,
            r.time(),
            r.ratio(),
            s1.time(),
            s1_started.time(),
            b.time(),
            b.time() / r.time()
        );
    }
}

/// S1 as the pipeline runs it through `--throttle RATE --link auto`, the way the benchmark
/// and a user measure it (with `shadows`, the pipeline's default): the link measured from the sink's writes (`Link::Auto`) through a
/// throttle whose burst lets 10 ms of the link's bytes in at memory speed, the raw path's cost
/// told before the write, and the start rung the sampling predictor chose on these files at
/// that link (zstd:1 at 117 MB/s, lz4:25 at 1200 MB/s, raw at 6000 MB/s). Returns the run and
/// the best static rung's time through the same sink. `shadows`: with shadow compression.
fn through_throttle(link: f64, segs: &[Segment], shadows: bool) -> (SimReport, f64) {
    let mut sim = SimConfig::new(THREADS, link).with_sink_buffer((0.01 * link) as u64);
    sim.shadows = shadows;
    let mut ctl =
        ClassedController::new(ControllerConfig::new(Strategy::Throughput, Link::Auto, THREADS));
    adz_control::Control::set_path_cost(&mut ctl, 2.5e-10, 1.25e-10);
    let start = match link {
        l if l < 500e6 => "zstd:1",
        l if l < 3000e6 => "lz4:25",
        _ => "none",
    };
    adz_control::Control::set_start(&mut ctl, start.parse().unwrap());
    let s1 = sim.run(&mut ctl, segs);
    let best = STATIC
        .iter()
        .map(|c| {
            let cfg =
                ControllerConfig::new(Strategy::Static(c.parse().unwrap()), Link::Fixed(link), 2);
            sim.run(&mut ClassedController::new(cfg), segs).time()
        })
        .fold(f64::MAX, f64::min);
    (s1, best)
}

/// S1 with the link measured through a buffer (decision 0042): before the sink has blocked or
/// taken more than a buffer holds, its accept rate is memory speed, and S1 took it for the
/// link: raw blocks and its fastest rungs at 117 MB/s (fastq 0.85, nifti 0.83 of the best
/// static rung, geometric mean 0.93; the real runs lost the same way). It now holds its start
/// until the link is known.
#[test]
fn s1_through_a_measured_link_on_real_files() {
    let misses = below_floors(
        &[(117e6, 0.97, 0.99), (1200e6, 0.80, 1.05), (6000e6, 0.90, 1.00)],
        |link, segs| through_throttle(link, segs, true),
    );
    assert!(misses.is_empty(), "S1 through a measured link lost ground: {misses:?}");
}

/// Diagnostic, not a check: S1 against the best static rung at `$ADZ_SIM_LINK` MB/s (default
/// 117) when the simulator adds, one at a time, what a real run has and the plain simulator
/// lacks: shadow compression, wall-time noise, jitter, a cold start (as after the machine
/// idled: the first 12 blocks up to 8x slower, or the first 8 a few ms longer each), a measured
/// link through a buffer. Run:
/// `ADZ_SIM_LINK=117 cargo test -p adz-control --test real_traces -- --ignored --nocapture
/// sensitivity`.
#[test]
#[ignore]
fn sensitivity_of_s1_to_real_conditions() {
    let all = files();
    let link: f64 = std::env::var("ADZ_SIM_LINK").map_or(117.0, |l| l.parse().unwrap()) * 1e6;
    let base = SimConfig::new(THREADS, link);
    let mut shadows = base.clone();
    shadows.shadows = true;
    // A cold start (docs/benchmarks/2026-11-28-cold-start): the first 12 blocks up to 8x
    // slower, or the first 8 up to `s` seconds longer each.
    let slower = ColdStart::Slower { blocks: 12, factor: 8.0 };
    let added = |seconds| ColdStart::Added { blocks: 8, seconds };
    let variants: Vec<(&str, SimConfig)> = vec![
        ("plain", base.clone()),
        ("shadows", shadows.clone()),
        ("noise 2", base.clone().with_wall_noise(2.0, 7)),
        ("noise 3", base.clone().with_wall_noise(3.0, 7)),
        ("jitter .2", base.clone().with_jitter(0.2, 7)),
        ("shad+noise2", shadows.clone().with_wall_noise(2.0, 7)),
        ("cold 8x/12", base.clone().with_cold_start(slower)),
        ("shad+cold", shadows.clone().with_cold_start(slower)),
        ("cold +6ms/8", base.clone().with_cold_start(added(6e-3))),
        ("cold +20ms/8", base.clone().with_cold_start(added(20e-3))),
        ("shad+c20ms", shadows.with_cold_start(added(20e-3))),
    ];
    let speeds = |f: &dyn Fn(&[Segment]) -> f64| -> String {
        let (mut logs, mut line) = (0.0, String::new());
        for (name, segs) in &all {
            let v = f(segs);
            logs += v.ln();
            line += &format!(" {name} {v:.3}");
        }
        format!("geo {:.3} |{line}", (logs / all.len() as f64).exp())
    };
    for (label, sim) in &variants {
        let line = speeds(&|segs| {
            let cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(link), THREADS);
            let s1 = sim.run(&mut ClassedController::new(cfg), segs);
            let best = STATIC
                .iter()
                .map(|c| run_on(sim, Strategy::Static(c.parse().unwrap()), link, segs).time())
                .fold(f64::MAX, f64::min);
            best / s1.time()
        });
        eprintln!("{label:12} {line}");
    }
    for shadows in [false, true] {
        let line = speeds(&|segs| {
            let (s1, best) = through_throttle(link, segs, shadows);
            best / s1.time()
        });
        eprintln!("{:12} {line}", if shadows { "thr+shadows" } else { "throttle" });
    }
}

fn run_on(sim: &SimConfig, strategy: Strategy, link: f64, segs: &[Segment]) -> SimReport {
    let cfg = ControllerConfig::new(strategy, Link::Fixed(link), THREADS);
    sim.run(&mut ClassedController::new(cfg), segs)
}

/// Diagnostic, not a check: S1's decisions in the simulator on `$ADZ_SIM_FILE` (a table's
/// name) at `$ADZ_SIM_LINK` MB/s, one line per block; with `$ADZ_SIM_THROTTLE` set, as
/// through the throttle ([`through_throttle`]); with `$ADZ_SIM_SHADOWS` set, with shadow
/// compression (either way); with `$ADZ_SIM_STRATEGY` (e.g. `prolong=1.5`), that strategy's
/// decisions instead of S1's (not through the throttle); with `$ADZ_SIM_COLD` (e.g. `8`), after
/// a cold start whose first 12 blocks compress up to that many times slower, or (e.g. `+6`)
/// whose first 8 blocks take up to that many milliseconds longer
/// ([`SimConfig::with_cold_start`]; not through the throttle).
#[test]
#[ignore]
fn decisions_of_s1() {
    let (Ok(name), Ok(link)) = (std::env::var("ADZ_SIM_FILE"), std::env::var("ADZ_SIM_LINK"))
    else {
        return;
    };
    let link: f64 = link.parse::<f64>().unwrap() * 1e6;
    let all = files();
    let (_, segs) = all.iter().find(|(n, _)| *n == name).unwrap();
    let shadows = std::env::var("ADZ_SIM_SHADOWS").is_ok();
    let r = if std::env::var("ADZ_SIM_THROTTLE").is_ok() {
        through_throttle(link, segs, shadows).0
    } else {
        let mut sim = SimConfig::new(THREADS, link);
        sim.shadows = shadows;
        if let Ok(c) = std::env::var("ADZ_SIM_COLD") {
            let cold = match c.strip_prefix('+') {
                Some(ms) => {
                    ColdStart::Added { blocks: 8, seconds: ms.parse::<f64>().expect("ms") * 1e-3 }
                }
                None => ColdStart::Slower { blocks: 12, factor: c.parse().expect("a factor") },
            };
            sim = sim.with_cold_start(cold);
        }
        let strategy = std::env::var("ADZ_SIM_STRATEGY")
            .map_or(Strategy::Throughput, |s| s.parse().expect("a strategy"));
        run_on(&sim, strategy, link, segs)
    };
    for b in &r.blocks {
        eprintln!(
            "{} {} {} {:?} {} {:.1} {:.1} {}",
            b.seq,
            segs[b.segment].class,
            b.decision.codec,
            b.decision.reason,
            b.stored,
            (b.finish - b.start) * 1e3,
            b.write_end * 1e3,
            b.decision.shadow.map(|s| s.to_string()).unwrap_or_default()
        );
    }
}
