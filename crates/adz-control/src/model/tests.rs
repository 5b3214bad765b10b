//! The model's unit tests.

use super::*;
use crate::ladder::{reference, Reference};

fn rates() -> Rates {
    Rates { slow: 0.7, fast: 0.15, residual: 0.3, ratio: 0.3, halflife: 256.0 }
}

#[test]
fn every_rungs_correction_at_once_is_each_rungs_own() {
    // Seen and unseen rungs, fresh and aged: the two passes must give what the search
    // per rung gives.
    let mut res = vec![Residual::default(); 12];
    for (i, val, at) in [(2, 0.3, 5), (3, -0.2, 90), (7, 0.8, 40), (11, -1.0, 99)] {
        res[i] = Residual { val, seen: true, at };
    }
    // One group, and two groups interleaved (neighbours only within a group).
    for group in [vec![0u8; 12], (0..12).map(|i| u8::from(i % 3 == 0)).collect()] {
        let all = corrections(&res, &group, 100, 16.0);
        for (i, c) in all.iter().enumerate().skip(1) {
            assert!((c - correction(&res, &group, i, 100, 16.0)).abs() < 1e-12, "rung {i}");
        }
    }
    let split: Vec<u8> = (0..12).map(|i| u8::from(i >= 6)).collect();
    // Rung 5 has no measured neighbour in its group above it: rung 7 does not count.
    assert!((correction(&res, &split, 5, 100, 16.0) - (-0.2)).abs() < 1e-12);
    let zeros = [Residual::default(); 5];
    assert!(corrections(&zeros, &[0; 5], 3, 16.0).iter().all(|&c| c == 0.0));
}

#[test]
fn predictions_made_before_an_observation_at_the_same_clock_are_not_kept() {
    // The controller asks, observes and asks again at one clock (raw blocks do not move
    // it): the second answer must be the observed model's, not the first one kept.
    let ladder = Ladder::standard();
    let mut m = Model::new(&ladder, 0.5, rates());
    let z1 = ladder.position("zstd:1".parse().unwrap()).unwrap();
    let spec = ladder.rungs()[z1];
    let sample = |speed: f64, ratio: f64| Sample {
        spec,
        rung: Some(z1),
        speed: Some(speed),
        ratio,
        weight: 1.0,
        reset: false,
    };
    m.observe(&sample(300e6, 3.5), 7);
    m.observe(&sample(300e6, 3.5), 7);
    let (speed, ratio) = (m.speed(z1, 7), m.ratio(z1, 7));
    m.observe(&sample(30e6, 1.2), 7);
    let mut fresh = m.clone();
    fresh.memo.get_mut().clear();
    assert_eq!((m.speed(z1, 7), m.ratio(z1, 7)), (fresh.speed(z1, 7), fresh.ratio(z1, 7)));
    assert!(m.speed(z1, 7) < speed && m.ratio(z1, 7) < ratio);
}

#[test]
fn first_sample_sets_level_and_residual() {
    let ladder = Ladder::standard();
    let mut m = Model::new(&ladder, 0.5, rates());
    let z1 = ladder.position("zstd:1".parse().unwrap()).unwrap();
    let spec = ladder.rungs()[z1];
    m.observe(
        &Sample { spec, rung: Some(z1), speed: Some(300e6), ratio: 3.5, weight: 1.0, reset: false },
        0,
    );
    assert!((m.speed(z1, 0) / 300e6 - 1.0).abs() < 1e-9);
    assert!((m.ratio(z1, 0) / 3.5 - 1.0).abs() < 1e-9);
    // Other rungs follow the reference shape scaled by the same level.
    let l1 = ladder.position("lz4:1".parse().unwrap()).unwrap();
    let want = 300e6 * reference(ladder.rungs()[l1]).speed / reference(spec).speed;
    assert!((m.speed(l1, 0) / want - 1.0).abs() < 1e-9);
    assert!(m.ratio(l1, 0) > 1.0 && m.ratio(l1, 0) < 3.5);
}

#[test]
fn measured_priors_shape_the_rungs_not_yet_measured() {
    // This machine's zstd:6 costs only 1.5x zstd:1 (the built-in table: 5x) and saves more.
    let (z1, z6) = ("zstd:1".parse().unwrap(), "zstd:6".parse().unwrap());
    let priors = Priors::measured([
        (z1, Reference { speed: 400e6, ratio: 3.0 }),
        (z6, Reference { speed: 400e6 / 1.5, ratio: 3.6 }),
    ])
    .unwrap();
    let ladder = Ladder::standard().with_priors(priors);
    let mut m = Model::new(&ladder, 0.5, rates());
    let (i1, i6) = (ladder.position(z1).unwrap(), ladder.position(z6).unwrap());
    // zstd:1 measured at 200 MB/s, ratio 2.0.
    let seen = Sample {
        spec: z1,
        rung: Some(i1),
        speed: Some(200e6),
        ratio: 2.0,
        weight: 1.0,
        reset: false,
    };
    m.observe(&seen, 0);
    assert!((m.speed(i6, 0) / (200e6 / 1.5) - 1.0).abs() < 1e-9, "{}", m.speed(i6, 0));
    // The ratio keeps the priors' step in ln(ln(ratio)): 3.0 -> 3.6 becomes 2.0 -> 2.0^k.
    let k = 3.6f64.ln() / 3.0f64.ln();
    assert!((m.ratio(i6, 0) / 2.0f64.powf(k) - 1.0).abs() < 1e-6, "{}", m.ratio(i6, 0));
    // The built-in table's model predicts zstd:6 much slower from the same sample.
    let mut b = Model::new(&Ladder::standard(), 0.5, rates());
    b.observe(&seen, 0);
    assert!(b.speed(i6, 0) < m.speed(i6, 0) / 3.0);
}

#[test]
fn link_estimate_is_bytes_over_busy_time() {
    let mut l = LinkEstimator::new(64e6);
    assert_eq!(l.get(), None);
    l.add(0, 1.0, false);
    l.add(10, 0.0, false);
    assert_eq!(l.get(), None);
    for _ in 0..100 {
        l.add(1 << 20, (1 << 20) as f64 / 117e6, true);
    }
    assert!((l.get().unwrap() / 117e6 - 1.0).abs() < 1e-9);
}

#[test]
fn writes_into_a_buffer_after_idle_do_not_inflate_the_link() {
    let mut l = LinkEstimator::new(32e6);
    // Before any backlog: writes absorbed by a buffer look very fast; they are all there is.
    l.add(1 << 20, 1e-4, false);
    assert!(l.get().unwrap() > 1e9);
    // The first backlogged write replaces them.
    l.add(1 << 20, (1 << 20) as f64 / 117e6, true);
    assert!((l.get().unwrap() / 117e6 - 1.0).abs() < 1e-9);
    // Later writes after idle gaps are ignored.
    for _ in 0..50 {
        l.add(1 << 20, 1e-5, false);
        l.add(1 << 20, (1 << 20) as f64 / 117e6, true);
    }
    assert!((l.get().unwrap() / 117e6 - 1.0).abs() < 1e-9);
}

#[test]
fn noisy_measurements_of_one_rung_do_not_drag_the_others() {
    // lz4:1 measured (700 MB/s), then 400 blocks of zstd:1 with wall times 1-2.5x the
    // mean-normalised CPU time. The level and zstd:1's correction used to drift apart
    // without bound (the level e^-13 after 400 blocks), and lz4:1's prediction, relative
    // to the level, with them.
    let ladder = Ladder::standard();
    let rates = Rates { slow: 0.7, fast: 0.15, residual: 0.3, ratio: 0.3, halflife: 4096.0 };
    let mut m = Model::new(&ladder, 0.5, rates);
    let l1 = ladder.position("lz4:1".parse().unwrap()).unwrap();
    let z1 = ladder.position("zstd:1".parse().unwrap()).unwrap();
    let sample = |rung: usize, speed: f64| Sample {
        spec: ladder.rungs()[rung],
        rung: Some(rung),
        speed: Some(speed),
        ratio: 3.0,
        weight: 1.0,
        reset: false,
    };
    for k in 0..5 {
        m.observe(&sample(l1, 700e6), k);
    }
    let mut x: u64 = 12345;
    for k in 5..405u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let u = 1.0 + 1.5 * ((x >> 11) as f64 / (1u64 << 53) as f64);
        m.observe(&sample(z1, 200e6 * 1.75 / u), k);
        let (l, z) = (m.speed(l1, k) / 700e6, m.speed(z1, k) / 200e6);
        // lz4:1 shares the level: zstd:1's noise moves it (and zstd:1's noisy first
        // sample biases it low), but within bounds.
        assert!((0.4..2.0).contains(&l), "block {k}: lz4:1 predicted {l} x its speed");
        // The first blocks of a run may be up to 1.75x the mean; after them, the estimate
        // stays near the mean.
        assert!(k < 25 || (0.6..1.5).contains(&z), "block {k}: zstd:1 predicted {z} x");
    }
    assert!(m.noise() > 0.1 && m.noise() < 0.4, "noise {}", m.noise());
}

#[test]
fn a_rung_known_only_from_shadows_follows_the_measured_rungs_ratio() {
    // zstd:1 is measured on blocks; a shadow put zstd:-4 (no entropy stage, the other ratio
    // group) at 0.7 of zstd:1's ratio on one slice. When the data then compresses worse,
    // zstd:-4's prediction must fall with zstd:1's, not stay at the old absolute figure.
    let ladder = Ladder::standard();
    let mut m = Model::new(&ladder, 0.5, rates());
    let z1 = ladder.position("zstd:1".parse().unwrap()).unwrap();
    let fast = ladder.position("zstd:-4".parse().unwrap()).unwrap();
    let sample = |ratio: f64| Sample {
        spec: ladder.rungs()[z1],
        rung: Some(z1),
        speed: Some(300e6),
        ratio,
        weight: 1.0,
        reset: false,
    };
    for now in 0..4 {
        m.observe(&sample(4.0), now);
    }
    let shadow = Shadow { base: z1, rung: fast, base_ratio: 4.0, ratio: 2.8, faster: Some(2.0) };
    m.observe_shadow(&shadow, 4);
    let before = m.ratio(fast, 5) / m.ratio(z1, 5);
    assert!((before - 0.7).abs() < 0.02, "the shadow's relative ratio: {before}");
    for now in 5..40 {
        m.observe(&sample(2.0), now);
    }
    assert!((m.ratio(z1, 40) - 2.0).abs() < 0.1, "zstd:1 learnt the new data");
    let after = m.ratio(fast, 40);
    assert!(after < m.ratio(z1, 40), "zstd:-4 {after} above zstd:1 {}", m.ratio(z1, 40));
}
