//! Where the slices and the probes go: the uniform plan for data of one kind, and the plan
//! stratified by the kinds the probes found.

use super::{PlannedSlice, SampleConfig, ENTROPY_SPREAD, PROBE_LEN, PROBE_SPACING};

impl SampleConfig {
    /// The slices `(offset, len)` to take from `source_len` bytes that stand for a write of
    /// `data_len` bytes (`data_len >= source_len`: a writer samples the blocks it holds, a
    /// file is sampled whole), as for data of one kind: one per equal stretch. The budget
    /// applies to `data_len`; slices lie in `source_len`.
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

    /// Where to probe `source_len` bytes that stand for a write of `data_len`: the offsets
    /// of `PROBE_LEN`-byte windows, one per equal stretch at a reproducible random place in
    /// it. At most [`SampleConfig::probes`], at most the uniform plan's bytes, at most one per
    /// `PROBE_SPACING` of the source; empty if fewer than two.
    pub fn probe_plan(&self, source_len: u64, data_len: u64) -> Vec<u64> {
        let uniform = SampleConfig { budget: self.probe_budget, ..self.clone() };
        let total: u64 = uniform.plan(source_len, data_len).iter().map(|p| p.1 as u64).sum();
        let n = (self.probes as u64)
            .min(total / PROBE_LEN as u64)
            .min(source_len / PROBE_SPACING.max(PROBE_LEN as u64));
        if n < 2 {
            return Vec::new();
        }
        let stretch = source_len / n;
        let room = stretch - PROBE_LEN as u64;
        let mut state = self.seed ^ 0x9b0b_e5a1_c0de_0002;
        (0..n).map(|i| i * stretch + splitmix(&mut state) % (room + 1)).collect()
    }

    /// The slices to take, given the entropy class found at each probe of
    /// [`SampleConfig::probe_plan`] (`probes[i]` = (offset, class)). One class (or no
    /// probes): the uniform [`SampleConfig::plan`], each slice standing for an equal share
    /// of the write. Several: stratified by class within the uniform plan's bytes: class `c`
    /// with a share `s` of the probes gets `s` of the bytes (at least a minimum slice, or an
    /// equal split of a small sample) in `ceil(slices x s)` slices, at evenly spaced probes of
    /// its class (random phase), each standing for `s x data_len / slices`.
    pub fn plan_stratified(
        &self,
        source_len: u64,
        data_len: u64,
        probes: &[(u64, u8)],
        spread: Option<f64>,
    ) -> Vec<PlannedSlice> {
        let data_len = data_len.max(source_len);
        let uniform = self.plan(source_len, data_len);
        let mut classes: Vec<u8> = probes.iter().map(|p| p.1).collect();
        classes.sort_unstable();
        classes.dedup();
        let Some(spread) = spread.filter(|_| !classes.is_empty() && !uniform.is_empty()) else {
            let w = data_len as f64 / uniform.len().max(1) as f64;
            return uniform
                .into_iter()
                .map(|(offset, len)| PlannedSlice { offset, len, weight: w, class: None })
                .collect();
        };
        let total: u64 = uniform.iter().map(|p| p.1 as u64).sum();
        let longest = uniform.iter().map(|p| p.1 as u64).max().unwrap_or(1);
        // As many slices as the spread asks for, as long as they stay at least the floor
        // long (shorter slices first, then fewer), and at least one per class.
        let (slices, floor) = self.strata(spread);
        let n = slices.min((total / floor.max(1) as u64) as usize).max(classes.len());
        let p = probes.len() as f64;
        let count = |c: u8| probes.iter().filter(|q| q.1 == c).count();
        let share = |c: u8| count(c) as f64 / p;
        let shares: Vec<f64> = classes.iter().map(|&c| share(c)).collect();
        let caps: Vec<usize> = classes.iter().map(|&c| count(c)).collect();
        let slices = allocate(n, &shares, &caps);
        // Bytes per class in proportion to its share, each at least a floor; the classes
        // above the floor share what the floored ones leave.
        let floor = (self.min_slice.max(1) as u64).min(total / classes.len() as u64).max(1);
        let mut floored: Vec<bool> = classes.iter().map(|_| false).collect();
        let bytes: Vec<u64> = loop {
            let n_floored = floored.iter().filter(|&&f| f).count() as u64;
            let rest = total.saturating_sub(floor * n_floored) as f64;
            let rest_share: f64 =
                classes.iter().zip(&floored).filter(|(_, &f)| !f).map(|(&c, _)| share(c)).sum();
            let b: Vec<u64> = classes
                .iter()
                .zip(&floored)
                .map(|(&c, &f)| if f { floor } else { (rest * share(c) / rest_share) as u64 })
                .collect();
            let mut changed = false;
            for (i, &v) in b.iter().enumerate() {
                if !floored[i] && v < floor {
                    floored[i] = true;
                    changed = true;
                }
            }
            if !changed {
                break b;
            }
        };
        let mut state = self.seed ^ 0x57a7_1f1e_d5a3_0003;
        let mut out = Vec::new();
        for ((&c, &b), &m) in classes.iter().zip(&bytes).zip(&slices) {
            let at: Vec<u64> = probes.iter().filter(|q| q.1 == c).map(|q| q.0).collect();
            let (n_c, s_c) = (at.len(), share(c));
            let len = (b / m as u64).clamp(1, longest);
            // Systematic choice among the class's probes: evenly spaced, random phase.
            let phase = (splitmix(&mut state) % 1024) as f64 / 1024.0;
            for j in 0..m {
                let idx = (((j as f64 + phase) * n_c as f64 / m as f64) as usize).min(n_c - 1);
                out.push(PlannedSlice {
                    offset: at[idx],
                    len: len as usize,
                    weight: s_c * data_len as f64 / m as f64,
                    class: Some(c),
                });
            }
        }
        out.sort_by_key(|s| s.offset);
        out
    }

    /// A stratified sample's slices in all, and the shortest they are planned (or cut) to
    /// before there are fewer of them, given the spread of the probes' entropy within each
    /// kind (`within`, bits per byte). Kinds each alike within themselves (under
    /// `ENTROPY_SPREAD`): `slices` (at least one per kind), at least `context_slice` long,
    /// since a short slice's lack of history is then the larger error. Kinds that vary
    /// within themselves: `mixed_slices`, at least `min_slice` long, since which stretches
    /// the slices hit is then the larger error.
    pub fn strata(&self, within: f64) -> (usize, usize) {
        if within > ENTROPY_SPREAD {
            (self.mixed_slices.max(self.slices).max(1), self.min_slice.max(1))
        } else {
            (self.slices.max(1), self.context_slice.max(1))
        }
    }
}

/// `n` slices among classes of `shares` (summing to 1): at least one per class and at most
/// its `caps`, the others one at a time to the class furthest below its share.
pub(super) fn allocate(n: usize, shares: &[f64], caps: &[usize]) -> Vec<usize> {
    let want: Vec<f64> = shares.iter().map(|s| n as f64 * s.max(0.0)).collect();
    let mut m: Vec<usize> = caps.iter().map(|&cap| cap.min(1)).collect();
    // One at a time to the class furthest below its share that can take one.
    while m.iter().sum::<usize>() < n {
        let next = (0..m.len()).filter(|&i| m[i] < caps[i]).max_by(|&a, &b| {
            (want[a] - m[a] as f64).total_cmp(&(want[b] - m[b] as f64)).then(b.cmp(&a))
        });
        match next {
            Some(i) => m[i] += 1,
            None => break,
        }
    }
    m
}

pub(super) fn splitmix(state: &mut u64) -> u64 {
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
}
