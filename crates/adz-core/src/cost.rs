//! What compression costs and what it saves, in money and time (thesis 3.4 and 3.5).
//!
//! The thesis prices compression by the machine time it takes and storage by the GB-year, with
//! example numbers from the DKRZ (the defaults here):
//!
//! - **Compression cost per GB** (3.4.1): the machine's investment spread over its lifetime,
//!   maintenance (a share of the investment per year) and energy (power plus cooling, times the
//!   energy price), for the seconds one GB takes. When the compression runs while the
//!   application would wait for I/O anyway, only the power above idle counts (the *idle* case,
//!   an order of magnitude cheaper).
//! - **Storage cost per GB-year** (3.4.2): the same three parts for a storage system of a
//!   given capacity.
//! - **Days until compression pays** (3.4.3, figure 3.8): the one-off compression cost over
//!   the daily storage saving `cost_per_gb_year / 365 x (1 - 1/ratio)`.
//! - **Write-call model** (3.5): speedup factor (eq. 3.3), compression CPU time and cost of a
//!   sped-up write (eq. 3.4, 3.5), prolonging factor (eq. 3.6) and the cost of a prolonged
//!   write (eq. 3.7-3.9).
//!
//! ```
//! use adz_core::cost::{CostModel, Machine};
//!
//! let m = CostModel::default();
//! // The thesis: 5 s of a 7000 EUR, 300 W machine per GB costs about 0.00061 EUR ...
//! let full = m.compression_cost_per_gb(5.0, Machine::Full);
//! assert!((full - 0.00061).abs() < 0.000005);
//! // ... and storing a GB for a year about 0.053 EUR.
//! assert!((m.storage_cost_per_gb_year() - 0.053).abs() < 0.0005);
//! // A ratio of 1.1 pays for full-cost compression after about 46 days.
//! let days = m.days_to_redeem(1.1, 5.0, Machine::Full).unwrap();
//! assert!((days - 46.0).abs() < 1.0);
//! ```

use serde::Serialize;

const SECONDS_PER_YEAR: f64 = 365.0 * 24.0 * 3600.0;

/// Which machine costs a compression second is charged with (thesis 3.4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Machine {
    /// The whole machine: investment, maintenance and full energy. For compression time the
    /// application could otherwise have used (S2/S3's extra time, a dedicated compression run).
    Full,
    /// Only the energy above idle: compression that runs while the application waits for I/O
    /// anyway, whose machine time the application has paid for.
    Idle,
}

/// A computer: what it cost, how long it is used, what it draws.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Hardware {
    /// Purchase price (currency units, EUR in the thesis).
    pub price: f64,
    /// Years until it is replaced.
    pub lifetime_years: f64,
    /// Power drawn at full load, watts.
    pub power_watts: f64,
    /// Maintenance per year as a share of the price (0.15 = 15 %).
    pub maintenance_per_year: f64,
}

/// Every input of the cost model. [`Default`] is the thesis' example (DKRZ numbers).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostModel {
    /// The compute node that compresses: 7000, 3 years, 300 W, 15 %/year.
    pub compute: Hardware,
    /// Idle power as a share of full power (0.25).
    pub idle_share: f64,
    /// The storage system: 100 000, 3 years, 3000 W, 15 %/year.
    pub storage: Hardware,
    /// Its capacity, GB (1 PB = 1 000 000 GB).
    pub storage_capacity_gb: f64,
    /// Energy price per kWh (0.14).
    pub energy_price_kwh: f64,
    /// Cooling as a share added to every power figure (0.25).
    pub cooling_share: f64,
}

impl Default for CostModel {
    fn default() -> CostModel {
        CostModel {
            compute: Hardware {
                price: 7000.0,
                lifetime_years: 3.0,
                power_watts: 300.0,
                maintenance_per_year: 0.15,
            },
            idle_share: 0.25,
            storage: Hardware {
                price: 100_000.0,
                lifetime_years: 3.0,
                power_watts: 3000.0,
                maintenance_per_year: 0.15,
            },
            storage_capacity_gb: 1_000_000.0,
            energy_price_kwh: 0.14,
            cooling_share: 0.25,
        }
    }
}

/// The parts of a compression cost.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MachineCost {
    /// The investment's share.
    pub investment: f64,
    /// Maintenance's share.
    pub maintenance: f64,
    /// Energy (with cooling).
    pub energy: f64,
}

impl MachineCost {
    /// The sum.
    pub fn total(&self) -> f64 {
        self.investment + self.maintenance + self.energy
    }
}

impl CostModel {
    /// The cost of `seconds` of the compute node's time, by part.
    pub fn machine_cost(&self, seconds: f64, machine: Machine) -> MachineCost {
        let hw = &self.compute;
        let kw = hw.power_watts / 1000.0 * (1.0 + self.cooling_share);
        let energy_full = kw * self.energy_price_kwh * seconds / 3600.0;
        match machine {
            Machine::Full => MachineCost {
                investment: hw.price * seconds / (hw.lifetime_years * SECONDS_PER_YEAR),
                maintenance: hw.price * hw.maintenance_per_year * seconds / SECONDS_PER_YEAR,
                energy: energy_full,
            },
            Machine::Idle => MachineCost {
                investment: 0.0,
                maintenance: 0.0,
                energy: energy_full * (1.0 - self.idle_share),
            },
        }
    }

    /// The cost of compressing one GB that takes `seconds_per_gb` of the whole machine.
    pub fn compression_cost_per_gb(&self, seconds_per_gb: f64, machine: Machine) -> f64 {
        self.machine_cost(seconds_per_gb, machine).total()
    }

    /// The cost of storing one GB for one year.
    pub fn storage_cost_per_gb_year(&self) -> f64 {
        let hw = &self.storage;
        let invest = hw.price * (1.0 / hw.lifetime_years + hw.maintenance_per_year);
        let kw = hw.power_watts / 1000.0 * (1.0 + self.cooling_share);
        let energy = 365.0 * 24.0 * kw * self.energy_price_kwh;
        (invest + energy) / self.storage_capacity_gb
    }

    /// The cost of storing `gb` for `days` without compression.
    pub fn storage_cost(&self, gb: f64, days: f64) -> f64 {
        self.storage_cost_per_gb_year() * gb * days / 365.0
    }

    /// What storing `gb` (raw) for `days` at `ratio` saves against storing it raw (thesis
    /// table 3.1: 40 TB for three months).
    pub fn storage_savings(&self, gb: f64, days: f64, ratio: f64) -> f64 {
        self.storage_cost(gb, days) * savings_share(ratio)
    }

    /// Days of storage until compressing at `ratio`, which took `seconds_per_gb`, has paid for
    /// itself (thesis figure 3.8). None when the ratio saves nothing (<= 1).
    pub fn days_to_redeem(&self, ratio: f64, seconds_per_gb: f64, machine: Machine) -> Option<f64> {
        let per_day = self.storage_cost_per_gb_year() / 365.0 * savings_share(ratio);
        (per_day > 0.0).then(|| self.compression_cost_per_gb(seconds_per_gb, machine) / per_day)
    }

    /// The money side of one write of `gb` raw GB with the given write model.
    pub fn write_cost(&self, w: &WriteCall) -> WriteCost {
        // eq. 3.5 for a sped-up write (time from eq. 3.4); eq. 3.9 for a prolonged one (time
        // from eq. 3.7 and 3.8).
        let (orig, extra) = w.prolong_split();
        let t = if w.prolong > 1.0 { orig } else { w.compression_cpu_seconds() };
        let idle_cost = self.machine_cost(t, Machine::Idle).total();
        let full_cost = self.machine_cost(extra, Machine::Full).total();
        let compression = idle_cost + full_cost;
        // Machine time S1 saves: the write returns earlier, the application gets that time.
        let raw_seconds = w.data_gb * 1e9 / w.link_bps;
        let saved_seconds = (raw_seconds - w.duration_seconds()).max(0.0);
        let machine_savings = self.machine_cost(saved_seconds, Machine::Full).total();
        let per_day = self.storage_cost_per_gb_year() / 365.0 * w.data_gb * savings_share(w.ratio);
        let net = compression - machine_savings;
        WriteCost {
            duration_seconds: w.duration_seconds(),
            raw_seconds,
            compression_cpu_seconds: t + extra,
            compression_cost: compression,
            machine_savings,
            storage_savings_per_day: per_day,
            days_to_redeem: redeem(net, per_day),
        }
    }

    /// The cost of a write that was measured: `seconds` to write `data_gb` raw GB at `ratio`
    /// through a link of `link_bps`. Time up to the raw write's duration is charged above idle
    /// (the application would have waited for the raw write anyway); time beyond it is the
    /// whole machine's (eq. 3.9 with the measured prolonging); time a faster write saves is
    /// the machine savings.
    pub fn measured_write_cost(
        &self,
        data_gb: f64,
        link_bps: f64,
        seconds: f64,
        ratio: f64,
    ) -> WriteCost {
        let raw_seconds = data_gb * 1e9 / link_bps;
        let within = seconds.min(raw_seconds);
        let extra = (seconds - raw_seconds).max(0.0);
        let compression = self.machine_cost(within, Machine::Idle).total()
            + self.machine_cost(extra, Machine::Full).total();
        let machine_savings =
            self.machine_cost((raw_seconds - seconds).max(0.0), Machine::Full).total();
        let per_day = self.storage_cost_per_gb_year() / 365.0 * data_gb * savings_share(ratio);
        WriteCost {
            duration_seconds: seconds,
            raw_seconds,
            compression_cpu_seconds: seconds,
            compression_cost: compression,
            machine_savings,
            storage_savings_per_day: per_day,
            days_to_redeem: redeem(compression - machine_savings, per_day),
        }
    }
}

fn redeem(net: f64, per_day: f64) -> Option<f64> {
    if net <= 0.0 {
        Some(0.0)
    } else if per_day > 0.0 {
        Some(net / per_day)
    } else {
        None
    }
}

/// The share of storage a ratio saves: 1 - 1/ratio (0 for ratios <= 1).
pub fn savings_share(ratio: f64) -> f64 {
    if ratio > 1.0 {
        1.0 - 1.0 / ratio
    } else {
        0.0
    }
}

/// One write call of an application (thesis 3.5).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WriteCall {
    /// Raw data written, GB.
    pub data_gb: f64,
    /// Physical link speed, bytes/s.
    pub link_bps: f64,
    /// Compression ratio reached.
    pub ratio: f64,
    /// Aggregate compression speed (all threads), raw bytes/s.
    pub compression_bps: f64,
    /// Share of the uncompressed write's duration the application computes during it
    /// (0 = synchronous write).
    pub asynchronism: f64,
    /// S3's prolonging factor (1 = S1/S2, no prolonging).
    pub prolong: f64,
}

impl WriteCall {
    /// Thesis eq. 3.3: how much faster than the raw write it can be, limited by the ratio, the
    /// compression speed over the link, and CPU contention with an asynchronous computation.
    pub fn speedup(&self) -> f64 {
        let mut f = self.ratio.min(self.compression_bps / self.link_bps);
        if self.asynchronism > 0.0 {
            f = f.min(1.0 / (2.0 * self.asynchronism));
        }
        f.max(f64::MIN_POSITIVE)
    }

    /// Thesis eq. 3.6: how many times the raw write's duration the prolonged write takes.
    pub fn prolong_actual(&self) -> f64 {
        let p = self.prolong.max(1.0);
        p.max(self.link_bps / self.compression_bps).max(p / 2.0 + self.asynchronism)
    }

    /// The write's duration, seconds: raw time / speedup, or raw time × prolong for S3.
    pub fn duration_seconds(&self) -> f64 {
        let raw = self.data_gb * 1e9 / self.link_bps;
        if self.prolong > 1.0 {
            raw * self.prolong_actual()
        } else {
            raw / self.speedup()
        }
    }

    /// Thesis eq. 3.4: machine seconds the compression uses during the write, less what the
    /// asynchronous computation uses.
    pub fn compression_cpu_seconds(&self) -> f64 {
        let f = self.speedup();
        let t = self.data_gb * 1e9 / (self.link_bps * f) * (1.0 - self.asynchronism * f);
        t.max(0.0)
    }

    /// Thesis eq. 3.7 and 3.8: (machine seconds of the original write's duration, extra
    /// machine seconds of prolonging), for S3. Without prolonging the extra is 0.
    pub fn prolong_split(&self) -> (f64, f64) {
        let raw = self.data_gb * 1e9 / self.link_bps;
        let orig = raw * (1.0 - self.asynchronism).max(0.0);
        let extra = raw * (self.prolong.max(1.0) - 1.0);
        (orig, extra)
    }
}

/// What one write costs and saves.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WriteCost {
    /// How long the write takes, seconds.
    pub duration_seconds: f64,
    /// How long the uncompressed write takes, seconds.
    pub raw_seconds: f64,
    /// Machine seconds spent compressing.
    pub compression_cpu_seconds: f64,
    /// Thesis eq. 3.5/3.9: above-idle energy for compression within the write, the whole
    /// machine for time added by prolonging.
    pub compression_cost: f64,
    /// The machine time a faster write hands back to the application, priced as the full
    /// machine (thesis 5.2, S1's "unique savings").
    pub machine_savings: f64,
    /// Storage saved per day.
    pub storage_savings_per_day: f64,
    /// Days until the storage savings pay for the compression net of machine savings; 0 when
    /// the write pays at once; None when it never pays (ratio <= 1 and net cost > 0).
    pub days_to_redeem: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn compression_cost_parts_match_thesis_3_4_1() {
        let m = CostModel::default();
        let c = m.machine_cost(5.0, Machine::Full);
        assert!(close(c.investment, 0.00037, 0.000005), "{c:?}");
        assert!(close(c.maintenance, 0.00017, 0.000005), "{c:?}");
        assert!(close(c.energy, 0.000073, 0.0000005), "{c:?}");
        assert!(close(c.total(), 0.00061, 0.000005), "{c:?}");
        let idle = m.compression_cost_per_gb(5.0, Machine::Idle);
        assert!(close(idle, 0.000055, 0.0000005), "{idle}");
    }

    #[test]
    fn storage_cost_matches_thesis_3_4_2() {
        let m = CostModel::default();
        assert!(close(m.storage_cost_per_gb_year(), 0.053, 0.0005));
        // 40 TB for three months: about 530 EUR (thesis 3.4.3).
        assert!(close(m.storage_cost(40_000.0, 365.0 / 4.0), 530.0, 1.0));
    }

    #[test]
    fn reproduces_thesis_table_3_1() {
        // Cost savings of storing 40 TB of data for 3 months compressed.
        let m = CostModel::default();
        let table = [
            (1.05, 25.0),
            (1.1, 48.0),
            (1.2, 88.0),
            (1.3, 122.0),
            (1.4, 151.0),
            (1.5, 177.0),
            (2.0, 265.0),
        ];
        for (ratio, eur) in table {
            // The thesis rounds the 3-month cost to 530 EUR before applying the ratio ...
            assert_eq!((530.0 * savings_share(ratio)).round(), eur, "ratio {ratio}");
            // ... the model's unrounded 529.3 EUR stays within 1 EUR of every entry.
            let s = m.storage_savings(40_000.0, 365.0 / 4.0, ratio);
            assert!(close(s, eur, 1.0), "ratio {ratio}: {s} vs {eur}");
        }
    }

    #[test]
    fn redemption_days_match_figure_3_8_text() {
        let m = CostModel::default();
        // "a small compression factor of 1.1 would be worthwhile after only 46 days".
        let d = m.days_to_redeem(1.1, 5.0, Machine::Full).unwrap();
        assert_eq!(d.round(), 46.0, "{d}");
        // "The red line would even start profiting with a factor of 1.05 after one week".
        let d = m.days_to_redeem(1.05, 5.0, Machine::Idle).unwrap();
        assert!((7.0..=8.5).contains(&d), "{d}");
        assert_eq!(m.days_to_redeem(1.0, 5.0, Machine::Full), None);
        assert_eq!(m.days_to_redeem(0.9, 5.0, Machine::Full), None);
    }

    #[test]
    fn every_input_moves_the_result() {
        let base = CostModel::default();
        let c0 = base.compression_cost_per_gb(5.0, Machine::Full);
        let mut m = base;
        m.compute.price *= 2.0;
        assert!(m.compression_cost_per_gb(5.0, Machine::Full) > c0);
        let mut m = base;
        m.energy_price_kwh *= 2.0;
        assert!(
            m.compression_cost_per_gb(5.0, Machine::Idle)
                > base.compression_cost_per_gb(5.0, Machine::Idle)
        );
        assert!(m.storage_cost_per_gb_year() > base.storage_cost_per_gb_year());
        let mut m = base;
        m.idle_share = 0.5;
        assert!(
            m.compression_cost_per_gb(5.0, Machine::Idle)
                < base.compression_cost_per_gb(5.0, Machine::Idle)
        );
        let mut m = base;
        m.storage_capacity_gb *= 2.0;
        assert!(close(m.storage_cost_per_gb_year() * 2.0, base.storage_cost_per_gb_year(), 1e-12));
    }

    #[test]
    fn speedup_is_limited_by_ratio_speed_and_asynchronism() {
        let w = WriteCall {
            data_gb: 1.0,
            link_bps: 100e6,
            ratio: 3.0,
            compression_bps: 1000e6,
            asynchronism: 0.0,
            prolong: 1.0,
        };
        assert!(close(w.speedup(), 3.0, 1e-12));
        assert!(close(WriteCall { compression_bps: 200e6, ..w }.speedup(), 2.0, 1e-12));
        assert!(close(WriteCall { asynchronism: 0.5, ..w }.speedup(), 1.0, 1e-12));
        // 10 s raw, 3x faster.
        assert!(close(w.duration_seconds(), 10.0 / 3.0, 1e-9));
        // eq. 3.4 with f_async = 0.25, f_speedup = 2: 10/2 * (1 - 0.5) = 2.5 s.
        let a = WriteCall { asynchronism: 0.25, ..w };
        assert!(close(a.speedup(), 2.0, 1e-12));
        assert!(close(a.compression_cpu_seconds(), 2.5, 1e-9));
    }

    #[test]
    fn prolonging_follows_eq_3_6_to_3_9() {
        let w = WriteCall {
            data_gb: 1.0,
            link_bps: 100e6,
            ratio: 3.0,
            compression_bps: 1000e6,
            asynchronism: 1.0,
            prolong: 1.5,
        };
        // Thesis: 100 % asynchronous, prolong 1.5 -> 1.75.
        assert!(close(w.prolong_actual(), 1.75, 1e-12));
        let s = WriteCall { asynchronism: 0.0, ..w };
        assert!(close(s.prolong_actual(), 1.5, 1e-12));
        assert!(close(WriteCall { compression_bps: 50e6, ..s }.prolong_actual(), 2.0, 1e-12));
        let (orig, extra) = s.prolong_split();
        assert!(close(orig, 10.0, 1e-9) && close(extra, 5.0, 1e-9));
        let m = CostModel::default();
        let c = m.write_cost(&s);
        let expect = m.machine_cost(10.0, Machine::Idle).total()
            + m.machine_cost(5.0, Machine::Full).total();
        assert!(close(c.compression_cost, expect, 1e-12), "{c:?}");
        assert!(close(c.duration_seconds, 15.0, 1e-9));
        assert_eq!(c.machine_savings, 0.0);
    }

    #[test]
    fn s1_pays_at_once_when_it_saves_machine_time() {
        let m = CostModel::default();
        let w = WriteCall {
            data_gb: 10.0,
            link_bps: 117e6,
            ratio: 2.0,
            compression_bps: 500e6,
            asynchronism: 0.0,
            prolong: 1.0,
        };
        let c = m.write_cost(&w);
        assert!(c.machine_savings > c.compression_cost, "{c:?}");
        assert_eq!(c.days_to_redeem, Some(0.0));
        // Incompressible data: no savings, compression cost never redeemed.
        let c = m.write_cost(&WriteCall { ratio: 1.0, ..w });
        assert_eq!(c.days_to_redeem, None);
    }

    #[test]
    fn measured_cost_charges_extra_time_as_full_machine() {
        let m = CostModel::default();
        // 1 GB at 100 MB/s: 10 s raw. A 15 s write: 10 s above idle + 5 s full machine.
        let c = m.measured_write_cost(1.0, 100e6, 15.0, 2.0);
        let expect = m.machine_cost(10.0, Machine::Idle).total()
            + m.machine_cost(5.0, Machine::Full).total();
        assert!(close(c.compression_cost, expect, 1e-15));
        assert_eq!(c.machine_savings, 0.0);
        assert!(c.days_to_redeem.unwrap() > 0.0);
        // A 4 s write saves 6 s of the machine, more than 4 s above idle cost: pays at once.
        let c = m.measured_write_cost(1.0, 100e6, 4.0, 2.0);
        assert!(close(c.machine_savings, m.machine_cost(6.0, Machine::Full).total(), 1e-15));
        assert_eq!(c.days_to_redeem, Some(0.0));
    }
}
