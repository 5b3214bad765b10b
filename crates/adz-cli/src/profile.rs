//! `adz profile`: measure this machine's rungs (and tiers) into a versioned JSON profile that
//! tiered writes take their costs from (adz_tier::profile, docs/TIERS.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use adz_core::control::Ladder;
use adz_core::format::CodecSpec;
use adz_tier::profile::{self, CorePower, DataSet, Profile};

use crate::energy;
use anyhow::{bail, Context, Result};
use clap::Args;

pub const AFTER_HELP: &str = "\
Each data set is cut into blocks; every block is compressed at every rung on one thread (its \
ratio, speed and cheap features are the predictor's training rows), then the whole set on all \
threads (the speed a tiered write, which encodes on all cores, sees). Without --data the sets \
are adz-datagen's text, doubles, sparse and random data and blocks that blend two of them. \
The predictor is scored by fitting it on all sets but one and predicting that one.

`adz compress --tiers` and `adz tier` read the profile from the default path when it exists.

Examples:
  adz profile                                  about a minute on 2 cores; ~/.config/adz/profile.json
  adz profile --data /data/corpus --tiers t.toml
                                               real files, and the tiers' bandwidth and latency
  adz profile --full --out -                   the whole ladder (slow), JSON on stdout";

/// The default rungs: a representative subset of the ladder.
const DEFAULT_RUNGS: [&str; 7] = ["none", "lz4:1", "zstd:1", "zstd:3", "zstd:6", "zstd:12", "xz:1"];

#[derive(Args)]
pub struct ProfileArgs {
    /// Measure every rung of the standard ladder (48 rungs; takes long) instead of the default
    /// subset none,lz4:1,zstd:1,zstd:3,zstd:6,zstd:12,xz:1.
    #[arg(long)]
    full: bool,
    /// The rungs to measure, comma-separated (instead of the default subset).
    #[arg(long, value_delimiter = ',', value_name = "C:L,...", conflicts_with = "full")]
    rungs: Vec<CodecSpec>,
    /// Profile on the files in DIR (each file a data set) instead of generated data.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// With --data: raw bytes taken from each file, whole blocks spread evenly over it.
    #[arg(long, default_value = "12MiB", value_parser = crate::parse_bytes, value_name = "SIZE")]
    per_file: u64,
    /// Without --data: raw bytes of each generated kind.
    #[arg(long, default_value = "6MiB", value_parser = crate::parse_bytes, value_name = "SIZE")]
    size: u64,
    /// Raw bytes per block (as the tiers' block_size).
    #[arg(short = 'B', long, default_value = "1MiB", value_parser = crate::parse_size, value_name = "SIZE")]
    block_size: u32,
    /// Threads of the all-core measurement (default: one per core).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Also measure the bandwidth and latency of the tiers configured in FILE.
    #[arg(long, value_name = "FILE")]
    tiers: Option<PathBuf>,
    /// Watts one busy core draws, to record in the profile (a datasheet's figure: the
    /// package's TDP over its cores). Without it the profile records what the CPU packages'
    /// RAPL counters measured over the run, where they are readable (root; not in most VMs),
    /// and otherwise nothing. `adz compress -s energy` and the summary's joules use it when no
    /// --core-watts is given.
    #[arg(long, value_name = "W")]
    pub core_watts: Option<f64>,
    /// Where to write the profile, - for stdout (default: $XDG_CONFIG_HOME/adz/profile.json or
    /// ~/.config/adz/profile.json).
    #[arg(short, long, value_name = "FILE")]
    out: Option<String>,
    /// No progress bar and no summary.
    #[arg(short, long)]
    quiet: bool,
}

/// adz-datagen's kinds, `size` bytes each, and a set of blocks that each blend two kinds.
fn generated(size: u64, block: usize) -> Vec<DataSet> {
    use adz_datagen::{generate, Kind};
    let size = size as usize;
    let kinds = [Kind::Text, Kind::Doubles, Kind::Sparse, Kind::Random];
    let mut sets: Vec<DataSet> = kinds
        .iter()
        .enumerate()
        .map(|(i, &k)| DataSet {
            name: k.to_string(),
            source: "generated".into(),
            data: generate(k, size, 11 + i as u64),
        })
        .collect();
    // Blends: 64 KiB pieces of two kinds, a share f of the first, so that the predictor sees
    // blocks between the pure kinds.
    let pairs = [(0, 1, 0.5), (0, 3, 0.5), (1, 3, 0.5), (2, 0, 0.5), (0, 1, 0.25), (2, 1, 0.75)];
    let mut blend = Vec::new();
    let piece = (64 << 10).min(block);
    for (n, &(a, b, f)) in pairs.iter().enumerate() {
        let (da, db) = (&sets[a].data, &sets[b].data);
        let mut out = Vec::with_capacity(block);
        let count = block.div_ceil(piece);
        for k in 0..count {
            let from = if (k as f64 + 0.5) / (count as f64) < f { da } else { db };
            let take = piece.min(block - out.len()).min(from.len());
            let at = ((n * 7 + k) * piece) % (from.len() - take + 1);
            out.extend_from_slice(&from[at..at + take]);
        }
        blend.extend_from_slice(&out);
    }
    sets.push(DataSet { name: "blends".into(), source: "generated".into(), data: blend });
    sets
}

/// Each regular file of `dir` (sorted by name), up to `per_file` bytes of whole blocks spread
/// evenly over it.
fn from_dir(dir: &std::path::Path, per_file: u64, block: usize) -> Result<Vec<DataSet>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let mut sets = Vec::new();
    for path in paths {
        let len = std::fs::metadata(&path)?.len();
        if len == 0 {
            continue;
        }
        let mut f = std::fs::File::open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let blocks_in_file = len.div_ceil(block as u64);
        let want = (per_file / block as u64).max(1).min(blocks_in_file);
        let mut data = Vec::with_capacity((want as usize) * block);
        for k in 0..want {
            let b = k * blocks_in_file / want;
            f.seek(SeekFrom::Start(b * block as u64))?;
            let n = (block as u64).min(len - b * block as u64) as usize;
            let start = data.len();
            data.resize(start + n, 0);
            f.read_exact(&mut data[start..])
                .with_context(|| format!("reading {}", path.display()))?;
        }
        let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        sets.push(DataSet { name, source: path.display().to_string(), data });
    }
    if sets.is_empty() {
        bail!("{} has no non-empty files to profile", dir.display());
    }
    Ok(sets)
}

pub fn run(a: ProfileArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let rungs: Vec<CodecSpec> = if a.full {
        Ladder::standard().rungs().to_vec()
    } else if !a.rungs.is_empty() {
        a.rungs.clone()
    } else {
        DEFAULT_RUNGS.iter().map(|r| r.parse().expect("a valid built-in rung")).collect()
    };
    let threads = if a.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        a.threads
    };
    let out_path = match a.out.as_deref() {
        Some("-") => None,
        Some(p) => Some(PathBuf::from(p)),
        None => Some(profile::default_path().context(
            "neither XDG_CONFIG_HOME nor HOME is set: give the profile's path with --out",
        )?),
    };
    // Read the tier configuration first, so that a bad one fails before the measurements.
    let tiers = a.tiers.as_ref().map(|p| crate::remote::load_tiers(p)).transpose()?;
    let block = a.block_size as usize;
    let sets = match &a.data {
        Some(dir) => from_dir(dir, a.per_file, block)?,
        None => generated(a.size, block),
    };
    if let Some(w) = a.core_watts.filter(|w| !(w.is_finite() && *w > 0.0)) {
        bail!("--core-watts must be a number > 0, got {w}");
    }
    let pb = crate::progress::bar(Some(profile::work(&sets, &rungs)), a.quiet, "profile");
    let meter = energy::Meter::start(Path::new(energy::POWERCAP), 0.0);
    let mut p = profile::measure(&sets, &rungs, a.block_size, threads, &mut |s| {
        pb.inc(s.bytes);
        pb.set_message(format!("{} {} {}", s.set, s.rung, s.pass));
    })?;
    pb.finish_and_clear();
    p.core_power = core_power(a.core_watts, &meter.finish());
    if let Some(t) = &tiers {
        for tier in &t.tiers {
            let m = profile::measure_tier(tier, 32 << 20)
                .with_context(|| format!("measuring tier {:?}", tier.name))?;
            p.tiers.push(m);
        }
    }
    match &out_path {
        None => println!("{}", p.to_json()),
        Some(path) => p.save(path)?,
    }
    if !a.quiet {
        summary(&p, started.elapsed().as_secs_f64(), out_path.as_ref());
    }
    Ok(ExitCode::SUCCESS)
}

/// The profile's power figure: the one given, else RAPL's joules over the run's CPU seconds.
fn core_power(given: Option<f64>, run: &energy::Energy) -> Option<CorePower> {
    if let Some(watts) = given {
        return Some(CorePower { watts, source: "given".into() });
    }
    let watts = run.joules / run.cpu_seconds;
    (run.source == energy::Source::Rapl && run.cpu_seconds > 0.0 && watts.is_finite())
        .then(|| CorePower { watts, source: "rapl".into() })
}

fn summary(p: &Profile, seconds: f64, path: Option<&PathBuf>) {
    eprintln!(
        "adz: profiled {} rungs on {} data sets ({} blocks of {} KiB), {} threads, in {seconds:.1} s",
        p.rungs.len(),
        p.sets.len(),
        p.samples.len(),
        p.block_size >> 10,
        p.threads
    );
    eprintln!(
        "adz: {:<20} {:<9} {:>7} {:>10} {:>10}",
        "set", "rung", "ratio", "MB/s 1T", "MB/s all"
    );
    for s in &p.sets {
        for (r, m) in p.rungs.iter().zip(&s.rungs) {
            eprintln!(
                "adz: {:<20} {:<9} {:>7.3} {:>10.1} {:>10.1}",
                s.name,
                r.to_string(),
                m.ratio,
                m.speed_one / 1e6,
                m.speed_all / 1e6
            );
        }
    }
    match &p.core_power {
        Some(c) => eprintln!("adz: {:.1} W per busy core ({})", c.watts, c.source),
        None => eprintln!(
            "adz: no power figure (RAPL not readable; give one with --core-watts for -s energy)"
        ),
    }
    for t in &p.tiers {
        eprintln!(
            "adz: tier {:<12} {:>10.1} MB/s, {:.3} ms per object",
            t.name,
            t.bandwidth / 1e6,
            t.latency * 1e3
        );
    }
    if let Some(r) = &p.predictor {
        if let (Some(off), Some(on)) = (&r.held_out, &r.held_out_online) {
            eprintln!(
                "adz: predictor, each set held out: ratio within 4 % for {:.1} % of blocks x rungs \
                 ({:.1} % corrected online), speed within 10 % for {:.1} % ({:.1} %)",
                off.ratio_within_4pct * 100.0,
                on.ratio_within_4pct * 100.0,
                off.speed_within_10pct * 100.0,
                on.speed_within_10pct * 100.0
            );
        }
        eprintln!(
            "adz: predictor: {:.0} blocks predicted per second on one core",
            r.blocks_per_second
        );
    }
    if let Some(path) = path {
        eprintln!("adz: wrote {}", path.display());
    }
}
