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

pub mod estimate;
pub mod heuristic;
mod sample;

use std::io::Read;
use std::time::Instant;

use adz_codec::max_compressed_len;
use adz_control::{entropy_coded, reference, Ladder, Strategy, INITIAL_LEVEL};
use adz_format::{CodecId, CodecSpec, Filters, FRAME_HEADER_LEN};
use serde::{Serialize, Serializer};

pub use self::estimate::{Layout, RungPerf, WriteModel, LINK_GRID};
pub use self::heuristic::{classify_sample, Compressibility, Heuristic};
use self::sample::LOOK_SPEED;
pub use self::sample::{Feed, PlannedSlice, Sample, SampleConfig, FEED_MIN_BYTES};
use crate::{Error, FrameEncoder, Result};

/// The link the time budget is reckoned against when the link is unknown: 10GbE.
pub(crate) const BUDGET_LINK: f64 = 1200e6;

/// How many ladder steps past the costliest measured rung (the furthest down the ladder) an
/// S2/S3 start may be extrapolated, along that rung's codec only (see [`Predictor::predict`]).
pub const EXTRAPOLATE_STEPS: usize = 3;

/// CPU seconds per raw byte the pipeline spends besides compressing (reading the input,
/// cutting and sequencing blocks, handing frames to the store): `adz compress -s static=none
/// -T 1|2` of 256 MiB and 1 GiB of the kernel tar to `/dev/null` took 0.21-0.23 ns of CPU per
/// byte on the 2-vCPU machine of the benchmarks. A store that copies what it is given costs
/// more per stored byte (a file on tmpfs about 0.45 ns), which this leaves out.
pub const PATH_COST: f64 = 0.22e-9;

/// Seconds per raw byte of the pipeline's slowest one-thread stage (the feeder reading the
/// input or the sequencer): with no compression at all, 512 MiB of sparse data and 256 MiB of
/// the kernel tar moved through the pipeline to `/dev/null` at 4.9-5.3 GB/s on the 2-vCPU
/// machine of the benchmarks, where its 0.22 ns of CPU per byte on two cores would allow 9.
pub const SERIAL_COST: f64 = 0.2e-9;

/// The cheapest candidates measured whatever the budget (on a smaller sample if need be).
pub(crate) const MIN_RUNGS: usize = 3;

/// The shortest a slice is cut to for the time budget.
const MIN_SLICE: usize = 4096;

/// What taking one byte of a slice costs besides compressing it, for
/// [`Predictor::plan_sample`]: reading it (into fresh pages: 3 MiB of slices in about 3 ms on
/// the 2-vCPU machine of the benchmarks) and classifying it at `LOOK_SPEED`.
const TAKE_SECONDS_PER_BYTE: f64 = 2e-9;

/// What one probe costs: a seek, a read of `PROBE_LEN` bytes and a classification (448
/// probes of a 256 MiB file took about 3 ms on the machine of the benchmarks).
const PROBE_SECONDS: f64 = 6.5e-6;

/// The share of a prediction's time budget [`Predictor::plan_sample`] gives the probes.
const PROBE_SHARE: f64 = 1.0 / 3.0;

/// Seconds per byte of sample to measure the rungs measured whatever the budget at the
/// controller's prior speed: the `MIN_RUNGS` cheapest of `candidates` (fastest first) and
/// the first with an entropy stage, if it is not among them.
fn cheapest_per_byte(candidates: &[CodecSpec]) -> f64 {
    let cheapest = &candidates[..candidates.len().min(MIN_RUNGS)];
    let entropy = candidates
        .iter()
        .find(|&&c| entropy_coded(c))
        .filter(|c| !cheapest.contains(c))
        .into_iter();
    cheapest.iter().chain(entropy).map(|c| 1.0 / (reference(*c).speed * INITIAL_LEVEL)).sum()
}

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
    /// ratio, so a faster rung may write faster. Default lz4:25. Text through 1200 MB/s on
    /// two cores: lz4:1 writes at 0.8x static lz4:25's speed, and S1 started at lz4:1 spent
    /// its first blocks slower than raw. Measured always, it would take the place of zstd:1
    /// among the `MIN_RUNGS` at slow links.
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
    /// constants are one machine's, and a VM of the same kind ran these stages twice as
    /// slowly.
    pub measure_path: bool,
    /// A compressed block is kept only if `stored <= raw x keep_threshold`. Default 0.97.
    pub keep_threshold: f64,
    /// S1's margin: rungs within it of the fastest count as equally fast. Default 0.05.
    pub margin: f64,
    /// Filters applied before compressing (the shuffle of a `dtype` hint). Default none.
    pub filters: Filters,
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
    /// With the link unknown: the start's worst relative regret over [`LINK_GRID`].
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

    /// The sample to take for a write of `len` bytes under `strategy` through `link`: the
    /// configured one, with no more probes than a third of the time budget pays for, and its
    /// slices' bytes cut to what the rest can read, look at and compress (with the
    /// `MIN_RUNGS` cheapest candidates at the controller's prior speed).
    /// [`predict`](Predictor::predict) cuts a sample to its budget too, but only after it has
    /// been taken: on a fast link (256 MiB through 6000 MB/s, a 0.9 ms budget) taking the
    /// default sample (512 probes and 3 MiB of slices) cost 3.5-8 ms, a tenth of the write,
    /// and then 36 KiB of it were compressed.
    pub fn plan_sample(&self, strategy: Strategy, link: Option<f64>, len: u64) -> SampleConfig {
        let mut cfg = self.cfg.sample.clone();
        if len == 0 {
            return cfg;
        }
        let model = self.model(len);
        let link = link.filter(|l| l.is_finite() && *l > 0.0);
        let candidates = self.candidates();
        let budget =
            self.budget_for(strategy, &model, link, &self.prior(&candidates), INITIAL_LEVEL);
        if !(budget.is_finite() && budget >= 0.0) {
            return cfg;
        }
        // Up to a third of the budget for the probes (all of them are looked at only on data
        // of several kinds), the rest for reading, looking at and compressing the slices.
        let probe_time = (budget * PROBE_SHARE).min(cfg.probes as f64 * PROBE_SECONDS);
        cfg.probes = cfg.probes.min((probe_time / PROBE_SECONDS) as usize);
        let per_byte = cheapest_per_byte(&candidates) + TAKE_SECONDS_PER_BYTE;
        let share = (budget - probe_time) / per_byte / len as f64;
        if share.is_finite() {
            cfg.budget = cfg.budget.min(share.max(0.0));
        }
        cfg
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

    /// The candidate rungs, fastest first by the reference table, without raw.
    fn candidates(&self) -> Vec<CodecSpec> {
        let mut candidates = self.cfg.rungs.clone();
        candidates.retain(|c| c.id() != CodecId::None);
        candidates.sort_by(|a, b| reference(*b).speed.total_cmp(&reference(*a).speed));
        candidates.dedup();
        candidates
    }

    /// Before anything is measured, the candidates' performance is the reference table's at
    /// the controller's pessimistic prior speed.
    fn prior(&self, candidates: &[CodecSpec]) -> Vec<RungPerf> {
        candidates
            .iter()
            .map(|c| {
                let r = reference(*c);
                RungPerf::new(r.speed * INITIAL_LEVEL, r.ratio)
            })
            .collect()
    }

    /// The time budget for predicting a write, given the rungs' performance so far
    /// (`perfs`) at a speed `level`: `time_budget` of the write's predicted time (for S2/S3
    /// at least their target time, or the time of the slowest rung the controller can reach,
    /// xz:9 at that level, with a ratio at least the best so far, if that is shorter), at most
    /// `max_budget_seconds`. An unknown link is reckoned as `BUDGET_LINK`.
    fn budget_for(
        &self,
        strategy: Strategy,
        model: &WriteModel,
        link: Option<f64>,
        perfs: &[RungPerf],
        level: f64,
    ) -> f64 {
        let link = link.unwrap_or(BUDGET_LINK);
        let (keep, margin) = (self.cfg.keep_threshold, self.cfg.margin);
        let share =
            if self.cfg.time_budget.is_finite() { self.cfg.time_budget.max(0.0) } else { 0.0 };
        let cap = self.cfg.max_budget_seconds.max(0.0);
        let choice = estimate::choose(strategy, model, perfs, link, keep, margin);
        let best = perfs.iter().map(|p| p.ratio).fold(1.0, f64::max);
        let slowest = Ladder::standard()
            .rungs()
            .last()
            .copied()
            .map(reference)
            .map(|r| RungPerf::new(r.speed * level, best.max(1.0)));
        let t = estimate::write_time(strategy, model, perfs, choice, link, slowest);
        (share * t).min(cap)
    }

    /// Predict the write `sample` stands for (`sample.data_len` bytes) under `strategy`,
    /// through a link of `link` bytes/s (None: unknown; the start is then the minimax-regret
    /// choice over [`LINK_GRID`]).
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

        let (keep, margin) = (self.cfg.keep_threshold, self.cfg.margin);
        let mut budget =
            self.budget_for(strategy, &model, link, &self.prior(&candidates), INITIAL_LEVEL);
        // Looking at the bytes to take the sample (probes, placing slices) is part of the
        // prediction's cost: planned at LOOK_SPEED for the cut (so that the sample compressed
        // does not depend on timing), counted as measured afterwards.
        let looked =
            if sample.look_seconds.is_finite() { sample.look_seconds.max(0.0) } else { 0.0 };
        let look_planned = sample.look_bytes as f64 / LOOK_SPEED;
        let mut sample_used = std::borrow::Cow::Borrowed(sample);
        // The cheapest MIN_RUNGS candidates are always measured: a sample too large for them
        // within the budget, at the controller's pessimistic prior speed, is cut to fit
        // ("sample less" rather than measure less): the longest slices first, each to at
        // least MIN_SLICE; a stratified sample keeps fewer slices rather than cut them below
        // its floor (`Sample::fit`). Costlier rungs are measured only while the budget lasts.
        // What a rung compresses is the sample's measured bytes: a set-up slice alone of its
        // kind is compressed twice (`Predictor::measure`).
        let per_byte = cheapest_per_byte(&candidates);
        let room = (budget - look_planned).max(0.0);
        if per_byte > 0.0 && sample.measured_bytes() as f64 * per_byte > room {
            let floor = sample.spread.map_or(MIN_SLICE, |s| self.cfg.sample.strata(s).1);
            let cap = (room / per_byte) as u64;
            let mut fit = sample.fit(cap, floor, MIN_SLICE);
            let again = fit.measured_bytes() - fit.bytes();
            if again > 0 && fit.measured_bytes() > cap {
                fit = sample.fit(cap.saturating_sub(again), floor, MIN_SLICE);
            }
            sample_used = std::borrow::Cow::Owned(fit);
        }
        let sampled = sample_used.bytes();
        let measured_bytes = sample_used.measured_bytes();

        // The look at the bytes, on what will be compressed (it costs a pass over it).
        let heuristic = classify_sample(&sample_used);
        let mut skipped = Vec::new();
        match heuristic.class {
            _ if sample_used.is_empty() => skipped = std::mem::take(&mut candidates),
            Compressibility::Random => skipped = std::mem::take(&mut candidates),
            // The ratio is not in doubt, only the speed: the fastest rungs answer that, and
            // the first with an entropy stage (repeats are not all a sample can have: a sparse
            // image's pixels are few distinct values that only an entropy coder shrinks).
            Compressibility::Redundant => {
                skipped = candidates.split_off(candidates.len().min(2));
                if !candidates.iter().any(|&c| entropy_coded(c)) {
                    if let Some(i) = skipped.iter().position(|&c| entropy_coded(c)) {
                        candidates.push(skipped.remove(i));
                    }
                }
            }
            Compressibility::Unknown => {}
        }

        let mut rungs: Vec<RungEstimate> = Vec::new();
        let mut perfs: Vec<RungPerf> = Vec::new();
        let mut level_sum = 0.0f64;
        let mut compressed_bytes = 0u64;
        // The measured speed level: the geometric mean of measured / reference speed (the
        // controller's prior before anything is measured).
        let level_of =
            |sum: f64, n: usize| if n == 0 { INITIAL_LEVEL } else { (sum / n as f64).exp() };
        let estimate_of = |spec: CodecSpec, perf: RungPerf, bytes: u64| RungEstimate {
            spec,
            ratio: perf.ratio,
            speed: perf.speed,
            aggregate_speed: model.bytes as f64 / model.time_compress(perf),
            compress_time: model.time_compress(perf),
            transfer_time: link.map(|l| model.time_transfer(perf, l)),
            time: link.map(|l| model.time_compressed(perf, l)),
            speedup: link.map(|l| model.speedup(perf, l)),
            bytes,
        };
        // The candidates, cheapest first; after the first, the faster rungs
        // (`PredictConfig::fast_rungs`) if it cannot keep the link full (an unknown link counts
        // as BUDGET_LINK). The first MIN_RUNGS rungs in that order are measured whatever the
        // budget: where lz4:1 cannot fill the link, lz4:25 says more about the write than the
        // slower zstd:1, and a 64 MiB write through 1200 MB/s (a 1.1 ms budget) had skipped it
        // and started at lz4:1.
        let fast_link = link.unwrap_or(BUDGET_LINK);
        let mut queue: std::collections::VecDeque<CodecSpec> = candidates.into_iter().collect();
        let (mut measured, mut fast_queued) = (0usize, false);
        while let Some(spec) = queue.pop_front() {
            let cost = measured_bytes as f64 / (reference(spec).speed * codec_level(spec, &rungs));
            let spent = looked + t0.elapsed().as_secs_f64();
            // And the first rung with an entropy stage: LZ4 and zstd's negative levels store
            // integer and float pixels raw where zstd:1 saves a third (decision 0020).
            let guaranteed = measured < MIN_RUNGS
                || (entropy_coded(spec) && !rungs.iter().any(|r| entropy_coded(r.spec)));
            if rungs.iter().any(|r| r.spec == spec) {
                continue;
            }
            if !guaranteed && spent + cost > budget {
                skipped.push(spec);
                continue;
            }
            let (perf, bytes) = self.measure(&sample_used, spec)?;
            compressed_bytes += bytes;
            level_sum += (perf.speed / reference(spec).speed).ln();
            let at = rungs
                .iter()
                .position(|r| reference(r.spec).speed < reference(spec).speed)
                .unwrap_or(rungs.len());
            perfs.insert(at, perf);
            rungs.insert(at, estimate_of(spec, perf, bytes));
            measured += 1;
            budget =
                self.budget_for(strategy, &model, link, &perfs, level_of(level_sum, perfs.len()));
            if !fast_queued {
                fast_queued = true;
                // Only if it saves: a faster LZ4 saves less still.
                let too_slow = estimate::saves(perf, keep)
                    && model.bytes as f64 / model.time_compress(perf) < fast_link * perf.ratio;
                if too_slow {
                    for &f in self.cfg.fast_rungs.iter().rev() {
                        queue.push_front(f);
                    }
                }
            }
        }

        let (choice, regret) = match link {
            Some(l) => (estimate::choose(strategy, &model, &perfs, l, keep, margin), None),
            None => {
                let (c, r) = estimate::minimax_regret(strategy, &model, &perfs, &LINK_GRID, keep);
                (c, Some(r))
            }
        };
        let mut start = choice.map_or(CodecSpec::NONE, |i| rungs[i].spec);
        // S2/S3 with every measured rung short of the target: start at a rung past the
        // costliest measured one that saves (the furthest down the ladder), predicted to meet the target by the reference
        // table scaled to that rung's own measured speed, with the best measured ratio (no
        // better: reference ratios do not carry over to data unlike the reference's, such as
        // doubles). Only a few steps further along the same codec
        // ([`EXTRAPOLATE_STEPS`]): the table's shape holds within a codec on nearby levels,
        // not across codecs or a codec's strategy changes (on float arrays zstd:12 runs at
        // 0.6 of the table's speed and xz:6 at 0.05 of it; a start at xz:6 cost S3 three
        // blocks at 0.22 s each before the first measurement corrected it).
        let mut extrapolated = None;
        if let (Some(l), Some(_)) = (link, choice) {
            let best = perfs.iter().map(|p| p.ratio).fold(1.0, f64::max);
            let ladder = Ladder::standard();
            let costliest = rungs
                .iter()
                .zip(&perfs)
                .filter(|(_, p)| estimate::saves(**p, keep) && p.speed > 0.0)
                .filter_map(|(r, p)| ladder.position(r.spec).map(|i| (i, r, p)))
                .max_by_key(|&(i, _, _)| i)
                .map(|(_, r, p)| (r, p));
            if let Some((from, perf)) = costliest {
                let level = perf.speed / reference(from.spec).speed;
                let further: Vec<CodecSpec> = ladder
                    .position(from.spec)
                    .map(|i| {
                        ladder.rungs()[i + 1..]
                            .iter()
                            .take(EXTRAPOLATE_STEPS)
                            .take_while(|c| c.id() == from.spec.id())
                            .copied()
                            .collect()
                    })
                    .unwrap_or_default();
                let guesses: Vec<RungPerf> = further
                    .iter()
                    .map(|&c| RungPerf::new(reference(c).speed * level, best))
                    .collect();
                if let Some(i) =
                    estimate::extrapolate_start(strategy, &model, &perfs, &guesses, l, keep)
                {
                    start = further[i];
                    extrapolated = Some(estimate_of(start, guesses[i], 0));
                }
            }
        }
        Ok(Prediction {
            heuristic,
            data_bytes: model.bytes,
            sampled_bytes: sampled,
            slices: sample_used.slices.len(),
            kinds: sample_used.kinds.clone(),
            compressed_bytes,
            seconds: looked + t0.elapsed().as_secs_f64(),
            budget_seconds: budget,
            strategy: strategy.to_string(),
            threads,
            link,
            time_raw: link.map(|l| model.time_raw(l)),
            skipped,
            pays: choice.is_some(),
            incompressible: heuristic.class == Compressibility::Random
                || perfs.iter().all(|p| !estimate::saves(*p, keep)),
            start,
            extrapolated,
            rungs,
            regret,
            path_cost,
            serial_cost,
            path_measured,
        })
    }

    /// Compress every slice of `sample` with `spec` (as blocks of at most the block size):
    /// the rung's performance and the bytes compressed.
    ///
    /// Each slice stands for [`Sample::weight`] bytes of the write: the ratio is the write's
    /// bytes over the sum of each slice's stored bytes per raw byte times its weight, the
    /// speed likewise with seconds (equal weights: all raw over all stored). A slice is part
    /// of a block, so it carries its share of the block's frame header (`56 x len / block`)
    /// rather than a whole header: a 16 KiB slice of sparse data compresses to about 200
    /// bytes, and a whole header would halve its ratio.
    ///
    /// A rung's first call pays the codec's set-up: zstd allocates and clears its tables
    /// for the level and the input's size (on 155 kB slices of text, zstd:1's first call took
    /// 540-620 us and faulted in 47-71 pages, the next ones 460 us and none; zstd:3's first
    /// 1016 us against 550). A writer's worker pays that once per rung for the whole write,
    /// the sample paid it on one of three slices. So the longest slice (whose set-up fits the
    /// others) is compressed first and its time is not taken: its seconds per byte are those
    /// of the other slices of its kind, or, if it is its kind's only slice, of a second call
    /// ([`Sample::measured_bytes`] counts it).
    pub fn measure(&mut self, sample: &Sample, spec: CodecSpec) -> Result<(RungPerf, u64)> {
        let bs = self.cfg.block_size.clamp(1, crate::format::MAX_FRAME_RAW_LEN as u64) as usize;
        let block = bs.min(sample.data_len.clamp(1, usize::MAX as u64) as usize) as f64;
        let n = sample.slices.len();
        let Some(first) = sample.setup_slice() else {
            return Ok((RungPerf::new(f64::INFINITY, 1.0), 0));
        };
        let mut slices = vec![SliceMeasure::default(); n];
        let mut bytes = 0u64;
        for i in std::iter::once(first).chain((0..n).filter(|&i| i != first)) {
            let acc = self.measure_slice(&sample.slices[i].1, spec, bs, block)?;
            bytes += acc.raw;
            slices[i] = SliceMeasure {
                raw: acc.raw,
                stored: acc.stored,
                secs: acc.secs(),
                weight: sample.weight(i),
                kind: sample.classes.get(i).copied(),
            };
        }
        if slices[first].raw > 0 {
            slices[first].secs = match warm_secs(&slices, first) {
                Some(secs) => secs,
                None => {
                    let again = self.measure_slice(&sample.slices[first].1, spec, bs, block)?;
                    bytes += again.raw;
                    again.secs()
                }
            };
        }
        Ok((combine(&slices), bytes))
    }

    /// One slice compressed as blocks of at most `bs` bytes, each carrying its share of a
    /// `block`-byte block's frame header.
    fn measure_slice(
        &mut self,
        slice: &[u8],
        spec: CodecSpec,
        bs: usize,
        block: f64,
    ) -> Result<Accumulator> {
        let mut acc = Accumulator { header: FRAME_HEADER_LEN as f64 / block, ..Default::default() };
        for part in slice.chunks(bs) {
            self.compress_block(part, spec, &mut acc)?;
        }
        Ok(acc)
    }

    /// Compress all of `src` block by block with `spec` (one thread): what the rung really
    /// does on the data, for checking a prediction. Memory: one block.
    pub fn measure_stream(&mut self, src: &mut dyn Read, spec: CodecSpec) -> Result<RungPerf> {
        let bs = self.cfg.block_size.clamp(1, crate::format::MAX_FRAME_RAW_LEN as u64) as usize;
        let mut block = vec![0u8; bs];
        let mut acc = Accumulator::default();
        loop {
            let mut n = 0;
            while n < bs {
                match src.read(&mut block[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Error::io("reading the input", e)),
                }
            }
            if n == 0 {
                break;
            }
            self.compress_block(&block[..n], spec, &mut acc)?;
            if n < bs {
                break;
            }
        }
        Ok(acc.perf())
    }

    /// Encode `block` into a frame as a writer's worker does (`FrameEncoder`: the raw and
    /// payload checksums, the filters, the codec, the raw fallback), timing all of it: at
    /// fast links the write is compression-bound, and the worker's time per block is what
    /// sets its pace, not the codec's alone.
    fn compress_block(
        &mut self,
        block: &[u8],
        spec: CodecSpec,
        acc: &mut Accumulator,
    ) -> Result<()> {
        // The buffer is sized before the clock starts: the writer's workers reuse theirs,
        // and growing one (a fresh allocation, zero-filled, faulted in) on the first block of
        // a rung cost that rung a block's worth of time on fast data.
        let need = FRAME_HEADER_LEN + max_compressed_len(spec.id(), block.len()).max(block.len());
        if self.out.len() < need {
            self.out.resize(need, 0);
        }
        let cpu0 = cpu_time::ThreadTime::now();
        let wall0 = Instant::now();
        let (header, ..) = self
            .encoder
            .encode_at(block, 0, spec, self.cfg.filters, self.cfg.keep_threshold, &mut self.out, 0)
            .map_err(|e| match e {
                Error::Codec { source, .. } => Error::Predict(source),
                e => e,
            })?;
        let cpu = cpu0.elapsed().as_secs_f64();
        let wall = wall0.elapsed().as_secs_f64();
        acc.add(block.len() as u64, u64::from(header.stored_len), cpu, wall);
        Ok(())
    }
}

/// The speed level (measured / reference speed) a candidate not yet measured is guessed at to
/// decide whether it fits the budget: the geometric mean over the measured rungs of its codec,
/// or the controller's prior if none is measured. The reference table's shape holds within a
/// codec, not across codecs: on datagen doubles lz4 and zstd ran at 2-15x the table and xz:6
/// at 1x, and at the level of all rungs measured xz:6 seemed to fit a 88 ms budget and took
/// 400 ms.
fn codec_level(spec: CodecSpec, measured: &[RungEstimate]) -> f64 {
    let (mut sum, mut n) = (0.0f64, 0usize);
    for r in measured.iter().filter(|r| r.spec.id() == spec.id()) {
        let l = r.speed / reference(r.spec).speed;
        if l.is_finite() && l > 0.0 {
            sum += l.ln();
            n += 1;
        }
    }
    if n == 0 {
        INITIAL_LEVEL
    } else {
        (sum / n as f64).exp()
    }
}

/// One slice's measurement with one rung.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct SliceMeasure {
    /// Raw bytes compressed.
    raw: u64,
    /// Bytes stored for them (frame header share included).
    stored: f64,
    /// Seconds they took.
    secs: f64,
    /// Bytes of the write the slice stands for.
    weight: f64,
    /// The entropy class it was placed for (a stratified sample), None: data of one kind.
    kind: Option<u8>,
}

/// The seconds slice `first` (the one that paid the codec's set-up) would have taken warm:
/// its raw bytes at the weighted mean seconds per byte of the other slices of its kind. None
/// if it is its kind's only slice.
fn warm_secs(slices: &[SliceMeasure], first: usize) -> Option<f64> {
    let me = slices.get(first)?;
    let (mut w, mut per_byte) = (0.0f64, 0.0f64);
    for (i, s) in slices.iter().enumerate() {
        if i != first && s.kind == me.kind && s.raw > 0 && s.weight > 0.0 {
            w += s.weight;
            per_byte += s.weight * s.secs / s.raw as f64;
        }
    }
    (w > 0.0).then(|| per_byte / w * me.raw as f64)
}

/// A rung's performance from its slices: the write's bytes over the sum of each slice's
/// stored bytes (seconds) per raw byte times the bytes it stands for (equal weights: all raw
/// over all stored). A stratified sample's slices are also combined by kind
/// ([`RungPerf::kinds`]), so that the write time can be reckoned kind by kind.
fn combine(slices: &[SliceMeasure]) -> RungPerf {
    let pooled = pool(slices);
    let mut kinds: Vec<(u8, f64, f64)> = Vec::new();
    let mut classes: Vec<u8> = slices.iter().filter_map(|s| s.kind).collect();
    classes.sort_unstable();
    classes.dedup();
    if classes.len() > 1 {
        for class in classes {
            let of: Vec<SliceMeasure> =
                slices.iter().filter(|s| s.kind == Some(class)).copied().collect();
            if of.iter().any(|s| s.raw > 0) {
                let p = pool(&of);
                kinds.push((class, p.speed, p.ratio));
            }
        }
    }
    pooled.with_kinds(&kinds)
}

/// `combine` without the kinds: one speed and ratio for all of `slices`.
fn pool(slices: &[SliceMeasure]) -> RungPerf {
    let (mut weight, mut stored, mut secs) = (0.0f64, 0.0f64, 0.0f64);
    for s in slices.iter().filter(|s| s.raw > 0) {
        weight += s.weight;
        stored += s.weight * s.stored / s.raw as f64;
        secs += s.weight * s.secs / s.raw as f64;
    }
    if weight > 0.0 {
        return RungPerf::new(
            if secs > 0.0 { weight / secs } else { f64::INFINITY },
            if stored > 0.0 { weight / stored } else { 1.0 },
        );
    }
    // No weights: all raw over all stored.
    let raw: u64 = slices.iter().map(|s| s.raw).sum();
    let stored: f64 = slices.iter().map(|s| s.stored).sum();
    let secs: f64 = slices.iter().map(|s| s.secs).sum();
    RungPerf::new(
        if secs > 0.0 { raw as f64 / secs } else { f64::INFINITY },
        if stored > 0.0 { raw as f64 / stored } else { 1.0 },
    )
}

/// Sums over the blocks of one rung's measurement.
#[derive(Default)]
struct Accumulator {
    raw: u64,
    stored: f64,
    cpu: f64,
    wall: f64,
    /// Frame header bytes per raw byte (a sample's slices: its share of a block's header);
    /// 0: a whole header per block compressed (the whole input, as the writer stores it).
    header: f64,
}

impl Accumulator {
    /// A block of `raw` bytes stored in `stored` payload bytes (the raw bytes if the
    /// encoder kept them raw, as the writer does for a block that does not save enough).
    fn add(&mut self, raw: u64, stored: u64, cpu: f64, wall: f64) {
        let header =
            if self.header > 0.0 { self.header * raw as f64 } else { FRAME_HEADER_LEN as f64 };
        self.raw += raw;
        self.stored += stored as f64 + header;
        self.cpu += cpu;
        self.wall += wall;
    }

    /// CPU time: the machine is shared, and the workers' speed is what the sample's thread
    /// would get alone. Wall time where the platform has no thread CPU clock.
    fn secs(&self) -> f64 {
        if self.cpu > 0.0 {
            self.cpu
        } else {
            self.wall
        }
    }

    fn perf(&self) -> RungPerf {
        let secs = self.secs();
        RungPerf::new(
            if secs > 0.0 { self.raw as f64 / secs } else { f64::INFINITY },
            if self.stored > 0.0 { self.raw as f64 / self.stored } else { 1.0 },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A candidate's cost is guessed at its own codec's measured level, not at other codecs':
    /// zstd measured at 10x the table says nothing about xz.
    #[test]
    fn an_unmeasured_codec_is_guessed_at_the_prior_level() {
        let at = |spec: &str, level: f64| {
            let spec: CodecSpec = spec.parse().unwrap();
            let speed = reference(spec).speed * level;
            RungEstimate {
                spec,
                ratio: 1.05,
                speed,
                aggregate_speed: speed,
                compress_time: 0.0,
                transfer_time: None,
                time: None,
                speedup: None,
                bytes: 0,
            }
        };
        let measured = [at("lz4:1", 15.0), at("zstd:1", 4.0), at("zstd:3", 9.0)];
        let xz: CodecSpec = "xz:6".parse().unwrap();
        assert_eq!(codec_level(xz, &measured), INITIAL_LEVEL);
        let zstd: CodecSpec = "zstd:12".parse().unwrap();
        assert!((codec_level(zstd, &measured) - 6.0).abs() < 1e-9, "geometric mean of 4 and 9");
        assert_eq!(codec_level(zstd, &[]), INITIAL_LEVEL);
    }

    fn slice(raw: u64, secs: f64, kind: Option<u8>) -> SliceMeasure {
        SliceMeasure { raw, stored: raw as f64 / 2.0, secs, weight: raw as f64, kind }
    }

    /// The slice that set the rung up took ten times as long as it would warm; the rung's
    /// speed is that of the warm slices, not a third lower.
    #[test]
    fn the_set_up_slice_takes_its_kinds_time() {
        // Three slices of 100 kB at 1 ms each (100 MB/s), the first one cold (10 ms).
        let mut s = vec![slice(100_000, 0.010, None), slice(100_000, 0.001, None)];
        s.push(slice(100_000, 0.001, None));
        let cold = combine(&s).speed;
        assert!((cold / 25e6 - 1.0).abs() < 1e-9, "{cold}: 300 kB in 12 ms");
        s[0].secs = warm_secs(&s, 0).unwrap();
        assert!((s[0].secs / 0.001 - 1.0).abs() < 1e-9);
        assert!((combine(&s).speed / 100e6 - 1.0).abs() < 1e-9);
        // Per byte: a longer set-up slice takes proportionally longer.
        s[0].raw = 200_000;
        assert!((warm_secs(&s, 0).unwrap() / 0.002 - 1.0).abs() < 1e-9);
    }

    /// Only slices of the set-up slice's kind stand in for it (sparse data compresses ten
    /// times faster than text); alone of its kind it has no stand-in, and is measured again.
    #[test]
    fn only_its_own_kind_stands_in_for_the_set_up_slice() {
        let s = [
            slice(100_000, 0.010, Some(2)),
            slice(100_000, 0.0001, Some(1)),
            slice(50_000, 0.0005, Some(2)),
        ];
        assert!((warm_secs(&s, 0).unwrap() / 0.001 - 1.0).abs() < 1e-9);
        assert_eq!(warm_secs(&s, 1), None);
        let one = [slice(100_000, 0.010, None)];
        assert_eq!(warm_secs(&one, 0), None);
        // Slices with no bytes or no weight say nothing.
        let empty = [slice(100_000, 0.010, None), slice(0, 0.0, None)];
        assert_eq!(warm_secs(&empty, 0), None);
    }
}
