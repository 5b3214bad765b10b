//! The writer's buffer pools and their size: a module of its own, which imports nothing of
//! the crate, so that both the pipeline and the predictor's write model
//! (`predict/estimate.rs`) can use [`default_buffers`] without importing each other.

use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam::channel::{bounded, Receiver, Sender};

/// Buffers in each pool when `WriteOptions::buffers` is 0: 2 x threads + 2 (the thesis'
/// minimum is 2 x threads). The predictor reckons a write with as many frames in flight.
pub(crate) fn default_buffers(threads: usize) -> usize {
    2 * threads + 2
}

/// Buffers the sequencer adds to each pool while an adaptive strategy mixes raw blocks with a
/// minority of compressed ones, for the raw frames finished behind a slow compressed one
/// (`docs/decisions/0014-buffers-during-a-mix.md`).
pub(crate) const MIX_BUFFERS: usize = 4;

/// Frames written outside a mix before the sequencer takes [`MIX_BUFFERS`] back: a mix that
/// pauses for a probe or a short run of raw blocks keeps them.
const MIX_QUIET_FRAMES: u32 = 16;

/// A pool of reusable buffers: a bounded channel with room for its base number of buffers
/// plus `room` ([`MIX_BUFFERS`] where the pool may grow, else 0). Buffers come back through
/// [`Pool::give`], which drops them instead while the pool is shrinking, or when the channel
/// is full (a buffer made outside the pool).
pub(crate) struct Pool {
    tx: Sender<Vec<u8>>,
    /// Where buffers are taken from.
    pub(crate) rx: Receiver<Vec<u8>>,
    /// Buffers to drop as they come back (the pool is above its size).
    surplus: AtomicUsize,
}

impl Pool {
    pub(crate) fn new(buffers: usize, room: usize) -> Pool {
        let (tx, rx) = bounded::<Vec<u8>>(buffers + room);
        for _ in 0..buffers {
            // Buffers grow to their working size on first use.
            tx.send(Vec::new()).expect("pool has room");
        }
        Pool { tx, rx, surplus: AtomicUsize::new(0) }
    }

    /// Give a buffer back (or drop it while the pool shrinks).
    pub(crate) fn give(&self, buf: Vec<u8>) {
        let dropped =
            self.surplus.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if dropped.is_err() {
            let _ = self.tx.try_send(buf);
        }
    }

    /// Add `n` buffers: first by cancelling drops not made yet, then new (empty) ones.
    pub(crate) fn grow(&self, n: usize) {
        for _ in 0..n {
            let cancelled = self
                .surplus
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| s.checked_sub(1));
            if cancelled.is_err() {
                let _ = self.tx.try_send(Vec::new());
            }
        }
    }

    /// Take `n` buffers back as they return.
    pub(crate) fn shrink(&self, n: usize) {
        self.surplus.fetch_add(n, Ordering::Relaxed);
    }
}

/// The sequencer's part in sizing the pools: [`MIX_BUFFERS`] more while the controller mixes.
pub(crate) struct MixBuffers {
    enabled: bool,
    added: bool,
    quiet: u32,
}

impl MixBuffers {
    /// Sizes the pools during mixes if `enabled` (a given number of buffers is kept as given).
    pub(crate) fn new(enabled: bool) -> MixBuffers {
        MixBuffers { enabled, added: false, quiet: 0 }
    }

    /// After each frame written: `mixing` is whether the controller of that frame's data class
    /// mixes raw blocks with a minority of compressed ones (`Control::compresses_in_mix_of`).
    pub(crate) fn update(&mut self, pools: [&Pool; 2], mixing: bool) {
        if !self.enabled {
            return;
        }
        if mixing {
            self.quiet = 0;
            if !self.added {
                self.added = true;
                pools.iter().for_each(|p| p.grow(MIX_BUFFERS));
            }
        } else if self.added {
            self.quiet += 1;
            if self.quiet >= MIX_QUIET_FRAMES {
                self.added = false;
                pools.iter().for_each(|p| p.shrink(MIX_BUFFERS));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Take every buffer the pool holds now (without waiting).
    fn drain(p: &Pool) -> Vec<Vec<u8>> {
        std::iter::from_fn(|| p.rx.try_recv().ok()).collect()
    }

    #[test]
    fn a_pool_grows_by_new_buffers_and_shrinks_as_they_come_back() {
        let p = Pool::new(6, MIX_BUFFERS);
        p.grow(MIX_BUFFERS);
        let all = drain(&p);
        assert_eq!(all.len(), 6 + MIX_BUFFERS);
        p.shrink(MIX_BUFFERS);
        for b in all {
            p.give(b);
        }
        assert_eq!(drain(&p).len(), 6, "the added buffers are dropped as they come back");
        assert_eq!(p.surplus.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_buffer_made_outside_the_pool_does_not_grow_it() {
        for room in [0, MIX_BUFFERS] {
            let p = Pool::new(2, room);
            let mut out = drain(&p);
            // As write_async does when the pool is empty.
            p.shrink(1);
            out.push(Vec::new());
            out.into_iter().for_each(|b| p.give(b));
            assert_eq!(drain(&p).len(), 2, "room {room}");
        }
        let p = Pool::new(2, 0);
        p.grow(MIX_BUFFERS);
        assert_eq!(drain(&p).len(), 2, "a pool without room does not grow");
    }

    #[test]
    fn growing_again_before_the_buffers_came_back_cancels_their_drop() {
        let p = Pool::new(2, MIX_BUFFERS);
        p.grow(MIX_BUFFERS);
        let out = drain(&p);
        p.shrink(MIX_BUFFERS);
        p.grow(MIX_BUFFERS);
        assert!(drain(&p).is_empty(), "no new buffers while the old ones are out");
        for b in out {
            p.give(b);
        }
        assert_eq!(drain(&p).len(), 2 + MIX_BUFFERS, "none dropped, none made twice");
    }

    #[test]
    fn the_pools_grow_with_a_mix_and_shrink_after_it_has_been_quiet() {
        let (raw, frames) = (Pool::new(6, MIX_BUFFERS), Pool::new(6, MIX_BUFFERS));
        // Cycle every buffer through `give` once (the drops due happen), then count.
        let count = |p: &Pool| {
            drain(p).into_iter().for_each(|b| p.give(b));
            let b = drain(p);
            let n = b.len();
            b.into_iter().for_each(|b| p.give(b));
            n
        };
        let mut m = MixBuffers::new(true);
        m.update([&raw, &frames], false);
        assert_eq!((count(&raw), count(&frames)), (6, 6), "no mix, no growth");
        m.update([&raw, &frames], true);
        m.update([&raw, &frames], true);
        assert_eq!((count(&raw), count(&frames)), (10, 10), "grown once, not per frame");
        for _ in 1..MIX_QUIET_FRAMES {
            m.update([&raw, &frames], false);
        }
        m.update([&raw, &frames], true);
        for _ in 1..MIX_QUIET_FRAMES {
            m.update([&raw, &frames], false);
        }
        assert_eq!(count(&raw), 10, "a pause shorter than MIX_QUIET_FRAMES keeps them");
        m.update([&raw, &frames], false);
        assert_eq!((count(&raw), count(&frames)), (6, 6), "taken back after a quiet run");

        let mut off = MixBuffers::new(false);
        off.update([&raw, &frames], true);
        assert_eq!(count(&raw), 6, "a given number of buffers stays");
    }
}
