//! The oracle bound: the fastest write any per-block schedule of the measured rungs could make.
//!
//! From the static sweep we know, for every block `j` and rung `r`, the CPU seconds one thread
//! spent (`cpu[r][j]`) and the bytes stored (`stored[r][j]`). A schedule picks one rung per block
//! (raw included, so mixes of raw and compressed blocks count); with `N` threads and a link of
//! `L` bytes/s the pipeline takes at least
//!
//! ```text
//! T(schedule) = max( Σ cpu / N , Σ stored / L )
//! ```
//!
//! (compression and transfer overlap; pipeline fill is ignored, which makes the bound
//! slightly optimistic, as an oracle should be). Minimising a max of two sums over choices is
//! a knapsack-like problem; its Lagrangian relaxation solves it to within one block: for a
//! weight λ each block independently takes the rung minimising `λ·cpu/N + (1-λ)·stored/L`;
//! bisection on λ finds where the two sums cross, and walking the blocks that differ between
//! the two schedules either side of the crossing, most efficient first, finds the best
//! schedule in between. Every static rung is a schedule too, so the oracle is never slower
//! than the best static rung measured.

use std::collections::BTreeMap;

/// What one block cost with one rung.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockCost {
    /// CPU seconds of one thread.
    pub cpu_s: f64,
    /// Bytes stored.
    pub stored: u64,
}

/// Per-block costs of every rung measured on one file.
#[derive(Debug, Clone, Default)]
pub struct Measurements {
    /// Rung names, `costs[r]` belongs to `names[r]`.
    pub names: Vec<String>,
    /// `costs[r][j]`: rung `r` on block `j`; every rung has the same number of blocks.
    pub costs: Vec<Vec<BlockCost>>,
}

impl Measurements {
    /// Add a rung's blocks; refused (returns false) if the block count differs from the rungs
    /// already there (a run that failed part way, or a different block size).
    pub fn add(&mut self, name: &str, blocks: Vec<BlockCost>) -> bool {
        if let Some(first) = self.costs.first() {
            if first.len() != blocks.len() {
                return false;
            }
        }
        if blocks.is_empty() {
            return false;
        }
        self.names.push(name.to_owned());
        self.costs.push(blocks);
        true
    }
}

/// The oracle's schedule and its time.
#[derive(Debug, Clone, PartialEq)]
pub struct Oracle {
    /// Lower bound on the write's wall time, seconds.
    pub seconds: f64,
    /// Bytes the schedule stores.
    pub stored: u64,
    /// Blocks per rung in the schedule.
    pub mix: BTreeMap<String, usize>,
}

impl Oracle {
    /// `zstd:3=10;none=2`, most used first.
    pub fn mix_string(&self) -> String {
        let mut v: Vec<_> = self.mix.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.iter().map(|(k, n)| format!("{k}={n}")).collect::<Vec<_>>().join(";")
    }
}

struct Eval {
    choice: Vec<usize>,
    cpu: f64,
    stored: f64,
}

/// The oracle for `threads` threads and a link of `link_bps` bytes/s. None if there are no
/// measurements.
pub fn oracle(m: &Measurements, threads: usize, link_bps: f64) -> Option<Oracle> {
    let blocks = m.costs.first()?.len();
    let n = threads.max(1) as f64;
    let time = |cpu: f64, stored: f64| (cpu / n).max(stored / link_bps);
    let eval_choice = |choice: Vec<usize>| {
        let (mut cpu, mut stored) = (0.0, 0.0);
        for (j, &r) in choice.iter().enumerate() {
            cpu += m.costs[r][j].cpu_s;
            stored += m.costs[r][j].stored as f64;
        }
        Eval { choice, cpu, stored }
    };
    let weighted = |lambda: f64| {
        let choice = (0..blocks)
            .map(|j| {
                let score = |r: usize| {
                    let c = m.costs[r][j];
                    lambda * c.cpu_s / n + (1.0 - lambda) * c.stored as f64 / link_bps
                };
                (0..m.costs.len())
                    .min_by(|&a, &b| score(a).total_cmp(&score(b)).then(a.cmp(&b)))
                    .unwrap_or(0)
            })
            .collect();
        eval_choice(choice)
    };
    let mut best: Option<Eval> = None;
    let mut consider = |e: Eval| {
        if best.as_ref().is_none_or(|b| time(e.cpu, e.stored) < time(b.cpu, b.stored)) {
            best = Some(e);
        }
    };
    for r in 0..m.costs.len() {
        consider(eval_choice(vec![r; blocks]));
    }
    // λ = 0: least stored (CPU-bound side); λ = 1: least CPU (link-bound side).
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    let mut e_lo = weighted(lo);
    let mut e_hi = weighted(hi);
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        let e = weighted(mid);
        if e.cpu / n > e.stored / link_bps {
            lo = mid;
            e_lo = e;
        } else {
            hi = mid;
            e_hi = e;
        }
    }
    // Walk from the CPU-heavy schedule towards the link-heavy one, block by block, taking the
    // blocks that save the most CPU per byte added first.
    let mut diffs: Vec<usize> = (0..blocks).filter(|&j| e_lo.choice[j] != e_hi.choice[j]).collect();
    let gain = |j: usize| {
        let (a, b) = (m.costs[e_lo.choice[j]][j], m.costs[e_hi.choice[j]][j]);
        let dcpu = a.cpu_s - b.cpu_s;
        let dstored = (b.stored as f64 - a.stored as f64).max(1e-9);
        dcpu / dstored
    };
    diffs.sort_by(|&a, &b| gain(b).total_cmp(&gain(a)));
    let (mut choice, mut cpu, mut stored) = (e_lo.choice.clone(), e_lo.cpu, e_lo.stored);
    let mut walk_best = (time(cpu, stored), choice.clone());
    for j in diffs {
        let (a, b) = (m.costs[choice[j]][j], m.costs[e_hi.choice[j]][j]);
        cpu += b.cpu_s - a.cpu_s;
        stored += b.stored as f64 - a.stored as f64;
        choice[j] = e_hi.choice[j];
        let t = time(cpu, stored);
        if t < walk_best.0 {
            walk_best = (t, choice.clone());
        }
    }
    consider(eval_choice(walk_best.1));
    consider(e_lo);
    consider(e_hi);
    let best = best?;
    let mut mix = BTreeMap::new();
    for &r in &best.choice {
        *mix.entry(m.names[r].clone()).or_insert(0) += 1;
    }
    Some(Oracle { seconds: time(best.cpu, best.stored), stored: best.stored as u64, mix })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bc(cpu_s: f64, stored: u64) -> BlockCost {
        BlockCost { cpu_s, stored }
    }

    /// 10 blocks of 1 MB: raw (no CPU, 1 MB), fast (0.01 s, 0.5 MB), slow (0.1 s, 0.25 MB).
    fn three_rungs(blocks: usize) -> Measurements {
        let mut m = Measurements::default();
        assert!(m.add("none", vec![bc(0.0, 1_000_000); blocks]));
        assert!(m.add("fast", vec![bc(0.01, 500_000); blocks]));
        assert!(m.add("slow", vec![bc(0.1, 250_000); blocks]));
        m
    }

    #[test]
    fn slow_link_takes_the_best_ratio() {
        // 1 MB/s: CPU is free in comparison; all slow: 2.5 s transfer, 0.5 s CPU on 2 threads.
        let o = oracle(&three_rungs(10), 2, 1e6).unwrap();
        assert_eq!(o.mix_string(), "slow=10");
        assert!((o.seconds - 2.5).abs() < 1e-9);
        assert_eq!(o.stored, 2_500_000);
    }

    #[test]
    fn infinite_link_sends_raw() {
        let o = oracle(&three_rungs(10), 2, 1e15).unwrap();
        assert_eq!(o.mix_string(), "none=10");
        assert!(o.seconds < 1e-6);
    }

    #[test]
    fn balanced_link_mixes_rungs_and_beats_every_static_rung() {
        // 1 thread at 40 MB/s: all fast = max(0.1 s CPU, 5 MB / 40 MB/s) = 0.125 s beats all
        // raw (0.25 s), all slow (1.0 s) and every mix.
        let m = three_rungs(10);
        let o = oracle(&m, 1, 40e6).unwrap();
        assert!((o.seconds - 0.125).abs() < 1e-9, "{o:?}");
        // 4 threads: CPU is cheaper and the best schedule mixes slow and fast blocks; the
        // oracle must equal a brute-force search over every mix.
        let o4 = oracle(&m, 4, 40e6).unwrap();
        let brute = (0..=10)
            .flat_map(|k_slow| (0..=10 - k_slow).map(move |k_fast| (k_slow, k_fast)))
            .map(|(s, f)| {
                let raw = 10 - s - f;
                let cpu = 0.1 * s as f64 + 0.01 * f as f64;
                let bytes = 250_000.0 * s as f64 + 500_000.0 * f as f64 + 1e6 * raw as f64;
                (cpu / 4.0).max(bytes / 40e6)
            })
            .fold(f64::INFINITY, f64::min);
        assert!(o4.seconds <= brute + 1e-9, "oracle {} brute {brute}", o4.seconds);
        assert!(
            o4.seconds >= brute - 1e-9,
            "oracle {} cannot beat brute force {brute}",
            o4.seconds
        );
        assert!(o4.mix.len() >= 2, "a mix: {o4:?}");
    }

    #[test]
    fn mismatched_block_counts_are_refused() {
        let mut m = three_rungs(3);
        assert!(!m.add("other", vec![bc(0.0, 1); 4]));
        assert!(!m.add("empty", vec![]));
        assert_eq!(m.names.len(), 3);
        assert!(oracle(&Measurements::default(), 2, 1e6).is_none());
    }
}
