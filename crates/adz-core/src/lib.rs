//! The adz core: blocks to frames and back, and the writers and readers built on that.
//!
//! ```
//! use std::io::Read;
//! use adz_core::{Decoder, FrameWriter, WriterOptions};
//!
//! let data = b"adaptive compression on the storage I/O path ".repeat(1000);
//! let opts = WriterOptions { block_size: 4096, codec: "zstd:3".parse()?, ..Default::default() };
//! let mut w = FrameWriter::new(Vec::new(), opts)?;
//! w.write_data(&data)?;
//! let (file, summary) = w.finish()?;
//! assert!(summary.ratio() > 5.0);
//!
//! let mut back = Vec::new();
//! Decoder::new(&file[..]).read_to_end(&mut back)?;
//! assert_eq!(back, data);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analyze;
pub mod cost;
mod error;
mod frame_codec;
pub mod info;
pub mod open;
pub mod pipeline;
mod pool;
pub mod predict;
pub mod reader;
pub mod recompress;
pub mod recover;
pub mod scan;
mod shadow;
pub mod stream;
mod summary;

pub use error::{Error, PipelineError, Result};
pub use frame_codec::{FrameDecoder, FrameEncoder};
pub use info::FileInfo;
pub use pipeline::{
    Abandoned, Predict, Progress, TraceRecord, TraceSink, WriteHandle, WriteOptions, WriteSummary,
    Writer,
};
pub use reader::{ReadStats, Reader, ReaderCursor, ReaderOptions};
pub use recover::{recover, recover_sized, recover_stream, RecoverReport};
pub use scan::{FrameScanner, ScannedFrame};
pub use stream::{
    decode_stream, verify_stream, DecodeStats, Decoder, FrameProblem, FrameWriter, VerifyReport,
    WriterOptions, DEFAULT_BLOCK_SIZE,
};

pub use adz_codec as codec;
pub use adz_control as control;
pub use adz_format as format;
pub use adz_store as store;
