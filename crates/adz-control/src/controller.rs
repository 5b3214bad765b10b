//! The controller: told measurements, asked for the next block's codec, level and filters.

use std::fmt;
use std::time::Duration;

use adz_format::{CodecId, CodecSpec, FilterSpec, Filters};

use crate::hint::Hint;
use crate::ladder::{entropy_coded, Ladder};
use crate::model::{LinkEstimator, Model, Rates, Sample};
use crate::strategy::{Link, Strategy};

/// The controller's settings. [`ControllerConfig::new`] fills every tunable with its default;
/// the crate docs say why each default is what it is.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ControllerConfig {
    /// What to optimise.
    pub strategy: Strategy,
    /// The link speed, or `Auto` to measure it from the sink.
    pub link: Link,
    /// Compression worker threads (0 is taken as 1).
    pub threads: usize,
    /// The rungs to move along.
    pub ladder: Ladder,
    /// Where to start. `None`: with a fixed link, the rung the reference table says fits
    /// (assuming the machine is only half as fast as the reference); with `Link::Auto`, until
    /// the first sink measurement, zstd:1. A setting not on the ladder starts at the ladder
    /// rung nearest to it in speed. Default `None`.
    pub start: Option<CodecSpec>,
    /// Nominal block size in bytes; shorter blocks weigh less in the estimates. Default 1 MiB.
    pub block_size: u64,
    /// Dead band (S2/S3; S1 uses `throughput_margin`): compression must be this much faster
    /// than the target (0.10 = 10 %) before the controller spends more effort. Default 0.10.
    pub dead_band: f64,
    /// Consecutive confirming fresh measurements of the current rung (S2/S3: all faster than
    /// target by more than the dead band; S1: none clearly slower than predicted) needed
    /// before the controller spends more effort. Default 3.
    pub confirm: u32,
    /// Weight of a measurement slower than the estimate (0..=1). Default 0.7.
    pub alpha_slow: f64,
    /// Weight of a measurement faster than the estimate (0..=1). Default 0.15.
    pub alpha_fast: f64,
    /// Weight of a measurement in a rung's own correction, and in the ratio level. Default 0.3.
    pub alpha_rung: f64,
    /// Half-life, in compression attempts, of what the controller knows about one rung
    /// relative to the others once it stops measuring it. Default 4096.
    pub rung_memory: f64,
    /// A compressed block is kept only if `stored <= raw * keep_threshold`. Default 0.97.
    pub keep_threshold: f64,
    /// Incompressible results in a row that switch to probe mode; 0 disables probe mode.
    /// Default 1; 0 for a static strategy.
    pub probe_after: u32,
    /// Blocks between probes when probe mode starts; doubles after each failed probe.
    /// Default 4.
    pub probe_interval_min: u64,
    /// Most blocks between probes: the bound on how late compressible data after an
    /// incompressible stretch is noticed. Default 10.
    pub probe_interval_max: u64,
    /// Probe settings, used in turn. Default lz4:1, zstd:1.
    pub probe_rungs: Vec<CodecSpec>,
    /// Half-life of the link estimate, in bytes written. Default 32 MiB.
    pub link_memory_bytes: u64,
    /// The most rungs one move towards more effort may climb. Default 2. Speeds measured on
    /// one kind of data extrapolate badly to the next (sparse data compresses ten times
    /// faster than text at every level), and a rung that is too slow costs far more time per
    /// block than one that is too fast costs ratio; capping the climb bounds what a wrong
    /// extrapolation can cost before the next measurement corrects it.
    pub max_climb: usize,
    /// S1 (throughput) hysteresis: the current rung is left for a faster one only when its
    /// predicted write throughput is below the best rung's by more than this (0.05 = 5 %),
    /// and rungs within it of the best count as equally fast, the best ratio among them
    /// winning. Default 0.05.
    pub throughput_margin: f64,
    /// S2/S3: a write ahead of its target's schedule spends what it saved over about this
    /// many blocks plus the pipeline's depth (2 per worker), aiming below the target (at most
    /// at half of it); 0 turns the schedule off, so that the lane holds the slowest rung that
    /// meets the target. Default 8.
    ///
    /// Through 117 MB/s on two cores, a kernel tar's S2 and S3 writes take 0.98-1.01 of their
    /// target time with it, and 0.79-0.92 without. Doubles (ratio 1.05) overshoot with or
    /// without it: S2 takes 1.03-1.10x its target with it and 1.00-1.16x without (4 runs
    /// each). At zstd:15 both cores are busy, the ordered writer is starved of CPU, and the
    /// link runs at 112 MB/s instead of 117.
    pub schedule_blocks: f64,
    /// CPUs the pipeline may use (0: as many as `threads`). With the pipeline's CPU time in
    /// [`SinkMeasurement::cpu`] it says how much CPU is left for compression while the link
    /// is the bottleneck (see [`Controller::pipeline_raw_speed`]).
    pub cpus: usize,
    /// Shadow compression ([`Decision::shadow`]) may cost at most this share of the CPU the
    /// blocks' own compression took; 0 turns it off. Default 0.03.
    pub shadow_share: f64,
}

impl ControllerConfig {
    /// A configuration with the standard ladder and every tunable at its default.
    pub fn new(strategy: Strategy, link: Link, threads: usize) -> Self {
        let spec = |id, p| CodecSpec::new(id, p).expect("valid default probe");
        ControllerConfig {
            strategy,
            link,
            threads,
            ladder: Ladder::standard(),
            start: None,
            block_size: 1 << 20,
            dead_band: 0.10,
            confirm: 3,
            alpha_slow: 0.7,
            alpha_fast: 0.15,
            alpha_rung: 0.3,
            rung_memory: 4096.0,
            keep_threshold: 0.97,
            // Static means one codec and level: a block it cannot shrink is stored raw, but
            // there is no probe mode (raw without an attempt, probes with other codecs).
            probe_after: if matches!(strategy, Strategy::Static(_)) { 0 } else { 1 },
            probe_interval_min: 4,
            probe_interval_max: 10,
            probe_rungs: vec![spec(CodecId::Lz4, 1), spec(CodecId::Zstd, 1)],
            link_memory_bytes: 32 << 20,
            max_climb: 2,
            throughput_margin: 0.05,
            schedule_blocks: 8.0,
            cpus: 0,
            shadow_share: SHADOW_SHARE,
        }
    }

    /// The same configuration starting at `start`.
    pub fn with_start(mut self, start: CodecSpec) -> Self {
        self.start = Some(start);
        self
    }

    /// The same configuration with another schedule length (0: no schedule).
    pub fn with_schedule(mut self, blocks: f64) -> Self {
        self.schedule_blocks = blocks;
        self
    }

    /// The same configuration for a machine with `cpus` CPUs.
    pub fn with_cpus(mut self, cpus: usize) -> Self {
        self.cpus = cpus;
        self
    }

    /// The same configuration with another ladder.
    pub fn with_ladder(mut self, ladder: Ladder) -> Self {
        self.ladder = ladder;
        self
    }
}

/// What the pipeline tells the controller about a block before asking.
#[derive(Clone, Copy, Debug)]
pub struct BlockContext<'a> {
    /// Offset of the block's first byte in the raw data.
    pub raw_offset: u64,
    /// Raw length of the block.
    pub raw_len: usize,
    /// The hints that apply to this block's range (the pipeline cuts blocks at hint borders).
    pub hints: &'a [Hint],
    /// The kind of data the block holds, as a cheap look at its bytes classified it (0: not
    /// classified). A [`ClassedController`](crate::ClassedController) keeps a controller per
    /// class; a plain [`Controller`] ignores it.
    pub class: u8,
}

/// Why the controller decided what it did (for tracing and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// Nothing measured yet (or, with `Link::Auto`, no sink measurement yet): the start rung.
    Start,
    /// The current rung meets the target and there is no confirmed reason to move.
    Hold,
    /// Compression was slower than the target: moved to a faster rung (or started mixing).
    TooSlow,
    /// Compression was faster than the target by more than the dead band, confirmed by
    /// several fresh measurements: moved to a slower rung.
    Headroom,
    /// No codec is fast enough: a mix of raw and compressed blocks; this block compressed.
    MixCompress,
    /// No codec is fast enough: a mix of raw and compressed blocks; this block sent raw.
    MixRaw,
    /// Probe mode (the data has been incompressible): sent raw without an attempt.
    Incompressible,
    /// Probe mode: a cheap attempt to see whether the data compresses again.
    Probe,
    /// `static=C:L`.
    Static,
    /// `archive`: the last rung.
    Archive,
    /// S2/S3: the target lies between the current rung (faster) and the next (slower); this
    /// block goes to the next rung so that the blend of the two takes the target's time.
    Blend,
    /// A `no-compress` hint covers the block.
    HintNoCompress,
    /// A rung without an entropy stage (LZ4, zstd's negative levels) stored a block raw that
    /// an entropy coder may shrink: moved to the first rung with one (zstd:1).
    BlindRung,
    /// S1: a faster rung writes as fast and its ratio is as good (within 1 %); S2/S3: a
    /// faster rung that meets the target stores as much (within 0.25 %, both measured on data
    /// that compresses evenly). Moved to it: the slower rung bought nothing.
    SameRatio,
}

/// The controller's answer for one block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// The codec and level ([`CodecSpec::NONE`]: store raw, no attempt).
    pub codec: CodecSpec,
    /// Filters to apply before the codec.
    pub filters: Filters,
    /// Why.
    pub reason: Reason,
    /// The block's number: 0, 1, 2, ... in `next_block` order. Lets the controller tell a
    /// late measurement from a fresh one.
    pub seq: u64,
    /// Shadow compression: also compress [`SHADOW_BYTES`] of this block with this rung and
    /// with `codec`, and report both ([`Control::record_shadow`]), so that the controller keeps
    /// learning rungs it does not use. None: no shadow.
    pub shadow: Option<CodecSpec>,
}

/// Bytes of a block a shadow measurement compresses (its middle, or all of a shorter block).
pub const SHADOW_BYTES: usize = 64 << 10;

/// The default [`ControllerConfig::shadow_share`]: Blosc2's tuner and issue 22 bound the cost
/// of learning at a few per cent of the compression work.
const SHADOW_SHARE: f64 = 0.03;

/// A rung is shadowed again once it has not been measured for this many attempts.
const SHADOW_AGE: u64 = 64;

/// Where the shadow candidates lie from the current rung, in the order they are looked at:
/// more effort first (ratio the strategy may be missing), then less.
const SHADOW_OFFSETS: [isize; 6] = [1, 2, -1, 3, -2, 4];

/// What a worker measured for a block's shadow ([`Decision::shadow`]): the same slice
/// compressed with the block's own codec and with the shadow rung, so that the two compare on
/// the same bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShadowMeasurement {
    /// The block's decision, as `next_block` returned it.
    pub decision: Decision,
    /// Raw bytes of the slice.
    pub raw_len: u64,
    /// The slice compressed with the block's codec: stored bytes.
    pub base_stored: u64,
    /// CPU time of that compression.
    pub base_cpu: Duration,
    /// The slice compressed with the shadow rung: stored bytes.
    pub stored: u64,
    /// CPU time of that compression.
    pub cpu: Duration,
}

/// Measured after compressing one block (by a worker).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockMeasurement {
    /// The decision the block was compressed with, as `next_block` returned it.
    pub decision: Decision,
    /// Raw bytes.
    pub raw_len: u64,
    /// Stored payload bytes, after the raw fallback.
    pub stored_len: u64,
    /// The compressed result was not kept (see [`Controller::keep_threshold`]).
    pub stored_raw: bool,
    /// Wall-clock time the worker spent on the block (filters + codec).
    pub wall: Duration,
    /// CPU time the worker's thread spent on it.
    pub cpu: Duration,
}

/// Measured at the sink: bytes accepted and how long the sink was busy writing them (time
/// blocked in the sink's write call). With a throttled or slow sink, busy ≈ bytes / link speed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SinkMeasurement {
    /// Bytes written.
    pub bytes: u64,
    /// Time spent in the write call.
    pub busy: Duration,
    /// The frame was already waiting when the previous write finished, so this write started
    /// at once and its time is pure sink time. After an idle gap a sink may take a frame at
    /// once (socket buffers, a throttle's burst credit), which would make the link look faster
    /// than it is: once any backlogged write has been seen, only backlogged writes measure
    /// the link.
    pub backlogged: bool,
    /// Raw bytes the frame holds (0: unknown; the write then tells nothing of the pipeline's
    /// pace).
    pub raw: u64,
    /// How long the sink waited for this frame after its previous write ended (zero for the
    /// first frame, whose wait is the write's start-up, and for a backlogged one). With
    /// `busy` it makes the write's elapsed time, from which the controller learns what the
    /// whole pipeline costs per raw byte (see [`Controller::pipeline_raw_speed`]).
    pub waited: Duration,
    /// CPU time the pipeline's threads spent (the feeder reading and cutting blocks, the
    /// workers, the sequencer) since the previous sink measurement (zero: not measured); not
    /// the application's own computing. Less the workers' compression time, it is what moving
    /// the raw bytes costs (reads, copies, checksums, writes), which the sink's clock alone
    /// cannot tell while the link is the bottleneck.
    pub cpu: Duration,
}

/// What mode the controller is in (for [`Status`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Mode {
    /// At the start rung, waiting for the first measurements.
    Start,
    /// Adapting the rung to the target.
    Adapt,
    /// No codec is fast enough: `compress_fraction` of the blocks are compressed, the rest
    /// sent raw (0 = all raw).
    Mix {
        /// Fraction of blocks compressed, 0..1.
        compress_fraction: f64,
    },
    /// The data has been incompressible: blocks go raw, with an occasional probe.
    Probe,
    /// `static` or `archive`: a fixed rung.
    Fixed,
}

/// A snapshot of the controller for tracing and progress display.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Status {
    /// The configured strategy.
    pub strategy: Strategy,
    /// The current rung (for blocks without hints). In mix mode, the rung of the compressed
    /// blocks; [`CodecSpec::NONE`] when everything goes raw.
    pub rung: CodecSpec,
    /// The mode.
    pub mode: Mode,
    /// Target aggregate compression speed, raw bytes/s (None for archive and static, and
    /// while the link is unknown).
    pub target: Option<f64>,
    /// Estimated aggregate compression speed of all threads at `rung`, raw bytes/s (None
    /// before the first measurement).
    pub speed: Option<f64>,
    /// Estimated ratio at `rung` (None before the first measurement).
    pub ratio: Option<f64>,
    /// Link speed in use, bytes/s (None while `Link::Auto` has no sink measurement).
    pub link: Option<f64>,
    /// CPU time / wall time of the workers' blocks (1 / their smoothed wall/CPU ratio): below
    /// 1 when they compete for cores.
    pub cpu_share: Option<f64>,
    /// Blocks decided so far.
    pub blocks: u64,
    /// Shadow measurements made ([`Decision::shadow`]).
    pub shadows: u64,
    /// Their CPU time over the CPU time of the blocks' own compression.
    pub shadow_share: f64,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mbs =
            |v: Option<f64>| v.map_or_else(|| "?".to_owned(), |v| format!("{:.1} MB/s", v / 1e6));
        write!(f, "{} {}", self.strategy, self.rung)?;
        match self.mode {
            Mode::Start => f.write_str(" (start)")?,
            Mode::Mix { compress_fraction } => {
                write!(f, " (mix {:.0} %)", compress_fraction * 100.0)?
            }
            Mode::Probe => f.write_str(" (probe)")?,
            Mode::Adapt | Mode::Fixed => {}
        }
        write!(
            f,
            " target {} speed {} link {}",
            mbs(self.target),
            mbs(self.speed),
            mbs(self.link)
        )?;
        if let Some(r) = self.ratio {
            write!(f, " ratio {r:.2}")?;
        }
        Ok(())
    }
}

/// The adaptive state for one effective strategy (hints can switch a range to another one).
#[derive(Clone, Debug)]
struct Lane {
    strategy: Strategy,
    /// Ladder index >= 1: the rung in use, or in mix mode the rung of the compressed blocks.
    rung: usize,
    mixing: bool,
    mix_acc: f64,
    mix_fraction: f64,
    /// First block decided at the current rung/mode: measurements of older blocks are stale
    /// for this lane's move decisions.
    since: u64,
    /// Fresh measurements at the current rung.
    fresh: u32,
    /// Consecutive fresh measurements that confirm spending more effort: for S2/S3 faster than
    /// the target by more than the dead band; for S1 not clearly slower than predicted.
    streak: u32,
    /// False until the link is known (Link::Auto): the lane holds its start rung.
    started: bool,
    /// The rung was tried although predicted slightly too slow (never measured before).
    tentative: bool,
    /// S2/S3: the share of blocks sent to rung `blend_to` (see [`Controller::blend_fraction`]).
    blend: f64,
    blend_to: usize,
    blend_acc: f64,
    /// Why the lane moved outside a decision (reported with its next block).
    note: Option<Reason>,
    /// Moved on a measurement rather than a prediction (see [`Reason::BlindRung`]): the
    /// rung is held until its first fresh measurement.
    held: bool,
}

#[derive(Clone, Debug)]
struct ProbeState {
    interval: u64,
    next_due: u64,
    /// Probe rung used next (index into probe_rungs).
    turn: usize,
    /// The block whose result started probe mode.
    entered_at: u64,
    /// The rung that block was compressed at, if a costlier rung had just compressed the
    /// same data (see [`SAVER_WINDOW`]): that rung, not the data, failed, and a lane at it
    /// goes on from the probe's rung when a probe compresses.
    failed: Option<usize>,
}

/// [`BlockContext::class`] of random-looking data: order-0 entropy above 7.8 bits per byte,
/// where an entropy coder saves under the keep threshold's 3 %.
const RANDOM_CLASS: u8 = 4;

/// A blind rung's failure moves the lanes to the first entropy rung only while the model's
/// confidence in that rung's speed is at most this (it halves every `rung_memory` attempts):
/// a rung measured lately is known, and S1 may rightly prefer a blind rung or raw to it.
const BLIND_RECHECK: f64 = 0.25;

/// Blocks within which a compressible result at a costlier rung makes a block stored raw the
/// failure of its rung rather than of the data: zstd's negative levels and LZ4 store float
/// arrays raw where zstd:1 saves 10 %.
const SAVER_WINDOW: u64 = 16;

/// What a futile probe may cost beyond the raw block it stands in for, as a share of the
/// link's time. A probe is futile when it compresses, the lanes resume, and within
/// [`SAVER_WINDOW`] blocks the data is back in probe mode: the strategy has no use for the
/// rung that compressed (S1 at a link faster than that rung, on data that its cheaper rungs
/// store raw). Such a rung's probes are then put off until the blocks sent raw in between
/// carry `1 / PROBE_COST_SHARE` times what it cost. A probe holds the in-order link up for
/// as long as it takes: at 1200 MB/s a zstd:1 probe of float data (10 ms) stands for 11
/// blocks' link time, and the loop (zstd:1 probe, resume, a fast rung stored raw, probe
/// mode) every 8 blocks made a 256 MiB write of a solver's matrix 0.68x raw. Probes that fail
/// keep their pace of 4-10 blocks: they are how data that compresses again is noticed
/// (climate fields at 1200 MB/s wrote 5 % slower when failed probes were put off as well).
/// Unless compression has nothing to gain (the raw path alone cannot keep up with the link):
/// then every probe is paced by its cost ([`Controller::futile_wait`]). Through 6000 MB/s on
/// two cores a probe of the kernel's `.tar.xz` took about 1 ms, five blocks' link time,
/// every 10 blocks, and S1 wrote at 0.72 of raw.
const PROBE_COST_SHARE: f64 = 0.05;

/// The most blocks a probe is put off by its cost.
const PROBE_PACE_MAX: u64 = 4096;

/// The fewest blocks before a probe at `codec`, from what its last probe cost (`costs`).
fn probe_pace(costs: &[(CodecSpec, f64)], codec: CodecSpec) -> u64 {
    costs.iter().find(|(c, _)| *c == codec).map_or(0, |&(_, extra)| pace_of(extra))
}

/// The blocks sent raw that carry a probe costing `extra` blocks' link time beyond its own.
fn pace_of(extra: f64) -> u64 {
    ((extra / PROBE_COST_SHARE).ceil() as u64).min(PROBE_PACE_MAX)
}

/// What a pipeline (or the simulator) needs of a controller: [`Controller`] and
/// [`ClassedController`](crate::ClassedController) both are one.
pub trait Control {
    /// Decide the next block's codec, level and filters.
    fn next_block(&mut self, ctx: &BlockContext) -> Decision;
    /// What a worker measured for one block.
    fn record_block(&mut self, m: &BlockMeasurement);
    /// What the sink measured for one write.
    fn record_sink(&mut self, m: &SinkMeasurement);
    /// A compressed block is kept only if `stored <= raw * keep_threshold()`.
    fn keep_threshold(&self) -> f64;
    /// The current state, for progress and traces.
    fn status(&self) -> Status;
    /// What a worker measured for a block's shadow (call it before that block's
    /// `record_block`).
    fn record_shadow(&mut self, m: &ShadowMeasurement);
}

impl Control for Controller {
    fn next_block(&mut self, ctx: &BlockContext) -> Decision {
        Controller::next_block(self, ctx)
    }
    fn record_block(&mut self, m: &BlockMeasurement) {
        Controller::record_block(self, m)
    }
    fn record_sink(&mut self, m: &SinkMeasurement) {
        Controller::record_sink(self, m)
    }
    fn keep_threshold(&self) -> f64 {
        Controller::keep_threshold(self)
    }
    fn status(&self) -> Status {
        Controller::status(self)
    }
    fn record_shadow(&mut self, m: &ShadowMeasurement) {
        Controller::record_shadow(self, m)
    }
}

/// The controller. It owns no threads and does no I/O: the pipeline asks it for every block's
/// decision ([`next_block`](Controller::next_block)) and tells it what happened
/// ([`record_block`](Controller::record_block), [`record_sink`](Controller::record_sink)).
#[derive(Clone, Debug)]
pub struct Controller {
    cfg: ControllerConfig,
    threads: f64,
    fixed_link: Option<f64>,
    link: LinkEstimator,
    /// Smoothed share of sink writes that were backlogged (None before the first write after
    /// the pipeline's fill).
    sink_backlog: Option<f64>,
    /// Sink writes reported so far.
    sink_writes: u64,
    /// The pipeline's pace as the sink saw it (see [`Controller::pipeline_raw_speed`]).
    pipe: PipeWindow,
    model: Model,
    lanes: Vec<Lane>,
    probe: Option<ProbeState>,
    incompressible_run: u32,
    /// Compression attempts decided and not yet measured.
    outstanding: u64,
    last_attempt: Option<u64>,
    /// The rung and sequence number of the latest block that compressed.
    last_saver: Option<(usize, u64)>,
    /// Per probe rung, what its last futile probe cost beyond a raw block's link time, in
    /// link times of a block (see [`PROBE_COST_SHARE`]).
    probe_costs: Vec<(CodecSpec, f64)>,
    /// The last probe that compressed and ended probe mode: its block, rung and cost (as
    /// in `probe_costs`; None with the link unknown).
    probe_exit: Option<(u64, CodecSpec, Option<f64>)>,
    /// Per probe rung, what its last failed probe cost, as in `probe_costs`: paces the
    /// probes while compression has nothing to gain ([`Controller::futile_wait`]).
    failed_costs: Vec<(CodecSpec, f64)>,
    seq: u64,
    /// The model's clock: compression attempts decided. Blocks sent raw (hints, probe mode,
    /// mixes) do not age what the model knows about the data that compresses.
    clock: u64,
    /// Smoothed wall time / CPU time of the workers' blocks (each block's at most
    /// STRETCH_CLIP times the smoothed one).
    stretch: Option<f64>,
    /// S2/S3: seconds the write is ahead of its target's schedule (negative: behind), as the
    /// sink saw it (see [`Controller::aim`]).
    schedule: f64,
    /// The raw path's CPU seconds per raw byte as measured before the write (see
    /// [`Controller::set_path_cost`]): stands in for the pipeline's own figure until the sink
    /// has reported [`PIPE_MIN_WRITES`] writes.
    path_prior: Option<f64>,
    /// Seconds per raw byte of the pipeline's slowest one-thread stage, measured before the
    /// write (see [`Controller::set_path_cost`]).
    serial_prior: Option<f64>,
    /// The class of the last block decided ([`BlockContext::class`]; 4: its sample's order-0
    /// entropy says no entropy coder saves enough to keep).
    class: u8,
    /// The latest block a rung with an entropy stage stored raw.
    entropy_failed: Option<u64>,
    /// Shadow compression (see [`Decision::shadow`]): CPU seconds spent on shadows and on
    /// blocks, the block whose shadow is awaited, the next candidate to look at, shadows made.
    shadow_cpu: f64,
    block_cpu: f64,
    shadow_pending: Option<u64>,
    shadow_turn: usize,
    shadows: u64,
}

/// What the sink saw of the pipeline's pace, smoothed over the last few writes (each sum
/// decays with a half-life of [`PIPE_HALFLIFE`] raw bytes): the elapsed time of the writes
/// (waited + busy), their raw bytes, the raw bytes of the frames stored raw, the bytes sent,
/// and the worker time (thread-seconds) spent on compression attempts.
#[derive(Clone, Debug, Default)]
struct PipeWindow {
    writes: u64,
    elapsed: f64,
    raw: f64,
    raw_stored_raw: f64,
    sent: f64,
    work: f64,
    /// The pipeline's CPU seconds (all its threads) and the workers' CPU seconds on compression
    /// attempts, over the same writes (zero while the sink does not report CPU time).
    cpu: f64,
    cpu_work: f64,
    /// Aggregate raw bytes/s at which the pipeline moves raw blocks, all its costs included
    /// (None until the sink has shown it).
    raw_speed: Option<f64>,
}

/// Half-life of the sink's account of the pipeline's pace, raw bytes (16 blocks of 1 MiB).
const PIPE_HALFLIFE: f64 = 16.0 * 1048576.0;

/// Writes before the sink's account of the pipeline's pace is used: the first ones wait for
/// the write's start (prediction, the first blocks).
const PIPE_MIN_WRITES: u64 = 8;

/// The link counts as the bottleneck when it was busy at least this share of the writes'
/// elapsed time (its bytes at the link's speed): then the elapsed time is the link's and
/// says only that the pipeline was at least that fast.
const PIPE_LINK_BOUND: f64 = 0.9;

/// The pipeline's CPU time tells the raw path's cost only while what compression does not
/// explain is at least this share of it (below, it is the noise of two clocks).
const CPU_PATH_MIN: f64 = 0.05;

/// The mix counts a raw block at the pipeline's raw speed the sink saw only while that is
/// below this many times the link (see [`Controller::mix_fraction`]).
const PIPE_TRUSTED: f64 = 1.25;

/// Prediction of the reference table when nothing has been measured: assume the machine is
/// half as fast as the reference, because starting too slow costs time and starting too fast
/// only costs a little ratio on the first blocks. The predictor guesses unmeasured rungs'
/// costs with it too.
pub const INITIAL_LEVEL: f64 = 0.5;

/// How far below the target a rung that has never been measured may be predicted and still be
/// tried, one rung at a time, when the current rung has headroom: the reference shape's
/// typical error per step (the thesis' zstd levels deviate from a smooth curve by about this).
const EXPLORE: f64 = 0.15;

/// S1: predicted ratios within this factor of each other (1 %) count as equal, and the faster
/// rung wins. A link-bound write gains at most that much from the better one, which is within
/// what the model can tell apart on rungs it has not measured (the reference shape's step
/// between neighbouring zstd levels is 0.1-1 %, and ratios measured on real blocks of one kind
/// of data scatter by a few tenths of a percent). Without it S1 climbed for ratios it could
/// not tell apart: on the float arrays of `adz-datagen mixed` every zstd level from 2 to 14
/// gives 1.047, and S1 went up to zstd:13 at a sixth of zstd:2's speed.
pub(crate) const RATIO_TIE: f64 = 0.01;

/// The most one block's wall/CPU ratio may exceed the usual one in the smoothed ratio.
const STRETCH_CLIP: f64 = 1.5;

/// Weight of one block in the smoothed wall/CPU ratio (about the last 10 blocks).
const STRETCH_RATE: f64 = 0.1;

/// Mix rungs whose predicted value ([`Controller::mix_value`]) is within this share (10 %) of
/// the best count as equally good, and the mix compresses with the fastest of them. Near the
/// optimum the mix's throughput hardly depends on the rung (text through 1200 MB/s on two
/// cores: every LZ4 level from 1 to 50 within 10 %), while a slow rung's block holds up every
/// frame behind it at the ordered writer, and one block's measured speed on two busy cores
/// scatters by 2x: a mix with lz4:1 measured 0.92x raw, one with lz4:25-50 1.3x.
const MIX_TIE: f64 = 0.10;

/// A mix compressing less than this fraction of blocks sends everything raw: below it the
/// saving is under 0.2 % and not worth a decision per block.
const MIN_MIX_FRACTION: f64 = 1.0 / 512.0;

/// S2/S3 blends of two rungs aim this much faster than the target (see
/// [`Controller::blend_fraction`]): measurement noise then rarely makes the write overrun.
const BLEND_AIM: f64 = 1.02;

/// S2/S3 spend more effort only where it buys ratio: a climb onto a rung measured on this data,
/// or a blend with one, needs that rung's ratio above the current one's by this factor
/// (0.25 %). On float arrays zstd 12..17 store the same bytes to within 0.01 % while
/// zstd:16 compresses 9x slower than zstd:15; on text consecutive levels that differ at all
/// differ by 0.4..3 %.
const MIN_RATIO_GAIN: f64 = 0.0025;

/// Two rungs' ratios, measured on different blocks, are compared only where the data
/// compresses evenly: while one block's ratio strays from the prediction by more than this
/// (0.5 %) on average, the reference shape's word stands (text blocks stray by 10 % and more;
/// float arrays by 0.1 %).
const RATIO_NOISE_LIMIT: f64 = 0.005;

/// Weight of one sink write in the smoothed share of backlogged writes (about 16 writes).
const BACKLOG_WEIGHT: f64 = 1.0 / 16.0;
/// At or below this share of backlogged writes the sink is starved: no compressed blocks in a
/// mix of raw and compressed.
const BACKLOG_STARVED: f64 = 0.2;
/// At or above this share the link is the bottleneck: the mix formula applies in full.
const BACKLOG_BUSY: f64 = 0.5;

fn finite_in(x: f64, lo: f64, hi: f64, default: f64) -> f64 {
    if x.is_finite() {
        x.clamp(lo, hi)
    } else {
        default
    }
}

impl Controller {
    /// A controller for `cfg`. Out-of-range tunables are clamped to usable values, so this
    /// never fails.
    pub fn new(cfg: ControllerConfig) -> Controller {
        let mut cfg = cfg;
        let d = ControllerConfig::new(cfg.strategy, cfg.link, cfg.threads);
        cfg.dead_band = finite_in(cfg.dead_band, 0.0, 10.0, d.dead_band);
        cfg.throughput_margin = finite_in(cfg.throughput_margin, 0.0, 1.0, d.throughput_margin);
        cfg.schedule_blocks = finite_in(cfg.schedule_blocks, 0.0, 1e6, d.schedule_blocks);
        cfg.alpha_slow = finite_in(cfg.alpha_slow, 0.01, 1.0, d.alpha_slow);
        cfg.alpha_fast = finite_in(cfg.alpha_fast, 0.01, 1.0, d.alpha_fast);
        cfg.alpha_rung = finite_in(cfg.alpha_rung, 0.01, 1.0, d.alpha_rung);
        cfg.rung_memory = finite_in(cfg.rung_memory, 1.0, 1e12, d.rung_memory);
        cfg.keep_threshold = finite_in(cfg.keep_threshold, 0.0, 1.0, d.keep_threshold);
        cfg.probe_interval_min = cfg.probe_interval_min.max(1);
        cfg.probe_interval_max = cfg.probe_interval_max.max(cfg.probe_interval_min);
        cfg.block_size = cfg.block_size.max(1);
        if let Strategy::Prolong(f) = cfg.strategy {
            if !(f.is_finite() && f > 0.0) {
                cfg.strategy = Strategy::Prolong(1.0);
            }
        }
        let fixed_link = match cfg.link {
            Link::Fixed(b) if b.is_finite() && b > 0.0 => Some(b),
            _ => None,
        };
        let rates = Rates {
            slow: cfg.alpha_slow,
            fast: cfg.alpha_fast,
            residual: cfg.alpha_rung,
            ratio: cfg.alpha_rung,
            halflife: cfg.rung_memory,
        };
        Controller {
            threads: cfg.threads.max(1) as f64,
            fixed_link,
            link: LinkEstimator::new(cfg.link_memory_bytes as f64),
            sink_backlog: None,
            sink_writes: 0,
            pipe: PipeWindow::default(),
            model: Model::new(&cfg.ladder, INITIAL_LEVEL, rates),
            lanes: Vec::new(),
            probe: None,
            incompressible_run: 0,
            outstanding: 0,
            last_attempt: None,
            last_saver: None,
            probe_costs: Vec::new(),
            probe_exit: None,
            failed_costs: Vec::new(),
            seq: 0,
            clock: 0,
            stretch: None,
            schedule: 0.0,
            path_prior: None,
            serial_prior: None,
            class: 0,
            entropy_failed: None,
            shadow_cpu: 0.0,
            block_cpu: 0.0,
            shadow_pending: None,
            shadow_turn: 0,
            shadows: 0,
            cfg,
        }
    }

    /// A controller for a different kind of data in the same write: it shares what this one
    /// measured of the link, the sink and the workers' wall/CPU ratio, and learns the data
    /// afresh (model, lanes, probe state).
    pub fn fork(&self) -> Controller {
        let mut c = Controller::new(self.cfg.clone());
        c.link = self.link.clone();
        c.sink_backlog = self.sink_backlog;
        c.sink_writes = self.sink_writes;
        c.pipe = self.pipe.clone();
        c.stretch = self.stretch;
        c.schedule = self.schedule;
        c.path_prior = self.path_prior;
        c.serial_prior = self.serial_prior;
        c
    }

    /// The raw path's costs measured before the write (a sampling predictor times moving and
    /// checksumming its sample: `Prediction::path_cost` and `serial_cost` in adz-core): `cpu`
    /// CPU seconds per raw byte on all the pipeline's threads, and `serial` seconds per raw
    /// byte of its slowest one-thread stage (the application's copy into the pipeline). The
    /// controller uses them until the pipeline's own figures are in (what the sink reports
    /// over the first [`PIPE_MIN_WRITES`] writes). Without them the first blocks' mix counts
    /// raw blocks as free: through 6000 MB/s on two cores, where moving raw data alone takes
    /// both cores, it compressed one block in five until the pipeline had measured itself,
    /// and each held the ordered writer for 3-4 ms. A figure that is not finite and positive
    /// is ignored.
    pub fn set_path_cost(&mut self, cpu: f64, serial: f64) {
        let ok = |x: f64| (x.is_finite() && x > 0.0).then_some(x);
        self.path_prior = ok(cpu).or(self.path_prior);
        self.serial_prior = ok(serial).or(self.serial_prior);
    }

    /// The workers' smoothed wall/CPU ratio (None before the first measurement with both).
    pub(crate) fn stretch(&self) -> Option<f64> {
        self.stretch
    }

    /// Take the workers' wall/CPU ratio measured elsewhere (by the other classes' controllers
    /// of the same write: it is the machine's, not the data's).
    pub(crate) fn set_stretch(&mut self, stretch: Option<f64>) {
        if stretch.is_some() {
            self.stretch = stretch;
        }
    }

    /// S1's predicted cost per raw byte of this controller's data on each codec rung (index
    /// `i` is rung `i + 1`): worker time (thread-seconds: CPU time times the usual wall/CPU
    /// ratio, as the model times blocks) and stored bytes. In probe mode the data is sent raw
    /// whatever the others do: one option, no time and every byte stored. None before anything
    /// has been measured, or when the configured strategy is not S1.
    pub(crate) fn s1_costs(&self) -> Option<Vec<(f64, f64)>> {
        if self.cfg.strategy != Strategy::Throughput {
            return None;
        }
        if self.probe.is_some() {
            return Some(vec![(0.0, 1.0)]);
        }
        if !self.model.has_speed() {
            return None;
        }
        let now = self.clock;
        let costs: Vec<(f64, f64)> = (1..self.cfg.ladder.len())
            .map(|r| (1.0 / self.model.speed(r, now), 1.0 / self.model.ratio(r, now).max(1.0)))
            .collect();
        costs.iter().all(|&(c, b)| c.is_finite() && c > 0.0 && b > 0.0).then_some(costs)
    }

    /// S1's predicted cost per raw byte (as [`Controller::s1_costs`]) of the current decision:
    /// its rung, or in a mix its compressed share's.
    pub(crate) fn s1_current(&self) -> Option<(f64, f64)> {
        let costs = self.s1_costs()?;
        if self.probe.is_some() {
            return costs.first().copied();
        }
        let lane = self.lanes.first()?;
        let (cpu, stored) = *costs.get(lane.rung.checked_sub(1)?)?;
        let p = if lane.mixing { lane.mix_fraction } else { 1.0 };
        Some((p * cpu, 1.0 - p * (1.0 - stored)))
    }

    /// The workers this controller's decisions may count on: the configured number, or for S1
    /// in a write of several kinds of data the share of the write's workers that the
    /// [`ClassedController`](crate::ClassedController) budgets for this kind (see there).
    pub(crate) fn set_workers(&mut self, workers: f64) {
        let n = self.cfg.threads.max(1) as f64;
        self.threads = if workers.is_finite() && workers > 0.0 { workers } else { n };
    }

    /// Set the start rung (e.g. from a sampling predictor). It is held until the first
    /// measurement arrives; once anything has been measured, this does nothing.
    pub fn set_start(&mut self, rung: CodecSpec) {
        if self.model.has_speed() {
            return;
        }
        self.cfg.start = Some(rung);
        let fresh: Vec<Lane> = self.lanes.iter().map(|l| self.new_lane(l.strategy)).collect();
        self.lanes.clear();
        for mut lane in fresh {
            lane.rung = self.start_rung();
            lane.mixing = rung == CodecSpec::NONE;
            lane.mix_fraction = if lane.mixing { 0.0 } else { 1.0 };
            self.lanes.push(lane);
        }
    }

    /// Start in probe mode, as if the data had already proved incompressible (a sampling
    /// predictor found it random, or no codec saving anything on a sample): blocks go raw
    /// without an attempt, with a cheap probe every few blocks, and the first probe that
    /// compresses resumes the start rung. Does nothing once a block has been decided, or with
    /// probe mode disabled (`probe_after` 0).
    pub fn start_incompressible(&mut self) {
        if self.seq > 0 || self.cfg.probe_after == 0 {
            return;
        }
        let interval = self.cfg.probe_interval_min;
        self.probe =
            Some(ProbeState { interval, next_due: interval, turn: 0, entered_at: 0, failed: None });
    }

    /// The configuration in use (after clamping).
    pub fn config(&self) -> &ControllerConfig {
        &self.cfg
    }

    /// The ladder.
    pub fn ladder(&self) -> &Ladder {
        &self.cfg.ladder
    }

    /// Raw-store threshold: a compressed block is kept only if
    /// `stored_len <= raw_len * keep_threshold()`. 0.97 by default: keep it if it saves at
    /// least 3 % (see the crate docs).
    pub fn keep_threshold(&self) -> f64 {
        self.cfg.keep_threshold
    }

    /// The link speed in use: the fixed one, or the measured one (None before the first sink
    /// measurement).
    pub fn link(&self) -> Option<f64> {
        self.fixed_link.or_else(|| self.link.get())
    }

    /// The decision for the next block. Call it for every block, in order.
    pub fn next_block(&mut self, ctx: &BlockContext) -> Decision {
        let seq = self.seq;
        self.seq += 1;
        self.class = ctx.class;
        let raw = |reason| Decision {
            codec: CodecSpec::NONE,
            filters: Filters::NONE,
            reason,
            seq,
            shadow: None,
        };
        if ctx.hints.contains(&Hint::NoCompress) {
            return raw(Reason::HintNoCompress);
        }
        let filters = hint_filters(ctx.hints);
        let strategy = self.effective(ctx.hints);

        if let Some(p) = &mut self.probe {
            // One probe at a time; a measurement that never arrives (a pipeline that dropped
            // it) must not stop probing for good, hence the second condition.
            let quiet = self.outstanding == 0
                || seq >= p.next_due.saturating_add(8 * self.cfg.probe_interval_max);
            if quiet && seq >= p.next_due && !self.cfg.probe_rungs.is_empty() {
                let codec = self.cfg.probe_rungs[p.turn % self.cfg.probe_rungs.len()];
                // Where compression has nothing to gain, a probe waits until the blocks sent
                // raw since the last one carry its cost (see PROBE_COST_SHARE).
                let wait = self.futile_wait(codec);
                let p = self.probe.as_mut().expect("in probe mode");
                let after = self.last_attempt.map_or(wait, |a| a.saturating_add(wait));
                if seq < after {
                    p.next_due = after;
                    return raw(Reason::Incompressible);
                }
                p.turn += 1;
                // Until this probe's result is in, no other probe (outstanding > 0).
                let next = self.cfg.probe_rungs[p.turn % self.cfg.probe_rungs.len()];
                p.next_due = seq + p.interval.max(probe_pace(&self.probe_costs, next));
                self.attempt(seq);
                return Decision { codec, filters, reason: Reason::Probe, seq, shadow: None };
            }
            return raw(Reason::Incompressible);
        }

        let (codec, reason) = match strategy {
            Strategy::Static(c) => (c, Reason::Static),
            Strategy::Archive => (
                self.cfg.ladder.get(self.cfg.ladder.len() - 1).unwrap_or(CodecSpec::NONE),
                Reason::Archive,
            ),
            _ => self.decide_adaptive(strategy, seq),
        };
        if codec == CodecSpec::NONE {
            // `static=none` with an explicit `filters=` hint asks for the filtered bytes (for a
            // compressor further down the line): the frame keeps them, as the codec table says
            // of `none`. A `dtype` hint alone does not: it describes the data, and without a
            // codec a shuffle would only scramble it.
            let explicit = ctx.hints.iter().any(|h| matches!(h, Hint::Filters(_)));
            if reason == Reason::Static && explicit && !filters.is_empty() {
                return Decision { codec, filters, reason, seq, shadow: None };
            }
            return raw(reason);
        }
        self.attempt(seq);
        let shadow =
            if strategy.is_adaptive() { self.pick_shadow(strategy, codec, seq) } else { None };
        Decision { codec, filters, reason, seq, shadow }
    }

    /// What a worker measured for one block. Measurements may arrive out of order and several
    /// blocks after the decision; any values are accepted (zero times, zero lengths).
    pub fn record_block(&mut self, m: &BlockMeasurement) {
        let d = m.decision;
        if d.reason == Reason::HintNoCompress {
            return;
        }
        // A block's time as the pipeline gets it: its CPU time times the workers' usual
        // wall/CPU ratio (wall time alone until that is known, or without CPU times). Not its
        // own wall time: on a busy machine (two workers, the application's reader and the
        // writer on two cores) the same block takes 1-3x its CPU time in wall time depending
        // on when its worker gets a core, which says nothing about the data, while data that
        // gets harder takes more CPU time, and contention that lasts moves the usual ratio.
        let (wall, cpu) = (m.wall.as_secs_f64(), m.cpu.as_secs_f64());
        let secs = match self.stretch {
            Some(stretch) if cpu > 0.0 => cpu * stretch,
            // The first block with both times: no usual ratio yet. An idle machine's (1) is the
            // prior, and the block counts as at most STRETCH_CLIP times it, as any block does.
            None if cpu > 0.0 && wall > 0.0 => cpu * (wall / cpu).clamp(1.0, STRETCH_CLIP),
            _ if wall > 0.0 => wall,
            _ => cpu,
        };
        let speed = (m.raw_len > 0 && secs > 0.0).then(|| m.raw_len as f64 / secs);
        if d.codec == CodecSpec::NONE {
            if let Some(s) = speed {
                self.model.observe_raw(s);
            }
            return;
        }
        self.outstanding = self.outstanding.saturating_sub(1);
        self.block_cpu += if cpu > 0.0 { cpu } else { wall };
        if let Some(s) = speed {
            self.note_work(m.raw_len as f64 / s, m.cpu.as_secs_f64());
        }
        // A probe's cost beyond the raw block it stands in for, in the link's time for that
        // block: kept if the probe ends probe mode, in case that turns out futile.
        let probe_cost = (d.reason == Reason::Probe && m.raw_len > 0)
            .then(|| self.link().filter(|l| *l > 0.0))
            .flatten()
            .map(|link| (wall * link / m.raw_len as f64 - 1.0).max(0.0));
        if m.raw_len == 0 {
            return;
        }
        if wall > 0.0 && cpu > 0.0 {
            // The mean, not the harmonic mean: the pipeline's throughput is set by the mean
            // time per block. A block whose worker waited unusually long counts as
            // STRETCH_CLIP times the usual ratio at most: one descheduled block must not make
            // every later one look slow; contention that lasts still moves it within a few
            // dozen blocks.
            let x = (wall / cpu).clamp(1.0, 1e3);
            self.stretch = Some(match self.stretch {
                None => x.min(STRETCH_CLIP),
                Some(v) => v + STRETCH_RATE * (x.min(v * STRETCH_CLIP) - v),
            });
        }

        let raw_len = m.raw_len as f64;
        let stored =
            if m.stored_raw { raw_len } else { (m.stored_len as f64).clamp(1.0, raw_len.max(1.0)) };
        let compressible = !m.stored_raw && stored <= raw_len * self.cfg.keep_threshold;
        if !compressible && entropy_coded(d.codec) {
            self.entropy_failed = Some(d.seq);
        }
        // A rung without an entropy stage that stores a block raw fails for itself, not for
        // the data, unless the data is known to be random: its class says so, or an entropy
        // rung failed on it lately. Its lanes move to the first entropy rung (decision 0020).
        // Not while a lane mixes: the CPU is then the bottleneck, no slower rung can help, and
        // probe mode (raw blocks, paced probes) is the cheapest answer.
        let blind = !compressible
            && !entropy_coded(d.codec)
            && self.probe.is_none()
            && !self.lanes.iter().any(|l| l.mixing)
            && d.reason != Reason::Probe
            && self.class != RANDOM_CLASS
            && self.entropy_failed.is_none_or(|s| d.seq.saturating_sub(s) > SAVER_WINDOW);
        if blind {
            self.leave_blind_rung(d.codec);
        }
        let mut reset = false;
        // Results of blocks decided before the one that started probe mode are older data:
        // that they compressed says nothing about the data now.
        let newer = self.probe.as_ref().is_none_or(|p| d.seq > p.entered_at);
        let at = self.cfg.ladder.position(d.codec);
        if compressible {
            if let Some(r) = at {
                self.last_saver = Some((r, d.seq));
            }
        }
        if compressible && newer {
            self.incompressible_run = 0;
            if let Some(p) = self.probe.take() {
                self.probe_exit = Some((d.seq, d.codec, probe_cost));
                // The data compresses again: the lanes resume where they were, and this sample
                // replaces what the incompressible stretch taught the model. A lane at a rung
                // that failed where a costlier one had just saved goes on from the probe's
                // rung instead, if the probe is the costlier: resumed at its own rung, it
                // would fail again (data that changed, and came back, resumes as before).
                reset = true;
                for lane in &mut self.lanes {
                    if let (Some(f), Some(r)) = (p.failed, at) {
                        if lane.rung == f && r > f {
                            lane.rung = r;
                            lane.mixing = false;
                        }
                    }
                    lane.since = self.seq;
                    lane.fresh = 0;
                    lane.streak = 0;
                }
            }
        } else if !compressible && !blind {
            self.incompressible_run = self.incompressible_run.saturating_add(1);
            if let Some(p) = &mut self.probe {
                if d.reason == Reason::Probe {
                    if let Some(cost) = probe_cost {
                        self.failed_costs.retain(|(c, _)| *c != d.codec);
                        self.failed_costs.push((d.codec, cost));
                    }
                    p.interval = (p.interval * 2).min(self.cfg.probe_interval_max);
                    let rungs = &self.cfg.probe_rungs;
                    let pace = rungs
                        .get(p.turn % rungs.len().max(1))
                        .map_or(0, |&next| probe_pace(&self.probe_costs, next));
                    p.next_due = d.seq.saturating_add(p.interval.max(pace));
                }
            } else if self.cfg.probe_after > 0 && self.incompressible_run >= self.cfg.probe_after {
                let interval = self.cfg.probe_interval_min;
                let last = self.last_attempt.unwrap_or(d.seq);
                let failed = at.filter(|&r| {
                    self.last_saver.is_some_and(|(saver, seq)| {
                        saver > r && d.seq.saturating_sub(seq) <= SAVER_WINDOW
                    })
                });
                // Back within a few blocks of a probe that ended probe mode: that probe was
                // futile, and its rung's probes are paced by what it cost. Back after longer:
                // the data compressed for a while, and no probe was futile.
                match self.probe_exit.take() {
                    Some((at, codec, cost)) if d.seq.saturating_sub(at) <= SAVER_WINDOW => {
                        self.probe_costs.retain(|(c, _)| *c != codec);
                        if let Some(cost) = cost {
                            self.probe_costs.push((codec, cost));
                        }
                    }
                    _ => self.probe_costs.clear(),
                }
                let pace =
                    self.cfg.probe_rungs.first().map_or(0, |&c| probe_pace(&self.probe_costs, c));
                self.probe = Some(ProbeState {
                    interval,
                    next_due: last.saturating_add(interval.max(pace)),
                    turn: 0,
                    entered_at: d.seq,
                    failed,
                });
            }
        }

        let rung = self.cfg.ladder.position(d.codec);
        let weight = (raw_len / self.cfg.block_size as f64).min(1.0);
        // What the model expected of this block, before it learns from it.
        let predicted = rung.map(|r| self.threads * self.model.speed(r, self.clock));
        if compressible {
            let sample =
                Sample { spec: d.codec, rung, speed, ratio: raw_len / stored, weight, reset };
            self.model.observe(&sample, self.clock);
        } else if self.probe.is_none() && !blind {
            // An incompressible block says how much of the data is incompressible (S1's
            // effective ratio includes it), but nothing about how fast or how well a rung
            // compresses the data that does compress: LZ4 and zstd skip incompressible input
            // several times faster. So it moves the ratio level only; in probe mode, not even
            // that (the first probe that compresses resets the level).
            self.model.observe_incompressible(d.codec, weight);
        }

        // Move decisions count only fresh measurements: blocks decided at the lane's current
        // rung after the lane moved there.
        let (Some(rung), Some(link)) = (rung, self.link()) else { return };
        let Some(speed) = speed else { return };
        let threshold = 1.0 + self.cfg.dead_band;
        // A measurement is "slower than predicted" for S1 beyond the margin or one unit of
        // measurement noise, whichever is wider.
        let slack = (1.0 + self.cfg.throughput_margin).max(self.model.noise().exp());
        let agg = speed * self.threads;
        let ratio = self.model.ratio(rung, self.clock);
        let aim = self.aim(self.cfg.strategy, link, ratio);
        for lane in &mut self.lanes {
            if lane.rung == rung && d.seq >= lane.since {
                lane.fresh = lane.fresh.saturating_add(1);
                let confirms = if lane.strategy == Strategy::Throughput {
                    // S1 moves on predicted throughputs; a fresh block confirms them unless
                    // it was clearly slower than predicted.
                    predicted.is_some_and(|p| agg * slack >= p)
                } else {
                    let aim = if lane.strategy == self.cfg.strategy {
                        aim
                    } else {
                        target(lane.strategy, link, ratio)
                    };
                    agg / aim > threshold
                };
                lane.streak = if confirms { lane.streak.saturating_add(1) } else { 0 };
            }
        }
    }

    /// What the sink measured: bytes written and time spent writing them.
    pub fn record_sink(&mut self, m: &SinkMeasurement) {
        let busy = m.busy.as_secs_f64();
        let waited = m.waited.as_secs_f64();
        self.link.add(m.bytes, busy, m.backlogged);
        let x = if m.backlogged { 1.0 } else { 0.0 };
        // A frame the sink waited for longer than the link takes to send it is strong
        // evidence that the pipeline, not the link, sets the pace: it weighs four writes.
        let link = self.link();
        let strong = !m.backlogged && link.is_some_and(|l| waited * l > m.bytes as f64);
        let w = if strong { 4.0 * BACKLOG_WEIGHT } else { BACKLOG_WEIGHT };
        // Not while the pipeline fills (its depth, 2 frames per worker): those frames find
        // the sink idle whatever the link. After it, from a neutral start (the mix applies in
        // full), not from the first write's yes or no: a first write that found the sink idle
        // made the mix send its next dozen blocks raw while the share crept back, and the
        // fill's writes did the same (text through 1200 MB/s on two cores: the first 32
        // blocks at 0.8x raw's speed, the rest at 1.4x).
        self.sink_writes += 1;
        if self.sink_writes > 2 * self.cfg.threads.max(1) as u64 {
            let b = self.sink_backlog.unwrap_or(BACKLOG_BUSY);
            self.sink_backlog = Some(b + w * (x - b));
        }
        self.track_schedule(m.raw, busy + waited);
        self.record_pace(m, busy + waited, link);
    }

    /// Compression work (thread-seconds) the pipeline spent: told by [`Controller::record_block`]
    /// for this controller's blocks, and by a [`ClassedController`](crate::ClassedController)
    /// for the other classes' (the pipeline's pace is the write's, not one class's).
    /// `secs` is the work as the pipeline gets it (CPU time times the workers' wall/CPU
    /// ratio), `cpu` the workers' CPU time alone.
    /// `codec`, a rung without an entropy stage, stored a block raw that an entropy coder may
    /// shrink: the model predicts it saves nothing (for a while), and lanes below the first
    /// entropy rung move there at once.
    fn leave_blind_rung(&mut self, codec: CodecSpec) {
        if let Some(r) = self.cfg.ladder.position(codec) {
            self.model.observe_blind(r, self.clock);
        }
        let Some(to) = self.cfg.ladder.first_entropy_coded() else { return };
        // Once that rung has been measured lately, the model knows both, and decides.
        if self.model.confidence(to, self.clock) > BLIND_RECHECK {
            return;
        }
        let seq = self.seq;
        for lane in &mut self.lanes {
            if lane.rung < to {
                lane.rung = to;
                lane.since = seq;
                lane.fresh = 0;
                lane.streak = 0;
                lane.tentative = false;
                lane.note = Some(Reason::BlindRung);
                lane.held = true;
            }
        }
    }

    /// The rung to shadow on block `seq`, compressed at `codec`: one shadow at a time, in
    /// spare CPU (no lane mixing, the current rung predicted faster than the target), while
    /// shadows have cost at most `shadow_share` of the blocks' CPU; the first rung with an
    /// entropy stage, then the nearest rungs around the current one (more effort first) that
    /// were never measured or not for [`SHADOW_AGE`] attempts.
    fn pick_shadow(&mut self, strategy: Strategy, codec: CodecSpec, seq: u64) -> Option<CodecSpec> {
        // Spare CPU only: no lane mixes raw and compressed blocks, and the current rung is
        // predicted faster than the strategy's target (the link, not the CPU, sets the pace).
        let busy = self.lanes.iter().any(|l| l.mixing);
        if busy || self.probe.is_some() || self.shadow_pending.is_some() {
            return None;
        }
        let cur = self.cfg.ladder.position(codec)?;
        let link = self.link()?;
        if self.cfg.shadow_share <= 0.0 || self.headroom(strategy, link, cur) < 1.0 {
            return None;
        }
        let n = self.cfg.ladder.len() as isize;
        let now = self.clock;
        let mut cands: Vec<usize> = SHADOW_OFFSETS
            .iter()
            .map(|&o| cur as isize + o)
            .filter(|&r| r >= 1 && r < n)
            .map(|r| r as usize)
            .collect();
        if let Some(e) = self.cfg.ladder.first_entropy_coded().filter(|&e| e > cur) {
            cands.retain(|&r| r != e);
            cands.insert(0, e);
        }
        let budget = self.cfg.shadow_share * self.block_cpu - self.shadow_cpu;
        let slice = SHADOW_BYTES as f64;
        let cost = |r: usize| slice / self.model.speed(r, now).max(1.0);
        let k = cands.len();
        for i in 0..k {
            let r = cands[(self.shadow_turn + i) % k];
            if self.model.age(r, now).is_some_and(|a| a <= SHADOW_AGE) {
                continue;
            }
            if cost(r) + cost(cur) > budget {
                return None;
            }
            self.shadow_turn = (self.shadow_turn + i + 1) % k;
            self.shadow_pending = Some(seq);
            return self.cfg.ladder.get(r);
        }
        None
    }

    /// What a worker measured for a block's shadow: the shadow rung's ratio and speed relative
    /// to the block's own codec on the same slice, which the model takes as that rung's
    /// measurement.
    pub fn record_shadow(&mut self, m: &ShadowMeasurement) {
        let d = m.decision;
        if self.shadow_pending == Some(d.seq) {
            self.shadow_pending = None;
        }
        let (base_cpu, cpu) = (m.base_cpu.as_secs_f64(), m.cpu.as_secs_f64());
        self.shadow_cpu += base_cpu + cpu;
        self.shadows += 1;
        let ladder = &self.cfg.ladder;
        let (Some(spec), Some(base)) = (d.shadow, ladder.position(d.codec)) else { return };
        let Some(r) = ladder.position(spec).filter(|_| m.raw_len > 0) else { return };
        let raw = m.raw_len as f64;
        let ratio = |stored: u64| raw / (stored as f64).clamp(1.0, raw);
        let faster = (base_cpu > 0.0 && cpu > 0.0).then(|| base_cpu / cpu);
        let shadow = crate::model::Shadow {
            base,
            rung: r,
            base_ratio: ratio(m.base_stored),
            ratio: ratio(m.stored),
            faster,
        };
        self.model.observe_shadow(&shadow, self.clock);
    }

    pub(crate) fn note_work(&mut self, secs: f64, cpu: f64) {
        if secs.is_finite() && secs > 0.0 {
            self.pipe.work += secs;
        }
        if cpu.is_finite() && cpu > 0.0 {
            self.pipe.cpu_work += cpu;
        }
    }

    /// The sink's account of the pipeline's pace. Over the last few writes, the elapsed time
    /// `E` is the link's (it was busy nearly all of it) or the CPU's: compression took `W / N`
    /// of it (worker time over the workers) and moving the raw frames the rest, so the
    /// pipeline moves raw blocks at `X / (E - W / N)` (`X` their raw bytes). On two cores that
    /// is far below what the workers measure of a raw block (a checksum): the application's
    /// reader, the hand-offs and the writer's copies cost CPU too, and a compressed block
    /// takes a core from them (6000 MB/s: raw moved 5.9 GB/s where the workers' checksums
    /// alone ran at 50). While the link is the bottleneck the same figure is only a lower
    /// bound, and only raises the estimate.
    fn record_pace(&mut self, m: &SinkMeasurement, elapsed: f64, link: Option<f64>) {
        if m.raw == 0 || !elapsed.is_finite() {
            return;
        }
        let p = &mut self.pipe;
        let raw = m.raw as f64;
        let keep = 0.5f64.powf(raw / PIPE_HALFLIFE);
        p.elapsed = p.elapsed * keep + elapsed;
        p.raw = p.raw * keep + raw;
        p.raw_stored_raw = p.raw_stored_raw * keep + if m.bytes >= m.raw { raw } else { 0.0 };
        p.sent = p.sent * keep + m.bytes as f64;
        p.work *= keep;
        p.cpu = p.cpu * keep + m.cpu.as_secs_f64();
        p.cpu_work *= keep;
        p.writes += 1;
        let Some(link) = link else { return };
        if p.writes < PIPE_MIN_WRITES || p.elapsed <= 0.0 {
            return;
        }
        // Frames stored raw must make a fair share of the window, else their cost is noise.
        if p.raw_stored_raw < 0.25 * p.raw {
            return;
        }
        let moving = p.elapsed - p.work / self.cfg.threads.max(1) as f64;
        if moving <= 0.05 * p.elapsed {
            // Compression alone explains the time: nothing is left to measure the raw path.
            return;
        }
        let speed = p.raw_stored_raw / moving;
        let link_bound = p.sent / link >= PIPE_LINK_BOUND * p.elapsed;
        // While the link is the bottleneck the sink's clock says only that the pipeline was at
        // least that fast. The pipeline's CPU time says how much faster it could be: moving
        // the raw bytes cost `cpu - cpu_work` CPU seconds, so with `cpus` CPUs it could move
        // them at `cpus X / (cpu - cpu_work)` (X all raw bytes: every frame takes that path).
        // Text through 1200 MB/s on two cores: the pace gave about the link, and a mix that
        // had gone all raw stayed there for good, where compressing with lz4 wrote 1.2-1.3x
        // faster; the CPU was two-thirds idle.
        let by_cpu = self.cpu_raw_speed();
        let p = &mut self.pipe;
        p.raw_speed = match (p.raw_speed, by_cpu) {
            (v, Some(c)) if link_bound => Some(v.unwrap_or(0.0).max(speed).max(c)),
            (Some(v), None) if link_bound => Some(v.max(speed)),
            (None, None) if link_bound => None,
            _ => Some(speed),
        };
    }

    /// The speed at which the pipeline's CPUs could move raw blocks, from the CPU time the
    /// sink reports (None without it, or while compression explains nearly all of it).
    fn cpu_raw_speed(&self) -> Option<f64> {
        self.cpu_path_cost().map(|c| self.cpus() / c)
    }

    /// CPU seconds the pipeline spends per raw byte besides compression (the raw path), from
    /// the CPU time the sink reports; before [`PIPE_MIN_WRITES`] writes, the cost measured
    /// before the write if there is one ([`Controller::set_path_cost`]); None without either,
    /// or while compression explains nearly all of it.
    fn cpu_path_cost(&self) -> Option<f64> {
        let p = &self.pipe;
        if p.writes < PIPE_MIN_WRITES {
            return self.path_prior;
        }
        let path = p.cpu - p.cpu_work;
        if p.cpu <= 0.0 || path <= CPU_PATH_MIN * p.cpu {
            return None;
        }
        (p.raw > 0.0).then(|| path / p.raw)
    }

    /// The speed at which the pipeline can move raw blocks, raw bytes/s: the least of what
    /// its CPUs can ([`Controller::cpu_path_cost`]), what the sink saw
    /// ([`Controller::pipeline_raw_speed`]) and, before the pipeline has measured itself, what
    /// its one-thread stages can ([`Controller::set_path_cost`]). The CPUs' figure alone is
    /// too high: through 6000 MB/s on two cores it said 6-7 GB/s where raw blocks moved at 4.5,
    /// the application's copy into the pipeline being one thread. None before any is known.
    fn raw_path_speed(&self) -> Option<f64> {
        let cpu = self.cpu_path_cost().map(|c| self.cpus() / c);
        let serial = self.serial_prior.filter(|_| self.pipe.writes < PIPE_MIN_WRITES);
        [cpu, serial.map(|s| 1.0 / s), self.pipe.raw_speed].into_iter().flatten().reduce(f64::min)
    }

    /// Whether the raw path alone is slower than the strategy's target for raw data (S1 and
    /// S2: the link; S3: link / F): then every compressed block only slows the write, and a
    /// probe can find nothing the strategy would use.
    fn raw_path_too_slow(&self) -> bool {
        match (self.link(), self.raw_path_speed()) {
            (Some(link), Some(v)) => v < target(self.cfg.strategy, link, 1.0),
            _ => false,
        }
    }

    /// Blocks a probe at `codec` waits after the last compression attempt: none while
    /// compression may gain, else what the probe costs beyond a raw block's link time (its
    /// last failed probe's, or at the model's speed for the rung before one), in blocks at
    /// [`PROBE_COST_SHARE`].
    fn futile_wait(&self, codec: CodecSpec) -> u64 {
        if !self.raw_path_too_slow() {
            return 0;
        }
        let Some(link) = self.link() else { return 0 };
        let failed = self.failed_costs.iter().find(|(c, _)| *c == codec).map(|&(_, extra)| extra);
        let extra = failed.or_else(|| {
            let r = self.cfg.ladder.position(codec)?;
            let s = self.model.speed(r, self.clock);
            (s > 0.0).then(|| (link / s - 1.0).max(0.0))
        });
        extra.map_or(0, pace_of)
    }

    /// CPUs the pipeline may use ([`ControllerConfig::cpus`], else the workers).
    fn cpus(&self) -> f64 {
        if self.cfg.cpus == 0 {
            self.threads
        } else {
            self.cfg.cpus as f64
        }
    }

    /// A rung's compression speed per worker in CPU time: the model's speed is the pipeline's
    /// (CPU time times the workers' usual wall/CPU ratio), so this undoes that ratio.
    fn cpu_speed(&self, rung: usize) -> f64 {
        self.model.speed(rung, self.clock) * self.stretch.unwrap_or(1.0)
    }

    /// Compression work in this controller's account of the pipeline's pace (see
    /// [`Controller::note_work`]).
    pub(crate) fn pipe_work(&self) -> (f64, f64) {
        (self.pipe.work, self.pipe.cpu_work)
    }

    /// Aggregate raw bytes/s at which the whole pipeline moves raw blocks, as the sink saw it
    /// (None until it has shown that the pipeline, not the link, set the pace).
    pub fn pipeline_raw_speed(&self) -> Option<f64> {
        self.pipe.raw_speed
    }

    /// A snapshot for tracing and progress.
    pub fn status(&self) -> Status {
        let strategy = self.cfg.strategy;
        let link = self.link();
        let mut status = Status {
            strategy,
            rung: CodecSpec::NONE,
            mode: Mode::Fixed,
            target: None,
            speed: None,
            ratio: None,
            link,
            cpu_share: self.stretch.map(|s| 1.0 / s),
            blocks: self.seq,
            shadows: self.shadows,
            shadow_share: if self.block_cpu > 0.0 { self.shadow_cpu / self.block_cpu } else { 0.0 },
        };
        let rung = match strategy {
            Strategy::Static(c) => self.cfg.ladder.position(c).ok_or(c),
            Strategy::Archive => Ok(self.cfg.ladder.len() - 1),
            _ => {
                let lane = self.lanes.first().cloned().unwrap_or_else(|| self.new_lane(strategy));
                status.mode = if !lane.started || !self.model.has_speed() {
                    Mode::Start
                } else if lane.mixing {
                    Mode::Mix { compress_fraction: lane.mix_fraction }
                } else {
                    Mode::Adapt
                };
                if let Some(l) = link {
                    status.target =
                        Some(target(strategy, l, self.model.ratio(lane.rung, self.clock)));
                }
                Ok(lane.rung)
            }
        };
        match rung {
            Ok(i) => {
                status.rung = self.cfg.ladder.get(i).unwrap_or(CodecSpec::NONE);
                if self.model.has_speed() {
                    status.speed = Some(self.threads * self.model.speed(i, self.clock));
                }
                if self.model.has_ratio() {
                    status.ratio = Some(self.model.ratio(i, self.clock));
                }
            }
            Err(c) => status.rung = c,
        }
        if matches!(status.mode, Mode::Mix { compress_fraction } if compress_fraction <= 0.0) {
            status.rung = CodecSpec::NONE;
        }
        if self.probe.is_some() {
            status.mode = Mode::Probe;
        }
        status
    }

    fn attempt(&mut self, seq: u64) {
        self.clock += 1;
        self.outstanding += 1;
        self.last_attempt = Some(seq);
    }

    /// The strategy for a block, after its hints: `hot` makes every strategy but `static`
    /// throughput; `write-once` makes throughput keep-pace (the other strategies already
    /// favour ratio at least as much). `hot` wins over `write-once`.
    fn effective(&self, hints: &[Hint]) -> Strategy {
        let s = self.cfg.strategy;
        if matches!(s, Strategy::Static(_)) {
            return s;
        }
        if hints.contains(&Hint::Hot) {
            return Strategy::Throughput;
        }
        if hints.contains(&Hint::WriteOnce) && s == Strategy::Throughput {
            return Strategy::KeepPace;
        }
        s
    }

    fn start_rung(&self) -> usize {
        let ladder = &self.cfg.ladder;
        match self.cfg.start {
            Some(s) => ladder.nearest(s),
            None => {
                let z1 = CodecSpec::new(CodecId::Zstd, 1).expect("zstd:1 is valid");
                ladder.position(z1).unwrap_or_else(|| ladder.nearest(z1))
            }
        }
    }

    fn new_lane(&self, strategy: Strategy) -> Lane {
        let mut lane = Lane {
            strategy,
            rung: self.start_rung(),
            mixing: false,
            mix_acc: 0.0,
            mix_fraction: 1.0,
            since: self.seq,
            fresh: 0,
            streak: 0,
            started: false,
            tentative: false,
            blend: 0.0,
            blend_to: 0,
            blend_acc: 0.0,
            note: None,
            held: false,
        };
        // A lane for a hint's strategy starts where the configured lane is: same data.
        if let Some(base) = self.lanes.first() {
            lane.rung = base.rung;
        }
        if self.cfg.start == Some(CodecSpec::NONE) {
            lane.mixing = true;
            lane.mix_fraction = 0.0;
        }
        lane
    }

    /// Whether the configured strategy keeps a schedule: S2 and S3, which aim at a time.
    fn scheduled(&self) -> bool {
        matches!(self.cfg.strategy, Strategy::KeepPace | Strategy::Prolong(_))
            && self.cfg.schedule_blocks > 0.0
    }

    /// S2/S3: over how many blocks the schedule is paid back: the configured number plus the
    /// pipeline's depth (2 blocks per worker), because the sink reports a block that many
    /// blocks after it was decided, and a controller that reacts faster than it learns
    /// overshoots (with 8 workers and a horizon of 8 blocks, S2 ran 6-11 % late in the
    /// simulator).
    fn schedule_horizon(&self) -> f64 {
        self.cfg.schedule_blocks + 2.0 * self.cfg.threads.max(1) as f64
    }

    /// S2/S3: account a frame the sink wrote against the target's schedule: `elapsed` seconds
    /// passed between the end of the previous write and the end of this one (the sink's wait
    /// for the frame and its write), where the target gives its `raw` bytes `raw / T`. The
    /// sink's clock, not the workers': on two cores the application's reader and the ordered
    /// writer take CPU too, and the workers' own times made S2 10 % and S3 14 % late on a
    /// kernel tar through a 117 MB/s link. An application that writes slower than the target
    /// makes the write look behind, and the aim rises a little (at most 4/3): that costs some
    /// ratio, no time.
    fn track_schedule(&mut self, raw: u64, elapsed: f64) {
        let Some(link) = self.link() else { return };
        let t = target(self.cfg.strategy, link, 1.0);
        if !(self.scheduled() && raw > 0 && t > 0.0 && elapsed.is_finite() && elapsed >= 0.0) {
            return;
        }
        let (behind, ahead) = self.schedule_bounds(t);
        self.schedule = (self.schedule + raw as f64 / t - elapsed).clamp(behind, ahead);
    }

    /// The schedule's bounds, seconds, for a target of `t` bytes/s: at most `K` blocks' time
    /// ahead (the aim goes no lower than half the target: a long stretch ahead is not repaid
    /// with a long stretch of slow rungs) and `K/4` behind (the aim goes no higher than 4/3
    /// of it).
    fn schedule_bounds(&self, t: f64) -> (f64, f64) {
        let horizon = self.schedule_horizon() * self.cfg.block_size as f64 / t;
        (-0.25 * horizon, horizon)
    }

    /// The aggregate compression speed a rung must reach for `strategy`: its target, and for
    /// the configured S2/S3 corrected by the write's schedule.
    ///
    /// Real data is noisy: the blocks of a kernel tar at one zstd level compress at 0.6-1.8x
    /// their mean speed. The controller is asymmetric: it leaves a rung that looks too slow
    /// at once, and climbs only on confirmed headroom. Together these spend the noise on the
    /// fast side, and S2 and S3 finished text through a 117 MB/s link in 0.72-0.95 of their
    /// target time (0.72-0.90 in the simulator with the same noise).
    ///
    /// So a write `A` seconds ahead of its schedule aims for blocks of `b/T + A/K` seconds
    /// (`b` the block size, `K` the [`Controller::schedule_horizon`]). That is slower than
    /// the target, and it spends what it saved over the next `K` blocks. In the simulator,
    /// with the same noise, S2 and S3 then take 0.98-1.01 of their target time.
    ///
    /// Behind its schedule, a write aims faster than the target, but gently: the schedule
    /// counts at most `K/4` blocks behind (and `K` ahead), so the aim stays within
    /// `T/2..4T/3`. The asymmetry already errs on the fast side, a slowdown already sends the
    /// lane to a faster rung at once, and a start far too slow would otherwise send it far
    /// past the rung the measurements point to.
    fn aim(&self, strategy: Strategy, link: f64, ratio: f64) -> f64 {
        let t = target(strategy, link, ratio);
        if strategy != self.cfg.strategy || !self.scheduled() || t.is_nan() || t <= 0.0 {
            return t;
        }
        let block = self.cfg.block_size as f64 / t;
        let (behind, ahead) = self.schedule_bounds(t);
        t * block / (block + self.schedule.clamp(behind, ahead) / self.schedule_horizon())
    }

    fn headroom(&self, strategy: Strategy, link: f64, rung: usize) -> f64 {
        let now = self.clock;
        let speed = self.threads * self.model.speed(rung, now);
        speed / self.aim(strategy, link, self.model.ratio(rung, now))
    }

    /// S1's predicted write throughput of a rung, raw bytes/s: the compressors or the link,
    /// whichever is slower, `min(N S(r), L f(r))`. With the pipeline's CPU time
    /// ([`Controller::cpu_path_cost`]) the compressors' side is counted in CPU seconds: the
    /// raw path's `c` per byte and the rung's `1 / s` (its workers' CPU time) share `C` CPUs,
    /// `C / (c + 1 / s)`, at most `N s`. The workers' wall times count the raw path twice
    /// (once as their wait for a core).
    fn throughput(&self, link: f64, rung: usize) -> f64 {
        let now = self.clock;
        let compress = match self.cpu_path_cost() {
            Some(c) => {
                let s_cpu = self.cpu_speed(rung);
                (self.cpus() / (c + 1.0 / s_cpu)).min(self.threads * s_cpu)
            }
            None => self.threads * self.model.speed(rung, now),
        };
        compress.min(link * self.model.ratio(rung, now))
    }

    /// S1's choice among rungs `1..end`: of the rungs predicted to write within the margin of
    /// the fastest of them, the one with the best predicted ratio; of those whose ratio is
    /// within [`RATIO_TIE`] of that best, the fastest to compress (the same bytes for less CPU).
    /// Returns it and the fastest predicted throughput (None if the range is empty).
    fn s1_pick(&self, link: f64, end: usize) -> Option<(usize, f64)> {
        let now = self.clock;
        let end = end.min(self.cfg.ladder.len());
        let t: Vec<f64> =
            (0..end).map(|r| if r == 0 { 0.0 } else { self.throughput(link, r) }).collect();
        let best = t.iter().copied().fold(0.0, f64::max);
        let margin = 1.0 + self.cfg.throughput_margin;
        let fast = || (1..end).filter(|&r| t[r] * margin >= best);
        let top = fast().map(|r| self.model.ratio(r, now)).fold(f64::NAN, f64::max);
        let pick = fast().filter(|&r| self.model.ratio(r, now) * (1.0 + RATIO_TIE) >= top).max_by(
            |&a, &b| {
                let (sa, sb) = (self.model.speed(a, now), self.model.speed(b, now));
                sa.total_cmp(&sb).then(t[a].total_cmp(&t[b]))
            },
        )?;
        Some((pick, best))
    }

    /// True if some codec rung is predicted at least `min` times as fast as its target: for
    /// S1, some rung keeps the link full with compressed data.
    fn any_fast_enough(&self, strategy: Strategy, link: f64, min: f64) -> bool {
        (1..self.cfg.ladder.len()).any(|r| self.headroom(strategy, link, r) >= min)
    }

    /// The predicted headroom a rung needs to be tried: 1, or `1 - EXPLORE` for a rung that
    /// has never been measured.
    fn min_headroom(&self, rung: usize) -> f64 {
        if self.model.confidence(rung, self.clock) > 0.0 {
            1.0
        } else {
            1.0 - EXPLORE
        }
    }

    /// Walking down the ladder from `from`, the last rung of the unbroken run of rungs whose
    /// predicted headroom is at least `min`.
    fn last_ok_from(&self, strategy: Strategy, link: f64, from: usize, min: f64) -> Option<usize> {
        let mut last = None;
        for r in from.max(1)..self.cfg.ladder.len() {
            if self.headroom(strategy, link, r) >= min {
                last = Some(r);
            } else {
                break;
            }
        }
        last
    }

    /// How good rung `m` is as the compressed rung of a mix, higher is better.
    ///
    /// S1 with the pipeline's CPU time: the mix's predicted write throughput. With `C` CPUs, the
    /// raw path's `c` CPU seconds per byte, the rung's CPU speed `s` per worker and its saving
    /// `a = 1 - 1/f`, the share `p` at which CPUs and link are both busy
    /// ([`Controller::mix_fraction`]) writes `L / (1 - p a) = (C a s + L) / (1 + a c s)`; a
    /// rung that keeps the link full alone (`p >= 1`) writes its own [`Controller::throughput`].
    /// Otherwise the bytes it saves per second of compression, `S a` (`S` the aggregate speed):
    /// S1's throughput `L + S a` without a raw-path cost, and the bytes S2/S3 save in their time.
    fn mix_value(&self, strategy: Strategy, link: f64, m: usize) -> f64 {
        let now = self.clock;
        let a = 1.0 - 1.0 / self.model.ratio(m, now);
        match (strategy, self.cpu_path_cost()) {
            (Strategy::Throughput, Some(c)) => {
                let (num, den) = self.s1_cpu_share(link, c, m);
                let p = num / den;
                if p >= 1.0 {
                    self.throughput(link, m)
                } else if p > 0.0 {
                    link / (1.0 - p * a)
                } else {
                    // The raw path alone cannot fill the link: any compression slows it.
                    (self.cpus() / c).min(link)
                }
            }
            _ => self.threads * self.model.speed(m, now) * a,
        }
    }

    /// The rung of the compressed blocks of a mix: of the rungs within [`MIX_TIE`] of the best
    /// [`Controller::mix_value`], the fastest to compress. Returns it and whether the
    /// current rung `cur` is among them.
    fn mix_rung(&self, strategy: Strategy, link: f64, cur: usize) -> (usize, bool) {
        let now = self.clock;
        let n = self.cfg.ladder.len();
        let v: Vec<f64> = (0..n)
            .map(|r| if r == 0 { f64::NAN } else { self.mix_value(strategy, link, r) })
            .collect();
        let best = v.iter().copied().fold(f64::NAN, f64::max);
        let tied = |r: usize| v[r] >= best * (1.0 - MIX_TIE);
        let pick = (1..n)
            .filter(|&r| tied(r))
            .max_by(|&a, &b| self.model.speed(a, now).total_cmp(&self.model.speed(b, now)))
            .unwrap_or(1);
        (pick, cur > 0 && cur < n && tied(cur))
    }

    /// S1's compressed share of a mix at rung `m` in CPU seconds, as `(numerator, denominator)`:
    /// every block costs the raw path `c` per byte, a compressed one also its compression `1/s`
    /// (the worker's CPU time, [`Controller::cpu_speed`]). With `C` CPUs both the CPUs and the
    /// link are busy when `C (1 - p (1 - 1/f)) = L (c + p / s)`, so
    /// `p = (C - L c) / (C (1 - 1/f) + L / s)`. The workers' wall times alone count the raw
    /// path's CPU twice (once as their own wait for a core): text through 1200 MB/s on two
    /// cores measured lz4 at half its speed in a mix, and S1 compressed 60 % of the blocks
    /// where compressing all wrote fastest.
    fn s1_cpu_share(&self, link: f64, c: f64, m: usize) -> (f64, f64) {
        let cpus = self.cpus();
        let a = 1.0 - 1.0 / self.model.ratio(m, self.clock);
        (cpus - link * c, cpus * a + link / self.cpu_speed(m))
    }

    /// The fraction of blocks to compress at rung `m` when `m` is slower than the target.
    ///
    /// Per raw byte, with `S` the aggregate compression speed, `R` the aggregate speed of
    /// storing raw, `f` the ratio, `L` the link, and a fraction `p` compressed:
    /// CPU time `p/S + (1-p)/R`, link time `(1 - p(1 - 1/f)) / L`.
    /// * S1 makes both equal (both stages busy): `p = (1/L - 1/R) / (1/S - 1/R + (1-1/f)/L)`;
    ///   throughput is then `L + S(1 - 1/f)` for `R = inf`: always more than raw's `L`.
    /// * S2/S3 spend exactly the target's time on CPU: `p = (1/T - 1/R) / (1/S - 1/R)`.
    fn mix_fraction(&self, strategy: Strategy, link: f64, m: usize) -> f64 {
        let now = self.clock;
        let s = self.threads * self.model.speed(m, now);
        // Raw blocks cost what the workers measure (a checksum), or what the sink saw the
        // whole pipeline spend on them. If that cannot even fill the link, every compressed
        // block slows the write and the share comes out zero (all raw); a little above the
        // link, a small share (where the pipeline and the link are about even, the estimate
        // scatters around the link: 5.1-6.3 GB/s at 6000 MB/s on 2 cores). Not far above
        // it: there the sink's figure also counts the ordered writer's stalls behind a
        // compressed block (in the simulator with 2 N buffers, 1.5 L where the workers store
        // raw at 2.7 L), which a mix pays for in the time it saves.
        let r = self.threads * self.model.raw_speed().unwrap_or(f64::INFINITY);
        let r = match self.pipe.raw_speed {
            Some(pipe) if pipe < PIPE_TRUSTED * link => r.min(pipe),
            _ => r,
        };
        let f = self.model.ratio(m, now);
        let (num, den) = match (strategy, self.cpu_path_cost()) {
            (Strategy::Throughput, Some(c)) => self.s1_cpu_share(link, c, m),
            (Strategy::Throughput, None) => {
                (1.0 / link - 1.0 / r, 1.0 / s - 1.0 / r + (1.0 - 1.0 / f) / link)
            }
            _ => {
                let t = target(strategy, link, f);
                (1.0 / t - 1.0 / r, 1.0 / s - 1.0 / r)
            }
        };
        let p = if den > 0.0 { num / den } else { 1.0 };
        // The mix pays only while the link is the bottleneck. If frames seldom wait for the
        // sink, the pipeline cannot even feed the link (on few cores, moving raw data costs
        // CPU too) and every compressed block slows the write: shrink the compressed share
        // towards zero. If raw data then backs the link up, the share returns.
        let p = p * self.sink_backlog.map_or(1.0, |b| {
            ((b - BACKLOG_STARVED) / (BACKLOG_BUSY - BACKLOG_STARVED)).clamp(0.0, 1.0)
        });
        if p.is_finite() && p >= MIN_MIX_FRACTION {
            p.min(1.0)
        } else {
            0.0
        }
    }

    /// S2/S3: the share of blocks to send to a slower rung, and which, when `cur` is faster
    /// than the target and the partner slower, so that the blend spends the target's time.
    /// Rungs are discrete (text at 117 MB/s: zstd:9 takes 0.8 of S2's time, zstd:10 1.1 of
    /// it), so without a blend S2 and S3 would finish up to a rung's step early, with less
    /// ratio than their time allows. With `S` the current rung's aggregate speed, `S'` the
    /// partner's and `T` the target, a share `p` of blocks at the partner takes
    /// `(1-p)/S + p/S'` per raw byte; equal to `1/T` at `p = (1/T - 1/S) / (1/S' - 1/S)`. The
    /// blend aims [`BLEND_AIM`] above the target, so that noise does not push the write past
    /// its bound.
    ///
    /// The partner is the first rung above `cur`, within a climb, that buys ratio over it
    /// ([`Controller::buys_ratio`]): time spent on a rung that stores the same bytes buys
    /// nothing (text: zstd:11 and zstd:12 store the same 1 MiB blocks, zstd:13 0.75 % less).
    /// Zero when the current rung is already within [`BLEND_AIM`] of the target, when the
    /// partner is fast enough to move to (the climb's business), when no rung within a climb
    /// buys ratio, or past the ladder's end.
    fn blend_fraction(&self, strategy: Strategy, link: f64, cur: usize) -> (f64, usize) {
        let now = self.clock;
        let n = self.cfg.ladder.len();
        let top = (n - 1).min(cur + self.cfg.max_climb.max(1));
        let Some(to) = (cur + 1..=top).find(|&r| cur > 0 && self.buys_ratio(cur, r)) else {
            return (0.0, cur);
        };
        let t = self.aim(strategy, link, self.model.ratio(cur, now)) * BLEND_AIM;
        let s = self.threads * self.model.speed(cur, now);
        let s_to = self.threads * self.model.speed(to, now);
        if !(t > 0.0 && s > t && s_to < t && s_to > 0.0) {
            return (0.0, cur);
        }
        let p = (1.0 / t - 1.0 / s) / (1.0 / s_to - 1.0 / s);
        if p.is_finite() && p >= MIN_MIX_FRACTION {
            (p.min(1.0), to)
        } else {
            (0.0, cur)
        }
    }

    /// S2/S3: whether rung `to` may buy ratio over rung `from`: it has not been measured, or
    /// the data compresses too unevenly to compare measurements taken on different blocks
    /// ([`RATIO_NOISE_LIMIT`]; the shape's word stands), or its measured ratio beats
    /// `from`'s by [`MIN_RATIO_GAIN`].
    fn buys_ratio(&self, from: usize, to: usize) -> bool {
        let now = self.clock;
        self.model.confidence(to, now) <= 0.0
            || self.model.ratio_noise() > RATIO_NOISE_LIMIT
            || self.model.ratio(to, now) > self.model.ratio(from, now) * (1.0 + MIN_RATIO_GAIN)
    }

    fn lane_index(&mut self, strategy: Strategy) -> usize {
        if self.lanes.is_empty() {
            // Lane 0 is always the configured strategy's, so status() can report it.
            let base = self.new_lane(self.cfg.strategy);
            self.lanes.push(base);
        }
        if let Some(i) = self.lanes.iter().position(|l| l.strategy == strategy) {
            return i;
        }
        let lane = self.new_lane(strategy);
        self.lanes.push(lane);
        self.lanes.len() - 1
    }

    fn decide_adaptive(&mut self, strategy: Strategy, seq: u64) -> (CodecSpec, Reason) {
        let i = self.lane_index(strategy);
        let spec = |c: &Controller, r: usize| c.cfg.ladder.get(r).unwrap_or(CodecSpec::NONE);
        let Some(link) = self.link() else {
            let lane = &self.lanes[i];
            return if lane.mixing {
                (CodecSpec::NONE, Reason::Start)
            } else {
                (spec(self, lane.rung), Reason::Start)
            };
        };
        let n = self.cfg.ladder.len();
        let threshold = 1.0 + self.cfg.dead_band;
        let mut lane = self.lanes[i].clone();
        let mut reason = Reason::Hold;
        let moved = |lane: &mut Lane, rung: usize, mixing: bool| {
            lane.rung = rung;
            lane.mixing = mixing;
            lane.tentative = false;
            lane.since = seq;
            lane.fresh = 0;
            lane.streak = 0;
        };

        if !lane.started {
            lane.started = true;
            if self.cfg.start.is_none() && self.fixed_link.is_some() && !self.model.has_speed() {
                // Aim the first rung with the (pessimistic) reference table.
                let aim = if strategy == Strategy::Throughput {
                    self.any_fast_enough(strategy, link, 1.0)
                        .then(|| self.s1_pick(link, n).map_or(1, |p| p.0))
                } else {
                    self.last_ok_from(strategy, link, 1, 1.0)
                };
                match aim {
                    Some(r) => moved(&mut lane, r, false),
                    None => {
                        let m = self.mix_rung(strategy, link, 0).0;
                        moved(&mut lane, m, true);
                    }
                }
            }
        }
        if self.cfg.start.is_some_and(|s| s != CodecSpec::NONE) && !self.model.has_speed() {
            // A start given from outside (a user, a sampling predictor) is a better guess than
            // the reference table: hold it until something has been measured. Not a raw start:
            // raw blocks measure no compression, so held until then it would be held for good
            // (every block raw, whatever the link). Raw is held only until the link is known;
            // then the mix below decides, from the reference table, what share to compress.
            self.lanes[i] = lane;
            let l = &self.lanes[i];
            return if l.mixing {
                (CodecSpec::NONE, Reason::Start)
            } else {
                (spec(self, l.rung), Reason::Start)
            };
        }
        if !self.model.has_speed() {
            reason = Reason::Start;
        }
        if lane.held && lane.fresh == 0 {
            let note = lane.note.take().unwrap_or(reason);
            let rung = lane.rung;
            self.lanes[i] = lane;
            return (spec(self, rung), note);
        }
        lane.held = false;

        if lane.mixing {
            let any_ok = if strategy == Strategy::Throughput {
                // To the rung predicted to write fastest, once one keeps the link full.
                self.any_fast_enough(strategy, link, threshold)
                    .then(|| self.s1_pick(link, n).map_or(1, |p| p.0))
            } else {
                // The run of rungs fast enough from the mix's own rung if it is one (as a climb
                // would), else from the first that is, at most a climb above the mix's rung.
                // Not from the ladder's top: a fast rung measured once on a slow stretch keeps
                // a pessimistic estimate it never gets to correct, and an unbroken run from it
                // would keep the write in the mix for good.
                let ok = |r: usize| self.headroom(strategy, link, r) >= threshold;
                let from = if ok(lane.rung) { Some(lane.rung) } else { (1..n).find(|&r| ok(r)) };
                from.and_then(|r| self.last_ok_from(strategy, link, r, threshold))
                    .map(|r| r.min(lane.rung + self.cfg.max_climb.max(1)))
            };
            // Leaving the mix spends more effort: only on fresh measurements of the mix rung,
            // unless nothing is compressed to measure (all raw) or nothing was ever measured.
            let confirmed = lane.fresh >= self.cfg.confirm
                || lane.mix_fraction <= 0.0
                || !self.model.has_speed();
            if let (Some(r), true) = (any_ok, confirmed) {
                moved(&mut lane, r, false);
                reason = Reason::Headroom;
            } else {
                // To the mix's best rung once the current one falls out of the tie, or when
                // a rung in it is clearly (10 %) faster to compress: not back and forth
                // between neighbours on noise.
                let (pick, cur_tied) = self.mix_rung(strategy, link, lane.rung);
                let now = self.clock;
                let faster = self.model.speed(pick, now) > 1.1 * self.model.speed(lane.rung, now);
                if pick != lane.rung && (!cur_tied || faster) {
                    moved(&mut lane, pick, true);
                }
            }
        } else if strategy == Strategy::Throughput {
            // S1 maximises the predicted write throughput min(N S, L f) over the ladder.
            let cur = lane.rung;
            if !self.any_fast_enough(strategy, link, 1.0) {
                // No rung keeps the link full: every one is compression-bound, and a mix of
                // raw and compressed blocks writes faster than any of them.
                let m = self.mix_rung(strategy, link, 0).0;
                moved(&mut lane, m, true);
                reason = Reason::TooSlow;
            } else {
                let (pick, best) = self.s1_pick(link, n).unwrap_or((cur, 0.0));
                let margin = 1.0 + self.cfg.throughput_margin;
                let here = self.throughput(link, cur);
                let confirmed = lane.streak >= self.cfg.confirm;
                let top = n.saturating_sub(1).min(cur + self.cfg.max_climb.max(1));
                // A rung never measured, within a climb, is tried if its prediction with the
                // shape's typical error in its favour would count as fast as the best: as in
                // S2, without this a pessimistic shape (on some text zstd's negative levels
                // are no faster than zstd:1) would stop the climb short for good.
                let now = self.clock;
                let explore = (cur + 1..=top).find(|&r| {
                    let optimistic = (self.threads * self.model.speed(r, now) / (1.0 - EXPLORE))
                        .min(link * self.model.ratio(r, now));
                    self.model.confidence(r, now) <= 0.0
                        && self.model.ratio(r, now) > self.model.ratio(cur, now) * (1.0 + RATIO_TIE)
                        && optimistic * margin >= best
                });
                if lane.tentative && lane.fresh == 0 {
                    // Tried on the shape's word: the prediction that made it worth trying is
                    // no evidence against it until its first fresh measurement.
                } else if pick > cur && confirmed {
                    // More effort (faster writes, or as fast with a better ratio): only on
                    // confirmed predictions, and a bounded step at a time.
                    moved(&mut lane, pick.min(top), false);
                    reason = Reason::Headroom;
                } else if let Some((down, _)) =
                    self.s1_pick(link, cur).filter(|&(_, b)| here * margin < b)
                {
                    // Less effort writes clearly faster: at once (even when more effort is
                    // predicted better still, but not confirmed).
                    moved(&mut lane, down, false);
                    reason = Reason::TooSlow;
                } else if pick < cur
                    && lane.fresh >= self.cfg.confirm
                    && self.model.confidence(pick, now) > 0.0
                    && self.model.ratio(cur, now) <= self.model.ratio(pick, now) * (1.0 + RATIO_TIE)
                    && self.model.speed(pick, now) > self.model.speed(cur, now)
                {
                    // The current rung buys no ratio over a faster one that writes as fast (the
                    // pick): it only costs CPU. Once both have been measured: the shape's ratio
                    // for a rung never measured can be far off (on float arrays zstd's negative
                    // levels save nothing, against 0.7 % less than zstd:1 in the shape).
                    moved(&mut lane, pick, false);
                    reason = Reason::SameRatio;
                } else if let (Some(r), true) = (explore, confirmed) {
                    moved(&mut lane, r, false);
                    lane.tentative = true;
                    reason = Reason::Headroom;
                }
            }
        } else {
            let cur = lane.rung;
            let h = self.headroom(strategy, link, cur);
            // Until the first fresh measurement of a rung tried on the shape's word (predicted
            // a little short of the target), the prediction that made it worth trying is not
            // evidence against it.
            let floor = if lane.tentative && lane.fresh == 0 { 1.0 - EXPLORE } else { 1.0 };
            if h < floor {
                match (1..cur).rev().find(|&r| self.headroom(strategy, link, r) >= 1.0) {
                    Some(r) => moved(&mut lane, r, false),
                    None => {
                        let m = self.mix_rung(strategy, link, 0).0;
                        moved(&mut lane, m, true);
                    }
                }
                reason = Reason::TooSlow;
            } else if let Some(r) = (lane.fresh >= self.cfg.confirm)
                .then(|| {
                    (1..cur).find(|&r| {
                        self.model.confidence(r, self.clock) > 0.0
                            && !self.buys_ratio(r, cur)
                            && self.headroom(strategy, link, r) >= 1.0
                    })
                })
                .flatten()
            {
                // The current rung buys no ratio over a faster one, both measured on data that
                // compresses evenly: the same bytes for less CPU (float arrays: zstd:1 stores
                // what zstd:14 does, at 7x the speed). As S1 does (`Reason::SameRatio`).
                moved(&mut lane, r, false);
                reason = Reason::SameRatio;
            } else if h >= threshold && lane.streak >= self.cfg.confirm {
                // Spend more effort conservatively: at least to the next rung predicted to
                // meet the target, at most half the remaining distance (log scale).
                // Never past a rung predicted too slow: the ladder is walked in order, so a
                // codec's slow end leads into the next codec's fast end.
                let need = h.sqrt();
                // The next rung is tried if predicted within the shape's uncertainty of the
                // target, as long as that prediction rests on the shape rather than on
                // measurements of that rung: otherwise a reference shape that is wrong by a few
                // percent would stop the climb one rung short for good.
                let next_ok = |r: usize| self.headroom(strategy, link, r) >= self.min_headroom(r);
                let first_ok = (cur + 1 < n && next_ok(cur + 1)).then_some(cur + 1);
                let half = self.last_ok_from(strategy, link, cur + 1, need);
                let top = (n - 1).min(cur + self.cfg.max_climb.max(1));
                let climb = first_ok.max(half).map(|r| r.min(top)).and_then(|r| {
                    if self.buys_ratio(cur, r) {
                        return Some(r);
                    }
                    // It stores what the current rung does: on to the next rung that buys
                    // ratio, as long as the run is predicted fast enough. A rung never measured
                    // counts as buying, so this passes only measured rungs (their speeds are
                    // known) and steps at most one rung into the unknown: past a run of ties
                    // (the reference shape has zstd:21, zstd:22 and xz:0..3 at about one
                    // ratio) the climb may go further than `max_climb`.
                    (r + 1..n).take_while(|&k| next_ok(k)).find(|&k| self.buys_ratio(cur, k))
                });
                if let Some(r) = climb {
                    moved(&mut lane, r, false);
                    lane.tentative = self.headroom(strategy, link, r) < 1.0;
                    reason = Reason::Headroom;
                }
            }
            // Not on a rung tried on the shape's word until it has been measured (after that
            // the measurements, not the shape, say how much to blend).
            (lane.blend, lane.blend_to) =
                if lane.rung == cur && !(lane.tentative && lane.fresh == 0) {
                    self.blend_fraction(strategy, link, cur)
                } else {
                    (0.0, cur)
                };
        }

        let out = if lane.mixing {
            let p = self.mix_fraction(strategy, link, lane.rung);
            lane.mix_fraction = p;
            lane.mix_acc += p;
            if lane.mix_acc >= 1.0 - 1e-9 {
                lane.mix_acc -= 1.0;
                (
                    spec(self, lane.rung),
                    if reason == Reason::Hold { Reason::MixCompress } else { reason },
                )
            } else {
                (CodecSpec::NONE, Reason::MixRaw)
            }
        } else if lane.blend > 0.0 {
            lane.blend_acc += lane.blend;
            if lane.blend_acc >= 1.0 - 1e-9 {
                lane.blend_acc -= 1.0;
                let next = spec(self, lane.blend_to);
                (next, if reason == Reason::Hold { Reason::Blend } else { reason })
            } else {
                (spec(self, lane.rung), reason)
            }
        } else {
            (spec(self, lane.rung), reason)
        };
        let out = match lane.note.take() {
            Some(note) if matches!(out.1, Reason::Hold | Reason::Start) => (out.0, note),
            _ => out,
        };
        self.lanes[i] = lane;
        out
    }
}

/// Target aggregate compression speed (raw bytes/s) for a strategy at a link speed and ratio.
fn target(strategy: Strategy, link: f64, ratio: f64) -> f64 {
    strategy.target_speed(link, ratio)
}

/// The filters of the last `filters=` hint (range hints come after file hints, so a range's
/// filters win over the file's); else `shuffle:<size>` for the first `dtype` hint with elements
/// wider than a byte.
fn hint_filters(hints: &[Hint]) -> Filters {
    if let Some(f) = hints.iter().rev().find_map(|h| match h {
        Hint::Filters(f) => Some(*f),
        _ => None,
    }) {
        return f;
    }
    for h in hints {
        if let Hint::Dtype(d) = h {
            if d.size() > 1 {
                if let Ok(f) = FilterSpec::shuffle(d.size()).and_then(|s| Filters::new(&[s])) {
                    return f;
                }
            }
        }
    }
    Filters::NONE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(
        strategy: Strategy,
        link: f64,
        threads: usize,
        per_thread: f64,
        ratio: f64,
    ) -> Controller {
        let mut ctl = Controller::new(ControllerConfig::new(strategy, Link::Fixed(link), threads));
        let ctx = BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class: 0 };
        let d = ctl.next_block(&ctx);
        let raw = 1u64 << 20;
        let t = Duration::from_secs_f64(raw as f64 / per_thread);
        ctl.record_block(&BlockMeasurement {
            decision: Decision { codec: "lz4:50".parse().unwrap(), ..d },
            raw_len: raw,
            stored_len: (raw as f64 / ratio) as u64,
            stored_raw: false,
            wall: t,
            cpu: t,
        });
        ctl
    }

    #[test]
    fn s1_mix_fraction_keeps_cpu_and_link_equally_busy() {
        let (link, threads, s, f) = (6000e6, 2, 1500e6, 1.5);
        let ctl = measured(Strategy::Throughput, link, threads, s, f);
        let p = ctl.mix_fraction(Strategy::Throughput, link, 1);
        // What the controller measured (the durations are rounded to nanoseconds).
        let agg = ctl.model.speed(1, ctl.clock) * threads as f64;
        assert!((agg / (s * threads as f64) - 1.0).abs() < 1e-5);
        let f = ctl.model.ratio(1, ctl.clock);
        let cpu = p / agg;
        let wire = (1.0 - p * (1.0 - 1.0 / f)) / link;
        assert!((cpu / wire - 1.0).abs() < 1e-9, "p {p}: cpu {cpu} link {wire}");
        // The throughput of the mix is L + S(1 - 1/f): more than raw.
        assert!((1.0 / cpu) / (link + agg * (1.0 - 1.0 / f)) - 1.0 < 1e-9);
    }

    #[test]
    fn s2_mix_fraction_spends_the_targets_time() {
        let (link, threads, s) = (6000e6, 2, 1500e6);
        let mut ctl = measured(Strategy::KeepPace, link, threads, s, 1.5);
        let p = ctl.mix_fraction(Strategy::KeepPace, link, 1);
        assert!((p - 2.0 * s / link).abs() < 1e-5, "{p}");
        // A mix is off the schedule: its formula already spends the target's time, and at a
        // link the pipeline may not even fill, aiming lower would only slow the write.
        ctl.schedule = 4.0 * (1u64 << 20) as f64 / link;
        assert_eq!(ctl.mix_fraction(Strategy::KeepPace, link, 1), p);
        let ctl = measured(Strategy::Prolong(2.0), link, threads, s, 1.5);
        let p = ctl.mix_fraction(Strategy::Prolong(2.0), link, 1);
        assert!((p - 2.0 * s / (link / 2.0)).abs() < 1e-5, "{p}");
    }

    #[test]
    fn targets() {
        assert_eq!(target(Strategy::Throughput, 100.0, 3.0), 300.0);
        assert_eq!(target(Strategy::KeepPace, 100.0, 3.0), 100.0);
        assert_eq!(target(Strategy::Prolong(1.25), 100.0, 3.0), 80.0);
        assert_eq!(target(Strategy::Archive, 100.0, 3.0), 0.0);
    }

    #[test]
    fn defaults() {
        let ctl = Controller::new(ControllerConfig::new(Strategy::KeepPace, Link::Auto, 0));
        assert_eq!(ctl.keep_threshold(), 0.97);
        assert_eq!(ctl.link(), None);
        assert_eq!(ctl.status().mode, Mode::Start);
        // Nonsense tunables are clamped, not trusted.
        let mut cfg = ControllerConfig::new(Strategy::Prolong(f64::NAN), Link::Fixed(-1.0), 4);
        cfg.keep_threshold = 7.0;
        cfg.dead_band = f64::NAN;
        let ctl = Controller::new(cfg);
        assert_eq!(ctl.keep_threshold(), 1.0);
        assert_eq!(ctl.config().dead_band, 0.10);
        assert_eq!(ctl.config().strategy, Strategy::Prolong(1.0));
        assert_eq!(ctl.link(), None);
    }
}
