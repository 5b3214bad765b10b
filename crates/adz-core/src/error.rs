use std::io;
use std::sync::Arc;

use thiserror::Error;

/// Errors of the adz core: a damaged file, a codec failure, or the I/O underneath.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a valid adz file (or not where they should be).
    #[error(transparent)]
    Format(#[from] adz_format::Error),
    // Messages leave the cause to `source()`, so a chain printed with `{:#}` shows it once.
    /// A codec failed on a frame: for decoding, the payload is damaged.
    #[error("frame {frame} at offset {offset}")]
    Codec {
        /// Frame number.
        frame: u64,
        /// File offset of the frame header.
        offset: u64,
        /// What the codec said.
        #[source]
        source: adz_codec::Error,
    },
    /// Reading or writing the underlying file or stream failed.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The storage underneath failed.
    #[error(transparent)]
    Store(#[from] adz_store::Error),
    /// The object is there but the bytes of one frame could not be fetched: a server error,
    /// a broken connection, retries given up (an object store that found its copy of those
    /// bytes damaged answers so). The frame is named; other frames may still read. Failures
    /// about the whole object (not found, no bucket, bad credentials) stay [`Error::Store`].
    #[error("frame {frame} at offset {offset}: fetching its {len} stored bytes failed")]
    FrameFetch {
        /// Frame number.
        frame: u64,
        /// File offset of the frame header.
        offset: u64,
        /// Stored length of the frame (header and payload).
        len: u64,
        /// What the storage said.
        #[source]
        source: adz_store::Error,
    },
    /// The write pipeline stopped: a sink error, a dropped writer, a failed worker. The
    /// message says which, and the source (if any) why; nothing was committed.
    #[error(transparent)]
    Pipeline(PipelineError),
    /// A codec failed while the predictor compressed a sample.
    #[error("predicting")]
    Predict(#[source] adz_codec::Error),
    /// An option has a value that cannot work.
    #[error("invalid option: {0}")]
    Config(String),
    /// A writer option asks for more than adz allows or the machine has: too many threads
    /// or buffers, or buffers whose memory is not available. Nothing was created.
    #[error("{option} {value} is too large: {why}")]
    Limit {
        /// The option (`threads`, `buffers`).
        option: &'static str,
        /// The value given (or, for a default, the value it came to).
        value: u64,
        /// Why it is refused, with the limit.
        why: String,
    },
    /// A read asks for more bytes at once than the reader allows (it would allocate them).
    #[error("a read of {len} bytes at offset {offset} is above the limit of {limit} bytes per call; read in pieces or stream the file")]
    RangeTooLarge {
        /// Where the read starts.
        offset: u64,
        /// Bytes asked for.
        len: u64,
        /// The reader's limit.
        limit: u64,
    },
}

/// Why a write pipeline stopped ([`Error::Pipeline`]): what it was doing, and the error
/// underneath (a storage error keeps its I/O cause: "No space left on device", a broken pipe).
#[derive(Debug, Clone, Error)]
#[error("write failed: {what}")]
pub struct PipelineError {
    what: String,
    #[source]
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl PipelineError {
    pub(crate) fn new(what: impl Into<String>) -> PipelineError {
        PipelineError { what: what.into(), source: None }
    }

    pub(crate) fn caused_by(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> PipelineError {
        PipelineError { what: what.into(), source: Some(Arc::new(source)) }
    }

    /// What the pipeline was doing when it stopped (without the cause).
    pub fn what(&self) -> &str {
        &self.what
    }
}

/// `Result` with this crate's [`Error`](enum@Error).
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Error {
        Error::Io { context: context.into(), source }
    }

    /// The frame the error is about, if it is about one frame's contents or its fetch.
    pub fn frame(&self) -> Option<u64> {
        match self {
            Error::Codec { frame, .. } | Error::FrameFetch { frame, .. } => Some(*frame),
            Error::Format(adz_format::Error::DataChecksum { frame, .. })
            | Error::Format(adz_format::Error::PayloadChecksum { frame, .. })
            | Error::Format(adz_format::Error::UnknownCodec { frame, .. }) => Some(*frame),
            _ => None,
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io { source, .. } => source,
            Error::Config(_) | Error::RangeTooLarge { .. } | Error::Limit { .. } => {
                io::Error::new(io::ErrorKind::InvalidInput, e)
            }
            // The bytes could not be fetched, which says nothing about whether they are valid.
            Error::FrameFetch { .. } => io::Error::other(e),
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}
