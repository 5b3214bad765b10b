//! The energy strategy's decision (`-s energy`, decision 0046): of the choices that keep the
//! write within its time bound, the one with the least predicted energy per raw byte, its
//! compression's CPU energy plus the energy of storing its bytes for the retention period.
//!
//! The choices: raw (no CPU, every byte stored), a rung fast enough for the bound, or for a
//! rung too slow for it a mix of raw and compressed blocks at the share that meets the bound
//! ([`Controller::mix_fraction`]). Per raw byte, a rung costs `W / s + J / f` (`W` watts per
//! busy core, `s` its CPU speed per core, `J` joules per stored byte, `f` its ratio); a mix
//! with share `p` costs `p (W / s + J / f) + (1 - p) J`.

use adz_format::CodecSpec;

use super::decide::Lane;
use super::{Controller, Reason};
use crate::strategy::{EnergyCost, Strategy};

/// Choices within this share (3 %) of the least predicted energy count as equal: the lane
/// stays where it is rather than moving on noise, and a move goes to the fastest of them.
pub(super) const ENERGY_TIE: f64 = 0.03;

/// While raw is the choice, one block in this many is still compressed at the cheapest rung,
/// so that the model keeps measuring the data and notices when compressing starts to pay.
pub(super) const RAW_SAMPLE_EVERY: f64 = 16.0;

/// One choice of the energy strategy: raw (`rung` 0), a rung (`share` 1) or a mix (`share`
/// below 1), with its predicted joules per raw byte.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct EnergyChoice {
    pub(super) rung: usize,
    pub(super) share: f64,
    pub(super) joules: f64,
}

impl Controller {
    /// Predicted joules per raw byte of compressing every block at `rung`: its CPU seconds per
    /// byte ([`Controller::cpu_speed`], the worker's CPU time) times the core's watts, plus
    /// the bytes it stores per raw byte times the storage energy.
    pub(super) fn rung_joules(&self, cost: EnergyCost, rung: usize) -> f64 {
        let cpu = 1.0 / self.cpu_speed(rung);
        let stored = 1.0 / self.model.ratio(rung, self.clock).max(1.0);
        cost.joules_per_byte(cpu, stored)
    }

    /// The speed the bound is reckoned from: the raw write's, through the link or the
    /// pipeline's raw path, whichever is slower. Where the CPUs cannot even move raw data as
    /// fast as the link, the raw write takes the raw path's time, and a bound on the link's
    /// would send everything raw without making the write any faster.
    pub(super) fn energy_link(&self, link: f64) -> f64 {
        self.raw_path_speed().filter(|&r| r.is_finite() && r > 0.0).map_or(link, |r| r.min(link))
    }

    /// Every choice and its predicted energy: raw, each rung predicted fast enough for the
    /// bound, and a mix at each rung that is not.
    pub(super) fn energy_choices(
        &self,
        strategy: Strategy,
        cost: EnergyCost,
        link: f64,
    ) -> Vec<EnergyChoice> {
        let link = self.energy_link(link);
        let raw = cost.joules_per_byte(0.0, 1.0);
        let mut out = vec![EnergyChoice { rung: 0, share: 0.0, joules: raw }];
        for r in 1..self.cfg.ladder.len() {
            let e = self.rung_joules(cost, r);
            if !e.is_finite() {
                continue;
            }
            let share = if self.headroom(strategy, link, r) >= 1.0 {
                1.0
            } else {
                self.mix_fraction(strategy, link, r)
            };
            if share > 0.0 {
                out.push(EnergyChoice { rung: r, share, joules: share * e + (1.0 - share) * raw });
            }
        }
        out
    }

    /// The choice to move to: the least energy, and of the choices within [`ENERGY_TIE`] of
    /// it the one that spends the least CPU per byte (the fastest write among equals).
    fn energy_best(&self, choices: &[EnergyChoice]) -> EnergyChoice {
        let least = choices.iter().map(|c| c.joules).fold(f64::INFINITY, f64::min);
        let cpu = |c: &EnergyChoice| {
            if c.rung == 0 {
                0.0
            } else {
                c.share / self.cpu_speed(c.rung)
            }
        };
        choices
            .iter()
            .filter(|c| c.joules <= least * (1.0 + ENERGY_TIE))
            .min_by(|a, b| cpu(a).total_cmp(&cpu(b)))
            .copied()
            .unwrap_or(EnergyChoice { rung: 0, share: 0.0, joules: least })
    }

    /// The lane's current choice among `choices` (None: it is no longer one, e.g. its rung is
    /// now too slow for the bound and was a pure rung).
    fn energy_current(lane: &Lane, choices: &[EnergyChoice]) -> Option<EnergyChoice> {
        let raw = lane.mixing && lane.mix_fraction <= 0.0;
        choices
            .iter()
            .find(|c| {
                if raw {
                    c.rung == 0
                } else {
                    c.rung == lane.rung && (c.share < 1.0) == lane.mixing
                }
            })
            .copied()
    }

    /// The energy strategy's decision for block `seq` of `lane`: move to the least-energy
    /// choice when the current one breaks the bound (at once), before anything is measured,
    /// or when it costs clearly more ([`ENERGY_TIE`]) on fresh measurements (more effort at
    /// most `max_climb` rungs at a time); then the block's codec.
    pub(super) fn decide_energy(
        &self,
        lane: &mut Lane,
        cost: EnergyCost,
        link: f64,
        seq: u64,
        mut reason: Reason,
    ) -> (CodecSpec, Reason) {
        let strategy = lane.strategy;
        let choices = self.energy_choices(strategy, cost, link);
        let best = self.energy_best(&choices);
        let current = Self::energy_current(lane, &choices);
        let climb_top = lane.rung + self.cfg.max_climb.max(1);
        let cheapest_within = |top: usize| {
            let within: Vec<EnergyChoice> =
                choices.iter().copied().filter(|c| c.rung <= top).collect();
            self.energy_best(&within)
        };
        let to = match current {
            None => Some((best, Reason::TooSlow)),
            Some(_) if !self.model.has_speed() => (Some(best) != current).then_some((best, reason)),
            Some(cur)
                if cur.joules > best.joules * (1.0 + ENERGY_TIE)
                    && lane.fresh >= self.cfg.confirm =>
            {
                // More effort than now is taken a bounded climb at a time from a pure rung.
                let more = best.rung > lane.rung && !lane.mixing;
                let pick = if more { cheapest_within(climb_top) } else { best };
                (pick != cur).then_some((pick, Reason::Energy))
            }
            _ => None,
        };
        if let Some((c, why)) = to {
            lane.mixing = c.share < 1.0;
            lane.mix_fraction = c.share;
            // Raw keeps a rung for its sampled blocks: the cheapest one to compress.
            lane.rung = if c.rung == 0 { self.energy_sample_rung(cost) } else { c.rung };
            lane.since = seq;
            lane.fresh = 0;
            lane.streak = 0;
            lane.tentative = false;
            reason = why;
        } else if let Some(cur) = current {
            // The share of a mix follows the bound's current prediction.
            lane.mix_fraction = if cur.rung == 0 { 0.0 } else { cur.share };
        }
        lane.blend = 0.0;
        let share = if !lane.mixing {
            1.0
        } else if lane.mix_fraction <= 0.0 {
            1.0 / RAW_SAMPLE_EVERY
        } else {
            lane.mix_fraction
        };
        let note = lane.note.take();
        let (codec, why) = if share >= 1.0 {
            (self.cfg.ladder.get(lane.rung).unwrap_or(CodecSpec::NONE), reason)
        } else {
            lane.mix_acc += share;
            if lane.mix_acc >= 1.0 - 1e-9 {
                lane.mix_acc -= 1.0;
                let r = if reason == Reason::Hold { Reason::MixCompress } else { reason };
                (self.cfg.ladder.get(lane.rung).unwrap_or(CodecSpec::NONE), r)
            } else {
                (CodecSpec::NONE, Reason::MixRaw)
            }
        };
        match note {
            Some(n) if matches!(why, Reason::Hold | Reason::Start) => (codec, n),
            _ => (codec, why),
        }
    }

    /// The rung raw's sampled blocks use: the one with the least CPU energy per byte.
    fn energy_sample_rung(&self, cost: EnergyCost) -> usize {
        let cpu_only = EnergyCost { storage_joules_per_gb: 0.0, ..cost };
        (1..self.cfg.ladder.len())
            .min_by(|&a, &b| {
                self.rung_joules(cpu_only, a).total_cmp(&self.rung_joules(cpu_only, b))
            })
            .unwrap_or(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::ControllerConfig;
    use crate::strategy::Link;

    fn energy(storage: f64) -> Strategy {
        Strategy::Energy(EnergyCost {
            storage_joules_per_gb: storage,
            max_slowdown: f64::INFINITY,
            ..EnergyCost::DEFAULT
        })
    }

    #[test]
    fn raw_is_one_choice_and_costs_only_storage() {
        let s = energy(1000.0);
        let ctl = Controller::new(ControllerConfig::new(s, Link::Fixed(117e6), 2));
        let cs = ctl.energy_choices(s, s.energy().unwrap(), 117e6);
        assert_eq!(cs[0].rung, 0);
        assert!((cs[0].joules - 1000.0 / 1e9).abs() < 1e-15);
        // Unbounded: every rung is a choice of its own, at its full share.
        assert_eq!(cs.len(), ctl.cfg.ladder.len());
        assert!(cs[1..].iter().all(|c| c.share == 1.0));
    }
}
