//! Probe mode for incompressible data, and the rungs that fail where an entropy coder would not.

use adz_format::CodecSpec;

use super::{Controller, Decision, Reason};
use crate::ladder::entropy_coded;

#[derive(Clone, Debug)]
pub(super) struct ProbeState {
    pub(super) interval: u64,
    pub(super) next_due: u64,
    /// Probe rung used next (index into probe_rungs).
    pub(super) turn: usize,
    /// The block whose result started probe mode.
    pub(super) entered_at: u64,
    /// The rung that block was compressed at, if a costlier rung had just compressed the
    /// same data (see [`SAVER_WINDOW`]): that rung, not the data, failed, and a lane at it
    /// goes on from the probe's rung when a probe compresses.
    pub(super) failed: Option<usize>,
}

/// [`BlockContext::class`](crate::BlockContext::class) of random-looking data: order-0 entropy
/// above 7.8 bits per byte, where an entropy coder saves under the keep threshold's 3 %.
pub(super) const RANDOM_CLASS: u8 = 4;

/// A blind rung's failure moves the lanes to the first entropy rung only while the model's
/// confidence in that rung's speed is at most this (it halves every `rung_memory` attempts):
/// a rung measured lately is known, and S1 may rightly prefer a blind rung or raw to it.
pub(super) const BLIND_RECHECK: f64 = 0.25;

/// Blocks within which a compressible result at a costlier rung makes a block stored raw the
/// failure of its rung rather than of the data: zstd's negative levels and LZ4 store float
/// arrays raw where zstd:1 saves 10 %.
pub(super) const SAVER_WINDOW: u64 = 16;

/// What a futile probe may cost beyond the raw block it stands in for, as a share of the
/// link's time. A probe is futile when it compresses, the lanes resume, and within
/// [`SAVER_WINDOW`] blocks the data is back in probe mode: the strategy has no use for the
/// rung that compressed (S1 at a link faster than that rung, on data that its cheaper rungs
/// store raw). Such a rung's probes are then put off until the blocks sent raw in between
/// carry `1 / PROBE_COST_SHARE` times what it cost. Probes that fail keep their pace of 4-10
/// blocks (they notice data that compresses again), unless compression has nothing to gain:
/// then every probe is paced by its cost ([`Controller::futile_wait`]). Decision 0017.
pub(super) const PROBE_COST_SHARE: f64 = 0.05;

/// The most blocks a probe is put off by its cost.
pub(super) const PROBE_PACE_MAX: u64 = 4096;

/// The fewest blocks before a probe at `codec`, from what its last probe cost (`costs`).
pub(super) fn probe_pace(costs: &[(CodecSpec, f64)], codec: CodecSpec) -> u64 {
    costs.iter().find(|(c, _)| *c == codec).map_or(0, |&(_, extra)| pace_of(extra))
}

/// The blocks sent raw that carry a probe costing `extra` blocks' link time beyond its own.
pub(super) fn pace_of(extra: f64) -> u64 {
    ((extra / PROBE_COST_SHARE).ceil() as u64).min(PROBE_PACE_MAX)
}

impl Controller {
    /// `codec`, a rung without an entropy stage, stored a block raw that an entropy coder may
    /// shrink: the model predicts it saves nothing (for a while), and lanes below the first
    /// entropy rung move there at once.
    pub(super) fn leave_blind_rung(&mut self, codec: CodecSpec) {
        if let Some(r) = self.cfg.ladder.position(codec) {
            self.model.observe_blind(r, self.clock);
        }
        let Some(to) = self.cfg.ladder.first_entropy_coded() else { return };
        // Once that rung has been measured lately, the model knows both, and decides.
        if self.model.confidence(to, self.clock) > BLIND_RECHECK {
            return;
        }
        let seq = self.seq;
        for lane in &mut self.lanes {
            if lane.rung < to {
                lane.rung = to;
                lane.since = seq;
                lane.fresh = 0;
                lane.streak = 0;
                lane.tentative = false;
                lane.note = Some(Reason::BlindRung);
                lane.held = true;
            }
        }
    }

    /// Blocks a probe at `codec` waits after the last compression attempt: none while
    /// compression may gain, else what the probe costs beyond a raw block's link time (its
    /// last failed probe's, or at the model's speed for the rung before one), in blocks at
    /// [`PROBE_COST_SHARE`].
    pub(super) fn futile_wait(&self, codec: CodecSpec) -> u64 {
        if !self.raw_path_too_slow() {
            return 0;
        }
        let Some(link) = self.link() else { return 0 };
        let failed = self.failed_costs.iter().find(|(c, _)| *c == codec).map(|&(_, extra)| extra);
        let extra = failed.or_else(|| {
            let r = self.cfg.ladder.position(codec)?;
            let s = self.model.speed(r, self.clock);
            (s > 0.0).then(|| (link / s - 1.0).max(0.0))
        });
        extra.map_or(0, pace_of)
    }

    /// In probe mode, block `seq`'s probe rung if a probe is due, else None (sent raw).
    pub(super) fn probe_decision(&mut self, seq: u64) -> Option<CodecSpec> {
        let p = self.probe.as_ref()?;
        // One probe at a time; a measurement that never arrives (a pipeline that dropped
        // it) must not stop probing for good, hence the second condition.
        let quiet = self.outstanding == 0
            || seq >= p.next_due.saturating_add(8 * self.cfg.probe_interval_max);
        if !(quiet && seq >= p.next_due && !self.cfg.probe_rungs.is_empty()) {
            return None;
        }
        let codec = self.cfg.probe_rungs[p.turn % self.cfg.probe_rungs.len()];
        // Where compression has nothing to gain, a probe waits until the blocks sent
        // raw since the last one carry its cost (see PROBE_COST_SHARE).
        let wait = self.futile_wait(codec);
        let p = self.probe.as_mut().expect("in probe mode");
        let after = self.last_attempt.map_or(wait, |a| a.saturating_add(wait));
        if seq < after {
            p.next_due = after;
            return None;
        }
        p.turn += 1;
        // Until this probe's result is in, no other probe (outstanding > 0).
        let next = self.cfg.probe_rungs[p.turn % self.cfg.probe_rungs.len()];
        p.next_due = seq + p.interval.max(probe_pace(&self.probe_costs, next));
        self.attempt(seq);
        Some(codec)
    }

    /// A probe's cost beyond the raw block it stands in for, in the link's time for that
    /// block: kept if the probe ends probe mode, in case that turns out futile.
    pub(super) fn probe_cost(&self, d: &Decision, raw_len: u64, wall: f64) -> Option<f64> {
        (d.reason == Reason::Probe && raw_len > 0)
            .then(|| self.link().filter(|l| *l > 0.0))
            .flatten()
            .map(|link| (wall * link / raw_len as f64 - 1.0).max(0.0))
    }

    /// Notes a block that did not compress (`!compressible`) and returns whether its rung is
    /// *blind*: a rung without an entropy stage failed where an entropy coder may not, and the
    /// lanes below the first entropy rung have moved there (decision 0020). Not for data known
    /// to be random (its class, or an entropy rung failed lately), nor while a lane mixes (the
    /// CPU is the bottleneck: probe mode is the cheapest answer), nor for a probe.
    pub(super) fn note_failure(&mut self, d: &Decision, compressible: bool) -> bool {
        if !compressible && entropy_coded(d.codec) {
            self.entropy_failed = Some(d.seq);
        }
        let blind = !compressible
            && !entropy_coded(d.codec)
            && self.probe.is_none()
            && !self.lanes.iter().any(|l| l.mixing)
            && d.reason != Reason::Probe
            && self.class != RANDOM_CLASS
            && self.entropy_failed.is_none_or(|s| d.seq.saturating_sub(s) > SAVER_WINDOW);
        if blind {
            self.leave_blind_rung(d.codec);
        }
        blind
    }

    /// Probe mode's transitions on a block's result: a compressible result of a block decided
    /// after probe mode began ends it, an incompressible one (of a rung that is not blind)
    /// paces the probes or starts probe mode. Returns true when probe mode ended: the model
    /// then takes this block as its new start.
    pub(super) fn track_probe_mode(
        &mut self,
        d: &Decision,
        compressible: bool,
        blind: bool,
        probe_cost: Option<f64>,
    ) -> bool {
        // Results of blocks decided before the one that started probe mode are older data:
        // that they compressed says nothing about the data now.
        let newer = self.probe.as_ref().is_none_or(|p| d.seq > p.entered_at);
        let at = self.cfg.ladder.position(d.codec);
        if compressible {
            if let Some(r) = at {
                self.last_saver = Some((r, d.seq));
            }
        }
        if compressible && newer {
            self.incompressible_run = 0;
            return self.leave_probe(d, at, probe_cost);
        }
        if !compressible && !blind {
            self.incompressible_run = self.incompressible_run.saturating_add(1);
            if self.probe.is_some() {
                self.probe_failed(d, probe_cost);
            } else if self.cfg.probe_after > 0 && self.incompressible_run >= self.cfg.probe_after {
                self.enter_probe(d, at);
            }
        }
        false
    }

    /// The data compresses again: the lanes resume where they were. A lane at a rung that
    /// failed where a costlier one had just saved goes on from the probe's rung `at` instead,
    /// if that is the costlier (resumed at its own rung, it would fail again).
    fn leave_probe(&mut self, d: &Decision, at: Option<usize>, probe_cost: Option<f64>) -> bool {
        let Some(p) = self.probe.take() else { return false };
        self.probe_exit = Some((d.seq, d.codec, probe_cost));
        for lane in &mut self.lanes {
            if let (Some(f), Some(r)) = (p.failed, at) {
                if lane.rung == f && r > f {
                    lane.rung = r;
                    lane.mixing = false;
                }
            }
            lane.since = self.seq;
            lane.fresh = 0;
            lane.streak = 0;
        }
        true
    }

    /// A probe failed: probes slow down (up to the interval's cap), and its cost is kept to
    /// pace them where compression has nothing to gain.
    fn probe_failed(&mut self, d: &Decision, probe_cost: Option<f64>) {
        let Some(p) = &mut self.probe else { return };
        if d.reason != Reason::Probe {
            return;
        }
        if let Some(cost) = probe_cost {
            self.failed_costs.retain(|(c, _)| *c != d.codec);
            self.failed_costs.push((d.codec, cost));
        }
        p.interval = (p.interval * 2).min(self.cfg.probe_interval_max);
        let rungs = &self.cfg.probe_rungs;
        let pace = rungs
            .get(p.turn % rungs.len().max(1))
            .map_or(0, |&next| probe_pace(&self.probe_costs, next));
        p.next_due = d.seq.saturating_add(p.interval.max(pace));
    }

    /// Enter probe mode on block `d`, compressed at rung `at`.
    fn enter_probe(&mut self, d: &Decision, at: Option<usize>) {
        let interval = self.cfg.probe_interval_min;
        let last = self.last_attempt.unwrap_or(d.seq);
        let failed = at.filter(|&r| {
            self.last_saver
                .is_some_and(|(saver, seq)| saver > r && d.seq.saturating_sub(seq) <= SAVER_WINDOW)
        });
        // Back within a few blocks of a probe that ended probe mode: that probe was futile,
        // and its rung's probes are paced by what it cost. Back after longer: the data
        // compressed for a while, and no probe was futile.
        match self.probe_exit.take() {
            Some((at, codec, cost)) if d.seq.saturating_sub(at) <= SAVER_WINDOW => {
                self.probe_costs.retain(|(c, _)| *c != codec);
                if let Some(cost) = cost {
                    self.probe_costs.push((codec, cost));
                }
            }
            _ => self.probe_costs.clear(),
        }
        let pace = self.cfg.probe_rungs.first().map_or(0, |&c| probe_pace(&self.probe_costs, c));
        self.probe = Some(ProbeState {
            interval,
            next_due: last.saturating_add(interval.max(pace)),
            turn: 0,
            entered_at: d.seq,
            failed,
        });
    }
}
