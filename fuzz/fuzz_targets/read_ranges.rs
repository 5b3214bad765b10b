//! The random-access reader and recovery over a file built from structured input and then
//! damaged (or over raw fuzzer bytes), with random ranges and reader settings. Nothing may
//! panic or allocate without bound; a read that succeeds returns the original bytes; a
//! recovered file decodes to a prefix of the original data.
#![no_main]

use std::sync::Arc;

use adz_core::format::{CodecId, CodecSpec};
use adz_core::store::{MemoryStorage, Storage};
use adz_core::{
    decode_stream, recover_stream, FrameWriter, FrameWriterOptions, Reader, ReaderOptions,
};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    data: Vec<u8>,
    repeat: u8,
    codec: u8,
    block_size: u16,
    damage: Vec<(u32, u8)>,
    cut: Option<u32>,
    /// Use these bytes as the whole file instead.
    raw_file: Option<Vec<u8>>,
    cache: bool,
    threads: u8,
    ranges: Vec<(u32, u32)>,
}

fuzz_target!(|inp: Input| {
    let mut data = Vec::new();
    for _ in 0..=inp.repeat % 8 {
        data.extend_from_slice(&inp.data);
    }
    let (file, original) = match inp.raw_file {
        Some(bytes) => (bytes, None),
        None => {
            let id = CodecId::ALL[inp.codec as usize % CodecId::ALL.len()];
            let param = (*id.param_range().start()).max(1).min(*id.param_range().end());
            let opts = FrameWriterOptions {
                block_size: u32::from(inp.block_size.max(1)),
                codec: CodecSpec::new(id, param).unwrap_or(CodecSpec::default_for(id)),
                ..FrameWriterOptions::default()
            };
            let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
            w.write_data(&data).unwrap();
            let (mut file, _) = w.finish().unwrap();
            for (pos, x) in &inp.damage {
                let n = file.len();
                file[*pos as usize % n] ^= x | 1;
            }
            if let Some(cut) = inp.cut {
                file.truncate(cut as usize % (file.len() + 1));
            }
            (file, Some(data))
        }
    };

    let store = MemoryStorage::new();
    store.put("f.adz", &file).unwrap();
    let opts = ReaderOptions {
        cache_bytes: if inp.cache { 1 << 16 } else { 0 },
        threads: usize::from(inp.threads % 3) + 1,
        max_range_bytes: 1 << 24,
        ..ReaderOptions::default()
    };
    if let Ok(reader) = Reader::open(Arc::new(store.clone()), "f.adz", opts) {
        for &(off, len) in inp.ranges.iter().take(16) {
            let (off, len) = (u64::from(off), u64::from(len));
            if let Ok(got) = reader.read_range(off, len) {
                if let Some(orig) = &original {
                    let start = (off as usize).min(orig.len());
                    let end = (off.saturating_add(len) as usize).min(orig.len());
                    assert_eq!(got, &orig[start..end], "wrong bytes at {off}+{len}");
                }
            }
        }
        let mut out = Vec::new();
        if reader.copy_to(&mut out, 2).is_ok() {
            if let Some(orig) = &original {
                assert_eq!(&out, orig, "copy_to returned wrong bytes");
            }
        }
    }

    // Recovery: never a panic; what it keeps decodes, and is the data's beginning.
    if let Ok(report) = recover_stream(&file[..], store.create("r.adz").unwrap()) {
        let recovered = store.get("r.adz").unwrap();
        let mut back = Vec::new();
        decode_stream(&recovered[..], &mut back, |_| {}).expect("a recovered file decodes");
        assert_eq!(back.len() as u64, report.raw_bytes_kept);
        if let Some(orig) = &original {
            assert!(orig.starts_with(&back), "recovered bytes are not the data's prefix");
        }
    }
});
