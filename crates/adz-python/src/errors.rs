//! The Python exceptions, and the mapping of adz errors onto them (each message carries the
//! whole cause chain).

use adz_core::dataset::DatasetError;
use adz_core::Error;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

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
pub(crate) fn dataset_to_py(e: DatasetError) -> PyErr {
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
pub(crate) fn to_py_with(e: Error, msg: String) -> PyErr {
    let kind = to_py(e);
    Python::with_gil(|py| PyErr::from_type(kind.get_type(py), msg))
}

/// The Python exception for an adz error, with the whole cause chain in its message.
pub(crate) fn to_py(e: Error) -> PyErr {
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
pub(crate) fn message(e: &Error) -> String {
    adz_core::store::chain_text(e)
}

pub(crate) fn closed() -> PyErr {
    PyValueError::new_err("I/O operation on closed file")
}
