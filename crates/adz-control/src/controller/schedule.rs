//! S2/S3's aim: the target corrected by the write's schedule, and blends of two rungs.

use super::mix::MIN_MIX_FRACTION;
use super::Controller;
use crate::strategy::Strategy;

/// S2/S3 blends of two rungs aim this much faster than the target (see
/// [`Controller::blend_fraction`]): measurement noise then rarely makes the write overrun.
pub(super) const BLEND_AIM: f64 = 1.02;

impl Controller {
    /// Whether the configured strategy keeps a schedule: S2 and S3, which aim at a time.
    pub(super) fn scheduled(&self) -> bool {
        matches!(self.cfg.strategy, Strategy::KeepPace | Strategy::Prolong(_))
            && self.cfg.schedule_blocks > 0.0
    }

    /// S2/S3: over how many blocks the schedule is paid back: the configured number plus the
    /// pipeline's depth (2 blocks per worker), because the sink reports a block that many
    /// blocks after it was decided, and a controller that reacts faster than it learns
    /// overshoots (decision 0008).
    pub(super) fn schedule_horizon(&self) -> f64 {
        self.cfg.schedule_blocks + 2.0 * self.cfg.threads.max(1) as f64
    }

    /// S2/S3: account a frame the sink wrote against the target's schedule: `elapsed` seconds
    /// passed between the end of the previous write and the end of this one (the sink's wait
    /// for the frame and its write), where the target gives its `raw` bytes `raw / T`. The
    /// sink's clock, not the workers', which miss the reader's and the writer's CPU (decision
    /// 0008). An application slower than the target only raises the aim (at most 4/3).
    pub(super) fn track_schedule(&mut self, raw: u64, elapsed: f64) {
        let Some(link) = self.link() else { return };
        let t = self.cfg.strategy.target_speed(link, 1.0);
        if !(self.scheduled() && raw > 0 && t > 0.0 && elapsed.is_finite() && elapsed >= 0.0) {
            return;
        }
        let (behind, ahead) = self.schedule_bounds(t);
        self.schedule = (self.schedule + raw as f64 / t - elapsed).clamp(behind, ahead);
    }

    /// The schedule's bounds, seconds, for a target of `t` bytes/s: at most `K` blocks' time
    /// ahead (the aim goes no lower than half the target: a long stretch ahead is not repaid
    /// with a long stretch of slow rungs) and `K/4` behind (the aim goes no higher than 4/3
    /// of it).
    pub(super) fn schedule_bounds(&self, t: f64) -> (f64, f64) {
        let horizon = self.schedule_horizon() * self.cfg.block_size as f64 / t;
        (-0.25 * horizon, horizon)
    }

    /// The aggregate compression speed a rung must reach for `strategy`: its target, and for
    /// the configured S2/S3 corrected by the write's schedule.
    ///
    /// The controller's asymmetry spends noisy data's noise on the fast side, so S2 and S3
    /// would finish early (decision 0008). A write `A` seconds ahead of its schedule therefore
    /// aims for blocks of `b/T + A/K` seconds (`b` the block size, `K` the
    /// [`Controller::schedule_horizon`]), spending what it saved over the next `K` blocks.
    ///
    /// Behind its schedule, a write aims faster than the target, but gently: the schedule
    /// counts at most `K/4` blocks behind (and `K` ahead), so the aim stays within
    /// `T/2..4T/3`. The asymmetry already errs on the fast side, a slowdown already sends the
    /// lane to a faster rung at once, and a start far too slow would otherwise send it far
    /// past the rung the measurements point to.
    pub(super) fn aim(&self, strategy: Strategy, link: f64, ratio: f64) -> f64 {
        let t = self.cfg.target_speed(strategy, link, ratio);
        if strategy != self.cfg.strategy || !self.scheduled() || t.is_nan() || t <= 0.0 {
            return t;
        }
        let block = self.cfg.block_size as f64 / t;
        let (behind, ahead) = self.schedule_bounds(t);
        t * block / (block + self.schedule.clamp(behind, ahead) / self.schedule_horizon())
    }

    /// S2/S3: the share of blocks to send to a slower rung, and which, when `cur` is faster than
    /// the target and the partner slower, so that the blend spends the target's time. Rungs are
    /// discrete, so without a blend S2 and S3 would finish up to a rung's step early, with less
    /// ratio than their time allows (decision 0008). With `S` the current rung's aggregate speed,
    /// `S'` the partner's and `T` the target, a share `p` of blocks at the partner takes `(1-p)/S +
    /// p/S'` per raw byte; equal to `1/T` at `p = (1/T - 1/S) / (1/S' - 1/S)`. The blend aims
    /// [`BLEND_AIM`] above the target, so that noise does not push the write past its bound.
    ///
    /// The partner is the first rung above `cur`, within a climb, that buys ratio over it
    /// ([`Controller::buys_ratio`]): time spent on a rung that stores the same bytes buys nothing
    /// (decision 0009). Zero when the current rung is already within [`BLEND_AIM`] of the target,
    /// when the partner is fast enough to move to (the climb's business), when no rung within a
    /// climb buys ratio, or past the ladder's end.
    pub(super) fn blend_fraction(&self, strategy: Strategy, link: f64, cur: usize) -> (f64, usize) {
        let now = self.clock;
        let n = self.cfg.ladder.len();
        let top = (n - 1).min(cur + self.cfg.max_climb.max(1));
        let Some(to) = (cur + 1..=top).find(|&r| cur > 0 && self.buys_ratio(cur, r)) else {
            return (0.0, cur);
        };
        let t = self.aim(strategy, link, self.model.ratio(cur, now)) * BLEND_AIM;
        let s = self.threads * self.model.speed(cur, now);
        let s_to = self.threads * self.model.speed(to, now);
        if !(t > 0.0 && s > t && s_to < t && s_to > 0.0) {
            return (0.0, cur);
        }
        let p = (1.0 / t - 1.0 / s) / (1.0 / s_to - 1.0 / s);
        if p.is_finite() && p >= MIN_MIX_FRACTION {
            (p.min(1.0), to)
        } else {
            (0.0, cur)
        }
    }
}
