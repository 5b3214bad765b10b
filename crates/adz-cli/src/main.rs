//! `adz`: adaptive compression on the storage I/O path. This binary is glue: flags, files and
//! messages. The work is done by the adz library crates.

mod analyze;
mod cost;
mod dataset;
mod generate;
mod io;
mod predict;
mod progress;
mod read;
mod recompress;
mod remote;
mod sizing;

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Instant;

use std::ops::Range;
use std::path::{Path, PathBuf};

use adz_core::control::{Hint, Link, Strategy};
use adz_core::format::{CodecId, CodecSpec, FilterSpec, Filters};
use adz_core::store::{LinkSpeed, NullStorage, Throttled};
use adz_core::{open, verify_stream, FileInfo, TraceSink, WriteOptions, WriteSummary, Writer};
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::io::{Input, Output};
use crate::sizing::FrameSize;

/// `adz --version`: the tool's version and the format version it writes (and the newest it
/// fully reads).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (adz format 1.1)");

const ABOUT: &str = "\
Adaptive compression on the storage I/O path.

adz cuts data into blocks (1 MiB by default) and stores each as a self-describing frame with \
its own codec, level and checksums, followed by an index that lets readers find any byte \
without decompressing the rest.";

const AFTER_HELP: &str = "\
Examples:
  adz compress data.bin                     writes data.bin.adz (zstd level 3, all cores)
  adz compress --codec lz4 data.bin out.adz  fastest codec
  adz compress -s throughput --link 1GbE data.bin /mnt/lustre/data.adz
                                            adapt codec and level to fill a 1 Gbit/s link
  adz compress -s keep-pace --throttle 117MB/s --trace t.jsonl data.bin out.adz
                                            simulate a 1GbE link and record every decision
  adz compress --codec zstd:19 --hint dtype=f64 field.f64 field.adz
                                            8-byte floats: shuffle bytes first
  adz compress --filter xor:8,shuffle:8 field.f64 field.adz
                                            8-byte floats: XOR neighbours, then shuffle
  adz compress --frame-size auto --hint reads-per-write=10 data.bin
                                            frame size for data read 10x per write (MRC)
  tar c dir | adz compress - - > dir.tar.adz read stdin, write stdout
  adz decompress data.bin.adz               writes data.bin
  adz inspect data.bin.adz --frames         what is inside, frame by frame
  adz verify data.bin.adz                   check every checksum
  adz compress data.bin s3://bucket/run1/data.adz
                                            to S3-compatible storage (keys from AWS_* variables)
  adz ls s3://bucket/run1/                  objects with stored size, raw size and ratio

Exit status: 0 on success, 1 on any error (damaged input, I/O failure, an output cut short),
2 on a usage error (an unknown flag, a value out of range: --threads, --buffers).
A reader of stdout that stops early (`adz decompress x.adz - | head`, `adz cat`, `adz inspect`)
ends the command quietly with 0; `compress` and `recover` to stdout fail with 1 then, because
the archive or salvage they were writing is cut. Interrupted by SIGINT or SIGTERM, adz deletes
its temporary files, except a compress temporary holding complete frames, which it names for
`adz recover`. See docs/RELIABILITY.md.";

#[derive(Parser)]
#[command(name = "adz", version = VERSION, about = "Adaptive compression on the storage I/O path.", long_about = ABOUT, after_help = AFTER_HELP, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    s3: remote::S3Args,
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
    /// List the objects under an s3:// prefix: stored size, raw size and ratio of adz files.
    Ls(remote::LsArgs),
    /// Print a range of an adz file's raw bytes, decoding only the frames it needs.
    Cat(read::CatArgs),
    /// Salvage a file whose writer died: keep every complete, intact frame.
    Recover(read::RecoverArgs),
    /// Predict from a sample whether compression pays on a link, and where to start.
    #[command(after_help = predict::AFTER_HELP)]
    Predict(predict::PredictArgs),
    /// What compression costs and saves in money and time (thesis 3.4, 3.5).
    #[command(after_help = cost::AFTER_HELP)]
    Cost(cost::CostArgs),
    /// Re-encode written adz files more densely, replacing each only once verified.
    #[command(after_help = recompress::AFTER_HELP)]
    Recompress(recompress::RecompressArgs),
    /// Compressibility, zero blocks and deduplication of data, from a sample.
    #[command(after_help = analyze::AFTER_HELP)]
    Analyze(analyze::AnalyzeArgs),
    /// Many writers, one dataset: write parts, commit them, read them as one file.
    #[command(after_help = dataset::AFTER_HELP)]
    Dataset(dataset::DatasetArgs),
    /// Print the man page or shell completions (`make install` installs them).
    Generate(generate::GenerateArgs),
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
    /// How to choose codec and level, block by block:
    ///   throughput   (S1) compress as fast as the effective link (link x ratio): the fastest write
    ///   keep-pace    (S2) compress as fast as the link: the most ratio with no slowdown
    ///   prolong=F    (S3) compress at link/F: more ratio, the write takes at most F times as long
    ///   archive      the best ratio, whatever the time
    ///   static=C:L   one codec and level for every block (what --codec sets)
    /// Default: static=zstd:3.
    #[arg(short, long, value_name = "STRATEGY", conflicts_with = "codec", verbatim_doc_comment)]
    strategy: Option<Strategy>,
    /// One codec and level for every block (same as --strategy static=CODEC:LEVEL):
    /// none, lz4[:ACCEL 1..65537], lz4hc[:1..12], zstd[:-7..22], xz[:0..9]. LZ4's parameter is its
    /// acceleration: higher is faster and compresses less.
    #[arg(short, long, value_name = "CODEC[:LEVEL]")]
    codec: Option<CodecSpec>,
    /// The speed of the link to storage, which the adaptive strategies aim at: auto (measured
    /// from how fast the output accepts data), 1GbE (117 MB/s), 10GbE (1200 MB/s), ib-fdr4
    /// (6000 MB/s), or a rate such as 500MB/s, 2GB/s, 25Gbit/s. Give it for keep-pace and
    /// prolong on fast links: a write that leaves the link mostly idle measures it too fast
    /// through the output's buffers, and finishes early.
    #[arg(short, long, default_value = "auto", value_name = "RATE|auto", value_parser = parse_link)]
    link: Link,
    /// Make the output behave like a link of this speed (for evaluation): writes are paced to
    /// RATE. Same forms as --link. With --link auto, the controller measures this link, and
    /// the start prediction (--predict) takes RATE as its guess of it.
    #[arg(long, value_name = "RATE")]
    throttle: Option<LinkSpeed>,
    /// Compression threads (default: one per core; at most 1024).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Buffers per pool (raw blocks and frames each); default 2 x threads + 2, and 4 more
    /// while an adaptive strategy sends most blocks raw and compresses the rest. Memory use
    /// is about 2 x buffers x block size (+ 2 x 4 blocks during such a mix; a number given
    /// here is kept as given). At most 65536, and refused if that memory is not available.
    #[arg(long, default_value_t = 0, value_name = "N")]
    buffers: usize,
    /// Raw bytes per frame (block); each frame is compressed and can be read on its own, so a
    /// small read decodes one frame. Accepts suffixes K, M (binary: 1K = 1024), e.g. 64K, 1M,
    /// 4MiB; at most 64 MiB. `auto` chooses by multi-reference sizing (MRC): frames =
    /// sqrt(N x Bw/Br x reads-per-write) with N = input size / 4 KiB, so data read more often
    /// (--hint reads-per-write=K, default 1) gets smaller frames; a power of two, 64 KiB ..=
    /// 16 MiB. auto needs the input's size: on stdin it falls back to 1 MiB.
    #[arg(
        short = 'B',
        long = "frame-size",
        visible_alias = "block-size",
        default_value = "1MiB",
        value_parser = sizing::parse_frame_size,
        value_name = "auto|SIZE"
    )]
    frame_size: FrameSize,
    /// The read link, for --frame-size auto (Bw/Br): same forms as --link. Default: the write
    /// link (--link, or --throttle).
    #[arg(long, value_name = "RATE")]
    read_link: Option<LinkSpeed>,
    /// A hint about the data (repeatable): no-compress=START..END (already compressed bytes:
    /// store raw, try nothing), write-once (favour ratio), hot (favour speed), dtype=f64 (and
    /// f32, i16, u32, ...: shuffle bytes of that size first), filters=LIST (as --filter, e.g.
    /// filters=xor:8,shuffle:8; filters=none turns them off), reads-per-write=K (small reads
    /// per write, for --frame-size auto; whole file only). Any other hint takes @START..END to
    /// cover only a range, e.g. dtype=f64@0..1G, filters=delta:4@1M..2M. Sizes take K, M, G
    /// suffixes.
    #[arg(long = "hint", value_name = "HINT", value_parser = parse_hint)]
    hints: Vec<(Option<Range<u64>>, Hint)>,
    /// Filters applied to every block before the codec, in the order given (comma-separated
    /// or repeated, at most 4), recorded in each frame. shuffle:N byte-transposes N-byte
    /// elements (N 1..255); delta:N stores differences of consecutive N-byte little-endian
    /// integers, xor:N the XOR of consecutive N-byte words (N 1, 2, 4, 8). E.g. delta:4 for u32
    /// counters; delta:8,shuffle:8 or xor:8,shuffle:8 for f64 fields (see docs/FILTERS.md).
    /// With --codec none the frames keep the filtered bytes. delta and xor need a reader of
    /// adz format 1.1 or later.
    #[arg(long = "filter", value_name = "LIST", value_delimiter = ',', value_parser = sizing::parse_filter)]
    filters: Vec<FilterSpec>,
    /// Write one JSON line per block (configuration, sizes, times, speeds, target, link) to
    /// FILE, to see how the controller adapted. Like the output, an existing FILE is replaced
    /// only with --force, and it cannot be the input or the output.
    #[arg(long, value_name = "FILE.jsonl")]
    trace: Option<PathBuf>,
    /// Adaptive strategies: predict the start rung from a sample of the input (auto), or
    /// start where the controller does without one (off). See `adz predict`.
    #[arg(long, default_value = "auto", value_name = "auto|off", value_parser = predict::parse_mode)]
    predict: adz_core::Predict,
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
    #[command(flatten)]
    read: read::ReadArgs,
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

// The text forms are parsed by the library, so the bindings accept the same spellings.
/// `1234`, `64K`, `1M`, `2G` (binary units) as a byte count.
pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    open::parse_bytes(s).map_err(|e| e.0)
}

/// A block size of 1 byte ..= 64 MiB.
fn parse_size(s: &str) -> Result<u32, String> {
    open::parse_block_size(s).map_err(|e| e.0)
}

fn parse_link(s: &str) -> Result<Link, String> {
    open::parse_link(s).map_err(|e| e.0)
}

fn parse_hint(s: &str) -> Result<(Option<Range<u64>>, Hint), String> {
    open::parse_hint(s).map_err(|e| e.0)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    remote::init(cli.s3);
    handle_signals();
    let policy = StdoutUse::of(&cli.command);
    if policy.writes && io::stdout_at_start::was_closed() {
        eprintln!("adz: error: standard output is closed; give an output file, or redirect stdout");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Compress(a) => compress(a),
        Command::Decompress(a) => {
            dataset::decompress_if_dataset(&a).unwrap_or_else(|| decompress(a))
        }
        Command::Inspect(a) => inspect(a),
        Command::Verify(a) => verify(a),
        Command::Ls(a) => remote::ls(a),
        Command::Cat(a) => read::cat(a),
        Command::Recover(a) => read::recover(a),
        Command::Predict(a) => predict::run(a),
        Command::Cost(a) => cost::run(a),
        Command::Recompress(a) => recompress::run(a),
        Command::Analyze(a) => analyze::run(a),
        Command::Dataset(a) => dataset::run(a),
        Command::Generate(a) => generate::run(a, <Cli as clap::CommandFactory>::command()),
    };
    match result {
        Ok(code) => code,
        Err(e) if policy.pipe_may_close && is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Each error of the chain once, the cause last.
            eprintln!("adz: error: {e:#}");
            for note in take_notes() {
                eprintln!("adz: {note}");
            }
            if is_limit(&e) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// How a command uses stdout: whether it writes there, and whether a reader that stops early
/// (a closed pipe) leaves it complete as far as anyone wanted: true for decompressed data and
/// text, false for `compress` and `recover`, whose archive or salvage would be cut.
struct StdoutUse {
    writes: bool,
    pipe_may_close: bool,
}

impl StdoutUse {
    fn of(c: &Command) -> StdoutUse {
        let dash =
            |o: &Option<String>, input: &str| o.as_deref().map_or(input == "-", |o| o == "-");
        let (writes, pipe_may_close) = match c {
            Command::Compress(a) => (dash(&a.output, &a.input), false),
            Command::Decompress(a) => (dash(&a.output, &a.input), true),
            Command::Recover(a) => (a.writes_stdout(), false),
            Command::Verify(a) => (!a.quiet, true),
            Command::Cat(_)
            | Command::Inspect(_)
            | Command::Ls(_)
            | Command::Predict(_)
            | Command::Cost(_)
            | Command::Recompress(_)
            | Command::Analyze(_)
            | Command::Dataset(_)
            | Command::Generate(_) => (true, true),
        };
        StdoutUse { writes, pipe_may_close }
    }
}

/// Notes printed after the error (where a partial output was kept).
static NOTES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn note(s: String) {
    NOTES.lock().unwrap_or_else(|e| e.into_inner()).push(s);
}

fn take_notes() -> Vec<String> {
    std::mem::take(&mut *NOTES.lock().unwrap_or_else(|e| e.into_inner()))
}

/// On SIGINT, SIGTERM or SIGHUP: remove the temporary files of outputs in progress (keeping a
/// compress temporary that holds complete frames), then die of the signal as before.
fn handle_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let spawned = std::thread::Builder::new().name("adz-signals".to_owned()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            io::clean_up_after_signal();
            let _ = signal_hook::low_level::emulate_default_handler(sig);
            std::process::exit(128 + sig);
        }
    });
    drop(spawned);
}

/// A reader of our output went away (`adz decompress x.adz - | head`).
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// An option out of range (`--threads`, `--buffers`): a usage error.
fn is_limit(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<adz_core::Error>(), Some(adz_core::Error::Limit { .. })))
}

/// Are `a` and `b` the same file: the same device and inode if both exist, else the same
/// path once the directory is made canonical.
fn same_path(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    let canonical = |p: &Path| -> Option<PathBuf> {
        if let Ok(c) = std::fs::canonicalize(p) {
            return Some(c);
        }
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(std::fs::canonicalize(dir).ok()?.join(p.file_name()?))
    };
    match (canonical(a), canonical(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn same_file(input: &Input, output: &str) -> bool {
    let (Some(inp), false) = (input.path(), output == "-") else { return false };
    same_path(inp, Path::new(output))
}

/// `--trace FILE`: checked as the output is (not the input, not the output, not replaced
/// without `force`) and created only once they are open.
fn check_trace(trace: &Path, input: &Input, output: &str, force: bool) -> Result<()> {
    if input.path().is_some_and(|i| same_path(i, trace)) {
        bail!("--trace {} is the input; give another file", trace.display());
    }
    if output != "-" && same_path(Path::new(output), trace) {
        bail!("--trace {} is the output; give another file", trace.display());
    }
    if !force && trace.symlink_metadata().is_ok() {
        bail!("{} already exists; use --force to overwrite it", trace.display());
    }
    Ok(())
}

fn create_trace(trace: &Path, force: bool) -> Result<TraceSink> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true);
    if force {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    let f = o.open(trace).with_context(|| format!("cannot create {}", trace.display()))?;
    Ok(TraceSink::new(std::io::BufWriter::new(f)))
}

fn compress(a: CompressArgs) -> Result<ExitCode> {
    let input = Input::open(&a.input)?;
    let out_arg = match (&a.output, &input) {
        (Some(o), _) => o.clone(),
        (None, Input::Stdin) => "-".to_owned(),
        (None, Input::File { path, .. }) => format!("{}.adz", path.display()),
        (None, Input::Remote(r)) => format!("{}.adz", r.url()),
    };
    if same_file(&input, &out_arg) {
        bail!("input and output are the same file: {out_arg}");
    }
    let strategy = match (a.strategy, a.codec) {
        (Some(s), _) => s,
        (None, Some(c)) => Strategy::Static(c),
        (None, None) => Strategy::Static(CodecSpec::default_for(CodecId::Zstd)),
    };
    if let Some(t) = &a.trace {
        check_trace(t, &input, &out_arg, a.common.force)?;
    }
    let link = a.link;
    let mut file_hints: Vec<Hint> = Vec::new();
    if !a.filters.is_empty() {
        let f = Filters::new(&a.filters).context("--filter")?;
        file_hints.push(Hint::Filters(f));
    }
    let mut range_hints = Vec::new();
    for (range, hint) in &a.hints {
        match range {
            None => file_hints.push(hint.clone()),
            Some(r) => range_hints.push((r.clone(), hint.clone())),
        }
    }
    let (block_size, auto_size) = sizing::resolve(
        a.frame_size,
        input.len(),
        &file_hints,
        link,
        a.throttle.map(LinkSpeed::bytes_per_sec),
        a.read_link.map(LinkSpeed::bytes_per_sec),
    );
    // The weight is for sizing only; blocks have nothing to do with it.
    file_hints.retain(|h| !matches!(h, Hint::ReadsPerWrite(_)));
    let mut opts = WriteOptions {
        strategy,
        link,
        threads: a.threads,
        block_size,
        buffers: a.buffers,
        hints: file_hints,
        trace: None,
        predict: a.predict,
        size_hint: input.len(),
        // The output can go no faster than the throttle, so that is the link to predict for
        // (without a guess, the prediction hedges over 25 MB/s..12 GB/s and on few cores
        // starts raw until the link is measured). The controller still measures the link.
        link_guess: a.throttle.map(LinkSpeed::bytes_per_sec),
    };

    // Out-of-range options are refused before any file is created.
    opts.check()?;
    let mut reader = input.reader()?;
    let (mut upload, out_name) =
        io::create_upload_sized(&out_arg, a.common.force, input.len(), io::OnSignal::KeepIfFrames)?;
    let trace = match &a.trace {
        Some(p) => Some(create_trace(p, a.common.force)?),
        None => None,
    };
    opts.trace = trace.clone();
    if let Some(rate) = a.throttle {
        // The sequencer writes back to back, so the link only needs to absorb sleep jitter;
        // a larger burst would let frames pass free after short idle gaps and make the link
        // measured by --link auto look faster than it is.
        let r = rate.bytes_per_sec();
        let burst = (r * 0.0005).max(64.0 * 1024.0) as u64;
        upload = Throttled::new(NullStorage::new(), r).burst(burst).wrap_upload(upload);
    }
    let mut writer = Writer::with_upload(upload, opts)?;
    let pb = progress::bar(input.len(), a.common.quiet, "compress");
    let fed = feed(&mut writer, &mut *reader, &input, block_size, range_hints, &pb)
        .with_context(|| format!("compressing {} to {out_name}", input.describe()));
    if let Err(e) = fed {
        pb.finish_and_clear();
        match writer.abandon() {
            Ok(Some(kept)) => note(format!(
                "the {} complete frames written ({} raw bytes) are kept in {}: `adz recover {} OUT` salvages them",
                kept.frames, kept.raw_bytes, kept.location, kept.location
            )),
            Ok(None) => {}
            Err(a) => note(format!("could not keep the frames written: {a:#}")),
        }
        return Err(e);
    }
    let summary = writer.finish().with_context(|| format!("writing {out_name}"))?;
    // Compare with the link as the user knows it (given, or throttled), else as measured.
    let known_link = match link {
        Link::Fixed(r) => Some(r),
        _ => a.throttle.map(LinkSpeed::bytes_per_sec),
    };
    if let Some(t) = &trace {
        t.flush().context("writing the trace")?;
    }
    pb.finish_and_clear();
    if !a.common.quiet {
        print_summary(&input.describe(), &out_name, &summary, known_link);
        if let Some(auto) = auto_size {
            eprintln!("  {}", auto.note);
        }
        predict::summary_line(&summary);
    }
    Ok(ExitCode::SUCCESS)
}

/// Feed the input to the writer: the start prediction, the range hints, then the bytes.
fn feed(
    writer: &mut Writer,
    reader: &mut dyn Read,
    input: &Input,
    block_size: u32,
    range_hints: Vec<(Range<u64>, Hint)>,
    pb: &indicatif::ProgressBar,
) -> Result<()> {
    predict::start_from_file(writer, input, block_size)?;
    for (range, hint) in range_hints {
        writer.advise(range, hint)?;
    }
    // Feed the pipeline in slices so the progress line can show what the controller does.
    const SLICE: u64 = 64 << 20;
    loop {
        let n = writer.write_from(&mut (&mut *reader).take(SLICE))?;
        let p = writer.progress();
        pb.set_position(p.raw_in);
        pb.set_message(format!(
            "ratio {:.2}  {}",
            p.raw_written as f64 / p.stored_written.max(1) as f64,
            p.status
        ));
        if n < SLICE {
            return Ok(());
        }
    }
}

fn print_summary(input: &str, output: &str, s: &WriteSummary, known_link: Option<f64>) {
    let mb = |v: f64| v / 1e6;
    eprintln!(
        "{input} -> {output}: {} -> {} bytes, ratio {:.3}, {} frames, {:.2} s, {:.1} MB/s",
        s.raw_bytes,
        s.stored_bytes,
        s.ratio(),
        s.frames,
        s.seconds,
        mb(s.speed())
    );
    let configs: Vec<String> = s.configs.iter().map(|(c, n)| format!("{c} x{n}")).collect();
    eprintln!("  strategy {}: {}", s.strategy, configs.join(", "));
    let measured =
        s.link.map_or_else(|| "not measured".to_owned(), |l| format!("{:.1} MB/s", mb(l)));
    match known_link.or(s.link) {
        Some(link) => eprintln!(
            "  link {:.1} MB/s{}: raw through it would take {:.2} s; speedup {:.2}x",
            mb(link),
            if known_link.is_some() {
                format!(" (measured {measured})")
            } else {
                " (measured)".to_owned()
            },
            s.raw_bytes as f64 / link,
            (s.raw_bytes as f64 / link) / s.seconds.max(1e-9),
        ),
        None => eprintln!(
            "  link speed unknown (the output was never the bottleneck long enough to measure it)"
        ),
    }
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
        (None, Input::Remote(r)) => match r.url().strip_suffix(".adz") {
            Some(stem) => stem.to_owned(),
            None => bail!("cannot name the output: {} does not end in .adz; give OUTPUT", r.url()),
        },
    };
    if same_file(&input, &out_arg) {
        bail!("input and output are the same file: {out_arg}");
    }
    let started = Instant::now();
    let mut output = Output::create(&out_arg, a.common.force)?;
    let stats = read::decompress_to(&input, &mut output, &a.read, a.common.quiet)?;
    let out_name = output.describe();
    output.commit()?;
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
