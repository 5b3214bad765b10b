//! A look at a sample's bytes that needs no compression (after btrfs'
//! `btrfs_compress_heuristic`): is the data obviously random, obviously redundant, or
//! something only a codec can tell?
//!
//! The order-0 entropy classes are `adz_control::classify`'s (the classes the writer already
//! gives every block); on top of them, as btrfs does, two counts of the byte histogram and a
//! repeated-pattern check:
//!
//! * **repeated pattern**: a slice that repeats itself with some period up to half its length
//!   (and 64 KiB)
//!   (btrfs compares the two halves of its sample, which finds fewer periods), or slices
//!   that are all the same bytes: redundant;
//! * **every slice sparse** (entropy class 1, under 3 bits per byte): redundant;
//! * **every slice random-looking** (class 4, 7.8 bits per byte and more) *and* a *core set*
//!   of at least 200 byte values (the most frequent values that cover 90 % of the bytes;
//!   btrfs' `BYTE_CORE_SET_HIGH`): random. Compressed, encrypted and random data look like
//!   this; so could data whose repeats are farther apart than a sample sees, which the
//!   controller's probes (one cheap attempt every 4-10 blocks) still find.
//! * anything else: unknown, and the predictor compresses the sample.

use adz_control::classify;
use serde::Serialize;

use super::Sample;

/// What the heuristic concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Compressibility {
    /// No codec will shrink it: do not even try.
    Random,
    /// Any codec will shrink it a lot: only the speed question remains.
    Redundant,
    /// Compress the sample to find out.
    Unknown,
}

/// The heuristic's verdict and the counts it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Heuristic {
    /// The verdict.
    pub class: Compressibility,
    /// The highest entropy class of the slices (`adz_control::classify`: 1 sparse, 2 text,
    /// 3 binary numbers, 4 random-looking; 0 for an empty sample).
    pub entropy_class: u8,
    /// Distinct byte values in the sample.
    pub byte_set: usize,
    /// The fewest byte values that cover 90 % of the sample.
    pub core_set: usize,
    /// A slice repeats itself, or all slices are the same.
    pub repeated: bool,
}

/// btrfs' `BYTE_CORE_SET_HIGH`: a core set this large looks random.
pub const CORE_SET_HIGH: usize = 200;

/// Look at `sample`.
pub fn classify_sample(sample: &Sample) -> Heuristic {
    let mut hist = [0u64; 256];
    let mut total = 0u64;
    for (_, s) in &sample.slices {
        for &b in s {
            hist[b as usize] += 1;
        }
        total += s.len() as u64;
    }
    let byte_set = hist.iter().filter(|&&c| c > 0).count();
    let mut sorted = hist;
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let mut covered = 0u64;
    let mut core_set = 0;
    for c in sorted {
        if covered * 10 >= total * 9 {
            break;
        }
        covered += c;
        core_set += 1;
    }
    let classes: Vec<u8> = sample.slices.iter().map(|(_, s)| classify(s)).collect();
    let entropy_class = classes.iter().copied().max().unwrap_or(0);
    let repeated = sample.slices.iter().any(|(_, s)| periodic(s))
        || (sample.slices.len() > 1 && sample.slices.windows(2).all(|w| w[0].1 == w[1].1));
    let class = if total == 0 {
        Compressibility::Unknown
    } else if repeated || classes.iter().all(|&c| c == 1) {
        Compressibility::Redundant
    } else if classes.iter().all(|&c| c == 4) && core_set >= CORE_SET_HIGH {
        Compressibility::Random
    } else {
        Compressibility::Unknown
    };
    Heuristic { class, entropy_class, byte_set, core_set, repeated }
}

/// True if `s` repeats itself: some period `p < len / 2` with `s[p..] == s[..len - p]`. btrfs
/// compares the two halves of its sample, which finds only periods that divide the half; this
/// finds the period from the first recurrence of the slice's first 32 bytes.
fn periodic(s: &[u8]) -> bool {
    const NEEDLE: usize = 32;
    const MAX_PERIOD: usize = 64 << 10;
    if s.len() < 4 * NEEDLE {
        return false;
    }
    // Periods up to 64 KiB: the search is a compare per byte, the check one memcmp.
    let needle = &s[..NEEDLE];
    let end = (s.len() / 2).min(MAX_PERIOD) + NEEDLE;
    let Some(p) = s[1..end].windows(NEEDLE).position(|w| w == needle) else {
        return false;
    };
    let p = p + 1;
    p <= s.len() / 2 && s[p..] == s[..s.len() - p]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::SampleConfig;

    fn random(n: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (s >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn random_redundant_and_unknown() {
        let cfg = SampleConfig::default();
        let h = classify_sample(&Sample::from_slice(&random(8 << 20, 1), &cfg));
        assert_eq!(h.class, Compressibility::Random, "{h:?}");
        let zeros = vec![0u8; 8 << 20];
        assert_eq!(
            classify_sample(&Sample::from_slice(&zeros, &cfg)).class,
            Compressibility::Redundant
        );
        // A random 4 KiB block repeated: high entropy, but a repeated pattern.
        let rep: Vec<u8> = random(4096, 2).into_iter().cycle().take(8 << 20).collect();
        let h = classify_sample(&Sample::from_slice(&rep, &cfg));
        assert!(h.repeated && h.class == Compressibility::Redundant, "{h:?}");
        let text: Vec<u8> = (0..200_000u64)
            .flat_map(|i| format!("line {i}: value {} of {}\n", i * i % 977, i % 13).into_bytes())
            .take(8 << 20)
            .collect();
        assert_eq!(
            classify_sample(&Sample::from_slice(&text, &cfg)).class,
            Compressibility::Unknown
        );
        let mixed: Vec<u8> = text[..4 << 20].iter().copied().chain(random(4 << 20, 3)).collect();
        let h = classify_sample(&Sample::from_slice(&mixed, &cfg));
        assert_eq!(h.class, Compressibility::Unknown, "{h:?}");
        assert_eq!(classify_sample(&Sample::default()).class, Compressibility::Unknown);
    }
}
