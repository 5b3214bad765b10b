//! The error type shared by every backend and decorator.

use std::io;
use std::ops::Range;

/// A specialized `Result` for storage operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in a storage operation.
///
/// Backends map their private errors into these variants so that callers can react to
/// `NotFound` or `OutOfRange` the same way whether the bytes live in a file, in memory or in
/// an object store. Messages name the object (and, for I/O errors, the operation); the
/// underlying cause, if any, is available through [`std::error::Error::source`] rather than
/// repeated in the message, so that printing the error chain shows each cause once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No object exists under this name.
    #[error("object {name:?} not found")]
    NotFound {
        /// The object name that was asked for.
        name: String,
    },

    /// An object already exists under this name and the operation refuses to replace it.
    #[error("object {name:?} already exists")]
    AlreadyExists {
        /// The object name.
        name: String,
    },

    /// A read asked for bytes past the end of the object.
    #[error(
        "read of {name:?} bytes {}..{} goes past the end of the object ({size} bytes)",
        range.start,
        range.end
    )]
    OutOfRange {
        /// The object name.
        name: String,
        /// The range that was asked for.
        range: Range<u64>,
        /// The object's actual size.
        size: u64,
    },

    /// A read asked for a range whose start is after its end.
    #[error("read of {name:?}: range {}..{} starts after it ends", range.start, range.end)]
    InvalidRange {
        /// The object name.
        name: String,
        /// The range that was asked for.
        range: Range<u64>,
    },

    /// The name (or list prefix) cannot be used as an object name.
    #[error("invalid object name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },

    /// An I/O error from the operating system.
    #[error("{op} {name:?} failed")]
    Io {
        /// The operation that failed, e.g. `"append"` or `"commit"`.
        op: &'static str,
        /// The object name (or, for errors about the storage root, its path).
        name: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },

    /// A fault injected on purpose by [`Faulty`](crate::Faulty).
    #[error("injected fault: {what}")]
    Injected {
        /// Which fault, and where.
        what: String,
    },

    /// An error from a backend that has no better variant for it.
    #[error("{store} storage error")]
    Generic {
        /// The backend, e.g. `"s3"`.
        store: &'static str,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl Error {
    /// Builds an [`Error::Io`], except that the operating system's "not found" becomes
    /// [`Error::NotFound`] so that callers need to check for one variant only.
    ///
    /// Use it for operations on an existing object (reads, size, delete), not for creating
    /// one: there a missing directory is an I/O problem, not a missing object.
    pub(crate) fn from_io_on_object(op: &'static str, name: &str, source: io::Error) -> Error {
        if source.kind() == io::ErrorKind::NotFound {
            Error::NotFound { name: name.to_owned() }
        } else {
            Error::Io { op, name: name.to_owned(), source }
        }
    }

    pub(crate) fn io(op: &'static str, name: &str, source: io::Error) -> Error {
        Error::Io { op, name: name.to_owned(), source }
    }

    /// Checks `range` against an object of `size` bytes, as every backend must: `InvalidRange`
    /// if it is reversed, `OutOfRange` if it ends past the object.
    pub fn check_range(name: &str, range: &Range<u64>, size: u64) -> Result<()> {
        if range.start > range.end {
            return Err(Error::InvalidRange { name: name.to_owned(), range: range.clone() });
        }
        if range.end > size {
            return Err(Error::OutOfRange { name: name.to_owned(), range: range.clone(), size });
        }
        Ok(())
    }
}

/// Lets storage errors travel through `Read`/`Write` adapters.
///
/// The error kind is chosen so that generic I/O code reacts sensibly: a read past the end is
/// `UnexpectedEof` (as from `read_exact`), a bad name or range is `InvalidInput`, and an OS
/// error keeps its own kind. The storage error itself stays reachable as the inner error.
impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        let kind = match &err {
            Error::NotFound { .. } => io::ErrorKind::NotFound,
            Error::AlreadyExists { .. } => io::ErrorKind::AlreadyExists,
            Error::OutOfRange { .. } => io::ErrorKind::UnexpectedEof,
            Error::InvalidRange { .. } | Error::InvalidName { .. } => io::ErrorKind::InvalidInput,
            Error::Io { source, .. } => source.kind(),
            Error::Injected { .. } | Error::Generic { .. } => io::ErrorKind::Other,
        };
        io::Error::new(kind, err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn messages_name_the_object_and_operation() {
        let err = Error::io("commit", "run/out.adz", io::Error::other("disk on fire"));
        assert_eq!(err.to_string(), r#"commit "run/out.adz" failed"#);
        assert_eq!(err.source().unwrap().to_string(), "disk on fire");

        let err = Error::OutOfRange { name: "a".into(), range: 10..20, size: 15 };
        assert_eq!(
            err.to_string(),
            r#"read of "a" bytes 10..20 goes past the end of the object (15 bytes)"#
        );
    }

    #[test]
    fn os_not_found_on_an_object_becomes_not_found() {
        let err = Error::from_io_on_object("read", "x", io::ErrorKind::NotFound.into());
        assert!(matches!(err, Error::NotFound { ref name } if name == "x"), "{err:?}");
        let err = Error::from_io_on_object("read", "x", io::ErrorKind::PermissionDenied.into());
        assert!(matches!(err, Error::Io { op: "read", .. }), "{err:?}");
    }

    #[test]
    fn check_range_rejects_reversed_and_past_the_end() {
        assert!(Error::check_range("a", &(0..10), 10).is_ok());
        assert!(Error::check_range("a", &(10..10), 10).is_ok());
        assert!(matches!(
            Error::check_range("a", &(5..11), 10),
            Err(Error::OutOfRange { size: 10, .. })
        ));
        assert!(matches!(Error::check_range("a", &(11..11), 10), Err(Error::OutOfRange { .. })));
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 6..5;
        assert!(matches!(Error::check_range("a", &reversed, 10), Err(Error::InvalidRange { .. })));
    }

    #[test]
    fn io_error_kinds() {
        let kind = |e: Error| io::Error::from(e).kind();
        assert_eq!(kind(Error::NotFound { name: "a".into() }), io::ErrorKind::NotFound);
        assert_eq!(
            kind(Error::OutOfRange { name: "a".into(), range: 0..2, size: 1 }),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(
            kind(Error::InvalidName { name: "/a".into(), reason: "absolute" }),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            kind(Error::io("append", "a", io::ErrorKind::StorageFull.into())),
            io::ErrorKind::StorageFull
        );
        assert_eq!(kind(Error::Injected { what: "boom".into() }), io::ErrorKind::Other);

        // The storage error stays inside, so its message (with the name) is not lost.
        let io_err = io::Error::from(Error::NotFound { name: "abc".into() });
        assert!(io_err.to_string().contains("\"abc\""), "{io_err}");
        assert!(io_err.into_inner().unwrap().downcast::<Error>().is_ok());
    }
}
