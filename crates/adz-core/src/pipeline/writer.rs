//! The [`Writer`]: its state, starting the pipeline's threads, the start's prediction,
//! hints and progress. Its write calls (cutting bytes into blocks) are in `cutter`, its ends
//! (finish, abort, abandon, drop) in `finish`.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use adz_control::{ControllerConfig, Hint, Status, Strategy};
use adz_format::FileHeader;
use adz_store::{Storage, Upload};
use crossbeam::channel::{unbounded, Sender};

use super::options::WriteOptions;
use super::sequencer::{sequencer, Sequenced};
use super::shared::{lock, new_control, Done, Shared};
use super::start::Start;
use super::trace::{Observer, TraceSink, TraceThread};
use super::worker::worker;
use crate::error::{Error, PipelineError, Result};
use crate::predict::{Prediction, Sample, SampleConfig};

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
    pub(super) shared: Arc<Shared>,
    /// A partly filled block from `write`/`write_from`.
    pub(super) pending: Option<Vec<u8>>,
    pub(super) raw_offset: u64,
    pub(super) block_size: usize,
    pub(super) file_hints: Vec<Hint>,
    pub(super) ranges: Vec<(Range<u64>, Hint)>,
    pub(super) workers: Vec<JoinHandle<()>>,
    pub(super) sequencer: Option<JoinHandle<Option<Sequenced>>>,
    pub(super) done_tx: Option<Sender<Done>>,
    pub(super) started: Instant,
    pub(super) strategy: Strategy,
    /// The predicted start.
    pub(super) start: Start,
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
        let header = FileHeader::new(opts.block_size)?;
        let (threads, buffers, room) = opts.resolved();
        let cpus = std::thread::available_parallelism().map_or(threads, |n| n.get());
        let mut config = ControllerConfig::new(opts.strategy, opts.link, threads).with_cpus(cpus);
        config.ladder = config.ladder.with_priors(opts.priors.clone());
        let controller = new_control(config);
        let keep = controller.keep_threshold();
        let shared = Arc::new(Shared::new(controller, buffers, room));
        let observer = start_trace(&shared, opts.trace.clone())?;
        let (done_tx, done_rx) = unbounded::<Done>();
        let started = Instant::now();
        let workers = start_workers(&shared, &done_tx, threads, keep)?;
        let start = Start::new(&opts, threads, buffers, cpus, keep, upload.rate_ceiling());
        // A given number of buffers is kept as given; static strategies never mix.
        let grow = room > 0;
        let seq_shared = Arc::clone(&shared);
        let sequencer = std::thread::Builder::new()
            .name("adz-sequencer".to_owned())
            .spawn(move || sequencer(&seq_shared, upload, header, done_rx, grow, observer, started))
            .map_err(|e| Error::io("starting the sequencer thread", e))?;
        Ok(Writer {
            shared,
            pending: None,
            raw_offset: 0,
            block_size: opts.block_size as usize,
            file_hints: opts.hints,
            ranges: Vec::new(),
            workers,
            sequencer: Some(sequencer),
            done_tx: Some(done_tx),
            started,
            strategy: opts.strategy,
            start,
        })
    }

    /// Predict the start from `sample` (a caller that can sample the whole input, e.g. a
    /// file, before writing it) instead of from the first blocks. Does nothing and returns
    /// None if the writer does not predict (`Predict::Off`, a static strategy) or has
    /// already predicted.
    pub fn predict_from(&mut self, sample: &Sample) -> Option<&Prediction> {
        let held = self.start.run(Some(sample), &self.shared);
        self.push_jobs(held);
        self.prediction()
    }

    /// Whether [`predict_from`](Writer::predict_from) would use a sample: the writer
    /// predicts (not `Predict::Off`, not a static strategy) and has not yet. A caller that
    /// would read the sample for nothing (a static write reading its input twice) asks first.
    pub fn wants_prediction(&self) -> bool {
        self.start.wants()
    }

    /// The sample to take of a `len`-byte input for [`predict_from`](Writer::predict_from):
    /// the writer's sample configuration cut to its prediction's time budget
    /// ([`Predictor::plan_sample`]). None if the writer does not want a prediction.
    ///
    /// [`Predictor::plan_sample`]: crate::predict::Predictor::plan_sample
    pub fn sample_config(&self, len: u64) -> Option<SampleConfig> {
        self.start.sample_config(len)
    }

    /// The prediction the writer started from, once made.
    pub fn prediction(&self) -> Option<&Prediction> {
        self.start.prediction()
    }

    /// Predict from the held blocks (if still holding), set the controller's start, and let
    /// the held blocks go.
    pub(super) fn run_prediction(&mut self) {
        let held = self.start.run(None, &self.shared);
        self.push_jobs(held);
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
}

/// The trace observer, if the options ask for a trace: its thread fails the pipeline on a
/// write error.
fn start_trace(shared: &Arc<Shared>, sink: Option<TraceSink>) -> Result<Option<Box<dyn Observer>>> {
    let Some(sink) = sink else { return Ok(None) };
    let on_error_shared = Arc::clone(shared);
    let on_error = move |e| on_error_shared.fail(PipelineError::caused_by("writing the trace", e));
    let t = TraceThread::start(sink, on_error)
        .map_err(|e| Error::io("starting the trace thread", e))?;
    Ok(Some(Box::new(t)))
}

/// Start `threads` workers; on failure, fail the pipeline (those started stop).
fn start_workers(
    shared: &Arc<Shared>,
    done_tx: &Sender<Done>,
    threads: usize,
    keep: f64,
) -> Result<Vec<JoinHandle<()>>> {
    let mut workers = Vec::with_capacity(threads);
    for i in 0..threads {
        let w_shared = Arc::clone(shared);
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
    Ok(workers)
}

/// The measured link's 95 % interval, once it is settled (see `WriteSummary::link_interval`).
pub(super) fn settled_interval(status: &Status) -> Option<(f64, f64)> {
    status.link_estimate.filter(|e| e.settled && e.low > 0.0).map(|e| (e.low, e.high))
}
