//! `adz._adz`: the native half of the `adz` Python package (the Python half, `python/adz`,
//! makes these into `io.RawIOBase` file objects and a numcodecs codec).
//!
//! Everything that can wait (a write that blocks on a full pipeline, a wait, a close, a read)
//! runs with the GIL released, so Python threads and numpy go on meanwhile. That is also what
//! keeps it free of deadlocks: pipeline threads that drop the last reference to a Python
//! buffer need nothing from the thread that waits on them.
//!
//! The logic lives in `adz_core`; this crate converts arguments, buffers and errors.
//!
//! The rooms: `errors` (the exceptions and the mapping onto them), `options` (keyword
//! arguments), `writer`, `reader`, `dataset` (parts, commit, reader), `codec` (whole
//! buffers), `tiers` (`adz.open_tiers`), `hdf5` (the filter's helpers), `buffer` (pinned
//! Python buffers).

mod buffer;
mod codec;
mod dataset;
mod errors;
mod hdf5;
mod options;
mod reader;
mod tiers;
mod writer;

use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;

use crate::errors::{
    AdzError, CommitConflict, ConfigError, CorruptData, MissingPart, NotFound, StorageError,
    WriteFailed,
};
use crate::reader::RawReader;
use crate::writer::{RawWriter, WriteFuture};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
    m.add_function(wrap_pyfunction!(writer::open_writer, m)?)?;
    m.add_function(wrap_pyfunction!(reader::open_reader, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::open_part_writer, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::commit_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::open_dataset_reader, m)?)?;
    m.add_function(wrap_pyfunction!(codec::compress, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decompress, m)?)?;
    hdf5::register(m)?;
    Ok(())
}
