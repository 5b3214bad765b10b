//! `Link::Auto` behind a sink with a buffer (issue 30 item 2, decision 0033): a pipe, TCP's
//! send and receive buffers, a page cache take their first bytes at memory speed and then
//! drain at the link's rate. The estimate must be the drain rate, not the accept rate.

mod common;
use adz_control::{Control, LinkEstimate, ShadowMeasurement};
use common::*;

const MIB: u64 = 1 << 20;

/// A controller that records the link estimate after every sink write, with the bytes written
/// so far.
struct Watch {
    ctl: Controller,
    written: u64,
    trace: Vec<(u64, Option<f64>)>,
}

impl Watch {
    fn new(link: Link) -> Watch {
        let ctl = Controller::new(ControllerConfig::new(Strategy::Throughput, link, 2));
        Watch { ctl, written: 0, trace: Vec::new() }
    }

    /// The estimates after `from` bytes had been written.
    fn after(&self, from: u64) -> impl Iterator<Item = f64> + '_ {
        self.trace.iter().filter(move |t| t.0 >= from).map(|t| t.1.unwrap_or(f64::NAN))
    }
}

impl Control for Watch {
    fn next_block(&mut self, ctx: &BlockContext) -> Decision {
        self.ctl.next_block(ctx)
    }
    fn record_block(&mut self, m: &BlockMeasurement) {
        self.ctl.record_block(m)
    }
    fn record_sink(&mut self, m: &SinkMeasurement) {
        self.ctl.record_sink(m);
        self.written += m.bytes;
        self.trace.push((self.written, self.ctl.link()));
    }
    fn keep_threshold(&self) -> f64 {
        self.ctl.keep_threshold()
    }
    fn status(&self) -> Status {
        self.ctl.status()
    }
    fn record_shadow(&mut self, m: &ShadowMeasurement) {
        self.ctl.record_shadow(m)
    }
    fn set_path_cost(&mut self, cpu: f64, serial: f64) {
        self.ctl.set_path_cost(cpu, serial)
    }
    fn set_start(&mut self, rung: CodecSpec) {
        self.ctl.set_start(rung)
    }
    fn start_incompressible(&mut self, _class: u8) {
        self.ctl.start_incompressible()
    }
}

/// A bioinformatics-like file on 2 cores (shaped after the 256 MB FASTQ): zstd:3 writes
/// about as fast as a 1GbE link takes its output, so S1's pick depends on the link's speed.
fn fastq() -> DataModel {
    let a = |r: &str, s: f64, f: f64| (spec(r), Perf { speed: s * 1e6, ratio: f });
    DataModel::from_anchors(
        "fastq",
        &Ladder::standard(),
        &[
            a("lz4:1", 600.0, 2.1),
            a("zstd:1", 330.0, 3.3),
            a("zstd:3", 210.0, 3.67),
            a("zstd:6", 80.0, 3.9),
        ],
    )
}

/// The simulated machines: clean, and a busy one (block speeds ±30 %, wall times up to 2x the
/// CPU times), so that the sink sometimes waits for a frame and the buffer drains meanwhile.
fn machines() -> Vec<(&'static str, SimConfig)> {
    vec![
        ("clean", SimConfig::new(2, GBE)),
        ("busy", SimConfig::new(2, GBE).with_jitter(0.3, 7).with_wall_noise(2.0, 7)),
    ]
}

fn run(link: Link, sim: &SimConfig, data: &DataModel, blocks: u64) -> (Watch, SimReport) {
    let mut w = Watch::new(link);
    let rep = sim.run(&mut w, &[Segment::new(blocks, data.clone())]);
    (w, rep)
}

#[test]
fn behind_tcp_and_s3_sized_buffers_the_estimate_is_the_link_after_64_mib() {
    // 4 MiB: TCP's send and receive buffers; 16 MiB: two S3 parts of 8 MiB in flight.
    for buffer in [4 * MIB, 16 * MIB] {
        for data in [text(), fastq()] {
            for (name, sim) in machines() {
                let sim = sim.with_sink_buffer(buffer);
                let tag = format!("{} {name} buffer {buffer}", data.name());
                let (w, _) = run(Link::Auto, &sim, &data, 400);
                assert!(w.written > 96 * MIB, "{tag}: the write is long enough to judge");
                for (i, l) in w.after(64 * MIB).enumerate() {
                    let mbs = l / 1e6;
                    assert!(
                        (l / GBE - 1.0).abs() <= 0.05,
                        "{tag}: write {i} after 64 MiB: {mbs:.1}"
                    );
                }
                let e = w.ctl.link_estimate().expect("measured");
                assert!(e.settled, "{tag}: {e:?}");
                // (The bounds hold to the clock's nanoseconds.)
                assert!(e.low <= GBE * (1.0 + 1e-6) && GBE <= e.high, "{tag}: {e:?}");
            }
        }
    }
}

#[test]
fn behind_a_page_cache_sized_buffer_the_estimate_settles_once_the_sink_blocks() {
    // 64 MiB take the first ~150 MiB of raw data at memory speed: nothing can tell the link
    // before that. Once the sink blocks, the drain rate is the link within 64 MiB more.
    for data in [text(), fastq()] {
        for (name, sim) in machines() {
            let sim = sim.with_sink_buffer(64 * MIB);
            let (w, _) = run(Link::Auto, &sim, &data, 600);
            let before = w.ctl.status();
            let blocked = w.trace.iter().position(|t| t.1.is_some_and(|l| l < 1e9));
            let from = w.trace[blocked.expect("the sink blocked")].0;
            let late: Vec<f64> = w.after(from + 64 * MIB).collect();
            assert!(late.len() > 50, "{} {name}: {before:?}", data.name());
            assert!(
                late.iter().all(|l| (l / GBE - 1.0).abs() <= 0.05),
                "{} {name}: {:?}",
                data.name(),
                late.iter().map(|l| (l / 1e6) as i64).collect::<Vec<_>>()
            );
        }
    }
}

/// S1's rungs over blocks `from..` of two runs: the same in at least `share` of the blocks.
fn same_rungs(a: &SimReport, b: &SimReport, from: usize, share: f64) -> bool {
    let n = a.blocks.len().min(b.blocks.len());
    let same = (from..n).filter(|&i| a.blocks[i].decision.codec == b.blocks[i].decision.codec);
    same.count() as f64 >= share * (n - from) as f64
}

#[test]
fn s1_auto_behind_a_buffer_converges_to_s1_with_the_link_given() {
    for data in [text(), fastq()] {
        for (name, sim) in machines() {
            for buffer in [64 << 10, 4 * MIB] {
                let sim = sim.clone().with_sink_buffer(buffer);
                let (_, given) = run(Link::Fixed(GBE), &sim, &data, 256);
                let (_, auto) = run(Link::Auto, &sim, &data, 256);
                let tag = format!("{} {name} buffer {buffer}", data.name());
                // From the 64th block (64 MiB of raw data) on, on the clean machine: the same
                // rungs, as fast. On the busy one S1's model has learnt other rungs on the way
                // (auto started faster), and S1 may hold another rung of its margin's tie.
                let (g, a) = (given.throughput_of(64, 256), auto.throughput_of(64, 256));
                let min = if name == "clean" {
                    assert!(same_rungs(&given, &auto, 64, 0.95), "{tag}");
                    0.99
                } else {
                    0.95
                };
                assert!(a >= min * g, "{tag}: {:.1} against {:.1} MB/s", a / 1e6, g / 1e6);
                // The whole write: auto loses at most the buffer's fill, which it writes with
                // the fast rungs that an accept rate at memory speed asks for (twice the time
                // the link takes to send the buffer, for the lower ratio and the few blocks
                // until the drain rate is known), and 1 % for the other rungs a busy machine's
                // measurements take it through.
                let fill = 2.0 * buffer as f64 / GBE;
                let (g, a) = (given.time(), auto.time());
                assert!(a <= 1.01 * g + fill, "{tag}: {a:.3} s against {g:.3} s");
            }
        }
    }
}

#[test]
fn without_a_buffer_the_estimate_is_the_link_and_settles_at_once() {
    // The throttle's sink: every write takes its bytes at the link's speed.
    let (w, _) = run(Link::Auto, &SimConfig::new(2, GBE), &text(), 64);
    let e: LinkEstimate = w.ctl.link_estimate().expect("measured");
    assert!((e.rate / GBE - 1.0).abs() < 1e-5, "{e:?}");
    assert!(e.settled && e.low <= GBE * (1.0 + 1e-6) && GBE <= e.high, "{e:?}");
    assert_eq!(w.ctl.status().link_estimate, Some(e));
    let first = w.trace.iter().position(|t| t.1.is_some()).unwrap();
    assert!(w.trace[first..].iter().all(|t| (t.1.unwrap() / GBE - 1.0).abs() < 1e-5));
    // At 10GbE no write is held for a millisecond: a write that short cannot be told from a
    // copy into a buffer. The accept rate stays the estimate, exact here, and unsettled.
    let (w, _) = run(Link::Auto, &SimConfig::new(2, TEN_GBE), &text(), 64);
    let e = w.ctl.link_estimate().expect("measured");
    assert!((e.rate / TEN_GBE - 1.0).abs() < 1e-5 && !e.settled, "{e:?}");
}

#[test]
fn a_link_as_fast_as_memory_stays_unsettled() {
    // Writes at 6 GB/s never block measurably: the accept rate is all there is, and the
    // estimate says it is not settled.
    let (w, _) = run(Link::Auto, &SimConfig::new(8, 6000e6), &text(), 64);
    let e = w.ctl.link_estimate().expect("measured");
    assert!(!e.settled && e.high.is_infinite(), "{e:?}");
    // Exact but for the writes' durations in whole nanoseconds (50-170 µs each).
    assert!((e.rate / 6000e6 - 1.0).abs() < 1e-5, "{e:?}");
}

#[test]
fn a_fixed_link_is_used_as_given_and_measured_alongside() {
    let sim = SimConfig::new(2, GBE).with_sink_buffer(4 * MIB);
    let (w, _) = run(Link::Fixed(200e6), &sim, &fastq(), 128);
    assert_eq!(w.ctl.link(), Some(200e6));
    let e = w.ctl.link_estimate().expect("measured");
    assert!((e.rate / GBE - 1.0).abs() < 0.05, "{e:?}");
}

#[test]
fn a_link_faster_than_a_blocked_write_can_show_settles_while_the_sink_is_kept_busy() {
    // 1200 MB/s: a 1 MiB write takes 0.87 ms, under the 1 ms that tells a block from a copy.
    // Data that 8 workers compress faster than the link takes it keeps the sink busy; its
    // backlogged writes, past what a buffer holds, are the link.
    let quick = anchored("quick", &[("lz4:1", 900.0, 1.3), ("zstd:1", 500.0, 1.5)]);
    for buffer in [0, 4 * MIB] {
        for (name, sim) in [
            ("clean", SimConfig::new(8, TEN_GBE)),
            ("busy", SimConfig::new(8, TEN_GBE).with_jitter(0.3, 7)),
        ] {
            let sim = sim.with_sink_buffer(buffer);
            let tag = format!("{name} buffer {buffer}");
            let (w, _) = run(Link::Auto, &sim, &quick, 256);
            assert!(w.written > 128 * MIB, "{tag}: {}", w.written);
            let late: Vec<f64> = w.after(64 * MIB).collect();
            assert!(
                late.iter().all(|l| (l / TEN_GBE - 1.0).abs() <= 0.05),
                "{tag}: {:?}",
                late.iter().map(|l| (l / 1e6) as i64).collect::<Vec<_>>()
            );
            let e = w.ctl.link_estimate().expect("measured");
            assert!(e.settled, "{tag}: {e:?}");
            assert!(e.low <= TEN_GBE * 1.001 && TEN_GBE <= e.high * 1.001, "{tag}: {e:?}");
        }
    }
}
