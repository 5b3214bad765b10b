//! The read path: an opened version of an adz file and its frames through the shared cache.

use super::*;

/// An opened version of an adz file: bound to a file descriptor, so a rename over the name
/// (a commit) or an unlink does not change what it reads.
pub(super) struct OpenReader {
    pub(super) reader: Arc<Reader>,
    pub(super) id: u64,
    pub(super) ident: Ident,
}

/// A read-only [`Storage`] over one open file (the reader's version of an adz file).
#[derive(Debug)]
pub(super) struct FdStorage {
    pub(super) file: File,
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
        // A recycled buffer: its pages are in place and it is not zeroed again.
        let mut buf = adz_core::reader::frame_buffer((range.end - range.start) as usize);
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

impl AdzFs {
    /// The current version's reader, reopened if the file changed since.
    pub(super) fn reader_for(
        &self,
        ino: u64,
        path: &Path,
        meta: &Meta,
    ) -> Result<Arc<OpenReader>, Errno> {
        if let Some(r) = lock(&self.state).nodes.get(&ino).and_then(|n| n.reader.clone()) {
            if r.ident == meta.ident {
                return Ok(r);
            }
        }
        let opts =
            ReaderOptions { cache_bytes: 0, threads: self.decode_threads, ..Default::default() };
        // Locally the reader holds the file open (a later commit renames over the name); an
        // object is read by name, its version told by size and last-modified.
        let (reader, id) = match &self.s3 {
            Some(s3) => {
                let key = path.to_str().ok_or(Errno::EINVAL)?;
                (Reader::open(Arc::clone(&s3.store), key, opts), meta.ident)
            }
            None => {
                let file = File::open(path).map_err(|e| errno(&e))?;
                let id = Meta::local(&file.metadata().map_err(|e| errno(&e))?).ident;
                (Reader::open(Arc::new(FdStorage { file }), &path.display().to_string(), opts), id)
            }
        };
        let reader = reader.map_err(|e| {
            log::error!("{}: cannot open: {}", path.display(), chain(&e));
            Errno::EIO
        })?;
        let r = Arc::new(OpenReader {
            reader: Arc::new(reader),
            id: READER_ID.fetch_add(1, Ordering::Relaxed),
            ident: id,
        });
        if let Some(n) = lock(&self.state).nodes.get_mut(&ino) {
            n.reader = Some(Arc::clone(&r));
        }
        Ok(r)
    }

    /// Read raw bytes of the current version, frame by frame through the shared cache;
    /// `seq`: the handle's sequence, for read-ahead; `next`: the next part of a dataset.
    pub(super) fn read_frames(
        &self,
        r: &Arc<OpenReader>,
        seq: Option<&Arc<Mutex<Seq>>>,
        next: Option<NextPart<'_>>,
        path: &Path,
        off: u64,
        size: u32,
    ) -> Result<Bytes, Errno> {
        let end = off.saturating_add(u64::from(size)).min(r.reader.len());
        if off >= end {
            return Ok(Bytes::Owned(Vec::new()));
        }
        let entries = r.reader.index().entries();
        let frames = r.reader.index().frames_for(off..end);
        if frames.len() == 1 {
            // Inside one cached frame (the usual case: 128 KiB requests, larger frames): the
            // reply is a slice of the cached frame, no copy (of a raw frame: of its fetched bytes).
            if let Some(data) = self.frames.get((r.id, frames.start)) {
                let at = (off - entries[frames.start].raw_offset) as usize;
                if let Some(seq) = seq {
                    self.frames.after_read(r, seq, off, end, frames.end, next);
                }
                return Ok(Bytes::Shared(data, at..at + (end - off) as usize));
            }
        }
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
            if let Some(data) = self.frames.get((r.id, i)) {
                copy(&mut out, i, &data);
                i += 1;
                continue;
            }
            // A run of frames neither cached nor being decoded: decoded together (in
            // parallel by the reader). None: another read took frame i on meanwhile.
            let Some((run, res)) = self.frames.decode(r, i, frames.end) else { continue };
            let data = res.map_err(|e| {
                log::error!(
                    "{}: read of {size} bytes at {off} failed: {}",
                    path.display(),
                    chain(&e)
                );
                Errno::EIO
            })?;
            self.frames.counters.frames_decoded.fetch_add(run.len() as u64, Ordering::Relaxed);
            for (k, d) in run.clone().zip(&data) {
                copy(&mut out, k, d);
            }
            i = run.end;
        }
        if let Some(seq) = seq {
            self.frames.after_read(r, seq, off, end, frames.end, next);
        }
        Ok(Bytes::Owned(out))
    }
}

/// The bytes a read replies with: its own, or a slice of a frame in the shared cache.
pub(super) enum Bytes {
    Owned(Vec<u8>),
    Shared(adz_core::reader::FrameBytes, std::ops::Range<usize>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Shared(d, r) => &d[r.clone()],
        }
    }
}

pub(super) fn read_file_at(f: &File, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
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
