//! `adz._adz`: the native half of the `adz` Python package (the Python half, `python/adz`,
//! makes these into `io.RawIOBase` file objects and a numcodecs codec).
//!
//! Everything that can wait (a write that blocks on a full pipeline, a wait, a close, a read)
//! runs with the GIL released, so Python threads and numpy go on meanwhile. That is also what
//! keeps it free of deadlocks: pipeline threads that drop the last reference to a Python
//! buffer need nothing from the thread that waits on them.
//!
//! The logic lives in `adz_core`; this crate converts arguments, buffers and errors.

mod buffer;
mod hdf5;
mod tiers;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use adz_core::dataset::{Dataset, DatasetError, DatasetReader, Placement};
use adz_core::open::{
    check_block_size, compress_to_vec, create_writer, decompress_slice, is_missing_trailer,
    open_reader as open_random, parse_hint, parse_link, parse_strategy, storage_for,
};
use adz_core::{Error, Reader, ReaderOptions, WriteHandle, WriteOptions, WriteSummary, Writer};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::buffer::Pinned;

create_exception!(_adz, AdzError, PyException, "Base class of every adz error.");
create_exception!(
    _adz,
    CorruptData,
    AdzError,
    "The data is damaged or not an adz file; no wrong bytes were returned."
);
create_exception!(_adz, StorageError, AdzError, "Reading or writing storage failed.");
create_exception!(_adz, NotFound, StorageError, "No such file or object.");
create_exception!(
    _adz,
    ConfigError,
    AdzError,
    "An option (strategy, link, hint, block size) has a value that cannot work."
);
create_exception!(
    _adz,
    WriteFailed,
    AdzError,
    "The write failed (a storage error on the way); nothing was committed."
);

create_exception!(
    _adz,
    CommitConflict,
    AdzError,
    "A dataset commit lost to a concurrent commit; nothing was committed, retry it."
);
create_exception!(
    _adz,
    MissingPart,
    AdzError,
    "A dataset commit expected a writer whose part is not there; nothing was committed."
);

/// The Python exception for a dataset error, with the whole cause chain in its message.
fn dataset_to_py(e: DatasetError) -> PyErr {
    let msg = adz_core::store::chain_text(&e);
    match e {
        DatasetError::NotFound { .. } | DatasetError::Gap { .. } => NotFound::new_err(msg),
        DatasetError::CommitConflict { .. } => CommitConflict::new_err(msg),
        DatasetError::MissingPart { .. } => MissingPart::new_err(msg),
        DatasetError::InvalidId { .. }
        | DatasetError::Overlap { .. }
        | DatasetError::RangeTooLarge { .. } => ConfigError::new_err(msg),
        DatasetError::PartMismatch { .. } | DatasetError::BadManifest { .. } => {
            CorruptData::new_err(msg)
        }
        DatasetError::Part { source, .. } => {
            let kind = to_py(*source);
            Python::with_gil(|py| PyErr::from_type(kind.get_type(py), msg))
        }
        DatasetError::Core(e) => to_py_with(e, msg),
        DatasetError::Store(e) => to_py_with(Error::Store(e), msg),
        _ => StorageError::new_err(msg),
    }
}

/// The exception class `to_py` picks for `e`, with message `msg`.
fn to_py_with(e: Error, msg: String) -> PyErr {
    let kind = to_py(e);
    Python::with_gil(|py| PyErr::from_type(kind.get_type(py), msg))
}

/// The Python exception for an adz error, with the whole cause chain in its message.
fn to_py(e: Error) -> PyErr {
    let msg = message(&e);
    match e {
        Error::Format(_) | Error::Codec { .. } => CorruptData::new_err(msg),
        Error::Store(adz_core::store::Error::NotFound { .. }) => NotFound::new_err(msg),
        Error::Store(adz_core::store::Error::InvalidName { .. })
        | Error::Config(_)
        | Error::Limit { .. }
        | Error::RangeTooLarge { .. } => ConfigError::new_err(msg),
        Error::Pipeline(_) => WriteFailed::new_err(msg),
        _ => StorageError::new_err(msg),
    }
}

/// An error and its causes, each once, cause last.
fn message(e: &Error) -> String {
    adz_core::store::chain_text(e)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn closed() -> PyErr {
    PyValueError::new_err("I/O operation on closed file")
}

/// The core's limits, checked here too so that they raise `ValueError` before anything is
/// created (spawning 100 000 threads aborts the interpreter).
use adz_core::pipeline::{MAX_BUFFERS, MAX_THREADS};

fn check_threads(t: usize) -> PyResult<()> {
    if t > MAX_THREADS {
        return Err(PyValueError::new_err(format!(
            "threads={t} is more than {MAX_THREADS}; None (or 0) means one per core"
        )));
    }
    Ok(())
}

/// Hints for byte ranges, given to the writer after it is created.
type RangeHints = Vec<(std::ops::Range<u64>, adz_core::control::Hint)>;

/// Writer options from the keyword arguments of `adz.open`.
fn write_options(
    strategy: &str,
    link: &str,
    threads: Option<usize>,
    block_size: Option<u64>,
    buffers: Option<usize>,
    hints: &[String],
) -> PyResult<(WriteOptions, RangeHints)> {
    let cfg = |e: adz_core::open::ParseError| ConfigError::new_err(e.0);
    if let Some(t) = threads {
        check_threads(t)?;
    }
    if let Some(b) = buffers {
        if b > MAX_BUFFERS {
            return Err(PyValueError::new_err(format!(
                "buffers={b} is more than {MAX_BUFFERS}; each buffer holds a block"
            )));
        }
    }
    let mut opts = WriteOptions {
        strategy: parse_strategy(strategy).map_err(cfg)?,
        link: parse_link(link).map_err(cfg)?,
        threads: threads.unwrap_or(0),
        buffers: buffers.unwrap_or(0),
        ..WriteOptions::default()
    };
    if let Some(b) = block_size {
        opts.block_size = check_block_size(b).map_err(cfg)?;
    }
    let mut ranges = Vec::new();
    for h in hints {
        match parse_hint(h).map_err(cfg)? {
            (None, hint) => opts.hints.push(hint),
            (Some(r), hint) => ranges.push((r, hint)),
        }
    }
    Ok((opts, ranges))
}

fn summary_dict<'py>(py: Python<'py>, s: &WriteSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("raw_bytes", s.raw_bytes)?;
    d.set_item("stored_bytes", s.stored_bytes)?;
    d.set_item("frames", s.frames)?;
    d.set_item("ratio", s.ratio())?;
    d.set_item("seconds", s.seconds)?;
    d.set_item("link", s.link)?;
    d.set_item("sink_seconds", s.sink_seconds)?;
    d.set_item("strategy", &s.strategy)?;
    let configs = PyDict::new(py);
    for (k, v) in &s.configs {
        configs.set_item(k, v)?;
    }
    d.set_item("configs", configs)?;
    Ok(d)
}

/// The native writer behind `adz.Writer`.
#[pyclass(module = "adz._adz")]
struct RawWriter {
    inner: Mutex<Option<Writer>>,
    path: String,
}

impl RawWriter {
    /// Run `f` on the open writer with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Writer) -> Result<T, Error> + Send,
    ) -> PyResult<T> {
        py.allow_threads(|| {
            let mut g = lock(&self.inner);
            let w = g.as_mut().ok_or_else(closed)?;
            f(w).map_err(to_py)
        })
    }
}

#[pymethods]
impl RawWriter {
    /// Write the bytes of any buffer (bytes, bytearray, memoryview, numpy array). Returns
    /// once they are in the pipeline's buffers; returns the number of bytes.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let pinned = Pinned::new(data)?;
        let bytes = pinned.as_ref();
        self.with(py, |w| w.write(bytes))?;
        Ok(bytes.len())
    }

    /// Write a buffer asynchronously, without a copy: returns a `WriteFuture` at once. The
    /// buffer must not change until the future is done.
    fn write_async(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<WriteFuture> {
        let pinned = Pinned::new(data)?;
        let len = pinned.as_ref().len();
        let handle = self.with(py, |w| w.write_async(pinned))?;
        Ok(WriteFuture { handle: Mutex::new(Some(handle)), result: Mutex::new(None), len })
    }

    /// Hint for raw bytes start..end not yet written: `no-compress`, `write-once`, `hot`,
    /// `dtype=f64`, ...
    fn advise(&self, py: Python<'_>, start: u64, end: u64, hint: &str) -> PyResult<()> {
        let (range, hint) = parse_hint(hint).map_err(|e| ConfigError::new_err(e.0))?;
        if range.is_some() {
            return Err(ConfigError::new_err("give the range as start and end, not in the hint"));
        }
        self.with(py, |w| w.advise(start..end, hint))
    }

    /// Raw bytes accepted so far.
    fn tell(&self) -> PyResult<u64> {
        lock(&self.inner).as_ref().map(Writer::raw_bytes).ok_or_else(closed)
    }

    /// Finish and commit the file; returns the summary as a dict. The file appears under its
    /// name only now.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let w = lock(&self.inner).take().ok_or_else(closed)?;
        let s = py.allow_threads(|| w.finish()).map_err(to_py)?;
        summary_dict(py, &s)
    }

    /// Abandon the write: nothing is committed and the temporary upload is removed. Does
    /// nothing if already closed.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        match lock(&self.inner).take() {
            Some(w) => py.allow_threads(|| w.abort()).map_err(to_py),
            None => Ok(()),
        }
    }

    /// Whether the writer is closed.
    #[getter]
    fn closed(&self) -> bool {
        lock(&self.inner).is_none()
    }

    /// The path being written.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }
}

impl Drop for RawWriter {
    fn drop(&mut self) {
        // Dropping a writer joins its threads, which may need the GIL to let go of a Python
        // buffer: release it while they finish. (`__del__` in python/adz aborts an unclosed
        // writer first; a writer dropped here without that keeps its temporary upload for
        // `adz recover`, as adz-core does.)
        if let Some(w) = lock(&self.inner).take() {
            Python::with_gil(|py| py.allow_threads(|| drop(w)));
        }
    }
}

/// An asynchronous write in progress (`RawWriter.write_async`).
#[pyclass(module = "adz._adz")]
struct WriteFuture {
    handle: Mutex<Option<WriteHandle<Pinned>>>,
    result: Mutex<Option<Result<(), (u8, String)>>>,
    len: usize,
}

#[pymethods]
impl WriteFuture {
    /// True once every block of the write is compressed (the buffer may change again).
    fn done(&self) -> bool {
        lock(&self.handle).as_ref().is_none_or(WriteHandle::is_done)
    }

    /// Wait until the write is compressed; raise its error if it failed. With a timeout in
    /// seconds, raise TimeoutError if it is not done by then. Returns the number of bytes.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<usize> {
        if let Some(t) = timeout {
            let deadline = Instant::now() + Duration::from_secs_f64(t.max(0.0));
            let ready = py.allow_threads(|| loop {
                if self.done() {
                    return true;
                }
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_micros(500));
            });
            if !ready {
                return Err(pyo3::exceptions::PyTimeoutError::new_err(
                    "the asynchronous write is not done yet",
                ));
            }
        }
        let outcome = py.allow_threads(|| {
            let mut r = lock(&self.result);
            if r.is_none() {
                let h = lock(&self.handle).take();
                let res = match h.map(WriteHandle::wait) {
                    // The pinned buffer comes back here; it is dropped with the GIL held.
                    Some(Ok(pinned)) => Ok(Some(pinned)),
                    Some(Err(e)) => Err(e),
                    None => Ok(None),
                };
                let (stored, back) = match res {
                    Ok(p) => (Ok(()), p),
                    Err(e) => {
                        let code = match &e {
                            Error::Pipeline(_) => 1,
                            Error::Format(_) | Error::Codec { .. } => 2,
                            _ => 3,
                        };
                        (Err((code, message(&e))), None)
                    }
                };
                *r = Some(stored);
                return (r.clone(), back);
            }
            (r.clone(), None)
        });
        let (result, pinned) = outcome;
        drop(pinned);
        match result {
            Some(Err((1, m))) => Err(WriteFailed::new_err(m)),
            Some(Err((2, m))) => Err(CorruptData::new_err(m)),
            Some(Err((_, m))) => Err(StorageError::new_err(m)),
            _ => Ok(self.len),
        }
    }

    /// `concurrent.futures` spelling of `wait`.
    #[pyo3(signature = (timeout=None))]
    fn result(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<usize> {
        self.wait(py, timeout)
    }
}

/// The buffer for a read of `n` bytes at `offset`: refused above the reader's
/// `max_range_bytes`, and `MemoryError` rather than an abort if the memory is not there.
fn alloc_read(r: &Source, offset: u64, n: u64) -> PyResult<Vec<u8>> {
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
struct RawReader {
    pub(crate) inner: Mutex<Option<Arc<Source>>>,
    pub(crate) pos: Mutex<u64>,
}

/// What a reader reads: an adz file, a committed dataset read as one file, or a dataset on
/// storage tiers.
enum Source {
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

/// Open `path` for writing through the adaptive pipeline.
#[pyfunction]
#[pyo3(signature = (path, strategy="throughput", link="auto", threads=None, block_size=None, buffers=None, hints=Vec::new()))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments
fn open_writer(
    py: Python<'_>,
    path: &str,
    strategy: &str,
    link: &str,
    threads: Option<usize>,
    block_size: Option<u64>,
    buffers: Option<usize>,
    hints: Vec<String>,
) -> PyResult<RawWriter> {
    let (opts, ranges) = write_options(strategy, link, threads, block_size, buffers, &hints)?;
    let w = py.allow_threads(|| {
        let mut w = create_writer(path, opts)?;
        for (r, h) in ranges {
            w.advise(r, h)?;
        }
        Ok::<_, Error>(w)
    });
    Ok(RawWriter { inner: Mutex::new(Some(w.map_err(to_py)?)), path: path.to_owned() })
}

/// Open `path` for random-access reading (reads the trailer; every read checks every
/// checksum). A file whose trailer is missing or damaged raises `CorruptData` naming
/// `adz recover`, which salvages its complete frames.
#[pyfunction]
#[pyo3(signature = (path, threads=None, cache_bytes=None, max_range_bytes=None))]
fn open_reader(
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
    Ok(RawReader { inner: Mutex::new(Some(Arc::new(Source::File(r)))), pos: Mutex::new(0) })
}

/// Reader options from the keyword arguments of `adz.open`.
fn reader_options(
    threads: Option<usize>,
    cache_bytes: Option<u64>,
    max_range_bytes: Option<u64>,
) -> PyResult<ReaderOptions> {
    let mut opts = ReaderOptions::default();
    if let Some(t) = threads {
        check_threads(t)?;
        opts.threads = t;
    }
    if let Some(c) = cache_bytes {
        opts.cache_bytes = c;
    }
    if let Some(m) = max_range_bytes {
        opts.max_range_bytes = m;
    }
    Ok(opts)
}

/// Open writer `id`'s part of the dataset `dataset` (a path or s3://bucket/key), at byte
/// `offset` of the dataset, or appended at commit (in id order) when `offset` is None. The
/// part is finished by `close()` and is in the dataset only after `commit_dataset`.
#[pyfunction]
#[pyo3(signature = (dataset, id, offset=None, strategy="throughput", link="auto", threads=None, block_size=None, buffers=None, hints=Vec::new()))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments
fn open_part_writer(
    py: Python<'_>,
    dataset: &str,
    id: &str,
    offset: Option<u64>,
    strategy: &str,
    link: &str,
    threads: Option<usize>,
    block_size: Option<u64>,
    buffers: Option<usize>,
    hints: Vec<String>,
) -> PyResult<RawWriter> {
    let (opts, ranges) = write_options(strategy, link, threads, block_size, buffers, &hints)?;
    let placement = offset.map_or(Placement::Append, Placement::At);
    let (store, name) = py.allow_threads(|| storage_for(dataset)).map_err(to_py)?;
    let part = adz_core::dataset::part_name(&name, id, placement).map_err(dataset_to_py)?;
    let w = py.allow_threads(|| {
        let mut w = Writer::create(&*store, &part, opts)?;
        for (r, h) in ranges {
            w.advise(r, h)?;
        }
        Ok::<_, Error>(w)
    });
    Ok(RawWriter { inner: Mutex::new(Some(w.map_err(to_py)?)), path: format!("{dataset}: {part}") })
}

/// Commit the dataset `dataset` as its next version and return a dict: `version`, `len`,
/// `parts` (a list of dicts: `name`, `offset`, `len`, `stored`), `gaps`. With `ids`, the
/// version lists exactly those writers' parts and a writer with no finished part raises
/// `MissingPart`; without, every part found. `base`: commit only if the latest version is
/// `base` (0: none yet), else raise `CommitConflict`.
#[pyfunction]
#[pyo3(signature = (dataset, ids=None, base=None))]
fn commit_dataset<'py>(
    py: Python<'py>,
    dataset: &str,
    ids: Option<Vec<String>>,
    base: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let (store, name) = py.allow_threads(|| storage_for(dataset)).map_err(to_py)?;
    let m = py
        .allow_threads(|| match &ids {
            Some(ids) => {
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                Dataset::commit_writers(&*store, &name, base, &ids)
            }
            None => Dataset::commit(&*store, &name, base),
        })
        .map_err(dataset_to_py)?;
    let d = PyDict::new(py);
    d.set_item("version", m.version)?;
    d.set_item("len", m.len)?;
    let parts = pyo3::types::PyList::empty(py);
    for p in &m.parts {
        let e = PyDict::new(py);
        e.set_item("name", &p.name)?;
        e.set_item("offset", p.offset)?;
        e.set_item("len", p.len)?;
        e.set_item("stored", p.stored)?;
        parts.append(e)?;
    }
    d.set_item("parts", parts)?;
    let gaps: Vec<(u64, u64)> = m.gaps().into_iter().map(|g| (g.start, g.end)).collect();
    d.set_item("gaps", gaps)?;
    Ok(d)
}

/// Open the latest committed version of the dataset `dataset` as one file for random-access
/// reads (a read opens only the parts its range touches). Raises `NotFound` when nothing is
/// committed.
#[pyfunction]
#[pyo3(signature = (dataset, threads=None, cache_bytes=None, max_range_bytes=None))]
fn open_dataset_reader(
    py: Python<'_>,
    dataset: &str,
    threads: Option<usize>,
    cache_bytes: Option<u64>,
    max_range_bytes: Option<u64>,
) -> PyResult<RawReader> {
    let opts = reader_options(threads, cache_bytes, max_range_bytes)?;
    let (store, name) = py.allow_threads(|| storage_for(dataset)).map_err(to_py)?;
    let r = py.allow_threads(|| DatasetReader::open(store, &name, opts)).map_err(dataset_to_py)?;
    Ok(RawReader {
        inner: Mutex::new(Some(Arc::new(Source::Dataset(r, opts)))),
        pos: Mutex::new(0),
    })
}

/// Compress a buffer into a complete adz file in memory (what the numcodecs codec stores).
#[pyfunction]
#[pyo3(signature = (data, strategy="static=zstd:3", link="auto", threads=None, block_size=None, hints=Vec::new()))]
fn compress<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    strategy: &str,
    link: &str,
    threads: Option<usize>,
    block_size: Option<u64>,
    hints: Vec<String>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (opts, ranges) = write_options(strategy, link, threads, block_size, None, &hints)?;
    if !ranges.is_empty() {
        return Err(ConfigError::new_err("compress takes hints for the whole buffer only"));
    }
    let pinned = Pinned::new(data)?;
    let bytes = pinned.as_ref();
    let out = py.allow_threads(|| compress_to_vec(bytes, opts)).map_err(to_py)?;
    Ok(PyBytes::new(py, &out))
}

/// The default bound on what [`decompress`] returns: a few kilobytes of adz can claim
/// gigabytes, so an unbounded default would let any input exhaust memory (as
/// python-zstandard's `max_output_size` guards against).
const DEFAULT_DECOMPRESS_LIMIT: u64 = 1 << 30;

/// Decompress a complete adz file held in a buffer. `limit` bounds the output size (default
/// 1 GiB; `None` for no bound, only for trusted data): a larger output raises `ConfigError`,
/// before anything is allocated when the file's trailer already says so.
#[pyfunction]
#[pyo3(signature = (data, limit=Some(DEFAULT_DECOMPRESS_LIMIT)))]
fn decompress<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    limit: Option<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let pinned = Pinned::new(data)?;
    let bytes = pinned.as_ref();
    if let Some(l) = limit {
        // The footer's raw size is a claim (the decoder checks it against the frames), but a
        // claim above the limit is refused at once.
        let tail = &bytes[bytes.len().saturating_sub(adz_core::format::FOOTER_LEN)..];
        if let Ok(f) = adz_core::format::Footer::parse(tail, bytes.len() as u64) {
            if f.raw_size > l {
                return Err(ConfigError::new_err(format!(
                    "the data decodes to {} bytes, more than limit={l}: pass a larger limit \
                     (or limit=None for trusted data)",
                    f.raw_size
                )));
            }
        }
    }
    let out = py.allow_threads(|| decompress_slice(bytes, limit)).map_err(to_py)?;
    Ok(PyBytes::new(py, &out))
}

#[pymodule]
fn _adz(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The optional cargo features this module was built with (`s3`: s3://bucket/key paths).
    let features: Vec<&str> =
        [cfg!(feature = "s3").then_some("s3")].into_iter().flatten().collect();
    m.add("features", pyo3::types::PyTuple::new(py, features)?)?;
    m.add("Error", py.get_type::<AdzError>())?;
    m.add("CorruptData", py.get_type::<CorruptData>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("WriteFailed", py.get_type::<WriteFailed>())?;
    m.add("CommitConflict", py.get_type::<CommitConflict>())?;
    m.add("MissingPart", py.get_type::<MissingPart>())?;
    m.add_class::<RawWriter>()?;
    m.add_class::<RawReader>()?;
    m.add_class::<WriteFuture>()?;
    m.add_class::<tiers::RawTiers>()?;
    m.add_function(wrap_pyfunction!(tiers::open_tiers, m)?)?;
    m.add_function(wrap_pyfunction!(open_writer, m)?)?;
    m.add_function(wrap_pyfunction!(open_reader, m)?)?;
    m.add_function(wrap_pyfunction!(open_part_writer, m)?)?;
    m.add_function(wrap_pyfunction!(commit_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(open_dataset_reader, m)?)?;
    m.add_function(wrap_pyfunction!(compress, m)?)?;
    m.add_function(wrap_pyfunction!(decompress, m)?)?;
    hdf5::register(m)?;
    Ok(())
}
