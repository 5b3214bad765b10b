//! What the pipeline's threads share: the dispatch queue and its controller, the pools, the
//! counters and the first failure; and the jobs and finished frames they pass on.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use adz_control::{classify, BlockMeasurement, Control, ControllerConfig, Hint};
use adz_format::FrameHeader;
use crossbeam::channel::{bounded, Receiver, Sender};

use crate::error::{Error, PipelineError, Result};
use crate::pool::Pool;

/// The controller the pipeline talks to, only through the [`Control`] trait.
pub(crate) type PipelineControl = Box<dyn Control + Send>;

/// A controller for `config` (one per data class: [`adz_control::new_control`]).
pub(super) fn new_control(config: ControllerConfig) -> PipelineControl {
    adz_control::new_control(config)
}

/// The data of one block: a raw buffer of the pool, or a slice of an asynchronous write.
pub(super) enum BlockData {
    Owned(Vec<u8>),
    Shared(SharedSlice),
}

impl BlockData {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            BlockData::Owned(v) => v,
            BlockData::Shared(s) => &s.buf.as_ref().as_ref()[s.range.clone()],
        }
    }
}

/// A slice of an asynchronous write's buffer. Fields drop in order: the buffer reference goes
/// before the guard counts the block done, so when the count reaches zero no worker holds the
/// buffer and `WriteHandle::wait` can hand it back.
pub(super) struct SharedSlice {
    pub(super) buf: Arc<dyn AsRef<[u8]> + Send + Sync>,
    pub(super) range: Range<usize>,
    pub(super) _done: AsyncGuard,
}

pub(super) struct AsyncState {
    pub(super) remaining: Mutex<usize>,
    pub(super) cv: Condvar,
}

pub(super) struct AsyncGuard(pub(super) Arc<AsyncState>);

impl Drop for AsyncGuard {
    fn drop(&mut self) {
        let mut n = lock(&self.0.remaining);
        *n -= 1;
        if *n == 0 {
            self.0.cv.notify_all();
        }
    }
}

pub(super) struct Job {
    pub(super) raw_offset: u64,
    pub(super) data: BlockData,
    pub(super) hints: Vec<Hint>,
    /// The kind of data ([`classify`]): picks the controller that decides the block.
    pub(super) class: u8,
}

impl Job {
    /// Classified here, on the writing thread, so that the dispatch lock is not held for it.
    pub(super) fn new(raw_offset: u64, data: BlockData, hints: Vec<Hint>) -> Job {
        let class = classify(data.bytes());
        Job { raw_offset, data, hints, class }
    }
}

pub(super) struct Done {
    pub(super) seq: u64,
    pub(super) header: FrameHeader,
    /// The frame (`frame[..frame_len]`), or only its header when the payload is
    /// `raw_payload`. The buffer keeps the length of the longest frame it has held (see
    /// `FrameEncoder::encode_at`).
    pub(super) frame: Vec<u8>,
    pub(super) frame_len: usize,
    /// A block stored raw from a pool buffer: written after the header as it is, without a
    /// copy, and given back to the raw pool once written.
    pub(super) raw_payload: Option<Vec<u8>>,
    pub(super) measurement: BlockMeasurement,
    pub(super) class: u8,
}

pub(super) struct Dispatch {
    pub(super) queue: VecDeque<Job>,
    pub(super) controller: PipelineControl,
    pub(super) closed: bool,
}

pub(super) struct Shared {
    pub(super) dispatch: Mutex<Dispatch>,
    pub(super) work: Condvar,
    pub(super) failure: Mutex<Option<PipelineError>>,
    /// Dropped on failure, which wakes everything blocked on a pool.
    pub(super) abort_tx: Mutex<Option<Sender<()>>>,
    pub(super) abort_rx: Receiver<()>,
    pub(super) raw_in: AtomicU64,
    pub(super) raw_written: AtomicU64,
    pub(super) stored_written: AtomicU64,
    /// CPU time (ns) the pipeline's threads spent (the feeder cutting and reading blocks, the
    /// workers) that the sequencer has not reported yet: `SinkMeasurement::cpu` where the
    /// process's CPU clock, which also counts the application's computing, cannot be read.
    pub(super) cpu_ns: AtomicU64,
    /// Shadow measurements made, their CPU time and the blocks' own compression CPU time
    /// (ns), for the summary.
    pub(super) shadows: AtomicU64,
    pub(super) shadow_ns: AtomicU64,
    pub(super) block_ns: AtomicU64,
    /// Raw block buffers (see the `pipeline` module docs).
    pub(super) raw: Pool,
    /// Frame buffers.
    pub(super) frames: Pool,
}

/// Adds `spent` to the CPU time not reported yet.
pub(super) fn add_cpu(cpu_ns: &AtomicU64, spent: Duration) {
    cpu_ns.fetch_add(u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Adds the CPU time this thread spent since `*mark` to `cpu_ns` and moves the mark. Thread
/// CPU clocks are per thread, so a mark is only ever used on the thread that took it.
pub(super) fn count_cpu(cpu_ns: &AtomicU64, mark: &mut Option<cpu_time::ThreadTime>) {
    let Some(now) = cpu_time::ThreadTime::try_now().ok() else { return };
    if let Some(then) = mark.replace(now) {
        add_cpu(cpu_ns, now.as_duration().saturating_sub(then.as_duration()));
    }
}

impl Shared {
    /// The shared state of a new pipeline: `buffers` per pool, `room` more while mixing.
    pub(super) fn new(controller: PipelineControl, buffers: usize, room: usize) -> Shared {
        let (abort_tx, abort_rx) = bounded::<()>(0);
        Shared {
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
        }
    }

    /// Stop the pipeline for `why` (the first failure is the one reported).
    pub(super) fn fail(&self, why: impl Into<PipelineError>) {
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

    pub(super) fn check(&self) -> Result<()> {
        match &*lock(&self.failure) {
            Some(why) => Err(Error::Pipeline(why.clone())),
            None => Ok(()),
        }
    }

    /// Take a buffer from a pool, or fail if the pipeline has failed.
    pub(super) fn take(&self, pool: &Pool) -> Result<Vec<u8>> {
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

pub(super) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in another pipeline thread must not hide the original error behind a poison.
    m.lock().unwrap_or_else(|e| e.into_inner())
}
