//! The random-access reader: exact bytes for any range, only the frames a range needs, the
//! cache, every kind of damage an error (never a panic, never wrong bytes), many threads.

use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use adz_core::control::Link;
use adz_core::format::{xxh3, Error as FormatError, FOOTER_LEN, FRAME_HEADER_LEN};
use adz_core::store::{MemoryStorage, Storage};
use adz_core::{
    Error, FrameWriter, FrameWriterOptions, ReadStats, Reader, ReaderOptions, WriteOptions, Writer,
};
use adz_datagen::{generate, Kind};
use proptest::prelude::*;

fn mixed(len: usize, seed: u64) -> Vec<u8> {
    let mut d = generate(Kind::Text, len / 3, seed);
    d.extend(generate(Kind::Random, len / 3, seed));
    d.extend(generate(Kind::Doubles, len - d.len(), seed));
    d
}

fn file_of(data: &[u8], block: u32, codec: &str) -> Vec<u8> {
    let opts = FrameWriterOptions {
        block_size: block,
        codec: codec.parse().unwrap(),
        ..Default::default()
    };
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_data(data).unwrap();
    w.finish().unwrap().0
}

fn store_with(file: &[u8]) -> MemoryStorage {
    let store = MemoryStorage::new();
    store.put("f.adz", file).unwrap();
    store
}

fn open(store: &MemoryStorage, opts: ReaderOptions) -> Result<Reader, Error> {
    Reader::open(Arc::new(store.clone()), "f.adz", opts)
}

fn no_cache() -> ReaderOptions {
    ReaderOptions { cache_bytes: 0, ..Default::default() }
}

fn delta(a: ReadStats, b: ReadStats) -> (u64, u64) {
    (b.frames_decoded - a.frames_decoded, b.bytes_decoded - a.bytes_decoded)
}

#[test]
fn ranges_across_frame_ends_and_at_the_end_of_file() {
    let data = mixed(10_500, 1);
    let store = store_with(&file_of(&data, 1000, "zstd:3"));
    let r = open(&store, ReaderOptions::default()).unwrap();
    assert_eq!(r.len(), 10_500);
    for (off, len) in [
        (0, 1),
        (0, 1000),
        (999, 2),
        (1000, 1000),
        (995, 2010),
        (0, 10_500),
        (10_499, 1),
        (4321, 5000),
    ] {
        assert_eq!(r.read_range(off, len).unwrap(), &data[off as usize..(off + len) as usize]);
    }
    // At and past the end: short or empty, not an error.
    assert_eq!(r.read_range(10_490, 100).unwrap(), &data[10_490..]);
    assert!(r.read_range(10_500, 10).unwrap().is_empty());
    assert!(r.read_range(u64::MAX - 3, 10).unwrap().is_empty());
    let mut buf = [7u8; 16];
    assert_eq!(r.read_at(20_000, &mut buf).unwrap(), 0);
    assert_eq!(r.read_at(10_495, &mut buf).unwrap(), 5);
    assert_eq!(&buf[..5], &data[10_495..]);
    assert_eq!(r.read_at(5, &mut []).unwrap(), 0);
}

#[test]
fn frames_returns_each_decoded_frame_of_a_run_and_refuses_a_bad_run() {
    let data = mixed(10_500, 3);
    let store = store_with(&file_of(&data, 1000, "zstd:3"));
    let r = open(&store, no_cache()).unwrap();
    let n = r.index().entries().len();
    assert_eq!(n, 11);
    let got = r.frames(2..5).unwrap();
    assert_eq!(got.len(), 3);
    for (k, f) in got.iter().enumerate() {
        let at = (2 + k) * 1000;
        assert_eq!(f.as_slice(), &data[at..at + 1000], "frame {}", 2 + k);
    }
    // The last frame is short; an empty run is empty; a run past the index is an error.
    assert_eq!(r.frames(n - 1..n).unwrap()[0].as_slice(), &data[10_000..]);
    assert!(r.frames(4..4).unwrap().is_empty());
    assert!(r.frames(9..n + 1).is_err());
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = 5..3;
    assert!(r.frames(backwards).is_err());
}

#[test]
fn empty_file() {
    let store = store_with(&file_of(b"", 1000, "zstd:3"));
    let r = open(&store, ReaderOptions::default()).unwrap();
    assert!(r.is_empty());
    assert!(r.read_range(0, 10).unwrap().is_empty());
    let mut out = Vec::new();
    assert_eq!(r.copy_to(&mut out, 2).unwrap(), 0);
    assert!(out.is_empty());
}

#[test]
fn a_small_read_decodes_one_frame_or_two_across_a_frame_end() {
    let block = 64 << 10;
    let data = mixed(40 * block as usize + 123, 2);
    let store = store_with(&file_of(&data, block, "zstd:3"));
    let r = open(&store, no_cache()).unwrap();
    let mut rng = 12345u64;
    for _ in 0..300 {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let off = (rng >> 11) % (data.len() as u64 - 4096);
        let before = r.stats();
        let got = r.read_range(off, 4096).unwrap();
        assert_eq!(got, &data[off as usize..off as usize + 4096]);
        let (frames, bytes) = delta(before, r.stats());
        let crosses = off / u64::from(block) != (off + 4095) / u64::from(block);
        assert_eq!(frames, 1 + u64::from(crosses), "read at {off}");
        assert!(bytes <= frames * u64::from(block));
    }
}

#[test]
fn repeated_and_neighbouring_reads_come_from_the_cache() {
    let data = mixed(200_000, 3);
    let store = store_with(&file_of(&data, 16 << 10, "lz4:1"));
    let r = open(&store, ReaderOptions::default()).unwrap();
    assert_eq!(r.read_range(50_000, 100).unwrap(), &data[50_000..50_100]);
    let s1 = r.stats();
    assert_eq!((s1.frames_decoded, s1.cache_hits), (1, 0));
    // Same bytes, and bytes next to them in the same frame: no decoding.
    assert_eq!(r.read_range(50_000, 100).unwrap(), &data[50_000..50_100]);
    assert_eq!(r.read_range(50_100, 300).unwrap(), &data[50_100..50_400]);
    let s2 = r.stats();
    assert_eq!(s2.frames_decoded, 1);
    assert_eq!(s2.cache_hits, 2);
    assert_eq!(s2.fetches, s1.fetches, "nothing fetched for cached frames");

    // The cache off: every read decodes.
    let r = open(&store, no_cache()).unwrap();
    for _ in 0..3 {
        assert_eq!(r.read_range(50_000, 100).unwrap(), &data[50_000..50_100]);
    }
    assert_eq!((r.stats().frames_decoded, r.stats().cache_hits), (3, 0));

    // A cache of two frames: reading three frames round-robin always misses.
    let small = ReaderOptions { cache_bytes: 2 * (16 << 10), ..Default::default() };
    let r = open(&store, small).unwrap();
    for round in 0..3 {
        for f in 0..3u64 {
            let off = f * (16 << 10);
            assert_eq!(r.read_range(off, 10).unwrap(), &data[off as usize..off as usize + 10]);
        }
        assert_eq!(r.stats().frames_decoded, 3 * (round + 1));
    }
}

#[test]
fn neighbouring_frames_are_fetched_in_one_request() {
    let data = mixed(300_000, 4);
    let store = store_with(&file_of(&data, 10_000, "zstd:1"));
    let r = open(&store, ReaderOptions { threads: 1, ..Default::default() }).unwrap();
    assert_eq!(r.stats().fetches, 1, "opened with one request");
    assert_eq!(r.read_range(0, 1).unwrap(), &data[..1]);
    let before = r.stats();
    assert_eq!(r.read_range(15_000, 50_000).unwrap(), &data[15_000..65_000]);
    let s = r.stats();
    // Frames 1..=6, fetched in one request.
    assert_eq!(s.frames_decoded - before.frames_decoded, 6);
    assert_eq!(s.fetches - before.fetches, 1);
}

#[test]
fn opening_a_large_index_takes_at_most_two_requests() {
    // 3000 frames: an index of 120 KB, more than the first tail read.
    let data = mixed(3000 * 64, 5);
    let store = store_with(&file_of(&data, 64, "none"));
    let r = open(&store, ReaderOptions::default()).unwrap();
    assert_eq!(r.index().entries().len(), 3000);
    assert_eq!(r.stats().fetches, 2);
    assert_eq!(r.read_range(64 * 1500 + 10, 100).unwrap(), &data[64 * 1500 + 10..64 * 1500 + 110]);
}

#[test]
fn copy_to_streams_the_whole_file_in_order_on_any_number_of_threads() {
    let data = mixed(1_000_000, 6);
    let store = store_with(&file_of(&data, 8 << 10, "zstd:3"));
    for threads in [1, 2, 3, 8] {
        let r = open(&store, ReaderOptions::default()).unwrap();
        let mut out = Vec::new();
        assert_eq!(r.copy_to(&mut out, threads).unwrap(), data.len() as u64);
        assert!(out == data, "threads {threads}");
        assert_eq!(r.stats().frames_decoded, r.index().entries().len() as u64);
    }
}

#[test]
fn cursor_reads_and_seeks() {
    let data = mixed(100_000, 7);
    let store = store_with(&file_of(&data, 4096, "lz4:1"));
    let r = Arc::new(open(&store, ReaderOptions::default()).unwrap());
    let mut c = adz_core::ReaderCursor::new(Arc::clone(&r));
    let mut all = Vec::new();
    c.read_to_end(&mut all).unwrap();
    assert!(all == data);
    c.seek(SeekFrom::Start(4000)).unwrap();
    let mut b = [0u8; 200];
    c.read_exact(&mut b).unwrap();
    assert_eq!(&b[..], &data[4000..4200]);
    assert_eq!(c.seek(SeekFrom::Current(-100)).unwrap(), 4100);
    assert_eq!(c.seek(SeekFrom::End(-10)).unwrap(), data.len() as u64 - 10);
    let mut rest = Vec::new();
    r.cursor().seek(SeekFrom::End(-10)).unwrap();
    c.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, &data[data.len() - 10..]);
    assert!(c.seek(SeekFrom::Current(-(data.len() as i64) - 1)).is_err());
}

#[test]
fn a_damaged_frame_is_an_error_naming_it_and_other_frames_still_read() {
    let data = mixed(50_000, 8);
    let file = file_of(&data, 4096, "zstd:3");
    let good = open(&store_with(&file), ReaderOptions::default()).unwrap();
    let e3 = good.index().entries()[3];
    for (what, at) in [
        ("payload", e3.file_offset as usize + FRAME_HEADER_LEN + 5),
        ("header", e3.file_offset as usize + 50),
    ] {
        let mut bad = file.clone();
        bad[at] ^= 0x10;
        let store = store_with(&bad);
        for opts in [ReaderOptions::default(), no_cache()] {
            let r = open(&store, opts).unwrap();
            let err = r.read_range(3 * 4096 + 100, 10).unwrap_err();
            assert!(err.to_string().contains("frame 3"), "{what}: {err}");
            // A read spanning the frame fails as a whole; reads elsewhere succeed.
            assert!(r.read_range(0, 20_000).is_err());
            assert_eq!(r.read_range(100, 10).unwrap(), &data[100..110]);
            assert_eq!(r.read_range(5 * 4096, 10).unwrap(), &data[5 * 4096..5 * 4096 + 10]);
            let err = r.copy_to(std::io::sink(), 2).unwrap_err();
            assert!(err.to_string().contains("frame 3"), "{what}: {err}");
        }
    }
    // The payload flip is a payload checksum error with the frame number.
    let mut bad = file.clone();
    bad[e3.file_offset as usize + FRAME_HEADER_LEN + 5] ^= 0x10;
    let err = open(&store_with(&bad), no_cache()).unwrap().read_range(3 * 4096, 1).unwrap_err();
    assert_eq!(err.frame(), Some(3));
}

#[test]
fn a_raw_frame_is_served_from_its_fetched_bytes_and_damage_is_still_an_error() {
    let data = generate(Kind::Random, 40_000, 9);
    let file = file_of(&data, 4096, "zstd:3");
    // One thread: a run is fetched in one request, not split among threads.
    let r = open(&store_with(&file), ReaderOptions { threads: 1, ..no_cache() }).unwrap();
    let entries = r.index().entries().to_vec();
    assert!(entries.iter().all(|e| e.stored_raw()), "random data is stored raw");
    // A raw frame fetched alone is a slice of its fetched bytes, with the right bytes.
    let one = r.frames(3..4).unwrap();
    assert!(one[0].is_shared_slice());
    assert_eq!(one[0].as_slice(), &data[3 * 4096..4 * 4096]);
    // Fetched with neighbours it is copied out (a slice would hold the others' bytes too).
    let run = r.frames(2..6).unwrap();
    for (k, f) in run.iter().enumerate() {
        assert!(!f.is_shared_slice());
        assert_eq!(f.as_slice(), &data[(2 + k) * 4096..(3 + k) * 4096], "frame {}", 2 + k);
    }
    assert_eq!(r.read_range(0, data.len() as u64).unwrap(), data);
    let cached = open(&store_with(&file), ReaderOptions::default()).unwrap();
    assert_eq!(cached.read_range(3 * 4096 + 5, 100).unwrap(), &data[3 * 4096 + 5..3 * 4096 + 105]);
    assert_eq!(cached.frames(3..4).unwrap()[0].as_slice(), &data[3 * 4096..4 * 4096]);

    // Damage in a raw frame's payload, at its first and last byte and in its header: an error
    // naming the frame, alone and in a run, cached or not; the other frames still read.
    let e3 = entries[3];
    let start = e3.file_offset as usize + FRAME_HEADER_LEN;
    for at in [start, start + 4095, e3.file_offset as usize + 50] {
        let mut bad = file.clone();
        bad[at] ^= 0x01;
        let store = store_with(&bad);
        for opts in [ReaderOptions::default(), no_cache()] {
            let r = open(&store, opts).unwrap();
            let err = r.frames(3..4).unwrap_err();
            assert!(err.to_string().contains("frame 3"), "byte {at}: {err}");
            assert!(r.frames(2..6).is_err());
            assert!(r.read_range(3 * 4096 + 10, 10).is_err());
            assert_eq!(r.read_range(4 * 4096, 10).unwrap(), &data[4 * 4096..4 * 4096 + 10]);
            assert_eq!(r.frames(2..3).unwrap()[0].as_slice(), &data[2 * 4096..3 * 4096]);
        }
    }
    let mut bad = file.clone();
    bad[start + 100] ^= 0x01;
    let err = open(&store_with(&bad), no_cache()).unwrap().frames(3..4).unwrap_err();
    assert!(
        matches!(&err, Error::Format(FormatError::PayloadChecksum { frame: 3, .. })),
        "{err:?}"
    );
}

/// Recompute the index checksum after a test changed the trailer, so the checks after it run.
fn resum(file: &mut [u8]) {
    let n = file.len();
    let f = n - FOOTER_LEN;
    let off = u64::from_le_bytes(file[f..f + 8].try_into().unwrap()) as usize;
    let sum = xxh3(&file[off..f + 24]);
    file[f + 24..f + 32].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn every_damaged_trailer_is_a_typed_error() {
    let data = mixed(20_000, 9);
    let file = file_of(&data, 4096, "zstd:3");
    let n = file.len();
    let f = n - FOOTER_LEN;
    let r = open(&store_with(&file), ReaderOptions::default()).unwrap();
    let idx = r.index().footer().index_offset as usize;
    let e1 = idx + 16 + 40;
    let case = |patch: &dyn Fn(&mut Vec<u8>), fix: bool| -> Error {
        let mut bad = file.clone();
        patch(&mut bad);
        if fix {
            resum(&mut bad);
        }
        open(&store_with(&bad), ReaderOptions::default()).unwrap_err()
    };
    let is = |e: &Error, pred: &dyn Fn(&FormatError) -> bool| match e {
        Error::Format(fe) => pred(fe),
        _ => false,
    };
    // Footer magic.
    let e = case(&|b| b[n - 1] ^= 1, false);
    assert!(is(&e, &|fe| matches!(fe, FormatError::BadMagic { .. })), "{e}");
    // Index offset pointing outside the file, or past the end.
    for v in [u64::MAX, n as u64 + 100, 3] {
        let e = case(&|b| b[f..f + 8].copy_from_slice(&v.to_le_bytes()), false);
        assert!(
            is(&e, &|fe| matches!(fe, FormatError::BadField { field: "index_offset", .. })),
            "{e}"
        );
    }
    // A frame count far too large (no allocation of its size), or one that does not match.
    let e = case(&|b| b[f + 8..f + 16].copy_from_slice(&(1u64 << 50).to_le_bytes()), false);
    assert!(is(&e, &|fe| matches!(fe, FormatError::BadField { field: "frame_count", .. })), "{e}");
    let e = case(&|b| b[idx + 8] ^= 1, true);
    assert!(is(&e, &|fe| matches!(fe, FormatError::BadField { field: "frame_count", .. })), "{e}");
    // The index checksum.
    let e = case(&|b| b[e1 + 33] ^= 1, false);
    assert!(is(&e, &|fe| matches!(fe, FormatError::Checksum { .. })), "{e}");
    // Overlapping frames: entry 1 starts inside frame 0.
    let e = case(&|b| b[e1 + 8] ^= 8, true);
    assert!(is(&e, &|fe| matches!(fe, FormatError::IndexMismatch { frame: 1, .. })), "{e}");
    // A raw length above the cap.
    let e = case(&|b| b[e1 + 16..e1 + 20].copy_from_slice(&u32::MAX.to_le_bytes()), true);
    assert!(is(&e, &|fe| matches!(fe, FormatError::IndexMismatch { frame: 1, .. })), "{e}");
    // Raw size that disagrees with the frames.
    let e = case(&|b| b[f + 16] ^= 1, true);
    assert!(is(&e, &|fe| matches!(fe, FormatError::BadField { field: "raw_size", .. })), "{e}");
    // Cut anywhere in the trailer, or anywhere at all: an error, never a panic.
    for cut in 0..n {
        assert!(open(&store_with(&file[..cut]), ReaderOptions::default()).is_err(), "cut {cut}");
    }
}

#[test]
fn an_index_entry_that_disagrees_with_its_frame_is_caught_when_read() {
    let data = mixed(20_000, 10);
    let file = file_of(&data, 4096, "zstd:3");
    let r = open(&store_with(&file), ReaderOptions::default()).unwrap();
    let idx = r.index().footer().index_offset as usize;
    // Entry 2's raw checksum changed (and the index checksum fixed): the frame header holds
    // the true one, so the reader refuses the frame rather than trust either.
    let mut bad = file.clone();
    bad[idx + 16 + 2 * 40 + 32] ^= 1;
    resum(&mut bad);
    let r = open(&store_with(&bad), ReaderOptions::default()).unwrap();
    let err = r.read_range(2 * 4096, 5).unwrap_err();
    assert!(matches!(err, Error::Format(FormatError::IndexMismatch { frame: 2, .. })), "{err}");
    assert_eq!(r.read_range(0, 5).unwrap(), &data[..5]);
}

#[test]
fn a_damaged_file_header_is_caught_before_any_frame_is_returned() {
    // Large enough that the header is not in the tail `open` reads.
    let data = mixed(300_000, 11);
    let mut file = file_of(&data, 4096, "none");
    file[0] = b'X';
    let store = store_with(&file);
    let r = open(&store, ReaderOptions::default()).unwrap();
    let err = r.read_range(0, 10).unwrap_err();
    assert!(matches!(err, Error::Format(FormatError::BadMagic { .. })), "{err}");
}

#[test]
fn read_range_refuses_huge_lengths_before_allocating() {
    let store = store_with(&file_of(b"abc", 1000, "none"));
    let r = open(&store, ReaderOptions::default()).unwrap();
    let err = r.read_range(0, u64::MAX).unwrap_err();
    assert!(matches!(err, Error::RangeTooLarge { .. }), "{err}");
    // Within the limit but past the data: only what is there is allocated and returned.
    assert_eq!(r.read_range(1, 1 << 29).unwrap(), b"bc");
}

#[test]
fn many_threads_share_one_reader() {
    let data = Arc::new(mixed(600_000, 12));
    let store = store_with(&file_of(&data, 8192, "zstd:1"));
    // A cache of a few frames, so threads evict each other's frames all the time.
    let r = Arc::new(
        open(&store, ReaderOptions { cache_bytes: 40_000, ..Default::default() }).unwrap(),
    );
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (r, data) = (Arc::clone(&r), Arc::clone(&data));
            s.spawn(move || {
                let mut rng = t + 1;
                for _ in 0..150 {
                    rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let off = (rng >> 13) % data.len() as u64;
                    let len = (rng >> 40) % 30_000;
                    let got = r.read_range(off, len).unwrap();
                    let end = (off + len).min(data.len() as u64) as usize;
                    assert!(got == data[off as usize..end], "thread {t} at {off}+{len}");
                }
            });
        }
    });
    let s = r.stats();
    assert!(s.cache_hits > 0 && s.frames_decoded > 0, "{s:?}");
}

#[test]
fn every_strategy_and_codec_reads_back_exactly() {
    let data = mixed(400_000, 13);
    for strategy in ["throughput", "keep-pace", "static=lz4:1", "static=xz:1", "static=none"] {
        let store = MemoryStorage::new();
        let o = WriteOptions {
            strategy: strategy.parse().unwrap(),
            link: Link::Fixed(100e6),
            threads: 2,
            block_size: 16 << 10,
            ..WriteOptions::default()
        };
        let mut w = Writer::create(&store, "f.adz", o).unwrap();
        w.write(&data).unwrap();
        w.finish().unwrap();
        let r = open(&store, ReaderOptions::default()).unwrap();
        for (off, len) in [(0u64, 400_000u64), (16_383, 2), (123_456, 77_777), (399_990, 100)] {
            let end = (off + len).min(data.len() as u64) as usize;
            assert!(r.read_range(off, len).unwrap() == data[off as usize..end], "{strategy}");
        }
        let mut out = Vec::new();
        r.copy_to(&mut out, 2).unwrap();
        assert!(out == data, "{strategy}");
    }
}

/// The original data and one file of it per codec.
type Fixture = (Vec<u8>, Vec<(String, MemoryStorage)>);

fn prop_file() -> &'static Fixture {
    static FILE: std::sync::OnceLock<Fixture> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let data = mixed(150_000, 14);
        let stores = ["none", "lz4:1", "lz4hc:4", "zstd:3", "xz:0"]
            .into_iter()
            .map(|c| (c.to_owned(), store_with(&file_of(&data, 3000, c))))
            .collect();
        (data, stores)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_ranges_equal_the_original_bytes(
        ranges in prop::collection::vec((0u64..160_000, 0u64..20_000), 1..12),
        cache in prop::bool::ANY,
        threads in 1usize..4,
    ) {
        let (data, stores) = prop_file();
        for (codec, store) in stores {
            let opts = ReaderOptions {
                cache_bytes: if cache { 20_000 } else { 0 },
                threads,
                ..Default::default()
            };
            let r = open(store, opts).unwrap();
            for &(off, len) in &ranges {
                let got = r.read_range(off, len).unwrap();
                let start = (off as usize).min(data.len());
                let end = ((off + len) as usize).min(data.len());
                prop_assert!(got == data[start..end], "{} at {}+{}", codec, off, len);
            }
        }
    }
}

/// A backend that returns one byte less than asked for (a broken or lying store).
#[derive(Debug)]
struct ShortReads(MemoryStorage, std::sync::atomic::AtomicBool);

impl Storage for ShortReads {
    fn create(&self, name: &str) -> adz_core::store::Result<Box<dyn adz_core::store::Upload>> {
        self.0.create(name)
    }
    fn get_range(
        &self,
        name: &str,
        range: std::ops::Range<u64>,
    ) -> adz_core::store::Result<Vec<u8>> {
        let mut v = self.0.get_range(name, range)?;
        if self.1.load(std::sync::atomic::Ordering::Relaxed) {
            v.pop();
        }
        Ok(v)
    }
    fn size(&self, name: &str) -> adz_core::store::Result<u64> {
        self.0.size(name)
    }
    fn delete(&self, name: &str) -> adz_core::store::Result<()> {
        self.0.delete(name)
    }
    fn list(&self, prefix: &str) -> adz_core::store::Result<Vec<adz_core::store::ObjectMeta>> {
        self.0.list(prefix)
    }
}

#[test]
fn a_store_that_returns_short_reads_gives_an_error_not_a_panic() {
    let data = mixed(300_000, 15);
    let mem = store_with(&file_of(&data, 4096, "zstd:3"));
    let lying = Arc::new(ShortReads(mem.clone(), true.into()));
    assert!(Reader::open(lying.clone(), "f.adz", ReaderOptions::default()).is_err());
    lying.1.store(false, std::sync::atomic::Ordering::Relaxed);
    let r = Reader::open(lying.clone(), "f.adz", ReaderOptions::default()).unwrap();
    lying.1.store(true, std::sync::atomic::Ordering::Relaxed);
    let err = r.read_range(10_000, 10).unwrap_err();
    // The cause is the error's source (a chain prints each once).
    let cause = std::error::Error::source(&err).map(|s| s.to_string()).unwrap_or_default();
    assert!(cause.contains("storage returned"), "{err}: {cause}");
}

/// Which ranges a [`FailingRanges`] fails.
type RangeTest = Box<dyn Fn(&std::ops::Range<u64>) -> bool + Send + Sync>;

/// A backend that fails every read touching some stored bytes, as an object store does when it
/// finds its copy of a block damaged (MinIO checks a hash per 1 MiB block and fails any range
/// that overlaps a bad one), and counts the reads.
struct FailingRanges {
    inner: MemoryStorage,
    fails: RangeTest,
    reads: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for FailingRanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailingRanges").finish_non_exhaustive()
    }
}

impl Storage for FailingRanges {
    fn create(&self, name: &str) -> adz_core::store::Result<Box<dyn adz_core::store::Upload>> {
        self.inner.create(name)
    }
    fn get_range(
        &self,
        name: &str,
        range: std::ops::Range<u64>,
    ) -> adz_core::store::Result<Vec<u8>> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if (self.fails)(&range) {
            return Err(adz_core::store::Error::Remote {
                kind: adz_core::store::RemoteKind::ConnectionLost,
                op: "get",
                name: name.to_owned(),
                source: "the server broke off the answer".into(),
            });
        }
        self.inner.get_range(name, range)
    }
    fn size(&self, name: &str) -> adz_core::store::Result<u64> {
        self.inner.size(name)
    }
    fn delete(&self, name: &str) -> adz_core::store::Result<()> {
        self.inner.delete(name)
    }
    fn list(&self, prefix: &str) -> adz_core::store::Result<Vec<adz_core::store::ObjectMeta>> {
        self.inner.list(prefix)
    }
}

fn failing(
    store: &MemoryStorage,
    fails: impl Fn(&std::ops::Range<u64>) -> bool + Send + Sync + 'static,
) -> Arc<FailingRanges> {
    Arc::new(FailingRanges { inner: store.clone(), fails: Box::new(fails), reads: 0.into() })
}

#[test]
fn a_frame_whose_fetch_fails_is_named_and_other_frames_still_read() {
    let data = mixed(40 * 4096, 16);
    let mem = store_with(&file_of(&data, 4096, "zstd:3"));
    let index = open(&mem, no_cache()).unwrap().index().clone();
    let e = index.entries();
    // Damaged stored bytes from inside frame 10's payload to inside frame 11's header.
    let bad = e[10].file_offset + FRAME_HEADER_LEN as u64 + 30..e[11].file_offset + 5;
    let store = failing(&mem, move |r| r.start < bad.end && bad.start < r.end);
    for threads in [1, 2] {
        let opts = ReaderOptions { threads, cache_bytes: 0, ..Default::default() };
        let r = Reader::open(store.clone(), "f.adz", opts).unwrap();
        let frame_of = |err: &Error| match err {
            Error::FrameFetch { frame, offset, len, source } => {
                assert_eq!(*offset, e[*frame as usize].file_offset);
                assert_eq!(*len, e[*frame as usize].file_range().end - *offset);
                assert!(source.to_string().contains("f.adz"), "{source}");
                *frame
            }
            other => panic!("expected FrameFetch, got {other:?}"),
        };
        // Frame 10 alone; frames 8..13 in one coalesced request, which fails, then one by one:
        // the first frame that fails alone is named.
        let err = r.read_range(10 * 4096 + 7, 10).unwrap_err();
        assert_eq!(frame_of(&err), 10);
        assert_eq!(err.frame(), Some(10));
        let msg = err.to_string();
        assert!(msg.contains(&format!("frame 10 at offset {}", e[10].file_offset)), "{msg}");
        assert_eq!(frame_of(&r.read_range(8 * 4096, 5 * 4096).unwrap_err()), 10);
        assert_eq!(frame_of(&r.read_range(11 * 4096, 100).unwrap_err()), 11);
        assert_eq!(frame_of(&r.copy_to(std::io::sink(), threads).unwrap_err()), 10);
        // Every other frame reads, alone and in long coalesced ranges up to the damage.
        for (from, to) in [(0, 10), (12, 40), (3, 4), (39, 40), (12, 13), (9, 10)] {
            let (a, b) = (from * 4096, to * 4096);
            assert!(r.read_range(a as u64, (b - a) as u64).unwrap() == data[a..b], "{from}..{to}");
        }
    }

    // A request for several frames that fails once, then works: the frames are fetched one
    // by one and the read succeeds.
    let largest = e.iter().map(|x| x.file_range().end - x.file_offset).max().unwrap();
    let once = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let armed = Arc::clone(&once);
    let store = failing(&mem, move |r| {
        r.end - r.start > largest && once.swap(false, std::sync::atomic::Ordering::Relaxed)
    });
    let opts = ReaderOptions { threads: 1, cache_bytes: 0, ..Default::default() };
    let r = Reader::open(store.clone(), "f.adz", opts).unwrap();
    assert!(r.read_range(39 * 4096, 1).is_ok()); // the file header is checked by now
    armed.store(true, std::sync::atomic::Ordering::Relaxed);
    let before = store.reads.load(std::sync::atomic::Ordering::Relaxed);
    assert!(r.read_range(0, 8 * 4096).unwrap() == data[..8 * 4096]);
    assert_eq!(store.reads.load(std::sync::atomic::Ordering::Relaxed) - before, 1 + 8);

    // A missing object is not blamed on a frame.
    let r = open(&mem, no_cache()).unwrap();
    mem.delete("f.adz").unwrap();
    let err = r.read_range(0, 10).unwrap_err();
    assert!(matches!(err, Error::Store(adz_core::store::Error::NotFound { .. })), "{err:?}");
    assert_eq!(err.frame(), None);
}
