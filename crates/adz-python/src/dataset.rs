//! Datasets written in parts by many writers: a part's writer, the commit, and a reader of
//! the latest version as one file.

use adz_core::dataset::{Dataset, DatasetReader, Placement};
use adz_core::open::storage_for;
use adz_core::Writer;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{dataset_to_py, to_py};
use crate::options::{reader_options, write_options};
use crate::reader::{RawReader, Source};
use crate::writer::RawWriter;

/// Open writer `id`'s part of the dataset `dataset` (a path or s3://bucket/key), at byte
/// `offset` of the dataset, or appended at commit (in id order) when `offset` is None. The
/// part is finished by `close()` and is in the dataset only after `commit_dataset`.
#[pyfunction]
#[pyo3(signature = (dataset, id, offset=None, strategy="throughput", link="auto", threads=None, block_size=None, buffers=None, hints=Vec::new()))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments
pub(crate) fn open_part_writer(
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
    let path = format!("{dataset}: {part}");
    RawWriter::start(py, path, ranges, || Writer::create(&*store, &part, opts))
}

/// Commit the dataset `dataset` as its next version and return a dict: `version`, `len`,
/// `parts` (a list of dicts: `name`, `offset`, `len`, `stored`), `gaps`. With `ids`, the
/// version lists exactly those writers' parts and a writer with no finished part raises
/// `MissingPart`; without, every part found. `base`: commit only if the latest version is
/// `base` (0: none yet), else raise `CommitConflict`.
#[pyfunction]
#[pyo3(signature = (dataset, ids=None, base=None))]
pub(crate) fn commit_dataset<'py>(
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
pub(crate) fn open_dataset_reader(
    py: Python<'_>,
    dataset: &str,
    threads: Option<usize>,
    cache_bytes: Option<u64>,
    max_range_bytes: Option<u64>,
) -> PyResult<RawReader> {
    let opts = reader_options(threads, cache_bytes, max_range_bytes)?;
    let (store, name) = py.allow_threads(|| storage_for(dataset)).map_err(to_py)?;
    let r = py.allow_threads(|| DatasetReader::open(store, &name, opts)).map_err(dataset_to_py)?;
    Ok(RawReader::new(Source::Dataset(r, opts)))
}
