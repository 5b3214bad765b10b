//! A decorator that tries an operation again after a transient error.
//!
//! Object stores fail now and then in ways that go away: a 503 `SlowDown`, a timeout, a
//! connection reset while a server restarts. [`Retrying`] repeats such an operation with
//! exponential backoff and jitter, a bounded number of times and for a bounded time, and gives
//! up at once on errors that repeating cannot fix ([`Error::is_transient`]): a missing object,
//! rejected credentials, a bad name. So a wrong endpoint or wrong keys fail in a second or
//! two with one clear message, never a retry storm.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::{Error, ObjectMeta, Result, Storage, Tail, Upload};

/// How often and how patiently to retry.
///
/// Attempt *n* (from 1) that fails transiently is followed, if attempts and time remain, by a
/// pause of `initial_backoff · 2^(n-1)`, capped at `max_backoff`, times a random factor in
/// `[0.5, 1)` (so that many clients that failed together do not retry together).
///
/// ```
/// use std::time::Duration;
/// use adz_store::RetryPolicy;
///
/// let policy = RetryPolicy::default();
/// assert_eq!(policy.max_attempts, 5);
/// assert!(policy.backoff(1) < Duration::from_millis(200));
/// assert!(policy.backoff(30) <= policy.max_backoff);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in total, the first included; 1 means no retry.
    pub max_attempts: u32,
    /// The pause after the first failure, before jitter.
    pub initial_backoff: Duration,
    /// The longest pause between two attempts.
    pub max_backoff: Duration,
    /// No new attempt starts later than this after the first one.
    pub max_elapsed: Duration,
}

impl Default for RetryPolicy {
    /// 5 attempts, 200 ms doubling up to 5 s, at most 30 s in all: about 3 s of pauses before
    /// the last attempt, enough to ride out a server restart or a burst of throttling.
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            max_elapsed: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// A policy that tries once: errors are returned as they are.
    pub fn none() -> RetryPolicy {
        RetryPolicy { max_attempts: 1, ..RetryPolicy::default() }
    }

    /// `attempts` attempts in all, with pauses starting at `initial_backoff`.
    pub fn new(attempts: u32, initial_backoff: Duration) -> RetryPolicy {
        RetryPolicy { max_attempts: attempts.max(1), initial_backoff, ..RetryPolicy::default() }
    }

    /// Sets the longest pause between two attempts.
    pub fn max_backoff(mut self, max: Duration) -> RetryPolicy {
        self.max_backoff = max;
        self
    }

    /// Sets the time after the first attempt when no new attempt starts.
    pub fn max_elapsed(mut self, max: Duration) -> RetryPolicy {
        self.max_elapsed = max;
        self
    }

    /// The pause after failed attempt `attempt` (from 1), jitter included.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(30);
        let base = self.initial_backoff.saturating_mul(1 << doublings).min(self.max_backoff);
        base.mul_f64(0.5 + 0.5 * jitter())
    }

    /// What to do after attempt `attempt` (from 1), begun at `started`, failed with `err`:
    /// `Ok(pause)` to try again after `pause`, or `Err` with the error to return.
    pub fn next(
        &self,
        op: &'static str,
        name: &str,
        attempt: u32,
        started: Instant,
        err: Error,
    ) -> std::result::Result<Duration, Error> {
        if !err.is_transient() {
            return Err(err);
        }
        let pause = self.backoff(attempt);
        let elapsed = started.elapsed();
        if attempt < self.max_attempts && elapsed + pause <= self.max_elapsed {
            return Ok(pause);
        }
        if attempt == 1 {
            return Err(err); // not retried: nothing to add
        }
        Err(Error::RetriesExhausted {
            op,
            name: name.to_owned(),
            attempts: attempt,
            elapsed,
            last: Box::new(err),
        })
    }

    /// Runs `f` until it succeeds, fails with an error that is not transient, or the policy
    /// gives up (then [`Error::RetriesExhausted`] holds the last error).
    pub fn run<T>(
        &self,
        op: &'static str,
        name: &str,
        mut f: impl FnMut() -> Result<T>,
    ) -> Result<T> {
        let started = Instant::now();
        for attempt in 1.. {
            match f() {
                Ok(v) => return Ok(v),
                Err(e) => thread::sleep(self.next(op, name, attempt, started, e)?),
            }
        }
        unreachable!("the policy ends the loop")
    }
}

/// A number in `[0, 1)` that differs between calls and threads; not for cryptography.
fn jitter() -> f64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // splitmix64 of a counter mixed with the clock.
    let mut z = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ nanos;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Wraps a store and retries its operations after transient errors, following a
/// [`RetryPolicy`].
///
/// Retried: `create`, `put` (a whole object is published atomically, so repeating it is
/// safe), the reads, `size`, `list` and `delete`. Not retried: the `append` and `commit` of an
/// upload, because after a failed append the backend alone knows what was kept; a backend
/// that can repeat a piece of an upload safely retries inside (`S3Storage` repeats a failed
/// part with the same part number, which replaces it).
///
/// ```
/// use adz_store::{FaultPlan, Faulty, MemoryStorage, RetryPolicy, Retrying, Storage};
/// use std::time::Duration;
///
/// let flaky = Faulty::new(MemoryStorage::new(), FaultPlan::new().transient_failures(2));
/// let store = Retrying::new(flaky, RetryPolicy::new(3, Duration::from_millis(1)));
/// store.put("a", b"abc")?; // two transient failures, then success
/// assert_eq!(store.get("a")?, b"abc");
/// assert_eq!(store.retries(), 2);
/// # Ok::<(), adz_store::Error>(())
/// ```
#[derive(Debug)]
pub struct Retrying<S> {
    inner: S,
    policy: RetryPolicy,
    retries: AtomicU64,
}

impl<S: Storage> Retrying<S> {
    /// Wraps `inner` with `policy`.
    pub fn new(inner: S, policy: RetryPolicy) -> Retrying<S> {
        Retrying { inner, policy, retries: AtomicU64::new(0) }
    }

    /// The policy in force.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// How many times an operation was repeated so far.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn run<T>(
        &self,
        op: &'static str,
        name: &str,
        mut f: impl FnMut(&S) -> Result<T>,
    ) -> Result<T> {
        let mut first = true;
        self.policy.run(op, name, || {
            if !std::mem::take(&mut first) {
                self.retries.fetch_add(1, Ordering::Relaxed);
            }
            f(&self.inner)
        })
    }
}

impl<S: Storage> Storage for Retrying<S> {
    fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
        self.run("create", name, |s| s.create(name))
    }

    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        self.run("put", name, |s| s.put(name, data))
    }

    fn put_if_absent(&self, name: &str, data: &[u8]) -> Result<()> {
        // A repeat after a lost answer fails with `AlreadyExists` on the object this call
        // wrote: the caller tells its own object from a rival's by the content.
        self.run("put if absent", name, |s| s.put_if_absent(name, data))
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
        self.run("get", name, |s| s.get_range(name, range.clone()))
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        self.run("get", name, |s| s.get(name))
    }

    fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
        self.run("get", name, |s| s.get_tail(name, max_len))
    }

    fn size(&self, name: &str) -> Result<u64> {
        self.run("size", name, |s| s.size(name))
    }

    fn delete(&self, name: &str) -> Result<()> {
        // A delete whose answer was lost may have happened: `NotFound` on a repeat is success.
        let mut attempt = 0;
        self.run("delete", name, |s| {
            attempt += 1;
            match s.delete(name) {
                Err(Error::NotFound { .. }) if attempt > 1 => Ok(()),
                other => other,
            }
        })
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.run("list", prefix, |s| s.list(prefix))
    }

    fn list_with_delimiter(&self, prefix: &str) -> Result<crate::Listing> {
        self.run("list", prefix, |s| s.list_with_delimiter(prefix))
    }

    fn copy(&self, from: &str, to: &str) -> Result<()> {
        // Repeating a copy writes the same object again.
        self.run("copy", from, |s| s.copy(from, to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FaultPlan, Faulty, MemoryStorage};

    fn quick(attempts: u32) -> RetryPolicy {
        RetryPolicy::new(attempts, Duration::from_millis(1))
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let p =
            RetryPolicy::new(10, Duration::from_millis(100)).max_backoff(Duration::from_secs(1));
        for attempt in 1..=4u32 {
            let base = Duration::from_millis(100 * (1 << (attempt - 1)));
            for _ in 0..50 {
                let b = p.backoff(attempt);
                assert!(b >= base / 2 && b < base, "attempt {attempt}: {b:?} vs {base:?}");
            }
        }
        for _ in 0..50 {
            let b = p.backoff(40);
            assert!(b >= Duration::from_millis(500) && b < Duration::from_secs(1), "{b:?}");
        }
        let distinct: std::collections::HashSet<Duration> = (0..20).map(|_| p.backoff(3)).collect();
        assert!(distinct.len() > 10, "jitter spreads the pauses: {distinct:?}");
    }

    #[test]
    fn retries_transient_errors_until_success() {
        let store = Retrying::new(
            Faulty::new(MemoryStorage::new(), FaultPlan::new().transient_failures(3)),
            quick(4),
        );
        store.put("a", b"abc").unwrap();
        assert_eq!(store.retries(), 3);
        assert_eq!(store.inner().faults_injected(), 3);
        assert_eq!(store.get("a").unwrap(), b"abc");
    }

    #[test]
    fn gives_up_after_max_attempts_with_the_last_error() {
        let faulty = Faulty::new(MemoryStorage::new(), FaultPlan::new().transient_failures(10));
        faulty.inner().put("a", b"abc").unwrap();
        let store = Retrying::new(faulty, quick(3));
        match store.get_range("a", 0..1) {
            Err(Error::RetriesExhausted { op: "get", attempts: 3, last, name, .. }) => {
                assert_eq!(name, "a");
                assert!(last.is_transient(), "{last:?}");
            }
            other => panic!("expected RetriesExhausted, got {other:?}"),
        }
        assert_eq!(store.inner().faults_injected(), 3, "exactly max_attempts calls");
        assert_eq!(store.retries(), 2);
    }

    #[test]
    fn does_not_retry_permanent_errors() {
        let store = Retrying::new(MemoryStorage::new(), quick(5));
        assert!(matches!(store.get("missing"), Err(Error::NotFound { .. })));
        assert!(matches!(store.size("/abs"), Err(Error::InvalidName { .. })));
        // An injected (non-transient) append failure is passed through.
        let store = Retrying::new(
            Faulty::new(MemoryStorage::new(), FaultPlan::new().fail_append_after(1)),
            quick(5),
        );
        assert!(matches!(store.put("a", b"abc"), Err(Error::Injected { .. })));
        assert_eq!(store.retries(), 0);
    }

    #[test]
    fn one_attempt_returns_the_error_as_is() {
        let faulty = Faulty::new(MemoryStorage::new(), FaultPlan::new().transient_failures(1));
        let store = Retrying::new(faulty, RetryPolicy::none());
        assert!(matches!(store.size("a"), Err(Error::Remote { .. })));
        assert!(matches!(store.size("a"), Err(Error::NotFound { .. })), "the fault was used up");
    }

    #[test]
    fn gives_up_when_time_runs_out() {
        let faulty = Faulty::new(MemoryStorage::new(), FaultPlan::new().transient_failures(100));
        let policy = RetryPolicy::new(100, Duration::from_millis(20))
            .max_backoff(Duration::from_millis(20))
            .max_elapsed(Duration::from_millis(100));
        let store = Retrying::new(faulty, policy);
        let start = Instant::now();
        match store.list("") {
            Err(Error::RetriesExhausted { attempts, .. }) => assert!(attempts < 20, "{attempts}"),
            other => panic!("expected RetriesExhausted, got {other:?}"),
        }
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_repeated_delete_that_finds_nothing_succeeded() {
        let faulty = Faulty::new(MemoryStorage::new(), FaultPlan::new());
        faulty.inner().put("a", b"x").unwrap();
        // The first delete "fails" after deleting (the answer was lost)...
        faulty.set_plan(FaultPlan::new().transient_failures_after_call(1));
        let store = Retrying::new(faulty, quick(3));
        store.delete("a").unwrap();
        assert!(matches!(store.size("a"), Err(Error::NotFound { .. })));
        // ...but a delete of something that never existed is still NotFound.
        assert!(matches!(store.delete("never"), Err(Error::NotFound { .. })));
    }
}
