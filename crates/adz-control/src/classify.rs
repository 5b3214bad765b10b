//! A cheap look at a block's bytes: which kind of data is it?
//!
//! The class picks the controller that decides the block (see [`crate::ClassedController`]):
//! blocks of one class should compress alike, so that one model can learn them. The look is
//! the order-0 entropy of a sample of the block's bytes: [`SAMPLE_WINDOWS`] windows of
//! [`WINDOW`] bytes spread evenly over the block (4 KiB of a 1 MiB block: 1.5-2.6 us on the
//! 2-core VM, `cargo bench -p adz-control --bench classify`), bucketed at [`BOUNDS`]. Order-0
//! entropy tells sparse data (runs of zeros, padding: under 3 bits per byte), text and markup
//! (3..6), binary numbers and machine code (6..7.8; a smooth field of doubles with noise in
//! its low bytes measures about 7.6) and compressed or random data (above 7.8; a 4 KiB sample
//! of random bytes or of an .xz file measures 7.95) apart, which are the kinds whose speed and
//! ratio differ by several times at every rung.

/// Bytes per sample window.
pub const WINDOW: usize = 256;
/// Sample windows per block.
pub const SAMPLE_WINDOWS: usize = 16;
/// Entropy bounds (bits per byte) between classes 1|2, 2|3 and 3|4.
pub const BOUNDS: [f64; 3] = [3.0, 6.0, 7.8];

/// The block's class: 1 (sparse) ..= 4 (random-looking) by the entropy of a sample of its
/// bytes, or 0 for an empty block.
pub fn classify(block: &[u8]) -> u8 {
    if block.is_empty() {
        return 0;
    }
    let mut hist = Histogram::default();
    if block.len() <= WINDOW * SAMPLE_WINDOWS {
        hist.add(block);
    } else {
        let stride = (block.len() - WINDOW) / (SAMPLE_WINDOWS - 1);
        for w in 0..SAMPLE_WINDOWS {
            let start = w * stride;
            hist.add(&block[start..start + WINDOW]);
        }
    }
    class_of(hist.entropy())
}

/// The class [`classify`] gives a sample of `entropy` bits per byte (1 ..= 4).
pub fn class_of(entropy: f64) -> u8 {
    1 + BOUNDS.iter().filter(|&&b| entropy >= b).count() as u8
}

/// Order-0 entropy of all of `bytes`, bits per byte (0 for none): what [`classify`] buckets,
/// for callers that look at their own windows (the predictor's probes; a probe of
/// `WINDOW * SAMPLE_WINDOWS` bytes or fewer is in `class_of(entropy(probe))` exactly when
/// `classify(probe)` puts it there).
pub fn entropy(bytes: &[u8]) -> f64 {
    let mut hist = Histogram::default();
    hist.add(bytes);
    hist.entropy()
}

/// Byte counts, kept in four tables that take every fourth byte each: a run of equal bytes
/// (sparse data, the common case of class 1) then increments four counters in turn rather
/// than one, whose every increment waits for the previous one's store. The tables are u32
/// (4 KiB, in L1 with room to spare) and are folded into 64-bit totals before any of them
/// could overflow.
struct Histogram {
    tables: [[u32; 256]; 4],
    /// Bytes counted in `tables` since they were last folded into `folded`.
    unfolded: u64,
    folded: [u64; 256],
    n: u64,
}

/// Bytes counted between folds: no table counter can pass `u32::MAX`.
const FOLD_BYTES: u64 = 1 << 32;

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram { tables: [[0; 256]; 4], unfolded: 0, folded: [0; 256], n: 0 }
    }
}

impl Histogram {
    fn add(&mut self, bytes: &[u8]) {
        // (On a 32-bit target no slice reaches FOLD_BYTES.)
        for piece in bytes.chunks(usize::try_from(FOLD_BYTES).unwrap_or(usize::MAX)) {
            if self.unfolded + piece.len() as u64 > FOLD_BYTES {
                self.fold();
            }
            self.count(piece);
        }
    }

    fn count(&mut self, bytes: &[u8]) {
        let mut quads = bytes.chunks_exact(4);
        let [t0, t1, t2, t3] = &mut self.tables;
        for q in &mut quads {
            t0[q[0] as usize] += 1;
            t1[q[1] as usize] += 1;
            t2[q[2] as usize] += 1;
            t3[q[3] as usize] += 1;
        }
        for &b in quads.remainder() {
            t0[b as usize] += 1;
        }
        self.unfolded += bytes.len() as u64;
        self.n += bytes.len() as u64;
    }

    /// Adds the tables into the 64-bit totals and clears them.
    fn fold(&mut self) {
        for t in &mut self.tables {
            for (sum, c) in self.folded.iter_mut().zip(t.iter_mut()) {
                *sum += u64::from(std::mem::take(c));
            }
        }
        self.unfolded = 0;
    }

    /// Every byte value's count.
    fn counts(&self) -> [u64; 256] {
        let mut total = self.folded;
        for t in &self.tables {
            for (sum, &c) in total.iter_mut().zip(t) {
                *sum += u64::from(c);
            }
        }
        total
    }

    /// Order-0 entropy of the bytes counted, bits per byte (0 for none).
    fn entropy(&self) -> f64 {
        let n = self.n.max(1) as f64;
        self.counts()
            .into_iter()
            .filter(|&c| c > 0)
            .map(|c| {
                let p = c as f64 / n;
                -p * p.log2()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_of_bytes() {
        assert_eq!(entropy(&[]), 0.0);
        assert_eq!(entropy(&[7; 4096]), 0.0);
        let all: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        assert!((entropy(&all) - 8.0).abs() < 1e-12);
        let two: Vec<u8> = [0u8, 1].iter().copied().cycle().take(4096).collect();
        assert!((entropy(&two) - 1.0).abs() < 1e-12);
    }

    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn kinds_of_data_fall_in_their_classes() {
        let mut s = 7;
        let random: Vec<u8> = (0..1 << 20).map(|_| splitmix(&mut s) as u8).collect();
        let zeros = vec![0u8; 1 << 20];
        let mut sparse = vec![0u8; 1 << 20];
        for i in (0..sparse.len()).step_by(97) {
            sparse[i] = (i % 13) as u8;
        }
        let text: Vec<u8> = b"The quick brown fox jumps over the lazy dog; fn main() { x += 1; }\n"
            .iter()
            .copied()
            .cycle()
            .take(1 << 20)
            .collect();
        // A smooth field of doubles with noise in the low mantissa bytes.
        let doubles: Vec<u8> = (0..(1 << 17))
            .flat_map(|i| {
                let x = (i as f64 * 0.001).sin() * 100.0 + (splitmix(&mut s) % 1000) as f64 * 1e-9;
                x.to_le_bytes()
            })
            .collect();
        assert_eq!(classify(&zeros), 1);
        assert_eq!(classify(&sparse), 1);
        assert_eq!(classify(&text), 2);
        assert_eq!(classify(&doubles), 3);
        assert_eq!(classify(&random), 4);
        assert_eq!(classify(&random[..100]), 3, "100 random bytes measure under 7.8 bits");
        assert_eq!(classify(&[]), 0);
    }

    #[test]
    fn a_short_sample_is_in_the_class_of_its_entropy() {
        // The predictor's probes take their class from their entropy (one look, not two).
        let mut s = 3;
        let mut classes = Vec::new();
        for len in [1, 100, 1000, 4096] {
            let mut data: Vec<u8> = (0..len).map(|_| splitmix(&mut s) as u8).collect();
            // Random, then more and more zeros, then a few distinct bytes: every class.
            for step in [0, 8, 3, 2, 1] {
                if step > 0 {
                    data.iter_mut().step_by(step).for_each(|b| *b = 0);
                }
                let c = classify(&data);
                assert_eq!(class_of(entropy(&data)), c, "len {len}, every {step}th zeroed");
                classes.push(c);
            }
            let text: Vec<u8> = (0..len).map(|i| b"abcdefghijklmnop"[i % 16]).collect();
            assert_eq!(class_of(entropy(&text)), classify(&text), "len {len}, text");
            classes.push(classify(&text));
        }
        classes.sort_unstable();
        classes.dedup();
        assert_eq!(classes, [1, 2, 3, 4], "the cases cover every class");
    }

    #[test]
    fn the_histogram_counts_every_byte_once() {
        // Lengths around the four tables' stride, and runs of one byte.
        for len in [0usize, 1, 3, 4, 5, 7, 8, 9, 4097] {
            let bytes: Vec<u8> = (0..len).map(|i| (i % 3) as u8).collect();
            let mut h = Histogram::default();
            h.add(&bytes);
            let want: Vec<u64> =
                (0..3).map(|b| bytes.iter().filter(|&&x| x == b as u8).count() as u64).collect();
            assert_eq!(h.counts()[..3], want[..], "len {len}");
            assert_eq!(h.n, len as u64);
            // Folded part way, the same counts.
            let mut f = Histogram::default();
            f.add(&bytes[..len / 2]);
            f.fold();
            f.add(&bytes[len / 2..]);
            assert_eq!(f.counts(), h.counts(), "len {len}, folded");
        }
        let third = -(1.0f64 / 3.0).log2();
        let h = entropy(&(0..3000).map(|i| (i % 3) as u8).collect::<Vec<_>>());
        assert!((h - third).abs() < 1e-12, "{h}");
    }

    #[test]
    fn every_length_is_safe() {
        let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        for len in [1, 255, 256, 4095, 4096, 4097, 5000, 10_000] {
            let c = classify(&data[..len]);
            assert!((1..=4).contains(&c), "len {len}: class {c}");
        }
    }
}
