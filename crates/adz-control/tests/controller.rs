//! Controller behaviour, checked with the deterministic pipeline simulator (`adz_control::sim`)
//! and with made-up measurements. No threads, no sleeps, no clock.

use std::time::Duration;

use adz_control::sim::{DataModel, Perf, Segment, SimBlock, SimConfig, SimReport};
use adz_control::{
    reference, BlockContext, BlockMeasurement, ClassedController, CodecSpec, Controller,
    ControllerConfig, Decision, Dtype, FilterSpec, Filters, Hint, Ladder, Link, Mode, Reason,
    SinkMeasurement, Status, Strategy,
};
use proptest::prelude::*;
use proptest::strategy::Strategy as Strategy2;

const GBE: f64 = 117e6;
const TEN_GBE: f64 = 1200e6;
const FDR4: f64 = 6000e6;

fn spec(s: &str) -> CodecSpec {
    s.parse().unwrap()
}

fn text() -> DataModel {
    DataModel::monotone("text", &Ladder::standard(), 0.8, 1.0, 0.1)
}

/// Target of a strategy for a rung with (true) ratio `ratio`.
fn target(strategy: Strategy, link: f64, ratio: f64) -> f64 {
    strategy.target_speed(link, ratio)
}

/// True headroom of a rung on `data`: aggregate speed / target.
fn headroom(
    data: &DataModel,
    strategy: Strategy,
    link: f64,
    threads: usize,
    rung: CodecSpec,
) -> f64 {
    let p = data.perf(rung);
    threads as f64 * p.speed / target(strategy, link, p.ratio)
}

/// The write throughput of a rung on `data` (raw bytes/s), S1's objective: compression or the
/// link, whichever is slower, `min(N S, L f)`.
fn write_throughput(data: &DataModel, link: f64, threads: usize, c: CodecSpec) -> f64 {
    let p = data.perf(c);
    (threads as f64 * p.speed).min(link * p.ratio)
}

/// The codec rung with the highest write throughput on `data`, and that throughput.
fn fastest_write(data: &DataModel, link: f64, threads: usize) -> (usize, f64) {
    let ladder = Ladder::standard();
    (1..ladder.len())
        .map(|r| (r, write_throughput(data, link, threads, ladder.rungs()[r])))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
}

/// True if some codec rung compresses at least as fast as the strategy's target.
fn some_rung_keeps_up(data: &DataModel, strategy: Strategy, link: f64, threads: usize) -> bool {
    let l = Ladder::standard();
    (1..l.len()).any(|r| headroom(data, strategy, link, threads, l.rungs()[r]) >= 1.0)
}

/// The rung the controller should settle at. S2/S3: the last one fast enough (None: no codec
/// is). S1: the one that writes fastest.
fn best_rung(data: &DataModel, strategy: Strategy, link: f64, threads: usize) -> Option<usize> {
    if strategy == Strategy::Throughput {
        return Some(fastest_write(data, link, threads).0);
    }
    let ladder = Ladder::standard();
    (1..ladder.len())
        .rev()
        .find(|&r| headroom(data, strategy, link, threads, ladder.rungs()[r]) >= 1.0)
}

fn run(cfg: ControllerConfig, sim: &SimConfig, segments: &[Segment]) -> (Controller, SimReport) {
    let mut ctl = Controller::new(cfg);
    let report = sim.run(&mut ctl, segments);
    (ctl, report)
}

fn names(report: &SimReport, from: usize, to: usize) -> String {
    let mut out = Vec::new();
    let mut last = None;
    let mut count = 0;
    for b in &report.blocks[from..to] {
        let c = b.decision.codec;
        if Some(c) == last {
            count += 1;
        } else {
            if let Some(l) = last {
                out.push(format!("{l}x{count}"));
            }
            last = Some(c);
            count = 1;
        }
    }
    if let Some(l) = last {
        out.push(format!("{l}x{count}"));
    }
    out.join(" ")
}

fn pos(c: CodecSpec) -> usize {
    Ladder::standard().position(c).unwrap_or(0)
}

/// S2/S3: the time blocks `from..` of a write took, over the time their target gives them.
fn time_vs_target(rep: &SimReport, strategy: Strategy, link: f64, from: usize) -> f64 {
    target(strategy, link, 1.0) / rep.throughput_of(from, rep.blocks.len())
}

/// The rung logic alone: S2's and S3's schedule off (the default), so that on a noiseless
/// stream the lane holds the slowest rung that meets the target (with the schedule on, a
/// write ahead of it also visits slower rungs on purpose: see
/// `s2_and_s3_take_the_targets_time_on_noisy_data`).
fn rungs_only(cfg: ControllerConfig) -> ControllerConfig {
    cfg.with_schedule(0.0)
}

/// S2's and S3's schedule on, over 8 blocks plus the pipeline's depth.
fn scheduled(cfg: ControllerConfig) -> ControllerConfig {
    cfg.with_schedule(8.0)
}

/// S2/S3 with the schedule on: write `segments` through a link of `link` bytes/s, check that
/// blocks `from..` take their target's time within 5 %, and return the report.
fn on_schedule(
    cfg: &ControllerConfig,
    sim: &SimConfig,
    segments: &[Segment],
    link: f64,
    from: usize,
) -> SimReport {
    on_schedule_within(cfg, sim, segments, link, from, 1.05)
}

/// [`on_schedule`] with the write allowed up to `late` times its target's time.
fn on_schedule_within(
    cfg: &ControllerConfig,
    sim: &SimConfig,
    segments: &[Segment],
    link: f64,
    from: usize,
    late: f64,
) -> SimReport {
    let strategy = cfg.strategy;
    let (_, rep) = run(scheduled(cfg.clone()), sim, segments);
    let t = time_vs_target(&rep, strategy, link, from);
    assert!((0.95..=late).contains(&t), "{strategy} {link}: {t:.3} of the target time");
    rep
}

/// The rung a decision's lane is at: a blend block (S2/S3, [`Reason::Blend`]) goes to the next
/// rung on purpose, so that two rungs together take the target's time.
fn lane_of(d: Decision) -> CodecSpec {
    if d.reason == Reason::Blend {
        Ladder::standard().rungs()[pos(d.codec) - 1]
    } else {
        d.codec
    }
}

/// S1's margin (`ControllerConfig::throughput_margin`): rungs that write within it of the
/// fastest count as equally fast.
const MARGIN: f64 = 0.05;

/// True if rung `c` is fast enough for the strategy on `data` (raw always is). For S1: it
/// writes within twice the margin of the fastest rung (a rung slower than `L f` can be the
/// fastest write, so the S2/S3 test would be wrong).
fn ok(data: &DataModel, strategy: Strategy, link: f64, threads: usize, c: CodecSpec) -> bool {
    if c == CodecSpec::NONE {
        return true;
    }
    if strategy == Strategy::Throughput {
        let best = fastest_write(data, link, threads).1;
        return write_throughput(data, link, threads, c) * (1.0 + 2.0 * MARGIN) >= best;
    }
    headroom(data, strategy, link, threads, c) >= 1.0
}

/// Where the controller may settle: the best rung, or a faster one still inside the dead band
/// (it does not spend more effort for less than 10 % of headroom). For S1: any rung that
/// writes within the margin of the fastest.
fn settled(data: &DataModel, strategy: Strategy, link: f64, threads: usize, c: CodecSpec) -> bool {
    if strategy == Strategy::Throughput {
        let best = fastest_write(data, link, threads).1;
        return write_throughput(data, link, threads, c) * (1.0 + MARGIN) >= best;
    }
    let best = best_rung(data, strategy, link, threads);
    let hr = headroom(data, strategy, link, threads, c);
    // A faster rung than the best that stores the same bytes, to within the 0.25 % S2/S3
    // ask of more effort (the reference shape has zstd:15 and zstd:16 at one ratio; the
    // model data 0.1 % apart): the slower one buys nothing, and the lane blends with the next
    // rung that does.
    let ladder = Ladder::standard();
    let ratio = |k: usize| data.perf(ladder.rungs()[k]).ratio;
    let plateau = best.is_some_and(|b| {
        let at = pos(c);
        hr >= 1.0 && at < b && (at..=b).all(|k| ratio(k) <= ratio(at) * 1.0025)
    });
    Some(pos(c)) == best || (1.0..1.1).contains(&hr) || plateau
}

/// The first block from which the next `window` decisions are all settled.
fn converged_at(
    rep: &SimReport,
    data: &DataModel,
    strategy: Strategy,
    link: f64,
    from: usize,
    window: usize,
) -> Option<usize> {
    let n = rep.blocks.len();
    (from..n.saturating_sub(window)).find(|&k| {
        rep.blocks[k..k + window]
            .iter()
            .all(|b| settled(data, strategy, link, rep.threads, lane_of(b.decision)))
    })
}

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

/// On few cores moving raw data costs CPU outside the workers too (the application's reader,
/// the writer's copies): then even all-raw cannot feed a 6000 MB/s link, frames seldom wait for
/// the sink, and every compressed block only slows the write. The workers' own raw speed does
/// not show that; the sink's backlog does. Once the sink reports it is starved, the mix must
/// stop compressing; once raw data backs the link up again, the mix returns.
#[test]
fn a_starved_sink_stops_the_mix_and_a_busy_one_restarts_it() {
    let (threads, link) = (2, FDR4);
    let data = text();
    let mut sim = SimConfig::new(threads, link);
    sim.buffers = 8;
    let cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(link), threads);
    let (mut ctl, rep) = run(cfg, &sim, &[Segment::new(300, data.clone())]);
    assert!(matches!(ctl.status().mode, Mode::Mix { .. }), "{:?}", ctl.status().mode);
    let mut seq_offset = rep.blocks.len() as u64 * (1 << 20);
    let mut phase = |ctl: &mut Controller, backlogged: bool| -> usize {
        let mut compressed = 0;
        for _ in 0..200 {
            let d = ctl.next_block(&BlockContext {
                raw_offset: seq_offset,
                raw_len: 1 << 20,
                hints: &[],
                class: 0,
            });
            seq_offset += 1 << 20;
            let raw = d.codec == CodecSpec::NONE;
            compressed += usize::from(!raw);
            let stored = if raw { 1 << 20 } else { 1 << 19 };
            ctl.record_block(&BlockMeasurement {
                decision: d,
                raw_len: 1 << 20,
                stored_len: stored,
                stored_raw: raw,
                wall: Duration::from_micros(if raw { 130 } else { 1500 }),
                cpu: Duration::from_micros(if raw { 130 } else { 1500 }),
            });
            ctl.record_sink(&SinkMeasurement {
                bytes: stored,
                busy: Duration::from_secs_f64(stored as f64 / link),
                backlogged,
                ..Default::default()
            });
        }
        compressed
    };
    let starved = phase(&mut ctl, false);
    assert!(starved <= 10, "a starved sink: {starved} of 200 blocks still compressed");
    let busy = phase(&mut ctl, true);
    assert!(busy >= 20, "the link backed up again: only {busy} of 200 blocks compressed");
}

/// A made-up pipeline shaped like `adz compress -s throughput --throttle 6000MB/s` on 2 cores
/// (256 MiB of text): the workers' raw blocks take 42 us (a checksum: 25 GB/s a thread), but
/// the whole pipeline moves raw blocks at only `pipe_raw` (the reader, the hand-offs, the
/// writer's copies; 5.9 GB/s measured), about the 6000 MB/s link; an lz4:50 block takes 800 us of a worker's two
/// cores' pipeline (ratio 1.7). The throttle's burst credit and the ordered writer make nearly
/// every frame look backlogged, with writes faster than the link. Returns the blocks
/// compressed and the write's time, in seconds, relative to all raw.
fn cpu_bound_fast_link(strategy: Strategy, blocks: usize, pipe_raw: f64) -> (usize, f64) {
    const MIB: u64 = 1 << 20;
    let (threads, link) = (2, FDR4);
    let comp = Duration::from_micros(800);
    let mut ctl = Controller::new(ControllerConfig::new(strategy, Link::Fixed(link), threads));
    // The pipeline's clock (CPU: both cores) and the sink's.
    let (mut cpu, mut sink_end) = (0.0f64, 0.0f64);
    let mut compressed = 0;
    for k in 0..blocks {
        let ctx = BlockContext {
            raw_offset: k as u64 * MIB,
            raw_len: MIB as usize,
            hints: &[],
            class: 0,
        };
        let d = ctl.next_block(&ctx);
        let raw = d.codec == CodecSpec::NONE;
        compressed += usize::from(!raw);
        let stored = if raw { MIB } else { (MIB as f64 / 1.7) as u64 };
        let t = if raw { Duration::from_micros(42) } else { comp };
        let cpu_before = cpu;
        // Every block takes the raw path (read, hand-offs, checksum); a compressed one also
        // takes a worker's compression.
        cpu += MIB as f64 / pipe_raw + if raw { 0.0 } else { comp.as_secs_f64() / threads as f64 };
        ctl.record_block(&BlockMeasurement {
            decision: d,
            raw_len: MIB,
            stored_len: stored,
            stored_raw: raw,
            wall: t,
            cpu: t,
        });
        let bytes = stored + 48;
        let start = cpu.max(sink_end);
        let waited = if k == 0 { 0.0 } else { start - sink_end };
        // Burst credit: the throttle takes a frame in half its link time after an idle gap.
        let busy = bytes as f64 / link / 2.0;
        sink_end = start + busy;
        // The pipeline's CPU time: both cores, for as long as the block held the pipeline.
        let spent = threads as f64 * (cpu - cpu_before);
        ctl.record_sink(&SinkMeasurement {
            bytes,
            busy: Duration::from_secs_f64(busy),
            backlogged: raw,
            raw: MIB,
            waited: Duration::from_secs_f64(waited),
            cpu: Duration::from_secs_f64(spent),
        });
    }
    let all_raw = blocks as f64 * (MIB as f64 / pipe_raw).max((MIB + 48) as f64 / link);
    (compressed, sink_end / all_raw)
}

/// Blocks of one kind of data for [`cpu_and_link`].
struct Stretch {
    blocks: usize,
    data: DataModel,
}

/// A made-up two-core pipeline where moving a raw block costs the pipeline's CPUs
/// `2 MiB / pipe_raw` CPU-seconds (the reader, the copies, the checksums, the writer) and
/// compressing it a worker's `MiB / speed` on top, with the CPUs and the link each a queue
/// and `2 N + 2` buffers between them. A worker shares the cores with the raw path, so a
/// block takes 2.2x its CPU time in wall time (as measured on 2 cores at 1200 MB/s: 5 ms for
/// 2 ms of lz4:1). Every measurement arrives at once. With `report_cpu`
/// the sink reports the pipeline's CPU time, as the real pipeline does. Returns the codecs of
/// the blocks compressed in each stretch, the write's time, and the time all raw would take.
fn cpu_and_link(
    link: f64,
    pipe_raw: f64,
    stretches: &[Stretch],
    report_cpu: bool,
) -> (Vec<Vec<CodecSpec>>, f64, f64) {
    const MIB: u64 = 1 << 20;
    const WALL_PER_CPU: f64 = 2.2;
    let (threads, cpus, buffers) = (2usize, 2.0f64, 6usize);
    let cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(link), threads)
        .with_cpus(cpus as usize);
    let mut ctl = Controller::new(cfg);
    let path = cpus * MIB as f64 / pipe_raw;
    let (mut cpu_clock, mut sink_end) = (0.0f64, 0.0f64);
    let mut ends: Vec<f64> = Vec::new();
    let mut per_stretch = Vec::new();
    let mut k = 0usize;
    for st in stretches {
        let mut compressed = Vec::new();
        for _ in 0..st.blocks {
            let d = ctl.next_block(&BlockContext {
                raw_offset: k as u64 * MIB,
                raw_len: MIB as usize,
                hints: &[],
                class: 0,
            });
            let raw = d.codec == CodecSpec::NONE;
            if !raw {
                compressed.push(d.codec);
            }
            let p = if raw { Perf { speed: 25e9, ratio: 1.0 } } else { st.data.perf(d.codec) };
            let work = MIB as f64 / p.speed;
            let room = if k >= buffers { ends[k - buffers] } else { 0.0 };
            cpu_clock = cpu_clock.max(room) + (path + if raw { 0.0 } else { work }) / cpus;
            let stored = if raw { MIB } else { (MIB as f64 / p.ratio) as u64 };
            ctl.record_block(&BlockMeasurement {
                decision: d,
                raw_len: MIB,
                stored_len: stored,
                stored_raw: raw,
                wall: Duration::from_secs_f64(work * WALL_PER_CPU),
                cpu: Duration::from_secs_f64(work),
            });
            let bytes = stored + 48;
            let backlogged = k > 0 && cpu_clock <= sink_end;
            let start = cpu_clock.max(sink_end);
            let waited = if k == 0 { 0.0 } else { start - sink_end };
            let busy = bytes as f64 / link;
            sink_end = start + busy;
            ends.push(sink_end);
            let spent = path + if raw { 0.0 } else { work };
            ctl.record_sink(&SinkMeasurement {
                bytes,
                busy: Duration::from_secs_f64(busy),
                backlogged,
                raw: MIB,
                waited: Duration::from_secs_f64(waited),
                cpu: if report_cpu { Duration::from_secs_f64(spent) } else { Duration::ZERO },
            });
            k += 1;
        }
        per_stretch.push(compressed);
    }
    let all_raw = k as f64 * (MIB as f64 / pipe_raw).max((MIB + 48) as f64 / link);
    (per_stretch, sink_end, all_raw)
}

/// A kernel tar through 1200 MB/s on two cores: a stretch that compresses 3-4x raises S1's
/// target `L f` beyond every rung, so S1 mixes raw and compressed blocks; with the link busy,
/// the sink's clock says only that the pipeline moves raw blocks at least at the link's speed,
/// and taken as their cost that made the mix all raw, for good (no compressed block measured
/// again), where lz4 on the rest wrote 1.2-1.3x faster than raw. The pipeline's CPU time shows
/// the CPUs two-thirds idle behind the busy link: S1 must go back to compressing, and write
/// the rest clearly faster than raw. Without that CPU time (a platform without a process
/// clock) the pace alone decides, as before.
#[test]
fn s1_compresses_again_when_the_cpus_idle_behind_a_busy_link() {
    let dense = anchored(
        "dense",
        &[("lz4:50", 1300.0, 4.0), ("lz4:1", 500.0, 5.0), ("zstd:1", 250.0, 6.0)],
    );
    let rest =
        anchored("rest", &[("lz4:50", 1300.0, 1.6), ("lz4:1", 500.0, 2.1), ("zstd:1", 250.0, 3.0)]);
    let stretches =
        [Stretch { blocks: 40, data: dense }, Stretch { blocks: 216, data: rest.clone() }];
    let (compressed, time, all_raw) = cpu_and_link(TEN_GBE, 5.9e9, &stretches, true);
    let compressed: Vec<usize> = compressed.iter().map(Vec::len).collect();
    eprintln!("with the CPU time: {compressed:?} compressed, {:.3} of raw's time", time / all_raw);
    assert!(
        compressed[1] >= 150,
        "only {} of 216 blocks compressed after the dense stretch",
        compressed[1]
    );
    assert!(time <= 0.85 * all_raw, "the write took {:.3} of raw's time", time / all_raw);
    // And where the CPUs are the bottleneck (the raw path alone fills them at 5.9 GB/s behind
    // a 6000 MB/s link), the same CPU time keeps S1 raw.
    let stretches = [Stretch { blocks: 256, data: rest }];
    let (compressed, time, all_raw) = cpu_and_link(FDR4, 5.9e9, &stretches, true);
    let compressed = compressed[0].len();
    eprintln!("6000 MB/s: {compressed} compressed, {:.3} of raw's time", time / all_raw);
    assert!(compressed <= 12, "{compressed} of 256 blocks compressed");
    assert!(time <= 1.05 * all_raw, "the write took {:.3} of raw's time", time / all_raw);
}

/// The first writes of a pipeline find the sink idle whatever the link: it is filling. The
/// mix's compressed share, which shrinks while frames seldom wait for the sink, must not read
/// that as a starved link: S1 through 1200 MB/s sent a dozen blocks raw after its first ones
/// (the first 32 blocks at 0.8x raw's speed, the rest at 1.4x).
#[test]
fn s1_mixes_from_the_start_of_a_write() {
    let rest =
        anchored("rest", &[("lz4:50", 1300.0, 1.6), ("lz4:1", 500.0, 2.1), ("zstd:1", 250.0, 3.0)]);
    let stretches =
        [Stretch { blocks: 16, data: rest.clone() }, Stretch { blocks: 240, data: rest }];
    let (compressed, time, all_raw) = cpu_and_link(TEN_GBE, 5.9e9, &stretches, true);
    eprintln!(
        "{} of the first 16 blocks compressed, {} of the rest; {:.3} of raw's time",
        compressed[0].len(),
        compressed[1].len(),
        time / all_raw
    );
    assert!(compressed[0].len() >= 10, "{} of the first 16 compressed", compressed[0].len());
    assert!(time <= 0.85 * all_raw, "the write took {:.3} of raw's time", time / all_raw);
}

/// Text through 1200 MB/s on two cores: every LZ4 level saves about as many bytes per CPU
/// second (lz4:1 a little more than lz4:50), so the mix's throughput hardly depends on its
/// rung. A slow rung's block, though, holds up the frames behind it at the ordered writer, and
/// one block's speed on two busy cores scatters by 2x: a mix that drifted to lz4:1 wrote at
/// 0.92x raw, one at lz4:25-50 at 1.3x. Of the rungs within the tie the mix must take the
/// fastest, and it must still write clearly faster than raw.
#[test]
fn s1_mixes_with_the_fastest_of_the_rungs_that_save_about_as_much() {
    // Bytes saved per CPU second, `s (1 - 1/f)`: lz4:1 481 MB/s, lz4:50 403 MB/s.
    let flat = anchored(
        "flat",
        &[("lz4:50", 1300.0, 1.45), ("lz4:1", 700.0, 3.2), ("zstd:1", 250.0, 3.6)],
    );
    // This simulator has no ordered writer to stall (a slower rung's longer blocks cost
    // nothing here), so it checks the rule, not its gain: the rungs within the tie are the
    // LZ4 levels, and lz4:50 is the fastest of them. Before, the mix took lz4:25 here.
    let slowest = flat.perf(spec("lz4:50")).speed * 0.95;
    let stretches = [Stretch { blocks: 256, data: flat.clone() }];
    let (compressed, time, all_raw) = cpu_and_link(TEN_GBE, 5.9e9, &stretches, true);
    let later = &compressed[0][compressed[0].len() / 4..];
    let slow = later.iter().filter(|&&c| flat.perf(c).speed < slowest).count();
    eprintln!(
        "{} compressed, {slow} of the later {} below lz4:50's speed, {:.3} of raw's time",
        compressed[0].len(),
        later.len(),
        time / all_raw
    );
    assert!(later.len() >= 40, "only {} blocks compressed", compressed[0].len());
    assert!(slow * 10 <= later.len(), "{slow} of {} later blocks on slow rungs", later.len());
    assert!(time <= 0.85 * all_raw, "the write took {:.3} of raw's time", time / all_raw);
}

/// Where the pipeline cannot even fill the link with raw blocks, every compressed block takes
/// CPU from the raw path: S1 must send raw (after at most a few blocks that measure), never
/// slower than raw. Before the sink's account of the pipeline's pace, S1 compressed a sixth to
/// a third of the blocks and wrote 0.6-0.7 as fast as raw.
#[test]
fn s1_sends_raw_when_the_pipeline_cannot_fill_the_link_with_raw_blocks() {
    // Below the link, as measured, and a little above it (then raw and the mix are about
    // even: the link's share of a raw block's time is within 3 % of the pipeline's).
    for pipe_raw in [5.0e9, 5.9e9, 6.2e9] {
        let (compressed, time) = cpu_bound_fast_link(Strategy::Throughput, 256, pipe_raw);
        eprintln!(
            "S1, pipeline {:.1} GB/s, link 6000 MB/s: {compressed} of 256 compressed, {time:.3} \
             of raw's time",
            pipe_raw / 1e9
        );
        assert!(compressed <= 12, "{compressed} of 256 blocks compressed");
        assert!(time <= 1.05, "the write took {time:.3} of raw's time");
    }
}

/// A sink that waits for frames much longer than the link takes to send them is strong
/// evidence that the link is not the bottleneck: the mix must stop within a few writes, not
/// the ~16-25 writes the smoothed backlog share takes.
#[test]
fn strong_evidence_of_a_starved_sink_stops_the_mix_within_a_few_writes() {
    let (threads, link) = (2, FDR4);
    let mut sim = SimConfig::new(threads, link);
    sim.buffers = 8;
    let cfg = ControllerConfig::new(Strategy::Throughput, Link::Fixed(link), threads);
    let (mut ctl, rep) = run(cfg, &sim, &[Segment::new(300, text())]);
    assert!(
        matches!(ctl.status().mode, Mode::Mix { compress_fraction } if compress_fraction > 0.0),
        "{:?}",
        ctl.status().mode
    );
    let offset = rep.blocks.len() as u64 * (1 << 20);
    let mut writes = 0;
    while matches!(ctl.status().mode, Mode::Mix { compress_fraction } if compress_fraction > 0.0) {
        assert!(writes < 8, "still mixing after {writes} starved writes: {:?}", ctl.status());
        let bytes = (1 << 20) + 48;
        let busy = bytes as f64 / link;
        ctl.record_sink(&SinkMeasurement {
            bytes,
            busy: Duration::from_secs_f64(busy),
            backlogged: false,
            raw: 0,
            waited: Duration::from_secs_f64(3.0 * busy),
            cpu: Duration::ZERO,
        });
        let d = ctl.next_block(&BlockContext {
            raw_offset: offset + writes * (1 << 20),
            raw_len: 1 << 20,
            hints: &[],
            class: 0,
        });
        let _ = d;
        writes += 1;
    }
}

#[test]
fn fast_link_with_two_threads_mixes_raw_and_compressed_blocks() {
    let (threads, link) = (2, FDR4);
    let data = text();
    assert!(
        !some_rung_keeps_up(&data, Strategy::Throughput, link, threads),
        "no codec keeps up: the test needs that"
    );
    // With the thesis' 2 x threads buffers, and with a few more: a compressed block takes
    // 3 link-block-times to compress, and the ordered writer can only bridge that with
    // finished frames queued behind it.
    for buffers in [2 * threads, 8] {
        let mut sim = SimConfig::new(threads, link);
        sim.buffers = buffers;
        let raw_cfg =
            ControllerConfig::new(Strategy::Static(CodecSpec::NONE), Link::Fixed(link), threads);
        let raw = run(raw_cfg, &sim, &[Segment::new(400, data.clone())]).1.throughput_of(100, 400);
        for strategy in [Strategy::Throughput, Strategy::KeepPace] {
            let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
            let (ctl, rep) = run(cfg, &sim, &[Segment::new(400, data.clone())]);
            let tail = &rep.blocks[100..];
            let compressed = tail.iter().filter(|b| b.decision.codec != CodecSpec::NONE).count();
            let fraction = compressed as f64 / tail.len() as f64;
            let thr = rep.throughput_of(100, 400);
            eprintln!(
                "{strategy} at 6000 MB/s, 2 threads, {buffers} buffers: {:.0} % of blocks compressed \
                 ({}), {:.0} MB/s vs raw {:.0} MB/s, ratio {:.2}; {}",
                fraction * 100.0,
                names(&rep, 300, 310),
                thr / 1e6,
                raw / 1e6,
                rep.ratio(),
                ctl.status()
            );
            assert!(matches!(ctl.status().mode, Mode::Mix { .. }), "{:?}", ctl.status().mode);
            assert!(fraction > 0.05 && fraction < 1.0, "{strategy}: fraction {fraction}");
            assert!(tail
                .iter()
                .all(|b| matches!(b.decision.reason, Reason::MixRaw | Reason::MixCompress)));
            // Never slower than sending everything raw (1 %: the pipeline's start and end).
            assert!(thr >= 0.99 * raw, "{strategy}: {thr} < raw {raw}");
            assert!(rep.ratio() > 1.1);
            if strategy == Strategy::Throughput && buffers >= 8 {
                // S1 turns the saved bytes into speed: L + S(1 - 1/f), less raw copying.
                assert!(thr > 1.1 * raw, "{strategy}: {thr} vs raw {raw}");
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
    let after = ctl.status();
    assert_eq!(Status { blocks: 0, ..before }, Status { blocks: 0, ..after });
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

/// The last rung at least `factor` times faster than `from` in the reference table.
fn reference_ratio_step(from: CodecSpec, factor: f64) -> usize {
    let l = Ladder::standard();
    let s = reference(from).speed * factor;
    (1..pos(from)).rev().find(|&r| reference(l.rungs()[r]).speed >= s).unwrap_or(1)
}

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
                        Decision { codec: spec("zstd:3"), filters: Filters::NONE, reason: Reason::Hold, seq: 99, shadow: None }
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

/// A data model on the standard ladder with every rung given: `perf(codec, level, ladder
/// index, reference speed)` is the rung's (CPU bytes/s per thread, ratio).
fn per_rung(name: &str, perf: impl Fn(&str, i32, usize, f64) -> (f64, f64)) -> DataModel {
    let l = Ladder::standard();
    let table = l
        .rungs()
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, &c)| {
            let (speed, ratio) = perf(c.id().name(), c.param(), i, reference(c).speed);
            (c, Perf { speed, ratio })
        })
        .collect::<Vec<_>>();
    DataModel::from_anchors(name, &l, &table)
}

/// A data model on the standard ladder from anchors: (rung, CPU MB/s per thread, ratio).
fn anchored(name: &str, anchors: &[(&str, f64, f64)]) -> DataModel {
    let anchors: Vec<_> = anchors
        .iter()
        .map(|&(r, speed, ratio)| (spec(r), Perf { speed: speed * 1e6, ratio }))
        .collect();
    DataModel::from_anchors(name, &Ladder::standard(), &anchors)
}

/// The case measured on real data (adz's pipeline, 2 workers on 2 cores, 1GbE, English-like
/// text): a codec family change where zstd's ratio is far above LZ4's, so that a rung slower
/// than its own S1 target `L f` can still write fastest. Per thread: lz4:1 450 MB/s ratio 2.2,
/// zstd:-4 300 MB/s 3.1, zstd:1 160 MB/s 3.6, zstd:3 70 MB/s 3.76 (interpolated between).
/// At 117 MB/s with 2 threads the fastest write is zstd:-2 (min(438, 391) = 391 MB/s), not
/// zstd:1 (min(320, 421) = 320): the ratio rises steeply from zstd:-4 to zstd:-2 while the
/// speed still outruns `L f`.
fn family_change() -> DataModel {
    anchored(
        "family change",
        &[
            ("lz4:1", 450.0, 2.2),
            ("zstd:-4", 300.0, 3.1),
            ("zstd:1", 160.0, 3.6),
            ("zstd:3", 70.0, 3.76),
        ],
    )
}

/// The same family change with zstd:1 the fastest write (min(460, 421) = 421 MB/s) and
/// zstd:-4 only a little better than LZ4 in ratio.
fn family_change_zstd1() -> DataModel {
    anchored(
        "family change, zstd:1 best",
        &[
            ("lz4:1", 450.0, 2.2),
            ("zstd:-4", 320.0, 2.5),
            ("zstd:1", 230.0, 3.6),
            ("zstd:3", 70.0, 3.76),
        ],
    )
}

/// The family change as measured on real data: zstd's negative levels compress that text
/// no faster than zstd:1 (the reference shape says 1.4x at zstd:-4), so zstd:1 writes
/// fastest (min(410, 419) = 410 MB/s).
fn family_change_flat() -> DataModel {
    anchored(
        "family change, flat zstd",
        &[
            ("lz4:1", 480.0, 2.19),
            ("zstd:-4", 205.0, 3.1),
            ("zstd:1", 205.0, 3.58),
            ("zstd:3", 70.0, 3.76),
        ],
    )
}

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

#[test]
fn s2_and_s3_hold_through_wall_time_noise() {
    // Per-block wall times 1-2.5x the CPU time: the smoothed estimate decides, so single slow
    // blocks do not send keep-pace and prolong to a faster rung, and they still keep pace.
    let threads = 2;
    let data = DataModel::monotone("text", &Ladder::standard(), 0.5, 1.0, 0.1);
    for (strategy, link) in
        [(Strategy::KeepPace, GBE), (Strategy::Prolong(1.5), GBE), (Strategy::KeepPace, 400e6)]
    {
        for seed in [3, 4] {
            let sim = SimConfig::new(threads, link).with_wall_noise(2.5, seed);
            let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
            // With the schedule: blocks 60.. take the target's time.
            on_schedule(&cfg, &sim, &[Segment::new(300, data.clone())], link, 60);
            let (ctl, rep) = run(rungs_only(cfg), &sim, &[Segment::new(300, data.clone())]);
            let tail = &rep.blocks[60..];
            // Blocks at a rung clearly (10 %) slower than the target: a rung a few percent
            // short of it is more than 1-2.5x wall-time noise lets anything tell apart in a
            // few blocks (the 400 MB/s case has zstd:2 at 0.95 of it).
            let slow = tail
                .iter()
                .filter(|b| headroom(&data, strategy, link, threads, lane_of(b.decision)) < 0.9)
                .count();
            let too_slow_moves =
                tail.iter().filter(|b| b.decision.reason == Reason::TooSlow).count();
            let thr = rep.throughput_of(60, 300);
            eprintln!(
                "{strategy} {} MB/s with wall-time noise (seed {seed}): {:.0} MB/s, ratio {:.2}, \
                 {slow}/240 blocks 10 % too slow, {too_slow_moves} too-slow moves; {}\n    {}",
                link / 1e6,
                thr / 1e6,
                rep.ratio(),
                ctl.status(),
                names(&rep, 0, 300)
            );
            // S3 here retries zstd:7 (0.87 of its target) a few blocks at a time every few
            // dozen blocks: its prediction creeps back to 1 after each measurement.
            assert!(slow <= 24, "{strategy}: {slow} too-slow blocks");
            assert!(thr >= 0.95 * target(strategy, link, 1.0), "{strategy}: {thr}");
            assert!(too_slow_moves <= 24, "{strategy}: {too_slow_moves} too-slow moves");
        }
    }
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

/// S2 and S3 take their target's time (within 5 %) even when the target falls between two
/// rungs: the controller blends the rung just faster than the target with the next one.
#[test]
fn s2_and_s3_take_the_targets_time_between_rungs() {
    let data = text();
    for threads in [2, 8] {
        for strategy in [Strategy::KeepPace, Strategy::Prolong(1.5)] {
            for link in [GBE, TEN_GBE] {
                let cfg = ControllerConfig::new(strategy, Link::Fixed(link), threads);
                let (ctl, rep) =
                    run(cfg, &SimConfig::new(threads, link), &[Segment::new(600, data.clone())]);
                // After settling: the speed from block 200 to the end (the sink's clock).
                let (a, b) = (&rep.blocks[199], &rep.blocks[599]);
                let raw: u64 = rep.blocks[200..].iter().map(|b| b.raw).sum();
                let speed = raw as f64 / (b.write_end - a.write_end);
                let want = target(strategy, link, 1.0);
                let blends =
                    rep.blocks[200..].iter().filter(|b| b.decision.reason == Reason::Blend).count();
                eprintln!(
                    "{strategy:<11} {threads} threads {:>5} MB/s: {:.1} MB/s for a target of \
                     {:.1} ({:.3}); {blends} blend blocks; {}\n    {}",
                    link / 1e6,
                    speed / 1e6,
                    want / 1e6,
                    speed / want,
                    ctl.status(),
                    names(&rep, 500, 600),
                );
                assert!(
                    (0.95..=1.05).contains(&(speed / want)),
                    "{strategy} {threads} threads {link}: {:.3} of the target speed",
                    speed / want
                );
            }
        }
    }
}

/// Real data is not a steady stream: a kernel tar's blocks at one zstd level compress at
/// 0.6-1.8x their mean speed (and 0.6-4x their mean ratio). Each block alone says little,
/// and the controller's asymmetry (it leaves a rung that looks too slow at once, but climbs
/// only on confirmed headroom) spends the noise on the fast side. Before the controller
/// kept a schedule, these writes finished in 0.72-0.90 of S2's and S3's target time. Over
/// the whole write, from its first block, they now take their target's time within 5 %
/// (256 blocks at 117 MB/s, 1024 at 1200 MB/s, as the strategies bench writes).
#[test]
fn s2_and_s3_take_the_targets_time_on_noisy_data() {
    let data = text();
    let threads = 2;
    let mut off = Vec::new();
    for strategy in [Strategy::KeepPace, Strategy::Prolong(1.5)] {
        for link in [GBE, TEN_GBE] {
            for seed in [1, 2, 3] {
                let sim = SimConfig::new(threads, link).with_jitter(0.6, seed);
                let cfg = scheduled(ControllerConfig::new(strategy, Link::Fixed(link), threads));
                let blocks = if link < TEN_GBE { 256 } else { 1024 };
                let (ctl, rep) = run(cfg, &sim, &[Segment::new(blocks, data.clone())]);
                let want = rep.raw_bytes() as f64 / target(strategy, link, 1.0);
                let got = rep.time();
                eprintln!(
                    "{strategy:<11} {:>5} MB/s seed {seed}: {:.3} s for a target of {:.3} s \
                     ({:.3}), ratio {:.2}; {}\n    {}",
                    link / 1e6,
                    got,
                    want,
                    got / want,
                    rep.ratio(),
                    ctl.status(),
                    names(&rep, rep.blocks.len() - 200, rep.blocks.len()),
                );
                if !(0.95..=1.05).contains(&(got / want)) {
                    off.push(format!("{strategy} {link} seed {seed}: {:.3}", got / want));
                }
            }
        }
    }
    assert!(off.is_empty(), "time / target time off by more than 5 %: {off:?}");
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

/// Issue 6 (and issue 3's leftover): at a link faster than any codec on few cores, with the
/// link measured (`auto`), the default start compresses at zstd:1 until the first sink
/// measurement arrives, a pipeline's depth of slow blocks (19 in a real run). A sampling
/// predictor that sees this coming starts raw. A raw start used to be held until something
/// had been *compressed* and measured, which raw blocks never are: every block stayed raw for
/// good. It is now held only until the link is known; then the raw/compressed mix takes over.
#[test]
fn a_raw_start_at_a_fast_auto_link_is_held_only_until_the_link_is_known() {
    let (threads, link) = (2, FDR4);
    let mut sim = SimConfig::new(threads, link);
    sim.buffers = 2 * threads + 2;
    let segs = [Segment::new(200, text())];
    let cfg = ControllerConfig::new(Strategy::Throughput, Link::Auto, threads);
    let (_, default_start) = run(cfg.clone(), &sim, &segs);
    let (ctl, raw_start) = run(cfg.with_start(CodecSpec::NONE), &sim, &segs);
    eprintln!(
        "auto link at 6000 MB/s, 2 threads: default start {:.0} MB/s over 40 blocks ({}), \
         raw start {:.0} MB/s ({}); ratio {:.3}; {}",
        default_start.throughput_of(0, 40) / 1e6,
        names(&default_start, 0, 8),
        raw_start.throughput_of(0, 40) / 1e6,
        names(&raw_start, 0, 8),
        raw_start.ratio(),
        ctl.status()
    );
    // The raw start is left: the mix compresses some blocks (all raw: ratio 1.000).
    assert!(raw_start.ratio() > 1.05, "ratio {}", raw_start.ratio());
    assert!(matches!(ctl.status().mode, Mode::Mix { .. }), "{:?}", ctl.status().mode);
    // No slow zstd:1 blocks at the start, and the first 40 blocks go clearly faster.
    assert!(raw_start.blocks[..20].iter().all(|b| b.decision.codec != spec("zstd:1")));
    assert!(
        raw_start.throughput_of(0, 40) > 1.3 * default_start.throughput_of(0, 40),
        "raw start {} vs default {}",
        raw_start.throughput_of(0, 40),
        default_start.throughput_of(0, 40)
    );
    // And over the whole write it is not slower than the default start.
    assert!(raw_start.throughput() >= 0.99 * default_start.throughput());
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

/// The sparse records of `adz-datagen mixed` as the real demo measured them (CPU MB/s per
/// thread, ratio): lz4's fast levels 4200 at about 60 (38 at lz4:50), zstd:3 1880 at 118.5.
fn demo_sparse() -> DataModel {
    anchored(
        "demo sparse",
        &[
            ("lz4:50", 5000.0, 38.0),
            ("lz4:1", 3500.0, 60.0),
            ("zstd:-4", 1450.0, 117.0),
            ("zstd:-1", 1450.0, 118.0),
            ("zstd:1", 1900.0, 118.3),
            ("zstd:3", 1880.0, 118.5),
            ("zstd:4", 960.0, 118.6),
            ("zstd:9", 300.0, 121.0),
        ],
    )
}

/// The text class of `adz-datagen mixed` as `make demo` measured it (2 workers, 1GbE, per
/// thread CPU speed and ratio): zstd:1 328 MB/s 3.579, zstd:2 308 MB/s 3.534 (zstd:1 compresses
/// this text *better* than zstd:2), zstd:3 261 MB/s 3.765. zstd:2 -> zstd:3 costs 1.18x the
/// time here; the reference shape (thesis table 5.1) says 2.3x. The rungs after zstd:3 are
/// made up in the same spirit (zstd:4 a little slower for a little ratio, zstd:5 and on the
/// lazy matchers, much slower).
fn demo_text() -> DataModel {
    anchored(
        "demo text",
        &[
            ("lz4:50", 2200.0, 1.5),
            ("lz4:1", 560.0, 2.3),
            ("zstd:-4", 420.0, 2.9),
            ("zstd:-1", 360.0, 3.25),
            ("zstd:1", 328.0, 3.579),
            ("zstd:2", 308.0, 3.534),
            ("zstd:3", 261.0, 3.765),
            ("zstd:4", 232.0, 3.79),
            ("zstd:5", 140.0, 3.86),
            ("zstd:9", 60.0, 3.97),
        ],
    )
}

/// Decide and measure `blocks` blocks of `data` with a Controller, measurements arriving
/// `lag` blocks after their decision (a pipeline's depth), wall = CPU time. Returns the
/// decisions.
fn feed(ctl: &mut Controller, data: &DataModel, blocks: usize, lag: usize) -> Vec<Decision> {
    let raw = 1u64 << 20;
    let mut out = Vec::new();
    let mut queue: std::collections::VecDeque<Decision> = Default::default();
    let measure = |ctl: &mut Controller, d: Decision| {
        let p = if d.codec == CodecSpec::NONE {
            Perf { speed: 8e9, ratio: 1.0 }
        } else {
            data.perf(d.codec)
        };
        let t = Duration::from_secs_f64(raw as f64 / p.speed);
        let stored = (raw as f64 / p.ratio) as u64;
        ctl.record_block(&BlockMeasurement {
            decision: d,
            raw_len: raw,
            stored_len: stored,
            stored_raw: false,
            wall: t,
            cpu: t,
        });
        ctl.record_sink(&SinkMeasurement {
            bytes: stored,
            busy: Duration::from_secs_f64(stored as f64 / GBE),
            backlogged: true,
            ..Default::default()
        });
    };
    for k in 0..blocks {
        let ctx = BlockContext {
            raw_offset: k as u64 * raw,
            raw_len: raw as usize,
            hints: &[],
            class: 2,
        };
        let d = ctl.next_block(&ctx);
        out.push(d);
        queue.push_back(d);
        if queue.len() > lag {
            let d = queue.pop_front().unwrap();
            measure(ctl, d);
        }
    }
    out
}

fn runs(ds: &[Decision]) -> String {
    let mut out: Vec<(CodecSpec, usize)> = Vec::new();
    for d in ds {
        match out.last_mut() {
            Some((c, n)) if *c == d.codec => *n += 1,
            _ => out.push((d.codec, 1)),
        }
    }
    out.iter().map(|(c, n)| format!("{c}x{n}")).collect::<Vec<_>>().join(" ")
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

/// Float arrays as adz-datagen's doubles measured on 2 cores: zstd 1..22 all store 1.047
/// (to within 0.01 %), and from zstd:16 on (btultra) they compress 9x slower than the
/// reference shape says; only xz saves more. S2 and S3 at 1GbE must not spend their time on
/// rungs that buy no ratio: on the real pipeline each block there stalled the ordered writer
/// and the link for a block's time (S2 took 1.11 of its target time, S3 1.24). After the
/// first measurements the lane neither blends with nor holds a rung that stores what a faster
/// one does (it goes back down, `Reason::SameRatio`), and neither write runs over its target
/// time. (S3 finishes early: nothing in its time buys ratio.)
#[test]
fn s2_and_s3_spend_no_time_on_rungs_that_buy_no_ratio() {
    let data = per_rung("doubles", |codec, level, i, speed| match (codec, level) {
        ("zstd", p) if p >= 16 => (speed * 1.4 / 9.0, 1.047 + 0.0001 * (i % 2) as f64),
        ("zstd", p) if p >= 1 => (speed * 1.4, 1.047 + 0.0001 * (i % 2) as f64),
        ("xz", _) => (speed * 0.1, 1.09),
        _ => (speed * 2.0, 1.003),
    });
    let threads = 2;
    let cliff = pos(spec("zstd:16"));
    for strategy in [Strategy::KeepPace, Strategy::Prolong(1.5)] {
        for seed in [1, 2, 3] {
            // Wall times 1-1.5x the CPU's; no ratio jitter, which would push some 1.047
            // blocks past the keep threshold.
            let sim = SimConfig::new(threads, GBE).with_wall_noise(1.5, seed);
            let cfg = scheduled(ControllerConfig::new(strategy, Link::Fixed(GBE), threads));
            let (ctl, rep) = run(cfg, &sim, &[Segment::new(256, data.clone())]);
            let past: Vec<usize> = (0..rep.blocks.len())
                .filter(|&k| pos(rep.blocks[k].decision.codec) >= cliff)
                .collect();
            let want = rep.raw_bytes() as f64 / target(strategy, GBE, 1.0);
            let got = rep.time();
            eprintln!(
                "{strategy:<11} seed {seed}: {:.3} of the target time, ratio {:.4}; past the cliff at {past:?}; {}\n    {}",
                got / want,
                rep.ratio(),
                ctl.status(),
                names(&rep, 0, rep.blocks.len()),
            );
            // At most one try of the cliff (a block per worker) while nothing is measured
            // there.
            assert!(past.len() <= 2 * threads, "{strategy} seed {seed}: {past:?}");
            assert!(got / want <= 1.03, "{strategy} seed {seed}: {:.3}", got / want);
            // No blend, and no rung held that stores what a faster one does: after the first
            // measurements nearly every block goes to the one rung the write ends on (a few
            // climbs try rungs not yet measured, and come back).
            let last = rep.blocks[255].decision.codec;
            let off = rep.blocks[64..].iter().filter(|b| b.decision.codec != last).count();
            assert!(off <= 16, "{strategy} seed {seed}: {}", names(&rep, 64, 256));
            assert!(pos(last) < pos(spec("zstd:12")), "{strategy} seed {seed}: ends on {last}");
        }
    }
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

/// Decide `n` blocks of 1 MiB with `ctl`; every compression attempt is measured at once as
/// stored raw after `attempt_secs` (wall and CPU), every raw block after 0.1 ms. Returns the
/// decisions.
fn decide_incompressible(ctl: &mut Controller, n: u64, attempt_secs: f64) -> Vec<Decision> {
    let mb = 1u64 << 20;
    (0..n)
        .map(|i| {
            let ctx =
                BlockContext { raw_offset: i * mb, raw_len: mb as usize, hints: &[], class: 0 };
            let d = ctl.next_block(&ctx);
            let secs = if d.codec == CodecSpec::NONE { 1e-4 } else { attempt_secs };
            ctl.record_block(&BlockMeasurement {
                decision: d,
                raw_len: mb,
                stored_len: mb,
                stored_raw: true,
                wall: Duration::from_secs_f64(secs),
                cpu: Duration::from_secs_f64(secs),
            });
            d
        })
        .collect()
}

/// Through 6000 MB/s on two cores, moving raw data alone takes both cores (the raw path costs
/// about 0.4-0.5 ns of CPU per byte on the benchmark VM), so every compressed block slows the
/// write. Before the pipeline has measured itself, a raw path cost measured by the predictor
/// says so: the first blocks go raw. Without it, the mix counted raw blocks as free and
/// compressed one block in five from the reference table, each holding the ordered writer for
/// 3-4 ms (S1 at 0.79 of raw on text, 256 MiB).
#[test]
fn a_raw_path_cost_known_before_the_write_keeps_the_start_raw_where_it_fills_the_cores() {
    // Blocks of the first 16 that S1 compresses, from a raw start, with the path costs given.
    let compressed = |link: f64, cpu: f64, serial: f64| {
        let mut ctl =
            Controller::new(ControllerConfig::new(Strategy::Throughput, Link::Fixed(link), 2));
        ctl.set_start(CodecSpec::NONE);
        ctl.set_path_cost(cpu, serial);
        (0..16u64)
            .filter(|&i| {
                let ctx =
                    BlockContext { raw_offset: i << 20, raw_len: 1 << 20, hints: &[], class: 0 };
                ctl.next_block(&ctx).codec != CodecSpec::NONE
            })
            .count()
    };
    // Without a cost (nonsense is ignored) the reference table alone compresses a share.
    let unknown = compressed(FDR4, f64::NAN, -1.0);
    assert!(unknown > 0, "nothing compressed without a path cost");
    assert_eq!(compressed(FDR4, 0.5e-9, 0.2e-9), 0, "2 CPUs move raw data at 4 GB/s < 6 GB/s");
    // At 10GbE the same cost leaves CPU to spare, and the mix compresses a share.
    assert!(compressed(TEN_GBE, 0.5e-9, 0.2e-9) > 0, "at 1200 MB/s nothing compressed");
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
