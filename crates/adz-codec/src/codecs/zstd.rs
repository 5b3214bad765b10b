//! `zstd` (codec id 3): one zstd frame (RFC 8878) that records its content size.
//!
//! The compression and decompression contexts are created on first use and kept: a zstd
//! context holds megabytes of tables at high levels, and re-creating it per 1 MiB block would
//! cost more than compressing a block at a fast level. The level is a parameter of the kept
//! context, set only when it changes.

use ::zstd::bulk::{Compressor, Decompressor};
use ::zstd::zstd_safe::{self, CParameter};
use adz_format::CodecId;

use super::{check_param, dst_too_small};
use crate::{Codec, Error, Result};

/// The magic number every zstd frame starts with (skippable frames have others).
const ZSTD_MAGIC: [u8; 4] = 0xFD2F_B528_u32.to_le_bytes();

#[derive(Default)]
pub(crate) struct ZstdCodec {
    compressor: Option<Compressor<'static>>,
    /// The level `compressor` is set to.
    level: i32,
    decompressor: Option<Decompressor<'static>>,
}

/// `ZSTD_compressBound`: the worst case of single-shot compression at any level.
pub(crate) fn max_compressed_len(src_len: usize) -> usize {
    zstd_safe::compress_bound(src_len)
}

fn corrupt(message: impl Into<String>) -> Error {
    Error::corrupt(CodecId::Zstd, message)
}

impl ZstdCodec {
    fn compressor(&mut self, level: i32) -> Result<&mut Compressor<'static>> {
        let fail = |e: std::io::Error| Error::compress(CodecId::Zstd, e.to_string());
        let compressor = match self.compressor.take() {
            Some(c) if self.level == level => c,
            Some(mut c) => {
                c.set_parameter(CParameter::CompressionLevel(level)).map_err(fail)?;
                c
            }
            None => {
                let mut c = Compressor::new(level).map_err(fail)?;
                // The defaults, made explicit because the format depends on them: the frame
                // records its content size (a reader checks it against the frame header before
                // decoding), and carries no checksum (adz checksums the raw data itself).
                c.set_parameter(CParameter::ContentSizeFlag(true)).map_err(fail)?;
                c.set_parameter(CParameter::ChecksumFlag(false)).map_err(fail)?;
                c
            }
        };
        self.level = level;
        Ok(self.compressor.insert(compressor))
    }

    fn decompressor(&mut self) -> Result<&mut Decompressor<'static>> {
        let decompressor = match self.decompressor.take() {
            Some(d) => d,
            None => {
                Decompressor::new().map_err(|e| corrupt(format!("cannot create decoder: {e}")))?
            }
        };
        Ok(self.decompressor.insert(decompressor))
    }
}

impl Codec for ZstdCodec {
    fn id(&self) -> CodecId {
        CodecId::Zstd
    }

    fn max_compressed_len(&self, src_len: usize) -> usize {
        max_compressed_len(src_len)
    }

    fn compress_into(&mut self, param: i32, src: &[u8], dst: &mut [u8]) -> Result<usize> {
        check_param(CodecId::Zstd, param)?;
        let bound = max_compressed_len(src.len());
        // `ZSTD_compress2`: one frame, whatever the input size.
        match self.compressor(param)?.compress_to_buffer(src, dst) {
            Ok(written) => Ok(written),
            Err(_) if dst.len() < bound => Err(dst_too_small(bound, dst.len())),
            Err(e) => Err(Error::compress(CodecId::Zstd, e.to_string())),
        }
    }

    fn decompress_into(&mut self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        // The format stores exactly one frame. `ZSTD_decompressDCtx` would also accept several
        // concatenated frames, skippable frames, or an empty input, so check the shape first.
        if !src.starts_with(&ZSTD_MAGIC) {
            return Err(corrupt("not a zstd frame (bad magic number)"));
        }
        let frame_len = zstd_safe::find_frame_compressed_size(src)
            .map_err(|code| corrupt(zstd_safe::get_error_name(code)))?;
        if frame_len != src.len() {
            return Err(corrupt(format!(
                "{} bytes follow the zstd frame",
                src.len().saturating_sub(frame_len)
            )));
        }
        match zstd_safe::get_frame_content_size(src) {
            Ok(Some(size)) if size != dst.len() as u64 => {
                return Err(corrupt(format!(
                    "frame content size is {size} bytes, expected {}",
                    dst.len()
                )));
            }
            Ok(_) => {}
            Err(_) => return Err(corrupt("bad frame header")),
        }
        // Single-shot decoding writes straight into `dst` (which is also its window), so it
        // allocates nothing per frame, and fails rather than write past `dst`.
        let n = self
            .decompressor()?
            .decompress_to_buffer(src, dst)
            .map_err(|e| corrupt(e.to_string()))?;
        if n != dst.len() {
            return Err(corrupt(format!("decodes to {n} bytes, expected {}", dst.len())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(codec: &mut ZstdCodec, level: i32, src: &[u8]) -> Vec<u8> {
        let mut dst = vec![0; max_compressed_len(src.len())];
        let n = codec.compress_into(level, src, &mut dst).unwrap();
        dst.truncate(n);
        dst
    }

    #[test]
    fn one_frame_with_content_size() {
        let src = b"0123456789".repeat(1000);
        let mut codec = ZstdCodec::default();
        let payload = compress(&mut codec, 3, &src);
        assert_eq!(zstd_safe::find_frame_compressed_size(&payload), Ok(payload.len()));
        assert_eq!(zstd_safe::get_frame_content_size(&payload).ok(), Some(Some(src.len() as u64)));
        assert_eq!(::zstd::bulk::decompress(&payload, src.len()).unwrap(), src);
    }

    /// The kept context really changes level: level 19 beats level -7 on text.
    #[test]
    fn level_changes_take_effect_on_a_reused_context() {
        let src: Vec<u8> =
            (0..20_000u32).flat_map(|i| format!("{} {}\n", i % 97, i / 7).into_bytes()).collect();
        let mut codec = ZstdCodec::default();
        let fast = compress(&mut codec, -7, &src).len();
        let slow = compress(&mut codec, 19, &src).len();
        let fast_again = compress(&mut codec, -7, &src).len();
        assert!(slow < fast, "level 19 {slow} bytes vs level -7 {fast}");
        assert_eq!(fast, fast_again);
    }

    #[test]
    fn rejects_two_frames_and_skippable_frames() {
        let mut codec = ZstdCodec::default();
        let one = compress(&mut codec, 3, b"hello hello hello");
        let mut two = one.clone();
        two.extend_from_slice(&one);
        let mut dst = vec![0; 34];
        let err = codec.decompress_into(&two, &mut dst).unwrap_err();
        assert!(err.to_string().contains("follow the zstd frame"), "{err}");
        // A skippable frame: magic 0x184D2A50, length 4, 4 bytes.
        let skippable = [0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        assert!(codec.decompress_into(&skippable, &mut []).is_err());
        assert!(codec.decompress_into(&[], &mut []).is_err());
    }

    #[test]
    fn accepts_a_frame_without_content_size() {
        // Another writer (a streaming one) may leave the size out; the length check still holds.
        let src = b"no size recorded here, no size recorded here".to_vec();
        let mut c = Compressor::new(3).unwrap();
        c.set_parameter(CParameter::ContentSizeFlag(false)).unwrap();
        let payload = c.compress(&src).unwrap();
        assert_eq!(zstd_safe::get_frame_content_size(&payload).ok(), Some(None));
        let mut codec = ZstdCodec::default();
        let mut dst = vec![0; src.len()];
        codec.decompress_into(&payload, &mut dst).unwrap();
        assert_eq!(dst, src);
        let mut long = vec![0; src.len() + 1];
        assert!(codec.decompress_into(&payload, &mut long).is_err());
        let mut short = vec![0; src.len() - 1];
        assert!(codec.decompress_into(&payload, &mut short).is_err());
    }
}
