//! Hints: no-compress, dtype, filters, hot and write-once.
//! Checked with the deterministic pipeline simulator (`adz_control::sim`) and made-up
//! measurements; no threads, no clock.

mod common;

use common::*;

#[test]
fn no_compress_hint_is_raw_and_invisible_to_the_controller() {
    let threads = 4;
    let mut ctl =
        Controller::new(ControllerConfig::new(Strategy::KeepPace, Link::Fixed(GBE), threads));
    SimConfig::new(threads, GBE).run(&mut ctl, &[Segment::new(100, text())]);
    let before = ctl.status();
    let hints = [Hint::NoCompress, Hint::Dtype(Dtype::F64)];
    for i in 0..50u64 {
        let d = ctl.next_block(&BlockContext {
            raw_offset: i << 20,
            raw_len: 1 << 20,
            hints: &hints,
            class: 0,
        });
        assert_eq!(
            (d.codec, d.filters, d.reason),
            (CodecSpec::NONE, Filters::NONE, Reason::HintNoCompress)
        );
        // Whatever the worker says about it, even nonsense, changes nothing.
        ctl.record_block(&BlockMeasurement {
            decision: d,
            raw_len: 1 << 20,
            stored_len: 1 << 20,
            stored_raw: true,
            wall: Duration::from_secs(3),
            cpu: Duration::ZERO,
        });
    }
    let (mut before, mut after) = (before, ctl.status());
    (before.blocks, after.blocks) = (0, 0);
    assert_eq!(before, after);
    // And the same blocks through the simulator: all raw, no probe mode afterwards.
    let segs = [Segment::new(30, DataModel::incompressible(&Ladder::standard()))
        .with_hints(vec![Hint::NoCompress])];
    let rep = SimConfig::new(threads, GBE).run(&mut ctl, &segs);
    assert!(rep.blocks.iter().all(|b| b.decision.reason == Reason::HintNoCompress));
    assert_eq!(ctl.status().mode, Mode::Adapt);
    assert_eq!(ctl.status().rung, before.rung);
}

#[test]
fn dtype_hint_enables_shuffle_with_the_element_size() {
    let mut ctl = Controller::new(ControllerConfig::new(Strategy::KeepPace, Link::Fixed(GBE), 4));
    fn ctx(hints: &[Hint]) -> BlockContext<'_> {
        BlockContext { raw_offset: 0, raw_len: 1 << 20, hints, class: 0 }
    }
    for (d, size) in [(Dtype::F64, 8), (Dtype::F32, 4), (Dtype::I16, 2), (Dtype::U64, 8)] {
        let got = ctl.next_block(&ctx(&[Hint::Dtype(d)]));
        assert_ne!(got.codec, CodecSpec::NONE);
        assert_eq!(
            got.filters,
            Filters::new(&[FilterSpec::shuffle(size).unwrap()]).unwrap(),
            "{d}"
        );
    }
    for d in [Dtype::U8, Dtype::I8] {
        assert_eq!(ctl.next_block(&ctx(&[Hint::Dtype(d)])).filters, Filters::NONE);
    }
    assert_eq!(ctl.next_block(&ctx(&[])).filters, Filters::NONE);
    // With other hints too.
    let got = ctl.next_block(&ctx(&[Hint::Hot, Hint::Dtype(Dtype::F32)]));
    assert_eq!(got.filters.iter().next().map(|f| f.param()), Some(4));
}

#[test]
fn filters_hint_sets_the_chain_and_wins_over_dtype() {
    let mut ctl = Controller::new(ControllerConfig::new(Strategy::KeepPace, Link::Fixed(GBE), 4));
    fn ctx(hints: &[Hint]) -> BlockContext<'_> {
        BlockContext { raw_offset: 0, raw_len: 1 << 20, hints, class: 0 }
    }
    let chain: Filters = "xor:8,shuffle:8".parse().unwrap();
    let got = ctl.next_block(&ctx(&[Hint::Filters(chain)]));
    assert_eq!(got.filters, chain);
    // A dtype hint (the file's) and a filters hint (the range's): the filters hint decides.
    let got = ctl.next_block(&ctx(&[Hint::Dtype(Dtype::F32), Hint::Filters(chain)]));
    assert_eq!(got.filters, chain);
    // The file's filters, then a range's: the range's (the later one) decides.
    let delta: Filters = "delta:4".parse().unwrap();
    let got = ctl.next_block(&ctx(&[Hint::Filters(chain), Hint::Filters(delta)]));
    assert_eq!(got.filters, delta);
    // `filters=none` for a range turns a file-wide chain off there.
    let got = ctl.next_block(&ctx(&[Hint::Filters(chain), Hint::Filters(Filters::NONE)]));
    assert_eq!(got.filters, Filters::NONE);
    // Codec none with filters keeps the filters (the frame stores the filtered bytes).
    let mut none = Controller::new(ControllerConfig::new(
        Strategy::Static(CodecSpec::NONE),
        Link::Fixed(GBE),
        4,
    ));
    let got = none.next_block(&ctx(&[Hint::Filters(chain)]));
    assert_eq!((got.codec, got.filters, got.reason), (CodecSpec::NONE, chain, Reason::Static));
    assert_eq!(none.next_block(&ctx(&[])).filters, Filters::NONE);
    assert_eq!(none.next_block(&ctx(&[Hint::Dtype(Dtype::F64)])).filters, Filters::NONE);
    // reads-per-write says nothing about a block's filters or codec.
    let got = ctl.next_block(&ctx(&[Hint::ReadsPerWrite(10.0)]));
    assert_eq!(got.filters, Filters::NONE);
    assert_ne!(got.codec, CodecSpec::NONE);
}

#[test]
fn hot_and_write_once_hints_switch_the_strategy_for_their_range() {
    let threads = 8;
    let data = text();
    let s1 = best_rung(&data, Strategy::Throughput, GBE, threads).unwrap();
    let s2 = best_rung(&data, Strategy::KeepPace, GBE, threads).unwrap();
    assert!(s1 < s2);
    // keep-pace file with a hot range: the hot range settles where S1 would.
    let segs = [
        Segment::new(150, data.clone()),
        Segment::new(150, data.clone()).with_hints(vec![Hint::Hot]),
        Segment::new(60, data.clone()),
    ];
    let cfg = rungs_only(ControllerConfig::new(Strategy::KeepPace, Link::Fixed(GBE), threads));
    let (ctl, rep) = run(cfg, &SimConfig::new(threads, GBE), &segs);
    eprintln!("keep-pace with a hot range: {}", names(&rep, 140, 360));
    assert!(settled(&data, Strategy::KeepPace, GBE, threads, lane_of(rep.blocks[149].decision)));
    assert!(settled(&data, Strategy::Throughput, GBE, threads, lane_of(rep.blocks[299].decision)));
    // The file's own lane was not dragged along: after the hot range it is where it was.
    assert!(settled(&data, Strategy::KeepPace, GBE, threads, lane_of(rep.blocks[359].decision)));
    assert_eq!(ctl.status().strategy, Strategy::KeepPace);

    // throughput file with a write-once range: that range settles where S2 would.
    let segs = [
        Segment::new(150, data.clone()),
        Segment::new(150, data.clone()).with_hints(vec![Hint::WriteOnce]),
    ];
    let cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads);
    let (_, rep) = run(cfg, &SimConfig::new(threads, GBE), &segs);
    assert!(settled(&data, Strategy::Throughput, GBE, threads, lane_of(rep.blocks[149].decision)));
    assert!(settled(&data, Strategy::KeepPace, GBE, threads, lane_of(rep.blocks[299].decision)));

    // static ignores both.
    let cfg = ControllerConfig::new(Strategy::Static(spec("zstd:3")), Link::Fixed(GBE), threads);
    let mut ctl = Controller::new(cfg);
    for hints in [&[Hint::Hot][..], &[Hint::WriteOnce], &[]] {
        let d = ctl.next_block(&BlockContext { raw_offset: 0, raw_len: 1 << 20, hints, class: 0 });
        assert_eq!((d.codec, d.reason), (spec("zstd:3"), Reason::Static));
    }
}
