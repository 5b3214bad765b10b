//! Placement: which tier each piece of a write goes to, and at which rung (HCompress' engine).
//!
//! The problem, after HCompress (Devarajan et al., IPDPS 2020): a write is cut into pieces
//! (adz frames, each with a data class); the tiers are ordered fastest first, each with its
//! free capacity and bandwidth; each rung of the codec ladder has, per class, a compression
//! speed and ratio ([`CostTable`]). A piece placed on tier `t` at rung `r` costs
//!
//! ```text
//! raw / speed(class, r) + stored(r) / bandwidth(t) + latency(t),   stored(r) = ceil(raw / ratio(class, r))
//! ```
//!
//! and the write's time is the sum over its pieces. A *schema* gives each tier a contiguous
//! run of the pieces, in data order and tier order (a tier may get none), compressed at one
//! rung per tier, and the stored bytes on each tier stay within its free capacity. So the
//! first data fills the fastest tier at the rung that matches that tier's speed, the rest
//! spills down, and each tier's run becomes one adz file (a segment).
//!
//! [`place`] finds the schema of least time exactly with a dynamic program over
//! (tier, first piece not yet placed): `f(t, i) = min(f(t+1, i), min_r min_{i<j<=J} cost(t, r,
//! i..j) + f(t+1, j))`, where `J` is the last cut at which rung `r`'s pieces still fit on
//! `t`. The inner minimum is a sliding-window minimum (both ends of the window move one way
//! as `i` falls), so the program takes `O(tiers x rungs x pieces)` time: linear in the
//! number of tiers, as HCompress' engine.

use std::collections::VecDeque;
use std::ops::Range;

use adz_format::CodecSpec;
use serde::{Deserialize, Serialize};

use crate::error::TierError;

/// One rung's cost for one class of data: what a machine profile measures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RungCost {
    /// Compression speed, raw bytes per second, as the write will see it (all its threads).
    pub speed: f64,
    /// Compression ratio, raw / stored (>= 1; a rung that cannot shrink the data has 1).
    pub ratio: f64,
}

/// The rungs the DP may choose from and their cost per data class: `cost[class][rung]`.
///
/// Today the caller gives it ([`CostTable::reference`] builds one from the controller's
/// built-in priors); a machine profile (`adz profile`, issue 27) is meant to fill the same
/// table from measurements, one row per class of [`adz_control::classify`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostTable {
    /// The rungs, as codec settings (`"zstd:3"`).
    #[serde(with = "rung_names")]
    pub rungs: Vec<CodecSpec>,
    /// One row per data class, each with one [`RungCost`] per rung.
    pub classes: Vec<Vec<RungCost>>,
}

/// Rungs as their names (`"zstd:3"`) in a cost table or profile file.
pub(crate) mod rung_names {
    use adz_format::CodecSpec;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(rungs: &[CodecSpec], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(rungs.iter().map(|r| r.to_string()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<CodecSpec>, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        names
            .iter()
            .map(|n| n.parse().map_err(|e| D::Error::custom(format!("rung {n:?}: {e}"))))
            .collect()
    }
}

/// Bytes a frame adds besides its payload: its header and its index entry.
pub const FRAME_OVERHEAD: u64 = (adz_format::FRAME_HEADER_LEN + adz_format::INDEX_ENTRY_LEN) as u64;

/// Bytes an adz file adds besides its frames: file header, index header and footer.
pub const FILE_OVERHEAD: u64 =
    (adz_format::FILE_HEADER_LEN + adz_format::INDEX_HEADER_LEN + adz_format::FOOTER_LEN) as u64;

/// The data classes of [`adz_control::classify`]: 0 (empty) ..= 4 (random-looking).
pub const CLASSES: usize = 5;

impl CostTable {
    /// Checks the table's shape and values.
    pub fn new(rungs: Vec<CodecSpec>, classes: Vec<Vec<RungCost>>) -> Result<CostTable, TierError> {
        let bad = |why: String| Err(TierError::Costs(why));
        if rungs.is_empty() || classes.is_empty() {
            return bad("the table needs at least one rung and one class".into());
        }
        for (k, row) in classes.iter().enumerate() {
            if row.len() != rungs.len() {
                return bad(format!("class {k} has {} costs for {} rungs", row.len(), rungs.len()));
            }
            for (r, c) in row.iter().enumerate() {
                if !(c.speed.is_finite() && c.speed > 0.0 && c.ratio.is_finite() && c.ratio >= 1.0)
                {
                    return bad(format!(
                        "class {k} rung {}: speed must be > 0 and ratio >= 1, got {} and {}",
                        rungs[r], c.speed, c.ratio
                    ));
                }
            }
        }
        Ok(CostTable { rungs, classes })
    }

    /// A table from the controller's built-in priors ([`adz_control::reference`]),
    /// for [`CLASSES`] classes: `threads` times one thread's speed; random-looking data
    /// (class 4) gets ratio 1 at every rung, since no codec shrinks it.
    pub fn reference(rungs: &[CodecSpec], threads: usize) -> CostTable {
        let n = threads.max(1) as f64;
        let row = |random: bool| {
            rungs
                .iter()
                .map(|&r| {
                    let p = adz_control::reference(r);
                    RungCost { speed: p.speed * n, ratio: if random { 1.0 } else { p.ratio } }
                })
                .collect::<Vec<_>>()
        };
        let classes = (0..CLASSES).map(|k| row(k == 4)).collect();
        CostTable { rungs: rungs.to_vec(), classes }
    }

    /// The default rungs: raw, lz4:1, zstd:1, zstd:3, zstd:9, zstd:19, xz:6.
    pub fn default_rungs() -> Vec<CodecSpec> {
        ["none", "lz4:1", "zstd:1", "zstd:3", "zstd:9", "zstd:19", "xz:6"]
            .iter()
            .map(|s| s.parse().expect("a valid built-in rung"))
            .collect()
    }

    /// Reads a table from JSON (`{"rungs": ["lz4:1", ...], "classes": [[{"speed": 5e8,
    /// "ratio": 2.1}, ...], ...]}`) and checks it.
    pub fn from_json(text: &str) -> Result<CostTable, TierError> {
        let t: CostTable =
            serde_json::from_str(text).map_err(|e| TierError::Costs(e.to_string()))?;
        CostTable::new(t.rungs, t.classes)
    }

    fn cost(&self, class: usize, rung: usize) -> RungCost {
        let row = &self.classes[class.min(self.classes.len() - 1)];
        row[rung]
    }

    /// Stored bytes of a piece (one frame) of `raw` bytes of `class` at `rung`, as the DP
    /// counts them: the payload and [`FRAME_OVERHEAD`]. A payload never exceeds its raw
    /// bytes (a frame that does not shrink is stored raw).
    pub fn stored(&self, raw: u64, class: usize, rung: usize) -> u64 {
        let payload = (raw as f64 / self.cost(class, rung).ratio).ceil() as u64;
        payload.min(raw) + FRAME_OVERHEAD
    }
}

/// A piece of a write: its raw length and its data class (a row of the [`CostTable`]; a class
/// past the table's last row uses the last row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Raw bytes.
    pub raw: u64,
    /// Data class.
    pub class: usize,
}

/// What the DP knows of a tier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TierSlot {
    /// Bytes still free on the tier.
    pub free: u64,
    /// Write bandwidth, bytes per second.
    pub bandwidth: f64,
    /// Fixed time per piece written to the tier, seconds.
    pub latency: f64,
}

/// One tier's run of pieces in a [`Plan`].
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSegment {
    /// Index of the tier.
    pub tier: usize,
    /// Index of the rung in the [`CostTable`].
    pub rung: usize,
    /// The pieces, a contiguous run.
    pub pieces: Range<usize>,
    /// Stored bytes, as the DP counts them.
    pub stored: u64,
    /// Predicted seconds.
    pub seconds: f64,
}

/// The DP's answer: the segments in data order (tiers in order; empty runs left out).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// The segments.
    pub segments: Vec<PlanSegment>,
    /// Predicted seconds of the whole write.
    pub seconds: f64,
}

/// What the DP chose at (tier, piece).
#[derive(Debug, Clone, Copy)]
enum Choice {
    Skip,
    Take { rung: u32, end: u32 },
}

/// Finds the schema of least predicted time; see the module docs.
///
/// Fails with [`TierError::NoRoom`] when the pieces cannot fit on the tiers at any rung.
pub fn place(pieces: &[Piece], tiers: &[TierSlot], costs: &CostTable) -> Result<Plan, TierError> {
    let p = pieces.len();
    let rungs = costs.rungs.len();
    if p == 0 {
        return Ok(Plan::default());
    }
    if tiers.is_empty() {
        return Err(TierError::NoRoom { raw: pieces.iter().map(|x| x.raw).sum() });
    }
    // Prefix sums per rung: stored bytes, compression seconds, and stored bytes as f64.
    let mut stored = vec![0u64; rungs * (p + 1)];
    let mut cpu = vec![0f64; rungs * (p + 1)];
    for r in 0..rungs {
        let base = r * (p + 1);
        for (i, piece) in pieces.iter().enumerate() {
            let c = costs.cost(piece.class, r);
            stored[base + i + 1] = stored[base + i] + costs.stored(piece.raw, piece.class, r);
            cpu[base + i + 1] = cpu[base + i] + piece.raw as f64 / c.speed;
        }
    }
    let t_count = tiers.len();
    // f[t][i]: least seconds to place pieces i.. on tiers t..; row t_count is the base case.
    let mut next = vec![f64::INFINITY; p + 1];
    next[p] = 0.0;
    let mut choice = vec![Choice::Skip; t_count * (p + 1)];
    let mut cur = vec![0f64; p + 1];
    let mut window: VecDeque<(usize, f64)> = VecDeque::with_capacity(p + 1);
    for t in (0..t_count).rev() {
        let tier = tiers[t];
        cur.copy_from_slice(&next);
        for r in 0..rungs {
            let base = r * (p + 1);
            // g(j) = prefix cost up to j on (t, r) + f(t+1, j); cost(i..j) = g(j) - prefix(i).
            let prefix = |j: usize| {
                cpu[base + j] + stored[base + j] as f64 / tier.bandwidth + j as f64 * tier.latency
            };
            window.clear();
            let mut hi = p; // the window's last j, falls with i
            for i in (0..p).rev() {
                // j = i + 1 enters at the front.
                let j = i + 1;
                let g = prefix(j) + next[j];
                while window.front().is_some_and(|&(_, v)| v >= g) {
                    window.pop_front();
                }
                window.push_front((j, g));
                // Drop the cuts past what fits on the tier from piece i.
                while stored[base + hi] - stored[base + i] > tier.free {
                    hi -= 1;
                }
                while window.back().is_some_and(|&(k, _)| k > hi) {
                    window.pop_back();
                }
                if let Some(&(end, g)) = window.back() {
                    let v = g - prefix(i);
                    if v < cur[i] {
                        cur[i] = v;
                        choice[t * (p + 1) + i] = Choice::Take { rung: r as u32, end: end as u32 };
                    }
                }
            }
        }
        std::mem::swap(&mut cur, &mut next);
    }
    if !next[0].is_finite() {
        return Err(TierError::NoRoom { raw: pieces.iter().map(|x| x.raw).sum() });
    }
    // Walk the choices from (0, 0).
    let mut plan = Plan { segments: Vec::new(), seconds: 0.0 };
    let mut i = 0;
    for (t, tier) in tiers.iter().enumerate() {
        if i == p {
            break;
        }
        if let Choice::Take { rung, end } = choice[t * (p + 1) + i] {
            let (r, end) = (rung as usize, end as usize);
            let base = r * (p + 1);
            let st = stored[base + end] - stored[base + i];
            let seconds = cpu[base + end] - cpu[base + i]
                + st as f64 / tier.bandwidth
                + (end - i) as f64 * tier.latency;
            plan.seconds += seconds;
            plan.segments.push(PlanSegment {
                tier: t,
                rung: r,
                pieces: i..end,
                stored: st,
                seconds,
            });
            i = end;
        }
    }
    debug_assert_eq!(i, p);
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn table(rows: Vec<Vec<(f64, f64)>>) -> CostTable {
        let rungs =
            (0..rows[0].len()).map(|i| format!("zstd:{}", i + 1).parse().unwrap()).collect();
        let classes = rows
            .into_iter()
            .map(|row| row.into_iter().map(|(speed, ratio)| RungCost { speed, ratio }).collect())
            .collect();
        CostTable::new(rungs, classes).unwrap()
    }

    /// Every schema by enumeration: each piece a (tier, rung), tiers non-decreasing in data
    /// order, one rung per tier, within each tier's free bytes. The least time, or None.
    fn brute_force(pieces: &[Piece], tiers: &[TierSlot], costs: &CostTable) -> Option<f64> {
        let (t_n, r_n, p) = (tiers.len(), costs.rungs.len(), pieces.len());
        let options = t_n * r_n;
        let mut best: Option<f64> = None;
        let mut code = vec![0usize; p];
        loop {
            let mut ok = true;
            let mut rung_of = vec![None; t_n];
            let mut used = vec![0u64; t_n];
            let mut seconds = 0.0;
            for (i, &c) in code.iter().enumerate() {
                let (t, r) = (c / r_n, c % r_n);
                if i > 0 && code[i - 1] / r_n > t {
                    ok = false;
                    break;
                }
                if *rung_of[t].get_or_insert(r) != r {
                    ok = false;
                    break;
                }
                let piece = pieces[i];
                let st = costs.stored(piece.raw, piece.class, r);
                used[t] += st;
                let c = costs.cost(piece.class, r);
                seconds +=
                    piece.raw as f64 / c.speed + st as f64 / tiers[t].bandwidth + tiers[t].latency;
            }
            if ok && used.iter().zip(tiers).all(|(u, t)| *u <= t.free) {
                best = Some(best.map_or(seconds, |b: f64| b.min(seconds)));
            }
            // Next code in base `options`.
            let mut k = 0;
            loop {
                if k == p {
                    return best;
                }
                code[k] += 1;
                if code[k] < options {
                    break;
                }
                code[k] = 0;
                k += 1;
            }
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
    }

    fn check_plan(plan: &Plan, pieces: &[Piece], tiers: &[TierSlot], costs: &CostTable) {
        let mut used = vec![0u64; tiers.len()];
        let mut next = 0;
        let mut last_tier = None;
        for s in &plan.segments {
            assert_eq!(s.pieces.start, next, "segments are contiguous in data order");
            assert!(last_tier.is_none_or(|t| t < s.tier), "tiers in order, once each");
            last_tier = Some(s.tier);
            next = s.pieces.end;
            let st: u64 =
                pieces[s.pieces.clone()].iter().map(|x| costs.stored(x.raw, x.class, s.rung)).sum();
            assert_eq!(st, s.stored);
            used[s.tier] += st;
        }
        assert_eq!(next, pieces.len(), "every piece is placed");
        for (u, t) in used.iter().zip(tiers) {
            assert!(*u <= t.free, "capacity exceeded: {u} > {}", t.free);
        }
    }

    fn arb_case() -> impl Strategy<Value = (Vec<Piece>, Vec<TierSlot>, CostTable)> {
        let pieces = prop::collection::vec((1u64..5000, 0usize..2), 0..6)
            .prop_map(|v| v.into_iter().map(|(raw, class)| Piece { raw, class }).collect());
        let tiers = prop::collection::vec((0u64..12_000, 1.0f64..1000.0, 0.0f64..2.0), 1..4)
            .prop_map(|v| {
                v.into_iter()
                    .map(|(free, bandwidth, latency)| TierSlot { free, bandwidth, latency })
                    .collect()
            });
        let costs = (1usize..4).prop_flat_map(|r| {
            prop::collection::vec(prop::collection::vec((1.0f64..2000.0, 1.0f64..8.0), r), 2)
                .prop_map(table)
        });
        (pieces, tiers, costs)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The DP's time equals the best schema found by enumerating all of them, its plan
        /// costs what it says, and it never puts more on a tier than the tier has free.
        #[test]
        fn dp_equals_brute_force((pieces, tiers, costs) in arb_case()) {
            let brute = brute_force(&pieces, &tiers, &costs);
            match place(&pieces, &tiers, &costs) {
                Ok(plan) => {
                    check_plan(&plan, &pieces, &tiers, &costs);
                    let b = brute.expect("the DP found a plan, so one exists");
                    prop_assert!(close(plan.seconds, b), "dp {} brute {}", plan.seconds, b);
                    let sum: f64 = plan.segments.iter().map(|s| s.seconds).sum();
                    prop_assert!(close(sum, plan.seconds));
                }
                Err(TierError::NoRoom { .. }) => prop_assert!(brute.is_none()),
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn each_tier_gets_the_rung_that_matches_its_speed() {
        // Rung 0: fast and light (1 MB/s, ratio 2); rung 1: slow and dense (100 kB/s, ratio 4).
        let costs = table(vec![vec![(1e6, 2.0), (1e5, 4.0)]]);
        let pieces = vec![Piece { raw: 100_000, class: 0 }; 10];
        let fast = TierSlot { free: u64::MAX, bandwidth: 1e9, latency: 0.0 };
        let slow = TierSlot { free: u64::MAX, bandwidth: 1e4, latency: 0.0 };
        // On a fast tier the light rung wins (0.1 s a piece against 1 s) ...
        let plan = place(&pieces, &[fast, slow], &costs).unwrap();
        assert_eq!(plan.segments.len(), 1);
        let s = &plan.segments[0];
        assert_eq!((s.tier, s.rung, s.pieces.clone()), (0, 0, 0..10));
        // ... on a slow one the dense rung: 1 s + 25 096 B at 10 kB/s a piece, against
        // 0.1 s + 50 096 B (a frame's overhead is 96 bytes).
        let plan = place(&pieces, &[slow], &costs).unwrap();
        assert_eq!((plan.segments[0].tier, plan.segments[0].rung), (0, 1));
        assert!((plan.seconds - 35.096).abs() < 1e-9, "{}", plan.seconds);
        // A fast tier with room for 8 dense pieces or 4 light ones takes 8 dense ones, and
        // the rest goes below.
        let small = TierSlot { free: 8 * 25_096, ..fast };
        let plan = place(&pieces, &[small, slow], &costs).unwrap();
        let got: Vec<_> =
            plan.segments.iter().map(|s| (s.tier, s.rung, s.pieces.clone(), s.stored)).collect();
        assert_eq!(got, vec![(0, 1, 0..8, 8 * 25_096), (1, 1, 8..10, 2 * 25_096)]);
        // Nothing fits anywhere: a clear error.
        let tiny = [TierSlot { free: 10, bandwidth: 1.0, latency: 0.0 }];
        assert!(matches!(place(&pieces, &tiny, &costs), Err(TierError::NoRoom { raw: 1_000_000 })));
        assert_eq!(place(&[], &tiny, &costs).unwrap(), Plan::default());
    }

    #[test]
    fn reference_table_is_valid() {
        let rungs = CostTable::default_rungs();
        let t = CostTable::reference(&rungs, 2);
        let t = CostTable::new(t.rungs, t.classes).unwrap();
        assert_eq!(t.classes.len(), CLASSES);
        assert!(t.classes[4].iter().all(|c| c.ratio == 1.0));
        assert!(CostTable::new(rungs.clone(), vec![vec![]]).is_err());
        let json = serde_json::to_string(&t).unwrap();
        assert!(json.contains("\"zstd:19\""));
        assert_eq!(CostTable::from_json(&json).unwrap(), t);
        assert!(CostTable::from_json(&json.replace("zstd:19", "zstd:99")).is_err());
        let bad = json.replacen("\"ratio\":", "\"ratio\":0.5,\"x\":", 1);
        assert!(CostTable::from_json(&bad).is_err());
    }
}
