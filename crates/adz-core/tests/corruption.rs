//! Damage of every kind is an error naming what and where, never a panic and never wrong data.

use std::io::Cursor;

use adz_core::format::{xxh3, Error as FormatError, FRAME_HEADER_LEN};
use adz_core::{decode_stream, verify_stream, Error, FileInfo, FrameWriter, FrameWriterOptions};
use adz_datagen::{generate, Kind};

fn small_file(codec: &str) -> (Vec<u8>, Vec<u8>) {
    let mut data = generate(Kind::Text, 3000, 5);
    data.extend(generate(Kind::Random, 500, 5));
    let opts = FrameWriterOptions {
        block_size: 1024,
        codec: codec.parse().unwrap(),
        ..Default::default()
    };
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_data(&data).unwrap();
    (w.finish().unwrap().0, data)
}

fn decode(file: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    decode_stream(file, &mut out, |_| {}).map(|_| out)
}

#[test]
fn every_single_byte_flip_is_detected() {
    for codec in ["lz4:1", "zstd:3", "xz:1", "none", "lz4hc:9"] {
        let (file, data) = small_file(codec);
        assert_eq!(decode(&file).unwrap(), data);
        for i in 0..file.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = file.clone();
                bad[i] ^= bit;
                match decode(&bad) {
                    Err(_) => {}
                    Ok(out) => panic!(
                        "{codec}: flipping bit {bit:#x} of byte {i} went undetected (same data: {})",
                        out == data
                    ),
                }
                assert!(
                    !verify_stream(&bad[..], |_| {}).problems.is_empty(),
                    "{codec}: verify missed byte {i}"
                );
            }
        }
    }
}

#[test]
fn every_truncation_is_detected() {
    let (file, _) = small_file("zstd:3");
    for cut in 0..file.len() {
        let err = decode(&file[..cut]).expect_err("a cut file must not decode");
        if cut > 0 {
            assert!(
                matches!(err, Error::Format(FormatError::Truncated { .. })),
                "cut at {cut}: expected a truncation error, got {err}"
            );
        }
        assert!(FileInfo::read_seekable(Cursor::new(&file[..cut]), false).is_err());
    }
}

#[test]
fn trailing_garbage_is_detected() {
    let (mut file, _) = small_file("zstd:3");
    file.push(0);
    let err = decode(&file).unwrap_err();
    assert!(err.to_string().contains("follow the footer"), "{err}");
}

#[test]
fn errors_name_the_frame_and_offset() {
    let (file, _) = small_file("zstd:3");
    let info = FileInfo::read_seekable(Cursor::new(&file), true).unwrap();
    let f2 = &info.frame_list.as_ref().unwrap()[2];
    // A flipped payload byte in frame 2.
    let mut bad = file.clone();
    bad[f2.file_offset as usize + FRAME_HEADER_LEN + 3] ^= 0x40;
    let err = decode(&bad).unwrap_err();
    assert_eq!(err.frame(), Some(2));
    let msg = err.to_string();
    assert!(msg.contains("frame 2") && msg.contains(&f2.file_offset.to_string()), "{msg}");

    // verify goes on after a damaged payload and names every bad frame.
    bad[info.frame_list.as_ref().unwrap()[0].file_offset as usize + FRAME_HEADER_LEN] ^= 1;
    let report = verify_stream(&bad[..], |_| {});
    let frames: Vec<_> = report.problems.iter().map(|p| p.frame).collect();
    assert_eq!(frames, vec![Some(0), Some(2)]);
    assert_eq!(report.frames, info.frames);
    assert_eq!(report.good_frames, info.frames - 2);
}

/// Set a frame header field and fix its header checksum, so the check behind it is reached.
fn patch_frame(file: &mut [u8], frame_offset: usize, at: usize, bytes: &[u8]) {
    let h = frame_offset;
    file[h + at..h + at + bytes.len()].copy_from_slice(bytes);
    let sum = xxh3(&file[h..h + FRAME_HEADER_LEN - 4]) as u32;
    file[h + FRAME_HEADER_LEN - 4..h + FRAME_HEADER_LEN].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn unknown_codec_and_lying_lengths_are_reported() {
    let (file, _) = small_file("zstd:3");
    let info = FileInfo::read_seekable(Cursor::new(&file), true).unwrap();
    let frames = info.frame_list.unwrap();
    let off = frames[1].file_offset as usize;
    assert_eq!(frames[1].config, "zstd:3");

    let mut bad = file.clone();
    patch_frame(&mut bad, off, 4, &[99]);
    let err = decode(&bad).unwrap_err();
    assert!(
        matches!(err, Error::Format(FormatError::UnknownCodec { frame: 1, id: 99, .. })),
        "{err}"
    );
    assert!(err.to_string().contains(&format!("offset {off}")), "{err}");

    // A header claiming a huge payload: no huge allocation, a clear error.
    let mut bad = file.clone();
    patch_frame(&mut bad, off, 16, &u32::MAX.to_le_bytes());
    assert!(matches!(
        decode(&bad).unwrap_err(),
        Error::Format(FormatError::BadField { field: "stored_len", .. })
    ));
    let mut bad = file.clone();
    patch_frame(&mut bad, off, 12, &(1u32 << 30).to_le_bytes());
    assert!(matches!(
        decode(&bad).unwrap_err(),
        Error::Format(FormatError::BadField { field: "raw_len", .. })
    ));

    // A raw length that is valid for the format but not what the payload decodes to.
    let mut bad = file.clone();
    let raw_len = frames[1].raw_len + 1;
    patch_frame(&mut bad, off, 12, &raw_len.to_le_bytes());
    assert!(decode(&bad).is_err());

    // A frame out of raw order.
    let mut bad = file.clone();
    patch_frame(&mut bad, off, 28, &0u64.to_le_bytes());
    assert!(matches!(
        decode(&bad).unwrap_err(),
        Error::Format(FormatError::BadField { field: "raw_offset", .. })
    ));
}

/// A filter id this build does not know (as `bitshuffle`, id 4, is to a format 1.1 reader)
/// fails the frames that use it with "unknown filter id", and a reader reads every other
/// frame, a frame stored raw included whatever its slots say (docs/FORMAT.md, "Filter ids").
#[test]
fn an_unknown_filter_id_fails_only_the_frames_that_use_it() {
    use adz_core::store::{MemoryStorage, Storage};
    use adz_core::{Reader, ReaderOptions};
    use std::sync::Arc;

    let (file, data) = small_file("zstd:3");
    let info = FileInfo::read_seekable(Cursor::new(&file), true).unwrap();
    let frames = info.frame_list.unwrap();
    assert_eq!(frames[1].config, "zstd:3");
    assert_eq!(frames[3].config, "zstd:3 (stored raw)");
    let mut bad = file.clone();
    for k in [1, 3] {
        patch_frame(&mut bad, frames[k].file_offset as usize, 20, &[200, 4]);
    }
    let err = decode(&bad).unwrap_err().to_string();
    assert!(err.contains("unknown filter id 200") && err.contains("frame 1"), "{err}");

    let store = Arc::new(MemoryStorage::new());
    store.put("f.adz", &bad).unwrap();
    let r = Reader::open(store, "f.adz", ReaderOptions::default()).unwrap();
    let (f1, f2) = (frames[1].raw_offset as usize, frames[2].raw_offset as usize);
    assert_eq!(r.read_range(0, f1 as u64).unwrap(), data[..f1]);
    assert_eq!(r.read_range(f2 as u64, data.len() as u64).unwrap(), data[f2..]);
    let err = r.read_range(f1 as u64, 1).unwrap_err().to_string();
    assert!(err.contains("unknown filter id 200") && err.contains("frame 1"), "{err}");
}

#[test]
fn wrong_magic_and_version() {
    assert!(matches!(
        decode(b"hello world").unwrap_err(),
        Error::Format(FormatError::BadMagic { offset: 0, .. })
    ));
    assert!(matches!(decode(b"").unwrap_err(), Error::Format(FormatError::BadMagic { .. })));
    let (mut file, _) = small_file("lz4:1");
    file[8] = 9;
    let sum = xxh3(&file[..24]);
    file[24..32].copy_from_slice(&sum.to_le_bytes());
    let err = decode(&file).unwrap_err();
    assert!(
        matches!(err, Error::Format(FormatError::UnsupportedVersion { major: 9, .. })),
        "{err}"
    );
}
