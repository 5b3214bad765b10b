//! Where the files of a mount live: a local directory, or a prefix of a bucket (any
//! [`Storage`], in practice S3). The FUSE operations are written once; the few places that
//! differ ask [`Meta`] (what an entry is) or [`S3Source`] (how an object store does it).
//!
//! On an object store a directory is a prefix: `dir/` exists while an object starts with it,
//! and `mkdir` writes the marker object `dir/.adz-dir` so that an empty directory persists.

use std::collections::HashMap;
use std::time::Instant;

use super::*;

/// The name of the empty object that keeps an empty directory on an object store.
pub(super) const DIR_MARKER: &str = ".adz-dir";

/// How long a listing of an object-store directory answers lookups and stats; changes made
/// through the mount drop it at once.
const LISTING_TTL: Duration = Duration::from_secs(1);

/// An opened version of a file, to know when the file changed: (device, inode, mtime s,
/// mtime ns, size) locally, (0, 0, last-modified s, ns, size) for an object.
pub(super) type Ident = (u64, u64, i64, i64, u64);

/// What the file system knows of a source entry: a local file's metadata, or an object's (or
/// a prefix's) as listed.
#[derive(Debug, Clone)]
pub(super) struct Meta {
    pub(super) kind: FileType,
    /// Stored bytes.
    pub(super) len: u64,
    pub(super) blocks: u64,
    /// Permission bits.
    pub(super) mode: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) nlink: u32,
    pub(super) rdev: u32,
    pub(super) atime: SystemTime,
    pub(super) mtime: SystemTime,
    pub(super) ctime: SystemTime,
    pub(super) crtime: SystemTime,
    pub(super) ident: Ident,
}

impl Meta {
    pub(super) fn local(m: &Metadata) -> Meta {
        Meta {
            kind: kind_of(m.file_type()),
            len: m.len(),
            blocks: m.blocks(),
            mode: m.mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
            nlink: m.nlink() as u32,
            rdev: m.rdev() as u32,
            atime: time(m.atime(), m.atime_nsec()),
            mtime: time(m.mtime(), m.mtime_nsec()),
            ctime: time(m.ctime(), m.ctime_nsec()),
            crtime: time(m.ctime(), m.ctime_nsec()),
            ident: (m.dev(), m.ino(), m.mtime(), m.mtime_nsec(), m.len()),
        }
    }

    /// An object (`len`, last written at `modified`) or a prefix (`Directory`): owned by the
    /// daemon, mode 0644 or 0755, since an object store keeps neither.
    fn object(kind: FileType, len: u64, modified: Option<SystemTime>) -> Meta {
        let t = modified.unwrap_or(UNIX_EPOCH);
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let dir = kind == FileType::Directory;
        Meta {
            kind,
            len,
            blocks: len.div_ceil(512),
            mode: if dir { 0o755 } else { 0o644 },
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            nlink: if dir { 2 } else { 1 },
            rdev: 0,
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            ident: (0, 0, d.as_secs() as i64, i64::from(d.subsec_nanos()), len),
        }
    }

    pub(super) fn is_dir(&self) -> bool {
        self.kind == FileType::Directory
    }

    pub(super) fn is_symlink(&self) -> bool {
        self.kind == FileType::Symlink
    }
}

/// One name in an object-store directory: an object, a prefix, or both.
#[derive(Debug, Clone, Default)]
pub(super) struct Child {
    /// The object of that name: size and last-modified.
    pub(super) object: Option<(u64, Option<SystemTime>)>,
    /// Objects below `name/`.
    pub(super) dir: bool,
}

/// A directory of an object store as listed: its children by name.
type Listing = Arc<HashMap<String, Child>>;
/// The directories listed, by prefix, with when.
type Listings = HashMap<String, (Instant, Listing)>;

/// A prefix of a bucket as the source of a mount.
pub(crate) struct S3Source {
    pub(super) store: Arc<dyn Storage>,
    /// `""` or ending in `/`.
    pub(super) prefix: String,
    /// `s3://bucket/prefix`, for messages.
    pub(super) label: String,
    /// The listings, and how many changes they have seen: a listing that was under way
    /// during a change is not kept (it may predate the change).
    listings: Mutex<(Listings, u64)>,
    /// The times of directories (prefixes have none).
    mounted: SystemTime,
}

fn store_errno(e: &adz_core::store::Error) -> Errno {
    use adz_core::store::Error as E;
    match e {
        e if e.is_storage_full() => Errno::ENOSPC,
        E::NotFound { .. } => Errno::ENOENT,
        E::AlreadyExists { .. } => Errno::EEXIST,
        E::InvalidName { .. } => Errno::EINVAL,
        E::Io { source, .. } => errno(source),
        _ => Errno::EIO,
    }
}

impl S3Source {
    /// The source `prefix` of `store` (checked by listing it).
    pub(crate) fn new(
        store: Arc<dyn Storage>,
        prefix: &str,
        label: String,
    ) -> Result<S3Source, adz_core::store::Error> {
        let prefix = match prefix.trim_end_matches('/') {
            "" => String::new(),
            p => format!("{p}/"),
        };
        adz_core::store::validate_prefix(&prefix)?;
        store.list_with_delimiter(&prefix)?;
        Ok(S3Source {
            store,
            prefix,
            label,
            listings: Mutex::default(),
            mounted: SystemTime::now(),
        })
    }

    /// The key of visible path `rel` (`/`-separated, UTF-8).
    pub(super) fn key(&self, rel: &Path) -> Result<String, Errno> {
        let s = rel.to_str().ok_or(Errno::EINVAL)?;
        Ok(format!("{}{s}", self.prefix))
    }

    /// A failed request, logged, as an errno.
    pub(super) fn fail(&self, what: &str, key: &str, e: &adz_core::store::Error) -> Errno {
        let n = store_errno(e);
        if n == Errno::EIO {
            log::error!("{}: {what} {key}: {}", self.label, chain(e));
        }
        n
    }

    /// Forget the listings: something changed through the mount.
    pub(super) fn changed(&self) {
        let mut l = lock(&self.listings);
        l.0.clear();
        l.1 += 1;
    }

    /// The children of directory `rel` (listed at most [`LISTING_TTL`] ago).
    pub(super) fn listing(&self, rel: &Path) -> Result<Listing, Errno> {
        let dir = if rel.as_os_str().is_empty() {
            self.prefix.clone()
        } else {
            format!("{}/", self.key(rel)?)
        };
        let changes = {
            let cached = lock(&self.listings);
            if let Some((at, l)) = cached.0.get(&dir) {
                if at.elapsed() < LISTING_TTL {
                    return Ok(Arc::clone(l));
                }
            }
            cached.1
        };
        // One level (a delimiter listing): the keys below the sub-prefixes are not listed.
        let level =
            self.store.list_with_delimiter(&dir).map_err(|e| self.fail("listing", &dir, &e))?;
        let mut children: HashMap<String, Child> = HashMap::new();
        for p in &level.prefixes {
            let Some(name) = p.strip_prefix(&dir).and_then(|n| n.strip_suffix('/')) else {
                continue;
            };
            children.entry(name.to_owned()).or_default().dir = true;
        }
        for o in level.objects {
            let Some(name) = o.name.strip_prefix(&dir) else { continue };
            children.entry(name.to_owned()).or_default().object = Some((o.size, o.modified));
        }
        let l = Arc::new(children);
        let mut cached = lock(&self.listings);
        if cached.1 == changes {
            cached.0.insert(dir, (Instant::now(), Arc::clone(&l)));
        }
        Ok(l)
    }

    /// What `rel` is backed by (the same rules as a local source: `NAME.adz` wins over `NAME`
    /// and over a prefix `NAME/`), its key and its attributes.
    pub(super) fn resolve(&self, rel: &Path) -> Result<(Kind, PathBuf, Meta), Errno> {
        if rel.as_os_str().is_empty() {
            let m = Meta::object(FileType::Directory, 0, Some(self.mounted));
            return Ok((Kind::Plain, PathBuf::from(&self.prefix), m));
        }
        let name = rel.file_name().and_then(|n| n.to_str()).ok_or(Errno::ENOENT)?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let l = self.listing(parent)?;
        let key = self.key(rel)?;
        if let Some((len, t)) = l.get(&format!("{name}.adz")).and_then(|c| c.object) {
            return Ok((
                Kind::Adz,
                PathBuf::from(format!("{key}.adz")),
                Meta::object(FileType::RegularFile, len, t),
            ));
        }
        match l.get(name) {
            Some(Child { object: Some((len, t)), .. }) if !has_adz_suffix(OsStr::new(name)) => {
                Ok((Kind::Plain, PathBuf::from(key), Meta::object(FileType::RegularFile, *len, *t)))
            }
            Some(Child { dir: true, .. }) => Ok((
                Kind::Plain,
                PathBuf::from(key),
                Meta::object(FileType::Directory, 0, Some(self.mounted)),
            )),
            _ => Err(Errno::ENOENT),
        }
    }

    /// The latest committed manifest of the dataset shown at `rel` (see
    /// [`AdzFs::dataset_at`]): the parent's listing says whether `NAME.manifest/` exists, and
    /// only then is that prefix listed.
    pub(super) fn dataset(&self, rel: &Path) -> Option<(PathBuf, Meta)> {
        let name = rel.file_name()?.to_str()?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = format!("{name}.manifest");
        if !self.listing(parent).ok()?.get(&dir).is_some_and(|c| c.dir) {
            return None;
        }
        let l = self.listing(&parent.join(&dir)).ok()?;
        let v = latest_version(l.iter().filter(|(_, c)| c.object.is_some()).map(|(n, _)| &**n))?;
        let (len, t) = l.get(&format!("v{v:020}"))?.object?;
        let key = manifest_key(&self.key(rel).ok()?, v);
        let mut m = dataset_meta(Meta::object(FileType::RegularFile, len, t));
        // A committed manifest is never replaced: its version tells it.
        m.ident.1 = v;
        Some((PathBuf::from(key), m))
    }

    /// The entries of directory `rel` as stored: (name, type, is a regular file).
    pub(super) fn entries(&self, rel: &Path) -> Result<Vec<(OsString, FileType)>, Errno> {
        let l = self.listing(rel)?;
        let mut out = Vec::new();
        for (name, c) in l.iter() {
            if name == DIR_MARKER || name.is_empty() {
                continue;
            }
            if c.object.is_some() {
                out.push((OsString::from(name), FileType::RegularFile));
            } else if c.dir {
                out.push((OsString::from(name), FileType::Directory));
            }
        }
        Ok(out)
    }

    pub(super) fn delete(&self, key: &str) -> Result<(), Errno> {
        let r = self.store.delete(key).map_err(|e| self.fail("deleting", key, &e));
        self.changed();
        r
    }

    pub(super) fn mkdir(&self, rel: &Path) -> Result<(), Errno> {
        let key = format!("{}/{DIR_MARKER}", self.key(rel)?);
        let r = self.store.put(&key, b"").map_err(|e| self.fail("creating", &key, &e));
        self.changed();
        r
    }

    /// Remove the empty directory `rel` (its marker): ENOTEMPTY while anything is below it.
    pub(super) fn rmdir(&self, rel: &Path) -> Result<(), Errno> {
        self.changed();
        let l = self.listing(rel)?;
        if l.keys().any(|n| n != DIR_MARKER) {
            return Err(Errno::ENOTEMPTY);
        }
        if l.contains_key(DIR_MARKER) {
            self.delete(&format!("{}/{DIR_MARKER}", self.key(rel)?))?;
        }
        Ok(())
    }

    /// Copy object `from` to `to`: inside the store where it can (S3's `CopyObject`, no byte
    /// through the daemon), else read and uploaded by the store's default.
    pub(super) fn copy(&self, from: &str, to: &str) -> Result<(), Errno> {
        let r = self.store.copy(from, to).map_err(|e| self.fail("copying", from, &e));
        self.changed();
        r
    }

    /// Rename `from` to `to` (visible paths), both resolved: a file is copied and then
    /// deleted; an empty directory moves its marker; a directory with files is EXDEV (so that
    /// `mv` copies it file by file).
    pub(super) fn rename(
        &self,
        kind: Kind,
        src: &Path,
        meta: &Meta,
        from: &Path,
        to: &Path,
    ) -> Result<(), Errno> {
        let target = self.resolve(to).ok();
        if meta.is_dir() {
            let l = self.listing(from)?;
            if l.keys().any(|n| n != DIR_MARKER) {
                return Err(Errno::EXDEV);
            }
            if let Some((_, _, m)) = &target {
                if !m.is_dir() {
                    return Err(Errno::ENOTDIR);
                }
                if self.listing(to)?.keys().any(|n| n != DIR_MARKER) {
                    return Err(Errno::ENOTEMPTY);
                }
            }
            self.mkdir(to)?;
            return self.rmdir(from);
        }
        if let Some((tkind, tkey, m)) = &target {
            if m.is_dir() {
                return Err(Errno::EISDIR);
            }
            // The visible target may be backed by the other kind of name: it is replaced.
            if *tkind != kind {
                self.delete(tkey.to_str().ok_or(Errno::EINVAL)?)?;
            }
        }
        let src = src.to_str().ok_or(Errno::EINVAL)?;
        let dst = self.key(to)?;
        let dst = if kind == Kind::Adz { format!("{dst}.adz") } else { dst };
        self.copy(src, &dst)?;
        self.delete(src)
    }
}
