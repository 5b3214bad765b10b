//! The sampling predictor (issue 6): the heuristic, the decisions, the budget, and the
//! accuracy of the predicted ratio against a real compression of the whole data.

use adz_core::control::Strategy;
use adz_core::format::CodecSpec;
use adz_core::predict::{
    Compressibility, Feed, Layout, PredictConfig, Predictor, Sample, SampleConfig, FEED_MIN_BYTES,
    LINK_GRID, PATH_COST, SERIAL_COST,
};
use adz_datagen::{generate, Kind};

fn spec(s: &str) -> CodecSpec {
    s.parse().unwrap()
}

fn predictor(threads: usize, rungs: &[&str]) -> Predictor {
    let mut cfg = PredictConfig { threads, ..PredictConfig::default() };
    cfg.rungs = rungs.iter().map(|r| spec(r)).collect();
    // Speeds are never asserted: a generous time budget keeps every rung measured on a
    // loaded machine, so that what is asserted (ratios, decisions) does not depend on timing.
    cfg.time_budget = 1e6;
    Predictor::new(cfg)
}

#[test]
fn random_data_is_incompressible_without_compressing() {
    let data = generate(Kind::Random, 16 << 20, 1);
    let sample = Sample::from_slice(&data, &SampleConfig::default());
    let mut p = Predictor::new(PredictConfig { threads: 2, ..PredictConfig::default() });
    for link in [Some(25e6), Some(117e6), None] {
        let pred = p.predict(&sample, Strategy::Throughput, link).unwrap();
        assert_eq!(pred.heuristic.class, Compressibility::Random);
        assert_eq!(pred.compressed_bytes, 0, "nothing compressed");
        assert!(pred.rungs.is_empty());
        assert!(!pred.pays);
        assert_eq!(pred.start, CodecSpec::NONE);
    }
}

#[test]
fn text_is_worth_compressing_on_a_slow_link() {
    let data = generate(Kind::Text, 16 << 20, 2);
    let sample = Sample::from_slice(&data, &SampleConfig::default());
    let mut p = predictor(2, &["lz4:1", "zstd:1", "zstd:3"]);
    for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(2.0)] {
        let pred = p.predict(&sample, strategy, Some(25e6)).unwrap();
        assert_eq!(pred.heuristic.class, Compressibility::Unknown);
        assert!(pred.pays, "{strategy}: {pred:?}");
        assert_ne!(pred.start, CodecSpec::NONE);
        // A measured rung, or one extrapolated past them when all are faster than S2/S3's
        // target.
        let best = pred.estimate(pred.start).or(pred.extrapolated.as_ref()).unwrap();
        assert!(best.ratio > 2.0, "{best:?}");
        assert!(best.speedup.unwrap() > 1.5, "{best:?}");
        assert!(pred.time_raw.unwrap() > best.time.unwrap());
        // max(compression, transfer) plus one block: at most all of the transfer (if
        // compression-bound) or one thread's time for all of it (2 threads: 2 c).
        let (c, t) = (best.compress_time, best.transfer_time.unwrap());
        let time = best.time.unwrap();
        assert!(time >= c.max(t) && time <= c.max(t) + t.max(2.0 * c), "{best:?}");
    }
    // Link unknown: the minimax-regret start over the grid of plausible links, raw or a
    // measured rung, with its worst regret reported.
    let pred = p.predict(&sample, Strategy::Throughput, None).unwrap();
    assert!(pred.start == CodecSpec::NONE || pred.estimate(pred.start).is_some());
    assert!(pred.regret.unwrap().is_finite() && pred.regret.unwrap() >= 0.0, "{pred:?}");
    assert!(pred.time_raw.is_none() && pred.rungs.iter().all(|r| r.time.is_none()));
    // Many cores make compression fast enough for the fastest links: then it compresses.
    let mut many = predictor(4096, &["lz4:1", "zstd:1", "zstd:3"]);
    let pred = many.predict(&sample, Strategy::Throughput, None).unwrap();
    assert_ne!(pred.start, CodecSpec::NONE, "{pred:?}");
}

#[test]
fn decision_flips_to_raw_as_the_link_passes_the_compression_speed() {
    let data = generate(Kind::Text, 8 << 20, 3);
    let sample = Sample::from_slice(&data, &SampleConfig::default());
    let mut p = predictor(1, &["lz4:1"]);
    let pred = p.predict(&sample, Strategy::Throughput, None).unwrap();
    let lz4 = pred.rungs[0].clone();
    // With one thread at speed s and ratio f: compression pays up to a link of about s
    // (beyond, the compressors are slower than sending raw).
    let slow = lz4.speed / 4.0;
    let fast = lz4.speed * 4.0;
    let at_slow = p.predict(&sample, Strategy::Throughput, Some(slow)).unwrap();
    let at_fast = p.predict(&sample, Strategy::Throughput, Some(fast)).unwrap();
    assert!(at_slow.pays && at_slow.start == spec("lz4:1"), "{at_slow:?}");
    assert!(!at_fast.pays && at_fast.start == CodecSpec::NONE, "{at_fast:?}");
}

#[test]
fn sampling_is_reproducible_with_a_seed() {
    let data = generate(Kind::Mixed, 24 << 20, 4);
    let a = Sample::from_slice(&data, &SampleConfig { seed: 7, ..SampleConfig::default() });
    let b = Sample::from_slice(&data, &SampleConfig { seed: 7, ..SampleConfig::default() });
    let c = Sample::from_slice(&data, &SampleConfig { seed: 8, ..SampleConfig::default() });
    assert_eq!(a, b);
    assert_ne!(
        a.slices.iter().map(|s| s.0).collect::<Vec<_>>(),
        c.slices.iter().map(|s| s.0).collect::<Vec<_>>()
    );
    // The same sample predicts the same ratios.
    let mut p = predictor(2, &["zstd:1"]);
    let (pa, pb) = (
        p.predict(&a, Strategy::Throughput, Some(117e6)).unwrap(),
        p.predict(&b, Strategy::Throughput, Some(117e6)).unwrap(),
    );
    assert_eq!(pa.rungs[0].ratio, pb.rungs[0].ratio);
}

#[test]
fn the_budget_is_respected() {
    let one_slice = SampleConfig::default().min_slice as f64;
    for (kind, len) in [64 << 10, 1 << 20, 3 << 20, 40 << 20]
        .into_iter()
        .flat_map(|len| [(Kind::Text, len), (Kind::Mixed, len)])
    {
        let data = generate(kind, len, 5);
        let sample = Sample::from_slice(&data, &SampleConfig::default());
        assert!(
            sample.bytes() as f64 <= 0.02 * len as f64 + one_slice,
            "{kind} {len}: sampled {}",
            sample.bytes()
        );
        let rungs = ["lz4:1", "zstd:1", "zstd:3"];
        let mut p = predictor(2, &rungs);
        let pred = p.predict(&sample, Strategy::Throughput, Some(117e6)).unwrap();
        // Every compressed byte is a sample byte, once per rung measured, and the slice that
        // sets each rung up a second time if it is alone of its kind (mixed data).
        let per_rung = pred.rungs[0].bytes;
        assert!(pred.rungs.iter().all(|r| r.bytes == per_rung), "{kind} {len}: {pred:?}");
        assert_eq!(pred.compressed_bytes, per_rung * pred.rungs.len() as u64);
        if pred.sampled_bytes == sample.bytes() {
            assert_eq!(per_rung, sample.measured_bytes(), "{kind} {len}");
        }
        let again = per_rung - pred.sampled_bytes;
        assert!(again <= pred.sampled_bytes, "{kind} {len}: {again}");
        if kind == Kind::Text && pred.slices > 1 {
            assert_eq!(again, 0, "{len}: slices of one kind, each once");
        }
        assert!(pred.compressed_bytes as f64 <= 2.0 * 3.0 * (0.02 * len as f64 + one_slice));
    }
    // A tiny time budget: the three cheapest rungs are measured, cheapest first, on a sample
    // cut to the shortest slices; the costlier ones are skipped.
    let data = generate(Kind::Text, 40 << 20, 6);
    let sample = Sample::from_slice(&data, &SampleConfig::default());
    let mut cfg = PredictConfig { threads: 2, time_budget: 1e-9, ..PredictConfig::default() };
    cfg.rungs = ["zstd:3", "lz4:1", "xz:6", "zstd:12", "zstd:1"].map(spec).to_vec();
    // Without the faster rung: whether it is measured depends on how fast lz4:1 ran (on a
    // loaded machine two threads of it fell below 117 MB/s x its ratio); tested on its own below.
    cfg.fast_rungs.clear();
    let pred = Predictor::new(cfg).predict(&sample, Strategy::Throughput, Some(117e6)).unwrap();
    let measured: Vec<CodecSpec> = pred.rungs.iter().map(|r| r.spec).collect();
    assert_eq!(measured, ["lz4:1", "zstd:1", "zstd:3"].map(spec), "cheapest first");
    assert_eq!(pred.skipped, [spec("zstd:12"), spec("xz:6")]);
    assert_eq!(pred.sampled_bytes, 3 * 4096, "the sample was cut");
    assert_eq!(pred.compressed_bytes, 3 * pred.sampled_bytes);

    // The same with a generous share but no seconds left (what a writer's later, per-class
    // prediction gets once the write's budget is spent): the cap wins over the share.
    let mut cfg = PredictConfig {
        threads: 2,
        time_budget: 1e6,
        max_budget_seconds: 0.0,
        ..PredictConfig::default()
    };
    cfg.rungs = ["zstd:3", "lz4:1", "xz:6", "zstd:12", "zstd:1"].map(spec).to_vec();
    let pred = Predictor::new(cfg).predict(&sample, Strategy::Throughput, Some(117e6)).unwrap();
    assert_eq!(pred.budget_seconds, 0.0);
    assert_eq!(pred.rungs.len(), 3, "only the three cheapest: {:?}", pred.skipped);
    assert_eq!(pred.sampled_bytes, 3 * 4096, "the sample was cut");
}

/// S2 and S3 make the write take their target time (raw's, F times raw's) whenever a slower
/// rung can: the time budget is a share of that, not of the fast start's time, and grows
/// with the target. The sample cut for the budget is planned from the reference table, so
/// the bytes sampled do not depend on timing.
#[test]
fn the_budget_grows_with_the_target_time() {
    let data = generate(Kind::Text, 40 << 20, 6);
    let sample = Sample::from_slice(&data, &SampleConfig::default());
    let mut sampled = Vec::new();
    for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(2.0)] {
        let cfg = PredictConfig { threads: 2, ..PredictConfig::default() };
        let pred = Predictor::new(cfg).predict(&sample, strategy, Some(117e6)).unwrap();
        assert!(pred.compressed_bytes >= 3 * pred.sampled_bytes, "{strategy}: {pred:?}");
        let raw = pred.time_raw.unwrap();
        match strategy {
            // No slower rung reaches past the target at 117 MB/s (xz:9 on 2 threads does
            // ~11 MB/s): the budget is 2 % of it.
            Strategy::KeepPace => assert!((pred.budget_seconds / (0.02 * raw) - 1.0).abs() < 1e-9),
            Strategy::Prolong(f) => {
                assert!((pred.budget_seconds / (0.02 * f * raw) - 1.0).abs() < 1e-9)
            }
            _ => assert!(pred.budget_seconds < 0.02 * raw, "{pred:?}"),
        }
        sampled.push(pred.sampled_bytes);
    }
    // S1's budget (2 % of a 0.13 s write) cuts the sample most, S3's (2 % of 0.72 s) least.
    assert!(sampled[0] < sampled[1] && sampled[1] < sampled[2], "{sampled:?}");
    assert!(sampled[2] <= sample.bytes());
}

/// A faster rung than the candidates (`fast_rungs`, default lz4:25) is measured only where the
/// fastest candidate cannot keep the link full: at a fast link S1 may write fastest with it,
/// at a slow one it would only take time from the rungs that matter there.
#[test]
fn a_faster_rung_is_measured_only_where_the_fastest_candidate_cannot_fill_the_link() {
    let data = generate(Kind::Text, 16 << 20, 2);
    let sample = Sample::from_slice(&data, &SampleConfig::default());
    let mut p = predictor(2, &["lz4:1", "zstd:1"]);
    assert_eq!(p.config().fast_rungs, [spec("lz4:25")]);
    let slow = p.predict(&sample, Strategy::Throughput, Some(25e6)).unwrap();
    let measured: Vec<CodecSpec> = slow.rungs.iter().map(|r| r.spec).collect();
    assert_eq!(measured, ["lz4:1", "zstd:1"].map(spec), "{slow:?}");
    // Two threads of lz4:1 do not fill 100 GB/s: lz4:25 is measured, listed cheapest first.
    let fast = p.predict(&sample, Strategy::Throughput, Some(100e9)).unwrap();
    let measured: Vec<CodecSpec> = fast.rungs.iter().map(|r| r.spec).collect();
    assert_eq!(measured, ["lz4:25", "lz4:1", "zstd:1"].map(spec), "{fast:?}");
    let (l25, l1) = (fast.estimate(spec("lz4:25")).unwrap(), fast.estimate(spec("lz4:1")).unwrap());
    assert!(l25.ratio > 1.2 && l25.ratio < l1.ratio, "{l25:?} {l1:?}");
    // With no time budget at all, it is one of the three rungs measured whatever the budget,
    // and zstd:1 is measured as well: the first rung with an entropy stage always is (issue 22).
    let cfg = PredictConfig { threads: 2, max_budget_seconds: 0.0, ..PredictConfig::default() };
    let tight = Predictor::new(cfg).predict(&sample, Strategy::Throughput, Some(100e9)).unwrap();
    let measured: Vec<CodecSpec> = tight.rungs.iter().map(|r| r.spec).collect();
    assert_eq!(measured, ["lz4:25", "lz4:1", "zstd:-1", "zstd:1"].map(spec), "{tight:?}");
    // Turned off.
    let mut cfg = p.config().clone();
    cfg.fast_rungs.clear();
    let off = Predictor::new(cfg).predict(&sample, Strategy::Throughput, Some(100e9)).unwrap();
    assert!(off.estimate(spec("lz4:25")).is_none(), "{off:?}");
}

/// S2 on text at a slow link with a budget for only the three cheapest rungs (lz4:1, zstd:-1,
/// zstd:1, all far faster than the link): the start is extrapolated past the slowest rung
/// measured, along its codec and at most `EXTRAPOLATE_STEPS` ladder steps, to the costliest
/// rung that the reference table, at that rung's measured speed level, predicts to keep pace.
#[test]
fn a_slow_link_starts_s2_past_the_rungs_measured() {
    use adz_core::predict::EXTRAPOLATE_STEPS;
    let data = generate(Kind::Text, 16 << 20, 2);
    let sample = Sample::from_slice(&data, &SampleConfig::default());
    let cfg = PredictConfig { threads: 2, max_budget_seconds: 0.0, ..PredictConfig::default() };
    let link = 25e6;
    let pred = Predictor::new(cfg).predict(&sample, Strategy::KeepPace, Some(link)).unwrap();
    let measured: Vec<CodecSpec> = pred.rungs.iter().map(|r| r.spec).collect();
    assert_eq!(measured, ["lz4:1", "zstd:-1", "zstd:1"].map(spec));
    let start =
        pred.extrapolated.clone().unwrap_or_else(|| panic!("no extrapolated start: {pred:#?}"));
    assert_eq!(pred.start, start.spec);
    assert!(!measured.contains(&pred.start));
    // Past zstd:1 along zstd, within the reach.
    let ladder = adz_core::control::Ladder::standard();
    let from = ladder.position(spec("zstd:1")).unwrap();
    let at = ladder.position(pred.start).unwrap();
    assert!(at > from && at - from <= EXTRAPOLATE_STEPS, "{pred:?}");
    assert_eq!(pred.start.id(), spec("zstd:1").id());
    let raw = pred.time_raw.unwrap();
    assert!(start.time.unwrap() <= raw, "{start:?}");
    assert_eq!(start.ratio, pred.rungs.iter().map(|r| r.ratio).fold(1.0, f64::max));
    // At zstd:1's measured speed level, scaled by the table.
    let z1 = pred.estimate(spec("zstd:1")).unwrap();
    let level = z1.speed / adz_core::control::reference(spec("zstd:1")).speed;
    let expect = adz_core::control::reference(pred.start).speed * level;
    assert!((start.speed / expect - 1.0).abs() < 1e-9, "{start:?} vs {expect}");
    // The costliest in reach that keeps pace: the next rung is out of reach, or would not.
    let model = Predictor::new(PredictConfig { threads: 2, ..PredictConfig::default() })
        .model(data.len() as u64);
    if at - from < EXTRAPOLATE_STEPS {
        let next = ladder.rungs()[at + 1];
        let guess = adz_core::predict::RungPerf::new(
            adz_core::control::reference(next).speed * level,
            start.ratio,
        );
        assert!(model.time_compressed(guess, link) > raw, "{next} would keep pace too");
    }
    // With every rung measured, the start is a measured one (nothing to extrapolate).
    let mut all = predictor(2, &["lz4:1", "zstd:1", "zstd:3", "zstd:6", "zstd:12", "xz:6"]);
    let pred = all.predict(&sample, Strategy::KeepPace, Some(link)).unwrap();
    assert!(pred.extrapolated.is_none() && pred.estimate(pred.start).is_some(), "{pred:?}");
}

/// The predicted ratio against the ratio of compressing the whole data block by block, on
/// datagen's kinds, with the default sample (3 slices, 2 % budget). Tolerance: 7 % (Papio's
/// 3-7 %). The mixed kind (4 MiB segments of four entropy classes in turn) is sampled by class
/// (the probes see four kinds); the old sampling, 3 slices at random places (`probes: 0`),
/// is printed, not asserted: it misses or hits the random segments (-36 % here). The table of
/// the old sampling is in docs/benchmarks/2026-11-23-predict/README.md; 512 MiB inputs, before
/// and after, in docs/benchmarks/2026-11-23-predict-slices/README.md.
#[test]
fn predicted_ratio_is_close_to_the_real_one() {
    let rungs = ["lz4:1", "zstd:1", "zstd:3"];
    let mut worst = 0.0f64;
    for kind in [Kind::Text, Kind::Doubles, Kind::Sparse, Kind::Random, Kind::Mixed] {
        let data = generate(kind, 32 << 20, 11);
        let mut configs = vec![("default", SampleConfig::default(), true)];
        if kind == Kind::Mixed {
            configs.push((
                "old: 3 slices",
                SampleConfig { probes: 0, ..SampleConfig::default() },
                false,
            ));
        }
        for (name, cfg, asserted) in configs {
            let sample = Sample::from_slice(&data, &cfg);
            let mut p = predictor(2, &rungs);
            let pred = p.predict(&sample, Strategy::Throughput, Some(117e6)).unwrap();
            if kind == Kind::Sparse {
                // Obviously redundant: only the two fastest rungs are measured.
                assert_eq!(pred.skipped, [spec("zstd:3")]);
            }
            if asserted {
                // Uniform data is sampled as before; the mixed kind by its four classes.
                let kinds = if kind == Kind::Mixed { 4 } else { 1 };
                assert_eq!(pred.kinds.len(), kinds, "{kind}: {:?}", pred.kinds);
                assert_eq!(sample.spread.is_some(), kind == Kind::Mixed, "{kind}");
            }
            for r in rungs.iter().filter(|r| !pred.skipped.contains(&spec(r))) {
                let real = p.measure_stream(&mut &data[..], spec(r)).unwrap().ratio;
                let predicted = pred.estimate(spec(r)).map_or(1.0, |e| e.ratio);
                let err = predicted / real - 1.0;
                eprintln!(
                    "| {kind} | {name} ({} slices) | {r} | {predicted:.3} | {real:.3} | {:+.2} % |",
                    pred.slices,
                    err * 100.0
                );
                if asserted {
                    assert!(
                        err.abs() <= 0.07,
                        "{kind} {name} {r}: predicted {predicted} real {real}"
                    );
                    worst = worst.max(err.abs());
                }
            }
        }
    }
    eprintln!("worst asserted error: {:.2} %", worst * 100.0);
    assert!(LINK_GRID.windows(2).all(|w| w[0] < w[1]));
}

/// Segments of the alternating files: 3 MiB and a bit, so that segments and the sample's
/// stretches do not line up.
const SEGMENT: usize = (3 << 20) + 12_345;

/// `n` rounds of a text segment and two of random bytes (text from `seed`, random bytes from
/// `seed + 1`).
fn text_then_random(n: usize, seed: u64) -> Vec<u8> {
    let text = generate(Kind::Text, n * SEGMENT, seed);
    let random = generate(Kind::Random, 2 * n * SEGMENT, seed + 1);
    let mut data = Vec::with_capacity(3 * n * SEGMENT);
    for i in 0..n {
        data.extend_from_slice(&text[i * SEGMENT..(i + 1) * SEGMENT]);
        data.extend_from_slice(&random[2 * i * SEGMENT..(2 * i + 2) * SEGMENT]);
    }
    data
}

/// A file whose kinds of data alternate in long segments (text, then two of random bytes,
/// 3 MiB and a bit each, so that segments and stretches do not line up): three slices at
/// random places see one or two kinds in the wrong proportion, the probes see both and the
/// sample takes each in its share. The predicted ratio of each rung is asserted within 3 % of
/// the rung's real ratio on the whole file for five seeds (it is within 0.9 %); the old
/// sampling (no probes) misses by 8-36 %, and by more than 20 % for some seed.
#[test]
fn alternating_segments_are_sampled_in_their_shares() {
    let data = text_then_random(16, 31);
    let rungs = ["lz4:1", "zstd:1"];
    let mut p = predictor(2, &rungs);
    let real: Vec<f64> =
        rungs.iter().map(|r| p.measure_stream(&mut &data[..], spec(r)).unwrap().ratio).collect();
    // The real ratios: a third of the file compresses 2.2-3.6x, two thirds not at all.
    assert!(real[1] > 1.25 && real[1] < 1.45, "{real:?}");
    let error = |cfg: &SampleConfig, p: &mut Predictor| -> f64 {
        let sample = Sample::from_slice(&data, cfg);
        let pred = p.predict(&sample, Strategy::Throughput, Some(117e6)).unwrap();
        rungs
            .iter()
            .zip(&real)
            // Not measured (every slice random to the heuristic): predicted raw.
            .map(|(r, real)| (pred.estimate(spec(r)).map_or(1.0, |e| e.ratio) / real - 1.0).abs())
            .fold(0.0, f64::max)
    };
    let mut old_worst = 0.0f64;
    for seed in 0..5 {
        let new = SampleConfig { seed, ..SampleConfig::default() };
        let sample = Sample::from_slice(&data, &new);
        // The probes see both kinds in their shares (and perhaps a probe on a border).
        let share = |c: u8| sample.kinds.iter().find(|k| k.0 == c).map_or(0.0, |k| k.1);
        let (text_share, random_share) = (share(2), share(4));
        assert!((text_share - 1.0 / 3.0).abs() < 0.03, "{seed}: {:?}", sample.kinds);
        assert!((random_share - 2.0 / 3.0).abs() < 0.03, "{seed}: {:?}", sample.kinds);
        let err = error(&new, &mut p);
        let old = error(&SampleConfig { seed, probes: 0, ..SampleConfig::default() }, &mut p);
        eprintln!("seed {seed}: new {:.1} %, old {:.1} %", err * 100.0, old * 100.0);
        assert!(err <= 0.03, "seed {seed}: {:.1} % off", err * 100.0);
        old_worst = old_worst.max(old);
    }
    assert!(old_worst > 0.20, "the old sampling was within {:.1} %", old_worst * 100.0);
}

/// Where the kinds lie: the probes' map gives each block of the alternating file its kind,
/// and each rung is measured kind by kind, so the predicted write time follows the sections
/// (text compression-bound, random bytes link-bound at 1200 MB/s), not the whole file's
/// averages.
#[test]
fn the_write_time_is_reckoned_along_the_kinds() {
    let data = text_then_random(8, 41);
    let sample = Sample::from_slice(&data, &SampleConfig::default());
    assert!(!sample.map.is_empty() && sample.span == data.len() as u64);
    let block = 1u64 << 20;
    let layout = Layout::from_map(&sample.map, sample.span, data.len() as u64, block).unwrap();
    assert_eq!(layout.steps.len(), (data.len() as u64).div_ceil(block) as usize);
    // Each block wholly within a segment has its segment's kind (text is class 2, random
    // bytes 4); a block across a border is of neither.
    let (mut inside, mut agree) = (0, 0);
    for (j, &c) in layout.steps.iter().enumerate() {
        let (start, end) = (j * block as usize, ((j + 1) * block as usize).min(data.len()));
        if start / SEGMENT == (end - 1) / SEGMENT {
            inside += 1;
            agree += usize::from(c == if start / SEGMENT % 3 == 0 { 2 } else { 4 });
        }
    }
    assert!(inside >= 48 && agree as f64 >= 0.95 * inside as f64, "{agree} of {inside}");
    // lz4:1 measured kind by kind: text saves, random bytes do not.
    let mut p = predictor(2, &["lz4:1"]);
    let (perf, _) = p.measure(&sample, spec("lz4:1")).unwrap();
    let (text_ratio, random_ratio) = (perf.kinds[2].unwrap().1, perf.kinds[4].unwrap().1);
    assert!(text_ratio > 1.5 && random_ratio < 1.01, "{perf:?}");
    // The prediction reckons along the layout: the time of the model that has it.
    let link = 1200e6;
    let pred = p.predict(&sample, Strategy::Throughput, Some(link)).unwrap();
    let model = p.model(data.len() as u64).with_layout(Some(layout));
    let e = pred.estimate(spec("lz4:1")).unwrap();
    let kinded = model.time_compressed(perf, link);
    let flat =
        model.time_compressed(adz_core::predict::RungPerf::new(perf.speed, perf.ratio), link);
    // Speeds are measured anew by each call: the same order of time, not the same time, and
    // on a busy machine (a test run next to a build) one call can measure the codec several
    // times slower than the other; the bounds widen by the two calls' speed ratio.
    let t = e.time.unwrap();
    let s = perf.speed / e.speed;
    let (lo, hi) = (0.5 * kinded * s.min(1.0), 2.0 * kinded * s.max(1.0));
    assert!(t > lo && t < hi, "{t} vs {kinded} (speeds {} and {})", perf.speed, e.speed);
    assert!(kinded >= 0.99 * flat, "sections are no faster than the averages: {kinded} vs {flat}");
}

// The writer's use of the predictor: it holds its first blocks, predicts, starts the
// controller there, and loses nothing on the way.

mod writer {
    use std::sync::mpsc;
    use std::time::Duration;

    use adz_core::control::{Link, Strategy};
    use adz_core::format::CodecSpec;
    use adz_core::predict::{Sample, SampleConfig};
    use adz_core::store::{MemoryStorage, Storage, Upload};
    use adz_core::{decode_stream, FileInfo, Predict, WriteOptions, Writer};
    use adz_datagen::{generate, Kind};

    fn opts(strategy: Strategy, link: Link) -> WriteOptions {
        WriteOptions { strategy, link, threads: 2, block_size: 64 << 10, ..WriteOptions::default() }
    }

    fn read_back(store: &MemoryStorage, name: &str) -> Vec<u8> {
        let file = store.get(name).unwrap();
        let mut out = Vec::new();
        decode_stream(&file[..], &mut out, |_| {}).unwrap();
        out
    }

    fn first_frame_config(store: &MemoryStorage, name: &str) -> String {
        let file = store.get(name).unwrap();
        let info = FileInfo::read_seekable(std::io::Cursor::new(&file[..]), true).unwrap();
        info.frame_list.unwrap()[0].config.clone()
    }

    #[test]
    fn the_writer_starts_where_the_prediction_says() {
        // Random data on a slow link: the start is raw, so the first frame is not even tried.
        let random = generate(Kind::Random, 4 << 20, 21);
        let text = generate(Kind::Text, 4 << 20, 22);
        for (data, want_raw) in [(&random, true), (&text, false)] {
            let store = MemoryStorage::new();
            let mut w =
                Writer::create(&store, "f.adz", opts(Strategy::Throughput, Link::Fixed(25e6)))
                    .unwrap();
            w.write(data).unwrap();
            let s = w.finish().unwrap();
            assert_eq!(&read_back(&store, "f.adz"), data);
            let start = s.predict_start.clone().expect("predicted");
            let first = first_frame_config(&store, "f.adz");
            if want_raw {
                assert_eq!(start, "none");
                assert_eq!(s.predict_bytes, 0, "random data: nothing compressed to predict");
                assert!(first.starts_with("none"), "first frame {first}");
            } else {
                assert_ne!(start, "none");
                assert!(s.predict_bytes > 0);
                assert!(first.starts_with(&start), "first frame {first}, predicted {start}");
            }
        }
    }

    /// A write that covers the blocks the writer holds to predict is sampled where it lies,
    /// with a budget for the whole write: written in one call, 8 MiB get a prediction budgeted
    /// for 8 MiB; written in blocks, the held blocks stand for the write (no size hint).
    #[test]
    fn one_long_write_is_predicted_for_its_whole_length() {
        let data = generate(Kind::Text, 8 << 20, 29);
        let budget = |pieces: usize| {
            let store = MemoryStorage::new();
            let mut w =
                Writer::create(&store, "f.adz", opts(Strategy::Throughput, Link::Fixed(117e6)))
                    .unwrap();
            for part in data.chunks(data.len() / pieces) {
                w.write(part).unwrap();
            }
            let b = w.prediction().expect("predicted").budget_seconds;
            w.finish().unwrap();
            assert_eq!(read_back(&store, "f.adz"), data);
            b
        };
        let (whole, blocks) = (budget(1), budget(128));
        assert!(whole > 8.0 * blocks, "budget {whole} s in one write, {blocks} s in blocks");
    }

    /// A new kind of data (a new entropy class) gets its own prediction when its first block
    /// comes: text after a random stretch starts compressed, and the random stretch was not
    /// even tried.
    #[test]
    fn a_new_kind_of_data_is_predicted_when_it_comes() {
        let mut data = generate(Kind::Random, 2 << 20, 27);
        let text_at = data.len();
        data.extend(generate(Kind::Text, 2 << 20, 28));
        let store = MemoryStorage::new();
        let o = WriteOptions {
            size_hint: Some(data.len() as u64),
            ..opts(Strategy::Throughput, Link::Fixed(25e6))
        };
        let mut w = Writer::create(&store, "f.adz", o).unwrap();
        w.write(&data).unwrap();
        let s = w.finish().unwrap();
        assert_eq!(read_back(&store, "f.adz"), data);
        assert_eq!(s.predict_start.as_deref(), Some("none"));
        // The random start compressed nothing; the text's own prediction did.
        assert!(s.predict_bytes > 0, "{s:?}");
        let file = store.get("f.adz").unwrap();
        let frames = FileInfo::read_seekable(std::io::Cursor::new(&file[..]), true)
            .unwrap()
            .frame_list
            .unwrap();
        assert!(frames[0].config.starts_with("none"), "{}", frames[0].config);
        let first_text = frames.iter().find(|f| f.raw_offset >= text_at as u64).unwrap();
        assert!(!first_text.config.contains("raw"), "first text frame {}", first_text.config);
    }

    #[test]
    fn no_prediction_when_off_or_static() {
        let data = generate(Kind::Text, 1 << 20, 23);
        for (strategy, predict) in [
            (Strategy::Throughput, Predict::Off),
            (Strategy::Static("zstd:3".parse().unwrap()), Predict::Auto),
            (Strategy::Archive, Predict::Auto),
        ] {
            let store = MemoryStorage::new();
            let o = WriteOptions { predict, ..opts(strategy, Link::Fixed(117e6)) };
            let mut w = Writer::create(&store, "f.adz", o).unwrap();
            w.write(&data).unwrap();
            assert!(w.prediction().is_none());
            let s = w.finish().unwrap();
            assert_eq!((s.predict_start, s.predict_bytes), (None, 0), "{strategy}");
            assert_eq!(read_back(&store, "f.adz"), data);
        }
    }

    #[test]
    fn a_sample_of_the_whole_input_can_be_given() {
        let data = generate(Kind::Text, 8 << 20, 24);
        let store = MemoryStorage::new();
        let o = WriteOptions {
            size_hint: Some(data.len() as u64),
            ..opts(Strategy::KeepPace, Link::Fixed(50e6))
        };
        let mut w = Writer::create(&store, "f.adz", o).unwrap();
        let sample = Sample::from_slice(&data, &SampleConfig::default());
        let p = w.predict_from(&sample).expect("predicts").clone();
        assert!(p.sampled_bytes > 0 && p.sampled_bytes <= sample.bytes());
        assert_eq!(p.data_bytes, data.len() as u64);
        // Once predicted, a second sample changes nothing.
        assert!(w.predict_from(&sample).is_some_and(|q| *q == p));
        w.write(&data).unwrap();
        let s = w.finish().unwrap();
        assert_eq!(s.predict_start, Some(p.start.to_string()));
        assert_ne!(p.start, CodecSpec::NONE);
        assert_eq!(read_back(&store, "f.adz"), data);
    }

    /// A caller that waits for an asynchronous write before writing more must not wait for
    /// blocks the writer holds to predict.
    #[test]
    fn an_async_write_is_not_held_back() {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let store = MemoryStorage::new();
            let mut w =
                Writer::create(&store, "f.adz", opts(Strategy::Throughput, Link::Auto)).unwrap();
            // Less than the blocks held before predicting, then a wait.
            let a = generate(Kind::Text, 3 * (64 << 10) + 100, 25);
            let back = w.write_async(a.clone()).unwrap().wait().unwrap();
            assert_eq!(back, a);
            w.write(b"tail").unwrap();
            let s = w.finish().unwrap();
            assert!(s.predict_start.is_some());
            let mut want = a;
            want.extend_from_slice(b"tail");
            assert_eq!(read_back(&store, "f.adz"), want);
            tx.send(()).unwrap();
        });
        rx.recv_timeout(Duration::from_secs(60)).expect("deadlock: an async write was held");
    }

    /// An upload that can send at most `ceiling` bytes/s (as an S3 upload's streams bound it).
    #[derive(Debug)]
    struct Bounded {
        inner: Box<dyn Upload>,
        ceiling: f64,
    }

    impl Upload for Bounded {
        fn append(&mut self, data: &[u8]) -> adz_core::store::Result<()> {
            self.inner.append(data)
        }
        fn bytes_written(&self) -> u64 {
            self.inner.bytes_written()
        }
        fn commit(self: Box<Self>) -> adz_core::store::Result<u64> {
            self.inner.commit()
        }
        fn abort(self: Box<Self>) -> adz_core::store::Result<()> {
            self.inner.abort()
        }
        fn rate_ceiling(&self) -> Option<f64> {
            Some(self.ceiling)
        }
    }

    /// The writer's start for an unknown link is chosen over the links its upload can reach:
    /// with a ceiling of 1 MB/s there is one, and the start is the best for it (no regret);
    /// over 25 MB/s-12 GB/s no start is best everywhere.
    #[test]
    fn an_unknown_link_is_one_the_upload_can_reach() {
        let data = generate(Kind::Text, 4 << 20, 30);
        let regret = |ceiling: Option<f64>| {
            let store = MemoryStorage::new();
            let inner = store.create("f.adz").unwrap();
            let upload: Box<dyn Upload> = match ceiling {
                Some(ceiling) => Box::new(Bounded { inner, ceiling }),
                None => inner,
            };
            let mut w =
                Writer::with_upload(upload, opts(Strategy::Throughput, Link::Auto)).unwrap();
            w.write(&data).unwrap();
            let regret = w.prediction().expect("predicted").regret;
            w.finish().unwrap();
            assert_eq!(read_back(&store, "f.adz"), data);
            regret.expect("the link is unknown")
        };
        assert_eq!(regret(Some(1e6)), 0.0);
        assert!(regret(None) > 0.0);
    }

    #[test]
    fn short_writes_and_every_length_round_trip() {
        for len in [0usize, 1, 1000, 64 << 10, (64 << 10) + 1, 5 * (64 << 10) - 7, 40 << 16] {
            let data = generate(Kind::Mixed, len, 26);
            let store = MemoryStorage::new();
            let mut w =
                Writer::create(&store, "f.adz", opts(Strategy::Prolong(1.5), Link::Auto)).unwrap();
            for chunk in data.chunks(50_000) {
                w.write(chunk).unwrap();
            }
            let s = w.finish().unwrap();
            assert_eq!(s.raw_bytes, len as u64);
            assert_eq!(read_back(&store, "f.adz"), data, "{len}");
            assert_eq!(s.predict_start.is_some(), len > 0, "{len}");
        }
    }
}

/// A `Read + Seek` that counts the bytes read through it.
struct Counting<R> {
    inner: R,
    read: u64,
}

impl<R: std::io::Read> std::io::Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl<R: std::io::Seek> std::io::Seek for Counting<R> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// The sample is cut to the time budget before it is read: through a 6000 MB/s link a
/// 256 MiB write's budget is under 1 ms, and taking the default sample (512 probes and
/// 3 MiB of slices) cost 3.5-8 ms of it. Through 117 MB/s nearly all the default sample stands.
#[test]
fn the_sample_is_planned_to_the_budget_before_it_is_read() {
    let len: u64 = 256 << 20;
    let p = Predictor::new(PredictConfig { threads: 2, ..PredictConfig::default() });
    let bytes = |c: &SampleConfig| c.plan(len, len).iter().map(|&(_, n)| n as u64).sum::<u64>();
    let fast = p.plan_sample(Strategy::Throughput, Some(6000e6), len);
    let mid = p.plan_sample(Strategy::Throughput, Some(1200e6), len);
    let slow = p.plan_sample(Strategy::KeepPace, Some(117e6), len);
    let default = SampleConfig::default();
    eprintln!(
        "planned bytes: 6000 MB/s {}, 1200 MB/s {}, 117 MB/s S2 {}, default {}",
        bytes(&fast),
        bytes(&mid),
        bytes(&slow),
        bytes(&default)
    );
    assert!(bytes(&fast) < bytes(&mid) && bytes(&mid) < bytes(&slow), "shrinks with the budget");
    assert!(bytes(&fast) <= 128 << 10, "{}", bytes(&fast));
    // A third of a 0.9 ms budget at 6.5 us a probe.
    assert!(fast.probes < 64 && fast.probe_plan(len, len).len() <= fast.probes, "{fast:?}");
    assert!(bytes(&slow) * 10 >= bytes(&default) * 9, "a slow link keeps most of the sample");
    assert_eq!(slow.probe_plan(len, len).len(), default.probes);
    // What taking the fast sample reads: its slices and probes, not the default's.
    let data = generate(Kind::Text, 8 << 20, 5);
    let mut big = Vec::with_capacity(len as usize);
    while (big.len() as u64) < len {
        big.extend_from_slice(&data);
    }
    let mut src = Counting { inner: std::io::Cursor::new(&big[..]), read: 0 };
    let sample = Sample::from_reader(&mut src, len, &fast).unwrap();
    assert!(src.read <= 256 << 10, "read {} bytes", src.read);
    assert!(sample.bytes() > 0 && sample.bytes() <= bytes(&fast) + (64 << 10));
    // Unknown link: the budget is reckoned at 10GbE.
    let unknown = p.plan_sample(Strategy::Throughput, None, len);
    assert_eq!(bytes(&unknown), bytes(&mid));
}

/// Each rung's first call sets its codec up (zstd allocates and clears its tables): that is
/// on the longest slice, whose time is then taken from the other slices of its kind, or from
/// a second call if it is alone of its kind. The bytes compressed say which.
#[test]
fn each_rung_is_set_up_on_the_longest_slice_before_it_is_timed() {
    let data = generate(Kind::Text, 8 << 20, 3);
    let mut p = predictor(1, &["lz4:1", "zstd:1"]);
    // Three slices of one kind: each compressed once.
    let three = Sample::from_slice(&data, &SampleConfig { probes: 0, ..SampleConfig::default() });
    assert_eq!(three.slices.len(), 3);
    assert!(!three.setup_alone());
    assert_eq!(three.measured_bytes(), three.bytes());
    let (_, bytes) = p.measure(&three, spec("zstd:1")).unwrap();
    assert_eq!(bytes, three.bytes());
    // One slice: compressed twice, the second call timed.
    let one = Sample::from_slice(
        &data,
        &SampleConfig { slices: 1, probes: 0, ..SampleConfig::default() },
    );
    assert_eq!(one.slices.len(), 1);
    assert!(one.setup_alone());
    let (perf, bytes) = p.measure(&one, spec("zstd:1")).unwrap();
    assert_eq!(bytes, 2 * one.bytes());
    assert!(perf.speed.is_finite() && perf.speed > 0.0);
    // Slices of different lengths: the longest sets the rung up.
    let mut uneven = three.clone();
    uneven.slices[0].1.truncate(20_000);
    uneven.slices[2].1.truncate(30_000);
    assert_eq!(uneven.setup_slice(), Some(1));
    // Stratified, the longest slice alone of its class: it is compressed twice.
    let mut classed = uneven.clone();
    classed.classes = vec![2, 1, 2];
    classed.weights = vec![1e6, 2e6, 1e6];
    assert!(classed.setup_alone());
    assert_eq!(classed.measured_bytes(), classed.bytes() + classed.slices[1].1.len() as u64);
    let (_, bytes) = p.measure(&classed, spec("lz4:1")).unwrap();
    assert_eq!(bytes, classed.measured_bytes());
    classed.classes = vec![2, 2, 1];
    assert!(!classed.setup_alone());
    let (_, bytes) = p.measure(&classed, spec("lz4:1")).unwrap();
    assert_eq!(bytes, classed.bytes());
}

#[test]
fn taking_a_sample_times_moving_its_bytes() {
    let data = generate(Kind::Text, 8 << 20, 3);
    let cfg = SampleConfig::default();
    let blocks: Vec<&[u8]> = data.chunks(1 << 20).collect();
    let from_file = Sample::from_reader(std::io::Cursor::new(&data), data.len() as u64, &cfg);
    for (how, s) in [
        ("a file", from_file.unwrap()),
        ("held blocks", Sample::from_parts(&blocks, data.len() as u64, &cfg)),
    ] {
        // The regions read around the slices: at least the slices, all of them timed.
        assert!(s.feed.bytes >= s.bytes() && s.feed.bytes >= FEED_MIN_BYTES, "{how}: {s:?}");
        assert!(s.feed.seconds > 0.0 && s.feed.hash_seconds > 0.0, "{how}: {:?}", s.feed);
        assert!(s.feed.seconds_per_byte().is_some() && s.feed.hash_per_byte().is_some());
    }
    // Too few bytes timed to stand for the machine: no measure.
    let few = Feed { bytes: FEED_MIN_BYTES - 1, seconds: 1e-5, hash_seconds: 1e-6 };
    assert_eq!((few.seconds_per_byte(), few.hash_per_byte()), (None, None));
}

#[test]
fn the_pipeline_costs_are_the_ones_measured_on_the_sample() {
    let data = generate(Kind::Text, 16 << 20, 4);
    let mut sample = Sample::from_slice(&data, &SampleConfig::default());
    // A machine that moves a byte in 4 ns and checksums it in 1 ns: far slower than the
    // constants, so that at 6000 MB/s every write is bound by the one-thread stages.
    sample.feed = Feed {
        bytes: 1 << 20,
        seconds: 4e-9 * (1 << 20) as f64,
        hash_seconds: 1e-9 * (1 << 20) as f64,
    };
    let d = sample.data_len as f64;
    let mut p = predictor(2, &["lz4:1", "zstd:1"]);
    let measured = p.predict(&sample, Strategy::Throughput, Some(6000e6)).unwrap();
    assert!(measured.path_measured);
    assert!((measured.serial_cost - 4e-9).abs() < 1e-12, "{measured:?}");
    assert!((measured.path_cost - 5e-9).abs() < 1e-12, "{measured:?}");
    // Raw: the feeder's 4 ns a byte, not the link's 0.17.
    let raw = measured.time_raw.unwrap();
    assert!(raw >= 4e-9 * d && raw < 1.1 * 4e-9 * d, "{raw} for {d} bytes");
    for r in &measured.rungs {
        assert!(r.time.unwrap() >= 4e-9 * d, "{r:?}");
    }
    // Told not to measure, or given too little to time: the constants.
    let mut cfg = p.config().clone();
    cfg.measure_path = false;
    let fixed = Predictor::new(cfg).predict(&sample, Strategy::Throughput, Some(6000e6)).unwrap();
    sample.feed = Feed::default();
    let untimed = p.predict(&sample, Strategy::Throughput, Some(6000e6)).unwrap();
    for q in [&fixed, &untimed] {
        assert!(!q.path_measured);
        assert_eq!((q.path_cost, q.serial_cost), (PATH_COST, SERIAL_COST));
        assert!(q.time_raw.unwrap() < raw / 4.0, "{:?} against {raw}", q.time_raw);
    }
}

/// 16-bit image pixels with sky noise, big-endian as in FITS: LZ4 and zstd's negative levels
/// find no repeats, zstd:1's entropy stage saves about a third.
fn pixels(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 40) as u32 & 0xff
    };
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        // A sum of four uniform bytes: a bell around 1000 + 510 with a spread of about 150.
        let v = 1000 + next() + next() + next() + next();
        // Big-endian, as FITS stores its pixels.
        out.extend_from_slice(&[(v >> 8) as u8, v as u8]);
    }
    out.truncate(len);
    out
}

/// Issue 22: every sample measures a rung with an entropy stage, with the default candidates
/// and a tight budget (a 64 MiB write through 1200 MB/s) or data the heuristic calls redundant;
/// LZ4-blind data is then never predicted incompressible.
#[test]
fn every_sample_measures_an_entropy_rung() {
    let data = pixels(32 << 20, 5);
    let sample = Sample::from_slice(&data, &SampleConfig::default());
    for link in [117e6, 1200e6, 6000e6] {
        let mut p = Predictor::new(PredictConfig { threads: 2, ..PredictConfig::default() });
        let pred = p.predict(&sample, Strategy::Throughput, Some(link)).unwrap();
        let measured: Vec<String> = pred.rungs.iter().map(|r| r.spec.to_string()).collect();
        eprintln!("pixels at {} MB/s: measured {measured:?}, start {}", link / 1e6, pred.start);
        assert!(
            pred.rungs.iter().any(|r| adz_core::control::entropy_coded(r.spec)),
            "{measured:?}"
        );
        assert!(!pred.incompressible, "{measured:?}");
        let zstd1 = pred.estimate(spec("zstd:1")).expect("zstd:1 measured");
        assert!(zstd1.ratio > 1.2, "zstd:1 ratio {}", zstd1.ratio);
        if link == 117e6 {
            assert!(adz_core::control::entropy_coded(pred.start), "start {}", pred.start);
        }
    }
    // Few distinct byte values in random order: every slice sparse, so "redundant".
    let mut s = 9u64;
    let sparse: Vec<u8> = (0..(16 << 20))
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 59) as u8).min(5)
        })
        .collect();
    let sample = Sample::from_slice(&sparse, &SampleConfig::default());
    let mut p = predictor(2, &["lz4:1", "zstd:-1", "zstd:1", "zstd:3", "zstd:6"]);
    let pred = p.predict(&sample, Strategy::Throughput, Some(117e6)).unwrap();
    assert_eq!(pred.heuristic.class, Compressibility::Redundant, "{:?}", pred.heuristic);
    let measured: Vec<CodecSpec> = pred.rungs.iter().map(|r| r.spec).collect();
    assert!(measured.contains(&spec("zstd:1")), "{measured:?}");
    assert_eq!(pred.skipped, [spec("zstd:3"), spec("zstd:6")]);
}
