//! What the controller aims for ([`Strategy`]) and how fast the link is ([`Link`]).

use std::fmt;
use std::str::FromStr;

use adz_format::CodecSpec;

use crate::error::Error;

/// The forms [`Strategy::from_str`] accepts, for error messages.
const STRATEGY_FORMS: &str = "throughput (s1), keep-pace (s2), prolong=F (s3=F, F >= 1, e.g. \
                              prolong=1.5), archive, static=CODEC:LEVEL (e.g. static=zstd:3), \
                              energy[=watts:W,storage:J,slowdown:F] (e.g. energy=watts:10)";

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
/// | `energy` | at least link / F | the least energy per byte: compression's plus storage's |
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
    /// The least predicted energy per raw byte, compression's CPU plus storing the bytes for
    /// the retention period, among the choices that keep the write within `max_slowdown`
    /// times the raw write's time (decision 0046).
    Energy(EnergyCost),
}

/// The energy strategy's prices: what a CPU second and a stored byte cost in joules, and how
/// much slower than the raw write it may make a write (decision 0046).
///
/// The defaults are the cost model's machines (`adz_core::cost::CostModel`, the thesis' DKRZ
/// figures), without cooling, which multiplies both sides alike: a 300 W compute node of 24
/// cores (12.5 W per busy core) and a 3000 W storage system per PB (94.6 kJ per GB-year),
/// for a retention of one year, and a write at most twice as long as the raw write.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct EnergyCost {
    /// Watts one busy core draws: joules per CPU second.
    pub core_watts: f64,
    /// Joules to keep one stored GB (1e9 bytes) for the retention period.
    pub storage_joules_per_gb: f64,
    /// The write may take at most this many times the raw write's time through the link
    /// (>= 1; infinity: no bound).
    pub max_slowdown: f64,
}

impl EnergyCost {
    /// 12.5 W per core: a 300 W node of 24 cores at full load (the cost model's compute node).
    pub const DEFAULT_CORE_WATTS: f64 = 12.5;
    /// Joules to store a GB for a year: the cost model's 3000 W storage system of 1 PB,
    /// `3000 W / 1e6 GB x 365 x 86400 s`.
    pub const DEFAULT_STORAGE_JOULES_PER_GB_YEAR: f64 = 3000.0 / 1e6 * 365.0 * 86400.0;
    /// At most twice the raw write's time.
    pub const DEFAULT_MAX_SLOWDOWN: f64 = 2.0;
    /// The defaults: 12.5 W per core, one year of storage at 94.6 kJ per GB-year, a slowdown of
    /// at most 2.
    pub const DEFAULT: EnergyCost = EnergyCost {
        core_watts: EnergyCost::DEFAULT_CORE_WATTS,
        storage_joules_per_gb: EnergyCost::DEFAULT_STORAGE_JOULES_PER_GB_YEAR,
        max_slowdown: EnergyCost::DEFAULT_MAX_SLOWDOWN,
    };

    /// Prices from the figures a user gives: watts per busy core, joules to store a GB for a
    /// year, the retention in years, and the most slowdown. Figures that are not finite and
    /// non-negative (a slowdown below 1) take their defaults.
    pub fn new(core_watts: f64, joules_per_gb_year: f64, years: f64, max_slowdown: f64) -> Self {
        let d = EnergyCost::DEFAULT;
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        EnergyCost {
            core_watts: if ok(core_watts) { core_watts } else { d.core_watts },
            storage_joules_per_gb: if ok(joules_per_gb_year) && ok(years) {
                joules_per_gb_year * years
            } else {
                d.storage_joules_per_gb
            },
            max_slowdown: if max_slowdown >= 1.0 { max_slowdown } else { d.max_slowdown },
        }
    }

    /// Predicted joules per raw byte of a choice that spends `cpu_per_byte` CPU seconds on
    /// each raw byte and stores `stored_per_byte` bytes of it.
    pub fn joules_per_byte(&self, cpu_per_byte: f64, stored_per_byte: f64) -> f64 {
        cpu_per_byte * self.core_watts + stored_per_byte * self.storage_joules_per_gb / 1e9
    }
}

impl Default for EnergyCost {
    fn default() -> Self {
        EnergyCost::DEFAULT
    }
}

impl Strategy {
    /// True for the strategies that adapt to a speed target (S1, S2, S3).
    pub fn is_adaptive(self) -> bool {
        matches!(
            self,
            Strategy::Throughput | Strategy::KeepPace | Strategy::Prolong(_) | Strategy::Energy(_)
        )
    }

    /// The energy strategy's prices (None for the others).
    pub fn energy(self) -> Option<EnergyCost> {
        match self {
            Strategy::Energy(c) => Some(c),
            _ => None,
        }
    }

    /// How many times the raw write's time S2 (1), S3 (F) and energy (its bound, if finite)
    /// give a write at most; None for the others (S1 minimises the time, archive and static
    /// have no target). An F that is not a number of at least 1 counts as 1.
    pub fn slowdown(self) -> Option<f64> {
        match self {
            Strategy::KeepPace => Some(1.0),
            Strategy::Prolong(f) => Some(if f.is_finite() { f.max(1.0) } else { 1.0 }),
            Strategy::Energy(c) if c.max_slowdown.is_finite() => Some(c.max_slowdown.max(1.0)),
            _ => None,
        }
    }

    /// The aggregate compression speed (raw bytes/s) the strategy aims at through a link of
    /// `link` bytes/s, for data of ratio `ratio`: S1 `link x ratio`, S2 `link`, S3 `link / F`;
    /// for energy the least speed within its bound, `link / F`; 0 for archive, static and an
    /// unbounded energy strategy (any speed will do). The one definition the controller, the
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
            Strategy::Energy(c) if *c == EnergyCost::DEFAULT => f.write_str("energy"),
            Strategy::Energy(c) => write!(
                f,
                "energy=watts:{},storage:{},slowdown:{}",
                c.core_watts, c.storage_joules_per_gb, c.max_slowdown
            ),
        }
    }
}

impl FromStr for Strategy {
    type Err = Error;

    /// `throughput` | `s1` | `keep-pace` | `s2` | `prolong=F` | `s3=F` | `archive` |
    /// `static=CODEC:LEVEL` | `energy[=KEY:VALUE,...]`, case-insensitive. The energy keys:
    /// `watts` (per busy core), `storage` (joules per stored GB over the retention) and
    /// `slowdown` (the bound, >= 1, or `inf`); those not given take their defaults.
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
            "energy" => {
                let mut c = EnergyCost::DEFAULT;
                for kv in arg.into_iter().flat_map(|a| a.split(',')) {
                    let (k, v) = kv.split_once(':').ok_or_else(|| {
                        bad(format!(
                            "energy takes KEY:VALUE pairs (watts, storage, slowdown), got {kv:?}"
                        ))
                    })?;
                    let (k, v) = (k.trim(), v.trim());
                    let x: f64 = v
                        .parse()
                        .map_err(|_| bad(format!("energy's {k} {v:?} is not a number")))?;
                    let field = match k {
                        "watts" => &mut c.core_watts,
                        "storage" => &mut c.storage_joules_per_gb,
                        "slowdown" => &mut c.max_slowdown,
                        _ => {
                            return Err(bad(format!(
                                "energy has no key {k:?}; expected watts, storage or slowdown"
                            )))
                        }
                    };
                    let valid = if k == "slowdown" { x >= 1.0 } else { x.is_finite() && x >= 0.0 };
                    if !valid {
                        return Err(bad(format!(
                            "energy's {k} must be {}, got {v}",
                            if k == "slowdown" {
                                "a number >= 1 or inf"
                            } else {
                                "a finite number >= 0"
                            }
                        )));
                    }
                    *field = x;
                }
                Ok(Strategy::Energy(c))
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
    fn energy_prices() {
        let d = EnergyCost::DEFAULT;
        assert!((d.storage_joules_per_gb - 94_608.0).abs() < 1e-6);
        // 1 CPU second per GB at 12.5 W plus half a GB stored for a year.
        let j = d.joules_per_byte(1e-9, 0.5) * 1e9;
        assert!((j - (12.5 + 47_304.0)).abs() < 1e-6, "{j}");
        let c = EnergyCost::new(20.0, 1000.0, 5.0, 1.5);
        assert_eq!((c.core_watts, c.storage_joules_per_gb, c.max_slowdown), (20.0, 5000.0, 1.5));
        assert_eq!(EnergyCost::new(f64::NAN, -1.0, 1.0, 0.5), d);
    }

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
            ("energy", Strategy::Energy(EnergyCost::DEFAULT)),
            (
                "energy=watts:10,slowdown:inf",
                Strategy::Energy(EnergyCost {
                    core_watts: 10.0,
                    max_slowdown: f64::INFINITY,
                    ..EnergyCost::DEFAULT
                }),
            ),
            (
                "Energy = storage:0",
                Strategy::Energy(EnergyCost { storage_joules_per_gb: 0.0, ..EnergyCost::DEFAULT }),
            ),
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
            "energy=watts",
            "energy=watts:-1",
            "energy=watts:x",
            "energy=storage:inf",
            "energy=slowdown:0.5",
            "energy=speed:2",
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
        let e = Strategy::Energy(EnergyCost::DEFAULT);
        assert_eq!(e.target_speed(100.0, 3.0), 50.0);
        assert_eq!(e.target_time(3.0), Some(6.0));
        let free = EnergyCost { max_slowdown: f64::INFINITY, ..EnergyCost::DEFAULT };
        assert_eq!(Strategy::Energy(free).target_speed(100.0, 3.0), 0.0);
        assert_eq!(Strategy::Energy(free).target_time(3.0), None);
        assert!(e.is_adaptive());
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
            Strategy::Energy(EnergyCost::DEFAULT),
            Strategy::Energy(EnergyCost::new(7.25, 1e5, 3.0, f64::INFINITY)),
        ] {
            assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
        }
    }
}
