//! The file system: inodes over paths of the source, reads through `Reader`, writes through
//! staging files compressed on close or fsync.
//!
//! Locks: the `State` mutex guards the inode and handle tables and is held only briefly. A
//! file being written has a `Staging` mutex, held across a commit (which compresses the whole
//! file). Lock order: a staging lock before the state lock, never the other way round.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use adz_core::store::{LocalStorage, NullStorage, Storage, Throttled, Upload};
use adz_core::{FrameWriter, FrameWriterOptions, Reader, ReaderOptions, WriteOptions, Writer};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use nix::sys::stat::UtimensatFlags;
use nix::sys::time::TimeSpec;

use crate::{Error, MountOptions, STAGING_DIR};
use adz_core::reader::FrameCache;

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
}

/// An opened version of an adz file: bound to a file descriptor, so a rename over the name
/// (a commit) or an unlink does not change what it reads.
struct OpenReader {
    reader: Reader,
    id: u64,
    ident: (u64, u64, i64, i64, u64),
}

fn ident(m: &Metadata) -> (u64, u64, i64, i64, u64) {
    (m.dev(), m.ino(), m.mtime(), m.mtime_nsec(), m.len())
}

/// A read-only [`Storage`] over one open file (the reader's version of an adz file).
#[derive(Debug)]
struct FdStorage {
    file: File,
}

impl Storage for FdStorage {
    fn create(&self, name: &str) -> adz_core::store::Result<Box<dyn Upload>> {
        Err(adz_core::store::Error::Io {
            op: "create",
            name: name.to_owned(),
            source: io::Error::new(io::ErrorKind::Unsupported, "a read-only view"),
        })
    }

    fn get_range(
        &self,
        name: &str,
        range: std::ops::Range<u64>,
    ) -> adz_core::store::Result<Vec<u8>> {
        let size = self.size(name)?;
        adz_core::store::Error::check_range(name, &range, size)?;
        let mut buf = vec![0; (range.end - range.start) as usize];
        self.file.read_exact_at(&mut buf, range.start).map_err(|source| {
            adz_core::store::Error::Io { op: "read", name: name.to_owned(), source }
        })?;
        Ok(buf)
    }

    fn size(&self, name: &str) -> adz_core::store::Result<u64> {
        self.file.metadata().map(|m| m.len()).map_err(|source| adz_core::store::Error::Io {
            op: "stat",
            name: name.to_owned(),
            source,
        })
    }

    fn delete(&self, name: &str) -> adz_core::store::Result<()> {
        Err(adz_core::store::Error::Io {
            op: "delete",
            name: name.to_owned(),
            source: io::Error::new(io::ErrorKind::Unsupported, "a read-only view"),
        })
    }

    fn list(&self, _prefix: &str) -> adz_core::store::Result<Vec<adz_core::store::ObjectMeta>> {
        Ok(Vec::new())
    }
}

/// An upload that gives the new version the mode and owner of the old one before the rename
/// publishes it (so a commit never shows a file with the wrong permissions).
#[derive(Debug)]
struct KeepMeta {
    inner: Box<dyn Upload>,
    mode: u32,
    owner: Option<(u32, u32)>,
}

impl Upload for KeepMeta {
    fn append(&mut self, data: &[u8]) -> adz_core::store::Result<()> {
        self.inner.append(data)
    }
    fn bytes_written(&self) -> u64 {
        self.inner.bytes_written()
    }
    fn temporary_path(&self) -> Option<&Path> {
        self.inner.temporary_path()
    }
    fn commit(self: Box<Self>) -> adz_core::store::Result<u64> {
        if let Some(p) = self.inner.temporary_path() {
            let meta_err = |source| adz_core::store::Error::Io {
                op: "set the mode of",
                name: p.display().to_string(),
                source,
            };
            fs::set_permissions(p, fs::Permissions::from_mode(self.mode)).map_err(meta_err)?;
            if let Some((uid, gid)) = self.owner {
                std::os::unix::fs::lchown(p, Some(uid), Some(gid)).map_err(meta_err)?;
            }
        }
        self.inner.commit()
    }
    fn abort(self: Box<Self>) -> adz_core::store::Result<()> {
        self.inner.abort()
    }
    fn abandon(self: Box<Self>) -> adz_core::store::Result<Option<String>> {
        self.inner.abandon()
    }
}

/// The raw bytes of a file open for writing, until they are committed.
#[derive(Debug, Default)]
struct Staging {
    /// None until the first write or truncate fills it (from the committed version).
    file: Option<File>,
    path: PathBuf,
    /// Holds bytes not yet committed.
    dirty: bool,
    /// Times set while staged, applied again after the commit (which makes a new file).
    times: Option<(TimeSpec, TimeSpec)>,
}

#[derive(Default)]
struct Node {
    /// The visible path, relative to the root ("" for the root).
    path: PathBuf,
    staging: Option<Arc<Mutex<Staging>>>,
    reader: Option<Arc<OpenReader>>,
    /// Open handles.
    open: u32,
    /// Removed (unlinked, or replaced by a rename) while open: nothing is committed.
    unlinked: bool,
}

enum Handle {
    Plain { ino: u64, file: Arc<File> },
    Adz { ino: u64, append: bool },
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
    root: PathBuf,
    staging_dir: PathBuf,
    storage: LocalStorage,
    /// For the empty file a create publishes at once: no fsync (its content is nothing).
    quick_storage: LocalStorage,
    write: WriteOptions,
    throttle: Option<f64>,
    read_only: bool,
    decode_threads: usize,
    cache: Mutex<FrameCache<(u64, usize)>>,
    state: Mutex<State>,
    is_root: bool,
}

impl std::fmt::Debug for AdzFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdzFs").field("root", &self.root).finish_non_exhaustive()
    }
}

fn has_adz_suffix(name: &OsStr) -> bool {
    name.as_bytes().ends_with(b".adz") && name.len() > 4
}

fn is_temp_name(name: &OsStr) -> bool {
    let b = name.as_bytes();
    let has = |m: &[u8]| b.windows(m.len()).any(|w| w == m);
    b.first() == Some(&b'.') && (has(b".adz-tmp-") || has(b".adz-incomplete-"))
}

fn with_adz(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(".adz");
    PathBuf::from(s)
}

fn kind_of(ft: fs::FileType) -> FileType {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        FileType::Directory
    } else if ft.is_symlink() {
        FileType::Symlink
    } else if ft.is_fifo() {
        FileType::NamedPipe
    } else if ft.is_socket() {
        FileType::Socket
    } else if ft.is_char_device() {
        FileType::CharDevice
    } else if ft.is_block_device() {
        FileType::BlockDevice
    } else {
        FileType::RegularFile
    }
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nsecs as u64)
    }
}

fn attr(ino: u64, m: &Metadata, size: u64, times_from: &Metadata) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: m.blocks(),
        atime: time(times_from.atime(), times_from.atime_nsec()),
        mtime: time(times_from.mtime(), times_from.mtime_nsec()),
        ctime: time(times_from.ctime(), times_from.ctime_nsec()),
        crtime: time(m.ctime(), m.ctime_nsec()),
        kind: kind_of(m.file_type()),
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: 4096,
        flags: 0,
    }
}

fn timespec(t: Option<TimeOrNow>) -> TimeSpec {
    match t {
        None => TimeSpec::UTIME_OMIT,
        Some(TimeOrNow::Now) => TimeSpec::UTIME_NOW,
        Some(TimeOrNow::SpecificTime(t)) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => TimeSpec::from_duration(d),
            Err(e) => TimeSpec::from_duration(e.duration()) * -1,
        },
    }
}

fn set_times(p: &Path, a: &TimeSpec, m: &TimeSpec) -> io::Result<()> {
    nix::sys::stat::utimensat(nix::fcntl::AT_FDCWD, p, a, m, UtimensatFlags::NoFollowSymlink)
        .map_err(io::Error::from)
}

impl AdzFs {
    /// The file system over `source` (an existing directory).
    pub fn new(source: &Path, opts: &MountOptions) -> Result<AdzFs, Error> {
        let root = fs::canonicalize(source).map_err(|e| src_err_at(source, e))?;
        let storage = LocalStorage::new(&root).map_err(|e| src_err_at(&root, e.into()))?;
        let staging_dir = root.join(STAGING_DIR);
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
            staging_dir,
            write: opts.write.clone(),
            throttle: opts.throttle,
            read_only: opts.read_only,
            decode_threads: opts.decode_threads,
            cache: Mutex::new(FrameCache::new(opts.cache_bytes)),
            state: Mutex::new(state),
            is_root: nix::unistd::geteuid().is_root(),
        })
    }

    fn hidden(&self, parent: &Path, name: &OsStr) -> bool {
        (parent.as_os_str().is_empty() && name == STAGING_DIR) || is_temp_name(name)
    }

    /// What `rel` is backed by: `NAME.adz` (a regular file) wins over `NAME`; a regular file
    /// named `*.adz` is only ever seen without its suffix.
    fn resolve(&self, rel: &Path) -> Result<(Kind, PathBuf, Metadata), Errno> {
        let plain = self.root.join(rel);
        if rel.as_os_str().is_empty() {
            let m = fs::symlink_metadata(&plain).map_err(|e| errno(&e))?;
            return Ok((Kind::Plain, plain, m));
        }
        let adz = with_adz(&plain);
        if let Ok(m) = fs::symlink_metadata(&adz) {
            if m.is_file() {
                return Ok((Kind::Adz, adz, m));
            }
        }
        let m = fs::symlink_metadata(&plain).map_err(|e| errno(&e))?;
        if m.is_file() && rel.file_name().is_some_and(has_adz_suffix) {
            return Err(Errno::ENOENT);
        }
        Ok((Kind::Plain, plain, m))
    }

    /// The object name of the adz file behind `rel` (UTF-8, `/`-separated).
    fn object_name(rel: &Path) -> Result<String, Errno> {
        let s = rel.to_str().ok_or(Errno::EINVAL)?;
        Ok(format!("{s}.adz"))
    }

    /// The current version's reader, reopened if the file changed since.
    fn reader_for(&self, ino: u64, path: &Path, meta: &Metadata) -> Result<Arc<OpenReader>, Errno> {
        if let Some(r) = lock(&self.state).nodes.get(&ino).and_then(|n| n.reader.clone()) {
            if r.ident == ident(meta) {
                return Ok(r);
            }
        }
        let file = File::open(path).map_err(|e| errno(&e))?;
        let id = ident(&file.metadata().map_err(|e| errno(&e))?);
        let opts =
            ReaderOptions { cache_bytes: 0, threads: self.decode_threads, ..Default::default() };
        let reader = Reader::open(Arc::new(FdStorage { file }), &path.display().to_string(), opts)
            .map_err(|e| {
                log::error!("{}: cannot open: {}", path.display(), chain(&e));
                Errno::EIO
            })?;
        let r = Arc::new(OpenReader {
            reader,
            id: READER_ID.fetch_add(1, Ordering::Relaxed),
            ident: id,
        });
        if let Some(n) = lock(&self.state).nodes.get_mut(&ino) {
            n.reader = Some(Arc::clone(&r));
        }
        Ok(r)
    }

    fn node_staging(&self, ino: u64) -> Option<Arc<Mutex<Staging>>> {
        lock(&self.state).nodes.get(&ino).and_then(|n| n.staging.clone())
    }

    fn getattr_ino(&self, ino: u64) -> Result<FileAttr, Errno> {
        let (rel, staging) = {
            let st = lock(&self.state);
            let n = st.nodes.get(&ino).ok_or(Errno::ENOENT)?;
            (n.path.clone(), n.staging.clone())
        };
        if let Some(s) = &staging {
            let g = lock(s);
            // Being written: size and times of the staged bytes. Once committed, those of the
            // adz file, so that they do not change when the staging file goes away.
            if let Some(f) = g.file.as_ref().filter(|_| g.dirty) {
                let sm = f.metadata().map_err(|e| errno(&e))?;
                let meta = match self.resolve(&rel) {
                    Ok((_, _, m)) => m,
                    Err(_) => sm.clone(), // unlinked while open
                };
                return Ok(attr(ino, &meta, sm.len(), &sm));
            }
        }
        let (kind, path, meta) = self.resolve(&rel)?;
        let size = match kind {
            Kind::Adz => match self.reader_for(ino, &path, &meta) {
                Ok(r) => r.reader.len(),
                // Not a readable adz file: shown with its stored size; reads fail with EIO.
                Err(_) => meta.len(),
            },
            Kind::Plain => meta.len(),
        };
        Ok(attr(ino, &meta, size, &meta))
    }

    fn entry(&self, rel: &Path) -> Result<FileAttr, Errno> {
        self.resolve(rel)?;
        let ino = lock(&self.state).ino_for(rel);
        self.getattr_ino(ino)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        let p = lock(&self.state).path(parent.0)?;
        if self.hidden(&p, name) {
            return Err(Errno::ENOENT);
        }
        Ok(p.join(name))
    }

    /// Read raw bytes of the current version, frame by frame through the shared cache.
    fn read_frames(
        &self,
        r: &OpenReader,
        path: &Path,
        off: u64,
        size: u32,
    ) -> Result<Vec<u8>, Errno> {
        let end = off.saturating_add(u64::from(size)).min(r.reader.len());
        if off >= end {
            return Ok(Vec::new());
        }
        let entries = r.reader.index().entries();
        let frames = r.reader.index().frames_for(off..end);
        let mut out = vec![0; (end - off) as usize];
        let copy = |out: &mut [u8], i: usize, data: &[u8]| {
            let e = &entries[i];
            let from = off.max(e.raw_offset);
            let to = end.min(e.raw_range().end);
            let src = &data[(from - e.raw_offset) as usize..(to - e.raw_offset) as usize];
            let dst = (from - off) as usize;
            out[dst..dst + src.len()].copy_from_slice(src);
        };
        let mut i = frames.start;
        while i < frames.end {
            if let Some(data) = lock(&self.cache).get((r.id, i)) {
                copy(&mut out, i, &data);
                i += 1;
                continue;
            }
            // A run of frames not cached: decoded together (in parallel by the reader).
            let mut j = i + 1;
            while j < frames.end && !lock(&self.cache).contains((r.id, j)) {
                j += 1;
            }
            let start = entries[i].raw_offset;
            let mut buf = vec![0; (entries[j - 1].raw_range().end - start) as usize];
            r.reader.read_at(start, &mut buf).map_err(|e| {
                log::error!(
                    "{}: read of {size} bytes at {off} failed: {}",
                    path.display(),
                    chain(&e)
                );
                Errno::EIO
            })?;
            for (k, e) in entries.iter().enumerate().take(j).skip(i) {
                let at = (e.raw_offset - start) as usize;
                let data = Arc::new(buf[at..at + e.raw_len as usize].to_vec());
                copy(&mut out, k, &data);
                lock(&self.cache).insert((r.id, k), data);
            }
            i = j;
        }
        Ok(out)
    }

    /// The staging of `ino`, filled from the committed version unless it is truncated to 0.
    /// `truncate`: set the length (and mark it changed).
    fn staging_for(&self, ino: u64, truncate: Option<u64>) -> Result<Arc<Mutex<Staging>>, Errno> {
        let s = {
            let mut st = lock(&self.state);
            let n = st.nodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
            Arc::clone(n.staging.get_or_insert_with(Default::default))
        };
        let mut g = lock(&s);
        if g.file.is_none() {
            let rel = lock(&self.state).path(ino)?;
            let path = self.staging_dir.join(format!(
                "{ino}-{}-{}",
                std::process::id(),
                STAGING_COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(|e| {
                    log::error!("{}: cannot create a staging file: {e}", path.display());
                    errno(&e)
                })?;
            if truncate != Some(0) {
                let filled = self.resolve(&rel).and_then(|(kind, adz, meta)| {
                    if kind != Kind::Adz {
                        return Err(Errno::EIO);
                    }
                    let r = self.reader_for(ino, &adz, &meta)?;
                    r.reader.copy_to(&file, self.decode_threads).map_err(|e| {
                        log::error!(
                            "{}: cannot decode it to write to it: {}",
                            adz.display(),
                            chain(&e)
                        );
                        Errno::EIO
                    })
                });
                if let Err(e) = filled {
                    let _ = fs::remove_file(&path);
                    return Err(e);
                }
            }
            g.file = Some(file);
            g.path = path;
        }
        if let Some(len) = truncate {
            g.file.as_ref().expect("filled above").set_len(len).map_err(|e| errno(&e))?;
            g.dirty = true;
        }
        drop(g);
        Ok(s)
    }

    /// Compress the staged bytes of `ino` into its adz file, atomically replacing it.
    fn commit(&self, ino: u64) -> Result<(), Errno> {
        let Some(s) = self.node_staging(ino) else { return Ok(()) };
        let mut g = lock(&s);
        self.commit_locked(ino, &mut g)
    }

    fn commit_locked(&self, ino: u64, g: &mut Staging) -> Result<(), Errno> {
        if !g.dirty {
            return Ok(());
        }
        let (rel, unlinked) = {
            let st = lock(&self.state);
            let n = st.nodes.get(&ino).ok_or(Errno::ENOENT)?;
            (n.path.clone(), n.unlinked)
        };
        if unlinked {
            g.dirty = false;
            return Ok(());
        }
        let name = Self::object_name(&rel)?;
        let adz = self.root.join(&name);
        let old = fs::symlink_metadata(&adz).ok();
        let file = g.file.as_ref().ok_or(Errno::EIO)?;
        let len = file.metadata().map_err(|e| errno(&e))?.len();
        let fail = |what: &str, e: &dyn std::error::Error| {
            log::error!("{}: {what}: {e}", adz.display());
            Errno::EIO
        };
        let upload = self.storage.create(&name).map_err(|e| fail("cannot create", &e))?;
        let upload = Box::new(KeepMeta {
            inner: upload,
            mode: old.as_ref().map_or(0o644, |m| m.mode() & 0o7777),
            owner: old.as_ref().filter(|_| self.is_root).map(|m| (m.uid(), m.gid())),
        });
        let mut upload: Box<dyn Upload> = upload;
        if let Some(rate) = self.throttle {
            // As `adz compress --throttle`: a burst of 0.5 ms absorbs sleep jitter only.
            let burst = (rate * 0.0005).max(64.0 * 1024.0) as u64;
            upload = Throttled::new(NullStorage::new(), rate).burst(burst).wrap_upload(upload);
        }
        let mut opts = self.write.clone();
        opts.size_hint = Some(len);
        opts.link_guess = opts.link_guess.or(self.throttle);
        let mut w = Writer::with_upload(upload, opts).map_err(|e| fail("cannot start", &e))?;
        let mut src: &File = file;
        src.seek(SeekFrom::Start(0)).map_err(|e| errno(&e))?;
        let mut limited = Read::take(src, len);
        if let Err(e) = w.write_from(&mut limited) {
            let _ = w.abort();
            return Err(fail("compressing", &e));
        }
        w.finish().map_err(|e| fail("committing", &e))?;
        if let Some((a, m)) = &g.times {
            let _ = set_times(&adz, a, m);
        }
        g.dirty = false;
        Ok(())
    }

    /// Close the staging of `ino` if no handle is left: commit, then delete the staging file.
    fn retire(&self, ino: u64) {
        let Some(s) = self.node_staging(ino) else { return };
        let mut g = lock(&s);
        if let Err(e) = self.commit_locked(ino, &mut g) {
            log::error!("inode {ino}: the last close could not commit: {e:?}");
        }
        let mut st = lock(&self.state);
        let Some(n) = st.nodes.get_mut(&ino) else { return };
        if n.open > 0 || !n.staging.as_ref().is_some_and(|x| Arc::ptr_eq(x, &s)) {
            return;
        }
        if g.dirty {
            // Not committed: keep the bytes where a person can find them.
            log::error!("{}: uncommitted bytes kept in {}", n.path.display(), g.path.display());
        } else if g.file.take().is_some() {
            let _ = fs::remove_file(&g.path);
        }
        n.staging = None;
        n.reader = None;
        if n.unlinked {
            st.nodes.remove(&ino);
        }
    }

    fn new_handle(&self, h: Handle) -> u64 {
        let mut st = lock(&self.state);
        st.next_fh += 1;
        let fh = st.next_fh;
        let ino = match &h {
            Handle::Plain { ino, .. } | Handle::Adz { ino, .. } => *ino,
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
                let file = OpenOptions::new()
                    .read(acc != libc::O_WRONLY)
                    .write(acc != libc::O_RDONLY)
                    .custom_flags(flags & (libc::O_APPEND | libc::O_TRUNC | libc::O_NOFOLLOW))
                    .open(&path)
                    .map_err(|e| errno(&e))?;
                Ok(self.new_handle(Handle::Plain { ino, file: Arc::new(file) }))
            }
            Kind::Adz => {
                let fh = self.new_handle(Handle::Adz { ino, append: flags & libc::O_APPEND != 0 });
                if flags & libc::O_TRUNC != 0 {
                    if let Err(e) = self.staging_for(ino, Some(0)) {
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
            Handle::Plain { ino, .. } => (ino, false),
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

    /// Publish an empty adz file under `name` with `mode` (what `creat` makes visible).
    fn put_empty(&self, name: &str, mode: u32, owner: Option<(u32, u32)>) -> Result<(), Errno> {
        let fail = |e: &dyn std::error::Error| {
            log::error!("{name}: cannot create: {e}");
            Errno::EIO
        };
        let opts = FrameWriterOptions::default();
        let w = FrameWriter::new(Vec::new(), opts).map_err(|e| fail(&e))?;
        let bytes = w.finish().map_err(|e| fail(&e))?.0;
        let upload = self.quick_storage.create(name).map_err(|e| match &e {
            adz_core::store::Error::Io { source, .. } => errno(source),
            _ => fail(&e),
        })?;
        let mut up = Box::new(KeepMeta { inner: upload, mode, owner });
        up.append(&bytes).map_err(|e| fail(&e))?;
        up.commit().map_err(|e| fail(&e))?;
        Ok(())
    }

    fn owner(&self, req: &Request) -> Option<(u32, u32)> {
        self.is_root.then(|| (req.uid(), req.gid()))
    }

    fn list(&self, rel: &Path) -> Result<Vec<(OsString, FileType)>, Errno> {
        let dir = self.root.join(rel);
        let mut names: Vec<(OsString, FileType)> = Vec::new();
        let mut adz_names = HashSet::new();
        let mut plain = Vec::new();
        for e in fs::read_dir(&dir).map_err(|e| errno(&e))? {
            let e = e.map_err(|e| errno(&e))?;
            let name = e.file_name();
            if self.hidden(rel, &name) {
                continue;
            }
            let ft = e.file_type().map_err(|e| errno(&e))?;
            if ft.is_file() && has_adz_suffix(&name) {
                let b = name.as_bytes();
                let visible = OsString::from_vec(b[..b.len() - 4].to_vec());
                adz_names.insert(visible.clone());
                names.push((visible, FileType::RegularFile));
            } else if !(ft.is_file() && name.as_bytes().ends_with(b".adz")) {
                plain.push((name, kind_of(ft)));
            }
        }
        // A plain NAME is hidden by NAME.adz.
        names.extend(plain.into_iter().filter(|(n, _)| !adz_names.contains(n)));
        names.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(names)
    }

    fn writable(&self) -> Result<(), Errno> {
        if self.read_only {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }

    fn rename_inner(&self, from: &Path, to: &Path, flags: RenameFlags) -> Result<(), Errno> {
        self.writable()?;
        if flags.contains(RenameFlags::RENAME_EXCHANGE)
            || flags.contains(RenameFlags::RENAME_WHITEOUT)
        {
            return Err(Errno::EINVAL);
        }
        if flags.contains(RenameFlags::RENAME_NOREPLACE) && self.resolve(to).is_ok() {
            return Err(Errno::EEXIST);
        }
        // Wait for (and keep out) a commit of the file being moved.
        let ino = lock(&self.state).by_path.get(from).copied();
        let staging = ino.and_then(|i| self.node_staging(i));
        let _g = staging.as_ref().map(|s| lock(s));
        let (kind, src, _) = self.resolve(from)?;
        let (dst, other) = match kind {
            Kind::Adz => (with_adz(&self.root.join(to)), self.root.join(to)),
            Kind::Plain => (self.root.join(to), with_adz(&self.root.join(to))),
        };
        fs::rename(&src, &dst).map_err(|e| errno(&e))?;
        // The visible target may have been backed by the other kind of name: it is replaced.
        if let Ok(m) = fs::symlink_metadata(&other) {
            if !m.is_dir() && (kind == Kind::Adz || m.is_file()) {
                let _ = fs::remove_file(&other);
            }
        }
        let mut st = lock(&self.state);
        st.detach(to);
        let moved: Vec<(PathBuf, u64)> = st
            .by_path
            .iter()
            .filter(|(p, _)| p.starts_with(from))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        for (p, i) in moved {
            // (`join("")` would add a trailing slash.)
            let rest = p.strip_prefix(from).expect("filtered on the prefix");
            let new = if rest.as_os_str().is_empty() { to.to_path_buf() } else { to.join(rest) };
            st.by_path.remove(&p);
            st.by_path.insert(new.clone(), i);
            if let Some(n) = st.nodes.get_mut(&i) {
                n.path = new;
            }
        }
        Ok(())
    }
}

fn src_err_at(p: &Path, source: io::Error) -> Error {
    Error::Source { path: p.to_path_buf(), source }
}

impl fuser::Filesystem for AdzFs {
    fn destroy(&mut self) {
        let inos: Vec<u64> = lock(&self.state)
            .nodes
            .iter()
            .filter(|(_, n)| n.staging.is_some())
            .map(|(i, _)| *i)
            .collect();
        for ino in inos {
            if let Err(e) = self.commit(ino) {
                log::error!(
                    "unmount: inode {ino} could not be committed ({e:?}); its staging file is kept"
                );
            }
        }
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.child(parent, name).and_then(|rel| self.entry(&rel)) {
            Ok(a) => reply.entry_with_ttls(&ATTR_TTL, &ENTRY_TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.getattr_ino(ino.0) {
            Ok(a) => reply.attr(&ATTR_TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let r = (|| -> Result<FileAttr, Errno> {
            self.writable()?;
            let ino = ino.0;
            let rel = lock(&self.state).path(ino)?;
            let (kind, path, meta) = self.resolve(&rel)?;
            if let Some(mode) = mode {
                if !meta.file_type().is_symlink() {
                    fs::set_permissions(&path, fs::Permissions::from_mode(mode & 0o7777))
                        .map_err(|e| errno(&e))?;
                }
            }
            if uid.is_some() || gid.is_some() {
                std::os::unix::fs::lchown(&path, uid, gid).map_err(|e| errno(&e))?;
            }
            if let Some(len) = size {
                match kind {
                    Kind::Plain if meta.is_dir() => return Err(Errno::EISDIR),
                    Kind::Plain => {
                        let plain = fh.and_then(|fh| match lock(&self.state).handles.get(&fh.0) {
                            Some(Handle::Plain { file, .. }) => Some(Arc::clone(file)),
                            _ => None,
                        });
                        match plain {
                            Some(f) => f.set_len(len),
                            None => OpenOptions::new()
                                .write(true)
                                .open(&path)
                                .and_then(|f| f.set_len(len)),
                        }
                        .map_err(|e| errno(&e))?;
                    }
                    Kind::Adz => {
                        self.staging_for(ino, Some(len))?;
                        // A truncate with no open file is committed at once.
                        if lock(&self.state).nodes.get(&ino).is_some_and(|n| n.open == 0) {
                            self.retire(ino);
                        }
                    }
                }
            }
            if atime.is_some() || mtime.is_some() {
                let (a, m) = (timespec(atime), timespec(mtime));
                set_times(&path, &a, &m).map_err(|e| errno(&e))?;
                if let Some(s) = self.node_staging(ino) {
                    let mut g = lock(&s);
                    if g.file.is_some() {
                        set_times(&g.path, &a, &m).map_err(|e| errno(&e))?;
                        g.times = Some((a, m));
                    }
                }
            }
            self.getattr_ino(ino)
        })();
        match r {
            Ok(a) => reply.attr(&ATTR_TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let r = lock(&self.state)
            .path(ino.0)
            .and_then(|rel| fs::read_link(self.root.join(rel)).map_err(|e| errno(&e)));
        match r {
            Ok(t) => reply.data(t.as_os_str().as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        // Regular files come through create; device nodes, FIFOs and sockets are not kept.
        reply.error(if self.read_only { Errno::EROFS } else { Errno::EPERM });
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let r = self.writable().and_then(|()| self.child(parent, name)).and_then(|rel| {
            let p = self.root.join(&rel);
            if self.resolve(&rel).is_ok() {
                return Err(Errno::EEXIST);
            }
            fs::create_dir(&p).map_err(|e| errno(&e))?;
            fs::set_permissions(&p, fs::Permissions::from_mode(mode & !umask & 0o7777))
                .map_err(|e| errno(&e))?;
            if let Some((u, g)) = self.owner(req) {
                std::os::unix::fs::lchown(&p, Some(u), Some(g)).map_err(|e| errno(&e))?;
            }
            self.entry(&rel)
        });
        match r {
            Ok(a) => reply.entry_with_ttls(&ATTR_TTL, &ENTRY_TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.writable().and_then(|()| self.child(parent, name)).and_then(|rel| {
            let ino = lock(&self.state).by_path.get(&rel).copied();
            let staging = ino.and_then(|i| self.node_staging(i));
            let _g = staging.as_ref().map(|s| lock(s));
            let (_, path, meta) = self.resolve(&rel)?;
            if meta.is_dir() {
                return Err(Errno::EISDIR);
            }
            fs::remove_file(path).map_err(|e| errno(&e))?;
            lock(&self.state).detach(&rel);
            Ok(())
        });
        answer(reply, r)
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.writable().and_then(|()| self.child(parent, name)).and_then(|rel| {
            let (_, path, meta) = self.resolve(&rel)?;
            if !meta.is_dir() {
                return Err(Errno::ENOTDIR);
            }
            fs::remove_dir(path).map_err(|e| errno(&e))?;
            lock(&self.state).detach(&rel);
            Ok(())
        });
        answer(reply, r)
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let r = self.writable().and_then(|()| self.child(parent, link_name)).and_then(|rel| {
            if self.resolve(&rel).is_ok() {
                return Err(Errno::EEXIST);
            }
            let p = self.root.join(&rel);
            std::os::unix::fs::symlink(target, &p).map_err(|e| errno(&e))?;
            if let Some((u, g)) = self.owner(req) {
                std::os::unix::fs::lchown(&p, Some(u), Some(g)).map_err(|e| errno(&e))?;
            }
            self.entry(&rel)
        });
        match r {
            Ok(a) => reply.entry_with_ttls(&ATTR_TTL, &ENTRY_TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = self
            .child(parent, name)
            .and_then(|from| Ok((from, self.child(newparent, newname)?)))
            .and_then(|(from, to)| self.rename_inner(&from, &to, flags));
        answer(reply, r)
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        // Hard links: a new version is a new file renamed over the name, which would split
        // the links (docs/MOUNT.md).
        reply.error(Errno::EPERM);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self.open_ino(ino.0, flags.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = self.writable().and_then(|()| self.child(parent, name)).and_then(|rel| {
            if self.resolve(&rel).is_ok() {
                if flags & libc::O_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
            } else {
                if mode & libc::S_IFMT != 0 && mode & libc::S_IFMT != libc::S_IFREG {
                    return Err(Errno::EPERM);
                }
                let name = Self::object_name(&rel)?;
                self.put_empty(&name, mode & !umask & 0o7777, self.owner(req))?;
            }
            let ino = lock(&self.state).ino_for(&rel);
            let fh = self.open_ino(ino, flags)?;
            match self.getattr_ino(ino) {
                Ok(a) => Ok((a, fh)),
                Err(e) => {
                    self.close_handle(fh);
                    Err(e)
                }
            }
        });
        match r {
            Ok((a, fh)) => {
                reply.created(&ATTR_TTL, &a, Generation(0), FileHandle(fh), FopenFlags::empty())
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let plain = match lock(&self.state).handles.get(&fh.0) {
            Some(Handle::Plain { file, .. }) => Some(Arc::clone(file)),
            Some(Handle::Adz { .. }) => None,
            None => return reply.error(Errno::EBADF),
        };
        let r = (|| -> Result<Vec<u8>, Errno> {
            if let Some(f) = plain {
                return read_file_at(&f, offset, size);
            }
            if let Some(s) = self.node_staging(ino.0) {
                let g = lock(&s);
                if let Some(f) = &g.file {
                    return read_file_at(f, offset, size);
                }
            }
            let rel = lock(&self.state).path(ino.0)?;
            let (_, path, meta) = self.resolve(&rel)?;
            let r = self.reader_for(ino.0, &path, &meta)?;
            self.read_frames(&r, &path, offset, size)
        })();
        match r {
            Ok(d) => reply.data(&d),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let h = match lock(&self.state).handles.get(&fh.0) {
            Some(Handle::Plain { file, .. }) => Err(Arc::clone(file)),
            Some(Handle::Adz { append, .. }) => Ok(*append),
            None => return reply.error(Errno::EBADF),
        };
        let r = (|| -> Result<(), Errno> {
            self.writable()?;
            match h {
                Err(file) => file.write_all_at(data, offset).map_err(|e| errno(&e)),
                Ok(append) => {
                    let s = self.staging_for(ino.0, None)?;
                    let mut g = lock(&s);
                    let f = g.file.as_ref().ok_or(Errno::EIO)?;
                    let at =
                        if append { f.metadata().map_err(|e| errno(&e))?.len() } else { offset };
                    f.write_all_at(data, at).map_err(|e| errno(&e))?;
                    g.dirty = true;
                    Ok(())
                }
            }
        })();
        match r {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        let adz = matches!(lock(&self.state).handles.get(&fh.0), Some(Handle::Adz { .. }));
        answer(reply, if adz { self.commit(ino.0) } else { Ok(()) })
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if let Some((ino, true)) = self.close_handle(fh.0) {
            self.retire(ino);
        }
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let plain = match lock(&self.state).handles.get(&fh.0) {
            Some(Handle::Plain { file, .. }) => Some(Arc::clone(file)),
            _ => None,
        };
        let r = match plain {
            Some(f) => f.sync_all().map_err(|e| errno(&e)),
            None => self.commit(ino.0),
        };
        answer(reply, r)
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let r = (|| -> Result<(), Errno> {
            let rel = lock(&self.state).path(ino.0)?;
            let mut all = vec![
                (OsString::from("."), FileType::Directory),
                (OsString::from(".."), FileType::Directory),
            ];
            all.extend(self.list(&rel)?);
            let mut st = lock(&self.state);
            for (i, (name, kind)) in all.into_iter().enumerate().skip(offset as usize) {
                let child = match name.as_bytes() {
                    b"." | b".." => ino.0,
                    _ => st.ino_for(&rel.join(&name)),
                };
                if reply.add(INodeNo(child), (i + 1) as u64, kind, &name) {
                    break;
                }
            }
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = lock(&self.state).path(ino.0).and_then(|rel| {
            File::open(self.root.join(rel)).and_then(|d| d.sync_all()).map_err(|e| errno(&e))
        });
        answer(reply, r)
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match nix::sys::statvfs::statvfs(&self.root) {
            Ok(s) => reply.statfs(
                s.blocks(),
                s.blocks_free(),
                s.blocks_available(),
                s.files(),
                s.files_free(),
                s.block_size() as u32,
                s.name_max().saturating_sub(4) as u32,
                s.fragment_size() as u32,
            ),
            Err(e) => reply.error(Errno::from_i32(e as i32)),
        }
    }
}

fn read_file_at(f: &File, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0; size as usize];
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(errno(&e)),
        }
    }
    buf.truncate(got);
    Ok(buf)
}
