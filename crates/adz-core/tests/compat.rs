//! Files written by every released format version keep reading (dwarfs' test/compat model).
//! Each fixture in tests/fixtures/v<major>.<minor>/ holds `adz-datagen mixed 6000 3` (or
//! nothing, for empty.adz), written with the codec its name says. The v1.1 ones were written by
//! `adz compress -T 1 -B 2048 -c CODEC --filter LIST` with the codec and filters of their
//! names (`range-xor8`: `--filter shuffle:8 --hint filters=xor:8@2048..4096`); every frame of
//! them is compressed with its filters, none is stored raw, so decoding runs the filters. The
//! v1.2 ones were written the same way with `bitshuffle` in each chain (`range-bitshuffle4`:
//! `--filter shuffle:8 --hint filters=bitshuffle:4@2048..4096`; `none-bitshuffle8`: codec
//! none, so its payloads are the bit planes themselves).

use std::path::Path;

use adz_core::format::FilterId;
use adz_core::{decode_stream, verify_stream};

#[test]
fn v1_0_fixtures_decode_to_their_source() {
    let source = adz_datagen::generate(adz_datagen::Kind::Mixed, 6000, 3);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1.0");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = std::fs::read(&path).unwrap();
        let mut out = Vec::new();
        decode_stream(&file[..], &mut out, |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let expected: &[u8] = if path.ends_with("empty.adz") { b"" } else { &source };
        assert!(out == expected, "{} decodes to different bytes", path.display());
        assert!(verify_stream(&file[..], |_| {}).problems.is_empty());
        seen += 1;
    }
    assert_eq!(seen, 8, "a fixture is missing");
}

#[test]
fn v1_1_fixtures_decode_to_their_source() {
    let used = filtered_fixtures_decode(1, 7);
    assert!(used.contains(&FilterId::Delta) && used.contains(&FilterId::Xor), "{used:?}");
}

#[test]
fn v1_2_fixtures_decode_to_their_source() {
    let used = filtered_fixtures_decode(2, 8);
    assert!(used.contains(&FilterId::Bitshuffle), "{used:?}");
}

/// Decode every fixture of version 1.`minor` (there must be `count`), each frame through its
/// filters; the filters they use.
fn filtered_fixtures_decode(minor: u8, count: usize) -> std::collections::BTreeSet<FilterId> {
    use adz_core::format::{FrameHeader, FRAME_HEADER_LEN};
    let source = adz_datagen::generate(adz_datagen::Kind::Mixed, 6000, 3);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/v1.{minor}"));
    let mut seen = 0;
    let mut used = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = std::fs::read(&path).unwrap();
        assert_eq!(&file[8..10], &[1, minor], "{} is not a 1.{minor} file", path.display());
        let mut out = Vec::new();
        decode_stream(&file[..], &mut out, |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(out == source, "{} decodes to different bytes", path.display());
        assert!(verify_stream(&file[..], |_| {}).problems.is_empty());
        // Walk the frames: each is compressed through its filters, not stored raw.
        let mut at = 32;
        for frame in 0..3 {
            let h = FrameHeader::parse(&file[at..], frame, at as u64).unwrap();
            assert!(!h.stored_raw(), "{} frame {frame} is stored raw", path.display());
            let filters = h.filters().unwrap();
            assert!(!filters.is_empty(), "{} frame {frame}", path.display());
            used.extend(filters.iter().map(|f| f.id()));
            at += FRAME_HEADER_LEN + h.stored_len as usize;
        }
        seen += 1;
    }
    assert_eq!(seen, count, "a fixture is missing");
    used
}
