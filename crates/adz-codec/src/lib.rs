//! Block codecs and filters for adz: compress one block into a caller's buffer with the codec
//! a frame names, and undo it, reusing per-thread contexts across blocks.
//!
//! The codec table is docs/FORMAT.md "Codec ids" (`none`, `lz4`, `lz4hc`, `zstd`, `xz`), the
//! filter table "Filter ids" (`shuffle`, `delta`, `xor`, `bitshuffle`). Ids and validated
//! parameters ([`CodecSpec`], [`Filters`]) come from `adz-format` and are re-exported here.
//!
//! ```
//! use adz_codec::{apply_filters, max_compressed_len, undo_filters, CodecContext, CodecSpec,
//!                 FilterSpec, Filters};
//!
//! // A block of f64 values: shuffle:8 puts their similar high bytes side by side.
//! let raw: Vec<u8> = (0..4096).flat_map(|i| (f64::from(i) * 0.5).to_le_bytes()).collect();
//! let filters = Filters::new(&[FilterSpec::shuffle(8)?])?;
//! let spec: CodecSpec = "zstd:3".parse()?;
//!
//! // Encode, as a worker thread does (one context per thread, reused for every block).
//! let mut ctx = CodecContext::new();
//! let mut scratch = Vec::new();
//! let mut filtered = vec![0; raw.len()];
//! apply_filters(&filters, &raw, &mut filtered, &mut scratch)?;
//! let mut payload = vec![0; max_compressed_len(spec.id(), raw.len())];
//! let n = ctx.compress_into(spec, &filtered, &mut payload)?;
//! payload.truncate(n);
//! assert!(payload.len() < raw.len() / 4);
//!
//! // Decode: the frame header says the codec, the filters and the raw length.
//! let mut decoded = vec![0; raw.len()];
//! ctx.decompress_into(spec.id(), &payload, &mut filtered)?;
//! undo_filters(&filters, &filtered, &mut decoded, &mut scratch)?;
//! assert_eq!(decoded, raw);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Decoding treats the payload as hostile: every codec returns [`Error::Corrupt`] for a payload
//! that is damaged, not in its format, or decodes to any length but the destination's, and
//! never panics, writes past the destination, or allocates more than the destination plus its
//! bounded working memory.

mod bitshuffle;
mod codecs;
mod delta;
mod error;
mod filter;
mod shuffle;

pub use adz_format::{CodecId, CodecSpec, FilterId, FilterSpec, Filters};

pub use crate::bitshuffle::{bitshuffle, bitunshuffle};
pub use crate::delta::{delta_decode, delta_encode, xor_decode, xor_encode};
pub use crate::error::{Error, Result};
pub use crate::filter::{apply_filters, undo_filters};
pub use crate::shuffle::{shuffle, unshuffle};

use crate::codecs::{lz4::Lz4Codec, none::NoneCodec, xz::XzCodec, zstd::ZstdCodec, Unsupported};

/// One codec, with whatever reusable state it needs. Keep one instance per worker thread.
pub trait Codec: Send {
    /// The codec's id in the codec table.
    fn id(&self) -> CodecId;

    /// Upper bound of the compressed size of `src_len` bytes, at any parameter.
    fn max_compressed_len(&self, src_len: usize) -> usize;

    /// Compress `src` into `dst` with parameter `param` (level, acceleration or preset, in the
    /// codec table's range) and return the number of bytes written.
    ///
    /// With `dst.len() >= self.max_compressed_len(src.len())` this fails only on a bad
    /// parameter or a library failure ([`Error::Compress`]). A smaller `dst` is allowed: if the
    /// output does not fit the result is [`Error::DstTooSmall`], which lets a caller that only
    /// keeps payloads shorter than the raw data offer `src.len() - 1` bytes and stop early.
    fn compress_into(&mut self, param: i32, src: &[u8], dst: &mut [u8]) -> Result<usize>;

    /// Decompress `src` into exactly `dst`, whose length is the expected raw length.
    ///
    /// Returns [`Error::Corrupt`] if `src` is corrupt, is not this codec's format, or decodes
    /// to any other length. Never panics, never writes past `dst`, and never allocates more than
    /// O(`dst.len()`) plus the codec's bounded working memory, whatever `src` holds.
    fn decompress_into(&mut self, src: &[u8], dst: &mut [u8]) -> Result<()>;
}

/// Upper bound of the compressed size of `src_len` bytes with codec `id` at any parameter, so
/// callers can size buffers.
pub fn max_compressed_len(id: CodecId, src_len: usize) -> usize {
    match id {
        CodecId::None => src_len,
        CodecId::Lz4 | CodecId::Lz4Hc => codecs::lz4::max_compressed_len(src_len),
        CodecId::Zstd => codecs::zstd::max_compressed_len(src_len),
        CodecId::Xz => codecs::xz::max_compressed_len(src_len),
        _ => src_len,
    }
}

/// A worker thread's codecs, each created on first use and reused across blocks.
///
/// Creating a context allocates nothing; the zstd contexts (the only codec state worth keeping,
/// megabytes at high levels) are made the first time a block needs them.
pub struct CodecContext {
    none: NoneCodec,
    lz4: Lz4Codec,
    lz4hc: Lz4Codec,
    zstd: ZstdCodec,
    xz: XzCodec,
    unsupported: Unsupported,
}

impl CodecContext {
    /// A context with no codec state allocated yet.
    pub fn new() -> Self {
        CodecContext {
            none: NoneCodec,
            lz4: Lz4Codec::fast(),
            lz4hc: Lz4Codec::high(),
            zstd: ZstdCodec::default(),
            xz: XzCodec,
            unsupported: Unsupported(CodecId::None),
        }
    }

    /// The codec for `id`.
    pub fn codec(&mut self, id: CodecId) -> &mut dyn Codec {
        match id {
            CodecId::None => &mut self.none,
            CodecId::Lz4 => &mut self.lz4,
            CodecId::Lz4Hc => &mut self.lz4hc,
            CodecId::Zstd => &mut self.zstd,
            CodecId::Xz => &mut self.xz,
            // An id added to adz-format before this crate implements it: every call errs.
            _ => {
                self.unsupported = Unsupported(id);
                &mut self.unsupported
            }
        }
    }

    /// Compress `src` into `dst` with `spec`; see [`Codec::compress_into`].
    pub fn compress_into(&mut self, spec: CodecSpec, src: &[u8], dst: &mut [u8]) -> Result<usize> {
        self.codec(spec.id()).compress_into(spec.param(), src, dst)
    }

    /// Decompress `src`, a payload of codec `id`, into exactly `dst`; see
    /// [`Codec::decompress_into`].
    pub fn decompress_into(&mut self, id: CodecId, src: &[u8], dst: &mut [u8]) -> Result<()> {
        self.codec(id).decompress_into(src, dst)
    }
}

impl Default for CodecContext {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_is_send_and_hands_out_the_right_codec() {
        fn assert_send<T: Send>() {}
        assert_send::<CodecContext>();
        let mut ctx = CodecContext::default();
        for id in CodecId::ALL {
            assert_eq!(ctx.codec(id).id(), id);
            assert_eq!(ctx.codec(id).max_compressed_len(1000), max_compressed_len(id, 1000));
        }
    }

    #[test]
    fn out_of_range_parameter_is_refused() {
        let mut ctx = CodecContext::new();
        let mut dst = vec![0; 1000];
        for (id, bad) in [
            (CodecId::None, 1),
            (CodecId::Lz4, 0),
            (CodecId::Lz4Hc, 13),
            (CodecId::Zstd, 23),
            (CodecId::Xz, -1),
        ] {
            let err = ctx.codec(id).compress_into(bad, b"data", &mut dst).unwrap_err();
            assert!(matches!(err, Error::Compress { codec, .. } if codec == id), "{id}: {err:?}");
        }
    }

    /// A destination below the bound is tried, and reported as too small when the output
    /// does not fit; incompressible data does not fit in `len - 1` bytes with any codec.
    #[test]
    fn short_destination_reports_dst_too_small() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let src: Vec<u8> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut ctx = CodecContext::new();
        let mut dst = vec![0; src.len() - 1];
        for spec in ["none", "lz4:1", "lz4hc:9", "zstd:3", "xz:6"] {
            let spec: CodecSpec = spec.parse().unwrap();
            let err = ctx.compress_into(spec, &src, &mut dst).unwrap_err();
            assert!(
                matches!(err, Error::DstTooSmall { available: 4999, needed } if needed == max_compressed_len(spec.id(), 5000)),
                "{spec}: {err:?}"
            );
        }
        // The context is still usable after a failed call.
        let mut big = vec![0; max_compressed_len(CodecId::Zstd, src.len())];
        let spec: CodecSpec = "zstd:3".parse().unwrap();
        let n = ctx.compress_into(spec, &src, &mut big).unwrap();
        let mut back = vec![0; src.len()];
        ctx.decompress_into(CodecId::Zstd, &big[..n], &mut back).unwrap();
        assert_eq!(back, src);
    }
}
