//! The keyword arguments of `adz.open` and friends, checked and made into writer and reader
//! options.

use adz_core::open::{check_block_size, parse_hint, parse_link, parse_strategy};
use adz_core::{ReaderOptions, WriteOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::ConfigError;

/// The core's limits, checked here too so that they raise `ValueError` before anything is
/// created (spawning 100 000 threads aborts the interpreter).
use adz_core::pipeline::{MAX_BUFFERS, MAX_THREADS};

pub(crate) fn check_threads(t: usize) -> PyResult<()> {
    if t > MAX_THREADS {
        return Err(PyValueError::new_err(format!(
            "threads={t} is more than {MAX_THREADS}; None (or 0) means one per core"
        )));
    }
    Ok(())
}

/// Hints for byte ranges, given to the writer after it is created.
pub(crate) type RangeHints = Vec<(std::ops::Range<u64>, adz_core::control::Hint)>;

/// Writer options from the keyword arguments of `adz.open`.
pub(crate) fn write_options(
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

/// Reader options from the keyword arguments of `adz.open`.
pub(crate) fn reader_options(
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
