//! `adz cost`: what compression costs and saves (thesis 3.4 and 3.5), for given ratios and
//! speeds or for the adaptive rows of an `adz-bench run` CSV.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use adz_core::cost::{savings_share, CostModel, Hardware, Machine, WriteCall};
use adz_core::store::LinkSpeed;
use anyhow::{bail, Context, Result};
use clap::Args;

pub const AFTER_HELP: &str = "\
Defaults are the thesis' example (DKRZ numbers): a 7000 EUR, 300 W compute node used 3 years;
a 1 PB, 100 000 EUR, 3000 W storage system used 3 years; 15 % maintenance a year; 25 % for
cooling; 0.14 EUR/kWh; idle power 1/4 of full power.

Two compression costs are shown: 'full' charges the whole machine (the time could have been
used otherwise), 'idle' only the energy above idle (compression while the application waits
for I/O anyway, thesis 3.4.1).

Energy is priced next to money: the joules compressing a GB takes (the node's power with
cooling, for its seconds per GB), the joules storing a GB for a year takes (the storage
system's power with cooling, per GB of capacity), and per ratio the kWh the data saves over
--days net of its compression, and the days until the storage energy saved exceeds the
compression energy spent (-s energy weighs the same two terms per block; decision 0046).

Examples:
  adz cost                                   the thesis' table 3.1 (40 TB for 3 months)
  adz cost --ratio 1.1 --ratio 2 --speed 500MB/s --link 1GbE
  adz cost --bench .cache/bench/evaluation/results.csv
                                             cost of each S1/S2/S3 run of a bench";

#[derive(Args)]
pub struct CostArgs {
    /// Compression ratios to price (repeatable). Default: the thesis' table 3.1 ratios.
    #[arg(long = "ratio", value_name = "R")]
    ratios: Vec<f64>,
    /// Aggregate compression speed (all threads), e.g. 200MB/s: sets the machine seconds per
    /// GB. Default 200MB/s (the thesis' 5 s per GB).
    #[arg(long, default_value = "200MB/s")]
    speed: LinkSpeed,
    /// The link to storage (e.g. 1GbE, 117MB/s): with it, each ratio also gets the
    /// write-call model of thesis 3.5 (duration, machine savings, net days to redeem).
    #[arg(long)]
    link: Option<LinkSpeed>,
    /// Raw data stored, GB (1 GB = 10^9 bytes).
    #[arg(long, default_value_t = 40_000.0)]
    data_gb: f64,
    /// Days the data stays on this storage.
    #[arg(long, default_value_t = 365.0 / 4.0)]
    days: f64,
    /// Share of the raw write's duration the application computes during an asynchronous
    /// write (0 = synchronous).
    #[arg(long, default_value_t = 0.0)]
    asynchronism: f64,
    /// S3's prolonging factor for the write-call model (1 = no prolonging).
    #[arg(long, default_value_t = 1.0)]
    prolong: f64,
    /// Price every adaptive row (S1, S2, S3) of an `adz-bench run` results CSV instead.
    #[arg(long, value_name = "CSV")]
    bench: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    model: ModelArgs,
}

#[derive(Args)]
struct ModelArgs {
    /// Compute node price.
    #[arg(long, default_value_t = 7000.0, help_heading = "Cost model")]
    machine_price: f64,
    /// Compute node lifetime, years.
    #[arg(long, default_value_t = 3.0, help_heading = "Cost model")]
    machine_years: f64,
    /// Compute node power at full load, watts.
    #[arg(long, default_value_t = 300.0, help_heading = "Cost model")]
    machine_watts: f64,
    /// Idle power as a share of full power.
    #[arg(long, default_value_t = 0.25, help_heading = "Cost model")]
    idle_share: f64,
    /// Storage system price.
    #[arg(long, default_value_t = 100_000.0, help_heading = "Cost model")]
    storage_price: f64,
    /// Storage system lifetime, years.
    #[arg(long, default_value_t = 3.0, help_heading = "Cost model")]
    storage_years: f64,
    /// Storage system power, watts.
    #[arg(long, default_value_t = 3000.0, help_heading = "Cost model")]
    storage_watts: f64,
    /// Storage system capacity, GB.
    #[arg(long, default_value_t = 1_000_000.0, help_heading = "Cost model")]
    storage_gb: f64,
    /// Maintenance per year as a share of the price (both machines).
    #[arg(long, default_value_t = 0.15, help_heading = "Cost model")]
    maintenance: f64,
    /// Energy price per kWh.
    #[arg(long, default_value_t = 0.14, help_heading = "Cost model")]
    energy_price: f64,
    /// Cooling as a share added to every power figure.
    #[arg(long, default_value_t = 0.25, help_heading = "Cost model")]
    cooling: f64,
}

impl ModelArgs {
    fn model(&self) -> Result<CostModel> {
        let positive = [
            ("--machine-years", self.machine_years),
            ("--storage-years", self.storage_years),
            ("--storage-gb", self.storage_gb),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                bail!("{name} must be a positive number, got {v}");
            }
        }
        let non_negative = [
            ("--machine-price", self.machine_price),
            ("--machine-watts", self.machine_watts),
            ("--storage-price", self.storage_price),
            ("--storage-watts", self.storage_watts),
            ("--maintenance", self.maintenance),
            ("--energy-price", self.energy_price),
            ("--cooling", self.cooling),
        ];
        for (name, v) in non_negative {
            if !(v.is_finite() && v >= 0.0) {
                bail!("{name} must be a number >= 0, got {v}");
            }
        }
        if !(0.0..=1.0).contains(&self.idle_share) {
            bail!("--idle-share must be between 0 and 1, got {}", self.idle_share);
        }
        Ok(CostModel {
            compute: Hardware {
                price: self.machine_price,
                lifetime_years: self.machine_years,
                power_watts: self.machine_watts,
                maintenance_per_year: self.maintenance,
            },
            idle_share: self.idle_share,
            storage: Hardware {
                price: self.storage_price,
                lifetime_years: self.storage_years,
                power_watts: self.storage_watts,
                maintenance_per_year: self.maintenance,
            },
            storage_capacity_gb: self.storage_gb,
            energy_price_kwh: self.energy_price,
            cooling_share: self.cooling,
        })
    }
}

/// The cost model's machines in joules: the compute node's and the storage system's power,
/// both with cooling, as the money figures count them.
struct EnergyModel {
    /// Watts of the compute node at full load.
    node_watts: f64,
    /// Share of them drawn at idle.
    idle_share: f64,
    /// Joules to store a GB for a year.
    store_gb_year: f64,
}

impl EnergyModel {
    fn of(m: &CostModel) -> EnergyModel {
        let cool = 1.0 + m.cooling_share;
        EnergyModel {
            node_watts: m.compute.power_watts * cool,
            idle_share: m.idle_share,
            store_gb_year: m.storage.power_watts * cool / m.storage_capacity_gb * 365.0 * 86400.0,
        }
    }

    /// Joules of compressing a GB that takes `s_per_gb` seconds of the whole node.
    fn compress_full(&self, s_per_gb: f64) -> f64 {
        self.node_watts * s_per_gb
    }

    /// The same, counting only the power above idle.
    fn compress_idle(&self, s_per_gb: f64) -> f64 {
        self.compress_full(s_per_gb) * (1.0 - self.idle_share)
    }

    /// kWh that storing `gb` for `days` at `ratio` saves, net of compressing it (full node).
    fn saved_kwh(&self, gb: f64, days: f64, ratio: f64, s_per_gb: f64) -> f64 {
        let saved = self.store_gb_year * gb * days / 365.0 * savings_share(ratio);
        (saved - self.compress_full(s_per_gb) * gb) / 3.6e6
    }

    /// Days of storage until the energy `ratio` saves exceeds the energy its compression took
    /// (None when it saves nothing).
    fn days_to_redeem(&self, ratio: f64, s_per_gb: f64) -> Option<f64> {
        let per_day = self.store_gb_year / 365.0 * savings_share(ratio);
        (per_day > 0.0).then(|| self.compress_full(s_per_gb) / per_day)
    }
}

const TABLE_3_1_RATIOS: [f64; 7] = [1.05, 1.1, 1.2, 1.3, 1.4, 1.5, 2.0];

pub fn run(a: CostArgs) -> Result<ExitCode> {
    price(a).map(|()| ExitCode::SUCCESS)
}

fn price(a: CostArgs) -> Result<()> {
    let m = a.model.model()?;
    if !(a.data_gb.is_finite() && a.data_gb >= 0.0 && a.days.is_finite() && a.days >= 0.0) {
        bail!("--data-gb and --days must be numbers >= 0");
    }
    if !(0.0..=1.0).contains(&a.asynchronism) {
        bail!("--asynchronism must be between 0 and 1, got {}", a.asynchronism);
    }
    if !(a.prolong.is_finite() && a.prolong >= 1.0) {
        bail!("--prolong must be a number >= 1, got {}", a.prolong);
    }
    if let Some(path) = &a.bench {
        return bench(&m, path, a.json);
    }
    let ratios = if a.ratios.is_empty() { TABLE_3_1_RATIOS.to_vec() } else { a.ratios.clone() };
    if let Some(r) = ratios.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
        bail!("a ratio must be a positive number, got {r}");
    }
    let speed = a.speed.bytes_per_sec();
    let s_per_gb = 1e9 / speed;
    let full = m.compression_cost_per_gb(s_per_gb, Machine::Full);
    let idle = m.compression_cost_per_gb(s_per_gb, Machine::Idle);
    let raw_cost = m.storage_cost(a.data_gb, a.days);
    let rows = price_rows(&m, &a, &ratios, speed);
    let e = EnergyModel::of(&m);
    if a.json {
        let out = serde_json::json!({
            "model": m,
            "speed_bytes_per_sec": speed,
            "compression_cost_per_gb_full": full,
            "compression_cost_per_gb_idle": idle,
            "storage_cost_per_gb_year": m.storage_cost_per_gb_year(),
            "data_gb": a.data_gb,
            "days": a.days,
            "storage_cost_raw": raw_cost,
            "compression_joules_per_gb_full": e.compress_full(s_per_gb),
            "compression_joules_per_gb_idle": e.compress_idle(s_per_gb),
            "storage_joules_per_gb_year": e.store_gb_year,
            "ratios": rows,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "compression per GB at {:.0} MB/s ({s_per_gb:.2} s/GB): {full:.6} full machine, {idle:.6} above idle",
        speed / 1e6
    );
    println!("storage per GB-year: {:.4}", m.storage_cost_per_gb_year());
    let kwh = |j: f64| j / 3.6e6;
    println!(
        "energy: compressing a GB {:.0} J full machine ({:.0} J above idle, {:.6}); storing a GB \
         for a year {:.0} J ({:.4})",
        e.compress_full(s_per_gb),
        e.compress_idle(s_per_gb),
        kwh(e.compress_full(s_per_gb)) * m.energy_price_kwh,
        e.store_gb_year,
        kwh(e.store_gb_year) * m.energy_price_kwh,
    );
    println!("storing {} GB for {:.2} days uncompressed: {raw_cost:.2}", a.data_gb, a.days);
    println!();
    print_rows(&rows, a.link.is_some());
    Ok(())
}

/// One row per compression ratio: what it saves, when it pays back, and with a link what
/// one write costs.
fn price_rows(m: &CostModel, a: &CostArgs, ratios: &[f64], speed: f64) -> Vec<serde_json::Value> {
    let s_per_gb = 1e9 / speed;
    let e = EnergyModel::of(m);
    ratios
        .iter()
        .map(|&ratio| {
            let mut row = serde_json::json!({
                "ratio": ratio,
                "storage_saved_share": savings_share(ratio),
                "storage_savings": m.storage_savings(a.data_gb, a.days, ratio),
                "days_to_redeem_full": m.days_to_redeem(ratio, s_per_gb, Machine::Full),
                "days_to_redeem_idle": m.days_to_redeem(ratio, s_per_gb, Machine::Idle),
                "energy_saved_kwh": e.saved_kwh(a.data_gb, a.days, ratio, s_per_gb),
                "energy_days_to_redeem": e.days_to_redeem(ratio, s_per_gb),
            });
            if let Some(link) = a.link {
                let w = WriteCall {
                    data_gb: a.data_gb,
                    link_bps: link.bytes_per_sec(),
                    ratio,
                    compression_bps: speed,
                    asynchronism: a.asynchronism,
                    prolong: a.prolong,
                };
                row["write"] = serde_json::to_value(m.write_cost(&w)).unwrap_or_default();
            }
            row
        })
        .collect()
}

/// The rows of [`price_rows`] as a table (`write`: with the link's columns).
fn print_rows(rows: &[serde_json::Value], write: bool) {
    let days = |v: &serde_json::Value| v.as_f64().map_or("never".to_owned(), |d| format!("{d:.1}"));
    print!(
        "{:>7} {:>7} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "ratio", "saves", "savings", "days(full)", "days(idle)", "kWh saved", "days(energy)"
    );
    if write {
        print!(
            " {:>10} {:>10} {:>12} {:>12} {:>10}",
            "write s", "raw s", "compr. cost", "mach. saved", "net days"
        );
    }
    println!();
    for r in rows {
        print!(
            "{:>7.2} {:>6.1}% {:>12.2} {:>12} {:>12} {:>12.1} {:>12}",
            r["ratio"].as_f64().unwrap_or(0.0),
            r["storage_saved_share"].as_f64().unwrap_or(0.0) * 100.0,
            r["storage_savings"].as_f64().unwrap_or(0.0),
            days(&r["days_to_redeem_full"]),
            days(&r["days_to_redeem_idle"]),
            r["energy_saved_kwh"].as_f64().unwrap_or(0.0),
            days(&r["energy_days_to_redeem"]),
        );
        if let Some(w) = r.get("write") {
            print!(
                " {:>10.2} {:>10.2} {:>12.4} {:>12.4} {:>10}",
                w["duration_seconds"].as_f64().unwrap_or(0.0),
                w["raw_seconds"].as_f64().unwrap_or(0.0),
                w["compression_cost"].as_f64().unwrap_or(0.0),
                w["machine_savings"].as_f64().unwrap_or(0.0),
                days(&w["days_to_redeem"]),
            );
        }
        println!();
    }
}

/// Price the adaptive rows (S1, S2, S3) of an `adz-bench run` CSV by their measured duration.
fn bench(m: &CostModel, path: &Path, json: bool) -> Result<()> {
    let out = bench_rows(m, path)?;
    if out.is_empty() {
        bail!("{} has no adaptive rows (S1/S2/S3) to price", path.display());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    print_bench(&out);
    Ok(())
}

/// The adaptive rows of the CSV at `path`, each priced.
fn bench_rows(m: &CostModel, path: &Path) -> Result<Vec<serde_json::Value>> {
    let mut rd = csv::Reader::from_path(path)
        .with_context(|| format!("cannot read the bench results {}", path.display()))?;
    let headers = rd.headers()?.clone();
    let col = |name: &str| {
        headers.iter().position(|h| h == name).with_context(|| {
            format!("{} has no column '{name}': is it an adz-bench results CSV?", path.display())
        })
    };
    let (c_ds, c_link, c_wl, c_cfg, c_kind, c_bytes, c_secs, c_ratio) = (
        col("dataset")?,
        col("link_mbs")?,
        col("workload")?,
        col("config")?,
        col("kind")?,
        col("bytes")?,
        col("seconds")?,
        col("ratio")?,
    );
    let mut recs = Vec::new();
    for (i, rec) in rd.records().enumerate() {
        recs.push(rec.with_context(|| format!("{}: row {}", path.display(), i + 2))?);
    }
    let num = |i: usize, c: usize| -> Result<f64> {
        let rec = &recs[i];
        rec[c].parse::<f64>().with_context(|| {
            format!("{}: row {}: '{}' is not a number", path.display(), i + 2, &rec[c])
        })
    };
    // Rows of `adz-bench run --sink` have link 0: the real sink, whose speed is what its raw
    // row measured (bytes/s per dataset and workload).
    let mut sink_raw = std::collections::HashMap::new();
    for (i, rec) in recs.iter().enumerate() {
        if &rec[c_kind] == "raw" && num(i, c_link)? == 0.0 {
            let speed = num(i, c_bytes)? / num(i, c_secs)?;
            sink_raw.insert((rec[c_ds].to_owned(), rec[c_wl].to_owned()), speed);
        }
    }
    let mut out = Vec::new();
    for (i, rec) in recs.iter().enumerate() {
        if &rec[c_kind] != "adaptive" {
            continue;
        }
        let (link, bytes, secs, ratio) =
            (num(i, c_link)?, num(i, c_bytes)?, num(i, c_secs)?, num(i, c_ratio)?);
        let link_bps = if link == 0.0 {
            match sink_raw.get(&(rec[c_ds].to_owned(), rec[c_wl].to_owned())) {
                Some(&raw) => raw,
                None => continue, // a sink row without its raw row: nothing to price against
            }
        } else {
            link * 1e6
        };
        let c = m.measured_write_cost(bytes / 1e9, link_bps, secs, ratio);
        out.push(serde_json::json!({
            "dataset": &rec[c_ds], "link_mbs": link, "workload": &rec[c_wl],
            "config": &rec[c_cfg], "ratio": ratio, "cost": c,
        }));
    }
    Ok(out)
}

/// The rows of [`bench_rows`] as a table.
fn print_bench(out: &[serde_json::Value]) {
    println!(
        "{:<16} {:>6} {:<6} {:<12} {:>6} {:>9} {:>9} {:>12} {:>12} {:>9}",
        "dataset",
        "link",
        "work",
        "strategy",
        "ratio",
        "write s",
        "raw s",
        "compr. cost",
        "mach. saved",
        "days"
    );
    for r in out {
        let c = &r["cost"];
        println!(
            "{:<16} {:>6} {:<6} {:<12} {:>6.3} {:>9.3} {:>9.3} {:>12.8} {:>12.8} {:>9}",
            r["dataset"].as_str().unwrap_or(""),
            r["link_mbs"].as_f64().unwrap_or(0.0),
            r["workload"].as_str().unwrap_or(""),
            r["config"].as_str().unwrap_or(""),
            r["ratio"].as_f64().unwrap_or(0.0),
            c["duration_seconds"].as_f64().unwrap_or(0.0),
            c["raw_seconds"].as_f64().unwrap_or(0.0),
            c["compression_cost"].as_f64().unwrap_or(0.0),
            c["machine_savings"].as_f64().unwrap_or(0.0),
            c["days_to_redeem"].as_f64().map_or("never".to_owned(), |d| format!("{d:.2}")),
        );
    }
}
