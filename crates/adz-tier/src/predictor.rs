//! The compression cost predictor (issue 27): cheap features of a block → each rung's ratio
//! and one thread's speed on this machine.
//!
//! - **Features** ([`Features::of`]): from a sample of the block (16 windows of 256 bytes
//!   spread over it, as [`adz_control::classify`] takes): order-0 entropy, byte-value
//!   spread, repeat fraction (4-byte strings seen before in the sample), zero share, and a
//!   guessed element width (the lag among 1, 2, 4, 8 at which bytes most often repeat).
//! - **Model**: per rung, two linear regressions on a fixed expansion of the features, one
//!   for `ln(ratio)` and one for `ln(speed)`, fitted by ridge least squares on the blocks a
//!   machine profile measured ([`Predictor::fit`]), as HCompress fits its regression.
//! - **Online correction** ([`Predictor::observe`]): each measured block moves a per-rung,
//!   per-class offset (in log space) a share [`GAIN`] of the way to the block's residual, so
//!   a machine that got slower, or a file the fit does not know, is followed within a few
//!   blocks (it replaces HCompress' reinforcement step). A full recursive least squares was
//!   tried on paper: with 14 weights it needs ~100 blocks to move the intercept as far.

// Matrix code reads best with indices.
#![allow(clippy::needless_range_loop)]

use serde::{Deserialize, Serialize};

use crate::error::TierError;
use crate::place::CLASSES;

/// Bytes per sample window.
const WINDOW: usize = 256;
/// Sample windows per block.
const WINDOWS: usize = 16;
/// Length of the regression's input vector (see [`Features::expand`]).
pub const DIM: usize = 14;
/// Ridge penalty per sample on every weight but the intercept: keeps the fit defined where
/// the profile's blocks do not vary a feature, and a file unlike the profiled ones from
/// being extrapolated wildly. 1e-2 gave the least median ratio error when each file of the
/// real corpus was predicted from the others (42 % against 88 % at 1e-6; tried 1e-6 .. 1).
pub const RIDGE: f64 = 1e-2;
/// Share of a measured block's residual the online correction takes.
pub const GAIN: f64 = 0.3;

/// Cheap features of one block.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// Order-0 entropy of the sample, bits per byte / 8 (0..=1).
    pub entropy: f64,
    /// Distinct byte values in the sample / 256.
    pub spread: f64,
    /// Share of the sample's 4-byte strings that occurred earlier in the sample.
    pub repeat: f64,
    /// Share of zero bytes.
    pub zeros: f64,
    /// Share of bytes equal to the byte before.
    pub same1: f64,
    /// Guessed element width: 1, 2, 4 or 8 bytes (the lag with most equal bytes).
    pub width: u8,
    /// Share of bytes equal to the byte one element before.
    pub same_w: f64,
}

/// Reusable scratch space for [`Features::of_with`], so that predicting allocates nothing.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// Per hash slot: the stamp of the block that filled it, and the 4-byte string.
    seen: Vec<(u32, u32)>,
    stamp: u32,
}

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch { seen: vec![(0, 0); 1 << 12], stamp: 0 }
    }
}

impl Features {
    /// The features of `block` (empty: all zero, width 1).
    pub fn of(block: &[u8]) -> Features {
        Features::of_with(block, &mut Scratch::default())
    }

    /// [`Features::of`] with reusable scratch space.
    pub fn of_with(block: &[u8], scratch: &mut Scratch) -> Features {
        let mut hist = [0u32; 256];
        let mut lag_eq = [0u32; 4]; // lags 1, 2, 4, 8
        let mut repeats = 0u32;
        let mut grams = 0u32;
        let mut n = 0u32;
        // A new stamp marks the hash table empty without clearing it.
        scratch.stamp = scratch.stamp.wrapping_add(1);
        if scratch.stamp == 0 {
            scratch.seen.iter_mut().for_each(|s| *s = (0, 0));
            scratch.stamp = 1;
        }
        let stamp = scratch.stamp;
        let mut window = |w: &[u8]| {
            for &b in w {
                hist[b as usize] += 1;
            }
            // Separate passes, so that the compares vectorise.
            for (k, lag) in [1usize, 2, 4, 8].into_iter().enumerate() {
                if w.len() > lag {
                    lag_eq[k] += w[lag..].iter().zip(w).filter(|(a, b)| a == b).count() as u32;
                }
            }
            for q in w.windows(4) {
                let g = u32::from_le_bytes([q[0], q[1], q[2], q[3]]);
                // 12-bit multiplicative hash; a slot remembers the last string put there.
                let h = (g.wrapping_mul(0x9E37_79B1) >> 20) as usize;
                if scratch.seen[h] == (stamp, g) {
                    repeats += 1;
                } else {
                    scratch.seen[h] = (stamp, g);
                }
                grams += 1;
            }
            n += w.len() as u32;
        };
        if block.len() <= WINDOW * WINDOWS {
            window(block);
        } else {
            let stride = (block.len() - WINDOW) / (WINDOWS - 1);
            for k in 0..WINDOWS {
                window(&block[k * stride..k * stride + WINDOW]);
            }
        }
        if n == 0 {
            return Features {
                entropy: 0.0,
                spread: 0.0,
                repeat: 0.0,
                zeros: 0.0,
                same1: 0.0,
                width: 1,
                same_w: 0.0,
            };
        }
        let nf = f64::from(n);
        let mut h = 0.0;
        let mut distinct = 0u32;
        for &c in &hist {
            if c > 0 {
                distinct += 1;
                let p = f64::from(c) / nf;
                h -= p * p.log2();
            }
        }
        // The lag with most equal bytes, if it clearly beats lag 1 and holds 15 % of the
        // bytes: a float array repeats its exponent bytes at lag 8 (or 4), while in text
        // every lag but 1 matches about equally rarely.
        let mut best = 0;
        for k in 1..4 {
            let (v, b) = (f64::from(lag_eq[k]), f64::from(lag_eq[best]));
            if v > b * 1.5 + 4.0 && v >= 0.15 * f64::from(n) {
                best = k;
            }
        }
        Features {
            entropy: h / 8.0,
            spread: f64::from(distinct) / 256.0,
            repeat: if grams == 0 { 0.0 } else { f64::from(repeats) / f64::from(grams) },
            zeros: f64::from(hist[0]) / nf,
            same1: f64::from(lag_eq[0]) / nf,
            width: 1 << best,
            same_w: f64::from(lag_eq[best]) / nf,
        }
    }

    /// The regression's input: an intercept, the features, and the few products and squares
    /// that carry most of the relation between them and a codec's ratio and speed.
    pub fn expand(&self) -> [f64; DIM] {
        let (h, r) = (self.entropy, self.repeat);
        [
            1.0,
            h,
            h * h,
            self.spread,
            r,
            r * r,
            h * r,
            self.zeros,
            self.same1,
            self.same_w,
            f64::from(self.width == 2),
            f64::from(self.width == 4),
            f64::from(self.width == 8),
            (1.0 - h).max(0.0).sqrt(),
        ]
    }
}

/// One regression's weights.
#[derive(Debug, Clone, PartialEq)]
struct Regression {
    w: [f64; DIM],
}

impl Regression {
    /// Ridge least squares of `y` on `x`.
    fn fit(x: &[[f64; DIM]], y: &[f64], ridge: f64) -> Regression {
        let n = x.len().max(1) as f64;
        let mut a = [[0f64; DIM]; DIM];
        let mut b = [0f64; DIM];
        for (row, &t) in x.iter().zip(y) {
            for i in 0..DIM {
                b[i] += row[i] * t;
                for j in 0..DIM {
                    a[i][j] += row[i] * row[j];
                }
            }
        }
        for (i, r) in a.iter_mut().enumerate().skip(1) {
            r[i] += ridge * n;
        }
        a[0][0] += 1e-9 * n + 1e-12;
        let p = invert(a);
        let mut w = [0f64; DIM];
        for i in 0..DIM {
            w[i] = (0..DIM).map(|j| p[i][j] * b[j]).sum();
        }
        Regression { w }
    }

    fn predict(&self, x: &[f64; DIM]) -> f64 {
        x.iter().zip(&self.w).map(|(a, b)| a * b).sum()
    }
}

/// Inverse of a symmetric positive definite matrix (Gauss-Jordan with partial pivoting).
fn invert(mut a: [[f64; DIM]; DIM]) -> [[f64; DIM]; DIM] {
    let mut inv = [[0f64; DIM]; DIM];
    for (i, r) in inv.iter_mut().enumerate() {
        r[i] = 1.0;
    }
    for c in 0..DIM {
        let piv = (c..DIM)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .expect("a row to pivot on");
        a.swap(c, piv);
        inv.swap(c, piv);
        let d = a[c][c];
        if d.abs() < 1e-300 {
            continue;
        }
        for j in 0..DIM {
            a[c][j] /= d;
            inv[c][j] /= d;
        }
        for i in 0..DIM {
            if i != c {
                let f = a[i][c];
                if f != 0.0 {
                    for j in 0..DIM {
                        a[i][j] -= f * a[c][j];
                        inv[i][j] -= f * inv[c][j];
                    }
                }
            }
        }
    }
    inv
}

/// One measured block: its features and, per rung, ratio and one thread's speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Which data set of the profile it came from (an index into its `sets`).
    pub set: usize,
    /// Its class ([`adz_control::classify`]).
    pub class: u8,
    /// Raw bytes.
    pub raw: u64,
    /// Its features.
    pub features: Features,
    /// Per rung: raw / stored payload (>= 1).
    pub ratio: Vec<f64>,
    /// Per rung: raw bytes per second on one thread.
    pub speed: Vec<f64>,
}

/// A rung's predicted cost for one block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// Compression ratio, >= 1.
    pub ratio: f64,
    /// One thread's speed, raw bytes per second.
    pub speed: f64,
}

/// The fitted predictor: per rung a regression for ln(ratio) and one for ln(speed), plus
/// the online offsets.
#[derive(Debug, Clone, PartialEq)]
pub struct Predictor {
    ratio: Vec<Regression>,
    speed: Vec<Regression>,
    /// Smallest and largest ln(speed) seen per rung: predictions are kept within a factor 2
    /// of what the profile measured, so a block unlike any profiled one cannot ask for an
    /// absurd speed.
    speed_range: Vec<(f64, f64)>,
    max_ln_ratio: Vec<f64>,
    /// Online offsets of ln(ratio) and ln(speed), per rung and class.
    offset: Vec<[(f64, f64); CLASSES]>,
}

/// The entropy bounds of [`adz_control::classify`] (bits per byte; not exported there).
const CLASS_BOUNDS: [f64; 3] = [3.0, 6.0, 7.8];

/// The class [`adz_control::classify`] gives the block: it looks at the same sample.
pub fn class_of(f: &Features) -> usize {
    if f.spread == 0.0 {
        return 0;
    }
    let h = f.entropy * 8.0;
    1 + CLASS_BOUNDS.iter().filter(|&&b| h >= b).count()
}

impl Predictor {
    /// Fits one regression per rung and target on the samples (all with `rungs` entries),
    /// with the ridge penalty [`RIDGE`].
    pub fn fit(samples: &[Sample], rungs: usize) -> Result<Predictor, TierError> {
        Predictor::fit_with(samples, rungs, RIDGE)
    }

    /// [`Predictor::fit`] with another ridge penalty (per sample, >= 0).
    pub fn fit_with(samples: &[Sample], rungs: usize, ridge: f64) -> Result<Predictor, TierError> {
        if samples.is_empty() || rungs == 0 {
            return Err(TierError::Profile("no measured blocks to fit the predictor on".into()));
        }
        if let Some(s) = samples.iter().find(|s| s.ratio.len() != rungs || s.speed.len() != rungs) {
            return Err(TierError::Profile(format!(
                "a measured block has {} ratios and {} speeds for {rungs} rungs",
                s.ratio.len(),
                s.speed.len()
            )));
        }
        let x: Vec<[f64; DIM]> = samples.iter().map(|s| s.features.expand()).collect();
        let mut p = Predictor {
            ratio: Vec::new(),
            speed: Vec::new(),
            speed_range: Vec::new(),
            max_ln_ratio: Vec::new(),
            offset: vec![[(0.0, 0.0); CLASSES]; rungs],
        };
        for r in 0..rungs {
            let lr: Vec<f64> = samples.iter().map(|s| s.ratio[r].max(1.0).ln()).collect();
            let ls: Vec<f64> = samples.iter().map(|s| s.speed[r].max(1.0).ln()).collect();
            let lo = ls.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            p.speed_range.push((lo - 2f64.ln(), hi + 2f64.ln()));
            p.max_ln_ratio.push(lr.iter().copied().fold(0.0, f64::max) + 2f64.ln());
            p.ratio.push(Regression::fit(&x, &lr, ridge));
            p.speed.push(Regression::fit(&x, &ls, ridge));
        }
        Ok(p)
    }

    /// The number of rungs it predicts.
    pub fn rungs(&self) -> usize {
        self.ratio.len()
    }

    /// Rung `r`'s predicted ratio and one thread's speed for a block with features `f`.
    pub fn predict(&self, f: &Features, r: usize) -> Prediction {
        self.predict_x(&f.expand(), class_of(f), r)
    }

    fn ln_x(&self, x: &[f64; DIM], class: usize, r: usize) -> (f64, f64) {
        let (lo, hi) = self.speed_range[r];
        let (or, os) = self.offset[r][class];
        let lr = (self.ratio[r].predict(x) + or).clamp(0.0, self.max_ln_ratio[r]);
        (lr, (self.speed[r].predict(x) + os).clamp(lo, hi))
    }

    fn predict_x(&self, x: &[f64; DIM], class: usize, r: usize) -> Prediction {
        let (lr, ls) = self.ln_x(x, class, r);
        Prediction { ratio: lr.exp(), speed: ls.exp() }
    }

    /// Every rung's prediction for a block with features `f`, into `out`.
    pub fn predict_all(&self, f: &Features, out: &mut Vec<Prediction>) {
        let x = f.expand();
        let class = class_of(f);
        out.clear();
        out.extend((0..self.rungs()).map(|r| self.predict_x(&x, class, r)));
    }

    /// Corrects rung `r`'s predictions for blocks of this block's class with a measured
    /// block: its features, the ratio it got and one thread's speed. Measurements that are
    /// not positive numbers are ignored.
    pub fn observe(&mut self, f: &Features, r: usize, ratio: f64, speed: f64) {
        let x = f.expand();
        let class = class_of(f);
        let (lr, ls) = self.ln_x(&x, class, r);
        let o = &mut self.offset[r][class];
        if ratio.is_finite() && ratio > 0.0 {
            o.0 += GAIN * (ratio.max(1.0).ln() - lr);
        }
        if speed.is_finite() && speed > 0.0 {
            o.1 += GAIN * (speed.ln() - ls);
        }
    }
}

/// How well a predictor did on blocks it was not fitted on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    /// Blocks x rungs scored.
    pub predictions: u64,
    /// Share of them whose predicted ratio was within 4 % of the measured one.
    pub ratio_within_4pct: f64,
    /// Share of them whose predicted speed was within 10 % of the measured one.
    pub speed_within_10pct: f64,
    /// Median relative error of the ratio.
    pub ratio_median_error: f64,
    /// Median relative error of the speed.
    pub speed_median_error: f64,
}

impl Accuracy {
    /// Scores `p` on `samples`; with `online`, each block is predicted first and then
    /// observed (as a write does), so later blocks profit from the earlier ones.
    pub fn score(p: &Predictor, samples: &[&Sample], online: bool) -> Accuracy {
        let mut p = p.clone();
        let (mut er, mut es) = (Vec::new(), Vec::new());
        for s in samples {
            for r in 0..p.rungs() {
                let q = p.predict(&s.features, r);
                er.push((q.ratio - s.ratio[r]).abs() / s.ratio[r].max(1e-9));
                es.push((q.speed - s.speed[r]).abs() / s.speed[r].max(1e-9));
                if online {
                    p.observe(&s.features, r, s.ratio[r], s.speed[r]);
                }
            }
        }
        let share = |v: &[f64], lim: f64| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().filter(|&&e| e <= lim).count() as f64 / v.len() as f64
            }
        };
        let median = |v: &mut Vec<f64>| {
            if v.is_empty() {
                return 0.0;
            }
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        Accuracy {
            predictions: er.len() as u64,
            ratio_within_4pct: share(&er, 0.04),
            speed_within_10pct: share(&es, 0.10),
            ratio_median_error: median(&mut er),
            speed_median_error: median(&mut es),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(s: &mut u64) -> u64 {
        *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *s >> 33
    }

    #[test]
    fn features_tell_kinds_apart() {
        let mut s = 1;
        let random: Vec<u8> = (0..1 << 16).map(|_| lcg(&mut s) as u8).collect();
        let f = Features::of(&random);
        assert!(f.entropy > 0.97 && f.spread > 0.99 && f.repeat < 0.05, "{f:?}");
        let zeros = vec![0u8; 1 << 16];
        let f = Features::of(&zeros);
        assert_eq!((f.entropy, f.zeros, f.width), (0.0, 1.0, 1));
        assert!(f.repeat > 0.95);
        // Slowly varying u64 counters: the top bytes repeat at lag 8.
        let ints: Vec<u8> =
            (0..1u64 << 13).flat_map(|i| (i * 7919 + (1 << 40)).to_le_bytes()).collect();
        let f = Features::of(&ints);
        assert_eq!(f.width, 8, "{f:?}");
        let text = b"the quick brown fox jumps over the lazy dog ".repeat(2000);
        let f = Features::of(&text);
        assert!(f.entropy < 0.6 && f.repeat > 0.5 && f.width == 1, "{f:?}");
        assert_eq!(Features::of(&[]).entropy, 0.0);
        assert!(Features::of(&[5]).spread > 0.0);
    }

    /// Blocks with known relations: ln(ratio) = 2 - 2 entropy + repeat and ln(speed) =
    /// 20 - 3 entropy for rung 0, and a rung 1 twice as dense and a third as fast.
    fn synthetic(n: usize, seed: u64) -> Vec<Sample> {
        let mut s = seed;
        (0..n)
            .map(|i| {
                let u = |s: &mut u64| (lcg(s) % 10_000) as f64 / 10_000.0;
                let f = Features {
                    entropy: u(&mut s),
                    spread: u(&mut s),
                    repeat: u(&mut s),
                    zeros: u(&mut s) * 0.3,
                    same1: u(&mut s) * 0.5,
                    width: [1, 2, 4, 8][i % 4],
                    same_w: u(&mut s) * 0.5,
                };
                let r0 = (2.0 - 2.0 * f.entropy + f.repeat).exp().max(1.0);
                let v0 = (20.0 - 3.0 * f.entropy).exp();
                Sample {
                    set: 0,
                    class: 3,
                    raw: 1 << 20,
                    features: f,
                    ratio: vec![r0, 2.0 * r0],
                    speed: vec![v0, v0 / 3.0],
                }
            })
            .collect()
    }

    #[test]
    fn fit_recovers_known_relations() {
        let train = synthetic(400, 1);
        // Nearly unpenalised: the regression itself must find the relations.
        let p = Predictor::fit_with(&train, 2, 1e-6).unwrap();
        let test = synthetic(200, 2);
        let refs: Vec<&Sample> = test.iter().collect();
        let acc = Accuracy::score(&p, &refs, false);
        assert!(acc.ratio_within_4pct > 0.98, "{acc:?}");
        assert!(acc.speed_within_10pct > 0.99, "{acc:?}");
        assert!(acc.ratio_median_error < 0.01 && acc.speed_median_error < 0.01, "{acc:?}");
        // The default penalty trades some of that for less extrapolation on unseen data.
        let d = Accuracy::score(&Predictor::fit(&train, 2).unwrap(), &refs, false);
        assert!(d.ratio_median_error < 0.1 && d.speed_median_error < 0.1, "{d:?}");
        assert!(Predictor::fit(&[], 2).is_err());
        assert!(Predictor::fit(&train, 3).is_err());
    }

    #[test]
    fn online_correction_follows_a_changed_machine() {
        let train = synthetic(300, 3);
        let p = Predictor::fit_with(&train, 2, 1e-6).unwrap();
        // The machine got 1.5x slower at both rungs after the profile.
        let mut later = synthetic(300, 4);
        for s in &mut later {
            s.speed.iter_mut().for_each(|v| *v /= 1.5);
        }
        let refs: Vec<&Sample> = later.iter().collect();
        let off = Accuracy::score(&p, &refs, false);
        let on = Accuracy::score(&p, &refs, true);
        assert!(off.speed_within_10pct < 0.05, "{off:?}");
        assert!(on.speed_within_10pct > 0.9, "{on:?}");
    }

    #[test]
    fn inverse_is_an_inverse() {
        let mut a = [[0f64; DIM]; DIM];
        for i in 0..DIM {
            for j in 0..DIM {
                a[i][j] = if i == j { 4.0 } else { 1.0 / (1.0 + (i + j) as f64) };
            }
        }
        let inv = invert(a);
        for i in 0..DIM {
            for j in 0..DIM {
                let v: f64 = (0..DIM).map(|k| a[i][k] * inv[k][j]).sum();
                assert!((v - f64::from(u8::from(i == j))).abs() < 1e-9);
            }
        }
    }
}
