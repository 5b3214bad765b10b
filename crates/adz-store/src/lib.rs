//! Where adz files go: one small synchronous [`Storage`] trait that fits local files and
//! object stores alike, two backends, and decorators that wrap any backend.
//!
//! ```
//! use adz_store::{MemoryStorage, Storage, Throttled};
//!
//! // An in-memory store behind a virtual 1 GB/s link.
//! let store = Throttled::new(MemoryStorage::new(), 1e9);
//!
//! let mut upload = store.create("run-1/out.adz")?;
//! upload.append(b"hello ")?;
//! upload.append(b"world")?;
//! // Nothing is visible until the upload is committed.
//! assert!(store.size("run-1/out.adz").is_err());
//! assert_eq!(upload.commit()?, 11);
//!
//! assert_eq!(store.get_range("run-1/out.adz", 6..11)?, b"world");
//! assert_eq!(store.list("run-1/")?[0].size, 11);
//! # Ok::<(), adz_store::Error>(())
//! ```
//!
//! # The model
//!
//! An object is written once, as a stream: [`Storage::create`] returns an [`Upload`], the
//! writer [`append`](Upload::append)s to it, and [`commit`](Upload::commit) publishes the whole
//! object atomically. Until then readers see the previous object under that name, or nothing;
//! they never see a half-written object as if it were complete. [`abort`](Upload::abort), or
//! dropping the upload, throws the bytes away. This is what an object store's multipart upload
//! offers, and what a file offers when written under a temporary name and renamed.
//!
//! Reads are ranged ([`Storage::get_range`]) because an adz reader wants the trailer at the end
//! of a file and then single frames, from many threads at once.
//!
//! The API is synchronous: the adz pipeline writes from its own threads. A backend built on
//! an async client keeps a runtime inside and blocks on it.
//!
//! # Backends and decorators
//!
//! - [`LocalStorage`]: files under a root directory; temporary name, fsync and rename on
//!   commit.
//! - [`MemoryStorage`]: a map in memory, for tests; lets tests inspect and corrupt bytes.
//! - [`NullStorage`]: discards data and remembers only sizes, for benchmarks.
//! - [`Throttled`]: makes any store behave like a network link of a given speed (see
//!   [`rate`] for link names such as `"10GbE"`).
//! - [`Faulty`]: injects failures, stalls and torn writes for crash tests.
//! - [`Counting`]: counts bytes, calls and time spent, so the pipeline can see how fast the
//!   sink really is.
//! - [`Retrying`]: tries an operation again after a transient error (a timeout, a 5xx,
//!   throttling), with bounded exponential backoff; see [`RetryPolicy`].
//! - `s3::S3Storage` (feature `s3`): a bucket of an S3-compatible object store (AWS S3,
//!   MinIO, Ceph RGW). [`location`] parses `s3://bucket/key`, local paths and `-`.
//!
//! A decorator is a type that holds a `S: Storage` and implements `Storage` itself, so they
//! stack: `Counting<Throttled<LocalStorage>>`. [`Storage`] is implemented for `&S`, `Arc<S>`
//! and `Box<S>` (including `Box<dyn Storage>`), so a decorator can wrap a trait object too.

#[cfg(unix)]
mod attributes;
mod counting;
mod error;
mod faulty;
mod local;
mod memory;
mod name;
mod null;
pub mod rate;
mod retry;
mod throttle;

pub mod location;
#[cfg(feature = "s3")]
pub mod s3;

#[cfg(feature = "conformance")]
pub mod conformance;

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

#[cfg(unix)]
pub use crate::attributes::KeepAttributes;
pub use crate::counting::{Counting, SinkStats, StatsHandle};
pub use crate::error::{chain_text, Error, RemoteKind, Result};
pub use crate::faulty::{FaultPlan, Faulty};
pub use crate::local::LocalStorage;
pub use crate::memory::MemoryStorage;
pub use crate::name::{validate_name, validate_prefix};
pub use crate::null::NullStorage;
pub use crate::rate::{parse_rate, LinkSpeed, ParseRateError};
pub use crate::retry::{RetryPolicy, Retrying};
pub use crate::throttle::{LinkStats, Throttled};

/// A place to keep named objects: a directory, a bucket, a map in memory.
///
/// Object names are `/`-separated relative paths such as `"runs/2024/out.adz"`; see
/// [`validate_name`] for the exact rules, which every backend applies. Portable code does not
/// give one object a name that is a "directory" of another's (`a` and `a/b`): an object store
/// holds both, but a file system cannot, and [`LocalStorage`] refuses the second.
///
/// Implementations must be safe to share between threads: the adz reader issues ranged reads
/// from many threads through one `&dyn Storage`.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Begins writing object `name`.
    ///
    /// Nothing becomes visible under `name` until [`Upload::commit`]. If an object already
    /// exists under `name`, it stays readable until the commit replaces it (like writing a
    /// file over an old one, or a PUT to an existing key).
    fn create(&self, name: &str) -> Result<Box<dyn Upload>>;

    /// Writes a whole object at once, atomically.
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        let mut upload = self.create(name)?;
        upload.append(data)?;
        upload.commit()?;
        Ok(())
    }

    /// Writes a whole object only if no object has that name yet (a conditional put,
    /// `If-None-Match: *`): of racing calls for one name at most one succeeds, the others fail
    /// with [`Error::AlreadyExists`]. A store that cannot do this atomically fails with
    /// [`Error::Unsupported`] (the default), and the caller uses another scheme.
    fn put_if_absent(&self, name: &str, data: &[u8]) -> Result<()> {
        let _ = data;
        Err(Error::Unsupported { op: "put if absent", name: name.to_owned() })
    }

    /// Reads bytes `range` of object `name`.
    ///
    /// Fails with [`Error::OutOfRange`] if the range goes past the end of the object: a caller
    /// that asks for bytes that are not there has the wrong idea of the object, and a short
    /// read would hide that. An empty range within the object returns an empty vector.
    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>>;

    /// Reads a whole object.
    ///
    /// The default asks for the size and then the range, which is not atomic if the object is
    /// replaced in between (the range read then fails or returns the new object's bytes);
    /// backends that can read a whole object in one go override it.
    fn get(&self, name: &str) -> Result<Vec<u8>> {
        let size = self.size(name)?;
        self.get_range(name, 0..size)
    }

    /// Reads the last `max_len` bytes of an object (all of it if it is shorter) together with
    /// the object's size.
    ///
    /// This is how a reader finds a file's trailer. Object stores answer it with one suffix
    /// request, so backends override the default (size, then range) where they can.
    fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
        let object_size = self.size(name)?;
        let start = object_size.saturating_sub(max_len);
        let bytes = self.get_range(name, start..object_size)?;
        Ok(Tail { object_size, bytes })
    }

    /// Returns the size of object `name` in bytes.
    fn size(&self, name: &str) -> Result<u64>;

    /// Deletes object `name`; [`Error::NotFound`] if there is none.
    fn delete(&self, name: &str) -> Result<()>;

    /// Lists the objects whose name starts with `prefix` (a plain string prefix, not a
    /// directory: `"run"` matches `"run-1/a"` and `"running"`), sorted by name.
    ///
    /// Uploads that are not committed are not listed.
    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>>;

    /// Lists one level below `prefix` (`""` or ending in `/`, a directory): the objects whose
    /// name has no `/` after `prefix`, and once each the common prefixes (`prefix` + `"dir/"`)
    /// of the others, both sorted by name.
    ///
    /// Object stores answer with a delimiter listing, which never lists the keys below the
    /// common prefixes; the default lists everything under `prefix` and groups it.
    fn list_with_delimiter(&self, prefix: &str) -> Result<Listing> {
        Ok(Listing::group(prefix, self.list(prefix)?))
    }

    /// Copies object `from` to `to`: `to` is replaced atomically, as by a commit, and `from`
    /// stays. [`Error::NotFound`] naming `from` if there is no such object; a copy onto itself
    /// changes nothing.
    ///
    /// Object stores copy inside the server (S3's `CopyObject`): no byte of the object passes
    /// through this process. The default reads `from` in ranges of 8 MiB into an upload of
    /// `to`; like the default [`get`](Storage::get) it is not atomic if `from` is replaced
    /// meanwhile. Decorators forward it (decision 0058).
    fn copy(&self, from: &str, to: &str) -> Result<()> {
        copy_through(self, from, to)
    }
}

/// Bytes read per request by [`copy_through`].
const COPY_CHUNK: u64 = 8 << 20;

/// [`Storage::copy`] through this process: `from` read in ranges into an upload of `to`.
pub(crate) fn copy_through<S: Storage + ?Sized>(store: &S, from: &str, to: &str) -> Result<()> {
    let len = store.size(from)?;
    if from == to {
        return Ok(());
    }
    let mut upload = store.create(to)?;
    let mut at = 0;
    while at < len {
        let end = (at + COPY_CHUNK).min(len);
        // An error drops the upload, which aborts it: `to` stays as it was.
        upload.append(&store.get_range(from, at..end)?)?;
        at = end;
    }
    upload.commit()?;
    Ok(())
}

/// One level of a listing, as returned by [`Storage::list_with_delimiter`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Listing {
    /// The objects directly under the prefix.
    pub objects: Vec<ObjectMeta>,
    /// The common prefixes of the objects further below, each ending in `/`.
    pub prefixes: Vec<String>,
}

impl Listing {
    /// Groups `objects` (all starting with `prefix`, sorted by name, as [`Storage::list`]
    /// returns them) into one level below `prefix`.
    pub fn group(prefix: &str, objects: Vec<ObjectMeta>) -> Listing {
        let mut out = Listing::default();
        for o in objects {
            let Some(rest) = o.name.strip_prefix(prefix) else { continue };
            match rest.find('/') {
                // Names under one common prefix are adjacent in name order.
                Some(i) => {
                    let p = &o.name[..prefix.len() + i + 1];
                    if out.prefixes.last().map(String::as_str) != Some(p) {
                        out.prefixes.push(p.to_owned());
                    }
                }
                None => out.objects.push(o),
            }
        }
        out
    }
}

/// An object being written; returned by [`Storage::create`].
///
/// Dropping an upload without calling [`commit`](Upload::commit) or [`abort`](Upload::abort)
/// aborts it (errors while cleaning up are ignored; call `abort` to see them).
pub trait Upload: Send + fmt::Debug {
    /// Appends `data` to the object.
    ///
    /// After an error the upload should be aborted: how much of `data` was kept is up to the
    /// backend.
    fn append(&mut self, data: &[u8]) -> Result<()>;

    /// The number of bytes appended so far.
    fn bytes_written(&self) -> u64;

    /// Where the bytes appended so far are until the commit, if in a local file (a
    /// [`LocalStorage`] upload's temporary file), so that a process stopped by a signal can
    /// remove it, or say where it is. `None` for other backends.
    fn temporary_path(&self) -> Option<&std::path::Path> {
        None
    }

    /// Publishes the object atomically and returns its size.
    ///
    /// When this returns `Ok`, the object is durable (as far as the backend can promise) and
    /// visible to every reader. When it returns an error, the object must be taken as not
    /// written; usually it was not published at all (a local store that fails to sync the
    /// directory after the rename is the exception: the object is visible but not durable).
    fn commit(self: Box<Self>) -> Result<u64>;

    /// Discards everything written; nothing appears under the name, and an object that was
    /// there before stays as it was.
    fn abort(self: Box<Self>) -> Result<()>;

    /// Stops the upload without publishing it, but keeps the bytes appended so far where a
    /// recovery tool can find them, if the backend can. adz-core's `Writer` calls this when it
    /// is dropped before it finished (a panic, an early return), so that the complete frames
    /// already written can be salvaged (`adz recover`), as they can after a killed process.
    ///
    /// Nothing appears under the upload's name either way. Returns where the bytes were kept
    /// (for [`LocalStorage`], the path of the temporary file), or `None` when the backend
    /// cannot keep a partial upload: the default aborts.
    fn abandon(self: Box<Self>) -> Result<Option<String>> {
        self.abort().map(|()| None)
    }

    /// Moves the network transfers finished since the last call into `out`, and says whether
    /// this upload measures them at all (false, the default: its `append` times are all there
    /// is). An S3 upload reports each part it sent: what the link did, which the time of an
    /// `append` into its part buffer does not show. A decorator that sets its own pace (a
    /// throttle) must not pass its inner upload's transfers on.
    fn take_transfers(&mut self, out: &mut Vec<Transfer>) -> bool {
        let _ = out;
        false
    }

    /// The fastest this upload can plausibly send, bytes/s, whatever the link, where the
    /// upload itself bounds it (an S3 upload: its parts in flight times one request's rate);
    /// None, the default, where only the link does. A writer that does not know the link yet
    /// picks its start among the links up to this. Like [`take_transfers`](Self::take_transfers),
    /// a decorator does not pass its inner upload's on.
    fn rate_ceiling(&self) -> Option<f64> {
        None
    }
}

/// One piece of an upload sent over the network (an S3 part): see [`Upload::take_transfers`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Transfer {
    /// Bytes sent.
    pub bytes: u64,
    /// From the request's start to its answer.
    pub duration: std::time::Duration,
    /// How many pieces were in flight on average meanwhile, this one included (at least 1):
    /// they shared the link.
    pub in_flight: f64,
}

impl Transfer {
    /// The time the link spent on this piece alone, if the pieces in flight shared it
    /// evenly: `bytes / link_time()` is the link's rate.
    pub fn link_time(&self) -> std::time::Duration {
        self.duration.div_f64(self.in_flight.max(1.0))
    }
}

/// The name and size of a stored object, as returned by [`Storage::list`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub struct ObjectMeta {
    /// The object name.
    pub name: String,
    /// The size in bytes.
    pub size: u64,
    /// When it was last written, where the store says (S3's last-modified, a file's mtime).
    pub modified: Option<std::time::SystemTime>,
}

impl ObjectMeta {
    /// Describes object `name` of `size` bytes.
    pub fn new(name: impl Into<String>, size: u64) -> ObjectMeta {
        ObjectMeta { name: name.into(), size, modified: None }
    }

    /// The same, last written at `modified`.
    pub fn with_modified(mut self, modified: std::time::SystemTime) -> ObjectMeta {
        self.modified = Some(modified);
        self
    }
}

/// The end of an object, as returned by [`Storage::get_tail`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    /// The size of the whole object.
    pub object_size: u64,
    /// The object's last bytes: `object_size - bytes.len()` is their offset.
    pub bytes: Vec<u8>,
}

impl Tail {
    /// The offset of the first byte of [`bytes`](Tail::bytes) in the object.
    pub fn offset(&self) -> u64 {
        self.object_size - self.bytes.len() as u64
    }
}

/// Forwards every method, including the provided ones, so that a wrapped backend's
/// overrides (an atomic `get`, a one-request `get_tail`) are kept.
macro_rules! forward_storage {
    () => {
        fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
            (**self).create(name)
        }
        fn put(&self, name: &str, data: &[u8]) -> Result<()> {
            (**self).put(name, data)
        }
        fn put_if_absent(&self, name: &str, data: &[u8]) -> Result<()> {
            (**self).put_if_absent(name, data)
        }
        fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
            (**self).get_range(name, range)
        }
        fn get(&self, name: &str) -> Result<Vec<u8>> {
            (**self).get(name)
        }
        fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
            (**self).get_tail(name, max_len)
        }
        fn size(&self, name: &str) -> Result<u64> {
            (**self).size(name)
        }
        fn delete(&self, name: &str) -> Result<()> {
            (**self).delete(name)
        }
        fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
            (**self).list(prefix)
        }
        fn list_with_delimiter(&self, prefix: &str) -> Result<Listing> {
            (**self).list_with_delimiter(prefix)
        }
        fn copy(&self, from: &str, to: &str) -> Result<()> {
            (**self).copy(from, to)
        }
    };
}

impl<S: Storage + ?Sized> Storage for &S {
    forward_storage!();
}

impl<S: Storage + ?Sized> Storage for Arc<S> {
    forward_storage!();
}

impl<S: Storage + ?Sized> Storage for Box<S> {
    forward_storage!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Implements only the required methods, so the provided ones run their defaults.
    #[derive(Debug, Default)]
    struct Minimal {
        inner: MemoryStorage,
        creates: AtomicUsize,
    }

    impl Storage for Minimal {
        fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
            self.creates.fetch_add(1, Ordering::Relaxed);
            self.inner.create(name)
        }
        fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
            self.inner.get_range(name, range)
        }
        fn size(&self, name: &str) -> Result<u64> {
            self.inner.size(name)
        }
        fn delete(&self, name: &str) -> Result<()> {
            self.inner.delete(name)
        }
        fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
            self.inner.list(prefix)
        }
    }

    #[test]
    fn default_methods() {
        let store = Minimal::default();
        store.put("a", b"0123456789").unwrap();
        assert_eq!(store.creates.load(Ordering::Relaxed), 1, "put goes through create");
        assert_eq!(store.get("a").unwrap(), b"0123456789");

        let tail = store.get_tail("a", 4).unwrap();
        assert_eq!(tail, Tail { object_size: 10, bytes: b"6789".to_vec() });
        assert_eq!(tail.offset(), 6);
        let tail = store.get_tail("a", 100).unwrap();
        assert_eq!((tail.object_size, tail.offset(), tail.bytes.len()), (10, 0, 10));

        assert!(matches!(store.get("missing"), Err(Error::NotFound { .. })));
        assert!(matches!(store.get_tail("missing", 1), Err(Error::NotFound { .. })));
    }

    #[test]
    fn default_copy_reads_and_uploads_and_a_failure_leaves_the_target() {
        let store = Minimal::default();
        let data: Vec<u8> = (0..(COPY_CHUNK as usize + 1000)).map(|i| i as u8).collect();
        store.put("a", &data).unwrap();
        store.put("b", b"old").unwrap();
        store.copy("a", "b").unwrap();
        assert_eq!(store.get("b").unwrap(), data, "two ranges, one upload");
        assert_eq!(store.creates.load(Ordering::Relaxed), 3);

        let faulty = Faulty::new(MemoryStorage::new(), FaultPlan::new().fail_append_after(10));
        faulty.inner().put("a", &data).unwrap();
        faulty.inner().put("b", b"old").unwrap();
        // Faulty forwards the copy to the memory store, which shares the bytes.
        faulty.copy("a", "c").unwrap();
        // Its default, through the faulty upload: the failure aborts, "b" stays.
        assert!(matches!(copy_through(&faulty, "a", "b"), Err(Error::Injected { .. })));
        assert_eq!(faulty.get("b").unwrap(), b"old");
    }

    #[test]
    fn default_put_aborts_when_append_fails() {
        let store = Faulty::new(MemoryStorage::new(), FaultPlan::new().fail_append_after(3));
        assert!(matches!(store.put("a", b"too long"), Err(Error::Injected { .. })));
        assert!(matches!(store.size("a"), Err(Error::NotFound { .. })));
    }

    #[test]
    fn forwarding_keeps_overrides_and_works_for_trait_objects() {
        let counting = Arc::new(Counting::new(MemoryStorage::new()));
        let stats = counting.stats_handle();

        // Arc<Counting<_>> -> Box<dyn Storage> -> &dyn Storage, wrapped again by a decorator.
        let boxed: Box<dyn Storage> = Box::new(Arc::clone(&counting));
        let throttled = Throttled::new(&*boxed, 1e12);
        throttled.put("x", b"abc").unwrap();
        assert_eq!(throttled.get("x").unwrap(), b"abc");
        assert_eq!(throttled.get_tail("x", 2).unwrap().bytes, b"bc");

        let s = stats.snapshot();
        assert_eq!(s.bytes_written, 3);
        // get and get_tail were forwarded as such (one read each), not as size + get_range.
        assert_eq!(s.reads, 2);
        assert_eq!(s.bytes_read, 5);
    }
}
