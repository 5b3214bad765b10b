use adz_format::{CodecId, FilterId};

/// What can go wrong when encoding or decoding a block.
///
/// Messages from the C libraries are kept as text: they are for people, and the variant already
/// says what a caller can act on (a corrupt payload, a buffer that was too small, a bug).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The compressor failed. With a destination of at least
    /// [`max_compressed_len`](crate::max_compressed_len) bytes this is a bug or an allocation
    /// failure, not a property of the data.
    #[error("{codec} compression failed: {message}")]
    Compress {
        /// The codec that failed.
        codec: CodecId,
        /// The library's message.
        message: String,
    },
    /// The payload is corrupt, is not in this codec's format, or decodes to a different length
    /// than the frame says.
    #[error("corrupt {codec} payload: {message}")]
    Corrupt {
        /// The codec that was decoding.
        codec: CodecId,
        /// What was wrong.
        message: String,
    },
    /// The destination buffer is too small: it is shorter than `needed`
    /// ([`max_compressed_len`](crate::max_compressed_len) for compression) and the output did not
    /// fit in it. A caller that offers only `raw_len - 1` bytes, because it stores a block raw
    /// unless compression saves something, reads this as "did not pay". Also returned by
    /// [`apply_filters`](crate::apply_filters) / [`undo_filters`](crate::undo_filters) with no
    /// filters when the destination is not exactly `needed` bytes.
    #[error("destination buffer too small: {available} bytes, up to {needed} needed")]
    DstTooSmall {
        /// Bytes the operation may need.
        needed: usize,
        /// Bytes the destination has.
        available: usize,
    },
    /// A filter was given buffers of mismatched sizes or a parameter it cannot use.
    #[error("filter {filter}: {message}")]
    Filter {
        /// The filter.
        filter: FilterId,
        /// What was wrong.
        message: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn corrupt(codec: CodecId, message: impl Into<String>) -> Error {
        Error::Corrupt { codec, message: message.into() }
    }

    pub(crate) fn compress(codec: CodecId, message: impl Into<String>) -> Error {
        Error::Compress { codec, message: message.into() }
    }
}
