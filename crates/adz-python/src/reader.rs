//! `adz.Reader`'s native half: [`RawReader`] over an adz file (`open_reader`), a committed
//! dataset or a tiered dataset ([`Source`]).

use std::sync::{Arc, Mutex};

use adz_core::dataset::DatasetReader;
use adz_core::open::{is_missing_trailer, open_reader as open_random};
use adz_core::{Reader, ReaderOptions};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::buffer::Pinned;
use crate::errors::{closed, dataset_to_py, to_py, ConfigError, CorruptData};
use crate::lock;
use crate::options::reader_options;
use crate::tiers;

/// The buffer for a read of `n` bytes at `offset`: refused above the reader's
/// `max_range_bytes`, and `MemoryError` rather than an abort if the memory is not there.
pub(crate) fn alloc_read(r: &Source, offset: u64, n: u64) -> PyResult<Vec<u8>> {
    let limit = r.options().max_range_bytes;
    if n > limit {
        return Err(ConfigError::new_err(format!(
            "a read of {n} bytes at offset {offset} is larger than max_range_bytes={limit}: \
             read in pieces, or open with a larger max_range_bytes"
        )));
    }
    let mut out = Vec::new();
    let n = usize::try_from(n).map_err(|_| PyMemoryError::new_err(format!("{n} bytes")))?;
    out.try_reserve_exact(n).map_err(|e| {
        PyMemoryError::new_err(format!("cannot allocate {n} bytes for a read: {e}"))
    })?;
    out.resize(n, 0);
    Ok(out)
}

/// The native random-access reader behind `adz.Reader`: reads decode only the frames they
/// overlap (every checksum checked), with the GIL released.
#[pyclass(module = "adz._adz")]
pub(crate) struct RawReader {
    inner: Mutex<Option<Arc<Source>>>,
    pos: Mutex<u64>,
}

/// What a reader reads: an adz file, a committed dataset read as one file, or a dataset on
/// storage tiers.
pub(crate) enum Source {
    File(Reader),
    Dataset(DatasetReader, ReaderOptions),
    Tiered(adz_tier::TieredReader, ReaderOptions),
}

impl Source {
    fn len(&self) -> u64 {
        match self {
            Source::File(r) => r.len(),
            Source::Dataset(r, _) => r.len(),
            Source::Tiered(r, _) => r.len(),
        }
    }

    fn options(&self) -> &ReaderOptions {
        match self {
            Source::File(r) => r.options(),
            Source::Dataset(_, o) | Source::Tiered(_, o) => o,
        }
    }

    fn read_at(&self, offset: u64, out: &mut [u8]) -> PyResult<usize> {
        match self {
            Source::File(r) => r.read_at(offset, out).map_err(to_py),
            Source::Dataset(r, _) => r.read_at(offset, out).map_err(dataset_to_py),
            Source::Tiered(r, _) => r.read_at(offset, out).map_err(tiers::tier_to_py),
        }
    }
}

impl RawReader {
    /// A reader of `source`, at position 0.
    pub(crate) fn new(source: Source) -> RawReader {
        RawReader { inner: Mutex::new(Some(Arc::new(source))), pos: Mutex::new(0) }
    }

    fn reader(&self) -> PyResult<Arc<Source>> {
        lock(&self.inner).clone().ok_or_else(closed)
    }
}

#[pymethods]
impl RawReader {
    /// Read into a writable buffer at the position and advance it; returns the number of
    /// bytes (fewer only at the end, 0 there).
    fn readinto(&self, py: Python<'_>, buf: &Bound<'_, PyAny>) -> PyResult<usize> {
        let r = self.reader()?;
        let mut pinned = Pinned::new_writable(buf)?;
        let out = pinned
            .as_mut_slice()
            .ok_or_else(|| PyValueError::new_err("readinto needs a writable buffer"))?;
        // The position lock is taken only with the GIL released, so a thread waiting on it
        // never holds the GIL another thread needs to finish.
        py.allow_threads(|| {
            let mut pos = lock(&self.pos);
            let n = r.read_at(*pos, out)?;
            *pos += n as u64;
            Ok(n)
        })
    }

    /// Read up to `size` bytes at the position and advance it (all that is left if `size` is
    /// negative or omitted).
    #[pyo3(signature = (size=-1))]
    fn read<'py>(&self, py: Python<'py>, size: i64) -> PyResult<Bound<'py, PyBytes>> {
        let r = self.reader()?;
        let data = py.allow_threads(|| {
            let mut pos = lock(&self.pos);
            let left = r.len().saturating_sub(*pos);
            let n = if size < 0 { left } else { left.min(size as u64) };
            let mut out = alloc_read(&r, *pos, n)?;
            let got = r.read_at(*pos, &mut out)?;
            out.truncate(got);
            *pos += got as u64;
            Ok::<_, PyErr>(out)
        })?;
        Ok(PyBytes::new(py, &data))
    }

    /// Read up to `length` bytes at raw offset `offset` without moving the position (fewer
    /// only at the end of the data). Safe to call from several threads at once.
    fn pread<'py>(
        &self,
        py: Python<'py>,
        offset: u64,
        length: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let r = self.reader()?;
        let data = py.allow_threads(|| {
            let n = length.min(r.len().saturating_sub(offset));
            let mut out = alloc_read(&r, offset, n)?;
            let got = r.read_at(offset, &mut out)?;
            out.truncate(got);
            Ok::<_, PyErr>(out)
        })?;
        Ok(PyBytes::new(py, &data))
    }

    /// Move the position: `whence` 0 from the start, 1 from the position, 2 from the end.
    /// Positions past the end are allowed (reads there return nothing); negative ones are not.
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&self, offset: i64, whence: i32) -> PyResult<u64> {
        let len = self.reader()?.len();
        let mut pos = lock(&self.pos);
        let base = match whence {
            0 => 0,
            1 => *pos,
            2 => len,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "invalid whence ({whence}, should be 0, 1 or 2)"
                )))
            }
        };
        let target = base
            .checked_add_signed(offset)
            .ok_or_else(|| PyValueError::new_err(format!("negative seek position {offset}")))?;
        *pos = target;
        Ok(target)
    }

    /// The position.
    fn tell(&self) -> PyResult<u64> {
        self.reader()?;
        Ok(*lock(&self.pos))
    }

    /// Raw (decompressed) size of the file.
    fn size(&self) -> PyResult<u64> {
        Ok(self.reader()?.len())
    }

    /// What the reader has done: frames and bytes decoded, cache hits, storage requests and
    /// bytes fetched.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let s = match &*self.reader()? {
            Source::File(r) => r.stats(),
            Source::Dataset(r, _) => {
                d.set_item("parts", r.manifest().parts.len())?;
                d.set_item("parts_opened", r.parts_opened())?;
                d.set_item("version", r.manifest().version)?;
                return Ok(d);
            }
            Source::Tiered(r, _) => {
                d.set_item("segments", r.catalog().segments.len())?;
                return Ok(d);
            }
        };
        d.set_item("frames_decoded", s.frames_decoded)?;
        d.set_item("bytes_decoded", s.bytes_decoded)?;
        d.set_item("cache_hits", s.cache_hits)?;
        d.set_item("fetches", s.fetches)?;
        d.set_item("bytes_fetched", s.bytes_fetched)?;
        Ok(d)
    }

    /// Close the reader.
    fn close(&self) {
        lock(&self.inner).take();
    }
}

/// Open `path` for random-access reading (reads the trailer; every read checks every
/// checksum). A file whose trailer is missing or damaged raises `CorruptData` naming
/// `adz recover`, which salvages its complete frames.
#[pyfunction]
#[pyo3(signature = (path, threads=None, cache_bytes=None, max_range_bytes=None))]
pub(crate) fn open_reader(
    py: Python<'_>,
    path: &str,
    threads: Option<usize>,
    cache_bytes: Option<u64>,
    max_range_bytes: Option<u64>,
) -> PyResult<RawReader> {
    let opts = reader_options(threads, cache_bytes, max_range_bytes)?;
    let r = py.allow_threads(|| open_random(path, opts)).map_err(|e| {
        let hint = is_missing_trailer(&e);
        let err = to_py(e);
        if hint {
            CorruptData::new_err(format!(
                "{}; if its writer died, `adz recover {path} OUT` keeps its complete frames",
                err.value(py)
            ))
        } else {
            err
        }
    })?;
    Ok(RawReader::new(Source::File(r)))
}
