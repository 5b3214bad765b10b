//! `adz.open_tiers`: datasets over a hierarchy of storage tiers (adz-tier, docs/TIERS.md),
//! as the CLI's `adz compress --tiers` and `adz tier` use them. Writes, reads, flushes and
//! evictions run with the GIL released.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use adz_core::{Error, ReaderOptions};
use adz_tier::{
    open_with_profile, CostModel, CostTable, FlushReport, ProfileChoice, TierError, Tiered,
    TiersConfig,
};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList};

use crate::buffer::Pinned;
use crate::errors::{to_py_with, ConfigError, CorruptData, NotFound, StorageError, WriteFailed};
use crate::lock;
use crate::options::check_threads;
use crate::reader::{RawReader, Source};

/// The Python exception for a tier error, with the whole cause chain in its message.
pub(crate) fn tier_to_py(e: TierError) -> PyErr {
    let msg = adz_core::store::chain_text(&e);
    match e {
        TierError::Config(_)
        | TierError::Costs(_)
        | TierError::Profile(_)
        | TierError::OutOfRange { .. } => ConfigError::new_err(msg),
        // The tiers are full: nothing was written (or moved) that is not committed.
        TierError::NoRoom { .. } => WriteFailed::new_err(msg),
        TierError::NotFound { .. } => NotFound::new_err(msg),
        TierError::Decode { .. } | TierError::Catalog { .. } | TierError::Checksum { .. } => {
            CorruptData::new_err(msg)
        }
        TierError::Store { source, .. } => to_py_with(Error::Store(*source), msg),
        TierError::Frames { source, .. } => to_py_with(*source, msg),
        _ => StorageError::new_err(msg),
    }
}

/// A Python file object read from Rust (`read(n)` with the GIL taken for each call). An
/// exception it raises is kept, to be raised again in place of the write's error.
struct PyRead {
    file: Py<PyAny>,
    error: Option<PyErr>,
}

impl Read for PyRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let got = Python::with_gil(|py| -> PyResult<usize> {
            let chunk = self.file.bind(py).call_method1("read", (buf.len(),))?;
            let bytes: &[u8] = if let Ok(b) = chunk.downcast::<PyBytes>() {
                b.as_bytes()
            } else if let Ok(b) = chunk.downcast::<PyByteArray>() {
                // Copied out at once, before any Python code could resize it.
                let v = b.to_vec();
                let n = v.len().min(buf.len());
                buf[..n].copy_from_slice(&v[..n]);
                return check_len(v.len(), buf.len());
            } else if chunk.is_none() {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "the file object returned None (non-blocking, no data): give a blocking one",
                ));
            } else {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "the file object's read() returned {}, not bytes",
                    chunk.get_type().name()?
                )));
            };
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            check_len(bytes.len(), buf.len())
        });
        got.map_err(|e| {
            let text = Python::with_gil(|py| e.value(py).to_string());
            self.error = Some(e);
            std::io::Error::other(text)
        })
    }
}

/// A `read(n)` that returned more than `n` bytes is a broken file object.
fn check_len(got: usize, asked: usize) -> PyResult<usize> {
    if got > asked {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "the file object's read({asked}) returned {got} bytes"
        )));
    }
    Ok(got)
}

/// What a write reads: a pinned buffer, a file, or a Python file object.
enum Input {
    Buffer(Pinned),
    File(std::fs::File),
    Object(PyRead),
}

/// The native object behind `adz.Tiers`: the open tiers and the costs placement uses.
#[pyclass(module = "adz._adz")]
pub(crate) struct RawTiers {
    tiers: Tiered,
    /// Write takes it mutably: its predictor learns from each encoded frame. Held by every
    /// call that changes the tiers (write, flush, evict, gc), so that they run one at a time.
    costs: Mutex<CostModel>,
    source: String,
    warning: Option<String>,
}

fn report_dict<'py>(py: Python<'py>, r: &FlushReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("moved", r.moved)?;
    d.set_item("copied", r.copied)?;
    d.set_item("recompressed", r.recompressed)?;
    d.set_item("bytes_in", r.bytes_in)?;
    d.set_item("bytes_out", r.bytes_out)?;
    Ok(d)
}

/// `u64::MAX` (no capacity) as None.
fn capacity(c: u64) -> Option<u64> {
    (c != u64::MAX).then_some(c)
}

impl RawTiers {
    /// Runs `f` on the tiers with the GIL released and the other changing calls excluded.
    /// The lock is taken without the GIL, so that a write reading a Python file object
    /// (which takes the GIL back) and a thread waiting here cannot block each other.
    fn changing<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Tiered, &CostTable) -> Result<T, TierError> + Send,
    ) -> PyResult<T> {
        py.allow_threads(|| f(&self.tiers, &lock(&self.costs).table)).map_err(tier_to_py)
    }

    fn write_input(&self, py: Python<'_>, name: &str, input: Input) -> PyResult<Py<PyDict>> {
        let (result, input) = py.allow_threads(|| {
            let mut model = lock(&self.costs);
            let mut input = input;
            let r = match &mut input {
                Input::Buffer(p) => self.tiers.write_with(name, &mut p.as_ref(), &mut model),
                Input::File(f) => self.tiers.write_with(name, f, &mut model),
                Input::Object(o) => self.tiers.write_with(name, o, &mut model),
            };
            (r, input)
        });
        let report = match (result, input) {
            (Ok(r), _) => r,
            // The file object's own exception, rather than the input error that wraps it.
            (Err(TierError::Input(_)), Input::Object(PyRead { error: Some(e), .. })) => {
                return Err(e)
            }
            (Err(e), _) => return Err(tier_to_py(e)),
        };
        let d = PyDict::new(py);
        d.set_item("raw_bytes", report.raw)?;
        d.set_item("stored_bytes", report.stored.iter().sum::<u64>())?;
        let per_tier = PyDict::new(py);
        for (t, s) in self.tiers.tiers().iter().zip(&report.stored) {
            per_tier.set_item(&t.config.name, s)?;
        }
        d.set_item("tiers", per_tier)?;
        d.set_item("segments", report.segments)?;
        d.set_item("predicted", report.predicted)?;
        d.set_item("spilled", report.spilled)?;
        d.set_item("predicted_seconds", report.predicted_seconds)?;
        d.set_item("placement_seconds", report.placement_seconds)?;
        d.set_item("seconds", report.seconds)?;
        Ok(d.unbind())
    }
}

#[pymethods]
impl RawTiers {
    /// Write dataset `name` from a buffer (bytes, bytearray, memoryview, numpy array);
    /// replaces an older dataset of that name only once the new one is committed.
    fn write(&self, py: Python<'_>, name: &str, data: &Bound<'_, PyAny>) -> PyResult<Py<PyDict>> {
        let pinned = Pinned::new(data)?;
        self.write_input(py, name, Input::Buffer(pinned))
    }

    /// Write dataset `name` from the file at `path`.
    fn write_file(&self, py: Python<'_>, name: &str, path: &str) -> PyResult<Py<PyDict>> {
        let f = std::fs::File::open(path).map_err(|e| {
            let msg = format!("cannot open {path}: {e}");
            if e.kind() == std::io::ErrorKind::NotFound {
                NotFound::new_err(msg)
            } else {
                StorageError::new_err(msg)
            }
        })?;
        self.write_input(py, name, Input::File(f))
    }

    /// Write dataset `name` from a binary file object (its `read(n)` until it returns b"").
    fn write_stream(&self, py: Python<'_>, name: &str, file: Py<PyAny>) -> PyResult<Py<PyDict>> {
        self.write_input(py, name, Input::Object(PyRead { file, error: None }))
    }

    /// `length` raw bytes of dataset `name` at `offset` (all from `offset` on if None); only
    /// the segments the range touches are read. A range past the end raises ConfigError.
    #[pyo3(signature = (name, offset=0, length=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        offset: u64,
        length: Option<u64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let data = py
            .allow_threads(|| {
                let r = self.tiers.reader(name)?;
                let len = length.unwrap_or_else(|| r.len().saturating_sub(offset));
                r.read_range(offset, len)
            })
            .map_err(tier_to_py)?;
        Ok(PyBytes::new(py, &data))
    }

    /// Dataset `name` as a random-access reader (what `adz.Reader` wraps).
    #[pyo3(signature = (name, max_range_bytes=None))]
    fn open_reader(
        &self,
        py: Python<'_>,
        name: &str,
        max_range_bytes: Option<u64>,
    ) -> PyResult<RawReader> {
        let r = py.allow_threads(|| self.tiers.reader(name)).map_err(tier_to_py)?;
        let mut opts = ReaderOptions::default();
        if let Some(m) = max_range_bytes {
            opts.max_range_bytes = m;
        }
        Ok(RawReader::new(Source::Tiered(r, opts)))
    }

    /// Each tier's state, fastest first: a list of dicts.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let status = py.allow_threads(|| self.tiers.status()).map_err(tier_to_py)?;
        let out = PyList::empty(py);
        for s in status {
            let d = PyDict::new(py);
            d.set_item("tier", &s.name)?;
            d.set_item("capacity", capacity(s.capacity))?;
            d.set_item("used", s.used)?;
            d.set_item("bandwidth", s.bandwidth)?;
            d.set_item("segments", s.segments)?;
            d.set_item("raw", s.raw)?;
            d.set_item("stored", s.stored)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// The datasets on the tiers: a list of dicts (name, raw_bytes, segments).
    fn datasets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let cats = py
            .allow_threads(|| {
                self.tiers
                    .datasets()?
                    .into_iter()
                    .map(|n| self.tiers.catalog(&n))
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(tier_to_py)?;
        let out = PyList::empty(py);
        for c in cats {
            let d = PyDict::new(py);
            d.set_item("name", &c.name)?;
            d.set_item("raw_bytes", c.raw_len)?;
            d.set_item("segments", c.segments.len())?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Move segments down as the flush policy says; returns the report.
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.changing(py, |t, costs| t.flush(costs))?;
        report_dict(py, &r)
    }

    /// Move every segment off tier `tier` to the tiers below; returns the report.
    fn evict<'py>(&self, py: Python<'py>, tier: &str) -> PyResult<Bound<'py, PyDict>> {
        let r = self.changing(py, |t, costs| t.evict(tier, costs))?;
        report_dict(py, &r)
    }

    /// Remove what a crash left behind; returns the bytes freed.
    fn gc(&self, py: Python<'_>) -> PyResult<u64> {
        self.changing(py, |t, _| t.gc())
    }

    /// The tiers' names, fastest first.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.tiers.tiers().iter().map(|t| t.config.name.clone()).collect()
    }

    /// Where placement's costs come from (a profile, or the built-in table).
    #[getter]
    fn costs_source(&self) -> &str {
        &self.source
    }

    /// Why the default profile was left out, if it was.
    #[getter]
    fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }
}

/// Open the tiers configured in the TOML file `config`. Costs: the profile at `profile`, the
/// built-in table if `no_profile`, else the default profile if one exists. `threads`: the
/// threads that encode a segment (None or 0: one per core).
#[pyfunction]
#[pyo3(signature = (config, profile=None, no_profile=false, threads=None))]
pub(crate) fn open_tiers(
    py: Python<'_>,
    config: &str,
    profile: Option<&str>,
    no_profile: bool,
    threads: Option<usize>,
) -> PyResult<RawTiers> {
    if let Some(t) = threads {
        check_threads(t)?;
    }
    let threads = match threads {
        Some(t) if t > 0 => t,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    if let Err(e) = std::fs::metadata(config) {
        let msg = format!("the tier configuration {config}: {e}");
        return Err(if e.kind() == std::io::ErrorKind::NotFound {
            NotFound::new_err(msg)
        } else {
            StorageError::new_err(msg)
        });
    }
    let (tiers, model, source, warning) = py
        .allow_threads(|| {
            // The given profile, none, else the default one: one that does not load is an
            // error if given, left out with a warning if the default.
            let choice = ProfileChoice::from_options(profile.map(PathBuf::from), no_profile);
            let chosen = choice.costs(threads)?;
            let (source, warning) = (chosen.source(), chosen.left_out.map(|l| l.to_string()));
            let prof = chosen.profile.as_ref().map(|(_, p)| p);
            let mut tiers = open_with_profile(TiersConfig::load(Path::new(config))?, prof, false)?;
            tiers.set_threads(threads);
            Ok::<_, TierError>((tiers, chosen.model, source, warning))
        })
        .map_err(tier_to_py)?;
    Ok(RawTiers { tiers, costs: Mutex::new(model), source, warning })
}
