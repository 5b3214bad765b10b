//! The namespace: what a visible path is backed by, attributes, listing and renames.

use super::*;

pub(super) fn has_adz_suffix(name: &OsStr) -> bool {
    name.as_bytes().ends_with(b".adz") && name.len() > 4
}

pub(super) fn is_temp_name(name: &OsStr) -> bool {
    let b = name.as_bytes();
    let has = |m: &[u8]| b.windows(m.len()).any(|w| w == m);
    b.first() == Some(&b'.') && (has(b".adz-tmp-") || has(b".adz-incomplete-"))
}

pub(super) fn with_adz(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(".adz");
    PathBuf::from(s)
}

pub(super) fn kind_of(ft: fs::FileType) -> FileType {
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

pub(super) fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nsecs as u64)
    }
}

pub(super) fn attr(ino: u64, m: &Meta, size: u64, times_from: &Meta) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: m.blocks,
        atime: times_from.atime,
        mtime: times_from.mtime,
        ctime: times_from.ctime,
        crtime: m.crtime,
        kind: m.kind,
        perm: m.mode as u16,
        nlink: m.nlink,
        uid: m.uid,
        gid: m.gid,
        rdev: m.rdev,
        blksize: 4096,
        flags: 0,
    }
}

pub(super) fn timespec(t: Option<TimeOrNow>) -> TimeSpec {
    match t {
        None => TimeSpec::UTIME_OMIT,
        Some(TimeOrNow::Now) => TimeSpec::UTIME_NOW,
        Some(TimeOrNow::SpecificTime(t)) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => TimeSpec::from_duration(d),
            Err(e) => TimeSpec::from_duration(e.duration()) * -1,
        },
    }
}

pub(super) fn set_times(p: &Path, a: &TimeSpec, m: &TimeSpec) -> io::Result<()> {
    nix::sys::stat::utimensat(nix::fcntl::AT_FDCWD, p, a, m, UtimensatFlags::NoFollowSymlink)
        .map_err(io::Error::from)
}

impl AdzFs {
    pub(super) fn hidden(&self, parent: &Path, name: &OsStr) -> bool {
        let own = if self.s3.is_some() {
            name == source::DIR_MARKER || is_temp_name(name)
        } else {
            (parent.as_os_str().is_empty() && name == STAGING_DIR) || is_temp_name(name)
        };
        own || self.is_dataset_dir(parent, name)
    }

    /// What `rel` is backed by: a committed dataset `NAME.manifest/vN` wins over `NAME.adz`,
    /// which wins over `NAME`; a regular file named `*.adz` is only ever seen without its
    /// suffix. On an object store the path returned is the object's key (or the prefix's);
    /// for a dataset, its latest manifest's key in the store.
    pub(super) fn resolve(&self, rel: &Path) -> Result<(Kind, PathBuf, Meta), Errno> {
        if let Some((key, meta)) = self.dataset_at(rel) {
            return Ok((Kind::Dataset, key, meta));
        }
        if let Some(s3) = &self.s3 {
            return s3.resolve(rel);
        }
        let plain = self.root.join(rel);
        if rel.as_os_str().is_empty() {
            let m = fs::symlink_metadata(&plain).map_err(|e| errno(&e))?;
            return Ok((Kind::Plain, plain, Meta::local(&m)));
        }
        let adz = with_adz(&plain);
        if let Ok(m) = fs::symlink_metadata(&adz) {
            if m.is_file() {
                return Ok((Kind::Adz, adz, Meta::local(&m)));
            }
        }
        let m = fs::symlink_metadata(&plain).map_err(|e| errno(&e))?;
        if m.is_file() && rel.file_name().is_some_and(has_adz_suffix) {
            return Err(Errno::ENOENT);
        }
        Ok((Kind::Plain, plain, Meta::local(&m)))
    }

    /// The object name of the adz file behind `rel` (UTF-8, `/`-separated).
    pub(super) fn object_name(rel: &Path) -> Result<String, Errno> {
        let s = rel.to_str().ok_or(Errno::EINVAL)?;
        Ok(format!("{s}.adz"))
    }

    /// The name of the adz file behind `rel` in [`AdzFs::store`]: for an object store, with
    /// the mount's prefix.
    pub(super) fn key(&self, rel: &Path) -> Result<String, Errno> {
        match &self.s3 {
            Some(s3) => Ok(format!("{}.adz", s3.key(rel)?)),
            None => Self::object_name(rel),
        }
    }

    /// Where adz files are written: the source directory or the object store.
    pub(super) fn store(&self) -> &dyn Storage {
        match &self.s3 {
            Some(s3) => &*s3.store,
            None => &self.storage,
        }
    }

    /// How messages name the adz file behind `rel`.
    pub(super) fn shown(&self, key: &str) -> PathBuf {
        match &self.s3 {
            Some(s3) => PathBuf::from(format!("{}{}", s3.label, &key[s3.prefix.len()..])),
            None => self.root.join(key),
        }
    }

    pub(super) fn getattr_ino(&self, ino: u64) -> Result<FileAttr, Errno> {
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
                let sm = Meta::local(&f.metadata().map_err(|e| errno(&e))?);
                let meta = match self.resolve(&rel) {
                    Ok((_, _, m)) => m,
                    Err(_) => sm.clone(), // unlinked while open
                };
                return Ok(attr(ino, &meta, sm.len, &sm));
            }
            if let Some(st) = g.stream.as_ref().filter(|_| g.dirty) {
                // (An unlink stages a stream: its name is there.)
                let (_, _, meta) = self.resolve(&rel)?;
                let mut a = attr(ino, &meta, st.len, &meta);
                if g.times.is_none() {
                    (a.mtime, a.ctime) = (st.mtime, st.mtime);
                }
                return Ok(a);
            }
        }
        let (kind, path, meta) = self.resolve(&rel)?;
        if kind == Kind::Dataset {
            // Not a readable dataset (a bad manifest): shown empty; opening it fails with EIO.
            let (size, stored) = match self.open_dataset(ino, &path, &meta) {
                Ok(d) => (d.reader.len(), d.reader.manifest().parts.iter().map(|p| p.stored).sum()),
                Err(_) => (0, 0),
            };
            let mut a = attr(ino, &meta, size, &meta);
            a.blocks = u64::div_ceil(stored, 512);
            return Ok(a);
        }
        let size = match kind {
            Kind::Adz => match self.reader_for(ino, &path, &meta) {
                Ok(r) => r.reader.len(),
                // Not a readable adz file: shown with its stored size; reads fail with EIO.
                Err(_) => meta.len,
            },
            Kind::Plain | Kind::Dataset => meta.len,
        };
        Ok(attr(ino, &meta, size, &meta))
    }

    pub(super) fn entry(&self, rel: &Path) -> Result<FileAttr, Errno> {
        self.resolve(rel)?;
        let ino = lock(&self.state).ino_for(rel);
        self.getattr_ino(ino)
    }

    pub(super) fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        let p = lock(&self.state).path(parent.0)?;
        if self.hidden(&p, name) {
            return Err(Errno::ENOENT);
        }
        Ok(p.join(name))
    }

    pub(super) fn list(&self, rel: &Path) -> Result<Vec<(OsString, FileType)>, Errno> {
        let stored = match &self.s3 {
            Some(s3) => s3.entries(rel)?,
            None => {
                let mut v = Vec::new();
                for e in fs::read_dir(self.root.join(rel)).map_err(|e| errno(&e))? {
                    let e = e.map_err(|e| errno(&e))?;
                    v.push((e.file_name(), kind_of(e.file_type().map_err(|e| errno(&e))?)));
                }
                v
            }
        };
        let mut names: Vec<(OsString, FileType)> = Vec::new();
        let mut adz_names = HashSet::new();
        let mut plain = Vec::new();
        let mut datasets = HashSet::new();
        for (name, ft) in stored {
            if ft == FileType::Directory && name.as_bytes().ends_with(b".manifest") {
                if let Some(stem) = dataset_stem(&name) {
                    if self.dataset_at(&rel.join(stem)).is_some() {
                        datasets.insert(OsString::from(stem));
                        continue;
                    }
                }
            }
            if self.hidden(rel, &name) {
                continue;
            }
            let is_file = ft == FileType::RegularFile;
            if is_file && has_adz_suffix(&name) {
                let b = name.as_bytes();
                let visible = OsString::from_vec(b[..b.len() - 4].to_vec());
                adz_names.insert(visible.clone());
                names.push((visible, FileType::RegularFile));
            } else if !(is_file && name.as_bytes().ends_with(b".adz")) {
                plain.push((name, ft));
            }
        }
        // A plain NAME is hidden by NAME.adz; both are hidden by a dataset NAME.
        names.extend(plain.into_iter().filter(|(n, _)| !adz_names.contains(n)));
        names.retain(|(n, _)| !datasets.contains(n));
        names.extend(datasets.into_iter().map(|n| (n, FileType::RegularFile)));
        names.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(names)
    }

    pub(super) fn rename_inner(
        &self,
        from: &Path,
        to: &Path,
        flags: RenameFlags,
    ) -> Result<(), Errno> {
        self.writable()?;
        if flags.contains(RenameFlags::RENAME_EXCHANGE)
            || flags.contains(RenameFlags::RENAME_WHITEOUT)
        {
            return Err(Errno::EINVAL);
        }
        if flags.contains(RenameFlags::RENAME_NOREPLACE) && self.resolve(to).is_ok() {
            return Err(Errno::EEXIST);
        }
        // A dataset is neither moved nor replaced through the mount.
        for p in [from, to] {
            if matches!(self.resolve(p), Ok((Kind::Dataset, ..))) {
                return Err(REFUSED);
            }
        }
        // A stream writes its temporary next to its name: the streams below a directory that
        // moves are staged first, one at a time.
        let below: Vec<u64> = lock(&self.state)
            .by_path
            .iter()
            .filter(|(p, _)| p.starts_with(from) && p.as_path() != from)
            .map(|(_, i)| *i)
            .collect();
        for i in below {
            if let Some(s) = self.node_staging(i) {
                let mut g = lock(&s);
                if g.stream.is_some() {
                    self.restage(i, &mut g)?;
                }
            }
        }
        // Wait for (and keep out) a commit of the file being moved; stage its stream.
        let ino = lock(&self.state).by_path.get(from).copied();
        let staging = ino.and_then(|i| self.node_staging(i));
        let mut g = staging.as_ref().map(|s| lock(s));
        if let (Some(i), Some(g)) = (ino, g.as_mut()) {
            if g.stream.is_some() {
                self.restage(i, g)?;
            }
        }
        let (kind, src, meta) = self.resolve(from)?;
        if let Some(s3) = &self.s3 {
            s3.rename(kind, &src, &meta, from, to)?;
            let mut st = lock(&self.state);
            st.detach(to);
            st.move_paths(from, to);
            // Their readers read the old keys, deleted now.
            for n in st.nodes.values_mut().filter(|n| n.path.starts_with(to)) {
                n.reader = None;
            }
            return Ok(());
        }
        let (dst, other) = match kind {
            Kind::Adz => (with_adz(&self.root.join(to)), self.root.join(to)),
            Kind::Plain | Kind::Dataset => (self.root.join(to), with_adz(&self.root.join(to))),
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
        st.move_paths(from, to);
        Ok(())
    }
}

impl State {
    /// The paths at and below `from` are now at and below `to`.
    fn move_paths(&mut self, from: &Path, to: &Path) {
        let st = self;
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
    }
}
