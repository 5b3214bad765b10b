//! Whole buffers in memory: `compress` and `decompress` (what the numcodecs codec uses).

use adz_core::open::{compress_to_vec, decompress_slice};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::Pinned;
use crate::errors::{to_py, ConfigError};
use crate::options::write_options;

/// Compress a buffer into a complete adz file in memory (what the numcodecs codec stores).
#[pyfunction]
#[pyo3(signature = (data, strategy="static=zstd:3", link="auto", threads=None, block_size=None, hints=Vec::new()))]
pub(crate) fn compress<'py>(
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
pub(crate) fn decompress<'py>(
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
