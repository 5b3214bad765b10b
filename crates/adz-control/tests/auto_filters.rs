//! The adaptive strategies choose a class's filters by probes (docs/decisions/0059): driven
//! like a pipeline drives the controller, with shadow measurements whose sizes depend on the
//! filters, the controller settles on the chain that stores least; hints and static
//! strategies keep their own filters and get no probes.

mod common;

use adz_control::ShadowMeasurement;
use common::*;

/// Stored bytes per raw byte that a chain leaves of what no filter stores, on 32-bit pixels.
fn pixel_chains(f: Filters) -> f64 {
    match f.to_string().as_str() {
        "-" => 1.0,
        "xor:4,shuffle:4" => 0.72,
        "delta:4,shuffle:4" => 0.76,
        "shuffle:4" => 0.84,
        _ => 1.06,
    }
}

/// Decide and measure `blocks` blocks of `data` (measurements two blocks late, shadows
/// answered), each block's stored size scaled by its filters' `chain_factor`. Returns the decisions.
fn drive(
    cfg: ControllerConfig,
    data: &DataModel,
    chain_factor: fn(Filters) -> f64,
    hints: &[Hint],
    blocks: usize,
) -> Vec<Decision> {
    let mut ctl = Controller::new(cfg);
    let raw = 1u64 << 20;
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::new();
    for k in 0..blocks {
        let ctx =
            BlockContext { raw_offset: k as u64 * raw, raw_len: raw as usize, hints, class: 3 };
        let d = ctl.next_block(&ctx);
        out.push(d);
        queue.push_back(d);
        if queue.len() <= 2 {
            continue;
        }
        let d: Decision = queue.pop_front().unwrap();
        if d.codec == CodecSpec::NONE {
            continue;
        }
        let p = data.perf(d.codec);
        let t = Duration::from_secs_f64(raw as f64 / p.speed);
        let stored = (raw as f64 / p.ratio * chain_factor(d.filters)) as u64;
        if let Some(s) = d.shadow {
            let slice = 16u64 << 10;
            let size = |c: CodecSpec, f: Filters| {
                (slice as f64 / data.perf(c).ratio * chain_factor(f)) as u64
            };
            let secs = |c: CodecSpec| Duration::from_secs_f64(slice as f64 / data.perf(c).speed);
            ctl.record_shadow(&ShadowMeasurement {
                decision: d,
                raw_len: slice,
                base_stored: size(d.codec, d.filters),
                base_cpu: secs(d.codec),
                stored: size(s, d.shadow_filters.unwrap_or(d.filters)),
                cpu: secs(s),
            });
        }
        record_measured(&mut ctl, d, raw, stored, t);
    }
    out
}

fn pixels() -> DataModel {
    DataModel::monotone("pixels", &Ladder::standard(), 1.0, 0.5, 0.1)
}

fn s1() -> ControllerConfig {
    ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), 2)
}

#[test]
fn s1_settles_on_the_chain_that_stores_least() {
    let ds = drive(s1(), &pixels(), pixel_chains, &[], 300);
    let best: Filters = "xor:4,shuffle:4".parse().unwrap();
    let tail = &ds[150..];
    let on_best = tail.iter().filter(|d| d.filters == best).count();
    assert!(on_best >= tail.len() - 2, "{on_best} of {} blocks on {best}", tail.len());
    let probes = ds.iter().filter(|d| d.shadow_filters.is_some()).count();
    assert!((3..=30).contains(&probes), "{probes} filter probes in 300 blocks");
    // A probe compares the block's codec through another chain, nothing else.
    for d in ds.iter().filter(|d| d.shadow_filters.is_some()) {
        assert_eq!(d.shadow, Some(d.codec));
        assert_ne!(d.shadow_filters, Some(d.filters));
    }
}

#[test]
fn named_filters_static_strategies_and_the_switch_get_no_probes() {
    let none = [Hint::Filters(Filters::NONE)];
    let f8: Filters = "shuffle:8".parse().unwrap();
    let given = [Hint::Filters(f8)];
    let dtype = [Hint::Dtype(Dtype::F32)];
    let mut off = s1();
    off.auto_filters = false;
    let static3 = ControllerConfig::new(Strategy::Static(spec("zstd:3")), Link::Fixed(GBE), 2);
    let cases: [(&str, ControllerConfig, &[Hint], Filters); 5] = [
        ("filters=none", s1(), &none, Filters::NONE),
        ("filters=shuffle:8", s1(), &given, f8),
        ("dtype=f32", s1(), &dtype, "shuffle:4".parse().unwrap()),
        ("auto_filters off", off, &[], Filters::NONE),
        ("static zstd:3", static3, &[], Filters::NONE),
    ];
    for (name, cfg, hints, want) in cases {
        let ds = drive(cfg, &pixels(), pixel_chains, hints, 200);
        for d in ds.iter().filter(|d| d.codec != CodecSpec::NONE) {
            assert_eq!(d.filters, want, "{name}");
            assert_eq!(d.shadow_filters, None, "{name}");
        }
    }
}

#[test]
fn data_no_chain_helps_keeps_no_filters_and_is_rarely_probed() {
    // Text, say: every chain stores more than none.
    let worse = |f: Filters| if f.is_empty() { 1.0 } else { 1.1 };
    let ds = drive(s1(), &text(), worse, &[], 640);
    assert!(ds.iter().all(|d| d.filters.is_empty()));
    // One plain shuffle per width, then a recheck every 32 blocks at most.
    let probes = ds.iter().filter(|d| d.shadow_filters.is_some()).count();
    assert!((3..=3 + 640 / 32).contains(&probes), "{probes} probes");
}
