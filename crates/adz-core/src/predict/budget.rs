//! The prediction's time budget: what share of the write it may cost, and the sample cut
//! (before it is taken, and after) so that the cheapest candidates fit in it.

use std::borrow::Cow;

use adz_control::{entropy_coded, Ladder, Priors, Strategy, INITIAL_LEVEL};
use adz_format::CodecSpec;

use super::sample::LOOK_SPEED;
use super::{estimate, Predictor, RungPerf, Sample, SampleConfig, WriteModel};
use super::{BUDGET_LINK, MIN_RUNGS};

/// The shortest a slice is cut to for the time budget.
const MIN_SLICE: usize = 4096;

/// What taking one byte of a slice costs besides compressing it, for
/// [`Predictor::plan_sample`]: reading it into fresh pages (3 MiB of slices in about 3 ms on
/// the benchmark machine) and classifying it at `LOOK_SPEED`.
const TAKE_SECONDS_PER_BYTE: f64 = 2e-9;

/// What one probe costs: a seek, a read of `PROBE_LEN` bytes and a classification (448
/// probes of a 256 MiB file in about 3 ms on the benchmark machine).
const PROBE_SECONDS: f64 = 6.5e-6;

/// The share of a prediction's time budget [`Predictor::plan_sample`] gives the probes.
const PROBE_SHARE: f64 = 1.0 / 3.0;

/// Seconds per byte of sample to measure the rungs measured whatever the budget at the
/// controller's prior speed: the `MIN_RUNGS` cheapest of `candidates` (fastest first) and
/// the first with an entropy stage, if it is not among them.
fn cheapest_per_byte(priors: &Priors, candidates: &[CodecSpec]) -> f64 {
    let cheapest = &candidates[..candidates.len().min(MIN_RUNGS)];
    let entropy = candidates
        .iter()
        .find(|&&c| entropy_coded(c))
        .filter(|c| !cheapest.contains(c))
        .into_iter();
    cheapest.iter().chain(entropy).map(|c| 1.0 / (priors.get(*c).speed * INITIAL_LEVEL)).sum()
}

impl Predictor {
    /// The sample to take for a write of `len` bytes under `strategy` through `link`: the
    /// configured one, with no more probes than a third of the time budget pays for, and its
    /// slices' bytes cut to what the rest can read, look at and compress (with the
    /// `MIN_RUNGS` cheapest candidates at the controller's prior speed).
    /// [`predict`](Predictor::predict) cuts a sample to its budget too, but only after it has
    /// been taken, and on a fast link taking the default sample alone can cost many times the
    /// budget (docs/PREDICTOR.md, "Budget").
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
        let per_byte = cheapest_per_byte(&self.cfg.priors, &candidates) + TAKE_SECONDS_PER_BYTE;
        let share = (budget - probe_time) / per_byte / len as f64;
        if share.is_finite() {
            cfg.budget = cfg.budget.min(share.max(0.0));
        }
        cfg
    }

    /// The time budget for predicting a write, given the rungs' performance so far
    /// (`perfs`) at a speed `level`: `time_budget` of the write's predicted time (for S2/S3
    /// at least their target time, or the time of the slowest rung the controller can reach,
    /// xz:9 at that level, with a ratio at least the best so far, if that is shorter), at most
    /// `max_budget_seconds`. An unknown link is reckoned as `BUDGET_LINK`.
    pub(super) fn budget_for(
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
            .map(|c| self.cfg.priors.get(c))
            .map(|r| RungPerf::new(r.speed * level, best.max(1.0)));
        let t = estimate::write_time(strategy, model, perfs, choice, link, slowest);
        (share * t).min(cap)
    }

    /// `sample` cut to the budget if the cheapest candidates would not fit: the
    /// `MIN_RUNGS` cheapest are measured whatever the budget, so a sample too large for them
    /// at the controller's prior speed is cut ("sample less" rather than measure less): the
    /// longest slices first, each to at least `MIN_SLICE`; a stratified sample keeps fewer
    /// slices rather than cut them below its floor ([`Sample::fit`]). The look at the bytes
    /// is planned at `LOOK_SPEED`, so that what is compressed does not depend on timing; a
    /// set-up slice alone of its kind counts twice ([`Sample::measured_bytes`]).
    pub(super) fn fit_to_budget<'s>(
        &self,
        sample: &'s Sample,
        candidates: &[CodecSpec],
        budget: f64,
    ) -> Cow<'s, Sample> {
        let look_planned = sample.look_bytes as f64 / LOOK_SPEED;
        let per_byte = cheapest_per_byte(&self.cfg.priors, candidates);
        let room = (budget - look_planned).max(0.0);
        if !(per_byte > 0.0 && sample.measured_bytes() as f64 * per_byte > room) {
            return Cow::Borrowed(sample);
        }
        let floor = sample.spread.map_or(MIN_SLICE, |s| self.cfg.sample.strata(s).1);
        let cap = (room / per_byte) as u64;
        let mut fit = sample.fit(cap, floor, MIN_SLICE);
        let again = fit.measured_bytes() - fit.bytes();
        if again > 0 && fit.measured_bytes() > cap {
            fit = sample.fit(cap.saturating_sub(again), floor, MIN_SLICE);
        }
        Cow::Owned(fit)
    }
}
