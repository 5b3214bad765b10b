//! Taking the planned slices: each read with the bytes around it, timed as the writer moves
//! a block, kept within its class's bytes around its probe, and overlaps merged.

use std::borrow::Cow;
use std::time::Instant;

use adz_control::classify;
use adz_format::xxh3;

use super::probe::Look;
use super::{Feed, PlannedSlice, SampleConfig, PLACE_WINDOW, PROBE_LEN};
use crate::Result;

/// A slice taken: `(offset, bytes, weight, class)`.
type Placed = (u64, Vec<u8>, f64, Option<u8>);

/// A sample's slices, weights and classes (see [`Sample`](super::Sample)).
type Merged = (Vec<(u64, Vec<u8>)>, Vec<f64>, Vec<u8>);

impl SampleConfig {
    /// Where to read for a planned slice: the slice itself, or for a slice of a class the
    /// bytes around its probe that `SampleConfig::place` chooses from (`len` on either
    /// side).
    pub(super) fn region(&self, slice: &PlannedSlice, source_len: u64) -> (u64, usize) {
        match slice.class {
            None => (slice.offset, slice.len),
            Some(_) => {
                let start = slice.offset.saturating_sub(slice.len as u64);
                let end = (slice.offset + (PROBE_LEN + slice.len) as u64).min(source_len);
                (start, end.saturating_sub(start) as usize)
            }
        }
    }

    /// The slice to take from `region` (the bytes at `region_start` that
    /// `SampleConfig::region` named), as `(offset, len)` in the source and the bytes
    /// classified to find it: the planned slice
    /// if it has no class; else the run of its class around its probe, grown from the probe
    /// a `PLACE_WINDOW` at a time while the window is of the class, half the slice on
    /// either side, then the rest on the side with room (the whole run if it is shorter
    /// than the slice). Data whose kinds change every few MiB would otherwise give a slice
    /// that runs over the end of its class's stretch the wrong weight for the bytes beyond
    /// (random bytes that run into text count that text with random data's share).
    pub(super) fn place(
        &self,
        slice: &PlannedSlice,
        region_start: u64,
        region: &[u8],
    ) -> (u64, usize, u64) {
        let Some(class) = slice.class else {
            return (slice.offset, slice.len.min(region.len()), 0);
        };
        let probe = slice.offset.saturating_sub(region_start) as usize;
        if probe >= region.len() {
            return (region_start, slice.len.min(region.len()), 0);
        }
        let w = PLACE_WINDOW;
        let looked = std::cell::Cell::new(0u64);
        let is_class = |a: usize, b: usize| {
            // classify reads at most 16 windows of 256 bytes of a window.
            looked.set(looked.get() + (b.saturating_sub(a)).min(PROBE_LEN) as u64);
            a < b && classify(&region[a..b]) == class
        };
        let (mut lo, mut hi) = (probe, (probe + PROBE_LEN).min(region.len()));
        let (want, half) = (slice.len, slice.len / 2);
        let left = |lo: &mut usize, hi: usize, done: &dyn Fn(usize, usize) -> bool| {
            while *lo > 0 && !done(*lo, hi) && is_class(lo.saturating_sub(w), *lo) {
                *lo = lo.saturating_sub(w);
            }
        };
        left(&mut lo, hi, &|lo, _| probe - lo >= half);
        while hi < region.len() && hi - lo < want && is_class(hi, (hi + w).min(region.len())) {
            hi = (hi + w).min(region.len());
        }
        left(&mut lo, hi, &|lo, hi| hi - lo >= want);
        let len = want.min(hi - lo);
        let start = (probe + PROBE_LEN / 2).saturating_sub(len / 2).clamp(lo, hi - len);
        (region_start + start as u64, len, looked.get())
    }
}

/// Read, time and place every slice of `plan` (see [`Feed`] and `SampleConfig::place`).
pub(super) fn take_slices<'a>(
    cfg: &SampleConfig,
    plan: &[PlannedSlice],
    source_len: u64,
    read: &mut impl FnMut(u64, usize, bool) -> Result<(Cow<'a, [u8]>, f64)>,
    feed: &mut Feed,
    look: &mut Look,
) -> Result<Vec<Placed>> {
    let mut placed: Vec<Placed> = Vec::with_capacity(plan.len());
    for s in plan {
        let (at, n) = cfg.region(s, source_len);
        let (region, secs) = read(at, n, true)?;
        let t = Instant::now();
        std::hint::black_box(xxh3(&region));
        feed.add(region.len(), secs, t.elapsed().as_secs_f64());
        let t = Instant::now();
        let (off, len, looked) = cfg.place(s, at, &region);
        look.seconds += t.elapsed().as_secs_f64();
        look.bytes += looked;
        let from = (off - at) as usize;
        placed.push((off, region[from..from + len].to_vec(), s.weight, s.class));
    }
    Ok(placed)
}

/// The slices, their weights and their classes (if stratified) from the slices taken.
/// Slices placed around nearby probes may overlap: the later one starts where the earlier
/// ends; one wholly inside another adds its weight to it.
pub(super) fn merge(mut placed: Vec<Placed>) -> Merged {
    placed.sort_by_key(|p| p.0);
    let mut slices: Vec<(u64, Vec<u8>)> = Vec::with_capacity(placed.len());
    let mut weights: Vec<f64> = Vec::with_capacity(placed.len());
    let mut classes: Vec<u8> = Vec::with_capacity(placed.len());
    let mut end = 0u64;
    for (off, mut bytes, w, class) in placed {
        let cut = end.saturating_sub(off).min(bytes.len() as u64) as usize;
        bytes.drain(..cut);
        if bytes.is_empty() {
            if let Some(last) = weights.last_mut() {
                *last += w;
            }
            continue;
        }
        let off = off + cut as u64;
        end = off + bytes.len() as u64;
        slices.push((off, bytes));
        weights.push(w);
        if let Some(c) = class {
            classes.push(c);
        }
    }
    (slices, weights, classes)
}
