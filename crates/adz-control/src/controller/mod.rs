//! The controller: told measurements, asked for the next block's codec, level and filters.
//!
//! Its rooms: `config` (settings), `control` (the [`Control`] trait), `measure` (what it is
//! told and answers), `pace` (link, pipe and stretch), `probe` (incompressible data), `mix`
//! (raw and compressed blocks), `schedule` (the S2/S3 aim), `decide` (the adaptive decision,
//! as steps that each return a move), `energy` (the energy strategy's decision) and `shadow`.
//! Layout and evidence: docs/decisions/0022.

mod config;
mod control;
mod decide;
mod energy;
mod filters;
mod link;
mod measure;
mod mix;
mod pace;
mod plan;
mod probe;
mod schedule;
mod shadow;

use adz_format::{CodecSpec, FilterSpec, Filters};

pub use self::config::{ControllerConfig, INITIAL_LEVEL, KEEP_THRESHOLD};
pub use self::control::Control;
use self::decide::Lane;
pub use self::decide::RATIO_TIE;
pub use self::filters::start_filters;
use self::filters::FilterChoice;
pub use self::link::LinkEstimate;
use self::link::LinkMeter;
pub use self::measure::{
    BlockContext, BlockMeasurement, Decision, Mode, Reason, ShadowMeasurement, SinkMeasurement,
    Status,
};
use self::pace::PipeWindow;
use self::probe::ProbeState;
pub use self::shadow::{FILTER_PROBE_BYTES, SHADOW_BYTES};
use crate::hint::Hint;
use crate::ladder::Ladder;
use crate::model::{Model, Rates, Sample};
use crate::strategy::{Link, Strategy};

/// The controller. It owns no threads and does no I/O: the pipeline asks it for every block's
/// decision ([`next_block`](Controller::next_block)) and tells it what happened
/// ([`record_block`](Controller::record_block), [`record_sink`](Controller::record_sink)).
#[derive(Clone, Debug)]
pub struct Controller {
    cfg: ControllerConfig,
    threads: f64,
    fixed_link: Option<f64>,
    link: LinkMeter,
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
    /// link times of a block (see [`PROBE_COST_SHARE`](probe::PROBE_COST_SHARE)).
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
    /// has reported [`PIPE_MIN_WRITES`](pace::PIPE_MIN_WRITES) writes.
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
    /// The class's filters, chosen by probes ([`ControllerConfig::auto_filters`]).
    filters: FilterChoice,
}

impl Controller {
    /// A controller for `cfg`. Out-of-range tunables are clamped to usable values, so this
    /// never fails.
    pub fn new(cfg: ControllerConfig) -> Controller {
        let cfg = cfg.clamped();
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
            link: LinkMeter::new(cfg.link_memory_bytes as f64),
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
            filters: FilterChoice::new(),
            cfg,
        }
    }

    /// A controller for a different kind of data in the same write: it shares what this one
    /// measured of the link, the sink and the workers' wall/CPU ratio, and learns the data
    /// afresh (model, lanes, probe state).
    pub(crate) fn fork(&self) -> Controller {
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
    /// checksumming its sample): `cpu` CPU seconds per raw byte on all the pipeline's threads,
    /// and `serial` seconds per raw byte of its slowest one-thread stage. They stand in until
    /// the pipeline has measured itself over its first writes, so that the first blocks' mix
    /// does not count raw blocks as free (docs/decisions/0017). A figure that is not finite and
    /// positive is ignored.
    pub fn set_path_cost(&mut self, cpu: f64, serial: f64) {
        let ok = |x: f64| (x.is_finite() && x > 0.0).then_some(x);
        self.path_prior = ok(cpu).or(self.path_prior);
        self.serial_prior = ok(serial).or(self.serial_prior);
    }

    /// Start this class's filters at `filters` (a sampling predictor's choice, see
    /// [`crate::start_filters`]); the probes go on from there. Ignored once a probe has
    /// changed them.
    pub fn set_filters(&mut self, filters: Filters) {
        self.filters.start_with(filters);
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
    /// measurement); for a strategy other than S1, never below the writes' accept rate (see
    /// `LinkMeter::get_paced`).
    pub fn link(&self) -> Option<f64> {
        self.fixed_link.or_else(|| match self.cfg.strategy {
            Strategy::Throughput => self.link.get(),
            _ => self.link.get_paced(),
        })
    }

    /// What the sink's writes say of the link, with its bounds and whether it is settled
    /// (None before the first sink measurement). Measured with a fixed link too, which it
    /// does not replace.
    pub fn link_estimate(&self) -> Option<LinkEstimate> {
        self.link.estimate()
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
            shadow_filters: None,
        };
        if ctx.hints.contains(&Hint::NoCompress) {
            return raw(Reason::HintNoCompress);
        }
        let strategy = self.effective(ctx.hints);
        // Filters named by a hint are the user's; otherwise an adaptive strategy's own.
        let named = ctx.hints.iter().any(|h| matches!(h, Hint::Filters(_) | Hint::Dtype(_)));
        let auto = !named && self.cfg.auto_filters && strategy.is_adaptive();
        let filters = if auto { self.filters.current() } else { hint_filters(ctx.hints) };

        if self.probe.is_some() {
            return match self.probe_decision(seq) {
                Some(codec) => Decision {
                    codec,
                    filters,
                    reason: Reason::Probe,
                    seq,
                    shadow: None,
                    shadow_filters: None,
                },
                None => raw(Reason::Incompressible),
            };
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
                return Decision {
                    codec,
                    filters,
                    reason,
                    seq,
                    shadow: None,
                    shadow_filters: None,
                };
            }
            return raw(reason);
        }
        self.attempt(seq);
        let (shadow, shadow_filters) = if strategy.is_adaptive() {
            self.pick_shadow(strategy, codec, seq, auto)
        } else {
            (None, None)
        };
        Decision { codec, filters, reason, seq, shadow, shadow_filters }
    }

    /// What a worker measured for one block. Measurements may arrive out of order and several
    /// blocks after the decision; any values are accepted (zero times, zero lengths).
    pub fn record_block(&mut self, m: &BlockMeasurement) {
        let d = m.decision;
        if d.reason == Reason::HintNoCompress {
            return;
        }
        let (wall, cpu) = (m.wall.as_secs_f64(), m.cpu.as_secs_f64());
        let secs = self.block_secs(wall, cpu);
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
            self.note_work(m.raw_len as f64 / s, cpu);
        }
        let probe_cost = self.probe_cost(&d, m.raw_len, wall);
        if m.raw_len == 0 {
            return;
        }
        if wall > 0.0 && cpu > 0.0 {
            self.update_stretch(wall, cpu);
        }
        let raw_len = m.raw_len as f64;
        let stored =
            if m.stored_raw { raw_len } else { (m.stored_len as f64).clamp(1.0, raw_len.max(1.0)) };
        let compressible = !m.stored_raw && stored <= raw_len * self.cfg.keep_threshold;
        let blind = self.note_failure(&d, compressible);
        let reset = self.track_probe_mode(&d, compressible, blind, probe_cost);

        let rung = self.cfg.ladder.position(d.codec);
        let weight = (raw_len / self.cfg.block_size as f64).min(1.0);
        // What the model expected of this block, before it learns from it.
        let predicted = rung.map(|r| self.threads * self.model.speed(r, self.clock));
        if compressible {
            let sample =
                Sample { spec: d.codec, rung, speed, ratio: raw_len / stored, weight, reset };
            self.model.observe(&sample, self.clock);
        } else if self.probe.is_none() && !blind {
            // An incompressible block moves only the ratio level (S1's effective ratio counts
            // it): LZ4 and zstd skip incompressible input several times faster, which says
            // nothing of the data that compresses. In probe mode not even that.
            self.model.observe_incompressible(d.codec, weight);
        }
        if let (Some(rung), Some(speed)) = (rung, speed) {
            self.count_fresh(d.seq, rung, speed, predicted);
        }
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
            link_estimate: self.link.estimate(),
            cpu_share: self.stretch.map(|s| 1.0 / s),
            blocks: self.seq,
            shadows: self.shadows,
            filters: self.filters.current(),
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
                    status.target = Some(self.cfg.target_speed(
                        strategy,
                        l,
                        self.model.ratio(lane.rung, self.clock),
                    ));
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
