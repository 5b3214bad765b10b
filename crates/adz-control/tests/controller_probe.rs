//! Probe mode for incompressible data, and the pacing of probes.
//! Checked with the deterministic pipeline simulator (`adz_control::sim`) and made-up
//! measurements; no threads, no clock.

mod common;

use common::*;

#[test]
fn incompressible_stretch_goes_to_probe_mode_and_back() {
    let threads = 4;
    let ladder = Ladder::standard();
    let segs = [
        Segment::new(50, text()),
        Segment::new(100, DataModel::incompressible(&ladder)),
        Segment::new(50, text()),
    ];
    // A static strategy is one codec and level for every block (issue 24): it stores what it
    // cannot shrink raw, but never probes with other codecs nor skips the attempt.
    let stat = Strategy::Static(spec("zstd:19"));
    let mut ctl = Controller::new(ControllerConfig::new(stat, Link::Fixed(GBE), threads));
    let rep = SimConfig::new(threads, GBE).run(&mut ctl, &segs);
    assert!(
        rep.blocks.iter().all(|b| b.decision.codec == spec("zstd:19")),
        "{}",
        names(&rep, 0, 200)
    );
    assert!(rep.blocks[50..150].iter().all(|b| b.stored_raw));
    assert_eq!(ctl.status().mode, Mode::Fixed);
    for strategy in [Strategy::KeepPace, Strategy::Throughput, Strategy::Archive] {
        let cfg = ControllerConfig::new(strategy, Link::Fixed(GBE), threads);
        let mut ctl = Controller::new(cfg);
        let rep = SimConfig::new(threads, GBE).run(&mut ctl, &segs[..2]);
        assert_eq!(ctl.status().mode, Mode::Probe, "{strategy}");
        let rep2 = SimConfig::new(threads, GBE).run(&mut ctl, &segs[2..]);
        let stretch = &rep.blocks[50..150];
        let attempts = stretch.iter().filter(|b| b.decision.codec != CodecSpec::NONE).count();
        let back = rep2
            .blocks
            .iter()
            .position(|b| b.decision.codec != CodecSpec::NONE && !b.stored_raw)
            .unwrap();
        let before = lane_of(rep.blocks[49].decision);
        let resumed = rep2.blocks.iter().position(|b| lane_of(b.decision) == before);
        eprintln!(
            "{strategy}: {attempts} of 100 incompressible blocks attempted ({}); compressible data compressed again \
             after {back} blocks, back on {before} after {resumed:?}",
            names(&rep, 48, 150)
        );
        assert!(attempts <= 15, "{strategy}: {attempts} attempts");
        assert!(stretch[90..]
            .iter()
            .all(|b| matches!(b.decision.reason, Reason::Incompressible | Reason::Probe)));
        assert!(back < 10, "{strategy}: compressed again only after {back} blocks");
        assert!(
            resumed.is_some_and(|r| r <= back + threads + 2),
            "{strategy}: resumed {resumed:?}"
        );
        assert_ne!(ctl.status().mode, Mode::Probe);
    }
}

/// Issue 6: a sampling predictor that finds the data incompressible starts the controller in
/// probe mode. Without it the first blocks are all attempted (a pipeline's depth of them
/// before the first result says "incompressible"); with it only the probes are, and data that
/// compresses after the random stretch is still picked up within the probe interval.
#[test]
fn a_predicted_incompressible_start_only_probes() {
    let threads = 4;
    let l = Ladder::standard();
    let segs = [Segment::new(40, DataModel::incompressible(&l)), Segment::new(60, text())];
    let sim = SimConfig::new(threads, GBE);
    let cfg = ControllerConfig::new(Strategy::KeepPace, Link::Fixed(GBE), threads);
    let attempts = |rep: &SimReport| {
        rep.blocks[..40].iter().filter(|b| b.decision.codec != CodecSpec::NONE).count()
    };
    let plain = run(cfg.clone(), &sim, &segs).1;
    let mut ctl = Controller::new(cfg.clone());
    ctl.start_incompressible();
    let first =
        ctl.next_block(&BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class: 0 });
    assert_eq!((first.codec, first.reason), (CodecSpec::NONE, Reason::Incompressible));
    let mut ctl = Controller::new(cfg.clone());
    ctl.start_incompressible();
    let probed = sim.run(&mut ctl, &segs);
    eprintln!(
        "40 incompressible blocks, then text: {} attempts without a prediction ({}), {} with ({})",
        attempts(&plain),
        names(&plain, 0, 40),
        attempts(&probed),
        names(&probed, 0, 40)
    );
    assert!(attempts(&probed) < attempts(&plain), "{} vs {}", attempts(&probed), attempts(&plain));
    assert!(
        probed.blocks[..40]
            .iter()
            .all(|b| matches!(b.decision.reason, Reason::Incompressible | Reason::Probe)),
        "{}",
        names(&probed, 0, 40)
    );
    // The text after it is compressed within the probe interval (10) plus the lag.
    assert!(probed.blocks[40 + 10 + threads..].iter().all(|b| b.decision.codec != CodecSpec::NONE));
    // Once a block has been decided, it does nothing.
    let mut late = Controller::new(cfg);
    let d =
        late.next_block(&BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class: 0 });
    late.start_incompressible();
    let d2 = late.next_block(&BlockContext {
        raw_offset: 1 << 20,
        raw_len: 1 << 20,
        hints: &[],
        class: 0,
    });
    assert_ne!(d.codec, CodecSpec::NONE);
    assert!(d2.codec != CodecSpec::NONE && d2.reason != Reason::Incompressible, "{d2:?}");
}

/// Float arrays that only an entropy coder shrinks (the thesis' matrix.bin): zstd:1 and up
/// save 11 %, LZ4 and zstd's negative levels nothing. S1 starts at zstd:3, too slow for the
/// link, and steps down, past zstd:1, to a fast rung that stores the blocks raw. That one
/// rung fails is no reason to call the data incompressible: the matrix's async S1 row at
/// 1GbE (2026-11-26) went into probe mode there, and each probe that compressed (zstd:1)
/// resumed at the rung that had failed, so 48 of 64 blocks went raw where static zstd:2 saved
/// 10 %. After a probe compresses, the lane goes on from the probe's rung.
#[test]
fn a_fast_rung_that_stores_raw_does_not_make_float_data_incompressible() {
    let threads = 2;
    let data = per_rung("matrix", |codec, level, _, _| match (codec, level) {
        ("zstd", 1) => (150e6, 1.12),
        ("zstd", 2) => (120e6, 1.12),
        ("zstd", p) if p >= 3 => (40e6, 1.12),
        _ => (1500e6, 1.003),
    });
    let mut cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads);
    cfg.start = Some(spec("zstd:3"));
    let mut ctl = Controller::new(cfg);
    let rep = SimConfig::new(threads, GBE).run(&mut ctl, &[Segment::new(150, data)]);
    let saved = rep.blocks[30..]
        .iter()
        .filter(|b| !b.stored_raw && b.decision.codec != CodecSpec::NONE)
        .count();
    eprintln!("{}", names(&rep, 0, 150));
    assert!(saved >= 90, "{saved} of 120 blocks compressed: {}", names(&rep, 30, 150));
}

/// Float data through a link faster than any rung that saves: raw is the fastest write. A
/// zstd:1 probe compresses, the lanes resume, S1 finds zstd:1 too slow and takes a fast rung,
/// which stores raw, and probe mode starts again: every 8 blocks a 10 ms zstd:1 probe held the
/// in-order link up for 11 blocks' link time at 1200 MB/s (a 256 MiB write of the solver's
/// matrix at 0.68x raw). Such futile probes are paced to about 5 % of the link's time. At
/// 117 MB/s, where a probe hides behind the link, they keep their pace of 4-10 blocks.
#[test]
fn futile_probes_are_paced_by_what_they_cost_against_the_link() {
    let threads = 2;
    let data = per_rung("matrix", |codec, level, _, _| match (codec, level) {
        ("zstd", 1) => (100e6, 1.12),
        ("zstd", p) if p >= 2 => (40e6, 1.12),
        _ => (1500e6, 1.003),
    });
    let run = |link: f64, n: u64| {
        let mut cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(link), threads);
        cfg.start = Some(spec("lz4:1"));
        let mut ctl = Controller::new(cfg);
        SimConfig::new(threads, link).run(&mut ctl, &[Segment::new(n, data.clone())])
    };
    let zstd1 = |rep: &SimReport, from: usize| {
        rep.blocks[from..].iter().filter(|b| b.decision.codec == spec("zstd:1")).count()
    };
    let fast = run(1200e6, 400);
    let raw_time = 400.0 * (1 << 20) as f64 / 1200e6;
    let tried = zstd1(&fast, 40);
    assert!(tried <= 4, "{tried} zstd:1 probes in 360 blocks: {}", names(&fast, 40, 400));
    assert!(fast.time() <= 1.05 * raw_time, "{} s against raw's {raw_time} s", fast.time());
    // Where a probe costs no more than the block it stands in for, probing keeps its pace.
    let slow = run(GBE, 200);
    let tried = zstd1(&slow, 40);
    assert!(
        tried >= 6,
        "{tried} zstd:1 probes in 160 blocks at 117 MB/s: {}",
        names(&slow, 40, 200)
    );
}

/// Where the raw path alone cannot keep up with the link, a probe can find nothing the
/// strategy would use, and it costs the link time of the blocks it holds up: every probe is
/// then paced by its cost, as futile ones are (before one has failed, at the model's speed for
/// its rung). Through 6000 MB/s on two cores a probe of the kernel's `.tar.xz` took about 1 ms
/// (five blocks' link time) every 10 blocks, and S1 wrote at 0.72 of raw; on a solver's matrix
/// predicted incompressible the first two probes took 6-9 ms of a 60 ms write. Where the
/// cores have time to spare, probes keep their pace.
#[test]
fn probes_are_paced_by_their_cost_where_compression_has_nothing_to_gain() {
    let run = |cpu: f64, serial: f64, n: u64| {
        let mut ctl =
            Controller::new(ControllerConfig::new(Strategy::Throughput, Link::Fixed(FDR4), 2));
        ctl.set_path_cost(cpu, serial);
        ctl.start_incompressible();
        let ds = decide_incompressible(&mut ctl, n, 1e-3);
        assert!(ds.iter().all(|d| matches!(d.reason, Reason::Probe | Reason::Incompressible)));
        let probes: Vec<u64> =
            ds.iter().filter(|d| d.reason == Reason::Probe).map(|d| d.seq).collect();
        probes
    };
    // 2 CPUs at 0.5 ns a byte move raw data at 4 GB/s: nothing to gain at 6 GB/s. A 1 ms
    // probe is 5.7 blocks' link time, 4.7 beyond its block: one probe per 94 blocks at most.
    let paced = run(0.5e-9, 0.2e-9, 2000);
    assert!((3..=2000 / 94 + 1).contains(&paced.len()), "probes at {paced:?}");
    assert!(paced.windows(2).all(|w| w[1] - w[0] >= 94), "probes at {paced:?}");
    // The same where the one-thread stage is the slow one (5 GB/s).
    let serial = run(0.1e-9, 0.2e-9, 2000);
    assert!(serial.len() <= 2000 / 94 + 1, "probes at {serial:?}");
    // A raw path at 20 GB/s: the link is the bottleneck, and probes come every 4-10 blocks.
    let kept = run(0.1e-9, 0.05e-9, 300);
    eprintln!("probes at {paced:?} (CPU-bound), {serial:?} (serial-bound), {kept:?} (link-bound)");
    assert!(kept.len() >= 28, "probes at {kept:?}");
}
