//! A decorator that injects failures, stalls and torn writes, for crash and recovery tests.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use crate::{Error, ObjectMeta, RemoteKind, Result, Storage, Tail, Upload};

/// Which faults a [`Faulty`] store injects. The default injects none.
///
/// Byte thresholds count the bytes of each upload separately.
///
/// ```
/// use adz_store::{FaultPlan, Faulty, MemoryStorage, Storage};
///
/// let disk = MemoryStorage::new();
/// let store = Faulty::new(disk.clone(), FaultPlan::new().torn_write_after(5));
/// let mut upload = store.create("out.adz")?;
/// assert!(upload.append(b"0123456789").is_err()); // the "process" dies here
/// drop(upload);
/// // What it leaves behind: the first 5 bytes, visible as if complete.
/// assert_eq!(disk.get("out.adz")?, b"01234");
/// # Ok::<(), adz_store::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultPlan {
    fail_append_after: Option<u64>,
    /// The append failures say that the store is full.
    full: bool,
    torn_write_after: Option<u64>,
    fail_commit: bool,
    append_stall: Option<Duration>,
    fail_reads: bool,
    transient_before: u64,
    transient_after: u64,
}

impl FaultPlan {
    /// A plan that injects nothing: the store passes every call through.
    pub fn new() -> FaultPlan {
        FaultPlan::default()
    }

    /// The append that would take an upload past `bytes` writes only up to `bytes` (a short
    /// write, as when a disk fills up) and fails; so does every later append. The upload can
    /// still be committed or aborted.
    pub fn fail_append_after(mut self, bytes: u64) -> FaultPlan {
        self.fail_append_after = Some(bytes);
        self
    }

    /// The store is full: as [`fail_append_after`](FaultPlan::fail_append_after) (`put`
    /// too), but the failures are the [`Error::Remote`] of kind [`RemoteKind::StorageFull`]
    /// that an object store answers when its disks are full or a quota is reached (MinIO's
    /// 507 `XMinioStorageFull`). `storage_full_after(0)`: no upload can add a byte.
    pub fn storage_full_after(mut self, bytes: u64) -> FaultPlan {
        self.fail_append_after = Some(bytes);
        self.full = true;
        self
    }

    /// Simulates a process killed after writing `bytes` of an upload, with its bytes going
    /// straight to the final name: the append that would pass `bytes` writes up to `bytes`,
    /// *commits them as they are* so that the torn object is visible under the name, and
    /// fails. Every later call on the upload fails too, except `abort`, which does nothing
    /// (a dead process cannot clean up).
    ///
    /// Recovery code must notice that such an object is incomplete.
    pub fn torn_write_after(mut self, bytes: u64) -> FaultPlan {
        self.torn_write_after = Some(bytes);
        self
    }

    /// Every commit fails and publishes nothing.
    pub fn fail_commit(mut self) -> FaultPlan {
        self.fail_commit = true;
        self
    }

    /// Every append sleeps for `stall` first: a slow or hung sink, for back-pressure tests.
    pub fn stall_appends(mut self, stall: Duration) -> FaultPlan {
        self.append_stall = Some(stall);
        self
    }

    /// Every read (`get_range`, `get`, `get_tail`) fails.
    pub fn fail_reads(mut self) -> FaultPlan {
        self.fail_reads = true;
        self
    }

    /// The next `n` store calls (`create`, and so `put`; the reads, `size`, `delete`, `list`)
    /// fail with a transient [`Error::Remote`] (a server error) without reaching the wrapped
    /// store, as a remote store does when it is briefly overloaded. Later calls pass.
    pub fn transient_failures(mut self, n: u64) -> FaultPlan {
        self.transient_before = n;
        self
    }

    /// The next `n` store calls reach the wrapped store, *then* fail with a transient
    /// [`Error::Remote`] (a timeout): the operation happened but its answer was lost.
    pub fn transient_failures_after_call(mut self, n: u64) -> FaultPlan {
        self.transient_after = n;
        self
    }
}

/// Wraps a store and injects the faults of a [`FaultPlan`], failing with
/// [`Error::Injected`].
///
/// Uploads follow the plan that was in force when they were created; reads follow the current
/// plan. `put` goes through `create`, `append` and `commit`, so upload faults apply to it too.
#[derive(Debug)]
pub struct Faulty<S> {
    inner: S,
    plan: Mutex<FaultPlan>,
    injected: Arc<AtomicU64>,
    /// Transient failures still to inject before / after the call.
    transient_before: AtomicU64,
    transient_after: AtomicU64,
}

impl<S: Storage> Faulty<S> {
    /// Wraps `inner` with the faults of `plan`.
    pub fn new(inner: S, plan: FaultPlan) -> Faulty<S> {
        Faulty {
            inner,
            transient_before: AtomicU64::new(plan.transient_before),
            transient_after: AtomicU64::new(plan.transient_after),
            plan: Mutex::new(plan),
            injected: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Wraps `inner` without injecting anything (until [`set_plan`](Faulty::set_plan)).
    pub fn pass_through(inner: S) -> Faulty<S> {
        Faulty::new(inner, FaultPlan::new())
    }

    /// Replaces the plan, for uploads created and reads issued from now on.
    pub fn set_plan(&self, plan: FaultPlan) {
        self.transient_before.store(plan.transient_before, Ordering::Relaxed);
        self.transient_after.store(plan.transient_after, Ordering::Relaxed);
        *self.plan.lock().unwrap_or_else(PoisonError::into_inner) = plan;
    }

    /// How many faults have been injected so far (stalls not counted), so that a test can
    /// check that the fault it planned really happened.
    pub fn faults_injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Unwraps the store.
    pub fn into_inner(self) -> S {
        self.inner
    }

    fn plan(&self) -> FaultPlan {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Takes one from `counter` if it is not zero.
    fn take(counter: &AtomicU64) -> bool {
        counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok()
    }

    /// Runs `f` on the wrapped store, failing transiently before or after it if planned.
    fn call<T>(&self, op: &'static str, name: &str, f: impl FnOnce(&S) -> Result<T>) -> Result<T> {
        let transient = |kind, when: &str| {
            self.injected.fetch_add(1, Ordering::Relaxed);
            Err(Error::Remote {
                kind,
                op,
                name: name.to_owned(),
                source: format!("injected transient fault {when} the call").into(),
            })
        };
        if Self::take(&self.transient_before) {
            return transient(RemoteKind::ServerError, "before");
        }
        let result = f(&self.inner);
        if Self::take(&self.transient_after) {
            return transient(RemoteKind::Timeout, "after");
        }
        result
    }

    fn check_read(&self, name: &str) -> Result<()> {
        if self.plan().fail_reads {
            self.injected.fetch_add(1, Ordering::Relaxed);
            return Err(Error::Injected { what: format!("read of {name:?} failed") });
        }
        Ok(())
    }
}

impl<S: Storage> Storage for Faulty<S> {
    fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
        let inner = self.call("create", name, |s| s.create(name))?;
        Ok(Box::new(FaultyUpload {
            inner: Some(inner),
            name: name.to_owned(),
            plan: self.plan(),
            written: 0,
            failed: false,
            injected: Arc::clone(&self.injected),
        }))
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
        self.check_read(name)?;
        self.call("get", name, |s| s.get_range(name, range))
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        self.check_read(name)?;
        self.call("get", name, |s| s.get(name))
    }

    fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
        self.check_read(name)?;
        self.call("get", name, |s| s.get_tail(name, max_len))
    }

    fn size(&self, name: &str) -> Result<u64> {
        self.call("size", name, |s| s.size(name))
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.call("delete", name, |s| s.delete(name))
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.call("list", prefix, |s| s.list(prefix))
    }

    fn list_with_delimiter(&self, prefix: &str) -> Result<crate::Listing> {
        self.call("list", prefix, |s| s.list_with_delimiter(prefix))
    }

    /// Forwarded as one store call: transient faults apply, upload faults do not (a copy
    /// sends no bytes through an upload).
    fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.call("copy", from, |s| s.copy(from, to))
    }
}

#[derive(Debug)]
struct FaultyUpload {
    /// `None` after a simulated crash committed the torn object.
    inner: Option<Box<dyn Upload>>,
    name: String,
    plan: FaultPlan,
    written: u64,
    /// An injected append failure happened; later appends fail too.
    failed: bool,
    injected: Arc<AtomicU64>,
}

/// Which fault an append runs into.
enum Trip {
    Fail(u64),
    Crash(u64),
}

impl FaultyUpload {
    fn inject(&self, what: String) -> Error {
        self.injected.fetch_add(1, Ordering::Relaxed);
        if self.plan.full {
            return Error::Remote {
                kind: RemoteKind::StorageFull,
                op: "append",
                name: self.name.clone(),
                source: format!("injected: {what}: the store is full").into(),
            };
        }
        Error::Injected { what }
    }

    fn crashed(&self) -> Error {
        Error::Injected {
            what: format!("upload of {:?} is dead after a simulated crash", self.name),
        }
    }

    /// The first threshold that `more` bytes would pass, if any.
    fn trip(&self, more: u64) -> Option<Trip> {
        let end = self.written + more;
        let fail = self.plan.fail_append_after.filter(|&n| end > n);
        let crash = self.plan.torn_write_after.filter(|&n| end > n);
        match (fail, crash) {
            (Some(f), Some(c)) if c <= f => Some(Trip::Crash(c)),
            (Some(f), _) => Some(Trip::Fail(f)),
            (None, Some(c)) => Some(Trip::Crash(c)),
            (None, None) => None,
        }
    }
}

impl Upload for FaultyUpload {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.inner.is_none() {
            return Err(self.crashed());
        }
        if self.failed {
            return Err(self.inject(format!("append to {:?} after an earlier failure", self.name)));
        }
        if let Some(stall) = self.plan.append_stall {
            thread::sleep(stall);
        }
        let trip = self.trip(data.len() as u64);
        let inner = self.inner.as_mut().expect("checked above");
        let Some(trip) = trip else {
            inner.append(data)?;
            self.written += data.len() as u64;
            return Ok(());
        };

        let (Trip::Fail(limit) | Trip::Crash(limit)) = trip;
        // `limit` lies before the end of this append, so the cast cannot truncate.
        let keep = limit.saturating_sub(self.written) as usize;
        inner.append(&data[..keep])?;
        self.written += keep as u64;
        match trip {
            Trip::Fail(limit) => {
                self.failed = true;
                Err(self.inject(format!("append to {:?} failed after {limit} bytes", self.name)))
            }
            Trip::Crash(limit) => {
                self.inner.take().expect("checked above").commit()?;
                Err(self.inject(format!(
                    "simulated crash after {limit} bytes of {:?}, left visible as a torn object",
                    self.name
                )))
            }
        }
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }

    fn commit(mut self: Box<Self>) -> Result<u64> {
        let Some(inner) = self.inner.take() else { return Err(self.crashed()) };
        if self.plan.fail_commit {
            drop(inner); // aborts: nothing is published
            return Err(self.inject(format!("commit of {:?} failed", self.name)));
        }
        inner.commit()
    }

    fn abort(self: Box<Self>) -> Result<()> {
        match self.inner {
            Some(inner) => inner.abort(),
            None => Ok(()),
        }
    }

    fn abandon(self: Box<Self>) -> Result<Option<String>> {
        match self.inner {
            Some(inner) => inner.abandon(),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStorage;
    use std::time::Instant;

    fn injected<T: std::fmt::Debug>(result: Result<T>) -> String {
        match result {
            Err(Error::Injected { what }) => what,
            other => panic!("expected an injected fault, got {other:?}"),
        }
    }

    #[test]
    fn pass_through_injects_nothing() {
        let store = Faulty::pass_through(MemoryStorage::new());
        store.put("a", b"abc").unwrap();
        assert_eq!(store.get("a").unwrap(), b"abc");
        assert_eq!(store.faults_injected(), 0);
    }

    #[test]
    fn fail_append_after_writes_a_short_prefix_and_then_fails() {
        let disk = MemoryStorage::new();
        let store = Faulty::new(disk.clone(), FaultPlan::new().fail_append_after(5));
        let mut upload = store.create("a").unwrap();
        upload.append(b"012").unwrap();
        let what = injected(upload.append(b"3456"));
        assert!(what.contains("\"a\"") && what.contains("after 5 bytes"), "{what}");
        assert_eq!(upload.bytes_written(), 5);
        injected(upload.append(b"x"));
        assert!(disk.is_empty(), "nothing visible before commit");
        // The short write is what a commit would publish.
        assert_eq!(upload.commit().unwrap(), 5);
        assert_eq!(disk.get("a").unwrap(), b"01234");
        assert_eq!(store.faults_injected(), 2);
    }

    #[test]
    fn a_full_store_fails_appends_and_puts_as_storage_full() {
        let disk = MemoryStorage::new();
        disk.put("a", b"old").unwrap();
        let store = Faulty::new(disk.clone(), FaultPlan::new().storage_full_after(2));
        let full = |r: Result<()>| match r {
            Err(e @ Error::Remote { kind: RemoteKind::StorageFull, .. }) => e,
            other => panic!("expected StorageFull, got {other:?}"),
        };
        let mut upload = store.create("a").unwrap();
        assert!(full(upload.append(b"new")).is_storage_full());
        full(upload.append(b"x"));
        upload.abort().unwrap();
        full(store.put("a", b"new"));
        assert_eq!(disk.get("a").unwrap(), b"old", "the old object stays");
        assert_eq!(store.faults_injected(), 3);
    }

    #[test]
    fn torn_write_leaves_a_visible_prefix() {
        let disk = MemoryStorage::new();
        disk.put("a", b"old version").unwrap();
        let store = Faulty::new(disk.clone(), FaultPlan::new().torn_write_after(4));
        let mut upload = store.create("a").unwrap();
        upload.append(b"01").unwrap();
        assert_eq!(disk.get("a").unwrap(), b"old version");
        let what = injected(upload.append(b"2345"));
        assert!(what.contains("crash after 4 bytes"), "{what}");
        assert_eq!(disk.get("a").unwrap(), b"0123");
        assert_eq!(upload.bytes_written(), 4);
        injected(upload.append(b"6"));
        upload.abort().unwrap();
        assert_eq!(disk.get("a").unwrap(), b"0123", "abort after a crash changes nothing");

        // An upload that stays below the threshold commits normally.
        let mut upload = store.create("b").unwrap();
        upload.append(b"0123").unwrap();
        assert_eq!(upload.commit().unwrap(), 4);
        assert_eq!(store.faults_injected(), 1);
    }

    #[test]
    fn the_lower_threshold_wins() {
        let disk = MemoryStorage::new();
        let plan = FaultPlan::new().fail_append_after(3).torn_write_after(6);
        let store = Faulty::new(disk.clone(), plan.clone());
        let mut upload = store.create("a").unwrap();
        assert!(injected(upload.append(b"0123456789")).contains("failed after 3"));
        drop(upload);
        assert!(disk.is_empty());

        store.set_plan(FaultPlan::new().fail_append_after(6).torn_write_after(3));
        let mut upload = store.create("a").unwrap();
        assert!(injected(upload.append(b"0123456789")).contains("crash after 3"));
        assert_eq!(disk.get("a").unwrap(), b"012");
    }

    #[test]
    fn fail_commit_publishes_nothing() {
        let disk = MemoryStorage::new();
        let store = Faulty::new(disk.clone(), FaultPlan::new().fail_commit());
        let mut upload = store.create("a").unwrap();
        upload.append(b"abc").unwrap();
        injected(upload.commit());
        assert!(disk.is_empty());
        injected(store.put("b", b"abc"));
        assert!(disk.is_empty());
    }

    #[test]
    fn reads_fail_and_plans_change() {
        let store = Faulty::pass_through(MemoryStorage::new());
        store.put("a", b"abc").unwrap();
        store.set_plan(FaultPlan::new().fail_reads());
        injected(store.get_range("a", 0..1));
        injected(store.get("a"));
        injected(store.get_tail("a", 1));
        assert_eq!(store.size("a").unwrap(), 3, "metadata is not a read");
        assert_eq!(store.faults_injected(), 3);
        store.set_plan(FaultPlan::new());
        assert_eq!(store.get("a").unwrap(), b"abc");
    }

    #[test]
    fn transient_failures_before_and_after_the_call() {
        let store = Faulty::new(MemoryStorage::new(), FaultPlan::new().transient_failures(2));
        for _ in 0..2 {
            match store.put("a", b"abc") {
                Err(e @ Error::Remote { kind: RemoteKind::ServerError, .. }) => {
                    assert!(e.is_transient())
                }
                other => panic!("expected a transient error, got {other:?}"),
            }
        }
        assert!(store.inner().is_empty(), "a failure before the call changes nothing");
        store.put("a", b"abc").unwrap();
        assert_eq!(store.faults_injected(), 2);

        store.set_plan(FaultPlan::new().transient_failures_after_call(1));
        assert!(matches!(store.delete("a"), Err(Error::Remote { kind: RemoteKind::Timeout, .. })));
        assert!(store.inner().is_empty(), "the call happened, only its answer was lost");
        assert!(matches!(store.size("a"), Err(Error::NotFound { .. })));
    }

    #[test]
    fn stalls_delay_appends() {
        let plan = FaultPlan::new().stall_appends(Duration::from_millis(20));
        let store = Faulty::new(MemoryStorage::new(), plan);
        let mut upload = store.create("a").unwrap();
        let start = Instant::now();
        upload.append(b"a").unwrap();
        upload.append(b"b").unwrap();
        assert!(start.elapsed() >= Duration::from_millis(40));
        assert_eq!(upload.commit().unwrap(), 2);
    }
}
