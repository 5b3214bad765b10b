//! Priors measured on this machine (`adz profile`) shape the controller's first guesses:
//! on data whose zstd levels cost less than the built-in table says, S1 with the profile's
//! priors goes where the write is fastest, and without them it stays on the rung it measured.
//! Checked with the deterministic simulator; no threads, no clock.

mod common;

use adz_control::{Priors, Reference};
use common::*;

/// zstd's levels 1..12 cost 2.5x from end to end (the built-in table: 11x): a machine and
/// data where the profile measured a flat slope.
fn flat_levels() -> DataModel {
    anchored(
        "flat zstd levels",
        &[
            ("lz4:1", 800.0, 1.3),
            ("zstd:1", 300.0, 2.0),
            ("zstd:3", 260.0, 2.2),
            ("zstd:6", 200.0, 2.6),
            ("zstd:12", 120.0, 2.8),
        ],
    )
}

/// What `adz profile` would measure of `data`: its default rungs' one-thread figures.
fn profile_of(data: &DataModel) -> Priors {
    let rungs = ["none", "lz4:1", "zstd:1", "zstd:3", "zstd:6", "zstd:12", "xz:1"];
    Priors::measured(rungs.iter().map(|&r| {
        let p = if r == "none" { Perf { speed: 5e9, ratio: 1.0 } } else { data.perf(spec(r)) };
        (spec(r), Reference { speed: p.speed, ratio: p.ratio })
    }))
    .unwrap()
}

fn s1(priors: Priors, data: &DataModel) -> SimReport {
    let threads = 2;
    let mut cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(GBE), threads);
    cfg.ladder = Ladder::standard().with_priors(priors);
    let sim = SimConfig::new(threads, GBE);
    run(cfg, &sim, &[Segment::new(200, data.clone())]).1
}

#[test]
fn measured_priors_take_s1_to_the_fastest_write_where_the_builtin_shape_holds_it_back() {
    let data = flat_levels();
    let (best, best_throughput) = fastest_write(&data, GBE, 2);
    let ladder = Ladder::standard();
    let z1 = ladder.position(spec("zstd:1")).unwrap();
    assert!(best > z1 + 3, "the fastest write is well past zstd:1: {}", ladder.rungs()[best]);

    let with = s1(profile_of(&data), &data);
    let without = s1(Priors::builtin(), &data);
    let (tw, tb) = (with.throughput_of(50, 200), without.throughput_of(50, 200));
    // With the profile's shape S1 settles within 5 % of the fastest write ...
    assert!(
        tw >= 0.95 * best_throughput,
        "with priors {:.0} of {:.0} MB/s: {}",
        tw / 1e6,
        best_throughput / 1e6,
        names(&with, 50, 200)
    );
    // ... where the built-in shape (zstd:6 predicted 5x slower than zstd:1) keeps it lower.
    assert!(
        tw > 1.1 * tb,
        "with {:.0} MB/s, built-in {:.0} MB/s: {}",
        tw / 1e6,
        tb / 1e6,
        names(&without, 50, 200)
    );
}

#[test]
fn priors_that_match_the_builtin_table_change_nothing() {
    // A profile that measured exactly the reference table: the same decisions, block for
    // block, as the built-in priors.
    let data = text();
    let rungs = ["lz4:1", "zstd:1", "zstd:3", "zstd:6", "zstd:12", "xz:1"];
    let same = Priors::measured(rungs.iter().map(|&r| (spec(r), reference(spec(r))))).unwrap();
    let a = s1(same, &data);
    let b = s1(Priors::builtin(), &data);
    let specs = |r: &SimReport| r.blocks.iter().map(|b| b.decision.codec).collect::<Vec<_>>();
    assert_eq!(specs(&a), specs(&b));
}
