//! A committed dataset read as one file: only the parts a range touches are opened.

use super::*;

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

/// What [`DatasetReader::verify`] found in one part.
#[derive(Debug)]
#[non_exhaustive]
pub struct PartCheck {
    /// The part's object name.
    pub name: String,
    /// Its logical range in the dataset.
    pub range: Range<u64>,
    /// Frames decoded and checked.
    pub frames: u64,
    /// What is wrong with it: the part itself (missing, swapped) or each bad frame; empty if
    /// every frame decodes and its checksum holds.
    pub problems: Vec<DatasetError>,
}

/// Frames [`DatasetReader::verify`] decodes at a time: bounds its memory.
const VERIFY_FRAMES: usize = 8;

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

    /// Checks every part: that it is the part the manifest committed (size, length, trailer
    /// checksum), then every frame decoded and its checksum. A bad part does not stop the
    /// others; in a bad part every bad frame is named. `progress` is told the raw bytes
    /// checked so far. A few decoded frames per part are held at a time (`VERIFY_FRAMES`).
    pub fn verify(&self, mut progress: impl FnMut(u64)) -> Vec<PartCheck> {
        let mut done = 0u64;
        let mut out = Vec::with_capacity(self.manifest.parts.len());
        for (i, p) in self.manifest.parts.iter().enumerate() {
            let mut check = PartCheck {
                name: p.name.clone(),
                range: p.range(),
                frames: 0,
                problems: Vec::new(),
            };
            let reader = match self.part(i) {
                Ok(r) => r,
                Err(e) => {
                    check.problems.push(e);
                    done += p.len;
                    progress(done);
                    out.push(check);
                    continue;
                }
            };
            let entries = reader.index().entries();
            let mut at = 0;
            while at < entries.len() {
                let end = (at + VERIFY_FRAMES).min(entries.len());
                if reader.frames(at..end).is_err() {
                    // Name each bad frame of the run, not only the first.
                    for j in at..end {
                        if let Err(e) = reader.frames(j..j + 1) {
                            check.problems.push(DatasetError::part_failed(&p.name, p.range(), e));
                        }
                    }
                }
                check.frames += (end - at) as u64;
                done += entries[at..end].iter().map(|e| u64::from(e.raw_len)).sum::<u64>();
                progress(done);
                at = end;
            }
            out.push(check);
        }
        out
    }

    /// Part `i`'s reader (`i` indexes [`Manifest::parts`]), opened and checked against the
    /// manifest on first use: for a caller that reads frames itself (the mount's frame cache).
    /// Panics if `i` is not below the number of parts.
    pub fn part_reader(&self, i: usize) -> Result<Arc<Reader>> {
        self.part(i)
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
