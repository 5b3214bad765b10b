//! The HDF5 filter (crates/adz-hdf5) inside the Python module: `adz.hdf5` hands h5py's HDF5
//! to it and registers the filter class whose address this module gives.

use std::ffi::CString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::Pinned;
use crate::errors::{ConfigError, CorruptData};

/// Take HDF5's functions from the library at `path` and its dependencies (h5py's `h5z`
/// extension module, which links h5py's libhdf5).
#[pyfunction]
fn hdf5_init(path: &str) -> PyResult<()> {
    let c = CString::new(path).map_err(|e| ConfigError::new_err(e.to_string()))?;
    adz_hdf5::h5::init(Some(&c)).map_err(ConfigError::new_err)
}

/// The address of the filter's `H5Z_class2_t`, for `h5py.h5z.register_filter`.
#[pyfunction]
fn hdf5_plugin_info() -> usize {
    adz_hdf5::H5PLget_plugin_info() as usize
}

/// The `cd_values` (`compression_opts`) for a strategy, link rate and byte filter choice.
#[pyfunction]
fn hdf5_cd_values(strategy: &str, link: &str, filters: &str) -> PyResult<Vec<u32>> {
    let p = adz_hdf5::Params::from_options(strategy, link, filters)
        .map_err(|e| ConfigError::new_err(e.to_string()))?;
    let cd = p.to_cd().map_err(|e| ConfigError::new_err(e.to_string()))?;
    Ok(cd[..adz_hdf5::CD_USER_WORDS].to_vec())
}

/// What each frame of a stored chunk holds (`zstd:3 shuffle:4`); CorruptData if it is not a
/// valid adz chunk.
#[pyfunction]
fn hdf5_describe_chunk(chunk: &[u8]) -> PyResult<Vec<String>> {
    adz_hdf5::describe_chunk(chunk).map_err(|e| CorruptData::new_err(e.to_string()))
}

/// Each adaptive controller the filter has in this process: (key, status line, chunks
/// decided).
#[pyfunction]
fn hdf5_controller_status() -> Vec<(String, String, u64)> {
    adz_hdf5::controller_status().into_iter().map(|c| (c.key, c.status, c.chunks)).collect()
}

/// Why the filter last failed on this thread ("" if it has not).
#[pyfunction]
fn hdf5_last_error() -> String {
    adz_hdf5::last_error()
}

/// Compress whole chunks as the filter would, on `threads` threads (the GIL released), for
/// `H5Dwrite_chunk`: `cd` is the dataset's `cd_values` after `set_local`, each of `chunks` a
/// full chunk's bytes. Adaptive chunks are decided by the process's controller for that many
/// workers, a pipeline (the writer writes while the next chunks compress).
#[pyfunction]
fn hdf5_encode_chunks<'py>(
    py: Python<'py>,
    cd: Vec<u32>,
    chunks: Vec<Bound<'py, PyAny>>,
    threads: usize,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let p = adz_hdf5::Params::from_cd(&cd).map_err(|e| ConfigError::new_err(e.to_string()))?;
    let pinned = chunks.iter().map(Pinned::new).collect::<PyResult<Vec<_>>>()?;
    for c in &pinned {
        adz_hdf5::check_len(c.as_ref().len(), p.chunk_bytes)
            .map_err(|e| ConfigError::new_err(e.to_string()))?;
    }
    // The controller is the one for `threads` workers, however few chunks this batch has.
    let workers = threads.max(1);
    let threads = workers.min(pinned.len().max(1));
    let out: Vec<Mutex<Option<adz_hdf5::Result<Vec<u8>>>>> =
        pinned.iter().map(|_| Mutex::new(None)).collect();
    py.allow_threads(|| {
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(raw) = pinned.get(i) else { break };
                    let mut buf = Vec::new();
                    let r = adz_hdf5::encode_chunk_on(&p, raw.as_ref(), &mut buf, workers);
                    *out[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r.map(|()| buf));
                });
            }
        });
    });
    out.into_iter()
        .map(|slot| match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(buf)) => Ok(PyBytes::new(py, &buf)),
            Some(Err(e)) => Err(ConfigError::new_err(e.to_string())),
            None => Err(ConfigError::new_err("a chunk was not compressed")),
        })
        .collect()
}

/// Add the HDF5 functions and the filter id to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("HDF5_FILTER_ID", adz_hdf5::FILTER_ID)?;
    m.add_function(wrap_pyfunction!(hdf5_init, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5_plugin_info, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5_cd_values, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5_describe_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5_controller_status, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5_last_error, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5_encode_chunks, m)?)?;
    Ok(())
}
