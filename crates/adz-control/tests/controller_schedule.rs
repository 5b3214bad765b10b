//! S2 and S3: a write takes its target's time, through noise, between rungs, and without time spent
//! on rungs that buy no ratio. Checked with the deterministic pipeline simulator
//! (`adz_control::sim`) and made-up measurements; no threads, no clock.

mod common;

use common::*;

#[test]
fn s2_and_s3_hold_through_wall_time_noise() {
    // Per-block wall times 1-2.5x the CPU time: the smoothed estimate decides, so single slow
    // blocks do not send keep-pace and prolong to a faster rung, and they still keep pace.
    let threads = 2;
    let data = DataModel::monotone("text", &Ladder::standard(), 0.5, 1.0, 0.1);
    for (strategy, link) in
        [(Strategy::KeepPace, GBE), (Strategy::Prolong(1.5), GBE), (Strategy::KeepPace, 400e6)]
    {
        for seed in [3, 4] {
            let sim = SimConfig::new(threads, link).with_wall_noise(2.5, seed);
            let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
            // With the schedule: blocks 60.. take the target's time.
            on_schedule(&cfg, &sim, &[Segment::new(300, data.clone())], link, 60);
            let (ctl, rep) = run(rungs_only(cfg), &sim, &[Segment::new(300, data.clone())]);
            let tail = &rep.blocks[60..];
            // Blocks at a rung clearly (10 %) slower than the target: a rung a few percent
            // short of it is more than 1-2.5x wall-time noise lets anything tell apart in a
            // few blocks (the 400 MB/s case has zstd:2 at 0.95 of it).
            let slow = tail
                .iter()
                .filter(|b| headroom(&data, strategy, link, threads, lane_of(b.decision)) < 0.9)
                .count();
            let too_slow_moves =
                tail.iter().filter(|b| b.decision.reason == Reason::TooSlow).count();
            let thr = rep.throughput_of(60, 300);
            eprintln!(
                "{strategy} {} MB/s with wall-time noise (seed {seed}): {:.0} MB/s, ratio {:.2}, \
                 {slow}/240 blocks 10 % too slow, {too_slow_moves} too-slow moves; {}\n    {}",
                link / 1e6,
                thr / 1e6,
                rep.ratio(),
                ctl.status(),
                names(&rep, 0, 300)
            );
            // S3 here retries zstd:7 (0.87 of its target) a few blocks at a time every few
            // dozen blocks: its prediction creeps back to 1 after each measurement.
            assert!(slow <= 24, "{strategy}: {slow} too-slow blocks");
            assert!(thr >= 0.95 * strategy.target_speed(link, 1.0), "{strategy}: {thr}");
            assert!(too_slow_moves <= 24, "{strategy}: {too_slow_moves} too-slow moves");
        }
    }
}

/// S2 and S3 take their target's time (within 5 %) even when the target falls between two
/// rungs: the controller blends the rung just faster than the target with the next one.
#[test]
fn s2_and_s3_take_the_targets_time_between_rungs() {
    let data = text();
    for threads in [2, 8] {
        for strategy in [Strategy::KeepPace, Strategy::Prolong(1.5)] {
            for link in [GBE, TEN_GBE] {
                let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
                let (ctl, rep) =
                    run(cfg, &SimConfig::new(threads, link), &[Segment::new(600, data.clone())]);
                // After settling: the speed from block 200 to the end (the sink's clock).
                let (a, b) = (&rep.blocks[199], &rep.blocks[599]);
                let raw: u64 = rep.blocks[200..].iter().map(|b| b.raw).sum();
                let speed = raw as f64 / (b.write_end - a.write_end);
                let want = strategy.target_speed(link, 1.0);
                let blends =
                    rep.blocks[200..].iter().filter(|b| b.decision.reason == Reason::Blend).count();
                eprintln!(
                    "{strategy:<11} {threads} threads {:>5} MB/s: {:.1} MB/s for a target of \
                     {:.1} ({:.3}); {blends} blend blocks; {}\n    {}",
                    link / 1e6,
                    speed / 1e6,
                    want / 1e6,
                    speed / want,
                    ctl.status(),
                    names(&rep, 500, 600),
                );
                assert!(
                    (0.95..=1.05).contains(&(speed / want)),
                    "{strategy} {threads} threads {link}: {:.3} of the target speed",
                    speed / want
                );
            }
        }
    }
}

/// Real data is not a steady stream: a kernel tar's blocks at one zstd level compress at
/// 0.6-1.8x their mean speed (and 0.6-4x their mean ratio). Each block alone says little,
/// and the controller's asymmetry (it leaves a rung that looks too slow at once, but climbs
/// only on confirmed headroom) spends the noise on the fast side. Before the controller
/// kept a schedule, these writes finished in 0.72-0.90 of S2's and S3's target time. Over
/// the whole write, from its first block, they now take their target's time within 5 %
/// (256 blocks at 117 MB/s, 1024 at 1200 MB/s, as the strategies bench writes).
#[test]
fn s2_and_s3_take_the_targets_time_on_noisy_data() {
    let data = text();
    let threads = 2;
    let mut off = Vec::new();
    for strategy in [Strategy::KeepPace, Strategy::Prolong(1.5)] {
        for link in [GBE, TEN_GBE] {
            for seed in [1, 2, 3] {
                let sim = SimConfig::new(threads, link).with_jitter(0.6, seed);
                let cfg = scheduled(ControllerConfig::new(strategy, Link::Fixed(link), threads));
                let blocks = if link < TEN_GBE { 256 } else { 1024 };
                let (ctl, rep) = run(cfg, &sim, &[Segment::new(blocks, data.clone())]);
                let want = rep.raw_bytes() as f64 / strategy.target_speed(link, 1.0);
                let got = rep.time();
                eprintln!(
                    "{strategy:<11} {:>5} MB/s seed {seed}: {:.3} s for a target of {:.3} s \
                     ({:.3}), ratio {:.2}; {}\n    {}",
                    link / 1e6,
                    got,
                    want,
                    got / want,
                    rep.ratio(),
                    ctl.status(),
                    names(&rep, rep.blocks.len() - 200, rep.blocks.len()),
                );
                if !(0.95..=1.05).contains(&(got / want)) {
                    off.push(format!("{strategy} {link} seed {seed}: {:.3}", got / want));
                }
            }
        }
    }
    assert!(off.is_empty(), "time / target time off by more than 5 %: {off:?}");
}

/// Float arrays as adz-datagen's doubles measured on 2 cores: zstd 1..22 all store 1.047
/// (to within 0.01 %), and from zstd:16 on (btultra) they compress 9x slower than the
/// reference shape says; only xz saves more. S2 and S3 at 1GbE must not spend their time on
/// rungs that buy no ratio: on the real pipeline each block there stalled the ordered writer
/// and the link for a block's time (S2 took 1.11 of its target time, S3 1.24). After the
/// first measurements the lane neither blends with nor holds a rung that stores what a faster
/// one does (it goes back down, `Reason::SameRatio`), and neither write runs over its target
/// time. (S3 finishes early: nothing in its time buys ratio.)
#[test]
fn s2_and_s3_spend_no_time_on_rungs_that_buy_no_ratio() {
    let data = per_rung("doubles", |codec, level, i, speed| match (codec, level) {
        ("zstd", p) if p >= 16 => (speed * 1.4 / 9.0, 1.047 + 0.0001 * (i % 2) as f64),
        ("zstd", p) if p >= 1 => (speed * 1.4, 1.047 + 0.0001 * (i % 2) as f64),
        ("xz", _) => (speed * 0.1, 1.09),
        _ => (speed * 2.0, 1.003),
    });
    let threads = 2;
    let cliff = pos(spec("zstd:16"));
    for strategy in [Strategy::KeepPace, Strategy::Prolong(1.5)] {
        for seed in [1, 2, 3] {
            // Wall times 1-1.5x the CPU's; no ratio jitter, which would push some 1.047
            // blocks past the keep threshold.
            let sim = SimConfig::new(threads, GBE).with_wall_noise(1.5, seed);
            let cfg = scheduled(ControllerConfig::new(strategy, Link::Fixed(GBE), threads));
            let (ctl, rep) = run(cfg, &sim, &[Segment::new(256, data.clone())]);
            let past: Vec<usize> = (0..rep.blocks.len())
                .filter(|&k| pos(rep.blocks[k].decision.codec) >= cliff)
                .collect();
            let want = rep.raw_bytes() as f64 / strategy.target_speed(GBE, 1.0);
            let got = rep.time();
            eprintln!(
                "{strategy:<11} seed {seed}: {:.3} of the target time, ratio {:.4}; past the cliff at {past:?}; {}\n    {}",
                got / want,
                rep.ratio(),
                ctl.status(),
                names(&rep, 0, rep.blocks.len()),
            );
            // At most one try of the cliff (a block per worker) while nothing is measured
            // there.
            assert!(past.len() <= 2 * threads, "{strategy} seed {seed}: {past:?}");
            assert!(got / want <= 1.03, "{strategy} seed {seed}: {:.3}", got / want);
            // No blend, and no rung held that stores what a faster one does: after the first
            // measurements nearly every block goes to the one rung the write ends on (a few
            // climbs try rungs not yet measured, and come back).
            let last = rep.blocks[255].decision.codec;
            let off = rep.blocks[64..].iter().filter(|b| b.decision.codec != last).count();
            assert!(off <= 16, "{strategy} seed {seed}: {}", names(&rep, 64, 256));
            assert!(pos(last) < pos(spec("zstd:12")), "{strategy} seed {seed}: ends on {last}");
        }
    }
}
