//! A hostile file for the memory tests of adz-core and adz-cli (included with `#[path]`).

use adz_core::format::{FileHeader, Filters, FrameHeader, TrailerBuilder, FRAME_HEADER_LEN};
use adz_core::FrameEncoder;

/// A valid file of `frames` frames that each claim 64 MiB of zeros: a few KB each in the file
/// (64 frames: 138 KB), 4 GiB decoded.
pub fn zeros_bomb(frames: u64) -> Vec<u8> {
    let raw = vec![0u8; 64 << 20];
    let mut one = Vec::new();
    let h = FrameEncoder::new()
        .encode(&raw, 0, "zstd:1".parse().unwrap(), Filters::NONE, 1.0, &mut one)
        .unwrap();
    drop(raw);
    let payload = one[FRAME_HEADER_LEN..].to_vec();
    let mut file = FileHeader::new(64 << 20).unwrap().encode().to_vec();
    let mut t = TrailerBuilder::new();
    for k in 0..frames {
        let h = FrameHeader { raw_offset: k * (64 << 20), ..h };
        t.push(&h, file.len() as u64);
        file.extend_from_slice(&h.encode());
        file.extend_from_slice(&payload);
    }
    let off = file.len() as u64;
    file.extend_from_slice(&t.encode(off));
    file
}
