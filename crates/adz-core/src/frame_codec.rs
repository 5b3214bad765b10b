//! One block to one frame and back: filters, codec, raw fallback and checksums. Used by every
//! writer and reader, so the rules of docs/FORMAT.md live in one place.

use adz_codec::{apply_filters, max_compressed_len, undo_filters, CodecContext, CodecId};
use adz_format::{xxh3, CodecSpec, Filters, FrameHeader, FRAME_HEADER_LEN, MAX_FRAME_RAW_LEN};

use crate::{Error, Result};

/// Encodes blocks into frames. One per worker thread: it owns reusable codec contexts and
/// buffers.
#[derive(Default)]
pub struct FrameEncoder {
    ctx: CodecContext,
    filtered: Vec<u8>,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for FrameEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameEncoder").finish_non_exhaustive()
    }
}

impl FrameEncoder {
    /// A new encoder.
    pub fn new() -> FrameEncoder {
        FrameEncoder::default()
    }

    /// Encode `raw` (1 ..= `MAX_FRAME_RAW_LEN` bytes, starting at `raw_offset` of the file's raw
    /// data) and append the frame (header and payload) to `out`.
    ///
    /// The compressed payload is kept only if it is at most `keep_ratio` × the raw length and
    /// strictly shorter; otherwise the frame is stored raw. Codec `none` with filters keeps the
    /// filtered bytes (same length), for downstream compressors that benefit from them.
    pub fn encode(
        &mut self,
        raw: &[u8],
        raw_offset: u64,
        codec: CodecSpec,
        filters: Filters,
        keep_ratio: f64,
        out: &mut Vec<u8>,
    ) -> Result<FrameHeader> {
        let (header, payload_is_raw) =
            self.encode_split(raw, raw_offset, codec, filters, keep_ratio, out)?;
        if payload_is_raw {
            out.extend_from_slice(raw);
        }
        Ok(header)
    }

    /// As [`encode`](Self::encode), but when the frame is stored raw only its header is
    /// appended to `out` and the second value is `true`: the payload is `raw` itself, which the
    /// caller writes after the header. A writer that still holds `raw` saves copying it.
    pub fn encode_split(
        &mut self,
        raw: &[u8],
        raw_offset: u64,
        codec: CodecSpec,
        filters: Filters,
        keep_ratio: f64,
        out: &mut Vec<u8>,
    ) -> Result<(FrameHeader, bool)> {
        let start = out.len();
        let r = self.encode_at(raw, raw_offset, codec, filters, keep_ratio, out, start);
        match r {
            Ok((header, payload_is_raw, end)) => {
                out.truncate(end);
                Ok((header, payload_is_raw))
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }

    /// As [`encode_split`](Self::encode_split), but the frame is written over `out` from
    /// `start` and `out` is not shortened: the frame is `out[start..end]` (`end` is the third
    /// value), and what follows it is left over from earlier frames. A caller that keeps a
    /// frame buffer at the longest length it has had saves zeroing it for every block
    /// (docs/decisions/0025-no-per-block-overhead-on-the-data-path.md).
    #[allow(clippy::too_many_arguments)] // encode_split's arguments and where to write
    pub fn encode_at(
        &mut self,
        raw: &[u8],
        raw_offset: u64,
        codec: CodecSpec,
        filters: Filters,
        keep_ratio: f64,
        out: &mut Vec<u8>,
        start: usize,
    ) -> Result<(FrameHeader, bool, usize)> {
        let raw_len = block_len(raw)?;
        let checksum = xxh3(raw);
        // Grow `out` only where it is short: what it holds past `start` is overwritten.
        let reserve = |out: &mut Vec<u8>, n: usize| {
            if out.len() < n {
                out.resize(n, 0);
            }
        };
        reserve(out, start + FRAME_HEADER_LEN);

        let src: &[u8] = if filters.is_empty() {
            raw
        } else {
            self.filtered.resize(raw.len(), 0);
            apply_filters(&filters, raw, &mut self.filtered, &mut self.scratch)
                .map_err(|source| Error::Codec { frame: 0, offset: 0, source })?;
            &self.filtered
        };

        let kept = if codec.id() == CodecId::None {
            if filters.is_empty() {
                None
            } else {
                let at = start + FRAME_HEADER_LEN;
                reserve(out, at + src.len());
                out[at..at + src.len()].copy_from_slice(src);
                Some(raw.len())
            }
        } else {
            let limit = ((raw.len() as f64) * keep_ratio.clamp(0.0, 1.0)) as usize;
            let bound = max_compressed_len(codec.id(), src.len());
            reserve(out, start + FRAME_HEADER_LEN + bound);
            let n = self
                .ctx
                .compress_into(
                    codec,
                    src,
                    &mut out[start + FRAME_HEADER_LEN..start + FRAME_HEADER_LEN + bound],
                )
                .map_err(|source| Error::Codec { frame: 0, offset: 0, source })?;
            (n < raw.len() && n <= limit && n > 0).then_some(n)
        };

        let (stored_len, payload_checksum, end) = match kept {
            Some(n) => {
                let end = start + FRAME_HEADER_LEN + n;
                (n as u32, xxh3(&out[start + FRAME_HEADER_LEN..end]), end)
            }
            // A stored-raw payload is the raw data: its checksum is already known.
            None => (raw_len, checksum, start + FRAME_HEADER_LEN),
        };
        let stored_raw = kept.is_none();
        let header = FrameHeader::new(
            codec,
            filters,
            stored_raw,
            raw_len,
            stored_len,
            raw_offset,
            checksum,
            payload_checksum,
        );
        out[start..start + FRAME_HEADER_LEN].copy_from_slice(&header.encode());
        Ok((header, stored_raw, end))
    }
}

/// A block's length as a frame header holds it: 1 to `MAX_FRAME_RAW_LEN` bytes.
fn block_len(raw: &[u8]) -> Result<u32> {
    u32::try_from(raw.len()).ok().filter(|n| (1..=MAX_FRAME_RAW_LEN).contains(n)).ok_or_else(|| {
        Error::Config(format!("block of {} bytes: must be 1..={MAX_FRAME_RAW_LEN}", raw.len()))
    })
}

/// Decodes frames. One per reader thread.
#[derive(Default)]
pub struct FrameDecoder {
    ctx: CodecContext,
    filtered: Vec<u8>,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for FrameDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameDecoder").finish_non_exhaustive()
    }
}

/// Check the payload of a frame stored raw (header `h` parsed; the payload is the raw data):
/// its length and both checksums, from one pass over it. The errors are
/// [`decode`](FrameDecoder::decode)'s.
pub(crate) fn check_stored_raw(
    h: &FrameHeader,
    payload: &[u8],
    frame: u64,
    offset: u64,
) -> Result<()> {
    if !h.stored_raw() || payload.len() != h.stored_len as usize || h.stored_len != h.raw_len {
        return Err(Error::Config(format!(
            "frame {frame}: {} payload bytes for a raw frame of {} / {}",
            payload.len(),
            h.stored_len,
            h.raw_len
        )));
    }
    let computed = xxh3(payload);
    for (stored, payload_sum) in [(h.payload_checksum, true), (h.raw_checksum, false)] {
        if computed != stored {
            let e = if payload_sum {
                adz_format::Error::PayloadChecksum { frame, offset, stored, computed }
            } else {
                adz_format::Error::DataChecksum { frame, offset, stored, computed }
            };
            return Err(e.into());
        }
    }
    Ok(())
}

impl FrameDecoder {
    /// A new decoder.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Decode the payload of frame number `frame` (header at file offset `offset`, already
    /// parsed) into `out`, which must be `h.raw_len` bytes, and check the data checksum.
    /// On error `out` holds no meaningful data.
    pub fn decode(
        &mut self,
        h: &FrameHeader,
        payload: &[u8],
        frame: u64,
        offset: u64,
        out: &mut [u8],
    ) -> Result<()> {
        if payload.len() != h.stored_len as usize || out.len() != h.raw_len as usize {
            return Err(Error::Config(format!(
                "frame {frame}: decode given {} payload / {} output bytes for a frame of {} / {}",
                payload.len(),
                out.len(),
                h.stored_len,
                h.raw_len
            )));
        }
        let codec_err = |source| Error::Codec { frame, offset, source };
        if h.stored_raw() {
            check_stored_raw(h, payload, frame, offset)?;
            out.copy_from_slice(payload);
            return Ok(());
        }
        // Damaged payloads stop here, before any codec sees them.
        h.check_payload(payload, frame, offset)?;
        let codec =
            h.codec().ok_or(adz_format::Error::UnknownCodec { frame, offset, id: h.codec_id })?;
        let filters = h.filters()?;
        if filters.is_empty() {
            self.ctx.decompress_into(codec.id(), payload, out).map_err(codec_err)?;
        } else {
            self.filtered.resize(out.len(), 0);
            self.ctx.decompress_into(codec.id(), payload, &mut self.filtered).map_err(codec_err)?;
            undo_filters(&filters, &self.filtered, out, &mut self.scratch).map_err(codec_err)?;
        }
        let computed = xxh3(out);
        if computed != h.raw_checksum {
            return Err(adz_format::Error::DataChecksum {
                frame,
                offset,
                stored: h.raw_checksum,
                computed,
            }
            .into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adz_format::FilterSpec;

    fn round_trip(raw: &[u8], codec: &str, filters: Filters) -> FrameHeader {
        let mut enc = FrameEncoder::new();
        let mut out = Vec::new();
        let h = enc.encode(raw, 0, codec.parse().unwrap(), filters, 1.0, &mut out).unwrap();
        let parsed = FrameHeader::parse(&out, 0, 0).unwrap();
        assert_eq!(parsed, h);
        assert_eq!(out.len() as u64, h.frame_len());
        let mut back = vec![0; raw.len()];
        FrameDecoder::new().decode(&h, &out[FRAME_HEADER_LEN..], 0, 0, &mut back).unwrap();
        assert_eq!(back, raw);
        h
    }

    #[test]
    fn a_raw_frame_is_checked_against_both_checksums_in_one_pass() {
        let noise = adz_datagen::generate(adz_datagen::Kind::Random, 5000, 2);
        let h = round_trip(&noise, "zstd:3", Filters::NONE);
        assert!(h.stored_raw());
        check_stored_raw(&h, &noise, 0, 0).unwrap();
        // A payload that its checksums do not match: a payload checksum error.
        let mut bad = noise.clone();
        bad[4000] ^= 1;
        let e = check_stored_raw(&h, &bad, 7, 0).unwrap_err();
        assert!(matches!(e, Error::Format(adz_format::Error::PayloadChecksum { frame: 7, .. })));
        // A header whose raw checksum disagrees with its payload checksum: a data checksum
        // error, from the raw check and from decode alike.
        let mut h2 = h;
        h2.raw_checksum ^= 1;
        for e in [
            check_stored_raw(&h2, &noise, 7, 0).unwrap_err(),
            FrameDecoder::new().decode(&h2, &noise, 7, 0, &mut vec![0; 5000]).unwrap_err(),
        ] {
            assert!(matches!(e, Error::Format(adz_format::Error::DataChecksum { frame: 7, .. })));
        }
        // A payload of the wrong length is refused before it is hashed.
        assert!(check_stored_raw(&h, &noise[1..], 7, 0).is_err());
    }

    #[test]
    fn compressible_is_compressed_incompressible_is_raw() {
        let text = b"the quick brown fox jumps over the lazy dog. ".repeat(100);
        let h = round_trip(&text, "zstd:3", Filters::NONE);
        assert!(!h.stored_raw() && h.stored_len < 400);
        let noise = adz_datagen::generate(adz_datagen::Kind::Random, 5000, 1);
        let h = round_trip(&noise, "lz4:1", Filters::NONE);
        assert!(h.stored_raw(), "pseudo-random bytes should not shrink with lz4");
        let h = round_trip(b"x", "zstd:3", Filters::NONE);
        assert!(h.stored_raw());
    }

    #[test]
    fn a_frame_written_over_a_longer_buffer_is_the_appended_frame() {
        // encode_at leaves what follows the frame from earlier frames: the frame itself must
        // be exactly what encode appends to an empty buffer, for every kind of payload.
        let text = b"the quick brown fox jumps over the lazy dog. ".repeat(2000);
        let noise = adz_datagen::generate(adz_datagen::Kind::Random, 60_000, 1);
        let shuffle = Filters::new(&[FilterSpec::shuffle(4).unwrap()]).unwrap();
        let cases: [(&[u8], &str, Filters); 5] = [
            (&noise, "zstd:3", Filters::NONE), // stored raw, longest
            (&text, "lz4:1", Filters::NONE),   // compressed, short
            (&noise, "none", shuffle),         // filtered bytes kept
            (&text, "zstd:1", shuffle),        // filtered and compressed
            (b"x", "zstd:3", Filters::NONE),   // raw, one byte
        ];
        let mut enc = FrameEncoder::new();
        let mut reused = vec![0xAA; 200_000];
        for (raw, codec, filters) in cases {
            let codec: CodecSpec = codec.parse().unwrap();
            let mut fresh = Vec::new();
            let (h, split) =
                FrameEncoder::new().encode_split(raw, 7, codec, filters, 0.97, &mut fresh).unwrap();
            let before = reused.len();
            let (h2, split2, end) =
                enc.encode_at(raw, 7, codec, filters, 0.97, &mut reused, 5).unwrap();
            assert_eq!((h2, split2), (h, split), "{codec}");
            assert_eq!(&reused[5..end], &fresh[..], "{codec}");
            assert_eq!(reused.len(), before, "{codec}: a long enough buffer is not resized");
            assert_eq!(reused[..5], [0xAA; 5], "{codec}: bytes before start are left alone");
        }
    }

    #[test]
    fn none_with_filter_keeps_filtered_payload() {
        let f = Filters::new(&[FilterSpec::shuffle(2).unwrap()]).unwrap();
        let mut out = Vec::new();
        let h =
            FrameEncoder::new().encode(b"adz adz!", 0, CodecSpec::NONE, f, 1.0, &mut out).unwrap();
        assert!(!h.stored_raw());
        assert_eq!(&out[FRAME_HEADER_LEN..], b"azazd d!");
        round_trip(b"adz adz!", "none", f);
    }

    #[test]
    fn keep_ratio_forces_raw() {
        let text = b"abcabcabcabcabcabcabcabcabcabcabcabc".repeat(10);
        let mut out = Vec::new();
        let h = FrameEncoder::new()
            .encode(&text, 0, "zstd:1".parse().unwrap(), Filters::NONE, 0.0001, &mut out)
            .unwrap();
        assert!(h.stored_raw());
    }

    #[test]
    fn damaged_payload_is_caught_before_the_codec() {
        let text = b"0123456789".repeat(500);
        let mut out = Vec::new();
        let h = FrameEncoder::new()
            .encode(&text, 0, "zstd:3".parse().unwrap(), Filters::NONE, 1.0, &mut out)
            .unwrap();
        for i in FRAME_HEADER_LEN..out.len() {
            let mut bad = out.clone();
            bad[i] ^= 0x20;
            let mut back = vec![0; text.len()];
            let err = FrameDecoder::new()
                .decode(&h, &bad[FRAME_HEADER_LEN..], 7, 1234, &mut back)
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Format(adz_format::Error::PayloadChecksum {
                        frame: 7,
                        offset: 1234,
                        ..
                    })
                ),
                "byte {i}: {err}"
            );
        }
    }

    #[test]
    fn wrong_data_behind_a_valid_payload_checksum_is_caught() {
        // A codec that decodes to different bytes (or a forged payload with a matching payload
        // checksum) is still caught by the raw checksum.
        let text = b"0123456789".repeat(500);
        let mut out = Vec::new();
        let mut h = FrameEncoder::new()
            .encode(&text, 0, "zstd:3".parse().unwrap(), Filters::NONE, 1.0, &mut out)
            .unwrap();
        h.raw_checksum ^= 1;
        let mut back = vec![0; text.len()];
        let err = FrameDecoder::new()
            .decode(&h, &out[FRAME_HEADER_LEN..], 7, 1234, &mut back)
            .unwrap_err();
        assert_eq!(err.frame(), Some(7));
        assert!(matches!(err, Error::Format(adz_format::Error::DataChecksum { .. })));
    }

    #[test]
    fn corrupt_codec_stream_with_fixed_checksum_is_an_error_naming_the_frame() {
        let text = b"0123456789".repeat(500);
        let mut out = Vec::new();
        let h = FrameEncoder::new()
            .encode(&text, 0, "zstd:3".parse().unwrap(), Filters::NONE, 1.0, &mut out)
            .unwrap();
        // Re-checksum each damaged payload so the codec itself must reject it (or the raw
        // checksum catch the wrong data).
        for i in FRAME_HEADER_LEN..out.len() {
            let mut bad = out.clone();
            bad[i] ^= 0x20;
            let mut hh = h;
            hh.payload_checksum = xxh3(&bad[FRAME_HEADER_LEN..]);
            let mut back = vec![0; text.len()];
            let err = FrameDecoder::new()
                .decode(&hh, &bad[FRAME_HEADER_LEN..], 7, 1234, &mut back)
                .unwrap_err();
            assert_eq!(err.frame(), Some(7), "byte {i}: {err}");
        }
    }

    #[test]
    fn empty_block_is_refused() {
        let err = FrameEncoder::new()
            .encode(b"", 0, CodecSpec::NONE, Filters::NONE, 1.0, &mut Vec::new())
            .unwrap_err();
        assert!(matches!(err, Error::Config(_)));
    }
}
