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
    let mut f = Vec::new();
    // File header.
    put(&mut f, 0, &[0x89, 0x41, 0x44, 0x5A, 0x0D, 0x0A, 0x1A, 0x0A]);
    put(&mut f, 8, &[0x01, 0x00]);
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

#[test]
fn spec_example_matches_what_the_writer_lays_out() {
    // adz's writer with codec none and shuffle:2 keeps frame 0's shuffled bytes and stores
    // frame 1 raw: the document's layout, byte for byte up to frame 1.
    use adz_core::format::{FilterSpec, Filters};
    use adz_core::{FrameWriter, WriterOptions};
    let opts = WriterOptions {
        block_size: 8,
        codec: "none".parse().unwrap(),
        filters: Filters::new(&[FilterSpec::shuffle(2).unwrap()]).unwrap(),
        ..WriterOptions::default()
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
