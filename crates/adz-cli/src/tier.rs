//! `adz compress --tiers`, `adz decompress --tiers` and `adz tier status|flush|evict|gc`:
//! datasets on a hierarchy of storage tiers (adz-tier, docs/TIERS.md).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use adz_tier::{open_with_profile, CostModel, CostTable, Profile, ProfileChoice, Tiered};
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
    /// (JSON, docs/TIERS.md), instead of the machine profile.
    #[arg(long, value_name = "FILE", requires = "tiers")]
    pub(crate) tier_costs: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) profile: ProfileFlag,
}

/// Where the controller's priors and placement's costs come from: the machine profile,
/// unless told otherwise.
#[derive(Args, Clone, Default)]
pub(crate) struct ProfileFlag {
    /// The machine profile (`adz profile`): what each rung costs and saves on this machine.
    /// The adaptive strategies and the start prediction take their priors from it (the
    /// shape of speed and ratio along the ladder, before the data is measured), and with
    /// --tiers placement takes its costs from it. Default: $XDG_CONFIG_HOME/adz/profile.json
    /// or ~/.config/adz/profile.json if it exists, else the built-in tables.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["tier_costs", "no_profile"])]
    pub(crate) profile: Option<PathBuf>,
    /// Use the built-in tables even if a profile exists.
    #[arg(long)]
    pub(crate) no_profile: bool,
    /// With --tiers and a profile: predict every block's costs from its features (the
    /// profile's predictor), not only those of data classes the profile did not measure.
    #[arg(long)]
    pub(crate) predict_every_block: bool,
    /// With --tiers and a profile measured with --tiers: placement takes every tier's
    /// bandwidth and latency from the profile's measurement of it (by name), also where the
    /// configuration gives them (a throttle keeps the configured rate).
    #[arg(long)]
    pub(crate) measured_tiers: bool,
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
    #[command(flatten)]
    profile: ProfileFlag,
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

/// The costs placement uses and where they came from.
struct Costs {
    model: CostModel,
    profile: Option<Profile>,
    source: String,
}

impl ProfileFlag {
    /// The profile to use: the one given, none with --no-profile, else the default one.
    fn choice(&self) -> ProfileChoice {
        ProfileChoice::from_options(self.profile.clone(), self.no_profile)
    }

    /// The profile, loaded: a given one that does not load is an error; the default one is
    /// named in a warning and left out.
    pub(crate) fn load(&self) -> Result<Option<(PathBuf, Profile)>> {
        let chosen = self.choice().load()?;
        if let Some(left_out) = &chosen.left_out {
            eprintln!("adz: warning: {left_out}");
        }
        Ok(chosen.profile)
    }
}

/// The controller's priors from `profile` and how to name them; the built-in table if there
/// is none or it has no usable figures (named in a warning).
pub(crate) fn priors(
    profile: Option<&(PathBuf, Profile)>,
) -> (adz_core::control::Priors, Option<String>) {
    let Some((path, p)) = profile else { return (adz_core::control::Priors::builtin(), None) };
    match p.priors() {
        Ok(priors) => {
            let n = priors.measured_rungs().count();
            (priors, Some(format!("the profile {} ({n} rungs measured)", path.display())))
        }
        Err(e) => {
            eprintln!("adz: warning: the profile {} gives no priors: {e}", path.display());
            (adz_core::control::Priors::builtin(), None)
        }
    }
}

/// Costs from `--tier-costs`, else the profile (given, or at the default path if it exists),
/// else the built-in table for `threads` threads.
fn costs(file: Option<&PathBuf>, p: &ProfileFlag, threads: usize) -> Result<Costs> {
    if let Some(f) = file {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let table = CostTable::from_json(&text).with_context(|| format!("in {}", f.display()))?;
        let source = format!("the cost table {}", f.display());
        return Ok(Costs { model: CostModel::from_table(table), profile: None, source });
    }
    let chosen = p.choice().costs(threads)?;
    // Placing data with the built-in costs when the default profile is broken would hide
    // it: unlike the priors, placement refuses (`adz tier status` only warns, in `run`).
    if let Some(left_out) = chosen.left_out {
        return Err(left_out.error.into());
    }
    let mut model = chosen.model;
    model.predict_every_block = p.predict_every_block;
    let source = match &chosen.profile {
        Some((path, prof)) => format!(
            "the profile {} ({} rungs, {} blocks measured{})",
            path.display(),
            prof.rungs.len(),
            prof.samples.len(),
            if p.predict_every_block { "; every block predicted" } else { "" }
        ),
        None => format!("the built-in table for {threads} threads (no profile: run `adz profile`)"),
    };
    Ok(Costs { model, profile: chosen.profile.map(|(_, prof)| prof), source })
}

/// Opens the tiers; a tier whose bandwidth is "measure" takes the profile's measurement of
/// it, if the profile has one, instead of measuring at every open. With `measured`, every
/// tier the profile measured takes its figures for placement.
fn open(config: &Path, profile: Option<&Profile>, measured: bool) -> Result<Tiered> {
    Ok(open_with_profile(crate::remote::load_tiers(config)?, profile, measured)?)
}

fn threads(n: usize) -> usize {
    if n == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        n
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
        let threads = threads(a.threads);
        let mut costs = costs(a.tier.tier_costs.as_ref(), &a.tier.profile, threads)?;
        let mut tiers = open(file, costs.profile.as_ref(), a.tier.profile.measured_tiers)?;
        tiers.set_threads(threads);
        let Some(name) = &a.output else {
            anyhow::bail!("with --tiers, give the dataset's name as OUTPUT");
        };
        let input = io::Input::open(&a.input)?;
        let mut reader: Box<dyn Read> = input.reader()?;
        let report = tiers
            .write_with(name, &mut reader, &mut costs.model)
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
            eprintln!("adz:   costs from {}", costs.source);
            if report.predicted > 0 {
                eprintln!(
                    "adz:   {} blocks' costs predicted from their features",
                    report.predicted
                );
            }
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
        let tiers = open(file, None, false)?;
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
    let threads = threads(0);
    // Only flush and evict place data; status and gc go on without a profile they cannot read.
    let places = matches!(a.command, TierCommand::Flush | TierCommand::Evict { .. });
    let costs = match costs(a.tier_costs.as_ref(), &a.profile, threads) {
        Ok(c) => Some(c),
        Err(e) if !places => {
            eprintln!("adz: warning: {e:#} (not needed here, ignored)");
            None
        }
        Err(e) => return Err(e),
    };
    let profile = costs.as_ref().and_then(|c| c.profile.as_ref());
    let tiers = open(&a.tiers, profile, a.profile.measured_tiers)?;
    let costs = costs.map(|c| c.model.table);
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
            let costs = costs.expect("flush and evict read their costs or fail above");
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
