//! The adaptive write pipeline (thesis 3.2 and 4.1): the application's bytes are cut into
//! blocks, N workers compress them with the codec the controller picks for each block, and a
//! sequencer writes the frames in order to a storage upload.
//!
//! ```text
//!  write / write_from / write_async ─► cutter ─► job queue ─► workers (N) ─► sequencer ─► Upload
//!                                                  ▲   decisions  │ measurements │ sink times
//!                                                  └── Controller ◄──────────────┘
//! ```
//!
//! Memory is bounded by two pools of `buffers` buffers each: raw blocks (filled by `write` and
//! `write_from`; `write_async` needs none, its blocks are slices of the caller's buffer) and
//! frames (a worker takes one before it takes a job, and the sequencer gives it back once the
//! frame is written). Because a worker holds a frame buffer before it pops a job, and jobs are
//! popped in order, the job the sequencer waits for is always in the hands of a worker that can
//! finish it: the pools cannot deadlock.
//!
//! While an adaptive strategy mixes raw blocks with a minority of compressed ones, the
//! sequencer adds `MIX_BUFFERS` (4) to each pool and takes them back once the mix ends: the
//! frames are written in order, so a compressed block holds up the raw ones finished behind
//! it, and the link idles unless enough of them can wait (see
//! `docs/benchmarks/2026-11-27-mix-buffers`). With these, memory stays bounded by
//! `buffers + MIX_BUFFERS` per pool.

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use adz_control::{
    classify, BlockContext, BlockMeasurement, ClassedController, Control, ControllerConfig, Hint,
    Link, Mode, SinkMeasurement, Status, Strategy,
};
use adz_format::{FileHeader, FrameHeader, TrailerBuilder};
use adz_store::{Storage, Upload};
use crossbeam::channel::{bounded, unbounded, Receiver, Sender};
use serde::Serialize;

use crate::error::PipelineError;
use crate::predict::{PredictConfig, Prediction, Predictor, Sample, SampleConfig};
use crate::{Error, FrameEncoder, Result, DEFAULT_BLOCK_SIZE};

/// How a [`Writer`] works.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// What the controller aims for.
    pub strategy: Strategy,
    /// The link speed: measured from the sink (`Auto`) or given.
    pub link: Link,
    /// Compression threads; 0 = one per core.
    pub threads: usize,
    /// Raw bytes per block.
    pub block_size: u32,
    /// Buffers in each pool; 0 = 2 × threads + 2 (the thesis' minimum is 2 × threads, so the
    /// workers can run two pipeline cycles ahead of the sink), and 4 more while an adaptive
    /// strategy mixes raw blocks with a minority (at most half) of compressed ones. A number
    /// given here is kept as given.
    pub buffers: usize,
    /// Hints for the whole file (`write-once`, `hot`, `dtype=...`).
    pub hints: Vec<Hint>,
    /// Where to write one JSON line per block (see [`TraceRecord`]).
    pub trace: Option<TraceSink>,
    /// Predict the controller's start rung from a sample before the first block is
    /// compressed (adaptive strategies only; see [`crate::predict`]). Default `Auto`.
    pub predict: Predict,
    /// The write's size, if known (a file's length): the sample's budget is 2 % of it.
    /// Without it, the budget is 2 % of the blocks held for the prediction.
    pub size_hint: Option<u64>,
    /// With `link: Auto`, a guess of the link (bytes/s) for the prediction; the controller
    /// still measures the link. None: the prediction picks the start with the least regret
    /// over links from 25 MB/s to 12 GB/s.
    pub link_guess: Option<f64>,
}

/// The most compression threads a writer starts ([`WriteOptions::threads`]): far more than
/// any machine adz runs on has cores, and few enough that their stacks and codec states fit.
pub const MAX_THREADS: usize = 1024;

/// The most buffers per pool ([`WriteOptions::buffers`]). Each pool preallocates a slot per
/// buffer, so a huge count costs memory before any block is read.
pub const MAX_BUFFERS: usize = 1 << 16;

impl WriteOptions {
    /// Threads and buffers per pool the writer uses (0 resolved), and the buffers a pool may
    /// add during a mix.
    fn resolved(&self) -> (usize, usize, usize) {
        let threads = if self.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.threads
        };
        let buffers =
            if self.buffers == 0 { default_buffers(threads) } else { self.buffers.max(2) };
        let room = if self.buffers == 0 && self.strategy.is_adaptive() { MIX_BUFFERS } else { 0 };
        (threads, buffers, room)
    }

    /// The most memory the writer's buffers take, in bytes: two pools (raw blocks and
    /// frames) of `buffers` (+ [`MIX_BUFFERS`] during a mix) buffers, each a block (a frame
    /// buffer a little more: a frame's header, and what a codec may write past the block
    /// before it is stored raw). Codec state (per thread) comes on top.
    pub fn buffer_memory(&self) -> u64 {
        let (_, buffers, room) = self.resolved();
        let block = u64::from(self.block_size);
        let per_pair = 2 * block + block / 128 + 4096;
        (buffers + room) as u64 * per_pair
    }

    /// Check the options against adz's limits ([`MAX_THREADS`], [`MAX_BUFFERS`], a block
    /// size of 1 byte ..= 64 MiB) and the buffers' memory ([`buffer_memory`]) against what
    /// the machine has available (Linux: `MemAvailable`, and the cgroup's limit); a
    /// [`Writer`] does this before it creates anything. [`Error::Limit`] or
    /// [`Error::Config`] if they cannot work.
    ///
    /// [`buffer_memory`]: WriteOptions::buffer_memory
    pub fn check(&self) -> Result<()> {
        FileHeader::new(self.block_size)?;
        if self.threads > MAX_THREADS {
            return Err(Error::Limit {
                option: "threads",
                value: self.threads as u64,
                why: format!("at most {MAX_THREADS}"),
            });
        }
        if self.buffers > MAX_BUFFERS {
            return Err(Error::Limit {
                option: "buffers",
                value: self.buffers as u64,
                why: format!("at most {MAX_BUFFERS} per pool"),
            });
        }
        let need = self.buffer_memory();
        if let Some(avail) = available_memory() {
            if need > avail {
                let (threads, buffers, _) = self.resolved();
                let (option, value) = if self.buffers != 0 {
                    ("buffers", buffers as u64)
                } else {
                    ("threads", threads as u64)
                };
                return Err(Error::Limit {
                    option,
                    value,
                    why: format!(
                        "{buffers} buffers per pool of {} byte blocks need up to {} MB, more than the {} MB of memory available; give fewer threads or buffers, or smaller blocks",
                        self.block_size,
                        need / 1_000_000,
                        avail / 1_000_000
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Memory this process can still take, in bytes, if the system says: `MemAvailable` of
/// `/proc/meminfo`, lowered to what the cgroup (v2) allows beyond its current use.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let mut avail = kb.saturating_mul(1024);
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{f}"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    if let (Some(max), Some(cur)) = (read("memory.max"), read("memory.current")) {
        avail = avail.min(max.saturating_sub(cur));
    }
    Some(avail)
}

/// Whether a [`Writer`] predicts its start ([`WriteOptions::predict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Predict {
    /// Hold the first blocks (up to `buffers - 1`, at most 8) until a sample of them, or one
    /// given with [`Writer::predict_from`], has been predicted; start the controller there.
    #[default]
    Auto,
    /// No prediction: the controller's own start.
    Off,
}

/// Where trace lines go: any writer, shared with the sequencer thread.
#[derive(Clone)]
pub struct TraceSink(Arc<Mutex<dyn Write + Send>>);

impl TraceSink {
    /// Trace to `w`.
    pub fn new(w: impl Write + Send + 'static) -> TraceSink {
        TraceSink(Arc::new(Mutex::new(w)))
    }

    /// Flush the writer.
    pub fn flush(&self) -> std::io::Result<()> {
        lock(&self.0).flush()
    }
}

impl std::fmt::Debug for TraceSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceSink")
    }
}

impl Default for WriteOptions {
    fn default() -> WriteOptions {
        WriteOptions {
            strategy: Strategy::Throughput,
            link: Link::Auto,
            threads: 0,
            block_size: DEFAULT_BLOCK_SIZE,
            buffers: 0,
            hints: Vec::new(),
            trace: None,
            predict: Predict::Auto,
            size_hint: None,
            link_guess: None,
        }
    }
}

/// One line of `--trace`: what happened to one block.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRecord {
    /// Block number.
    pub seq: u64,
    /// Raw offset.
    pub offset: u64,
    /// Raw bytes.
    pub raw: u64,
    /// Payload bytes stored.
    pub stored: u64,
    /// Codec and filters chosen (`zstd:3`, `lz4:1 shuffle:8`, `none`).
    pub config: String,
    /// Why the controller chose it.
    pub reason: String,
    /// The block's data class (see `adz_control::classify`); each class has its own
    /// controller, whose estimates the `*_mbs` fields are.
    pub class: u8,
    /// Compression did not pay: stored raw.
    pub stored_raw: bool,
    /// Wall time the worker spent, seconds.
    pub wall_s: f64,
    /// CPU time the worker spent, seconds.
    pub cpu_s: f64,
    /// This block's compression speed on one thread, raw MB/s.
    pub speed_mbs: f64,
    /// The controller's estimate of the aggregate compression speed, MB/s.
    pub agg_speed_mbs: Option<f64>,
    /// The controller's target, MB/s.
    pub target_mbs: Option<f64>,
    /// The link speed in use, MB/s.
    pub link_mbs: Option<f64>,
    /// Time the sink took for this frame, seconds.
    pub sink_s: f64,
    /// CPU time the pipeline's threads (feeder, workers, sequencer) spent since the previous
    /// frame was written, seconds: what the controller is told (`SinkMeasurement::cpu`).
    pub pipeline_cpu_s: f64,
    /// The frame was waiting when the previous write ended (the sink is the bottleneck).
    pub backlogged: bool,
    /// Seconds since the writer was created, when the frame was written.
    pub t_s: f64,
    /// The rung a slice of this block was also compressed with, for the controller to learn
    /// (shadow compression; `adz_control::Decision::shadow`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow: Option<String>,
    /// The class controller's shadow compression so far, as a share of its blocks' CPU time.
    pub shadow_share: f64,
}

/// What a write did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WriteSummary {
    /// Raw bytes written by the application.
    pub raw_bytes: u64,
    /// Bytes of the adz file, headers and trailer included.
    pub stored_bytes: u64,
    /// Number of frames.
    pub frames: u64,
    /// Frames per configuration (`zstd:3`, `zstd:3 (stored raw)`, `none (stored raw)`, ...).
    pub configs: BTreeMap<String, u64>,
    /// Wall time from creation to the commit, seconds.
    pub seconds: f64,
    /// The link speed the controller used at the end (given, or measured), bytes/s.
    pub link: Option<f64>,
    /// Time the sink was busy, seconds.
    pub sink_seconds: f64,
    /// The strategy.
    pub strategy: String,
    /// Bytes the predictor compressed to choose the start (0: no prediction).
    pub predict_bytes: u64,
    /// The start the predictor chose (`none`: raw), if it ran.
    pub predict_start: Option<String>,
    /// Shadow measurements made (slices compressed with a second rung for the controller to
    /// learn; `adz_control::Decision::shadow`).
    pub shadows: u64,
    /// Their CPU time over the CPU time of the blocks' own compression.
    pub shadow_share: f64,
}

impl WriteSummary {
    /// Raw bytes per stored byte.
    pub fn ratio(&self) -> f64 {
        if self.raw_bytes == 0 {
            1.0
        } else {
            self.raw_bytes as f64 / self.stored_bytes.max(1) as f64
        }
    }

    /// Raw bytes per second of wall time.
    pub fn speed(&self) -> f64 {
        self.raw_bytes as f64 / self.seconds.max(1e-9)
    }

    /// How much faster than sending the raw bytes through the same link (None if the link is
    /// unknown).
    pub fn speedup(&self) -> Option<f64> {
        self.link.map(|l| (self.raw_bytes as f64 / l) / self.seconds.max(1e-9))
    }
}

/// A snapshot for progress displays.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Raw bytes accepted from the application.
    pub raw_in: u64,
    /// Raw bytes whose frames have been written.
    pub raw_written: u64,
    /// File bytes written.
    pub stored_written: u64,
    /// The controller's view.
    pub status: Status,
}

/// The data of one block: a raw buffer of the pool, or a slice of an asynchronous write.
enum BlockData {
    Owned(Vec<u8>),
    Shared(SharedSlice),
}

impl BlockData {
    fn bytes(&self) -> &[u8] {
        match self {
            BlockData::Owned(v) => v,
            BlockData::Shared(s) => &s.buf.as_ref().as_ref()[s.range.clone()],
        }
    }
}

/// A slice of an asynchronous write's buffer. Fields drop in order: the buffer reference goes
/// before the guard counts the block done, so when the count reaches zero no worker holds the
/// buffer and [`WriteHandle::wait`] can hand it back.
struct SharedSlice {
    buf: Arc<dyn AsRef<[u8]> + Send + Sync>,
    range: Range<usize>,
    _done: AsyncGuard,
}

struct AsyncState {
    remaining: Mutex<usize>,
    cv: Condvar,
}

struct AsyncGuard(Arc<AsyncState>);

impl Drop for AsyncGuard {
    fn drop(&mut self) {
        let mut n = lock(&self.0.remaining);
        *n -= 1;
        if *n == 0 {
            self.0.cv.notify_all();
        }
    }
}

struct Job {
    raw_offset: u64,
    data: BlockData,
    hints: Vec<Hint>,
    /// The kind of data ([`classify`]): picks the controller that decides the block.
    class: u8,
}

impl Job {
    /// Classified here, on the writing thread, so that the dispatch lock is not held for it.
    fn new(raw_offset: u64, data: BlockData, hints: Vec<Hint>) -> Job {
        let class = classify(data.bytes());
        Job { raw_offset, data, hints, class }
    }
}

struct Done {
    seq: u64,
    header: FrameHeader,
    /// The frame (`frame[..frame_len]`), or only its header when the payload is
    /// `raw_payload`. The buffer keeps the length of the longest frame it has held (see
    /// [`FrameEncoder::encode_at`]).
    frame: Vec<u8>,
    frame_len: usize,
    /// A block stored raw from a pool buffer: written after the header as it is, without a
    /// copy, and given back to the raw pool once written.
    raw_payload: Option<Vec<u8>>,
    measurement: BlockMeasurement,
    class: u8,
}

struct Dispatch {
    queue: VecDeque<Job>,
    controller: ClassedController,
    closed: bool,
}

struct Shared {
    dispatch: Mutex<Dispatch>,
    work: Condvar,
    failure: Mutex<Option<PipelineError>>,
    /// Dropped on failure, which wakes everything blocked on a pool.
    abort_tx: Mutex<Option<Sender<()>>>,
    abort_rx: Receiver<()>,
    raw_in: AtomicU64,
    raw_written: AtomicU64,
    stored_written: AtomicU64,
    /// CPU time (ns) the pipeline's threads spent (the feeder cutting and reading blocks, the
    /// workers) that the sequencer has not reported yet (`SinkMeasurement::cpu`). Not the
    /// application's own computing: that is no cost of moving its bytes.
    cpu_ns: AtomicU64,
    /// Shadow measurements made, their CPU time and the blocks' own compression CPU time
    /// (ns), for the summary.
    shadows: AtomicU64,
    shadow_ns: AtomicU64,
    block_ns: AtomicU64,
    /// Raw block buffers (see the module docs).
    raw: Pool,
    /// Frame buffers.
    frames: Pool,
}

/// Buffers the sequencer adds to each pool while an adaptive strategy mixes raw and compressed
/// blocks (2-core measurements: `docs/benchmarks/2026-11-27-mix-buffers`). A mix's compressed
/// block takes several raw blocks' link time to compress, and the raw blocks finished behind
/// it wait in frame buffers: with `2 N + 2` of them the link idled, and S1 wrote text through
/// 1200 MB/s at 0.87-0.95 of raw. Four more for every write cost raw writes through 6000 MB/s
/// 7-26 %, so they come only with a mix and go when it ends.
pub(crate) const MIX_BUFFERS: usize = 4;

/// The largest compressed share of a mix that gets [`MIX_BUFFERS`].
const MIX_BUFFERS_SHARE: f64 = 0.5;

/// Frames written outside a mix before the sequencer takes [`MIX_BUFFERS`] back: a mix that
/// pauses for a probe or a short run of raw blocks keeps them.
const MIX_QUIET_FRAMES: u32 = 16;

/// A pool of reusable buffers: a bounded channel with room for its base number of buffers
/// plus `room` ([`MIX_BUFFERS`] where the pool may grow, else 0). Buffers come back through
/// [`Pool::give`], which drops them instead while the pool is shrinking, or when the channel
/// is full (a buffer made outside the pool).
struct Pool {
    tx: Sender<Vec<u8>>,
    rx: Receiver<Vec<u8>>,
    /// Buffers to drop as they come back (the pool is above its size).
    surplus: AtomicUsize,
}

impl Pool {
    fn new(buffers: usize, room: usize) -> Pool {
        let (tx, rx) = bounded::<Vec<u8>>(buffers + room);
        for _ in 0..buffers {
            // Buffers grow to their working size on first use.
            tx.send(Vec::new()).expect("pool has room");
        }
        Pool { tx, rx, surplus: AtomicUsize::new(0) }
    }

    /// Give a buffer back (or drop it while the pool shrinks).
    fn give(&self, buf: Vec<u8>) {
        let dropped =
            self.surplus.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if dropped.is_err() {
            let _ = self.tx.try_send(buf);
        }
    }

    /// Add `n` buffers: first by cancelling drops not made yet, then new (empty) ones.
    fn grow(&self, n: usize) {
        for _ in 0..n {
            let cancelled = self
                .surplus
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| s.checked_sub(1));
            if cancelled.is_err() {
                let _ = self.tx.try_send(Vec::new());
            }
        }
    }

    /// Take `n` buffers back as they return.
    fn shrink(&self, n: usize) {
        self.surplus.fetch_add(n, Ordering::Relaxed);
    }
}

/// The sequencer's part in sizing the pools: [`MIX_BUFFERS`] more while the controller mixes.
struct MixBuffers {
    enabled: bool,
    added: bool,
    quiet: u32,
}

impl MixBuffers {
    /// Does the controller mix raw blocks with a minority of compressed ones? Not while it
    /// probes, nor in a "mix" that sends everything raw, nor when most blocks compress: then
    /// the frames behind a compressed block are mostly compressed ones, as slow, and the
    /// larger working set only slows the codec (lz4:50 on the kernel tar through 1200 MB/s:
    /// 4-9 % more CPU per block, S1 3 % slower).
    fn compresses_in_mix(status: &Status) -> bool {
        matches!(status.mode, Mode::Mix { compress_fraction }
            if compress_fraction > 0.0 && compress_fraction <= MIX_BUFFERS_SHARE)
    }

    /// After each frame written: `mixing` from the status of that frame's data class.
    fn update(&mut self, pools: [&Pool; 2], mixing: bool) {
        if !self.enabled {
            return;
        }
        if mixing {
            self.quiet = 0;
            if !self.added {
                self.added = true;
                pools.iter().for_each(|p| p.grow(MIX_BUFFERS));
            }
        } else if self.added {
            self.quiet += 1;
            if self.quiet >= MIX_QUIET_FRAMES {
                self.added = false;
                pools.iter().for_each(|p| p.shrink(MIX_BUFFERS));
            }
        }
    }
}

/// Buffers in each pool when `WriteOptions::buffers` is 0: 2 x threads + 2 (the thesis'
/// minimum is 2 x threads). The predictor reckons a write with as many frames in flight.
pub(crate) fn default_buffers(threads: usize) -> usize {
    2 * threads + 2
}

/// Adds `spent` to the CPU time not reported yet.
fn add_cpu(cpu_ns: &AtomicU64, spent: Duration) {
    cpu_ns.fetch_add(u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Adds the CPU time this thread spent since `*mark` to `cpu_ns` and moves the mark. Thread
/// CPU clocks are per thread, so a mark is only ever used on the thread that took it.
fn count_cpu(cpu_ns: &AtomicU64, mark: &mut Option<cpu_time::ThreadTime>) {
    let Some(now) = cpu_time::ThreadTime::try_now().ok() else { return };
    if let Some(then) = mark.replace(now) {
        add_cpu(cpu_ns, now.as_duration().saturating_sub(then.as_duration()));
    }
}

impl Shared {
    /// Stop the pipeline for `why` (the first failure is the one reported).
    fn fail(&self, why: impl Into<PipelineError>) {
        let why = why.into();
        {
            let mut f = lock(&self.failure);
            if f.is_none() {
                *f = Some(why);
            }
        }
        lock(&self.abort_tx).take();
        let mut d = lock(&self.dispatch);
        d.closed = true;
        d.queue.clear();
        drop(d);
        self.work.notify_all();
    }

    fn check(&self) -> Result<()> {
        match &*lock(&self.failure) {
            Some(why) => Err(Error::Pipeline(why.clone())),
            None => Ok(()),
        }
    }

    /// Take a buffer from a pool, or fail if the pipeline has failed.
    fn take(&self, pool: &Pool) -> Result<Vec<u8>> {
        crossbeam::channel::select! {
            recv(pool.rx) -> b => b.map_err(|_| Error::Pipeline(PipelineError::new("buffer pool closed"))),
            recv(self.abort_rx) -> _ => { self.check()?; Err(Error::Pipeline(PipelineError::new("aborted"))) }
        }
    }
}

impl From<String> for PipelineError {
    fn from(what: String) -> PipelineError {
        PipelineError::new(what)
    }
}

impl From<&str> for PipelineError {
    fn from(what: &str) -> PipelineError {
        PipelineError::new(what)
    }
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in another pipeline thread must not hide the original error behind a poison.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the sequencer hands back when it is done.
struct Sequenced {
    upload: Box<dyn Upload>,
    trailer: TrailerBuilder,
    file_offset: u64,
    configs: BTreeMap<String, u64>,
    sink_busy: Duration,
}

/// Writes an adz file through the adaptive pipeline.
///
/// ```
/// use std::sync::Arc;
/// use adz_core::{Writer, WriteOptions};
/// use adz_store::{MemoryStorage, Storage};
///
/// let store = MemoryStorage::new();
/// let opts = WriteOptions { strategy: "static=zstd:3".parse()?, threads: 2, ..Default::default() };
/// let mut w = Writer::create(&store, "run1.adz", opts)?;
/// w.write(&b"solver output ".repeat(100_000))?;           // returns once buffered
/// let handle = w.write_async(vec![7u8; 3 << 20])?;        // returns at once
/// // ... compute meanwhile ...
/// let buffer_back = handle.wait()?;                        // compressed: reuse the buffer
/// let summary = w.finish()?;
/// assert!(summary.ratio() > 10.0);
/// assert_eq!(store.size("run1.adz")?, summary.stored_bytes);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Writer {
    shared: Arc<Shared>,
    /// A partly filled block from `write`/`write_from`.
    pending: Option<Vec<u8>>,
    raw_offset: u64,
    block_size: usize,
    file_hints: Vec<Hint>,
    ranges: Vec<(Range<u64>, Hint)>,
    workers: Vec<JoinHandle<()>>,
    sequencer: Option<JoinHandle<Option<Sequenced>>>,
    done_tx: Option<Sender<Done>>,
    started: Instant,
    strategy: Strategy,
    predict: PredictState,
    /// After the first prediction: a new kind of data gets its own.
    per_class: Option<Box<PerClass>>,
}

/// What a prediction for a new data class needs.
struct PerClass {
    cfg: PredictConfig,
    link: Option<f64>,
    size_hint: Option<u64>,
    /// Classes already predicted for (bit per class).
    seen: u32,
    /// Bytes compressed by these predictions.
    bytes: u64,
    /// Seconds every prediction of this write may take together: the first prediction's
    /// budget (2 % of the write's predicted time). A new class is predicted only with what
    /// is left; with nothing left its controller starts where the others are.
    allowance: f64,
    /// Seconds the predictions took so far, the first included.
    spent: f64,
}

/// The writer's prediction of its start.
enum PredictState {
    /// Not predicting (off, or a strategy that does not adapt).
    Off,
    /// Holding the first blocks until there are enough to sample.
    Holding(Box<Holding>),
    /// Predicted (or failed to: the controller's own start then).
    Done(Option<Box<Prediction>>),
}

struct Holding {
    held: Vec<Job>,
    /// Blocks to hold before predicting.
    limit: usize,
    cfg: PredictConfig,
    link: Option<f64>,
    size_hint: Option<u64>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("raw_offset", &self.raw_offset).finish_non_exhaustive()
    }
}

impl Writer {
    /// Create `name` in `storage` and start the pipeline. Nothing is visible under `name` until
    /// [`finish`](Self::finish) succeeds.
    pub fn create(storage: &dyn Storage, name: &str, opts: WriteOptions) -> Result<Writer> {
        opts.check()?;
        let upload = storage.create(name)?;
        Writer::with_upload(upload, opts)
    }

    /// Start the pipeline on an upload already begun (a pipe, say).
    pub fn with_upload(upload: Box<dyn Upload>, opts: WriteOptions) -> Result<Writer> {
        opts.check()?;
        let block_size = opts.block_size;
        let header = FileHeader::new(block_size)?;
        let (threads, buffers, room) = opts.resolved();
        let cpus = std::thread::available_parallelism().map_or(threads, |n| n.get());
        let config = ControllerConfig::new(opts.strategy, opts.link, threads).with_cpus(cpus);
        let controller = ClassedController::new(config);
        let keep = controller.keep_threshold();
        // A given number of buffers is kept as given; static strategies never mix.
        let grow = room > 0;
        let (abort_tx, abort_rx) = bounded::<()>(0);
        let shared = Arc::new(Shared {
            dispatch: Mutex::new(Dispatch { queue: VecDeque::new(), controller, closed: false }),
            work: Condvar::new(),
            failure: Mutex::new(None),
            abort_tx: Mutex::new(Some(abort_tx)),
            abort_rx,
            raw_in: AtomicU64::new(0),
            cpu_ns: AtomicU64::new(0),
            shadows: AtomicU64::new(0),
            shadow_ns: AtomicU64::new(0),
            block_ns: AtomicU64::new(0),
            raw_written: AtomicU64::new(0),
            stored_written: AtomicU64::new(0),
            raw: Pool::new(buffers, room),
            frames: Pool::new(buffers, room),
        });
        let (done_tx, done_rx) = unbounded::<Done>();
        let started = Instant::now();

        let mut workers = Vec::with_capacity(threads);
        for i in 0..threads {
            let w_shared = Arc::clone(&shared);
            let done_tx = done_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("adz-worker-{i}"))
                .spawn(move || worker(&w_shared, &done_tx, keep));
            match spawned {
                Ok(h) => workers.push(h),
                Err(e) => {
                    shared.fail("cannot start a worker thread");
                    return Err(Error::io("starting worker threads", e));
                }
            }
        }

        let seq_shared = Arc::clone(&shared);
        let trace = opts.trace.clone();
        let predict = if opts.predict == Predict::Auto && opts.strategy.is_adaptive() {
            let mut cfg =
                PredictConfig { threads, block_size: u64::from(block_size), ..Default::default() };
            cfg.cpus = cpus;
            cfg.keep_threshold = keep;
            cfg.sample.max_slice = block_size as usize;
            let elem = opts.hints.iter().find_map(|h| match h {
                Hint::Dtype(d) if d.size() > 1 => Some(d.size()),
                _ => None,
            });
            if let Some(f) = elem.and_then(|e| {
                adz_format::FilterSpec::shuffle(e).and_then(|f| adz_format::Filters::new(&[f])).ok()
            }) {
                cfg.filters = f;
            }
            let link = match opts.link {
                Link::Fixed(l) => Some(l),
                Link::Auto => opts.link_guess,
            };
            PredictState::Holding(Box::new(Holding {
                held: Vec::new(),
                limit: buffers.saturating_sub(1).clamp(1, 8),
                cfg,
                link,
                size_hint: opts.size_hint,
            }))
        } else {
            PredictState::Off
        };

        let sequencer = std::thread::Builder::new()
            .name("adz-sequencer".to_owned())
            .spawn(move || sequencer(&seq_shared, upload, header, done_rx, grow, trace, started))
            .map_err(|e| Error::io("starting the sequencer thread", e))?;

        Ok(Writer {
            shared,
            pending: None,
            raw_offset: 0,
            block_size: block_size as usize,
            file_hints: opts.hints,
            ranges: Vec::new(),
            workers,
            sequencer: Some(sequencer),
            done_tx: Some(done_tx),
            started,
            strategy: opts.strategy,
            predict,
            per_class: None,
        })
    }

    /// Predict the start from `sample` (a caller that can sample the whole input, e.g. a
    /// file, before writing it) instead of from the first blocks. Does nothing and returns
    /// None if the writer does not predict (`Predict::Off`, a static strategy) or has
    /// already predicted.
    pub fn predict_from(&mut self, sample: &Sample) -> Option<&Prediction> {
        self.run_prediction(Some(sample));
        self.prediction()
    }

    /// Whether [`predict_from`](Writer::predict_from) would use a sample: the writer
    /// predicts (not `Predict::Off`, not a static strategy) and has not yet. A caller that
    /// would read the sample for nothing (a static write reading its input twice) asks first.
    pub fn wants_prediction(&self) -> bool {
        matches!(self.predict, PredictState::Holding(_))
    }

    /// The sample to take of a `len`-byte input for [`predict_from`](Writer::predict_from):
    /// the writer's sample configuration cut to its prediction's time budget
    /// ([`Predictor::plan_sample`]). None if the writer does not want a prediction.
    pub fn sample_config(&self, len: u64) -> Option<SampleConfig> {
        match &self.predict {
            PredictState::Holding(h) => {
                Some(Predictor::new(h.cfg.clone()).plan_sample(self.strategy, h.link, len))
            }
            _ => None,
        }
    }

    /// The prediction the writer started from, once made.
    pub fn prediction(&self) -> Option<&Prediction> {
        match &self.predict {
            PredictState::Done(p) => p.as_deref(),
            _ => None,
        }
    }

    /// Predict from `sample`, or from the held blocks, set the controller's start, and let
    /// the held blocks go.
    fn run_prediction(&mut self, sample: Option<&Sample>) {
        if !matches!(self.predict, PredictState::Holding(_)) {
            return;
        }
        let PredictState::Holding(h) =
            std::mem::replace(&mut self.predict, PredictState::Done(None))
        else {
            unreachable!("checked above");
        };
        let Holding { held, cfg, link, size_hint, .. } = *h;
        let own;
        let sample = match sample {
            Some(s) => s,
            None => {
                let parts: Vec<&[u8]> = held.iter().map(|j| j.data.bytes()).collect();
                let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
                let data_len = size_hint.unwrap_or(len).max(len);
                let plan = Predictor::new(cfg.clone()).plan_sample(self.strategy, link, data_len);
                own = Sample::from_parts(&parts, data_len, &plan);
                &own
            }
        };
        // A prediction that fails (a codec error on the sample) costs only itself: the
        // controller keeps its own start.
        let prediction = if sample.is_empty() {
            None
        } else {
            Predictor::new(cfg.clone()).predict(sample, self.strategy, link).ok()
        };
        let mut classes: Vec<u8> = held.iter().map(|j| j.class).collect();
        classes.extend(sample.slices.iter().map(|(_, s)| classify(s)));
        classes.push(0);
        classes.sort_unstable();
        classes.dedup();
        if let Some(p) = &prediction {
            let mut d = lock(&self.shared.dispatch);
            // Until the pipeline has measured itself, the sample's costs say whether the raw
            // path alone can fill the link (if not, compressing anything only slows the write).
            if p.path_measured {
                d.controller.set_path_cost(p.path_cost, p.serial_cost);
            }
            if p.incompressible {
                // Raw because nothing saves: probe mode (a cheap attempt every few blocks),
                // for the kinds of data sampled. Raw as a *start* means "too slow for the link".
                for &c in &classes {
                    d.controller.start_incompressible(c);
                }
            } else {
                d.controller.set_start(p.start);
            }
        }
        let seen = classes.iter().fold(0u32, |m, &c| m | 1 << (c as usize).min(31));
        let (allowance, spent) =
            prediction.as_ref().map_or((0.0, 0.0), |p| (p.budget_seconds, p.seconds));
        self.per_class =
            Some(Box::new(PerClass { cfg, link, size_hint, seen, bytes: 0, allowance, spent }));
        self.predict = PredictState::Done(prediction.map(Box::new));
        self.push_jobs(held);
    }

    /// A change of data class is the change detector (the block's entropy class jumps
    /// before any ratio can be measured): the first block of a class not seen before is
    /// predicted on its own, and that class's controller starts there.
    fn predict_new_classes(&mut self, jobs: &[Job]) {
        let Some(pc) = self.per_class.as_mut() else { return };
        for job in jobs {
            let bit = 1u32 << (job.class as usize).min(31);
            if pc.seen & bit != 0 {
                continue;
            }
            pc.seen |= bit;
            // The write's predictions share one budget: a mixed file with a new kind of data
            // every few MiB must not pay 2 % of its time per kind (each prediction stalls the
            // writer while it measures).
            let left = pc.allowance - pc.spent;
            if left <= 0.0 {
                continue;
            }
            let bytes = job.data.bytes();
            let len = bytes.len() as u64;
            let rest = pc.size_hint.map_or(len, |s| s.saturating_sub(job.raw_offset)).max(len);
            let sample = Sample::from_parts(&[bytes], rest, &pc.cfg.sample);
            let cfg = PredictConfig { max_budget_seconds: left, ..pc.cfg.clone() };
            let t0 = Instant::now();
            let result = Predictor::new(cfg).predict(&sample, self.strategy, pc.link);
            pc.spent += t0.elapsed().as_secs_f64();
            let Ok(p) = result else {
                continue;
            };
            pc.bytes += p.compressed_bytes;
            let mut d = lock(&self.shared.dispatch);
            if p.incompressible {
                d.controller.start_incompressible(job.class);
            } else {
                d.controller.set_start_of(job.class, p.start);
            }
        }
    }

    /// Give a hint for the raw byte range `range` (`no-compress`, `dtype=f64`, ...), for data
    /// not yet written. Blocks are cut at the range's borders.
    pub fn advise(&mut self, range: Range<u64>, hint: Hint) -> Result<()> {
        if range.start >= range.end {
            return Err(Error::Config(format!("empty hint range {range:?}")));
        }
        if range.start < self.raw_offset + self.pending_len() as u64 {
            return Err(Error::Config(format!(
                "hint range {range:?} starts before the write position {}",
                self.raw_offset + self.pending_len() as u64
            )));
        }
        self.ranges.push((range, hint));
        // A new border may end the pending block where it stands: send it, so a pending block
        // is never full (write_from relies on that).
        if let Some(buf) = self.pending.take() {
            self.settle(buf)?;
        }
        Ok(())
    }

    /// Write `data`. Returns once the data is in the pipeline's buffers; compression and the
    /// write-out go on in the background. Blocks while all buffers are in use.
    pub fn write(&mut self, mut data: &[u8]) -> Result<()> {
        self.predict_from_write(data);
        let mut mark = cpu_time::ThreadTime::try_now().ok();
        while !data.is_empty() {
            self.shared.check()?;
            let mut buf = self.pending_buffer()?;
            let room = self.next_cut() - buf.len();
            let n = room.min(data.len());
            buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            self.shared.raw_in.fetch_add(n as u64, Ordering::Relaxed);
            self.settle(buf)?;
            count_cpu(&self.shared.cpu_ns, &mut mark);
        }
        Ok(())
    }

    /// A first write at least as long as the blocks the writer would hold to predict is
    /// sampled where it lies: the same first blocks, but not copied one after the other
    /// before any is compressed (through 6000 MB/s, 3-5 ms of a 60 ms write of 256 MiB,
    /// where predicting took 0.25 ms), and with a budget for the whole write (or its size
    /// hint), not for the held blocks alone. Only the first blocks, as held ones would be: a
    /// later kind of data gets its own prediction when it comes.
    fn predict_from_write(&mut self, data: &[u8]) {
        let PredictState::Holding(h) = &self.predict else { return };
        let first = h.limit * self.block_size;
        if !h.held.is_empty() || self.pending.is_some() || data.len() < first {
            return;
        }
        let len = h.size_hint.unwrap_or(0).max(data.len() as u64);
        let Some(plan) = self.sample_config(len) else { return };
        let sample = Sample::from_parts(&[&data[..first]], len, &plan);
        self.run_prediction(Some(&sample));
    }

    /// Read `src` to its end straight into the pipeline's buffers (no copy on the way).
    /// Returns the bytes read.
    pub fn write_from(&mut self, src: &mut dyn Read) -> Result<u64> {
        let mut total = 0u64;
        let mut mark = cpu_time::ThreadTime::try_now().ok();
        loop {
            self.shared.check()?;
            let want = self.next_cut();
            let (mut buf, start) = self.fill_buffer(want)?;
            // Fill the block before settling it: a pipe gives 64 KiB a read, and a pending
            // buffer taken up again would be sized (zeroed) again each time.
            let mut end = start;
            let mut eof = false;
            while end < want {
                match src.read(&mut buf[end..want]) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(n) => end += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        buf.truncate(end);
                        self.account_read(end - start, &mut total);
                        self.pending = Some(buf);
                        return Err(Error::io("reading the input", e));
                    }
                }
            }
            buf.truncate(end);
            self.account_read(end - start, &mut total);
            self.settle(buf)?;
            count_cpu(&self.shared.cpu_ns, &mut mark);
            if eof {
                return Ok(total);
            }
        }
    }

    fn account_read(&self, n: usize, total: &mut u64) {
        *total += n as u64;
        self.shared.raw_in.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A buffer to read the pending block into, `want` bytes long, and where its new bytes
    /// start. A pool buffer keeps the length of its last block, all of it initialised, so
    /// it is not zeroed again: `resize` before each read was a memset of every block, 23 %
    /// of the CPU profile of a raw 512 MiB write.
    fn fill_buffer(&mut self, want: usize) -> Result<(Vec<u8>, usize)> {
        let (mut buf, start) = match self.pending.take() {
            Some(b) => {
                let start = b.len();
                (b, start)
            }
            None => (self.shared.take(&self.shared.raw)?, 0),
        };
        if buf.len() < want {
            buf.resize(want, 0);
        } else {
            buf.truncate(want);
        }
        Ok((buf, start))
    }

    /// Write `data` asynchronously: returns at once. Blocks are compressed straight from
    /// `data` (no copy) while the caller goes on; [`WriteHandle::wait`] returns `data` once all
    /// of it is compressed (its frames may still be on their way to storage: `finish` waits
    /// for that). Writes are applied in call order, sync and async alike.
    pub fn write_async<B>(&mut self, data: B) -> Result<WriteHandle<B>>
    where
        B: AsRef<[u8]> + Send + Sync + 'static,
    {
        self.shared.check()?;
        let data = Arc::new(data);
        let bytes: &[u8] = data.as_ref().as_ref();
        let len = bytes.len();
        let state = Arc::new(AsyncState { remaining: Mutex::new(0), cv: Condvar::new() });
        let mut pos = 0usize;
        // First complete a pending partial block by copying.
        if let Some(mut buf) = self.pending.take() {
            let room = self.next_cut() - buf.len();
            let n = room.min(len);
            buf.extend_from_slice(&bytes[..n]);
            pos = n;
            self.settle(buf)?;
        }
        let dyn_data: Arc<dyn AsRef<[u8]> + Send + Sync> = data.clone();
        let mut jobs = Vec::new();
        let mut offset = self.raw_offset;
        while len - pos > 0 {
            let cut = self.cut_len(offset);
            if cut > len - pos {
                break; // the remainder is shorter than a block: it waits for more data
            }
            *lock(&state.remaining) += 1;
            let hints = self.hints_at(offset);
            jobs.push(Job::new(
                offset,
                BlockData::Shared(SharedSlice {
                    buf: Arc::clone(&dyn_data),
                    range: pos..pos + cut,
                    _done: AsyncGuard(Arc::clone(&state)),
                }),
                hints,
            ));
            pos += cut;
            offset += cut as u64;
        }
        drop(dyn_data);
        self.raw_offset = offset;
        self.queue_jobs(jobs);
        // The caller may wait for this write before writing more: held blocks would never
        // finish. Predict from what there is.
        self.run_prediction(None);
        let tail = &bytes[pos..];
        if !tail.is_empty() {
            // Copy the short remainder into a pending block; take a buffer without waiting
            // (this call must not block), or make one, which the pool gives up again when
            // one comes back (so it stays at its size).
            let mut buf = self.shared.raw.rx.try_recv().unwrap_or_else(|_| {
                self.shared.raw.shrink(1);
                Vec::new()
            });
            buf.clear();
            buf.extend_from_slice(tail);
            self.pending = Some(buf);
        }
        self.shared.raw_in.fetch_add(len as u64, Ordering::Relaxed);
        Ok(WriteHandle { data: Some(data), state, shared: Arc::clone(&self.shared) })
    }

    /// Raw bytes accepted so far.
    pub fn raw_bytes(&self) -> u64 {
        self.raw_offset + self.pending_len() as u64
    }

    /// Progress so far.
    pub fn progress(&self) -> Progress {
        let status = lock(&self.shared.dispatch).controller.status();
        Progress {
            raw_in: self.shared.raw_in.load(Ordering::Relaxed),
            raw_written: self.shared.raw_written.load(Ordering::Relaxed),
            stored_written: self.shared.stored_written.load(Ordering::Relaxed),
            status,
        }
    }

    /// Write the last block and the trailer, wait for everything to reach storage, and commit.
    /// On any error nothing is committed.
    pub fn finish(mut self) -> Result<WriteSummary> {
        if let Some(buf) = self.pending.take() {
            if !buf.is_empty() {
                self.emit(buf);
            }
        }
        self.run_prediction(None);
        self.close();
        let sequenced = self.join();
        self.shared.check()?;
        let Some(mut s) = sequenced else {
            return Err(Error::Pipeline(PipelineError::new(
                "the sequencer stopped without a result",
            )));
        };
        let trailer = s.trailer.encode(s.file_offset);
        let t0 = Instant::now();
        let result = s.upload.append(&trailer).and_then(|()| s.upload.commit());
        s.sink_busy += t0.elapsed();
        let stored = result?;
        let status = lock(&self.shared.dispatch).controller.status();
        Ok(WriteSummary {
            raw_bytes: s.trailer.raw_size(),
            stored_bytes: stored,
            frames: s.trailer.entries().len() as u64,
            configs: s.configs,
            seconds: self.started.elapsed().as_secs_f64(),
            link: status.link,
            sink_seconds: s.sink_busy.as_secs_f64(),
            strategy: self.strategy.to_string(),
            predict_bytes: self.prediction().map_or(0, |p| p.compressed_bytes)
                + self.per_class.as_ref().map_or(0, |p| p.bytes),
            predict_start: self.prediction().map(|p| p.start.to_string()),
            shadows: self.shared.shadows.load(Ordering::Relaxed),
            shadow_share: {
                let block = self.shared.block_ns.load(Ordering::Relaxed) as f64;
                let shadow = self.shared.shadow_ns.load(Ordering::Relaxed) as f64;
                if block > 0.0 {
                    shadow / block
                } else {
                    0.0
                }
            },
        })
    }

    /// Stop and discard everything: nothing is committed and nothing is kept for recovery
    /// (unlike dropping the writer, which keeps what was written where storage can).
    pub fn abort(mut self) -> Result<()> {
        self.shared.fail("the writer was aborted".to_owned());
        match self.join() {
            Some(s) => s.upload.abort().map_err(Error::from),
            None => Ok(()),
        }
    }

    /// Stop without committing, and keep the frames of the complete blocks written so far
    /// for recovery (`adz recover`) where the storage can ([`Upload::abandon`]: a local
    /// file's temporary file stays), as after a killed process, if there is at least one;
    /// otherwise (and after a write error) the upload is aborted and nothing is left.
    /// Dropping the writer does the same; this says what was kept.
    pub fn abandon(mut self) -> Result<Option<Abandoned>> {
        self.stop_and_keep()
    }

    fn stop_and_keep(&mut self) -> Result<Option<Abandoned>> {
        if self.sequencer.is_none() {
            return Ok(None);
        }
        let failed_before = self.shared.check().is_err();
        if !failed_before {
            // The blocks already handed over are written (a bounded wait: at most `buffers`
            // of them); the partial block pending is dropped.
            self.run_prediction(None);
            self.close();
        }
        let sequenced = self.join();
        self.shared.fail("the writer was dropped before finish");
        let Some(s) = sequenced else { return Ok(None) };
        let frames = s.trailer.entries().len() as u64;
        if failed_before || frames == 0 {
            s.upload.abort()?;
            return Ok(None);
        }
        let raw_bytes = s.trailer.raw_size();
        Ok(s.upload.abandon()?.map(|location| Abandoned { location, frames, raw_bytes }))
    }

    fn pending_len(&self) -> usize {
        self.pending.as_ref().map_or(0, Vec::len)
    }

    /// The pending partial block, or a fresh buffer from the pool (waits while none is free).
    fn pending_buffer(&mut self) -> Result<Vec<u8>> {
        match self.pending.take() {
            Some(b) => Ok(b),
            None => {
                let mut b = self.shared.take(&self.shared.raw)?;
                b.clear();
                b.reserve(self.block_size);
                Ok(b)
            }
        }
    }

    /// The length of the pending block (it starts at `raw_offset`).
    fn next_cut(&self) -> usize {
        self.cut_len(self.raw_offset)
    }

    /// The length of the block starting at raw offset `start`: the block size, or less where a
    /// hint range begins or ends inside it.
    fn cut_len(&self, start: u64) -> usize {
        let mut end = start + self.block_size as u64;
        for (r, _) in &self.ranges {
            for border in [r.start, r.end] {
                if border > start && border < end {
                    end = border;
                }
            }
        }
        (end - start) as usize
    }

    fn hints_at(&self, offset: u64) -> Vec<Hint> {
        let mut hints = self.file_hints.clone();
        hints.extend(
            self.ranges.iter().filter(|(r, _)| r.contains(&offset)).map(|(_, h)| h.clone()),
        );
        hints
    }

    /// Keep a buffer pending, or send it as a block if it is full.
    fn settle(&mut self, buf: Vec<u8>) -> Result<()> {
        let full = !buf.is_empty() && buf.len() == self.next_cut();
        if full {
            self.emit(buf);
        } else if buf.is_empty() {
            self.shared.raw.give(buf);
        } else {
            self.pending = Some(buf);
        }
        Ok(())
    }

    fn emit(&mut self, buf: Vec<u8>) {
        let len = buf.len() as u64;
        let job = Job::new(self.raw_offset, BlockData::Owned(buf), self.hints_at(self.raw_offset));
        self.raw_offset += len;
        self.queue_jobs(vec![job]);
    }

    /// Queue jobs, or hold them while the start is being predicted.
    fn queue_jobs(&mut self, jobs: Vec<Job>) {
        if let PredictState::Holding(h) = &mut self.predict {
            h.held.extend(jobs);
            if h.held.len() >= h.limit {
                self.run_prediction(None);
            }
            return;
        }
        self.predict_new_classes(&jobs);
        self.push_jobs(jobs);
    }

    fn push_jobs(&self, jobs: Vec<Job>) {
        if jobs.is_empty() {
            return;
        }
        let mut d = lock(&self.shared.dispatch);
        if d.closed {
            return; // failed: the jobs are dropped, which releases async writers
        }
        d.queue.extend(jobs);
        drop(d);
        self.shared.work.notify_all();
    }

    fn close(&mut self) {
        lock(&self.shared.dispatch).closed = true;
        self.shared.work.notify_all();
    }

    fn join(&mut self) -> Option<Sequenced> {
        for w in self.workers.drain(..) {
            if w.join().is_err() {
                self.shared.fail("a compression worker panicked".to_owned());
            }
        }
        self.done_tx.take();
        let s = self.sequencer.take()?;
        match s.join() {
            Ok(r) => r,
            Err(_) => {
                self.shared.fail("the sequencer panicked".to_owned());
                None
            }
        }
    }
}

impl Drop for Writer {
    /// A writer dropped without `finish` or `abort` (a panic, an early return) does what
    /// [`Writer::abandon`] does: commit nothing, keep the complete frames for recovery.
    fn drop(&mut self) {
        let _ = self.stop_and_keep();
    }
}

/// What [`Writer::abandon`] kept for recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Abandoned {
    /// Where the bytes are (for a local file, the path of its temporary file).
    pub location: String,
    /// Complete frames written there.
    pub frames: u64,
    /// Raw bytes those frames hold.
    pub raw_bytes: u64,
}

/// An asynchronous write in progress.
pub struct WriteHandle<B> {
    data: Option<Arc<B>>,
    state: Arc<AsyncState>,
    shared: Arc<Shared>,
}

impl<B> std::fmt::Debug for WriteHandle<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteHandle").field("done", &self.is_done()).finish()
    }
}

impl<B> WriteHandle<B> {
    /// True once every block of the write has been compressed.
    pub fn is_done(&self) -> bool {
        *lock(&self.state.remaining) == 0
    }

    /// Wait until every block of the write has been compressed, and get the buffer back.
    pub fn wait(mut self) -> Result<B> {
        let mut n = lock(&self.state.remaining);
        while *n > 0 {
            n = self.state.cv.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        drop(n);
        self.shared.check()?;
        let arc = self.data.take().expect("data present until wait");
        // Every block's reference was dropped before its count (see SharedSlice); the
        // writer's pending copy never references the buffer.
        Arc::try_unwrap(arc)
            .map_err(|_| Error::Pipeline(PipelineError::new("the buffer is still referenced")))
    }
}

fn worker(shared: &Shared, done_tx: &Sender<Done>, keep: f64) {
    let mut encoder = FrameEncoder::new();
    let mut shadow_frame = Vec::new();
    loop {
        // A frame buffer first, then a job: see the module docs.
        let Ok(mut frame) = shared.take(&shared.frames) else { return };
        let (job, decision) = {
            let mut d = lock(&shared.dispatch);
            loop {
                if let Some(job) = d.queue.pop_front() {
                    let ctx = BlockContext {
                        raw_offset: job.raw_offset,
                        raw_len: job.data.bytes().len(),
                        hints: &job.hints,
                        class: job.class,
                    };
                    let decision = d.controller.next_block(&ctx);
                    break (job, decision);
                }
                if d.closed {
                    shared.frames.give(frame);
                    return;
                }
                d = shared.work.wait(d).unwrap_or_else(|e| e.into_inner());
            }
        };
        let job_class = job.class;
        let raw = job.data.bytes();
        let wall0 = Instant::now();
        let cpu0 = cpu_time::ThreadTime::now();
        let encoded = encoder.encode_at(
            raw,
            job.raw_offset,
            decision.codec,
            decision.filters,
            keep,
            &mut frame,
            0,
        );
        let cpu = cpu0.elapsed();
        let wall = wall0.elapsed();
        // After the block's own clock: the shadow's cost is reported on its own.
        let shadow = crate::shadow::measure(&mut encoder, &mut shadow_frame, raw, &decision);
        let raw_len = raw.len() as u64;
        let (header, payload_is_raw, mut frame_len) = match encoded {
            Ok(h) => h,
            Err(e) => {
                shared.fail(PipelineError::caused_by(
                    format!("compressing the block at raw offset {}", job.raw_offset),
                    e,
                ));
                return;
            }
        };
        let raw_payload = match job.data {
            BlockData::Owned(buf) if payload_is_raw => Some(buf),
            BlockData::Owned(buf) => {
                shared.raw.give(buf);
                None
            }
            BlockData::Shared(s) => {
                // The caller gets its buffer back once compressed, so copy what must be stored.
                if payload_is_raw {
                    let data = &s.buf.as_ref().as_ref()[s.range.clone()];
                    let end = frame_len + data.len();
                    if frame.len() < end {
                        frame.resize(end, 0);
                    }
                    frame[frame_len..end].copy_from_slice(data);
                    frame_len = end;
                }
                drop(s);
                None
            }
        };
        let measurement = BlockMeasurement {
            decision,
            raw_len,
            stored_len: u64::from(header.stored_len),
            stored_raw: header.stored_raw(),
            wall,
            cpu,
        };
        {
            let mut d = lock(&shared.dispatch);
            if let Some(s) = &shadow {
                d.controller.record_shadow(s);
            }
            d.controller.record_block(&measurement);
        }
        if decision.codec != adz_control::CodecSpec::NONE {
            add_cpu(&shared.block_ns, cpu);
        }
        if let Some(s) = &shadow {
            add_cpu(&shared.cpu_ns, s.base_cpu + s.cpu);
            add_cpu(&shared.shadow_ns, s.base_cpu + s.cpu);
            shared.shadows.fetch_add(1, Ordering::Relaxed);
        }
        // The encode's CPU time, already measured: a second thread-clock read here, before
        // the frame goes to the sequencer, made a 117 MB/s write of doubles with static zstd:3
        // 8 % slower (the sequencer's gaps between appends went from 40 us to 0.7 ms).
        add_cpu(&shared.cpu_ns, cpu);
        let done = Done {
            seq: decision.seq,
            header,
            frame,
            frame_len,
            raw_payload,
            measurement,
            class: job_class,
        };
        if done_tx.send(done).is_err() {
            return;
        }
    }
}

#[allow(clippy::too_many_arguments)] // the sequencer's channels and settings, each needed
fn sequencer(
    shared: &Shared,
    mut upload: Box<dyn Upload>,
    header: FileHeader,
    done_rx: Receiver<Done>,
    grow: bool,
    trace: Option<TraceSink>,
    started: Instant,
) -> Option<Sequenced> {
    let mut trailer = TrailerBuilder::new();
    let mut configs: BTreeMap<String, u64> = BTreeMap::new();
    let head = header.encode();
    let t0 = Instant::now();
    let mut failed = false;
    if let Err(e) = upload.append(&head) {
        shared.fail(PipelineError::caused_by("writing the file header", e));
        failed = true;
    }
    let mut sink_busy = t0.elapsed();
    let mut file_offset = head.len() as u64;
    let mut waiting: BTreeMap<u64, Done> = BTreeMap::new();
    let mut next = 0u64;
    // Was the next frame already waiting when the last append finished? Then its append
    // starts at once and its time is pure sink time (see SinkMeasurement::backlogged).
    let mut backlogged = false;
    // When the last append ended (None before the first frame: its wait is the write's
    // start-up, not the pipeline's pace).
    let mut last_end: Option<Instant> = None;
    // The sequencer's own CPU time is counted from here (see SinkMeasurement::cpu).
    let mut cpu_mark = cpu_time::ThreadTime::try_now().ok();
    let mut mix_buffers = MixBuffers { enabled: grow, added: false, quiet: 0 };
    for done in done_rx.iter() {
        waiting.insert(done.seq, done);
        while let Some(d) = waiting.remove(&next) {
            next += 1;
            let release = |d: Done| {
                shared.frames.give(d.frame);
                if let Some(raw) = d.raw_payload {
                    shared.raw.give(raw);
                }
            };
            if failed {
                release(d);
                continue;
            }
            let t0 = Instant::now();
            let written =
                upload.append(&d.frame[..d.frame_len]).and_then(|()| match &d.raw_payload {
                    Some(raw) => upload.append(raw),
                    None => Ok(()),
                });
            if let Err(e) = written {
                shared.fail(PipelineError::caused_by(format!("writing frame {}", d.seq), e));
                failed = true;
                release(d);
                continue;
            }
            let end = Instant::now();
            let busy = end - t0;
            let waited = last_end.map_or(Duration::ZERO, |e| t0.saturating_duration_since(e));
            last_end = Some(end);
            count_cpu(&shared.cpu_ns, &mut cpu_mark);
            let cpu = Duration::from_nanos(shared.cpu_ns.swap(0, Ordering::Relaxed));
            let frame_len = d.header.frame_len();
            let this_backlogged = backlogged;
            while let Ok(more) = done_rx.try_recv() {
                waiting.insert(more.seq, more);
            }
            backlogged = waiting.contains_key(&next);
            sink_busy += busy;
            trailer.push(&d.header, file_offset);
            file_offset += frame_len;
            *configs.entry(d.header.describe()).or_default() += 1;
            shared.raw_written.fetch_add(u64::from(d.header.raw_len), Ordering::Relaxed);
            shared.stored_written.store(file_offset, Ordering::Relaxed);
            let status = {
                let mut dsp = lock(&shared.dispatch);
                dsp.controller.record_sink(&SinkMeasurement {
                    bytes: frame_len,
                    busy,
                    backlogged: this_backlogged,
                    raw: u64::from(d.header.raw_len),
                    waited,
                    cpu,
                });
                dsp.controller.status_of(d.class)
            };
            mix_buffers
                .update([&shared.raw, &shared.frames], MixBuffers::compresses_in_mix(&status));
            if let Some(t) = &trace {
                let m = &d.measurement;
                let rec = TraceRecord {
                    seq: d.seq,
                    offset: d.header.raw_offset,
                    raw: m.raw_len,
                    stored: m.stored_len,
                    config: d.header.describe(),
                    reason: format!("{:?}", m.decision.reason),
                    class: d.class,
                    stored_raw: m.stored_raw,
                    wall_s: m.wall.as_secs_f64(),
                    cpu_s: m.cpu.as_secs_f64(),
                    speed_mbs: m.raw_len as f64 / m.wall.as_secs_f64().max(1e-9) / 1e6,
                    agg_speed_mbs: status.speed.map(|v| v / 1e6),
                    target_mbs: status.target.map(|v| v / 1e6),
                    link_mbs: status.link.map(|v| v / 1e6),
                    sink_s: busy.as_secs_f64(),
                    pipeline_cpu_s: cpu.as_secs_f64(),
                    backlogged: this_backlogged,
                    t_s: started.elapsed().as_secs_f64(),
                    shadow: m.decision.shadow.map(|c| c.to_string()),
                    shadow_share: status.shadow_share,
                };
                let mut w = lock(&t.0);
                let line = serde_json::to_string(&rec).unwrap_or_default();
                if let Err(e) = writeln!(w, "{line}") {
                    drop(w);
                    shared.fail(PipelineError::caused_by("writing the trace", e));
                    failed = true;
                }
            }
            release(d);
        }
    }
    if !waiting.is_empty() && !failed {
        shared.fail(format!("block {next} never arrived"));
    }
    Some(Sequenced { upload, trailer, file_offset, configs, sink_busy })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Take every buffer the pool holds now (without waiting).
    fn drain(p: &Pool) -> Vec<Vec<u8>> {
        std::iter::from_fn(|| p.rx.try_recv().ok()).collect()
    }

    fn static_opts(block_size: u32) -> WriteOptions {
        WriteOptions {
            strategy: Strategy::Static("zstd:1".parse().unwrap()),
            threads: 1,
            block_size,
            ..Default::default()
        }
    }

    fn files_in(dir: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn abandon_keeps_complete_frames_and_nothing_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = adz_store::LocalStorage::new(dir.path()).unwrap().sync_on_commit(false);
        let mut w = Writer::create(&store, "a.adz", static_opts(4096)).unwrap();
        w.write(b"less than a block").unwrap();
        assert_eq!(w.abandon().unwrap(), None);
        assert!(files_in(dir.path()).is_empty(), "a header alone is not kept");

        // Dropped the same way.
        let mut w = Writer::create(&store, "a.adz", static_opts(4096)).unwrap();
        w.write(b"less than a block").unwrap();
        drop(w);
        assert!(files_in(dir.path()).is_empty());

        let data: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 7) as u8).collect();
        let mut w = Writer::create(&store, "b.adz", static_opts(4096)).unwrap();
        w.write(&data).unwrap();
        let kept = w.abandon().unwrap().expect("complete frames are kept");
        assert_eq!((kept.frames, kept.raw_bytes), (3, 3 * 4096));
        assert_eq!(files_in(dir.path()).len(), 1);
        assert!(kept.location.contains(".b.adz.adz-tmp-"), "{}", kept.location);
        let saved = adz_store::MemoryStorage::new();
        let file = std::fs::File::open(&kept.location).unwrap();
        let report = crate::recover_stream(file, saved.create("s.adz").unwrap()).unwrap();
        assert_eq!(report.raw_bytes_kept, 3 * 4096);
    }

    #[test]
    fn options_out_of_range_are_refused_before_anything_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let store = adz_store::LocalStorage::new(dir.path()).unwrap();
        let cases = [
            (WriteOptions { threads: MAX_THREADS + 1, ..static_opts(4096) }, "threads"),
            (WriteOptions { buffers: MAX_BUFFERS + 1, ..static_opts(4096) }, "buffers"),
            (WriteOptions { buffers: 60_000, ..static_opts(64 << 20) }, "buffers"),
        ];
        for (opts, what) in cases {
            let e = Writer::create(&store, "x.adz", opts).unwrap_err();
            assert!(matches!(e, Error::Limit { option, .. } if option == what), "{e}");
        }
        assert!(files_in(dir.path()).is_empty());
        let e = WriteOptions { buffers: 60_000, ..static_opts(64 << 20) }.check().unwrap_err();
        assert!(e.to_string().contains("memory available"), "{e}");
        assert!(WriteOptions { threads: MAX_THREADS, ..static_opts(4096) }.check().is_ok());
        let default = WriteOptions::default();
        assert!(default.buffer_memory() >= 2 * 6 * u64::from(DEFAULT_BLOCK_SIZE));
    }

    /// An upload that fails with "no space" once it holds `room` bytes.
    #[derive(Debug)]
    struct FullDisk {
        room: u64,
        written: u64,
    }

    impl Upload for FullDisk {
        fn append(&mut self, data: &[u8]) -> adz_store::Result<()> {
            if self.written + data.len() as u64 > self.room {
                let source = std::io::Error::from_raw_os_error(28); // ENOSPC
                return Err(adz_store::Error::Io { op: "append to", name: "o.adz".into(), source });
            }
            self.written += data.len() as u64;
            Ok(())
        }
        fn bytes_written(&self) -> u64 {
            self.written
        }
        fn commit(self: Box<Self>) -> adz_store::Result<u64> {
            Ok(self.written)
        }
        fn abort(self: Box<Self>) -> adz_store::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_sink_error_keeps_its_cause_in_the_chain_once() {
        let upload = Box::new(FullDisk { room: 10_000, written: 0 });
        let mut w = Writer::with_upload(upload, static_opts(4096)).unwrap();
        let data: Vec<u8> =
            (0..1_000_000u32).map(|i| (i.wrapping_mul(2654435761) >> 7) as u8).collect();
        let e = match w.write(&data) {
            Err(e) => e,
            Ok(()) => w.finish().unwrap_err(),
        };
        assert!(matches!(e, Error::Pipeline(_)), "{e:?}");
        let mut chain = Vec::new();
        let mut c: Option<&dyn std::error::Error> = Some(&e);
        while let Some(x) = c {
            chain.push(x.to_string());
            c = x.source();
        }
        let all = chain.join(": ");
        assert!(chain[0].starts_with("write failed: writing frame"), "{all}");
        assert!(chain.last().unwrap().contains("No space left on device"), "{all}");
        assert_eq!(all.matches("No space left").count(), 1, "{all}");
        assert!(all.contains("append to \"o.adz\" failed"), "{all}");
    }

    #[test]
    fn a_pool_grows_by_new_buffers_and_shrinks_as_they_come_back() {
        let p = Pool::new(6, MIX_BUFFERS);
        p.grow(MIX_BUFFERS);
        let all = drain(&p);
        assert_eq!(all.len(), 6 + MIX_BUFFERS);
        p.shrink(MIX_BUFFERS);
        for b in all {
            p.give(b);
        }
        assert_eq!(drain(&p).len(), 6, "the added buffers are dropped as they come back");
        assert_eq!(p.surplus.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_buffer_made_outside_the_pool_does_not_grow_it() {
        for room in [0, MIX_BUFFERS] {
            let p = Pool::new(2, room);
            let mut out = drain(&p);
            // As write_async does when the pool is empty.
            p.shrink(1);
            out.push(Vec::new());
            out.into_iter().for_each(|b| p.give(b));
            assert_eq!(drain(&p).len(), 2, "room {room}");
        }
        let p = Pool::new(2, 0);
        p.grow(MIX_BUFFERS);
        assert_eq!(drain(&p).len(), 2, "a pool without room does not grow");
    }

    #[test]
    fn growing_again_before_the_buffers_came_back_cancels_their_drop() {
        let p = Pool::new(2, MIX_BUFFERS);
        p.grow(MIX_BUFFERS);
        let out = drain(&p);
        p.shrink(MIX_BUFFERS);
        p.grow(MIX_BUFFERS);
        assert!(drain(&p).is_empty(), "no new buffers while the old ones are out");
        for b in out {
            p.give(b);
        }
        assert_eq!(drain(&p).len(), 2 + MIX_BUFFERS, "none dropped, none made twice");
    }

    #[test]
    fn the_pools_grow_with_a_mix_and_shrink_after_it_has_been_quiet() {
        let (raw, frames) = (Pool::new(6, MIX_BUFFERS), Pool::new(6, MIX_BUFFERS));
        // Cycle every buffer through `give` once (the drops due happen), then count.
        let count = |p: &Pool| {
            drain(p).into_iter().for_each(|b| p.give(b));
            let b = drain(p);
            let n = b.len();
            b.into_iter().for_each(|b| p.give(b));
            n
        };
        let mut m = MixBuffers { enabled: true, added: false, quiet: 0 };
        m.update([&raw, &frames], false);
        assert_eq!((count(&raw), count(&frames)), (6, 6), "no mix, no growth");
        m.update([&raw, &frames], true);
        m.update([&raw, &frames], true);
        assert_eq!((count(&raw), count(&frames)), (10, 10), "grown once, not per frame");
        for _ in 1..MIX_QUIET_FRAMES {
            m.update([&raw, &frames], false);
        }
        m.update([&raw, &frames], true);
        for _ in 1..MIX_QUIET_FRAMES {
            m.update([&raw, &frames], false);
        }
        assert_eq!(count(&raw), 10, "a pause shorter than MIX_QUIET_FRAMES keeps them");
        m.update([&raw, &frames], false);
        assert_eq!((count(&raw), count(&frames)), (6, 6), "taken back after a quiet run");

        let mut off = MixBuffers { enabled: false, added: false, quiet: 0 };
        off.update([&raw, &frames], true);
        assert_eq!(count(&raw), 6, "a given number of buffers stays");
    }

    #[test]
    fn only_a_mix_that_sends_most_blocks_raw_gets_the_buffers() {
        let status = |mode| Status {
            strategy: Strategy::Throughput,
            rung: adz_control::CodecSpec::NONE,
            mode,
            target: None,
            speed: None,
            ratio: None,
            link: None,
            cpu_share: None,
            blocks: 0,
            shadows: 0,
            shadow_share: 0.0,
        };
        let mix = |p| MixBuffers::compresses_in_mix(&status(Mode::Mix { compress_fraction: p }));
        assert!(mix(0.1) && mix(0.4) && mix(MIX_BUFFERS_SHARE));
        assert!(!mix(0.0), "everything raw: nothing holds a raw frame up");
        assert!(!mix(0.8), "mostly compressed: the frames behind are as slow");
        for mode in [Mode::Probe, Mode::Adapt, Mode::Start, Mode::Fixed] {
            assert!(!MixBuffers::compresses_in_mix(&status(mode)), "{mode:?}");
        }
    }
}
