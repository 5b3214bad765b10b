//! The energy strategy (`-s energy`, decision 0046) in the pipeline simulator: it settles
//! where the data model's true energy per byte (CPU seconds x watts + stored bytes x storage
//! energy) is least, within its time bound.

mod common;

use adz_control::EnergyCost;
use common::*;

const WATTS: f64 = EnergyCost::DEFAULT_CORE_WATTS;

fn energy(storage_joules_per_gb: f64, max_slowdown: f64) -> Strategy {
    let years = 1.0;
    Strategy::Energy(EnergyCost::new(WATTS, storage_joules_per_gb, years, max_slowdown))
}

/// The true joules per raw byte of compressing every block of `data` at `c` (one thread's
/// CPU time per byte at `WATTS`, plus the stored share at `storage` J/GB).
fn true_joules(data: &DataModel, c: CodecSpec, storage: f64) -> f64 {
    let p = data.perf(c);
    WATTS / p.speed + storage / 1e9 / p.ratio.max(1.0)
}

/// The rung (index into the standard ladder) with the least true energy among those fast
/// enough for `slowdown` at `link` with `threads`, and its energy.
fn least_energy(
    data: &DataModel,
    storage: f64,
    link: f64,
    threads: usize,
    slowdown: f64,
) -> (usize, f64) {
    let ladder = Ladder::standard();
    (1..ladder.len())
        .filter(|&r| threads as f64 * data.perf(ladder.rungs()[r]).speed * slowdown >= link)
        .map(|r| (r, true_joules(data, ladder.rungs()[r], storage)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
}

/// The energy blocks `from..` of a simulated write took, joules per raw byte: the workers'
/// time (no wall noise: CPU time) at `WATTS`, and their stored bytes at `storage` J/GB.
fn run_joules(rep: &SimReport, from: usize, storage: f64) -> f64 {
    let bs = &rep.blocks[from..];
    let cpu: f64 =
        bs.iter().filter(|b| b.decision.codec != CodecSpec::NONE).map(|b| b.finish - b.start).sum();
    let raw: u64 = bs.iter().map(|b| b.raw).sum();
    let stored: u64 = bs.iter().map(|b| b.stored).sum();
    (cpu * WATTS + stored as f64 * storage / 1e9) / raw as f64
}

fn settle(strategy: Strategy, data: &DataModel, link: f64, threads: usize) -> SimReport {
    let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
    let sim = SimConfig::new(threads, link);
    let (ctl, rep) = run(cfg, &sim, &[Segment::new(300, data.clone())]);
    eprintln!("{}: {}\n  {}", data.name(), ctl.status(), names(&rep, 0, 300));
    rep
}

/// The rung the last 100 blocks used most.
fn settled_rung(rep: &SimReport) -> CodecSpec {
    let mut count = std::collections::BTreeMap::new();
    for b in &rep.blocks[200..] {
        *count.entry(b.decision.codec.to_string()).or_insert(0) += 1;
    }
    let (c, _) = count.into_iter().max_by_key(|x| x.1).unwrap();
    spec(&c)
}

#[test]
fn it_settles_at_the_least_energy_rung_whatever_storage_costs() {
    // Cheap storage (tape-like, 50 J per GB-year) makes the CPU dominate: a fast rung. The
    // default DKRZ figure (94.6 kJ per GB-year) makes storage dominate: it climbs to where a
    // rung's CPU costs about what its extra ratio saves. A wrong objective (no CPU term, no
    // storage term, the ratio where the stored share belongs) lands elsewhere in one of them.
    let data = text();
    let threads = 2;
    let ladder = Ladder::standard();
    for storage in [50.0, 2_000.0, EnergyCost::DEFAULT_STORAGE_JOULES_PER_GB_YEAR, 1e7] {
        let (best, e_best) = least_energy(&data, storage, GBE, threads, f64::INFINITY);
        let rep = settle(energy(storage, f64::INFINITY), &data, GBE, threads);
        let at = settled_rung(&rep);
        let e_at = true_joules(&data, at, storage);
        let e_run = run_joules(&rep, 200, storage);
        eprintln!(
            "storage {storage} J/GB: least-energy rung {} ({:.3e} J/B), settled at {at} \
             ({:.3e} J/B), run {:.3e} J/B",
            ladder.rungs()[best],
            e_best,
            e_at,
            e_run
        );
        assert!(
            e_at <= e_best * 1.05,
            "storage {storage}: settled at {at}, {e_at:.3e} J/B vs {} {e_best:.3e}",
            ladder.rungs()[best]
        );
        assert!(e_run <= e_best * 1.08, "storage {storage}: the run took {e_run:.3e} J/B");
    }
    // And the two ends are far apart: cheap storage is a fast rung, dear storage a slow one.
    let cheap = least_energy(&data, 50.0, GBE, threads, f64::INFINITY).0;
    let dear = least_energy(&data, 1e7, GBE, threads, f64::INFINITY).0;
    assert!(dear >= cheap + 6, "{cheap} {dear}");
}

#[test]
fn free_storage_sends_raw_with_a_few_sampled_blocks() {
    let rep = settle(energy(0.0, f64::INFINITY), &text(), GBE, 2);
    let compressed =
        rep.blocks[100..].iter().filter(|b| b.decision.codec != CodecSpec::NONE).count();
    // One block in 16 is compressed to keep the data measured.
    assert!((8..=20).contains(&compressed), "{compressed} of 200 compressed");
}

#[test]
fn the_time_bound_holds_and_binds() {
    // Dear storage wants the slowest rungs; the default bound (2x the raw write) stops it at
    // a least-energy rung fast enough for it (the rungs that meet it store within the tie of
    // each other here), and the write takes at most about twice as long.
    let data = text();
    let threads = 2;
    let storage = 1e7;
    let slowdown = EnergyCost::DEFAULT_MAX_SLOWDOWN;
    let (free, _) = least_energy(&data, storage, GBE, threads, f64::INFINITY);
    let (bounded, e_bounded) = least_energy(&data, storage, GBE, threads, slowdown);
    assert!(bounded < free, "the bound should bind here: {bounded} {free}");
    let rep = settle(energy(storage, slowdown), &data, GBE, threads);
    let at = settled_rung(&rep);
    assert!(true_joules(&data, at, storage) <= e_bounded * 1.05, "settled at {at}");
    for b in &rep.blocks[100..] {
        let speed = threads as f64 * data.perf(b.decision.codec).speed;
        assert!(speed * slowdown >= GBE, "block {} at {} is too slow", b.seq, b.decision.codec);
    }
    let raw_time = rep.blocks[100..].iter().map(|b| b.raw).sum::<u64>() as f64 / GBE;
    let took = rep.blocks[299].write_end - rep.blocks[99].write_end;
    assert!(took <= raw_time * slowdown * 1.05, "took {took:.2} s, raw {raw_time:.2} s");
}

#[test]
fn a_fast_link_mixes_when_no_rung_keeps_within_the_bound() {
    // 10GbE on one slow core: no rung reaches link / 2, so with storage dear it compresses
    // the share of blocks the bound allows and sends the rest raw.
    let data = text().with_speed_scale(0.2);
    let rep = settle(energy(1e7, 2.0), &data, TEN_GBE, 1);
    let tail = &rep.blocks[100..];
    let raw = tail.iter().filter(|b| b.decision.codec == CodecSpec::NONE).count();
    assert!(raw > 0 && raw < tail.len(), "{raw} of {} raw", tail.len());
    let raw_time = tail.iter().map(|b| b.raw).sum::<u64>() as f64 / TEN_GBE;
    let took = rep.blocks[299].write_end - rep.blocks[99].write_end;
    assert!(took <= raw_time * 2.0 * 1.1, "took {took:.3} s, raw {raw_time:.3} s");
}

#[test]
fn the_bound_counts_from_the_raw_write_the_cpus_allow() {
    // A 6000 MB/s link that the pipeline cannot fill even with raw blocks (it moves them at
    // 1 GB/s): the raw write takes the raw path's time, and twice that leaves room to compress
    // every block (lz4 at 2.6 GB/s on two workers). Reckoned from the link instead, the bound
    // would send most blocks raw and store more, for a write no faster.
    let (compressed, time) = cpu_bound_fast_link(energy(1e6, 2.0), 200, 1e9);
    assert!(compressed >= 180, "{compressed} of 200 compressed");
    assert!(time <= 2.0, "{time:.2} x the raw write");
}
