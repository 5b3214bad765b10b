//! The write path: staging files, and their commit through the adaptive `Writer`.

use super::*;

/// The raw bytes of a file open for writing, until they are committed.
#[derive(Debug, Default)]
pub(super) struct Staging {
    /// None until the first write or truncate fills it (from the committed version).
    pub(super) file: Option<File>,
    pub(super) path: PathBuf,
    /// Holds bytes not yet committed.
    pub(super) dirty: bool,
    /// Times set while staged, applied again after the commit (which makes a new file).
    pub(super) times: Option<(TimeSpec, TimeSpec)>,
}

impl AdzFs {
    /// The staging of `ino`, filled from the committed version unless it is truncated to 0.
    /// `truncate`: set the length (and mark it changed).
    pub(super) fn staging_for(
        &self,
        ino: u64,
        truncate: Option<u64>,
    ) -> Result<Arc<Mutex<Staging>>, Errno> {
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
        let upload = Box::new(KeepAttributes::new(
            upload,
            old.as_ref().map_or(0o644, |m| m.mode() & 0o7777),
            old.as_ref().filter(|_| self.is_root).map(|m| (m.uid(), m.gid())),
        ));
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
        let mut up = Box::new(KeepAttributes::new(upload, mode, owner));
        up.append(&bytes).map_err(|e| fail(&e))?;
        up.commit().map_err(|e| fail(&e))?;
        Ok(())
    }
}
