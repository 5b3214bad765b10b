//! What the controller aims for ([`Strategy`]) and how fast the link is ([`Link`]).

use std::fmt;
use std::str::FromStr;

use adz_format::CodecSpec;

use crate::error::Error;

/// The forms [`Strategy::from_str`] accepts, for error messages.
const STRATEGY_FORMS: &str = "throughput (s1), keep-pace (s2), prolong=F (s3=F, F >= 1, e.g. \
                              prolong=1.5), archive, static=CODEC:LEVEL (e.g. static=zstd:3)";

/// What the controller optimises (thesis section 3.2.3).
///
/// The *target* is the raw-data speed the compressors, all threads together, should reach:
///
/// | strategy | target | effect |
/// |---|---|---|
/// | `throughput` (S1) | link x ratio (the effective link speed) | the write finishes as early as possible |
/// | `keep-pace` (S2) | link | the write takes as long as without compression; best ratio in that time |
/// | `prolong=F` (S3) | link / F | the write takes F times as long as without compression |
/// | `archive` | none | best ratio (the last rung), whatever it costs |
/// | `static=C:L` | none | always `C:L` |
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Strategy {
    /// S1: keep the compressors exactly as fast as the effective link (link x ratio).
    Throughput,
    /// S2: keep the compressors exactly as fast as the link.
    KeepPace,
    /// S3: keep the compressors at link / F, so a write takes F times as long (F >= 1).
    Prolong(f64),
    /// The best ratio: the ladder's last rung, with no speed target.
    Archive,
    /// Always this codec and level (blocks it cannot shrink are still stored raw).
    Static(CodecSpec),
}

impl Strategy {
    /// True for the strategies that adapt to a speed target (S1, S2, S3).
    pub fn is_adaptive(self) -> bool {
        matches!(self, Strategy::Throughput | Strategy::KeepPace | Strategy::Prolong(_))
    }

    /// How many times the raw write's time S2 (1) and S3 (F) give a write; None for the
    /// others (S1 minimises the time, archive and static have no target). An F that is not
    /// a number of at least 1 counts as 1.
    pub fn slowdown(self) -> Option<f64> {
        match self {
            Strategy::KeepPace => Some(1.0),
            Strategy::Prolong(f) => Some(if f.is_finite() { f.max(1.0) } else { 1.0 }),
            _ => None,
        }
    }

    /// The aggregate compression speed (raw bytes/s) the strategy aims at through a link of
    /// `link` bytes/s, for data of ratio `ratio`: S1 `link x ratio`, S2 `link`, S3 `link / F`;
    /// 0 for archive and static (any speed will do). The one definition the controller, the
    /// predictor and the tests use.
    pub fn target_speed(self, link: f64, ratio: f64) -> f64 {
        match self {
            Strategy::Throughput => link * ratio.max(1.0),
            s => s.slowdown().map_or(0.0, |f| link / f),
        }
    }

    /// The time S2 and S3 give a write whose raw bytes take `raw_time` through the link: `raw_time`
    /// and `F x raw_time`; None for the others.
    pub fn target_time(self, raw_time: f64) -> Option<f64> {
        self.slowdown().map(|f| raw_time * f)
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Throughput => f.write_str("throughput"),
            Strategy::KeepPace => f.write_str("keep-pace"),
            Strategy::Prolong(x) => write!(f, "prolong={x}"),
            Strategy::Archive => f.write_str("archive"),
            Strategy::Static(c) => write!(f, "static={c}"),
        }
    }
}

impl FromStr for Strategy {
    type Err = Error;

    /// `throughput` | `s1` | `keep-pace` | `s2` | `prolong=F` | `s3=F` | `archive` |
    /// `static=CODEC:LEVEL`, case-insensitive.
    fn from_str(input: &str) -> Result<Strategy, Error> {
        let bad =
            |reason: String| Error::Parse { what: "strategy", input: input.to_owned(), reason };
        let s = input.trim().to_ascii_lowercase();
        let (name, arg) = match s.split_once('=') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (s.as_str(), None),
        };
        let no_arg = |st: Strategy| match arg {
            None => Ok(st),
            Some(_) => {
                Err(bad(format!("{name} takes no argument; expected one of {STRATEGY_FORMS}")))
            }
        };
        match name {
            "throughput" | "s1" => no_arg(Strategy::Throughput),
            "keep-pace" | "s2" => no_arg(Strategy::KeepPace),
            "archive" => no_arg(Strategy::Archive),
            "prolong" | "s3" => {
                let a = arg.ok_or_else(|| {
                    bad(format!(
                        "{name} needs a factor, e.g. {name}=1.5; expected one of {STRATEGY_FORMS}"
                    ))
                })?;
                let f: f64 =
                    a.parse().map_err(|_| bad(format!("the factor {a:?} is not a number")))?;
                if !(f.is_finite() && f >= 1.0) {
                    return Err(bad(format!(
                        "the factor must be a finite number >= 1 (1 = keep-pace), got {a}"
                    )));
                }
                Ok(Strategy::Prolong(f))
            }
            "static" => {
                let a = arg.ok_or_else(|| {
                    bad(format!("static needs a codec, e.g. static=zstd:3; expected one of {STRATEGY_FORMS}"))
                })?;
                let c: CodecSpec = a.parse().map_err(|e| bad(format!("{e}")))?;
                Ok(Strategy::Static(c))
            }
            _ => Err(bad(format!("unknown strategy; expected one of {STRATEGY_FORMS}"))),
        }
    }
}

/// How fast the link to storage is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Link {
    /// Measured from the sink's back-pressure ([`crate::SinkMeasurement`]).
    Auto,
    /// Given, in bytes per second (e.g. 117e6 for `1GbE`).
    Fixed(f64),
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Link::Auto => f.write_str("auto"),
            Link::Fixed(b) => write!(f, "{} MB/s", b / 1e6),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let z3: CodecSpec = "zstd:3".parse().unwrap();
        for (s, want) in [
            ("throughput", Strategy::Throughput),
            ("S1", Strategy::Throughput),
            ("keep-pace", Strategy::KeepPace),
            ("s2", Strategy::KeepPace),
            ("prolong=1.5", Strategy::Prolong(1.5)),
            ("s3=2", Strategy::Prolong(2.0)),
            ("archive", Strategy::Archive),
            ("static=zstd:3", Strategy::Static(z3)),
            (" Static = ZSTD:3 ", Strategy::Static(z3)),
        ] {
            assert_eq!(s.parse::<Strategy>().unwrap(), want, "{s}");
        }
    }

    #[test]
    fn rejects_junk_with_the_forms() {
        for s in [
            "",
            "fast",
            "prolong",
            "prolong=0.5",
            "prolong=x",
            "prolong=inf",
            "prolong=NaN",
            "static",
            "static=gzip",
            "static=zstd:99",
            "throughput=2",
            "s4",
        ] {
            let e = s.parse::<Strategy>().unwrap_err().to_string();
            assert!(e.contains(&format!("{s:?}")), "error should quote the input: {e}");
        }
        let e = "fast".parse::<Strategy>().unwrap_err().to_string();
        assert!(e.contains("keep-pace") && e.contains("static=zstd:3"), "{e}");
    }

    #[test]
    fn targets() {
        assert_eq!(Strategy::Throughput.target_speed(100.0, 3.0), 300.0);
        assert_eq!(Strategy::KeepPace.target_speed(100.0, 3.0), 100.0);
        assert_eq!(Strategy::Prolong(1.25).target_speed(100.0, 3.0), 80.0);
        assert_eq!(Strategy::Archive.target_speed(100.0, 3.0), 0.0);
        assert_eq!(Strategy::Prolong(2.0).target_time(3.0), Some(6.0));
        assert_eq!(Strategy::Throughput.target_time(3.0), None);
    }

    #[test]
    fn display_round_trips() {
        for s in [
            Strategy::Throughput,
            Strategy::KeepPace,
            Strategy::Prolong(1.25),
            Strategy::Archive,
            Strategy::Static("xz:9".parse().unwrap()),
            Strategy::Static(CodecSpec::NONE),
        ] {
            assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
        }
    }
}
