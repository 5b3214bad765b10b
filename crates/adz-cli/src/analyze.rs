//! `adz analyze`: compressibility, zero blocks and deduplication of data the user owns,
//! before choosing anything (docs/LIFECYCLE.md).

use std::io::Write;
use std::process::ExitCode;

use adz_core::analyze::{AnalyzeOptions, Analyzer, ENTRY_BYTES};
use adz_core::store::LinkSpeed;
use anyhow::{bail, Context, Result};
use clap::Args;

pub const AFTER_HELP: &str = "\
Compressibility is measured on a sample of each input (as `adz predict` takes it); zero
blocks and deduplication read every byte, with memory bounded by sampling chunk hashes. The
dedup table's memory assumes 64 bytes per distinct chunk (a 32-byte hash, an 8-byte location
and 24 bytes of table overhead). 'combined' multiplies the dedup ratio by zstd:3's ratio,
assuming distinct chunks compress as the whole data does.

Examples:
  adz analyze data.bin
  adz analyze --link 10GbE --json run1/*.bin
  tar c dir | adz analyze -";

#[derive(Args)]
pub struct AnalyzeArgs {
    /// Files to analyse, or - for stdin.
    #[arg(required = true)]
    paths: Vec<String>,
    /// The link for the predicted write times: 1GbE, 10GbE, 500MB/s ...
    #[arg(short, long, default_value = "1GbE", value_name = "RATE")]
    link: LinkSpeed,
    /// Threads of the predicted write (default: one per core).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: AnalyzeArgs) -> Result<ExitCode> {
    let opts =
        AnalyzeOptions { link: a.link.bytes_per_sec(), threads: a.threads, ..Default::default() };
    let mut an = Analyzer::new(opts);
    let mut stdin_used = false;
    for p in &a.paths {
        if p == "-" {
            if stdin_used {
                bail!("- (stdin) given twice");
            }
            stdin_used = true;
            an.add_stream(&mut std::io::stdin().lock()).context("analysing stdin")?;
            continue;
        }
        let mut f = std::fs::File::open(p).with_context(|| format!("cannot open {p}"))?;
        let meta = f.metadata().with_context(|| format!("cannot read {p}"))?;
        if meta.is_dir() {
            bail!("{p} is a directory; give files (e.g. {p}/*)");
        }
        an.add_file(&mut f, meta.len()).with_context(|| format!("analysing {p}"))?;
    }
    let r = an.report();
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &r)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mb = |v: f64| v / 1e6;
    writeln!(out, "inputs:           {} ({} bytes)", r.inputs, r.bytes)?;
    writeln!(out, "zero 4K blocks:   {:.1} %", 100.0 * r.zero_block_share)?;
    writeln!(out, "sampled:          {} bytes for the rungs", r.sampled_bytes)?;
    writeln!(
        out,
        "\ncompressibility, write time at {:.0} MB/s (raw: {:.2} s)",
        mb(r.link),
        r.raw_write_seconds
    )?;
    writeln!(out, "{:<10} {:>8} {:>12} {:>12}", "rung", "ratio", "MB/s/thread", "write s")?;
    for g in &r.rungs {
        writeln!(
            out,
            "{:<10} {:>8.3} {:>12.1} {:>12.2}",
            g.codec,
            g.ratio,
            mb(g.speed),
            g.write_seconds
        )?;
    }
    writeln!(
        out,
        "\ndeduplication ({ENTRY_BYTES} bytes per table entry; combined = dedup x {})",
        r.combined_with.as_deref().unwrap_or("-")
    )?;
    writeln!(
        out,
        "{:<6} {:>7} {:>12} {:>10} {:>8} {:>14} {:>9} {:>8}",
        "chunks", "size", "chunks", "mean", "dedup", "table GB/TB", "combined", "sampled"
    )?;
    for d in &r.dedup {
        writeln!(
            out,
            "{:<6} {:>6}K {:>12} {:>10.0} {:>8.3} {:>14.2} {:>9} {:>8}",
            d.method,
            d.chunk_size >> 10,
            d.chunks,
            d.mean_chunk,
            d.dedup_ratio,
            d.table_bytes_per_tb / 1e9,
            d.combined_ratio.map_or("-".to_owned(), |c| format!("{c:.3}")),
            if d.sample_rate >= 1.0 {
                "all".to_owned()
            } else {
                format!("1/{:.0}", 1.0 / d.sample_rate)
            }
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
