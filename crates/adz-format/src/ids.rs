//! The stable codec and filter id tables (docs/FORMAT.md, "Codec ids" and "Filter ids").
//!
//! These numbers are written to disk. They are listed here once, never renumbered, never reused.

use std::fmt;

/// A codec id as stored in a frame header (one byte).
///
/// Only the ids this version knows are variants; any other byte is rejected by
/// [`CodecId::from_u8`] so a reader can report it as unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
#[repr(u8)]
pub enum CodecId {
    /// No compression: the payload is the (filtered) raw data.
    None = 0,
    /// LZ4 block format; parameter = acceleration 1..=65537.
    Lz4 = 1,
    /// LZ4 high-compression, LZ4 block format; parameter = level 1..=12.
    Lz4Hc = 2,
    /// One zstd frame; parameter = level -7..=22.
    Zstd = 3,
    /// One .xz stream without integrity check; parameter = preset 0..=9.
    Xz = 4,
}

impl CodecId {
    /// Every codec id this version knows, in table order.
    pub const ALL: [CodecId; 5] =
        [CodecId::None, CodecId::Lz4, CodecId::Lz4Hc, CodecId::Zstd, CodecId::Xz];

    /// The id for a stored byte, or `None` if this version does not know it.
    pub fn from_u8(v: u8) -> Option<CodecId> {
        Self::ALL.into_iter().find(|c| *c as u8 == v)
    }

    /// The byte stored on disk.
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// The codec's name as used on the command line (`zstd`, `lz4`, ...).
    pub fn name(self) -> &'static str {
        match self {
            CodecId::None => "none",
            CodecId::Lz4 => "lz4",
            CodecId::Lz4Hc => "lz4hc",
            CodecId::Zstd => "zstd",
            CodecId::Xz => "xz",
        }
    }

    /// Look a codec up by its command-line name.
    pub fn from_name(name: &str) -> Option<CodecId> {
        Self::ALL.into_iter().find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// The valid range of the codec parameter (level, acceleration or preset).
    pub fn param_range(self) -> std::ops::RangeInclusive<i32> {
        match self {
            CodecId::None => 0..=0,
            CodecId::Lz4 => 1..=65537,
            CodecId::Lz4Hc => 1..=12,
            CodecId::Zstd => -7..=22,
            CodecId::Xz => 0..=9,
        }
    }
}

impl fmt::Display for CodecId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A filter id as stored in a frame's filter slot (one byte). Id 0 marks an empty slot and has
/// no variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
#[repr(u8)]
pub enum FilterId {
    /// Byte transposition of `param`-byte elements, as in Blosc.
    Shuffle = 1,
    /// Differences of consecutive `param`-byte little-endian integers, wrapping (format 1.1).
    Delta = 2,
    /// XOR of consecutive `param`-byte words, for floating-point data (format 1.1).
    Xor = 3,
    /// Bit transposition of `param`-byte elements into bit planes, as in Bitshuffle (format
    /// 1.2).
    Bitshuffle = 4,
}

impl FilterId {
    /// Every filter id this version knows.
    pub const ALL: [FilterId; 4] =
        [FilterId::Shuffle, FilterId::Delta, FilterId::Xor, FilterId::Bitshuffle];

    /// The id for a stored byte, or `None` if this version does not know it (0 is not a filter).
    pub fn from_u8(v: u8) -> Option<FilterId> {
        Self::ALL.into_iter().find(|c| *c as u8 == v)
    }

    /// The byte stored on disk.
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// The filter's name as used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FilterId::Shuffle => "shuffle",
            FilterId::Delta => "delta",
            FilterId::Xor => "xor",
            FilterId::Bitshuffle => "bitshuffle",
        }
    }

    /// Look a filter up by its command-line name.
    pub fn from_name(name: &str) -> Option<FilterId> {
        Self::ALL.into_iter().find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// The smallest and largest filter parameter. Not every value between is valid for every
    /// filter: see [`param_valid`](Self::param_valid).
    pub fn param_range(self) -> std::ops::RangeInclusive<u8> {
        match self {
            FilterId::Shuffle | FilterId::Bitshuffle => 1..=255,
            FilterId::Delta | FilterId::Xor => 1..=8,
        }
    }

    /// Whether `param` is a valid parameter: shuffle and bitshuffle take any element size
    /// 1..=255; delta and xor take a word size of 1, 2, 4 or 8 bytes.
    pub fn param_valid(self, param: u8) -> bool {
        match self {
            FilterId::Shuffle | FilterId::Bitshuffle => param >= 1,
            FilterId::Delta | FilterId::Xor => matches!(param, 1 | 2 | 4 | 8),
        }
    }

    /// The valid parameters in words, for error messages.
    pub fn param_help(self) -> &'static str {
        match self {
            FilterId::Shuffle | FilterId::Bitshuffle => "an element size 1..=255",
            FilterId::Delta | FilterId::Xor => "a word size of 1, 2, 4 or 8 bytes",
        }
    }

    /// The format minor version that introduced the filter: a reader of a lower minor version
    /// reports frames that use it as "unknown filter".
    pub fn since_minor(self) -> u8 {
        match self {
            FilterId::Shuffle => 0,
            FilterId::Delta | FilterId::Xor => 1,
            FilterId::Bitshuffle => 2,
        }
    }
}

impl fmt::Display for FilterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers are on disk: this test is the tripwire against renumbering.
    #[test]
    fn ids_are_stable() {
        assert_eq!(CodecId::None.as_u8(), 0);
        assert_eq!(CodecId::Lz4.as_u8(), 1);
        assert_eq!(CodecId::Lz4Hc.as_u8(), 2);
        assert_eq!(CodecId::Zstd.as_u8(), 3);
        assert_eq!(CodecId::Xz.as_u8(), 4);
        assert_eq!(FilterId::Shuffle.as_u8(), 1);
        assert_eq!(FilterId::Delta.as_u8(), 2);
        assert_eq!(FilterId::Xor.as_u8(), 3);
        assert_eq!(FilterId::Bitshuffle.as_u8(), 4);
        assert_eq!(FilterId::from_u8(0), None);
        for v in 5..=255u8 {
            assert_eq!(FilterId::from_u8(v), None, "filter id {v} must be unknown in 1.2");
        }
        for v in 5..=255u8 {
            assert_eq!(CodecId::from_u8(v), None, "id {v} must be unknown in 1.2");
        }
    }

    #[test]
    fn names_round_trip() {
        for c in CodecId::ALL {
            assert_eq!(CodecId::from_name(c.name()), Some(c));
            assert_eq!(CodecId::from_u8(c.as_u8()), Some(c));
        }
        assert_eq!(FilterId::from_name("SHUFFLE"), Some(FilterId::Shuffle));
        assert_eq!(FilterId::from_name("bitshuffle"), Some(FilterId::Bitshuffle));
        for f in FilterId::ALL {
            assert_eq!(FilterId::from_name(f.name()), Some(f));
            assert_eq!(FilterId::from_u8(f.as_u8()), Some(f));
        }
        assert_eq!(CodecId::from_name("gzip"), None);
    }

    /// Each filter's version is the one the table in docs/FORMAT.md gives it, and no later
    /// than the version this crate writes.
    #[test]
    fn filters_since_their_minor_version() {
        let since: Vec<(FilterId, u8)> =
            FilterId::ALL.iter().map(|f| (*f, f.since_minor())).collect();
        assert_eq!(
            since,
            [
                (FilterId::Shuffle, 0),
                (FilterId::Delta, 1),
                (FilterId::Xor, 1),
                (FilterId::Bitshuffle, 2)
            ]
        );
        assert!(since.iter().all(|(_, v)| *v <= crate::VERSION_MINOR));
    }
}
