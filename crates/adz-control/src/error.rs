//! Errors of this crate: only text that does not parse, ladders that are not ladders, and
//! priors that are not figures.

use thiserror::Error;

/// What can go wrong when building the controller's inputs from text or parts.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A strategy, hint or dtype given as text is not one of the accepted forms.
    #[error("cannot parse {what} {input:?}: {reason}")]
    Parse {
        /// What was being parsed ("strategy", "hint", "dtype").
        what: &'static str,
        /// The text given.
        input: String,
        /// Why, with the accepted forms.
        reason: String,
    },
    /// A ladder that does not start with `none` or holds a rung twice.
    #[error("invalid ladder: {0}")]
    Ladder(String),
    /// Measured priors ([`Priors::measured`](crate::Priors::measured)) with a figure that
    /// cannot be a speed or a ratio, or a rung given twice.
    #[error("invalid priors: {0}")]
    Priors(String),
}

/// `Result` with this crate's [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
