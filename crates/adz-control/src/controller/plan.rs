//! S1's CPU plan across data classes: what each rung of this controller's data costs per raw
//! byte, which the [`ClassedController`](crate::ClassedController) weighs to share the write's
//! workers out among the classes (decision 0019).

use super::Controller;
use crate::strategy::Strategy;

impl Controller {
    /// S1's predicted cost per raw byte of this controller's data on each codec rung (index
    /// `i` is rung `i + 1`): worker time (thread-seconds: CPU time times the usual wall/CPU
    /// ratio, as the model times blocks) and stored bytes. In probe mode the data is sent raw
    /// whatever the others do: one option, no time and every byte stored. None before anything
    /// has been measured, or when the configured strategy is not S1, or for a serial writer,
    /// whose classes share no CPU with each other's link time (each minimises its own chunks').
    pub(crate) fn s1_costs(&self) -> Option<Vec<(f64, f64)>> {
        if self.cfg.strategy != Strategy::Throughput || self.cfg.serial {
            return None;
        }
        if self.probe.is_some() {
            return Some(vec![(0.0, 1.0)]);
        }
        if !self.model.has_speed() {
            return None;
        }
        let now = self.clock;
        let costs: Vec<(f64, f64)> = (1..self.cfg.ladder.len())
            .map(|r| (1.0 / self.model.speed(r, now), 1.0 / self.model.ratio(r, now).max(1.0)))
            .collect();
        costs.iter().all(|&(c, b)| c.is_finite() && c > 0.0 && b > 0.0).then_some(costs)
    }

    /// S1's predicted cost per raw byte (as [`Controller::s1_costs`]) of the current decision:
    /// its rung, or in a mix its compressed share's.
    pub(crate) fn s1_current(&self) -> Option<(f64, f64)> {
        let costs = self.s1_costs()?;
        if self.probe.is_some() {
            return costs.first().copied();
        }
        let lane = self.lanes.first()?;
        let (cpu, stored) = *costs.get(lane.rung.checked_sub(1)?)?;
        let p = if lane.mixing { lane.mix_fraction } else { 1.0 };
        Some((p * cpu, 1.0 - p * (1.0 - stored)))
    }

    /// The workers this controller's decisions may count on: the configured number, or for S1
    /// in a write of several kinds of data the share of the write's workers that the
    /// [`ClassedController`](crate::ClassedController) budgets for this kind (see there).
    pub(crate) fn set_workers(&mut self, workers: f64) {
        let n = self.cfg.threads.max(1) as f64;
        self.threads = if workers.is_finite() && workers > 0.0 { workers } else { n };
    }
}
