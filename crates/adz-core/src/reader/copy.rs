//! [`Reader::copy_to`]: the whole file decoded in order by several threads, its memory
//! bounded by a window of runs and a byte budget.

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use super::open::check_threads;
use super::{lock, Frames, Reader};
use crate::{Error, Result};

/// Frames in one run of [`Reader::copy_to`] at most, so a thread's share of work stays small;
/// a reader that fetches ahead in its own runs (the mount's read-ahead) uses it too.
pub const RUN_FRAMES: usize = 4;

/// What [`Reader::copy_to`]'s workers and writer share.
#[derive(Debug, Default)]
struct Flight {
    /// Runs written out so far.
    written: usize,
    /// Runs that have taken their bytes (in order).
    reserved: usize,
    /// Bytes the reserved and unwritten runs hold.
    held: u64,
    /// A failure stops everyone.
    failed: bool,
}

/// One [`Reader::copy_to`]: its runs, its bounds, and the [`Flight`] its threads share.
struct Copy {
    /// Runs of frames, in file order.
    jobs: Vec<Range<usize>>,
    /// Bytes each run holds while in flight.
    costs: Vec<u64>,
    /// How many runs the workers may be ahead of the writer.
    window: usize,
    /// Bytes the runs in flight may hold (at least one run).
    budget: u64,
    /// The next run a worker takes.
    next_job: AtomicUsize,
    progress: Mutex<Flight>,
    moved: Condvar,
}

/// A decoded run on its way to the writer: `(run, frames)`.
type Done = (usize, Result<Frames>);

impl Copy {
    /// Wait until run `j` may take its bytes, and take them. Runs take their bytes in order,
    /// so the run the writer waits for never waits for bytes that later runs hold. False:
    /// the copy failed.
    fn reserve(&self, j: usize) -> bool {
        let need = self.costs[j];
        let mut p = lock(&self.progress);
        while !p.failed
            && (p.reserved != j
                || j >= p.written + self.window
                || (p.held > 0 && p.held + need > self.budget))
        {
            p = self.moved.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        if p.failed {
            return false;
        }
        p.reserved += 1;
        p.held += need;
        self.moved.notify_all();
        true
    }

    /// Runs before `next` are written: their bytes are free.
    fn release(&self, next: usize) {
        let mut p = lock(&self.progress);
        p.written = next;
        p.held -= self.costs[next - 1];
        drop(p);
        self.moved.notify_all();
    }

    /// Stop every worker.
    fn stop(&self) {
        lock(&self.progress).failed = true;
        self.moved.notify_all();
    }
}

impl Reader {
    /// Decode the whole file to `out`, in order, with `threads` decoding threads (0 = the
    /// reader's setting). Memory stays bounded: workers run at most `2 × threads` runs of
    /// frames ahead of the writer, and the runs fetched or decoded and not yet written hold at
    /// most [`ReaderOptions::max_in_flight_bytes`] (or one run, if it alone is larger), however
    /// large the frames claim to be. Bypasses the cache, which a whole file would only flush.
    /// Returns the raw bytes written.
    ///
    /// [`ReaderOptions::max_in_flight_bytes`]: super::ReaderOptions::max_in_flight_bytes
    pub fn copy_to<W: Write>(&self, mut out: W, threads: usize) -> Result<u64> {
        check_threads(threads)?;
        let threads = if threads == 0 { self.threads } else { threads };
        self.check_header()?;
        let jobs = self.jobs();
        if jobs.is_empty() {
            out.flush().map_err(|e| Error::io("flushing the output", e))?;
            return Ok(0);
        }
        let costs = jobs.iter().map(|r| r.clone().map(|i| self.cost(i)).sum::<u64>()).collect();
        let copy = Copy {
            jobs,
            costs,
            window: 2 * threads,
            budget: self.opts.max_in_flight_bytes,
            next_job: AtomicUsize::new(0),
            progress: Mutex::new(Flight::default()),
            moved: Condvar::new(),
        };
        let (tx, rx) = crossbeam::channel::unbounded::<Done>();
        let written = std::thread::scope(|s| {
            for _ in 0..threads.min(copy.jobs.len()) {
                let tx = tx.clone();
                let copy = &copy;
                s.spawn(move || self.copy_worker(copy, tx));
            }
            drop(tx);
            self.copy_out(&copy, rx, &mut out)
        })?;
        out.flush().map_err(|e| Error::io("flushing the output", e))?;
        Ok(written)
    }

    /// A worker of [`copy_to`](Reader::copy_to): takes the next run, waits for room, fetches
    /// and decodes it, and hands it to the writer; stops at the end or at a failure.
    fn copy_worker(&self, copy: &Copy, tx: crossbeam::channel::Sender<Done>) {
        loop {
            let j = copy.next_job.fetch_add(1, Ordering::Relaxed);
            if j >= copy.jobs.len() || !copy.reserve(j) {
                return;
            }
            let r = self.fetch_decode(copy.jobs[j].clone());
            let failed = r.is_err();
            if tx.send((j, r)).is_err() || failed {
                return;
            }
        }
    }

    /// The writer of [`copy_to`](Reader::copy_to): the decoded runs written to `out` in order,
    /// each freeing its bytes once written. The raw bytes written.
    fn copy_out<W: Write>(
        &self,
        copy: &Copy,
        rx: crossbeam::channel::Receiver<Done>,
        out: &mut W,
    ) -> Result<u64> {
        let mut written = 0u64;
        let mut waiting = BTreeMap::new();
        let mut next = 0usize;
        while next < copy.jobs.len() {
            let Ok((j, r)) = rx.recv() else {
                copy.stop();
                return Err(Error::Config("a decoding thread stopped early".to_owned()));
            };
            waiting.insert(j, r);
            while let Some(r) = waiting.remove(&next) {
                match r.and_then(|frames| write_run(out, copy.jobs[next].clone(), frames)) {
                    Ok(n) => written += n,
                    Err(e) => {
                        copy.stop();
                        return Err(e);
                    }
                }
                next += 1;
                copy.release(next);
            }
        }
        Ok(written)
    }

    /// Runs of neighbouring frames, each fetched in one request of at most `coalesce_bytes`,
    /// of at most [`RUN_FRAMES`] frames and, with several frames, at most a quarter of
    /// `max_in_flight_bytes` (so that several runs fit in the budget).
    fn jobs(&self) -> Vec<Range<usize>> {
        let entries = self.index.entries();
        let quarter = self.opts.max_in_flight_bytes / 4;
        let mut jobs = Vec::new();
        let mut start = 0;
        while start < entries.len() {
            let mut end = self.run_end(start, entries.len(), RUN_FRAMES);
            let mut held = self.cost(start);
            for i in start + 1..end {
                held += self.cost(i);
                if held > quarter {
                    end = i;
                    break;
                }
            }
            jobs.push(start..end);
            start = end;
        }
        jobs
    }
}

/// Write the decoded frames of run `frames` to `out`; the bytes written.
fn write_run<W: Write>(out: &mut W, frames: Range<usize>, decoded: Frames) -> Result<u64> {
    let mut written = 0u64;
    for (i, data) in frames.zip(decoded) {
        out.write_all(&data).map_err(|e| Error::io(format!("writing decoded frame {i}"), e))?;
        written += data.len() as u64;
    }
    Ok(written)
}
