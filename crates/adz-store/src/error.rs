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

    /// The store cannot do this operation (a conditional put on a store without one).
    #[error("{op} {name:?}: this store cannot do it")]
    Unsupported {
        /// The operation, e.g. `"put if absent"`.
        op: &'static str,
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

    /// A remote store (an object store reached over the network) refused or failed a request.
    ///
    /// [`kind`](RemoteKind) says what happened in terms a caller can act on; whether it is
    /// worth trying again is [`Error::is_transient`].
    #[error("{op} {name:?}: {kind}")]
    Remote {
        /// What went wrong.
        kind: RemoteKind,
        /// The operation, e.g. `"get"`, `"put part"`, `"complete upload"`.
        op: &'static str,
        /// The object name (for errors about a whole bucket, the bucket).
        name: String,
        /// The client's error, with the server's answer if there was one.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },

    /// A transient error persisted through every attempt that a retry policy allowed.
    #[error("{op} {name:?}: gave up after {attempts} attempts in {:.1} s", elapsed.as_secs_f64())]
    RetriesExhausted {
        /// The operation that was retried.
        op: &'static str,
        /// The object name.
        name: String,
        /// How many times the operation was tried.
        attempts: u32,
        /// Time from the first attempt to giving up.
        elapsed: std::time::Duration,
        /// The last attempt's error.
        #[source]
        last: Box<Error>,
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

/// What kind of failure an [`Error::Remote`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RemoteKind {
    /// No connection could be made (nothing listens there, DNS failed, network down).
    Unreachable,
    /// The connection broke while the request or the answer was on its way.
    ConnectionLost,
    /// The request took longer than its time limit.
    Timeout,
    /// The server asked us to slow down (HTTP 429, S3 `SlowDown`).
    Throttled,
    /// The server failed (HTTP 5xx).
    ServerError,
    /// The server did not accept the credentials (unknown key, bad signature, expired token).
    Unauthenticated,
    /// The credentials are valid but not allowed to do this.
    PermissionDenied,
    /// The bucket does not exist.
    NoSuchBucket,
    /// The store has no room for the object: its disks are full or a quota is reached
    /// (MinIO's HTTP 507 `XMinioStorageFull`, `XMinioAdminBucketQuotaExceeded`).
    StorageFull,
    /// Anything else the server or the client reported.
    Other,
}

impl RemoteKind {
    /// Whether a failure of this kind may go away if the request is tried again later.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            RemoteKind::Unreachable
                | RemoteKind::ConnectionLost
                | RemoteKind::Timeout
                | RemoteKind::Throttled
                | RemoteKind::ServerError
        )
    }
}

impl std::fmt::Display for RemoteKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RemoteKind::Unreachable => "cannot connect to the server",
            RemoteKind::ConnectionLost => "the connection to the server broke",
            RemoteKind::Timeout => "the request timed out",
            RemoteKind::Throttled => "the server asked to slow down",
            RemoteKind::ServerError => "the server failed",
            RemoteKind::Unauthenticated => "the server rejected the credentials",
            RemoteKind::PermissionDenied => {
                "access denied (wrong credentials, or no permission for this)"
            }
            RemoteKind::NoSuchBucket => "the bucket does not exist",
            RemoteKind::StorageFull => "the store is full (no space left, or a quota reached)",
            RemoteKind::Other => "the request failed",
        })
    }
}

impl Error {
    /// Whether trying the same operation again may succeed: a remote store that was
    /// unreachable, timed out, throttled or failed with a 5xx, or an interrupted or timed-out
    /// I/O call. A missing object, a bad name, rejected credentials or a full disk are not
    /// transient: repeating the request gives the same answer.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Remote { kind, .. } => kind.is_transient(),
            Error::Io { source, .. } => matches!(
                source.kind(),
                io::ErrorKind::Interrupted | io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ),
            _ => false,
        }
    }

    /// Whether the store had no room for what was written: a remote store that said so
    /// ([`RemoteKind::StorageFull`]) or a file system's `ENOSPC` or `EDQUOT`, also once retries
    /// gave up on it. A program writing through a file system sees this as `ENOSPC`.
    pub fn is_storage_full(&self) -> bool {
        match self {
            Error::Remote { kind, .. } => *kind == RemoteKind::StorageFull,
            Error::Io { source, .. } => io_is_storage_full(source),
            Error::RetriesExhausted { last, .. } => last.is_storage_full(),
            _ => false,
        }
    }

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
            Error::Unsupported { .. } => io::ErrorKind::Unsupported,
            Error::InvalidRange { .. } | Error::InvalidName { .. } => io::ErrorKind::InvalidInput,
            Error::Io { source, .. } => source.kind(),
            Error::Remote { kind, .. } => match kind {
                RemoteKind::Unreachable => io::ErrorKind::ConnectionRefused,
                RemoteKind::ConnectionLost => io::ErrorKind::ConnectionReset,
                RemoteKind::Timeout => io::ErrorKind::TimedOut,
                RemoteKind::Unauthenticated | RemoteKind::PermissionDenied => {
                    io::ErrorKind::PermissionDenied
                }
                RemoteKind::NoSuchBucket => io::ErrorKind::NotFound,
                RemoteKind::StorageFull => io::ErrorKind::StorageFull,
                _ => io::ErrorKind::Other,
            },
            Error::Injected { .. } | Error::Generic { .. } | Error::RetriesExhausted { .. } => {
                io::ErrorKind::Other
            }
        };
        io::Error::new(kind, err)
    }
}

/// `ENOSPC`, `EDQUOT`, or an error of kind `StorageFull` without an OS code.
pub(crate) fn io_is_storage_full(e: &io::Error) -> bool {
    const ENOSPC: i32 = 28;
    #[cfg(target_os = "linux")]
    const EDQUOT: i32 = 122;
    #[cfg(not(target_os = "linux"))]
    const EDQUOT: i32 = 69;
    match e.raw_os_error() {
        Some(n) => n == ENOSPC || n == EDQUOT,
        None => e.kind() == io::ErrorKind::StorageFull,
    }
}

/// An error and its causes, each once, the cause last (as anyhow's `{:#}` prints them): for
/// messages that cross a boundary as text (a report's reason, a Python exception).
pub fn chain_text(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut current = err.source();
    while let Some(e) = current {
        text.push_str(": ");
        text.push_str(&e.to_string());
        current = e.source();
    }
    text
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
    fn transient_errors() {
        let remote = |kind| Error::Remote {
            kind,
            op: "get",
            name: "a".into(),
            source: "server said no".into(),
        };
        assert!(remote(RemoteKind::ServerError).is_transient());
        assert!(remote(RemoteKind::Throttled).is_transient());
        assert!(remote(RemoteKind::Unreachable).is_transient());
        assert!(!remote(RemoteKind::Unauthenticated).is_transient());
        assert!(!remote(RemoteKind::NoSuchBucket).is_transient());
        assert!(!Error::NotFound { name: "a".into() }.is_transient());
        assert!(Error::io("read", "a", io::ErrorKind::TimedOut.into()).is_transient());
        assert!(!Error::io("read", "a", io::ErrorKind::StorageFull.into()).is_transient());
        assert!(!remote(RemoteKind::StorageFull).is_transient());
        assert_eq!(
            remote(RemoteKind::Throttled).to_string(),
            r#"get "a": the server asked to slow down"#
        );

        let gave_up = Error::RetriesExhausted {
            op: "get",
            name: "a".into(),
            attempts: 4,
            elapsed: std::time::Duration::from_millis(1500),
            last: Box::new(remote(RemoteKind::ServerError)),
        };
        assert!(!gave_up.is_transient(), "a caller does not retry what a policy gave up on");
        assert_eq!(gave_up.to_string(), r#"get "a": gave up after 4 attempts in 1.5 s"#);
        assert_eq!(gave_up.source().unwrap().to_string(), r#"get "a": the server failed"#);
    }

    #[test]
    fn storage_full() {
        let full = Error::Remote {
            kind: RemoteKind::StorageFull,
            op: "put part",
            name: "a".into(),
            source: "HTTP 507 XMinioStorageFull".into(),
        };
        assert!(full.is_storage_full());
        assert_eq!(io::Error::from(full).kind(), io::ErrorKind::StorageFull);
        assert!(Error::io("append", "a", io::Error::from_raw_os_error(28)).is_storage_full());
        assert!(!Error::io("append", "a", io::Error::from_raw_os_error(5)).is_storage_full());
        let gave_up = Error::RetriesExhausted {
            op: "put",
            name: "a".into(),
            attempts: 2,
            elapsed: std::time::Duration::ZERO,
            last: Box::new(Error::io("append", "a", io::ErrorKind::StorageFull.into())),
        };
        assert!(gave_up.is_storage_full());
        assert!(!Error::Injected { what: "x".into() }.is_storage_full());
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
