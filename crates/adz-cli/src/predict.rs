//! `adz predict`: does compression pay on this data and this link, and where should the
//! controller start? Also the glue that lets `adz compress` predict from a sample of the
//! whole input file (see adz_core::predict).

use std::io::{Read, Write};
use std::process::ExitCode;

use adz_core::control::{Link, Strategy};
use adz_core::format::CodecSpec;
use adz_core::predict::{PredictConfig, Prediction, Predictor, Sample};
use adz_core::{Predict, WriteSummary, Writer};
use anyhow::{bail, Context, Result};
use clap::Args;

use crate::io::Input;

pub const AFTER_HELP: &str = "\
Method: a few slices of the input at reproducible random offsets (3 x 5 % of it, at most one \
block each, all together at most 2 % of it) are compressed with each candidate rung, cheapest \
first, while the prediction stays within 2 % of the write's predicted time. Probes (4 KiB, \
their entropy class) find the kinds of data first; input of several kinds gets its slices by \
kind, each standing for its kind's share. For each rung: ratio, one thread's speed, and the \
write time through the link, max(compression, transfer) + one block; for input of several \
kinds, reckoned block by block along where the probes found each kind, at that kind's speed \
and ratio. Data that looks random is not compressed at all. docs/PREDICTOR.md has the details.

Examples:
  adz predict data.bin --link 1GbE              does compressing pay on 1 Gbit/s, and where to start
  adz predict data.bin --link 10GbE -T 8 --check   compare with a real compression of the file
  tar c dir | adz predict - --json              a prediction for the first 256 MiB of a stream";

#[derive(Args)]
pub struct PredictArgs {
    /// File to predict for, or - for stdin (its first --stdin-limit bytes are read).
    #[arg(default_value = "-")]
    input: String,
    /// The link speed: 1GbE, 10GbE, ib-fdr4, a rate such as 500MB/s, or auto (unknown: the
    /// start with the least regret over links from 25 MB/s to 12 GB/s).
    #[arg(short, long, default_value = "auto", value_name = "RATE|auto", value_parser = crate::parse_link)]
    link: Link,
    /// The strategy to pick the start for: throughput, keep-pace, prolong=F.
    #[arg(short, long, default_value = "throughput", value_name = "STRATEGY")]
    strategy: Strategy,
    /// Compression threads of the write (default: one per core).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Raw bytes per block (the largest slice).
    #[arg(short = 'B', long, default_value = "1MiB", value_parser = crate::parse_size, value_name = "SIZE")]
    block_size: u32,
    /// Candidate rungs, comma-separated (default lz4:1,zstd:-1,zstd:1,zstd:3,zstd:6,zstd:12,xz:6).
    /// Where the fastest of them cannot keep the link full, lz4:25 is measured too.
    #[arg(long, value_delimiter = ',', value_name = "C:L,...")]
    rungs: Vec<CodecSpec>,
    /// Slices in the sample for input of one kind (input of several kinds: about as many,
    /// at least one per kind).
    #[arg(long, default_value_t = 3, value_name = "N")]
    slices: usize,
    /// The most probes (4 KiB looks at the entropy class) that find the input's kinds of
    /// data before the slices are placed; 0: none, slices placed as for one kind.
    #[arg(long, default_value_t = 512, value_name = "N")]
    probes: usize,
    /// Slices in all for input of several kinds.
    #[arg(long, default_value_t = 12, value_name = "N")]
    mixed_slices: usize,
    /// Share of the predicted write time the prediction may take: the sample is cut so the
    /// three cheapest rungs fit, costlier rungs that would not fit are skipped. Raise it
    /// (e.g. 1) to measure every rung. The sample itself holds at most 2 % of the data.
    #[arg(long, default_value_t = 0.02, value_name = "FRACTION")]
    budget: f64,
    /// Seed of the slices' offsets.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also compress the whole input with every measured rung (one thread) and print the
    /// real figures and each prediction's error.
    #[arg(long)]
    check: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// With stdin: read at most this much (memory), and predict for it.
    #[arg(long, default_value = "256MiB", value_parser = crate::parse_bytes, value_name = "SIZE")]
    stdin_limit: u64,
    /// Predict instead from the machine profile's cost predictor (`adz profile`; FILE, or
    /// `default` for ~/.config/adz/profile.json): each profiled rung's ratio and speed from
    /// cheap features of up to 256 blocks spread over the input, nothing compressed.
    #[arg(long, value_name = "FILE|default")]
    cost_profile: Option<std::path::PathBuf>,
}

/// `--predict auto|off`.
pub fn parse_mode(s: &str) -> Result<Predict, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "auto" | "on" => Ok(Predict::Auto),
        "off" | "no" => Ok(Predict::Off),
        _ => Err(format!("{s:?}: expected auto or off")),
    }
}

fn threads(n: usize) -> usize {
    if n == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        n
    }
}

/// `adz compress` on a file: predict from a sample of the whole file rather than from the
/// first blocks. Nothing to do for stdin or when the writer does not predict.
pub fn start_from_file(writer: &mut Writer, input: &Input, block_size: u32) -> Result<()> {
    let Input::File { path, len } = input else { return Ok(()) };
    // Only what the prediction's time budget can use is read (a static write reads nothing).
    let Some(mut cfg) = writer.sample_config(*len) else { return Ok(()) };
    cfg.max_slice = block_size as usize;
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    // Unbuffered: every read is a probe's window or a whole slice, after a seek.
    let sample = Sample::from_reader(f, *len, &cfg)
        .with_context(|| format!("sampling {}", path.display()))?;
    writer.predict_from(&sample);
    Ok(())
}

/// The summary line of `adz compress` about the prediction, if one was made.
pub fn summary_line(s: &WriteSummary) {
    if let Some(start) = &s.predict_start {
        eprintln!(
            "  predicted start {start} ({} sample bytes compressed to predict)",
            s.predict_bytes
        );
    }
    if s.shadows > 0 {
        eprintln!(
            "  shadow compression: {} slices measured at other rungs or filters, {:.1} % of the compression CPU",
            s.shadows,
            s.shadow_share * 100.0
        );
    }
}

struct Check {
    spec: String,
    ratio: f64,
    speed: f64,
    time: Option<f64>,
    ratio_error: f64,
    speed_error: f64,
    time_error: Option<f64>,
}

pub fn run(a: PredictArgs) -> Result<ExitCode> {
    if !(a.budget.is_finite() && a.budget > 0.0) {
        bail!("--budget must be a positive fraction, e.g. 0.02");
    }
    let input = Input::open(&a.input)?;
    if let Some(p) = &a.cost_profile {
        return from_profile(&a, p, &input);
    }
    let cfg = predict_config(&a);
    // stdin is read into memory (bounded); a file is sampled where it lies.
    let stdin_data = match &input {
        // An object is read like stdin: its first --stdin-limit bytes.
        Input::Stdin | Input::Remote(_) => {
            let mut buf = Vec::new();
            input.reader()?.take(a.stdin_limit).read_to_end(&mut buf).context("reading stdin")?;
            Some(buf)
        }
        Input::File { .. } => None,
    };
    let link = match a.link {
        Link::Fixed(l) => Some(l),
        Link::Auto => None,
    };
    // The sample a write would take: cut to the prediction's time budget before it is read.
    let plan = |len: u64| Predictor::new(cfg.clone()).plan_sample(a.strategy, link, len);
    let sample = match (&input, &stdin_data) {
        (_, Some(d)) => Sample::from_slice(d, &plan(d.len() as u64)),
        (Input::File { path, len }, None) => {
            let f = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            Sample::from_reader(f, *len, &plan(*len))
                .with_context(|| format!("sampling {}", input.describe()))?
        }
        (Input::Stdin | Input::Remote(_), None) => unreachable!("stdin and objects are read above"),
    };
    let mut predictor = Predictor::new(cfg.clone());
    let pred = predictor
        .predict(&sample, a.strategy, link)
        .with_context(|| format!("predicting for {}", input.describe()))?;
    let check = if a.check {
        Some(check_rungs(&mut predictor, &pred, &input, stdin_data.as_deref(), link)?)
    } else {
        None
    };

    let mut out = std::io::stdout().lock();
    let name = match &input {
        Input::Stdin => format!("<stdin> (first {} bytes)", pred.data_bytes),
        _ => input.describe(),
    };
    if a.json {
        return print_json(&mut out, &name, &pred, check.as_deref());
    }
    print_text(&mut out, &name, &pred, check.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// The predictor's configuration from the command line.
fn predict_config(a: &PredictArgs) -> PredictConfig {
    let threads = threads(a.threads);
    let mut cfg = PredictConfig {
        threads,
        block_size: u64::from(a.block_size),
        time_budget: a.budget,
        cpus: std::thread::available_parallelism().map_or(threads, |n| n.get()),
        ..PredictConfig::default()
    };
    if !a.rungs.is_empty() {
        cfg.rungs = a.rungs.clone();
    }
    cfg.sample.slices = a.slices.max(1);
    cfg.sample.probes = a.probes;
    cfg.sample.mixed_slices = a.mixed_slices;
    cfg.sample.seed = a.seed;
    cfg.sample.max_slice = a.block_size as usize;
    cfg
}

/// `--check`: every rung predicted (the extrapolated start too) compressed over the whole
/// input, one thread, against its prediction.
fn check_rungs(
    predictor: &mut Predictor,
    pred: &Prediction,
    input: &Input,
    stdin_data: Option<&[u8]>,
    link: Option<f64>,
) -> Result<Vec<Check>> {
    let model = predictor.model(pred.data_bytes);
    let mut out = Vec::new();
    for r in pred.rungs.iter().chain(&pred.extrapolated) {
        let mut src: Box<dyn Read> = match stdin_data {
            Some(d) => Box::new(d),
            None => input.reader()?,
        };
        let real = predictor
            .measure_stream(&mut src, r.spec)
            .with_context(|| format!("compressing {} with {}", input.describe(), r.spec))?;
        let time = link.map(|l| model.time_compressed(real, l));
        out.push(Check {
            spec: r.spec.to_string(),
            ratio: real.ratio,
            speed: real.speed,
            time,
            ratio_error: r.ratio / real.ratio - 1.0,
            speed_error: r.speed / real.speed - 1.0,
            time_error: r.time.zip(time).map(|(p, t)| p / t - 1.0),
        });
    }
    Ok(out)
}

/// `--json`: the prediction, and the check if there is one.
fn print_json(
    out: &mut impl Write,
    name: &str,
    pred: &Prediction,
    check: Option<&[Check]>,
) -> Result<ExitCode> {
    let mut report = serde_json::json!({ "input": name, "prediction": pred });
    if let Some(check) = check {
        report["check"] = check
            .iter()
            .map(|c| {
                serde_json::json!({
                    "spec": c.spec, "ratio": c.ratio, "speed": c.speed, "time": c.time,
                    "ratio_error": c.ratio_error, "speed_error": c.speed_error,
                    "time_error": c.time_error,
                })
            })
            .collect();
    }
    // Through io::Write, so that a closed pipe is an io::Error (success for `| head`).
    let text = serde_json::to_string_pretty(&report)?;
    writeln!(out, "{text}")?;
    Ok(ExitCode::SUCCESS)
}

/// `adz_control::classify`'s classes.
fn class_name(c: u8) -> &'static str {
    match c {
        1 => "sparse",
        2 => "text",
        3 => "binary",
        4 => "random",
        _ => "empty",
    }
}

fn mbs(v: f64) -> String {
    if v.is_finite() {
        format!("{:.1} MB/s", v / 1e6)
    } else {
        "-".to_owned()
    }
}

fn print_text(
    out: &mut impl Write,
    name: &str,
    p: &Prediction,
    check: Option<&[Check]>,
) -> std::io::Result<()> {
    print_inputs(out, name, p)?;
    print_rungs(out, p)?;
    print_decision(out, p)?;
    if let Some(check) = check {
        print_check(out, check)?;
    }
    Ok(())
}

/// The input, the sample, the heuristic's verdict, the write and the pipeline's costs.
fn print_inputs(out: &mut impl Write, name: &str, p: &Prediction) -> std::io::Result<()> {
    let h = &p.heuristic;
    writeln!(out, "input:      {name}: {} bytes", p.data_bytes)?;
    writeln!(
        out,
        "sample:     {} bytes in {} slices ({:.2} % of the data); {} bytes compressed in {:.3} s \
         (budget {:.3} s)",
        p.sampled_bytes,
        p.slices,
        100.0 * p.sampled_bytes as f64 / p.data_bytes.max(1) as f64,
        p.compressed_bytes,
        p.seconds,
        p.budget_seconds
    )?;
    if p.kinds.len() > 1 {
        let kinds: Vec<String> =
            p.kinds.iter().map(|(c, s)| format!("{} {:.0} %", class_name(*c), s * 100.0)).collect();
        writeln!(out, "kinds:      {} (slices by kind, time along the kinds)", kinds.join(", "))?;
    }
    let verdict = match h.class {
        _ if p.sampled_bytes == 0 => "empty: nothing to look at",
        adz_core::predict::Compressibility::Random => "random-looking: nothing compressed",
        adz_core::predict::Compressibility::Redundant => {
            "redundant: only the fastest rungs measured"
        }
        _ => "compressed to find out",
    };
    writeln!(
        out,
        "heuristic:  {verdict} (entropy class {}, {} byte values, 90 % in {}{})",
        h.entropy_class,
        h.byte_set,
        h.core_set,
        if h.repeated { ", repeats itself" } else { "" }
    )?;
    let link = p.link.map_or_else(|| "unknown".to_owned(), mbs);
    writeln!(out, "write:      strategy {}, {} threads, link {link}", p.strategy, p.threads)?;
    writeln!(
        out,
        "pipeline:   {:.3} ns per byte in one-thread stages, {:.3} ns of CPU per byte ({})",
        p.serial_cost * 1e9,
        p.path_cost * 1e9,
        if p.path_measured {
            "measured: moving and checksumming the sample"
        } else {
            "the defaults: too little sample to time"
        }
    )?;
    if let Some(t) = p.time_raw {
        writeln!(out, "raw:        {t:.3} s through the link")?;
    }
    Ok(())
}

/// The rungs measured, those skipped, and the extrapolated start.
fn print_rungs(out: &mut impl Write, p: &Prediction) -> std::io::Result<()> {
    if !p.rungs.is_empty() {
        writeln!(
            out,
            "\n{:<10} {:>8} {:>14} {:>14} {:>11} {:>8}",
            "rung", "ratio", "speed/thread", "aggregate", "write time", "speedup"
        )?;
        for r in &p.rungs {
            writeln!(
                out,
                "{:<10} {:>8.3} {:>14} {:>14} {:>11} {:>8}",
                r.spec.to_string(),
                r.ratio,
                mbs(r.speed),
                mbs(r.aggregate_speed),
                r.time.map_or_else(|| "-".to_owned(), |t| format!("{t:.3} s")),
                r.speedup.map_or_else(|| "-".to_owned(), |s| format!("{s:.2}x")),
            )?;
        }
    }
    if !p.skipped.is_empty() {
        let names: Vec<String> = p.skipped.iter().map(|s| s.to_string()).collect();
        writeln!(out, "not measured (over the time budget, or not needed): {}", names.join(", "))?;
    }
    if let Some(e) = &p.extrapolated {
        writeln!(
            out,
            "{:<10} {:>8} {:>14} {:>14} {:>11} {:>8}   extrapolated, not measured",
            e.spec.to_string(),
            format!(">={:.3}", e.ratio),
            mbs(e.speed),
            mbs(e.aggregate_speed),
            e.time.map_or_else(|| "-".to_owned(), |t| format!("{t:.3} s")),
            e.speedup.map_or_else(|| "-".to_owned(), |s| format!("{s:.2}x")),
        )?;
    }
    Ok(())
}

/// Where to start, and why.
fn print_decision(out: &mut impl Write, p: &Prediction) -> std::io::Result<()> {
    let decision = if p.start == CodecSpec::NONE {
        "raw: compression does not pay".to_owned()
    } else if p.extrapolated.is_some() {
        format!(
            "compress, start at {} (every measured rung is faster than the strategy's target; \
             the reference table at the measured speed level puts {} at or just under it)",
            p.start, p.start
        )
    } else {
        format!("compress, start at {}", p.start)
    };
    match p.regret {
        Some(r) => writeln!(
            out,
            "\ndecision:   {decision} (link unknown: least worst-case regret, {:.0} % slower \
             than the best choice at the worst link)",
            r * 100.0
        )?,
        None => writeln!(out, "\ndecision:   {decision}")?,
    }
    Ok(())
}

/// `--check`: each rung on the whole input against its prediction.
fn print_check(out: &mut impl Write, check: &[Check]) -> std::io::Result<()> {
    writeln!(
        out,
        "\ncheck (whole input, one thread):\n{:<10} {:>8} {:>9} {:>14} {:>9} {:>11} {:>9}",
        "rung", "ratio", "error", "speed/thread", "error", "write time", "error"
    )?;
    for c in check {
        writeln!(
            out,
            "{:<10} {:>8.3} {:>+8.1}% {:>14} {:>+8.1}% {:>11} {:>9}",
            c.spec,
            c.ratio,
            c.ratio_error * 100.0,
            mbs(c.speed),
            c.speed_error * 100.0,
            c.time.map_or_else(|| "-".to_owned(), |t| format!("{t:.3} s")),
            c.time_error.map_or_else(|| "-".to_owned(), |e| format!("{:+.1}%", e * 100.0)),
        )?;
    }
    Ok(())
}

/// `--cost-profile`: each profiled rung's predicted ratio and speed for the input, from the
/// features of up to 256 blocks spread over it (adz_tier::predictor).
fn from_profile(a: &PredictArgs, path: &std::path::Path, input: &Input) -> Result<ExitCode> {
    use adz_tier::predictor::{Features, Scratch};
    use std::io::{Seek, SeekFrom};
    let path = if path.as_os_str() == "default" {
        adz_tier::profile::default_path().context("neither XDG_CONFIG_HOME nor HOME is set")?
    } else {
        path.to_owned()
    };
    let profile = adz_tier::Profile::load(&path)?;
    let model = profile.cost_model(threads(a.threads))?;
    let predictor = model.predictor.as_ref().context("the profile has no predictor")?;
    let bs = a.block_size as usize;
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    match input {
        Input::File { path: file, len } => {
            let mut f = std::fs::File::open(file)
                .with_context(|| format!("cannot open {}", file.display()))?;
            let count = len.div_ceil(bs as u64);
            let want = count.min(256);
            for k in 0..want {
                let b = k * count / want;
                f.seek(SeekFrom::Start(b * bs as u64))?;
                let mut buf = vec![0u8; (bs as u64).min(len - b * bs as u64) as usize];
                f.read_exact(&mut buf).with_context(|| format!("reading {}", file.display()))?;
                blocks.push(buf);
            }
        }
        _ => {
            let mut buf = Vec::new();
            input
                .reader()?
                .take(a.stdin_limit)
                .read_to_end(&mut buf)
                .context("reading the input")?;
            let count = buf.len().div_ceil(bs);
            let want = count.min(256);
            for k in 0..want {
                let b = k * count / want;
                blocks.push(buf[b * bs..((b + 1) * bs).min(buf.len())].to_vec());
            }
        }
    }
    if blocks.is_empty() {
        bail!("{} is empty: nothing to predict", input.describe());
    }
    let (mut scratch, mut out) = (Scratch::default(), Vec::new());
    let rungs = profile.rungs.len();
    let (mut raw, mut stored, mut secs) = (0.0, vec![0.0; rungs], vec![0.0; rungs]);
    for b in &blocks {
        predictor.predict_all(&Features::of_with(b, &mut scratch), &mut out);
        raw += b.len() as f64;
        for (r, q) in out.iter().enumerate() {
            stored[r] += b.len() as f64 / q.ratio;
            secs[r] += b.len() as f64 / q.speed;
        }
    }
    let rows: Vec<serde_json::Value> = (0..rungs)
        .map(|r| {
            let one = raw / secs[r];
            serde_json::json!({
                "rung": profile.rungs[r].to_string(),
                "ratio": raw / stored[r],
                "speed_one_thread": one,
                "speed_all_threads": one * model.scale[r],
            })
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = serde_json::json!({
            "input": input.describe(), "profile": path.display().to_string(),
            "blocks": blocks.len(), "rungs": rows,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{}: {} blocks, costs predicted from their features by the profile {}",
        input.describe(),
        blocks.len(),
        path.display()
    )?;
    writeln!(out, "{:<10} {:>8} {:>12} {:>12}", "rung", "ratio", "MB/s 1T", "MB/s all")?;
    for r in &rows {
        writeln!(
            out,
            "{:<10} {:>8.3} {:>12.1} {:>12.1}",
            r["rung"].as_str().unwrap_or(""),
            r["ratio"].as_f64().unwrap_or(0.0),
            r["speed_one_thread"].as_f64().unwrap_or(0.0) / 1e6,
            r["speed_all_threads"].as_f64().unwrap_or(0.0) / 1e6
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
