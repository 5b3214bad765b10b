//! Shadow compression: learning rungs the strategy does not use, on a slice of a block.

use adz_format::{CodecSpec, Filters};

use super::{Controller, ShadowMeasurement};
use crate::strategy::Strategy;

/// Bytes of a block a shadow measurement compresses (its middle, or all of a shorter block).
pub const SHADOW_BYTES: usize = 64 << 10;

/// Bytes of a block a filter probe compresses (twice: through the class's filters and through
/// a candidate). A quarter of [`SHADOW_BYTES`], so that the candidates are tried within a few
/// dozen blocks under the same CPU bound; a filter's gain on numbers shows on 16 KiB.
pub const FILTER_PROBE_BYTES: usize = 16 << 10;

/// The default [`ControllerConfig::shadow_share`](crate::ControllerConfig::shadow_share): Blosc2's
/// tuner and issue 22 bound the cost of learning at a few per cent of the compression work.
pub(super) const SHADOW_SHARE: f64 = 0.03;

/// A rung is shadowed again once it has not been measured for this many attempts.
pub(super) const SHADOW_AGE: u64 = 64;

/// Where the shadow candidates lie from the current rung, in the order they are looked at:
/// more effort first (ratio the strategy may be missing), then less.
pub(super) const SHADOW_OFFSETS: [isize; 6] = [1, 2, -1, 3, -2, 4];

impl Controller {
    /// The rung to shadow on block `seq`, compressed at `codec`: one shadow at a time, in
    /// spare CPU (no lane mixing, the current rung predicted faster than the target), while
    /// shadows have cost at most `shadow_share` of the blocks' CPU; the first rung with an
    /// entropy stage, then the nearest rungs around the current one (more effort first) that
    /// were never measured or not for [`SHADOW_AGE`] attempts. With `filters` (the class's
    /// filters are the controller's to choose), a filter probe that is due comes first: the
    /// block's own codec through a candidate chain (returned as the second value).
    pub(super) fn pick_shadow(
        &mut self,
        strategy: Strategy,
        codec: CodecSpec,
        seq: u64,
        filters: bool,
    ) -> (Option<CodecSpec>, Option<Filters>) {
        if filters {
            self.filters.tick();
        }
        match self.pick_shadow_rung(strategy, codec, seq, filters) {
            Some((spec, f)) => (Some(spec), f),
            None => (None, None),
        }
    }

    fn pick_shadow_rung(
        &mut self,
        strategy: Strategy,
        codec: CodecSpec,
        seq: u64,
        filters: bool,
    ) -> Option<(CodecSpec, Option<Filters>)> {
        // Spare CPU only: no lane mixes raw and compressed blocks, and the current rung is
        // predicted faster than the strategy's target (the link, not the CPU, sets the pace).
        let busy = self.lanes.iter().any(|l| l.mixing);
        if busy || self.probe.is_some() || self.shadow_pending.is_some() {
            return None;
        }
        let cur = self.cfg.ladder.position(codec)?;
        let link = self.link()?;
        if self.cfg.shadow_share <= 0.0 || self.headroom(strategy, link, cur) < 1.0 {
            return None;
        }
        let n = self.cfg.ladder.len() as isize;
        let now = self.clock;
        let mut cands: Vec<usize> = SHADOW_OFFSETS
            .iter()
            .map(|&o| cur as isize + o)
            .filter(|&r| r >= 1 && r < n)
            .map(|r| r as usize)
            .collect();
        if let Some(e) = self.cfg.ladder.first_entropy_coded().filter(|&e| e > cur) {
            cands.retain(|&r| r != e);
            cands.insert(0, e);
        }
        let budget = self.cfg.shadow_share * self.block_cpu - self.shadow_cpu;
        let slice = SHADOW_BYTES as f64;
        let cost = |r: usize| slice / self.model.speed(r, now).max(1.0);
        if let Some(f) = self.filters.due().filter(|_| filters) {
            if 2.0 * cost(cur) * (FILTER_PROBE_BYTES as f64 / slice) > budget {
                return None;
            }
            self.shadow_pending = Some(seq);
            return Some((codec, Some(f)));
        }
        let k = cands.len();
        for i in 0..k {
            let r = cands[(self.shadow_turn + i) % k];
            if self.model.age(r, now).is_some_and(|a| a <= SHADOW_AGE) {
                continue;
            }
            if cost(r) + cost(cur) > budget {
                return None;
            }
            self.shadow_turn = (self.shadow_turn + i + 1) % k;
            self.shadow_pending = Some(seq);
            return self.cfg.ladder.get(r).map(|spec| (spec, None));
        }
        None
    }

    /// What a worker measured for a block's shadow: the shadow rung's ratio and speed relative
    /// to the block's own codec on the same slice, which the model takes as that rung's
    /// measurement.
    pub fn record_shadow(&mut self, m: &ShadowMeasurement) {
        let d = m.decision;
        if self.shadow_pending == Some(d.seq) {
            self.shadow_pending = None;
        }
        let (base_cpu, cpu) = (m.base_cpu.as_secs_f64(), m.cpu.as_secs_f64());
        self.shadow_cpu += base_cpu + cpu;
        self.shadows += 1;
        if let Some(f) = d.shadow_filters.filter(|&f| f != d.filters) {
            self.filters.record(d.filters, f, m.base_stored, m.stored);
            return;
        }
        let ladder = &self.cfg.ladder;
        let (Some(spec), Some(base)) = (d.shadow, ladder.position(d.codec)) else { return };
        let Some(r) = ladder.position(spec).filter(|_| m.raw_len > 0) else { return };
        let raw = m.raw_len as f64;
        let ratio = |stored: u64| raw / (stored as f64).clamp(1.0, raw);
        let faster = (base_cpu > 0.0 && cpu > 0.0).then(|| base_cpu / cpu);
        let shadow = crate::model::Shadow {
            base,
            rung: r,
            base_ratio: ratio(m.base_stored),
            ratio: ratio(m.stored),
            faster,
        };
        self.model.observe_shadow(&shadow, self.clock);
    }
}
