//! Predict before compressing: does compression pay on this data and this link, and at which
//! rung should the controller start?
//!
//! After Papio's "Selectively Parallel I/O Compression" (its algorithms 1-3 and equations 1
//! and 2): compress a few randomly placed slices of the data ([`Sample`]) with a few candidate
//! rungs, measure each rung's ratio and one thread's speed, and apply the write-time formulas
//! of [`estimate`] to the whole write. Before compressing anything, a look at the sample's
//! bytes ([`heuristic`], after btrfs' `btrfs_compress_heuristic`) skips the work for data that
//! is obviously random (nothing to measure: raw) and cuts it for data that is obviously
//! redundant (only the fastest rungs). The whole prediction costs at most 2 % of the write's
//! predicted time: the sample is cut so that the `MIN_RUNGS` cheapest candidates fit, and
//! costlier candidates that would not fit are skipped.
//!
//! ```
//! use adz_core::predict::{PredictConfig, Predictor, Sample, SampleConfig};
//! use adz_core::control::Strategy;
//!
//! let data = b"measurements of a solver, step 1: residual 0.25, iterations 12\n".repeat(50_000);
//! let sample = Sample::from_slice(&data, &SampleConfig::default());
//! let mut p = Predictor::new(PredictConfig { threads: 4, ..PredictConfig::default() });
//! // A 1GbE link: compression pays, and S1 starts at a compressing rung.
//! let pred = p.predict(&sample, Strategy::Throughput, Some(117e6))?;
//! assert!(pred.pays);
//! assert_ne!(pred.start, adz_core::format::CodecSpec::NONE);
//! assert!(pred.sampled_bytes as f64 <= 0.02 * data.len() as f64 + 16384.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod budget;
mod choose;
pub mod estimate;
mod extrapolate;
pub mod heuristic;
mod measure;
mod sample;

use std::time::Instant;

use adz_control::{Priors, Strategy, INITIAL_LEVEL};
use adz_format::{CodecId, CodecSpec, Filters};
use serde::{Serialize, Serializer};

use self::choose::{estimate_of, narrow, Ask, Clock};
pub use self::estimate::{Layout, RungPerf, WriteModel, LINK_GRID};
pub use self::heuristic::{classify_sample, Compressibility, Heuristic};
pub use self::sample::{Feed, PlannedSlice, Sample, SampleConfig, FEED_MIN_BYTES};
use crate::{FrameEncoder, Result};

/// The link the time budget is reckoned against when the link is unknown: 10GbE.
pub(crate) const BUDGET_LINK: f64 = 1200e6;

/// How many ladder steps past the costliest measured rung (the furthest down the ladder) an
/// S2/S3 start may be extrapolated, along that rung's codec only (see [`Predictor::predict`]).
#[doc(hidden)] // a tuning constant, public only for tests/predict.rs
pub const EXTRAPOLATE_STEPS: usize = 3;

/// CPU seconds per raw byte the pipeline spends besides compressing (reading the input,
/// cutting and sequencing blocks, handing frames to the store), measured with raw writes on
/// the benchmark machine; a store's own cost is left out (docs/PREDICTOR.md, "Method").
#[doc(hidden)] // a tuning constant, public only for tests/predict.rs
pub const PATH_COST: f64 = 0.22e-9;

/// Seconds per raw byte of the pipeline's slowest one-thread stage (the feeder reading the
/// input or the sequencer), measured with raw writes on the benchmark machine
/// (docs/PREDICTOR.md, "Method").
#[doc(hidden)] // a tuning constant, public only for tests/predict.rs
pub const SERIAL_COST: f64 = 0.2e-9;

/// The cheapest candidates measured whatever the budget (on a smaller sample if need be).
pub(crate) const MIN_RUNGS: usize = 3;

/// How a [`Predictor`] works.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictConfig {
    /// How the sample is taken (by the callers that take it: [`Sample`]'s constructors).
    pub sample: SampleConfig,
    /// Candidate rungs, measured cheapest first. Default lz4:1, zstd:-1, zstd:1, zstd:3,
    /// zstd:6, zstd:12, xz:6: one per region of the ladder.
    pub rungs: Vec<CodecSpec>,
    /// Rungs faster than the candidates, measured right after the first candidate (in this
    /// order, and counted among the `MIN_RUNGS` measured whatever the budget) when that one
    /// saves but cannot keep the link full: its aggregate speed is below the link times its
    /// ratio, so a faster rung may write faster. Default lz4:25. Not measured always: it
    /// would take zstd:1's place among the `MIN_RUNGS` at slow links (docs/PREDICTOR.md,
    /// "Method"; decision 0013).
    pub fast_rungs: Vec<CodecSpec>,
    /// The prediction's cost is at most this share of the write's predicted time. Default
    /// 0.02.
    pub time_budget: f64,
    /// And at most this many seconds, whatever the share gives: what is left of a budget
    /// shared with earlier predictions of the same write (the writer's per-class ones).
    /// Default unbounded.
    pub max_budget_seconds: f64,
    /// Compression worker threads of the write. Default 1.
    pub threads: usize,
    /// Raw bytes per block. Default 1 MiB.
    pub block_size: u64,
    /// Cores the workers share with the rest of the pipeline. Default 0: as many as the
    /// workers (the writer gives the machine's).
    pub cpus: usize,
    /// CPU seconds per raw byte the pipeline spends besides compressing ([`WriteModel`]'s
    /// path cost). Default [`PATH_COST`].
    pub path_cost: f64,
    /// Seconds per raw byte of the pipeline's slowest one-thread stage ([`WriteModel`]'s
    /// serial cost). Default [`SERIAL_COST`].
    pub serial_cost: f64,
    /// Take the two costs above from the sample instead, where it timed enough bytes
    /// ([`Sample::feed`]): the serial cost is the time to move a byte into the pipeline's
    /// buffers, the path cost that plus a worker's checksum of it. Default true: the
    /// constants are one machine's (docs/PREDICTOR.md, "Method").
    pub measure_path: bool,
    /// A compressed block is kept only if `stored <= raw x keep_threshold`. Default 0.97.
    pub keep_threshold: f64,
    /// S1's margin: rungs within it of the fastest count as equally fast. Default 0.05.
    pub margin: f64,
    /// Filters applied before compressing (the shuffle of a `dtype` hint). Default none.
    pub filters: Filters,
    /// Each rung's prior speed and ratio: the built-in reference table, or one measured on
    /// this machine (`adz profile`). Default built-in.
    pub priors: Priors,
    /// The fastest an unknown link can be, bytes/s, where the sink bounds it (an object
    /// store's upload: its streams times a request's rate, `Upload::rate_ceiling`). The start
    /// for an unknown link is then the least regret over the links up to it
    /// ([`estimate::plausible_links`]). Default None: up to 12 GB/s.
    pub link_ceiling: Option<f64>,
}

impl Default for PredictConfig {
    fn default() -> PredictConfig {
        let rungs = ["lz4:1", "zstd:-1", "zstd:1", "zstd:3", "zstd:6", "zstd:12", "xz:6"]
            .iter()
            .map(|s| s.parse().expect("valid default rung"))
            .collect();
        PredictConfig {
            sample: SampleConfig::default(),
            rungs,
            fast_rungs: vec!["lz4:25".parse().expect("valid default rung")],
            time_budget: 0.02,
            max_budget_seconds: f64::INFINITY,
            threads: 1,
            block_size: 1 << 20,
            cpus: 0,
            path_cost: PATH_COST,
            serial_cost: SERIAL_COST,
            measure_path: true,
            keep_threshold: 0.97,
            margin: 0.05,
            filters: Filters::NONE,
            priors: Priors::builtin(),
            link_ceiling: None,
        }
    }
}

fn ser_spec<S: Serializer>(c: &CodecSpec, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&c.to_string())
}

fn ser_specs<S: Serializer>(c: &[CodecSpec], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(c.iter().map(|c| c.to_string()))
}

/// What one candidate rung is predicted to do on the whole write.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RungEstimate {
    /// The rung.
    #[serde(serialize_with = "ser_spec")]
    pub spec: CodecSpec,
    /// Predicted ratio (raw / stored, frame headers included; blocks that would not save
    /// 3 % count as stored raw).
    pub ratio: f64,
    /// Measured compression speed of one thread, raw bytes/s.
    pub speed: f64,
    /// The compressors' aggregate speed, raw bytes/s: `threads x speed`, or less where the
    /// workers share the cores with the rest of the pipeline ([`WriteModel::time_compress`]).
    pub aggregate_speed: f64,
    /// Predicted time to compress the whole write on every worker, seconds.
    pub compress_time: f64,
    /// Predicted time to send the compressed write through the link, seconds (None: link
    /// unknown).
    pub transfer_time: Option<f64>,
    /// Predicted write time with this rung at the link, seconds: the slower of the two plus
    /// the pipeline fill (None: link unknown).
    pub time: Option<f64>,
    /// Predicted speedup over writing raw (None: link unknown).
    pub speedup: Option<f64>,
    /// Sample bytes compressed to measure it ([`Sample::measured_bytes`]).
    pub bytes: u64,
}

/// A prediction for one write.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// What the look at the bytes said.
    pub heuristic: Heuristic,
    /// Raw bytes of the write predicted for.
    pub data_bytes: u64,
    /// Bytes in the sample.
    pub sampled_bytes: u64,
    /// Slices in the sample.
    pub slices: usize,
    /// The kinds of data the sample's probes found: `(entropy class, share)`; more than one:
    /// the slices were stratified by kind ([`Sample::kinds`]).
    pub kinds: Vec<(u8, f64)>,
    /// Bytes compressed during the prediction (sample bytes x rungs measured, plus the
    /// set-up slice again per rung if it is alone of its kind: [`Sample::measured_bytes`]).
    pub compressed_bytes: u64,
    /// Wall time the prediction took, seconds, the sample's look at its bytes included
    /// ([`Sample::look_seconds`]).
    pub seconds: f64,
    /// The time budget it had, seconds.
    pub budget_seconds: f64,
    /// The strategy predicted for.
    pub strategy: String,
    /// Worker threads.
    pub threads: usize,
    /// The link, bytes/s (None: unknown).
    pub link: Option<f64>,
    /// Predicted write time raw, seconds (None: link unknown).
    pub time_raw: Option<f64>,
    /// The candidates measured, cheapest first.
    pub rungs: Vec<RungEstimate>,
    /// Candidates not measured: over the time budget, or not needed (redundant data).
    #[serde(serialize_with = "ser_specs")]
    pub skipped: Vec<CodecSpec>,
    /// True if some rung is predicted to pay (faster for S1, within the strategy's time for
    /// S2/S3, and saving at least 3 %).
    pub pays: bool,
    /// The data looks incompressible: random to the heuristic, or no rung measured saved
    /// 3 %. (Raw for that reason, not because compression is too slow for the link: the
    /// controller then starts in probe mode rather than at raw.)
    pub incompressible: bool,
    /// Where the controller should start: a rung, or `none` (raw).
    #[serde(serialize_with = "ser_spec")]
    pub start: CodecSpec,
    /// The start's estimate when it was not measured (S2/S3, every measured rung faster
    /// than the target, costlier candidates over the budget): the reference table's speed
    /// scaled by the measured speed level, the best measured ratio. None: the start was
    /// measured, or is raw.
    pub extrapolated: Option<RungEstimate>,
    /// With the link unknown: the start's worst relative regret over the plausible links
    /// ([`LINK_GRID`], or up to [`PredictConfig::link_ceiling`]).
    pub regret: Option<f64>,
    /// The pipeline's CPU seconds per raw byte besides compressing that the write time was
    /// reckoned with ([`PredictConfig::path_cost`], or measured on the sample).
    pub path_cost: f64,
    /// Seconds per raw byte of its one-thread stages ([`PredictConfig::serial_cost`], or
    /// measured on the sample).
    pub serial_cost: f64,
    /// Whether those two were measured on the sample ([`Sample::feed`]).
    pub path_measured: bool,
}

impl Prediction {
    /// The estimate of `spec`, if it was measured.
    pub fn estimate(&self, spec: CodecSpec) -> Option<&RungEstimate> {
        self.rungs.iter().find(|r| r.spec == spec)
    }
}

/// Measures candidate rungs on a sample and predicts the write. One per thread; it keeps its
/// encoder (codec contexts) and buffers between predictions.
pub struct Predictor {
    cfg: PredictConfig,
    encoder: FrameEncoder,
    out: Vec<u8>,
}

impl std::fmt::Debug for Predictor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Predictor").field("cfg", &self.cfg).finish_non_exhaustive()
    }
}

impl Predictor {
    /// A predictor for `cfg`.
    pub fn new(cfg: PredictConfig) -> Predictor {
        Predictor { cfg, encoder: FrameEncoder::new(), out: Vec::new() }
    }

    /// The configuration.
    pub fn config(&self) -> &PredictConfig {
        &self.cfg
    }

    /// The write model of a write of `bytes` under this configuration.
    pub fn model(&self, bytes: u64) -> WriteModel {
        self.model_with(bytes, self.cfg.path_cost, self.cfg.serial_cost)
    }

    /// The same with the pipeline's costs given ([`Predictor::path_costs`]).
    fn model_with(&self, bytes: u64, path_cost: f64, serial_cost: f64) -> WriteModel {
        WriteModel::new(bytes, self.cfg.threads.max(1), self.cfg.block_size.max(1)).on_cores(
            self.cfg.cpus,
            path_cost,
            serial_cost,
        )
    }

    /// The path and serial costs for a write of `sample` (see
    /// [`PredictConfig::measure_path`]), and whether they were measured.
    pub fn path_costs(&self, sample: &Sample) -> (f64, f64, bool) {
        let feed = sample.feed;
        match (self.cfg.measure_path, feed.seconds_per_byte(), feed.hash_per_byte()) {
            (true, Some(move_byte), Some(hash)) => (move_byte + hash, move_byte, true),
            _ => (self.cfg.path_cost, self.cfg.serial_cost, false),
        }
    }

    /// The candidate rungs, fastest first by the priors, without raw.
    fn candidates(&self) -> Vec<CodecSpec> {
        let mut candidates = self.cfg.rungs.clone();
        candidates.retain(|c| c.id() != CodecId::None);
        let p = &self.cfg.priors;
        candidates.sort_by(|a, b| p.get(*b).speed.total_cmp(&p.get(*a).speed));
        candidates.dedup();
        candidates
    }

    /// Before anything is measured, the candidates' performance is the priors' at
    /// the controller's pessimistic prior speed.
    fn prior(&self, candidates: &[CodecSpec]) -> Vec<RungPerf> {
        candidates
            .iter()
            .map(|c| {
                let r = self.cfg.priors.get(*c);
                RungPerf::new(r.speed * INITIAL_LEVEL, r.ratio)
            })
            .collect()
    }

    /// Predict the write `sample` stands for (`sample.data_len` bytes) under `strategy`,
    /// through a link of `link` bytes/s (None: unknown; the start is then the minimax-regret
    /// choice over [`LINK_GRID`], or up to [`PredictConfig::link_ceiling`]).
    pub fn predict(
        &mut self,
        sample: &Sample,
        strategy: Strategy,
        link: Option<f64>,
    ) -> Result<Prediction> {
        let t0 = Instant::now();
        let link = link.filter(|l| l.is_finite() && *l > 0.0);
        let threads = self.cfg.threads.max(1);
        let (path_cost, serial_cost, path_measured) = self.path_costs(sample);
        let model = self.model_with(sample.data_len.max(sample.bytes()), path_cost, serial_cost);
        // Data of several kinds: the write time is reckoned along where they lie.
        let layout = Layout::from_map(&sample.map, sample.span, model.bytes, model.block_size);
        let model = model.with_layout(layout);
        let mut candidates = self.candidates();
        let budget =
            self.budget_for(strategy, &model, link, &self.prior(&candidates), INITIAL_LEVEL);
        // Looking at the bytes to take the sample (probes, placing slices) is part of the
        // prediction's cost: counted as spent here (the cut to the budget plans it instead).
        let looked =
            if sample.look_seconds.is_finite() { sample.look_seconds.max(0.0) } else { 0.0 };
        let clock = Clock { t0, looked };
        let sample_used = self.fit_to_budget(sample, &candidates, budget);
        // The look at the bytes, on what will be compressed (it costs a pass over it).
        let heuristic = classify_sample(&sample_used);
        let mut skipped = narrow(heuristic.class, sample_used.is_empty(), &mut candidates);
        let ask = Ask { strategy, model: &model, link };
        let measured =
            self.measure_candidates(&ask, &sample_used, candidates, budget, &clock, &mut skipped)?;
        let (choice, regret) = self.choose(&ask, &measured.perfs);
        let mut start = choice.map_or(CodecSpec::NONE, |i| measured.rungs[i].spec);
        let mut extrapolated = None;
        if let (Some(l), Some(_)) = (link, choice) {
            if let Some((spec, perf)) = self.extrapolate(&ask, &measured, l) {
                start = spec;
                extrapolated = Some(estimate_of(&model, link, spec, perf, 0));
            }
        }
        let keep = self.cfg.keep_threshold;
        Ok(Prediction {
            heuristic,
            data_bytes: model.bytes,
            sampled_bytes: sample_used.bytes(),
            slices: sample_used.slices.len(),
            kinds: sample_used.kinds.clone(),
            compressed_bytes: measured.compressed_bytes,
            seconds: clock.spent(),
            budget_seconds: measured.budget,
            strategy: strategy.to_string(),
            threads,
            link,
            time_raw: link.map(|l| model.time_raw(l)),
            skipped,
            pays: choice.is_some(),
            incompressible: heuristic.class == Compressibility::Random
                || measured.perfs.iter().all(|p| !estimate::saves(*p, keep)),
            start,
            extrapolated,
            rungs: measured.rungs,
            regret,
            path_cost,
            serial_cost,
            path_measured,
        })
    }
}
