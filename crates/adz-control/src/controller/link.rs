//! The link as the sink's writes show it: its drain rate, seen through the sink's buffers, with
//! the uncertainty of that figure (docs/decisions/0033).
//!
//! A sink is a buffer of unknown size (a pipe's 64 KiB, TCP's megabytes, S3 parts in flight, a
//! throttle's burst) that the link drains at its rate, also while the writer waits. A write
//! that blocked ended with the buffer full. Between two writes that blocked, the bytes accepted
//! are the bytes the link sent: exactly `rate x elapsed` when the writer never waited in between
//! (the buffer never ran dry), at most that when it did (the link may have idled). The rate is
//! the larger of the two kinds' figures (the steady one and the contiguous one over all
//! segments). Writes before the first block are the buffer filling and measure only memory.

use std::time::Duration;

use super::Controller;
use crate::model::LinkEstimator;

/// A write counts as blocked when it took longer than its bytes at this speed, bytes/s, and at
/// least [`BLOCKED_MIN_SECS`]: slower than a copy into a buffer with room, which on a busy
/// 2-core machine took up to 0.9 ms for 1 MiB into a pipe read by `pv`. Links this fast never
/// block measurably; their estimate stays the accept rate of the backlogged writes.
pub(super) const BLOCKED_SPEED: f64 = 1e9;
/// See [`BLOCKED_SPEED`]: a small frame's write costs a system call or two, whatever its bytes.
pub(super) const BLOCKED_MIN_SECS: f64 = 1e-3;

/// The sink must take this many bytes (8 MiB) without blocking before its accept rate counts
/// as the link's speed: a buffer in front of the link (a pipe's 64 KiB, TCP's few MB) takes
/// less than that at memory speed ...
pub(super) const TRUST_BYTES: f64 = 8.0 * 1024.0 * 1024.0;
/// ... and at least this long at the accept rate (20 ms): a token bucket's burst (the
/// throttle's is 10 ms of its rate) is a time at the link's speed, so it holds more bytes
/// the faster the link. Until the sink has blocked twice or taken both, the link is unknown
/// and the adaptive strategies hold their start.
pub(super) const TRUST_SECS: f64 = 0.02;

/// The estimate is settled once its relative standard error is at most this (a 95 %
/// interval of about ±5 %) ...
pub(super) const SETTLED_ERROR: f64 = 0.025;
/// ... over at least this many segments between blocked writes.
pub(super) const SETTLED_SEGMENTS: f64 = 4.0;
/// A link faster than [`BLOCKED_SPEED`] never blocks a write measurably, but a sink kept busy
/// shows it all the same: backlogged writes one after the other, beyond what a buffer takes
/// ([`TRUST_BYTES`], [`TRUST_SECS`]), went at the sink's sustained rate. Such a run counts as a
/// segment once it has this many bytes (4 MiB).
pub(super) const RUN_BYTES: f64 = 4.0 * 1024.0 * 1024.0;
/// The least relative error claimed: the sink's clock and a frame's bytes do not tell the
/// link to better than this, however regular the writes (as in a simulator).
pub(super) const MIN_ERROR: f64 = 0.002;

/// The link speed the sink measured, and how sure it is (for [`Status`](crate::Status), the
/// trace and the summary).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LinkEstimate {
    /// The link speed in use with `Link::Auto`, bytes/s: the drain rate between blocked writes
    /// once the sink has blocked twice; before that, the accept rate of the backlogged writes,
    /// which a buffer inflates.
    pub rate: f64,
    /// The link is at least this fast, bytes/s (0: the sink has not blocked twice yet).
    pub low: f64,
    /// The link is at most this fast, bytes/s (infinite: nothing bounds it yet).
    pub high: f64,
    /// `rate` is a drain rate with a relative standard error of at most 2.5 %: `low..high`
    /// is then its 95 % interval. False while only the buffer's accept rate is known.
    pub settled: bool,
}

/// Fading sums over segments between blocked writes: bytes `b`, seconds `t`, their squares and
/// product (for the ratio's standard error), and the number of segments; each fades by half
/// every `halflife` bytes, like the accept estimate.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    b: f64,
    t: f64,
    bb: f64,
    bt: f64,
    tt: f64,
    n: f64,
}

impl Sums {
    fn add(&mut self, b: f64, t: f64, halflife: f64) {
        let keep = 0.5f64.powf(b / halflife);
        *self = Sums {
            b: self.b * keep + b,
            t: self.t * keep + t,
            bb: self.bb * keep + b * b,
            bt: self.bt * keep + b * t,
            tt: self.tt * keep + t * t,
            n: self.n * keep + 1.0,
        };
    }

    fn rate(&self) -> Option<f64> {
        let r = self.b / self.t;
        (self.t > 0.0 && r.is_finite() && r > 0.0).then_some(r)
    }

    /// Relative standard error of `b / t` as a ratio estimator over the segments (infinite
    /// with fewer than two).
    fn rel_error(&self, r: f64) -> f64 {
        if self.n < 2.0 {
            return f64::INFINITY;
        }
        let resid = (self.bb - 2.0 * r * self.bt + r * r * self.tt).max(0.0);
        ((resid * self.n / (self.n - 1.0)).sqrt() / (self.t * r)).max(MIN_ERROR)
    }
}

/// The sink's writes since the last one that blocked.
#[derive(Clone, Copy, Debug, Default)]
struct Open {
    bytes: f64,
    secs: f64,
    /// Some write in it was not backlogged: the writer waited, and the link may have idled.
    waited: bool,
}

/// The link meter: the drain rate between blocked writes, with the accept rate of backlogged
/// writes (decision 0015) as the estimate until the sink has blocked under pressure.
#[derive(Clone, Debug)]
pub(super) struct LinkMeter {
    accept: LinkEstimator,
    halflife: f64,
    open: Option<Open>,
    /// Segments without a wait: each is `rate x seconds` while the link drains steadily.
    drain: Sums,
    /// Every segment: together they span the time since the first block without a gap, so
    /// their ratio is at most the link, and the link itself unless it idled in a wait. A
    /// reader that drains in bursts (`pv -L` takes 0.1 s of its rate at once, then sleeps)
    /// makes the segments without a wait a biased choice (those inside a burst); this sum is
    /// not.
    all: Sums,
    /// Bytes the sink has taken.
    accepted: f64,
    /// The sink's own network transfers (an S3 upload's parts: bytes over the link's time on
    /// them), once it said it measures them: a lower bound of the link, whatever the sink
    /// buffers, that raises the figures above where they fall short.
    transfers: Option<Sums>,
    /// Backlogged writes since the last wait or block, none of which blocked.
    run: Open,
    /// Runs of [`RUN_BYTES`] past the buffer: the sink's sustained rate where it never blocks.
    runs: Sums,
}

impl LinkMeter {
    pub(super) fn new(halflife_bytes: f64) -> LinkMeter {
        LinkMeter {
            accept: LinkEstimator::new(halflife_bytes),
            halflife: halflife_bytes.max(1.0),
            open: None,
            drain: Sums::default(),
            all: Sums::default(),
            accepted: 0.0,
            transfers: None,
            run: Open::default(),
            runs: Sums::default(),
        }
    }

    /// Transfers the sink measured: `(bytes, the link's time on them)`.
    pub(super) fn add_transfers(&mut self, parts: &[(u64, Duration)]) {
        let sums = self.transfers.get_or_insert_with(Sums::default);
        for &(bytes, secs) in parts {
            let t = secs.as_secs_f64();
            if bytes > 0 && t > 0.0 {
                sums.add(bytes as f64, t, self.halflife);
            }
        }
    }

    /// A write that did not block: backlogged ones extend the run, which becomes a segment of
    /// `runs` at [`RUN_BYTES`] once the sink has taken more than a buffer would; a write after a
    /// wait lands in room the link drained meanwhile, and starts the run afresh.
    fn add_to_run(&mut self, b: f64, busy: f64, backlogged: bool) {
        if !backlogged {
            self.run = Open::default();
            return;
        }
        self.run.bytes += b;
        self.run.secs += busy;
        if self.run.bytes >= RUN_BYTES && self.accepted >= self.buffer() && self.run.secs > 0.0 {
            self.runs.add(self.run.bytes, self.run.secs, self.halflife);
            self.run = Open::default();
        }
    }

    /// The most a buffer in front of the link is taken to hold, bytes.
    fn buffer(&self) -> f64 {
        TRUST_BYTES.max(TRUST_SECS * self.accept.get().unwrap_or(f64::INFINITY))
    }

    /// The sustained rate of the runs, once settled (see [`RUN_BYTES`]).
    fn sustained(&self) -> Option<(f64, f64)> {
        let r = self.runs.rate()?;
        let e = self.runs.rel_error(r);
        (self.runs.n >= SETTLED_SEGMENTS && e <= SETTLED_ERROR).then_some((r, e))
    }

    /// The transfers' sums once there are some; None while the sink measures none.
    fn transferred(&self) -> Option<&Sums> {
        self.transfers.as_ref().filter(|s| s.n > 0.0)
    }

    /// A sink write of `bytes` that took `busy` seconds after a wait of `waited`;
    /// `backlogged`: the frame was ready when the previous write ended.
    pub(super) fn add(&mut self, bytes: u64, busy: f64, waited: f64, backlogged: bool) {
        self.accept.add(bytes, busy, backlogged);
        let b = bytes as f64;
        self.accepted += b;
        let busy = if busy.is_finite() { busy.max(0.0) } else { 0.0 };
        let waited = if waited.is_finite() { waited.max(0.0) } else { 0.0 };
        if let Some(open) = &mut self.open {
            open.bytes += b;
            open.secs += busy + waited;
            open.waited |= !backlogged;
        }
        if !(bytes > 0 && busy * BLOCKED_SPEED >= b && busy >= BLOCKED_MIN_SECS) {
            self.add_to_run(b, busy, backlogged);
            return;
        }
        self.run = Open::default();
        // Blocked: the buffer is full now. The writes since the last block drained through the
        // link in the time they took.
        if let Some(seg) = self.open.take().filter(|s| s.secs > 0.0) {
            if !seg.waited {
                self.drain.add(seg.bytes, seg.secs, self.halflife);
            }
            self.all.add(seg.bytes, seg.secs, self.halflife);
        }
        self.open = Some(Open::default());
    }

    /// The link speed in use with `Link::Auto` (None before any write measured it): the
    /// writes' figure, or, with a sink that times its transfers, theirs (the writes' only
    /// until the first transfer, and untrusted: see [`LinkMeter::trusted`]).
    pub(super) fn get(&self) -> Option<f64> {
        if self.transfers.is_some() {
            return self.transfer_rate().or_else(|| self.writes_rate());
        }
        self.writes_rate()
    }

    /// The link speed in use for a strategy that paces itself below the link (S2, S3): as
    /// [`get`](LinkMeter::get), but while every segment between blocked writes spans a wait
    /// of the writer, never below the accept rate. A strategy that compresses more than the
    /// link needs writes slower than the link takes and its writes wait for its frames; the
    /// drain rate of such segments is the writer's own pace, a lower bound of the link. Aimed
    /// at as the link, it sent S2 to slower rungs, whose output read slower still (the source
    /// tar through 1200 MB/s: 0.23-1.14 s, docs/benchmarks/2026-11-28-real-strategies). The
    /// accept rate (the time inside the write calls) leaves the waits out; a buffer can make
    /// it read fast, which only makes S2 and S3 end early. Once a segment without a wait has
    /// measured the link, the drain rate stands.
    pub(super) fn get_paced(&self) -> Option<f64> {
        let rate = self.get()?;
        if self.transfers.is_some() || self.drain.rate().is_some() {
            return Some(rate);
        }
        Some(self.accept.get().map_or(rate, |a| rate.max(a)))
    }

    /// What the writes say: the drain rate, else the sustained runs' rate, else the accept
    /// rate.
    fn writes_rate(&self) -> Option<f64> {
        let sustained = || self.sustained().map(|(r, _)| r);
        self.drained_rate().map(|(r, _)| r).or_else(sustained).or_else(|| self.accept.get())
    }

    /// The transfers' rate: with a sink that times them, the link (decision 0057). A lone
    /// transfer also carries its request's fixed cost, so it reads somewhat low (decision
    /// 0048); the writes of such a sink read far higher: they fill part buffers, and block on
    /// the upload's own requests (its start, a part's answer), not on the link.
    fn transfer_rate(&self) -> Option<f64> {
        self.transferred().and_then(Sums::rate)
    }

    /// The drain rate and the sums it comes from: the larger of the steady figure (segments
    /// without a wait) and the contiguous one (all segments). Each is a lower bound where the
    /// other falls short: the contiguous one where the link idles in the writer's waits (the
    /// throttle, and any sink while compression sets the pace), the steady one where a reader
    /// drains in bursts. Erring low would hold S1 where it is (at `L = N S / f` its rung looks
    /// balanced) and keep the sink from ever pressing again; erring high makes S1 press the
    /// sink, which measures it (None before two blocked writes).
    fn drained_rate(&self) -> Option<(f64, &Sums)> {
        match (self.drain.rate(), self.all.rate()) {
            (Some(d), Some(a)) if d >= a => Some((d, &self.drain)),
            (_, Some(a)) => Some((a, &self.all)),
            (Some(d), None) => Some((d, &self.drain)),
            (None, None) => None,
        }
    }

    /// Whether the link speed in use says what the link does: a drain rate, a transfer, the
    /// accept rate of backlogged writes slower than [`BLOCKED_SPEED`], or an accept rate over
    /// more bytes than a buffer in front of the link would take ([`TRUST_BYTES`],
    /// [`TRUST_SECS`]).
    pub(super) fn trusted(&self) -> bool {
        let buffer = self.buffer();
        // Backlogged writes slower than a copy into a buffer with room: the link paces them,
        // although none lasted long enough to count as blocked (links above 1 GB/s).
        let paced = self.accept.backlogged().is_some_and(|r| r < BLOCKED_SPEED);
        let transferred = self.transferred().is_some();
        if self.transfers.is_some() {
            return transferred;
        }
        self.all.n > 0.0 || transferred || paced || self.accepted >= buffer
    }

    /// Whether the link speed in use is a drain rate (the sink has blocked under pressure) or
    /// the transfers' rate, and the accept rate of the backlogged writes it replaced (None:
    /// none was measured).
    pub(super) fn drained(&self) -> (bool, Option<f64>) {
        let drained =
            if self.transfers.is_some() { self.transferred().is_some() } else { self.all.n > 0.0 };
        (drained, self.accept.get())
    }

    /// The estimate with its bounds (None before any write measured the link).
    pub(super) fn estimate(&self) -> Option<LinkEstimate> {
        if let (Some(t), Some(x)) = (self.transfer_rate(), self.transferred()) {
            return Some(Self::bounded(t, x));
        }
        let Some((rate, sums)) = self.drained_rate() else {
            if let Some((rate, e)) = self.sustained() {
                let (low, high) = (rate * (1.0 - 2.0 * e), rate * (1.0 + 2.0 * e));
                return Some(LinkEstimate { rate, low, high, settled: true });
            }
            let rate = self.accept.get()?;
            return Some(LinkEstimate { rate, low: 0.0, high: f64::INFINITY, settled: false });
        };
        Some(Self::bounded(rate, sums))
    }

    /// `rate` from `sums`, with its 95 % interval and whether it is settled.
    fn bounded(rate: f64, sums: &Sums) -> LinkEstimate {
        let e = sums.rel_error(rate);
        let settled = sums.n >= SETTLED_SEGMENTS && e <= SETTLED_ERROR;
        let low = (rate * (1.0 - 2.0 * e)).max(0.0);
        let high = if e.is_finite() { rate * (1.0 + 2.0 * e) } else { f64::INFINITY };
        LinkEstimate { rate, low, high, settled }
    }
}

impl Controller {
    /// Network transfers the sink measured since its last write (an S3 upload's parts):
    /// `(bytes, the link's time on them)`, the time a part's request took divided by the parts
    /// in flight meanwhile. With `Link::Auto` their rate is the link in use where it is larger
    /// than what the sink's write times say (a writer slower than the link never blocks on
    /// its part buffer, and its stalls read as a slow link); see decision 0048.
    pub fn record_transfers(&mut self, parts: &[(u64, Duration)]) {
        self.link.add_transfers(parts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: f64 = 117e6;

    /// A reader that takes `chunk` bytes from a `cap`-byte buffer every `chunk / L` seconds
    /// (as `pv -L` reads a pipe), and a writer of `frame`-byte writes that pauses `pause`
    /// seconds before every `every`-th write: the meter's readings, write by write.
    fn chunked(cap: f64, chunk: f64, frame: f64, writes: usize, pause: (usize, f64)) -> LinkMeter {
        let mut m = LinkMeter::new(32.0 * 1048576.0);
        let (mut now, mut level, mut next_read) = (0.0f64, 0.0f64, chunk / L);
        // Reads due by `t` empty the buffer a chunk at a time.
        let drain = |level: &mut f64, next_read: &mut f64, t: f64| {
            while *next_read <= t {
                *level = (*level - chunk).max(0.0);
                *next_read += chunk / L;
            }
        };
        for k in 0..writes {
            let waited = if pause.0 > 0 && k % pause.0 == 0 { pause.1 } else { 0.0 };
            now += waited;
            drain(&mut level, &mut next_read, now);
            let start = now;
            let mut left = frame;
            loop {
                let room = (cap - level).min(left);
                level += room;
                left -= room;
                now += room / 8e9;
                if left <= 0.0 {
                    break;
                }
                now = now.max(next_read);
                drain(&mut level, &mut next_read, now);
            }
            m.add(frame as u64, now - start, waited, waited == 0.0);
        }
        m
    }

    #[test]
    fn a_writer_slower_than_the_link_is_not_taken_for_the_link_when_pacing() {
        // 1 MiB frames, each written in 1.2 ms (blocked: a fast link, 874 MB/s in the call),
        // each after the writer waited 3 ms for it (it compresses at 250 MB/s).
        let mut m = LinkMeter::new(32.0 * 1048576.0);
        let (frame, busy, wait) = (1048576.0, 1.2e-3, 3e-3);
        for _ in 0..64 {
            m.add(frame as u64, busy, wait, false);
        }
        let own_pace = frame / (busy + wait);
        // Every segment spans a wait: the drain rate is the writer's pace, a lower bound.
        let rate = m.get().unwrap();
        assert!((rate / own_pace - 1.0).abs() < 0.01, "{rate} vs the writer's {own_pace}");
        // A strategy pacing itself below the link does not aim at its own pace.
        let paced = m.get_paced().unwrap();
        assert!((paced / (frame / busy) - 1.0).abs() < 0.01, "{paced}");
        // Where the link has been the bottleneck (a segment without a wait), the drain rate
        // stands, although a buffer makes the accept rate read faster.
        let m = chunked(4.0 * 1048576.0, 65536.0, 3e5, 600, (4, 5e-3));
        let (rate, paced) = (m.get().unwrap(), m.get_paced().unwrap());
        assert!(m.accept.get().unwrap() > 1.2 * L);
        assert_eq!(rate, paced);
        assert!((paced / L - 1.0).abs() < 0.02, "{paced}");
    }

    #[test]
    fn a_pipe_read_in_chunks_measures_the_reader_not_the_buffer() {
        // 1 MiB of buffer read 256 KiB at a time; 300 kB frames, back to back.
        let m = chunked(1048576.0, 262144.0, 3e5, 400, (0, 0.0));
        let e = m.estimate().unwrap();
        assert!((e.rate / L - 1.0).abs() < 0.02, "{e:?}");
        assert!(e.settled && e.low <= L && L <= e.high, "{e:?}");
    }

    #[test]
    fn waits_shorter_than_the_buffer_still_measure_the_link() {
        // The writer pauses 5 ms before every 4th write: the 4 MiB buffer hides it, the link
        // never idles.
        let m = chunked(4.0 * 1048576.0, 65536.0, 3e5, 600, (4, 5e-3));
        let e = m.estimate().unwrap();
        assert!((e.rate / L - 1.0).abs() < 0.02, "{e:?}");
        assert!(e.low > 0.9 * L && e.low <= L * 1.001, "{e:?}");
        // The accept rate of the same writes, what the link estimate was before decision 0033:
        // the writes after a pause land in the room the link drained meanwhile.
        assert!(m.accept.get().unwrap() > 1.2 * L, "{:?}", m.accept.get());
    }

    #[test]
    fn a_sink_that_times_its_transfers_is_measured_by_them_alone() {
        // An S3 upload: its writes fill part buffers (several parts in flight) and block on
        // its requests (starting the upload, waiting for a part), so neither their accept
        // rate nor their "drain" says what the link does; its parts went at L.
        let mut m = LinkMeter::new(32.0 * 1048576.0);
        m.add_transfers(&[]);
        for _ in 0..48 {
            m.add(1 << 20, 1048576.0 / (5.0 * L), 0.0, true);
        }
        // Blocked writes at 5 L, and more bytes than any buffer: still unknown.
        assert!(m.all.n > 0.0 && !m.trusted() && !m.drained().0);
        let part = (8u64 << 20, Duration::from_secs_f64(8.0 * 1048576.0 / L));
        m.add_transfers(&[part; 6]);
        assert!(m.trusted() && m.drained().0);
        let e = m.estimate().unwrap();
        assert!((e.rate / L - 1.0).abs() < 1e-6 && e.settled, "{e:?}");
        assert_eq!(m.get(), Some(e.rate));
        for _ in 0..12 {
            m.add(8 << 20, 8.0 * 1048576.0 / (2.0 * L), 0.0, true);
        }
        assert!((m.get().unwrap() / L - 1.0).abs() < 1e-6, "{:?}", m.get());
    }

    #[test]
    fn before_the_sink_blocks_only_the_accept_rate_is_known() {
        let mut m = LinkMeter::new(32.0 * 1048576.0);
        assert_eq!(m.estimate(), None);
        for _ in 0..8 {
            m.add(300_000, 300_000.0 / 8e9, 0.0, true);
        }
        let e = m.estimate().unwrap();
        assert!(!e.settled && e.low == 0.0 && e.high.is_infinite(), "{e:?}");
        assert_eq!(m.get(), Some(e.rate));
        // One block is not a drain rate yet: it needs a block, then writes up to the next.
        m.add(300_000, 300_000.0 / L, 0.0, true);
        assert!(!m.drained().0);
        m.add(300_000, 300_000.0 / L, 0.0, true);
        assert!(m.drained().0);
        assert!((m.get().unwrap() / L - 1.0).abs() < 1e-9);
    }
}
