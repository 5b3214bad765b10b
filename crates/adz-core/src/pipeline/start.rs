//! The writer's start: the predictor's first decision, from a sample of the first blocks (held
//! until there are enough) or of the whole input, and a prediction of its own for each new
//! kind of data after that. The controller is told through the dispatch lock.

use std::time::Instant;

use adz_control::{classify, Hint, Link, Strategy};
use adz_format::CodecSpec;

use super::options::{Predict, WriteOptions};
use super::shared::{lock, Job, Shared};
use crate::predict::{PredictConfig, Prediction, Predictor, Sample, SampleConfig};

/// The writer's prediction of its start, and of each new data class's.
pub(super) struct Start {
    strategy: Strategy,
    predict: PredictState,
    /// After the first prediction: a new kind of data gets its own.
    per_class: Option<Box<PerClass>>,
}

/// What a prediction for a new data class needs.
struct PerClass {
    cfg: PredictConfig,
    link: Option<f64>,
    size_hint: Option<u64>,
    /// Classes already predicted for (bit per class).
    seen: u32,
    /// Bytes compressed by these predictions.
    bytes: u64,
    /// Seconds every prediction of this write may take together: the first prediction's
    /// budget (2 % of the write's predicted time). A new class is predicted only with what
    /// is left; with nothing left its controller starts where the others are.
    allowance: f64,
    /// Seconds the predictions took so far, the first included.
    spent: f64,
}

/// The writer's prediction of its start.
enum PredictState {
    /// Not predicting (off, or a strategy that does not adapt).
    Off,
    /// Holding the first blocks until there are enough to sample.
    Holding(Box<Holding>),
    /// Predicted (or failed to: the controller's own start then).
    Done(Option<Box<Prediction>>),
}

struct Holding {
    held: Vec<Job>,
    /// Blocks to hold before predicting.
    limit: usize,
    cfg: PredictConfig,
    link: Option<f64>,
    size_hint: Option<u64>,
}

impl Start {
    /// The start of a writer with `opts` (`threads`, `buffers` resolved), on `cpus` cores,
    /// whose controller keeps a block that saves `keep`, to an upload that can send at most
    /// `ceiling` bytes/s (`Upload::rate_ceiling`).
    pub(super) fn new(
        opts: &WriteOptions,
        threads: usize,
        buffers: usize,
        cpus: usize,
        keep: f64,
        ceiling: Option<f64>,
    ) -> Start {
        let predict = if opts.predict == Predict::Auto && opts.strategy.is_adaptive() {
            let link = match opts.link {
                Link::Fixed(l) => Some(l),
                Link::Auto => opts.link_guess,
            };
            PredictState::Holding(Box::new(Holding {
                held: Vec::new(),
                limit: buffers.saturating_sub(1).clamp(1, 8),
                cfg: PredictConfig {
                    // An unknown link is one the upload can carry.
                    link_ceiling: ceiling,
                    ..predict_config(opts, threads, cpus, keep)
                },
                link,
                size_hint: opts.size_hint,
            }))
        } else {
            PredictState::Off
        };
        Start { strategy: opts.strategy, predict, per_class: None }
    }

    /// Whether a sample would be used: predicting, and not yet done.
    pub(super) fn wants(&self) -> bool {
        matches!(self.predict, PredictState::Holding(_))
    }

    /// The sample to take of a `len`-byte input, cut to the prediction's time budget.
    pub(super) fn sample_config(&self, len: u64) -> Option<SampleConfig> {
        match &self.predict {
            PredictState::Holding(h) => {
                Some(Predictor::new(h.cfg.clone()).plan_sample(self.strategy, h.link, len))
            }
            _ => None,
        }
    }

    /// The first prediction, once made.
    pub(super) fn prediction(&self) -> Option<&Prediction> {
        match &self.predict {
            PredictState::Done(p) => p.as_deref(),
            _ => None,
        }
    }

    /// Bytes the predictions compressed: the first one's and the new classes'.
    pub(super) fn predict_bytes(&self) -> u64 {
        self.prediction().map_or(0, |p| p.compressed_bytes)
            + self.per_class.as_ref().map_or(0, |p| p.bytes)
    }

    /// Jobs on their way to the queue: held while the start is being predicted (all of them
    /// come back once it is), otherwise returned, a new data class predicted first.
    pub(super) fn admit(&mut self, jobs: Vec<Job>, shared: &Shared) -> Vec<Job> {
        if let PredictState::Holding(h) = &mut self.predict {
            h.held.extend(jobs);
            if h.held.len() >= h.limit {
                return self.run(None, shared);
            }
            return Vec::new();
        }
        self.predict_new_classes(&jobs, shared);
        jobs
    }

    /// A first write at least as long as the blocks held to predict is sampled where it
    /// lies: not copied block by block first, and with a budget for the whole write
    /// (`docs/decisions/0026-predict-from-the-first-write.md`). Returns the jobs let go.
    pub(super) fn sample_first_write(
        &mut self,
        data: &[u8],
        block_size: usize,
        pending: bool,
        shared: &Shared,
    ) -> Vec<Job> {
        let PredictState::Holding(h) = &self.predict else { return Vec::new() };
        let first = h.limit * block_size;
        if !h.held.is_empty() || pending || data.len() < first {
            return Vec::new();
        }
        let len = h.size_hint.unwrap_or(0).max(data.len() as u64);
        let Some(plan) = self.sample_config(len) else { return Vec::new() };
        let sample = Sample::from_parts(&[&data[..first]], len, &plan);
        self.run(Some(&sample), shared)
    }

    /// Predict from `sample`, or from the held blocks, and set the controller's start.
    /// Returns the held blocks, to be queued.
    pub(super) fn run(&mut self, sample: Option<&Sample>, shared: &Shared) -> Vec<Job> {
        if !matches!(self.predict, PredictState::Holding(_)) {
            return Vec::new();
        }
        let PredictState::Holding(h) =
            std::mem::replace(&mut self.predict, PredictState::Done(None))
        else {
            unreachable!("checked above");
        };
        let Holding { held, cfg, link, size_hint, .. } = *h;
        let own;
        let sample = match sample {
            Some(s) => s,
            None => {
                own = self.sample_held(&held, &cfg, link, size_hint);
                &own
            }
        };
        // A prediction that fails (a codec error on the sample) costs only itself: the
        // controller keeps its own start.
        let prediction = if sample.is_empty() {
            None
        } else {
            Predictor::new(cfg.clone()).predict(sample, self.strategy, link).ok()
        };
        let classes = sampled_classes(&held, sample);
        let mut filters_spent = 0.0;
        if let Some(p) = &prediction {
            set_start(shared, p, &classes);
            let firsts = sample.slices.iter().map(|(_, s)| (classify(s), s.as_slice()));
            let slices = firsts.chain(held.iter().map(|j| (j.class, j.data.bytes())));
            filters_spent = start_filters(shared, p, slices, p.budget_seconds - p.seconds);
        }
        let seen = classes.iter().fold(0u32, |m, &c| m | 1 << (c as usize).min(31));
        let (allowance, spent) = prediction
            .as_ref()
            .map_or((0.0, 0.0), |p| (p.budget_seconds, p.seconds + filters_spent));
        self.per_class =
            Some(Box::new(PerClass { cfg, link, size_hint, seen, bytes: 0, allowance, spent }));
        self.predict = PredictState::Done(prediction.map(Box::new));
        held
    }

    /// A sample of the held blocks, for a write of `size_hint` bytes (or of theirs).
    fn sample_held(
        &self,
        held: &[Job],
        cfg: &PredictConfig,
        link: Option<f64>,
        size_hint: Option<u64>,
    ) -> Sample {
        let parts: Vec<&[u8]> = held.iter().map(|j| j.data.bytes()).collect();
        let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let data_len = size_hint.unwrap_or(len).max(len);
        let plan = Predictor::new(cfg.clone()).plan_sample(self.strategy, link, data_len);
        Sample::from_parts(&parts, data_len, &plan)
    }

    /// A change of data class is the change detector (the block's entropy class jumps
    /// before any ratio can be measured): the first block of a class not seen before is
    /// predicted on its own, and that class's controller starts there.
    fn predict_new_classes(&mut self, jobs: &[Job], shared: &Shared) {
        let Some(pc) = self.per_class.as_mut() else { return };
        for job in jobs {
            let bit = 1u32 << (job.class as usize).min(31);
            if pc.seen & bit != 0 {
                continue;
            }
            pc.seen |= bit;
            // The write's predictions share one budget: a mixed file with a new kind of data
            // every few MiB must not pay 2 % of its time per kind (each prediction stalls the
            // writer while it measures).
            let left = pc.allowance - pc.spent;
            if left <= 0.0 {
                continue;
            }
            let bytes = job.data.bytes();
            let len = bytes.len() as u64;
            let rest = pc.size_hint.map_or(len, |s| s.saturating_sub(job.raw_offset)).max(len);
            let sample = Sample::from_parts(&[bytes], rest, &pc.cfg.sample);
            let cfg = PredictConfig { max_budget_seconds: left, ..pc.cfg.clone() };
            let t0 = Instant::now();
            let result = Predictor::new(cfg).predict(&sample, self.strategy, pc.link);
            pc.spent += t0.elapsed().as_secs_f64();
            let Ok(p) = result else {
                continue;
            };
            pc.bytes += p.compressed_bytes;
            let mut d = lock(&shared.dispatch);
            if p.incompressible {
                d.controller.start_incompressible(job.class);
            } else {
                d.controller.set_start_of(job.class, p.start);
            }
            drop(d);
            let left = pc.allowance - pc.spent;
            pc.spent += start_filters(shared, &p, std::iter::once((job.class, bytes)), left);
        }
    }
}

/// The predictor's configuration for a writer with `opts`: its threads, cores, blocks, keep
/// threshold, and a shuffle for a typed file's elements.
fn predict_config(opts: &WriteOptions, threads: usize, cpus: usize, keep: f64) -> PredictConfig {
    let block_size = opts.block_size;
    let mut cfg =
        PredictConfig { threads, block_size: u64::from(block_size), ..Default::default() };
    cfg.cpus = cpus;
    cfg.keep_threshold = keep;
    cfg.priors = opts.priors.clone();
    cfg.sample.max_slice = block_size as usize;
    let elem = opts.hints.iter().find_map(|h| match h {
        Hint::Dtype(d) if d.size() > 1 => Some(d.size()),
        _ => None,
    });
    if let Some(f) = elem.and_then(|e| {
        adz_format::FilterSpec::shuffle(e).and_then(|f| adz_format::Filters::new(&[f])).ok()
    }) {
        cfg.filters = f;
    }
    cfg
}

/// The data classes of the held blocks and of the sample, and class 0.
fn sampled_classes(held: &[Job], sample: &Sample) -> Vec<u8> {
    let mut classes: Vec<u8> = held.iter().map(|j| j.class).collect();
    classes.extend(sample.slices.iter().map(|(_, s)| classify(s)));
    classes.push(0);
    classes.sort_unstable();
    classes.dedup();
    classes
}

/// Start each class's filters from the first of its `slices` (class, bytes), compressed at the
/// predicted start (docs/decisions/0059): nothing when the prediction found nothing to
/// compress, or for an adaptive strategy's controller whose filters a hint names (it ignores
/// them).
///
/// It counts against the prediction's budget: no class is started once `budget` seconds
/// have gone. Returns the seconds it took.
fn start_filters<'a>(
    shared: &Shared,
    p: &Prediction,
    slices: impl Iterator<Item = (u8, &'a [u8])>,
    budget: f64,
) -> f64 {
    let t0 = Instant::now();
    if p.incompressible || p.start == CodecSpec::NONE {
        return 0.0;
    }
    // A slow start (zstd above 3, xz) would make the up to thirteen compressions of each class
    // cost more than the prediction itself; the chains rank alike at zstd:3.
    let zstd3 = CodecSpec::new(adz_format::CodecId::Zstd, 3).expect("zstd:3 is valid");
    let codec = match p.start.id() {
        adz_format::CodecId::Lz4 => p.start,
        adz_format::CodecId::Zstd if p.start.param() <= 3 => p.start,
        _ => zstd3,
    };
    let (mut encoder, mut scratch) = (crate::FrameEncoder::new(), Vec::new());
    let mut done = 0u32;
    for (class, bytes) in slices {
        let bit = 1u32 << (class as usize).min(31);
        if done & bit != 0 {
            continue;
        }
        if t0.elapsed().as_secs_f64() >= budget {
            break;
        }
        done |= bit;
        let f = crate::shadow::start_filters(&mut encoder, &mut scratch, bytes, codec);
        if !f.is_empty() {
            lock(&shared.dispatch).controller.set_filters_of(class, f);
        }
    }
    t0.elapsed().as_secs_f64()
}

/// Start the controller where `p` says, for the data `classes` sampled.
fn set_start(shared: &Shared, p: &Prediction, classes: &[u8]) {
    let mut d = lock(&shared.dispatch);
    // Until the pipeline has measured itself, the sample's costs say whether the raw
    // path alone can fill the link (if not, compressing anything only slows the write).
    if p.path_measured {
        d.controller.set_path_cost(p.path_cost, p.serial_cost);
    }
    if p.incompressible {
        // Raw because nothing saves: probe mode (a cheap attempt every few blocks),
        // for the kinds of data sampled. Raw as a *start* means "too slow for the link".
        for &c in classes {
            d.controller.start_incompressible(c);
        }
    } else {
        d.controller.set_start(p.start);
    }
}
