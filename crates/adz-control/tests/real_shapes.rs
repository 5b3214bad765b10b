//! Data classes that break the reference shape (issue 22): real scientific data on which one
//! codec family's result says nothing about another's. Checked with the deterministic
//! simulator; no threads, no clock.
//!
//! The shape of "LZ4-blind" data is the one measured on astronomy images (16-bit integer and
//! 32-bit float pixels): LZ4 and zstd's negative levels find no matches and store the blocks
//! raw, while zstd:1 and up, whose entropy stage codes the skewed byte values, save 30-45 %.

use adz_control::sim::{DataModel, Perf, Segment, SimConfig, SimReport};
use adz_control::{
    reference, ClassedController, CodecSpec, Controller, ControllerConfig, Ladder, Link, Reason,
    Strategy,
};

const GBE: f64 = 117e6;
const TEN_GBE: f64 = 1200e6;

fn spec(s: &str) -> CodecSpec {
    s.parse().unwrap()
}

/// A data model with every rung of the standard ladder given by `perf(codec, level, reference
/// speed)`: (CPU bytes/s per thread, ratio).
fn per_rung(name: &str, perf: impl Fn(&str, i32, f64) -> (f64, f64)) -> DataModel {
    let l = Ladder::standard();
    let table = l
        .rungs()
        .iter()
        .skip(1)
        .map(|&c| {
            let (speed, ratio) = perf(c.id().name(), c.param(), reference(c).speed);
            (c, Perf { speed, ratio })
        })
        .collect::<Vec<_>>();
    DataModel::from_anchors(name, &l, &table)
}

/// 16-bit image pixels with sky noise: LZ4 and zstd's negative levels save 1-3 % (stored raw
/// at the 0.97 keep threshold), zstd:1 saves 42 %, and higher levels a little more, slower.
fn lz4_blind() -> DataModel {
    per_rung("lz4-blind", |codec, level, ref_speed| match (codec, level) {
        ("lz4", _) => (ref_speed * 0.8, 1.02),
        ("lz4hc", _) => (ref_speed * 0.5, 1.03),
        ("zstd", l) if l < 0 => (ref_speed * 0.9, 1.01),
        ("zstd", l) => (ref_speed * 0.6, 1.72 + 0.01 * f64::from(l.min(19))),
        _ => (ref_speed * 0.5, 1.95),
    })
}

/// 32-bit float pixels: nothing but zstd:1+ saves anything, and that only 12-15 %.
fn float_blind() -> DataModel {
    per_rung("float-blind", |codec, level, ref_speed| match (codec, level) {
        ("zstd", l) if l >= 1 => (ref_speed * 0.5, 1.13 + 0.001 * f64::from(l)),
        ("xz", _) => (ref_speed * 0.4, 1.16),
        _ => (ref_speed * 0.8, 1.005),
    })
}

/// Write throughput of static `c` on the same segments: the comparison a user makes.
fn static_run(threads: usize, link: f64, segs: &[Segment], c: &str) -> SimReport {
    let cfg = ControllerConfig::new(Strategy::Static(spec(c)), Link::Fixed(link), threads);
    SimConfig::new(threads, link).run(&mut Controller::new(cfg), segs)
}

/// The best of the static rungs a user would try (none, lz4, zstd:1, zstd:3, zstd:6).
fn best_static(threads: usize, link: f64, segs: &[Segment]) -> (String, f64) {
    ["none", "lz4:1", "zstd:1", "zstd:3", "zstd:6"]
        .iter()
        .map(|c| (c.to_string(), static_run(threads, link, segs, c).throughput()))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
}

fn summary(rep: &SimReport) -> String {
    let mut out = Vec::new();
    let mut last: Option<(CodecSpec, Reason)> = None;
    let mut count = 0;
    for b in &rep.blocks {
        let k = (b.decision.codec, b.decision.reason);
        if Some(k) == last {
            count += 1;
        } else {
            if let Some((c, r)) = last {
                out.push(format!("{c}/{r:?}x{count}"));
            }
            last = Some(k);
            count = 1;
        }
    }
    if let Some((c, r)) = last {
        out.push(format!("{c}/{r:?}x{count}"));
    }
    out.join(" ")
}

/// S1 on LZ4-blind data, from the start a sampling predictor that measured only the fastest
/// rungs would give (lz4:1), and from the controller's own start: within 3 % of the best static
/// rung, at 1GbE and at 10GbE, with one controller and with one per class.
#[test]
fn s1_on_lz4_blind_data_is_as_fast_as_the_best_static_rung() {
    let threads = 2;
    for data in [lz4_blind(), float_blind()] {
        let segs = [Segment::new(200, data.clone()).with_class(3)];
        for link in [GBE, TEN_GBE] {
            let (best, best_tp) = best_static(threads, link, &segs);
            for start in [Some("lz4:1"), None] {
                let mut cfg =
                    ControllerConfig::new(Strategy::Throughput, Link::Fixed(link), threads);
                cfg.start = start.map(spec);
                let sim = SimConfig::new(threads, link);
                let one = sim.run(&mut Controller::new(cfg.clone()), &segs);
                let classed = sim.run(&mut ClassedController::new(cfg), &segs);
                for (what, rep) in [("one controller", &one), ("per class", &classed)] {
                    eprintln!(
                        "{} at {} MB/s, start {start:?}, {what}: S1 {:.0} MB/s ratio {:.3}, \
                         best static {best} {:.0} MB/s: {}",
                        data.name(),
                        link / 1e6,
                        rep.throughput() / 1e6,
                        rep.ratio(),
                        best_tp / 1e6,
                        summary(rep)
                    );
                    assert!(
                        rep.throughput() >= 0.97 * best_tp,
                        "{} at {} MB/s from {start:?} ({what}): S1 {:.0} MB/s < 0.97 x {best} \
                         {:.0} MB/s",
                        data.name(),
                        link / 1e6,
                        rep.throughput() / 1e6,
                        best_tp / 1e6
                    );
                }
            }
        }
    }
}

/// A fast rung that stores LZ4-blind blocks raw is not evidence that the data is
/// incompressible: no block goes raw for "incompressible" while zstd has not failed on it.
#[test]
fn a_blind_rung_failing_is_not_incompressibility() {
    let threads = 2;
    let segs = [Segment::new(120, lz4_blind()).with_class(3)];
    for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(1.5)] {
        let mut cfg = ControllerConfig::new(strategy, Link::Fixed(GBE), threads);
        cfg.start = Some(spec("lz4:1"));
        let mut ctl = Controller::new(cfg);
        let rep = SimConfig::new(threads, GBE).run(&mut ctl, &segs);
        let raw = rep.blocks.iter().filter(|b| b.decision.reason == Reason::Incompressible).count();
        eprintln!("{strategy}: {raw} blocks raw as incompressible: {}", summary(&rep));
        assert_eq!(raw, 0, "{strategy}: {}", summary(&rep));
        let saved = rep.blocks[20..].iter().filter(|b| !b.stored_raw).count();
        assert!(saved >= 95, "{strategy}: {saved} of 100 blocks saved: {}", summary(&rep));
        assert!(ctl.status().mode != adz_control::Mode::Probe, "{:?}", ctl.status());
    }
}

/// Truly random data still goes to probe mode after a zstd attempt fails too (the existing
/// behaviour is kept where it is right).
#[test]
fn random_data_still_goes_raw_once_an_entropy_rung_fails() {
    let threads = 2;
    let l = Ladder::standard();
    let segs = [Segment::new(100, DataModel::incompressible(&l)).with_class(4)];
    for start in ["lz4:1", "zstd:3"] {
        let mut cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads);
        cfg.start = Some(spec(start));
        let mut ctl = Controller::new(cfg);
        let rep = SimConfig::new(threads, GBE).run(&mut ctl, &segs);
        let attempts = rep.blocks.iter().filter(|b| b.decision.codec != CodecSpec::NONE).count();
        eprintln!("random from {start}: {attempts} attempts: {}", summary(&rep));
        assert!(attempts <= 25, "from {start}: {attempts} attempts of 100: {}", summary(&rep));
    }
}

/// S2 and S3 on LZ4-blind data: their ratio is at least that of the best static rung that
/// finishes within their target, and S1 <= S2 <= S3 in ratio.
#[test]
fn s2_and_s3_on_lz4_blind_data_get_the_ratio_of_the_best_static_rung_in_time() {
    let threads = 2;
    let link = GBE;
    let segs = [Segment::new(200, lz4_blind()).with_class(3)];
    let raw_time = static_run(threads, link, &segs, "none").time();
    let statics: Vec<(String, SimReport)> = ["lz4:1", "zstd:1", "zstd:3", "zstd:6", "zstd:9"]
        .iter()
        .map(|c| (c.to_string(), static_run(threads, link, &segs, c)))
        .collect();
    let mut ratios = Vec::new();
    for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(1.5)] {
        let f = match strategy {
            Strategy::Prolong(f) => f,
            _ => 1.0,
        };
        let mut cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
        cfg.start = Some(spec("lz4:1"));
        let rep = SimConfig::new(threads, link).run(&mut Controller::new(cfg), &segs);
        let in_time = statics
            .iter()
            .filter(|(_, r)| r.time() <= f * raw_time * 1.0001)
            .map(|(c, r)| (c.clone(), r.ratio()))
            .fold(("none".to_string(), 1.0), |a, b| if b.1 > a.1 { b } else { a });
        eprintln!(
            "{strategy}: {:.3} s ({:.2} of raw) ratio {:.3}; best static in time {} ratio {:.3}",
            rep.time(),
            rep.time() / raw_time,
            rep.ratio(),
            in_time.0,
            in_time.1
        );
        if strategy != Strategy::Throughput {
            assert!(rep.ratio() >= 0.99 * in_time.1, "{strategy}: {}", summary(&rep));
            assert!(rep.time() <= 1.05 * f * raw_time, "{strategy}: {}", summary(&rep));
        }
        ratios.push(rep.ratio());
    }
    assert!(ratios[0] <= ratios[1] * 1.01 && ratios[1] <= ratios[2] * 1.01, "{ratios:?}");
}

/// The simulator gives `with_class` data its class: a per-class controller sees it.
#[test]
fn classed_controller_learns_blind_data_per_class() {
    let threads = 2;
    let text = DataModel::monotone("text", &Ladder::standard(), 0.8, 1.0, 0.1);
    let mut segs = Vec::new();
    for _ in 0..10 {
        segs.push(Segment::new(8, text.clone()).with_class(2));
        segs.push(Segment::new(8, lz4_blind()).with_class(3));
    }
    let cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads);
    let mut ctl = ClassedController::new(cfg);
    let rep = SimConfig::new(threads, GBE).run(&mut ctl, &segs);
    let (best, best_tp) = best_static(threads, GBE, &segs);
    eprintln!(
        "text/blind alternating: S1 {:.0} MB/s ratio {:.3}; best static {best} {:.0} MB/s; {} classes",
        rep.throughput() / 1e6,
        rep.ratio(),
        best_tp / 1e6,
        ctl.classes()
    );
    assert!(rep.throughput() >= 0.97 * best_tp, "{}", summary(&rep));
}

/// Matrix-like doubles on which the reference shape puts zstd:3 barely above zstd:2, while
/// zstd:3 stores far fewer bytes (issue 22: S1 held zstd:2, ratio 1.09, at 5x its target and
/// never measured zstd:3, 1.18). Per thread: zstd:1-2 fast, zstd:3 still fast enough for 1GbE.
fn matrix_step() -> DataModel {
    per_rung("matrix step", |codec, level, ref_speed| match (codec, level) {
        ("zstd", 1) => (260e6, 1.08),
        ("zstd", 2) => (240e6, 1.09),
        ("zstd", 3..=4) => (150e6, 1.18),
        ("zstd", l) if l >= 5 => (ref_speed * 0.5, 1.19),
        ("xz", _) => (ref_speed * 0.5, 1.22),
        _ => (ref_speed, 1.01),
    })
}

/// Shadow compression finds a rung the shape hides: with shadows on, S1 reaches zstd:3 on the
/// matrix step and writes within 3 % of the best static rung; the shadows cost at most their
/// 3 % share of the blocks' CPU.
#[test]
fn shadows_find_the_ratio_the_reference_shape_hides() {
    let threads = 2;
    let segs = [Segment::new(200, matrix_step()).with_class(3)];
    let (best, best_tp) = best_static(threads, GBE, &segs);
    let mut cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads);
    cfg.start = Some(spec("zstd:2"));
    let mut sim = SimConfig::new(threads, GBE);
    let without = sim.run(&mut Controller::new(cfg.clone()), &segs);
    sim.shadows = true;
    let mut ctl = Controller::new(cfg);
    let with = sim.run(&mut ctl, &segs);
    let status = ctl.status();
    eprintln!(
        "matrix step at 117 MB/s: best static {best} {:.0} MB/s; S1 without shadows {:.0} MB/s \
         ratio {:.3} ({}); with {:.0} MB/s ratio {:.3}, {} shadows at {:.1} % of the CPU ({})",
        best_tp / 1e6,
        without.throughput() / 1e6,
        without.ratio(),
        summary(&without),
        with.throughput() / 1e6,
        with.ratio(),
        status.shadows,
        status.shadow_share * 100.0,
        summary(&with)
    );
    assert!(with.throughput() >= 0.97 * best_tp, "{}", summary(&with));
    assert!(status.shadows > 0 && status.shadow_share <= 0.031, "{status:?}");
}

/// With shadows on, the cases that already worked still do, and random data is not shadowed
/// (probe mode takes no shadows).
#[test]
fn shadows_keep_the_other_cases_and_cost_nothing_on_random_data() {
    let threads = 2;
    let l = Ladder::standard();
    for data in [lz4_blind(), float_blind(), DataModel::monotone("text", &l, 0.8, 1.0, 0.1)] {
        let segs = [Segment::new(200, data.clone()).with_class(3)];
        for link in [GBE, TEN_GBE] {
            let (best, best_tp) = best_static(threads, link, &segs);
            let cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(link), threads);
            let mut sim = SimConfig::new(threads, link);
            sim.shadows = true;
            let mut ctl = Controller::new(cfg);
            let rep = sim.run(&mut ctl, &segs);
            eprintln!(
                "{} at {} MB/s with shadows: {:.0} MB/s ratio {:.3}, best static {best} {:.0}; {} \
                 shadows, {:.1} % of the CPU",
                data.name(),
                link / 1e6,
                rep.throughput() / 1e6,
                rep.ratio(),
                best_tp / 1e6,
                ctl.status().shadows,
                ctl.status().shadow_share * 100.0
            );
            assert!(rep.throughput() >= 0.97 * best_tp, "{}", summary(&rep));
            assert!(ctl.status().shadow_share <= 0.031);
        }
    }
    let segs = [Segment::new(100, DataModel::incompressible(&l)).with_class(4)];
    let mut sim = SimConfig::new(threads, GBE);
    sim.shadows = true;
    let mut ctl =
        Controller::new(ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads));
    sim.run(&mut ctl, &segs);
    assert!(ctl.status().shadows <= 1, "{:?}", ctl.status());
}
