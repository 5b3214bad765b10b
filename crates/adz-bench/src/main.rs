//! `adz-bench`: the evaluation harness (issue 5, thesis chapter 5). Datasets, the matrix of
//! static rungs, S1/S2/S3 and external tools at several link speeds and workloads, the oracle
//! bound, a markdown report and plots. See docs/EVALUATION.md.

mod datasets;
mod oracle;
mod plot;
mod report;
mod results;
mod run;
mod solver;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use adz_core::format::CodecSpec;
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::run::{Adaptive, Plan, Workload};

const AFTER_HELP: &str = "\
Examples:
  adz-bench run --quick                 a few minutes: small generated datasets, a few rungs
  adz-bench run                         the full matrix (hours; see docs/EVALUATION.md)
  adz-bench run --estimate              print the planned rows and an estimated run time
  adz-bench report results.csv          markdown summary
  adz-bench plot results.csv plots/     one PNG per dataset, link and workload
  adz-bench plot-trace t.jsonl t.png    rung and speed per block of an `adz compress --trace`

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
    /// Run the matrix; write results.csv, summary.md and the adaptive runs' traces to --out.
    Run(RunArgs),
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
    /// Datasets, comma-separated: linux, incompressible, text, matrix, climate, mixed.
    /// Default: all; --quick: text, matrix, climate.
    #[arg(long, value_delimiter = ',')]
    datasets: Vec<String>,
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
    /// Print the plan and its estimated run time, run nothing.
    #[arg(long)]
    estimate: bool,
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
        Cmd::Run(a) => run_cmd(a),
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
        Cmd::PlotTrace { trace, png, title } => {
            let title = title.unwrap_or_else(|| {
                trace.file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned())
            });
            plot::plot_trace(&trace, &png, &title)
        }
    }
}

fn run_cmd(a: RunArgs) -> Result<()> {
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
        trace_dir: Some(a.out.join("traces")),
    };
    let avail = plan.externals.iter().filter(|e| e.available()).count();
    if a.estimate {
        let secs = run::estimate_seconds(&plan, threads, avail);
        println!(
            "{} rows: {} datasets x {} links x {} workloads, {} static rungs, {} adaptive, {} external tools available",
            run::planned_rows(&plan, avail),
            plan.datasets.len(),
            plan.links_mbs.len(),
            plan.workloads.len(),
            plan.statics.len(),
            plan.adaptive.len(),
            avail
        );
        println!("estimated run time: {:.1} hours ({secs:.0} s) on {threads} threads, {} bytes per dataset", secs / 3600.0, plan.size);
        return Ok(());
    }
    plan.datasets = a.common.ensure_all()?;
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    eprintln!("adz-bench: {} rows planned", run::planned_rows(&plan, avail));
    let rows = run::run(&plan, |r| {
        eprintln!(
            "{:<15} {:>6} {:<5} {:<22} {:>9.3} s {:>9.1} MB/s ratio {:>6.3}",
            r.dataset, r.link_mbs, r.workload, r.config, r.seconds, r.write_mbs, r.ratio
        );
    })?;
    let csv = a.out.join("results.csv");
    results::write_csv(&csv, &rows)?;
    let md = report::markdown(&rows);
    std::fs::write(a.out.join("summary.md"), &md)?;
    println!("{}", csv.display());
    Ok(())
}
