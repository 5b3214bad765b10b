//! `adz dataset write|commit|ls|cat|verify|gc`: many writers, one dataset (docs/OBJECT-STORAGE.md,
//! "Many writers"; the manifest is in docs/FORMAT.md, "Datasets").

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use adz_core::control::Strategy;
use adz_core::dataset::{Dataset, DatasetReader, DatasetWriter, GcOptions, Placement};
use adz_core::store::{LinkSpeed, NullStorage, Storage, Throttled};
use adz_core::{open, ReaderOptions, WriteOptions};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};

pub const AFTER_HELP: &str = "\
A dataset NAME (a local path or s3://bucket/key) is a set of parts, ordinary adz files under
NAME.parts/, and versioned manifests under NAME.manifest/ that say where each part's bytes go.
Writers run anywhere that sees the store; nothing is visible until a commit.

Examples:
  adz dataset write ckpt --id r3 --part-offset 3G rank3.bin   rank 3's rows at 3 GiB
  adz dataset write ckpt --id host7 < log                     appended at commit, in id order
  adz dataset write ckpt --id r3 --throttle 1GbE rank3.bin    as if on its own 1 GbE link
  adz dataset commit ckpt                                     version N+1 lists every part
  adz dataset ls ckpt                                         the parts of the latest version
  adz dataset cat ckpt -o 3G -n 4K                            reads only the part it touches
  adz dataset verify ckpt                                     every part and frame checked
  adz dataset gc ckpt --dry-run                               parts no commit lists";

#[derive(Args)]
pub struct DatasetArgs {
    #[command(subcommand)]
    command: DatasetCommand,
}

#[derive(Subcommand)]
enum DatasetCommand {
    /// Write one part of a dataset through the adaptive pipeline.
    Write(WriteArgs),
    /// Commit every part written so far as the dataset's next version.
    Commit(CommitArgs),
    /// Show the latest version: length, parts, gaps.
    Ls(LsArgs),
    /// Print a range of the dataset's bytes (all of it by default).
    Cat(CatArgs),
    /// Check every part of the latest version: that it is the part the manifest committed,
    /// and every frame's checksum. Exits 1 if anything is wrong, naming part and frame.
    Verify(VerifyArgs),
    /// Remove parts the latest version does not list, and older manifests.
    Gc(GcArgs),
}

#[derive(Args)]
struct WriteArgs {
    /// The dataset: a path or s3://bucket/key.
    dataset: String,
    /// Input file, or - for stdin.
    #[arg(default_value = "-")]
    input: String,
    /// This writer's id, unique among the dataset's writers: 1-64 of A-Z a-z 0-9 _ -.
    #[arg(long, value_name = "ID")]
    id: String,
    /// Where the part's bytes go in the dataset (K, M, G suffixes). Default: appended at
    /// commit, after the placed parts, in id order.
    #[arg(long, value_parser = crate::parse_bytes, value_name = "OFFSET")]
    part_offset: Option<u64>,
    /// How to choose codec and level (as for compress). Default: static=zstd:3.
    #[arg(short, long, default_value = "static=zstd:3", value_name = "STRATEGY")]
    strategy: Strategy,
    /// Compression threads (default: one per core).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Raw bytes per frame (K, M suffixes).
    #[arg(short = 'B', long = "frame-size", default_value = "1MiB", value_parser = crate::parse_size, value_name = "SIZE")]
    frame_size: u32,
    /// Pace this writer's output to RATE, a simulated link of its own (one node's link to
    /// the store; for evaluation), as `adz compress --throttle`. Same forms as --link.
    #[arg(long, value_name = "RATE")]
    throttle: Option<LinkSpeed>,
    /// The speed of the link to the store, which the adaptive strategies aim at: auto
    /// (measured), 1GbE, 10GbE, 500MB/s ... (as for compress).
    #[arg(short, long, default_value = "auto", value_name = "RATE|auto", value_parser = crate::parse_link)]
    link: adz_core::control::Link,
}

#[derive(Args)]
struct CommitArgs {
    /// The dataset: a path or s3://bucket/key.
    dataset: String,
    /// Commit only if the latest version is BASE (0: no dataset yet); otherwise fail.
    #[arg(long, value_name = "BASE")]
    base: Option<u64>,
}

#[derive(Args)]
struct LsArgs {
    /// The dataset: a path or s3://bucket/key.
    dataset: String,
    /// Print the manifest (JSON).
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct VerifyArgs {
    /// The dataset: a path or s3://bucket/key.
    dataset: String,
    /// Print nothing on success; problems are still reported.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args)]
struct CatArgs {
    /// The dataset: a path or s3://bucket/key.
    dataset: String,
    /// First byte to print (K, M, G suffixes).
    #[arg(short, long, default_value = "0", value_parser = crate::parse_bytes)]
    offset: u64,
    /// Bytes to print (fewer at the end). Default: to the end.
    #[arg(short = 'n', long, value_parser = crate::parse_bytes)]
    length: Option<u64>,
    /// Decoding threads (default: one per core).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    threads: usize,
}

#[derive(Args)]
struct GcArgs {
    /// The dataset: a path or s3://bucket/key.
    dataset: String,
    /// List what would be removed; remove nothing.
    #[arg(long)]
    dry_run: bool,
    /// Also remove a candidate manifest of the next version, left by a commit that died
    /// (it blocks later commits). Only when no commit is running.
    #[arg(long)]
    stale_candidates: bool,
}

/// The store and the dataset's name in it; an s3:// dataset honours the S3 flags
/// (`--s3-endpoint`, `--s3-allow-http`), as every other command does.
fn store_for(dataset: &str) -> Result<(Arc<dyn Storage>, String)> {
    if let Some((bucket, key)) = crate::remote::s3_location(dataset)? {
        return Ok((crate::remote::bucket_store(&bucket)?, key));
    }
    open::storage_for(dataset).with_context(|| format!("opening the store of {dataset}"))
}

pub fn run(a: DatasetArgs) -> Result<ExitCode> {
    match a.command {
        DatasetCommand::Write(a) => write(a),
        DatasetCommand::Commit(a) => commit(a),
        DatasetCommand::Ls(a) => ls(a),
        DatasetCommand::Cat(a) => cat(a),
        DatasetCommand::Verify(a) => verify(a),
        DatasetCommand::Gc(a) => gc(a),
    }
}

fn write(a: WriteArgs) -> Result<ExitCode> {
    let (store, name) = store_for(&a.dataset)?;
    let placement = a.part_offset.map_or(Placement::Append, Placement::At);
    let opts = WriteOptions {
        strategy: a.strategy,
        link: a.link,
        threads: a.threads,
        block_size: a.frame_size,
        link_guess: a.throttle.map(LinkSpeed::bytes_per_sec),
        ..Default::default()
    };
    let mut input: Box<dyn Read> = if a.input == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(&a.input).with_context(|| format!("cannot open {}", a.input))?)
    };
    // Each writer its own link: the pacing is per process, as one node's NIC would be.
    let link = a.throttle.map(|r| Throttled::simulated_link(NullStorage::new(), r.bytes_per_sec()));
    let mut w =
        DatasetWriter::create_wrapped(&*store, &name, &a.id, placement, opts, |up| match &link {
            Some(t) => t.wrap_upload(up),
            None => up,
        })
        .with_context(|| format!("writing part {} of {}", a.id, a.dataset))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", a.input)),
        };
        w.write(&buf[..n]).with_context(|| format!("writing {}", w.part_name()))?;
    }
    let part = w.part_name().to_owned();
    let summary = w.finish().with_context(|| format!("writing {part}"))?;
    eprintln!(
        "adz: wrote part {part}: {} bytes raw, {} stored; not in the dataset until `adz dataset commit`",
        summary.raw_bytes, summary.stored_bytes
    );
    Ok(ExitCode::SUCCESS)
}

fn commit(a: CommitArgs) -> Result<ExitCode> {
    let (store, name) = store_for(&a.dataset)?;
    let m = Dataset::commit(&*store, &name, a.base)
        .with_context(|| format!("committing {}", a.dataset))?;
    println!(
        "committed {} version {}: {} parts, {} bytes",
        a.dataset,
        m.version,
        m.parts.len(),
        m.len
    );
    for gap in m.gaps() {
        println!("gap: bytes {}..{} are in no part (reads of them fail)", gap.start, gap.end);
    }
    Ok(ExitCode::SUCCESS)
}

fn ls(a: LsArgs) -> Result<ExitCode> {
    let (store, name) = store_for(&a.dataset)?;
    let Some(m) =
        Dataset::latest(&*store, &name).with_context(|| format!("reading {}", a.dataset))?
    else {
        anyhow::bail!("{}: no committed dataset", a.dataset);
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &m)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{} version {}: {} bytes in {} parts",
        a.dataset,
        m.version,
        m.len,
        m.parts.len()
    )?;
    writeln!(out, "{:>16} {:>14} {:>14}  part", "offset", "raw", "stored")?;
    for p in &m.parts {
        writeln!(out, "{:>16} {:>14} {:>14}  {}", p.offset, p.len, p.stored, p.name)?;
    }
    for gap in m.gaps() {
        writeln!(out, "gap: bytes {}..{}", gap.start, gap.end)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn verify(a: VerifyArgs) -> Result<ExitCode> {
    let (store, name) = store_for(&a.dataset)?;
    let reader = DatasetReader::open(store, &name, ReaderOptions::default())
        .with_context(|| format!("opening {}", a.dataset))?;
    let pb = crate::progress::bar(Some(reader.len()), a.quiet, "verify");
    let checks = reader.verify(|done| pb.set_position(done));
    pb.finish_and_clear();
    let version = reader.manifest().version;
    let bad: Vec<&str> =
        checks.iter().filter(|c| !c.problems.is_empty()).map(|c| c.name.as_str()).collect();
    for c in &checks {
        for e in &c.problems {
            eprintln!("adz: {}: {}", a.dataset, adz_core::store::chain_text(e));
        }
    }
    let frames: u64 = checks.iter().map(|c| c.frames).sum();
    if bad.is_empty() {
        if !a.quiet {
            let gaps = reader.manifest().gaps().len();
            println!(
                "{} version {version}: OK ({} parts, {frames} frames, {} bytes{})",
                a.dataset,
                checks.len(),
                reader.len(),
                if gaps > 0 { format!(", {gaps} gaps as committed") } else { String::new() }
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "adz: {} version {version}: DAMAGED: {} of {} parts are good; bad parts: {}",
        a.dataset,
        checks.len() - bad.len(),
        checks.len(),
        bad.join(", ")
    );
    Ok(ExitCode::FAILURE)
}

fn cat(a: CatArgs) -> Result<ExitCode> {
    let (store, name) = store_for(&a.dataset)?;
    let opts = ReaderOptions { threads: a.threads, ..Default::default() };
    let reader = DatasetReader::open(store, &name, opts)
        .with_context(|| format!("opening {}", a.dataset))?;
    cat_reader(&a.dataset, &reader, a.offset, a.length, a.threads)
}

/// The committed dataset `path` names, if it names one and no object (a URL ending in `.adz`
/// is never taken for a dataset): `adz cat` and `adz decompress` read it as one file.
fn as_dataset(path: &str, threads: usize) -> Result<Option<DatasetReader>> {
    // Cheap refusals first, so that reading an adz file costs no extra request: a local path
    // that exists is a file, and a URL ending in .adz is taken to be an object.
    let is_url = path.contains("://");
    if path == "-"
        || (!is_url && std::path::Path::new(path).exists())
        || (is_url && path.ends_with(".adz"))
    {
        return Ok(None);
    }
    let Ok((store, name)) = store_for(path) else { return Ok(None) };
    if store.size(&name).is_ok() || Dataset::latest_version(&*store, &name).unwrap_or(0) == 0 {
        return Ok(None);
    }
    let opts = ReaderOptions { threads, ..Default::default() };
    let reader =
        DatasetReader::open(store, &name, opts).with_context(|| format!("opening {path}"))?;
    Ok(Some(reader))
}

/// `adz cat` of a dataset; `None` when `path` is not one.
pub fn cat_if_dataset(
    path: &str,
    offset: u64,
    length: Option<u64>,
    threads: usize,
) -> Result<Option<ExitCode>> {
    let Some(reader) = as_dataset(path, threads)? else { return Ok(None) };
    cat_reader(path, &reader, offset, length, threads).map(Some)
}

/// `adz decompress` of a dataset (OUTPUT required: a dataset name has no `.adz` to strip);
/// `None` when the input is not one.
pub fn decompress_if_dataset(a: &crate::decompress::DecompressArgs) -> Option<Result<ExitCode>> {
    let reader = match as_dataset(&a.input, a.read.threads) {
        Ok(Some(r)) => r,
        Ok(None) => return None,
        Err(e) => return Some(Err(e)),
    };
    Some((|| {
        let Some(out_arg) = &a.output else {
            anyhow::bail!("{} is a dataset; give OUTPUT (or - for stdout)", a.input);
        };
        let mut output = crate::io::Output::create(out_arg, a.common.force)?;
        let n = reader
            .copy_to(&mut output, a.read.threads)
            .with_context(|| format!("reading {}", a.input))?;
        let out_name = output.describe();
        output.commit()?;
        if !a.common.quiet && out_arg != "-" {
            let parts = reader.manifest().parts.len();
            eprintln!("{} -> {out_name}: {parts} parts, {n} bytes", a.input);
        }
        Ok(ExitCode::SUCCESS)
    })())
}

fn cat_reader(
    what: &str,
    reader: &DatasetReader,
    offset: u64,
    length: Option<u64>,
    threads: usize,
) -> Result<ExitCode> {
    let mut out = crate::io::data_stdout()?;
    let end = length.map_or(reader.len(), |n| offset.saturating_add(n).min(reader.len()));
    if offset == 0 && end == reader.len() {
        reader.copy_to(&mut out, threads).with_context(|| format!("reading {}", what))?;
    } else {
        // In pieces, so memory stays bounded whatever the length.
        const PIECE: u64 = 16 << 20;
        let mut pos = offset;
        while pos < end {
            let n = (end - pos).min(PIECE);
            let bytes = reader
                .read_range(pos, n)
                .with_context(|| format!("reading {} at offset {pos}", what))?;
            out.write_all(&bytes).context("writing to stdout")?;
            pos += n;
        }
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn gc(a: GcArgs) -> Result<ExitCode> {
    let (store, name) = store_for(&a.dataset)?;
    let opts = GcOptions { dry_run: a.dry_run, stale_candidates: a.stale_candidates };
    let r = Dataset::gc(&*store, &name, opts).with_context(|| format!("gc of {}", a.dataset))?;
    let verb = if a.dry_run { "would remove" } else { "removed" };
    for n in r.parts.iter().chain(&r.manifests) {
        println!("{verb} {n}");
    }
    println!("{verb} {} parts and {} manifests", r.parts.len(), r.manifests.len());
    Ok(ExitCode::SUCCESS)
}
