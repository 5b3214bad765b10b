//! The reader, `cat`'s paths and the streaming scan under a memory cap (issue 24): a global
//! allocator counts live bytes and aborts past 256 MiB, and the inputs are the hostile kind
//! that sized memory by a file's claims: frames claiming up to 64 MiB of zeros each, footers
//! claiming huge indexes on sparse files of up to 2^50 bytes (a storage that reports a large
//! size and returns zeros where nothing is stored), and raw bytes. A read path whose memory
//! follows a claim rather than its options crashes here, as the old reader did on a sparse
//! file's index, on `copy_to` with 2 × threads runs of 64 MiB frames, and on a read sized by
//! the file's length.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Read};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use adz_core::format::{
    FileHeader, Filters, FrameHeader, TrailerBuilder, FOOTER_LEN, FOOTER_MAGIC, FRAME_HEADER_LEN,
    INDEX_ENTRY_LEN, INDEX_HEADER_LEN,
};
use adz_core::open::decompress_slice;
use adz_core::store::{self, MemoryStorage, ObjectMeta, Storage, Tail, Upload};
use adz_core::{
    decode_stream, recover_stream, verify_stream, FileInfo, FrameEncoder, Reader, ReaderOptions,
};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

/// Live Rust heap bytes above which the process aborts: the bound every read path must keep.
const CAP: usize = 256 << 20;

static LIVE: AtomicUsize = AtomicUsize::new(0);

struct Capped;

// SAFETY: forwards to the system allocator and only counts; past the cap it aborts the
// process (libFuzzer reports the crash and the input), never returns a bad pointer.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grow(l.size());
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        grow(l.size());
        System.alloc_zeroed(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            grow(new - l.size());
        } else {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        System.realloc(p, l, new)
    }
}

fn grow(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    if now > CAP {
        // No allocation here: write straight to stderr, then abort for libFuzzer to report.
        use std::io::Write;
        let _ = std::io::stderr().write_all(b"read_capped: more than 256 MiB of heap live at once: a read path sized its memory by the file's claims\n");
        std::process::abort();
    }
}

#[global_allocator]
static A: Capped = Capped;

/// One frame of 64 MiB of zeros, compressed once (its header at raw offset 0, its payload).
fn bomb_frame() -> &'static (FrameHeader, Vec<u8>) {
    static F: OnceLock<(FrameHeader, Vec<u8>)> = OnceLock::new();
    F.get_or_init(|| {
        let raw = vec![0u8; 64 << 20];
        let mut one = Vec::new();
        let h = FrameEncoder::new()
            .encode(&raw, 0, "zstd:1".parse().unwrap(), Filters::NONE, 1.0, &mut one)
            .unwrap();
        (h, one[FRAME_HEADER_LEN..].to_vec())
    })
}

#[derive(Arbitrary, Debug)]
enum Kind {
    /// A valid file of `8 - fewer % 9` frames that each claim 64 MiB of zeros (a few KB
    /// each). The empty input is this bomb of 8 frames, read whole.
    Bomb { fewer: u8, damage: Vec<(u16, u8)> },
    /// A sparse file of `size` bytes: a file header, zeros, and a footer with these fields
    /// (the index offset is made to fit the claim when `fit`).
    Sparse { size: u64, frame_count: u64, index_offset: u64, raw_size: u64, fit: bool },
    /// Any bytes.
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    kind: Kind,
    threads: u8,
    /// `max_in_flight_bytes` = this × 1 MiB (up to 128 MiB, below the cap).
    budget_mib: u8,
    cache: bool,
    /// (offset, length) reads the way `cat` and the bindings read: refused above
    /// `max_range_bytes`, else one buffer of that length.
    ranges: Vec<(u64, u32)>,
    /// Skip the whole-file reads (`copy_to`, streaming decode and verify).
    skip_copy: bool,
}

/// A file of `size` bytes, zeros except `head` and `tail` (what a sparse file reads as).
#[derive(Debug)]
struct Sparse {
    size: u64,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Sparse {
    fn bytes(&self, r: Range<u64>) -> store::Result<Vec<u8>> {
        // A real storage allocates what it is asked for: so does this one.
        let mut v = vec![0u8; (r.end - r.start) as usize];
        let head_end = (self.head.len() as u64).min(r.end);
        if r.start < head_end {
            v[..(head_end - r.start) as usize]
                .copy_from_slice(&self.head[r.start as usize..head_end as usize]);
        }
        let tail_start = self.size - self.tail.len() as u64;
        let from = tail_start.max(r.start);
        if from < r.end {
            v[(from - r.start) as usize..].copy_from_slice(
                &self.tail[(from - tail_start) as usize..(r.end - tail_start) as usize],
            );
        }
        Ok(v)
    }
}

impl Storage for Sparse {
    fn create(&self, name: &str) -> store::Result<Box<dyn Upload>> {
        let e = io::Error::new(io::ErrorKind::PermissionDenied, "read-only");
        Err(store::Error::Io { op: "create", name: name.to_owned(), source: e })
    }
    fn get_range(&self, name: &str, range: Range<u64>) -> store::Result<Vec<u8>> {
        store::Error::check_range(name, &range, self.size)?;
        self.bytes(range)
    }
    fn get_tail(&self, _name: &str, max_len: u64) -> store::Result<Tail> {
        let start = self.size.saturating_sub(max_len);
        Ok(Tail { object_size: self.size, bytes: self.bytes(start..self.size)? })
    }
    fn size(&self, _name: &str) -> store::Result<u64> {
        Ok(self.size)
    }
    fn delete(&self, _name: &str) -> store::Result<()> {
        Ok(())
    }
    fn list(&self, _prefix: &str) -> store::Result<Vec<ObjectMeta>> {
        Ok(Vec::new())
    }
}

fn header() -> Vec<u8> {
    FileHeader::new(64 << 20).unwrap().encode().to_vec()
}

fn bomb(fewer: u8, damage: &[(u16, u8)]) -> Vec<u8> {
    let (h, payload) = bomb_frame();
    let mut file = header();
    let mut t = TrailerBuilder::new();
    for k in 0..8 - u64::from(fewer % 9) {
        let h = FrameHeader { raw_offset: k * (64 << 20), ..*h };
        t.push(&h, file.len() as u64);
        file.extend_from_slice(&h.encode());
        file.extend_from_slice(payload);
    }
    let off = file.len() as u64;
    file.extend_from_slice(&t.encode(off));
    for &(pos, x) in damage.iter().take(4) {
        let n = file.len();
        file[pos as usize % n] ^= x;
    }
    file
}

fn sparse(size: u64, frame_count: u64, index_offset: u64, raw_size: u64, fit: bool) -> Sparse {
    let size = size % (1 << 50);
    let frame_count = frame_count % (1 << 44);
    let trailer = (INDEX_HEADER_LEN + FOOTER_LEN) as u64 + frame_count * INDEX_ENTRY_LEN as u64;
    let index_offset = if fit { size.saturating_sub(trailer) } else { index_offset };
    let mut tail = Vec::with_capacity(FOOTER_LEN);
    tail.extend_from_slice(&index_offset.to_le_bytes());
    tail.extend_from_slice(&frame_count.to_le_bytes());
    tail.extend_from_slice(&raw_size.to_le_bytes());
    tail.extend_from_slice(&0u64.to_le_bytes());
    tail.extend_from_slice(&FOOTER_MAGIC);
    let size = size.max((header().len() + tail.len()) as u64);
    Sparse { size, head: header(), tail }
}

/// Reads the way `adz cat -o O -n L` and the Python binding's `read`/`pread` do.
fn read_like_cat(r: &Reader, off: u64, len: u64) {
    let n = len.min(r.len().saturating_sub(off));
    if n > r.options().max_range_bytes {
        return;
    }
    let mut buf = vec![0u8; n as usize];
    let _ = r.read_at(off, &mut buf);
}

struct Sink;
impl io::Write for Sink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|inp: Input| {
    let _ = bomb_frame();
    let opts = ReaderOptions {
        threads: usize::from(inp.threads % 16) + 1,
        cache_bytes: if inp.cache { 64 << 20 } else { 0 },
        max_range_bytes: 32 << 20,
        max_in_flight_bytes: u64::from(inp.budget_mib % 129) << 20,
        ..ReaderOptions::default()
    };
    let (storage, bytes): (Arc<dyn Storage>, Option<Vec<u8>>) = match &inp.kind {
        Kind::Bomb { fewer, damage } => {
            let file = bomb(*fewer, damage);
            let s = MemoryStorage::new();
            s.put("f", &file).unwrap();
            (Arc::new(s), Some(file))
        }
        Kind::Sparse { size, frame_count, index_offset, raw_size, fit } => {
            (Arc::new(sparse(*size, *frame_count, *index_offset, *raw_size, *fit)), None)
        }
        Kind::Raw(b) => {
            let s = MemoryStorage::new();
            s.put("f", b).unwrap();
            (Arc::new(s), Some(b.clone()))
        }
    };

    if let Ok(r) = Reader::open(storage.clone(), "f", opts) {
        for &(off, len) in inp.ranges.iter().take(4) {
            read_like_cat(&r, off % r.len().saturating_add(1), u64::from(len));
        }
        if !inp.skip_copy {
            let _ = r.copy_to(Sink, 0);
        }
    }
    if let Kind::Sparse { .. } = inp.kind {
        // `inspect` of a seekable file reads the header, the footer and the index.
        let size = storage.size("f").unwrap();
        let mut pos = 0u64;
        struct At<'a>(&'a dyn Storage, u64, &'a mut u64);
        impl Read for At<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = (buf.len() as u64).min(self.1.saturating_sub(*self.2)).min(1 << 20);
                let b = self.0.get_range("f", *self.2..*self.2 + n).map_err(io::Error::other)?;
                buf[..b.len()].copy_from_slice(&b);
                *self.2 += n;
                Ok(n as usize)
            }
        }
        impl io::Seek for At<'_> {
            fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
                *self.2 = match to {
                    io::SeekFrom::Start(p) => p,
                    io::SeekFrom::End(d) => {
                        self.1.checked_add_signed(d).ok_or(io::ErrorKind::InvalidInput)?
                    }
                    io::SeekFrom::Current(d) => {
                        self.2.checked_add_signed(d).ok_or(io::ErrorKind::InvalidInput)?
                    }
                };
                Ok(*self.2)
            }
        }
        let _ = FileInfo::read_seekable(At(&*storage, size, &mut pos), false);
    }
    if let Some(file) = bytes {
        // The streaming paths: decompress of a pipe, verify, recover.
        if !inp.skip_copy {
            let _ = decode_stream(&file[..], Sink, |_| {});
            let _ = verify_stream(&file[..], |_| {});
        }
        let out = MemoryStorage::new();
        let _ = recover_stream(&file[..], out.create("r").unwrap());
        // What the Python binding's `decompress` does, with a limit below the cap.
        let _ = decompress_slice(&file, Some(64 << 20));
    }
});
