//! `adz compress --tiers`, `adz decompress --tiers` and `adz tier status|flush|evict|gc`:
//! datasets on a hierarchy of storage tiers (adz-tier, docs/TIERS.md).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use adz_tier::{CostTable, Tiered, TiersConfig};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::io;

/// `--tiers FILE` (and its cost table), flattened into `compress` and `decompress`.
#[derive(Args, Clone, Default)]
pub(crate) struct TierFlag {
    /// Write to (compress) or read from (decompress) the storage tiers configured in FILE
    /// (TOML, docs/TIERS.md): OUTPUT, or INPUT, is then the name of a tiered dataset.
    #[arg(long, value_name = "FILE")]
    pub(crate) tiers: Option<PathBuf>,
    /// With --tiers: the rungs and their speed and ratio per data class that placement uses
    /// (JSON, docs/TIERS.md). Default: the built-in priors for one thread.
    #[arg(long, value_name = "FILE", requires = "tiers")]
    pub(crate) tier_costs: Option<PathBuf>,
}

/// `adz tier`.
#[derive(Args)]
pub(crate) struct TierArgs {
    /// The tier configuration (TOML, docs/TIERS.md).
    #[arg(long, value_name = "FILE")]
    tiers: PathBuf,
    /// The cost table for flushing (as for `compress --tier-costs`).
    #[arg(long, value_name = "FILE")]
    tier_costs: Option<PathBuf>,
    #[command(subcommand)]
    command: TierCommand,
}

#[derive(Subcommand)]
enum TierCommand {
    /// Each tier's capacity, use, bandwidth and segments; each dataset's size.
    Status,
    /// Move segments down where a tier is fuller than its flush threshold or segments are
    /// older than max_age; then remove what a crash left behind.
    Flush,
    /// Move every segment off one tier to the tiers below.
    Evict {
        /// The tier's name.
        tier: String,
    },
    /// Remove segment objects that no catalog names (left by a crash).
    Gc,
}

fn open(config: &Path) -> Result<Tiered> {
    let config = TiersConfig::load(config)?;
    Ok(Tiered::open(config)?)
}

fn costs(file: Option<&PathBuf>) -> Result<CostTable> {
    match file {
        None => Ok(CostTable::reference(&CostTable::default_rungs(), 1)),
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            Ok(CostTable::from_json(&text).with_context(|| format!("in {}", p.display()))?)
        }
    }
}

fn mb(bytes: u64) -> String {
    if bytes == u64::MAX {
        "unlimited".to_owned()
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

/// `adz compress --tiers FILE INPUT NAME`, or `None` without `--tiers`.
pub(crate) fn compress_if_tiers(a: &crate::compress::CompressArgs) -> Option<Result<ExitCode>> {
    let file = a.tier.tiers.as_ref()?;
    Some((|| {
        let tiers = open(file)?;
        let costs = costs(a.tier.tier_costs.as_ref())?;
        let Some(name) = &a.output else {
            anyhow::bail!("with --tiers, give the dataset's name as OUTPUT");
        };
        let input = io::Input::open(&a.input)?;
        let mut reader: Box<dyn Read> = input.reader()?;
        let report = tiers
            .write(name, &mut reader, &costs)
            .with_context(|| format!("writing {} to the tiers as {name:?}", input.describe()))?;
        if !a.common.quiet {
            let stored: u64 = report.stored.iter().sum();
            eprintln!(
                "adz: {} -> tiered {name:?}: {} raw, {} stored in {} segments, {:.2} s \
                 (predicted {:.2} s; placement {:.1} ms)",
                input.describe(),
                mb(report.raw),
                mb(stored),
                report.segments,
                report.seconds,
                report.predicted_seconds,
                report.placement_seconds * 1e3
            );
            for (t, s) in tiers.tiers().iter().zip(&report.stored) {
                eprintln!("adz:   {:<12} {}", t.config.name, mb(*s));
            }
        }
        Ok(ExitCode::SUCCESS)
    })())
}

/// `adz decompress --tiers FILE NAME OUTPUT`, or `None` without `--tiers`.
pub(crate) fn decompress_if_tiers(
    a: &crate::decompress::DecompressArgs,
) -> Option<Result<ExitCode>> {
    let file = a.tier.tiers.as_ref()?;
    Some((|| {
        let tiers = open(file)?;
        let reader = tiers.reader(&a.input)?;
        let Some(out_arg) = &a.output else {
            anyhow::bail!("with --tiers, give OUTPUT (or - for stdout)");
        };
        let mut output = io::Output::create(out_arg, a.common.force)?;
        reader
            .copy_to(&mut output, a.read.threads)
            .with_context(|| format!("reading tiered {:?}", a.input))?;
        output.commit()?;
        Ok(ExitCode::SUCCESS)
    })())
}

/// `adz tier ...`.
pub(crate) fn run(a: TierArgs) -> Result<ExitCode> {
    let tiers = open(&a.tiers)?;
    let costs = costs(a.tier_costs.as_ref())?;
    match a.command {
        TierCommand::Status => {
            println!(
                "{:<12} {:>14} {:>14} {:>12} {:>9} {:>14}",
                "tier", "capacity", "used", "MB/s", "segments", "raw"
            );
            for s in tiers.status()? {
                println!(
                    "{:<12} {:>14} {:>14} {:>12.0} {:>9} {:>14}",
                    s.name,
                    mb(s.capacity),
                    mb(s.used),
                    s.bandwidth / 1e6,
                    s.segments,
                    mb(s.raw)
                );
            }
            for name in tiers.datasets()? {
                let cat = tiers.catalog(&name)?;
                println!(
                    "dataset {name:?}: {} raw in {} segments",
                    mb(cat.raw_len),
                    cat.segments.len()
                );
            }
        }
        TierCommand::Flush | TierCommand::Evict { .. } => {
            let report = match &a.command {
                TierCommand::Evict { tier } => tiers.evict(tier, &costs)?,
                _ => tiers.flush(&costs)?,
            };
            let freed = tiers.gc()?;
            println!(
                "moved {} segments ({} copied, {} recompressed): {} read, {} written; {} of orphans removed",
                report.moved,
                report.copied,
                report.recompressed,
                mb(report.bytes_in),
                mb(report.bytes_out),
                mb(freed)
            );
        }
        TierCommand::Gc => println!("{} of orphans removed", mb(tiers.gc()?)),
    }
    Ok(ExitCode::SUCCESS)
}
