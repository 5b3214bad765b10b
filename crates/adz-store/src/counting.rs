//! A decorator that counts what goes through a store, so the pipeline can see how fast its
//! sink really is.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{ObjectMeta, Result, Storage, Tail, Upload};

/// Counts bytes, calls and the time spent in the wrapped store.
///
/// The time spent in `append` is the sink's back-pressure: `bytes_written / write_time` is the
/// rate at which the sink accepts data, whatever it is (a disk, a throttled link, S3). Take a
/// [`StatsHandle`] before handing the store to the pipeline to read the counters later.
///
/// ```
/// use adz_store::{Counting, MemoryStorage, Storage};
///
/// let store = Counting::new(MemoryStorage::new());
/// let stats = store.stats_handle();
/// let before = stats.snapshot();
/// store.put("a", b"hello")?;
/// store.get_range("a", 1..3)?;
/// let delta = stats.snapshot().since(&before);
/// assert_eq!((delta.bytes_written, delta.writes, delta.commits), (5, 1, 1));
/// assert_eq!((delta.bytes_read, delta.reads), (2, 1));
/// # Ok::<(), adz_store::Error>(())
/// ```
#[derive(Debug)]
pub struct Counting<S> {
    inner: S,
    counters: Arc<Counters>,
}

impl<S: Storage> Counting<S> {
    /// Wraps `inner` with all counters at zero.
    pub fn new(inner: S) -> Counting<S> {
        Counting { inner, counters: Arc::default() }
    }

    /// The counters so far.
    pub fn stats(&self) -> SinkStats {
        self.counters.snapshot()
    }

    /// A handle that reads the counters and outlives any borrow of the store.
    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle { counters: Arc::clone(&self.counters) }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Unwraps the store.
    pub fn into_inner(self) -> S {
        self.inner
    }

    fn read<T>(&self, len: impl Fn(&T) -> usize, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let start = Instant::now();
        let result = f();
        let c = &self.counters;
        c.read_nanos.add(start.elapsed());
        c.reads.add(1);
        match &result {
            Ok(value) => c.bytes_read.add(len(value) as u64),
            Err(_) => c.errors.add(1),
        }
        result
    }

    fn other<T>(&self, result: Result<T>) -> Result<T> {
        self.counters.other_calls.add(1);
        self.counters.count_error(&result);
        result
    }
}

impl<S: Storage> Storage for Counting<S> {
    fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
        let inner = self.other(self.inner.create(name))?;
        Ok(Box::new(CountingUpload { inner: Some(inner), counters: Arc::clone(&self.counters) }))
    }

    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        let c = &self.counters;
        let start = Instant::now();
        let result = self.inner.put(name, data);
        c.write_nanos.add(start.elapsed());
        c.writes.add(1);
        match &result {
            Ok(()) => {
                c.bytes_written.add(data.len() as u64);
                c.commits.add(1);
            }
            Err(_) => c.errors.add(1),
        }
        result
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
        self.read(Vec::len, || self.inner.get_range(name, range))
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        self.read(Vec::len, || self.inner.get(name))
    }

    fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
        self.read(|tail: &Tail| tail.bytes.len(), || self.inner.get_tail(name, max_len))
    }

    fn size(&self, name: &str) -> Result<u64> {
        self.other(self.inner.size(name))
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.other(self.inner.delete(name))
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.other(self.inner.list(prefix))
    }

    fn list_with_delimiter(&self, prefix: &str) -> Result<crate::Listing> {
        self.other(self.inner.list_with_delimiter(prefix))
    }

    /// Counted as one call, no bytes read or written: the copy happens inside the store
    /// (where the store has no server-side copy, its own reads and upload are not seen here).
    fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.other(self.inner.copy(from, to))
    }
}

#[derive(Debug)]
struct CountingUpload {
    /// `None` once committed or aborted.
    inner: Option<Box<dyn Upload>>,
    counters: Arc<Counters>,
}

impl Upload for CountingUpload {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let inner = self.inner.as_mut().expect("commit and abort consume the upload");
        let start = Instant::now();
        let result = inner.append(data);
        let c = &self.counters;
        c.write_nanos.add(start.elapsed());
        c.writes.add(1);
        match &result {
            Ok(()) => c.bytes_written.add(data.len() as u64),
            Err(_) => c.errors.add(1),
        }
        result
    }

    fn bytes_written(&self) -> u64 {
        self.inner.as_ref().map_or(0, |inner| inner.bytes_written())
    }

    fn commit(mut self: Box<Self>) -> Result<u64> {
        let inner = self.inner.take().expect("commit and abort consume the upload");
        let start = Instant::now();
        let result = inner.commit();
        let c = &self.counters;
        c.commit_nanos.add(start.elapsed());
        match &result {
            Ok(_) => c.commits.add(1),
            Err(_) => c.errors.add(1),
        }
        result
    }

    fn abort(mut self: Box<Self>) -> Result<()> {
        let inner = self.inner.take().expect("commit and abort consume the upload");
        self.counters.aborts.add(1);
        let result = inner.abort();
        self.counters.count_error(&result);
        result
    }

    fn abandon(mut self: Box<Self>) -> Result<Option<String>> {
        let inner = self.inner.take().expect("commit and abort consume the upload");
        self.counters.aborts.add(1);
        let result = inner.abandon();
        self.counters.count_error(&result);
        result
    }
}

impl Drop for CountingUpload {
    fn drop(&mut self) {
        if self.inner.is_some() {
            self.counters.aborts.add(1);
        }
    }
}

/// Reads the counters of a [`Counting`] store.
#[derive(Debug, Clone)]
pub struct StatsHandle {
    counters: Arc<Counters>,
}

impl StatsHandle {
    /// The counters now.
    pub fn snapshot(&self) -> SinkStats {
        self.counters.snapshot()
    }
}

/// The counters of a [`Counting`] store at one moment.
///
/// Failed calls count as calls (and as errors) but their bytes do not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SinkStats {
    /// Bytes accepted by `append` and `put`.
    pub bytes_written: u64,
    /// Bytes returned by reads.
    pub bytes_read: u64,
    /// Calls to `append` and `put`.
    pub writes: u64,
    /// Calls to `get_range`, `get` and `get_tail`.
    pub reads: u64,
    /// Objects published, by commit or `put`.
    pub commits: u64,
    /// Uploads aborted, explicitly or by being dropped.
    pub aborts: u64,
    /// Calls to `create`, `size`, `delete` and `list`.
    pub other_calls: u64,
    /// Calls that returned an error.
    pub errors: u64,
    /// Time spent in `append` and `put`.
    pub write_time: Duration,
    /// Time spent in reads.
    pub read_time: Duration,
    /// Time spent in commits (fsync and rename, or completing a multipart upload).
    pub commit_time: Duration,
}

impl SinkStats {
    /// The counters accumulated since `earlier`, a snapshot of the same store.
    pub fn since(&self, earlier: &SinkStats) -> SinkStats {
        SinkStats {
            bytes_written: self.bytes_written.saturating_sub(earlier.bytes_written),
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
            writes: self.writes.saturating_sub(earlier.writes),
            reads: self.reads.saturating_sub(earlier.reads),
            commits: self.commits.saturating_sub(earlier.commits),
            aborts: self.aborts.saturating_sub(earlier.aborts),
            other_calls: self.other_calls.saturating_sub(earlier.other_calls),
            errors: self.errors.saturating_sub(earlier.errors),
            write_time: self.write_time.saturating_sub(earlier.write_time),
            read_time: self.read_time.saturating_sub(earlier.read_time),
            commit_time: self.commit_time.saturating_sub(earlier.commit_time),
        }
    }

    /// The rate at which the sink accepted writes, in bytes per second of time spent writing;
    /// `None` before any time was spent.
    pub fn write_throughput(&self) -> Option<f64> {
        let secs = self.write_time.as_secs_f64();
        (secs > 0.0).then(|| self.bytes_written as f64 / secs)
    }

    /// The rate at which the sink served reads, in bytes per second of time spent reading;
    /// `None` before any time was spent.
    pub fn read_throughput(&self) -> Option<f64> {
        let secs = self.read_time.as_secs_f64();
        (secs > 0.0).then(|| self.bytes_read as f64 / secs)
    }
}

#[derive(Debug, Default)]
struct Counters {
    bytes_written: Counter,
    bytes_read: Counter,
    writes: Counter,
    reads: Counter,
    commits: Counter,
    aborts: Counter,
    other_calls: Counter,
    errors: Counter,
    write_nanos: Counter,
    read_nanos: Counter,
    commit_nanos: Counter,
}

impl Counters {
    fn count_error<T>(&self, result: &Result<T>) {
        if result.is_err() {
            self.errors.add(1);
        }
    }

    fn snapshot(&self) -> SinkStats {
        SinkStats {
            bytes_written: self.bytes_written.get(),
            bytes_read: self.bytes_read.get(),
            writes: self.writes.get(),
            reads: self.reads.get(),
            commits: self.commits.get(),
            aborts: self.aborts.get(),
            other_calls: self.other_calls.get(),
            errors: self.errors.get(),
            write_time: Duration::from_nanos(self.write_nanos.get()),
            read_time: Duration::from_nanos(self.read_nanos.get()),
            commit_time: Duration::from_nanos(self.commit_nanos.get()),
        }
    }
}

/// A statistics counter. Relaxed ordering: each counter is exact, but a snapshot taken while
/// other threads write may see one counter updated and another not yet.
#[derive(Debug, Default)]
struct Counter(AtomicU64);

impl Counter {
    fn add(&self, n: impl IntoCount) {
        self.0.fetch_add(n.into_count(), Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counts are plain numbers, or durations counted in nanoseconds.
trait IntoCount {
    fn into_count(self) -> u64;
}

impl IntoCount for u64 {
    fn into_count(self) -> u64 {
        self
    }
}

impl IntoCount for Duration {
    fn into_count(self) -> u64 {
        u64::try_from(self.as_nanos()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, FaultPlan, Faulty, MemoryStorage, Throttled};

    #[test]
    fn counts_uploads_reads_and_errors() {
        let store = Counting::new(MemoryStorage::new());
        let mut upload = store.create("a").unwrap();
        upload.append(b"abc").unwrap();
        upload.append(b"de").unwrap();
        assert_eq!(upload.bytes_written(), 5);
        assert_eq!(upload.commit().unwrap(), 5);
        drop(store.create("b").unwrap());
        store.create("c").unwrap().abort().unwrap();

        assert_eq!(store.get_tail("a", 2).unwrap().bytes, b"de");
        assert!(matches!(store.get_range("a", 0..9), Err(Error::OutOfRange { .. })));
        assert!(store.size("missing").is_err());
        assert_eq!(store.list("").unwrap().len(), 1);

        let s = store.stats();
        assert_eq!((s.bytes_written, s.writes, s.commits, s.aborts), (5, 2, 1, 2));
        assert_eq!((s.bytes_read, s.reads), (2, 2));
        assert_eq!((s.other_calls, s.errors), (5, 2));
    }

    #[test]
    fn failed_writes_count_no_bytes() {
        let faulty = Faulty::new(MemoryStorage::new(), FaultPlan::new().fail_append_after(2));
        let store = Counting::new(faulty);
        let mut upload = store.create("a").unwrap();
        assert!(upload.append(b"abc").is_err());
        drop(upload);
        let s = store.stats();
        assert_eq!((s.bytes_written, s.writes, s.errors, s.aborts), (0, 1, 1, 1));
    }

    #[test]
    fn measures_the_throughput_of_a_slow_sink() {
        let store = Counting::new(Throttled::new(MemoryStorage::new(), 50e6).burst(0));
        let stats = store.stats_handle();
        let mut upload = store.create("a").unwrap();
        for _ in 0..5 {
            upload.append(&[0; 200_000]).unwrap();
        }
        upload.commit().unwrap();
        let s = stats.snapshot();
        assert!(s.write_time >= Duration::from_millis(19), "{s:?}");
        // The sink can only look slower than the link, never faster.
        let throughput = s.write_throughput().unwrap();
        assert!(throughput <= 50e6 * 1.02, "{throughput}");
        assert_eq!(s.read_throughput(), None);
    }

    #[test]
    fn since_subtracts() {
        let store = Counting::new(MemoryStorage::new());
        store.put("a", b"abc").unwrap();
        let before = store.stats();
        store.put("b", b"de").unwrap();
        let delta = store.stats().since(&before);
        assert_eq!((delta.bytes_written, delta.writes, delta.commits), (2, 1, 1));
        assert_eq!(before.since(&store.stats()), SinkStats::default(), "saturates");
    }
}
