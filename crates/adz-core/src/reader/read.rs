//! The read paths: [`Reader::read_at`] and [`Reader::read_range`] in bounded batches, and the
//! frames they need taken from the cache or fetched (neighbours in one request) and decoded.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use adz_format::{FrameHeader, IndexEntry, FRAME_HEADER_LEN};

use super::open::short_read;
use super::{lock, FrameBytes, Frames, Reader, BATCH_RAW_BYTES};
use crate::{Error, FrameDecoder, Result};

impl Reader {
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
    /// [`ReaderOptions::max_range_bytes`](super::ReaderOptions::max_range_bytes) is refused
    /// before anything is allocated.
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

    /// The decoded frames `frames` (indexes into [`index`](Self::index)), one buffer each, in
    /// order: fetched and decoded in parallel as [`read_at`](Self::read_at) does, without
    /// copying them into one buffer (for a caller that keeps frames, e.g. in its own cache).
    /// The caller bounds the run: all of it is held at once. A frame stored raw is a slice of
    /// the bytes fetched for it (no copy), kept only where the slice is most of them.
    pub fn frames(&self, frames: Range<usize>) -> Result<Vec<FrameBytes>> {
        self.check_header()?;
        if frames.end > self.index.entries().len() || frames.start > frames.end {
            return Err(Error::Config(format!(
                "frames {frames:?} of {}",
                self.index.entries().len()
            )));
        }
        self.load(frames)
    }

    /// Bytes frame `i` holds while in flight: its decoded data and its fetched bytes.
    pub(super) fn cost(&self, i: usize) -> u64 {
        let e = &self.index.entries()[i];
        u64::from(e.raw_len) + (e.file_range().end - e.file_offset)
    }

    /// The end of the run of frames from `start` (below `limit`, at most `max_frames`) that one
    /// request of at most `coalesce_bytes` fetches; at least one frame.
    pub(super) fn run_end(&self, start: usize, limit: usize, max_frames: usize) -> usize {
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
        let mut out: Vec<Option<FrameBytes>> = Vec::with_capacity(frames.len());
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
                        cache.insert(i, data.clone());
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
    pub(super) fn fetch_decode(&self, run: Range<usize>) -> Result<Frames> {
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
        let bytes = Arc::new(bytes);
        let mut dec = lock(&self.decoders).pop().unwrap_or_default();
        let mut out = Vec::with_capacity(entries.len());
        for (i, e) in run.zip(entries) {
            let at = (e.file_offset - span.start) as usize;
            let len = (e.file_range().end - e.file_offset) as usize;
            // A raw frame that is most of the fetched bytes is served from them (checked in
            // place, not copied); the slice then holds at most twice what the cache counts.
            let data = if e.stored_raw() && 2 * u64::from(e.stored_len) >= bytes.len() as u64 {
                let payload = check_raw_frame(e, &bytes[at..at + len], i as u64)?;
                FrameBytes::slice(Arc::clone(&bytes), at + payload.start..at + payload.end)
            } else {
                FrameBytes::from(decode_frame(&mut dec, e, &bytes[at..at + len], i as u64)?)
            };
            out.push(data);
            self.counters.frames_decoded.fetch_add(1, Ordering::Relaxed);
            self.counters.bytes_decoded.fetch_add(u64::from(e.raw_len), Ordering::Relaxed);
        }
        lock(&self.decoders).push(dec);
        Ok(out)
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

/// Check a frame stored raw (`frame` holds its header and payload) described by index entry
/// `e` as [`decode_frame`] would; the range of `frame` that is its raw data.
fn check_raw_frame(e: &IndexEntry, frame: &[u8], i: u64) -> Result<Range<usize>> {
    let h = FrameHeader::parse(&frame[..FRAME_HEADER_LEN.min(frame.len())], i, e.file_offset)?;
    e.check_frame(&h, i)?;
    let payload = FRAME_HEADER_LEN..frame.len();
    crate::frame_codec::check_stored_raw(&h, &frame[payload.clone()], i, e.file_offset)?;
    Ok(payload)
}

/// Decode one frame (`frame` holds its header and payload) described by index entry `e`.
fn decode_frame(dec: &mut FrameDecoder, e: &IndexEntry, frame: &[u8], i: u64) -> Result<Vec<u8>> {
    let h = FrameHeader::parse(&frame[..FRAME_HEADER_LEN.min(frame.len())], i, e.file_offset)?;
    e.check_frame(&h, i)?;
    let mut out = vec![0; e.raw_len as usize];
    dec.decode(&h, &frame[FRAME_HEADER_LEN..], i, e.file_offset, &mut out)?;
    Ok(out)
}
