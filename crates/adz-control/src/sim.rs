//! A deterministic simulator of the adz pipeline, for tests and benchmarks of the controller.
//!
//! It models N workers that each compress one block at a time, a bounded number of blocks in
//! flight, and an ordered writer that sends frames, one after the other, through a link of
//! fixed speed. Every block's compression time and ratio come from a [`DataModel`] (a speed and
//! ratio per codec setting, from the reference table or from a few measured anchors), optionally
//! with deterministic jitter of each block's speed and with wall-time noise (a block's wall time
//! 1-N times its CPU time, as on a machine whose cores the workers share with other threads).
//! Time is simulated: there are no threads, no sleeps and no clock, and the same inputs always
//! give the same run.
//!
//! Measurements reach the controller the way they do in the real pipeline: a block's
//! [`BlockMeasurement`] when its worker finishes it, a [`SinkMeasurement`] when its frame has
//! been written, and only once the simulated clock has passed that moment. A decision is asked
//! for when a worker takes the next block; so with N workers, decisions run about N blocks
//! ahead of the measurements, as in the real pipeline.
//!
//! ```
//! use adz_control::sim::{DataModel, Segment, SimConfig};
//! use adz_control::{Controller, ControllerConfig, Ladder, Link, Strategy};
//!
//! let cfg = ControllerConfig::new(Strategy::KeepPace, Link::Fixed(117e6), 4);
//! let mut ctl = Controller::new(cfg);
//! let text = DataModel::monotone("text", &Ladder::standard(), 0.8, 1.0, 0.15);
//! let report = SimConfig::new(4, 117e6).run(&mut ctl, &[Segment::new(200, text)]);
//! // Keeping pace: the write takes about as long as sending the raw data would.
//! assert!(report.throughput() > 0.95 * 117e6);
//! assert!(report.ratio() > 2.5);
//! ```

use std::time::Duration;

use adz_format::{CodecId, CodecSpec};

use crate::controller::{
    BlockContext, BlockMeasurement, Control, Decision, ShadowMeasurement, SinkMeasurement,
    SHADOW_BYTES,
};
use crate::hint::Hint;
use crate::ladder::{reference, Ladder};
pub use crate::timeline::{Schedule, Slot};

/// Frame header bytes the writer sends with every block (docs/FORMAT.md).
const FRAME_HEADER: u64 = adz_format::FRAME_HEADER_LEN as u64;

/// One thread's performance of a codec setting on some data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perf {
    /// Compression speed of one thread, raw bytes/s.
    pub speed: f64,
    /// raw / compressed (1.0: the codec cannot shrink it; the block is stored raw).
    pub ratio: f64,
}

/// Synthetic data: what each codec setting achieves on it.
#[derive(Debug, Clone, PartialEq)]
pub struct DataModel {
    name: String,
    table: Vec<(CodecSpec, Perf)>,
    /// For settings not in the table: the reference, speed times this.
    fallback_speed: f64,
    /// For settings not in the table: ln(reference ratio) times this.
    fallback_ratio_pow: f64,
}

impl DataModel {
    /// Exactly the controller's reference table (not monotone along the ladder: xz:0 is faster
    /// than the slow zstd levels).
    pub fn reference() -> DataModel {
        DataModel {
            name: "reference".into(),
            table: Vec::new(),
            fallback_speed: 1.0,
            fallback_ratio_pow: 1.0,
        }
    }

    /// Data on which speed falls and ratio rises at every rung of `ladder`: the reference
    /// table with speeds times `speed_scale` (and a deterministic wiggle of relative amplitude
    /// `wiggle`, so that the controller's reference shape is *not* the truth), ln(ratio) times
    /// `ratio_pow`, then forced monotone (each rung at least 3 % slower than the one before).
    pub fn monotone(
        name: &str,
        ladder: &Ladder,
        speed_scale: f64,
        ratio_pow: f64,
        wiggle: f64,
    ) -> DataModel {
        let mut table: Vec<(CodecSpec, Perf)> = Vec::new();
        for (i, &spec) in ladder.rungs().iter().enumerate().skip(1) {
            let r = reference(spec);
            let mut speed = r.speed * speed_scale * (1.0 + wiggle * (1.7 * i as f64).sin());
            let mut ratio = (r.ratio.ln() * ratio_pow).exp();
            if let Some(&(_, prev)) = table.last() {
                speed = speed.min(prev.speed * 0.97);
                ratio = ratio.max(prev.ratio * 1.001);
            }
            table.push((spec, Perf { speed, ratio }));
        }
        DataModel {
            name: name.into(),
            table,
            fallback_speed: speed_scale,
            fallback_ratio_pow: ratio_pow,
        }
    }

    /// Data described by a few measured settings (`anchors`: setting and per-thread
    /// performance, all on `ladder`), for reproducing a measurement: between two anchors,
    /// speed and ratio are interpolated log-linearly along the ladder; beyond the first or the
    /// last anchor they follow the reference shape from the nearest anchor (speed in
    /// proportion, ln(ratio) in proportion). Settings not on the ladder use the reference.
    ///
    /// # Panics
    ///
    /// If `anchors` is empty or names a setting that is not a codec rung of `ladder`.
    pub fn from_anchors(name: &str, ladder: &Ladder, anchors: &[(CodecSpec, Perf)]) -> DataModel {
        let mut pts: Vec<(usize, Perf)> = anchors
            .iter()
            .map(|&(spec, p)| {
                let i = ladder.position(spec).filter(|&i| i > 0);
                (i.unwrap_or_else(|| panic!("anchor {spec} is not a codec rung")), p)
            })
            .collect();
        pts.sort_by_key(|&(i, _)| i);
        assert!(!pts.is_empty(), "from_anchors needs at least one anchor");
        let rungs = ladder.rungs();
        // From anchor `a` along the reference shape to rung `i`.
        let shaped = |i: usize, (a, p): (usize, Perf)| {
            let (ri, ra) = (reference(rungs[i]), reference(rungs[a]));
            let pow = if ra.ratio > 1.0 { p.ratio.ln() / ra.ratio.ln() } else { 1.0 };
            Perf { speed: p.speed * ri.speed / ra.speed, ratio: (ri.ratio.ln() * pow).exp() }
        };
        let table = (1..ladder.len())
            .map(|i| {
                let below = pts.iter().rev().find(|&&(a, _)| a <= i).copied();
                let above = pts.iter().find(|&&(b, _)| b >= i).copied();
                let perf = match (below, above) {
                    (Some((a, pa)), Some((b, _))) if a == b => pa,
                    (Some((a, pa)), Some((b, pb))) => {
                        let t = (i - a) as f64 / (b - a) as f64;
                        let lerp = |x: f64, y: f64| (x.ln() * (1.0 - t) + y.ln() * t).exp();
                        Perf { speed: lerp(pa.speed, pb.speed), ratio: lerp(pa.ratio, pb.ratio) }
                    }
                    (Some(a), None) | (None, Some(a)) => shaped(i, a),
                    (None, None) => unreachable!("at least one anchor"),
                };
                (rungs[i], perf)
            })
            .collect();
        DataModel { name: name.into(), table, fallback_speed: 1.0, fallback_ratio_pow: 1.0 }
    }

    /// Data no codec can shrink (already compressed or random). LZ4 and zstd notice quickly
    /// and run faster than on compressible data; xz does not.
    pub fn incompressible(ladder: &Ladder) -> DataModel {
        let table = ladder
            .rungs()
            .iter()
            .skip(1)
            .map(|&spec| {
                let r = reference(spec);
                let speed = match spec.id() {
                    CodecId::Lz4 => r.speed * 4.0,
                    CodecId::Zstd => r.speed * 2.0,
                    _ => r.speed * 0.7,
                };
                (spec, Perf { speed, ratio: 1.0 })
            })
            .collect();
        DataModel {
            name: "incompressible".into(),
            table,
            fallback_speed: 1.0,
            fallback_ratio_pow: 0.0,
        }
    }

    /// The same data, every speed times `factor` (harder data, or CPU contention).
    pub fn with_speed_scale(&self, factor: f64) -> DataModel {
        let mut d = self.clone();
        d.name = format!("{} x{factor}", self.name);
        d.fallback_speed *= factor;
        for (_, p) in &mut d.table {
            p.speed *= factor;
        }
        d
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What `spec` achieves on this data, per thread.
    pub fn perf(&self, spec: CodecSpec) -> Perf {
        if let Some(&(_, p)) = self.table.iter().find(|(s, _)| *s == spec) {
            return p;
        }
        let r = reference(spec);
        Perf {
            speed: r.speed * self.fallback_speed,
            ratio: (r.ratio.ln() * self.fallback_ratio_pow).exp(),
        }
    }
}

/// A run of blocks of one kind of data, with the hints that cover it.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Number of blocks.
    pub blocks: u64,
    /// The data.
    pub data: DataModel,
    /// Hints covering every block of the segment.
    pub hints: Vec<Hint>,
    /// The class a block classifier would give the segment's blocks (0: unclassified).
    pub class: u8,
    /// What the slice a shadow measurement compresses costs, where it differs from the whole
    /// block (None: a slice compresses like its block). A 64 KiB slice gives a higher rung
    /// less to find than 1 MiB does, so real shadows misjudge rungs relative to each other.
    pub slice: Option<DataModel>,
}

impl Segment {
    /// `blocks` blocks of `data` without hints.
    pub fn new(blocks: u64, data: DataModel) -> Segment {
        Segment { blocks, data, hints: Vec::new(), class: 0, slice: None }
    }

    /// The same segment whose shadow slices compress as `slice` does.
    pub fn with_slice(mut self, slice: DataModel) -> Segment {
        self.slice = Some(slice);
        self
    }

    /// The same segment with its blocks classified as `class`.
    pub fn with_class(mut self, class: u8) -> Segment {
        self.class = class;
        self
    }

    /// The same segment with hints.
    pub fn with_hints(mut self, hints: Vec<Hint>) -> Segment {
        self.hints = hints;
        self
    }
}

/// The simulated machine and link.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Worker threads.
    pub threads: usize,
    /// Link speed, bytes/s.
    pub link: f64,
    /// Raw bytes per block.
    pub block_size: u64,
    /// Blocks allowed between a worker taking a block and the writer finishing its frame
    /// (the thesis' buffer pool: at least 2 x threads).
    pub buffers: usize,
    /// Per-thread speed of storing a block raw (copy and checksum), bytes/s.
    pub raw_speed: f64,
    /// Relative jitter of each block's speed (0.1 = ±10 %) and a third of it on its ratio.
    pub jitter: f64,
    /// Seed of the jitter and of the wall-time noise.
    pub seed: u64,
    /// Wall-time noise: each block's wall time is its CPU time times a factor drawn
    /// uniformly from `1..=wall_noise` (1 = none), the way a worker on a busy machine (the
    /// application's threads and the writer compete for the cores) takes 1-3x longer in wall
    /// time than in CPU time for the same work. The data model's speeds are the *mean* speeds
    /// the pipeline gets: the factor is divided by its mean, so noise changes how much one
    /// block's measurement says, not how fast the data compresses on average.
    pub wall_noise: f64,
    /// Measurements carry the blocks' CPU times (false: zero, as on a platform without
    /// per-thread CPU clocks, so the controller has only wall times).
    pub cpu_times: bool,
    /// Shadow compression as the pipeline does it: a block whose decision asks for a shadow
    /// costs its worker the slice at both rungs, and the controller is told what they
    /// measured. False (the default): shadows are ignored, as by a pipeline without them.
    pub shadows: bool,
    /// Bytes of buffer in front of the link (a pipe's 64 KiB, TCP's send and receive buffers,
    /// the page cache): a write lands in it at [`SINK_MEMORY_SPEED`] while it has room, and the
    /// link drains it at `link` bytes/s, also while the writer waits. 0 (the default): no
    /// buffer, every write takes its bytes over `link`, like the throttle's sink.
    pub sink_buffer: u64,
    /// How the process's first blocks are slowed after the machine idled ([`ColdStart`]).
    pub cold: ColdStart,
}

/// A cold start: a process's first blocks take longer after the machine idled
/// (docs/benchmarks/2026-11-28-cold-start). On the benchmark VM that is memory, not the
/// processor: buffers and codec contexts touched for the first time cost many microseconds a
/// page until the pipeline reuses them (docs/benchmarks/2026-11-29-cold-memory), an added cost
/// per block like [`ColdStart::Added`].
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[non_exhaustive]
pub enum ColdStart {
    /// None (the default).
    #[default]
    None,
    /// The first `blocks` blocks compress `factor` times slower at the first and less so up
    /// to the last (geometrically): `adz compress` after a few idle seconds measured its first
    /// 1 MiB zstd:1 blocks at 44-54 MB/s per thread, ten blocks later at its steady 400.
    Slower {
        /// Blocks slowed.
        blocks: u64,
        /// How many times slower the first of them compresses.
        factor: f64,
    },
    /// The first `blocks` blocks each take up to `seconds` longer (the first the most,
    /// decreasing linearly), whatever their rung, as a block-by-block comparison of cold and
    /// warm writes found (0-6 ms per block).
    Added {
        /// Blocks slowed.
        blocks: u64,
        /// Seconds added to the first of them.
        seconds: f64,
    },
}

impl ColdStart {
    /// Block `seq`'s (factor on its compression time, seconds added to it).
    fn cost(self, seq: u64) -> (f64, f64) {
        match self {
            ColdStart::Slower { blocks, factor }
                if seq < blocks && factor.is_finite() && factor > 1.0 =>
            {
                (factor.powf(1.0 - seq as f64 / blocks as f64), 0.0)
            }
            ColdStart::Added { blocks, seconds }
                if seq < blocks && seconds.is_finite() && seconds > 0.0 =>
            {
                (1.0, seconds * (1.0 - seq as f64 / blocks as f64))
            }
            _ => (1.0, 0.0),
        }
    }
}

/// How fast a buffered sink ([`SimConfig::sink_buffer`]) takes bytes while it has room, bytes/s
/// (a memory copy).
pub const SINK_MEMORY_SPEED: f64 = 4e9;

impl SimConfig {
    /// `threads` workers, a link of `link` bytes/s, 1 MiB blocks, 2 x threads buffers, raw
    /// stored at 8 GB/s per thread, no jitter.
    pub fn new(threads: usize, link: f64) -> SimConfig {
        let threads = threads.max(1);
        SimConfig {
            threads,
            link,
            block_size: 1 << 20,
            buffers: 2 * threads,
            raw_speed: 8e9,
            jitter: 0.0,
            seed: 1,
            wall_noise: 1.0,
            cpu_times: true,
            shadows: false,
            sink_buffer: 0,
            cold: ColdStart::None,
        }
    }

    /// The same configuration with a cold start ([`ColdStart`]).
    pub fn with_cold_start(mut self, cold: ColdStart) -> SimConfig {
        self.cold = cold;
        self
    }

    /// The same configuration with `bytes` of buffer in front of the link
    /// ([`SimConfig::sink_buffer`]).
    pub fn with_sink_buffer(mut self, bytes: u64) -> SimConfig {
        self.sink_buffer = bytes;
        self
    }

    /// The same configuration with jitter.
    pub fn with_jitter(mut self, jitter: f64, seed: u64) -> SimConfig {
        self.jitter = jitter;
        self.seed = seed;
        self
    }

    /// The same configuration with wall-time noise of up to `max` x the CPU time.
    pub fn with_wall_noise(mut self, max: f64, seed: u64) -> SimConfig {
        self.wall_noise = max;
        self.seed = seed;
        self
    }

    /// Write `segments` through the pipeline, asking `ctl` for every block's decision.
    pub fn run(&self, ctl: &mut impl Control, segments: &[Segment]) -> SimReport {
        let keep = ctl.keep_threshold();
        let mut schedule = Schedule::new(self.threads, self.buffers);
        let mut pending: Vec<(f64, u8, u64, Event)> = Vec::new();
        let mut blocks: Vec<SimBlock> = Vec::new();
        let mut raw_offset = 0u64;
        let mut seq = 0u64;
        // Bytes in the sink's buffer when the last write ended.
        let mut level = 0.0f64;
        for (si, seg) in segments.iter().enumerate() {
            for _ in 0..seg.blocks {
                let k = blocks.len();
                let start = schedule.start(0.0);
                deliver(ctl, &mut pending, start);

                let raw = self.block_size;
                let ctx = BlockContext {
                    raw_offset,
                    raw_len: raw as usize,
                    hints: &seg.hints,
                    class: seg.class,
                };
                let decision = ctl.next_block(&ctx);
                let (jit_speed, jit_ratio) = self.jitter_for(seq);
                let (slower, added) = self.cold.cost(seq);
                let jit_speed = jit_speed / slower;
                let (speed, ratio) = if decision.codec == CodecSpec::NONE {
                    (self.raw_speed, 1.0)
                } else {
                    let p = seg.data.perf(decision.codec);
                    (p.speed * jit_speed, (p.ratio * jit_ratio).max(1.0))
                };
                let shadow =
                    self.shadow_for(seg, decision, raw, (speed, ratio), (jit_speed, jit_ratio));
                let shadow_secs =
                    shadow.map_or(0.0, |s| s.base_cpu.as_secs_f64() + s.cpu.as_secs_f64());
                let compressed = (raw as f64 / ratio).ceil() as u64;
                let stored_raw =
                    decision.codec != CodecSpec::NONE && compressed as f64 > raw as f64 * keep;
                let stored =
                    if decision.codec == CodecSpec::NONE || stored_raw { raw } else { compressed };
                // Mean wall time; the CPU time is what is left without the noise.
                let mean = raw as f64 / speed;
                let noise = self.noise_for(seq);
                let secs = mean * noise.0 + added;
                let cpu = mean * noise.1 + added;
                // The worker is busy with the shadow too; the block's own times leave it out,
                // as the pipeline's do.
                let busy_worker = secs + shadow_secs * noise.0;
                let frame = (stored + FRAME_HEADER) as f64;
                let busy = if self.sink_buffer == 0 {
                    frame / self.link
                } else {
                    let begin = (start + busy_worker).max(schedule.end());
                    let (busy, after) = self.buffered_write(level, begin - schedule.end(), frame);
                    level = after;
                    busy
                };
                let Slot { finish, prev_end, write_end, .. } = schedule.finish(busy_worker, busy);
                // The frame was ready before the link freed: the write starts at once.
                let backlogged = k > 0 && finish <= prev_end;
                let waited = if k > 0 { finish.max(prev_end) - prev_end } else { 0.0 };

                let m = BlockMeasurement {
                    decision,
                    raw_len: raw,
                    stored_len: stored,
                    stored_raw,
                    wall: Duration::from_secs_f64(secs),
                    cpu: if self.cpu_times { Duration::from_secs_f64(cpu) } else { Duration::ZERO },
                };
                pending.push((finish, 0, seq, Event::Block(m, shadow)));
                let s = sink_measurement(stored + FRAME_HEADER, busy, backlogged, raw, waited);
                pending.push((write_end, 1, seq, Event::Sink(s)));
                blocks.push(SimBlock {
                    seq,
                    segment: si,
                    decision,
                    raw,
                    stored,
                    stored_raw,
                    start,
                    finish,
                    write_end,
                });
                raw_offset += raw;
                seq += 1;
            }
        }
        deliver(ctl, &mut pending, f64::INFINITY);
        let tail = level / self.link;
        SimReport { link: self.link, threads: self.threads, blocks, tail }
    }

    /// A write of `frame` bytes into the sink's buffer, `gap` seconds after the previous write
    /// ended with `level` bytes in it: its busy time, and the bytes in the buffer when it ends.
    /// What fits goes at memory speed; the rest waits for the link to drain room for it.
    fn buffered_write(&self, level: f64, gap: f64, frame: f64) -> (f64, f64) {
        let cap = self.sink_buffer as f64;
        let start = (level - self.link * gap).max(0.0);
        let copy = frame / SINK_MEMORY_SPEED;
        let busy =
            if start + frame <= cap { copy } else { copy.max((start + frame - cap) / self.link) };
        (busy, (start + frame - self.link * busy).clamp(0.0, cap))
    }

    /// The shadow measurement of a block decided `decision` if the run makes shadows: its
    /// slice at the block's codec (`(speed, ratio)`) and at the shadow rung, with the block's
    /// jitter; its ratios are the segment's `slice` where it has one.
    fn shadow_for(
        &self,
        seg: &Segment,
        decision: Decision,
        raw: u64,
        (speed, ratio): (f64, f64),
        (jit_speed, jit_ratio): (f64, f64),
    ) -> Option<ShadowMeasurement> {
        let shadow = decision.shadow.filter(|_| {
            self.shadows
                && decision.codec != CodecSpec::NONE
                && !seg.hints.contains(&Hint::NoCompress)
        });
        shadow.map(|s| {
            let slice = (SHADOW_BYTES as u64).min(raw);
            let p = seg.data.perf(s);
            let (sp, mut sr) = (p.speed * jit_speed, (p.ratio * jit_ratio).max(1.0));
            let mut base_ratio = ratio;
            if let Some(d) = &seg.slice {
                sr = (d.perf(s).ratio * jit_ratio).max(1.0);
                base_ratio = (d.perf(decision.codec).ratio * jit_ratio).max(1.0);
            }
            let base_secs = slice as f64 / speed;
            let secs = slice as f64 / sp;
            ShadowMeasurement {
                decision,
                raw_len: slice,
                base_stored: (slice as f64 / base_ratio).ceil() as u64,
                base_cpu: Duration::from_secs_f64(base_secs),
                stored: (slice as f64 / sr).ceil() as u64,
                cpu: Duration::from_secs_f64(secs),
            }
        })
    }

    /// Uniform in [0, 1), deterministic in the seed, the block and the salt.
    fn uniform(&self, seq: u64, salt: u64) -> f64 {
        (splitmix64(self.seed ^ seq.wrapping_mul(0x9e37) ^ salt) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn jitter_for(&self, seq: u64) -> (f64, f64) {
        if self.jitter <= 0.0 {
            return (1.0, 1.0);
        }
        let u = |salt| self.uniform(seq, salt);
        (1.0 + self.jitter * (2.0 * u(1) - 1.0), 1.0 + self.jitter / 3.0 * (2.0 * u(2) - 1.0))
    }

    /// (wall, cpu) of a block relative to its mean wall time.
    fn noise_for(&self, seq: u64) -> (f64, f64) {
        if !(self.wall_noise.is_finite() && self.wall_noise > 1.0) {
            return (1.0, 1.0);
        }
        let mean = (1.0 + self.wall_noise) / 2.0;
        let factor = 1.0 + (self.wall_noise - 1.0) * self.uniform(seq, 3);
        (factor / mean, 1.0 / mean)
    }
}

#[derive(Debug, Clone)]
enum Event {
    Block(BlockMeasurement, Option<ShadowMeasurement>),
    Sink(SinkMeasurement),
}

/// Give the controller every event that has happened by `now`, in time order.
fn deliver(ctl: &mut impl Control, pending: &mut Vec<(f64, u8, u64, Event)>, now: f64) {
    let mut due: Vec<_> = Vec::new();
    let mut i = 0;
    while i < pending.len() {
        if pending[i].0 <= now {
            due.push(pending.swap_remove(i));
        } else {
            i += 1;
        }
    }
    due.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    for (_, _, _, e) in due {
        match e {
            Event::Block(m, shadow) => {
                if let Some(s) = shadow {
                    ctl.record_shadow(&s);
                }
                ctl.record_block(&m)
            }
            Event::Sink(s) => ctl.record_sink(&s),
        }
    }
}

/// What the sink reports of a frame of `bytes` (`raw` raw bytes) that took `busy` seconds on
/// the sink after a wait of `waited` (link time, or with a buffered sink what the buffer made
/// of it); `backlogged` says, as the real sequencer does, whether the frame was waiting.
/// No pipeline CPU time: the simulated raw path is the workers' alone.
fn sink_measurement(
    bytes: u64,
    busy: f64,
    backlogged: bool,
    raw: u64,
    waited: f64,
) -> SinkMeasurement {
    SinkMeasurement {
        bytes,
        busy: Duration::from_secs_f64(busy),
        backlogged,
        raw,
        waited: Duration::from_secs_f64(waited),
        cpu: Duration::ZERO,
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One simulated block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimBlock {
    /// Block number.
    pub seq: u64,
    /// Index of the segment it belongs to.
    pub segment: usize,
    /// The controller's decision.
    pub decision: Decision,
    /// Raw bytes.
    pub raw: u64,
    /// Payload bytes stored.
    pub stored: u64,
    /// Compressed but not kept.
    pub stored_raw: bool,
    /// When a worker took it, seconds.
    pub start: f64,
    /// When the worker finished it.
    pub finish: f64,
    /// When its frame was written.
    pub write_end: f64,
}

/// The outcome of a simulated write.
#[derive(Debug, Clone, PartialEq)]
pub struct SimReport {
    /// Link speed of the run.
    pub link: f64,
    /// Worker threads of the run.
    pub threads: usize,
    /// Every block, in order.
    pub blocks: Vec<SimBlock>,
    /// Seconds the sink's buffer takes to drain after the last write (0 without a buffer).
    pub tail: f64,
}

impl SimReport {
    /// Seconds until the last frame was written and, with a buffered sink, sent.
    pub fn time(&self) -> f64 {
        self.blocks.last().map_or(0.0, |b| b.write_end + self.tail)
    }

    /// Raw bytes written.
    pub fn raw_bytes(&self) -> u64 {
        self.blocks.iter().map(|b| b.raw).sum()
    }

    /// Payload bytes stored.
    pub fn stored_bytes(&self) -> u64 {
        self.blocks.iter().map(|b| b.stored).sum()
    }

    /// Raw bytes per second of the whole write.
    pub fn throughput(&self) -> f64 {
        let t = self.time();
        if t > 0.0 {
            self.raw_bytes() as f64 / t
        } else {
            0.0
        }
    }

    /// raw bytes / stored bytes.
    pub fn ratio(&self) -> f64 {
        self.raw_bytes() as f64 / self.stored_bytes().max(1) as f64
    }

    /// Raw bytes per second over blocks `from..to` (by when their frames were written).
    pub fn throughput_of(&self, from: usize, to: usize) -> f64 {
        let to = to.min(self.blocks.len());
        if from >= to {
            return 0.0;
        }
        let t0 = if from == 0 { 0.0 } else { self.blocks[from - 1].write_end };
        let t = self.blocks[to - 1].write_end - t0;
        let raw: u64 = self.blocks[from..to].iter().map(|b| b.raw).sum();
        if t > 0.0 {
            raw as f64 / t
        } else {
            0.0
        }
    }
}
