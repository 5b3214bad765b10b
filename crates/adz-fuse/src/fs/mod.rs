//! The file system: inodes over paths of the source, reads through `Reader`, writes streamed
//! through the `Writer` or staged and compressed on close or fsync.
//!
//! Locks: the `State` mutex guards the inode and handle tables and is held only briefly. A
//! file being written has a `Staging` mutex, held across a write into its stream and across a
//! commit. Lock order: a staging lock before the state lock, never the other way round.
//!
//! Modules: `namespace` (paths, attributes, listing, renames), `read` and `frames` (the read
//! path, the shared cache and read-ahead), `dataset` (committed datasets as read-only files),
//! `write` (streams, staging and commits), `ops` (the FUSE operations).

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use adz_core::dataset::{Dataset, DatasetReader};
use adz_core::store::{KeepAttributes, LocalStorage, NullStorage, Storage, Throttled, Upload};
use adz_core::{FrameWriter, FrameWriterOptions, Reader, ReaderOptions, WriteOptions, Writer};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use nix::sys::stat::UtimensatFlags;
use nix::sys::time::TimeSpec;

use crate::{Error, MountOptions, STAGING_DIR};

mod dataset;
mod frames;
mod namespace;
mod ops;
mod read;
mod source;
mod write;

use dataset::*;
pub(crate) use frames::Counters;
use frames::{Frames, NextPart, Seq};
use namespace::*;
use read::*;
pub(crate) use source::S3Source;
use source::{Ident, Meta};
use write::*;

/// How long the kernel may cache a name. Changes made through the mount invalidate it;
/// changes made to the source behind the mount's back show after this.
const ENTRY_TTL: Duration = Duration::from_secs(1);
/// Attributes are not cached: a commit on close replaces the adz file (new ctime, and times
/// that were those of the staging file), and `tar c` fails when they differ between its
/// stat before and after reading a file.
const ATTR_TTL: Duration = Duration::ZERO;

/// Makes staging file names unique within the process.
static STAGING_COUNTER: AtomicU64 = AtomicU64::new(0);
/// Identifies each opened version of a file in the shared frame cache.
static READER_ID: AtomicU64 = AtomicU64::new(1);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Answers an operation that returns nothing but success or an errno.
fn answer(reply: ReplyEmpty, r: Result<(), Errno>) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

fn errno(e: &io::Error) -> Errno {
    match e.raw_os_error() {
        Some(n) => Errno::from_i32(n),
        None => match e.kind() {
            io::ErrorKind::NotFound => Errno::ENOENT,
            io::ErrorKind::PermissionDenied => Errno::EACCES,
            io::ErrorKind::AlreadyExists => Errno::EEXIST,
            io::ErrorKind::InvalidInput => Errno::EINVAL,
            _ => Errno::EIO,
        },
    }
}

/// The errno of a failed write or commit: `ENOSPC` where a cause says that the store (or the
/// file system under it or under the spool) is full or over a quota, `EIO` otherwise.
fn write_errno(e: &(dyn std::error::Error + 'static)) -> Errno {
    use adz_core::store::Error as StoreError;
    let mut cur = Some(e);
    while let Some(e) = cur {
        if e.downcast_ref::<StoreError>().is_some_and(StoreError::is_storage_full) {
            return Errno::ENOSPC;
        }
        if let Some(io) = e.downcast_ref::<io::Error>() {
            let full = matches!(io.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT));
            if full || io.kind() == io::ErrorKind::StorageFull {
                return Errno::ENOSPC;
            }
            // A storage error carried inside an I/O error: its source() skips it.
            if io.get_ref().is_some_and(|inner| write_errno(inner) == Errno::ENOSPC) {
                return Errno::ENOSPC;
            }
        }
        // The same for a shared cause (the write pipeline's): an Arc's source() skips it.
        type Shared = Arc<dyn std::error::Error + Send + Sync>;
        if e.downcast_ref::<Shared>().is_some_and(|inner| write_errno(&**inner) == Errno::ENOSPC) {
            return Errno::ENOSPC;
        }
        cur = e.source();
    }
    Errno::EIO
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    adz_core::store::chain_text(e)
}

/// What a visible path is backed by in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `NAME.adz`, shown as `NAME`.
    Adz,
    /// Anything else, shown as it is.
    Plain,
    /// A committed dataset, shown as `NAME` (read-only); resolved to its latest manifest's
    /// key in the store, `NAME.manifest/vN`.
    Dataset,
}

#[derive(Default)]
struct Node {
    /// The visible path, relative to the root ("" for the root).
    path: PathBuf,
    staging: Option<Arc<Mutex<Staging>>>,
    reader: Option<Arc<OpenReader>>,
    /// The dataset version last opened or stat'ed (a dataset's node).
    dataset: Option<Arc<OpenDataset>>,
    /// Open handles.
    open: u32,
    /// Removed (unlinked, or replaced by a rename) while open: nothing is committed.
    unlinked: bool,
}

enum Handle {
    Plain {
        ino: u64,
        file: Arc<File>,
    },
    /// An object of an object store that is not an adz file: read as it is.
    Object {
        ino: u64,
        key: String,
        len: u64,
    },
    /// `seq`: where its reads stand, for read-ahead; `writes`: opened for writing.
    Adz {
        ino: u64,
        append: bool,
        writes: bool,
        seq: Arc<Mutex<Seq>>,
    },
    /// A committed dataset, bound to the version it opened; read-only.
    Dataset {
        ino: u64,
        ds: Arc<OpenDataset>,
        seq: Arc<Mutex<Seq>>,
    },
}

#[derive(Default)]
struct State {
    nodes: HashMap<u64, Node>,
    by_path: HashMap<PathBuf, u64>,
    next_ino: u64,
    handles: HashMap<u64, Handle>,
    next_fh: u64,
}

impl State {
    fn ino_for(&mut self, path: &Path) -> u64 {
        if let Some(&ino) = self.by_path.get(path) {
            return ino;
        }
        self.next_ino += 1;
        let ino = self.next_ino;
        self.nodes.insert(ino, Node { path: path.to_path_buf(), ..Default::default() });
        self.by_path.insert(path.to_path_buf(), ino);
        ino
    }

    fn path(&self, ino: u64) -> Result<PathBuf, Errno> {
        self.nodes.get(&ino).map(|n| n.path.clone()).ok_or(Errno::ENOENT)
    }

    /// The name no longer refers to its node (unlink, or replaced by a rename).
    fn detach(&mut self, path: &Path) {
        if let Some(ino) = self.by_path.remove(path) {
            if let Some(n) = self.nodes.get_mut(&ino) {
                n.unlinked = true;
                if n.open == 0 {
                    self.nodes.remove(&ino);
                }
            }
        }
    }
}

/// The file system served by a mount (see the crate docs).
pub struct AdzFs {
    /// The source directory; for an object store, the spool directory (never listed).
    root: PathBuf,
    /// The bucket prefix served, when the source is an object store.
    s3: Option<S3Source>,
    staging_dir: PathBuf,
    storage: LocalStorage,
    /// For the empty file a create publishes at once: no fsync (its content is nothing).
    quick_storage: LocalStorage,
    write: WriteOptions,
    throttle: Option<f64>,
    read_only: bool,
    decode_threads: usize,
    frames: Arc<Frames>,
    state: Mutex<State>,
    is_root: bool,
    /// Streams open (at most `write::MAX_STREAMS`).
    streams: Arc<AtomicUsize>,
    stream_writes: bool,
}

impl std::fmt::Debug for AdzFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdzFs").field("root", &self.root).finish_non_exhaustive()
    }
}

impl AdzFs {
    /// The counters of the read path, shared with the [`Mount`](crate::Mount).
    pub(crate) fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.frames.counters)
    }

    /// The file system over `source` (an existing directory).
    pub fn new(source: &Path, opts: &MountOptions) -> Result<AdzFs, Error> {
        let root = fs::canonicalize(source).map_err(|e| src_err_at(source, e))?;
        let staging_dir = root.join(STAGING_DIR);
        AdzFs::build(root, staging_dir, None, opts)
    }

    /// The file system over an object store's prefix; staging files go to `opts.spool`.
    pub(crate) fn on_store(s3: S3Source, opts: &MountOptions) -> Result<AdzFs, Error> {
        let spool = match &opts.spool {
            Some(p) => p.clone(),
            None => std::env::temp_dir().join("adz-mount-spool"),
        };
        if !opts.read_only {
            match fs::create_dir_all(&spool) {
                Ok(()) => fs::set_permissions(&spool, fs::Permissions::from_mode(0o700))
                    .map_err(|e| src_err_at(&spool, e))?,
                Err(e) => return Err(src_err_at(&spool, e)),
            }
        }
        let spool = fs::canonicalize(&spool).unwrap_or(spool);
        AdzFs::build(spool.clone(), spool, Some(s3), opts)
    }

    fn build(
        root: PathBuf,
        staging_dir: PathBuf,
        s3: Option<S3Source>,
        opts: &MountOptions,
    ) -> Result<AdzFs, Error> {
        let storage = if s3.is_some() && opts.read_only {
            LocalStorage::new(std::env::temp_dir())
        } else {
            LocalStorage::new(&root)
        }
        .map_err(|e| src_err_at(&root, e.into()))?;
        if !opts.read_only {
            match fs::create_dir(&staging_dir) {
                Ok(()) => fs::set_permissions(&staging_dir, fs::Permissions::from_mode(0o700))
                    .map_err(|e| src_err_at(&staging_dir, e))?,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(src_err_at(&staging_dir, e)),
            }
            if let Ok(left) = fs::read_dir(&staging_dir) {
                let left: Vec<_> = left.filter_map(|e| e.ok()).map(|e| e.path()).collect();
                if !left.is_empty() {
                    log::warn!(
                        "{}: {} staging file(s) left by an earlier mount that died: raw bytes never committed; the committed versions are unchanged",
                        staging_dir.display(),
                        left.len()
                    );
                }
            }
        }
        let mut state = State { next_ino: 1, next_fh: 1, ..Default::default() };
        state.nodes.insert(1, Node::default());
        state.by_path.insert(PathBuf::new(), 1);
        Ok(AdzFs {
            quick_storage: storage.clone().sync_on_commit(false),
            storage,
            root,
            s3,
            staging_dir,
            write: opts.write.clone(),
            throttle: opts.throttle,
            read_only: opts.read_only,
            decode_threads: opts.decode_threads,
            frames: Arc::new(Frames::new(
                opts.cache_bytes,
                opts.read_ahead_bytes,
                opts.fuse_threads,
            )),
            state: Mutex::new(state),
            is_root: nix::unistd::geteuid().is_root(),
            streams: Arc::default(),
            stream_writes: opts.stream_writes,
        })
    }

    fn node_staging(&self, ino: u64) -> Option<Arc<Mutex<Staging>>> {
        lock(&self.state).nodes.get(&ino).and_then(|n| n.staging.clone())
    }

    fn new_handle(&self, h: Handle) -> u64 {
        let mut st = lock(&self.state);
        st.next_fh += 1;
        let fh = st.next_fh;
        let ino = match &h {
            Handle::Plain { ino, .. }
            | Handle::Adz { ino, .. }
            | Handle::Object { ino, .. }
            | Handle::Dataset { ino, .. } => *ino,
        };
        if let Some(n) = st.nodes.get_mut(&ino) {
            n.open += 1;
        }
        st.handles.insert(fh, h);
        fh
    }

    fn open_ino(&self, ino: u64, flags: i32) -> Result<u64, Errno> {
        let rel = lock(&self.state).path(ino)?;
        let (kind, path, meta) = self.resolve(&rel)?;
        let acc = flags & libc::O_ACCMODE;
        let writes = acc != libc::O_RDONLY || flags & libc::O_TRUNC != 0;
        if writes && self.read_only {
            return Err(Errno::EROFS);
        }
        match kind {
            Kind::Plain => {
                if meta.is_dir() {
                    return Err(Errno::EISDIR);
                }
                if self.s3.is_some() {
                    // Objects that are not adz files are read as they are, never changed.
                    if writes {
                        return Err(Errno::EPERM);
                    }
                    let key = path.to_str().ok_or(Errno::EINVAL)?.to_owned();
                    return Ok(self.new_handle(Handle::Object { ino, key, len: meta.len }));
                }
                let file = OpenOptions::new()
                    .read(acc != libc::O_WRONLY)
                    .write(acc != libc::O_RDONLY)
                    .custom_flags(flags & (libc::O_APPEND | libc::O_TRUNC | libc::O_NOFOLLOW))
                    .open(&path)
                    .map_err(|e| errno(&e))?;
                Ok(self.new_handle(Handle::Plain { ino, file: Arc::new(file) }))
            }
            Kind::Dataset => {
                // Changed only by `adz dataset commit` and `gc`, never through the mount.
                if writes {
                    return Err(REFUSED);
                }
                let ds = self.open_dataset(ino, &path, &meta)?;
                Ok(self.new_handle(Handle::Dataset { ino, ds, seq: Arc::default() }))
            }
            Kind::Adz => {
                let append = flags & libc::O_APPEND != 0;
                let writes = acc != libc::O_RDONLY;
                let fh = self.new_handle(Handle::Adz { ino, append, writes, seq: Arc::default() });
                if flags & libc::O_TRUNC != 0 {
                    if let Err(e) = self.truncate(ino, 0) {
                        self.close_handle(fh);
                        return Err(e);
                    }
                }
                Ok(fh)
            }
        }
    }

    fn close_handle(&self, fh: u64) -> Option<(u64, bool)> {
        let mut st = lock(&self.state);
        let h = st.handles.remove(&fh)?;
        let (ino, adz) = match h {
            Handle::Plain { ino, .. }
            | Handle::Object { ino, .. }
            | Handle::Dataset { ino, .. } => (ino, false),
            Handle::Adz { ino, .. } => (ino, true),
        };
        let mut last = false;
        if let Some(n) = st.nodes.get_mut(&ino) {
            n.open = n.open.saturating_sub(1);
            last = n.open == 0;
            if last && n.unlinked && n.staging.is_none() {
                st.nodes.remove(&ino);
            }
        }
        Some((ino, adz && last))
    }

    fn owner(&self, req: &Request) -> Option<(u32, u32)> {
        self.is_root.then(|| (req.uid(), req.gid()))
    }

    fn writable(&self) -> Result<(), Errno> {
        if self.read_only {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }
}

fn src_err_at(p: &Path, source: io::Error) -> Error {
    Error::Source { path: p.to_path_buf(), source }
}
