//! Committed datasets as read-only files: where the source holds `NAME.manifest/` with a
//! committed version `vN`, the mount shows one regular file `NAME` (mode 0444, the latest
//! manifest's length and times) and hides `NAME.manifest/` and `NAME.parts/`.
//!
//! Reads go through a [`DatasetReader`] of the version the handle opened: only the parts a
//! range touches are opened, each part's frames through the mount's shared cache and
//! read-ahead (a part is an [`OpenReader`] with its own id in the cache). A new commit shows at
//! the next lookup or stat; an open handle keeps its version.

use super::*;

/// The errno of a change to a dataset (write, truncate, unlink, rename, chmod): the file is
/// not read-only as a whole file system is (EROFS), only this file cannot be changed through
/// the mount; `adz dataset commit` and `gc` change it (docs/MOUNT.md).
pub(super) const REFUSED: Errno = Errno::EPERM;

/// An opened version of a dataset.
pub(super) struct OpenDataset {
    pub(super) reader: DatasetReader,
    /// The manifest's key in the store (`NAME.manifest/vN`), which names the version.
    pub(super) key: PathBuf,
    /// The manifest object's version tag, as [`Meta::ident`].
    ident: Ident,
    /// The indexes of the non-empty parts, in logical order (their ends increase).
    nonempty: Vec<usize>,
    /// The parts opened so far, each with its own id in the shared frame cache.
    parts: Mutex<Vec<Option<Arc<OpenReader>>>>,
}

/// The version of a committed manifest's object name `v{N:020}` (1 or more).
fn manifest_version(name: &str) -> Option<u64> {
    let digits = name.strip_prefix('v')?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
        .filter(|&v| v > 0)
}

/// The latest committed version among the names of a `NAME.manifest/` directory.
pub(super) fn latest_version<'a>(names: impl Iterator<Item = &'a str>) -> Option<u64> {
    names.filter_map(manifest_version).max()
}

/// The key of manifest `version` of the dataset whose key is `dataset`.
pub(super) fn manifest_key(dataset: &str, version: u64) -> String {
    adz_core::dataset::manifest_name(dataset, version)
}

/// `NAME` if `name` is `NAME.manifest` or `NAME.parts`.
pub(super) fn dataset_stem(name: &OsStr) -> Option<&str> {
    let n = name.to_str()?;
    let stem = n.strip_suffix(".manifest").or_else(|| n.strip_suffix(".parts"))?;
    (!stem.is_empty()).then_some(stem)
}

/// A manifest's attributes as the dataset file's: read-only, one link.
pub(super) fn dataset_meta(mut m: Meta) -> Meta {
    m.kind = FileType::RegularFile;
    m.mode = 0o444;
    m.nlink = 1;
    m
}

impl AdzFs {
    /// The latest committed manifest of the dataset shown at `rel`: its key in the store and
    /// its attributes; `None` when `rel` is no committed dataset.
    pub(super) fn dataset_at(&self, rel: &Path) -> Option<(PathBuf, Meta)> {
        rel.file_name()?;
        if let Some(s3) = &self.s3 {
            return s3.dataset(rel);
        }
        let name = rel.to_str()?;
        let dir = self.root.join(adz_core::dataset::manifest_prefix(name));
        let entries: Vec<OsString> =
            fs::read_dir(&dir).ok()?.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        let v = latest_version(entries.iter().filter_map(|n| n.to_str()))?;
        let key = manifest_key(name, v);
        let m = fs::symlink_metadata(self.root.join(&key)).ok()?;
        m.is_file().then(|| (PathBuf::from(key), dataset_meta(Meta::local(&m))))
    }

    /// True if `name` in directory `parent` is the `NAME.manifest/` or `NAME.parts/` of a
    /// committed dataset (hidden: the dataset shows as `NAME`).
    pub(super) fn is_dataset_dir(&self, parent: &Path, name: &OsStr) -> bool {
        dataset_stem(name).is_some_and(|stem| self.dataset_at(&parent.join(stem)).is_some())
    }

    /// The version of the dataset whose manifest is `key`: the node's, or opened now (the
    /// manifest read and checked; no part is opened yet).
    pub(super) fn open_dataset(
        &self,
        ino: u64,
        key: &Path,
        meta: &Meta,
    ) -> Result<Arc<OpenDataset>, Errno> {
        if let Some(d) = lock(&self.state).nodes.get(&ino).and_then(|n| n.dataset.clone()) {
            if d.key == key && d.ident == meta.ident {
                return Ok(d);
            }
        }
        let k = key.to_str().ok_or(Errno::EINVAL)?;
        let (dataset, version) = k
            .rsplit_once(".manifest/")
            .and_then(|(d, v)| Some((d, manifest_version(v)?)))
            .ok_or(Errno::EIO)?;
        let storage: Arc<dyn Storage> = match &self.s3 {
            Some(s3) => Arc::clone(&s3.store),
            None => Arc::new(self.storage.clone()),
        };
        let manifest = Dataset::load(&*storage, dataset, version).map_err(|e| {
            log::error!("{}: cannot open the dataset: {}", self.shown(k).display(), chain(&e));
            Errno::EIO
        })?;
        let parts = &manifest.parts;
        let nonempty = (0..parts.len()).filter(|&i| parts[i].len > 0).collect();
        let n = parts.len();
        // The mount's cache holds the decoded frames: the parts' readers keep none.
        let opts =
            ReaderOptions { cache_bytes: 0, threads: self.decode_threads, ..Default::default() };
        let d = Arc::new(OpenDataset {
            reader: DatasetReader::with_manifest(storage, manifest, opts),
            key: key.to_path_buf(),
            ident: meta.ident,
            nonempty,
            parts: Mutex::new(vec![None; n]),
        });
        if let Some(node) = lock(&self.state).nodes.get_mut(&ino) {
            node.dataset = Some(Arc::clone(&d));
        }
        Ok(d)
    }

    /// Part `i` of `ds`, opened (and checked against the manifest) on first use.
    fn dataset_part(&self, ds: &OpenDataset, i: usize) -> Result<Arc<OpenReader>, Errno> {
        if let Some(r) = &lock(&ds.parts)[i] {
            return Ok(Arc::clone(r));
        }
        let reader = ds.reader.part_reader(i).map_err(|e| {
            log::error!("{}: {}", self.shown_key(&ds.key).display(), chain(&e));
            Errno::EIO
        })?;
        let r = Arc::new(OpenReader {
            reader,
            id: READER_ID.fetch_add(1, Ordering::Relaxed),
            ident: (0, 0, 0, 0, 0),
        });
        lock(&ds.parts)[i] = Some(Arc::clone(&r));
        Ok(r)
    }

    fn shown_key(&self, key: &Path) -> PathBuf {
        key.to_str().map_or_else(|| key.to_path_buf(), |k| self.shown(k))
    }

    /// Read raw bytes of dataset version `ds` part by part, each part's frames through the
    /// shared cache. A part that cannot be opened, a bad frame or a gap fails this read
    /// only (EIO, logged); other ranges still read.
    pub(super) fn read_dataset(
        &self,
        ds: &OpenDataset,
        seq: &Arc<Mutex<Seq>>,
        off: u64,
        size: u32,
    ) -> Result<Bytes, Errno> {
        let end = off.saturating_add(u64::from(size)).min(ds.reader.len());
        if off >= end {
            return Ok(Bytes::Owned(Vec::new()));
        }
        let parts = &ds.reader.manifest().parts;
        let first = ds.nonempty.partition_point(|&i| parts[i].offset + parts[i].len <= off);
        let gap = |gap: std::ops::Range<u64>| {
            log::error!(
                "{}: dataset bytes {gap:?} are in no part",
                self.shown_key(&ds.key).display()
            );
            Errno::EIO
        };
        let mut out = Vec::with_capacity((end - off) as usize);
        let mut at = off;
        for (j, &i) in ds.nonempty.iter().enumerate().skip(first) {
            if at >= end {
                break;
            }
            let p = &parts[i];
            if p.offset > at {
                return Err(gap(at..p.offset.min(end)));
            }
            let to = end.min(p.offset + p.len);
            let r = self.dataset_part(ds, i)?;
            let shown = self.shown(&p.name);
            // Read-ahead goes on into the next part (opened when the window reaches it).
            let next = || self.dataset_part(ds, *ds.nonempty.get(j + 1)?).ok();
            let b = self.read_frames(
                &r,
                Some(seq),
                Some(&next),
                &shown,
                at - p.offset,
                (to - at) as u32,
            )?;
            if b.len() as u64 != to - at {
                log::error!("{}: it ended early; it is not the part committed", shown.display());
                return Err(Errno::EIO);
            }
            if at == off && to == end {
                // Within one part: the reply may be a slice of a cached frame.
                return Ok(b);
            }
            out.extend_from_slice(&b);
            at = to;
        }
        if at < end {
            return Err(gap(at..end));
        }
        Ok(Bytes::Owned(out))
    }
}
