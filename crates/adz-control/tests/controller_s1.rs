//! S1 (throughput): the fastest write across codec families, per class, and on the demo data.
//! Checked with the deterministic pipeline simulator (`adz_control::sim`) and made-up
//! measurements; no threads, no clock.

mod common;

use common::*;

#[test]
fn s1_maximises_write_throughput_across_a_codec_family_change() {
    // The old S1 rule ("the last rung whose speed >= L f") spent most of this write on lz4:1:
    // every zstd rung looked too slow for its own, ratio-raised target, and one noisy block
    // sent it back. S1 now maximises min(N S, L f) over the ladder.
    let threads = 2;
    let ladder = Ladder::standard();
    for (data, want) in [
        (family_change(), "zstd:-2"),
        (family_change_zstd1(), "zstd:1"),
        (family_change_flat(), "zstd:1"),
    ] {
        let (best, t_best) = fastest_write(&data, GBE, threads);
        assert_eq!(ladder.rungs()[best], spec(want), "{}", data.name());
        // Without noise, and with wall time 1-2.5x the CPU time per block (2 workers, a reader
        // and the writer on 2
        // cores), with ±15 % per-block speed jitter on top, and without CPU times (the
        // controller then has only the noisy wall times).
        for (noise, seed, cpu_times) in
            [(1.0, 1, true), (2.5, 3, true), (2.5, 4, true), (2.5, 5, true), (2.5, 6, false)]
        {
            let mut sim = SimConfig::new(threads, GBE).with_wall_noise(noise, seed);
            if noise > 1.0 {
                sim = sim.with_jitter(0.15, seed);
            }
            sim.cpu_times = cpu_times;
            let segs = [Segment::new(300, data.clone())];
            // The best static rung through the same simulated pipeline and noise.
            let (static_best, static_thr) = (1..ladder.len())
                .map(|r| {
                    let c = ladder.rungs()[r];
                    let cfg = ControllerConfig::new(Strategy::Static(c), Link::Fixed(GBE), threads);
                    (c, run(cfg, &sim, &segs).1.throughput_of(60, 300))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap();
            for start in [None, Some("lz4:50"), Some("lz4:1"), Some("zstd:1"), Some("xz:9")] {
                let mut cfg =
                    ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads);
                cfg.start = start.map(spec);
                let (ctl, rep) = run(cfg, &sim, &segs);
                let tail = &rep.blocks[60..];
                // At the best rung, a neighbour, or a rung that writes within twice the margin
                // of it (which the noise here does not let anything tell apart from the best).
                let near = tail
                    .iter()
                    .filter(|b| {
                        let c = b.decision.codec;
                        pos(c).abs_diff(best) <= 1
                            || write_throughput(&data, GBE, threads, c) * (1.0 + 2.0 * MARGIN)
                                >= t_best
                    })
                    .count();
                let lz4 = tail.iter().filter(|b| b.decision.codec.id().name() == "lz4").count();
                let thr = rep.throughput_of(60, 300);
                eprintln!(
                    "{} noise {noise} seed {seed} cpu {cpu_times} from {:<6}: {:.0} MB/s after block 60 (best static {static_best} {:.0}, \
                     model {:.0}), ratio {:.2}; at {want}, a neighbour or as fast: {near}/240, lz4: {lz4}; {}\n    {}",
                    data.name(),
                    start.unwrap_or("aimed"),
                    thr / 1e6,
                    static_thr / 1e6,
                    t_best / 1e6,
                    rep.ratio(),
                    ctl.status(),
                    names(&rep, 0, 300),
                );
                // With only wall times to go by it wanders more (between zstd:-4 and zstd:-1
                // on the first model, all within 7 % of the best) and may settle a little
                // short (zstd:-4 on the flat model, 7 % slower).
                if cpu_times {
                    assert!(near * 10 >= tail.len() * 8, "{}: {near}/240 near {want}", data.name());
                }
                assert_eq!(lz4, 0, "{}: back to lz4", data.name());
                let floor = if cpu_times { 0.95 } else { 0.9 };
                assert!(thr >= floor * static_thr, "{}: {thr} vs static {static_thr}", data.name());
            }
        }
    }
}

/// Data that changes kind every four blocks (text, doubles, sparse, text, random: adz-datagen's
/// `mixed`). One controller learns each kind a pipeline's depth too late and compares rungs
/// measured on different kinds; with the blocks classified, a controller per class learns each
/// kind alone, and S1 writes within 5 % of the best static rung.
#[test]
fn fast_changing_data_gets_a_controller_per_class() {
    let l = Ladder::standard();
    let text = DataModel::monotone("text", &l, 0.8, 1.0, 0.1);
    let doubles = DataModel::monotone("doubles", &l, 0.5, 0.08, 0.1);
    let sparse = DataModel::monotone("sparse", &l, 2.0, 2.0, 0.1);
    let random = DataModel::incompressible(&l);
    let mut segs = Vec::new();
    for _ in 0..25 {
        for (class, d) in [(2, &text), (3, &doubles), (1, &sparse), (2, &text), (4, &random)] {
            segs.push(Segment::new(4, d.clone()).with_class(class));
        }
    }
    let threads = 2;
    for link in [GBE, TEN_GBE] {
        let sim = SimConfig::new(threads, link);
        let cfg = |s: Strategy| ControllerConfig::new(s, Link::Fixed(link), threads);
        let best_static = ["lz4:1", "zstd:-1", "zstd:1", "zstd:3"]
            .iter()
            .map(|c| {
                let s = Strategy::Static(spec(c));
                let single = sim.run(&mut Controller::new(cfg(s)), &segs).throughput();
                let classed = sim.run(&mut ClassedController::new(cfg(s)), &segs).throughput();
                single.max(classed)
            })
            .fold(0.0, f64::max);
        let single = sim.run(&mut Controller::new(cfg(Strategy::Throughput)), &segs);
        let mut ctl = ClassedController::new(cfg(Strategy::Throughput));
        let classed = sim.run(&mut ctl, &segs);
        eprintln!(
            "{} MB/s: best static {:.0} MB/s, S1 one controller {:.0} MB/s (ratio {:.2}), \
             per class {:.0} MB/s (ratio {:.2}, {} classes)",
            link / 1e6,
            best_static / 1e6,
            single.throughput() / 1e6,
            single.ratio(),
            classed.throughput() / 1e6,
            classed.ratio(),
            ctl.classes(),
        );
        assert_eq!(ctl.classes(), 5, "class 0 and the four classes seen");
        assert!(classed.throughput() >= 0.95 * best_static, "per class: below 0.95 of static");
        assert!(classed.throughput() > single.throughput(), "per class: no better than one");
    }
}

/// `make demo`: S1 on the text class of `mixed` sat at zstd:2 (write throughput
/// min(2 x 308, 117 x 3.534) = 413 MB/s), then dropped to zstd:1, and never tried zstd:3
/// (min(2 x 261, 117 x 3.765) = 440 MB/s), which `static=zstd:3` used to beat it. From any
/// start, S1 must settle on zstd:3 or a rung that writes at least as fast.
#[test]
fn s1_climbs_to_zstd3_on_the_demo_text() {
    let threads = 2;
    let data = demo_text();
    let t3 = write_throughput(&data, GBE, threads, spec("zstd:3"));
    assert!(t3 > 1.05 * write_throughput(&data, GBE, threads, spec("zstd:2")));
    assert!(t3 > 1.04 * write_throughput(&data, GBE, threads, spec("zstd:1")));
    for start in [None, Some("zstd:1"), Some("zstd:2"), Some("lz4:1")] {
        for lag in [0, threads] {
            let mut cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads);
            cfg.start = start.map(spec);
            let mut ctl = Controller::new(cfg);
            let ds = feed(&mut ctl, &data, 150, lag);
            eprintln!(
                "from {:<6} lag {lag}: {}\n    {}",
                start.unwrap_or("aimed"),
                runs(&ds),
                ctl.status()
            );
            for d in &ds[60..] {
                let t = write_throughput(&data, GBE, threads, d.codec);
                assert!(
                    pos(d.codec) >= pos(spec("zstd:3")) && t * (1.0 + MARGIN) >= t3,
                    "from {start:?} lag {lag}: {} at block {} ({:.0} MB/s vs zstd:3 {:.0})",
                    d.codec,
                    d.seq,
                    t / 1e6,
                    t3 / 1e6
                );
            }
        }
    }
}

/// The doubles class of `mixed`: zstd gives ratio ~1.047 at every level (the traces: 1.045 to
/// 1.049 from zstd:2 to zstd:14), LZ4 and zstd's negative levels save nothing. The write is
/// link-bound at any of them, and S1 must not climb to slow levels for a ratio it cannot
/// tell from the fast ones' (the demo spent 22 blocks at zstd:13, 72 MB/s per thread, for
/// the same ratio as zstd:2 at 600): equal ratios prefer the faster rung.
#[test]
fn s1_prefers_the_faster_of_equal_ratios() {
    let threads = 2;
    let data = per_rung("doubles", |codec, level, i, speed| match (codec, level) {
        ("zstd", p) if p >= 1 => (speed * 1.4, 1.047 + 0.0002 * (i % 3) as f64),
        _ => (speed * 2.0, 1.003),
    });
    let z2 = data.perf(spec("zstd:2")).speed;
    for start in [None, Some("zstd:1"), Some("zstd:2"), Some("zstd:13")] {
        let mut cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads);
        cfg.start = start.map(spec);
        let mut ctl = Controller::new(cfg);
        let ds = feed(&mut ctl, &data, 150, threads);
        eprintln!(
            "doubles from {:<7}: {}\n    {}",
            start.unwrap_or("aimed"),
            runs(&ds),
            ctl.status()
        );
        // After a few dozen blocks, never at a rung less than half as fast as zstd:2: the
        // ratios are equal within 0.04 %, so the slower rungs buy nothing.
        let slow = ds[40..].iter().filter(|d| data.perf(d.codec).speed < 0.5 * z2).count();
        assert_eq!(slow, 0, "from {start:?}: {}", runs(&ds[40..]));
    }
}

/// `make demo` end to end in the simulator: `adz-datagen mixed` (4 MiB segments of text,
/// doubles, sparse records, text, random; classes 2, 3, 1, 2, 4) at 1GbE with 2 workers, the
/// text and doubles as the demo's traces measured them. S1 per class must write at least as
/// fast as static zstd:3 (it lost to it, 2.53 s against 2.40 s), with the text at zstd:3 or a
/// rung that writes as fast, and the doubles on fast levels.
#[test]
fn s1_beats_static_zstd3_on_the_demo_mix() {
    let l = Ladder::standard();
    let text = demo_text();
    let doubles = per_rung("doubles", |codec, level, _, speed| match (codec, level) {
        ("zstd", p) if p >= 1 => (speed * 1.4, 1.047),
        _ => (speed * 2.0, 1.003),
    });
    let sparse = DataModel::monotone("sparse", &l, 2.0, 2.0, 0.1);
    let random = DataModel::incompressible(&l);
    let mut segs = Vec::new();
    for _ in 0..25 {
        for (class, d) in [(2, &text), (3, &doubles), (1, &sparse), (2, &text), (4, &random)] {
            segs.push(Segment::new(4, d.clone()).with_class(class));
        }
    }
    let threads = 2;
    // Wall time 1-2x the CPU time (2 workers, the reader and the writer on 2 cores). No ratio
    // jitter: the sim's would send some doubles blocks (1.047) past the keep threshold.
    let sim = SimConfig::new(threads, GBE).with_wall_noise(2.0, 7);
    let cfg = |s: Strategy| ControllerConfig::new(s, Link::Fixed(GBE), threads);
    let z3 = sim.run(&mut ClassedController::new(cfg(Strategy::Static(spec("zstd:3")))), &segs);
    let mut ctl = ClassedController::new(cfg(Strategy::Throughput));
    let s1 = sim.run(&mut ctl, &segs);
    let of = |seg_class: u8, from: usize| -> Vec<SimBlock> {
        s1.blocks[from..].iter().filter(|b| segs[b.segment].class == seg_class).copied().collect()
    };
    let text_blocks = of(2, 100);
    let doubles_blocks = of(3, 100);
    let sparse_blocks = of(1, 100);
    eprintln!(
        "    sparse: {}",
        runs(&sparse_blocks.iter().map(|b| b.decision).collect::<Vec<_>>())
    );
    eprintln!(
        "demo mix at 1GbE: static zstd:3 {:.3} s ratio {:.3}; S1 {:.3} s ratio {:.3}\n    \
         text: {}\n    doubles: {}",
        z3.time(),
        z3.ratio(),
        s1.time(),
        s1.ratio(),
        runs(&text_blocks.iter().map(|b| b.decision).collect::<Vec<_>>()),
        runs(&doubles_blocks.iter().map(|b| b.decision).collect::<Vec<_>>()),
    );
    assert!(s1.time() <= z3.time(), "S1 {} s vs static zstd:3 {} s", s1.time(), z3.time());
    let t3 = write_throughput(&text, GBE, threads, spec("zstd:3"));
    let off = text_blocks
        .iter()
        .filter(|b| write_throughput(&text, GBE, threads, b.decision.codec) * (1.0 + MARGIN) < t3)
        .count();
    assert!(
        off * 20 <= text_blocks.len(),
        "text: {off}/{} blocks slower than zstd:3",
        text_blocks.len()
    );
    let z2 = doubles.perf(spec("zstd:2")).speed;
    assert!(doubles_blocks.iter().all(|b| doubles.perf(b.decision.codec).speed >= 0.5 * z2));

    // The sparse records as the real demo measured them: GB/s at every level, ratio 60 on lz4's
    // fast levels and 118 from zstd:-4 up. On their own, two workers cannot keep the link full
    // at 118 (2 x 1.9 GB/s against 117 MB/s x 118 = 13.8 GB/s), so their class's S1 alone
    // takes lz4 (4.2 GB/s x 2 > 117 x 60). In the write, their few blocks' CPU time hides
    // behind the link time of the other data's frames: the shared budget lets them climb.
    let segs: Vec<Segment> = segs
        .iter()
        .map(|s| {
            if s.class == 1 {
                Segment::new(s.blocks, demo_sparse()).with_class(1)
            } else {
                s.clone()
            }
        })
        .collect();
    let z3 = sim.run(&mut ClassedController::new(cfg(Strategy::Static(spec("zstd:3")))), &segs);
    let s1 = sim.run(&mut ClassedController::new(cfg(Strategy::Throughput)), &segs);
    let sparse: Vec<Decision> = s1.blocks[100..]
        .iter()
        .filter(|b| segs[b.segment].class == 1)
        .map(|b| b.decision)
        .collect();
    eprintln!(
        "with the measured sparse records: static zstd:3 {:.4} s ratio {:.4}; S1 {:.4} s ratio \
         {:.4}\n    sparse: {}",
        z3.time(),
        z3.ratio(),
        s1.time(),
        s1.ratio(),
        runs(&sparse),
    );
    // Without the budget: sparse on lz4:1, S1 2.3325 s at ratio 1.9978. With it: the sparse
    // records on zstd, S1 ties static zstd:3 (2.3327 s against 2.3323, ratio 2.0042 both).
    // The text cannot climb past zstd:3 for free: with 2 N buffers its 4-block runs would hold
    // up the link (the simulator loses 8-24 % with the text at zstd:5-7).
    assert!(sparse.iter().all(|d| d.codec.id().name() == "zstd"), "{}", runs(&sparse));
    assert!(s1.ratio() >= z3.ratio() * 0.9995, "S1 ratio {} vs {}", s1.ratio(), z3.ratio());
    assert!(s1.time() <= z3.time() * 1.001, "S1 {} s vs static zstd:3 {} s", s1.time(), z3.time());
}

/// The real check after the fixes above (`adz compress -s throughput --throttle 1GbE` on the
/// demo's data, on a machine busy with benchmarks): the text class's first compressed block,
/// zstd:3, took 243 MB/s of CPU and 126 MB/s of wall time (its worker waited for a core).
/// The workers' usual wall/CPU ratio was known from the other classes' blocks (about 1), but
/// each class learnt its own, so the text class timed its first block by its wall time alone,
/// found zstd:3 too slow, and left it for good. The wall/CPU ratio is the machine's, not the
/// data's: every class must use the one all classes' blocks have measured.
#[test]
fn a_new_class_times_its_first_block_with_the_machines_wall_cpu_ratio() {
    use adz_control::Control;
    let threads = 2;
    let cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads)
        .with_start(spec("zstd:3"));
    let mut ctl = ClassedController::new(cfg);
    let raw = 1u64 << 20;
    let ctx = |k: u64, class: u8| BlockContext {
        raw_offset: k * raw,
        raw_len: raw as usize,
        hints: &[],
        class,
    };
    let measure = |d: Decision, speed: f64, wall_x: f64, ratio: f64| {
        let cpu = raw as f64 / speed;
        BlockMeasurement {
            decision: d,
            raw_len: raw,
            stored_len: (raw as f64 / ratio) as u64,
            stored_raw: false,
            wall: Duration::from_secs_f64(cpu * wall_x),
            cpu: Duration::from_secs_f64(cpu),
        }
    };
    // The text (class 2) comes first: its controller exists before anything is measured.
    let d = ctl.next_block(&ctx(0, 2));
    assert_eq!(d.codec, spec("zstd:3"));
    // Doubles (class 3): 20 blocks at 500 MB/s per thread, wall = CPU.
    for k in 1..21 {
        let d = ctl.next_block(&ctx(k, 3));
        ctl.record_block(&measure(d, 500e6, 1.0, 1.047));
    }
    // Then the text block's measurement: 261 MB/s of CPU, wall 2x that.
    ctl.record_block(&measure(d, 261e6, 2.0, 3.765));
    let next = ctl.next_block(&ctx(21, 2));
    eprintln!("after a first block at 2x its CPU time: {} {:?}", next.codec, next.reason);
    assert_eq!(next.codec, spec("zstd:3"), "{:?}", next.reason);
}

/// The same real check, a run later: the write's very first compressed block (doubles,
/// 694 MB/s of CPU) took 5x its CPU time in wall time, and as the first it set the workers'
/// usual wall/CPU ratio outright, so the next blocks were timed as if the machine were 5x
/// slower (the ratio decays by a tenth per block), and the text left zstd:3 for lz4:1. The
/// first block now counts like any other against a prior of 1 (an idle machine): at most
/// 1.5x; contention that lasts still shows within a few dozen blocks.
#[test]
fn the_first_block_alone_does_not_set_the_wall_cpu_ratio() {
    let threads = 2;
    let data = demo_text();
    let cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads)
        .with_start(spec("zstd:3"));
    let mut ctl = Controller::new(cfg);
    let raw = 1u64 << 20;
    let ctx =
        |k: u64| BlockContext { raw_offset: k * raw, raw_len: raw as usize, hints: &[], class: 0 };
    let measure = |d: Decision, wall_x: f64| {
        let p = data.perf(d.codec);
        let cpu = raw as f64 / p.speed;
        BlockMeasurement {
            decision: d,
            raw_len: raw,
            stored_len: (raw as f64 / p.ratio) as u64,
            stored_raw: false,
            wall: Duration::from_secs_f64(cpu * wall_x),
            cpu: Duration::from_secs_f64(cpu),
        }
    };
    let d = ctl.next_block(&ctx(0));
    ctl.record_block(&measure(d, 5.0));
    let share = ctl.status().cpu_share.unwrap();
    assert!(share >= 1.0 / 1.5, "cpu share {share} after one block");
    // Then blocks at 1x: S1 is back at zstd:3 (or as fast a write) within a few blocks.
    let mut ds = Vec::new();
    for k in 1..30 {
        let d = ctl.next_block(&ctx(k));
        ds.push(d);
        ctl.record_block(&measure(d, 1.0));
    }
    eprintln!("after a first block at 5x: {}", runs(&ds));
    let t3 = write_throughput(&data, GBE, threads, spec("zstd:3"));
    for d in &ds[12..] {
        let t = write_throughput(&data, GBE, threads, d.codec);
        assert!(t * (1.0 + MARGIN) >= t3, "block {}: {}", d.seq, runs(&ds));
    }
    // Contention that lasts (every block 3x) is taken in within a few dozen blocks.
    for k in 30..60 {
        let d = ctl.next_block(&ctx(k));
        ctl.record_block(&measure(d, 3.0));
    }
    let share = ctl.status().cpu_share.unwrap();
    assert!(share < 0.45, "cpu share {share} after 30 blocks at 3x");
}

#[test]
fn a_cold_start_costs_the_first_blocks_only() {
    // SimConfig::with_cold_start: ColdStart::Slower makes the first block `factor` times
    // slower, the last cold one barely slower; ColdStart::Added adds `seconds` to the first
    // block, linearly less to the later cold ones; every block after them takes its own time.
    let cfg = || ControllerConfig::new(Strategy::Static(spec("zstd:3")), Link::Fixed(FDR4), 1);
    let segs = [Segment::new(40, text())];
    let run = |cold| {
        SimConfig::new(1, FDR4).with_cold_start(cold).run(&mut Controller::new(cfg()), &segs)
    };
    let warm = run(ColdStart::None);
    let secs = |r: &SimReport, k: usize| r.blocks[k].finish - r.blocks[k].start;
    let slower = run(ColdStart::Slower { blocks: 8, factor: 6.0 });
    assert!((secs(&slower, 0) / secs(&warm, 0) - 6.0).abs() < 1e-9);
    let last = secs(&slower, 7) / secs(&warm, 7);
    assert!(last > 1.0 && last < 6f64.powf(0.2), "{last}");
    assert!(slower.time() > warm.time() + 5.0 * secs(&warm, 0));
    let added = run(ColdStart::Added { blocks: 4, seconds: 0.02 });
    for (k, s) in [(0, 0.02), (1, 0.015), (2, 0.01), (3, 0.005)] {
        assert!((secs(&added, k) - secs(&warm, k) - s).abs() < 1e-9, "block {k}");
    }
    for k in 8..40 {
        assert!((secs(&slower, k) / secs(&warm, k) - 1.0).abs() < 1e-9, "block {k}");
        assert!((secs(&added, k) - secs(&warm, k)).abs() < 1e-9, "block {k}");
    }
}
