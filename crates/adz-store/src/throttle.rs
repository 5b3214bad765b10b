//! A decorator that makes any store as fast as a network link, and no faster.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crate::{ObjectMeta, Result, Storage, Tail, Upload};

/// The smallest default burst, in bytes.
const MIN_DEFAULT_BURST_BYTES: f64 = 1024.0 * 1024.0;
/// The default burst, as time at the link's speed.
const DEFAULT_BURST_TIME: Duration = Duration::from_millis(10);

/// Makes a store behave like a network link of a given speed.
///
/// Every byte appended to an upload (or `put`) goes over one shared virtual link: `append`
/// returns when the link would have finished sending the bytes, and the upload's threads all
/// queue on the same link, as they would on a real one. Reads are free unless
/// [`throttle_reads`](Throttled::throttle_reads) is on; they then use a second link of the
/// same speed, since network links are full duplex.
///
/// # Pacing
///
/// The link keeps a virtual clock: the time at which it will have sent everything it was
/// given. A transfer of `n` bytes moves that clock on by `n / bytes_per_sec` and the caller
/// sleeps until the new time. Because the deadlines are absolute, a sleep that oversleeps
/// (as sleeps on a busy machine do) is made up by the next transfers instead of adding up,
/// and the rate over a sustained transfer is the configured one to well within 1 %, from
/// 10 MB/s to 6 GB/s and beyond.
///
/// The link tolerates callers that come late by up to the *burst* (default: 10 ms worth of
/// bytes, at least 1 MiB): a link that was idle for longer starts its next transfer as if it
/// had been idle for exactly that long, like a token bucket of that size. A new link starts
/// with an empty bucket, so a measurement from the first byte is not flattered by a burst.
/// Where the link's speed is itself measured from write times (adz's `--link auto`), choose a
/// small burst with [`burst`](Throttled::burst): every short idle gap lets up to a burst pass
/// at once, which makes the link look faster than it is.
///
/// ```
/// use std::time::{Duration, Instant};
/// use adz_store::{MemoryStorage, Storage, Throttled};
///
/// let link = Throttled::new(MemoryStorage::new(), 100e6); // 100 MB/s
/// let start = Instant::now();
/// link.put("a", &vec![0; 1_000_000])?;
/// assert!(start.elapsed() >= Duration::from_millis(10));
/// assert_eq!(link.link_stats().bytes, 1_000_000);
/// # Ok::<(), adz_store::Error>(())
/// ```
#[derive(Debug)]
pub struct Throttled<S> {
    inner: S,
    bytes_per_sec: f64,
    writes: Arc<Pacer>,
    reads: Option<Arc<Pacer>>,
}

impl<S: Storage> Throttled<S> {
    /// Wraps `inner` behind a link of `bytes_per_sec` (see [`parse_rate`](crate::parse_rate)).
    ///
    /// # Panics
    ///
    /// If `bytes_per_sec` is not a finite number greater than zero.
    pub fn new(inner: S, bytes_per_sec: f64) -> Throttled<S> {
        assert!(
            bytes_per_sec.is_finite() && bytes_per_sec > 0.0,
            "a link speed must be finite and greater than zero, not {bytes_per_sec}"
        );
        let burst = (DEFAULT_BURST_TIME.as_secs_f64() * bytes_per_sec).max(MIN_DEFAULT_BURST_BYTES);
        let writes = Arc::new(Pacer::new(bytes_per_sec, burst as u64));
        Throttled { inner, bytes_per_sec, writes, reads: None }
    }

    /// The link `adz compress --throttle` and the evaluation simulate: a writer that sends back
    /// to back only needs the link to absorb sleep jitter, so the burst is 0.5 ms of the link
    /// (at least 64 KiB). A larger one lets frames pass free after short idle gaps, and makes
    /// a link measured from the sink's back-pressure look faster than it is.
    pub fn simulated_link(inner: S, bytes_per_sec: f64) -> Throttled<S> {
        let burst = (bytes_per_sec * 0.0005).max(64.0 * 1024.0) as u64;
        Throttled::new(inner, bytes_per_sec).burst(burst)
    }

    /// Sets how many bytes the link may send at once after being idle (see the type's docs).
    pub fn burst(mut self, bytes: u64) -> Throttled<S> {
        self.writes = Arc::new(Pacer::new(self.bytes_per_sec, bytes));
        if self.reads.is_some() {
            self.reads = Some(Arc::new(Pacer::new(self.bytes_per_sec, bytes)));
        }
        self
    }

    /// Whether reads are paced too (default: no), on their own link of the same speed.
    pub fn throttle_reads(mut self, on: bool) -> Throttled<S> {
        self.reads = on.then(|| Arc::new(Pacer::new(self.bytes_per_sec, self.writes.burst_bytes)));
        self
    }

    /// The link's speed in bytes per second.
    pub fn bytes_per_sec(&self) -> f64 {
        self.bytes_per_sec
    }

    /// What went over the link for writes so far.
    pub fn link_stats(&self) -> LinkStats {
        self.writes.stats()
    }

    /// What went over the link for reads so far, if reads are throttled.
    pub fn read_link_stats(&self) -> Option<LinkStats> {
        self.reads.as_ref().map(|pacer| pacer.stats())
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Unwraps the store.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Pace an upload that did not come from this store (a pipe, say) through this link.
    pub fn wrap_upload(&self, inner: Box<dyn Upload>) -> Box<dyn Upload> {
        Box::new(ThrottledUpload { inner, pacer: Arc::clone(&self.writes) })
    }

    fn pace_read(&self, bytes: usize) {
        if let Some(pacer) = &self.reads {
            pacer.wait_until(pacer.reserve(bytes as u64));
        }
    }
}

impl<S: Storage> Storage for Throttled<S> {
    fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
        let inner = self.inner.create(name)?;
        Ok(Box::new(ThrottledUpload { inner, pacer: Arc::clone(&self.writes) }))
    }

    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        let deadline = self.writes.reserve(data.len() as u64);
        self.inner.put(name, data)?;
        self.writes.wait_until(deadline);
        Ok(())
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
        let bytes = self.inner.get_range(name, range)?;
        self.pace_read(bytes.len());
        Ok(bytes)
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        let bytes = self.inner.get(name)?;
        self.pace_read(bytes.len());
        Ok(bytes)
    }

    fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
        let tail = self.inner.get_tail(name, max_len)?;
        self.pace_read(tail.bytes.len());
        Ok(tail)
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

    fn list_with_delimiter(&self, prefix: &str) -> Result<crate::Listing> {
        self.inner.list_with_delimiter(prefix)
    }

    /// Charges the link nothing: the link is the one between this process and the store, and
    /// a copy happens inside the store (S3's `CopyObject` sends no byte of the object either
    /// way). The inner store's copy runs at its own speed.
    fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.inner.copy(from, to)
    }
}

#[derive(Debug)]
struct ThrottledUpload {
    inner: Box<dyn Upload>,
    pacer: Arc<Pacer>,
}

impl Upload for ThrottledUpload {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        // Book the link first and write while "sending", so that the inner store's own time
        // hides inside the link's instead of adding to it.
        let deadline = self.pacer.reserve(data.len() as u64);
        self.inner.append(data)?;
        self.pacer.wait_until(deadline);
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.inner.bytes_written()
    }

    fn commit(self: Box<Self>) -> Result<u64> {
        self.inner.commit()
    }

    fn abandon(self: Box<Self>) -> Result<Option<String>> {
        self.inner.abandon()
    }

    fn abort(self: Box<Self>) -> Result<()> {
        self.inner.abort()
    }
}

/// What went over a [`Throttled`] link.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct LinkStats {
    /// Bytes sent.
    pub bytes: u64,
    /// The time the link spent sending them: `bytes / bytes_per_sec`.
    pub busy: Duration,
    /// The time callers spent waiting for the link, summed over all threads.
    pub waited: Duration,
    /// How often the link went idle for longer than the burst and restarted its clock: each
    /// time, link time was lost because nobody had data ready.
    pub idle_restarts: u64,
}

/// One virtual link, shared by every thread that sends over it.
#[derive(Debug)]
struct Pacer {
    burst_bytes: u64,
    clock: Mutex<VirtualClock>,
    waited_nanos: AtomicU64,
}

impl Pacer {
    fn new(bytes_per_sec: f64, burst_bytes: u64) -> Pacer {
        Pacer {
            burst_bytes,
            clock: Mutex::new(VirtualClock::new(bytes_per_sec, burst_bytes)),
            waited_nanos: AtomicU64::new(0),
        }
    }

    /// Books `bytes` on the link and returns when they will have been sent.
    fn reserve(&self, bytes: u64) -> Instant {
        // The clock is a few numbers, always consistent between statements, so a panic
        // elsewhere while holding the lock leaves nothing to repair.
        let mut clock = self.clock.lock().unwrap_or_else(PoisonError::into_inner);
        clock.reserve(Instant::now(), bytes)
    }

    fn wait_until(&self, deadline: Instant) {
        let start = Instant::now();
        let mut now = start;
        while now < deadline {
            thread::sleep(deadline - now);
            now = Instant::now();
        }
        let waited = u64::try_from((now - start).as_nanos()).unwrap_or(u64::MAX);
        self.waited_nanos.fetch_add(waited, Ordering::Relaxed);
    }

    fn stats(&self) -> LinkStats {
        let clock = self.clock.lock().unwrap_or_else(PoisonError::into_inner);
        LinkStats {
            bytes: clock.total_bytes,
            busy: Duration::from_secs_f64(clock.total_bytes as f64 / clock.bytes_per_sec),
            waited: Duration::from_nanos(self.waited_nanos.load(Ordering::Relaxed)),
            idle_restarts: clock.idle_restarts,
        }
    }
}

/// The schedule of a link, as a pure function of the times it is asked at (so that tests can
/// drive it with made-up times).
///
/// The link has been busy without a break since `origin` and has been given
/// `sent_since_origin` bytes in that time, so it is free at
/// `origin + sent_since_origin / bytes_per_sec`. Computing that from the byte count, instead
/// of adding up per-transfer durations, keeps rounding from adding up over millions of small
/// transfers.
#[derive(Debug)]
struct VirtualClock {
    bytes_per_sec: f64,
    burst: Duration,
    /// `None` until the first transfer.
    origin: Option<Instant>,
    sent_since_origin: u64,
    total_bytes: u64,
    idle_restarts: u64,
}

impl VirtualClock {
    fn new(bytes_per_sec: f64, burst_bytes: u64) -> VirtualClock {
        VirtualClock {
            bytes_per_sec,
            burst: Duration::from_secs_f64(burst_bytes as f64 / bytes_per_sec),
            origin: None,
            sent_since_origin: 0,
            total_bytes: 0,
            idle_restarts: 0,
        }
    }

    fn free_at(&self, origin: Instant) -> Instant {
        origin + Duration::from_secs_f64(self.sent_since_origin as f64 / self.bytes_per_sec)
    }

    /// Books `bytes` at time `now` and returns when they will have been sent.
    fn reserve(&mut self, now: Instant, bytes: u64) -> Instant {
        // The link may catch up on at most `burst` of idle time.
        let earliest = now.checked_sub(self.burst).unwrap_or(now);
        match self.origin {
            Some(origin) if self.free_at(origin) >= earliest => {}
            Some(_) => {
                self.origin = Some(earliest);
                self.sent_since_origin = 0;
                self.idle_restarts += 1;
            }
            None => {
                self.origin = Some(now);
                self.sent_since_origin = 0;
            }
        }
        self.sent_since_origin += bytes;
        self.total_bytes += bytes;
        self.free_at(self.origin.expect("set above"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStorage, NullStorage};

    const MIB: u64 = 1024 * 1024;

    /// A deterministic stand-in for randomness (xorshift).
    struct Jitter(u64);

    impl Jitter {
        fn below(&mut self, max: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % max
        }
    }

    /// Drives a clock with a simulated writer that oversleeps every sleep by up to
    /// `max_oversleep`, and returns the achieved rate.
    fn simulate(bytes_per_sec: f64, total: u64, max_append: u64, max_oversleep: Duration) -> f64 {
        let burst = (DEFAULT_BURST_TIME.as_secs_f64() * bytes_per_sec).max(MIN_DEFAULT_BURST_BYTES);
        let mut clock = VirtualClock::new(bytes_per_sec, burst as u64);
        let mut jitter = Jitter(0x9E37_79B9_7F4A_7C15);
        let start = Instant::now();
        let mut now = start;
        let mut sent = 0;
        let mut end = now;
        while sent < total {
            let n = (1 + jitter.below(max_append)).min(total - sent);
            let deadline = clock.reserve(now, n);
            if deadline > now {
                now =
                    deadline + Duration::from_nanos(jitter.below(max_oversleep.as_nanos() as u64));
            }
            end = now; // when this append returns
                       // Preparing the next append takes up to half the time the link needs to send it.
            now +=
                Duration::from_nanos(jitter.below(1 + (n as f64 * 0.5e9 / bytes_per_sec) as u64));
            sent += n;
        }
        assert_eq!(clock.total_bytes, total);
        assert_eq!(clock.idle_restarts, 0, "a writer that keeps up never idles the link");
        total as f64 / (end - start).as_secs_f64()
    }

    #[test]
    fn sustained_rate_is_accurate_despite_oversleeping() {
        for bytes_per_sec in [10e6, 117e6, 1200e6, 6000e6, 20e9] {
            for max_append in [64 * 1024, MIB] {
                // Two (simulated) seconds, sleeps up to 2 ms late: a busy CI machine.
                let total = (2.0 * bytes_per_sec) as u64;
                let achieved = simulate(bytes_per_sec, total, max_append, Duration::from_millis(2));
                let error = achieved / bytes_per_sec - 1.0;
                assert!(
                    error.abs() < 0.005,
                    "{bytes_per_sec} B/s in appends up to {max_append} B: achieved {achieved}, \
                     error {:.3} %",
                    error * 100.0
                );
            }
        }
    }

    #[test]
    fn a_new_link_has_no_credit() {
        let mut clock = VirtualClock::new(100e6, MIB);
        let t0 = Instant::now();
        assert_eq!(clock.reserve(t0, 10_000_000), t0 + Duration::from_millis(100));
        // Queued behind the first transfer.
        assert_eq!(clock.reserve(t0, 1_000_000), t0 + Duration::from_millis(110));
    }

    #[test]
    fn an_idle_link_allows_one_burst() {
        let mut clock = VirtualClock::new(100e6, 1_000_000); // burst: 10 ms
        let t0 = Instant::now();
        clock.reserve(t0, 1_000_000); // free at t0 + 10 ms
        let t1 = t0 + Duration::from_secs(1);
        // Idle for much longer than the burst: one burst's worth goes at once ...
        assert_eq!(clock.reserve(t1, 1_000_000), t1);
        assert_eq!(clock.idle_restarts, 1);
        // ... and the next bytes wait for the link.
        assert_eq!(clock.reserve(t1, 500_000), t1 + Duration::from_millis(5));

        // Late by less than the burst: the schedule continues where it was.
        let t2 = t1 + Duration::from_millis(8);
        assert_eq!(clock.reserve(t2, 500_000), t1 + Duration::from_millis(10));
        assert_eq!(clock.idle_restarts, 1);
    }

    #[test]
    fn rounding_does_not_add_up_over_tiny_transfers() {
        // 3 bytes at 6 GB/s is 0.5 ns: summing rounded durations would be 0 % or 100 % off.
        let mut clock = VirtualClock::new(6e9, MIB);
        let t0 = Instant::now();
        let mut deadline = t0;
        for _ in 0..1_000_000 {
            deadline = clock.reserve(t0, 3);
        }
        let error = (deadline - t0).abs_diff(Duration::from_micros(500));
        assert!(error <= Duration::from_nanos(1), "{:?}", deadline - t0);
    }

    #[test]
    fn writes_take_at_least_the_link_time() {
        // One-sided wall-clock bounds only: a loaded machine may be slower, never faster.
        let link = Throttled::new(NullStorage::new(), 200e6);
        let start = Instant::now();
        let mut upload = link.create("a").unwrap();
        for _ in 0..20 {
            upload.append(&[0; 500_000]).unwrap();
        }
        assert_eq!(upload.commit().unwrap(), 10_000_000);
        assert!(start.elapsed() >= Duration::from_secs_f64(0.05 * 0.98), "{:?}", start.elapsed());
        let stats = link.link_stats();
        assert_eq!(stats.bytes, 10_000_000);
        assert_eq!(stats.busy, Duration::from_millis(50));
        assert!(stats.waited > Duration::ZERO);
        assert_eq!(link.read_link_stats(), None);
    }

    #[test]
    fn a_copy_charges_the_link_nothing() {
        let store = crate::MemoryStorage::new();
        store.put("a", &vec![7; 4_000_000]).unwrap();
        // 4 MB through a 1 MB/s link would take 4 s, and the reads another 4.
        let link = Throttled::new(store.clone(), 1e6).throttle_reads(true);
        let start = Instant::now();
        link.copy("a", "b").unwrap();
        assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
        assert_eq!(link.link_stats().bytes, 0);
        assert_eq!(link.read_link_stats().unwrap().bytes, 0);
        assert_eq!(store.get("b").unwrap().len(), 4_000_000);
    }

    #[test]
    fn threads_share_one_link() {
        let link = Throttled::new(NullStorage::new(), 400e6);
        let start = Instant::now();
        thread::scope(|s| {
            for t in 0..4 {
                let link = &link;
                s.spawn(move || {
                    let mut upload = link.create(&format!("t{t}")).unwrap();
                    for _ in 0..10 {
                        upload.append(&[0; 250_000]).unwrap();
                    }
                    upload.commit().unwrap();
                });
            }
        });
        // 4 x 2.5 MB at 400 MB/s: 25 ms, not the 6.25 ms each thread's share would take alone.
        assert!(start.elapsed() >= Duration::from_secs_f64(0.025 * 0.98), "{:?}", start.elapsed());
        assert_eq!(link.link_stats().bytes, 10_000_000);
    }

    #[test]
    fn reads_are_free_unless_throttled() {
        let store = MemoryStorage::new();
        store.put("a", &[1; 1_000_000]).unwrap();

        let link = Throttled::new(store.clone(), 1e6).burst(0);
        assert_eq!(link.get_range("a", 0..1_000_000).unwrap().len(), 1_000_000);
        assert_eq!(link.link_stats().bytes, 0);

        let link = Throttled::new(store, 100e6).burst(0).throttle_reads(true);
        let start = Instant::now();
        assert_eq!(link.get_range("a", 0..500_000).unwrap().len(), 500_000);
        assert_eq!(link.get("a").unwrap().len(), 1_000_000);
        assert_eq!(link.get_tail("a", 100).unwrap().bytes.len(), 100);
        assert!(start.elapsed() >= Duration::from_millis(15));
        assert_eq!(link.read_link_stats().unwrap().bytes, 1_500_100);
        assert_eq!(link.link_stats().bytes, 0);
    }

    #[test]
    #[should_panic(expected = "greater than zero")]
    fn zero_speed_is_refused() {
        Throttled::new(NullStorage::new(), 0.0);
    }
}
