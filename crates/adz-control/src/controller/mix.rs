//! Mixes of raw and compressed blocks, for when no rung is fast enough.

use super::pace::{BACKLOG_BUSY, BACKLOG_STARVED, PIPE_TRUSTED};
use super::Controller;
use crate::strategy::Strategy;

/// Mix rungs whose predicted value ([`Controller::mix_value`]) is within this share (10 %) of
/// the best count as equally good, and the mix compresses with the fastest of them: near the
/// optimum the rung hardly matters, while a slow rung's block holds up the ordered writer
/// (docs/decisions/0013).
pub(super) const MIX_TIE: f64 = 0.10;

/// A mix compressing less than this fraction of blocks sends everything raw: below it the
/// saving is under 0.2 % and not worth a decision per block.
pub(super) const MIN_MIX_FRACTION: f64 = 1.0 / 512.0;

impl Controller {
    /// How good rung `m` is as the compressed rung of a mix, higher is better.
    ///
    /// S1 with the pipeline's CPU time: the mix's predicted write throughput. With `C` CPUs, the
    /// raw path's `c` CPU seconds per byte, the rung's CPU speed `s` per worker and its saving
    /// `a = 1 - 1/f`, the share `p` at which CPUs and link are both busy
    /// ([`Controller::mix_fraction`]) writes `L / (1 - p a) = (C a s + L) / (1 + a c s)`; a
    /// rung that keeps the link full alone (`p >= 1`) writes its own [`Controller::throughput`].
    /// Otherwise the bytes it saves per second of compression, `S a` (`S` the aggregate speed):
    /// S1's throughput `L + S a` without a raw-path cost, and the bytes S2/S3 save in their time.
    pub(super) fn mix_value(&self, strategy: Strategy, link: f64, m: usize) -> f64 {
        let now = self.clock;
        let a = 1.0 - 1.0 / self.model.ratio(m, now);
        match (strategy, self.cpu_path_cost()) {
            (Strategy::Throughput, Some(c)) => {
                let (num, den) = self.s1_cpu_share(link, c, m);
                let p = num / den;
                if p >= 1.0 {
                    self.throughput(link, m)
                } else if p > 0.0 {
                    link / (1.0 - p * a)
                } else {
                    // The raw path alone cannot fill the link: any compression slows it.
                    (self.cpus() / c).min(link)
                }
            }
            _ => self.threads * self.model.speed(m, now) * a,
        }
    }

    /// The rung of the compressed blocks of a mix: of the rungs within [`MIX_TIE`] of the best
    /// [`Controller::mix_value`], the fastest to compress. Returns it and whether the
    /// current rung `cur` is among them.
    pub(super) fn mix_rung(&self, strategy: Strategy, link: f64, cur: usize) -> (usize, bool) {
        let now = self.clock;
        let n = self.cfg.ladder.len();
        let v: Vec<f64> = (0..n)
            .map(|r| if r == 0 { f64::NAN } else { self.mix_value(strategy, link, r) })
            .collect();
        let best = v.iter().copied().fold(f64::NAN, f64::max);
        let tied = |r: usize| v[r] >= best * (1.0 - MIX_TIE);
        let pick = (1..n)
            .filter(|&r| tied(r))
            .max_by(|&a, &b| self.model.speed(a, now).total_cmp(&self.model.speed(b, now)))
            .unwrap_or(1);
        (pick, cur > 0 && cur < n && tied(cur))
    }

    /// S1's compressed share of a mix at rung `m` in CPU seconds, as `(numerator, denominator)`:
    /// every block costs the raw path `c` per byte, a compressed one also its compression `1/s`
    /// (the worker's CPU time, [`Controller::cpu_speed`]). With `C` CPUs both the CPUs and the
    /// link are busy when `C (1 - p (1 - 1/f)) = L (c + p / s)`, so
    /// `p = (C - L c) / (C (1 - 1/f) + L / s)`. Not the workers' wall times, which count the
    /// raw path's CPU twice (docs/decisions/0012).
    pub(super) fn s1_cpu_share(&self, link: f64, c: f64, m: usize) -> (f64, f64) {
        let cpus = self.cpus();
        let a = 1.0 - 1.0 / self.model.ratio(m, self.clock);
        (cpus - link * c, cpus * a + link / self.cpu_speed(m))
    }

    /// The fraction of blocks to compress at rung `m` when `m` is slower than the target.
    ///
    /// Per raw byte, with `S` the aggregate compression speed, `R` the aggregate speed of
    /// storing raw, `f` the ratio, `L` the link, and a fraction `p` compressed:
    /// CPU time `p/S + (1-p)/R`, link time `(1 - p(1 - 1/f)) / L`.
    /// * S1 makes both equal (both stages busy): `p = (1/L - 1/R) / (1/S - 1/R + (1-1/f)/L)`;
    ///   throughput is then `L + S(1 - 1/f)` for `R = inf`: always more than raw's `L`.
    /// * S2/S3 spend exactly the target's time on CPU: `p = (1/T - 1/R) / (1/S - 1/R)`.
    pub(super) fn mix_fraction(&self, strategy: Strategy, link: f64, m: usize) -> f64 {
        let now = self.clock;
        let s = self.threads * self.model.speed(m, now);
        // Raw blocks cost what the workers measure (a checksum), or what the sink saw the
        // whole pipeline spend on them while that is near the link; far above it the sink's
        // figure also counts the writer's stalls, which the mix pays for (decision 0010).
        let r = self.threads * self.model.raw_speed().unwrap_or(f64::INFINITY);
        let r = match self.pipe.raw_speed {
            Some(pipe) if pipe < PIPE_TRUSTED * link => r.min(pipe),
            _ => r,
        };
        let f = self.model.ratio(m, now);
        let serial = self.cfg.serial_mix_share(strategy, link, (s, r, f), self.model.has_speed());
        let (num, den) = match (strategy, self.cpu_path_cost()) {
            _ if serial.is_some() => serial.unwrap_or_default(),
            (Strategy::Throughput, Some(c)) => self.s1_cpu_share(link, c, m),
            (Strategy::Throughput, None) => {
                (1.0 / link - 1.0 / r, 1.0 / s - 1.0 / r + (1.0 - 1.0 / f) / link)
            }
            _ => {
                let t = strategy.target_speed(link, f);
                (1.0 / t - 1.0 / r, 1.0 / s - 1.0 / r)
            }
        };
        let p = if den > 0.0 { num / den } else { 1.0 };
        // The mix pays only while the link is the bottleneck. If frames seldom wait for the
        // sink, the pipeline cannot even feed the link (on few cores, moving raw data costs
        // CPU too) and every compressed block slows the write: shrink the compressed share
        // towards zero. If raw data then backs the link up, the share returns.
        let p = p * self.sink_backlog.map_or(1.0, |b| {
            ((b - BACKLOG_STARVED) / (BACKLOG_BUSY - BACKLOG_STARVED)).clamp(0.0, 1.0)
        });
        if p.is_finite() && p >= MIN_MIX_FRACTION {
            p.min(1.0)
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::controller::{BlockContext, BlockMeasurement, ControllerConfig, Decision};
    use crate::strategy::Link;

    fn measured(
        strategy: Strategy,
        link: f64,
        threads: usize,
        per_thread: f64,
        ratio: f64,
    ) -> Controller {
        let mut ctl = Controller::new(ControllerConfig::new(strategy, Link::Fixed(link), threads));
        let ctx = BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class: 0 };
        let d = ctl.next_block(&ctx);
        let raw = 1u64 << 20;
        let t = Duration::from_secs_f64(raw as f64 / per_thread);
        ctl.record_block(&BlockMeasurement {
            decision: Decision { codec: "lz4:50".parse().unwrap(), ..d },
            raw_len: raw,
            stored_len: (raw as f64 / ratio) as u64,
            stored_raw: false,
            wall: t,
            cpu: t,
        });
        ctl
    }

    #[test]
    fn s1_mix_fraction_keeps_cpu_and_link_equally_busy() {
        let (link, threads, s, f) = (6000e6, 2, 1500e6, 1.5);
        let ctl = measured(Strategy::Throughput, link, threads, s, f);
        let p = ctl.mix_fraction(Strategy::Throughput, link, 1);
        // What the controller measured (the durations are rounded to nanoseconds).
        let agg = ctl.model.speed(1, ctl.clock) * threads as f64;
        assert!((agg / (s * threads as f64) - 1.0).abs() < 1e-5);
        let f = ctl.model.ratio(1, ctl.clock);
        let cpu = p / agg;
        let wire = (1.0 - p * (1.0 - 1.0 / f)) / link;
        assert!((cpu / wire - 1.0).abs() < 1e-9, "p {p}: cpu {cpu} link {wire}");
        // The throughput of the mix is L + S(1 - 1/f): more than raw.
        assert!((1.0 / cpu) / (link + agg * (1.0 - 1.0 / f)) - 1.0 < 1e-9);
    }

    #[test]
    fn s2_mix_fraction_spends_the_targets_time() {
        let (link, threads, s) = (6000e6, 2, 1500e6);
        let mut ctl = measured(Strategy::KeepPace, link, threads, s, 1.5);
        let p = ctl.mix_fraction(Strategy::KeepPace, link, 1);
        assert!((p - 2.0 * s / link).abs() < 1e-5, "{p}");
        // A mix is off the schedule: its formula already spends the target's time, and at a
        // link the pipeline may not even fill, aiming lower would only slow the write.
        ctl.schedule = 4.0 * (1u64 << 20) as f64 / link;
        assert_eq!(ctl.mix_fraction(Strategy::KeepPace, link, 1), p);
        let ctl = measured(Strategy::Prolong(2.0), link, threads, s, 1.5);
        let p = ctl.mix_fraction(Strategy::Prolong(2.0), link, 1);
        assert!((p - 2.0 * s / (link / 2.0)).abs() < 1e-5, "{p}");
    }
}
