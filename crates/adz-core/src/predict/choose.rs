//! Choosing per strategy: which candidates the look at the bytes leaves, measuring them
//! cheapest first while the budget lasts, and the start rung from their estimates.

use std::collections::VecDeque;
use std::time::Instant;

use adz_control::{entropy_coded, Priors, Strategy, INITIAL_LEVEL};
use adz_format::CodecSpec;

use super::{estimate, Compressibility, Predictor, RungEstimate, RungPerf, Sample, WriteModel};
use super::{BUDGET_LINK, MIN_RUNGS};
use crate::Result;

/// What a prediction is for: the strategy, the write and the link (None: unknown).
#[derive(Clone, Copy)]
pub(super) struct Ask<'a> {
    pub(super) strategy: Strategy,
    pub(super) model: &'a WriteModel,
    pub(super) link: Option<f64>,
}

/// The prediction's clock: when it started, and the seconds the sample's look at its bytes
/// took before that.
pub(super) struct Clock {
    pub(super) t0: Instant,
    pub(super) looked: f64,
}

impl Clock {
    /// Seconds spent so far, the look at the bytes included.
    pub(super) fn spent(&self) -> f64 {
        self.looked + self.t0.elapsed().as_secs_f64()
    }
}

/// The rungs measured (fastest first by the priors, with their performance) and
/// what measuring them cost.
pub(super) struct Measured {
    pub(super) rungs: Vec<RungEstimate>,
    pub(super) perfs: Vec<RungPerf>,
    /// Bytes compressed to measure them.
    pub(super) compressed_bytes: u64,
    /// The time budget, as last reckoned from the rungs measured.
    pub(super) budget: f64,
}

impl Measured {
    /// Add a rung in its place, fastest first by the priors.
    fn insert(&mut self, priors: &Priors, estimate: RungEstimate, perf: RungPerf) {
        let speed = priors.get(estimate.spec).speed;
        let at = self
            .rungs
            .iter()
            .position(|r| priors.get(r.spec).speed < speed)
            .unwrap_or(self.rungs.len());
        self.perfs.insert(at, perf);
        self.rungs.insert(at, estimate);
    }
}

/// What `spec`, measured at `perf` on `bytes` of sample, is predicted to do on the write.
pub(super) fn estimate_of(
    model: &WriteModel,
    link: Option<f64>,
    spec: CodecSpec,
    perf: RungPerf,
    bytes: u64,
) -> RungEstimate {
    RungEstimate {
        spec,
        ratio: perf.ratio,
        speed: perf.speed,
        aggregate_speed: model.bytes as f64 / model.time_compress(perf),
        compress_time: model.time_compress(perf),
        transfer_time: link.map(|l| model.time_transfer(perf, l)),
        time: link.map(|l| model.time_compressed(perf, l)),
        speedup: link.map(|l| model.speedup(perf, l)),
        bytes,
    }
}

/// The candidates the look at the bytes leaves to measure (`candidates` keeps them); returns
/// those it skips. Nothing for an empty sample or random data. For redundant data the ratio
/// is not in doubt, only the speed: the fastest rungs answer that, and the first with an
/// entropy stage (a sparse image's pixels are few distinct values only an entropy coder
/// shrinks).
pub(super) fn narrow(
    class: Compressibility,
    empty: bool,
    candidates: &mut Vec<CodecSpec>,
) -> Vec<CodecSpec> {
    let mut skipped = Vec::new();
    match class {
        _ if empty => skipped = std::mem::take(candidates),
        Compressibility::Random => skipped = std::mem::take(candidates),
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
    skipped
}

/// The measured speed level: the geometric mean of measured / reference speed over `n`
/// rungs whose logarithms sum to `sum` (the controller's prior before anything is measured).
fn level_of(sum: f64, n: usize) -> f64 {
    if n == 0 {
        INITIAL_LEVEL
    } else {
        (sum / n as f64).exp()
    }
}

impl Predictor {
    /// Measure `candidates` on `sample`, cheapest first, while `budget` lasts (reckoned again
    /// after each rung); those over it go to `skipped`. The first `MIN_RUNGS` in that order
    /// and the first rung with an entropy stage are measured whatever the budget: LZ4 and
    /// zstd's negative levels store integer and float pixels raw where zstd:1 saves a third
    /// (decision 0020). After the first, the faster rungs ([`super::PredictConfig::fast_rungs`])
    /// if it cannot keep the link full (an unknown link counts as `BUDGET_LINK`).
    pub(super) fn measure_candidates(
        &mut self,
        ask: &Ask<'_>,
        sample: &Sample,
        candidates: Vec<CodecSpec>,
        budget: f64,
        clock: &Clock,
        skipped: &mut Vec<CodecSpec>,
    ) -> Result<Measured> {
        let Ask { strategy, model, link } = *ask;
        let measured_bytes = sample.measured_bytes();
        let mut m = Measured { rungs: Vec::new(), perfs: Vec::new(), compressed_bytes: 0, budget };
        let mut level_sum = 0.0f64;
        let mut queue: VecDeque<CodecSpec> = candidates.into_iter().collect();
        let (mut measured, mut fast_queued) = (0usize, false);
        let priors = &self.cfg.priors.clone();
        while let Some(spec) = queue.pop_front() {
            let cost = measured_bytes as f64
                / (priors.get(spec).speed * codec_level(priors, spec, &m.rungs));
            let spent = clock.spent();
            let guaranteed = measured < MIN_RUNGS
                || (entropy_coded(spec) && !m.rungs.iter().any(|r| entropy_coded(r.spec)));
            if m.rungs.iter().any(|r| r.spec == spec) {
                continue;
            }
            if !guaranteed && spent + cost > m.budget {
                skipped.push(spec);
                continue;
            }
            let (perf, bytes) = self.measure(sample, spec)?;
            m.compressed_bytes += bytes;
            level_sum += (perf.speed / priors.get(spec).speed).ln();
            m.insert(priors, estimate_of(model, link, spec, perf, bytes), perf);
            measured += 1;
            let level = level_of(level_sum, m.perfs.len());
            m.budget = self.budget_for(strategy, model, link, &m.perfs, level);
            if !fast_queued {
                fast_queued = true;
                if self.too_slow(model, perf, link.unwrap_or(BUDGET_LINK)) {
                    for &f in self.cfg.fast_rungs.iter().rev() {
                        queue.push_front(f);
                    }
                }
            }
        }
        Ok(m)
    }

    /// True if a rung that saves (a faster LZ4 saves less still) cannot keep `link` full:
    /// its aggregate speed is below the link times its ratio.
    fn too_slow(&self, model: &WriteModel, perf: RungPerf, link: f64) -> bool {
        estimate::saves(perf, self.cfg.keep_threshold)
            && model.bytes as f64 / model.time_compress(perf) < link * perf.ratio
    }

    /// The rung chosen among `perfs` (an index), and with the link unknown its worst relative
    /// regret over the plausible links ([`estimate::plausible_links`] of the config's
    /// ceiling).
    pub(super) fn choose(&self, ask: &Ask<'_>, perfs: &[RungPerf]) -> (Option<usize>, Option<f64>) {
        let (keep, margin) = (self.cfg.keep_threshold, self.cfg.margin);
        match ask.link {
            Some(l) => (estimate::choose(ask.strategy, ask.model, perfs, l, keep, margin), None),
            None => {
                let links = estimate::plausible_links(self.cfg.link_ceiling);
                let (c, r) = estimate::minimax_regret(ask.strategy, ask.model, perfs, &links, keep);
                (c, Some(r))
            }
        }
    }
}

/// The speed level (measured / prior speed) a candidate not yet measured is guessed at to
/// decide whether it fits the budget: the geometric mean over the measured rungs of its codec,
/// or the controller's prior if none is measured. The reference table's shape holds within a
/// codec, not across codecs (docs/PREDICTOR.md, "Budget").
fn codec_level(priors: &Priors, spec: CodecSpec, measured: &[RungEstimate]) -> f64 {
    let (mut sum, mut n) = (0.0f64, 0usize);
    for r in measured.iter().filter(|r| r.spec.id() == spec.id()) {
        let l = r.speed / priors.get(r.spec).speed;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::PredictConfig;
    use adz_control::reference;

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
        assert_eq!(codec_level(&Priors::builtin(), xz, &measured), INITIAL_LEVEL);
        let zstd: CodecSpec = "zstd:12".parse().unwrap();
        assert!(
            (codec_level(&Priors::builtin(), zstd, &measured) - 6.0).abs() < 1e-9,
            "geometric mean of 4 and 9"
        );
        assert_eq!(codec_level(&Priors::builtin(), zstd, &[]), INITIAL_LEVEL);
    }

    /// An unknown link that the sink bounds (an object store's upload) is not checked against
    /// links the sink cannot reach: a rung that halves the bytes at a third of the speed is the
    /// safer start up to 360 MB/s, and the timid one only on links of GB/s.
    #[test]
    fn an_unknown_link_is_one_the_sink_can_reach() {
        const MB: f64 = 1e6;
        let model = WriteModel::new(1 << 30, 2, 1 << 20);
        // lz4:25-like and zstd:1-like on 2 threads: 3 GB/s and 1 GB/s aggregate.
        let perfs = [RungPerf::new(1500.0 * MB, 3.5), RungPerf::new(500.0 * MB, 6.8)];
        let ask = Ask { strategy: Strategy::Throughput, model: &model, link: None };
        let anywhere = Predictor::new(PredictConfig::default());
        assert_eq!(anywhere.choose(&ask, &perfs).0, Some(0), "up to 12 GB/s: the fast rung");
        let bounded =
            Predictor::new(PredictConfig { link_ceiling: Some(360.0 * MB), ..Default::default() });
        let (choice, regret) = bounded.choose(&ask, &perfs);
        assert_eq!(choice, Some(1), "up to 360 MB/s: the rung that stores half");
        assert!(regret.is_some_and(|r| r < 0.5), "{regret:?}");
    }
}
