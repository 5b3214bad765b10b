//! The example file of docs/FORMAT.md, built field by field from the document's table (not
//! with adz's writer), must decode with adz's readers. If this test and the document disagree,
//! one of them is wrong.

use std::io::Cursor;

use adz_core::{decode_stream, verify_stream, FileInfo};
use xxhash_rust::xxh3::xxh3_64 as xxh3;

fn u32le(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}
fn u64le(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

/// Push `bytes` and check they land at the offset the document's table gives.
fn put(file: &mut Vec<u8>, offset: usize, bytes: &[u8]) {
    assert_eq!(file.len(), offset, "the table puts this field at offset {offset}");
    file.extend_from_slice(bytes);
}

fn spec_example() -> Vec<u8> {
    spec_example_version(2)
}

/// The example with `version_minor` = `minor` (the document's is 2; as 0 or 1 it is a 1.0 or
/// 1.1 file).
fn spec_example_version(minor: u8) -> Vec<u8> {
    let mut f = Vec::new();
    // File header.
    put(&mut f, 0, &[0x89, 0x41, 0x44, 0x5A, 0x0D, 0x0A, 0x1A, 0x0A]);
    put(&mut f, 8, &[0x01, minor]);
    put(&mut f, 10, &[0x00, 0x00]);
    put(&mut f, 12, &[0x08, 0x00, 0x00, 0x00]);
    put(&mut f, 16, &[0; 8]);
    let sum = xxh3(&f[0..24]);
    put(&mut f, 24, &u64le(sum));
    // Frame 0.
    put(&mut f, 32, b"ADZF");
    put(&mut f, 36, &[0x00]);
    put(&mut f, 37, &[0x00]);
    put(&mut f, 38, &[0x00, 0x00]);
    put(&mut f, 40, &[0, 0, 0, 0]);
    put(&mut f, 44, &[0x08, 0, 0, 0]);
    put(&mut f, 48, &[0x08, 0, 0, 0]);
    put(&mut f, 52, &[0x01, 0x02, 0, 0, 0, 0, 0, 0]);
    put(&mut f, 60, &[0; 8]);
    put(&mut f, 68, &u64le(xxh3(b"adz adz!")));
    put(&mut f, 76, &u64le(xxh3(b"azazd d!")));
    let sum = xxh3(&f[32..84]) as u32;
    put(&mut f, 84, &u32le(sum));
    put(&mut f, 88, &[0x61, 0x7A, 0x61, 0x7A, 0x64, 0x20, 0x64, 0x21]);
    // Frame 1.
    put(&mut f, 96, b"ADZF");
    put(&mut f, 100, &[0x03]);
    put(&mut f, 101, &[0x01]);
    put(&mut f, 102, &[0x00, 0x00]);
    put(&mut f, 104, &[0x03, 0, 0, 0]);
    put(&mut f, 108, &[0x02, 0, 0, 0]);
    put(&mut f, 112, &[0x02, 0, 0, 0]);
    put(&mut f, 116, &[0; 8]);
    put(&mut f, 124, &[0x08, 0, 0, 0, 0, 0, 0, 0]);
    put(&mut f, 132, &u64le(xxh3(b"!\n")));
    put(&mut f, 140, &u64le(xxh3(b"!\n")));
    let sum = xxh3(&f[96..148]) as u32;
    put(&mut f, 148, &u32le(sum));
    put(&mut f, 152, &[0x21, 0x0A]);
    // Trailer.
    put(&mut f, 154, b"ADZI");
    put(&mut f, 158, &[0; 4]);
    put(&mut f, 162, &u64le(2));
    put(&mut f, 170, &u64le(0));
    put(&mut f, 178, &u64le(32));
    put(&mut f, 186, &[0x08, 0, 0, 0, 0x08, 0, 0, 0]);
    put(&mut f, 194, &[0x00, 0x00, 0x00, 0x00]);
    put(&mut f, 198, &[0; 4]);
    put(&mut f, 202, &u64le(xxh3(b"adz adz!")));
    put(&mut f, 210, &u64le(8));
    put(&mut f, 218, &u64le(96));
    put(&mut f, 226, &[0x02, 0, 0, 0, 0x02, 0, 0, 0]);
    put(&mut f, 234, &[0x03, 0x01, 0x00, 0x00]);
    put(&mut f, 238, &[0x03, 0, 0, 0]);
    put(&mut f, 242, &u64le(xxh3(b"!\n")));
    put(&mut f, 250, &[0x9A, 0, 0, 0, 0, 0, 0, 0]);
    put(&mut f, 258, &u64le(2));
    put(&mut f, 266, &u64le(10));
    let sum = xxh3(&f[154..274]);
    put(&mut f, 274, &u64le(sum));
    put(&mut f, 282, b"ADZ-END\n");
    assert_eq!(f.len(), 290);
    f
}

#[test]
fn spec_example_decodes() {
    let file = spec_example();
    let mut out = Vec::new();
    let stats = decode_stream(&file[..], &mut out, |_| {}).unwrap();
    assert_eq!(out, b"adz adz!!\n");
    assert_eq!(stats.frames, 2);

    let report = verify_stream(&file[..], |_| {});
    assert!(report.problems.is_empty(), "{:?}", report.problems);

    let info = FileInfo::read_seekable(Cursor::new(&file), true).unwrap();
    assert_eq!(info.block_size, 8);
    assert_eq!(info.raw_bytes, 10);
    let frames = info.frame_list.unwrap();
    assert_eq!(frames[0].config, "none shuffle:2");
    assert_eq!(frames[1].config, "zstd:3 (stored raw)");
}

/// A 1.2 reader reads 1.0 and 1.1 files: the example uses no 1.1 or 1.2 value, so as version
/// 1.0 or 1.1 it is a valid file of that version.
#[test]
fn spec_example_as_1_0_decodes() {
    for minor in [0, 1] {
        let file = spec_example_version(minor);
        let mut out = Vec::new();
        decode_stream(&file[..], &mut out, |_| {}).unwrap();
        assert_eq!(out, b"adz adz!!\n");
        let info = FileInfo::read_seekable(Cursor::new(&file), false).unwrap();
        assert_eq!(info.version, format!("1.{minor}"));
    }
}

/// The delta/xor section's example: one frame, codec none, one filter in slot 0, raw u16
/// values 100, 101, 103, 99 and a trailing byte `FF`; the payload is the document's bytes.
fn filter_example(slot: [u8; 2], payload: &[u8; 9]) -> Vec<u8> {
    let raw: [u8; 9] = [0x64, 0x00, 0x65, 0x00, 0x67, 0x00, 0x63, 0x00, 0xFF];
    one_frame_file(1, &raw, slot, payload)
}

/// A file of version 1.`minor` with one frame of codec none, one filter in slot 0 and block
/// size 16, built field by field.
fn one_frame_file(minor: u8, raw: &[u8], slot: [u8; 2], payload: &[u8]) -> Vec<u8> {
    assert_eq!(raw.len(), payload.len(), "codec none keeps the filtered bytes");
    let len = raw.len() as u32;
    let end = 88 + raw.len();
    let mut f = Vec::new();
    put(&mut f, 0, &[0x89, 0x41, 0x44, 0x5A, 0x0D, 0x0A, 0x1A, 0x0A]);
    put(&mut f, 8, &[0x01, minor]);
    put(&mut f, 10, &[0x00, 0x00]);
    put(&mut f, 12, &u32le(16));
    put(&mut f, 16, &[0; 8]);
    let sum = xxh3(&f[0..24]);
    put(&mut f, 24, &u64le(sum));
    put(&mut f, 32, b"ADZF");
    put(&mut f, 36, &[0x00, 0x00, 0x00, 0x00]);
    put(&mut f, 40, &[0; 4]);
    put(&mut f, 44, &u32le(len));
    put(&mut f, 48, &u32le(len));
    put(&mut f, 52, &[slot[0], slot[1], 0, 0, 0, 0, 0, 0]);
    put(&mut f, 60, &u64le(0));
    put(&mut f, 68, &u64le(xxh3(raw)));
    put(&mut f, 76, &u64le(xxh3(payload)));
    let sum = xxh3(&f[32..84]) as u32;
    put(&mut f, 84, &u32le(sum));
    put(&mut f, 88, payload);
    // Trailer: index header, one entry, footer.
    put(&mut f, end, b"ADZI");
    put(&mut f, end + 4, &[0; 4]);
    put(&mut f, end + 8, &u64le(1));
    put(&mut f, end + 16, &u64le(0));
    put(&mut f, end + 24, &u64le(32));
    put(&mut f, end + 32, &[&u32le(len)[..], &u32le(len)[..]].concat());
    put(&mut f, end + 40, &[0; 4]);
    put(&mut f, end + 44, &[0; 4]);
    put(&mut f, end + 48, &u64le(xxh3(raw)));
    put(&mut f, end + 56, &u64le(end as u64));
    put(&mut f, end + 64, &u64le(1));
    put(&mut f, end + 72, &u64le(u64::from(len)));
    let sum = xxh3(&f[end..end + 80]);
    put(&mut f, end + 80, &u64le(sum));
    put(&mut f, end + 88, b"ADZ-END\n");
    f
}

#[test]
fn spec_filter_example_decodes() {
    let raw = [0x64, 0x00, 0x65, 0x00, 0x67, 0x00, 0x63, 0x00, 0xFF];
    let delta = filter_example([2, 2], &[0x64, 0, 0x01, 0, 0x02, 0, 0xFC, 0xFF, 0xFF]);
    let xor = filter_example([3, 2], &[0x64, 0, 0x01, 0, 0x02, 0, 0x04, 0x00, 0xFF]);
    for (name, file) in [("delta:2", delta), ("xor:2", xor)] {
        let mut out = Vec::new();
        decode_stream(&file[..], &mut out, |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out, raw, "{name}");
        let info = FileInfo::read_seekable(Cursor::new(&file), true).unwrap();
        assert_eq!(info.version, "1.1");
        assert_eq!(info.frame_list.unwrap()[0].config, format!("none {name}"));
    }
    // A word size the filter does not take is refused, not guessed at.
    let bad = filter_example([2, 3], &[0x64, 0, 0x01, 0, 0x02, 0, 0xFC, 0xFF, 0xFF]);
    let err = decode_stream(&bad[..], &mut Vec::new(), |_| {}).unwrap_err().to_string();
    assert!(err.contains("filter slot 0"), "{err}");
}

/// The bitshuffle section's example: the u16 values 256..=264 and a trailing `FF` through
/// `bitshuffle:2` (slot bytes `04 02`), in a file of version 1.2.
#[test]
fn spec_bitshuffle_example_decodes() {
    let raw = [
        0x00, 0x01, 0x01, 0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x07,
        0x01, 0x08, 0x01, 0xFF,
    ];
    let payload = [
        0xAA, 0xCC, 0xF0, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x08, 0x01, 0xFF,
    ];
    let file = one_frame_file(2, &raw, [4, 2], &payload);
    let mut out = Vec::new();
    decode_stream(&file[..], &mut out, |_| {}).unwrap();
    assert_eq!(out, raw);
    assert!(verify_stream(&file[..], |_| {}).problems.is_empty());
    let info = FileInfo::read_seekable(Cursor::new(&file), true).unwrap();
    assert_eq!(info.version, "1.2");
    assert_eq!(info.frame_list.unwrap()[0].config, "none bitshuffle:2");
    // The shuffle line of the document, for comparison, is shuffle:2 of the same bytes.
    let shuffled = [
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
        0x01, 0x01, 0x01, 0xFF,
    ];
    let file = one_frame_file(2, &raw, [1, 2], &shuffled);
    decode_stream(&file[..], &mut Vec::new(), |_| {}).unwrap();
    // An element size of 0 is refused, not guessed at.
    let bad = one_frame_file(2, &raw, [4, 0], &payload);
    let err = decode_stream(&bad[..], &mut Vec::new(), |_| {}).unwrap_err().to_string();
    assert!(err.contains("filter slot 0"), "{err}");
}

#[test]
fn spec_example_matches_what_the_writer_lays_out() {
    // adz's writer with codec none and shuffle:2 keeps frame 0's shuffled bytes and stores
    // frame 1 raw: the document's layout, byte for byte up to frame 1.
    use adz_core::format::{FilterSpec, Filters};
    use adz_core::{FrameWriter, FrameWriterOptions};
    let opts = FrameWriterOptions {
        block_size: 8,
        codec: "none".parse().unwrap(),
        filters: Filters::new(&[FilterSpec::shuffle(2).unwrap()]).unwrap(),
        ..FrameWriterOptions::default()
    };
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_data(b"adz adz!!\n").unwrap();
    let (file, _) = w.finish().unwrap();
    let spec = spec_example();
    // Frame 1 differs only in the attempted codec and filters (the document's frame 1 tried
    // zstd:3), so compare up to frame 1.
    assert_eq!(file[..96], spec[..96]);
    assert_eq!(file.len(), spec.len());
}
