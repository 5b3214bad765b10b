//! The adz core: an adaptive compressing [`Writer`] and a random-access [`Reader`] over any
//! [`store::Storage`] (a local file system, memory, S3), and the frame codec both are built on.
//!
//! ```
//! use std::sync::Arc;
//! use adz_core::control::{Link, Strategy};
//! use adz_core::store::MemoryStorage;
//! use adz_core::{Reader, ReaderOptions, WriteOptions, Writer};
//!
//! let store = Arc::new(MemoryStorage::new());
//! let data = b"adaptive compression on the storage I/O path ".repeat(100_000);
//! // S2 (keep-pace): the most ratio that still keeps up with the link, here a given 1GbE.
//! let opts = WriteOptions {
//!     strategy: Strategy::KeepPace,
//!     link: Link::Fixed(117e6),
//!     ..Default::default()
//! };
//! let mut w = Writer::create(&*store, "data.adz", opts)?;
//! w.write(&data)?;
//! let summary = w.finish()?;
//! assert!(summary.ratio() > 5.0);
//!
//! // Read any range back: only the frames it needs are fetched and decoded.
//! let r = Reader::open(store, "data.adz", ReaderOptions::default())?;
//! assert_eq!(r.len(), data.len() as u64);
//! assert_eq!(r.read_range(4_000_000, 16)?, &data[4_000_000..4_000_016]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Without a controller or threads, [`FrameWriter`] writes frames of one codec to any
//! `io::Write`, and [`Decoder`] reads a stream forward:
//!
//! ```
//! use std::io::Read;
//! use adz_core::{Decoder, FrameWriter, FrameWriterOptions};
//!
//! let data = b"adaptive compression on the storage I/O path ".repeat(1000);
//! let opts = FrameWriterOptions { block_size: 4096, codec: "zstd:3".parse()?, ..Default::default() };
//! let mut w = FrameWriter::new(Vec::new(), opts)?;
//! w.write_data(&data)?;
//! let (file, _summary) = w.finish()?;
//!
//! let mut back = Vec::new();
//! Decoder::new(&file[..]).read_to_end(&mut back)?;
//! assert_eq!(back, data);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analyze;
pub mod cost;
pub mod dataset;
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

pub use dataset::{Dataset, DatasetError, DatasetReader, DatasetWriter, PartCheck};
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
    decode_stream, verify_stream, DecodeStats, Decoder, FrameProblem, FrameWriter,
    FrameWriterOptions, VerifyReport, DEFAULT_BLOCK_SIZE,
};

pub use adz_codec as codec;
pub use adz_control as control;
pub use adz_format as format;
pub use adz_store as store;
