//! The [`Writer`]: cuts the application's bytes into blocks, queues them for the workers (or
//! holds the first ones for the start's prediction), and starts and stops the pipeline's
//! threads.

use std::io::Read;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use adz_control::{ControllerConfig, Hint, Status, Strategy};
use adz_format::FileHeader;
use adz_store::{Storage, Upload};
use crossbeam::channel::{unbounded, Sender};

use super::handle::WriteHandle;
use super::options::WriteOptions;
use super::sequencer::{sequencer, Sequenced};
use super::shared::{
    count_cpu, lock, new_control, AsyncGuard, AsyncState, BlockData, Done, Job, Shared, SharedSlice,
};
use super::start::Start;
use super::trace::{Observer, TraceSink, TraceThread};
use super::worker::worker;
use crate::error::{Error, PipelineError, Result};
use crate::predict::{Prediction, Sample, SampleConfig};
use crate::summary::WriteSummary;

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
    /// The predicted start.
    start: Start,
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
        let start = Start::new(&opts, threads, buffers, cpus, keep);
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
    fn run_prediction(&mut self) {
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

    /// Sample a long first write where it lies (see [`Start::sample_first_write`]).
    fn predict_from_write(&mut self, data: &[u8]) {
        let pending = self.pending.is_some();
        let held = self.start.sample_first_write(data, self.block_size, pending, &self.shared);
        self.push_jobs(held);
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
    /// start. A pool buffer keeps the length of its last block, all of it initialised, so it
    /// is not zeroed again (`docs/decisions/0025-no-per-block-overhead-on-the-data-path.md`).
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
        self.run_prediction();
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
        Ok(WriteHandle::new(data, state, Arc::clone(&self.shared)))
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
        self.run_prediction();
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
            link_interval: settled_interval(&status),
            sink_seconds: s.sink_busy.as_secs_f64(),
            strategy: self.strategy.to_string(),
            predict_bytes: self.start.predict_bytes(),
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
            self.run_prediction();
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
        let jobs = self.start.admit(jobs, &self.shared);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::static_opts;

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
}
