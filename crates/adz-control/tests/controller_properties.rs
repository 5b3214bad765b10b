//! Properties: random measurements never panic, strategies and hints round-trip.
//! Checked with the deterministic pipeline simulator (`adz_control::sim`) and made-up
//! measurements; no threads, no clock.

mod common;

use adz_control::Strategy;
use common::*;
use proptest::prelude::*;
use proptest::strategy::Strategy as Strategy2;

fn arb_hints() -> impl Strategy2<Value = Vec<Hint>> {
    proptest::collection::vec(
        prop_oneof![
            Just(Hint::NoCompress),
            Just(Hint::WriteOnce),
            Just(Hint::Hot),
            proptest::sample::select(Dtype::ALL.to_vec()).prop_map(Hint::Dtype),
            proptest::sample::select(vec!["xor:8,shuffle:8", "delta:4", "none"])
                .prop_map(|f| Hint::Filters(f.parse().unwrap())),
            (0.0f64..100.0).prop_map(Hint::ReadsPerWrite),
        ],
        0..3,
    )
}

#[derive(Debug, Clone)]
enum Op {
    Next(Vec<Hint>, usize),
    Block { pick: usize, raw: u64, stored: u64, stored_raw: bool, wall_ns: u64, cpu_ns: u64 },
    Sink { bytes: u64, busy_ns: u64 },
}

fn arb_op() -> impl Strategy2<Value = Op> {
    let len = prop_oneof![Just(0u64), Just(1), 1u64..=(64 << 20), Just(u64::MAX)];
    let ns = prop_oneof![Just(0u64), 1u64..1_000_000_000, Just(u64::MAX)];
    prop_oneof![
        (arb_hints(), 0usize..=(2 << 20)).prop_map(|(h, n)| Op::Next(h, n)),
        (any::<usize>(), len.clone(), len.clone(), any::<bool>(), ns.clone(), ns.clone()).prop_map(
            |(pick, raw, stored, stored_raw, wall_ns, cpu_ns)| Op::Block {
                pick,
                raw,
                stored,
                stored_raw,
                wall_ns,
                cpu_ns
            }
        ),
        (len, ns).prop_map(|(bytes, busy_ns)| Op::Sink { bytes, busy_ns }),
    ]
}

fn arb_strategy() -> impl Strategy2<Value = Strategy> {
    prop_oneof![
        Just(Strategy::Throughput),
        Just(Strategy::KeepPace),
        (0.0f64..10.0).prop_map(Strategy::Prolong),
        Just(Strategy::Prolong(f64::NAN)),
        Just(Strategy::Archive),
        proptest::sample::select(Ladder::standard().rungs().to_vec()).prop_map(Strategy::Static),
    ]
}

fn arb_link() -> impl Strategy2<Value = Link> {
    prop_oneof![
        Just(Link::Auto),
        (1.0f64..1e11).prop_map(Link::Fixed),
        Just(Link::Fixed(0.0)),
        Just(Link::Fixed(f64::NAN)),
        Just(Link::Fixed(f64::INFINITY)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        // Failures are kept next to this file (tests/controller.regressions) and rerun first.
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
        )),
        ..ProptestConfig::default()
    })]

    /// Any sequence of measurements, however absurd, never panics, and every decision is a
    /// rung of the ladder (or the static codec) with valid filters.
    #[test]
    fn random_measurements_never_panic(
        strategy in arb_strategy(),
        link in arb_link(),
        threads in 0usize..64,
        start in proptest::option::of(proptest::sample::select(Ladder::standard().rungs().to_vec())),
        ops in proptest::collection::vec(arb_op(), 0..300),
    ) {
        let mut cfg = ControllerConfig::new(strategy, link, threads);
        cfg.start = start;
        let mut ctl = Controller::new(cfg);
        let ladder = Ladder::standard();
        let mut decisions: Vec<Decision> = Vec::new();
        for op in ops {
            match op {
                Op::Next(hints, len) => {
                    let d = ctl.next_block(&BlockContext { raw_offset: 0, raw_len: len, hints: &hints, class: 0 });
                    let on_ladder = ladder.position(d.codec).is_some();
                    let is_static = matches!(strategy, Strategy::Static(c) if c == d.codec);
                    prop_assert!(on_ladder || is_static, "{} not on the ladder", d.codec);
                    if hints.contains(&Hint::NoCompress) {
                        prop_assert_eq!(d.codec, CodecSpec::NONE);
                    }
                    // Codec none filters only when asked to explicitly (`filters=`, static none).
                    let explicit = hints.iter().any(|h| matches!(h, Hint::Filters(_)));
                    if d.codec == CodecSpec::NONE && !(explicit && matches!(strategy, Strategy::Static(_))) {
                        prop_assert!(d.filters.is_empty());
                    }
                    prop_assert_eq!(d.seq, decisions.len() as u64);
                    decisions.push(d);
                }
                Op::Block { pick, raw, stored, stored_raw, wall_ns, cpu_ns } => {
                    let decision = if decisions.is_empty() {
                        Decision { codec: spec("zstd:3"), filters: Filters::NONE, reason: Reason::Hold, seq: 99, shadow: None, shadow_filters: None }
                    } else {
                        decisions[pick % decisions.len()]
                    };
                    ctl.record_block(&BlockMeasurement {
                        decision,
                        raw_len: raw,
                        stored_len: stored,
                        stored_raw,
                        wall: Duration::from_nanos(wall_ns),
                        cpu: Duration::from_nanos(cpu_ns),
                    });
                }
                Op::Sink { bytes, busy_ns } => {
                    ctl.record_sink(&SinkMeasurement {
                        bytes,
                        busy: Duration::from_nanos(busy_ns),
                        backlogged: true,
                        ..Default::default()
                    });
                }
            }
            let st = ctl.status();
            for v in [st.target, st.speed, st.ratio, st.link, st.cpu_share].into_iter().flatten() {
                prop_assert!(!v.is_nan(), "NaN in status {:?}", st);
            }
        }
    }

    #[test]
    fn strategy_and_hint_text_round_trips(f in 1.0f64..1e6, i in 0usize..48, d in 0usize..10) {
        let c = Ladder::standard().rungs()[i];
        for s in [Strategy::Prolong(f), Strategy::Static(c), Strategy::Throughput, Strategy::KeepPace, Strategy::Archive] {
            prop_assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
        }
        let h = Hint::Dtype(Dtype::ALL[d]);
        prop_assert_eq!(h.to_string().parse::<Hint>().unwrap(), h);
    }

    #[test]
    fn junk_never_parses_as_a_strategy(s in "[a-z0-9=:.-]{0,12}") {
        let known = ["throughput", "s1", "keep-pace", "s2", "archive"];
        if let Ok(st) = s.parse::<Strategy>() {
            let ok = known.contains(&s.as_str())
                || s.starts_with("prolong=") || s.starts_with("s3=") || s.starts_with("static=");
            prop_assert!(ok, "{:?} parsed as {}", s, st);
        }
    }
}
