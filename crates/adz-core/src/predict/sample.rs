//! A few spread slices of the data: what the predictor compresses instead of the data.

use std::io::{Read, Seek, SeekFrom};

use crate::{Error, Result};

/// How to take a [`Sample`]. Defaults: 3 slices of 5 % of the data each (Papio's 3 x 5 %),
/// each at most one block (1 MiB) and at least 16 KiB, all together at most 2 % of the data
/// plus one slice, placed at reproducible random offsets (seed 0).
#[derive(Debug, Clone, PartialEq)]
pub struct SampleConfig {
    /// How many slices (at least 1).
    pub slices: usize,
    /// Each slice's share of the data (Papio: 0.05).
    pub slice_fraction: f64,
    /// The most bytes of one slice: the block size, so a slice compresses as a block does.
    pub max_slice: usize,
    /// The fewest bytes of one slice (unless the data is shorter): codecs need some context
    /// before their ratio means anything.
    pub min_slice: usize,
    /// All slices together are at most this share of the data, plus one `min_slice`.
    pub budget: f64,
    /// Seed of the slices' offsets: the same seed and data give the same sample.
    pub seed: u64,
}

impl Default for SampleConfig {
    fn default() -> SampleConfig {
        SampleConfig {
            slices: 3,
            slice_fraction: 0.05,
            max_slice: 1 << 20,
            min_slice: 16 << 10,
            budget: 0.02,
            seed: 0,
        }
    }
}

impl SampleConfig {
    /// The slices `(offset, len)` to take from `source_len` bytes that stand for a write of
    /// `data_len` bytes (`data_len >= source_len`: a writer samples the blocks it holds, a
    /// file is sampled whole). The budget applies to `data_len`; slices lie in `source_len`.
    pub fn plan(&self, source_len: u64, data_len: u64) -> Vec<(u64, usize)> {
        let data_len = data_len.max(source_len);
        if source_len == 0 {
            return Vec::new();
        }
        let frac = |x: f64| if x.is_finite() { x.clamp(0.0, 1.0) } else { 0.0 };
        let min_slice = self.min_slice.max(1) as u64;
        let max_slice = (self.max_slice.max(1) as u64).max(min_slice);
        let mut n = self.slices.max(1) as u64;
        let mut len =
            ((data_len as f64 * frac(self.slice_fraction)) as u64).clamp(min_slice, max_slice);
        // The budget: n x len <= budget x data + min_slice. Shorter slices first, then fewer.
        let budget = (data_len as f64 * frac(self.budget)) as u64 + min_slice;
        if n * len > budget {
            len = (budget / n).max(min_slice);
            while n > 1 && n * len > budget {
                n -= 1;
            }
            len = len.min(budget / n).max(1);
        }
        // The slices must fit the source, each in its own stretch.
        let len = len.min(source_len / n).max(1).min(source_len);
        let n = n.min(source_len / len).max(1);
        let stretch = source_len / n;
        let mut state = self.seed ^ 0x5eed_5a4d_91e5_0001;
        (0..n)
            .map(|i| {
                let room = stretch - len.min(stretch);
                let off = if room == 0 { 0 } else { splitmix(&mut state) % (room + 1) };
                (i * stretch + off, len as usize)
            })
            .collect()
    }
}

/// Slices of the data, with where they came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// `(raw offset, bytes)` of each slice, in offset order.
    pub slices: Vec<(u64, Vec<u8>)>,
    /// The length of the write the sample stands for.
    pub data_len: u64,
}

impl Sample {
    /// A sample of `data` (the whole write).
    pub fn from_slice(data: &[u8], cfg: &SampleConfig) -> Sample {
        Sample::from_parts(&[data], data.len() as u64, cfg)
    }

    /// A sample of the concatenation of `parts`, standing for a write of `data_len` bytes of
    /// which `parts` are the beginning (a writer's first blocks).
    pub fn from_parts(parts: &[&[u8]], data_len: u64, cfg: &SampleConfig) -> Sample {
        let source_len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let slices = cfg
            .plan(source_len, data_len)
            .into_iter()
            .map(|(off, len)| {
                let mut out = Vec::with_capacity(len);
                let mut pos = 0u64;
                for p in parts {
                    let (start, end) = (pos, pos + p.len() as u64);
                    pos = end;
                    let want = off + out.len() as u64;
                    if out.len() == len || want >= end {
                        continue;
                    }
                    let from = (want - start) as usize;
                    let take = (len - out.len()).min(p.len() - from);
                    out.extend_from_slice(&p[from..from + take]);
                }
                (off, out)
            })
            .collect();
        Sample { slices, data_len: data_len.max(source_len) }
    }

    /// A sample of a seekable input of `len` bytes (a file), read slice by slice: only the
    /// sampled bytes are read.
    pub fn from_reader<R: Read + Seek>(mut r: R, len: u64, cfg: &SampleConfig) -> Result<Sample> {
        let mut slices = Vec::new();
        for (off, n) in cfg.plan(len, len) {
            let mut buf = vec![0u8; n];
            r.seek(SeekFrom::Start(off)).map_err(|e| Error::io("seeking the input", e))?;
            r.read_exact(&mut buf).map_err(|e| Error::io("reading a sample of the input", e))?;
            slices.push((off, buf));
        }
        Ok(Sample { slices, data_len: len })
    }

    /// Bytes in the sample.
    pub fn bytes(&self) -> u64 {
        self.slices.iter().map(|(_, s)| s.len() as u64).sum()
    }

    /// True if the sample holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes() == 0
    }

    /// The same sample with every slice cut to at most `len` bytes (a smaller budget).
    pub fn truncated(&self, len: usize) -> Sample {
        let slices =
            self.slices.iter().map(|(o, s)| (*o, s[..s.len().min(len.max(1))].to_vec())).collect();
        Sample { slices, data_len: self.data_len }
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_respect_the_budget_and_the_source() {
        let cfg = SampleConfig::default();
        for len in [0u64, 1, 100, 16 << 10, 1 << 20, 5 << 20, 100 << 20, 10 << 30] {
            let plan = cfg.plan(len, len);
            let total: u64 = plan.iter().map(|p| p.1 as u64).sum();
            assert!(total as f64 <= 0.02 * len as f64 + (16 << 10) as f64, "{len}: {total}");
            for w in plan.windows(2) {
                assert!(w[0].0 + w[0].1 as u64 <= w[1].0, "{len}: overlapping {plan:?}");
            }
            for &(o, n) in &plan {
                assert!(o + n as u64 <= len, "{len}: {plan:?}");
            }
            assert_eq!(plan.is_empty(), len == 0);
        }
        // Large data: 3 slices of one block.
        assert_eq!(
            cfg.plan(10 << 30, 10 << 30).iter().map(|p| p.1).collect::<Vec<_>>(),
            [1 << 20; 3]
        );
    }

    #[test]
    fn parts_and_slice_agree() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let cfg = SampleConfig { seed: 9, ..SampleConfig::default() };
        let whole = Sample::from_slice(&data, &cfg);
        let parts: Vec<&[u8]> = data.chunks(65_537).collect();
        assert_eq!(Sample::from_parts(&parts, data.len() as u64, &cfg), whole);
        let read =
            Sample::from_reader(std::io::Cursor::new(&data), data.len() as u64, &cfg).unwrap();
        assert_eq!(read, whole);
        for (o, s) in &whole.slices {
            assert_eq!(&data[*o as usize..*o as usize + s.len()], &s[..]);
        }
    }
}
