//! What the controller has learnt: a speed and ratio model over the ladder, and the link speed.
//!
//! Both speed and ratio are a *reference shape* (the ladder's [`Priors`]) times a global *level*
//! (how this data on this machine compares with the reference) times a per-rung *residual*
//! (how this rung deviates from the shape). Any measurement, of any rung, updates the level;
//! it also updates its own rung's residual. So a measurement of a rung the controller has
//! already left (it arrives late: N workers are in flight) is not stale: normalised by its
//! rung's shape, it still says how hard the data is.
//!
//! A speed measurement moves its rung's prediction asymmetrically (more on slow news, unless
//! the slowdown is within the measurement noise the model has seen), and the level takes a
//! fixed share of that move (0.9 within a run of one rung, 0.2 at the first measurement after
//! other rungs'). The share must not depend on the sign of the error: otherwise noise alone
//! pulls level and corrections apart without bound (see the crate docs).

use std::cell::RefCell;

use adz_format::CodecSpec;

use crate::ladder::{entropy_coded, Ladder};
use crate::priors::Priors;

/// Clamp for logarithms of speeds in bytes/s relative to the reference (e^±16 covers
/// 1e-7..9e6 times the reference: anything a clock can produce).
const LN_CLAMP: f64 = 16.0;

/// The share of a measured rung's speed update that goes to the level (the rest to the rung's
/// own correction), once the rung has been measured before.
const LEVEL_SHARE: f64 = 0.9;

/// Weight of one error in the noise estimate (about the last 10 measurements).
const NOISE_RATE: f64 = 0.1;

/// The level's share of the update of the first measurement of a rung in a run (after
/// measurements of other rungs).
const SWITCH_SHARE: f64 = 0.2;

/// A per-rung correction in log space, with the block it was last measured at.
#[derive(Clone, Copy, Debug, Default)]
struct Residual {
    val: f64,
    seen: bool,
    at: u64,
}

impl Residual {
    /// How much the rung's own correction still counts: 1 when just measured, halving every
    /// `halflife` blocks since, 0 if never measured.
    fn weight(&self, now: u64, halflife: f64) -> f64 {
        if !self.seen {
            return 0.0;
        }
        let age = now.saturating_sub(self.at) as f64;
        0.5f64.powf(age / halflife)
    }
}

/// The correction of rung `i`: its own measured correction, fading with age into the value
/// interpolated linearly between the nearest measured rungs on either side (or the nearest
/// one, if only one side has any). The reference shape's error is taken to be locally
/// constant, so a rung next to the current one is predicted from the current one's
/// measurement and the shape's step between them, not from the global level alone.
///
/// Only rungs of the same `group` are neighbours (ratios: a codec without an entropy stage
/// tells nothing of one with it; speeds: one group).
fn correction(res: &[Residual], group: &[u8], i: usize, now: u64, halflife: f64) -> f64 {
    // Index 0 is raw and never has a correction.
    let g = group[i];
    let below = (1..i).rev().find(|&j| res[j].seen && group[j] == g);
    let above = (i + 1..res.len()).find(|&j| res[j].seen && group[j] == g);
    blend(res, i, below, above, now, halflife)
}

/// Rung `i`'s own correction, fading with age into the value interpolated between its
/// nearest measured rungs `below` and `above`.
fn blend(
    res: &[Residual],
    i: usize,
    below: Option<usize>,
    above: Option<usize>,
    now: u64,
    halflife: f64,
) -> f64 {
    let neighbours = match (below, above) {
        (Some(a), Some(b)) => {
            let t = (i - a) as f64 / (b - a) as f64;
            res[a].val * (1.0 - t) + res[b].val * t
        }
        (Some(a), None) => res[a].val,
        (None, Some(b)) => res[b].val,
        (None, None) => 0.0,
    };
    let w = res[i].weight(now, halflife);
    w * res[i].val + (1.0 - w) * neighbours
}

fn update(
    res: &mut [Residual],
    group: &[u8],
    i: usize,
    e: f64,
    alpha: f64,
    now: u64,
    halflife: f64,
) {
    let cur = correction(res, group, i, now, halflife);
    let r = &mut res[i];
    r.val = if r.seen { cur + alpha * (e - cur) } else { e };
    r.seen = true;
    r.at = now;
}

/// A shadow measurement ([`crate::ShadowMeasurement`]), reduced to what the model needs:
/// rung `rung` and rung `base` compressed the same slice.
pub(crate) struct Shadow {
    pub base: usize,
    pub rung: usize,
    /// Each rung's ratio on the slice (>= 1).
    pub base_ratio: f64,
    pub ratio: f64,
    /// How many times faster `rung` compressed the slice than `base` (None: not timed).
    pub faster: Option<f64>,
}

/// Learning rates of the model.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rates {
    pub slow: f64,
    pub fast: f64,
    pub residual: f64,
    pub ratio: f64,
    pub halflife: f64,
}

/// One compression measurement, reduced to what the model needs.
pub(crate) struct Sample {
    pub spec: CodecSpec,
    pub rung: Option<usize>,
    /// Per-thread speed, raw bytes/s (None if no usable time was measured).
    pub speed: Option<f64>,
    /// raw / stored (>= 1).
    pub ratio: f64,
    /// Block size relative to the nominal block size, 0..=1: short blocks time badly.
    pub weight: f64,
    /// Take this sample as the new level outright (after an incompressible stretch).
    pub reset: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Model {
    /// The ladder's priors, also for specs measured off the ladder.
    priors: Priors,
    ref_ln_speed: Vec<f64>,
    ref_llr: Vec<f64>,
    ln_h: f64,
    h_seen: bool,
    /// The ratio level of each group (see [`GROUPS`]): how this data compares with the
    /// reference's ratios at the rungs without an entropy stage and at those with one.
    ln_g: [f64; GROUPS],
    g_seen: [bool; GROUPS],
    /// A group known only from shadows: its level as an offset from the measured group's.
    /// A shadow compares two rungs on one slice; kept relative, the shadowed group follows
    /// the measured one when the data changes (kept absolute, it went stale: decision 0049).
    g_shadow: [Option<f64>; GROUPS],
    /// Each rung's ratio group.
    ratio_group: Vec<u8>,
    /// One group for every rung (speeds).
    speed_group: Vec<u8>,
    speed_res: Vec<Residual>,
    ratio_res: Vec<Residual>,
    raw_ln_speed: Option<f64>,
    /// The rung of the last speed measurement: a measurement of the same rung continues a run.
    last_rung: Option<usize>,
    /// Mean absolute error of the speed prediction within runs (ln scale): the noise of one
    /// measurement.
    noise: f64,
    /// Mean absolute error of the ratio prediction within runs (ln of the ratio): how unevenly
    /// the data compresses from block to block, and so how far apart two rungs' ratios
    /// measured on different blocks must be to tell them apart.
    ratio_noise: f64,
    rates: Rates,
    /// Predictions already made at one clock since the last observation: a decision asks
    /// for the same rungs' speeds and ratios many times over (S1 at 6000 MB/s spent 15.9 us
    /// per block in the simulator's controller, 70 % of it in `correction`).
    memo: RefCell<Memo>,
}

/// The speed and ratio of every rung at clock `now` (empty: not computed yet).
#[derive(Clone, Debug, Default)]
struct Memo {
    now: u64,
    speed: Vec<f64>,
    ratio: Vec<f64>,
}

impl Memo {
    /// Rung `rung`'s value at `now` from `pick(self)`, every rung computed at once by
    /// `all()` on a miss.
    fn get(
        cell: &RefCell<Memo>,
        rung: usize,
        now: u64,
        pick: fn(&mut Memo) -> &mut Vec<f64>,
        all: impl FnOnce() -> Vec<f64>,
    ) -> f64 {
        let mut m = cell.borrow_mut();
        if m.now != now {
            m.clear();
            m.now = now;
        }
        let v = pick(&mut m);
        if v.is_empty() {
            *v = all();
        }
        v[rung]
    }

    fn clear(&mut self) {
        self.speed.clear();
        self.ratio.clear();
    }
}

/// [`correction`] of every rung at once, in two passes instead of a search per rung.
fn corrections(res: &[Residual], group: &[u8], now: u64, halflife: f64) -> Vec<f64> {
    let n = res.len();
    let mut below: Vec<Option<usize>> = vec![None; n];
    let mut last = [None; GROUPS];
    for i in 1..n {
        let g = usize::from(group[i]);
        below[i] = last[g];
        if res[i].seen {
            last[g] = Some(i);
        }
    }
    let mut out = vec![0.0; n];
    let mut next = [None; GROUPS];
    for i in (1..n).rev() {
        let g = usize::from(group[i]);
        out[i] = blend(res, i, below[i], next[g], now, halflife);
        if res[i].seen {
            next[g] = Some(i);
        }
    }
    out
}

/// Ratio groups: rungs without an entropy stage (0) and with one (1), see
/// [`crate::entropy_coded`].
const GROUPS: usize = 2;

/// ln(ln(ratio)), the coordinate in which ratios scale: ln(ratio) is the "bits saved" that a
/// harder or easier input shrinks or grows by a factor, and it stays >= 0.
fn llr(ratio: f64) -> f64 {
    let r = if ratio.is_finite() { ratio.clamp(1.0 + 1e-4, 1e6) } else { 1.0 + 1e-4 };
    r.ln().ln()
}

fn alpha_w(alpha: f64, weight: f64) -> f64 {
    1.0 - (1.0 - alpha).powf(weight.clamp(0.0, 1.0))
}

impl Model {
    pub fn new(ladder: &Ladder, initial_level: f64, rates: Rates) -> Model {
        let refs: Vec<_> = ladder.rungs().iter().map(|&r| ladder.reference(r)).collect();
        Model {
            priors: ladder.priors().clone(),
            ref_ln_speed: refs.iter().map(|r| r.speed.ln()).collect(),
            ref_llr: refs.iter().map(|r| llr(r.ratio)).collect(),
            ln_h: initial_level.ln(),
            h_seen: false,
            ln_g: [0.0; GROUPS],
            g_seen: [false; GROUPS],
            g_shadow: [None; GROUPS],
            ratio_group: ladder.rungs().iter().map(|&r| u8::from(entropy_coded(r))).collect(),
            speed_group: vec![0; ladder.len()],
            speed_res: vec![Residual::default(); ladder.len()],
            ratio_res: vec![Residual::default(); ladder.len()],
            raw_ln_speed: None,
            last_rung: None,
            noise: 0.0,
            ratio_noise: 0.0,
            rates,
            memo: RefCell::new(Memo::default()),
        }
    }

    /// True once a compression speed has been measured.
    pub fn has_speed(&self) -> bool {
        self.h_seen
    }

    /// True once a compression ratio has been measured.
    pub fn has_ratio(&self) -> bool {
        self.g_seen.iter().any(|&s| s)
    }

    /// The ratio level of group `g`. A group not measured yet borrows the other's, except
    /// that the entropy rungs never borrow a level below the reference's from the rungs
    /// without one: what LZ4 cannot find says nothing of what an entropy coder finds, and a
    /// rung never measured must not be ruled out by another codec's result.
    fn ratio_level(&self, g: usize) -> f64 {
        let other = 1 - g;
        if let Some(d) = self.g_shadow[g].filter(|_| self.measured(other)) {
            return self.ln_g[other] + d;
        }
        if self.g_seen[g] {
            return self.ln_g[g];
        }
        match (self.g_seen[other], g) {
            (false, _) => 0.0,
            (true, 1) => self.ln_g[other].max(0.0),
            (true, _) => self.ln_g[other],
        }
    }

    /// True if group `g`'s level comes from measured blocks, not only from shadows.
    fn measured(&self, g: usize) -> bool {
        self.g_seen[g] && self.g_shadow[g].is_none()
    }

    /// Group `g` was measured on a block: its level stands on its own from now on.
    fn settle_group(&mut self, g: usize) {
        if self.g_shadow[g].is_some() {
            self.ln_g[g] = self.ratio_level(g);
            self.g_shadow[g] = None;
        }
    }

    /// Predicted per-thread speed of a rung, raw bytes/s. Rung 0 (raw) is a copy.
    pub fn speed(&self, rung: usize, now: u64) -> f64 {
        if rung == 0 {
            return self.raw_speed().unwrap_or(f64::INFINITY);
        }
        Memo::get(
            &self.memo,
            rung,
            now,
            |m| &mut m.speed,
            || {
                let res = corrections(&self.speed_res, &self.speed_group, now, self.rates.halflife);
                (0..res.len()).map(|r| (self.ref_ln_speed[r] + self.ln_h + res[r]).exp()).collect()
            },
        )
    }

    /// Predicted ratio of a rung (>= 1).
    pub fn ratio(&self, rung: usize, now: u64) -> f64 {
        if rung == 0 {
            return 1.0;
        }
        Memo::get(
            &self.memo,
            rung,
            now,
            |m| &mut m.ratio,
            || {
                let res = corrections(&self.ratio_res, &self.ratio_group, now, self.rates.halflife);
                let level = [self.ratio_level(0), self.ratio_level(1)];
                (0..res.len())
                    .map(|r| {
                        let g = usize::from(self.ratio_group[r]);
                        (self.ref_llr[r] + level[g] + res[r]).exp().exp().max(1.0)
                    })
                    .collect()
            },
        )
    }

    /// How much of a rung's speed prediction rests on its own measurements (0..=1): 1 right
    /// after it was measured, fading with age; 0 if it never was.
    pub fn confidence(&self, rung: usize, now: u64) -> f64 {
        self.speed_res.get(rung).map_or(0.0, |r| r.weight(now, self.rates.halflife))
    }

    /// Attempts since rung `rung` was last measured (None: never).
    pub fn age(&self, rung: usize, now: u64) -> Option<u64> {
        self.speed_res.get(rung).filter(|r| r.seen).map(|r| now.saturating_sub(r.at)).or_else(
            || self.ratio_res.get(rung).filter(|r| r.seen).map(|r| now.saturating_sub(r.at)),
        )
    }

    /// A shadow measurement: rung `s.rung`'s ratio and speed relative to `s.base`'s on the
    /// same slice, applied to what the model predicts of `s.base`, updates `s.rung`'s own
    /// corrections (and its ratio group's level, if the group has none yet). No level moves
    /// otherwise, and the run of measurements of one rung is not broken: a slice is one
    /// comparison, not a block.
    pub fn observe_shadow(&mut self, s: &Shadow, now: u64) {
        let n = self.ref_llr.len();
        if s.rung == 0 || s.rung >= n || s.base >= n {
            return;
        }
        let halflife = self.rates.halflife;
        let alpha = self.rates.residual;
        let g = usize::from(self.ratio_group[s.rung]);
        if s.base_ratio.is_finite() && s.ratio.is_finite() && s.base_ratio >= 1.0 {
            // The base rung's predicted ratio, scaled by what the slice says of the two.
            let base = if self.has_ratio() { self.ratio(s.base, now) } else { s.base_ratio };
            let target = (base * s.ratio / s.base_ratio).max(1.0);
            let y = (llr(target) - self.ref_llr[s.rung]).clamp(-LN_CLAMP, LN_CLAMP);
            if !self.g_seen[g] {
                self.ln_g[g] = y;
                self.g_seen[g] = true;
                if self.measured(1 - g) {
                    self.g_shadow[g] = Some(y - self.ln_g[1 - g]);
                }
            }
            let e = y - self.ratio_level(g);
            update(&mut self.ratio_res, &self.ratio_group, s.rung, e, alpha, now, halflife);
        }
        if let Some(f) = s.faster.filter(|f| f.is_finite() && *f > 0.0 && self.h_seen) {
            let speed = self.speed(s.base, now) * f;
            let x = (speed.ln() - self.ref_ln_speed[s.rung]).clamp(-LN_CLAMP, LN_CLAMP);
            let e = x - self.ln_h;
            update(&mut self.speed_res, &self.speed_group, s.rung, e, alpha, now, halflife);
        }
        self.memo.get_mut().clear();
    }

    /// The noise of one speed measurement: the mean absolute error of the prediction within
    /// runs of one rung, on the ln scale (0 until measured).
    pub fn noise(&self) -> f64 {
        self.noise
    }

    /// The noise of one ratio measurement: the mean absolute error of the ratio prediction
    /// within runs of one rung, as a factor on the ratio's logarithm (0 until measured).
    pub fn ratio_noise(&self) -> f64 {
        self.ratio_noise
    }

    /// Measured per-thread speed of storing raw (copy, checksum), if measured.
    pub fn raw_speed(&self) -> Option<f64> {
        self.raw_ln_speed.map(f64::exp)
    }

    pub fn observe_raw(&mut self, speed: f64) {
        self.memo.get_mut().clear();
        if !(speed.is_finite() && speed > 0.0) {
            return;
        }
        let x = speed.ln();
        self.raw_ln_speed = Some(match self.raw_ln_speed {
            None => x,
            Some(v) => v + 0.3 * (x - v),
        });
    }

    /// A block the codec could not shrink: pulls the ratio level toward "incompressible",
    /// touches nothing else.
    pub fn observe_incompressible(&mut self, spec: CodecSpec, weight: f64) {
        self.memo.get_mut().clear();
        let reference = self.priors.get(spec);
        let g = usize::from(entropy_coded(spec));
        if reference.ratio > 1.0 && self.g_seen[g] {
            self.settle_group(g);
            let y = (llr(1.0) - llr(reference.ratio)).clamp(-LN_CLAMP, LN_CLAMP);
            self.ln_g[g] += alpha_w(self.rates.ratio, weight) * (y - self.ln_g[g]);
        }
    }

    /// Rung `rung`, without an entropy stage, stored a block raw that an entropy coder may
    /// shrink: that rung (and, until they are measured, its group's neighbours) is predicted
    /// to save nothing, fading with age like any correction, so that it is tried again now
    /// and then; no level moves.
    pub fn observe_blind(&mut self, rung: usize, now: u64) {
        self.memo.get_mut().clear();
        let Some(&r) = self.ref_llr.get(rung).filter(|_| rung > 0) else { return };
        let g = usize::from(self.ratio_group[rung]);
        let e = (llr(1.0) - r - self.ratio_level(g)).clamp(-LN_CLAMP, LN_CLAMP);
        let halflife = self.rates.halflife;
        update(&mut self.ratio_res, &self.ratio_group, rung, e, 1.0, now, halflife);
    }

    pub fn observe(&mut self, s: &Sample, now: u64) {
        self.learn(s, now);
        // After learning, not before: learning asks for this clock's ratio, which would
        // keep the prediction before the observation.
        self.memo.get_mut().clear();
    }

    fn learn(&mut self, s: &Sample, now: u64) {
        let rung = s.rung.filter(|&r| r > 0 && r < self.speed_res.len());
        let reference = self.priors.get(s.spec);
        let g =
            rung.map_or(usize::from(entropy_coded(s.spec)), |r| usize::from(self.ratio_group[r]));
        if let Some(r) = rung.filter(|&r| Some(r) == self.last_rung && self.g_seen[g] && !s.reset) {
            if s.ratio.is_finite() && s.ratio >= 1.0 {
                let e = (s.ratio.ln() - self.ratio(r, now).ln()).abs();
                self.ratio_noise += NOISE_RATE * (e - self.ratio_noise);
            }
        }
        if let Some(speed) = s.speed.filter(|v| v.is_finite() && *v > 0.0) {
            self.learn_speed(s, speed, rung, reference.speed, now);
        }
        if reference.ratio > 1.0 {
            self.learn_ratio(s, rung, g, reference.ratio, now);
        }
    }

    /// The speed level and the rung's speed correction learn from a measured `speed`
    /// (`reference` the rung's reference speed).
    fn learn_speed(
        &mut self,
        s: &Sample,
        speed: f64,
        rung: Option<usize>,
        reference: f64,
        now: u64,
    ) {
        let rates = self.rates;
        let x = (speed.ln() - reference.ln()).clamp(-LN_CLAMP, LN_CLAMP);
        let res = rung.map_or(0.0, |r| {
            correction(&self.speed_res, &self.speed_group, r, now, rates.halflife)
        });
        // The error of this rung's prediction.
        let e = x - res - self.ln_h;
        let first = !self.h_seen || s.reset;
        let quiet = rates.residual.min(rates.slow);
        let alpha = if first {
            1.0
        } else if e < 0.0 {
            // Slow news is acted on at once when it stands out of the measurement noise
            // (two noise units or more); a slowdown within one unit is likely noise and is
            // averaged like a correction.
            let z = if self.noise > 0.0 { -e / self.noise } else { f64::INFINITY };
            quiet + (rates.slow - quiet) * (z - 1.0).clamp(0.0, 1.0)
        } else {
            rates.fast
        };
        let ar = alpha_w(rates.residual, s.weight);
        if !first && rung.is_some() && rung == self.last_rung {
            // Errors within a run of one rung are the measurement noise.
            self.noise += NOISE_RATE * (e.abs() - self.noise);
        }
        match rung {
            Some(r) if !first && self.speed_res[r].seen => {
                // A rung measured before: its prediction moves by the level's rate plus the
                // correction's on the rest, and the level takes a fixed share of that move,
                // whatever the error's sign, so that the two cannot drift apart (decision 0003).
                let gain = |alpha: f64| {
                    let a = alpha_w(alpha, s.weight);
                    a + ar * (1.0 - a)
                };
                let step = gain(alpha) * e;
                let share = if self.last_rung == Some(r) { LEVEL_SHARE } else { SWITCH_SHARE };
                self.ln_h += share * step;
                let v = res + (1.0 - share) * step;
                self.speed_res[r] = Residual { val: v, seen: true, at: now };
            }
            Some(r) => {
                // A rung never measured (or the level reset, after an incompressible
                // stretch): the level moves, at most at the correction's rate on slow
                // news unless it is reset, and the rest of the error is the rung's own.
                let a = alpha_w(alpha, s.weight);
                let al = if first || e >= 0.0 { a } else { a.min(ar) };
                self.ln_h += al * e;
                let target = res + (1.0 - al) * e;
                update(&mut self.speed_res, &self.speed_group, r, target, ar, now, rates.halflife);
            }
            None => self.ln_h += alpha_w(alpha, s.weight) * e,
        }
        self.last_rung = rung;
        self.h_seen = true;
    }

    /// Ratio group `g`'s level and the rung's ratio correction learn from the sample's ratio
    /// (`reference` the rung's reference ratio, above 1).
    fn learn_ratio(&mut self, s: &Sample, rung: Option<usize>, g: usize, reference: f64, now: u64) {
        let rates = self.rates;
        let y = (llr(s.ratio) - llr(reference)).clamp(-LN_CLAMP, LN_CLAMP);
        let res = rung.map_or(0.0, |r| {
            correction(&self.ratio_res, &self.ratio_group, r, now, rates.halflife)
        });
        let alpha = if !self.g_seen[g] || s.reset { 1.0 } else { rates.ratio };
        let level = self.ratio_level(g);
        self.ln_g[g] = level + alpha_w(alpha, s.weight) * (y - res - level);
        self.g_seen[g] = true;
        self.g_shadow[g] = None;
        if s.reset {
            // After an incompressible stretch the other group starts over as well.
            self.g_seen[1 - g] = false;
            self.g_shadow[1 - g] = None;
        }
        if let Some(r) = rung {
            let a = alpha_w(rates.residual, s.weight);
            let e = y - self.ln_g[g];
            update(&mut self.ratio_res, &self.ratio_group, r, e, a, now, rates.halflife);
        }
    }
}

/// The link speed, measured as bytes over busy time with exponentially fading sums, so that a
/// sample's weight is proportional to its bytes and the estimate forgets with a half-life in
/// bytes (not in calls).
#[derive(Clone, Debug)]
pub(crate) struct LinkEstimator {
    bytes: f64,
    secs: f64,
    halflife_bytes: f64,
    /// A backlogged sample has been seen: from then on only those count.
    backlogged_only: bool,
}

impl LinkEstimator {
    pub fn new(halflife_bytes: f64) -> LinkEstimator {
        LinkEstimator {
            bytes: 0.0,
            secs: 0.0,
            halflife_bytes: halflife_bytes.max(1.0),
            backlogged_only: false,
        }
    }

    /// Add a write of `bytes` that took `secs`. Writes after an idle sink may have been
    /// absorbed by a buffer: until a backlogged write is seen they are all there is (and an
    /// overestimate only errs towards faster codecs, which is safe); the first backlogged one
    /// replaces them, and later unbacklogged ones are ignored.
    pub fn add(&mut self, bytes: u64, secs: f64, backlogged: bool) {
        if backlogged && !self.backlogged_only {
            self.backlogged_only = true;
            self.bytes = 0.0;
            self.secs = 0.0;
        }
        if self.backlogged_only && !backlogged {
            return;
        }
        // A write that took no measurable time says nothing about the link's speed.
        if bytes == 0 || !(secs.is_finite() && secs > 0.0) {
            return;
        }
        let b = bytes as f64;
        let keep = 0.5f64.powf(b / self.halflife_bytes);
        self.bytes = self.bytes * keep + b;
        self.secs = self.secs * keep + secs;
    }

    pub fn get(&self) -> Option<f64> {
        let v = self.bytes / self.secs;
        (self.secs > 0.0 && v.is_finite() && v > 0.0).then_some(v)
    }

    /// The rate of backlogged writes only (None before the first): writes that found their
    /// frame waiting, so the sink, not the writer, set their pace.
    pub fn backlogged(&self) -> Option<f64> {
        self.get().filter(|_| self.backlogged_only)
    }
}

#[cfg(test)]
mod tests;
