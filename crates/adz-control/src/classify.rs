//! A cheap look at a block's bytes: which kind of data is it?
//!
//! The class picks the controller that decides the block (see [`crate::ClassedController`]):
//! blocks of one class should compress alike, so that one model can learn them. The look is
//! the order-0 entropy of a sample of the block's bytes: [`SAMPLE_WINDOWS`] windows of
//! [`WINDOW`] bytes spread evenly over the block (4 KiB of a 1 MiB block: about a
//! microsecond), bucketed at [`BOUNDS`]. Order-0 entropy tells sparse data (runs of zeros,
//! padding: under 3 bits per byte), text and markup (3..6), binary numbers and machine code
//! (6..7.8; a smooth field of doubles with noise in its low bytes measures about 7.6) and
//! compressed or random data (above 7.8; a 4 KiB sample of random bytes or of an .xz file
//! measures 7.95) apart, which are the kinds whose speed and ratio differ by several
//! times at every rung.

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
    let mut hist = [0u32; 256];
    let mut n = 0u32;
    if block.len() <= WINDOW * SAMPLE_WINDOWS {
        for &b in block {
            hist[b as usize] += 1;
        }
        n = block.len() as u32;
    } else {
        let stride = (block.len() - WINDOW) / (SAMPLE_WINDOWS - 1);
        for w in 0..SAMPLE_WINDOWS {
            let start = w * stride;
            for &b in &block[start..start + WINDOW] {
                hist[b as usize] += 1;
            }
            n += WINDOW as u32;
        }
    }
    let h = hist_entropy(&hist, f64::from(n));
    1 + BOUNDS.iter().filter(|&&b| h >= b).count() as u8
}

/// Order-0 entropy of all of `bytes`, bits per byte (0 for none): what [`classify`] buckets,
/// for callers that look at their own windows (the predictor's probes).
pub fn entropy(bytes: &[u8]) -> f64 {
    let mut hist = [0u32; 256];
    for &b in bytes {
        hist[b as usize] = hist[b as usize].saturating_add(1);
    }
    hist_entropy(&hist, bytes.len() as f64)
}

/// Order-0 entropy in bits per byte of a histogram of `n` bytes.
fn hist_entropy(hist: &[u32; 256], n: f64) -> f64 {
    let n = n.max(1.0);
    hist.iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
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
    fn every_length_is_safe() {
        let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        for len in [1, 255, 256, 4095, 4096, 4097, 5000, 10_000] {
            let c = classify(&data[..len]);
            assert!((1..=4).contains(&c), "len {len}: class {c}");
        }
    }
}
