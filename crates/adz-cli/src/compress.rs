//! `adz compress`: flags, the input and output, the trace, and the summary.

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use adz_core::control::{Hint, Link, Strategy};
use adz_core::format::{CodecId, CodecSpec, FilterSpec, Filters};
use adz_core::store::{LinkSpeed, NullStorage, Throttled};
use adz_core::{TraceSink, WriteOptions, WriteSummary, Writer};
use anyhow::{bail, Context, Result};
use clap::Args;

use crate::io::Input;
use crate::sizing::FrameSize;
use crate::{energy, io, note, parse_hint, parse_link, predict, progress, sizing, CommonOut};

#[derive(Args)]
pub(crate) struct CompressArgs {
    /// File to compress, or - for stdin.
    #[arg(default_value = "-")]
    pub(crate) input: String,
    /// Output file, or - for stdout. Default: INPUT.adz, or stdout when reading stdin.
    pub(crate) output: Option<String>,
    /// How to choose codec and level, block by block:
    ///   throughput   (S1) compress as fast as the effective link (link x ratio): the fastest write
    ///   keep-pace    (S2) compress as fast as the link: the most ratio with no slowdown
    ///   prolong=F    (S3) compress at link/F: more ratio, the write takes at most F times as long
    ///   archive      the best ratio, whatever the time
    ///   static=C:L   one codec and level for every block (what --codec sets)
    ///   energy       the least energy per byte: compression's CPU plus storing the output for
    ///                --retention; the write takes at most --max-slowdown times the raw write
    /// The adaptive ones (not archive, static) also choose the filters
    /// (shuffle, bitshuffle, delta, xor) of each kind of data by measurement, unless
    /// --filter or a filters=/dtype= hint names them.
    /// Default: static=zstd:3.
    #[arg(short, long, value_name = "STRATEGY", conflicts_with = "codec", verbatim_doc_comment)]
    pub(crate) strategy: Option<Strategy>,
    /// One codec and level for every block (same as --strategy static=CODEC:LEVEL):
    /// none, lz4[:ACCEL 1..65537], lz4hc[:1..12], zstd[:-7..22], xz[:0..9]. LZ4's parameter is its
    /// acceleration: higher is faster and compresses less.
    #[arg(short, long, value_name = "CODEC[:LEVEL]")]
    pub(crate) codec: Option<CodecSpec>,
    /// The speed of the link to storage, which the adaptive strategies aim at: auto (measured
    /// from how fast the output accepts data), 1GbE (117 MB/s), 10GbE (1200 MB/s), ib-fdr4
    /// (6000 MB/s), or a rate such as 500MB/s, 2GB/s, 25Gbit/s. Give it for keep-pace and
    /// prolong on fast links: a write that leaves the link mostly idle measures it too fast
    /// through the output's buffers, and finishes early. To a local file, auto measures the
    /// page cache, which takes data at memory speed and writes it to the disk later (the
    /// output is durable only when adz ends: it fsyncs before renaming the file into place);
    /// add --sync-every to measure the disk instead.
    #[arg(short, long, default_value = "auto", value_name = "RATE|auto", value_parser = parse_link)]
    pub(crate) link: Link,
    /// Make the output behave like a link of this speed (for evaluation): writes are paced to
    /// RATE. Same forms as --link. With --link auto, the controller measures this link, and
    /// the start prediction (--predict) takes RATE as its guess of it.
    #[arg(long, value_name = "RATE")]
    pub(crate) throttle: Option<LinkSpeed>,
    /// A local output file is flushed to the disk (fdatasync) after every SIZE bytes (K, M,
    /// G suffixes), so that the write goes at the disk's pace rather than the page cache's
    /// and --link auto measures the disk. Costs a little speed on fast disks. Default: flushed
    /// once, when the file is complete.
    #[arg(long, value_name = "SIZE", value_parser = crate::parse_bytes)]
    pub(crate) sync_every: Option<u64>,
    /// Compression threads (default: one per core; at most 1024).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    pub(crate) threads: usize,
    /// Buffers per pool (raw blocks and frames each); default 2 x threads + 2, and 4 more
    /// while an adaptive strategy sends most blocks raw and compresses the rest. Memory use
    /// is about 2 x buffers x block size (+ 2 x 4 blocks during such a mix; a number given
    /// here is kept as given). At most 65536, and refused if that memory is not available.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub(crate) buffers: usize,
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
    pub(crate) frame_size: FrameSize,
    /// The read link, for --frame-size auto (Bw/Br): same forms as --link. Default: the write
    /// link (--link, or --throttle).
    #[arg(long, value_name = "RATE")]
    pub(crate) read_link: Option<LinkSpeed>,
    /// A hint about the data (repeatable): no-compress=START..END (already compressed bytes:
    /// store raw, try nothing), write-once (favour ratio), hot (favour speed), dtype=f64 (and
    /// f32, i16, u32, ...: shuffle bytes of that size first), filters=LIST (as --filter, e.g.
    /// filters=xor:8,shuffle:8; filters=none turns them off), reads-per-write=K (small reads
    /// per write, for --frame-size auto; whole file only). Any other hint takes @START..END to
    /// cover only a range, e.g. dtype=f64@0..1G, filters=delta:4@1M..2M. Sizes take K, M, G
    /// suffixes.
    #[arg(long = "hint", value_name = "HINT", value_parser = parse_hint)]
    pub(crate) hints: Vec<(Option<Range<u64>>, Hint)>,
    /// Filters applied to every block before the codec, in the order given (comma-separated
    /// or repeated, at most 4), recorded in each frame. shuffle:N byte-transposes N-byte
    /// elements (N 1..255), bitshuffle:N bit-transposes them into bit planes (N 1..255, as
    /// Bitshuffle; for LZ4 on numbers whose high bits barely change); delta:N stores
    /// differences of consecutive N-byte little-endian integers, xor:N the XOR of consecutive
    /// N-byte words (N 1, 2, 4, 8). E.g. delta:4 for u32 counters; delta:8,shuffle:8 or
    /// xor:8,shuffle:8 for f64 fields; bitshuffle:4 with lz4 for f32 particles (see
    /// docs/FILTERS.md). With --codec none the frames keep the filtered bytes. delta and xor
    /// need a reader of adz format 1.1 or later, bitshuffle 1.2. Without --filter (or a
    /// filters=/dtype= hint) the adaptive strategies choose filters per kind of data by
    /// measurement; --hint filters=none turns that off.
    #[arg(long = "filter", value_name = "LIST", value_delimiter = ',', value_parser = sizing::parse_filter)]
    pub(crate) filters: Vec<FilterSpec>,
    /// Write one JSON line per block (configuration, sizes, times, speeds, target, link) to
    /// FILE, to see how the controller adapted. Like the output, an existing FILE is replaced
    /// only with --force, and it cannot be the input or the output.
    #[arg(long, value_name = "FILE.jsonl")]
    pub(crate) trace: Option<PathBuf>,
    /// Adaptive strategies: predict the start rung from a sample of the input (auto), or
    /// start where the controller does without one (off). See `adz predict`.
    #[arg(long, default_value = "auto", value_name = "auto|off", value_parser = predict::parse_mode)]
    pub(crate) predict: adz_core::Predict,
    #[command(flatten)]
    pub(crate) common: CommonOut,
    #[command(flatten)]
    pub(crate) tier: crate::tier::TierFlag,
    #[command(flatten)]
    pub(crate) energy: crate::energy::EnergyArgs,
}

/// Are `a` and `b` the same file: the same device and inode if both exist, else the same
/// path once the directory is made canonical.
pub(crate) fn same_path(a: &Path, b: &Path) -> bool {
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

pub(crate) fn same_file(input: &Input, output: &str) -> bool {
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

pub(crate) fn compress(mut a: CompressArgs) -> Result<ExitCode> {
    let profile = a.tier.profile.load()?;
    a.energy.use_profile(profile.as_ref().map(|(_, p)| p));
    let (priors, priors_from) = crate::tier::priors(profile.as_ref());
    let input = Input::open(&a.input)?;
    let out_arg = output_name(&a, &input);
    if same_file(&input, &out_arg) {
        bail!("input and output are the same file: {out_arg}");
    }
    if let Some(t) = &a.trace {
        check_trace(t, &input, &out_arg, a.common.force)?;
    }
    let link = a.link;
    let Plan { mut opts, range_hints, block_size, auto_size } = plan(&a, &input)?;
    opts.priors = priors;
    let adaptive = opts.strategy.is_adaptive();

    // Out-of-range options are refused before any file is created.
    opts.check()?;
    let mut reader = input.reader()?;
    let (mut upload, out_name) = io::create_upload_sized(
        &out_arg,
        a.common.force,
        input.len(),
        io::OnSignal::KeepIfFrames,
        a.sync_every,
    )?;
    let trace = match &a.trace {
        Some(p) => Some(create_trace(p, a.common.force)?),
        None => None,
    };
    opts.trace = trace.clone();
    if let Some(rate) = a.throttle {
        upload =
            Throttled::simulated_link(NullStorage::new(), rate.bytes_per_sec()).wrap_upload(upload);
    }
    let meter = energy::Meter::start(Path::new(energy::POWERCAP), a.energy.watts(opts.strategy));
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
        if let Some(from) = priors_from.filter(|_| adaptive) {
            eprintln!("  priors from {from}");
        }
        if let Some(auto) = auto_size {
            eprintln!("  {}", auto.note);
        }
        predict::summary_line(&summary);
        let e = meter.finish();
        eprintln!(
            "  {}",
            energy::summary_line(&e, summary.raw_bytes, summary.stored_bytes, &a.energy)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The output's name: given, or the input's with `.adz`, or stdout for stdin.
fn output_name(a: &CompressArgs, input: &Input) -> String {
    match (&a.output, input) {
        (Some(o), _) => o.clone(),
        (None, Input::Stdin) => "-".to_owned(),
        (None, Input::File { path, .. }) => format!("{}.adz", path.display()),
        (None, Input::Remote(r)) => format!("{}.adz", r.url()),
    }
}

/// The writer's options from the flags, and what the feeder needs besides.
struct Plan {
    opts: WriteOptions,
    /// Hints for ranges of the input, given to the writer as it reaches them.
    range_hints: Vec<(Range<u64>, Hint)>,
    block_size: u32,
    /// Set when `--frame-size auto` chose the block size (its note is printed).
    auto_size: Option<sizing::AutoSize>,
}

fn plan(a: &CompressArgs, input: &Input) -> Result<Plan> {
    let strategy = match (a.strategy, a.codec) {
        (Some(s), _) => s,
        (None, Some(c)) => Strategy::Static(c),
        (None, None) => Strategy::Static(CodecSpec::default_for(CodecId::Zstd)),
    };
    a.energy.check()?;
    if a.energy.max_slowdown.is_some() && strategy.energy().is_none() {
        bail!("--max-slowdown is the energy strategy's bound: add -s energy");
    }
    let strategy = a.energy.apply(strategy);
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
        a.link,
        a.throttle.map(LinkSpeed::bytes_per_sec),
        a.read_link.map(LinkSpeed::bytes_per_sec),
    );
    // The weight is for sizing only; blocks have nothing to do with it.
    file_hints.retain(|h| !matches!(h, Hint::ReadsPerWrite(_)));
    let opts = WriteOptions {
        strategy,
        link: a.link,
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
        priors: adz_core::control::Priors::builtin(),
    };
    Ok(Plan { opts, range_hints, block_size, auto_size })
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
    // A settled drain rate comes with its interval. An unsettled figure is the output's accept
    // rate, or a drain rate whose segments still disagree (a reader that drains in bursts):
    // a buffer (pipe, TCP, page cache) can make either read fast.
    let measured = match (s.link, s.link_interval) {
        (None, _) => "not measured".to_owned(),
        (Some(l), Some((low, high))) => {
            format!("{:.1} MB/s, 95 % within {:.1}-{:.1}", mb(l), mb(low), mb(high))
        }
        (Some(l), None) => format!("{:.1} MB/s, not settled", mb(l)),
    };
    match known_link.or(s.link) {
        Some(link) => eprintln!(
            "  link {:.1} MB/s{}: raw through it would take {:.2} s; speedup {:.2}x",
            mb(link),
            if known_link.is_some() {
                format!(" (measured {measured})")
            } else if let Some((low, high)) = s.link_interval {
                format!(" (measured, 95 % within {:.1}-{:.1})", mb(low), mb(high))
            } else {
                " (measured from the output's writes, not settled: a buffer in front of the link \
                 can make it read fast)"
                    .to_owned()
            },
            s.raw_bytes as f64 / link,
            (s.raw_bytes as f64 / link) / s.seconds.max(1e-9),
        ),
        None => eprintln!(
            "  link speed unknown (the output was never the bottleneck long enough to measure it)"
        ),
    }
}
