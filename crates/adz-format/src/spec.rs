//! What a frame says about how it was encoded: a codec with its parameter, and up to four
//! filters. These are the values of the frame header's `codec_id`, `codec_param` and filter
//! slots, with their textual forms (`zstd:3`, `shuffle:8`) for command lines and reports.

use std::fmt;
use std::str::FromStr;

use crate::ids::{CodecId, FilterId};
use crate::{Error, Result};

/// `Error::InvalidParam` naming `what` unless `param` is in `range`.
fn check_param<T: Copy + PartialOrd + Into<i64>>(
    what: &'static str,
    param: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<()> {
    if range.contains(&param) {
        return Ok(());
    }
    Err(Error::InvalidParam {
        what,
        value: param.into(),
        min: (*range.start()).into(),
        max: (*range.end()).into(),
    })
}

/// A codec and its parameter (level, acceleration or preset), validated against the codec
/// table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodecSpec {
    id: CodecId,
    param: i32,
}

impl CodecSpec {
    /// No compression.
    pub const NONE: CodecSpec = CodecSpec { id: CodecId::None, param: 0 };

    /// A codec with a parameter in its valid range.
    pub fn new(id: CodecId, param: i32) -> Result<CodecSpec> {
        check_param(id.name(), param, id.param_range())?;
        Ok(CodecSpec { id, param })
    }

    /// The codec with its default parameter: lz4 acceleration 1, lz4hc 9, zstd 3, xz 6.
    pub fn default_for(id: CodecId) -> CodecSpec {
        let param = match id {
            CodecId::None => 0,
            CodecId::Lz4 => 1,
            CodecId::Lz4Hc => 9,
            CodecId::Zstd => 3,
            CodecId::Xz => 6,
        };
        CodecSpec { id, param }
    }

    /// The codec.
    pub fn id(self) -> CodecId {
        self.id
    }

    /// The codec's parameter.
    pub fn param(self) -> i32 {
        self.param
    }
}

impl fmt::Display for CodecSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.id {
            CodecId::None => f.write_str("none"),
            id => write!(f, "{}:{}", id.name(), self.param),
        }
    }
}

impl FromStr for CodecSpec {
    type Err = Error;

    /// `NAME` or `NAME:PARAM`, e.g. `zstd`, `zstd:19`, `zstd:-3`, `lz4:8`, `xz:9`, `none`.
    fn from_str(s: &str) -> Result<CodecSpec> {
        let (name, param) = match s.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        };
        let id = CodecId::from_name(name.trim()).ok_or_else(|| Error::Parse {
            input: s.to_owned(),
            reason: "unknown codec; known codecs: none, lz4, lz4hc, zstd, xz".to_owned(),
        })?;
        match param {
            None => Ok(CodecSpec::default_for(id)),
            Some(p) => {
                let p: i32 = p.trim().parse().map_err(|_| Error::Parse {
                    input: s.to_owned(),
                    reason: format!("the parameter of {id} must be an integer"),
                })?;
                CodecSpec::new(id, p)
            }
        }
    }
}

/// A filter and its parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FilterSpec {
    id: FilterId,
    param: u8,
}

impl FilterSpec {
    /// A filter with a valid parameter ([`FilterId::param_valid`]).
    pub fn new(id: FilterId, param: u8) -> Result<FilterSpec> {
        check_param(id.name(), param, id.param_range())?;
        if !id.param_valid(param) {
            return Err(Error::BadFilterParam { filter: id.name(), param, valid: id.param_help() });
        }
        Ok(FilterSpec { id, param })
    }

    /// Byte shuffle for elements of `elem_size` bytes.
    pub fn shuffle(elem_size: u8) -> Result<FilterSpec> {
        FilterSpec::new(FilterId::Shuffle, elem_size)
    }

    /// Wrapping differences of consecutive little-endian integers of `width` bytes (1, 2, 4, 8).
    pub fn delta(width: u8) -> Result<FilterSpec> {
        FilterSpec::new(FilterId::Delta, width)
    }

    /// XOR of consecutive words of `width` bytes (1, 2, 4, 8).
    pub fn xor(width: u8) -> Result<FilterSpec> {
        FilterSpec::new(FilterId::Xor, width)
    }

    /// Bit transposition (bit planes) for elements of `elem_size` bytes (format 1.2).
    pub fn bitshuffle(elem_size: u8) -> Result<FilterSpec> {
        FilterSpec::new(FilterId::Bitshuffle, elem_size)
    }

    /// The filter.
    pub fn id(self) -> FilterId {
        self.id
    }

    /// The filter's parameter.
    pub fn param(self) -> u8 {
        self.param
    }
}

impl fmt::Display for FilterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.id.name(), self.param)
    }
}

impl FromStr for FilterSpec {
    type Err = Error;

    /// `shuffle:N` or `bitshuffle:N` (N 1..=255), `delta:N` or `xor:N` (N 1, 2, 4 or 8).
    fn from_str(s: &str) -> Result<FilterSpec> {
        let bad = |reason: String| Error::Parse { input: s.to_owned(), reason };
        let (name, param) = s.split_once(':').ok_or_else(|| {
            bad("expected NAME:PARAM, e.g. shuffle:8, delta:4, xor:8, bitshuffle:4".to_owned())
        })?;
        let id = FilterId::from_name(name.trim()).ok_or_else(|| {
            let known: Vec<&str> = FilterId::ALL.iter().map(|f| f.name()).collect();
            bad(format!("unknown filter; known filters: {}", known.join(", ")))
        })?;
        let param: u8 = param
            .trim()
            .parse()
            .map_err(|_| bad(format!("the parameter of {id} must be {}", id.param_help())))?;
        FilterSpec::new(id, param)
    }
}

/// The number of filter slots in a frame header.
pub const FILTER_SLOTS: usize = 4;

/// A frame's filter pipeline: up to [`FILTER_SLOTS`] filters, applied in order before the codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Filters {
    slots: [Option<FilterSpec>; FILTER_SLOTS],
}

impl Filters {
    /// No filters.
    pub const NONE: Filters = Filters { slots: [None; FILTER_SLOTS] };

    /// A pipeline from a list of filters (at most four).
    pub fn new(list: &[FilterSpec]) -> Result<Filters> {
        if list.len() > FILTER_SLOTS {
            return Err(Error::Parse {
                input: format!("{} filters", list.len()),
                reason: format!("a frame holds at most {FILTER_SLOTS} filters"),
            });
        }
        let mut slots = [None; FILTER_SLOTS];
        for (slot, f) in slots.iter_mut().zip(list) {
            *slot = Some(*f);
        }
        Ok(Filters { slots })
    }

    /// The filters in application order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = FilterSpec> + '_ {
        self.slots.iter().flatten().copied()
    }

    /// True if there is no filter.
    pub fn is_empty(&self) -> bool {
        self.slots[0].is_none()
    }

    /// The on-disk slot bytes: `(id, param)` pairs, empty slots `(0, 0)`.
    pub fn to_slots(&self) -> [u8; 2 * FILTER_SLOTS] {
        let mut out = [0u8; 2 * FILTER_SLOTS];
        for (i, f) in self.iter().enumerate() {
            out[2 * i] = f.id().as_u8();
            out[2 * i + 1] = f.param();
        }
        out
    }

    /// Parse the on-disk slot bytes. Errors name the slot; `Error::UnknownFilter` carries the id
    /// so a reader can report it.
    pub fn from_slots(bytes: [u8; 2 * FILTER_SLOTS]) -> Result<Filters> {
        let mut slots = [None; FILTER_SLOTS];
        let mut ended = false;
        for i in 0..FILTER_SLOTS {
            let (id, param) = (bytes[2 * i], bytes[2 * i + 1]);
            if id == 0 {
                if param != 0 {
                    return Err(Error::BadFilterSlot {
                        slot: i,
                        reason: "empty slot with a parameter",
                    });
                }
                ended = true;
                continue;
            }
            if ended {
                return Err(Error::BadFilterSlot { slot: i, reason: "filter after an empty slot" });
            }
            let fid = FilterId::from_u8(id).ok_or(Error::UnknownFilter { id })?;
            slots[i] =
                Some(FilterSpec::new(fid, param).map_err(|_| Error::BadFilterSlot {
                    slot: i,
                    reason: "parameter out of range",
                })?);
        }
        Ok(Filters { slots })
    }
}

impl FromStr for Filters {
    type Err = Error;

    /// A comma-separated list applied in order, e.g. `shuffle:8,xor:8`; `none` or `-` for no
    /// filter.
    fn from_str(s: &str) -> Result<Filters> {
        let t = s.trim();
        if t.is_empty() || t == "-" || t.eq_ignore_ascii_case("none") {
            return Ok(Filters::NONE);
        }
        let list = t.split(',').map(str::parse).collect::<Result<Vec<FilterSpec>>>()?;
        Filters::new(&list)
    }
}

impl fmt::Display for Filters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("-");
        }
        for (i, spec) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{spec}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_spec_parses_and_prints() {
        for s in ["zstd:3", "zstd:-7", "zstd:22", "lz4:1", "lz4:65537", "lz4hc:12", "xz:9", "none"]
        {
            let spec: CodecSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
        }
        assert_eq!("zstd".parse::<CodecSpec>().unwrap(), CodecSpec::new(CodecId::Zstd, 3).unwrap());
        assert_eq!("LZ4".parse::<CodecSpec>().unwrap().param(), 1);
    }

    #[test]
    fn codec_spec_rejects_out_of_range_and_junk() {
        for s in [
            "zstd:23",
            "zstd:-8",
            "lz4:0",
            "lz4:65538",
            "xz:10",
            "lz4hc:13",
            "none:1",
            "gzip:1",
            "zstd:x",
            "",
        ] {
            assert!(s.parse::<CodecSpec>().is_err(), "{s} should not parse");
        }
        let msg = "zstd:99".parse::<CodecSpec>().unwrap_err().to_string();
        assert!(msg.contains("-7") && msg.contains("22"), "error should give the range: {msg}");
    }

    #[test]
    fn filters_slots_round_trip() {
        let f = Filters::new(&[FilterSpec::shuffle(8).unwrap(), FilterSpec::shuffle(4).unwrap()])
            .unwrap();
        assert_eq!(f.to_slots(), [1, 8, 1, 4, 0, 0, 0, 0]);
        assert_eq!(Filters::from_slots(f.to_slots()).unwrap(), f);
        assert_eq!(f.to_string(), "shuffle:8,shuffle:4");
        assert!(Filters::NONE.is_empty());
    }

    #[test]
    fn delta_and_xor_take_word_sizes_1_2_4_8() {
        for id in [FilterId::Delta, FilterId::Xor] {
            for p in 0..=255u8 {
                let ok = FilterSpec::new(id, p).is_ok();
                assert_eq!(ok, matches!(p, 1 | 2 | 4 | 8), "{id}:{p}");
            }
        }
        let e = "delta:3".parse::<FilterSpec>().unwrap_err();
        assert!(matches!(e, Error::BadFilterParam { param: 3, .. }), "{e:?}");
        assert!(e.to_string().contains("1, 2, 4 or 8"), "{e}");
        let e = "xor:16".parse::<FilterSpec>().unwrap_err().to_string();
        assert!(e.contains("1..=8") || e.contains("1, 2, 4 or 8"), "{e}");
        assert_eq!(FilterSpec::xor(8).unwrap().to_string(), "xor:8");
        assert_eq!(FilterSpec::delta(4).unwrap().to_string(), "delta:4");
    }

    #[test]
    fn bitshuffle_takes_element_sizes_1_to_255() {
        for p in 0..=255u8 {
            assert_eq!(FilterSpec::bitshuffle(p).is_ok(), p >= 1, "bitshuffle:{p}");
        }
        let f: Filters = "bitshuffle:4".parse().unwrap();
        assert_eq!(f.to_slots(), [4, 4, 0, 0, 0, 0, 0, 0]);
        assert_eq!(f.to_string(), "bitshuffle:4");
        assert_eq!(Filters::from_slots(f.to_slots()).unwrap(), f);
        assert_eq!("BitShuffle:255".parse::<FilterSpec>().unwrap().param(), 255);
        assert!(matches!(
            Filters::from_slots([4, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::BadFilterSlot { slot: 0, .. })
        ));
        for bad in ["bitshuffle:0", "bitshuffle:256", "bitshuffle", "bitshuffle:x"] {
            assert!(bad.parse::<FilterSpec>().is_err(), "{bad}");
        }
        let e = "bitshuffel:4".parse::<FilterSpec>().unwrap_err().to_string();
        assert!(e.contains("shuffle, delta, xor, bitshuffle"), "{e}");
    }

    #[test]
    fn filter_lists_parse_in_order() {
        let f: Filters = "shuffle:8,xor:8".parse().unwrap();
        assert_eq!(f.to_slots(), [1, 8, 3, 8, 0, 0, 0, 0]);
        assert_eq!(f.to_string(), "shuffle:8,xor:8");
        assert_eq!(f.to_string().parse::<Filters>().unwrap(), f);
        let f: Filters = " delta:4 , shuffle:4 ".parse().unwrap();
        assert_eq!(f.to_slots(), [2, 4, 1, 4, 0, 0, 0, 0]);
        assert_eq!(Filters::from_slots(f.to_slots()).unwrap(), f);
        assert_eq!("none".parse::<Filters>().unwrap(), Filters::NONE);
        assert_eq!("-".parse::<Filters>().unwrap(), Filters::NONE);
        for bad in ["xor:8,", "shuffle:8,,xor:8", "delta:8,xor:8,shuffle:8,xor:8,delta:8", "lz:4"] {
            assert!(bad.parse::<Filters>().is_err(), "{bad}");
        }
    }

    #[test]
    fn filters_reject_bad_slots() {
        assert!(matches!(
            Filters::from_slots([0, 1, 0, 0, 0, 0, 0, 0]),
            Err(Error::BadFilterSlot { slot: 0, .. })
        ));
        assert!(matches!(
            Filters::from_slots([0, 0, 1, 8, 0, 0, 0, 0]),
            Err(Error::BadFilterSlot { slot: 1, .. })
        ));
        assert!(matches!(
            Filters::from_slots([9, 1, 0, 0, 0, 0, 0, 0]),
            Err(Error::UnknownFilter { id: 9 })
        ));
        assert!(matches!(
            Filters::from_slots([1, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::BadFilterSlot { slot: 0, .. })
        ));
        assert!(Filters::new(&[FilterSpec::shuffle(2).unwrap(); 5]).is_err());
        assert!(matches!(
            Filters::from_slots([2, 3, 0, 0, 0, 0, 0, 0]),
            Err(Error::BadFilterSlot { slot: 0, .. })
        ));
        assert!(matches!(
            Filters::from_slots([1, 8, 3, 16, 0, 0, 0, 0]),
            Err(Error::BadFilterSlot { slot: 1, .. })
        ));
        assert!(matches!(
            Filters::from_slots([3, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::BadFilterSlot { slot: 0, .. })
        ));
        assert!(matches!(
            Filters::from_slots([5, 8, 0, 0, 0, 0, 0, 0]),
            Err(Error::UnknownFilter { id: 5 })
        ));
        assert!("shuffle:0".parse::<FilterSpec>().is_err());
        assert!("shuffle".parse::<FilterSpec>().is_err());
        assert_eq!("shuffle:8".parse::<FilterSpec>().unwrap().param(), 8);
    }
}
