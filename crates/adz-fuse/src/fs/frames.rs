//! The decoded frames of the mount: one LRU shared by all files, the frames being decoded
//! (so that two reads never decode the same frame at once), and read-ahead for sequential
//! readers.
//!
//! Read-ahead: a handle whose reads follow each other gets one worker thread that decodes the
//! next frames, up to the window, a few at a time in parallel (through the `Reader`'s threads),
//! into the shared cache. Memory: the window is at most a quarter of the cache, at most
//! [`MAX_WORKERS`] workers run, and each holds at most `threads` frames outside the cache.
//!
//! "Follow each other" allows for reordering: the kernel has up to one request in flight per
//! FUSE thread, and the threads answer them in any order. A read that starts within
//! [`SLACK`], or within as many of its own lengths as there are FUSE threads, of where the
//! sequence's reads end, either side, continues it. (With 1 MiB requests and four threads, a
//! fixed 256 KiB slack took a reordered pair for a random reader and reset the read-ahead.)
//!
//! A dataset's parts are separate readers: where the window reaches past a part's end, the
//! first frames of the next part are read ahead too, and a read that then starts the next part
//! continues the sequence instead of starting a new one.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use adz_core::reader::{FrameBytes, FrameCache};

use super::{lock, OpenReader};

/// A frame of an opened version: (reader id, frame index).
type Key = (u64, usize);
/// Frames decoded, one buffer each.
type Decoded = adz_core::Result<Vec<FrameBytes>>;

/// A read that starts within this many bytes of where the handle's previous reads ended
/// continues the sequence (at least; see [`Frames::reach`]).
pub(super) const SLACK: u64 = 256 << 10;
/// Read-ahead workers running at once, for the whole mount.
pub(super) const MAX_WORKERS: usize = 4;
/// Idle frame buffers kept for reuse, for the whole mount (`adz_core::reader::frame_buffer`):
/// a frame evicted from the cache lends its buffer to the next frame fetched.
const RECYCLED_BYTES: u64 = 16 << 20;

/// What the read path has done ([`crate::MountStats`]).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) frames_decoded: AtomicU64,
    pub(crate) frames_read_ahead: AtomicU64,
    pub(crate) cache_hits: AtomicU64,
    pub(crate) bytes_streamed: AtomicU64,
    pub(crate) stream_fallbacks: AtomicU64,
}

/// The next part of a dataset, for a read-ahead that reaches past a part's end.
pub(super) type NextPart<'a> = &'a dyn Fn() -> Option<Arc<OpenReader>>;

/// Where a handle's reads stand, for read-ahead.
#[derive(Default)]
pub(super) struct Seq {
    /// The opened version these positions are in.
    reader: u64,
    /// That version's reader, for the read-ahead worker.
    current: Option<Arc<OpenReader>>,
    /// The furthest end of the sequence's reads.
    end: u64,
    /// Reads in a row that continued the sequence.
    streak: u32,
    /// The first frame no read-ahead has asked for; frames before `want` are to be read ahead.
    next: usize,
    want: usize,
    running: bool,
    /// The first frame of the sequence not yet released (see [`Frames::after_read`]).
    behind: usize,
    /// The next part of a dataset, where the window reaches past this one's end: its first
    /// frames up to `.1` are to be read ahead, those before `.2` have been asked for.
    following: Option<(Arc<OpenReader>, usize, usize)>,
}

pub(super) struct Frames {
    cache: Mutex<FrameCache<Key>>,
    pending: Mutex<HashSet<Key>>,
    /// Signalled when frames leave `pending`.
    done: Condvar,
    pub(super) counters: Arc<Counters>,
    workers: AtomicUsize,
    /// Raw bytes read ahead of a sequential reader (0: none).
    window: u64,
    /// Requests the kernel may have in flight at once (the FUSE threads).
    in_flight: u64,
}

impl Frames {
    pub(super) fn new(cache_bytes: u64, read_ahead: u64, in_flight: usize) -> Frames {
        adz_core::reader::recycle_frame_buffers(RECYCLED_BYTES);
        Frames {
            cache: Mutex::new(FrameCache::new(cache_bytes)),
            pending: Mutex::new(HashSet::new()),
            done: Condvar::new(),
            counters: Arc::default(),
            workers: AtomicUsize::new(0),
            window: read_ahead.min(cache_bytes / 4),
            in_flight: in_flight.max(1) as u64,
        }
    }

    /// How far from the sequence's end a read of `len` bytes may start and still continue
    /// it: the requests in flight with it, of its length, may be answered before it.
    fn reach(&self, len: u64) -> u64 {
        SLACK.max(len.saturating_mul(self.in_flight))
    }

    /// Frame `key` from the cache, after waiting for a decode of it under way.
    pub(super) fn get(&self, key: Key) -> Option<FrameBytes> {
        let mut p = lock(&self.pending);
        while p.contains(&key) {
            p = self.done.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        drop(p);
        let hit = lock(&self.cache).get(key);
        if hit.is_some() {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    /// Take on decoding `key`: false if it is cached or being decoded already.
    fn claim(&self, key: Key) -> bool {
        let mut p = lock(&self.pending);
        if p.contains(&key) || lock(&self.cache).contains(key) {
            return false;
        }
        p.insert(key)
    }

    /// Claim the frames from `start` (claimed already) on while they are free, up to `end`.
    fn claim_run(&self, id: u64, start: usize, end: usize) -> Range<usize> {
        let mut j = start + 1;
        while j < end && self.claim((id, j)) {
            j += 1;
        }
        start..j
    }

    /// End the decode of `run` (claimed): cache what was decoded, wake the waiting reads.
    fn publish(&self, id: u64, run: Range<usize>, data: Option<&[FrameBytes]>) {
        if let Some(data) = data {
            let mut c = lock(&self.cache);
            for (i, d) in run.clone().zip(data) {
                c.insert((id, i), d.clone());
            }
        }
        let mut p = lock(&self.pending);
        for i in run {
            p.remove(&(id, i));
        }
        self.done.notify_all();
    }

    /// The frames `range` of `r` (`range.start` claimed or free; stops at the first
    /// that another decode holds): decoded, cached, and returned with the range they cover.
    pub(super) fn decode(
        &self,
        r: &OpenReader,
        start: usize,
        end: usize,
    ) -> Option<(Range<usize>, Decoded)> {
        if !self.claim((r.id, start)) {
            return None;
        }
        let run = self.claim_run(r.id, start, end);
        let res = decode_run(r, run.clone());
        self.publish(r.id, run.clone(), res.as_ref().ok().map(|v| v.as_slice()));
        Some((run, res))
    }

    /// After a read of `off..end` (frames up to `frames_end`) through a handle: continue or
    /// reset its sequence, and start read-ahead if it is sequential. `next`: the part after
    /// `r` in a dataset.
    pub(super) fn after_read(
        self: &Arc<Frames>,
        r: &Arc<OpenReader>,
        seq: &Arc<Mutex<Seq>>,
        off: u64,
        end: u64,
        frames_end: usize,
        next: Option<NextPart<'_>>,
    ) {
        if self.window == 0 {
            return;
        }
        let mut s = lock(seq);
        let index = r.reader.index();
        let at = index.frames_for(off..off + 1).start;
        let reach = self.reach(end - off);
        if s.reader != r.id {
            match s.following.take() {
                // The sequence goes on into the part read ahead: keep its streak and what
                // was asked for.
                Some((p, want, next)) if p.id == r.id && off <= reach => {
                    *s = Seq {
                        reader: r.id,
                        current: Some(p),
                        streak: s.streak,
                        next,
                        want,
                        running: s.running,
                        ..Seq::default()
                    };
                }
                // A worker still running picks the new reader up (and stops: nothing wanted).
                _ => {
                    *s = Seq {
                        reader: r.id,
                        current: Some(Arc::clone(r)),
                        behind: at,
                        running: s.running,
                        ..Seq::default()
                    }
                }
            }
        }
        let sequential = off <= s.end.saturating_add(reach) && end.saturating_add(reach) >= s.end;
        if sequential {
            s.streak += 1;
            s.end = s.end.max(end);
        } else {
            s.streak = 0;
            s.end = end;
            s.next = 0;
            s.want = 0;
            s.behind = at;
            s.following = None;
        }
        if s.streak < 2 {
            return;
        }
        let entries = index.entries();
        // Drop-behind: raw frames the sequence has passed (by more than `reach`) leave the
        // cache, their buffers going to the next fetches. A raw frame costs a pread and one
        // checksum to fetch again; keeping it would fault a fresh buffer per frame until the
        // cache is full. Compressed frames stay cached.
        let passed = index.frames_for(off.saturating_sub(reach)..off + 1).start;
        if passed > s.behind {
            let mut c = lock(&self.cache);
            for (k, e) in entries.iter().enumerate().take(passed).skip(s.behind) {
                if e.stored_raw() {
                    c.remove((r.id, k));
                }
            }
            s.behind = passed;
        }
        let (mut want, mut bytes) = (frames_end, 0);
        while want < entries.len() && bytes + u64::from(entries[want].raw_len) <= self.window {
            bytes += u64::from(entries[want].raw_len);
            want += 1;
        }
        s.want = s.want.max(want);
        s.next = s.next.max(frames_end);
        if want == entries.len() && bytes < self.window {
            // The rest of the window goes to the next part's first frames.
            if s.following.is_none() {
                s.following = next.and_then(|f| f()).map(|p| (p, 0, 0));
            }
            if let Some((p, w, _)) = &mut s.following {
                let e = p.reader.index().entries();
                let mut k = 0;
                while k < e.len() && bytes + u64::from(e[k].raw_len) <= self.window {
                    bytes += u64::from(e[k].raw_len);
                    k += 1;
                }
                *w = (*w).max(k);
            }
        }
        let more = s.following.as_ref().is_some_and(|(_, w, n)| n < w);
        if s.running || (s.next >= s.want && !more) {
            return;
        }
        if self.workers.fetch_add(1, Ordering::AcqRel) >= MAX_WORKERS {
            self.workers.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        s.running = true;
        let (frames, seq) = (Arc::clone(self), Arc::clone(seq));
        let spawned = std::thread::Builder::new()
            .name("adz-read-ahead".to_owned())
            .spawn(move || frames.read_ahead(&seq));
        if spawned.is_err() {
            s.running = false;
            self.workers.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// A read-ahead worker: decode the frames the sequence wants, a few at a time, then those
    /// of the next part. A chunk is a run of `RUN_FRAMES` for each decoding thread, as
    /// `Reader::copy_to` fetches: the reader splits it into one request per thread, so an
    /// object store sees requests of several frames, not one per frame.
    fn read_ahead(&self, seq: &Mutex<Seq>) {
        loop {
            let (r, from, to) = {
                let mut s = lock(seq);
                let s = &mut *s;
                let chunk = |r: &OpenReader| {
                    let threads = match r.reader.options().threads {
                        0 => std::thread::available_parallelism().map_or(2, |n| n.get()).max(2),
                        n => n.max(2),
                    };
                    threads * adz_core::reader::RUN_FRAMES
                };
                match (&s.current, &mut s.following) {
                    (Some(r), _) if s.next < s.want => {
                        let from = s.next;
                        s.next = (from + chunk(r)).min(s.want);
                        (Arc::clone(r), from, s.next)
                    }
                    (_, Some((p, want, next))) if *next < *want => {
                        let from = *next;
                        *next = (from + chunk(p)).min(*want);
                        (Arc::clone(p), from, *next)
                    }
                    _ => {
                        s.running = false;
                        break;
                    }
                }
            };
            let mut k = from;
            while k < to {
                // A damaged frame is left to the read that needs it, which reports it.
                match self.decode(&r, k, to) {
                    Some((run, res)) => {
                        if res.is_ok() {
                            self.counters
                                .frames_read_ahead
                                .fetch_add(run.len() as u64, Ordering::Relaxed);
                        }
                        k = run.end;
                    }
                    None => k += 1,
                }
            }
        }
        self.workers.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Decode the frames `run` of `r` (in parallel through the reader's threads), one buffer each.
fn decode_run(r: &OpenReader, run: Range<usize>) -> Decoded {
    r.reader.frames(run)
}

#[cfg(test)]
mod tests {
    use super::super::read::FdStorage;
    use super::*;
    use adz_core::{FrameWriter, FrameWriterOptions, Reader, ReaderOptions};

    /// An opened adz file of `raw` in 64 KiB frames (`codec`), read through `FdStorage`.
    fn opened(raw: &[u8], codec: &str, id: u64) -> (tempfile::NamedTempFile, Arc<OpenReader>) {
        let opts = FrameWriterOptions {
            block_size: 64 << 10,
            codec: codec.parse().unwrap(),
            ..Default::default()
        };
        let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
        w.write_data(raw).unwrap();
        let tmp = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tmp.path(), w.finish().unwrap().0).unwrap();
        let file = std::fs::File::open(tmp.path()).unwrap();
        let opts = ReaderOptions { cache_bytes: 0, threads: 1, ..Default::default() };
        let reader = Reader::open(Arc::new(FdStorage { file }), "f", opts).unwrap();
        (tmp, Arc::new(OpenReader { reader: Arc::new(reader), id, ident: (0, 0, 0, 0, 0) }))
    }

    /// Read all of `r` in order, 128 KiB at a time, as `read_frames` does; then which frames
    /// are still cached.
    fn read_in_order(frames: &Arc<Frames>, r: &Arc<OpenReader>) -> Vec<bool> {
        let seq = Arc::new(Mutex::new(Seq::default()));
        let len = r.reader.len();
        let mut off = 0;
        while off < len {
            let end = (off + (128 << 10)).min(len);
            let need = r.reader.index().frames_for(off..end);
            for i in need.clone() {
                if frames.get((r.id, i)).is_none() {
                    frames.decode(r, i, i + 1).unwrap().1.unwrap();
                }
            }
            frames.after_read(r, &seq, off, end, need.end, None);
            off = end;
        }
        (0..r.reader.index().entries().len())
            .map(|i| lock(&frames.cache).contains((r.id, i)))
            .collect()
    }

    /// The streak of a handle whose 512 KiB reads are answered in the order `order` (in
    /// requests), through a mount of `in_flight` FUSE threads.
    fn streak_of(order: &[u64], in_flight: usize) -> u32 {
        let text: Vec<u8> = b"delta epsilon ".iter().copied().cycle().take(8 << 20).collect();
        let (_t, r) = opened(&text, "zstd:1", 3);
        let frames = Arc::new(Frames::new(256 << 20, 1 << 20, in_flight));
        let seq = Arc::new(Mutex::new(Seq::default()));
        for &k in order {
            let (off, end) = (k * (512 << 10), (k + 1) * (512 << 10));
            let need = r.reader.index().frames_for(off..end);
            frames.after_read(&r, &seq, off, end, need.end, None);
        }
        let streak = lock(&seq).streak;
        // Let a read-ahead worker finish before the file goes.
        while frames.workers.load(Ordering::Acquire) > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        streak
    }

    #[test]
    fn reads_answered_out_of_order_still_continue_the_sequence() {
        // Four FUSE threads: a request may be answered three requests early or late.
        let order = [0, 3, 1, 2, 4, 7, 5, 6];
        assert_eq!(streak_of(&order, 4), 8);
        // One thread answers in order: the same reads are a random reader's.
        assert!(streak_of(&order, 1) < 4);
        assert_eq!(streak_of(&[0, 1, 2, 3, 4, 5, 6, 7], 1), 8);
    }

    #[test]
    fn a_sequential_reader_releases_the_raw_frames_it_passed_and_keeps_compressed_ones() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..64 << 10 << 4)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let frames = Arc::new(Frames::new(256 << 20, 0, 4));
        // No read-ahead (window 0): nothing is released either.
        let (_t, raw) = opened(&noise, "zstd:3", 1);
        assert!(raw.reader.index().entries().iter().all(|e| e.stored_raw()));
        assert!(read_in_order(&frames, &raw).iter().all(|&c| c));

        let frames = Arc::new(Frames::new(256 << 20, 128 << 10, 4));
        let cached = read_in_order(&frames, &raw);
        // The frames more than `reach` (4 x 128 KiB) behind the last read (128 KiB) are
        // gone; those stay.
        let (n, kept) =
            (cached.len(), ((frames.reach(128 << 10) + (128 << 10)) / (64 << 10)) as usize);
        assert!(cached[..n - kept].iter().all(|&c| !c), "{cached:?}");
        assert!(cached[n - kept..].iter().all(|&c| c), "{cached:?}");

        let text: Vec<u8> =
            b"alpha beta gamma ".iter().copied().cycle().take(noise.len()).collect();
        let (_t2, packed) = opened(&text, "zstd:3", 2);
        assert!(packed.reader.index().entries().iter().all(|e| !e.stored_raw()));
        assert!(read_in_order(&frames, &packed).iter().all(|&c| c));
    }
}
