//! `adz`: adaptive compression on the storage I/O path. This binary is glue: flags, files and
//! messages. The work is done by the adz library crates.

mod analyze;
mod compress;
mod cost;
mod dataset;
mod decompress;
mod energy;
mod generate;
mod inspect;
mod io;
mod mount;
mod predict;
mod profile;
mod progress;
mod read;
mod recompress;
mod remote;
mod sizing;
mod tier;

use std::process::ExitCode;

use std::ops::Range;

use adz_core::control::{Hint, Link};
use adz_core::open;
use anyhow::Result;
use clap::{Args, Parser, Subcommand};

/// `adz --version`: the tool's version and the format version it writes (and the newest it
/// fully reads).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (adz format 1.2)");

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
  adz compress -c lz4 --filter bitshuffle:4 particles.f32 particles.adz
                                            4-byte floats: bit planes for LZ4 (Bitshuffle)
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
    Compress(Box<compress::CompressArgs>),
    /// Decompress an adz file, checking every checksum.
    #[command(visible_alias = "d")]
    Decompress(decompress::DecompressArgs),
    /// Show what an adz file holds: version, sizes, ratio, codecs used, frames.
    Inspect(inspect::InspectArgs),
    /// Check every checksum of an adz file and name any damaged frame.
    Verify(inspect::VerifyArgs),
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
    /// Mount a directory or s3:// prefix of adz files as a read-write file system (FUSE;
    /// docs/MOUNT.md).
    #[command(after_help = mount::AFTER_HELP)]
    Mount(mount::MountArgs),
    /// Many writers, one dataset: write parts, commit them, read them as one file.
    #[command(after_help = dataset::AFTER_HELP)]
    Dataset(dataset::DatasetArgs),
    /// Print the man page or shell completions (`make install` installs them).
    Generate(generate::GenerateArgs),
    /// Tiered storage: status, flush, evict, gc (docs/TIERS.md).
    Tier(tier::TierArgs),
    /// Measure this machine's codec rungs and tiers into a profile for tiered writes.
    #[command(after_help = profile::AFTER_HELP)]
    Profile(profile::ProfileArgs),
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

// The text forms are parsed by the library, so the bindings accept the same spellings.
/// `1234`, `64K`, `1M`, `2G` (binary units) as a byte count.
pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    open::parse_bytes(s).map_err(|e| e.0)
}

/// A block size of 1 byte ..= 64 MiB.
pub(crate) fn parse_size(s: &str) -> Result<u32, String> {
    open::parse_block_size(s).map_err(|e| e.0)
}

pub(crate) fn parse_link(s: &str) -> Result<Link, String> {
    open::parse_link(s).map_err(|e| e.0)
}

pub(crate) fn parse_hint(s: &str) -> Result<(Option<Range<u64>>, Hint), String> {
    open::parse_hint(s).map_err(|e| e.0)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    remote::init(cli.s3);
    // A mount handles its own signals: they unmount it rather than end the process.
    if !matches!(cli.command, Command::Mount(_)) {
        handle_signals();
    }
    let policy = StdoutUse::of(&cli.command);
    if policy.writes && io::stdout_at_start::was_closed() {
        eprintln!("adz: error: standard output is closed; give an output file, or redirect stdout");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Compress(a) => {
            tier::compress_if_tiers(&a).unwrap_or_else(|| compress::compress(*a))
        }
        Command::Decompress(a) => tier::decompress_if_tiers(&a)
            .or_else(|| dataset::decompress_if_dataset(&a))
            .unwrap_or_else(|| decompress::decompress(a)),
        Command::Inspect(a) => inspect::inspect(a),
        Command::Verify(a) => inspect::verify(a),
        Command::Ls(a) => remote::ls(a),
        Command::Cat(a) => read::cat(a),
        Command::Recover(a) => read::recover(a),
        Command::Predict(a) => predict::run(a),
        Command::Cost(a) => cost::run(a),
        Command::Recompress(a) => recompress::run(a),
        Command::Analyze(a) => analyze::run(a),
        Command::Mount(a) => mount::run(a),
        Command::Dataset(a) => dataset::run(a),
        Command::Generate(a) => generate::run(a, <Cli as clap::CommandFactory>::command()),
        Command::Tier(a) => tier::run(a),
        Command::Profile(a) => profile::run(a),
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
            | Command::Mount(_)
            | Command::Dataset(_)
            | Command::Generate(_)
            | Command::Tier(_)
            | Command::Profile(_) => (true, true),
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
