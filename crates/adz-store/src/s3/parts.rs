//! Part sizes for multipart uploads within S3's limits: every part but the last between
//! 5 MiB and 5 GiB, at most 10,000 parts.

use crate::{Error, Result};

/// S3's smallest part (all parts but the last).
pub const MIN_PART: u64 = 5 << 20;
/// S3's largest part.
pub const MAX_PART: u64 = 5 << 30;
/// S3's most parts in one upload.
pub const MAX_PARTS: usize = 10_000;
/// The part size when nothing else is known: large enough for few requests, small enough that
/// a few parts in flight take little memory.
pub const DEFAULT_PART: u64 = 8 << 20;
/// With a growing part size, the size doubles every this many parts.
const GROWTH_STEP: usize = 1_000;
/// With an expected size, it is covered by this many parts, leaving room for a larger object.
const PLANNED_PARTS: u64 = 9_000;

/// The size of each part of one upload.
///
/// - A fixed size (`--part-size`) is used for every part; the upload can hold at most
///   10,000 of them.
/// - Otherwise the size starts at `max(8 MiB, expected / 9,000)` (rounded up to a MiB) and
///   doubles every 1,000 parts, capped at 5 GiB. With nothing expected, that holds about
///   8 TiB; with a good guess, 9,000 equal parts cover the object and the growth is only a
///   safety net for an object larger than expected (a stream of unknown size).
///
/// ```
/// use adz_store::s3::PartSizes;
///
/// let sizes = PartSizes::new(None, None)?;
/// assert_eq!(sizes.size(0), 8 << 20);
/// assert_eq!(sizes.size(1_000), 16 << 20);
/// assert!(sizes.capacity() >= 1 << 40); // at least 1 TiB
///
/// let sizes = PartSizes::new(None, Some(2 << 40))?; // 2 TiB expected
/// assert!(sizes.size(0) * 9_000 >= 2 << 40);
/// # Ok::<(), adz_store::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartSizes {
    base: u64,
    grow: bool,
}

impl PartSizes {
    /// Part sizes for an upload, from a fixed size or an expected object size.
    ///
    /// A fixed size outside 5 MiB ..= 5 GiB is refused.
    pub fn new(fixed: Option<u64>, expected: Option<u64>) -> Result<PartSizes> {
        if let Some(size) = fixed {
            if !(MIN_PART..=MAX_PART).contains(&size) {
                return Err(Error::Generic {
                    store: "s3",
                    source: format!(
                        "part size {size} bytes is outside S3's limits of 5 MiB ..= 5 GiB"
                    )
                    .into(),
                });
            }
            return Ok(PartSizes { base: size, grow: false });
        }
        let planned = expected.unwrap_or(0).div_ceil(PLANNED_PARTS).next_multiple_of(1 << 20);
        Ok(PartSizes { base: planned.clamp(DEFAULT_PART, MAX_PART), grow: true })
    }

    /// The size of part `index` (from 0).
    pub fn size(&self, index: usize) -> u64 {
        if !self.grow {
            return self.base;
        }
        let doublings = (index / GROWTH_STEP).min(32) as u32;
        self.base.saturating_mul(1 << doublings).min(MAX_PART)
    }

    /// The largest object these sizes can upload in 10,000 parts.
    pub fn capacity(&self) -> u64 {
        (0..MAX_PARTS).step_by(GROWTH_STEP).map(|i| self.size(i) * GROWTH_STEP as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_s3_limits_for_any_expected_size() {
        for expected in [None, Some(0), Some(1), Some(1 << 30), Some(1 << 40), Some(5 << 40)] {
            let s = PartSizes::new(None, expected).unwrap();
            for i in 0..MAX_PARTS {
                let size = s.size(i);
                assert!((MIN_PART..=MAX_PART).contains(&size), "{expected:?} part {i}: {size}");
                assert_eq!(size % (1 << 20), 0, "whole MiB");
            }
            if let Some(e) = expected {
                assert!(s.capacity() >= e, "{e} does not fit in {}", s.capacity());
                // An expected size is covered by equal parts, without relying on growth.
                assert!(s.size(0) * PLANNED_PARTS >= e.min(MAX_PART * PLANNED_PARTS));
            }
        }
    }

    #[test]
    fn unknown_sizes_reach_past_a_tebibyte() {
        let s = PartSizes::new(None, None).unwrap();
        assert_eq!(s.size(0), DEFAULT_PART);
        assert_eq!(s.size(999), DEFAULT_PART);
        assert_eq!(s.size(1000), 2 * DEFAULT_PART);
        assert!(s.capacity() >= 1 << 40, "{}", s.capacity());
    }

    #[test]
    fn fixed_sizes_are_checked_and_do_not_grow() {
        let s = PartSizes::new(Some(MIN_PART), Some(1 << 40)).unwrap();
        assert_eq!((s.size(0), s.size(5000)), (MIN_PART, MIN_PART));
        assert_eq!(s.capacity(), MIN_PART * MAX_PARTS as u64);
        assert!(PartSizes::new(Some(MIN_PART - 1), None).is_err());
        assert!(PartSizes::new(Some(MAX_PART + 1), None).is_err());
    }
}
