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
//! checksum before the codec sees it, its raw checksum after (a frame stored raw: one pass,
//! both checksums, and its payload handed out as a [`FrameBytes`] slice of the fetched bytes,
//! not copied). A mismatch is an error naming
//! the frame; a reader never returns wrong bytes. A frame whose bytes the storage cannot fetch
//! (a server error, a broken connection) is [`Error::FrameFetch`](crate::Error::FrameFetch),
//! naming that frame; when a request for several neighbouring frames fails, each is fetched
//! alone, so only the frames whose own fetch fails are lost and reads of other frames are
//! untouched.

mod bytes;
mod cache;
mod copy;
mod cursor;
mod open;
mod read;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use adz_format::Index;
use adz_store::Storage;
use serde::Serialize;

pub use self::bytes::{frame_buffer, recycle_frame_buffers, FrameBytes};
pub use self::cache::FrameCache;
pub use self::copy::RUN_FRAMES;
pub use self::cursor::ReaderCursor;
use crate::FrameDecoder;

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

/// Decoded frames, shared with the cache.
type Frames = Vec<FrameBytes>;

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

    /// A `Read + Seek` view of the raw data, starting at offset 0. Takes `&Reader` or
    /// `Arc<Reader>`, so many cursors can share one reader (and its cache).
    pub fn cursor(&self) -> ReaderCursor<&Reader> {
        ReaderCursor::new(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Reader>();
        check::<ReaderCursor<Arc<Reader>>>();
    }
}
