//! The crate's error type.

/// What went wrong with tiers, placement, the catalog or a flush.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TierError {
    /// The tier configuration file is wrong.
    #[error("tier configuration: {0}")]
    Config(String),

    /// The cost table is wrong.
    #[error("cost table: {0}")]
    Costs(String),

    /// A machine profile cannot be used or made.
    #[error("machine profile: {0}")]
    Profile(String),

    /// The data does not fit on the tiers at any rung.
    #[error("{raw} raw bytes do not fit on the tiers at any rung")]
    NoRoom {
        /// Raw bytes of the write.
        raw: u64,
    },

    /// A storage operation on a tier or on the catalog failed.
    #[error("{what}")]
    Store {
        /// What was being done, with the tier and object.
        what: String,
        /// The storage error.
        #[source]
        source: Box<adz_store::Error>,
    },

    /// Encoding or decoding frames failed.
    #[error("{what}")]
    Frames {
        /// What was being done.
        what: String,
        /// The adz-core error.
        #[source]
        source: Box<adz_core::Error>,
    },

    /// Decoding a segment failed (a frame failed its checks).
    #[error("{what}")]
    Decode {
        /// Which segment.
        what: String,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },

    /// A catalog file cannot be used.
    #[error("catalog {name:?}: {reason}")]
    Catalog {
        /// The dataset.
        name: String,
        /// Why.
        reason: String,
    },

    /// No dataset of this name is in the catalog.
    #[error("no tiered dataset {name:?}")]
    NotFound {
        /// The dataset.
        name: String,
    },

    /// A copy read back does not match what was written (or what the catalog records).
    #[error("{what}: checksum {found:016x}, expected {expected:016x}")]
    Checksum {
        /// Which object on which tier.
        what: String,
        /// The checksum expected.
        expected: u64,
        /// The checksum found.
        found: u64,
    },

    /// Reading the input failed.
    #[error("reading the input")]
    Input(#[source] std::io::Error),

    /// A read asked for bytes past the end of the dataset.
    #[error("read of {len} bytes at {offset} goes past the end of the dataset ({size} bytes)")]
    OutOfRange {
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: u64,
        /// The dataset's raw size.
        size: u64,
    },
}

impl TierError {
    pub(crate) fn store(what: impl Into<String>) -> impl FnOnce(adz_store::Error) -> TierError {
        let what = what.into();
        move |source| TierError::Store { what, source: Box::new(source) }
    }

    pub(crate) fn frames(what: impl Into<String>) -> impl FnOnce(adz_core::Error) -> TierError {
        let what = what.into();
        move |source| TierError::Frames { what, source: Box::new(source) }
    }
}
