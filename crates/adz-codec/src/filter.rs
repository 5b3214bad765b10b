//! The filter pipeline of a frame (docs/FORMAT.md, "Filter ids"): filters run on the raw data in
//! slot order before the codec, and are undone in reverse order after it.

use adz_format::{FilterId, FilterSpec, Filters};

use crate::bitshuffle::{bitshuffle, bitunshuffle};
use crate::delta::{delta_decode, delta_encode, xor_decode, xor_encode};
use crate::shuffle::{shuffle, unshuffle};
use crate::{Error, Result};

/// Run `filters` over `src` in slot order, leaving the result in `dst`.
///
/// `dst.len()` must equal `src.len()`: filters keep the length; otherwise the result is
/// [`Error::Filter`] naming the first filter ([`Error::DstTooSmall`] with no filters).
/// `scratch` holds the intermediate result when there is more than one filter; it is resized
/// as needed and can be reused across calls. With no filters this copies `src` to `dst`.
///
/// ```
/// use adz_codec::{apply_filters, undo_filters, FilterSpec, Filters};
///
/// let filters = Filters::new(&[FilterSpec::shuffle(2)?])?;
/// let (mut shuffled, mut back, mut scratch) = ([0u8; 8], [0u8; 8], Vec::new());
/// apply_filters(&filters, b"adz adz!", &mut shuffled, &mut scratch)?;
/// assert_eq!(&shuffled, b"azazd d!");
/// undo_filters(&filters, &shuffled, &mut back, &mut scratch)?;
/// assert_eq!(&back, b"adz adz!");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply_filters(
    filters: &Filters,
    src: &[u8],
    dst: &mut [u8],
    scratch: &mut Vec<u8>,
) -> Result<()> {
    check_lengths(filters, src, dst)?;
    pipeline(filters.iter(), filters.iter().count(), src, dst, scratch, apply_one)
}

/// Undo `filters` in reverse slot order: the inverse of [`apply_filters`], with the same
/// requirements.
pub fn undo_filters(
    filters: &Filters,
    src: &[u8],
    dst: &mut [u8],
    scratch: &mut Vec<u8>,
) -> Result<()> {
    check_lengths(filters, src, dst)?;
    pipeline(filters.iter().rev(), filters.iter().count(), src, dst, scratch, undo_one)
}

fn check_lengths(filters: &Filters, src: &[u8], dst: &[u8]) -> Result<()> {
    if src.len() == dst.len() {
        return Ok(());
    }
    Err(match filters.iter().next() {
        Some(first) => Error::Filter {
            filter: first.id(),
            message: format!(
                "source is {} bytes but destination {}: filters keep the length",
                src.len(),
                dst.len()
            ),
        },
        None => Error::DstTooSmall { needed: src.len(), available: dst.len() },
    })
}

/// Run `count` stages from `src` to `dst`, alternating between `dst` and `scratch` so that the
/// last stage writes `dst`: no stage reads and writes the same buffer, and no copy is needed.
fn pipeline(
    stages: impl Iterator<Item = FilterSpec>,
    count: usize,
    src: &[u8],
    dst: &mut [u8],
    scratch: &mut Vec<u8>,
    run: fn(FilterSpec, &[u8], &mut [u8]) -> Result<()>,
) -> Result<()> {
    if count == 0 {
        dst.copy_from_slice(src);
        return Ok(());
    }
    if count > 1 {
        scratch.resize(src.len(), 0);
    }
    for (k, stage) in stages.enumerate() {
        let writes_dst = (count - 1 - k) % 2 == 0;
        match (k == 0, writes_dst) {
            (true, true) => run(stage, src, dst)?,
            (true, false) => run(stage, src, scratch)?,
            (false, true) => run(stage, scratch, dst)?,
            (false, false) => run(stage, dst, scratch)?,
        }
    }
    Ok(())
}

fn apply_one(filter: FilterSpec, src: &[u8], dst: &mut [u8]) -> Result<()> {
    let n = usize::from(filter.param());
    match filter.id() {
        FilterId::Shuffle => shuffle(n, src, dst),
        FilterId::Delta => delta_encode(n, src, dst)?,
        FilterId::Xor => xor_encode(n, src, dst)?,
        FilterId::Bitshuffle => bitshuffle(n, src, dst),
        other => return Err(unsupported(other)),
    }
    Ok(())
}

fn undo_one(filter: FilterSpec, src: &[u8], dst: &mut [u8]) -> Result<()> {
    let n = usize::from(filter.param());
    match filter.id() {
        FilterId::Shuffle => unshuffle(n, src, dst),
        FilterId::Delta => delta_decode(n, src, dst)?,
        FilterId::Xor => xor_decode(n, src, dst)?,
        FilterId::Bitshuffle => bitunshuffle(n, src, dst),
        other => return Err(unsupported(other)),
    }
    Ok(())
}

/// A filter id that adz-format knows and this crate does not yet implement.
#[cold]
fn unsupported(filter: FilterId) -> Error {
    Error::Filter { filter, message: "not implemented by this build of adz-codec".to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filters(sizes: &[u8]) -> Filters {
        let list: Vec<FilterSpec> =
            sizes.iter().map(|&k| FilterSpec::shuffle(k).unwrap()).collect();
        Filters::new(&list).unwrap()
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn no_filters_copies() {
        let src = data(33);
        let (mut dst, mut scratch) = (vec![0; 33], Vec::new());
        apply_filters(&Filters::NONE, &src, &mut dst, &mut scratch).unwrap();
        assert_eq!(dst, src);
        undo_filters(&Filters::NONE, &src, &mut dst, &mut scratch).unwrap();
        assert_eq!(dst, src);
    }

    /// Every pipeline length, checked against running the stages one by one.
    #[test]
    fn pipelines_compose_in_slot_order_and_undo_in_reverse() {
        let src = data(1000);
        for sizes in [&[8][..], &[4, 2], &[3, 8, 2], &[2, 4, 8, 5]] {
            let mut expected = src.clone();
            for &k in sizes {
                let mut next = vec![0; src.len()];
                shuffle(usize::from(k), &expected, &mut next);
                expected = next;
            }
            let f = filters(sizes);
            let (mut dst, mut scratch) = (vec![0; src.len()], vec![1, 2, 3]);
            apply_filters(&f, &src, &mut dst, &mut scratch).unwrap();
            assert_eq!(dst, expected, "{sizes:?}");
            let mut back = vec![0; src.len()];
            undo_filters(&f, &dst, &mut back, &mut scratch).unwrap();
            assert_eq!(back, src, "{sizes:?}");
        }
    }

    /// Mixed chains of shuffle, bitshuffle, delta and xor undo to the input, for lengths with
    /// tails.
    #[test]
    fn mixed_chains_round_trip() {
        for list in [
            "xor:8,shuffle:8",
            "shuffle:8,xor:8",
            "delta:4,shuffle:4,xor:1",
            "delta:1",
            "bitshuffle:4",
            "xor:4,bitshuffle:4",
            "bitshuffle:1,shuffle:3,bitshuffle:255,delta:2",
        ] {
            let f: Filters = list.parse().unwrap();
            for len in [0, 1, 7, 8, 9, 1000, 1003, 70_000] {
                let src = data(len);
                let (mut dst, mut back, mut scratch) = (vec![0; len], vec![0; len], Vec::new());
                apply_filters(&f, &src, &mut dst, &mut scratch).unwrap();
                undo_filters(&f, &dst, &mut back, &mut scratch).unwrap();
                assert_eq!(back, src, "{list} len {len}");
            }
        }
    }

    #[test]
    fn length_mismatch_is_an_error_not_a_panic() {
        let mut scratch = Vec::new();
        let err = apply_filters(&filters(&[4]), &[0; 8], &mut [0; 9], &mut scratch).unwrap_err();
        assert!(matches!(err, Error::Filter { filter: FilterId::Shuffle, .. }), "{err:?}");
        let err = undo_filters(&filters(&[4, 2]), &[0; 8], &mut [0; 7], &mut scratch).unwrap_err();
        assert!(matches!(err, Error::Filter { .. }), "{err:?}");
        let err = apply_filters(&Filters::NONE, &[0; 8], &mut [0; 7], &mut scratch).unwrap_err();
        assert!(matches!(err, Error::DstTooSmall { needed: 8, available: 7 }), "{err:?}");
    }
}
