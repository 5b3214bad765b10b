//! The adz container format, version 1: bytes on disk and nothing else (no codec, no threads,
//! no I/O policy). The specification is `docs/FORMAT.md`; this crate implements it.
//!
//! A file is a [`FileHeader`], then self-describing frames (each a [`FrameHeader`] and its
//! payload), then a trailer ([`Index`] entries and a [`Footer`]) that a reader finds from the
//! file's last bytes.
//!
//! ```
//! use adz_format::{CodecSpec, FileHeader, Filters, Footer, FrameHeader, Index, TrailerBuilder,
//!                  FOOTER_LEN, xxh3};
//!
//! // Lay out a file with one frame that stores 5 raw bytes as they are.
//! let raw = b"hello";
//! let mut file = FileHeader::new(1 << 20)?.encode().to_vec();
//! let frame = FrameHeader::new(CodecSpec::NONE, Filters::NONE, true, 5, 5, 0, xxh3(raw), xxh3(raw));
//! let mut trailer = TrailerBuilder::new();
//! trailer.push(&frame, file.len() as u64);
//! file.extend_from_slice(&frame.encode());
//! file.extend_from_slice(raw);
//! let index_offset = file.len() as u64;
//! file.extend_from_slice(&trailer.encode(index_offset));
//!
//! // Read it back from the end, as a random-access reader does.
//! let footer = Footer::parse(&file[file.len() - FOOTER_LEN..], file.len() as u64)?;
//! let index = Index::parse(&file[footer.index_offset as usize..], &footer)?;
//! assert_eq!(index.raw_size(), 5);
//! assert_eq!(index.frames_for(2..3), 0..1);
//! # Ok::<(), adz_format::Error>(())
//! ```

mod error;
pub mod frame;
pub mod header;
pub mod ids;
pub mod spec;
pub mod trailer;

pub use error::{Error, Result};
pub use frame::{FrameHeader, FLAG_STORED_RAW, FRAME_HEADER_LEN, FRAME_MAGIC};
pub use header::{FileHeader, FILE_HEADER_LEN, FILE_MAGIC, VERSION_MAJOR, VERSION_MINOR};
pub use ids::{CodecId, FilterId};
pub use spec::{CodecSpec, FilterSpec, Filters, FILTER_SLOTS};
pub use trailer::{
    parse_index_header, Footer, Index, IndexEntry, IndexParser, TrailerBuilder, FOOTER_LEN,
    FOOTER_MAGIC, INDEX_ENTRY_LEN, INDEX_HEADER_LEN, INDEX_MAGIC, MIN_FRAME_LEN,
};

/// The largest raw length of one frame: 64 MiB. No reader allocates more than this for a frame.
pub const MAX_FRAME_RAW_LEN: u32 = 64 << 20;

/// The largest frame count a trailer may declare.
pub const MAX_FRAME_COUNT: u64 = 1 << 40;

/// XXH3-64 with seed 0: the checksum used everywhere in the format.
pub fn xxh3(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}
