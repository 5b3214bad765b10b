//! Deterministic data for adz's tests, demo and benchmarks: the same seed gives the same bytes
//! on every machine and every version (the generator is a fixed SplitMix64, not a library RNG
//! whose stream may change between releases).
//!
//! ```
//! let a = adz_datagen::generate(adz_datagen::Kind::Mixed, 100_000, 7);
//! assert_eq!(a, adz_datagen::generate(adz_datagen::Kind::Mixed, 100_000, 7));
//! assert_eq!(a.len(), 100_000);
//! ```

use std::fmt;
use std::str::FromStr;

/// SplitMix64: tiny, fast, and fixed forever.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A float in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Kinds of data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// English-like text: Zipf-distributed words, sentences, line breaks.
    Text,
    /// A smooth 2-D field of f64 values (like a solver's matrix), row-major.
    Doubles,
    /// Random bytes: incompressible.
    Random,
    /// Mostly zeros with sparse records.
    Sparse,
    /// Segments of text, doubles, sparse, text, random, in turn, 4 MiB each.
    Mixed,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 5] = [Kind::Text, Kind::Doubles, Kind::Random, Kind::Sparse, Kind::Mixed];

    fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Doubles => "doubles",
            Kind::Random => "random",
            Kind::Sparse => "sparse",
            Kind::Mixed => "mixed",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        Kind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            format!("unknown kind {s:?}; kinds: text, doubles, random, sparse, mixed")
        })
    }
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "data",
    "storage",
    "block",
    "compression",
    "throughput",
    "network",
    "parallel",
    "file",
    "system",
    "level",
    "codec",
    "write",
    "read",
    "cluster",
    "node",
    "performance",
    "ratio",
    "speed",
    "link",
    "buffer",
    "thread",
    "adaptive",
    "strategy",
    "measurement",
    "controller",
    "frame",
    "index",
    "checksum",
];

/// Data is made in independent segments of this size, so a stream of any length can be
/// written segment by segment with memory bounded by one segment, and is identical to
/// [`generate`].
pub const SEGMENT: usize = 4 << 20;

/// `len` bytes of `kind` data from `seed`.
pub fn generate(kind: Kind, len: usize, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut i = 0;
    while out.len() < len {
        segment(kind, i, SEGMENT.min(len - out.len()), seed, &mut out);
        i += 1;
    }
    out
}

/// Write `len` bytes of `kind` data from `seed` to `w`: the same bytes as [`generate`], with
/// memory bounded by one segment.
pub fn write_to(
    kind: Kind,
    len: u64,
    seed: u64,
    w: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(SEGMENT);
    let mut done = 0u64;
    let mut i = 0;
    while done < len {
        buf.clear();
        let n = (SEGMENT as u64).min(len - done) as usize;
        segment(kind, i, n, seed, &mut buf);
        w.write_all(&buf)?;
        done += n as u64;
        i += 1;
    }
    Ok(())
}

/// The kinds a segment can be.
#[derive(Clone, Copy)]
enum Leaf {
    Text,
    Doubles,
    Random,
    Sparse,
}

/// Append segment number `i` (`n` bytes, at most [`SEGMENT`]) of the stream `kind`/`seed`.
fn segment(kind: Kind, i: usize, n: usize, seed: u64, out: &mut Vec<u8>) {
    let seed = SplitMix64::new(seed ^ (i as u64).wrapping_mul(0xA24B_AED4_963E_E407)).next_u64();
    let leaf = match kind {
        Kind::Text => Leaf::Text,
        Kind::Doubles => Leaf::Doubles,
        Kind::Random => Leaf::Random,
        Kind::Sparse => Leaf::Sparse,
        // Text, doubles, sparse, text, random: in turn, one segment each.
        Kind::Mixed => [Leaf::Text, Leaf::Doubles, Leaf::Sparse, Leaf::Text, Leaf::Random][i % 5],
    };
    let end = out.len() + n;
    let mut rng = SplitMix64::new(seed);
    match leaf {
        Leaf::Text => text(&mut rng, end, out),
        Leaf::Doubles => doubles(&mut rng, end, out),
        Leaf::Random => {
            while out.len() < end {
                out.extend_from_slice(&rng.next_u64().to_le_bytes());
            }
        }
        Leaf::Sparse => {
            while out.len() < end {
                let gap = rng.below(2000) as usize;
                out.resize(out.len() + gap, 0);
                out.extend_from_slice(&rng.next_u64().to_le_bytes()[..rng.below(8) as usize + 1]);
            }
        }
    }
    out.truncate(end);
}

fn text(rng: &mut SplitMix64, end: usize, out: &mut Vec<u8>) {
    let mut col = 0;
    let mut start_sentence = true;
    while out.len() < end {
        // Zipf-like: small indices far more often.
        let u = rng.unit();
        let idx = ((WORDS.len() as f64).powf(u * u) as usize).min(WORDS.len()) - 1;
        let w = WORDS[idx].as_bytes();
        if start_sentence {
            out.push(w[0].to_ascii_uppercase());
            out.extend_from_slice(&w[1..]);
            start_sentence = false;
        } else {
            out.extend_from_slice(w);
        }
        col += w.len() + 1;
        if rng.below(12) == 0 {
            out.push(b'.');
            start_sentence = true;
        }
        if col > 72 {
            out.push(b'\n');
            col = 0;
        } else {
            out.push(b' ');
        }
    }
}

fn doubles(rng: &mut SplitMix64, end: usize, out: &mut Vec<u8>) {
    let cols = 512usize;
    let (fx, fy) = (1.0 + rng.unit() * 4.0, 1.0 + rng.unit() * 4.0);
    let mut i = 0usize;
    while out.len() < end {
        let (r, c) = ((i / cols) as f64, (i % cols) as f64);
        let v = (r / 97.0 * fx).sin() * (c / 61.0 * fy).cos() * 100.0 + (rng.unit() - 0.5) * 1e-3;
        out.extend_from_slice(&v.to_le_bytes());
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_exact_length() {
        for kind in Kind::ALL {
            for len in [0, 1, 7, 4096, 100_003] {
                let a = generate(kind, len, 42);
                assert_eq!(a.len(), len);
                assert_eq!(a, generate(kind, len, 42), "{kind} {len}");
            }
        }
        assert_ne!(generate(Kind::Text, 1000, 1), generate(Kind::Text, 1000, 2));
    }

    #[test]
    fn streaming_equals_generate() {
        for kind in Kind::ALL {
            let len = 2 * SEGMENT + 12_345;
            let mut streamed = Vec::new();
            write_to(kind, len as u64, 9, &mut streamed).unwrap();
            assert!(streamed == generate(kind, len, 9), "{kind}");
        }
    }

    #[test]
    fn known_first_values() {
        // The stream is part of the contract: datasets must be reproducible across versions.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn kinds_differ_in_compressibility_shape() {
        let text = generate(Kind::Text, 50_000, 3);
        assert!(text.iter().all(|b| b.is_ascii()));
        let sparse = generate(Kind::Sparse, 50_000, 3);
        assert!(sparse.iter().filter(|&&b| b == 0).count() > 45_000);
        let random = generate(Kind::Random, 65_536, 3);
        let mut seen = [false; 256];
        random.iter().for_each(|&b| seen[b as usize] = true);
        assert!(seen.iter().all(|&s| s));
    }
}
