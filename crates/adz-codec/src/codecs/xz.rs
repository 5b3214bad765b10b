//! `xz` (codec id 4): one .xz stream with integrity check "none" (adz checksums the raw data).
//!
//! The encoder is the preset's LZMA2 filter (`lzma_lzma_preset`) with the dictionary cut down
//! to the block. A dictionary longer than the input cannot find more matches, but liblzma sizes
//! the encoder's tables and the decoder's window by the dictionary the stream declares: preset
//! 9 declares 64 MiB. Measured on a 1 MiB block of log-like text (release build): output
//! identical to `Stream::new_easy_encoder` at presets 0, 1, 6 and 9 (within 0.1% at 3, where
//! the smaller hash table finds slightly different matches), the same speed, and peak virtual
//! memory of the process 19 MB instead of 102 MB (preset 6) or 696 MB (preset 9); a reader of
//! the stream reserves a window of about the block instead of 64 MiB.
//!
//! liblzma streams are not reused across blocks: the `liblzma` crate can make a new `Stream`
//! but not re-initialise one. Measured, creating an encoder costs at most 0.8 ms and a decoder
//! microseconds, against 29 ms (preset 0) to 650 ms (preset 9) to compress a 1 MiB block and
//! 5-10 ms to decode it, so a kept context would save at most ~3%.

use adz_format::CodecId;
use liblzma::stream::{Action, Check, Filters, LzmaOptions, Status, Stream};

use super::{check_param, dst_too_small};
use crate::{Codec, Error, Result};

/// Memory limit of the decoder. Streams from any xz preset need at most ~65 MiB (preset 9's
/// 64 MiB dictionary); twice that leaves room for other writers' settings while a hostile
/// stream that declares a 1.5 GiB dictionary is refused before anything is allocated.
const DECODER_MEMLIMIT: u64 = 128 << 20;

/// The smallest dictionary LZMA2 takes.
const DICT_MIN: u32 = 4 << 10;

/// Dictionary size of each preset (liblzma `lzma_encoder_presets.c`).
const PRESET_DICT: [u32; 10] =
    [1 << 18, 1 << 20, 1 << 21, 1 << 22, 1 << 22, 1 << 23, 1 << 23, 1 << 24, 1 << 25, 1 << 26];

pub(crate) struct XzCodec;

/// Worst case of an .xz stream of incompressible data: LZMA2 falls back to stored chunks of at
/// most 64 KiB with a 3-byte header (a chunk is cut when its *compressed* size reaches 64 KiB,
/// so a stored chunk holds at least ~40 KiB; 6 bytes per 32 KiB is a safe margin), plus the
/// stream header and footer (12 + 12), the block header, padding and index (under 100).
pub(crate) fn max_compressed_len(src_len: usize) -> usize {
    src_len.saturating_add(6 * (src_len / (32 << 10) + 1)).saturating_add(128)
}

fn corrupt(message: impl Into<String>) -> Error {
    Error::corrupt(CodecId::Xz, message)
}

fn encoder(preset: u32, src_len: usize) -> Result<Stream, liblzma::stream::Error> {
    let preset_dict = PRESET_DICT.get(preset as usize).copied().unwrap_or(DICT_MIN);
    let fit = u32::try_from(src_len).unwrap_or(u32::MAX).max(DICT_MIN);
    let mut options = LzmaOptions::new_preset(preset)?;
    options.dict_size(preset_dict.min(fit));
    let mut filters = Filters::new();
    filters.lzma2(&options);
    Stream::new_stream_encoder(&filters, Check::None)
}

impl Codec for XzCodec {
    fn id(&self) -> CodecId {
        CodecId::Xz
    }

    fn max_compressed_len(&self, src_len: usize) -> usize {
        max_compressed_len(src_len)
    }

    fn compress_into(&mut self, param: i32, src: &[u8], dst: &mut [u8]) -> Result<usize> {
        check_param(CodecId::Xz, param)?;
        let fail = |e: liblzma::stream::Error| Error::compress(CodecId::Xz, e.to_string());
        let mut stream = encoder(param as u32, src.len()).map_err(fail)?;
        loop {
            let (read, written) = (stream.total_in(), stream.total_out());
            let input = src.get(read as usize..).unwrap_or_default();
            let output = dst.get_mut(written as usize..).unwrap_or_default();
            if stream.process(input, output, Action::Finish).map_err(fail)? == Status::StreamEnd {
                return Ok(stream.total_out() as usize);
            }
            if (stream.total_in(), stream.total_out()) == (read, written) {
                // No progress: the output is full.
                let bound = max_compressed_len(src.len());
                return Err(if dst.len() < bound {
                    dst_too_small(bound, dst.len())
                } else {
                    Error::compress(CodecId::Xz, "output exceeds the computed bound")
                });
            }
        }
    }

    fn decompress_into(&mut self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        // Flags 0: one stream (no concatenation, no padding after it); any integrity check
        // another writer chose is verified.
        let mut stream = Stream::new_stream_decoder(DECODER_MEMLIMIT, 0)
            .map_err(|e| corrupt(format!("cannot create decoder: {e}")))?;
        // Once `dst` is full the decoder gets this one byte: the stream must then end without
        // writing to it, or it decodes to more than `dst` holds.
        let mut probe = [0u8; 1];
        loop {
            let (read, written) = (stream.total_in(), stream.total_out());
            let input = src.get(read as usize..).unwrap_or_default();
            let output = match dst.get_mut(written as usize..) {
                Some(rest) if !rest.is_empty() => rest,
                _ => &mut probe[..],
            };
            let status = stream
                .process(input, output, Action::Finish)
                .map_err(|e| corrupt(e.to_string()))?;
            if stream.total_out() > dst.len() as u64 {
                return Err(corrupt(format!("decodes to more than {} bytes", dst.len())));
            }
            if status == Status::StreamEnd {
                break;
            }
            if (stream.total_in(), stream.total_out()) == (read, written) {
                return Err(corrupt(format!(
                    "stream ends early, after {} of {} bytes",
                    stream.total_out(),
                    dst.len()
                )));
            }
        }
        if stream.total_out() != dst.len() as u64 {
            return Err(corrupt(format!(
                "decodes to {} bytes, expected {}",
                stream.total_out(),
                dst.len()
            )));
        }
        if stream.total_in() != src.len() as u64 {
            return Err(corrupt(format!(
                "{} bytes follow the xz stream",
                src.len() as u64 - stream.total_in()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(preset: i32, src: &[u8]) -> Vec<u8> {
        let mut dst = vec![0; max_compressed_len(src.len())];
        let n = XzCodec.compress_into(preset, src, &mut dst).unwrap();
        dst.truncate(n);
        dst
    }

    #[test]
    fn payload_is_a_standard_xz_stream_without_check() {
        let src = b"xz xz xz xz xz xz xz xz xz xz".repeat(50);
        let payload = compress(6, &src);
        assert_eq!(&payload[..6], b"\xFD7zXZ\0", "xz stream magic");
        assert_eq!(payload[7] & 0x0F, 0, "check type none");
        // liblzma's own one-shot decoder reads it.
        let mut decoded = Vec::with_capacity(src.len());
        let mut d = Stream::new_stream_decoder(u64::MAX, 0).unwrap();
        assert_eq!(
            d.process_vec(&payload, &mut decoded, Action::Finish).unwrap(),
            Status::StreamEnd
        );
        assert_eq!(decoded, src);
    }

    /// The declared dictionary is cut to the block, so a reader allocates little.
    #[test]
    fn dictionary_is_cut_to_the_block() {
        let payload = compress(9, &[7u8; 10_000]);
        let mut d = Stream::new_stream_decoder(1 << 20, 0).unwrap();
        let mut out = Vec::with_capacity(10_000);
        // A 64 MiB dictionary would exceed this 1 MiB memory limit.
        assert_eq!(d.process_vec(&payload, &mut out, Action::Finish).unwrap(), Status::StreamEnd);
        assert_eq!(out.len(), 10_000);
    }

    #[test]
    fn accepts_a_stream_with_a_check_from_another_writer() {
        let src = b"written by xz itself".repeat(20);
        let mut e = Stream::new_easy_encoder(6, Check::Crc64).unwrap();
        let mut payload = Vec::with_capacity(1000);
        assert_eq!(e.process_vec(&src, &mut payload, Action::Finish).unwrap(), Status::StreamEnd);
        let mut dst = vec![0; src.len()];
        XzCodec.decompress_into(&payload, &mut dst).unwrap();
        assert_eq!(dst, src);
    }

    #[test]
    fn rejects_trailing_bytes_and_concatenated_streams() {
        let one = compress(1, b"abcdef");
        let mut dst = [0u8; 6];
        XzCodec.decompress_into(&one, &mut dst).unwrap();
        let mut padded = one.clone();
        padded.extend_from_slice(&[0; 4]);
        assert!(XzCodec.decompress_into(&padded, &mut dst).is_err());
        let mut two = one.clone();
        two.extend_from_slice(&one);
        assert!(XzCodec.decompress_into(&two, &mut dst).is_err());
    }
}
