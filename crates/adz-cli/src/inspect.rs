//! `adz inspect` and `adz verify`: what an adz file holds, and whether every checksum holds.

use std::io::Write;
use std::process::ExitCode;

use adz_core::{verify_stream, FileInfo};
use anyhow::{Context, Result};
use clap::Args;

use crate::io::Input;
use crate::progress;

#[derive(Args)]
pub(crate) struct InspectArgs {
    /// adz file, or - for stdin (read through to the end).
    pub(crate) file: String,
    /// List every frame: offsets, lengths, codec, filters, checksum.
    #[arg(long)]
    pub(crate) frames: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct VerifyArgs {
    /// adz file, or - for stdin.
    pub(crate) file: String,
    /// Print nothing on success; problems are still reported.
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

pub(crate) fn inspect(a: InspectArgs) -> Result<ExitCode> {
    let input = Input::open(&a.file)?;
    let info = match &input {
        Input::Stdin => FileInfo::scan(input.reader()?, a.frames),
        Input::File { path, .. } => {
            let f = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            FileInfo::read_seekable(std::io::BufReader::new(f), a.frames)
        }
        Input::Remote(r) => FileInfo::read_seekable(r.seekable(), a.frames),
    }
    .with_context(|| format!("inspecting {}", input.describe()))?;
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &info)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "file:        {}", input.describe())?;
    writeln!(out, "format:      adz {}", info.version)?;
    writeln!(out, "block size:  {}", info.block_size)?;
    writeln!(out, "frames:      {}", info.frames)?;
    writeln!(out, "raw size:    {}", info.raw_bytes)?;
    writeln!(out, "file size:   {}", info.file_bytes)?;
    writeln!(out, "ratio:       {:.3}", info.ratio)?;
    if !info.configs.is_empty() {
        writeln!(
            out,
            "\n{:<28} {:>8} {:>14} {:>14} {:>7}",
            "configuration", "frames", "raw", "stored", "ratio"
        )?;
        for (name, t) in &info.configs {
            let ratio = t.raw_bytes as f64 / t.stored_bytes.max(1) as f64;
            writeln!(
                out,
                "{name:<28} {:>8} {:>14} {:>14} {ratio:>7.3}",
                t.frames, t.raw_bytes, t.stored_bytes
            )?;
        }
    }
    if let Some(frames) = &info.frame_list {
        writeln!(
            out,
            "\n{:>8} {:>14} {:>14} {:>10} {:>10}  {:<16}  configuration",
            "frame", "file offset", "raw offset", "raw", "stored", "xxh3"
        )?;
        for f in frames {
            writeln!(
                out,
                "{:>8} {:>14} {:>14} {:>10} {:>10}  {:<16}  {}",
                f.frame,
                f.file_offset,
                f.raw_offset,
                f.raw_len,
                f.stored_len,
                f.raw_checksum,
                f.config
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn verify(a: VerifyArgs) -> Result<ExitCode> {
    let input = Input::open(&a.file)?;
    let pb = progress::bar(input.len(), a.quiet, "verify");
    let report = verify_stream(input.reader()?, |pos| pb.set_position(pos));
    pb.finish_and_clear();
    if report.problems.is_empty() {
        if !a.quiet {
            println!(
                "{}: OK ({} frames, {} raw bytes)",
                input.describe(),
                report.frames,
                report.raw_bytes
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    for p in &report.problems {
        eprintln!("adz: {}: {}", input.describe(), adz_core::store::chain_text(&p.error));
    }
    let bad: Vec<String> =
        report.problems.iter().filter_map(|p| p.frame).map(|f| f.to_string()).collect();
    eprintln!(
        "adz: {}: DAMAGED: {} of {} frames read are good{}",
        input.describe(),
        report.good_frames,
        report.frames,
        if bad.is_empty() { String::new() } else { format!("; bad frames: {}", bad.join(", ")) }
    );
    Ok(ExitCode::FAILURE)
}
