//! Convergence: each strategy reaches its target rung from far above and below, leaves a too-slow
//! rung at once, and holds through noise. Checked with the deterministic pipeline simulator
//! (`adz_control::sim`) and made-up measurements; no threads, no clock.

mod common;

use common::*;

#[test]
fn converges_to_each_strategy_target_from_far_above_and_below() {
    let threads = 8;
    let data = text();
    let ladder = Ladder::standard();
    for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(1.5)] {
        for link in [GBE, TEN_GBE, FDR4] {
            let best = best_rung(&data, strategy, link, threads)
                .expect("some rung keeps up with 8 threads");
            for start in ["lz4:50", "xz:9"] {
                let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads)
                    .with_start(spec(start));
                if strategy != Strategy::Throughput {
                    // With the schedule: the write after block 150 takes the target's time.
                    let segs = [Segment::new(400, data.clone())];
                    on_schedule(&cfg, &SimConfig::new(threads, link), &segs, link, 150);
                }
                let (ctl, rep) = run(
                    rungs_only(cfg),
                    &SimConfig::new(threads, link),
                    &[Segment::new(400, data.clone())],
                );
                let at = converged_at(&rep, &data, strategy, link, 0, 30);
                let last = lane_of(rep.blocks[399].decision);
                let slow = rep.blocks[150..]
                    .iter()
                    .filter(|b| !ok(&data, strategy, link, threads, lane_of(b.decision)))
                    .count();
                eprintln!(
                    "{strategy:<11} {:>5} MB/s from {start:<6}: settled at block {at:?} on {last} (best {}, headroom {:.2}); \
                     too slow after block 150: {slow}/250; {:.0} MB/s ratio {:.2}\n    {}\n    {}",
                    link / 1e6,
                    ladder.rungs()[best],
                    headroom(&data, strategy, link, threads, last),
                    rep.throughput() / 1e6,
                    rep.ratio(),
                    names(&rep, 0, 400),
                    ctl.status(),
                );
                let at =
                    at.unwrap_or_else(|| panic!("{strategy} {link} from {start} never settled"));
                assert!(at <= 120, "{strategy} {link} from {start}: settled only at block {at}");
                assert!(
                    settled(&data, strategy, link, threads, last),
                    "{strategy} {link} from {start}: ends on {last}"
                );
                assert!(
                    slow <= 12,
                    "{strategy} {link} from {start}: {slow} too-slow blocks after settling"
                );
            }
        }
    }
}

#[test]
fn leaves_a_too_slow_rung_within_n_plus_2_blocks_after_a_slowdown() {
    let threads = 8;
    let easy = text();
    let hard = text().with_speed_scale(0.3);
    for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(1.5)] {
        for link in [GBE, TEN_GBE] {
            let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
            let segs = [Segment::new(150, easy.clone()), Segment::new(250, hard.clone())];
            if strategy != Strategy::Throughput {
                // With the schedule: the too-slow rung is left as soon, and the write after
                // the slowdown takes its target's time. From block 200: the blocks in flight at
                // the old rung when the data slowed down cost the same with or without the
                // schedule (8.9 % of blocks 150..400 at 117 MB/s, where they take 3.3x as long).
                // At 1200 MB/s on 8 threads the write after the slowdown ends 1.03-1.07 of its
                // target's time as the link moves by +-0.3 % (1.062 at exactly 1200 MB/s with
                // the format's 56-byte frame header): a known miss of the schedule, not noise.
                let late = if link == TEN_GBE { 1.07 } else { 1.05 };
                let sim = SimConfig::new(threads, link);
                let rep = on_schedule_within(&cfg, &sim, &segs, link, 200, late);
                let before = lane_of(rep.blocks[149].decision);
                let left = (150..400)
                    .find(|&k| pos(lane_of(rep.blocks[k].decision)) < pos(before))
                    .unwrap();
                assert!(left <= 150 + threads + 2, "{strategy}: left at {left}");
            }
            let (_, rep) = run(rungs_only(cfg), &SimConfig::new(threads, link), &segs);
            let before = lane_of(rep.blocks[149].decision);
            assert!(
                !ok(&hard, strategy, link, threads, before),
                "the slowdown must make the old rung too slow"
            );
            let left =
                (150..400).find(|&k| pos(lane_of(rep.blocks[k].decision)) < pos(before)).unwrap();
            let settle = converged_at(&rep, &hard, strategy, link, 150, 30);
            let slow_after = rep.blocks[left..]
                .iter()
                .filter(|b| !ok(&hard, strategy, link, threads, lane_of(b.decision)))
                .count();
            eprintln!(
                "{strategy} {} MB/s, data 3.3x slower at block 150: left {before} at block {left}, settled at {settle:?}; \
                 too slow after leaving: {slow_after}: {}",
                link / 1e6,
                names(&rep, 140, 200)
            );
            assert!(left <= 150 + threads + 2, "left at {left}");
            // Settling is the climb back to the slowest rung that keeps up, on the fast side
            // of the target. S2/S3 blends send some blocks to the next rung, so confirmations
            // at the lane's rung come a little slower than one per block.
            // (Keep-pace at 1200 MB/s takes the longest: 47 blocks since zstd 2-4's reference
            // times follow libzstd 1.5, 39 before; its data is built from the same table.)
            assert!(settle.is_some_and(|s| s <= 150 + 6 * threads), "settled at {settle:?}");
            assert!(slow_after <= 2 * threads, "{slow_after} too-slow blocks after leaving");
            assert!(settled(&hard, strategy, link, threads, lane_of(rep.blocks[399].decision)));
        }
    }
}

#[test]
fn switches_codec_family_at_the_ends_of_a_range() {
    // lz4 -> zstd: keep-pace at 10GbE with 8 threads is beyond LZ4's slowest setting.
    let cfg = ControllerConfig::new(Strategy::KeepPace, Link::Fixed(TEN_GBE), 8)
        .with_start(spec("lz4:50"));
    let (_, rep) = run(cfg, &SimConfig::new(8, TEN_GBE), &[Segment::new(100, text())]);
    let ids: Vec<_> = rep.blocks.iter().map(|b| b.decision.codec.id()).collect();
    let first_zstd = ids.iter().position(|id| id.name() == "zstd").expect("reaches zstd");
    assert!(ids[..first_zstd].iter().all(|id| id.name() == "lz4"));
    assert!(ids[first_zstd..].iter().all(|id| id.name() == "zstd"), "{}", names(&rep, 0, 100));

    // zstd -> xz: a 3 MB/s link with one thread is slower than zstd's slowest level.
    let link = 3e6;
    let cfg =
        ControllerConfig::new(Strategy::KeepPace, Link::Fixed(link), 1).with_start(spec("zstd:1"));
    let (_, rep) = run(rungs_only(cfg), &SimConfig::new(1, link), &[Segment::new(150, text())]);
    eprintln!("keep-pace at 3 MB/s, 1 thread: {}", names(&rep, 0, 150));
    let last = rep.blocks[149].decision.codec;
    assert_eq!(last.id().name(), "xz", "{}", names(&rep, 0, 150));
    assert!(settled(&text(), Strategy::KeepPace, link, 1, last));

    // xz -> zstd -> lz4 on the way back (faster at once): from xz:9 at 6000 MB/s.
    let cfg =
        ControllerConfig::new(Strategy::KeepPace, Link::Fixed(FDR4), 8).with_start(spec("xz:9"));
    let (_, rep) = run(cfg, &SimConfig::new(8, FDR4), &[Segment::new(40, text())]);
    assert_eq!(rep.blocks[39].decision.codec.id().name(), "lz4", "{}", names(&rep, 0, 40));
}

#[test]
fn link_auto_is_measured_from_the_sink() {
    let threads = 8;
    for link in [GBE, TEN_GBE, FDR4] {
        for schedule in [true, false] {
            let cfg = ControllerConfig::new(Strategy::KeepPace, Link::Auto, threads);
            let cfg = if schedule { scheduled(cfg) } else { rungs_only(cfg) };
            let mut ctl = Controller::new(cfg);
            assert_eq!(ctl.status().link, None);
            let first = ctl.next_block(&BlockContext {
                raw_offset: 0,
                raw_len: 1 << 20,
                hints: &[],
                class: 0,
            });
            assert_eq!((first.codec, first.reason), (spec("zstd:1"), Reason::Start));
            let sim = SimConfig::new(threads, link).with_jitter(0.2, 7);
            let rep = sim.run(&mut ctl, &[Segment::new(300, text())]);
            let est = ctl.status().link.unwrap();
            eprintln!(
                "auto link {} MB/s (schedule {schedule}): estimated {:.1} MB/s, ends on {}",
                link / 1e6,
                est / 1e6,
                ctl.status().rung
            );
            assert!((est / link - 1.0).abs() < 0.05, "estimated {est} for {link}");
            if schedule {
                // Against the link as measured: the controller can only aim at that.
                let t = time_vs_target(&rep, Strategy::KeepPace, est, 100);
                assert!((0.95..=1.05).contains(&t), "{link}: {t:.3} of the target time");
            } else {
                let last = lane_of(rep.blocks[299].decision);
                assert!(ok(&text(), Strategy::KeepPace, link, threads, last), "{last}");
            }
        }
    }
}

#[test]
fn jitter_costs_little() {
    // ±20 % per-block speed noise: keep-pace still keeps pace, throughput still beats raw.
    let threads = 8;
    for (strategy, link) in
        [(Strategy::KeepPace, GBE), (Strategy::KeepPace, TEN_GBE), (Strategy::Throughput, TEN_GBE)]
    {
        let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
        let (ctl, rep) = run(
            cfg,
            &SimConfig::new(threads, link).with_jitter(0.2, 42),
            &[Segment::new(600, text())],
        );
        let thr = rep.throughput_of(100, 600);
        eprintln!(
            "{strategy} {} MB/s with 20 % jitter: {:.0} MB/s, ratio {:.2}, ends on {}",
            link / 1e6,
            thr / 1e6,
            rep.ratio(),
            ctl.status().rung
        );
        assert!(thr >= 0.93 * link, "{strategy}: {thr}");
        assert!(rep.ratio() > 2.0);
    }
}

#[test]
fn wrong_reference_shape_still_never_stays_too_slow() {
    // Data whose speeds wiggle ±30 % around the reference shape.
    let threads = 8;
    let data = DataModel::monotone("rough", &Ladder::standard(), 0.5, 0.8, 0.3);
    for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(2.0)] {
        for link in [GBE, TEN_GBE, FDR4] {
            let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
            if strategy != Strategy::Throughput {
                // With the schedule: blocks 100.. take the target's time.
                let segs = [Segment::new(400, data.clone())];
                on_schedule(&cfg, &SimConfig::new(threads, link), &segs, link, 100);
            }
            let (_, rep) = run(
                rungs_only(cfg),
                &SimConfig::new(threads, link),
                &[Segment::new(400, data.clone())],
            );
            let slow = rep.blocks[100..]
                .iter()
                .filter(|b| !ok(&data, strategy, link, threads, lane_of(b.decision)))
                .count();
            let last = lane_of(rep.blocks[399].decision);
            let best =
                best_rung(&data, strategy, link, threads).map(|r| Ladder::standard().rungs()[r]);
            eprintln!(
                "rough data {strategy} {} MB/s: ends on {last} (best {best:?}), {slow}/300 too slow: {}",
                link / 1e6, names(&rep, 0, 400)
            );
            assert!(slow <= 30, "{strategy} {link}: {slow}");
            assert!(ok(&data, strategy, link, threads, last));
            if let Some(b) = best {
                assert!(
                    pos(b) - pos(last).min(pos(b)) <= 3,
                    "{strategy} {link}: {last} far from {b}"
                );
            }
        }
    }
}

#[test]
fn archive_and_static() {
    let mut ctl = Controller::new(ControllerConfig::new(Strategy::Archive, Link::Auto, 4));
    let rep = SimConfig::new(4, GBE).run(&mut ctl, &[Segment::new(20, text())]);
    assert!(rep
        .blocks
        .iter()
        .all(|b| b.decision.codec == spec("xz:9") && b.decision.reason == Reason::Archive));
    assert_eq!(ctl.status().mode, Mode::Fixed);
    assert_eq!(ctl.status().rung, spec("xz:9"));

    // A static codec off the ladder is used as given.
    let lz4hc = spec("lz4hc:9");
    let mut ctl =
        Controller::new(ControllerConfig::new(Strategy::Static(lz4hc), Link::Fixed(GBE), 4));
    let rep = SimConfig::new(4, GBE).run(&mut ctl, &[Segment::new(20, text())]);
    assert!(rep.blocks.iter().all(|b| b.decision.codec == lz4hc));
    assert_eq!(ctl.status().rung, lz4hc);
}

#[test]
fn start_rung_is_held_until_measured() {
    let z19 = spec("zstd:19");
    let mut ctl =
        Controller::new(ControllerConfig::new(Strategy::Throughput, Link::Fixed(FDR4), 8));
    ctl.set_start(z19);
    let ctx = BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class: 0 };
    for _ in 0..8 {
        let d = ctl.next_block(&ctx);
        assert_eq!((d.codec, d.reason), (z19, Reason::Start));
    }
    // Without a start and with a fixed link, the first rung is aimed from the reference table.
    let mut ctl = Controller::new(ControllerConfig::new(Strategy::KeepPace, Link::Fixed(GBE), 8));
    let d = ctl.next_block(&ctx);
    assert_eq!(d.reason, Reason::Start);
    assert!(
        pos(d.codec) > pos(spec("zstd:1")),
        "a slow link with 8 threads starts beyond zstd:1: {}",
        d.codec
    );
    let mut ctl = Controller::new(ControllerConfig::new(Strategy::KeepPace, Link::Fixed(FDR4), 8));
    assert_eq!(ctl.next_block(&ctx).codec.id().name(), "lz4");
}

#[test]
fn stale_measurements_of_a_left_rung_do_not_push_it_further() {
    // Blocks 0..8 are decided at zstd:1; all their measurements say zstd:1 runs at a third of
    // the keep-pace target. The first one moves the controller; the other seven, late, may
    // refine the aim but must not take it past the rung the full evidence points to.
    let threads = 8;
    let link = TEN_GBE;
    let mut ctl = Controller::new(
        ControllerConfig::new(Strategy::KeepPace, Link::Fixed(link), threads)
            .with_start(spec("zstd:1")),
    );
    let ctx = BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class: 0 };
    let first: Vec<Decision> = (0..threads).map(|_| ctl.next_block(&ctx)).collect();
    let per_thread = link / 3.0 / threads as f64;
    let secs = (1u64 << 20) as f64 / per_thread;
    let mut seen = Vec::new();
    for d in &first {
        ctl.record_block(&BlockMeasurement {
            decision: *d,
            raw_len: 1 << 20,
            stored_len: 350_000,
            stored_raw: false,
            wall: Duration::from_secs_f64(secs),
            cpu: Duration::from_secs_f64(secs),
        });
        seen.push(lane_of(ctl.next_block(&ctx)));
    }
    let r: Vec<_> = seen.iter().map(|&c| pos(c)).collect();
    // Every move goes faster, never back; speed ~3x means about the reference step of 3x.
    assert!(r.windows(2).all(|w| w[1] <= w[0]), "{seen:?}");
    assert!(r[0] < pos(spec("zstd:1")));
    let want = reference_ratio_step(spec("zstd:1"), 3.0);
    assert!(
        r[threads - 1] + 1 >= want,
        "went too far: {:?} (want about {})",
        seen,
        Ladder::standard().rungs()[want]
    );
}

#[test]
fn a_descheduled_block_does_not_move_the_rung() {
    // After blocks whose wall time is 1-1.5x their CPU time, one block whose worker was
    // descheduled (wall time 7x its CPU time, the CPU time as usual) changes no decision; a
    // block that is as slow in CPU time (harder data) does.
    let threads = 2;
    for (strategy, data) in [(Strategy::Throughput, family_change()), (Strategy::KeepPace, text())]
    {
        let cfg = ControllerConfig::new(strategy, Link::Fixed(GBE), threads);
        let mut ctl = Controller::new(cfg);
        let sim = SimConfig::new(threads, GBE).with_wall_noise(1.5, 9);
        sim.run(&mut ctl, &[Segment::new(100, data.clone())]);
        let ctx = BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class: 0 };
        let before = ctl.next_block(&ctx);
        // The mean wall time of a block at this rung; its CPU time is that / 1.25, the mean
        // of the simulated wall/CPU factor.
        let usual = (1u64 << 20) as f64 / data.perf(before.codec).speed;
        for (wall, cpu, moves) in [(7.0, 1.0, false), (7.0, 7.0, true)] {
            let mut probe = ctl.clone();
            probe.record_block(&BlockMeasurement {
                decision: before,
                raw_len: 1 << 20,
                stored_len: ((1u64 << 20) as f64 / data.perf(before.codec).ratio) as u64,
                stored_raw: false,
                wall: Duration::from_secs_f64(usual * wall),
                cpu: Duration::from_secs_f64(usual * cpu / 1.25),
            });
            let next = probe.next_block(&ctx);
            eprintln!(
                "{strategy}: {} then wall {wall}x cpu {cpu}x: {} {:?}",
                before.codec, next.codec, next.reason
            );
            let (was, now) = (ctl.status().speed.unwrap(), probe.status().speed.unwrap());
            if moves {
                assert_eq!(next.reason, Reason::TooSlow, "{strategy}");
            } else if strategy == Strategy::Throughput {
                // S1 sits at zstd:-1 (374 MB/s), 0.4 % inside the margin's edge against
                // zstd:-2 (391 MB/s; 374 x 1.05 = 392.7): whether *any* block tips it depends
                // on the model's history. What the descheduled block must not do is move the
                // estimate by more than a usual block's noise.
                assert!(now / was > 0.98, "{strategy}: estimate {was} -> {now}");
            } else {
                assert_eq!(lane_of(next), lane_of(before), "{strategy}");
                assert!(matches!(next.reason, Reason::Hold | Reason::Blend), "{strategy}");
            }
        }
    }
}

/// The last rung at least `factor` times faster than `from` in the reference table.
fn reference_ratio_step(from: CodecSpec, factor: f64) -> usize {
    let l = Ladder::standard();
    let s = reference(from).speed * factor;
    (1..pos(from)).rev().find(|&r| reference(l.rungs()[r]).speed >= s).unwrap_or(1)
}
