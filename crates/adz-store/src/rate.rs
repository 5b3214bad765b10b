//! Link speeds: parsing `"117MB/s"`, `"10GbE"` or `"40Gbit/s"` into bytes per second.
//!
//! ```
//! use adz_store::rate::{parse_rate, LinkSpeed};
//!
//! assert_eq!(parse_rate("10GbE")?, 1200e6);
//! assert_eq!(parse_rate("2.5 GB/s")?, 2.5e9);
//! assert_eq!(parse_rate("8Mbit/s")?, 1e6);
//! assert_eq!(parse_rate("1MiB/s")?, 1048576.0);
//! assert_eq!(LinkSpeed::INFINIBAND_FDR4.to_string(), "6000 MB/s");
//! # Ok::<(), adz_store::rate::ParseRateError>(())
//! ```
//!
//! Decimal prefixes are powers of 1000 (`MB` is 10^6 bytes), binary ones powers of 1024
//! (`MiB`). A unit in bits is written `bit` (`Mbit/s`); the ambiguous `Mb/s` is refused.

use std::fmt;
use std::str::FromStr;

/// The speed of a (virtual) network link, in bytes per second.
///
/// The named links are the ones of the virtual network that adaptive compression was evaluated
/// on: the usable payload rate of the link, not its signalling rate.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct LinkSpeed {
    bytes_per_sec: f64,
}

/// A named link: the names [`LinkSpeed::from_str`] accepts, lower-cased, and their speeds.
const NAMED_LINKS: &[(&str, LinkSpeed)] = &[
    ("1gbe", LinkSpeed::GIGABIT_ETHERNET),
    ("10gbe", LinkSpeed::TEN_GIGABIT_ETHERNET),
    ("ib-fdr4", LinkSpeed::INFINIBAND_FDR4),
];

impl LinkSpeed {
    /// Gigabit Ethernet, `"1GbE"`: 117 MB/s, what TCP carries over a 125 MB/s wire.
    pub const GIGABIT_ETHERNET: LinkSpeed = LinkSpeed { bytes_per_sec: 117e6 };
    /// 10 Gigabit Ethernet, `"10GbE"`: 1200 MB/s.
    pub const TEN_GIGABIT_ETHERNET: LinkSpeed = LinkSpeed { bytes_per_sec: 1200e6 };
    /// InfiniBand FDR 4x, `"ib-fdr4"`: 6000 MB/s.
    pub const INFINIBAND_FDR4: LinkSpeed = LinkSpeed { bytes_per_sec: 6000e6 };

    /// A link of `bytes_per_sec`, which must be finite and positive.
    pub fn new(bytes_per_sec: f64) -> Result<LinkSpeed, ParseRateError> {
        if bytes_per_sec.is_finite() && bytes_per_sec > 0.0 {
            Ok(LinkSpeed { bytes_per_sec })
        } else {
            Err(ParseRateError {
                input: bytes_per_sec.to_string(),
                reason: "a rate must be a finite number greater than zero",
            })
        }
    }

    /// The speed in bytes per second.
    pub fn bytes_per_sec(self) -> f64 {
        self.bytes_per_sec
    }
}

/// Formats as `"{n} MB/s"` (decimal megabytes), which parses back to the same speed.
impl fmt::Display for LinkSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} MB/s", self.bytes_per_sec / 1e6)
    }
}

impl FromStr for LinkSpeed {
    type Err = ParseRateError;

    fn from_str(input: &str) -> Result<LinkSpeed, ParseRateError> {
        let error = |reason| ParseRateError { input: input.to_owned(), reason };
        let s = input.trim();
        let lower = s.to_ascii_lowercase();
        if let Some(&(_, speed)) = NAMED_LINKS.iter().find(|(name, _)| *name == lower) {
            return Ok(speed);
        }

        let number_end =
            s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(s.len());
        let (number, unit) = s.split_at(number_end);
        if number.is_empty() {
            return Err(error(
                "expected a number, e.g. \"117MB/s\", or a link: 1GbE, 10GbE, ib-fdr4",
            ));
        }
        let value: f64 = number.replace('_', "").parse().map_err(|_| error("not a number"))?;
        let unit = unit.trim_start();
        let Some(unit) = unit.strip_suffix("/s") else {
            return Err(error("expected a unit per second, e.g. MB/s, GiB/s or Gbit/s"));
        };
        let multiplier = unit_multiplier(unit).map_err(error)?;
        LinkSpeed::new(value * multiplier).map_err(|e| error(e.reason))
    }
}

/// Bytes per second in one `unit` per second, with the `/s` stripped.
fn unit_multiplier(unit: &str) -> Result<f64, &'static str> {
    const UNKNOWN: &str = "unknown unit; use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB or kbit, Mbit, Gbit, Tbit, per second";
    let (prefix, base) = if let Some(prefix) = unit.strip_suffix("bit") {
        (prefix, 1.0 / 8.0)
    } else if let Some(prefix) = unit.strip_suffix('B') {
        (prefix, 1.0)
    } else if unit.ends_with('b') {
        return Err("ambiguous unit: write bytes as B (MB/s) and bits as bit (Mbit/s)");
    } else {
        return Err(UNKNOWN);
    };
    let scale = match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(UNKNOWN),
    };
    Ok(scale * base)
}

/// Parses a link speed into bytes per second: a named link (`"1GbE"`, `"10GbE"`,
/// `"ib-fdr4"`, any case) or a number and a unit per second (`"117MB/s"`, `"1.5 GiB/s"`,
/// `"40Gbit/s"`).
pub fn parse_rate(input: &str) -> Result<f64, ParseRateError> {
    input.parse::<LinkSpeed>().map(LinkSpeed::bytes_per_sec)
}

/// Why a string is not a link speed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseRateError {
    input: String,
    reason: &'static str,
}

impl fmt::Display for ParseRateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid link speed {:?}: {}", self.input, self.reason)
    }
}

impl std::error::Error for ParseRateError {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn named_links() {
        assert_eq!(parse_rate("1GbE"), Ok(117e6));
        assert_eq!(parse_rate(" 10gbe "), Ok(1200e6));
        assert_eq!(parse_rate("IB-FDR4"), Ok(6000e6));
    }

    #[test]
    fn units() {
        for (input, expected) in [
            ("117MB/s", 117e6),
            ("117 MB/s", 117e6),
            ("0.5GB/s", 0.5e9),
            ("1_000B/s", 1000.0),
            ("10kB/s", 1e4),
            ("10KB/s", 1e4),
            ("1TB/s", 1e12),
            ("100MiB/s", 100.0 * 1048576.0),
            ("1GiB/s", 1073741824.0),
            ("2KiB/s", 2048.0),
            ("8Mbit/s", 1e6),
            ("10Gbit/s", 1.25e9),
            ("56Gbit/s", 7e9),
            ("8bit/s", 1.0),
        ] {
            assert_eq!(parse_rate(input), Ok(expected), "{input}");
        }
    }

    #[test]
    fn junk_is_refused_with_a_reason() {
        for (input, why) in [
            ("", "expected a number"),
            ("fast", "expected a number"),
            ("117", "per second"),
            ("117MB", "per second"),
            ("117Mb/s", "ambiguous"),
            ("117XB/s", "unknown unit"),
            ("117 furlongs/s", "unknown unit"),
            ("1.2.3MB/s", "not a number"),
            ("0MB/s", "greater than zero"),
            ("-5MB/s", "expected a number"),
            ("2GbE", "per second"),
        ] {
            let err = parse_rate(input).expect_err(input);
            let msg = err.to_string();
            assert!(msg.contains(why), "{input:?}: {msg:?} should mention {why:?}");
            assert!(msg.contains(&format!("{input:?}")), "{msg:?} should quote the input");
        }
        assert!(LinkSpeed::new(f64::INFINITY).is_err());
        assert!(LinkSpeed::new(f64::NAN).is_err());
    }

    proptest! {
        #[test]
        fn display_parses_back(bytes_per_sec in 1.0f64..1e13) {
            let speed = LinkSpeed::new(bytes_per_sec).unwrap();
            let parsed: LinkSpeed = speed.to_string().parse().unwrap();
            let relative = (parsed.bytes_per_sec() - bytes_per_sec).abs() / bytes_per_sec;
            prop_assert!(relative < 1e-12, "{speed} parsed as {parsed}");
        }
    }
}
