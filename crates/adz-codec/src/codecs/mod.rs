//! One module per entry of the codec table (docs/FORMAT.md, "Codec ids").

pub(crate) mod lz4;
pub(crate) mod none;
pub(crate) mod xz;
pub(crate) mod zstd;

use adz_format::CodecId;

use crate::{Codec, Error, Result};

/// Reject a parameter outside the codec table's range before it reaches a C library, which
/// would silently clamp it and leave a frame header that names a level nobody used.
pub(crate) fn check_param(id: CodecId, param: i32) -> Result<()> {
    let range = id.param_range();
    if range.contains(&param) {
        return Ok(());
    }
    Err(Error::compress(
        id,
        format!("parameter {param} out of range {}..={}", range.start(), range.end()),
    ))
}

/// The error for a destination that is smaller than the bound and turned out too small.
pub(crate) fn dst_too_small(needed: usize, available: usize) -> Error {
    Error::DstTooSmall { needed, available }
}

/// Stands in for a codec id that adz-format knows and this crate does not implement yet, so
/// that [`crate::CodecContext::codec`] never panics.
pub(crate) struct Unsupported(pub(crate) CodecId);

impl Codec for Unsupported {
    fn id(&self) -> CodecId {
        self.0
    }

    fn max_compressed_len(&self, src_len: usize) -> usize {
        src_len
    }

    fn compress_into(&mut self, _param: i32, _src: &[u8], _dst: &mut [u8]) -> Result<usize> {
        Err(Error::compress(self.0, "not implemented by this build of adz-codec"))
    }

    fn decompress_into(&mut self, _src: &[u8], _dst: &mut [u8]) -> Result<()> {
        Err(Error::corrupt(self.0, "not implemented by this build of adz-codec"))
    }
}
