//! The matrix (thesis 5.2): every configuration on every dataset, link and workload.
//!
//! adz rows write through `Throttled<NullStorage>` (the link is the only sink cost); external
//! tools are piped into the same throttle (a pass-through upload of adz's own), so every row
//! pays for the same link, and with the same buffering: a reader thread drains the tool's
//! stdout into a queue of 2 x threads + 2 blocks of 1 MiB (adz's pipeline depth) that the link
//! writer empties, so the tool does not stall on the pipe whenever the link sleeps. With `--sink`, one more link is a real store (a file system path,
//! or `s3://bucket/key`), written unthrottled: its rows carry [`SINK_LINK`](crate::results::SINK_LINK) and the adaptive
//! ones measure the sink (`Link::Auto`).

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
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
use crate::results::{
    is_sink, link_key, link_label, Key, Row, KIND_ADAPTIVE, KIND_EXTERNAL, KIND_ORACLE, KIND_RAW,
    KIND_STATIC,
};
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
    /// Async: each adz row is the median (by wall seconds) of this many runs. The solver
    /// synchronises every sweep, so a compression worker that holds a core stalls it: the
    /// same work took 0.16-1.46 s across the rows of one cell of the 64 MiB matrix.
    pub async_repeats: usize,
    /// Where to keep the traces of adaptive runs (for `plot-trace`), if anywhere.
    pub trace_dir: Option<PathBuf>,
    /// The real store of the [`SINK_LINK`](crate::results::SINK_LINK) link in `links_mbs`: the object every row there
    /// writes (and replaces), as a path or `s3://bucket/key`.
    pub sink: Option<String>,
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

/// What a row of the plan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// `plan.statics[i]` (`none` is the raw row).
    Static(usize),
    /// `plan.adaptive[i]`.
    Adaptive(usize),
    /// `plan.externals[i]` (sync only).
    External(usize),
    /// The oracle bound of the (dataset, link), computed from the sync static sweep's traces.
    Oracle,
}

/// One row of the plan: dataset and link (indices into the plan), workload, configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// Index into `plan.datasets`.
    pub dataset: usize,
    /// Index into `plan.links_mbs`.
    pub link: usize,
    /// Workload.
    pub workload: Workload,
    /// Configuration.
    pub what: What,
}

/// Every row of `plan` in run order: per dataset, link and workload the static rungs, then
/// (sync) the oracle, the adaptive strategies, then (sync) the external tools. At the real
/// sink ([`SINK_LINK`](crate::results::SINK_LINK)): sync only, and no oracle. The oracle comes
/// right after the sweep it is computed from, so a resumed run writes the rows in the same
/// order as a one-shot run.
pub fn tasks(plan: &Plan) -> Vec<Task> {
    let mut v = Vec::new();
    for dataset in 0..plan.datasets.len() {
        for link in 0..plan.links_mbs.len() {
            let sink = is_sink(plan.links_mbs[link]);
            for &workload in &plan.workloads {
                // The async application's work is a share of the link's raw write time, which
                // a real sink does not have before it is measured: sync only there.
                if sink && workload == Workload::Async {
                    continue;
                }
                let mut push = |what| v.push(Task { dataset, link, workload, what });
                (0..plan.statics.len()).for_each(|i| push(What::Static(i)));
                let sync = workload == Workload::Sync;
                // The oracle needs the link's speed: none at a real sink.
                if sync && plan.statics.len() > 1 && !sink {
                    push(What::Oracle);
                }
                (0..plan.adaptive.len()).for_each(|i| push(What::Adaptive(i)));
                if sync {
                    (0..plan.externals.len()).for_each(|i| push(What::External(i)));
                }
            }
        }
    }
    v
}

impl Plan {
    /// The `config` column of a task's row.
    pub fn config(&self, t: &Task) -> String {
        match t.what {
            What::Static(i) => self.statics[i].to_string(),
            What::Adaptive(i) => self.adaptive[i].name.clone(),
            What::External(i) => self.externals[i].name.clone(),
            What::Oracle => "oracle".into(),
        }
    }

    /// A task's row [`Key`].
    pub fn key(&self, t: &Task) -> Key {
        (
            self.datasets[t.dataset].0.clone(),
            link_key(self.links_mbs[t.link]),
            t.workload.name().to_owned(),
            self.config(t),
        )
    }

    /// The trace file of an adz row (adaptive rows, and the sync static sweep for the oracle).
    fn trace_file(&self, dataset: usize, link: usize, workload: Workload, cfg: &str) -> String {
        let l = self.links_mbs[link];
        let l = if is_sink(l) { "sink".to_owned() } else { l.to_string() };
        format!("{}-{l}-{}-{cfg}.jsonl", self.datasets[dataset].0, workload.name())
            .replace(['=', ' ', '/'], "_")
    }
}

/// The number of rows [`run`] writes for `plan` (externals counted only if available).
pub fn planned_rows(plan: &Plan, available: &[bool]) -> usize {
    tasks(plan).iter().filter(|t| is_available(t, available)).count()
}

fn is_available(t: &Task, available: &[bool]) -> bool {
    match t.what {
        What::External(i) => available.get(i).copied().unwrap_or(false),
        _ => true,
    }
}

/// Which of the plan's external tools can be run here.
pub fn available_externals(plan: &Plan) -> Vec<bool> {
    plan.externals.iter().map(External::available).collect()
}

/// Check the rows of an earlier run against `plan` (`bytes[d]`: the bytes of dataset `d`,
/// `threads` resolved): every row must be one of the plan's, with the plan's bytes and
/// threads, and appear once. Returns their keys.
pub fn check_rows(
    plan: &Plan,
    bytes: &[u64],
    threads: usize,
    rows: &[Row],
) -> Result<HashSet<Key>> {
    let planned: HashMap<Key, usize> =
        tasks(plan).iter().map(|t| (plan.key(t), t.dataset)).collect();
    let mut seen = HashSet::new();
    for (i, r) in rows.iter().enumerate() {
        let what = format!(
            "row {} ({}, {} bytes, {} MB/s, {}, {}, {} threads)",
            i + 2,
            r.dataset,
            r.bytes,
            r.link_mbs,
            r.workload,
            r.config,
            r.threads
        );
        let Some(&d) = planned.get(&r.key()) else {
            bail!("{what} is not a row of this run's plan");
        };
        if r.bytes != bytes[d] || r.threads != threads {
            bail!(
                "{what} does not match this run's plan: {} bytes and {threads} threads",
                bytes[d]
            );
        }
        if !seen.insert(r.key()) {
            bail!("{what} appears twice");
        }
    }
    Ok(seen)
}

/// What one adz write measured.
struct Measured {
    seconds: f64,
    stored: u64,
    configs: String,
    compute_seconds: Option<f64>,
    async_share: Option<f64>,
    trace: Vec<u8>,
}

/// The run of median wall seconds (the lower middle of an even count); None if there is none.
fn median_run(mut runs: Vec<Measured>) -> Option<Measured> {
    runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let mid = runs.len().saturating_sub(1) / 2;
    (mid < runs.len()).then(|| runs.swap_remove(mid))
}

/// The oracle's per-block costs from an `adz compress --trace` JSONL trace.
fn parse_blocks(trace: &[u8]) -> Result<Vec<BlockCost>> {
    let mut blocks = Vec::new();
    for (i, line) in trace.split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.is_empty()) {
        let t: TraceLine = serde_json::from_slice(line)
            .with_context(|| format!("line {} is not a trace record", i + 1))?;
        let stored = if t.stored == 0 { t.raw } else { t.stored };
        blocks.push(BlockCost { cpu_s: t.cpu_s, stored });
    }
    Ok(blocks)
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
    Throttled::simulated_link(NullStorage::new(), link_bps)
}

/// The application of the async workload: a solver and the sweeps per round.
struct App {
    solver: Solver,
    iters: usize,
}

#[allow(clippy::too_many_arguments)]
fn adz_write(
    data: &Arc<Vec<u8>>,
    (store, object): (&dyn Storage, &str),
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
    let start = Instant::now();
    let mut w = Writer::create(store, object, opts)?;
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
    let configs =
        summary.configs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";");
    let is_async = workload == Workload::Async;
    Ok(Measured {
        seconds,
        stored: summary.stored_bytes,
        configs,
        compute_seconds: is_async.then_some(compute),
        async_share: is_async.then(|| if writing > 0.0 { overlap / writing } else { 0.0 }),
        trace,
    })
}

/// Bytes of one block between an external tool's stdout and the link: adz's block size.
const PIPE_BLOCK: usize = 1 << 20;

/// Blocks queued between an external tool's stdout and the link for `threads` threads: the
/// 2 x threads + 2 blocks adz's own pipeline keeps in flight, so both get the same buffering.
pub fn pipe_depth(threads: usize) -> usize {
    2 * threads.max(1) + 2
}

/// Pipe `data` through an external tool into `object` of `store` (the throttled null store or
/// the real sink), with `depth` blocks of [`PIPE_BLOCK`] bytes between the tool's stdout and
/// the link ([`pump`]); (seconds, stored bytes).
fn external_write(
    data: &Arc<Vec<u8>>,
    store: &dyn Storage,
    object: &str,
    ext: &External,
    depth: usize,
) -> Result<(f64, u64)> {
    let start = Instant::now();
    let mut up = store.create(object)?;
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
    let stdout = child.stdout.take().context("no stdout")?;
    let pumped = pump(stdout, depth, |b| Ok(up.append(b)?));
    let fed = feeder.join().map_err(|_| anyhow::anyhow!("feeder thread panicked"))?;
    let status = child.wait()?;
    pumped.with_context(|| format!("the output of {}", ext.name))?;
    let stored = up.commit()?;
    fed.with_context(|| format!("{} did not take its input", ext.name))?;
    if !status.success() {
        bail!("{} failed: {status}", ext.name);
    }
    Ok((start.elapsed().as_secs_f64(), stored))
}

/// Copy `src` (a tool's stdout) to `sink` (the link) through a bounded queue of `depth` blocks
/// of [`PIPE_BLOCK`] bytes: a reader thread keeps draining the pipe while the link sleeps, so
/// the tool does not stall on the pipe's 64 KiB. Memory: at most `depth` + 2 blocks. Returns
/// the bytes copied.
fn pump<R: Read + Send>(
    mut src: R,
    depth: usize,
    mut sink: impl FnMut(&[u8]) -> Result<()>,
) -> Result<u64> {
    let (tx, rx) = crossbeam::channel::bounded::<Vec<u8>>(depth.max(1));
    std::thread::scope(|s| {
        let reader = s.spawn(move || -> std::io::Result<()> {
            loop {
                let mut buf = vec![0u8; PIPE_BLOCK];
                let mut n = 0;
                while n < buf.len() {
                    match src.read(&mut buf[n..]) {
                        Ok(0) => break,
                        Ok(k) => n += k,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                if n == 0 {
                    return Ok(());
                }
                buf.truncate(n);
                let last = n < PIPE_BLOCK;
                // The link failed and stopped taking blocks: stop reading (the tool then
                // gets a broken pipe).
                if tx.send(buf).is_err() || last {
                    return Ok(());
                }
            }
        });
        let mut copied = 0u64;
        let mut written = Ok(());
        for b in rx.iter() {
            if let Err(e) = sink(&b) {
                written = Err(e);
                break;
            }
            copied += b.len() as u64;
        }
        drop(rx);
        let read = reader.join().map_err(|_| anyhow::anyhow!("the pipe reader panicked"))?;
        written?;
        read.context("cannot read the tool's output")?;
        Ok(copied)
    })
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

/// Seconds of one sweep of the async workload's solver on this machine: the unit of the
/// application's compute work per round. Measured once per output directory (see
/// `state::State::async_sweep_seconds`).
pub fn calibrate_sweep() -> f64 {
    let mut solver = Solver::new(SOLVER_N, 0);
    median_sweep(|| {
        let t0 = Instant::now();
        solver.iterate(1);
        t0.elapsed().as_secs_f64()
    })
}

/// Sweeps timed for the calibration, after as many untimed ones.
const CALIBRATION_SWEEPS: usize = 15;

/// The median of [`CALIBRATION_SWEEPS`] timed sweeps after as many untimed ones, at least 1 us.
/// The mean of three cold sweeps (fresh pages, the first threads) had measured 1.53 ms a sweep
/// where the machine's sweeps take 0.63 ms: every row of that run computed 0.4 of the
/// asynchronism asked for.
fn median_sweep(mut sweep: impl FnMut() -> f64) -> f64 {
    for _ in 0..CALIBRATION_SWEEPS {
        sweep();
    }
    let mut t: Vec<f64> = (0..CALIBRATION_SWEEPS).map(|_| sweep()).collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2].max(1e-6)
}

/// Grid of the async workload's solver.
const SOLVER_N: usize = 512;

/// What a resumed run starts from and when it stops.
pub struct Session {
    /// Keys of the rows already in results.csv (from [`check_rows`]).
    pub done: HashSet<Key>,
    /// Bytes of each dataset (plan order).
    pub bytes: Vec<u64>,
    /// [`calibrate_sweep`] of the first run in this output directory.
    pub sweep_seconds: f64,
    /// Which of the plan's external tools can be run here.
    pub available: Vec<bool>,
    /// Do not start a measured row after this instant.
    pub deadline: Option<Instant>,
    /// Do not start more than this many measured rows.
    pub max_rows: Option<usize>,
}

/// Where a run stands after a row.
pub struct Progress {
    /// Rows of the plan present (earlier runs and this one).
    pub present: usize,
    /// Rows of the plan (available external tools only).
    pub total: usize,
    /// Estimated seconds of the rows left, at this run's pace so far.
    pub left_seconds: f64,
}

/// How a run ended.
pub struct Outcome {
    /// Rows this run measured.
    pub ran: usize,
    /// Rows this run wrote (measured, and oracle rows).
    pub written: usize,
    /// Stopped by the deadline or the row limit before the plan was done.
    pub stopped: bool,
    /// Rows left to run (available external tools only).
    pub left: usize,
    /// Their estimated seconds at this run's pace.
    pub left_seconds: f64,
    /// Rows of external tools that are not installed here (not run, not counted as left).
    pub unavailable: usize,
}

/// Run the rows of `plan` that are not in `session.done`, in plan order; `emit` gets each row
/// as soon as it is measured (to append it to results.csv) with the run's progress. Stops
/// starting measured rows at the session's deadline or row limit; oracle rows are written
/// whenever their sweep is complete, from the traces on disk, whichever run measured them.
pub fn run(
    plan: &Plan,
    session: &Session,
    mut emit: impl FnMut(&Row, &Progress) -> Result<()>,
) -> Result<Outcome> {
    let threads = resolve_threads(plan.threads);
    if !(0.0..=1.0).contains(&plan.asynchronism) {
        bail!("the asynchronism must be between 0 and 1, got {}", plan.asynchronism);
    }
    let trace_dir = plan.trace_dir.as_ref().context("a run needs a trace directory")?;
    std::fs::create_dir_all(trace_dir)
        .with_context(|| format!("cannot create {}", trace_dir.display()))?;
    let sink = open_sink(plan)?;
    let all: Vec<Task> =
        tasks(plan).into_iter().filter(|t| is_available(t, &session.available)).collect();
    let unavailable = tasks(plan).len() - all.len();
    let mut done = session.done.clone();
    let mut present = all.iter().filter(|t| done.contains(&plan.key(t))).count();
    let estimate = |t: &Task| task_estimate(plan, threads, t);
    let mut left_model: f64 =
        all.iter().filter(|t| !done.contains(&plan.key(t))).map(estimate).sum();
    let started = Instant::now();
    let mut ran_model = 0.0;
    let mut out =
        Outcome { ran: 0, written: 0, stopped: false, left: 0, left_seconds: 0.0, unavailable };
    let mut app = App { solver: Solver::new(SOLVER_N, 0), iters: 1 };
    let mut data: Option<(usize, Arc<Vec<u8>>)> = None;
    for t in &all {
        let key = plan.key(t);
        if done.contains(&key) {
            continue;
        }
        let row = if t.what == What::Oracle {
            let sweep_done = (0..plan.statics.len())
                .all(|i| done.contains(&plan.key(&Task { what: What::Static(i), ..*t })));
            if !sweep_done {
                continue; // only after a stop: its sweep is finished by a later run
            }
            match oracle_row(plan, t, session.bytes[t.dataset], threads)? {
                Some(r) => r,
                None => continue,
            }
        } else {
            if out.stopped
                || session.deadline.is_some_and(|d| Instant::now() >= d)
                || session.max_rows.is_some_and(|n| out.ran >= n)
            {
                out.stopped = true;
                continue;
            }
            if data.as_ref().is_none_or(|(d, _)| *d != t.dataset) {
                drop(data.take()); // free the previous dataset first
                let path = &plan.datasets[t.dataset].1;
                data = Some((t.dataset, Arc::new(crate::datasets::load(path, plan.size)?)));
            }
            let Some((_, bytes)) = &data else { unreachable!("loaded above") };
            let env = Env { threads, sweep_seconds: session.sweep_seconds, trace_dir, sink: &sink };
            let r = measure(plan, t, bytes, &env, &mut app).with_context(|| {
                format!(
                    "{} at {}, {}, {}",
                    plan.datasets[t.dataset].0,
                    link_label(plan.links_mbs[t.link]),
                    t.workload.name(),
                    plan.config(t)
                )
            })?;
            out.ran += 1;
            r
        };
        let est = estimate(t);
        left_model -= est;
        ran_model += est;
        done.insert(key);
        present += 1;
        out.written += 1;
        let pace = if ran_model > 0.0 { started.elapsed().as_secs_f64() / ran_model } else { 1.0 };
        let progress =
            Progress { present, total: all.len(), left_seconds: left_model.max(0.0) * pace };
        emit(&row, &progress)?;
    }
    if let Some(s) = &sink {
        // The last row's object: a benchmark leaves nothing behind on the user's store.
        if let Err(e) = s.store.delete(&s.name) {
            eprintln!("adz-bench: warning: cannot delete {} from the sink: {e}", s.name);
        }
    }
    let pace = if ran_model > 0.0 { started.elapsed().as_secs_f64() / ran_model } else { 1.0 };
    out.left = all.len() - present;
    out.left_seconds = left_model.max(0.0) * pace;
    Ok(out)
}

fn resolve_threads(threads: usize) -> usize {
    if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
}

/// The real store of `--sink` and the object its rows write.
struct Sink {
    store: Arc<dyn Storage>,
    name: String,
}

/// Open `plan.sink`; None without one. A [`SINK_LINK`](crate::results::SINK_LINK) link without a sink is an error.
fn open_sink(plan: &Plan) -> Result<Option<Sink>> {
    let Some(location) = &plan.sink else {
        if plan.links_mbs.iter().any(|l| is_sink(*l)) {
            bail!("the plan has the real sink's link but no --sink");
        }
        return Ok(None);
    };
    let (store, name) = adz_core::open::storage_for(location)
        .with_context(|| format!("cannot use --sink {location}"))?;
    Ok(Some(Sink { store, name }))
}

/// What every measured row shares.
struct Env<'a> {
    threads: usize,
    sweep_seconds: f64,
    trace_dir: &'a Path,
    sink: &'a Option<Sink>,
}

/// Measure one adz or external row; write the trace of adaptive rows and of the sync static
/// sweep (the oracle's input) before the row is returned, so a row in results.csv always has
/// its trace on disk.
fn measure(plan: &Plan, t: &Task, data: &Arc<Vec<u8>>, env: &Env, app: &mut App) -> Result<Row> {
    let (threads, trace_dir) = (env.threads, env.trace_dir);
    let name = &plan.datasets[t.dataset].0;
    let link_mbs = plan.links_mbs[t.link];
    let link_bps = link_mbs * 1e6;
    // The real sink, or the throttled null store of this link.
    let sink = if is_sink(link_mbs) {
        Some(env.sink.as_ref().context("the real sink's link needs --sink")?)
    } else {
        None
    };
    let throttled = throttle(link_bps.max(1.0));
    let (store, object): (&dyn Storage, &str) = match sink {
        Some(s) => (&*s.store, &s.name),
        None => (&throttled, "bench.adz"),
    };
    let bytes = data.len() as u64;
    let wl = t.workload;
    let cfg = plan.config(t);
    let (strategy, auto, kind) = match t.what {
        What::Static(i) => {
            let c = plan.statics[i];
            (Strategy::Static(c), false, if c == CodecSpec::NONE { KIND_RAW } else { KIND_STATIC })
        }
        What::Adaptive(i) => {
            let a = &plan.adaptive[i];
            (a.strategy, a.auto_link, KIND_ADAPTIVE)
        }
        What::External(i) => {
            let depth = pipe_depth(threads);
            let (secs, stored) = external_write(data, store, object, &plan.externals[i], depth)?;
            return Ok(row(name, bytes, link_mbs, wl, cfg, KIND_EXTERNAL, threads, secs, stored));
        }
        What::Oracle => bail!("the oracle is computed, not measured"),
    };
    // A real sink has no speed to be told: every row there measures it.
    let auto = auto || sink.is_some();
    // The application's work per round: the asynchronism's share of a raw write's duration
    // at this link, in sweeps of the calibrated length (the same for every row of the cell).
    let per_round = bytes as f64 / plan.rounds.max(1) as f64 / link_bps;
    app.iters = ((plan.asynchronism * per_round / env.sweep_seconds).round() as usize).max(1);
    let runs = if wl == Workload::Async { plan.async_repeats.max(1) } else { 1 };
    let mut all = Vec::with_capacity(runs);
    for _ in 0..runs {
        all.push(adz_write(data, (store, object), link_bps, strategy, auto, plan, wl, app)?);
    }
    let m = median_run(all).context("no run")?;
    if kind == KIND_ADAPTIVE || wl == Workload::Sync {
        let file = trace_dir.join(plan.trace_file(t.dataset, t.link, wl, &cfg));
        let tmp = file.with_extension("jsonl.tmp");
        std::fs::write(&tmp, &m.trace)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &file).with_context(|| format!("cannot write {}", file.display()))?;
    }
    let mut r = row(name, bytes, link_mbs, wl, cfg, kind, threads, m.seconds, m.stored);
    r.compute_seconds = m.compute_seconds;
    r.async_share = m.async_share;
    r.configs_used = m.configs;
    Ok(r)
}

/// The oracle row of a (dataset, link) from its sync static sweep's traces on disk; None if a
/// trace cannot be used (said on stderr: the row stays missing).
fn oracle_row(plan: &Plan, t: &Task, bytes: u64, threads: usize) -> Result<Option<Row>> {
    let trace_dir = plan.trace_dir.as_ref().context("a run needs a trace directory")?;
    let (name, link_mbs) = (&plan.datasets[t.dataset].0, plan.links_mbs[t.link]);
    let mut measured = Measurements::default();
    for c in &plan.statics {
        let cfg = c.to_string();
        let file = trace_dir.join(plan.trace_file(t.dataset, t.link, Workload::Sync, &cfg));
        let blocks = std::fs::read(&file)
            .map_err(anyhow::Error::from)
            .and_then(|text| parse_blocks(&text))
            .with_context(|| format!("the trace of {cfg}, {}", file.display()));
        let usable = match blocks {
            Ok(b) => measured.add(&cfg, b),
            Err(e) => {
                eprintln!("adz-bench: warning: {e:#}");
                false
            }
        };
        if !usable {
            eprintln!(
                "adz-bench: warning: no oracle row for {name} at {link_mbs} MB/s: the trace of \
                 {cfg} is missing, unreadable or has another block count than the others; \
                 delete that row from results.csv to measure it again"
            );
            return Ok(None);
        }
    }
    let Some(o) = oracle::oracle(&measured, threads, link_mbs * 1e6) else {
        return Ok(None);
    };
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
    Ok(Some(r))
}

/// The speed a real sink is reckoned at for [`estimate_seconds`], bytes/s.
const SINK_ESTIMATE: f64 = 500e6;

/// Estimated seconds of one row, from the controller's reference speeds (thesis-era server
/// core speeds scaled to `threads`) and the link: at least the raw transfer time of the
/// compressed bytes and the compression time on `threads` threads, plus 0.1 s of writer
/// set-up, pipeline fill and drain or process start; an async adz row that many times over as
/// it has repeats.
fn task_estimate(plan: &Plan, threads: usize, t: &Task) -> f64 {
    let link = plan.links_mbs[t.link] * 1e6;
    // A real sink's speed is not known before its raw row: reckoned as 500 MB/s.
    let link = if is_sink(plan.links_mbs[t.link]) { SINK_ESTIMATE } else { link };
    let b = plan.size as f64;
    let one = |speed: f64, ratio: f64| (b / (speed * threads as f64)).max(b / ratio / link);
    let runs = match (t.workload, t.what) {
        (Workload::Async, What::Static(_) | What::Adaptive(_)) => plan.async_repeats.max(1),
        _ => 1,
    };
    runs as f64
        * (0.1
            + match t.what {
                What::Static(i) => {
                    let r = adz_core::control::reference(plan.statics[i]);
                    one(r.speed, r.ratio)
                }
                What::Adaptive(_) => one(f64::INFINITY, 2.5) * 1.5,
                What::External(_) => one(100e6, 3.0),
                What::Oracle => 0.0,
            })
}

/// Seconds the plan's rows (`skip`: those already done) should take on `threads` threads with
/// the `available` external tools. An estimate for planning, not a measurement.
pub fn estimate_seconds(
    plan: &Plan,
    threads: usize,
    available: &[bool],
    skip: &HashSet<Key>,
) -> f64 {
    tasks(plan)
        .iter()
        .filter(|t| is_available(t, available) && !skip.contains(&plan.key(t)))
        .map(|t| task_estimate(plan, threads, t))
        .sum()
}

/// The default block size (re-exported for the CLI's defaults).
pub const BLOCK_SIZE: u32 = DEFAULT_BLOCK_SIZE;

#[cfg(test)]
mod tests;
