//! Cutting a sample to a smaller budget: shorter slices first, then fewer (by kind).

use super::plan::allocate;
use super::Sample;

impl Sample {
    /// The same sample with every slice cut to at most `len` bytes (a smaller budget). Each
    /// slice still stands for the same bytes of the write.
    pub fn truncated(&self, len: usize) -> Sample {
        let slices =
            self.slices.iter().map(|(o, s)| (*o, s[..s.len().min(len.max(1))].to_vec())).collect();
        let weights = (0..self.slices.len()).map(|i| self.weight(i)).collect();
        Sample {
            slices,
            data_len: self.data_len,
            weights,
            kinds: self.kinds.clone(),
            classes: self.classes.clone(),
            spread: self.spread,
            map: self.map.clone(),
            span: self.span,
            look_bytes: self.look_bytes,
            look_seconds: self.look_seconds,
            feed: self.feed,
        }
    }

    /// The longest slice such that cutting every slice to it leaves at most `bytes` in the
    /// sample (short slices stay whole, the long ones share the rest equally).
    pub fn cut_for(&self, bytes: u64) -> usize {
        let lens: Vec<u64> = self.slices.iter().map(|s| s.1.len() as u64).collect();
        water_level(&lens, bytes)
    }
    /// The sample cut to at most `bytes` (the predictor's time budget), as the plan is cut
    /// to its byte budget: shorter slices first, then fewer. Slices are cut (the longest
    /// first) down to `floor` bytes; a stratified sample that still does not fit then keeps
    /// fewer slices per class (`ceil(n x share)` for the largest `n` that fits, at least one
    /// per class, evenly spaced among the class's slices, the class's weight shared among
    /// those kept); then slices are cut further, to at least `least` bytes. A sample of one
    /// kind keeps all its slices.
    pub fn fit(&self, bytes: u64, floor: usize, least: usize) -> Sample {
        if self.bytes() <= bytes {
            return self.clone();
        }
        let n = self.slices.len();
        // The slices kept and the weight each stands for: all of them, unless a stratified
        // sample has to keep fewer.
        let mut keep: Vec<(usize, f64)> = (0..n).map(|i| (i, self.weight(i))).collect();
        let stratified = self.classes.len() == n && n > 0;
        if stratified && self.cut_for(bytes) < floor {
            let mut classes: Vec<u8> = self.classes.clone();
            classes.sort_unstable();
            classes.dedup();
            let of = |c: u8| (0..n).filter(move |&i| self.classes[i] == c);
            let weight = |c: u8| of(c).map(|i| self.weight(i)).sum::<f64>();
            let total: f64 = classes.iter().map(|&c| weight(c)).sum();
            let shares: Vec<f64> = classes
                .iter()
                .map(|&c| if total > 0.0 { weight(c) / total } else { 0.0 })
                .collect();
            let caps: Vec<usize> = classes.iter().map(|&c| of(c).count()).collect();
            let counts = |k: usize| allocate(k, &shares, &caps);
            // The most slices of `floor` bytes that fit, by class.
            let fits = |m: &[usize]| {
                let mut lens: Vec<usize> = Vec::new();
                for (&c, &k) in classes.iter().zip(m) {
                    let idx: Vec<usize> = of(c).collect();
                    lens.extend(
                        pick(&idx, k).into_iter().map(|i| self.slices[i].1.len().min(floor)),
                    );
                }
                lens.iter().map(|&l| l as u64).sum::<u64>() <= bytes
            };
            let mut k = n;
            while k > 1 && !fits(&counts(k)) {
                k -= 1;
            }
            let m = counts(k);
            keep.clear();
            for (&c, &kc) in classes.iter().zip(&m) {
                let idx: Vec<usize> = of(c).collect();
                let w = weight(c) / kc as f64;
                keep.extend(pick(&idx, kc).into_iter().map(|i| (i, w)));
            }
            keep.sort_unstable_by_key(|k| k.0);
        }
        // Then every kept slice cut to the same length (the longest first), copying only
        // what is kept.
        let lens: Vec<u64> = keep.iter().map(|&(i, _)| self.slices[i].1.len() as u64).collect();
        let cut = water_level(&lens, bytes).max(least).max(1);
        Sample {
            slices: keep
                .iter()
                .map(|&(i, _)| {
                    let (off, s) = &self.slices[i];
                    (*off, s[..s.len().min(cut)].to_vec())
                })
                .collect(),
            data_len: self.data_len,
            weights: keep.iter().map(|&(_, w)| w).collect(),
            kinds: self.kinds.clone(),
            classes: if self.classes.len() == n {
                keep.iter().map(|&(i, _)| self.classes[i]).collect()
            } else {
                Vec::new()
            },
            spread: self.spread,
            map: self.map.clone(),
            span: self.span,
            look_bytes: self.look_bytes,
            look_seconds: self.look_seconds,
            feed: self.feed,
        }
    }
}

/// The longest `cut` such that `sum(min(len, cut))` over `lens` is at most `bytes`
/// (`usize::MAX`: all fit).
fn water_level(lens: &[u64], bytes: u64) -> usize {
    let mut lens = lens.to_vec();
    lens.sort_unstable();
    let mut left = bytes;
    let mut n = lens.len() as u64;
    for l in lens {
        if l * n > left {
            return usize::try_from(left / n).unwrap_or(usize::MAX);
        }
        left -= l;
        n -= 1;
    }
    usize::MAX
}

/// `k` of `idx`, evenly spaced (all if `k >= idx.len()`).
fn pick(idx: &[usize], k: usize) -> Vec<usize> {
    let n = idx.len();
    if k >= n {
        return idx.to_vec();
    }
    (0..k).map(|j| idx[((2 * j + 1) * n / (2 * k)).min(n - 1)]).collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::segments;
    use super::super::SampleConfig;
    use super::*;

    #[test]
    fn a_cut_keeps_long_slices_and_every_kind() {
        let seg = (3 << 20) + 4321;
        let data = segments(&[2, 2, 4, 2], seg, 24);
        let s = Sample::from_slice(&data, &SampleConfig::default());
        let total: f64 = (0..s.slices.len()).map(|i| s.weight(i)).sum();
        // Room for two 64 KiB slices: one per kind, each standing for its whole kind.
        let cut = s.fit(150_000, 64 << 10, 4096);
        assert_eq!(cut.slices.len(), 2);
        let mut classes = cut.classes.clone();
        classes.sort_unstable();
        assert_eq!(classes, [2, 4]);
        assert!(cut.bytes() <= 150_000);
        let cut_total: f64 = (0..cut.slices.len()).map(|i| cut.weight(i)).sum();
        assert!((cut_total - total).abs() < 1.0);
        // Less room: the slices are cut further, never below `least`.
        let tiny = s.fit(1000, 64 << 10, 4096);
        assert_eq!(tiny.slices.len(), 2);
        assert!(tiny.slices.iter().all(|x| x.1.len() == 4096));
        // A sample of one kind keeps its slices and cuts them (as before).
        let one = Sample::from_slice(&segments(&[2], 1 << 20, 40), &SampleConfig::default());
        let cut = one.fit(3 * 5000, 64 << 10, 4096);
        assert_eq!(cut.slices.len(), 3);
        assert!(cut.slices.iter().all(|x| x.1.len() == 5000));
        // Enough room: nothing changes.
        assert_eq!(s.fit(u64::MAX, 64 << 10, 4096), s);
    }

    #[test]
    fn allocation_and_water_filling() {
        assert_eq!(allocate(12, &[0.4, 0.2, 0.2, 0.2], &[100; 4]), [5, 3, 2, 2]);
        assert_eq!(allocate(3, &[0.4, 0.2, 0.2, 0.2], &[100; 4]), [1, 1, 1, 1]);
        assert_eq!(allocate(3, &[0.99, 0.01], &[100; 2]), [2, 1]);
        assert_eq!(allocate(12, &[0.5, 0.5], &[2, 100]), [2, 10]);
        let s = Sample {
            slices: vec![(0, vec![0; 10]), (100, vec![0; 50]), (200, vec![0; 100])],
            ..Sample::default()
        };
        assert_eq!(s.cut_for(160), usize::MAX);
        assert_eq!(s.cut_for(110), 50);
        assert_eq!(s.cut_for(70), 30);
        assert_eq!(s.cut_for(3), 1);
    }
}
