//! Application hints for byte ranges (thesis section 3.3), and element types for `dtype=`.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use adz_format::Filters;

use crate::error::Error;

const HINT_FORMS: &str = "no-compress, write-once, hot, dtype=TYPE (f32, f64, i8, i16, i32, \
                          i64, u8, u16, u32, u64), filters=LIST (e.g. filters=xor:8,shuffle:8), \
                          reads-per-write=K";

/// What an application says about a byte range. The pipeline cuts blocks at hint-range borders
/// and passes the hints that cover a block in [`crate::BlockContext::hints`].
///
/// `Eq` and `Hash` hold because [`Hint::ReadsPerWrite`] is never NaN (see its docs).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Hint {
    /// Already compressed or random: store raw, make no attempt (and learn nothing from it).
    NoCompress,
    /// Written once, read later: favour ratio. Throughput (S1) becomes keep-pace (S2) here.
    WriteOnce,
    /// Read and rewritten often: favour speed. Every adaptive or archive strategy becomes
    /// throughput (S1) here.
    Hot,
    /// The range is an array of this element type: shuffle its bytes before compressing.
    Dtype(Dtype),
    /// Apply exactly these filters, in order, before the codec (`filters=xor:8,shuffle:8`).
    /// Overrides a `dtype` hint's shuffle for the same range.
    Filters(Filters),
    /// How many small random reads the data will serve per time it is written: the weight
    /// ratio W_i/W_o of multi-reference sizing (`crate::mrc`), which picks the frame size for
    /// `--frame-size auto`. A whole-file hint; blocks ignore it. Finite and >= 0 when parsed;
    /// build it with [`Hint::reads_per_write`] to keep that true.
    ReadsPerWrite(f64),
}

impl Hint {
    /// `ReadsPerWrite(k)` for a finite `k >= 0` (`-0.0` becomes `0.0`), else `None`.
    pub fn reads_per_write(k: f64) -> Option<Hint> {
        (k.is_finite() && k >= 0.0).then_some(Hint::ReadsPerWrite(k + 0.0))
    }
}

impl Eq for Hint {}

impl Hash for Hint {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Hint::NoCompress | Hint::WriteOnce | Hint::Hot => {}
            Hint::Dtype(d) => d.hash(state),
            Hint::Filters(f) => f.hash(state),
            // +0.0 so that 0.0 and -0.0, which compare equal, hash equal.
            Hint::ReadsPerWrite(k) => (k + 0.0).to_bits().hash(state),
        }
    }
}

/// An element type, for the shuffle filter's element size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dtype {
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// 8-bit signed integer.
    I8,
    /// 16-bit signed integer.
    I16,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// 8-bit unsigned integer.
    U8,
    /// 16-bit unsigned integer.
    U16,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit unsigned integer.
    U64,
}

impl Dtype {
    /// Every element type, for parsing.
    pub const ALL: [Dtype; 10] = [
        Dtype::F32,
        Dtype::F64,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::U8,
        Dtype::U16,
        Dtype::U32,
        Dtype::U64,
    ];

    /// Size of one element in bytes.
    pub fn size(self) -> u8 {
        match self {
            Dtype::I8 | Dtype::U8 => 1,
            Dtype::I16 | Dtype::U16 => 2,
            Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
            Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
        }
    }

    /// The name used on command lines (`f64`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::I8 => "i8",
            Dtype::I16 => "i16",
            Dtype::I32 => "i32",
            Dtype::I64 => "i64",
            Dtype::U8 => "u8",
            Dtype::U16 => "u16",
            Dtype::U32 => "u32",
            Dtype::U64 => "u64",
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dtype {
    type Err = Error;

    fn from_str(input: &str) -> Result<Dtype, Error> {
        let s = input.trim();
        Dtype::ALL.into_iter().find(|d| d.name().eq_ignore_ascii_case(s)).ok_or_else(|| {
            Error::Parse {
                what: "dtype",
                input: input.to_owned(),
                reason: "expected one of f32, f64, i8, i16, i32, i64, u8, u16, u32, u64".into(),
            }
        })
    }
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hint::NoCompress => f.write_str("no-compress"),
            Hint::WriteOnce => f.write_str("write-once"),
            Hint::Hot => f.write_str("hot"),
            Hint::Dtype(d) => write!(f, "dtype={d}"),
            Hint::Filters(list) => write!(f, "filters={list}"),
            Hint::ReadsPerWrite(k) => write!(f, "reads-per-write={k}"),
        }
    }
}

impl FromStr for Hint {
    type Err = Error;

    /// `no-compress` | `write-once` | `hot` | `dtype=TYPE` | `filters=LIST` |
    /// `reads-per-write=K`, case-insensitive.
    fn from_str(input: &str) -> Result<Hint, Error> {
        let bad = |reason: String| Error::Parse { what: "hint", input: input.to_owned(), reason };
        let s = input.trim().to_ascii_lowercase();
        match s.split_once('=') {
            Some((name, arg)) if name.trim() == "dtype" => {
                arg.parse::<Dtype>().map(Hint::Dtype).map_err(|_| {
                    bad(format!("unknown dtype {:?}; expected one of {HINT_FORMS}", arg.trim()))
                })
            }
            Some((name, arg)) if name.trim() == "filters" => {
                let f: Filters = arg.parse().map_err(|e| bad(format!("{e}")))?;
                Ok(Hint::Filters(f))
            }
            Some((name, arg)) if name.trim() == "reads-per-write" => {
                arg.trim().parse::<f64>().ok().and_then(Hint::reads_per_write).ok_or_else(|| {
                    bad(format!(
                        "reads-per-write takes a number >= 0 (small reads per write of the \
                         data: 0 write-only, 1, 10, ...), got {:?}",
                        arg.trim()
                    ))
                })
            }
            Some(_) => Err(bad(format!("expected one of {HINT_FORMS}"))),
            None => match s.as_str() {
                "no-compress" => Ok(Hint::NoCompress),
                "write-once" => Ok(Hint::WriteOnce),
                "hot" => Ok(Hint::Hot),
                "dtype" => Err(bad(format!(
                    "dtype needs a type, e.g. dtype=f64; expected one of {HINT_FORMS}"
                ))),
                _ => Err(bad(format!("unknown hint; expected one of {HINT_FORMS}"))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_round_trip() {
        let mut all = vec![Hint::NoCompress, Hint::WriteOnce, Hint::Hot];
        all.extend(Dtype::ALL.map(Hint::Dtype));
        all.push(Hint::Filters("xor:8,shuffle:8".parse().unwrap()));
        all.push(Hint::Filters("delta:4".parse().unwrap()));
        all.push(Hint::ReadsPerWrite(0.0));
        all.push(Hint::ReadsPerWrite(2.5));
        for h in all {
            assert_eq!(h.to_string().parse::<Hint>().unwrap(), h);
        }
        assert_eq!("DType=F64".parse::<Hint>().unwrap(), Hint::Dtype(Dtype::F64));
    }

    #[test]
    fn filters_and_reads_per_write_parse() {
        let h: Hint = "filters=Shuffle:8,XOR:8".parse().unwrap();
        let Hint::Filters(f) = h else { panic!("{h:?}") };
        assert_eq!(f.to_slots(), [1, 8, 3, 8, 0, 0, 0, 0]);
        assert_eq!("reads-per-write=10".parse::<Hint>().unwrap(), Hint::ReadsPerWrite(10.0));
        assert_eq!("reads-per-write=-0".parse::<Hint>().unwrap(), Hint::ReadsPerWrite(0.0));
        for bad in [
            "reads-per-write=-1",
            "reads-per-write=nan",
            "reads-per-write=inf",
            "reads-per-write=",
            "filters=delta:3",
            "filters=gzip:1",
        ] {
            let e = bad.parse::<Hint>().unwrap_err().to_string();
            assert!(!e.is_empty(), "{bad}");
        }
        let e = "reads-per-write=x".parse::<Hint>().unwrap_err().to_string();
        assert!(e.contains(">= 0"), "{e}");
        let e = "filters=delta:3".parse::<Hint>().unwrap_err().to_string();
        assert!(e.contains("1, 2, 4 or 8"), "{e}");
    }

    #[test]
    fn equal_hints_hash_equal() {
        use std::collections::hash_map::DefaultHasher;
        let h = |x: &Hint| {
            let mut s = DefaultHasher::new();
            x.hash(&mut s);
            s.finish()
        };
        assert_eq!(Hint::ReadsPerWrite(0.0), Hint::ReadsPerWrite(-0.0));
        assert_eq!(h(&Hint::ReadsPerWrite(0.0)), h(&Hint::ReadsPerWrite(-0.0)));
        assert_ne!(h(&Hint::ReadsPerWrite(1.0)), h(&Hint::ReadsPerWrite(2.0)));
        assert_eq!(Hint::reads_per_write(f64::NAN), None);
    }

    #[test]
    fn hints_reject_junk() {
        for s in ["", "cold", "dtype", "dtype=f128", "hot=1", "no_compress"] {
            let e = s.parse::<Hint>().unwrap_err().to_string();
            assert!(e.contains("no-compress") || e.contains("f64"), "{s}: {e}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(Dtype::F64.size(), 8);
        assert_eq!(Dtype::U16.size(), 2);
        assert_eq!(Dtype::I8.size(), 1);
        assert_eq!(Dtype::F32.size(), 4);
    }
}
