//! The matrix (thesis 5.2): every configuration on every dataset, link and workload.
//!
//! adz rows write through `Throttled<NullStorage>` (the link is the only sink cost); external
//! tools are piped into the same throttle (a pass-through upload of adz's own), so every row
//! pays for the same link.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use adz_core::control::{Ladder, Link, Strategy};
use adz_core::format::CodecSpec;
use adz_core::store::{NullStorage, Storage, Throttled};
use adz_core::{TraceSink, WriteOptions, Writer, DEFAULT_BLOCK_SIZE};
use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::oracle::{self, BlockCost, Measurements};
use crate::results::{Row, KIND_ADAPTIVE, KIND_EXTERNAL, KIND_ORACLE, KIND_RAW, KIND_STATIC};
use crate::solver::Solver;

/// An adaptive configuration: its name in the CSV, the strategy, and whether the link is
/// measured (`Auto`) instead of given.
#[derive(Debug, Clone)]
pub struct Adaptive {
    /// `s1`, `s2`, `s3=1.5`, `s1-auto`.
    pub name: String,
    /// The strategy.
    pub strategy: Strategy,
    /// Measure the link from the sink instead of being told.
    pub auto_link: bool,
}

impl std::str::FromStr for Adaptive {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Adaptive> {
        let (base, auto_link) = match s.strip_suffix("-auto") {
            Some(b) => (b, true),
            None => (s, false),
        };
        let strategy: Strategy = base.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
        if !strategy.is_adaptive() {
            bail!(
                "'{s}' is not an adaptive strategy (s1, s2, s3=F, with -auto to measure the link)"
            );
        }
        Ok(Adaptive { name: s.to_owned(), strategy, auto_link })
    }
}

/// An external tool: the row's name and the command (program, arguments) reading stdin and
/// writing stdout.
#[derive(Debug, Clone)]
pub struct External {
    /// `zstd --adapt -T2`.
    pub name: String,
    /// Program and arguments.
    pub argv: Vec<String>,
}

impl External {
    fn new(argv: &[&str]) -> External {
        External { name: argv.join(" "), argv: argv.iter().map(|s| s.to_string()).collect() }
    }

    /// Whether the program can be run here.
    pub fn available(&self) -> bool {
        Command::new(&self.argv[0])
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// `sync` or `async` (thesis 5.2: partdiff's synchronous and asynchronous writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// The whole file in one synchronous write.
    Sync,
    /// `rounds` writes, the application computing on every core while each runs.
    Async,
}

impl Workload {
    /// The CSV name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Sync => "sync",
            Workload::Async => "async",
        }
    }
}

impl std::str::FromStr for Workload {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Workload> {
        match s {
            "sync" => Ok(Workload::Sync),
            "async" => Ok(Workload::Async),
            _ => bail!("unknown workload '{s}' (sync, async)"),
        }
    }
}

/// Everything a run does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// (name, path) of each dataset.
    pub datasets: Vec<(String, PathBuf)>,
    /// Bytes of each dataset used (a prefix).
    pub size: u64,
    /// Link speeds, MB/s.
    pub links_mbs: Vec<f64>,
    /// Workloads.
    pub workloads: Vec<Workload>,
    /// Static rungs (`none` is the raw row).
    pub statics: Vec<CodecSpec>,
    /// Adaptive strategies.
    pub adaptive: Vec<Adaptive>,
    /// External tools (run on sync only).
    pub externals: Vec<External>,
    /// Compression threads (0 = every core).
    pub threads: usize,
    /// Block size.
    pub block_size: u32,
    /// Async: share of a raw write's duration the application computes during each write.
    pub asynchronism: f64,
    /// Async: number of writes.
    pub rounds: usize,
    /// Where to keep the traces of adaptive runs (for `plot-trace`), if anywhere.
    pub trace_dir: Option<PathBuf>,
}

/// Static rungs of the full sweep: the whole standard ladder (raw, lz4 50..1, zstd -4..22,
/// xz 0..9).
pub fn full_statics() -> Vec<CodecSpec> {
    Ladder::standard().rungs().to_vec()
}

/// Static rungs of `--quick`.
pub fn quick_statics() -> Vec<CodecSpec> {
    ["none", "lz4:8", "lz4:1", "zstd:1", "zstd:3", "zstd:9"]
        .iter()
        .map(|s| s.parse().expect("valid"))
        .collect()
}

/// The external tools the harness knows, by the key `--external` takes, in the full matrix's
/// order: `zstd --adapt`, zstd at levels 1, 3, 9 and 19, `lz4 -1`, `xz -1` and `xz -6`.
pub const EXTERNAL_KEYS: [&str; 8] =
    ["zstd-adapt", "zstd-1", "zstd-3", "zstd-9", "zstd-19", "lz4-1", "xz-1", "xz-6"];

/// The external tool of `key` (one of [`EXTERNAL_KEYS`]) for `threads` threads.
pub fn external(key: &str, threads: usize) -> Option<External> {
    let t = format!("-T{threads}");
    let (tool, level) = key.split_once('-')?;
    match (tool, level) {
        ("zstd", "adapt") => Some(External::new(&["zstd", "--adapt", &t, "-c"])),
        ("zstd", "1" | "3" | "9" | "19") => {
            Some(External::new(&["zstd", &t, &format!("-{level}"), "-c"]))
        }
        ("lz4", "1") => Some(External::new(&["lz4", "-1", "-c"])),
        ("xz", "1" | "6") => Some(External::new(&["xz", &t, &format!("-{level}"), "-c"])),
        _ => None,
    }
}

/// External tools of the full matrix, for `threads` threads.
pub fn full_externals(threads: usize) -> Vec<External> {
    EXTERNAL_KEYS.iter().filter_map(|k| external(k, threads)).collect()
}

/// External tools of `--quick`.
pub fn quick_externals(threads: usize) -> Vec<External> {
    ["zstd-adapt", "zstd-3"].iter().filter_map(|k| external(k, threads)).collect()
}

/// The number of rows [`run`] writes for `plan` (externals counted only if available).
pub fn planned_rows(plan: &Plan, externals_available: usize) -> usize {
    let per_workload = plan.statics.len() + plan.adaptive.len();
    let sync = plan.workloads.contains(&Workload::Sync);
    let per_link = per_workload * plan.workloads.len()
        + if sync { externals_available + usize::from(plan.statics.len() > 1) } else { 0 };
    plan.datasets.len() * plan.links_mbs.len() * per_link
}

/// What one adz write measured.
struct Measured {
    seconds: f64,
    stored: u64,
    configs: String,
    compute_seconds: Option<f64>,
    async_share: Option<f64>,
    blocks: Vec<BlockCost>,
    trace: Vec<u8>,
}

#[derive(Deserialize)]
struct TraceLine {
    raw: u64,
    stored: u64,
    cpu_s: f64,
}

#[derive(Clone)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("trace buffer poisoned"))?
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A slice of a shared buffer, for `write_async`.
struct Chunk(Arc<Vec<u8>>, std::ops::Range<usize>);

impl AsRef<[u8]> for Chunk {
    fn as_ref(&self) -> &[u8] {
        &self.0[self.1.clone()]
    }
}

fn throttle(link_bps: f64) -> Throttled<NullStorage> {
    // As `adz compress --throttle`: a burst just large enough to absorb sleep jitter.
    let burst = (link_bps * 0.0005).max(64.0 * 1024.0) as u64;
    Throttled::new(NullStorage::new(), link_bps).burst(burst)
}

/// The application of the async workload: a solver and the sweeps per round.
struct App {
    solver: Solver,
    iters: usize,
}

#[allow(clippy::too_many_arguments)]
fn adz_write(
    data: &Arc<Vec<u8>>,
    link_bps: f64,
    strategy: Strategy,
    auto_link: bool,
    plan: &Plan,
    workload: Workload,
    app: &mut App,
) -> Result<Measured> {
    let buf = SharedBuf(Arc::new(Mutex::new(Vec::new())));
    let opts = WriteOptions {
        strategy,
        link: if auto_link { Link::Auto } else { Link::Fixed(link_bps) },
        threads: plan.threads,
        block_size: plan.block_size,
        trace: Some(TraceSink::new(buf.clone())),
        ..Default::default()
    };
    let store = throttle(link_bps);
    let start = Instant::now();
    let mut w = Writer::create(&store, "bench.adz", opts)?;
    let (mut compute, mut overlap, mut writing) = (0.0, 0.0, 0.0);
    match workload {
        Workload::Sync => w.write(data)?,
        Workload::Async => {
            let rounds = plan.rounds.max(1);
            let step = data.len().div_ceil(rounds);
            for k in 0..rounds {
                let range = (k * step).min(data.len())..((k + 1) * step).min(data.len());
                let t0 = Instant::now();
                let h = w.write_async(Chunk(Arc::clone(data), range))?;
                let c0 = Instant::now();
                app.solver.iterate(app.iters);
                let c = c0.elapsed().as_secs_f64();
                h.wait()?;
                let wr = t0.elapsed().as_secs_f64();
                compute += c;
                writing += wr;
                overlap += c.min(wr);
            }
        }
    }
    let summary = w.finish()?;
    let seconds = start.elapsed().as_secs_f64();
    let trace = std::mem::take(&mut *buf.0.lock().map_err(|_| anyhow::anyhow!("trace poisoned"))?);
    let mut blocks = Vec::new();
    for line in trace.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let t: TraceLine = serde_json::from_slice(line).context("bad trace line")?;
        let stored = if t.stored == 0 { t.raw } else { t.stored };
        blocks.push(BlockCost { cpu_s: t.cpu_s, stored });
    }
    let configs =
        summary.configs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";");
    let is_async = workload == Workload::Async;
    Ok(Measured {
        seconds,
        stored: summary.stored_bytes,
        configs,
        compute_seconds: is_async.then_some(compute),
        async_share: is_async.then(|| if writing > 0.0 { overlap / writing } else { 0.0 }),
        blocks,
        trace,
    })
}

/// Pipe `data` through an external tool into the throttled sink; (seconds, stored bytes).
fn external_write(data: &Arc<Vec<u8>>, link_bps: f64, ext: &External) -> Result<(f64, u64)> {
    let store = throttle(link_bps);
    let start = Instant::now();
    let mut up = store.create("bench.out")?;
    let mut child = Command::new(&ext.argv[0])
        .args(&ext.argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot run {}", ext.name))?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let feed = Arc::clone(data);
    let feeder = std::thread::spawn(move || stdin.write_all(&feed));
    let mut stdout = child.stdout.take().context("no stdout")?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = stdout.read(&mut buf)?;
        if n == 0 {
            break;
        }
        up.append(&buf[..n])?;
    }
    let stored = up.commit()?;
    let fed = feeder.join().map_err(|_| anyhow::anyhow!("feeder thread panicked"))?;
    let status = child.wait()?;
    fed.with_context(|| format!("{} did not take its input", ext.name))?;
    if !status.success() {
        bail!("{} failed: {status}", ext.name);
    }
    Ok((start.elapsed().as_secs_f64(), stored))
}

#[allow(clippy::too_many_arguments)] // one per CSV column it fills
fn row(
    dataset: &str,
    bytes: u64,
    link_mbs: f64,
    workload: Workload,
    config: String,
    kind: &str,
    threads: usize,
    seconds: f64,
    stored: u64,
) -> Row {
    Row {
        dataset: dataset.to_owned(),
        bytes,
        link_mbs,
        workload: workload.name().to_owned(),
        config,
        kind: kind.to_owned(),
        threads,
        seconds,
        write_mbs: bytes as f64 / seconds.max(1e-9) / 1e6,
        ratio: bytes as f64 / stored.max(1) as f64,
        stored_bytes: stored,
        compute_seconds: None,
        async_share: None,
        configs_used: String::new(),
    }
}

/// Run the plan; `progress` gets one line per row. Rows come back in run order.
pub fn run(plan: &Plan, mut progress: impl FnMut(&Row)) -> Result<Vec<Row>> {
    let threads = if plan.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        plan.threads
    };
    let externals: Vec<&External> = plan.externals.iter().filter(|e| e.available()).collect();
    if !(0.0..=1.0).contains(&plan.asynchronism) {
        bail!("the asynchronism must be between 0 and 1, got {}", plan.asynchronism);
    }
    if let Some(d) = &plan.trace_dir {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    // The application's kernel: one sweep's time, measured once, sets the work per round.
    let mut app = App { solver: Solver::new(512, 0), iters: 1 };
    let t0 = Instant::now();
    app.solver.iterate(3);
    let sweep = (t0.elapsed().as_secs_f64() / 3.0).max(1e-6);
    let mut rows = Vec::new();
    for (name, path) in &plan.datasets {
        let data = Arc::new(crate::datasets::load(path, plan.size)?);
        let bytes = data.len() as u64;
        let mut measured = Measurements::default();
        for (li, &link_mbs) in plan.links_mbs.iter().enumerate() {
            let link_bps = link_mbs * 1e6;
            for &wl in &plan.workloads {
                let per_round = bytes as f64 / plan.rounds.max(1) as f64 / link_bps;
                app.iters = ((plan.asynchronism * per_round / sweep).round() as usize).max(1);
                let configs = plan
                    .statics
                    .iter()
                    .map(|&c| (c.to_string(), Strategy::Static(c), false, c == CodecSpec::NONE))
                    .chain(
                        plan.adaptive
                            .iter()
                            .map(|a| (a.name.clone(), a.strategy, a.auto_link, false)),
                    );
                for (cfg, strategy, auto, is_raw) in configs {
                    let m = adz_write(&data, link_bps, strategy, auto, plan, wl, &mut app)
                        .with_context(|| {
                            format!("{name} at {link_mbs} MB/s, {}, {cfg}", wl.name())
                        })?;
                    let kind = if is_raw {
                        KIND_RAW
                    } else if matches!(strategy, Strategy::Static(_)) {
                        KIND_STATIC
                    } else {
                        KIND_ADAPTIVE
                    };
                    // Per-block costs for the oracle: the first link's sync static runs (CPU
                    // does not depend on the link).
                    if li == 0 && wl == Workload::Sync && kind != KIND_ADAPTIVE {
                        measured.add(&cfg, m.blocks);
                    }
                    if let (Some(dir), KIND_ADAPTIVE) = (&plan.trace_dir, kind) {
                        let file = format!("{name}-{link_mbs}-{}-{cfg}.jsonl", wl.name())
                            .replace(['=', ' ', '/'], "_");
                        std::fs::write(dir.join(file), &m.trace)?;
                    }
                    let mut r =
                        row(name, bytes, link_mbs, wl, cfg, kind, threads, m.seconds, m.stored);
                    r.compute_seconds = m.compute_seconds;
                    r.async_share = m.async_share;
                    r.configs_used = m.configs;
                    progress(&r);
                    rows.push(r);
                }
                if wl == Workload::Sync {
                    for ext in &externals {
                        let (secs, stored) = external_write(&data, link_bps, ext)
                            .with_context(|| format!("{name} at {link_mbs} MB/s, {}", ext.name))?;
                        let r = row(
                            name,
                            bytes,
                            link_mbs,
                            wl,
                            ext.name.clone(),
                            KIND_EXTERNAL,
                            threads,
                            secs,
                            stored,
                        );
                        progress(&r);
                        rows.push(r);
                    }
                }
            }
        }
        // The oracle bound per link, from the per-block measurements of the static sweep.
        if plan.workloads.contains(&Workload::Sync) && measured.costs.len() > 1 {
            for &link_mbs in &plan.links_mbs {
                if let Some(o) = oracle::oracle(&measured, threads, link_mbs * 1e6) {
                    let mut r = row(
                        name,
                        bytes,
                        link_mbs,
                        Workload::Sync,
                        "oracle".into(),
                        KIND_ORACLE,
                        threads,
                        o.seconds,
                        o.stored,
                    );
                    r.configs_used = o.mix_string();
                    progress(&r);
                    rows.push(r);
                }
            }
        }
    }
    Ok(rows)
}

/// Seconds the plan should take, from the controller's reference speeds (thesis-era server
/// core speeds scaled to `threads`) and the links: each row takes at least the raw transfer
/// time of the compressed bytes and the compression time on `threads` threads. An estimate
/// for planning, not a measurement.
pub fn estimate_seconds(plan: &Plan, threads: usize, externals: usize) -> f64 {
    let per_dataset: f64 = plan
        .links_mbs
        .iter()
        .map(|&l| {
            let link = l * 1e6;
            let one = |speed: f64, ratio: f64| {
                let b = plan.size as f64;
                (b / (speed * threads as f64)).max(b / ratio / link)
            };
            let statics: f64 = plan
                .statics
                .iter()
                .map(|&c| {
                    let r = adz_core::control::reference(c);
                    one(r.speed, r.ratio)
                })
                .sum();
            let adaptive = plan.adaptive.len() as f64 * one(f64::INFINITY, 2.5) * 1.5;
            let ext = externals as f64 * one(100e6, 3.0);
            (statics + adaptive) * plan.workloads.len() as f64 + ext
        })
        .sum();
    // Writer set-up, pipeline fill and drain, process start of external tools: about 0.1 s a
    // row whatever its size.
    let overhead = 0.1 * planned_rows(plan, externals) as f64;
    per_dataset * plan.datasets.len() as f64 + overhead
}

/// The default block size (re-exported for the CLI's defaults).
pub const BLOCK_SIZE: u32 = DEFAULT_BLOCK_SIZE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_external_key_names_a_tool_and_others_none() {
        let all = full_externals(2);
        assert_eq!(all.len(), EXTERNAL_KEYS.len());
        assert_eq!(all[0].name, "zstd --adapt -T2 -c");
        assert_eq!(external("xz-6", 2).unwrap().name, "xz -T2 -6 -c");
        assert_eq!(external("zstd-19", 4).unwrap().argv, ["zstd", "-T4", "-19", "-c"]);
        for bad in ["zstd", "zstd-2", "xz-9", "gzip-1", ""] {
            assert!(external(bad, 2).is_none(), "{bad}");
        }
        let quick: Vec<_> = quick_externals(2).into_iter().map(|e| e.name).collect();
        assert_eq!(quick, ["zstd --adapt -T2 -c", "zstd -T2 -3 -c"]);
    }

    #[test]
    fn adaptive_names_parse() {
        let a: Adaptive = "s3=1.5".parse().unwrap();
        assert_eq!(a.strategy, Strategy::Prolong(1.5));
        assert!(!a.auto_link);
        let a: Adaptive = "s1-auto".parse().unwrap();
        assert_eq!(a.strategy, Strategy::Throughput);
        assert!(a.auto_link);
        assert!("static=zstd:3".parse::<Adaptive>().is_err());
        assert!("nonsense".parse::<Adaptive>().is_err());
    }

    #[test]
    fn estimate_grows_with_rungs_and_size() {
        let plan = Plan {
            datasets: vec![("a".into(), PathBuf::new())],
            size: 1 << 30,
            links_mbs: vec![117.0],
            workloads: vec![Workload::Sync],
            statics: quick_statics(),
            adaptive: ["s1", "s2"].iter().map(|s| s.parse().unwrap()).collect(),
            externals: vec![],
            threads: 2,
            block_size: BLOCK_SIZE,
            asynchronism: 0.5,
            rounds: 4,
            trace_dir: None,
        };
        let small = estimate_seconds(&plan, 2, 0);
        let full = estimate_seconds(&Plan { statics: full_statics(), ..plan.clone() }, 2, 0);
        assert!(full > small && small > 0.0);
        let big = estimate_seconds(&Plan { size: 2 << 30, ..plan.clone() }, 2, 0);
        let overhead = 0.1 * planned_rows(&plan, 0) as f64;
        assert!(((big - overhead) / (small - overhead) - 2.0).abs() < 1e-9);
    }
}
