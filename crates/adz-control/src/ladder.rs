//! The ladder of codecs and levels the controller moves along, and the reference performance
//! that shapes its first guesses.

use adz_format::{CodecId, CodecSpec};

use crate::error::{Error, Result};
use crate::priors::Priors;

/// The LZ4 accelerations on the standard ladder, fastest first.
///
/// Speed grows roughly with `acceleration^0.28`, so neighbouring accelerations above ~20 differ
/// by less than the noise of one measurement; this subset of 1..=50 keeps each step at about
/// 8-12 % of speed, like the zstd levels below it.
const LZ4_ACCELERATIONS: [i32; 11] = [50, 36, 25, 18, 12, 8, 6, 4, 3, 2, 1];

/// The negative zstd levels on the standard ladder. Levels -4..=-1 sit between LZ4 acceleration
/// 1 and zstd 1 in both speed and ratio (zstd's own benchmark: --fast=4 710 MB/s ratio 2.15,
/// --fast=1 600 MB/s 2.44, against LZ4 740 MB/s 2.10 and zstd 1 530 MB/s 2.89); faster negative
/// levels overlap LZ4's range with slower decompression, so they are left out.
const ZSTD_FAST_LEVELS: [i32; 4] = [-4, -3, -2, -1];

/// True if `spec` codes what its match finder leaves with an entropy coder: zstd at levels 1
/// and up (Huffman literals, FSE sequences) and xz. LZ4, LZ4HC and zstd's negative levels store
/// literals as they are, so on data without repeats (integer and float pixels, quantised
/// fields) they save nothing where zstd:1 saves a third: their failure says nothing about
/// the entropy rungs (decision 0020).
pub fn entropy_coded(spec: CodecSpec) -> bool {
    match spec.id() {
        CodecId::Zstd => spec.param() >= 1,
        CodecId::Xz => true,
        _ => false,
    }
}

/// An ordered list of codec settings: index 0 is raw ([`CodecSpec::NONE`]), each next rung
/// spends more effort (slower, better ratio), the last is the slowest.
///
/// The order is a preference, not a promise: on real data some rungs are slower than the rung
/// after them (xz:0 is faster than zstd:19 on most inputs). The controller never assumes speeds
/// from the order; it predicts them (see the crate docs) and, among the rungs fast enough,
/// picks the one furthest down the ladder.
#[derive(Debug, Clone, PartialEq)]
pub struct Ladder {
    rungs: Vec<CodecSpec>,
    /// What each rung is expected to cost and save before the data is measured.
    priors: Priors,
}

impl Ladder {
    /// raw, lz4 acceleration 50..=1 (11 rungs), zstd -4..=-1, zstd 1..=22, xz 0..=9: 48 rungs.
    pub fn standard() -> Ladder {
        let mut rungs = vec![CodecSpec::NONE];
        let spec = |id, p| CodecSpec::new(id, p).expect("standard ladder parameters are valid");
        rungs.extend(LZ4_ACCELERATIONS.iter().map(|&a| spec(CodecId::Lz4, a)));
        rungs.extend(ZSTD_FAST_LEVELS.iter().map(|&l| spec(CodecId::Zstd, l)));
        rungs.extend((1..=22).map(|l| spec(CodecId::Zstd, l)));
        rungs.extend((0..=9).map(|p| spec(CodecId::Xz, p)));
        Ladder { rungs, priors: Priors::builtin() }
    }

    /// The same rungs with other priors (measured on this machine: `adz profile`).
    pub fn with_priors(mut self, priors: Priors) -> Ladder {
        self.priors = priors;
        self
    }

    /// The priors: the built-in reference table unless [`Ladder::with_priors`] gave others.
    pub fn priors(&self) -> &Priors {
        &self.priors
    }

    /// The prior speed and ratio of `spec` (on this ladder or not).
    pub fn reference(&self, spec: CodecSpec) -> Reference {
        self.priors.get(spec)
    }

    /// The first rung with an entropy stage (see [`entropy_coded`]), if any.
    pub fn first_entropy_coded(&self) -> Option<usize> {
        self.rungs.iter().position(|&r| entropy_coded(r))
    }

    /// A ladder from its rungs: the first must be [`CodecSpec::NONE`], there must be at least
    /// one codec rung after it, and no rung may appear twice.
    pub fn new(rungs: Vec<CodecSpec>) -> Result<Ladder> {
        if rungs.first() != Some(&CodecSpec::NONE) {
            return Err(Error::Ladder("the first rung must be none (raw)".into()));
        }
        if rungs.len() < 2 {
            return Err(Error::Ladder("a ladder needs at least one codec rung after none".into()));
        }
        for (i, r) in rungs.iter().enumerate() {
            if rungs[..i].contains(r) {
                return Err(Error::Ladder(format!("rung {r} appears twice")));
            }
        }
        Ok(Ladder { rungs, priors: Priors::builtin() })
    }

    /// The rungs in order, raw first.
    pub fn rungs(&self) -> &[CodecSpec] {
        &self.rungs
    }

    /// The index of a rung, if it is on this ladder.
    pub fn position(&self, c: CodecSpec) -> Option<usize> {
        self.rungs.iter().position(|&r| r == c)
    }

    /// The number of rungs, raw included.
    pub fn len(&self) -> usize {
        self.rungs.len()
    }

    /// Always false: a ladder holds at least raw and one codec.
    pub fn is_empty(&self) -> bool {
        self.rungs.is_empty()
    }

    /// The rung at `index`.
    pub fn get(&self, index: usize) -> Option<CodecSpec> {
        self.rungs.get(index).copied()
    }

    /// The ladder rung closest to `spec` in prior speed (log scale), never raw: where a
    /// start setting from outside (a sampling predictor, a user) is not on this ladder.
    pub fn nearest(&self, spec: CodecSpec) -> usize {
        if let Some(i) = self.position(spec) {
            if i > 0 {
                return i;
            }
        }
        let want = self.reference(spec).speed.ln();
        let mut best = 1;
        let mut best_d = f64::INFINITY;
        for (i, &r) in self.rungs.iter().enumerate().skip(1) {
            let d = (self.reference(r).speed.ln() - want).abs();
            if d < best_d {
                best_d = d;
                best = i;
            }
        }
        best
    }
}

/// Typical single-thread performance of a codec setting on mixed text and binary data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reference {
    /// Compression speed of one thread, raw bytes per second.
    pub speed: f64,
    /// Compression ratio, raw size / compressed size (>= 1).
    pub ratio: f64,
}

/// Zstd levels 1..=22, single thread: compression time in relative units and ratio. The
/// thesis' table 5.1 (silesia.tar), except the times of levels 2-4: the thesis' zstd put its
/// big step (to the double-fast match finder) between levels 2 and 3, 2.3x, while libzstd 1.5
/// (what adz links) uses `fast` for 1-2, `dfast` for 3-4 and `greedy` from 5, so on 1 MiB
/// blocks of text and of Linux source level 2 takes 1.0-1.15x level 1's time, level 3
/// 1.1-1.25x level 2's, level 4 1.05x level 3's, and level 5 2.2-2.7x level 4's (`zstd -b1 -e7
/// -B1048576`, zstd 1.5.4). With the old step S1 predicted zstd:3 at half its real speed on
/// text and never tried it (`make demo`). From level 5 on the thesis' times already step as
/// libzstd 1.5 does.
const ZSTD_TIME: [f64; 22] = [
    0.097, 0.107, 0.125, 0.133, 0.357, 0.495, 0.642, 0.786, 0.934, 1.109, 1.168, 1.455, 1.467,
    1.956, 2.613, 2.703, 3.601, 4.112, 5.281, 5.901, 7.653, 9.760,
];
const ZSTD_RATIO: [f64; 22] = [
    2.87, 3.0, 3.12, 3.16, 3.22, 3.29, 3.33, 3.37, 3.38, 3.4, 3.41, 3.42, 3.42, 3.44, 3.46, 3.46,
    3.53, 3.55, 3.66, 3.67, 3.68, 3.68,
];
/// Zstd negative levels -1..=-7 (zstd's published silesia ratios for --fast=N).
const ZSTD_FAST_RATIO: [f64; 7] = [2.44, 2.34, 2.24, 2.15, 2.07, 2.0, 1.95];
/// xz presets 0..=9: MB/s of one thread and ratio. Presets 7-9 differ from 6 only in
/// dictionary size, which a 1 MiB block cannot use.
const XZ_SPEED_MB: [f64; 10] = [30.0, 25.0, 19.0, 14.0, 9.0, 7.0, 6.0, 5.8, 5.6, 5.5];
const XZ_RATIO: [f64; 10] = [3.45, 3.5, 3.55, 3.6, 3.7, 3.75, 3.8, 3.8, 3.81, 3.82];

/// The reference performance of a codec setting: the controller's prior.
///
/// Anchored at LZ4 acceleration 1 = 700 MB/s ratio 2.1 and zstd 1 = 450 MB/s ratio 2.87 for
/// one core of a current x86 server; the shape along each codec's range comes from the
/// thesis' silesia.tar measurements (zstd levels, xz presets) and zstd's published numbers
/// (negative levels). Only the *shape* matters much: the controller scales the whole table by
/// what it measures on the actual data and machine, and corrects each rung it has measured.
pub fn reference(spec: CodecSpec) -> Reference {
    const MB: f64 = 1e6;
    let p = spec.param();
    let (speed, ratio) = match spec.id() {
        CodecId::None => (10_000.0 * MB, 1.0),
        CodecId::Lz4 => {
            let a = f64::from(p.max(1));
            (700.0 * MB * a.powf(0.28), 1.0 + 1.1 * a.powf(-0.25))
        }
        CodecId::Lz4Hc => {
            let l = f64::from(p.clamp(1, 12));
            (110.0 * MB * (-0.25 * (l - 1.0)).exp(), 2.3 + 0.45 * (1.0 - (-(l - 1.0) / 3.0).exp()))
        }
        CodecId::Zstd => {
            // Level 0 means zstd's default, level 3.
            let l = if p == 0 { 3 } else { p };
            if l < 0 {
                let k = l.unsigned_abs().min(7) as usize;
                (450.0 * MB * (1.0 + 0.11 * k as f64), ZSTD_FAST_RATIO[k - 1])
            } else {
                let i = (l.min(22) - 1) as usize;
                (450.0 * MB * ZSTD_TIME[0] / ZSTD_TIME[i], ZSTD_RATIO[i])
            }
        }
        CodecId::Xz => {
            let i = p.clamp(0, 9) as usize;
            (XZ_SPEED_MB[i] * MB, XZ_RATIO[i])
        }
        // A codec added to the format later: a middling guess that measurements will correct.
        _ => (100.0 * MB, 2.0),
    };
    Reference { speed, ratio }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_ladder_shape() {
        let l = Ladder::standard();
        assert_eq!(l.len(), 48);
        assert_eq!(l.rungs()[0], CodecSpec::NONE);
        assert_eq!(l.rungs()[1].to_string(), "lz4:50");
        assert_eq!(l.rungs()[11].to_string(), "lz4:1");
        assert_eq!(l.rungs()[12].to_string(), "zstd:-4");
        assert_eq!(l.rungs()[16].to_string(), "zstd:1");
        assert_eq!(l.rungs()[37].to_string(), "zstd:22");
        assert_eq!(l.rungs()[38].to_string(), "xz:0");
        assert_eq!(l.rungs().last().unwrap().to_string(), "xz:9");
        assert_eq!(l.position("zstd:3".parse().unwrap()), Some(18));
        assert_eq!(l.position("lz4hc:9".parse().unwrap()), None);
        assert!(!l.is_empty());
    }

    #[test]
    fn reference_is_monotone_within_lz4_and_fast_zstd() {
        let l = Ladder::standard();
        // raw .. zstd:1: speed falls and ratio rises at every step.
        for w in l.rungs()[1..=16].windows(2) {
            let (a, b) = (reference(w[0]), reference(w[1]));
            assert!(a.speed > b.speed && a.ratio < b.ratio, "{} -> {}", w[0], w[1]);
        }
    }

    #[test]
    fn nearest_maps_off_ladder_specs() {
        let l = Ladder::standard();
        let i = l.nearest("lz4hc:9".parse().unwrap());
        assert!(i > 16, "lz4hc:9 is slower than zstd:1, got {}", l.rungs()[i]);
        assert_eq!(l.nearest(CodecSpec::NONE), 1);
        assert_eq!(l.nearest("zstd:3".parse().unwrap()), 18);
    }

    #[test]
    fn ladder_new_validates() {
        let z1: CodecSpec = "zstd:1".parse().unwrap();
        assert!(Ladder::new(vec![CodecSpec::NONE, z1]).is_ok());
        assert!(Ladder::new(vec![z1]).is_err());
        assert!(Ladder::new(vec![CodecSpec::NONE]).is_err());
        assert!(Ladder::new(vec![CodecSpec::NONE, z1, z1]).is_err());
    }
}
