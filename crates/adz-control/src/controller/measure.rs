//! What the pipeline and the controller tell each other: a block's context, the decision, the
//! measurements, and the controller's status.

use std::fmt;
use std::time::Duration;

use adz_format::{CodecSpec, Filters};

use super::LinkEstimate;
use crate::hint::Hint;
use crate::strategy::Strategy;

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
    /// class; a plain [`Controller`](crate::Controller) ignores it.
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
    /// `Link::Auto`: the sink blocked under pressure and its drain rate replaced an accept rate
    /// that a buffer had inflated (or deflated) by more than 25 %: the lane aimed afresh at
    /// the rung the measured link asks for, as with a link given (decision 0033).
    LinkMeasured,
    /// The energy strategy: another choice is predicted to take clearly less energy per byte
    /// (compression's plus storage's) within the time bound; moved to it (decision 0046).
    Energy,
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
    /// Shadow compression: also compress [`SHADOW_BYTES`](crate::SHADOW_BYTES) of this block with
    /// this rung and with `codec`, and report both
    /// ([`Control::record_shadow`](crate::Control::record_shadow)), so that the controller keeps
    /// learning rungs it does not use. None: no shadow.
    pub shadow: Option<CodecSpec>,
    /// The filters of the shadow's slice (None: the block's own `filters`). A shadow at the
    /// block's own codec with other filters is a filter probe: it tells the controller what
    /// those filters would store.
    pub shadow_filters: Option<Filters>,
}

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
    /// The compressed result was not kept (see
    /// [`Controller::keep_threshold`](crate::Controller::keep_threshold)).
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
    /// How long the sink waited for this frame after its previous write ended (zero for the first
    /// frame, whose wait is the write's start-up, and for a backlogged one). With `busy` it makes
    /// the write's elapsed time, from which the controller learns what the whole pipeline costs per
    /// raw byte (see [`Controller::pipeline_raw_speed`](crate::Controller::pipeline_raw_speed)).
    pub waited: Duration,
    /// CPU time the writing process spent since the previous sink measurement (zero: not
    /// measured): the pipeline's threads (the feeder reading and cutting blocks, the workers,
    /// the sequencer) and whatever else runs in the process, such as an application that
    /// computes while an asynchronous write goes on, or other writers. Less the workers'
    /// compression time, it is what each raw byte costs the cores besides its compression
    /// (reads, copies, checksums, writes, and the computing that shares the cores with them),
    /// which the sink's clock alone cannot tell while the link is the bottleneck
    /// (decision 0062).
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

/// A snapshot of the controller for tracing and progress display. Fields may be added: build
/// one with [`Status::new`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
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
    /// What the sink's writes say of the link: the rate, its bounds and whether it is settled
    /// (None before the first sink measurement; measured with a fixed link too).
    pub link_estimate: Option<LinkEstimate>,
    /// CPU time / wall time of the workers' blocks (1 / their smoothed wall/CPU ratio): below
    /// 1 when they compete for cores.
    pub cpu_share: Option<f64>,
    /// Blocks decided so far.
    pub blocks: u64,
    /// Shadow measurements made ([`Decision::shadow`]).
    pub shadows: u64,
    /// The filters the controller chose for this class's blocks (see
    /// [`ControllerConfig::auto_filters`](crate::ControllerConfig::auto_filters)).
    pub filters: Filters,
    /// Their CPU time over the CPU time of the blocks' own compression.
    pub shadow_share: f64,
}

/// The largest compressed share of a mix for which the pipeline's pools get extra buffers
/// ([`Status::compresses_in_mix`]).
pub(crate) const MIX_BUFFERS_SHARE: f64 = 0.5;

impl Status {
    /// A status of `strategy` with nothing known: no rung, start mode, no figures.
    pub fn new(strategy: Strategy) -> Status {
        Status {
            strategy,
            rung: CodecSpec::NONE,
            mode: Mode::Start,
            target: None,
            speed: None,
            ratio: None,
            link: None,
            link_estimate: None,
            cpu_share: None,
            blocks: 0,
            shadows: 0,
            shadow_share: 0.0,
            filters: Filters::NONE,
        }
    }

    /// Whether the controller mixes raw blocks with a minority of compressed ones: then a
    /// compressed block holds up the raw frames behind it at the ordered writer, and the
    /// pipeline's pools need a few more buffers. Not while it probes, nor in a "mix" that
    /// sends everything raw, nor when most blocks compress (the frames behind are as slow,
    /// and a larger working set only slows the codec). Decision 0014.
    pub fn compresses_in_mix(&self) -> bool {
        matches!(self.mode, Mode::Mix { compress_fraction }
            if compress_fraction > 0.0 && compress_fraction <= MIX_BUFFERS_SHARE)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_mix_that_sends_most_blocks_raw_compresses_in_mix() {
        let status = |mode| Status { mode, ..Status::new(Strategy::Throughput) };
        let mix = |p| status(Mode::Mix { compress_fraction: p }).compresses_in_mix();
        assert!(mix(0.1) && mix(0.4) && mix(MIX_BUFFERS_SHARE));
        assert!(!mix(0.0), "everything raw: nothing holds a raw frame up");
        assert!(!mix(0.8), "mostly compressed: the frames behind are as slow");
        for mode in [Mode::Probe, Mode::Adapt, Mode::Start, Mode::Fixed] {
            assert!(!status(mode).compresses_in_mix(), "{mode:?}");
        }
    }
}
