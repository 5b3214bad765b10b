//! Opening a file: its trailer read in bounded pieces and checked, and the header check
//! every read makes first.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use adz_format::{FileHeader, Footer, Index, IndexParser, FILE_HEADER_LEN, FOOTER_LEN};
use adz_store::Storage;

use super::{Counters, FrameCache, Reader, ReaderOptions, INDEX_PIECE, TAIL_GUESS};
// The most decoding threads a reader accepts: as many as a writer's workers.
use crate::pipeline::MAX_THREADS;
use crate::{Error, Result};

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
            cache: Mutex::new(FrameCache::new(opts.cache_bytes)),
            decoders: Mutex::new(Vec::new()),
            counters,
        })
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

/// Refuse a thread count no machine needs before any thread is spawned (spawning 100 000
/// aborts the process).
pub(super) fn check_threads(threads: usize) -> Result<()> {
    if threads > MAX_THREADS {
        return Err(Error::Config(format!(
            "{threads} decoding threads is more than {MAX_THREADS}; 0 means one per core"
        )));
    }
    Ok(())
}

/// A storage that returned another number of bytes than asked for (a misbehaving backend).
pub(super) fn short_read(name: &str, got: usize, wanted: u64) -> Error {
    let e = io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("storage returned {got} bytes where {wanted} were asked for"),
    );
    Error::io(format!("reading {name}"), e)
}
