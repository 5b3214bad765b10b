//! `none` (codec id 0): the payload is the (filtered) raw data.

use adz_format::CodecId;

use super::{check_param, dst_too_small};
use crate::{Codec, Error, Result};

pub(crate) struct NoneCodec;

impl Codec for NoneCodec {
    fn id(&self) -> CodecId {
        CodecId::None
    }

    fn max_compressed_len(&self, src_len: usize) -> usize {
        src_len
    }

    fn compress_into(&mut self, param: i32, src: &[u8], dst: &mut [u8]) -> Result<usize> {
        check_param(CodecId::None, param)?;
        let available = dst.len();
        let out = dst.get_mut(..src.len()).ok_or_else(|| dst_too_small(src.len(), available))?;
        out.copy_from_slice(src);
        Ok(src.len())
    }

    fn decompress_into(&mut self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::corrupt(
                CodecId::None,
                format!("payload is {} bytes, expected {}", src.len(), dst.len()),
            ));
        }
        dst.copy_from_slice(src);
        Ok(())
    }
}
