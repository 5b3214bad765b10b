//! `adz`: adaptive compression on the storage I/O path. This binary is glue: flags, files and
//! messages. The work is done by the adz library crates.

mod io;
mod progress;

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Instant;

use adz_core::format::{CodecSpec, FilterSpec, Filters, MAX_FRAME_RAW_LEN};
use adz_core::{decode_stream, verify_stream, FileInfo, FrameWriter, WriterOptions};
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::io::{Input, Output};

const ABOUT: &str = "\
Adaptive compression on the storage I/O path.

adz cuts data into blocks (1 MiB by default) and stores each as a self-describing frame with \
its own codec, level and checksums, followed by an index that lets readers find any byte \
without decompressing the rest.";

const AFTER_HELP: &str = "\
Examples:
  adz compress data.bin                     writes data.bin.adz (zstd level 3)
  adz compress --codec lz4 data.bin out.adz  fastest codec
  adz compress --codec zstd:19 --filter shuffle:8 field.f64 field.adz
                                            8-byte numbers: shuffle bytes first
  tar c dir | adz compress - - > dir.tar.adz read stdin, write stdout
  adz decompress data.bin.adz               writes data.bin
  adz inspect data.bin.adz --frames         what is inside, frame by frame
  adz verify data.bin.adz                   check every checksum

Exit status: 0 on success, 1 on any error (damaged input, I/O failure), 2 on a usage error.";

#[derive(Parser)]
#[command(name = "adz", version, about = ABOUT, after_help = AFTER_HELP, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compress a file or stdin into the adz format.
    #[command(visible_alias = "c")]
    Compress(CompressArgs),
    /// Decompress an adz file, checking every checksum.
    #[command(visible_alias = "d")]
    Decompress(DecompressArgs),
    /// Show what an adz file holds: version, sizes, ratio, codecs used, frames.
    Inspect(InspectArgs),
    /// Check every checksum of an adz file and name any damaged frame.
    Verify(VerifyArgs),
}

#[derive(Args)]
struct CommonOut {
    /// Overwrite the output file if it exists.
    #[arg(short, long)]
    force: bool,
    /// Print nothing but errors (no progress bar, no summary).
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args)]
struct CompressArgs {
    /// File to compress, or - for stdin.
    #[arg(default_value = "-")]
    input: String,
    /// Output file, or - for stdout. Default: INPUT.adz, or stdout when reading stdin.
    output: Option<String>,
    /// Codec and level: none, lz4[:ACCEL 1..65537], lz4hc[:1..12], zstd[:-7..22], xz[:0..9].
    /// LZ4's parameter is its acceleration: higher is faster and compresses less.
    #[arg(short, long, default_value = "zstd:3", value_name = "CODEC[:LEVEL]")]
    codec: CodecSpec,
    /// A filter applied before the codec; repeat for a pipeline (at most 4). shuffle:N
    /// transposes the bytes of N-byte elements (e.g. shuffle:8 for f64 arrays), which often
    /// helps numeric data compress.
    #[arg(long = "filter", value_name = "FILTER:N")]
    filters: Vec<FilterSpec>,
    /// Raw bytes per block; each block is compressed and can be read on its own. Accepts
    /// suffixes K, M (binary: 1K = 1024), e.g. 64K, 1M, 4MiB. At most 64 MiB.
    #[arg(short = 'B', long, default_value = "1MiB", value_parser = parse_size, value_name = "SIZE")]
    block_size: u32,
    #[command(flatten)]
    common: CommonOut,
}

#[derive(Args)]
struct DecompressArgs {
    /// adz file to decompress, or - for stdin.
    #[arg(default_value = "-")]
    input: String,
    /// Output file, or - for stdout. Default: INPUT without .adz, or stdout when reading stdin.
    output: Option<String>,
    #[command(flatten)]
    common: CommonOut,
}

#[derive(Args)]
struct InspectArgs {
    /// adz file, or - for stdin (read through to the end).
    file: String,
    /// List every frame: offsets, lengths, codec, filters, checksum.
    #[arg(long)]
    frames: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct VerifyArgs {
    /// adz file, or - for stdin.
    file: String,
    /// Print nothing on success; problems are still reported.
    #[arg(short, long)]
    quiet: bool,
}

fn parse_size(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size (e.g. 4096, 64K, 1MiB)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        _ => return Err(format!("unknown unit in {s:?}; use K or M (binary), e.g. 64K, 1MiB")),
    };
    let bytes = n.saturating_mul(mult);
    if bytes == 0 || bytes > u64::from(MAX_FRAME_RAW_LEN) {
        return Err(format!("block size must be 1 byte ..= 64 MiB, got {s}"));
    }
    Ok(bytes as u32)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Compress(a) => compress(a),
        Command::Decompress(a) => decompress(a),
        Command::Inspect(a) => inspect(a),
        Command::Verify(a) => verify(a),
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("adz: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A reader of our output went away (`adz decompress x.adz - | head`): not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn same_file(input: &Input, output: &str) -> bool {
    let (Some(inp), false) = (input.path(), output == "-") else { return false };
    match (std::fs::canonicalize(inp), std::fs::canonicalize(output)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn compress(a: CompressArgs) -> Result<ExitCode> {
    let input = Input::open(&a.input)?;
    let out_arg = match (&a.output, &input) {
        (Some(o), _) => o.clone(),
        (None, Input::Stdin) => "-".to_owned(),
        (None, Input::File { path, .. }) => format!("{}.adz", path.display()),
    };
    if same_file(&input, &out_arg) {
        bail!("input and output are the same file: {out_arg}");
    }
    let opts = WriterOptions {
        block_size: a.block_size,
        codec: a.codec,
        filters: Filters::new(&a.filters)?,
        ..WriterOptions::default()
    };
    let started = Instant::now();
    let mut reader = input.reader()?;
    let output = Output::create(&out_arg, a.common.force, true)?;
    let out_name = output.describe();
    let mut writer = FrameWriter::new(output, opts)?;
    let pb = progress::bar(input.len(), a.common.quiet, "compress");
    let mut buf = vec![0u8; a.block_size.max(1 << 16) as usize];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", input.describe())),
        };
        writer.write_data(&buf[..n]).with_context(|| format!("writing {out_name}"))?;
        pb.inc(n as u64);
    }
    let (output, summary) = writer.finish().with_context(|| format!("writing {out_name}"))?;
    output.commit()?;
    pb.finish_and_clear();
    if !a.common.quiet {
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "{} -> {}: {} -> {} bytes, ratio {:.3}, {} frames, {:.2} s, {:.1} MB/s",
            input.describe(),
            out_name,
            summary.raw_bytes,
            summary.stored_bytes,
            summary.ratio(),
            summary.frames,
            secs,
            summary.raw_bytes as f64 / secs.max(1e-9) / 1e6,
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn decompress(a: DecompressArgs) -> Result<ExitCode> {
    let input = Input::open(&a.input)?;
    let out_arg = match (&a.output, &input) {
        (Some(o), _) => o.clone(),
        (None, Input::Stdin) => "-".to_owned(),
        (None, Input::File { path, .. }) => {
            match path.to_str().and_then(|p| p.strip_suffix(".adz")) {
                Some(stem) if !stem.is_empty() => stem.to_owned(),
                _ => bail!(
                "cannot name the output: {} does not end in .adz; give OUTPUT (or - for stdout)",
                path.display()
            ),
            }
        }
    };
    if same_file(&input, &out_arg) {
        bail!("input and output are the same file: {out_arg}");
    }
    let started = Instant::now();
    let reader = input.reader()?;
    let mut output = Output::create(&out_arg, a.common.force, false)?;
    let pb = progress::bar(input.len(), a.common.quiet, "decompress");
    let stats = decode_stream(reader, &mut output, |pos| pb.set_position(pos))
        .with_context(|| format!("decompressing {}", input.describe()))?;
    let out_name = output.describe();
    output.commit()?;
    pb.finish_and_clear();
    if !a.common.quiet && out_arg != "-" {
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "{} -> {}: {} frames, {} bytes, {:.2} s, {:.1} MB/s",
            input.describe(),
            out_name,
            stats.frames,
            stats.raw_bytes,
            secs,
            stats.raw_bytes as f64 / secs.max(1e-9) / 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn inspect(a: InspectArgs) -> Result<ExitCode> {
    let input = Input::open(&a.file)?;
    let info = match &input {
        Input::Stdin => FileInfo::scan(input.reader()?, a.frames),
        Input::File { path, .. } => {
            let f = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            FileInfo::read_seekable(std::io::BufReader::new(f), a.frames)
        }
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

fn verify(a: VerifyArgs) -> Result<ExitCode> {
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
        eprintln!("adz: {}: {}", input.describe(), p.error);
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
