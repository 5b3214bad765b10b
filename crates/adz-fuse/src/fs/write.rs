//! The write path. A file written in order from its start streams into the adaptive `Writer`
//! while the application writes (decision 0042); any other change goes to a staging file that
//! is compressed on close or fsync (decision 0027). Both end in the same commit: a complete
//! adz file under a temporary name, renamed over `NAME.adz`.

use super::*;

/// Streams open at once in a mount (each holds a `Writer`'s threads and buffers): a file that
/// would start one more is staged instead.
pub(super) const MAX_STREAMS: usize = 4;

/// The bytes of a file open for writing, until they are committed: a stream or a staging file
/// (never both); neither means the committed version.
#[derive(Debug, Default)]
pub(super) struct Staging {
    /// The staged raw bytes; None until a change that cannot stream fills it.
    pub(super) file: Option<File>,
    pub(super) path: PathBuf,
    /// The file's content is the bytes streamed so far.
    pub(super) stream: Option<Stream>,
    /// Holds bytes not yet committed.
    pub(super) dirty: bool,
    /// Times set while staged, applied again after the commit (which makes a new file).
    pub(super) times: Option<(TimeSpec, TimeSpec)>,
}

/// A file whose content is what was written to it in order from offset 0.
#[derive(Debug)]
pub(super) struct Stream {
    /// None while nothing is written (a file just truncated to 0).
    live: Option<Live>,
    /// Raw bytes written.
    pub(super) len: u64,
    /// When the last write came.
    pub(super) mtime: SystemTime,
}

/// A stream's pipeline, compressing into a temporary next to `NAME.adz`.
#[derive(Debug)]
struct Live {
    writer: Writer,
    /// Where the finished writer left its file (see [`Hold`]); None on an object store, where
    /// the writer uploads to the name itself and finishing publishes.
    kept: Option<Arc<Mutex<Option<String>>>>,
    /// `NAME.adz`, where a commit renames the temporary (on an object store, its key).
    target: PathBuf,
    /// On an object store, the raw bytes streamed, also written to a spool file: the upload
    /// cannot be read back before it is committed, so a fallback stages from here.
    tee: Option<Tee>,
    _slot: Slot,
}

/// A spool file holding a copy of a stream's raw bytes; deleted when dropped, unless kept
/// (a killed daemon leaves it, as it leaves a staging file).
#[derive(Debug)]
struct Tee {
    file: Option<File>,
    path: PathBuf,
}

impl Tee {
    fn keep(mut self) -> (File, PathBuf) {
        let file = self.file.take().expect("a tee has its file until kept");
        (file, std::mem::take(&mut self.path))
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// One of the mount's [`MAX_STREAMS`], given back when dropped.
#[derive(Debug)]
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(count: &Arc<AtomicUsize>) -> Option<Slot> {
        let n = count.fetch_add(1, Ordering::AcqRel);
        if n >= MAX_STREAMS {
            count.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Slot(Arc::clone(count)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Stream {
    fn empty() -> Stream {
        Stream { live: None, len: 0, mtime: SystemTime::now() }
    }
}

/// The upload of a stream: the writer's `finish` does not publish the file but leaves it,
/// complete and synced, under its temporary name (recorded in `kept`). The mount then renames
/// it over `NAME.adz` (a commit) or decodes it into a staging file (a fallback), so that the
/// old version stays until a close or fsync commits.
#[derive(Debug)]
struct Hold {
    inner: Box<dyn Upload>,
    kept: Arc<Mutex<Option<String>>>,
}

impl Upload for Hold {
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
        let n = self.inner.bytes_written();
        let at = self.inner.abandon()?.ok_or_else(|| adz_core::store::Error::Io {
            op: "keep",
            name: String::new(),
            source: io::Error::new(io::ErrorKind::Unsupported, "the upload has no temporary"),
        })?;
        *lock(&self.kept) = Some(at);
        Ok(n)
    }
    fn abort(self: Box<Self>) -> adz_core::store::Result<()> {
        self.inner.abort()
    }
    fn abandon(self: Box<Self>) -> adz_core::store::Result<Option<String>> {
        self.inner.abandon()
    }
}

impl AdzFs {
    /// The staging of `ino` (created empty if it has none).
    fn staging_of(&self, ino: u64) -> Result<Arc<Mutex<Staging>>, Errno> {
        let mut st = lock(&self.state);
        let n = st.nodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
        Ok(Arc::clone(n.staging.get_or_insert_with(Default::default)))
    }

    /// Set the length of `ino`'s content to `len` (a truncate, or `O_TRUNC` with 0), as a
    /// change to commit. A truncation to 0 starts an empty stream; a stream truncated to its
    /// own length stays; anything else is staged.
    pub(super) fn truncate(&self, ino: u64, len: u64) -> Result<(), Errno> {
        let s = self.staging_of(ino)?;
        let mut g = lock(&s);
        if g.file.is_none() {
            if len == 0 {
                if let Some(live) = g.stream.take().and_then(|st| st.live) {
                    let _ = live.writer.abort();
                }
                g.stream = Some(Stream::empty());
                g.dirty = true;
                return Ok(());
            }
            if g.stream.as_ref().is_some_and(|st| st.len == len) {
                return Ok(());
            }
            self.restage(ino, &mut g)?;
        }
        g.file.as_ref().expect("restaged above").set_len(len).map_err(|e| errno(&e))?;
        g.dirty = true;
        Ok(())
    }

    /// Write `data` at `offset` (at the end for `append`) to adz file `ino`: into its stream
    /// if it continues it (or starts one on an empty file), otherwise into its staging file.
    pub(super) fn write_adz(
        &self,
        ino: u64,
        append: bool,
        offset: u64,
        data: &[u8],
    ) -> Result<(), Errno> {
        let s = self.staging_of(ino)?;
        let mut g = lock(&s);
        if g.file.is_none() {
            if g.stream.is_none() && self.committed_len(ino) == Some(0) {
                g.stream = Some(Stream::empty());
            }
            if let Some(st) = g.stream.as_mut() {
                let at = if append { st.len } else { offset };
                if at == st.len && self.stream_write(ino, st, data)? {
                    g.dirty = true;
                    return Ok(());
                }
            }
            self.restage(ino, &mut g)?;
        }
        let f = g.file.as_ref().ok_or(Errno::EIO)?;
        let at = if append { f.metadata().map_err(|e| errno(&e))?.len() } else { offset };
        f.write_all_at(data, at).map_err(|e| errno(&e))?;
        g.dirty = true;
        Ok(())
    }

    /// The raw length of the committed version of `ino`, if it is a readable adz file.
    fn committed_len(&self, ino: u64) -> Option<u64> {
        let rel = lock(&self.state).path(ino).ok()?;
        match self.resolve(&rel).ok()? {
            (Kind::Adz, path, meta) => Some(self.reader_for(ino, &path, &meta).ok()?.reader.len()),
            _ => None,
        }
    }

    /// Append `data` to the stream, starting its pipeline first if needed. False: no stream
    /// slot is free, the caller stages.
    fn stream_write(&self, ino: u64, st: &mut Stream, data: &[u8]) -> Result<bool, Errno> {
        if st.live.is_none() {
            if !self.stream_writes {
                return Ok(false);
            }
            let Some(slot) = Slot::take(&self.streams) else { return Ok(false) };
            st.live = Some(self.start_stream(ino, slot)?);
        }
        let live = st.live.as_mut().expect("started above");
        if let Some(f) = live.tee.as_ref().and_then(|t| t.file.as_ref()) {
            f.write_all_at(data, st.len).map_err(|e| {
                log::error!("{}: writing the spool copy failed: {e}", live.target.display());
                errno(&e)
            })?;
        }
        live.writer.write(data).map_err(|e| {
            log::error!("{}: streaming a write failed: {}", live.target.display(), chain(&e));
            write_errno(&e)
        })?;
        st.len += data.len() as u64;
        st.mtime = SystemTime::now();
        self.frames.counters.bytes_streamed.fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(true)
    }

    fn start_stream(&self, ino: u64, slot: Slot) -> Result<Live, Errno> {
        let rel = lock(&self.state).path(ino)?;
        let name = self.key(&rel)?;
        let target = if self.s3.is_some() { PathBuf::from(&name) } else { self.root.join(&name) };
        let fail = |what: &str, e: &(dyn std::error::Error + 'static)| {
            log::error!("{}: {what}: {}", self.shown(&name).display(), chain(e));
            write_errno(e)
        };
        let upload = self.store().create(&name).map_err(|e| fail("cannot create", &e))?;
        // An object store's upload is invisible until committed, and a killed daemon leaves
        // an incomplete multipart upload, never an object: the stream writes the name itself.
        let (mut upload, kept, tee): (Box<dyn Upload>, _, _) = if self.s3.is_some() {
            let (file, path) = self.new_staging_file(ino)?;
            (upload, None, Some(Tee { file: Some(file), path }))
        } else {
            let kept = Arc::default();
            (Box::new(Hold { inner: upload, kept: Arc::clone(&kept) }), Some(kept), None)
        };
        if let Some(rate) = self.throttle {
            upload = self.throttled(upload, rate);
        }
        let mut opts = self.write.clone();
        opts.link_guess = opts.link_guess.or(self.throttle);
        let writer = Writer::with_upload(upload, opts).map_err(|e| fail("cannot start", &e))?;
        Ok(Live { writer, kept, target, tee, _slot: slot })
    }

    /// As `adz compress --throttle`: a burst of 0.5 ms absorbs sleep jitter only.
    fn throttled(&self, upload: Box<dyn Upload>, rate: f64) -> Box<dyn Upload> {
        let burst = (rate * 0.0005).max(64.0 * 1024.0) as u64;
        Throttled::new(NullStorage::new(), rate).burst(burst).wrap_upload(upload)
    }

    /// Finish a stream's writer: the path of the complete adz file it left, or None when it
    /// was published under its name (an object store).
    fn finish_live(live: Live) -> Result<Option<PathBuf>, Errno> {
        let Live { writer, kept, target, tee, _slot } = live;
        drop(tee);
        writer.finish().map_err(|e| {
            log::error!("{}: finishing the stream failed: {}", target.display(), chain(&e));
            write_errno(&e)
        })?;
        match kept {
            Some(kept) => Ok(Some(PathBuf::from(lock(&kept).take().ok_or(Errno::EIO)?))),
            None => Ok(None),
        }
    }

    /// A new version of `ino` was published on an object store: listings and its reader are
    /// stale.
    fn published(&self, ino: u64) {
        if let Some(s3) = &self.s3 {
            s3.changed();
            if let Some(n) = lock(&self.state).nodes.get_mut(&ino) {
                n.reader = None;
            }
        }
    }

    /// Turn the stream of `ino` (if any) into a staging file with the same bytes, or fill a new
    /// staging file from the committed version: a change that cannot stream follows.
    pub(super) fn restage(&self, ino: u64, g: &mut Staging) -> Result<(), Errno> {
        if g.file.is_some() {
            return Ok(());
        }
        // On an object store the stream's spool copy becomes the staging file; the upload
        // is aborted, so the old object stays until a close or fsync.
        if g.stream.as_ref().is_some_and(|st| st.live.as_ref().is_some_and(|l| l.tee.is_some())) {
            let live = g.stream.take().and_then(|st| st.live).expect("checked above");
            self.frames.counters.stream_fallbacks.fetch_add(1, Ordering::Relaxed);
            let Live { writer, tee, .. } = live;
            let _ = writer.abort();
            let (file, path) = tee.expect("checked above").keep();
            g.file = Some(file);
            g.path = path;
            return Ok(());
        }
        let (file, path) = self.new_staging_file(ino)?;
        let filled = match g.stream.take() {
            // Finish the stream into its temporary (not published) and decode that.
            Some(Stream { live: Some(live), .. }) => {
                self.frames.counters.stream_fallbacks.fetch_add(1, Ordering::Relaxed);
                Self::finish_live(live).and_then(|tmp| {
                    let tmp = tmp.ok_or(Errno::EIO)?;
                    let r = self.decode_into(&tmp, &file);
                    let _ = fs::remove_file(&tmp);
                    r
                })
            }
            Some(Stream { live: None, .. }) => Ok(()),
            None => self.fill_from_committed(ino, &file),
        };
        if let Err(e) = filled {
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        g.file = Some(file);
        g.path = path;
        Ok(())
    }

    /// Decode the committed version of `ino` into `file`.
    fn fill_from_committed(&self, ino: u64, file: &File) -> Result<(), Errno> {
        let rel = lock(&self.state).path(ino)?;
        let (kind, adz, meta) = self.resolve(&rel)?;
        if kind != Kind::Adz {
            return Err(Errno::EIO);
        }
        let r = self.reader_for(ino, &adz, &meta)?;
        r.reader.copy_to(file, self.decode_threads).map(drop).map_err(|e| {
            log::error!("{}: cannot decode it to write to it: {}", adz.display(), chain(&e));
            Errno::EIO
        })
    }

    fn new_staging_file(&self, ino: u64) -> Result<(File, PathBuf), Errno> {
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
        Ok((file, path))
    }

    /// Decode the adz file at `adz` into `out`.
    fn decode_into(&self, adz: &Path, out: &File) -> Result<(), Errno> {
        let fail = |e: &dyn std::error::Error| {
            log::error!("{}: cannot decode the stream to stage it: {e}", adz.display());
            Errno::EIO
        };
        let file = File::open(adz).map_err(|e| fail(&e))?;
        let opts =
            ReaderOptions { cache_bytes: 0, threads: self.decode_threads, ..Default::default() };
        let r = Reader::open(Arc::new(FdStorage { file }), &adz.display().to_string(), opts)
            .map_err(|e| fail(&e))?;
        r.copy_to(out, self.decode_threads).map_err(|e| fail(&e))?;
        Ok(())
    }

    /// Commit the staged or streamed bytes of `ino` into its adz file, atomically replacing it.
    pub(super) fn commit(&self, ino: u64) -> Result<(), Errno> {
        let Some(s) = self.node_staging(ino) else { return Ok(()) };
        let mut g = lock(&s);
        self.commit_locked(ino, &mut g)
    }

    pub(super) fn commit_locked(&self, ino: u64, g: &mut Staging) -> Result<(), Errno> {
        if !g.dirty {
            return Ok(());
        }
        let (rel, unlinked) = {
            let st = lock(&self.state);
            let n = st.nodes.get(&ino).ok_or(Errno::ENOENT)?;
            (n.path.clone(), n.unlinked)
        };
        if unlinked {
            if let Some(live) = g.stream.take().and_then(|st| st.live) {
                let _ = live.writer.abort();
            }
            g.dirty = false;
            return Ok(());
        }
        if let Some(st) = g.stream.take() {
            g.dirty = false;
            return self.commit_stream(ino, &rel, st, g.times.as_ref());
        }
        let name = self.key(&rel)?;
        let adz = self.shown(&name);
        let file = g.file.as_ref().ok_or(Errno::EIO)?;
        let len = file.metadata().map_err(|e| errno(&e))?.len();
        let fail = |what: &str, e: &(dyn std::error::Error + 'static)| {
            log::error!("{}: {what}: {}", adz.display(), chain(e));
            write_errno(e)
        };
        let mut upload = self.store().create(&name).map_err(|e| fail("cannot create", &e))?;
        if self.s3.is_none() {
            let old = fs::symlink_metadata(&adz).ok();
            upload = Box::new(KeepAttributes::new(
                upload,
                old.as_ref().map_or(0o644, |m| m.mode() & 0o7777),
                old.as_ref().filter(|_| self.is_root).map(|m| (m.uid(), m.gid())),
            ));
        }
        if let Some(rate) = self.throttle {
            upload = self.throttled(upload, rate);
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
        self.published(ino);
        if let (Some((a, m)), None) = (&g.times, &self.s3) {
            let _ = set_times(&adz, a, m);
        }
        g.dirty = false;
        Ok(())
    }

    /// Publish a stream: rename its finished temporary over `NAME.adz` with the old file's
    /// mode and owner, or an empty file for a stream with nothing written. A failure loses the
    /// streamed bytes (logged; the old version stays).
    fn commit_stream(
        &self,
        ino: u64,
        rel: &Path,
        st: Stream,
        times: Option<&(TimeSpec, TimeSpec)>,
    ) -> Result<(), Errno> {
        let name = self.key(rel)?;
        if self.s3.is_some() {
            match st.live {
                None if self.committed_len(ino) != Some(0) => {
                    self.put_empty_with(&self.storage, &name, 0o644, None)?
                }
                None => {}
                Some(live) => drop(Self::finish_live(live)?),
            }
            self.published(ino);
            return Ok(());
        }
        let adz = self.root.join(&name);
        let old = fs::symlink_metadata(&adz).ok();
        let mode = old.as_ref().map_or(0o644, |m| m.mode() & 0o7777);
        let owner = old.as_ref().filter(|_| self.is_root).map(|m| (m.uid(), m.gid()));
        match st.live {
            None => {
                if self.committed_len(ino) != Some(0) {
                    self.put_empty_with(&self.storage, &name, mode, owner)?;
                }
            }
            Some(live) => {
                let target = live.target.clone();
                let tmp = Self::finish_live(live)?.ok_or(Errno::EIO)?;
                let published = (|| -> io::Result<()> {
                    if target != adz {
                        return Err(io::Error::other("the file moved while it streamed"));
                    }
                    if let Some((u, g)) = owner {
                        std::os::unix::fs::lchown(&tmp, Some(u), Some(g))?;
                    }
                    fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))?;
                    fs::rename(&tmp, &adz)?;
                    File::open(adz.parent().unwrap_or(&self.root))?.sync_all()
                })();
                if let Err(e) = published {
                    log::error!(
                        "{}: cannot publish the streamed file: {e}; it is kept in {}",
                        adz.display(),
                        tmp.display()
                    );
                    return Err(errno(&e));
                }
            }
        }
        if let Some((a, m)) = times {
            let _ = set_times(&adz, a, m);
        }
        Ok(())
    }

    /// Close the staging of `ino` if no handle is left: commit, then delete the staging file.
    pub(super) fn retire(&self, ino: u64) {
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

    /// Publish an empty adz file under `name` with `mode` (what `creat` makes visible).
    pub(super) fn put_empty(
        &self,
        name: &str,
        mode: u32,
        owner: Option<(u32, u32)>,
    ) -> Result<(), Errno> {
        self.put_empty_with(&self.quick_storage, name, mode, owner)
    }

    fn put_empty_with(
        &self,
        storage: &LocalStorage,
        name: &str,
        mode: u32,
        owner: Option<(u32, u32)>,
    ) -> Result<(), Errno> {
        let fail = |e: &(dyn std::error::Error + 'static)| {
            log::error!("{name}: cannot create: {}", chain(e));
            write_errno(e)
        };
        let opts = FrameWriterOptions::default();
        let w = FrameWriter::new(Vec::new(), opts).map_err(|e| fail(&e))?;
        let bytes = w.finish().map_err(|e| fail(&e))?.0;
        if let Some(s3) = &self.s3 {
            let r = s3.store.put(name, &bytes).map_err(|e| s3.fail("creating", name, &e));
            s3.changed();
            return r;
        }
        let upload = storage.create(name).map_err(|e| match &e {
            adz_core::store::Error::Io { source, .. } => errno(source),
            _ => fail(&e),
        })?;
        let mut up = Box::new(KeepAttributes::new(upload, mode, owner));
        up.append(&bytes).map_err(|e| fail(&e))?;
        up.commit().map_err(|e| fail(&e))?;
        Ok(())
    }
}
