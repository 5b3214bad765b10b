//! `adz.Writer`'s native half: [`RawWriter`] (`open_writer`, and a dataset's part writer) and
//! its asynchronous writes ([`WriteFuture`]).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use adz_core::open::{create_writer, parse_hint};
use adz_core::{Error, WriteHandle, WriteSummary, Writer};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::buffer::Pinned;
use crate::errors::{closed, message, to_py, ConfigError, CorruptData, StorageError, WriteFailed};
use crate::lock;
use crate::options::{write_options, RangeHints};

pub(crate) fn summary_dict<'py>(py: Python<'py>, s: &WriteSummary) -> PyResult<Bound<'py, PyDict>> {
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
pub(crate) struct RawWriter {
    inner: Mutex<Option<Writer>>,
    path: String,
}

impl RawWriter {
    /// The writer `create` makes (with the GIL released), given the range hints; `path`
    /// names it.
    pub(crate) fn start(
        py: Python<'_>,
        path: String,
        ranges: RangeHints,
        create: impl FnOnce() -> Result<Writer, Error> + Send,
    ) -> PyResult<RawWriter> {
        let w = py.allow_threads(|| {
            let mut w = create()?;
            for (r, h) in ranges {
                w.advise(r, h)?;
            }
            Ok::<_, Error>(w)
        });
        Ok(RawWriter { inner: Mutex::new(Some(w.map_err(to_py)?)), path })
    }

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
pub(crate) struct WriteFuture {
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

/// Open `path` for writing through the adaptive pipeline.
#[pyfunction]
#[pyo3(signature = (path, strategy="throughput", link="auto", threads=None, block_size=None, buffers=None, hints=Vec::new()))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments
pub(crate) fn open_writer(
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
    RawWriter::start(py, path.to_owned(), ranges, || create_writer(path, opts))
}
