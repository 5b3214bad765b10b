//! `lz4` and `lz4hc` (codec ids 1 and 2): one LZ4 block, no size prefix; the frame header
//! carries the raw length.
//!
//! Neither keeps state: `LZ4_compress_fast` works in a 16 KiB table on the stack, and the `lz4`
//! crate does not expose the `_extState` variants that would let an HC state be reused, so
//! `LZ4_compress_HC` allocates its ~256 KiB state per block (small next to HC's run time).

use ::lz4::block::{self, CompressionMode};
use adz_format::CodecId;

use super::{check_param, dst_too_small};
use crate::{Codec, Error, Result};

/// LZ4 sizes are C `int`s.
const LZ4_MAX_LEN: usize = i32::MAX as usize;

pub(crate) struct Lz4Codec {
    id: CodecId,
}

impl Lz4Codec {
    /// Plain LZ4 (parameter: acceleration).
    pub(crate) fn fast() -> Lz4Codec {
        Lz4Codec { id: CodecId::Lz4 }
    }

    /// LZ4 HC (parameter: level).
    pub(crate) fn high() -> Lz4Codec {
        Lz4Codec { id: CodecId::Lz4Hc }
    }
}

/// `LZ4_COMPRESSBOUND`, computed in Rust so it is defined for every length (the library
/// returns 0 above its 2 GiB input limit, where compression fails anyway).
pub(crate) fn max_compressed_len(src_len: usize) -> usize {
    block::compress_bound(src_len)
        .unwrap_or_else(|_| src_len.saturating_add(src_len / 255).saturating_add(16))
}

impl Codec for Lz4Codec {
    fn id(&self) -> CodecId {
        self.id
    }

    fn max_compressed_len(&self, src_len: usize) -> usize {
        max_compressed_len(src_len)
    }

    fn compress_into(&mut self, param: i32, src: &[u8], dst: &mut [u8]) -> Result<usize> {
        check_param(self.id, param)?;
        let mode = match self.id {
            CodecId::Lz4Hc => CompressionMode::HIGHCOMPRESSION(param),
            _ => CompressionMode::FAST(param),
        };
        let bound = max_compressed_len(src.len());
        // The crate passes `dst.len()` to C as an `int`; a larger buffer would wrap negative.
        let capacity = dst.len().min(LZ4_MAX_LEN);
        // An empty `Vec`'s pointer is dangling, and LZ4_compress_HC's optimal parser (levels
        // 10..=12) dereferences the input pointer even for 0 bytes: give it a real address.
        let real = [0u8; 1];
        let src = if src.is_empty() { &real[..0] } else { src };
        match block::compress_to_buffer(src, Some(mode), false, &mut dst[..capacity]) {
            Ok(written) => Ok(written),
            // LZ4 reports "did not fit" and "failed" alike (it returns 0); with a destination
            // below the bound, "did not fit" is what happened.
            Err(_) if dst.len() < bound => Err(dst_too_small(bound, dst.len())),
            Err(e) => Err(Error::compress(self.id, e.to_string())),
        }
    }

    fn decompress_into(&mut self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        if src.len() > LZ4_MAX_LEN || dst.len() > LZ4_MAX_LEN {
            return Err(Error::corrupt(self.id, "longer than an LZ4 block can be"));
        }
        // `LZ4_decompress_safe` with the exact capacity: it never writes past `dst`, fails if
        // the block would decode to more, and returns how much it decoded.
        match block::decompress_to_buffer(src, Some(dst.len() as i32), dst) {
            Ok(n) if n == dst.len() => Ok(()),
            Ok(n) => Err(Error::corrupt(
                self.id,
                format!("decodes to {n} bytes, expected {}", dst.len()),
            )),
            Err(e) => Err(Error::corrupt(self.id, e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_is_a_bare_block_readable_by_the_library() {
        let src = b"abcabcabcabcabcabcabcabcabcabcabcabc".repeat(10);
        for mut codec in [Lz4Codec::fast(), Lz4Codec::high()] {
            let param = if codec.id == CodecId::Lz4 { 1 } else { 9 };
            let mut dst = vec![0; codec.max_compressed_len(src.len())];
            let n = codec.compress_into(param, &src, &mut dst).unwrap();
            // No 4-byte size prefix: the library decodes it only when told the size.
            let decoded = block::decompress(&dst[..n], Some(src.len() as i32)).unwrap();
            assert_eq!(decoded, src);
            assert!(n < 40, "{n} bytes for 360 repetitive bytes");
        }
    }

    /// Regression: an empty `Vec` (dangling pointer) crashed LZ4_compress_HC at levels 10..=12.
    #[test]
    fn empty_input_at_every_level() {
        let empty: Vec<u8> = Vec::new();
        for (mut codec, params) in [(Lz4Codec::high(), 1..=12), (Lz4Codec::fast(), 1..=3)] {
            for param in params {
                let mut dst = vec![0; 16];
                let n = codec.compress_into(param, &empty, &mut dst).unwrap();
                assert_eq!(&dst[..n], [0], "an empty block is one zero token");
                codec.decompress_into(&dst[..n], &mut []).unwrap();
            }
        }
    }

    #[test]
    fn bound_is_the_library_bound() {
        assert_eq!(max_compressed_len(0), 16);
        assert_eq!(max_compressed_len(1 << 20), block::compress_bound(1 << 20).unwrap());
        assert!(max_compressed_len(usize::MAX) == usize::MAX);
    }
}
