//! `recompress`: denser, equal bytes, dense frames copied as they were, damage and failures
//! leave the old file whole, a finished file is skipped, a dry run writes nothing.

use std::io::Read;
use std::sync::Arc;

use adz_core::format::{Filters, FrameHeader, TrailerBuilder, FILE_HEADER_LEN, FRAME_HEADER_LEN};
use adz_core::recompress::{self, RecompressError, RecompressOptions};
use adz_core::store::{FaultPlan, Faulty, LocalStorage, MemoryStorage, Storage};
use adz_core::{Decoder, FrameEncoder, FrameScanner, FrameWriter, FrameWriterOptions};
use adz_datagen::{generate, Kind};

fn write(data: &[u8], codec: &str, block: u32) -> Vec<u8> {
    let opts = FrameWriterOptions {
        block_size: block,
        codec: codec.parse().unwrap(),
        ..Default::default()
    };
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_data(data).unwrap();
    w.finish().unwrap().0
}

/// A file whose frames each have their own codec.
fn build(frames: &[(&[u8], &str)]) -> Vec<u8> {
    let mut file = adz_core::format::FileHeader::new(1 << 20).unwrap().encode().to_vec();
    let mut trailer = TrailerBuilder::new();
    let mut raw_offset = 0;
    let mut enc = FrameEncoder::new();
    for (raw, codec) in frames {
        let at = file.len() as u64;
        let h = enc
            .encode(raw, raw_offset, codec.parse().unwrap(), Filters::NONE, 0.97, &mut file)
            .unwrap();
        trailer.push(&h, at);
        raw_offset += raw.len() as u64;
    }
    let tail = trailer.encode(file.len() as u64);
    file.extend_from_slice(&tail);
    file
}

fn decode(file: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Decoder::new(file).read_to_end(&mut out).unwrap();
    out
}

/// Every frame of a file: (header, the frame's bytes).
fn frames(file: &[u8]) -> Vec<(FrameHeader, Vec<u8>)> {
    let mut s = FrameScanner::new(file);
    let mut v = Vec::new();
    while let Some(f) = s.next_frame().unwrap() {
        let mut b = f.header.encode().to_vec();
        b.extend_from_slice(s.payload());
        v.push((f.header, b));
    }
    v
}

fn memory(name: &str, file: &[u8]) -> (Arc<dyn Storage>, MemoryStorage) {
    let m = MemoryStorage::new();
    m.put(name, file).unwrap();
    (Arc::new(m.clone()), m)
}

fn text(len: usize, seed: u64) -> Vec<u8> {
    generate(Kind::Text, len, seed)
}

#[test]
fn lz4_to_zstd19_and_xz_is_smaller_with_the_same_bytes() {
    let data = text(3 << 20, 1);
    let old = write(&data, "lz4:1", 256 << 10);
    for target in ["zstd:19", "xz:6"] {
        let (store, mem) = memory("a.adz", &old);
        let opts =
            RecompressOptions { threads: 3, ..RecompressOptions::to(target.parse().unwrap()) };
        let r = recompress::recompress(&store, "a.adz", &opts, &|_| {}).unwrap();
        let new = mem.get("a.adz").unwrap();
        assert_eq!(decode(&new), data, "{target}");
        assert!(new.len() < old.len() * 3 / 4, "{target}: {} -> {}", old.len(), new.len());
        assert_eq!((r.bytes_before, r.bytes_after), (old.len() as u64, new.len() as u64));
        assert_eq!(r.recoded, 12, "{target}: every frame was lz4");
        assert!(r.cpu_seconds > 0.0 && !r.skipped);
        assert!(frames(&new).iter().all(|(h, _)| h.codec().unwrap().to_string() == target));
        // Index valid: the random-access reader opens it and reads a range.
        let reader =
            adz_core::Reader::open(Arc::clone(&store), "a.adz", Default::default()).unwrap();
        assert_eq!(reader.read_range(1_000_000, 100).unwrap(), &data[1_000_000..1_000_100]);
    }
}

#[test]
fn dense_and_incompressible_frames_are_copied_byte_for_byte() {
    let t = text(200_000, 2);
    let noise = generate(Kind::Random, 200_000, 2);
    let old =
        build(&[(&t, "lz4:1"), (&t, "xz:6"), (&noise, "lz4:1"), (&t, "none"), (&noise, "zstd:3")]);
    let before = frames(&old);
    assert!(before[2].0.stored_raw() && before[3].0.stored_raw() && before[4].0.stored_raw());
    let (store, mem) = memory("m.adz", &old);
    let opts = RecompressOptions::to("zstd:19".parse().unwrap());
    let r = recompress::recompress(&store, "m.adz", &opts, &|_| {}).unwrap();
    let new = mem.get("m.adz").unwrap();
    let after = frames(&new);
    assert_eq!(decode(&new), decode(&old));
    // xz:6 is past zstd:19 on the ladder; zstd:3 could not shrink the noise.
    for i in [1, 4] {
        assert!(after[i].1 == before[i].1, "frame {i} must be copied as it was");
    }
    // lz4 could not shrink it either, but lz4 has no entropy stage: zstd:1 probed it, found it
    // incompressible, and the frame keeps its payload under a zstd:1 stored-raw header.
    assert!(after[2].1[FRAME_HEADER_LEN..] == before[2].1[FRAME_HEADER_LEN..]);
    assert!(after[2].0.stored_raw());
    assert_eq!(after[2].0.codec().unwrap().to_string(), "zstd:1");
    // lz4 text and text sent raw by choice (codec none) are re-encoded.
    for i in [0, 3] {
        assert_eq!(after[i].0.codec().unwrap().to_string(), "zstd:19", "frame {i}");
    }
    assert_eq!((r.recoded, r.copied, r.frames), (2, 3, 5));
    assert_eq!(r.decoded, 3, "only the frames below the target, and lz4's raw one, are decoded");
    assert_eq!(r.probed, 1, "the text sent raw compresses; lz4's noise does not");
}

/// Random bytes of 4 bits each: no repeats for LZ4 to find, half of each byte for an entropy
/// coder to save (like noisy pixels).
fn nibbles(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 60) as u8
        })
        .collect()
}

#[test]
fn noise_sent_raw_by_choice_is_probed_and_kept_raw_without_the_targets_attempt() {
    // An S1 write sends incompressible stretches raw by choice (probe mode: codec none). A
    // zstd:1 probe finds them incompressible, so xz:9 is never run on them: their payload is
    // kept, marked as stored raw by zstd:1, and a rerun skips the file. Text sent raw by
    // choice, and nibbles lz4 could not shrink, are re-encoded.
    let t = text(300_000, 3);
    let noise = generate(Kind::Random, 300_000, 3);
    let pixels = nibbles(300_000, 3);
    let old = build(&[
        (&noise, "none"),
        (&t, "none"),
        (&noise, "none"),
        (&t, "lz4:1"),
        (&pixels, "lz4:1"),
    ]);
    let before = frames(&old);
    assert!(before[4].0.stored_raw(), "lz4 cannot shrink the nibbles");
    let (store, mem) = memory("n.adz", &old);
    let r =
        recompress::recompress(&store, "n.adz", &RecompressOptions::archive(), &|_| {}).unwrap();
    let new = mem.get("n.adz").unwrap();
    let after = frames(&new);
    assert_eq!(decode(&new), decode(&old));
    for i in [0, 2] {
        assert!(after[i].1[FRAME_HEADER_LEN..] == before[i].1[FRAME_HEADER_LEN..], "frame {i}");
        assert_eq!(after[i].0.codec().unwrap().to_string(), "zstd:1");
        assert!(after[i].0.stored_raw());
    }
    assert!(!after[4].0.stored_raw(), "xz:9 shrinks the nibbles lz4 could not");
    assert_eq!((r.recoded, r.probed, r.decoded, r.copied), (3, 2, 5, 2));
    // Every frame is now at the target or stored raw by an entropy coder: a rerun skips it.
    let again =
        recompress::recompress(&store, "n.adz", &RecompressOptions::archive(), &|_| {}).unwrap();
    assert!(again.skipped);
    // The estimate sees the same.
    let (store, _) = memory("n.adz", &old);
    let e = recompress::estimate(&store, "n.adz", &RecompressOptions::archive(), u64::MAX).unwrap();
    assert_eq!((e.recoded, e.probed), (3, 2));
}

#[test]
fn a_damaged_frame_names_the_frame_and_leaves_the_file_as_it_was() {
    let data = text(1 << 20, 3);
    let mut old = write(&data, "lz4:1", 128 << 10);
    let f = frames(&old);
    // A byte in the payload of frame 5.
    let at = FILE_HEADER_LEN
        + f[..5].iter().map(|(_, b)| b.len()).sum::<usize>()
        + FRAME_HEADER_LEN
        + 10;
    old[at] ^= 0x40;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.adz");
    std::fs::write(&path, &old).unwrap();
    let (local, name) = LocalStorage::for_path(&path).unwrap();
    let store: Arc<dyn Storage> = Arc::new(local.recoverable_temporaries(false));
    let opts = RecompressOptions::to("zstd:9".parse().unwrap());
    let err = recompress::recompress(&store, &name, &opts, &|_| {}).unwrap_err();
    assert!(matches!(err, RecompressError::Damaged { frame: 5, .. }), "{err:?}");
    assert!(err.to_string().contains("frame 5"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), old, "the old file must be untouched");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary left behind");

    // The same for a frame that would be copied (already dense): its checksum is checked.
    let mut built = build(&[(&data[..100_000], "xz:6"), (&data[100_000..200_000], "lz4:1")]);
    built[FILE_HEADER_LEN + FRAME_HEADER_LEN + 3] ^= 1;
    let (store, mem) = memory("c.adz", &built);
    let err = recompress::recompress(&store, "c.adz", &opts, &|_| {}).unwrap_err();
    assert!(matches!(err, RecompressError::Damaged { frame: 0, .. }), "{err:?}");
    assert_eq!(mem.get("c.adz").unwrap(), built);
}

#[test]
fn a_failed_write_or_commit_leaves_the_old_object() {
    let data = text(1 << 20, 4);
    let old = write(&data, "lz4:1", 64 << 10);
    for plan in [FaultPlan::new().fail_append_after(100_000), FaultPlan::new().fail_commit()] {
        let mem = MemoryStorage::new();
        mem.put("o.adz", &old).unwrap();
        let store: Arc<dyn Storage> = Arc::new(Faulty::new(mem.clone(), plan.clone()));
        let opts = RecompressOptions::to("zstd:9".parse().unwrap());
        let err = recompress::recompress(&store, "o.adz", &opts, &|_| {}).unwrap_err();
        assert!(matches!(err, RecompressError::Write { .. }), "{plan:?}: {err:?}");
        assert_eq!(mem.get("o.adz").unwrap(), old, "{plan:?}");
    }
}

#[test]
fn a_file_at_the_target_is_skipped_from_its_index() {
    let data = text(1 << 20, 5);
    let old = write(&data, "lz4:1", 256 << 10);
    let (store, mem) = memory("s.adz", &old);
    let opts = RecompressOptions::to("zstd:9".parse().unwrap());
    let first = recompress::recompress(&store, "s.adz", &opts, &|_| {}).unwrap();
    assert!(!first.skipped && first.recoded == 4);
    let once = mem.get("s.adz").unwrap();
    let reader = adz_core::Reader::open(Arc::clone(&store), "s.adz", Default::default()).unwrap();
    assert_eq!(recompress::pending_frames(reader.index().entries(), opts.target), 0);
    let again = recompress::recompress(&store, "s.adz", &opts, &|_| {}).unwrap();
    assert!(again.skipped && again.recoded == 0, "{again:?}");
    assert_eq!(mem.get("s.adz").unwrap(), once);
    // A lower target is no work either: the frames are past it.
    let lower = RecompressOptions::to("zstd:3".parse().unwrap());
    assert!(recompress::recompress(&store, "s.adz", &lower, &|_| {}).unwrap().skipped);
}

#[test]
fn a_dry_run_writes_nothing_and_estimates_the_real_run() {
    let data = text(4 << 20, 6);
    let old = write(&data, "lz4:1", 256 << 10);
    let (store, mem) = memory("d.adz", &old);
    let opts = RecompressOptions::to("zstd:12".parse().unwrap());
    let est = recompress::estimate(&store, "d.adz", &opts, 1 << 20).unwrap();
    assert_eq!(mem.get("d.adz").unwrap(), old, "a dry run must not write");
    assert!(est.estimated);
    let real = recompress::recompress(&store, "d.adz", &opts, &|_| {}).unwrap();
    let (e, r) = (est.bytes_after as f64, real.bytes_after as f64);
    assert!((e - r).abs() / r < 0.1, "estimate {e} against {r}");
}
