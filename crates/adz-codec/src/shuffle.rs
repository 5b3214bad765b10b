//! Byte shuffle (docs/FORMAT.md, "Filter ids"): the transposition Blosc calls shuffle.
//!
//! For `n` elements of `k` bytes, output stream `j` (of `n` bytes) holds byte `j` of every
//! element, so the slowly changing high bytes of numbers end up next to each other where a codec
//! finds them. Bytes after the last whole element are copied as they are.
//!
//! Element sizes 2, 4 and 8 take fast paths. On an x86-64 CPU with AVX2 they run plain
//! gather/scatter loops that LLVM vectorizes when compiled for AVX2, which `pulp` does at run
//! time without `unsafe` here ([`wide`]); 8-byte elements go through two such passes, a tile
//! at a time, so the intermediate stays in L1. Otherwise eight elements at a time are loaded
//! into `u64` words, transposed with shifts and masks (a SIMD-within-a-register transpose), and
//! written as one 8-byte run per output stream: on SSE2 alone that is twice as fast as the
//! loops. Other sizes take a plain strided loop.

use std::slice::{ChunksExact, ChunksExactMut};

/// Shuffle `src` into `dst` for elements of `elem_size` bytes.
///
/// A trailing partial element (`src.len() % elem_size` bytes) is copied as it is. With
/// `elem_size` 0 or 1 this is a copy.
///
/// ```
/// let mut out = [0u8; 8];
/// adz_codec::shuffle(2, b"adz adz!", &mut out);
/// assert_eq!(&out, b"azazd d!");
/// ```
///
/// # Panics
///
/// If `dst.len() != src.len()`.
pub fn shuffle(elem_size: usize, src: &[u8], dst: &mut [u8]) {
    shuffle_with(wide::available(), elem_size, src, dst)
}

/// [`shuffle`] with the vectorized loops or without.
fn shuffle_with(wide: bool, elem_size: usize, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len(), "shuffle: src and dst differ in length");
    let n = src.len().checked_div(elem_size).unwrap_or(0);
    if elem_size <= 1 || n == 0 {
        dst.copy_from_slice(src);
        return;
    }
    let body = n * elem_size;
    let (src, src_tail) = src.split_at(body);
    let (dst, dst_tail) = dst.split_at_mut(body);
    shuffle_body(wide, elem_size, src, dst, n);
    dst_tail.copy_from_slice(src_tail);
}

/// [`shuffle`] of `n` whole elements, with the vectorized loops or without.
fn shuffle_body(wide: bool, elem_size: usize, src: &[u8], dst: &mut [u8], n: usize) {
    match elem_size {
        2 | 4 | 8 if wide => wide::shuffle(elem_size, src, dst),
        2 => shuffle_fixed::<2>(src, dst, n, gather2),
        4 => shuffle_fixed::<4>(src, dst, n, gather4),
        8 => shuffle_fixed::<8>(src, dst, n, gather8),
        _ => shuffle_generic(elem_size, src, dst, n),
    }
}

/// Undo [`shuffle`]: `unshuffle(k, shuffled, out)` restores what `shuffle(k, out, shuffled)` was
/// given.
///
/// # Panics
///
/// If `dst.len() != src.len()`.
pub fn unshuffle(elem_size: usize, src: &[u8], dst: &mut [u8]) {
    unshuffle_with(wide::available(), elem_size, src, dst)
}

/// [`unshuffle`] with the vectorized loops or without.
fn unshuffle_with(wide: bool, elem_size: usize, src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len(), "unshuffle: src and dst differ in length");
    let n = src.len().checked_div(elem_size).unwrap_or(0);
    if elem_size <= 1 || n == 0 {
        dst.copy_from_slice(src);
        return;
    }
    let body = n * elem_size;
    let (src, src_tail) = src.split_at(body);
    let (dst, dst_tail) = dst.split_at_mut(body);
    unshuffle_body(wide, elem_size, src, dst, n);
    dst_tail.copy_from_slice(src_tail);
}

/// [`unshuffle`] of `n` whole elements, with the vectorized loops or without.
fn unshuffle_body(wide: bool, elem_size: usize, src: &[u8], dst: &mut [u8], n: usize) {
    match elem_size {
        2 | 4 | 8 if wide => wide::unshuffle(elem_size, src, dst),
        2 => unshuffle_fixed::<2>(src, dst, n, scatter2),
        4 => unshuffle_fixed::<4>(src, dst, n, scatter4),
        8 => unshuffle_fixed::<8>(src, dst, n, scatter8),
        _ => unshuffle_generic(elem_size, src, dst, n),
    }
}

/// Shuffle loops for LLVM to vectorize: each element's bytes go to (or come from) one output
/// slice each, with no bounds checks in the loop. `pulp` runs them compiled for the CPU's
/// AVX2, where LLVM turns the stride-2 and stride-4 byte accesses into shuffles (24 GB/s
/// for 4-byte elements on the benchmark's EPYC, against 8 GB/s for the SWAR transpose).
mod wide {
    /// Elements of 8 bytes per tile: two passes through a 16 KiB buffer on the stack.
    const TILE: usize = 2048;

    /// Whether to use these loops: on x86-64 with AVX2. Elsewhere they are not measured, and
    /// with SSE2 alone LLVM leaves them scalar.
    pub(super) fn available() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::is_x86_feature_detected!("avx2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Shuffle whole elements of 2, 4 or 8 bytes (`src.len()` a multiple of `elem_size`).
    pub(super) fn shuffle(elem_size: usize, src: &[u8], dst: &mut [u8]) {
        pulp::Arch::new().dispatch(Op { elem_size, undo: false, src, dst })
    }

    /// Undo [`shuffle`].
    pub(super) fn unshuffle(elem_size: usize, src: &[u8], dst: &mut [u8]) {
        pulp::Arch::new().dispatch(Op { elem_size, undo: true, src, dst })
    }

    /// One call of the loops; `with_simd` is inlined into pulp's function compiled for the
    /// CPU's features, and everything it calls is `inline(always)` so it is too (a closure's
    /// body is not inlined as reliably, and then stays scalar).
    struct Op<'a> {
        elem_size: usize,
        undo: bool,
        src: &'a [u8],
        dst: &'a mut [u8],
    }

    impl pulp::WithSimd for Op<'_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Op { elem_size, undo, src, dst } = self;
            match (elem_size, undo) {
                (2, false) => split2(src, dst),
                (4, false) => split4(src, dst),
                (_, false) => shuffle8(src, dst),
                (2, true) => join2(src, dst),
                (4, true) => join4(src, dst),
                (_, true) => unshuffle8(src, dst),
            }
        }
    }

    /// Byte 0 of every 2-byte element to the first half of `dst`, byte 1 to the second.
    #[inline(always)]
    fn split2(src: &[u8], dst: &mut [u8]) {
        let (d0, d1) = dst.split_at_mut(src.len() / 2);
        for ((e, a), b) in src.chunks_exact(2).zip(d0).zip(d1) {
            (*a, *b) = (e[0], e[1]);
        }
    }

    #[inline(always)]
    fn join2(src: &[u8], dst: &mut [u8]) {
        let (s0, s1) = src.split_at(src.len() / 2);
        for ((e, a), b) in dst.chunks_exact_mut(2).zip(s0).zip(s1) {
            (e[0], e[1]) = (*a, *b);
        }
    }

    /// Byte `j` of every 4-byte element to quarter `j` of `dst`.
    #[inline(always)]
    fn split4(src: &[u8], dst: &mut [u8]) {
        let n = src.len() / 4;
        let (d0, rest) = dst.split_at_mut(n);
        let (d1, rest) = rest.split_at_mut(n);
        let (d2, d3) = rest.split_at_mut(n);
        for ((((e, a), b), c), d) in src.chunks_exact(4).zip(d0).zip(d1).zip(d2).zip(d3) {
            (*a, *b, *c, *d) = (e[0], e[1], e[2], e[3]);
        }
    }

    #[inline(always)]
    fn join4(src: &[u8], dst: &mut [u8]) {
        let n = src.len() / 4;
        let (s0, rest) = src.split_at(n);
        let (s1, rest) = rest.split_at(n);
        let (s2, s3) = rest.split_at(n);
        for ((((e, a), b), c), d) in dst.chunks_exact_mut(4).zip(s0).zip(s1).zip(s2).zip(s3) {
            (e[0], e[1], e[2], e[3]) = (*a, *b, *c, *d);
        }
    }

    /// 8-byte elements, a tile at a time: [`split4`] of the tile's 4-byte halves leaves, in
    /// quarter `j`, bytes `j` and `j + 4` alternating; [`split2`] of each quarter puts them in
    /// streams `j` and `j + 4` of `dst`.
    #[inline(always)]
    fn shuffle8(src: &[u8], dst: &mut [u8]) {
        let n = src.len() / 8;
        let mut tmp = [0u8; 8 * TILE];
        for (t, tile) in src.chunks(8 * TILE).enumerate() {
            let (first, m) = (t * TILE, tile.len() / 8);
            let tmp = &mut tmp[..tile.len()];
            split4(tile, tmp);
            for (j, quarter) in tmp.chunks_exact(2 * m).enumerate() {
                let (lo, hi) = dst.split_at_mut((j + 4) * n);
                let out = &mut lo[j * n + first..j * n + first + m];
                let out_hi = &mut hi[first..first + m];
                for ((e, a), b) in quarter.chunks_exact(2).zip(out).zip(out_hi) {
                    (*a, *b) = (e[0], e[1]);
                }
            }
        }
    }

    #[inline(always)]
    fn unshuffle8(src: &[u8], dst: &mut [u8]) {
        let n = src.len() / 8;
        let mut tmp = [0u8; 8 * TILE];
        for (t, tile) in dst.chunks_mut(8 * TILE).enumerate() {
            let (first, m) = (t * TILE, tile.len() / 8);
            let tmp = &mut tmp[..tile.len()];
            for (j, quarter) in tmp.chunks_exact_mut(2 * m).enumerate() {
                let a = &src[j * n + first..j * n + first + m];
                let b = &src[(j + 4) * n + first..(j + 4) * n + first + m];
                for ((e, a), b) in quarter.chunks_exact_mut(2).zip(a).zip(b) {
                    (e[0], e[1]) = (*a, *b);
                }
            }
            join4(tmp, tile);
        }
    }
}

/// Elements per block of the fast paths: one `u64` per output stream.
const BLOCK_ELEMS: usize = 8;

/// `n` whole elements of `ES` bytes. `gather` turns a block of 8 elements into `ES` words,
/// word `j` holding byte `j` of elements 0..8 in little-endian order.
#[inline(always)]
fn shuffle_fixed<const ES: usize>(
    src: &[u8],
    dst: &mut [u8],
    n: usize,
    gather: fn(&[u8]) -> [u64; ES],
) {
    let whole = n / BLOCK_ELEMS * BLOCK_ELEMS;
    {
        let mut streams = dst.chunks_exact_mut(n);
        let mut outs: [ChunksExactMut<'_, u8>; ES] =
            std::array::from_fn(|_| streams.next().unwrap_or_default().chunks_exact_mut(8));
        for block in src.chunks_exact(BLOCK_ELEMS * ES) {
            let words = gather(block);
            for (out, word) in outs.iter_mut().zip(words) {
                if let Some(out) = out.next() {
                    out.copy_from_slice(&word.to_le_bytes());
                }
            }
        }
    }
    for i in whole..n {
        for j in 0..ES {
            dst[j * n + i] = src[i * ES + j];
        }
    }
}

/// The inverse of [`shuffle_fixed`]: `scatter` writes the 8 elements whose byte `j` is in word
/// `j`.
#[inline(always)]
fn unshuffle_fixed<const ES: usize>(
    src: &[u8],
    dst: &mut [u8],
    n: usize,
    scatter: fn([u64; ES], &mut [u8]),
) {
    let whole = n / BLOCK_ELEMS * BLOCK_ELEMS;
    {
        let mut streams = src.chunks_exact(n);
        let mut ins: [ChunksExact<'_, u8>; ES] =
            std::array::from_fn(|_| streams.next().unwrap_or_default().chunks_exact(8));
        for block in dst.chunks_exact_mut(BLOCK_ELEMS * ES) {
            let mut words = [0u64; ES];
            for (word, input) in words.iter_mut().zip(ins.iter_mut()) {
                if let Some(input) = input.next() {
                    *word = load(input);
                }
            }
            scatter(words, block);
        }
    }
    for i in whole..n {
        for j in 0..ES {
            dst[i * ES + j] = src[j * n + i];
        }
    }
}

fn shuffle_generic(elem_size: usize, src: &[u8], dst: &mut [u8], n: usize) {
    for (j, out) in dst.chunks_exact_mut(n).enumerate() {
        for (o, b) in out.iter_mut().zip(src[j..].iter().step_by(elem_size)) {
            *o = *b;
        }
    }
}

fn unshuffle_generic(elem_size: usize, src: &[u8], dst: &mut [u8], n: usize) {
    for (j, input) in src.chunks_exact(n).enumerate() {
        for (o, b) in dst[j..].iter_mut().step_by(elem_size).zip(input) {
            *o = *b;
        }
    }
}

#[inline(always)]
fn load(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

#[inline(always)]
fn store(b: &mut [u8], v: u64) {
    b[..8].copy_from_slice(&v.to_le_bytes());
}

/// Swap, in every `2 * SHIFT`-bit lane, the high half of `a` with the low half of `b`:
/// one step of a recursive block transpose.
#[inline(always)]
fn swap_halves<const SHIFT: u32>(a: &mut u64, b: &mut u64, low_mask: u64) {
    let t = ((*a >> SHIFT) ^ *b) & low_mask;
    *a ^= t << SHIFT;
    *b ^= t;
}

const LOW_32: u64 = 0x0000_0000_FFFF_FFFF;
const LOW_16: u64 = 0x0000_FFFF_0000_FFFF;
const LOW_8: u64 = 0x00FF_00FF_00FF_00FF;

/// Transpose the 8x8 byte matrix whose row `i` is word `i` (byte `j` = column `j`).
/// It is its own inverse.
#[inline(always)]
fn transpose8x8(w: &mut [u64; 8]) {
    let [w0, w1, w2, w3, w4, w5, w6, w7] = w;
    swap_halves::<32>(w0, w4, LOW_32);
    swap_halves::<32>(w1, w5, LOW_32);
    swap_halves::<32>(w2, w6, LOW_32);
    swap_halves::<32>(w3, w7, LOW_32);
    swap_halves::<16>(w0, w2, LOW_16);
    swap_halves::<16>(w1, w3, LOW_16);
    swap_halves::<16>(w4, w6, LOW_16);
    swap_halves::<16>(w5, w7, LOW_16);
    swap_halves::<8>(w0, w1, LOW_8);
    swap_halves::<8>(w2, w3, LOW_8);
    swap_halves::<8>(w4, w5, LOW_8);
    swap_halves::<8>(w6, w7, LOW_8);
}

/// Transpose two 4x4 byte matrices at once, one in each 32-bit half of the words.
#[inline(always)]
fn transpose4x4x2(w: &mut [u64; 4]) {
    let [w0, w1, w2, w3] = w;
    swap_halves::<16>(w0, w2, LOW_16);
    swap_halves::<16>(w1, w3, LOW_16);
    swap_halves::<8>(w0, w1, LOW_8);
    swap_halves::<8>(w2, w3, LOW_8);
}

#[inline(always)]
fn gather8(block: &[u8]) -> [u64; 8] {
    let mut w: [u64; 8] = std::array::from_fn(|i| load(&block[8 * i..]));
    transpose8x8(&mut w);
    w
}

#[inline(always)]
fn scatter8(mut w: [u64; 8], block: &mut [u8]) {
    transpose8x8(&mut w);
    for (out, word) in block.chunks_exact_mut(8).zip(w) {
        store(out, word);
    }
}

/// Word `i` holds element `i` in its low half and element `i + 4` in its high half, so after
/// the transpose word `j` holds byte `j` of elements 0..4, then of elements 4..8.
#[inline(always)]
fn gather4(block: &[u8]) -> [u64; 4] {
    let mut w: [u64; 4] = std::array::from_fn(|i| {
        let e = u64::from(load32(&block[4 * i..]));
        let f = u64::from(load32(&block[16 + 4 * i..]));
        e | f << 32
    });
    transpose4x4x2(&mut w);
    w
}

#[inline(always)]
fn scatter4(mut w: [u64; 4], block: &mut [u8]) {
    transpose4x4x2(&mut w);
    let (lo, hi) = block.split_at_mut(16);
    for ((lo, hi), word) in lo.chunks_exact_mut(4).zip(hi.chunks_exact_mut(4)).zip(w) {
        lo.copy_from_slice(&(word as u32).to_le_bytes());
        hi.copy_from_slice(&((word >> 32) as u32).to_le_bytes());
    }
}

#[inline(always)]
fn load32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

/// Bytes 0, 2, 4, 6 of `x`, packed into the low 32 bits.
#[inline(always)]
fn even_bytes(x: u64) -> u64 {
    let x = x & LOW_8;
    let x = (x | x >> 8) & LOW_16;
    (x | x >> 16) & LOW_32
}

/// The inverse of [`even_bytes`]: the low 4 bytes of `x` spread to bytes 0, 2, 4, 6.
#[inline(always)]
fn spread_bytes(x: u64) -> u64 {
    let x = x & LOW_32;
    let x = (x | x << 16) & LOW_16;
    (x | x << 8) & LOW_8
}

#[inline(always)]
fn gather2(block: &[u8]) -> [u64; 2] {
    let (a, b) = (load(block), load(&block[8..]));
    [even_bytes(a) | even_bytes(b) << 32, even_bytes(a >> 8) | even_bytes(b >> 8) << 32]
}

#[inline(always)]
fn scatter2([first, second]: [u64; 2], block: &mut [u8]) {
    let a = spread_bytes(first) | spread_bytes(second) << 8;
    let b = spread_bytes(first >> 32) | spread_bytes(second >> 32) << 8;
    store(block, a);
    store(&mut block[8..], b);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one byte at a time.
    fn shuffle_reference(elem_size: usize, src: &[u8]) -> Vec<u8> {
        let mut dst = src.to_vec();
        if elem_size > 1 {
            let n = src.len() / elem_size;
            for i in 0..n {
                for j in 0..elem_size {
                    dst[j * n + i] = src[i * elem_size + j];
                }
            }
        }
        dst
    }

    fn bytes(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(37).wrapping_add((i >> 8) as u8)).collect()
    }

    #[test]
    fn format_example() {
        let mut out = [0u8; 8];
        shuffle(2, b"adz adz!", &mut out);
        assert_eq!(&out, b"azazd d!");
        let mut back = [0u8; 8];
        unshuffle(2, &out, &mut back);
        assert_eq!(&back, b"adz adz!");
    }

    #[test]
    fn hand_checked_sizes_4_and_8_with_tail() {
        let src: Vec<u8> = (0..19).collect();
        let mut out = vec![0; 19];
        shuffle(4, &src, &mut out);
        assert_eq!(out, [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 16, 17, 18]);
        shuffle(8, &src, &mut out);
        assert_eq!(out, [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15, 16, 17, 18]);
    }

    /// Both paths (the vectorized loops run on any CPU, scalar without AVX2) against the
    /// reference, and back.
    fn check(elem_size: usize, src: &[u8]) {
        let len = src.len();
        for wide in [false, true] {
            let mut shuffled = vec![0xAA; len];
            shuffle_with(wide, elem_size, src, &mut shuffled);
            let expected = shuffle_reference(elem_size, src);
            assert!(shuffled == expected, "k={elem_size} len={len} wide={wide}");
            let mut back = vec![0x55; len];
            unshuffle_with(wide, elem_size, &shuffled, &mut back);
            assert!(back == src, "k={elem_size} len={len} wide={wide}: unshuffle");
        }
    }

    #[test]
    fn matches_reference_and_inverts_for_all_small_shapes() {
        for elem_size in 0..=17 {
            for len in 0..=100 {
                check(elem_size, &bytes(len));
            }
        }
    }

    /// Lengths around the 8-byte path's tiles (2048 elements) and a 1 MiB chunk.
    #[test]
    fn fast_paths_match_reference_on_large_odd_lengths() {
        for elem_size in [2, 4, 8, 3, 16] {
            for len in [4095, 4096, 4097, 16_384, 16_391, 65_536 + 13, 3 * 16_384 + 8 * 77 + 5] {
                check(elem_size, &bytes(len));
            }
        }
        check(4, &bytes(1 << 20));
        check(8, &bytes(1 << 20));
    }

    proptest::proptest! {
        /// Any bytes, element size and length, both paths.
        #[test]
        fn any_input_matches_reference(
            elem_size in 0usize..=17,
            src in proptest::collection::vec(proptest::num::u8::ANY, 0..40_000),
        ) {
            check(elem_size, &src);
        }
    }

    #[test]
    fn transposes_are_involutions() {
        let start: [u64; 8] =
            std::array::from_fn(|i| 0x0706_0504_0302_0100 + 0x1010_1010_1010_1010 * i as u64);
        let mut w = start;
        transpose8x8(&mut w);
        assert_eq!(w[0], 0x7060_5040_3020_1000);
        transpose8x8(&mut w);
        assert_eq!(w, start);
    }

    #[test]
    #[should_panic(expected = "differ in length")]
    fn length_mismatch_panics() {
        shuffle(4, &[0; 8], &mut [0; 7]);
    }
}
