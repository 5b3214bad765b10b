//! Files built to hurt a reader (issue 24): footers that claim huge indexes on sparse files,
//! frames that claim far more than the file holds, lying index entries, dead files whose
//! rest is huge. Each is a clear error or the right answer, with bounded work and memory.

use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use adz_core::format::{
    xxh3, Error as FormatError, FileHeader, FOOTER_LEN, FOOTER_MAGIC, INDEX_ENTRY_LEN,
    INDEX_HEADER_LEN, MIN_FRAME_LEN,
};
use adz_core::store::{self, MemoryStorage, ObjectMeta, Storage, Tail, Upload};
use adz_core::{
    recover, recover_sized, verify_stream, Error, FileInfo, FrameWriter, FrameWriterOptions,
    Reader, ReaderOptions,
};

#[path = "shared/bomb.rs"]
mod bomb;
use bomb::zeros_bomb;

/// A file of `size` bytes, zeros except `head` at its start and `tail` at its end: what a
/// sparse file reads as. Refuses any single request above 64 MiB and any total above
/// `max_total` (a reader that would read the whole file fails the test instead of taking
/// minutes or gigabytes).
#[derive(Debug)]
struct Sparse {
    size: u64,
    head: Vec<u8>,
    tail: Vec<u8>,
    max_total: u64,
    fetched: AtomicU64,
    largest: AtomicU64,
}

impl Sparse {
    fn new(size: u64, head: Vec<u8>, tail: Vec<u8>) -> Sparse {
        Sparse {
            size,
            head,
            tail,
            max_total: 64 << 20,
            fetched: AtomicU64::new(0),
            largest: AtomicU64::new(0),
        }
    }

    fn bytes(&self, range: Range<u64>) -> Vec<u8> {
        let len = range.end - range.start;
        assert!(len <= 64 << 20, "a request for {len} bytes at once");
        let total = self.fetched.fetch_add(len, Ordering::Relaxed) + len;
        assert!(total <= self.max_total, "{total} bytes read from a {} byte file", self.size);
        self.largest.fetch_max(len, Ordering::Relaxed);
        let tail_start = self.size - self.tail.len() as u64;
        (range.start..range.end)
            .map(|p| {
                if p < self.head.len() as u64 {
                    self.head[p as usize]
                } else if p >= tail_start {
                    self.tail[(p - tail_start) as usize]
                } else {
                    0
                }
            })
            .collect()
    }
}

impl Storage for Sparse {
    fn create(&self, name: &str) -> store::Result<Box<dyn Upload>> {
        let e = io::Error::new(io::ErrorKind::PermissionDenied, "read-only");
        Err(store::Error::Io { op: "create", name: name.to_owned(), source: e })
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> store::Result<Vec<u8>> {
        store::Error::check_range(name, &range, self.size)?;
        Ok(self.bytes(range))
    }

    fn get_tail(&self, _name: &str, max_len: u64) -> store::Result<Tail> {
        let start = self.size.saturating_sub(max_len);
        Ok(Tail { object_size: self.size, bytes: self.bytes(start..self.size) })
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

/// `Read + Seek` over a [`Sparse`] file, counting what is read.
struct SparseFile<'a> {
    file: &'a Sparse,
    pos: u64,
}

impl Read for SparseFile<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.file.size - self.pos).min(1 << 20);
        let b = self.file.bytes(self.pos..self.pos + n);
        buf[..b.len()].copy_from_slice(&b);
        self.pos += n;
        Ok(n as usize)
    }
}

impl Seek for SparseFile<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = match to {
            SeekFrom::Start(p) => p,
            SeekFrom::End(d) => self.file.size.checked_add_signed(d).unwrap(),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d).unwrap(),
        };
        Ok(self.pos)
    }
}

/// A footer claiming `frames` frames and an index that ends the file of `size` bytes.
fn footer_claiming(size: u64, frames: u64, raw_size: u64) -> Vec<u8> {
    let trailer = (INDEX_HEADER_LEN + FOOTER_LEN) as u64 + frames * INDEX_ENTRY_LEN as u64;
    let mut f = Vec::new();
    f.extend_from_slice(&(size - trailer).to_le_bytes());
    f.extend_from_slice(&frames.to_le_bytes());
    f.extend_from_slice(&raw_size.to_le_bytes());
    f.extend_from_slice(&0u64.to_le_bytes());
    f.extend_from_slice(&FOOTER_MAGIC);
    f
}

fn header() -> Vec<u8> {
    FileHeader::new(1 << 20).unwrap().encode().to_vec()
}

/// The probe's file: 5 GB, 8 KiB on disk, a footer claiming 125 M frames. Reading its index
/// would take 5 GB; its footer alone is enough to refuse it.
#[test]
fn a_footer_claiming_more_frames_than_fit_is_refused_without_reading() {
    let size = 5_000_000_000u64;
    let frames = (size - 100) / INDEX_ENTRY_LEN as u64 - 2;
    let file = Arc::new(Sparse::new(size, header(), footer_claiming(size, frames, 1 << 40)));
    let err = Reader::open(file.clone(), "f", ReaderOptions::default()).unwrap_err();
    assert!(
        matches!(err, Error::Format(FormatError::BadField { field: "frame_count", .. })),
        "{err}"
    );
    assert!(file.fetched.load(Ordering::Relaxed) <= 65 << 10); // the tail and the header

    let err = FileInfo::read_seekable(SparseFile { file: &file, pos: 0 }, false).unwrap_err();
    assert!(
        matches!(err, Error::Format(FormatError::BadField { field: "frame_count", .. })),
        "{err}"
    );
}

/// A footer whose frame count does fit the file, over an index of zeros: the reader stops
/// at the first piece of the index instead of reading (and holding) all of it.
#[test]
fn an_index_of_zeros_fails_on_its_first_piece() {
    let frames = 2_000_000u64; // an 80 MB index
    let index_offset = 32 + frames * MIN_FRAME_LEN;
    let size = index_offset + (INDEX_HEADER_LEN + FOOTER_LEN) as u64 + frames * 40;
    let mut file = Sparse::new(size, header(), footer_claiming(size, frames, frames));
    file.max_total = 8 << 20;
    let file = Arc::new(file);
    let err = Reader::open(file.clone(), "f", ReaderOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Format(FormatError::BadMagic { .. })), "{err}");
    assert!(file.largest.load(Ordering::Relaxed) <= 4 << 20);
    assert!(file.fetched.load(Ordering::Relaxed) <= 5 << 20);

    file.fetched.store(0, Ordering::Relaxed);
    let err = FileInfo::read_seekable(SparseFile { file: &file, pos: 0 }, false).unwrap_err();
    assert!(matches!(err, Error::Format(FormatError::BadMagic { .. })), "{err}");
    assert!(file.fetched.load(Ordering::Relaxed) <= 2 << 20);
}

fn file_of(data: &[u8], block: u32) -> Vec<u8> {
    let opts = FrameWriterOptions { block_size: block, ..Default::default() };
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_data(data).unwrap();
    w.finish().unwrap().0
}

/// Large index files are read in pieces too, and still read right.
#[test]
fn a_large_index_is_read_in_pieces() {
    // 120 000 frames of 1 byte: an index of 4.8 MB, more than the tail and one piece.
    let data: Vec<u8> = (0..120_000u32).map(|i| (i % 251) as u8).collect();
    let file = file_of(&data, 1);
    let store = MemoryStorage::new();
    store.put("f", &file).unwrap();
    let r = Reader::open(Arc::new(store), "f", ReaderOptions::default()).unwrap();
    assert_eq!(r.index().entries().len(), 120_000);
    assert_eq!(r.stats().fetches, 1 + 2); // the tail, then 4 MiB and the rest
    assert_eq!(r.read_range(70_000, 5).unwrap(), &data[70_000..70_005]);
    let info = FileInfo::read_seekable(Cursor::new(&file), false).unwrap();
    assert_eq!(info.frames, 120_000);
}

/// Every read refuses a file that is not adz, even one that reads nothing (`cat -n 0`).
#[test]
fn an_empty_read_checks_the_file_header() {
    let data: Vec<u8> = (0..300_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let mut file = file_of(&data, 4096);
    assert!(file.len() > 64 << 10, "the header must not come with the tail");
    file[..4].copy_from_slice(b"GARB");
    let store = MemoryStorage::new();
    store.put("f", &file).unwrap();
    let r = Reader::open(Arc::new(store), "f", ReaderOptions::default()).unwrap();
    for (off, len) in [(0, 0), (10, 0), (u64::MAX / 2, 10), (r.len(), 100)] {
        let err = r.read_range(off, len).unwrap_err();
        assert!(matches!(err, Error::Format(FormatError::BadMagic { .. })), "{off}+{len}: {err}");
    }
    assert!(r.copy_to(Vec::new(), 1).is_err());
}

/// `verify` names the index entry that is wrong, not entry 0.
#[test]
fn verify_names_the_wrong_index_entry() {
    let data: Vec<u8> = (0..5 * 4096u32).map(|i| (i * 7 % 256) as u8).collect();
    let mut file = file_of(&data, 4096);
    let n = file.len();
    let index = n - FOOTER_LEN - 5 * INDEX_ENTRY_LEN - INDEX_HEADER_LEN;
    // Entry 3's raw checksum (its last 8 bytes), then the index checksum made right again.
    let at = index + INDEX_HEADER_LEN + 3 * INDEX_ENTRY_LEN + INDEX_ENTRY_LEN - 8;
    file[at] ^= 1;
    let sum = xxh3(&file[index..n - 16]);
    file[n - 16..n - 8].copy_from_slice(&sum.to_le_bytes());
    let report = verify_stream(&file[..], |_| {});
    assert_eq!(report.good_frames, 5);
    let p = &report.problems[0];
    assert!(
        matches!(p.error, Error::Format(FormatError::IndexMismatch { frame: 3, .. })),
        "{}",
        p.error
    );
    assert!(p.error.to_string().contains("index entry 3"), "{}", p.error);
}

/// `recover` of a huge dead file counts what it dropped from the length, without reading
/// the rest (the probe's 5 GB sparse file took 15 s).
#[test]
fn recover_does_not_read_the_rest_of_a_dead_file() {
    let size = 50_000_000_000u64; // 50 GB: reading it would trip the Sparse limit at once
    let file = Sparse::new(size, header(), vec![0xAB; 16]);
    let out = MemoryStorage::new();
    let report = recover(&file, "f", &out, "saved").unwrap();
    assert_eq!(report.frames_kept, 0);
    assert_eq!(report.input_bytes, size);
    assert_eq!(report.bytes_dropped, size - 32);
    assert!(file.fetched.load(Ordering::Relaxed) <= 8 << 20);

    // The same through the streaming entry point with a known length.
    struct Endless(u64);
    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0 += buf.len() as u64;
            assert!(self.0 <= 64 << 20, "read {} bytes of a dead file", self.0);
            buf.fill(0);
            Ok(buf.len())
        }
    }
    let mut head = header();
    head.extend_from_slice(&[0; 100]);
    let report =
        recover_sized(Cursor::new(head).chain(Endless(0)), size, out.create("s2").unwrap())
            .unwrap();
    assert_eq!(report.input_bytes, size);
    assert_eq!(report.bytes_dropped, size - 32);
}

/// However small the budget, one frame at a time still goes through, in order.
#[test]
fn copy_to_with_a_budget_below_one_frame_still_reads_everything() {
    let file = zeros_bomb(3);
    let store = MemoryStorage::new();
    store.put("f", &file).unwrap();
    for budget in [0, 1, 100 << 20, 1 << 40] {
        let opts = ReaderOptions { max_in_flight_bytes: budget, ..Default::default() };
        let r = Reader::open(Arc::new(store.clone()), "f", opts).unwrap();
        struct Zeros(u64);
        impl io::Write for Zeros {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                assert!(b.iter().all(|&x| x == 0));
                self.0 += b.len() as u64;
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut out = Zeros(0);
        assert_eq!(r.copy_to(&mut out, 8).unwrap(), 3 * (64 << 20));
        assert_eq!(out.0, 3 * (64 << 20));
    }
}

/// Absurd thread counts are refused before a thread is spawned.
#[test]
fn absurd_thread_counts_are_refused() {
    let store = MemoryStorage::new();
    store.put("f", &file_of(b"abc", 4096)).unwrap();
    let opts = ReaderOptions { threads: 100_000, ..Default::default() };
    let err = Reader::open(Arc::new(store.clone()), "f", opts).unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
    let r = Reader::open(Arc::new(store), "f", ReaderOptions::default()).unwrap();
    assert!(matches!(r.copy_to(Vec::new(), 100_000), Err(Error::Config(_))));
}
