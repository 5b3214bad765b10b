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
//! # Commit without a conditional put
//!
//! [`Storage`] has no create-if-absent, so a commit claims version N in two steps: it writes
//! its candidate under a name no one else uses, then lists. If it sees a committed `vN`, it
//! removes its candidate and fails with [`DatasetError::CommitConflict`]; if it sees only
//! other candidates for N, it removes its own, waits a random while and tries again (6 times
//! at most); otherwise it writes `vN`. Of two racing commits the one that lists last sees the
//! other's candidate, so at most one writes `vN`, and the backoff lets one through when both
//! saw each other. This needs a store whose list sees every write that finished before it
//! (local files, MinIO, AWS S3 since 2020).

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
fn parse_part_name(dataset: &str, name: &str) -> Option<Placement> {
    let rest = name.strip_prefix(&parts_prefix(dataset))?.strip_suffix(".adz")?;
    let (id, placement) = rest.rsplit_once('.')?;
    check_id(id).ok()?;
    if placement == "append" {
        return Some(Placement::Append);
    }
    let digits = placement.strip_prefix("at-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(Placement::At)
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

/// Writes one part of a dataset through the adaptive [`Writer`]. Nothing is visible until
/// [`finish`](Self::finish); the part is not in the dataset until a [`Dataset::commit`].
#[derive(Debug)]
pub struct DatasetWriter {
    writer: Writer,
    name: String,
}

impl DatasetWriter {
    /// Starts writer `id`'s part of `dataset` (an id of 1-64 ASCII letters, digits, `_`, `-`,
    /// unique among the dataset's writers: a rank number, a host name).
    pub fn create(
        storage: &dyn Storage,
        dataset: &str,
        id: &str,
        placement: Placement,
        opts: WriteOptions,
    ) -> Result<DatasetWriter> {
        let name = part_name(dataset, id, placement)?;
        let writer = Writer::create(storage, &name, opts)?;
        Ok(DatasetWriter { writer, name })
    }

    /// Appends raw bytes to the part.
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        Ok(self.writer.write(data)?)
    }

    /// The part's object name.
    pub fn part_name(&self) -> &str {
        &self.name
    }

    /// Finishes and publishes the part.
    pub fn finish(self) -> Result<WriteSummary> {
        Ok(self.writer.finish()?)
    }
}

/// What [`Dataset::gc`] removed (or, with `dry_run`, would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GcReport {
    /// Parts not in the latest manifest.
    pub parts: Vec<String>,
    /// Manifests older than the latest, and candidates of decided versions.
    pub manifests: Vec<String>,
}

/// How [`Dataset::gc`] works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcOptions {
    /// List what would be removed, remove nothing.
    pub dry_run: bool,
    /// Also remove candidates of the next version: those of a commit that died (which block
    /// every later commit), but also those of a commit running now, which would break the
    /// commit protocol. Only when no commit is running.
    pub stale_candidates: bool,
}

impl GcOptions {
    /// Listing only.
    pub fn dry_run() -> GcOptions {
        GcOptions { dry_run: true, ..Default::default() }
    }
}

/// Operations on a dataset as a whole: commit, load, garbage collection.
#[derive(Debug, Clone, Copy)]
pub struct Dataset;

static TOKEN_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Times a commit that saw only rival candidates tries again before it gives up.
const CLAIM_ATTEMPTS: u32 = 6;

/// A random wait before claim attempt `n` (1..): up to 2^n x 8 ms, about 1 s in all at most.
fn backoff(n: u32) -> std::time::Duration {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(n);
    std::time::Duration::from_micros(1000 + h.finish() % (8000u64 << n.min(CLAIM_ATTEMPTS)))
}

/// A name no other commit uses: the pid, a per-process counter and a random number.
fn unique_token() -> String {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(TOKEN_COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:x}-{:016x}", std::process::id(), h.finish())
}

impl Dataset {
    /// The latest committed version, 0 if none.
    pub fn latest_version(storage: &dyn Storage, dataset: &str) -> Result<u64> {
        let prefix = format!("{}v", manifest_prefix(dataset));
        Ok(storage
            .list(&prefix)?
            .iter()
            .filter_map(|o| parse_version(&prefix, &o.name))
            .max()
            .unwrap_or(0))
    }

    /// Loads the latest manifest; `None` when nothing was committed.
    pub fn latest(storage: &dyn Storage, dataset: &str) -> Result<Option<Manifest>> {
        match Dataset::latest_version(storage, dataset)? {
            0 => Ok(None),
            v => Dataset::load(storage, dataset, v).map(Some),
        }
    }

    /// Loads manifest `version` and checks it.
    pub fn load(storage: &dyn Storage, dataset: &str, version: u64) -> Result<Manifest> {
        let name = manifest_name(dataset, version);
        let size = storage.size(&name)?;
        if size > MAX_MANIFEST_BYTES {
            return Err(DatasetError::BadManifest {
                name,
                reason: format!("{size} bytes, above the limit of {MAX_MANIFEST_BYTES}"),
            });
        }
        let bytes = storage.get(&name)?;
        let manifest: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| DatasetError::BadManifest { name: name.clone(), reason: e.to_string() })?;
        manifest.check(&name, dataset, version)?;
        Ok(manifest)
    }

    /// The parts written so far (committed or not), as a manifest would list them, checked:
    /// each opens as an adz file, placed parts do not overlap.
    pub fn collect(storage: &dyn Storage, dataset: &str) -> Result<Vec<PartEntry>> {
        let mut placed = Vec::new();
        let mut appended = Vec::new();
        for object in storage.list(&parts_prefix(dataset))? {
            let Some(placement) = parse_part_name(dataset, &object.name) else { continue };
            let entry = describe_part(storage, &object.name)?;
            match placement {
                Placement::At(offset) => placed.push(PartEntry { offset, ..entry }),
                Placement::Append => appended.push(entry),
            }
        }
        placed.sort_by(|a, b| (a.offset, a.len, &a.name).cmp(&(b.offset, b.len, &b.name)));
        let mut end = 0u64;
        let mut last: Option<&PartEntry> = None;
        for p in placed.iter().filter(|p| p.len > 0) {
            if let Some(prev) = last.filter(|prev| p.offset < prev.offset + prev.len) {
                return Err(DatasetError::Overlap {
                    first: prev.name.clone(),
                    first_range: prev.range(),
                    second: p.name.clone(),
                    second_range: p.range(),
                });
            }
            end = end.max(p.offset.checked_add(p.len).ok_or_else(|| DatasetError::Overlap {
                first: p.name.clone(),
                first_range: p.offset..u64::MAX,
                second: "the end of the 64-bit byte space".to_owned(),
                second_range: u64::MAX..u64::MAX,
            })?);
            last = Some(p);
        }
        // In byte order of the id (not of the name: `a-b.append` sorts before `a.append`).
        appended.sort_by(|a, b| {
            let id = |n: &str| n.trim_end_matches(".append.adz").to_owned();
            id(&a.name).cmp(&id(&b.name))
        });
        for mut p in appended {
            p.offset = end;
            end += p.len;
            placed.push(p);
        }
        Ok(placed)
    }

    /// Commits every part written so far as the next version and returns its manifest.
    ///
    /// With `base: Some(b)`, the commit succeeds only if the latest version is `b` (0: no
    /// dataset yet), like a compare-and-swap. Fails with [`DatasetError::CommitConflict`] when
    /// another commit took the version, [`DatasetError::Overlap`] when parts overlap; then
    /// nothing was committed.
    pub fn commit(storage: &dyn Storage, dataset: &str, base: Option<u64>) -> Result<Manifest> {
        adz_store::validate_name(dataset)?;
        let latest = Dataset::latest_version(storage, dataset)?;
        if let Some(base) = base.filter(|&b| b != latest) {
            return Err(DatasetError::CommitConflict {
                dataset: dataset.to_owned(),
                version: base + 1,
                why: format!("the latest version is {latest}, not {base}"),
            });
        }
        let version = latest + 1;
        let parts = Dataset::collect(storage, dataset)?;
        let len = parts.iter().map(|p| p.offset + p.len).max().unwrap_or(0);
        let manifest = Manifest {
            kind: MANIFEST_KIND.to_owned(),
            format: MANIFEST_FORMAT,
            dataset: dataset.to_owned(),
            version,
            len,
            parts,
        };
        let bytes =
            serde_json::to_vec_pretty(&manifest).map_err(|e| DatasetError::BadManifest {
                name: manifest_name(dataset, version),
                reason: e.to_string(),
            })?;

        // Claim the version: a candidate under a unique name, then look for rivals. When
        // rivals' candidates are all there is (each may have seen the others), everyone backs
        // off for a random while and tries again, so one of them usually wins.
        let candidates = candidate_prefix(dataset, version);
        let conflict = |why: String| DatasetError::CommitConflict {
            dataset: dataset.to_owned(),
            version,
            why,
        };
        let mut attempt = 0;
        loop {
            let mine = format!("{candidates}{}", unique_token());
            storage.put(&mine, &bytes)?;
            let rivals = match storage.list(&candidates) {
                Ok(list) => list.into_iter().filter(|o| o.name != mine).count(),
                Err(e) => {
                    let _ = storage.delete(&mine);
                    return Err(e.into());
                }
            };
            let committed = match Dataset::latest_version(storage, dataset) {
                Ok(v) => v,
                Err(e) => {
                    let _ = storage.delete(&mine);
                    return Err(e);
                }
            };
            if committed >= version || rivals > 0 {
                let _ = storage.delete(&mine);
                if committed >= version {
                    return Err(conflict(format!("version {committed} is committed")));
                }
                if attempt == CLAIM_ATTEMPTS {
                    return Err(conflict(format!(
                        "{rivals} other candidate(s) for it under {candidates}* after \
                         {CLAIM_ATTEMPTS} tries; `adz dataset gc --stale-candidates` removes \
                         those of a commit that died"
                    )));
                }
                attempt += 1;
                std::thread::sleep(backoff(attempt));
                continue;
            }
            storage.put(&manifest_name(dataset, version), &bytes)?;
            // The committed version now decides; the candidate is no longer needed.
            let _ = storage.delete(&mine);
            return Ok(manifest);
        }
    }

    /// Removes the parts the latest manifest does not list (those of writers that died or
    /// were never committed), the older manifests, and candidates of versions already decided.
    /// Run it when no writer is writing: a part finished after the latest commit is removed
    /// too. Readers of an older version lose it.
    pub fn gc(storage: &dyn Storage, dataset: &str, opts: GcOptions) -> Result<GcReport> {
        let latest = Dataset::latest(storage, dataset)?;
        let version = latest.as_ref().map_or(0, |m| m.version);
        let keep: BTreeSet<&str> =
            latest.iter().flat_map(|m| m.parts.iter().map(|p| p.name.as_str())).collect();
        let mut report = GcReport::default();
        for o in storage.list(&parts_prefix(dataset))? {
            if !keep.contains(o.name.as_str()) {
                report.parts.push(o.name);
            }
        }
        let mprefix = manifest_prefix(dataset);
        for o in storage.list(&mprefix)? {
            let rest = &o.name[mprefix.len()..];
            let v = rest
                .strip_prefix('v')
                .map(|d| (d, false))
                .or(rest.strip_prefix('c').map(|d| (d, true)));
            let Some((d, candidate)) = v else { continue };
            let Some(n) = d.get(..20).and_then(|d| d.parse::<u64>().ok()) else { continue };
            let old = if candidate {
                n <= version || (opts.stale_candidates && n == version + 1)
            } else {
                n < version && d.len() == 20
            };
            if old {
                report.manifests.push(o.name);
            }
        }
        if !opts.dry_run {
            for name in report.parts.iter().chain(&report.manifests) {
                match storage.delete(name) {
                    Ok(()) | Err(adz_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(report)
    }
}

/// Reads a part's trailer: its raw length, stored size and index checksum, the index read
/// whole and checked against its checksum (as [`Reader::open`] does).
fn describe_part(storage: &dyn Storage, name: &str) -> Result<PartEntry> {
    let part_err = |source: crate::Error| DatasetError::part_failed(name, 0..0, source);
    let f = read_footer(storage, name)?;
    // In pieces, each checked before the next is asked for (as `Reader::open` does), so a
    // footer that lies about its index costs one piece.
    let mut parser = IndexParser::new(&f.footer);
    let mut at = f.footer.index_offset;
    while at < f.object_size {
        let end = f.object_size.min(at + INDEX_PIECE);
        let piece = storage.get_range(name, at..end)?;
        parser.feed(&piece).map_err(|e| part_err(e.into()))?;
        at = end;
    }
    let index = parser.finish().map_err(|e| part_err(e.into()))?;
    Ok(PartEntry {
        name: name.to_owned(),
        offset: 0,
        len: index.raw_size(),
        stored: f.object_size,
        index_checksum: format!("{:016x}", f.footer.index_checksum),
    })
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

/// Reads a committed dataset as one file: each read opens (once, then cached) only the parts
/// its range touches, and each part's [`Reader`] decodes only the frames the range needs.
pub struct DatasetReader {
    storage: Arc<dyn Storage>,
    manifest: Manifest,
    opts: ReaderOptions,
    parts: Mutex<Vec<Option<Arc<Reader>>>>,
    /// The indexes of the non-empty parts: their ends increase, so a read binary-searches
    /// them (an empty part may sit inside another's range).
    nonempty: Vec<usize>,
}

impl std::fmt::Debug for DatasetReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatasetReader")
            .field("dataset", &self.manifest.dataset)
            .field("version", &self.manifest.version)
            .field("parts", &self.manifest.parts.len())
            .finish_non_exhaustive()
    }
}

impl DatasetReader {
    /// Opens the latest committed version of `dataset` (one list and one manifest read; no
    /// part is touched yet). The decoded-frame cache of `opts` is shared out among the parts.
    pub fn open(
        storage: Arc<dyn Storage>,
        dataset: &str,
        opts: ReaderOptions,
    ) -> Result<DatasetReader> {
        let manifest = Dataset::latest(&*storage, dataset)?
            .ok_or_else(|| DatasetError::NotFound { dataset: dataset.to_owned() })?;
        Ok(DatasetReader::with_manifest(storage, manifest, opts))
    }

    /// Reads the dataset `manifest` describes.
    pub fn with_manifest(
        storage: Arc<dyn Storage>,
        manifest: Manifest,
        opts: ReaderOptions,
    ) -> DatasetReader {
        let n = manifest.parts.len();
        let nonempty = (0..n).filter(|&i| manifest.parts[i].len > 0).collect();
        DatasetReader { storage, manifest, opts, parts: Mutex::new(vec![None; n]), nonempty }
    }

    /// The manifest read.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The logical length.
    pub fn len(&self) -> u64 {
        self.manifest.len
    }

    /// True if the dataset holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many parts have been opened so far.
    pub fn parts_opened(&self) -> usize {
        self.parts.lock().unwrap_or_else(|e| e.into_inner()).iter().flatten().count()
    }

    /// Part `i`'s reader, opened and checked against the manifest on first use.
    fn part(&self, i: usize) -> Result<Arc<Reader>> {
        if let Some(r) = &self.parts.lock().unwrap_or_else(|e| e.into_inner())[i] {
            return Ok(Arc::clone(r));
        }
        let p = &self.manifest.parts[i];
        let part_err = |source| DatasetError::part_failed(&p.name, p.range(), source);
        let mismatch = |what: String| DatasetError::PartMismatch { part: p.name.clone(), what };
        let f = read_footer(&*self.storage, &p.name).map_err(|e| match e {
            DatasetError::Store(s) => part_err(s.into()),
            DatasetError::Part { source, .. } => part_err(*source),
            other => other,
        })?;
        let sum = format!("{:016x}", f.footer.index_checksum);
        if f.object_size != p.stored || f.footer.raw_size != p.len || sum != p.index_checksum {
            return Err(mismatch(format!(
                "stored {} bytes, raw {}, index checksum {sum}; the manifest says {}, {}, {}",
                f.object_size, f.footer.raw_size, p.stored, p.len, p.index_checksum
            )));
        }
        let n = self.manifest.parts.len().max(1) as u64;
        let opts = ReaderOptions { cache_bytes: self.opts.cache_bytes / n, ..self.opts };
        let reader = Reader::open(Arc::clone(&self.storage), &p.name, opts).map_err(part_err)?;
        if reader.file_len() != p.stored || reader.len() != p.len {
            return Err(mismatch("it was replaced while it was being opened".to_owned()));
        }
        let reader = Arc::new(reader);
        self.parts.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(Arc::clone(&reader));
        Ok(reader)
    }

    /// The parts (indexes) that hold bytes of `range`, with a gap check.
    fn parts_for(&self, range: Range<u64>) -> Result<Vec<usize>> {
        let parts = &self.manifest.parts;
        // The first part that ends after range.start.
        let first =
            self.nonempty.partition_point(|&i| parts[i].offset + parts[i].len <= range.start);
        let mut at = range.start;
        let mut out = Vec::new();
        for &i in &self.nonempty[first..] {
            let p = &parts[i];
            if at >= range.end {
                break;
            }
            if p.offset > at {
                return Err(DatasetError::Gap { gap: at..p.offset.min(range.end) });
            }
            out.push(i);
            at = p.offset + p.len;
        }
        if at < range.end {
            return Err(DatasetError::Gap { gap: at..range.end });
        }
        Ok(out)
    }

    /// Reads raw bytes from logical `offset` into `buf`; returns how many were read:
    /// `buf.len()`, or fewer only at the end (0 at or past it).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let end = offset.saturating_add(buf.len() as u64).min(self.len());
        if offset >= end {
            return Ok(0);
        }
        for i in self.parts_for(offset..end)? {
            let p = &self.manifest.parts[i];
            let reader = self.part(i)?;
            let from = offset.max(p.offset);
            let to = end.min(p.offset + p.len);
            let dst = &mut buf[(from - offset) as usize..(to - offset) as usize];
            let got = reader
                .read_at(from - p.offset, dst)
                .map_err(|source| DatasetError::part_failed(&p.name, p.range(), source))?;
            if got != dst.len() {
                return Err(DatasetError::PartMismatch {
                    part: p.name.clone(),
                    what: format!("it ended {} bytes early", dst.len() - got),
                });
            }
        }
        Ok((end - offset) as usize)
    }

    /// Reads up to `len` raw bytes from `offset` (fewer at the end).
    pub fn read_range(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        if len > self.opts.max_range_bytes {
            return Err(DatasetError::RangeTooLarge { len, limit: self.opts.max_range_bytes });
        }
        let n = len.min(self.len().saturating_sub(offset)) as usize;
        let mut out = vec![0; n];
        let got = self.read_at(offset, &mut out)?;
        out.truncate(got);
        Ok(out)
    }

    /// Decodes the whole dataset to `out`, part after part, each with `threads` decoding
    /// threads (0 = the options' setting); memory is bounded as [`Reader::copy_to`]'s. Fails
    /// at a gap. Returns the bytes written.
    pub fn copy_to<W: Write>(&self, mut out: W, threads: usize) -> Result<u64> {
        let mut written = 0;
        for i in self.parts_for(0..self.len())? {
            let p = &self.manifest.parts[i];
            let reader = self.part(i)?;
            written += reader
                .copy_to(&mut out, threads)
                .map_err(|source| DatasetError::part_failed(&p.name, p.range(), source))?;
        }
        out.flush().map_err(|e| crate::Error::io("flushing the output", e))?;
        Ok(written)
    }
}
