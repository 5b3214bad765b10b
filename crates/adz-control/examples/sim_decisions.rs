//! Every decision the controller makes over a grid of simulated writes, one line per block:
//! the evidence that a refactoring kept behaviour (issue 23). Run it before and after a change
//! and diff the outputs; they must be identical.
//!
//! ```text
//! cargo run -p adz-control --features sim --example sim_decisions > /tmp/before.txt
//! ```
//!
//! The grid: strategies S1, S2, S3 (prolong 1.5), static zstd:3 and archive; links 117, 1200 and
//! 6000 MB/s, fixed and measured (`auto`); 2 and 8 workers; the data shapes of the tests
//! (`tests/controller.rs`, `tests/real_shapes.rs`); without and with jitter, wall-time noise
//! and shadows; one controller and one per class. Then the made-up pipelines of the tests that
//! report the pipeline's CPU time and the raw path's cost, which the simulator does not.

use std::fmt::Write as _;
use std::time::Duration;

use adz_control::sim::{DataModel, Segment, SimConfig, SimReport};
use adz_control::{
    BlockContext, BlockMeasurement, ClassedController, CodecSpec, Control, Controller,
    ControllerConfig, Decision, Dtype, Hint, Ladder, Link, SinkMeasurement, Strategy,
};

const MIB: u64 = 1 << 20;

/// The controller tests' helpers: the same data shapes and made-up pipelines.
#[path = "../tests/common/mod.rs"]
mod common;

use common::{anchored, per_rung, spec};

/// The data sets: name and segments.
fn datasets() -> Vec<(String, Vec<Segment>)> {
    let l = Ladder::standard();
    let text = DataModel::monotone("text", &l, 0.8, 1.0, 0.1);
    let doubles = DataModel::monotone("doubles", &l, 0.5, 0.08, 0.1);
    let sparse = DataModel::monotone("sparse", &l, 2.0, 2.0, 0.1);
    let random = DataModel::incompressible(&l);
    let family = anchored(
        "family change",
        &[
            ("lz4:1", 450.0, 2.2),
            ("zstd:-4", 300.0, 3.1),
            ("zstd:1", 160.0, 3.6),
            ("zstd:3", 70.0, 3.76),
        ],
    );
    let flat = anchored(
        "family flat",
        &[
            ("lz4:1", 480.0, 2.19),
            ("zstd:-4", 205.0, 3.1),
            ("zstd:1", 205.0, 3.58),
            ("zstd:3", 70.0, 3.76),
        ],
    );
    let demo_text = anchored(
        "demo text",
        &[
            ("lz4:50", 2200.0, 1.5),
            ("lz4:1", 560.0, 2.3),
            ("zstd:-4", 420.0, 2.9),
            ("zstd:-1", 360.0, 3.25),
            ("zstd:1", 328.0, 3.579),
            ("zstd:2", 308.0, 3.534),
            ("zstd:3", 261.0, 3.765),
            ("zstd:4", 232.0, 3.79),
            ("zstd:5", 140.0, 3.86),
            ("zstd:9", 60.0, 3.97),
        ],
    );
    let demo_sparse = anchored(
        "demo sparse",
        &[
            ("lz4:50", 5000.0, 38.0),
            ("lz4:1", 3500.0, 60.0),
            ("zstd:-4", 1450.0, 117.0),
            ("zstd:-1", 1450.0, 118.0),
            ("zstd:1", 1900.0, 118.3),
            ("zstd:3", 1880.0, 118.5),
            ("zstd:4", 960.0, 118.6),
            ("zstd:9", 300.0, 121.0),
        ],
    );
    let lz4_blind = per_rung("lz4-blind", |codec, level, _, r| match (codec, level) {
        ("lz4", _) => (r * 0.8, 1.02),
        ("lz4hc", _) => (r * 0.5, 1.03),
        ("zstd", l) if l < 0 => (r * 0.9, 1.01),
        ("zstd", l) => (r * 0.6, 1.72 + 0.01 * f64::from(l.min(19))),
        _ => (r * 0.5, 1.95),
    });
    let float_blind = per_rung("float-blind", |codec, level, _, r| match (codec, level) {
        ("zstd", l) if l >= 1 => (r * 0.5, 1.13 + 0.001 * f64::from(l)),
        ("xz", _) => (r * 0.4, 1.16),
        _ => (r * 0.8, 1.005),
    });
    let mut mixed = Vec::new();
    for _ in 0..12 {
        for (class, d) in [(2, &text), (3, &doubles), (1, &sparse), (2, &text), (4, &random)] {
            mixed.push(Segment::new(4, d.clone()).with_class(class));
        }
    }
    let mut demo = Vec::new();
    for _ in 0..10 {
        demo.push(Segment::new(12, demo_text.clone()).with_class(2));
        demo.push(Segment::new(6, demo_sparse.clone()).with_class(1));
    }
    vec![
        ("text".into(), vec![Segment::new(160, text.clone())]),
        ("reference".into(), vec![Segment::new(100, DataModel::reference())]),
        (
            "text-random-hard".into(),
            vec![
                Segment::new(60, text.clone()),
                Segment::new(30, random.clone()),
                Segment::new(60, text.with_speed_scale(0.3)),
                Segment::new(30, text.clone()),
            ],
        ),
        ("family".into(), vec![Segment::new(120, family)]),
        ("family-flat".into(), vec![Segment::new(100, flat)]),
        ("doubles".into(), vec![Segment::new(100, doubles)]),
        ("sparse".into(), vec![Segment::new(80, sparse)]),
        ("lz4-blind".into(), vec![Segment::new(100, lz4_blind).with_class(3)]),
        ("float-blind".into(), vec![Segment::new(100, float_blind).with_class(3)]),
        ("mixed".into(), mixed),
        ("demo".into(), demo),
        (
            "hints".into(),
            vec![
                Segment::new(40, text.clone()),
                Segment::new(30, text.clone()).with_hints(vec![Hint::Hot]),
                Segment::new(30, text.clone()).with_hints(vec![Hint::WriteOnce]),
                Segment::new(10, text.clone()).with_hints(vec![Hint::NoCompress]),
                Segment::new(20, text.clone()).with_hints(vec![Hint::Dtype(Dtype::F64)]),
                Segment::new(20, random).with_hints(vec![Hint::Hot]),
                Segment::new(30, text),
            ],
        ),
    ]
}

fn line(out: &mut String, d: &Decision) {
    let shadow = d.shadow.map_or("-".to_string(), |s| s.to_string());
    let _ = writeln!(out, "{} {} {} {} {:?}", d.seq, d.codec, d.filters, shadow, d.reason);
}

fn report(out: &mut String, name: &str, rep: &SimReport, status: String) {
    let _ = writeln!(out, "== {name}");
    for b in &rep.blocks {
        line(out, &b.decision);
    }
    let _ =
        writeln!(out, "end time {:?} stored {} status {status}", rep.time(), rep.stored_bytes());
}

fn sim_grid(out: &mut String) {
    let strategies = [
        Strategy::Throughput,
        Strategy::KeepPace,
        Strategy::Prolong(1.5),
        Strategy::Static(spec("zstd:3")),
        Strategy::Archive,
    ];
    let links = [117e6, 1200e6, 6000e6];
    for (dname, segs) in datasets() {
        let multi = segs.iter().any(|s| s.class != segs[0].class);
        for &strategy in &strategies {
            for &link in &links {
                for auto in [false, true] {
                    for threads in [2usize, 8] {
                        for variant in 0..3 {
                            let mut sim = SimConfig::new(threads, link);
                            if variant >= 1 {
                                sim = sim.with_jitter(0.2, 3);
                                sim.wall_noise = 2.5;
                            }
                            if variant == 2 {
                                sim.shadows = true;
                            }
                            let l = if auto { Link::Auto } else { Link::Fixed(link) };
                            let cfg = ControllerConfig::new(strategy, l, threads);
                            let tag = format!(
                                "{dname} {strategy} link {l} at {} MB/s threads {threads} variant {variant}",
                                link / 1e6
                            );
                            let mut one = Controller::new(cfg.clone());
                            let rep = sim.run(&mut one, &segs);
                            report(out, &format!("{tag} one"), &rep, format!("{:?}", one.status()));
                            if multi || variant == 1 {
                                let mut c = ClassedController::new(cfg);
                                let rep = sim.run(&mut c, &segs);
                                let st = format!("{:?} classes {}", c.status(), c.classes());
                                report(out, &format!("{tag} classed"), &rep, st);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Starts given from outside: a start rung, a raw start, a predicted incompressible start,
/// the raw path's cost, no schedule.
fn sim_starts(out: &mut String) {
    let l = Ladder::standard();
    let text = DataModel::monotone("text", &l, 0.8, 1.0, 0.1);
    let segs = [Segment::new(80, text.clone()), Segment::new(40, DataModel::incompressible(&l))];
    for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(1.5)] {
        for link in [117e6, 1200e6, 6000e6] {
            for auto in [false, true] {
                let threads = 2;
                let lk = if auto { Link::Auto } else { Link::Fixed(link) };
                let sim = SimConfig::new(threads, link);
                for (i, start) in ["lz4:50", "zstd:1", "xz:9", "none"].iter().enumerate() {
                    let cfg = ControllerConfig::new(strategy, lk, threads).with_start(spec(start));
                    let mut c = Controller::new(cfg);
                    let rep = sim.run(&mut c, &segs);
                    let tag = format!("start {start} {strategy} {lk} {} {i}", link / 1e6);
                    report(out, &tag, &rep, format!("{:?}", c.status()));
                }
                let base = ControllerConfig::new(strategy, lk, threads);
                let mut c = Controller::new(base.clone());
                c.start_incompressible();
                let rep = sim.run(&mut c, &segs);
                report(
                    out,
                    &format!("incompressible start {strategy} {lk} {}", link / 1e6),
                    &rep,
                    format!("{:?}", c.status()),
                );
                let mut c = Controller::new(base.clone());
                c.set_path_cost(2.0 / 4.5e9, 1.0 / 4.5e9);
                c.set_start(CodecSpec::NONE);
                let rep = sim.run(&mut c, &segs);
                report(
                    out,
                    &format!("path cost {strategy} {lk} {}", link / 1e6),
                    &rep,
                    format!("{:?}", c.status()),
                );
                let mut c = ClassedController::new(base.clone().with_cpus(2));
                c.set_path_cost(2.0 / 4.5e9, 1.0 / 4.5e9);
                c.set_start_of(0, spec("lz4:1"));
                c.start_incompressible(3);
                let segs3 = [
                    Segment::new(40, text.clone()),
                    Segment::new(40, DataModel::incompressible(&l)).with_class(3),
                    Segment::new(40, text.clone()).with_class(3),
                ];
                let rep = sim.run(&mut c, &segs3);
                report(
                    out,
                    &format!("classed starts {strategy} {lk} {}", link / 1e6),
                    &rep,
                    format!("{:?} {:?}", c.status_of(0), c.status_of(3)),
                );
                let mut c = Controller::new(base.with_schedule(0.0));
                let rep = sim.run(&mut c, &segs);
                report(
                    out,
                    &format!("no schedule {strategy} {lk} {}", link / 1e6),
                    &rep,
                    format!("{:?}", c.status()),
                );
            }
        }
    }
}

/// A made-up pipeline whose sink reports the pipeline's CPU time: the tests' own
/// (`common::cpu_and_link`), every decision printed.
fn cpu_and_link(
    out: &mut String,
    link: f64,
    pipe_raw: f64,
    stretches: &[(usize, DataModel)],
    report_cpu: bool,
) {
    let _ = writeln!(out, "== cpu_and_link {} {} {report_cpu}", link / 1e6, pipe_raw / 1e6);
    let stretches: Vec<common::Stretch> = stretches
        .iter()
        .map(|(blocks, data)| common::Stretch { blocks: *blocks, data: data.clone() })
        .collect();
    let mut lines = String::new();
    let (_, sink_end, _, ctl) =
        common::cpu_and_link_observed(link, pipe_raw, &stretches, report_cpu, &mut |d| {
            line(&mut lines, d)
        });
    out.push_str(&lines);
    let _ = writeln!(out, "end {sink_end:?} {:?} {:?}", ctl.status(), ctl.pipeline_raw_speed());
}

fn incompressible(out: &mut String, ctl: &mut Controller, n: u64, attempt_secs: f64, tag: &str) {
    let _ = writeln!(out, "== {tag}");
    for i in 0..n {
        let ctx = BlockContext { raw_offset: i * MIB, raw_len: MIB as usize, hints: &[], class: 0 };
        let d = ctl.next_block(&ctx);
        line(out, &d);
        let secs = if d.codec == CodecSpec::NONE { 1e-4 } else { attempt_secs };
        ctl.record_block(&BlockMeasurement {
            decision: d,
            raw_len: MIB,
            stored_len: MIB,
            stored_raw: true,
            wall: Duration::from_secs_f64(secs),
            cpu: Duration::from_secs_f64(secs),
        });
        ctl.record_sink(&SinkMeasurement {
            bytes: MIB + 56,
            busy: Duration::from_secs_f64(MIB as f64 / 6000e6),
            backlogged: true,
            raw: MIB,
            waited: Duration::ZERO,
            cpu: Duration::from_secs_f64(2.0 * MIB as f64 / 4.5e9),
        });
    }
    let _ = writeln!(out, "end {:?}", ctl.status());
}

fn made_up(out: &mut String) {
    let l = Ladder::standard();
    let text = DataModel::monotone("text", &l, 0.8, 1.0, 0.1);
    let tar = DataModel::monotone("tar", &l, 1.0, 1.3, 0.1);
    for link in [117e6, 1200e6, 6000e6] {
        for pipe_raw in [1.5e9, 4.5e9, 9e9] {
            for report_cpu in [false, true] {
                let stretches = [(60, text.clone()), (60, tar.clone()), (60, text.clone())];
                cpu_and_link(out, link, pipe_raw, &stretches, report_cpu);
            }
        }
    }
    for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(1.5)] {
        for (link, path) in [(6000e6, true), (6000e6, false), (1200e6, true)] {
            let cfg = ControllerConfig::new(strategy, Link::Fixed(link), 2).with_cpus(2);
            let mut c = Controller::new(cfg);
            if path {
                c.set_path_cost(2.0 / 4.5e9, 1.0 / 4.5e9);
            }
            incompressible(
                out,
                &mut c,
                200,
                1e-3,
                &format!("incompressible {strategy} {link} {path}"),
            );
        }
    }
}

fn main() {
    let mut out = String::new();
    sim_grid(&mut out);
    sim_starts(&mut out);
    made_up(&mut out);
    print!("{out}");
}
