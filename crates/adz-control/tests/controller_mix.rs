//! Mixes of raw and compressed blocks where no rung is fast enough, and the pipeline's pace that
//! sizes them. Checked with the deterministic pipeline simulator (`adz_control::sim`) and made-up
//! measurements; no threads, no clock.

mod common;

use common::*;

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

/// Issue 6 (and issue 3's leftover): at a link faster than any codec on few cores, with the
/// link measured (`auto`), the default start compresses at zstd:1 until the first sink
/// measurement arrives, a pipeline's depth of slow blocks (19 in a real run). A sampling
/// predictor that sees this coming starts raw. A raw start used to be held until something
/// had been *compressed* and measured, which raw blocks never are: every block stayed raw for
/// good. It is now held only until the link is known (at a link that never blocks a write,
/// 20 ms of the sink's accept rate: 120 MB here); then the raw/compressed mix takes over.
#[test]
fn a_raw_start_at_a_fast_auto_link_is_held_only_until_the_link_is_known() {
    let (threads, link) = (2, FDR4);
    let mut sim = SimConfig::new(threads, link);
    sim.buffers = 2 * threads + 2;
    let segs = [Segment::new(400, text())];
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

/// An application that computes on both cores while its write goes on (an asynchronous
/// checkpoint behind a solver's sweeps, for half a raw write's time per round): the write is
/// hidden behind the computing, and every CPU second compression takes lengthens it. S1 must
/// count the application's CPU time, which the process clock shows (decision 0062), and buy
/// only the ratio that keeps the link within the round: at 1GbE a cheap LZ4 rung where, blind
/// to the application, it took zstd:1 and wrote 20 % slower; at 1200 MB/s a mix with fewer
/// compressed blocks (each block's compression shares the cores with the computing, so every
/// rung alone writes slower than raw).
#[test]
fn s1_counts_an_applications_computing_on_the_same_cores() {
    let data = anchored(
        "text",
        &[
            ("lz4:50", 1300.0, 1.5),
            ("lz4:1", 500.0, 2.1),
            ("zstd:1", 250.0, 3.5),
            ("zstd:3", 120.0, 3.8),
        ],
    );
    let write = |link: f64, reported: bool| {
        // Half a raw write's time on both cores per byte.
        let app = App { cpu_per_byte: 2.0 * 0.5 / link, reported };
        let stretches = [Stretch { blocks: 256, data: data.clone() }];
        let (compressed, time, all_raw, _) =
            cpu_link_and_app(link, 5.9e9, app, &stretches, true, &mut |_| {});
        let zstd = compressed[0].iter().filter(|c| c.id().name() == "zstd").count();
        (compressed[0].len(), zstd, time / all_raw)
    };
    let (_, blind_zstd, blind) = write(GBE, false);
    let (_, zstd, seen) = write(GBE, true);
    eprintln!(
        "1GbE: blind {blind:.3} of raw's time ({blind_zstd} zstd), seen {seen:.3} ({zstd} zstd)"
    );
    assert!(blind_zstd > 128, "blind to the application S1 took zstd ({blind_zstd} blocks)");
    assert!(zstd < 32, "{zstd} of 256 blocks at zstd while the application computes");
    assert!(seen <= 0.92 * blind, "{seen:.3} of raw's time against {blind:.3} blind");

    let (blind_compressed, _, blind) = write(TEN_GBE, false);
    let (compressed, _, seen) = write(TEN_GBE, true);
    eprintln!("1200 MB/s: blind {blind:.3} ({blind_compressed} compressed), seen {seen:.3} ({compressed})");
    assert!(compressed < blind_compressed, "{compressed} compressed, {blind_compressed} blind");
    assert!(seen < 0.95, "{seen:.3} of raw's time");
    assert!(seen < blind, "{seen:.3} of raw's time against {blind:.3} blind");
}
