//! The FUSE operations, each answered through the namespace, read and write paths.

use super::*;

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
            if kind == Kind::Dataset {
                return Err(REFUSED);
            }
            // An object store keeps no mode or owner (setting the ones shown succeeds, so that
            // tar x and cp -p work); sizes of other objects do not change.
            if self.s3.is_some()
                && (mode.is_some_and(|m| m & 0o7777 != meta.mode)
                    || uid.is_some_and(|u| u != meta.uid)
                    || gid.is_some_and(|g| g != meta.gid)
                    || (size.is_some() && kind == Kind::Plain && !meta.is_dir()))
            {
                return Err(Errno::EPERM);
            }
            let (mode, uid, gid) =
                if self.s3.is_some() { (None, None, None) } else { (mode, uid, gid) };
            if let Some(mode) = mode {
                if !meta.is_symlink() {
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
                    Kind::Dataset => return Err(REFUSED),
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
                        self.truncate(ino, len)?;
                        // A truncate with no open file is committed at once.
                        if lock(&self.state).nodes.get(&ino).is_some_and(|n| n.open == 0) {
                            self.retire(ino);
                        }
                    }
                }
            }
            if atime.is_some() || mtime.is_some() {
                let (a, m) = (timespec(atime), timespec(mtime));
                // On an object store times are accepted and not kept (an object's mtime is
                // when it was written), so that touch, cp -p and tar x work.
                if self.s3.is_none() {
                    set_times(&path, &a, &m).map_err(|e| errno(&e))?;
                }
                if let Some(s) = self.node_staging(ino) {
                    let mut g = lock(&s);
                    if g.file.is_some() {
                        set_times(&g.path, &a, &m).map_err(|e| errno(&e))?;
                        g.times = Some((a, m));
                    } else if g.stream.is_some() {
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
        let r = lock(&self.state).path(ino.0).and_then(|rel| match self.s3 {
            Some(_) => Err(Errno::EINVAL),
            None => fs::read_link(self.root.join(rel)).map_err(|e| errno(&e)),
        });
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
            if let Some(s3) = &self.s3 {
                s3.mkdir(&rel)?;
                return self.entry(&rel);
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
            let mut g = staging.as_ref().map(|s| lock(s));
            let (kind, path, meta) = self.resolve(&rel)?;
            if meta.is_dir() {
                return Err(Errno::EISDIR);
            }
            if kind == Kind::Dataset {
                return Err(REFUSED);
            }
            // An open file outlives its name: a stream becomes a staging file, which keeps
            // its bytes (and attributes) for the open descriptors until the last close.
            if let (Some(i), Some(g)) = (ino, g.as_mut()) {
                if g.stream.is_some() {
                    self.restage(i, g)?;
                }
            }
            match &self.s3 {
                Some(s3) => s3.delete(path.to_str().ok_or(Errno::EINVAL)?)?,
                None => fs::remove_file(path).map_err(|e| errno(&e))?,
            }
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
            match &self.s3 {
                Some(s3) => s3.rmdir(&rel)?,
                None => fs::remove_dir(path).map_err(|e| errno(&e))?,
            }
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
            if self.s3.is_some() {
                return Err(Errno::EPERM);
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
                let name = self.key(&rel)?;
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
        let dataset = match lock(&self.state).handles.get(&fh.0) {
            Some(Handle::Dataset { ds, seq, .. }) => Some((Arc::clone(ds), Arc::clone(seq))),
            _ => None,
        };
        if let Some((ds, seq)) = dataset {
            return match self.read_dataset(&ds, &seq, offset, size) {
                Ok(d) => reply.data(&d),
                Err(e) => reply.error(e),
            };
        }
        let (plain, seq, object) = match lock(&self.state).handles.get(&fh.0) {
            Some(Handle::Plain { file, .. }) => (Some(Arc::clone(file)), None, None),
            Some(Handle::Adz { seq, .. }) => (None, Some(Arc::clone(seq)), None),
            Some(Handle::Object { key, len, .. }) => (None, None, Some((key.clone(), *len))),
            Some(Handle::Dataset { .. }) | None => return reply.error(Errno::EBADF),
        };
        let r = (|| -> Result<Bytes, Errno> {
            if let (Some((key, len)), Some(s3)) = (object, &self.s3) {
                let end = offset.saturating_add(u64::from(size)).min(len);
                if offset >= end {
                    return Ok(Bytes::Owned(Vec::new()));
                }
                return s3
                    .store
                    .get_range(&key, offset..end)
                    .map(Bytes::Owned)
                    .map_err(|e| s3.fail("reading", &key, &e));
            }
            if let Some(f) = plain {
                return read_file_at(&f, offset, size).map(Bytes::Owned);
            }
            if let Some(s) = self.node_staging(ino.0) {
                let mut g = lock(&s);
                match &g.stream {
                    Some(st) if st.len == 0 => return Ok(Bytes::Owned(Vec::new())),
                    // Bytes streamed are not kept raw: a read of them stages them first.
                    Some(_) => self.restage(ino.0, &mut g)?,
                    None => {}
                }
                if let Some(f) = &g.file {
                    return read_file_at(f, offset, size).map(Bytes::Owned);
                }
            }
            let rel = lock(&self.state).path(ino.0)?;
            let (_, path, meta) = self.resolve(&rel)?;
            let r = self.reader_for(ino.0, &path, &meta)?;
            self.read_frames(&r, seq.as_ref(), None, &path, offset, size)
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
            Some(Handle::Object { .. } | Handle::Dataset { .. }) | None => {
                return reply.error(Errno::EBADF)
            }
        };
        let r = (|| -> Result<(), Errno> {
            self.writable()?;
            match h {
                Err(file) => file.write_all_at(data, offset).map_err(|e| errno(&e)),
                Ok(append) => self.write_adz(ino.0, append, offset, data),
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
        // The close of a descriptor that may write commits; a reader's close changes nothing.
        let writes =
            matches!(lock(&self.state).handles.get(&fh.0), Some(Handle::Adz { writes: true, .. }));
        answer(reply, if writes { self.commit(ino.0) } else { Ok(()) })
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
        let (plain, object) = match lock(&self.state).handles.get(&fh.0) {
            Some(Handle::Plain { file, .. }) => (Some(Arc::clone(file)), false),
            Some(Handle::Object { .. } | Handle::Dataset { .. }) => (None, true),
            _ => (None, false),
        };
        let r = match plain {
            Some(f) => f.sync_all().map_err(|e| errno(&e)),
            None if object => Ok(()),
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
        if self.s3.is_some() {
            return reply.ok();
        }
        let r = lock(&self.state).path(ino.0).and_then(|rel| {
            File::open(self.root.join(rel)).and_then(|d| d.sync_all()).map_err(|e| errno(&e))
        });
        answer(reply, r)
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        if self.s3.is_some() {
            // A bucket has no size: as other object-store file systems, say 1 PiB, all free.
            let blocks = 1 << 38;
            return reply.statfs(blocks, blocks, blocks, 1 << 32, 1 << 32, 4096, 1020, 4096);
        }
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
