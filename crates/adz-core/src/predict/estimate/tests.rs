use super::*;

const MB: f64 = 1e6;

fn model(threads: usize) -> WriteModel {
    WriteModel::new(1000 << 20, threads, 1 << 20)
}

#[test]
fn formulas_on_known_speeds_and_ratios() {
    let m = model(4);
    let d = m.bytes as f64;
    // 4 x 100 MB/s = 400 MB/s of compression, ratio 4: 400 MB/s raw through a 100 MB/s link.
    let p = RungPerf::new(100.0 * MB, 4.0);
    assert!((m.time_raw(100.0 * MB) - d / 100e6).abs() < 1e-9);
    assert!((m.time_compress(p) - d / 400e6).abs() < 1e-9);
    assert!((m.time_transfer(p, 100.0 * MB) - d / 400e6).abs() < 1e-9);
    // Compression-bound at a fast link: the last frame is added.
    let t = m.time_compressed(p, 1000.0 * MB);
    assert!((t - (d / 400e6 + (1 << 20) as f64 / 4000e6)).abs() < 1e-9, "{t}");
    // Link-bound at a slow link: the first block's compression is added.
    let t = m.time_compressed(p, 10.0 * MB);
    assert!((t - (d / 40e6 + (1 << 20) as f64 / 100e6)).abs() < 1e-9, "{t}");
    assert!((m.speedup(p, 10.0 * MB) - (d / 10e6) / t).abs() < 1e-9);
    // Papio's serial sum is never shorter than the pipeline's max + fill.
    for link in [10.0 * MB, 100.0 * MB, 1000.0 * MB] {
        let serial = m.time_compress(p) + m.time_transfer(p, link);
        assert!(m.time_compressed(p, link) <= serial + 1e-9);
    }
}

/// Workers sharing the cores with the pipeline's path: the compression stage takes the
/// whole write's CPU time over the cores when that is longer than the workers' own time,
/// raw data moves no faster than the path, and neither moves faster than the path's
/// one-thread stages.
#[test]
fn the_path_cost_shares_the_cores_with_the_workers() {
    let d = (1000u64 << 20) as f64;
    let c = 0.5e-9; // 2 GB/s of path per core
    let p = RungPerf::new(500.0 * MB, 3.0);
    // Two workers on two cores: (D/s + D c) / 2 = D (2 ns + 0.5 ns) / 2, not D / (2 s).
    let shared = model(2).on_cores(2, c, 0.0);
    let t = shared.time_compress(p);
    assert!((t - d * (2e-9 + c) / 2.0).abs() < 1e-9, "{t}");
    assert!(t > model(2).time_compress(p));
    // Two workers on eight cores: the workers' own time sets the pace.
    assert!((model(2).on_cores(8, c, 0.0).time_compress(p) - d / 1000e6).abs() < 1e-9);
    // Raw: the link at 1GbE, the path at a link faster than 2 cores / 0.5 ns = 4 GB/s.
    assert!((shared.time_raw(117.0 * MB) - d / 117e6).abs() < 1e-9);
    assert!((shared.time_raw(6000.0 * MB) - d * c / 2.0).abs() < 1e-9);
    // The write time and the speedup follow: slower than without the path at a fast link.
    assert!(shared.time_compressed(p, 6000.0 * MB) > model(2).time_compressed(p, 6000.0 * MB));
    // A one-thread stage of 0.25 ns (4 GB/s) limits raw and a fast rung alike.
    let serial = model(2).on_cores(2, 0.0, 0.25e-9);
    assert!((serial.time_raw(6000.0 * MB) - d * 0.25e-9).abs() < 1e-9);
    let fast = RungPerf::new(8000.0 * MB, 50.0);
    assert!((serial.time_compress(fast) - d * 0.25e-9).abs() < 1e-9);
    assert_eq!(serial.time_compress(p), d / 1000e6, "a slow rung is not limited by it");
    // No path (0, negative or NaN) and no cores given: the workers alone.
    for bad in [0.0, -1.0, f64::NAN] {
        let m = model(2).on_cores(0, bad, bad);
        assert_eq!(m.time_compress(p), model(2).time_compress(p));
        assert_eq!(m.time_raw(6000.0 * MB), d / 6000e6);
    }
}

#[test]
fn decision_flips_to_raw_as_the_link_passes_the_compression_speed() {
    let m = model(2);
    let rungs = [RungPerf::new(300.0 * MB, 2.0)];
    // Aggregate compression 600 MB/s, ratio 2: pays while L f < ... i.e. while the link is
    // slower than what compression feeds, up to about 600 MB/s.
    let mut last = true;
    let mut flipped_at = None;
    for link in [50.0, 100.0, 200.0, 400.0, 550.0, 650.0, 1000.0, 6000.0] {
        let pays = choose(Strategy::Throughput, &m, &rungs, link * MB, 0.97, 0.05).is_some();
        if last && !pays {
            flipped_at = Some(link);
        }
        assert!(!pays || last, "compress again at {link} MB/s after raw");
        last = pays;
    }
    let at = flipped_at.expect("raw at some speed");
    assert!((550.0..=650.0).contains(&at), "flips at {at} MB/s");
}

/// A write that its one-thread path stage (the reader) holds to 100 MB/s takes as long raw as
/// compressed through a 125 MB/s link: S1 then starts compressed, since the smaller output
/// costs no time (it used to take raw, unless compression was strictly faster).
#[test]
fn a_write_bound_by_its_path_starts_compressed() {
    let m = model(2).on_cores(2, 10e-9, 10e-9);
    let rungs = [RungPerf::new(300.0 * MB, 2.5)];
    let link = 125.0 * MB;
    let (raw, zip) = (m.time_raw(link), m.time_compressed(rungs[0], link));
    assert!(zip >= raw && zip <= raw * 1.05, "a tie within the margin: {raw} {zip}");
    assert_eq!(choose(Strategy::Throughput, &m, &rungs, link, 0.97, 0.05), Some(0));
    // Clearly slower than raw (a link far faster than compression): raw.
    let slow = [RungPerf::new(30.0 * MB, 2.5)];
    assert_eq!(choose(Strategy::Throughput, &model(2), &slow, 6000.0 * MB, 0.97, 0.05), None);
}

#[test]
fn strategies_pick_their_rungs() {
    let m = model(4);
    let rungs = [
        RungPerf::new(700.0 * MB, 2.1),
        RungPerf::new(300.0 * MB, 2.9),
        RungPerf::new(60.0 * MB, 3.4),
        RungPerf::new(20.0 * MB, 3.8),
    ];
    let link = 117.0 * MB;
    // S2: fastest-ratio rung still as fast as the link: 4 x 60 = 240 >= 117; 80 < 117.
    assert_eq!(choose(Strategy::KeepPace, &m, &rungs, link, 0.97, 0.05), Some(2));
    // S3 with F = 1.5 allows 78 MB/s: 4 x 20 = 80.
    assert_eq!(choose(Strategy::Prolong(1.5), &m, &rungs, link, 0.97, 0.05), Some(3));
    // S1: min(4 s, L f): 2.1 L = 246, 2.9 L = 339, min(240, 398) = 240, 80 -> rung 1.
    assert_eq!(choose(Strategy::Throughput, &m, &rungs, link, 0.97, 0.05), Some(1));
    // Nothing saves 3 %: raw.
    let flat = [RungPerf::new(700.0 * MB, 1.01)];
    assert_eq!(choose(Strategy::Throughput, &m, &flat, 10.0 * MB, 0.97, 0.05), None);
    assert_eq!(choose(Strategy::KeepPace, &m, &flat, 10.0 * MB, 0.97, 0.05), None);
}

#[test]
fn ratios_a_sample_cannot_tell_apart_start_at_the_faster_rung() {
    // The netCDF-4 file of the real corpus at 117 MB/s: a sample mostly of random bytes
    // gives zstd:3 and zstd:6 the same ratio and both keep the link full, so zstd:6 (1.6x
    // slower, 0.01 % more ratio) used to be the start; on the float blocks of the file's
    // start it could not keep up.
    let m = model(2);
    let rungs = [RungPerf::new(1580.0 * MB, 1.2598), RungPerf::new(985.0 * MB, 1.2600)];
    for s in [Strategy::Throughput, Strategy::KeepPace] {
        assert_eq!(choose(s, &m, &rungs, 117.0 * MB, 0.97, 0.05), Some(0), "{s:?}");
    }
    // A ratio more than 1 % better still wins.
    let rungs = [RungPerf::new(1580.0 * MB, 1.25), RungPerf::new(985.0 * MB, 1.27)];
    assert_eq!(choose(Strategy::Throughput, &m, &rungs, 117.0 * MB, 0.97, 0.05), Some(1));
}

#[test]
fn minimax_regret_weighs_the_slowest_and_fastest_links() {
    let m = model(2);
    let rungs = [
        RungPerf::new(800.0 * MB, 2.1),
        RungPerf::new(350.0 * MB, 3.0),
        RungPerf::new(8.0 * MB, 3.8),
    ];
    // 2 threads: the fastest rung compresses 1.6 GB/s, 7.5x slower than a 12 GB/s link;
    // raw loses only 3x (the best ratio) at the slowest link: raw is the safer start.
    let (choice, regret) = minimax_regret(Strategy::Throughput, &m, &rungs, &LINK_GRID, 0.97);
    assert_eq!(choice, None);
    assert!((regret - 2.0).abs() < 0.1, "{regret}");
    // 16 threads: a fast rung loses little at any link, raw 2-3x at slow ones.
    let m16 = model(16);
    let (choice, regret) = minimax_regret(Strategy::Throughput, &m16, &rungs, &LINK_GRID, 0.97);
    assert!(matches!(choice, Some(0) | Some(1)), "{choice:?}");
    assert!(regret < 1.0, "{regret}");
    // S2 never picks the slow rung: it misses the time bound by 6x at 117 MB/s already.
    let (choice, _) = minimax_regret(Strategy::KeepPace, &m16, &rungs, &LINK_GRID, 0.97);
    assert_ne!(choice, Some(2));
    // Incompressible data: raw, no regret.
    let flat = [RungPerf::new(2000.0 * MB, 1.0)];
    assert_eq!(minimax_regret(Strategy::Throughput, &m, &flat, &LINK_GRID, 0.97), (None, 0.0));
}

#[test]
fn s2_and_s3_take_their_target_time() {
    let m = model(4);
    let link = 117.0 * MB;
    let raw = m.time_raw(link);
    // Every rung far faster than the link: the start's own time is short, but the
    // controller slows down to the target, so that is the write's time.
    let fast = [RungPerf::new(500.0 * MB, 3.0)];
    let t1 = m.time_compressed(fast[0], link);
    assert!(t1 < 0.5 * raw);
    let xz9 = RungPerf::new(5.0 * MB, 3.5);
    assert_eq!(write_time(Strategy::Throughput, &m, &fast, Some(0), link, Some(xz9)), t1);
    assert_eq!(write_time(Strategy::KeepPace, &m, &fast, Some(0), link, Some(xz9)), raw);
    assert_eq!(target_time(Strategy::Prolong(2.0), &m, link), Some(2.0 * raw));
    let t3 = write_time(Strategy::Prolong(2.0), &m, &fast, Some(0), link, Some(xz9));
    assert_eq!(t3, 2.0 * raw);
    // Unless no rung is that slow (at 10 MB/s even the slowest rung, 4 x 400 MB/s, is
    // link-bound): then the longer of the start's and the slowest rung's time.
    let slow_link = 10.0 * MB;
    let quick = RungPerf::new(400.0 * MB, 2.5);
    let t = write_time(Strategy::KeepPace, &m, &fast, Some(0), slow_link, Some(quick));
    assert_eq!(t, m.time_compressed(quick, slow_link));
    assert!(t > m.time_compressed(fast[0], slow_link) && t < m.time_raw(slow_link));
    // Raw chosen (nothing keeps pace): the target, which is raw's time.
    assert_eq!(write_time(Strategy::KeepPace, &m, &[], None, link, Some(xz9)), raw);
}

#[test]
fn the_start_is_extrapolated_to_just_meet_the_target() {
    let m = model(4);
    let measured = [RungPerf::new(700.0 * MB, 2.1), RungPerf::new(300.0 * MB, 2.9)];
    // Guesses for three slower candidates: 4 x 60 = 240, 4 x 20 = 80, 4 x 5 = 20 MB/s.
    let guesses = [60.0, 20.0, 5.0].map(|s| RungPerf::new(s * MB, 2.9));
    let s2 = Strategy::KeepPace;
    // At 117 MB/s: 240 keeps pace, 80 does not.
    assert_eq!(extrapolate_start(s2, &m, &measured, &guesses, 117.0 * MB, 0.97), Some(0));
    // At 50 MB/s: 80 keeps pace, 20 does not; S3 at F = 3 allows 16.7 MB/s: 20 does.
    assert_eq!(extrapolate_start(s2, &m, &measured, &guesses, 50.0 * MB, 0.97), Some(1));
    let s3 = Strategy::Prolong(3.0);
    assert_eq!(extrapolate_start(s3, &m, &measured, &guesses, 50.0 * MB, 0.97), Some(2));
    // A link so fast that a measured rung misses the target: the measured choice stands.
    assert_eq!(extrapolate_start(s2, &m, &measured, &guesses, 1500.0 * MB, 0.97), None);
    // S1 has no target; nothing measured saves: nothing to extrapolate from.
    let s1 = Strategy::Throughput;
    assert_eq!(extrapolate_start(s1, &m, &measured, &guesses, 50.0 * MB, 0.97), None);
    let flat = [RungPerf::new(700.0 * MB, 1.0)];
    assert_eq!(extrapolate_start(s2, &m, &flat, &guesses, 50.0 * MB, 0.97), None);
    // No candidate meets it (a link faster than every guess): None.
    assert_eq!(extrapolate_start(s2, &m, &measured, &guesses[1..], 117.0 * MB, 0.97), None);
}

/// Data of one kind, or kinds measured alike: step by step, the write takes the
/// averages' time (the formula's max of the stages plus a block's fill), within 1 %.
#[test]
fn one_kind_step_by_step_takes_the_formulas_time() {
    let layout = Layout { steps: (0..1000).map(|i| [2u8, 3][i % 7 / 4]).collect() };
    for (threads, cpus, c, c1) in [(4, 0, 0.0, 0.0), (2, 2, 0.22e-9, 0.2e-9)] {
        let m = model(threads).on_cores(cpus, c, c1);
        let kinded = m.clone().with_layout(Some(layout.clone()));
        for p in [RungPerf::new(100.0 * MB, 3.0), RungPerf::new(2000.0 * MB, 1.5)] {
            let same = p.with_kinds(&[(2, p.speed, p.ratio), (3, p.speed, p.ratio)]);
            for link in [50.0 * MB, 117.0 * MB, 1200.0 * MB, 6000.0 * MB] {
                let (formula, steps) =
                    (m.time_compressed(p, link), kinded.time_compressed(same, link));
                assert!(
                    (steps / formula - 1.0).abs() < 0.01,
                    "{threads} {p:?} {link}: {steps} vs {formula}"
                );
                // A rung not measured by kind takes the formula, layout or not.
                assert_eq!(kinded.time_compressed(p, link), formula);
            }
        }
    }
}

/// Sections of two kinds much longer than the pipeline's buffers: one compresses slowly
/// (compression-bound), one is incompressible and fast (link-bound). Each section's slower
/// stage sets its pace, so the write takes the sum of each kind's own time, not the max
/// of the whole write's averages, which lets the slow kind borrow the fast kind's spare
/// compression time.
#[test]
fn long_sections_of_two_kinds_take_each_kinds_time() {
    let m = model(2);
    let link = 300.0 * MB;
    let (slow, fast) = ((2u8, 100.0 * MB, 3.0), (4u8, 10_000.0 * MB, 1.0));
    // Half and half by bytes: the averages of the whole write.
    let pooled =
        RungPerf::new(1.0 / (0.5 / slow.1 + 0.5 / fast.1), 1.0 / (0.5 / slow.2 + 0.5 / fast.2));
    let p = pooled.with_kinds(&[slow, fast]);
    let half = m.bytes as f64 / 2.0;
    // Compression-bound, then link-bound.
    let each = half / (2.0 * slow.1) + half / link;
    // Sections of 100 blocks: the buffers (6 blocks) carry little across.
    let long = Layout { steps: (0..1000).map(|i| if i / 100 % 2 == 0 { 2 } else { 4 }).collect() };
    let t = m.clone().with_layout(Some(long)).time_compressed(p, link);
    let averages = m.time_compressed(pooled, link);
    assert!((t / each - 1.0).abs() < 0.05, "{t} vs {each}");
    assert!(t > 1.3 * averages, "{t} vs {averages}");
    // Kinds alternating every block: the buffers smooth them, and the averages hold.
    let short = Layout { steps: (0..1000).map(|i| if i % 2 == 0 { 2 } else { 4 }).collect() };
    let t = m.with_layout(Some(short)).time_compressed(p, link);
    assert!((t / averages - 1.0).abs() < 0.05, "{t} vs {averages}");
}

/// The layout from the probes' map: each step takes the nearest probe's class, the map is
/// repeated past the bytes it covers, a map of one kind gives none, and a long write is
/// reckoned in at most MAX_STEPS steps.
#[test]
fn the_layout_follows_the_nearest_probe() {
    let mib = 1u64 << 20;
    // Probes at 0.5, 1.5, ... MiB over 8 MiB: 2 2 4 4 4 2 2 2.
    let map: Vec<(u64, u8)> = [2, 2, 4, 4, 4, 2, 2, 2]
        .iter()
        .enumerate()
        .map(|(i, &c)| (i as u64 * mib + mib / 2, c))
        .collect();
    let l = Layout::from_map(&map, 8 * mib, 8 * mib, mib).unwrap();
    assert_eq!(l.steps, [2, 2, 4, 4, 4, 2, 2, 2]);
    // A writer's 8 MiB of a 16 MiB write: the map again for the rest.
    let l = Layout::from_map(&map, 8 * mib, 16 * mib, mib).unwrap();
    assert_eq!(l.steps, [2, 2, 4, 4, 4, 2, 2, 2, 2, 2, 4, 4, 4, 2, 2, 2]);
    // Probes sparser than the blocks: the nearest one, ties to the earlier.
    let sparse = [(0, 2u8), (4 * mib, 4)];
    let l = Layout::from_map(&sparse, 8 * mib, 8 * mib, mib).unwrap();
    assert_eq!(l.steps, [2, 2, 4, 4, 4, 4, 4, 4]);
    // One kind, no map, an empty write: nothing to reckon step by step.
    assert_eq!(Layout::from_map(&[(0, 2), (mib, 2)], 2 * mib, 8 * mib, mib), None);
    assert_eq!(Layout::from_map(&[], 8 * mib, 8 * mib, mib), None);
    assert_eq!(Layout::from_map(&map, 8 * mib, 0, mib), None);
    // 1 TiB in 1 MiB blocks: 4096 steps of 256 blocks.
    let l = Layout::from_map(&map, 8 * mib, 1 << 40, mib).unwrap();
    assert_eq!(l.steps.len(), MAX_STEPS);
}
