//! Random access to an adz file in any [`Storage`]: the trailer index says which frames hold
//! a range, and only those are fetched and decoded (in parallel when there are several),
//! through an LRU cache of decoded frames.
//!
//! ```
//! use std::sync::Arc;
//! use adz_core::{FrameWriter, Reader, ReaderOptions, FrameWriterOptions};
//! use adz_core::store::{MemoryStorage, Storage};
//!
//! let data: Vec<u8> = (0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
//! let opts = FrameWriterOptions { block_size: 64 << 10, ..Default::default() };
//! let mut w = FrameWriter::new(Vec::new(), opts)?;
//! w.write_data(&data)?;
//! let store = MemoryStorage::new();
//! store.put("d.adz", &w.finish()?.0)?;
//!
//! let reader = Reader::open(Arc::new(store), "d.adz", ReaderOptions::default())?;
//! assert_eq!(reader.len(), data.len() as u64);
//! assert_eq!(reader.read_range(300_000, 10)?, &data[300_000..300_010]);
//! // One frame of 64 KiB was decoded for those 10 bytes.
//! assert_eq!(reader.stats().frames_decoded, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every frame is checked as it is decoded: its header against the index entry, its payload
//! checksum before the codec sees it, its raw checksum after. A mismatch is an error naming
//! the frame; a reader never returns wrong bytes. A frame whose bytes the storage cannot fetch
//! (a server error, a broken connection) is [`Error::FrameFetch`], naming that frame; when a
//! request for several neighbouring frames fails, each is fetched alone, so only the frames
//! whose own fetch fails are lost and reads of other frames are untouched.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::{Deref, Range};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use adz_format::{
    FileHeader, Footer, FrameHeader, Index, IndexEntry, IndexParser, FILE_HEADER_LEN, FOOTER_LEN,
    FRAME_HEADER_LEN,
};
use adz_store::Storage;
use serde::Serialize;

use crate::{Error, FrameDecoder, Result};

/// How much of a file's end [`Reader::open`] asks for first: the footer and, for files of up
/// to about 1600 frames (1.6 GiB at the default block size), the whole index, in one request.
pub const TAIL_GUESS: u64 = 64 << 10;

/// The largest piece of an index [`Reader::open`] reads at once (beyond the tail).
const INDEX_PIECE: u64 = 4 << 20;

/// Default size of the cache of decoded frames.
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

/// Default largest single storage request when neighbouring frames are fetched together.
pub const DEFAULT_COALESCE_BYTES: u64 = 8 << 20;

/// Default largest [`Reader::read_range`] (it allocates what it returns).
pub const DEFAULT_MAX_RANGE_BYTES: u64 = 1 << 30;

/// Default bound on the bytes one read holds at once, decoded or fetched and not yet handed
/// over ([`ReaderOptions::max_in_flight_bytes`]).
pub const DEFAULT_MAX_IN_FLIGHT_BYTES: u64 = 256 << 20;

/// Raw bytes one [`Reader::read_at`] decodes at once before it copies them out (at most, and
/// at least one frame): bounds its memory whatever the length asked for.
const BATCH_RAW_BYTES: u64 = 32 << 20;

// The most decoding threads a reader accepts: as many as a writer's workers.
use crate::pipeline::MAX_THREADS;

/// Frames in one run of [`Reader::copy_to`] at most, so a thread's share of work stays small.
const RUN_FRAMES: usize = 4;

/// Decoded frames, shared with the cache.
type Frames = Vec<Arc<Vec<u8>>>;

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

/// How a [`Reader`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderOptions {
    /// Bytes of decoded frames kept for later reads (least recently used first out). 0
    /// disables the cache. A frame larger than the cache is not cached.
    pub cache_bytes: u64,
    /// Threads that decode the frames of one large read; 0 = one per core.
    pub threads: usize,
    /// Neighbouring frames are fetched in one storage request of at most this many bytes (a
    /// single larger frame is fetched alone).
    pub coalesce_bytes: u64,
    /// The largest [`Reader::read_range`]; larger reads go through
    /// [`read_at`](Reader::read_at) or [`copy_to`](Reader::copy_to).
    pub max_range_bytes: u64,
    /// Bytes one call ([`copy_to`](Reader::copy_to), [`read_at`](Reader::read_at)) holds at
    /// once: decoded frames not yet written out plus the compressed bytes fetched for them.
    /// At least one frame is always let through (a frame may hold 64 MiB), so the bound is
    /// `max(max_in_flight_bytes, one frame)` per call, whatever the threads or the file
    /// claims (docs/READING.md, "Memory").
    pub max_in_flight_bytes: u64,
}

impl Default for ReaderOptions {
    fn default() -> ReaderOptions {
        ReaderOptions {
            cache_bytes: DEFAULT_CACHE_BYTES,
            threads: 0,
            coalesce_bytes: DEFAULT_COALESCE_BYTES,
            max_range_bytes: DEFAULT_MAX_RANGE_BYTES,
            max_in_flight_bytes: DEFAULT_MAX_IN_FLIGHT_BYTES,
        }
    }
}

/// What a [`Reader`] has done so far (all readers of it together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReadStats {
    /// Frames decoded (each checked).
    pub frames_decoded: u64,
    /// Raw bytes those frames held.
    pub bytes_decoded: u64,
    /// Frames served from the cache without decoding.
    pub cache_hits: u64,
    /// Storage requests (the trailer reads at open included).
    pub fetches: u64,
    /// Bytes read from storage.
    pub bytes_fetched: u64,
}

#[derive(Debug, Default)]
struct Counters {
    frames_decoded: AtomicU64,
    bytes_decoded: AtomicU64,
    cache_hits: AtomicU64,
    fetches: AtomicU64,
    bytes_fetched: AtomicU64,
}

/// An LRU of decoded frames, bounded in bytes.
#[derive(Debug, Default)]
struct FrameCache {
    capacity: u64,
    used: u64,
    tick: u64,
    frames: HashMap<usize, (Arc<Vec<u8>>, u64)>,
    order: BTreeMap<u64, usize>,
}

impl FrameCache {
    fn get(&mut self, frame: usize) -> Option<Arc<Vec<u8>>> {
        let (data, t) = self.frames.get_mut(&frame)?;
        self.order.remove(t);
        self.tick += 1;
        *t = self.tick;
        self.order.insert(self.tick, frame);
        Some(Arc::clone(data))
    }

    fn insert(&mut self, frame: usize, data: Arc<Vec<u8>>) {
        let len = data.len() as u64;
        if len > self.capacity || self.frames.contains_key(&frame) {
            return;
        }
        while self.used + len > self.capacity {
            let Some((_, old)) = self.order.pop_first() else { break };
            if let Some((d, _)) = self.frames.remove(&old) {
                self.used -= d.len() as u64;
            }
        }
        self.tick += 1;
        self.order.insert(self.tick, frame);
        self.frames.insert(frame, (data, self.tick));
        self.used += len;
    }
}

/// A random-access reader of one adz file. `Send + Sync`: share it (`&Reader`, `Arc<Reader>`)
/// between threads; each read is independent.
pub struct Reader {
    storage: Arc<dyn Storage>,
    name: String,
    index: Index,
    file_len: u64,
    header_checked: AtomicBool,
    threads: usize,
    opts: ReaderOptions,
    cache: Mutex<FrameCache>,
    decoders: Mutex<Vec<FrameDecoder>>,
    counters: Counters,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("name", &self.name)
            .field("frames", &self.index.entries().len())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Reader {
    /// Open `name` in `storage`: read its trailer (one request for the file's tail and, if the
    /// index is larger than [`TAIL_GUESS`], one more per 4 MiB of the rest) and check it.
    /// Nothing is allocated from a length before it is checked: the footer's frame count is
    /// bounded by the bytes before the index, and the index is read in bounded pieces, each
    /// checked before the next is asked for.
    pub fn open(storage: Arc<dyn Storage>, name: &str, opts: ReaderOptions) -> Result<Reader> {
        check_threads(opts.threads)?;
        let counters = Counters::default();
        let tail = storage.get_tail(name, TAIL_GUESS)?;
        counters.fetches.fetch_add(1, Ordering::Relaxed);
        counters.bytes_fetched.fetch_add(tail.bytes.len() as u64, Ordering::Relaxed);
        let file_len = tail.object_size;
        if tail.bytes.len() as u64 != file_len.min(TAIL_GUESS) {
            return Err(short_read(name, tail.bytes.len(), file_len.min(TAIL_GUESS)));
        }
        let tail_offset = tail.offset();
        let footer = match Footer::parse(&tail.bytes, file_len) {
            Ok(f) => f,
            Err(e) => {
                // Say "not an adz file" rather than "no trailer" when the start is not adz
                // either (one more small request, on this error path only).
                let head_len = (FILE_HEADER_LEN as u64).min(file_len);
                let head = if tail_offset == 0 {
                    tail.bytes[..head_len as usize].to_vec()
                } else {
                    storage.get_range(name, 0..head_len)?
                };
                FileHeader::parse(&head)?;
                return Err(e.into());
            }
        };
        let mut header_checked = false;
        if tail_offset == 0 {
            // A small file: the header came with the tail.
            FileHeader::parse(&tail.bytes[..FILE_HEADER_LEN.min(tail.bytes.len())])?;
            header_checked = true;
        }
        let index = if footer.index_offset >= tail_offset {
            let start = (footer.index_offset - tail_offset) as usize;
            Index::parse(&tail.bytes[start..], &footer)?
        } else {
            // A large index: read the part the tail missed in pieces of INDEX_PIECE, each
            // checked as it comes, so a footer that lies about its index (a sparse file, say)
            // costs one piece, and memory is one piece plus the entries checked so far.
            let mut parser = IndexParser::new(&footer);
            let mut at = footer.index_offset;
            while at < tail_offset {
                let end = tail_offset.min(at + INDEX_PIECE);
                let piece = storage.get_range(name, at..end)?;
                counters.fetches.fetch_add(1, Ordering::Relaxed);
                counters.bytes_fetched.fetch_add(piece.len() as u64, Ordering::Relaxed);
                if piece.len() as u64 != end - at {
                    return Err(short_read(name, piece.len(), end - at));
                }
                parser.feed(&piece)?;
                at = end;
            }
            parser.feed(&tail.bytes)?;
            parser.finish()?
        };
        debug_assert!(tail.bytes.len() >= FOOTER_LEN);
        let threads = if opts.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            opts.threads
        };
        Ok(Reader {
            storage,
            name: name.to_owned(),
            index,
            file_len,
            header_checked: AtomicBool::new(header_checked),
            threads,
            opts,
            cache: Mutex::new(FrameCache { capacity: opts.cache_bytes, ..Default::default() }),
            decoders: Mutex::new(Vec::new()),
            counters,
        })
    }

    /// Raw (decompressed) length of the file.
    pub fn len(&self) -> u64 {
        self.index.raw_size()
    }

    /// True if the file holds no raw bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The checked index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Size of the adz file in storage.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The options it was opened with.
    pub fn options(&self) -> &ReaderOptions {
        &self.opts
    }

    /// The object name this reader reads.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Counts so far.
    pub fn stats(&self) -> ReadStats {
        let c = &self.counters;
        ReadStats {
            frames_decoded: c.frames_decoded.load(Ordering::Relaxed),
            bytes_decoded: c.bytes_decoded.load(Ordering::Relaxed),
            cache_hits: c.cache_hits.load(Ordering::Relaxed),
            fetches: c.fetches.load(Ordering::Relaxed),
            bytes_fetched: c.bytes_fetched.load(Ordering::Relaxed),
        }
    }

    /// Read raw bytes from `offset` into `buf`; returns how many were read: `buf.len()`, or
    /// fewer only at the end of the file (0 at or past it).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        // Even a read of nothing fails on a file that is not adz.
        self.check_header()?;
        let end = offset.saturating_add(buf.len() as u64).min(self.len());
        if offset >= end {
            return Ok(0);
        }
        let frames = self.index.frames_for(offset..end);
        let limit = BATCH_RAW_BYTES.min(self.opts.max_in_flight_bytes);
        let mut first = frames.start;
        while first < frames.end {
            // Batches bound the memory of one call: at most `limit` bytes decoded and fetched
            // at once (or one frame, if it alone is larger).
            let mut last = first + 1;
            let mut held = self.cost(first);
            while last < frames.end && held + self.cost(last) <= limit {
                held += self.cost(last);
                last += 1;
            }
            let decoded = self.load(first..last)?;
            for (i, data) in (first..last).zip(decoded) {
                let e = &self.index.entries()[i];
                let from = offset.max(e.raw_offset);
                let to = end.min(e.raw_range().end);
                let src = &data[(from - e.raw_offset) as usize..(to - e.raw_offset) as usize];
                let dst = (from - offset) as usize;
                buf[dst..dst + src.len()].copy_from_slice(src);
            }
            first = last;
        }
        Ok((end - offset) as usize)
    }

    /// Read up to `len` raw bytes from `offset` (fewer at the end of the file). `len` above
    /// [`ReaderOptions::max_range_bytes`] is refused before anything is allocated.
    pub fn read_range(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        if len > self.opts.max_range_bytes {
            return Err(Error::RangeTooLarge { offset, len, limit: self.opts.max_range_bytes });
        }
        let n = len.min(self.len().saturating_sub(offset)) as usize;
        let mut out = vec![0; n];
        let got = self.read_at(offset, &mut out)?;
        out.truncate(got);
        Ok(out)
    }

    /// A `Read + Seek` view of the raw data, starting at offset 0. Takes `&Reader` or
    /// `Arc<Reader>`, so many cursors can share one reader (and its cache).
    pub fn cursor(&self) -> ReaderCursor<&Reader> {
        ReaderCursor::new(self)
    }

    /// Decode the whole file to `out`, in order, with `threads` decoding threads (0 = the
    /// reader's setting). Memory stays bounded: workers run at most `2 × threads` runs of
    /// frames ahead of the writer, and the runs fetched or decoded and not yet written hold at
    /// most [`ReaderOptions::max_in_flight_bytes`] (or one run, if it alone is larger), however
    /// large the frames claim to be. Bypasses the cache, which a whole file would only flush.
    /// Returns the raw bytes written.
    pub fn copy_to<W: Write>(&self, mut out: W, threads: usize) -> Result<u64> {
        check_threads(threads)?;
        let threads = if threads == 0 { self.threads } else { threads };
        self.check_header()?;
        let jobs = self.jobs();
        if jobs.is_empty() {
            out.flush().map_err(|e| Error::io("flushing the output", e))?;
            return Ok(0);
        }
        let window = 2 * threads;
        let budget = self.opts.max_in_flight_bytes;
        let cost = |j: usize| jobs[j].clone().map(|i| self.cost(i)).sum::<u64>();
        let next_job = AtomicUsize::new(0);
        let progress = Mutex::new(Flight::default());
        let moved = Condvar::new();
        let (tx, rx) = crossbeam::channel::unbounded::<(usize, Result<Frames>)>();
        let mut written = 0u64;
        let result = std::thread::scope(|s| {
            for _ in 0..threads.min(jobs.len()) {
                let tx = tx.clone();
                let (jobs, next_job, progress, moved) = (&jobs, &next_job, &progress, &moved);
                s.spawn(move || loop {
                    let j = next_job.fetch_add(1, Ordering::Relaxed);
                    if j >= jobs.len() {
                        return;
                    }
                    {
                        // Runs take their bytes in order, so the run the writer waits for
                        // never waits for bytes that later runs hold.
                        let need = cost(j);
                        let mut p = lock(progress);
                        while !p.failed
                            && (p.reserved != j
                                || j >= p.written + window
                                || (p.held > 0 && p.held + need > budget))
                        {
                            p = moved.wait(p).unwrap_or_else(|e| e.into_inner());
                        }
                        if p.failed {
                            return;
                        }
                        p.reserved += 1;
                        p.held += need;
                        moved.notify_all();
                    }
                    let r = self.fetch_decode(jobs[j].clone());
                    let failed = r.is_err();
                    if tx.send((j, r)).is_err() || failed {
                        return;
                    }
                });
            }
            drop(tx);
            let stop = |p: &Mutex<Flight>| {
                lock(p).failed = true;
                moved.notify_all();
            };
            let mut waiting = BTreeMap::new();
            let mut next = 0usize;
            while next < jobs.len() {
                let Ok((j, r)) = rx.recv() else {
                    stop(&progress);
                    return Err(Error::Config("a decoding thread stopped early".to_owned()));
                };
                waiting.insert(j, r);
                while let Some(r) = waiting.remove(&next) {
                    let frames = match r {
                        Ok(f) => f,
                        Err(e) => {
                            stop(&progress);
                            return Err(e);
                        }
                    };
                    for (i, data) in jobs[next].clone().zip(frames) {
                        if let Err(e) = out.write_all(&data) {
                            stop(&progress);
                            return Err(Error::io(format!("writing decoded frame {i}"), e));
                        }
                        written += data.len() as u64;
                    }
                    let done = cost(next);
                    next += 1;
                    let mut p = lock(&progress);
                    p.written = next;
                    p.held -= done;
                    drop(p);
                    moved.notify_all();
                }
            }
            Ok(())
        });
        result?;
        out.flush().map_err(|e| Error::io("flushing the output", e))?;
        Ok(written)
    }

    /// Bytes frame `i` holds while in flight: its decoded data and its fetched bytes.
    fn cost(&self, i: usize) -> u64 {
        let e = &self.index.entries()[i];
        u64::from(e.raw_len) + (e.file_range().end - e.file_offset)
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

    /// The end of the run of frames from `start` (below `limit`, at most `max_frames`) that one
    /// request of at most `coalesce_bytes` fetches; at least one frame.
    fn run_end(&self, start: usize, limit: usize, max_frames: usize) -> usize {
        let entries = self.index.entries();
        let first = entries[start].file_offset;
        let mut end = start + 1;
        while end < limit
            && end - start < max_frames
            && entries[end].file_range().end - first <= self.opts.coalesce_bytes
        {
            end += 1;
        }
        end
    }

    /// The decoded frames `frames` (cached or decoded now, in parallel if several), in order.
    fn load(&self, frames: Range<usize>) -> Result<Frames> {
        let mut out: Vec<Option<Arc<Vec<u8>>>> = Vec::with_capacity(frames.len());
        let mut missing: Vec<Range<usize>> = Vec::new();
        {
            let mut cache = lock(&self.cache);
            for i in frames.clone() {
                let hit = if self.opts.cache_bytes > 0 { cache.get(i) } else { None };
                if hit.is_some() {
                    self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                } else {
                    match missing.last_mut() {
                        Some(r) if r.end == i && self.run_end(r.start, i + 1, usize::MAX) > i => {
                            r.end = i + 1
                        }
                        _ => missing.push(i..i + 1),
                    }
                }
                out.push(hit);
            }
        }
        if !missing.is_empty() {
            // Enough pieces for every thread: a run fetched in one request would otherwise be
            // decoded by one thread.
            let total: usize = missing.iter().map(|r| r.len()).sum();
            let per = total.div_ceil(self.threads.max(1)).max(1);
            let missing: Vec<Range<usize>> = missing
                .into_iter()
                .flat_map(|r| (r.start..r.end).step_by(per).map(move |s| s..(s + per).min(r.end)))
                .collect();
            let decoded: Vec<Result<Frames>> =
                if missing.len() == 1 && missing[0].len() == 1 || self.threads == 1 {
                    missing.iter().map(|r| self.fetch_decode(r.clone())).collect()
                } else {
                    self.parallel(&missing)
                };
            for (r, d) in missing.iter().zip(decoded) {
                let d = d?;
                let mut cache = lock(&self.cache);
                for (i, data) in r.clone().zip(d) {
                    if self.opts.cache_bytes > 0 {
                        cache.insert(i, Arc::clone(&data));
                    }
                    out[i - frames.start] = Some(data);
                }
            }
        }
        Ok(out.into_iter().map(|d| d.expect("every frame was loaded")).collect())
    }

    /// Fetch and decode each run on up to `threads` threads.
    fn parallel(&self, runs: &[Range<usize>]) -> Vec<Result<Frames>> {
        let next = AtomicUsize::new(0);
        let results: Vec<Mutex<Option<Result<Frames>>>> =
            runs.iter().map(|_| Mutex::new(None)).collect();
        std::thread::scope(|s| {
            for _ in 0..self.threads.min(runs.len()) {
                s.spawn(|| loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    if j >= runs.len() {
                        return;
                    }
                    *lock(&results[j]) = Some(self.fetch_decode(runs[j].clone()));
                });
            }
        });
        results
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or_else(|| Err(Error::Config("a decoding thread failed".to_owned())))
            })
            .collect()
    }

    /// Fetch frames `run` (neighbours: one request) and decode each, checking everything.
    fn fetch_decode(&self, run: Range<usize>) -> Result<Frames> {
        self.check_header()?;
        let entries = &self.index.entries()[run.clone()];
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            return Ok(Vec::new());
        };
        let span = first.file_offset..last.file_range().end;
        let bytes = match self.storage.get_range(&self.name, span.clone()) {
            Ok(b) => b,
            Err(e) if about_the_object(&e) => return Err(e.into()),
            Err(source) if run.len() == 1 => {
                let (frame, offset, len) = (run.start as u64, span.start, span.end - span.start);
                return Err(Error::FrameFetch { frame, offset, len, source });
            }
            Err(_) => {
                // One request for several frames failed. The damage may be in one of them only
                // (an object store that finds one block of its copy damaged fails every range
                // that touches it): fetch them one by one, in order, so that the error names
                // the frame whose fetch fails, and a failure that went away costs nothing.
                let mut out = Vec::with_capacity(run.len());
                for i in run {
                    out.extend(self.fetch_decode(i..i + 1)?);
                }
                return Ok(out);
            }
        };
        self.counters.fetches.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_fetched.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if bytes.len() as u64 != span.end - span.start {
            return Err(short_read(&self.name, bytes.len(), span.end - span.start));
        }
        let mut dec = lock(&self.decoders).pop().unwrap_or_default();
        let mut out = Vec::with_capacity(entries.len());
        for (i, e) in run.zip(entries) {
            let at = (e.file_offset - span.start) as usize;
            let frame = &bytes[at..at + (e.file_range().end - e.file_offset) as usize];
            out.push(Arc::new(decode_frame(&mut dec, e, frame, i as u64)?));
            self.counters.frames_decoded.fetch_add(1, Ordering::Relaxed);
            self.counters.bytes_decoded.fetch_add(u64::from(e.raw_len), Ordering::Relaxed);
        }
        lock(&self.decoders).push(dec);
        Ok(out)
    }

    /// Check the file header (once: later calls cost nothing). Every read does this before it
    /// returns, even a read of nothing; `open` spends no request on it when the header was
    /// not in the tail it read.
    pub fn check_header(&self) -> Result<()> {
        if self.header_checked.load(Ordering::Acquire) {
            return Ok(());
        }
        let len = (FILE_HEADER_LEN as u64).min(self.file_len);
        let b = self.storage.get_range(&self.name, 0..len)?;
        self.counters.fetches.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_fetched.fetch_add(b.len() as u64, Ordering::Relaxed);
        if b.len() as u64 != len {
            return Err(short_read(&self.name, b.len(), len));
        }
        FileHeader::parse(&b)?;
        self.header_checked.store(true, Ordering::Release);
        Ok(())
    }
}

/// Whether a storage error is about the whole object (it is missing, the bucket is, the
/// credentials are refused, the object is shorter than its index says) rather than about the
/// bytes of one range: then no frame is to blame and no other frame would read either.
fn about_the_object(e: &adz_store::Error) -> bool {
    use adz_store::{Error as E, RemoteKind as K};
    match e {
        E::NotFound { .. }
        | E::InvalidName { .. }
        | E::InvalidRange { .. }
        | E::OutOfRange { .. }
        | E::AlreadyExists { .. } => true,
        E::Remote { kind, .. } => {
            matches!(kind, K::NoSuchBucket | K::Unauthenticated | K::PermissionDenied)
        }
        E::RetriesExhausted { last, .. } => about_the_object(last),
        _ => false,
    }
}

/// Refuse a thread count no machine needs before any thread is spawned (spawning 100 000
/// aborts the process).
fn check_threads(threads: usize) -> Result<()> {
    if threads > MAX_THREADS {
        return Err(Error::Config(format!(
            "{threads} decoding threads is more than {MAX_THREADS}; 0 means one per core"
        )));
    }
    Ok(())
}

/// A storage that returned another number of bytes than asked for (a misbehaving backend).
fn short_read(name: &str, got: usize, wanted: u64) -> Error {
    let e = io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("storage returned {got} bytes where {wanted} were asked for"),
    );
    Error::io(format!("reading {name}"), e)
}

/// Decode one frame (`frame` holds its header and payload) described by index entry `e`.
fn decode_frame(dec: &mut FrameDecoder, e: &IndexEntry, frame: &[u8], i: u64) -> Result<Vec<u8>> {
    let h = FrameHeader::parse(&frame[..FRAME_HEADER_LEN.min(frame.len())], i, e.file_offset)?;
    e.check_frame(&h, i)?;
    let mut out = vec![0; e.raw_len as usize];
    dec.decode(&h, &frame[FRAME_HEADER_LEN..], i, e.file_offset, &mut out)?;
    Ok(out)
}

/// `Read + Seek` over a [`Reader`] (borrowed or shared). Each cursor has its own position;
/// the reader and its cache are shared.
#[derive(Debug)]
pub struct ReaderCursor<R> {
    reader: R,
    pos: u64,
}

impl<R: Deref<Target = Reader>> ReaderCursor<R> {
    /// A cursor at offset 0.
    pub fn new(reader: R) -> ReaderCursor<R> {
        ReaderCursor { reader, pos: 0 }
    }

    /// The current offset.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

impl<R: Deref<Target = Reader>> Read for ReaderCursor<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.reader.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Deref<Target = Reader>> Seek for ReaderCursor<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.reader.len().checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match target {
            Some(p) => {
                self.pos = p;
                Ok(p)
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek to a negative or overflowing position",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_evicts_least_recently_used() {
        let mut c = FrameCache { capacity: 30, ..Default::default() };
        c.insert(0, Arc::new(vec![0; 10]));
        c.insert(1, Arc::new(vec![1; 10]));
        c.insert(2, Arc::new(vec![2; 10]));
        assert!(c.get(0).is_some()); // 1 is now the oldest
        c.insert(3, Arc::new(vec![3; 10]));
        assert!(c.get(1).is_none());
        assert!(c.get(0).is_some() && c.get(2).is_some() && c.get(3).is_some());
        assert_eq!(c.used, 30);
        c.insert(4, Arc::new(vec![4; 31])); // larger than the cache: not kept
        assert!(c.get(4).is_none());
        assert_eq!(c.used, 30);
    }

    #[test]
    fn reader_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Reader>();
        check::<ReaderCursor<Arc<Reader>>>();
    }
}
