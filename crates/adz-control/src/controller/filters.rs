//! Filters chosen by measurement: which byte filters (shuffle, delta, xor, bitshuffle by
//! element width) a class's blocks go through before the codec, learned from shadow probes on
//! slices of its own blocks (docs/decisions/0059-filters-chosen-by-measurement.md, 0067).
//!
//! A probe compresses one slice of a block with the block's codec twice, through the class's
//! current filters and through a candidate chain, and reports both sizes. The chooser keeps,
//! per candidate, the mean of `ln(candidate's size / current's size)` over its probes, and
//! adopts a chain once it has saved at least [`MIN_GAIN`] on [`CONFIRM`] probes in a row and
//! on average. Widths are tried by a plain shuffle first (2, 4, 8 bytes); a width's delta,
//! xor and bitshuffle chains are tried only where its shuffle saved anything, so data that no
//! filter helps (text, compressed or noisy numbers) costs three probes, and numbers at most
//! three more per width that saved. After that one candidate is re-probed every [`RECHECK`]
//! blocks of the class, including "no filters", so that a class whose data changes finds its
//! way back; the rechecks cost the same whatever the number of candidates.

use adz_format::{FilterSpec, Filters};

/// The least a chain must save, as a fraction of the current choice's stored bytes, on each
/// probe and on average, to be adopted: below it the filter pass (a few GB/s per core) and the
/// switch (the model relearns the class's ratio) cost more than they gain.
pub(super) const MIN_GAIN: f64 = 0.02;

/// Probes of one candidate before it may be adopted: one slice can be unlike the class.
pub(super) const CONFIRM: u32 = 2;

/// Once the candidates have been tried, one is probed again every this many blocks of the
/// class.
pub(super) const RECHECK: u64 = 32;

/// Element widths whose chains are candidates.
const WIDTHS: [u8; 3] = [2, 4, 8];

/// Chains per width in [`chains`]: the shuffle, then delta and xor each followed by it, then
/// the bitshuffle.
const PER_WIDTH: usize = 4;

/// What is known of one candidate chain.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    filters: Filters,
    /// Probes, and their mean `ln(size through this chain / size through the current one)`.
    n: u32,
    mean: f64,
    /// The latest probe saved at least [`MIN_GAIN`]: the next probe of this candidate may
    /// confirm it.
    pending: bool,
}

/// The filter choice of one class (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct FilterChoice {
    current: Filters,
    /// "None" and every chain by width (see [`chains`]); the current one's values are 0.
    cands: Vec<Candidate>,
    /// Blocks decided since the last probe.
    since: u64,
    /// Round-robin position of the rechecks.
    turn: usize,
    /// Chain adoptions so far.
    switches: u32,
}

/// The candidate chains: none, then per width a shuffle, delta then shuffle, xor then
/// shuffle, and a bitshuffle (bit planes: where a byte's high bits follow the data and its
/// low bits are noise, they give a codec runs that the byte shuffle leaves mixed).
/// [`shuffle_of`] reads this layout.
fn chains() -> Vec<Filters> {
    let mut out = vec![Filters::NONE];
    for w in WIDTHS {
        let (Ok(s), Ok(d), Ok(x), Ok(b)) = (
            FilterSpec::shuffle(w),
            FilterSpec::delta(w),
            FilterSpec::xor(w),
            FilterSpec::bitshuffle(w),
        ) else {
            continue;
        };
        out.extend([&[s][..], &[d, s], &[x, s], &[b]].iter().filter_map(|c| Filters::new(c).ok()));
    }
    out
}

/// The index in [`chains`] of the plain shuffle of chain `i`'s width (itself for a shuffle);
/// None for "none".
fn shuffle_of(i: usize) -> Option<usize> {
    i.checked_sub(1).map(|j| 1 + j - j % PER_WIDTH)
}

/// The chain to start a class with, from one slice of its data: `size(chain)` is the slice's
/// stored bytes through `chain` at the class's start rung (None: it could not be measured).
/// The probes' search on one larger slice: the plain shuffles, and the delta, xor and
/// bitshuffle chains of the widths whose shuffle saved; the chain that stores least, if it
/// saves at least
/// [`MIN_GAIN`] over no filter, else none. The probes then go on from it as from any choice.
pub fn start_filters(mut size: impl FnMut(Filters) -> Option<u64>) -> Filters {
    let Some(base) = size(Filters::NONE).filter(|&b| b > 0) else { return Filters::NONE };
    let mut best = (Filters::NONE, base);
    let mut shuffle_saved = false;
    for (i, chain) in chains().into_iter().enumerate().skip(1) {
        let shuffle = shuffle_of(i) == Some(i);
        if !shuffle && !shuffle_saved {
            continue;
        }
        let Some(s) = size(chain) else { continue };
        if shuffle {
            shuffle_saved = s < base;
        }
        if s < best.1 {
            best = (chain, s);
        }
    }
    let saves = best.1 as f64 <= base as f64 * (1.0 - MIN_GAIN);
    if saves {
        best.0
    } else {
        Filters::NONE
    }
}

impl FilterChoice {
    pub(crate) fn new() -> FilterChoice {
        let cands = chains()
            .into_iter()
            .map(|filters| Candidate { filters, n: 0, mean: 0.0, pending: false })
            .collect();
        FilterChoice { current: Filters::NONE, cands, since: 0, turn: 0, switches: 0 }
    }

    /// Start from `filters` (see [`start_filters`]): what the candidates were measured
    /// against is forgotten, so the probes try them again, "none" among them.
    pub(crate) fn start_with(&mut self, filters: Filters) {
        if self.index(filters).is_none() || self.switches > 0 {
            return;
        }
        *self = FilterChoice { current: filters, ..FilterChoice::new() };
    }

    /// The filters the class's blocks go through now.
    pub(crate) fn current(&self) -> Filters {
        self.current
    }

    /// Chains adopted so far.
    #[cfg(test)]
    pub(crate) fn switches(&self) -> u32 {
        self.switches
    }

    fn index(&self, f: Filters) -> Option<usize> {
        self.cands.iter().position(|c| c.filters == f)
    }

    /// Whether candidate `i` is worth a probe: "none" and the plain shuffles always; a delta,
    /// xor or bitshuffle chain where its width's shuffle saved something.
    fn eligible(&self, i: usize) -> bool {
        match shuffle_of(i) {
            Some(s) if s != i => self.cands[s].n > 0 && self.cands[s].mean < 0.0,
            _ => true,
        }
    }

    /// One more block of the class was decided.
    pub(crate) fn tick(&mut self) {
        self.since += 1;
    }

    /// The candidate to probe next, if any is due.
    pub(crate) fn due(&self) -> Option<Filters> {
        let cur = self.index(self.current);
        // First round: every eligible candidate once; then a second probe of the one that
        // saved most.
        let untried = (0..self.cands.len())
            .find(|&i| Some(i) != cur && self.cands[i].n == 0 && self.eligible(i));
        let confirm = (0..self.cands.len())
            .filter(|&i| Some(i) != cur && self.cands[i].pending)
            .min_by(|&a, &b| self.cands[a].mean.total_cmp(&self.cands[b].mean));
        if let Some(i) = untried.or(confirm) {
            return Some(self.cands[i].filters);
        }
        if self.since < RECHECK {
            return None;
        }
        let k = self.cands.len();
        for j in 0..k {
            let i = (self.turn + j) % k;
            if Some(i) != cur && self.eligible(i) {
                return Some(self.cands[i].filters);
            }
        }
        None
    }

    /// A probe's result: a slice of `raw` bytes stored in `base` bytes through `base_filters`
    /// and in `stored` bytes through `filters`. Returns true if the class switches chains.
    pub(crate) fn record(
        &mut self,
        base_filters: Filters,
        filters: Filters,
        base: u64,
        stored: u64,
    ) -> bool {
        self.since = 0;
        if base_filters != self.current || base == 0 || stored == 0 {
            // Measured against a chain the class has since left: not comparable any more.
            return false;
        }
        let Some(i) = self.index(filters) else { return false };
        self.turn = (i + 1) % self.cands.len();
        let d = (stored as f64 / base as f64).ln();
        let c = &mut self.cands[i];
        // Forgetting: a recheck weighs as much as the whole past, so a change in the data
        // shows within two probes.
        c.n = c.n.saturating_add(1);
        let w = if c.n <= CONFIRM { 1.0 / f64::from(c.n) } else { 0.5 };
        c.mean += w * (d - c.mean);
        let gain = (1.0 - MIN_GAIN).ln();
        let confirmed = c.pending && d <= gain && c.mean <= gain;
        c.pending = d <= gain && !confirmed;
        if confirmed && c.n >= CONFIRM {
            self.adopt(i);
            return true;
        }
        false
    }

    /// Make candidate `i` the current chain: every other candidate's figures are rebased on it
    /// (a difference of logarithms against the old chain, minus the new one's).
    fn adopt(&mut self, i: usize) {
        let shift = self.cands[i].mean;
        for (j, c) in self.cands.iter_mut().enumerate() {
            if j == i {
                *c = Candidate { mean: 0.0, pending: false, ..*c };
            } else if c.n > 0 {
                c.mean -= shift;
                c.pending = false;
            }
        }
        // The old chain: as good as itself was, i.e. -shift against the new one.
        if let Some(old) = self.index(self.current) {
            let c = &mut self.cands[old];
            *c = Candidate { n: CONFIRM, mean: -shift, pending: false, ..*c };
        }
        self.current = self.cands[i].filters;
        self.switches += 1;
        self.since = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> Filters {
        s.parse().unwrap()
    }

    /// Runs the chooser over `blocks` blocks whose slices store `size(filters)` bytes.
    fn run(blocks: u64, size: impl Fn(Filters) -> u64, ch: &mut FilterChoice) -> u32 {
        let mut probes = 0;
        for _ in 0..blocks {
            ch.tick();
            if let Some(cand) = ch.due() {
                probes += 1;
                let cur = ch.current();
                ch.record(cur, cand, size(cur), size(cand));
            }
        }
        probes
    }

    #[test]
    fn candidates_are_every_width_and_chain() {
        let c = chains();
        assert_eq!(c.len(), 13);
        assert_eq!(c[0], Filters::NONE);
        assert_eq!(c[1], f("shuffle:2"));
        assert_eq!(c[4], f("bitshuffle:2"));
        assert_eq!(c[6], f("delta:4,shuffle:4"));
        assert_eq!(c[11], f("xor:8,shuffle:8"));
        assert_eq!(c[12], f("bitshuffle:8"));
        let widths: Vec<_> = (0..c.len()).map(shuffle_of).collect();
        let mut want = vec![None];
        for s in [1, 5, 9] {
            want.extend([Some(s); PER_WIDTH]);
        }
        assert_eq!(widths, want);
    }

    #[test]
    fn adopts_the_chain_that_saves_most_on_pixel_like_data() {
        // FITS-like 32-bit pixels: shuffle:4 saves 15 %, delta:4,shuffle:4 20 %, others less.
        let size = |x: Filters| -> u64 {
            match x.to_string().as_str() {
                "shuffle:4" => 85_000,
                "delta:4,shuffle:4" => 80_000,
                "xor:4,shuffle:4" => 81_000,
                "shuffle:2" => 95_000,
                "shuffle:8" => 90_000,
                _ => 100_000,
            }
        };
        let mut ch = FilterChoice::new();
        run(40, size, &mut ch);
        assert_eq!(ch.current(), f("delta:4,shuffle:4"));
        // It stays there: the rechecks do not make it wander.
        run(2000, size, &mut ch);
        assert_eq!(ch.current(), f("delta:4,shuffle:4"));
        assert!(ch.switches() <= 2, "{} switches", ch.switches());
    }

    #[test]
    fn text_keeps_no_filters_for_three_probes_and_rare_rechecks() {
        // Every filter makes text worse.
        let size = |x: Filters| if x.is_empty() { 50_000 } else { 60_000 };
        let mut ch = FilterChoice::new();
        let first = run(10, size, &mut ch);
        assert_eq!(first, 3, "one plain shuffle per width");
        let later = run(1000, size, &mut ch);
        assert_eq!(ch.current(), Filters::NONE);
        assert!(later <= 1000 / RECHECK as u32 + 1, "{later} probes in 1000 blocks");
    }

    #[test]
    fn a_gain_below_the_threshold_or_on_one_slice_only_is_not_taken() {
        let mut ch = FilterChoice::new();
        // 1 % better: not worth a filter pass.
        run(500, |x| if x.is_empty() { 100_000 } else { 99_000 }, &mut ch);
        assert_eq!(ch.current(), Filters::NONE);
        // One good slice, then a bad one: not confirmed.
        let mut ch = FilterChoice::new();
        let cand = ch.due().unwrap();
        assert!(!ch.record(Filters::NONE, cand, 100_000, 70_000));
        assert!(!ch.record(Filters::NONE, cand, 100_000, 101_000));
        assert_eq!(ch.current(), Filters::NONE);
    }

    #[test]
    fn finds_its_way_back_when_the_data_changes() {
        let mut ch = FilterChoice::new();
        run(100, |x| if x == f("shuffle:2") { 70_000 } else { 100_000 }, &mut ch);
        assert_eq!(ch.current(), f("shuffle:2"));
        // Now the shuffle hurts: no filters stores least again.
        run(3000, |x| if x.is_empty() { 70_000 } else { 100_000 }, &mut ch);
        assert_eq!(ch.current(), Filters::NONE);
    }

    #[test]
    fn the_start_takes_the_chain_that_stores_least_on_one_slice() {
        let mut asked = Vec::new();
        let mut pixels = |x: Filters| {
            asked.push(x);
            Some(match x.to_string().as_str() {
                "shuffle:4" => 850,
                "xor:4,shuffle:4" => 790,
                "delta:4,shuffle:4" => 800,
                _ => 1000,
            })
        };
        assert_eq!(start_filters(&mut pixels), f("xor:4,shuffle:4"));
        // Widths whose shuffle did not save get no delta, xor or bitshuffle: 1 + 3 shuffles
        // + 3.
        assert_eq!(asked.len(), 7, "{asked:?}");
        // Text: nothing saves; 1 % is not enough; nothing measurable: none.
        assert_eq!(start_filters(|x| Some(if x.is_empty() { 1000 } else { 1100 })), Filters::NONE);
        assert_eq!(start_filters(|x| Some(if x.is_empty() { 1000 } else { 990 })), Filters::NONE);
        assert_eq!(start_filters(|_| None), Filters::NONE);
        // A class started on a chain goes back to none if the probes say so.
        let mut ch = FilterChoice::new();
        ch.start_with(f("shuffle:8"));
        assert_eq!(ch.current(), f("shuffle:8"));
        run(200, |x| if x.is_empty() { 700 } else { 1000 }, &mut ch);
        assert_eq!(ch.current(), Filters::NONE);
    }

    /// Particle positions as f32 (a cell plus a uniform offset): the planes of the slow bits
    /// are runs, so bit planes store less than any byte chain. The sizes are lz4:1's on
    /// 16 KiB slices of such data (crates/adz-codec/tests/bitshuffle.rs, rounded).
    fn particles(x: Filters) -> u64 {
        match x.to_string().as_str() {
            "-" => 16_400,
            "shuffle:4" => 12_400,
            "delta:4,shuffle:4" => 12_900,
            "xor:4,shuffle:4" => 12_700,
            "bitshuffle:4" => 10_000,
            "shuffle:2" => 15_000,
            "bitshuffle:2" => 14_000,
            "shuffle:8" => 14_500,
            "bitshuffle:8" => 13_500,
            _ => 16_000,
        }
    }

    /// Sequential 64-bit ids: whole bytes repeat, so the byte chains make runs and bit planes
    /// cut them up (zstd:1 on 256 KiB of them: shuffle:8 3.4x smaller than bitshuffle:8).
    fn ids(x: Filters) -> u64 {
        match x.to_string().as_str() {
            "-" => 33_000,
            "shuffle:8" => 600,
            "delta:8,shuffle:8" => 200,
            "xor:8,shuffle:8" => 900,
            "bitshuffle:8" => 2_000,
            "shuffle:4" => 9_000,
            "bitshuffle:4" => 12_000,
            "delta:4,shuffle:4" => 8_000,
            "xor:4,shuffle:4" => 9_500,
            _ => 20_000,
        }
    }

    #[test]
    fn bitshuffle_is_chosen_where_its_bit_planes_store_least() {
        let mut ch = FilterChoice::new();
        let probes = run(60, particles, &mut ch);
        assert_eq!(ch.current(), f("bitshuffle:4"));
        // Every width's shuffle saved: 3 shuffles + 3 x 3 chains, "none" and the second
        // look of the winners: within the first few dozen blocks.
        assert!(probes <= 16, "{probes} probes");
        run(2000, particles, &mut ch);
        assert_eq!(ch.current(), f("bitshuffle:4"));
        let mut asked = Vec::new();
        let start = start_filters(|x| {
            asked.push(x);
            Some(particles(x))
        });
        assert_eq!(start, f("bitshuffle:4"));
        assert_eq!(asked.len(), 13, "every chain of every width: {asked:?}");
    }

    #[test]
    fn bitshuffle_is_not_chosen_where_byte_chains_store_less() {
        let mut ch = FilterChoice::new();
        run(2000, ids, &mut ch);
        assert_eq!(ch.current(), f("delta:8,shuffle:8"));
        assert_eq!(start_filters(|x| Some(ids(x))), f("delta:8,shuffle:8"));
        // Where no shuffle saves, no bitshuffle is even tried.
        let mut asked = Vec::new();
        let text = |x: Filters| if x.is_empty() { 50_000 } else { 60_000 };
        start_filters(|x| {
            asked.push(x);
            Some(text(x))
        });
        assert!(!asked.iter().any(|x| x.to_string().starts_with("bitshuffle")), "{asked:?}");
    }

    #[test]
    fn a_probe_against_a_chain_left_since_is_ignored() {
        let mut ch = FilterChoice::new();
        assert!(!ch.record(f("shuffle:8"), f("shuffle:4"), 100, 10));
        assert!(!ch.record(Filters::NONE, f("shuffle:4"), 0, 10));
        assert_eq!(ch.current(), Filters::NONE);
    }
}
