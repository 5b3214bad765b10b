//! The [`Writer`]'s write calls: the application's bytes are cut into blocks (at the block
//! size and at hint ranges' borders) and queued for the workers, or held for the start's
//! prediction.

use std::io::Read;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

use adz_control::Hint;

use super::handle::WriteHandle;
use super::shared::{count_cpu, lock, AsyncGuard, AsyncState, BlockData, Job, SharedSlice};
use super::writer::Writer;
use crate::error::{Error, Result};

impl Writer {
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

    /// Sample a long first write where it lies (see
    /// [`Start::sample_first_write`](super::start::Start::sample_first_write)).
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

    pub(super) fn pending_len(&self) -> usize {
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
    pub(super) fn settle(&mut self, buf: Vec<u8>) -> Result<()> {
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

    pub(super) fn emit(&mut self, buf: Vec<u8>) {
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

    pub(super) fn push_jobs(&self, jobs: Vec<Job>) {
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
}
