//! The controller's priors: what each rung costs and saves before any block of the data is
//! measured, from the built-in reference table or from a profile of this machine.

use std::sync::Arc;

use adz_format::{CodecId, CodecSpec};

use crate::error::{Error, Result};
use crate::ladder::{reference, Reference};

/// Each rung's prior speed (one thread) and ratio.
///
/// [`Priors::builtin`] is the reference table ([`reference()`]), measured on other machines
/// and text-like data. [`Priors::measured`] takes rungs measured on this machine (`adz
/// profile`) and fills in the others from the reference table's shape, moved by the nearest
/// measured rungs of the same codec: a rung between two measured levels takes the
/// interpolated (log-scale) correction of both, one beyond them the nearest one's, and a
/// codec with no measured rung the mean correction of all. Only the shape matters much: the
/// controller scales the whole table by what it measures on the data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Priors {
    /// Measured rungs, sorted by codec and parameter; empty for the built-in table.
    points: Arc<Vec<Point>>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    spec: CodecSpec,
    measured: Reference,
    /// ln(measured speed / reference speed).
    speed: f64,
    /// llr(measured ratio) - llr(reference ratio): see [`llr`].
    ratio: f64,
}

/// ln(ln(ratio)): the model's coordinate for ratios ("bits saved" scale by a factor).
fn llr(ratio: f64) -> f64 {
    ratio.max(1.0 + 1e-3).ln().ln()
}

impl Priors {
    /// The built-in reference table.
    pub fn builtin() -> Priors {
        Priors::default()
    }

    /// Priors from rungs measured on this machine: one-thread speed in raw bytes/s and ratio
    /// (raw/stored) per rung. Raw ([`CodecSpec::NONE`]) may be given for its speed; its ratio
    /// is always 1. [`Error::Priors`] if a figure is not finite and positive, a ratio is below
    /// 1, or a rung appears twice.
    pub fn measured(rungs: impl IntoIterator<Item = (CodecSpec, Reference)>) -> Result<Priors> {
        let mut points: Vec<Point> = Vec::new();
        for (spec, m) in rungs {
            if !(m.speed.is_finite() && m.speed > 0.0 && m.ratio.is_finite() && m.ratio >= 1.0) {
                return Err(Error::Priors(format!(
                    "{spec}: speed {} B/s and ratio {} (need a positive speed and a ratio >= 1)",
                    m.speed, m.ratio
                )));
            }
            if points.iter().any(|p| p.spec == spec) {
                return Err(Error::Priors(format!("{spec} is given twice")));
            }
            let r = reference(spec);
            let ratio = if spec.id() == CodecId::None { 0.0 } else { llr(m.ratio) - llr(r.ratio) };
            points.push(Point { spec, measured: m, speed: (m.speed / r.speed).ln(), ratio });
        }
        points.sort_by_key(|p| (p.spec.id(), p.spec.param()));
        Ok(Priors { points: Arc::new(points) })
    }

    /// True for the built-in table (no measured rung).
    pub fn is_builtin(&self) -> bool {
        self.points.is_empty()
    }

    /// The rungs measured on this machine.
    pub fn measured_rungs(&self) -> impl Iterator<Item = CodecSpec> + '_ {
        self.points.iter().map(|p| p.spec)
    }

    /// The prior of `spec`.
    pub fn get(&self, spec: CodecSpec) -> Reference {
        let r = reference(spec);
        if self.points.is_empty() {
            return r;
        }
        if let Some(p) = self.points.iter().find(|p| p.spec == spec) {
            return if spec.id() == CodecId::None {
                Reference { speed: p.measured.speed, ratio: 1.0 }
            } else {
                p.measured
            };
        }
        let (speed, ratio) = self.correction(spec);
        let ratio = if spec.id() == CodecId::None || r.ratio <= 1.0 {
            r.ratio
        } else {
            (llr(r.ratio) + ratio).exp().exp()
        };
        Reference { speed: r.speed * speed.exp(), ratio }
    }

    /// The (ln speed, llr ratio) correction of a rung not measured.
    fn correction(&self, spec: CodecSpec) -> (f64, f64) {
        let same: Vec<&Point> = self
            .points
            .iter()
            .filter(|p| p.spec.id() == spec.id() && p.spec.id() != CodecId::None)
            .collect();
        let codecs: Vec<&Point> =
            self.points.iter().filter(|p| p.spec.id() != CodecId::None).collect();
        let mean = |ps: &[&Point]| {
            if ps.is_empty() {
                // Only raw measured: its speed says how fast the machine moves bytes, not
                // how fast it compresses.
                return (0.0, 0.0);
            }
            let n = ps.len() as f64;
            (
                ps.iter().map(|p| p.speed).sum::<f64>() / n,
                ps.iter().map(|p| p.ratio).sum::<f64>() / n,
            )
        };
        if same.is_empty() {
            return mean(&codecs);
        }
        let at = spec.param();
        let below = same.iter().rev().find(|p| p.spec.param() < at);
        let above = same.iter().find(|p| p.spec.param() > at);
        match (below, above) {
            (Some(a), Some(b)) => {
                let t = f64::from(at - a.spec.param()) / f64::from(b.spec.param() - a.spec.param());
                (a.speed + t * (b.speed - a.speed), a.ratio + t * (b.ratio - a.ratio))
            }
            (Some(p), None) | (None, Some(p)) => (p.speed, p.ratio),
            (None, None) => mean(&same),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> CodecSpec {
        s.parse().unwrap()
    }

    fn at(speed: f64, ratio: f64) -> Reference {
        Reference { speed, ratio }
    }

    #[test]
    fn builtin_is_the_reference_table() {
        let p = Priors::builtin();
        assert!(p.is_builtin());
        for s in ["none", "lz4:4", "zstd:-2", "zstd:3", "zstd:19", "xz:6"] {
            assert_eq!(p.get(spec(s)), reference(spec(s)));
        }
    }

    #[test]
    fn measured_rungs_are_returned_as_measured() {
        let p = Priors::measured([
            (spec("zstd:1"), at(300e6, 2.5)),
            (spec("zstd:3"), at(200e6, 2.7)),
            (CodecSpec::NONE, at(5e9, 1.3)),
        ])
        .unwrap();
        assert_eq!(p.get(spec("zstd:1")), at(300e6, 2.5));
        assert_eq!(p.get(spec("zstd:3")), at(200e6, 2.7));
        // Raw never compresses, whatever was given.
        assert_eq!(p.get(CodecSpec::NONE), at(5e9, 1.0));
        assert_eq!(p.measured_rungs().count(), 3);
    }

    #[test]
    fn levels_between_measured_ones_follow_both_and_keep_the_reference_shape() {
        let (r1, r3) = (reference(spec("zstd:1")), reference(spec("zstd:3")));
        // zstd:1 measured at half the reference speed, zstd:3 at the reference's.
        let p = Priors::measured([
            (spec("zstd:1"), at(r1.speed / 2.0, r1.ratio)),
            (spec("zstd:3"), at(r3.speed, r3.ratio)),
        ])
        .unwrap();
        let r2 = reference(spec("zstd:2"));
        let got = p.get(spec("zstd:2")).speed / r2.speed;
        assert!((got - 0.5f64.sqrt()).abs() < 1e-9, "halfway in log scale: {got}");
        // Beyond the measured levels: the nearest one's correction.
        let r9 = reference(spec("zstd:9"));
        assert!((p.get(spec("zstd:9")).speed - r9.speed).abs() < 1e-3);
        assert!(
            (p.get(spec("zstd:-3")).speed / reference(spec("zstd:-3")).speed - 0.5).abs() < 1e-9
        );
        // Ratios keep their order along the codec.
        assert!(p.get(spec("zstd:9")).ratio > p.get(spec("zstd:3")).ratio);
    }

    #[test]
    fn a_codec_never_measured_takes_the_mean_correction() {
        let z1 = reference(spec("zstd:1"));
        let p = Priors::measured([(spec("zstd:1"), at(z1.speed * 2.0, z1.ratio))]).unwrap();
        let l = spec("lz4:4");
        assert!((p.get(l).speed / reference(l).speed - 2.0).abs() < 1e-9);
        assert!((p.get(l).ratio - reference(l).ratio).abs() < 1e-9);
    }

    #[test]
    fn a_lower_measured_ratio_lowers_the_codec_s_unmeasured_levels() {
        let z3 = reference(spec("zstd:3"));
        let p = Priors::measured([(spec("zstd:3"), at(z3.speed, 1.5))]).unwrap();
        let r = p.get(spec("zstd:6")).ratio;
        assert!(r > 1.5 && r < reference(spec("zstd:6")).ratio, "{r}");
    }

    #[test]
    fn bad_figures_are_refused() {
        for bad in [at(0.0, 2.0), at(f64::NAN, 2.0), at(1e6, 0.9), at(1e6, f64::INFINITY)] {
            let e = Priors::measured([(spec("zstd:1"), bad)]).unwrap_err();
            assert!(matches!(e, Error::Priors(_)), "{e}");
        }
        let twice = [(spec("lz4:1"), at(1e8, 2.0)), (spec("lz4:1"), at(1e8, 2.0))];
        assert!(Priors::measured(twice).unwrap_err().to_string().contains("twice"));
    }
}
