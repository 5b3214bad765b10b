//! The energy of a write (decision 0046): the CPU packages' RAPL counters where they are
//! readable, else the process's CPU seconds times a per-core power figure; and the flags of
//! the energy strategy (`-s energy`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use adz_core::control::{EnergyCost, Strategy};
use clap::Args;

/// Where Linux publishes the RAPL counters (powercap; AMD's are named intel-rapl too).
pub(crate) const POWERCAP: &str = "/sys/class/powercap";

/// Seconds in a year of 365 days, for `--retention`.
const YEAR: f64 = 365.0 * 86400.0;

/// The energy strategy's figures, and the per-core power the summary's energy uses when RAPL
/// is not readable.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Energy (-s energy, and the summary's joules)")]
pub(crate) struct EnergyArgs {
    /// Watts one busy core draws: the energy strategy's price of a CPU second, and the
    /// summary's energy when the RAPL counters are not readable. Default: the machine
    /// profile's figure (`adz profile`, which measures it with RAPL or records --core-watts),
    /// else 12.5 (a 300 W node of 24 cores at full load, the cost model's compute node).
    #[arg(long, value_name = "W")]
    pub(crate) core_watts: Option<f64>,
    /// The machine profile's watts per busy core, if it has a figure ([`EnergyArgs::load_profile`]).
    #[arg(skip)]
    pub(crate) profile_watts: Option<f64>,
    /// How long the output is kept: the energy strategy prices its stored bytes for this long
    /// (30d, 6mo, 1y, 10y; also h, w). Default 1y.
    #[arg(long, value_name = "AGE", value_parser = parse_retention)]
    pub(crate) retention: Option<Duration>,
    /// Joules to keep one stored GB (1e9 bytes) for a year. Default 94608 (the cost model's
    /// 3000 W storage system of 1 PB; without cooling, which the CPU figure leaves out too).
    #[arg(long, value_name = "J")]
    pub(crate) storage_energy: Option<f64>,
    /// The energy strategy may make the write at most F times as long as sending the raw bytes
    /// through the link (F >= 1, or inf for no bound). Default 2.
    #[arg(long, value_name = "F")]
    pub(crate) max_slowdown: Option<f64>,
}

impl EnergyArgs {
    /// The watts per busy core in use: `--core-watts`, the strategy's own (`energy=watts:W`),
    /// the profile's, the default.
    pub(crate) fn watts(&self, strategy: Strategy) -> f64 {
        self.core_watts
            .or(strategy.energy().map(|c| c.core_watts).filter(|&w| !is_default_watts(w)))
            .or(self.profile_watts)
            .unwrap_or(EnergyCost::DEFAULT_CORE_WATTS)
    }

    /// Take the machine profile's power figure (see `adz profile`) unless `--core-watts` is
    /// given.
    pub(crate) fn use_profile(&mut self, profile: Option<&adz_tier::Profile>) {
        if self.core_watts.is_none() {
            self.profile_watts = profile.and_then(|p| p.core_power.as_ref()).map(|c| c.watts);
        }
    }

    /// The retention in years (default 1).
    pub(crate) fn years(&self) -> f64 {
        self.retention.map_or(1.0, |d| d.as_secs_f64() / YEAR)
    }

    /// Check the figures: finite and non-negative, a slowdown of at least 1.
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        for (name, v) in
            [("--core-watts", self.core_watts), ("--storage-energy", self.storage_energy)]
        {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                anyhow::bail!("{name} must be a number >= 0, got {v}");
            }
        }
        if let Some(f) = self.max_slowdown.filter(|f| f.is_nan() || *f < 1.0) {
            anyhow::bail!("--max-slowdown must be a number >= 1 (or inf), got {f}");
        }
        Ok(())
    }

    /// `strategy` with these flags applied if it is the energy strategy: a flag given wins
    /// over the strategy's own figure (`energy=watts:...`); `--retention` scales the storage
    /// energy per year (the flag's, or the default's).
    pub(crate) fn apply(&self, strategy: Strategy) -> Strategy {
        let Strategy::Energy(c) = strategy else { return strategy };
        let per_year = match (self.storage_energy, self.retention) {
            (Some(j), _) => j,
            (None, Some(_)) => EnergyCost::DEFAULT_STORAGE_JOULES_PER_GB_YEAR,
            // Neither flag: the strategy's figure over its own retention stands.
            (None, None) => c.storage_joules_per_gb,
        };
        // The strategy's default watts give way to the profile's figure.
        let watts = if is_default_watts(c.core_watts) { self.profile_watts } else { None };
        Strategy::Energy(EnergyCost::new(
            self.core_watts.or(watts).unwrap_or(c.core_watts),
            per_year,
            self.years(),
            self.max_slowdown.unwrap_or(c.max_slowdown),
        ))
    }
}

/// Whether `w` is the built-in figure, which a profile's measured one replaces (an
/// `energy=watts:12.5` given on purpose is taken for it too).
fn is_default_watts(w: f64) -> bool {
    w == EnergyCost::DEFAULT_CORE_WATTS
}

/// `30d`, `6mo`, `1y`, `12h`, `2w` (a year is 365 days, a month 30).
pub(crate) fn parse_retention(s: &str) -> Result<Duration, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.trim().parse().map_err(|_| format!("{s}: not a time like 30d, 6mo, 1y"))?;
    let unit = match unit {
        "h" => 3600.0,
        "d" | "" => 86400.0,
        "w" => 7.0 * 86400.0,
        "mo" => 30.0 * 86400.0,
        "y" => YEAR,
        _ => return Err(format!("{s}: unknown unit {unit:?} (h, d, w, mo, y)")),
    };
    if !(n.is_finite() && n >= 0.0 && n * unit < 1e6 * YEAR) {
        return Err(format!("{s}: must be a time >= 0"));
    }
    Ok(Duration::from_secs_f64(n * unit))
}

/// One RAPL package domain: its counter and the value at which it wraps.
#[derive(Debug)]
struct Domain {
    energy_uj: PathBuf,
    max_uj: u64,
    start_uj: u64,
}

/// The packages' RAPL energy counters (`intel-rapl:N/energy_uj`), read at the start.
#[derive(Debug)]
pub(crate) struct Rapl {
    domains: Vec<Domain>,
}

fn read_u64(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

impl Rapl {
    /// The package domains under `root` (`intel-rapl:N`; their subzones `intel-rapl:N:M`,
    /// core and DRAM, are parts of it or outside the CPU), if there is one and every counter
    /// reads. None: no RAPL (a VM, another architecture) or not readable (root only since
    /// Linux 5.10).
    pub(crate) fn open(root: &Path) -> Option<Rapl> {
        let mut domains = Vec::new();
        for entry in std::fs::read_dir(root).ok()?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix("intel-rapl:") else { continue };
            if rest.contains(':') {
                continue;
            }
            let dir = entry.path();
            let energy_uj = dir.join("energy_uj");
            let start_uj = read_u64(&energy_uj)?;
            let max_uj = read_u64(&dir.join("max_energy_range_uj"))?;
            domains.push(Domain { energy_uj, max_uj, start_uj });
        }
        (!domains.is_empty()).then_some(Rapl { domains })
    }

    /// Joules the packages used since [`Rapl::open`], each counter allowed to wrap once
    /// (at 2^32 uJ, about an hour at 1 kW, so a longer write may be short by a wrap).
    pub(crate) fn joules(&self) -> Option<f64> {
        let mut uj = 0u64;
        for d in &self.domains {
            let now = read_u64(&d.energy_uj)?;
            uj += if now >= d.start_uj {
                now - d.start_uj
            } else {
                d.max_uj.saturating_sub(d.start_uj) + now
            };
        }
        Some(uj as f64 / 1e6)
    }
}

/// How a write's energy was measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Source {
    /// The packages' RAPL counters: the whole CPU, other processes and idle power included.
    Rapl,
    /// The process's CPU seconds times this many watts per busy core.
    CpuTime(f64),
}

/// What a write took: joules, CPU seconds, and the source of the joules.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Energy {
    pub(crate) joules: f64,
    pub(crate) cpu_seconds: f64,
    pub(crate) source: Source,
}

/// Measures a write's energy from its start ([`Meter::start`]) to [`Meter::finish`].
pub(crate) struct Meter {
    rapl: Option<Rapl>,
    cpu0: Option<cpu_time::ProcessTime>,
    watts: f64,
}

impl Meter {
    /// Start measuring: RAPL under `root` if readable, and the process's CPU time.
    pub(crate) fn start(root: &Path, watts: f64) -> Meter {
        Meter { rapl: Rapl::open(root), cpu0: cpu_time::ProcessTime::try_now().ok(), watts }
    }

    /// What the write took since [`Meter::start`].
    pub(crate) fn finish(&self) -> Energy {
        let cpu_seconds = self.cpu0.map_or(0.0, |t| t.elapsed().as_secs_f64());
        match self.rapl.as_ref().and_then(Rapl::joules) {
            Some(joules) => Energy { joules, cpu_seconds, source: Source::Rapl },
            None => Energy {
                joules: cpu_seconds * self.watts,
                cpu_seconds,
                source: Source::CpuTime(self.watts),
            },
        }
    }
}

/// The summary's energy line: joules and joules per GB written, where they came from, and
/// the energy of keeping the output for the retention.
pub(crate) fn summary_line(e: &Energy, raw: u64, stored: u64, flags: &EnergyArgs) -> String {
    let per_gb = if raw > 0 { e.joules / raw as f64 * 1e9 } else { 0.0 };
    let source = match e.source {
        Source::Rapl => format!("RAPL package counters, CPU time {:.2} s", e.cpu_seconds),
        Source::CpuTime(w) => {
            let from = if flags.core_watts.is_none() && flags.profile_watts == Some(w) {
                " (the profile's)"
            } else {
                ""
            };
            format!("CPU time {:.2} s x {w} W per core{from}; RAPL not readable", e.cpu_seconds)
        }
    };
    let per_year = flags.storage_energy.unwrap_or(EnergyCost::DEFAULT_STORAGE_JOULES_PER_GB_YEAR);
    let years = flags.years();
    let keep = stored as f64 / 1e9 * per_year * years;
    format!(
        "energy {:.1} J, {per_gb:.1} J/GB written ({source}); keeping the output {years:.3} y \
         at {per_year:.0} J/GB-year: {keep:.1} J",
        e.joules
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(root: &Path, name: &str, energy: u64, max: u64) {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
        std::fs::write(d.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
    }

    #[test]
    fn rapl_sums_packages_skips_subzones_and_wraps() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        domain(root, "intel-rapl:0", 1_000_000, 10_000_000);
        domain(root, "intel-rapl:1", 9_000_000, 10_000_000);
        // A subzone (core) counts inside its package: it must not be added again.
        domain(root, "intel-rapl:0:0", 5, 10_000_000);
        std::fs::create_dir_all(root.join("dtpm")).unwrap();
        let rapl = Rapl::open(root).unwrap();
        assert_eq!(rapl.domains.len(), 2);
        // Package 0 used 2.5 J; package 1 wrapped: 1 J to the top, then 0.5 J.
        domain(root, "intel-rapl:0", 3_500_000, 10_000_000);
        domain(root, "intel-rapl:1", 500_000, 10_000_000);
        domain(root, "intel-rapl:0:0", 9_999_999, 10_000_000);
        assert!((rapl.joules().unwrap() - 4.0).abs() < 1e-9, "{:?}", rapl.joules());
    }

    #[test]
    fn no_rapl_or_unreadable_falls_back_to_cpu_time() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Rapl::open(dir.path()).is_none());
        assert!(Rapl::open(&dir.path().join("absent")).is_none());
        // A counter that does not read (as energy_uj for non-root users since Linux 5.10).
        let d = dir.path().join("intel-rapl:0");
        std::fs::create_dir_all(d.join("energy_uj")).unwrap();
        std::fs::write(d.join("max_energy_range_uj"), "100\n").unwrap();
        assert!(Rapl::open(dir.path()).is_none());
        let m = Meter::start(dir.path(), 10.0);
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let e = m.finish();
        assert_eq!(e.source, Source::CpuTime(10.0));
        assert!(e.cpu_seconds > 0.0);
        assert!((e.joules - 10.0 * e.cpu_seconds).abs() < 1e-12);
        let line = summary_line(&e, 2_000_000_000, 1_000_000_000, &EnergyArgs::default());
        assert!(line.contains("J/GB written") && line.contains("RAPL not readable"), "{line}");
    }

    #[test]
    fn flags_apply_to_the_energy_strategy_only() {
        let flags = EnergyArgs {
            core_watts: Some(5.0),
            retention: Some(parse_retention("10y").unwrap()),
            storage_energy: None,
            max_slowdown: Some(f64::INFINITY),
            profile_watts: None,
        };
        let Strategy::Energy(c) = flags.apply(Strategy::Energy(EnergyCost::DEFAULT)) else {
            panic!()
        };
        assert_eq!(c.core_watts, 5.0);
        let want = EnergyCost::DEFAULT_STORAGE_JOULES_PER_GB_YEAR * 10.0;
        assert!((c.storage_joules_per_gb - want).abs() < 1e-6);
        assert_eq!(c.max_slowdown, f64::INFINITY);
        assert_eq!(flags.apply(Strategy::Throughput), Strategy::Throughput);
        assert_eq!(flags.watts(Strategy::Throughput), 5.0);
        assert_eq!(EnergyArgs::default().watts(Strategy::Throughput), 12.5);
        let bad = EnergyArgs { max_slowdown: Some(0.5), ..EnergyArgs::default() };
        assert!(bad.check().is_err());
        for s in ["1y", "30d", "6mo", "12h", " 2W "] {
            parse_retention(s).unwrap();
        }
        for s in ["", "x", "1q", "-1d", "1e300y"] {
            assert!(parse_retention(s).is_err(), "{s}");
        }
        assert_eq!(parse_retention("6mo").unwrap(), Duration::from_secs(180 * 86400));
    }

    #[test]
    fn the_profiles_watts_replace_the_default_but_not_a_figure_given() {
        let flags = EnergyArgs { profile_watts: Some(7.0), ..EnergyArgs::default() };
        assert_eq!(flags.watts(Strategy::Throughput), 7.0);
        assert_eq!(flags.watts(Strategy::Energy(EnergyCost::DEFAULT)), 7.0);
        let Strategy::Energy(c) = flags.apply(Strategy::Energy(EnergyCost::DEFAULT)) else {
            panic!()
        };
        assert_eq!(c.core_watts, 7.0);
        // energy=watts:10 is the user's figure: it stands.
        let given: Strategy = "energy=watts:10".parse().unwrap();
        assert_eq!(flags.watts(given), 10.0);
        let Strategy::Energy(c) = flags.apply(given) else { panic!() };
        assert_eq!(c.core_watts, 10.0);
        // --core-watts wins over both.
        let flag = EnergyArgs { core_watts: Some(5.0), ..flags.clone() };
        assert_eq!(flag.watts(given), 5.0);
        let e = Energy { joules: 7.0, cpu_seconds: 1.0, source: Source::CpuTime(7.0) };
        assert!(summary_line(&e, 1, 1, &flags).contains("7 W per core (the profile's)"));
        assert!(!summary_line(&e, 1, 1, &flag).contains("the profile's"));
    }
}
