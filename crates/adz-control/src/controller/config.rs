//! The controller's settings ([`ControllerConfig`]) and the clamping that makes any of them usable.

use adz_format::{CodecId, CodecSpec};

use super::shadow::SHADOW_SHARE;
use crate::ladder::Ladder;
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
    /// meets the target. Default 8 (measurements: docs/decisions/0008).
    pub schedule_blocks: f64,
    /// CPUs the pipeline may use (0: as many as `threads`). With the pipeline's CPU time in
    /// [`SinkMeasurement::cpu`](crate::SinkMeasurement::cpu) it says how much CPU is left for
    /// compression while the link is the bottleneck (see
    /// [`Controller::pipeline_raw_speed`](crate::Controller::pipeline_raw_speed)).
    pub cpus: usize,
    /// Shadow compression ([`Decision::shadow`](crate::Decision::shadow)) may cost at most this
    /// share of the CPU the blocks' own compression took; 0 turns it off. Default 0.03.
    pub shadow_share: f64,
    /// Compression and the link work one after the other on one thread, as in an HDF5 filter
    /// (compress a chunk, then write it): a byte costs `1/S + 1/(L f)`, not the pipeline's
    /// `max(1/(N S), 1/(L f))`. S1 then maximises `1 / (1/S + 1/(L f))`, and S2/S3 aim at the
    /// compression speed that makes the serial write take the raw write's time (× F); see
    /// [`ControllerConfig::write_speed`] and [`ControllerConfig::target_speed`]. Default false
    /// (the pipeline; docs/decisions/0047).
    pub serial: bool,
    /// Adaptive strategies choose each class's byte filters (shuffle, delta, xor by element
    /// width) by measurement, when no `filters=` or `dtype=` hint names them (see
    /// [`Decision::shadow_filters`](crate::Decision::shadow_filters); docs/decisions/0059).
    /// Default true.
    pub auto_filters: bool,
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
            keep_threshold: KEEP_THRESHOLD,
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
            serial: false,
            auto_filters: true,
        }
    }

    /// The same configuration for a serial writer (see [`ControllerConfig::serial`]).
    pub fn with_serial(mut self, serial: bool) -> Self {
        self.serial = serial;
        self
    }

    /// The predicted write speed, raw bytes/s, of compressing at `compress` raw bytes/s (all
    /// workers) and sending `1/ratio` of it through a link of `link` bytes/s: the slower of the
    /// two in a pipeline, `min(S, L f)`; one after the other when serial, `1 / (1/S + 1/(L f))`.
    pub fn write_speed(&self, compress: f64, link: f64, ratio: f64) -> f64 {
        let sent = link * ratio;
        if self.serial {
            1.0 / (1.0 / compress + 1.0 / sent)
        } else {
            compress.min(sent)
        }
    }

    /// The aggregate compression speed `strategy` aims at ([`Strategy::target_speed`] in a
    /// pipeline). Serial, a byte costs `1/S + 1/(L f)` against the raw write's `1/L`: S2/S3
    /// give it `F/L`, so `S = L / (F - 1/f)`; S1's target is S2's, the speed at which
    /// compressing stops paying for itself (below it raw writes faster). Infinite when even
    /// infinitely fast compression cannot meet it (ratio 1).
    pub fn target_speed(&self, strategy: Strategy, link: f64, ratio: f64) -> f64 {
        if !self.serial {
            return strategy.target_speed(link, ratio);
        }
        let f = match strategy {
            Strategy::Throughput => 1.0,
            other => match other.slowdown() {
                Some(f) => f,
                None => return 0.0,
            },
        };
        let spare = f - 1.0 / ratio.max(1.0);
        if spare > 0.0 {
            link / spare
        } else {
            f64::INFINITY
        }
    }

    /// Serial only: the share of a mix's blocks to compress at aggregate speed `s` with ratio
    /// `f`, raw blocks costing `1/r` each, as `(numerator, denominator)`. A share `p` costs
    /// `p (1/S + 1/(L f)) + (1 - p)(1/r + 1/L)` per byte: linear in `p`, so S1's best is all
    /// or nothing, and a mix (no rung beats raw) is raw but for [`SERIAL_SAMPLE`] of the
    /// blocks (all of them until a speed is `measured`: the start's guess is pessimistic, and
    /// raw blocks measure nothing). S2/S3 spend `F/L`:
    /// `p = ((F - 1)/L - 1/r) / (1/S - 1/r - (1 - 1/f)/L)`. None in a pipeline.
    pub(super) fn serial_mix_share(
        &self,
        strategy: Strategy,
        link: f64,
        (s, r, f): (f64, f64, f64),
        measured: bool,
    ) -> Option<(f64, f64)> {
        if !self.serial {
            return None;
        }
        let slow = match strategy {
            Strategy::Throughput => return Some((if measured { SERIAL_SAMPLE } else { 1.0 }, 1.0)),
            other => other.slowdown().unwrap_or(1.0),
        };
        Some(((slow - 1.0) / link - 1.0 / r, 1.0 / s - 1.0 / r - (1.0 - 1.0 / f) / link))
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

/// A serial S1 write that finds raw fastest still compresses this share of its blocks (1 in
/// 64), so that it goes on measuring the data and notices when compressing pays again.
pub const SERIAL_SAMPLE: f64 = 1.0 / 64.0;

/// Prediction of the reference table when nothing has been measured: assume the machine is
/// half as fast as the reference, because starting too slow costs time and starting too fast
/// only costs a little ratio on the first blocks. The predictor guesses unmeasured rungs'
/// costs with it too.
pub const INITIAL_LEVEL: f64 = 0.5;

/// The default [`ControllerConfig::keep_threshold`]: a compressed block is kept only if it
/// saves 3 % (a probe that saves less says the data is incompressible).
pub const KEEP_THRESHOLD: f64 = 0.97;

impl ControllerConfig {
    /// The same configuration with out-of-range tunables clamped to usable values.
    pub(super) fn clamped(self) -> ControllerConfig {
        let mut cfg = self;
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
        cfg
    }
}

pub(super) fn finite_in(x: f64, lo: f64, hi: f64, default: f64) -> f64 {
    if x.is_finite() {
        x.clamp(lo, hi)
    } else {
        default
    }
}
