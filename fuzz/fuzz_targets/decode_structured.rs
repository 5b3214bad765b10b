//! A valid file built from structured input, then damaged: bytes flipped, cut short or
//! extended. Reading it must never panic, and a read that succeeds must return the original
//! data (damage is reported, never turned into wrong bytes). The frames' filters are then
//! undone on bytes no encoder wrote, as a payload with a forged checksum would reach them.
#![no_main]

use std::io::Cursor;

use adz_core::codec::{apply_filters, undo_filters};
use adz_core::format::{CodecId, CodecSpec, FilterSpec, Filters};
use adz_core::{decode_stream, verify_stream, FileInfo, FrameWriter, FrameWriterOptions};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    data: Vec<u8>,
    repeat: u8,
    codec: u8,
    level: i8,
    shuffle: Option<u8>,
    elem_size: u8,
    block_size: u16,
    damage: Vec<(u32, u8)>,
    cut: Option<u32>,
    append: Vec<u8>,
}

fuzz_target!(|inp: Input| {
    let id = CodecId::ALL[inp.codec as usize % CodecId::ALL.len()];
    let range = id.param_range();
    // Keep levels cheap so the fuzzer explores structure, not slow compressors.
    let param = (*range.start()).max(i32::from(inp.level)).min((*range.end()).min(9));
    let codec = CodecSpec::new(id, param).unwrap_or(CodecSpec::default_for(id));
    // One filter, or two: shuffle, delta, xor or bitshuffle, by the byte's low bits (format
    // 1.1 and 1.2 filters included), with the word size from its high bits; bitshuffle takes
    // any element size. A second filter: a shuffle or a bitshuffle of the word size.
    let filters = match inp.shuffle {
        Some(n) => {
            let w = [1u8, 2, 4, 8][usize::from(n >> 6)];
            let one = match n % 4 {
                0 => FilterSpec::shuffle(n.max(1) % 17 + 1),
                1 => FilterSpec::delta(w),
                2 => FilterSpec::xor(w),
                _ => FilterSpec::bitshuffle(inp.elem_size.max(1)),
            }
            .unwrap();
            let two = match n & 16 {
                0 => FilterSpec::shuffle(w),
                _ => FilterSpec::bitshuffle(w),
            }
            .unwrap();
            if n & 8 != 0 {
                Filters::new(&[one, two]).unwrap()
            } else {
                Filters::new(&[one]).unwrap()
            }
        }
        None => Filters::NONE,
    };
    let opts = FrameWriterOptions {
        block_size: u32::from(inp.block_size.max(1)),
        codec,
        filters,
        ..FrameWriterOptions::default()
    };
    let mut data = Vec::new();
    for _ in 0..=inp.repeat % 8 {
        data.extend_from_slice(&inp.data);
    }
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_data(&data).unwrap();
    let (mut file, _) = w.finish().unwrap();

    let damaged = !inp.damage.is_empty() || inp.cut.is_some() || !inp.append.is_empty();
    for (pos, x) in &inp.damage {
        let n = file.len();
        file[*pos as usize % n] ^= x | 1;
    }
    if let Some(cut) = inp.cut {
        file.truncate(cut as usize % (file.len() + 1));
    }
    file.extend_from_slice(&inp.append);

    let mut out = Vec::new();
    match decode_stream(&file[..], &mut out, |_| {}) {
        Ok(_) => assert_eq!(out, data, "decoded successfully but to different bytes"),
        Err(_) => assert!(damaged, "an undamaged file failed to decode"),
    }
    let report = verify_stream(&file[..], |_| {});
    assert_eq!(report.problems.is_empty(), out == data && decode_ok(&file));
    let _ = FileInfo::read_seekable(Cursor::new(&file), true);

    // Every filter is a bijection: undoing any bytes never fails or panics, and applying the
    // filters again gives the same bytes back.
    let mut scratch = Vec::new();
    let mut undone = vec![0; inp.append.len()];
    undo_filters(&filters, &inp.append, &mut undone, &mut scratch).unwrap();
    let mut again = vec![0; undone.len()];
    apply_filters(&filters, &undone, &mut again, &mut scratch).unwrap();
    assert_eq!(again, inp.append, "{filters}: undo then apply changed the bytes");
});

fn decode_ok(file: &[u8]) -> bool {
    decode_stream(file, std::io::sink(), |_| {}).is_ok()
}
