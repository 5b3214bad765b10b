//! Many writers, one dataset: independent writers (processes, MPI ranks, nodes sharing only
//! the store) each write one part, an ordinary adz file, and one atomic commit writes a small
//! versioned manifest that joins the parts into one logical byte space, read as one file.
//!
//! ```
//! use std::sync::Arc;
//! use adz_core::dataset::{Dataset, DatasetReader, DatasetWriter, Placement};
//! use adz_core::store::MemoryStorage;
//! use adz_core::{ReaderOptions, WriteOptions};
//!
//! let store = Arc::new(MemoryStorage::new());
//! // Two ranks, each writing its rows at its displacement.
//! for (rank, rows) in [b"rank 0 rows ".repeat(1000), b"rank 1 rows ".repeat(1000)].iter().enumerate() {
//!     let at = Placement::At((rank * rows.len()) as u64);
//!     let mut w = DatasetWriter::create(&*store, "ckpt", &format!("r{rank}"), at, WriteOptions::default())?;
//!     w.write(rows)?;
//!     w.finish()?;
//! }
//! let manifest = Dataset::commit(&*store, "ckpt", None)?;
//! assert_eq!((manifest.version, manifest.len), (1, 24_000));
//!
//! let r = DatasetReader::open(store, "ckpt", ReaderOptions::default())?;
//! assert_eq!(r.read_range(11_998, 4)?, b"s ra"); // across the two parts
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Names in the store (docs/FORMAT.md, "Datasets")
//!
//! - `NAME.parts/{id}.at-{offset}.adz`: a part placed at a given logical offset;
//!   `NAME.parts/{id}.append.adz`: a part appended at commit, after the placed parts, in id
//!   order.
//! - `NAME.manifest/v{N:020}`: committed manifest version N (JSON); the highest is the dataset.
//! - `NAME.manifest/c{N:020}-{token}`: a commit's candidate for version N (the lock-free
//!   claim, below).
//!
//! # The commit: a conditional put where the store has one
//!
//! Committed manifests are never replaced: version N is the object `vN`, written once. Where
//! the store has a conditional put ([`Storage::put_if_absent`]: S3 and MinIO, `If-None-Match:
//! *`), a commit creates `vN` with it, so of two racing commits exactly one creates it and the
//! other fails with [`DatasetError::CommitConflict`]. A reader lists `v*` and reads the
//! highest, so it sees the old version or the new one, never a mix (decision 0035).
//!
//! Elsewhere (local files) a commit claims version N in two steps: it writes its candidate
//! under a name no one else uses, then lists. If it sees a committed `vN`, it removes its
//! candidate and fails with [`DatasetError::CommitConflict`]; if it sees only other
//! candidates for N, it removes its own, waits a random while and tries again (6 times at
//! most); otherwise it writes `vN`. Of two racing commits the one that lists last sees the
//! other's candidate, so at most one writes `vN`, and the backoff lets one through when both
//! saw each other. This needs a store whose list sees every write that finished before it
//! (local files, MinIO, AWS S3 since 2020), and every committer of one dataset using the same
//! kind of store (decision 0034).

mod commit;
mod reader;
mod writer;

pub use self::commit::{Dataset, GcOptions, GcReport};
pub use self::reader::{DatasetReader, PartCheck};
pub use self::writer::DatasetWriter;

use std::collections::hash_map::RandomState;
use std::collections::BTreeSet;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use adz_format::{Footer, IndexParser, FOOTER_LEN};
use adz_store::Storage;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::{Reader, ReaderOptions, WriteOptions, WriteSummary, Writer};

/// The manifest format this code writes and reads (`"format"` in the JSON).
pub const MANIFEST_FORMAT: u32 = 1;

/// The `"kind"` field of every manifest.
pub const MANIFEST_KIND: &str = "adz-dataset";

/// The largest manifest a reader accepts (about 100,000 parts); a larger one is refused
/// before it is read.
pub const MAX_MANIFEST_BYTES: u64 = 32 << 20;

/// The largest piece of a part's index a commit reads at once.
const INDEX_PIECE: u64 = 4 << 20;

/// The longest writer id.
pub const MAX_ID_LEN: usize = 64;

/// Errors of datasets: what went wrong, naming the dataset or the part.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The dataset has no committed manifest.
    #[error("{dataset}: no committed dataset (no {dataset}.manifest/v* object)")]
    NotFound {
        /// The dataset name.
        dataset: String,
    },
    /// A writer id that cannot be part of an object name.
    #[error("writer id {id:?}: {reason}")]
    InvalidId {
        /// The id given.
        id: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// Two parts claim the same logical bytes; nothing was committed.
    #[error("parts {first} ({first_range:?}) and {second} ({second_range:?}) overlap; nothing was committed")]
    Overlap {
        /// The part that starts first.
        first: String,
        /// Its logical range.
        first_range: Range<u64>,
        /// The part that overlaps it.
        second: String,
        /// Its logical range.
        second_range: Range<u64>,
    },
    /// Another commit took this version first, or is taking it now.
    #[error("{dataset}: commit of version {version} lost to a concurrent commit ({why}); nothing was committed, retry the commit")]
    CommitConflict {
        /// The dataset name.
        dataset: String,
        /// The version both wanted.
        version: u64,
        /// What this commit saw.
        why: String,
    },
    /// A commit was told which writers to expect, and one of them has no finished part
    /// (it died, or has not closed its part yet); nothing was committed.
    #[error("{dataset}: writer {id:?} has no finished part under {dataset}.parts/; nothing was committed (commit after every writer has closed its part)")]
    MissingPart {
        /// The dataset name.
        dataset: String,
        /// The writer id that has no part.
        id: String,
    },
    /// A part is not the one the manifest lists: its size, length or trailer checksum differ
    /// (it was replaced or swapped after the commit).
    #[error("part {part}: {what}; it is not the part the manifest committed")]
    PartMismatch {
        /// The part's object name.
        part: String,
        /// What differs.
        what: String,
    },
    /// Reading (or opening) one part failed; the error underneath names the frame when it is
    /// about one frame. Ranges of other parts still read.
    #[error("part {part} (dataset bytes {range:?})")]
    Part {
        /// The part's object name.
        part: String,
        /// The part's logical range in the dataset.
        range: Range<u64>,
        /// What failed.
        #[source]
        source: Box<crate::Error>,
    },
    /// A read touches logical bytes that no part holds (a gap between parts).
    #[error("dataset bytes {gap:?} are in no part (a gap in the dataset)")]
    Gap {
        /// The bytes no part holds.
        gap: Range<u64>,
    },
    /// A manifest that is not valid.
    #[error("manifest {name}: {reason}")]
    BadManifest {
        /// The manifest's object name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A read asks for more bytes at once than the reader allows.
    #[error("a read of {len} bytes is above the limit of {limit} bytes per call")]
    RangeTooLarge {
        /// Bytes asked for.
        len: u64,
        /// The limit ([`ReaderOptions::max_range_bytes`]).
        limit: u64,
    },
    /// The storage failed.
    #[error(transparent)]
    Store(#[from] adz_store::Error),
    /// Writing a part, or the output of a copy, failed.
    #[error(transparent)]
    Core(#[from] crate::Error),
}

impl DatasetError {
    fn part_failed(part: &str, range: Range<u64>, source: crate::Error) -> DatasetError {
        DatasetError::Part { part: part.to_owned(), range, source: Box::new(source) }
    }

    /// The part the error is about, if one.
    pub fn part(&self) -> Option<&str> {
        match self {
            DatasetError::Part { part, .. } | DatasetError::PartMismatch { part, .. } => Some(part),
            _ => None,
        }
    }

    /// The frame (of [`part`](Self::part)) the error is about, if one.
    pub fn frame(&self) -> Option<u64> {
        match self {
            DatasetError::Part { source, .. } => source.frame(),
            _ => None,
        }
    }
}

/// `Result` with [`DatasetError`].
pub type Result<T, E = DatasetError> = std::result::Result<T, E>;

/// Where a part goes in the dataset's logical byte space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// At this logical offset (an MPI rank's displacement, say).
    At(u64),
    /// After the placed parts, at commit, in writer id order.
    Append,
}

/// One part as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PartEntry {
    /// The part's object name (`NAME.parts/...`).
    pub name: String,
    /// Its first byte in the dataset's logical space.
    pub offset: u64,
    /// Its raw length.
    pub len: u64,
    /// Its size in the store.
    pub stored: u64,
    /// Its footer's index checksum (16 lowercase hex digits): a part replaced or swapped
    /// after the commit is detected when it is opened.
    pub index_checksum: String,
}

impl PartEntry {
    /// The part's logical range.
    pub fn range(&self) -> Range<u64> {
        self.offset..self.offset + self.len
    }
}

/// A dataset's manifest, version `version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Manifest {
    /// Always [`MANIFEST_KIND`].
    pub kind: String,
    /// The manifest format ([`MANIFEST_FORMAT`]).
    pub format: u32,
    /// The dataset's name in the store.
    pub dataset: String,
    /// The commit's version, 1 for the first.
    pub version: u64,
    /// The logical length: the end of the last part.
    pub len: u64,
    /// The parts in logical order.
    pub parts: Vec<PartEntry>,
    /// A token unique to the commit that wrote this manifest, so that a commit whose
    /// conditional put was retried tells its own manifest from a rival's. Absent in
    /// manifests of older adz (readers ignore it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
}

impl Manifest {
    /// The logical ranges no part holds, below [`len`](Self::len).
    pub fn gaps(&self) -> Vec<Range<u64>> {
        let mut gaps = Vec::new();
        let mut at = 0;
        for p in &self.parts {
            if p.offset > at {
                gaps.push(at..p.offset);
            }
            at = at.max(p.offset + p.len);
        }
        gaps
    }

    /// Checks what a reader relies on: kind, format, version, parts in order inside the
    /// dataset's parts, no overlap, the length.
    fn check(&self, object: &str, dataset: &str, version: u64) -> Result<()> {
        let bad = |reason: String| DatasetError::BadManifest { name: object.to_owned(), reason };
        if self.kind != MANIFEST_KIND {
            return Err(bad(format!("kind {:?}, expected {MANIFEST_KIND:?}", self.kind)));
        }
        if self.format != MANIFEST_FORMAT {
            return Err(bad(format!(
                "format {} (this adz reads format {MANIFEST_FORMAT})",
                self.format
            )));
        }
        if self.dataset != dataset || self.version != version {
            return Err(bad(format!(
                "it says dataset {:?} version {}, its name says {dataset:?} version {version}",
                self.dataset, self.version
            )));
        }
        let prefix = parts_prefix(dataset);
        let mut end = 0u64;
        for p in &self.parts {
            if !p.name.starts_with(&prefix) {
                return Err(bad(format!("part {} is not under {prefix}", p.name)));
            }
            if parse_checksum(&p.index_checksum).is_none() {
                return Err(bad(format!("part {}: bad index_checksum", p.name)));
            }
            let Some(p_end) = p.offset.checked_add(p.len) else {
                return Err(bad(format!("part {}: range overflows", p.name)));
            };
            if p.len > 0 && p.offset < end {
                return Err(bad(format!(
                    "part {} overlaps the one before, or is out of order",
                    p.name
                )));
            }
            end = end.max(p_end);
        }
        if end != self.len {
            return Err(bad(format!("len {} but the parts end at {end}", self.len)));
        }
        Ok(())
    }
}

/// `NAME.parts/`: where a dataset's parts are.
pub fn parts_prefix(dataset: &str) -> String {
    format!("{dataset}.parts/")
}

/// `NAME.manifest/`: where a dataset's manifests are.
pub fn manifest_prefix(dataset: &str) -> String {
    format!("{dataset}.manifest/")
}

/// The object name of committed manifest `version`.
pub fn manifest_name(dataset: &str, version: u64) -> String {
    format!("{}v{version:020}", manifest_prefix(dataset))
}

fn candidate_prefix(dataset: &str, version: u64) -> String {
    format!("{}c{version:020}-", manifest_prefix(dataset))
}

/// The object name of writer `id`'s part.
pub fn part_name(dataset: &str, id: &str, placement: Placement) -> Result<String> {
    check_id(id)?;
    Ok(match placement {
        Placement::At(offset) => format!("{}{id}.at-{offset}.adz", parts_prefix(dataset)),
        Placement::Append => format!("{}{id}.append.adz", parts_prefix(dataset)),
    })
}

fn check_id(id: &str) -> Result<()> {
    let invalid = |reason| Err(DatasetError::InvalidId { id: id.to_owned(), reason });
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return invalid("an id has 1 to 64 characters");
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return invalid("an id has only ASCII letters, digits, '_' and '-'");
    }
    Ok(())
}

/// Reads a part's name back: its id and placement; `None` for other objects.
fn parse_part_name<'a>(dataset: &str, name: &'a str) -> Option<(&'a str, Placement)> {
    let rest = name.strip_prefix(&parts_prefix(dataset))?.strip_suffix(".adz")?;
    let (id, placement) = rest.rsplit_once('.')?;
    check_id(id).ok()?;
    if placement == "append" {
        return Some((id, Placement::Append));
    }
    let digits = placement.strip_prefix("at-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(|at| (id, Placement::At(at)))
}

fn parse_version(prefix: &str, name: &str) -> Option<u64> {
    let digits = name.strip_prefix(prefix)?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

fn parse_checksum(s: &str) -> Option<u64> {
    (s.len() == 16 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| u64::from_str_radix(s, 16).ok())
        .flatten()
}

struct FooterRead {
    footer: Footer,
    object_size: u64,
}

fn read_footer(storage: &dyn Storage, name: &str) -> Result<FooterRead> {
    let tail = storage.get_tail(name, FOOTER_LEN as u64)?;
    let footer = Footer::parse(&tail.bytes, tail.object_size)
        .map_err(|e| DatasetError::part_failed(name, 0..0, e.into()))?;
    Ok(FooterRead { footer, object_size: tail.object_size })
}
