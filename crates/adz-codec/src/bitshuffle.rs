//! Bit shuffle (docs/FORMAT.md, "Bit transposition: `bitshuffle`"): the transposition of the
//! Bitshuffle library, over a whole frame.
//!
//! For `m` elements of `W` bytes (`m` the whole elements rounded down to a multiple of 8), the
//! output is `8 * W` bit planes of `m / 8` bytes: plane `8 * j + k` holds bit `k` of byte `j`
//! of every element, element `i` in bit `i % 8` of byte `i / 8`. The last `n % 8` elements and
//! a partial element are copied as they are.
//!
//! The work goes a tile of elements at a time, so that the intermediate stays in L1: the tile
//! is byte-shuffled into a buffer ([`shuffle`], whose fast paths it shares), which leaves each
//! byte `j` of the tile's elements in one stream, and each stream is then transposed as a
//! `tile x 8` bit matrix into the eight planes of that byte, at the tile's place in each.
//! Decoding runs the same steps backwards.
//!
//! The bit-matrix step has two kernels. On x86-64, SSE2 (part of the x86-64 baseline, so no
//! detection): encoding takes `movemask` of 16 bytes, the top bit of each, eight times with a
//! shift between, which is two bytes of each of eight planes (Bitshuffle's own technique);
//! decoding gathers 16 bytes of each of the eight planes into eight registers with unpacks and
//! transposes each 64-bit lane as an 8x8 bit matrix with shifts and masks, which yields the
//! bytes in order (a `movemask` there would yield them one byte apart). Elsewhere, and for the
//! last group or two of a tile, the portable kernel transposes 8x8 bit matrices in a `u64`.
//! The SIMD module ([`sse2`]) is the crate's only `unsafe` code.

use crate::shuffle::{shuffle, unshuffle};

/// The elements of one tile occupy at most this many bytes (at least 128 elements, for any
/// size up to 255 bytes).
const TILE_BYTES: usize = 16 * 1024;

/// Elements per step of the widest kernel: 16 bytes of each of eight planes.
const KERNEL_ELEMS: usize = 128;

/// Bit-shuffle `src` into `dst` for elements of `elem_size` bytes.
///
/// Groups of 8 whole elements are transposed into bit planes; the last `n % 8` elements and a
/// trailing partial element (`src.len() % elem_size` bytes) are copied as they are. With
/// `elem_size` 0 this is a copy.
///
/// ```
/// // The u16 values 256..=264 and a trailing byte (docs/FORMAT.md's example).
/// let mut src: Vec<u8> = (256u16..=264).flat_map(|v| v.to_le_bytes()).collect();
/// src.push(0xFF);
/// let mut out = vec![0; src.len()];
/// adz_codec::bitshuffle(2, &src, &mut out);
/// assert_eq!(out[..8], [0xAA, 0xCC, 0xF0, 0, 0, 0, 0, 0]); // bits 0..7 of the low bytes
/// assert_eq!(out[8..16], [0xFF, 0, 0, 0, 0, 0, 0, 0]); // bits 0..7 of the high bytes
/// assert_eq!(out[16..], [0x08, 0x01, 0xFF]); // element 8 and the partial one, copied
/// let mut back = vec![0; src.len()];
/// adz_codec::bitunshuffle(2, &out, &mut back);
/// assert_eq!(back, src);
/// ```
///
/// # Panics
///
/// If `dst.len() != src.len()`.
pub fn bitshuffle(elem_size: usize, src: &[u8], dst: &mut [u8]) {
    bitshuffle_with(Kernel::BEST, elem_size, src, dst)
}

/// Undo [`bitshuffle`]: `bitunshuffle(k, shuffled, out)` restores what
/// `bitshuffle(k, out, shuffled)` was given. Every input has exactly one output.
///
/// # Panics
///
/// If `dst.len() != src.len()`.
pub fn bitunshuffle(elem_size: usize, src: &[u8], dst: &mut [u8]) {
    bitunshuffle_with(Kernel::BEST, elem_size, src, dst)
}

/// The shape of one call: `m` elements of `w` bytes transposed, in tiles of `tile` elements.
struct Shape {
    w: usize,
    m: usize,
    tile: usize,
}

impl Shape {
    /// The shape for `len` bytes, or `None` when there is nothing to transpose.
    fn new(elem_size: usize, len: usize) -> Option<Shape> {
        let n = len.checked_div(elem_size)?;
        let m = n / 8 * 8;
        if m == 0 {
            return None;
        }
        let tile = (TILE_BYTES / elem_size / KERNEL_ELEMS).max(1) * KERNEL_ELEMS;
        Some(Shape { w: elem_size, m, tile })
    }

    /// Bytes of one bit plane.
    fn plane_len(&self) -> usize {
        self.m / 8
    }

    /// The tiles: first element and number of elements (a multiple of 8).
    fn tiles(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.m).step_by(self.tile).map(|t0| (t0, self.tile.min(self.m - t0)))
    }
}

/// One call's transposed parts of `src` and `dst`, and a tile buffer for the byte streams
/// (empty for 1-byte elements, which are their own stream).
struct Parts<'s, 'd> {
    shape: Shape,
    src: &'s [u8],
    dst: &'d mut [u8],
    tmp: Vec<u8>,
}

/// What both directions share: `src`'s [`Parts`], its untransposed tail copied to `dst`'s (None:
/// nothing to transpose, `dst` is a copy of `src`).
fn split<'s, 'd>(
    what: &str,
    elem_size: usize,
    src: &'s [u8],
    dst: &'d mut [u8],
) -> Option<Parts<'s, 'd>> {
    assert_eq!(src.len(), dst.len(), "{what}: src and dst differ in length");
    let Some(shape) = Shape::new(elem_size, src.len()) else {
        dst.copy_from_slice(src);
        return None;
    };
    let n = shape.w * shape.m;
    let (src, src_tail) = src.split_at(n);
    let (dst, dst_tail) = dst.split_at_mut(n);
    dst_tail.copy_from_slice(src_tail);
    let tmp = vec![0u8; if shape.w == 1 { 0 } else { shape.tile.min(shape.m) * shape.w }];
    Some(Parts { shape, src, dst, tmp })
}

fn bitshuffle_with(kernel: Kernel, elem_size: usize, src: &[u8], dst: &mut [u8]) {
    let Some(Parts { shape, src, dst, mut tmp }) = split("bitshuffle", elem_size, src, dst) else {
        return;
    };
    let (w, r) = (shape.w, shape.plane_len());
    for (t0, te) in shape.tiles() {
        let tile_src = &src[t0 * w..(t0 + te) * w];
        // Byte j of the tile's elements, as one stream of `te` bytes each.
        let streams: &[u8] = if w == 1 {
            tile_src
        } else {
            let tmp = &mut tmp[..te * w];
            shuffle(w, tile_src, tmp);
            tmp
        };
        for (stream, planes) in streams.chunks_exact(te).zip(dst.chunks_exact_mut(8 * r)) {
            let mut rows = planes.chunks_exact_mut(r).map(|p| &mut p[t0 / 8..(t0 + te) / 8]);
            let mut rows: [&mut [u8]; 8] = std::array::from_fn(|_| rows.next().unwrap_or_default());
            kernel.encode(stream, &mut rows);
        }
    }
}

fn bitunshuffle_with(kernel: Kernel, elem_size: usize, src: &[u8], dst: &mut [u8]) {
    let Some(Parts { shape, src, dst, mut tmp }) = split("bitunshuffle", elem_size, src, dst)
    else {
        return;
    };
    let (w, r) = (shape.w, shape.plane_len());
    for (t0, te) in shape.tiles() {
        let tile_dst = &mut dst[t0 * w..(t0 + te) * w];
        let streams: &mut [u8] = if w == 1 { tile_dst } else { &mut tmp[..te * w] };
        for (stream, planes) in streams.chunks_exact_mut(te).zip(src.chunks_exact(8 * r)) {
            let mut rows = planes.chunks_exact(r).map(|p| &p[t0 / 8..(t0 + te) / 8]);
            let rows: [&[u8]; 8] = std::array::from_fn(|_| rows.next().unwrap_or_default());
            kernel.decode(&rows, stream);
        }
        if w != 1 {
            unshuffle(w, &tmp[..te * w], &mut dst[t0 * w..(t0 + te) * w]);
        }
    }
}

/// The bit-matrix step: one stream of bytes ⇄ its eight bit planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// 8x8 bit matrices in a `u64`: any target. (On x86-64 only the tests choose it.)
    #[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
    Portable,
    /// SSE2 (x86-64's baseline).
    #[cfg(target_arch = "x86_64")]
    Sse2,
}

impl Kernel {
    #[cfg(target_arch = "x86_64")]
    const BEST: Kernel = Kernel::Sse2;
    #[cfg(not(target_arch = "x86_64"))]
    const BEST: Kernel = Kernel::Portable;

    /// Every kernel this target has, for tests that hold them against each other.
    #[cfg(test)]
    const ALL: &'static [Kernel] = &[
        Kernel::Portable,
        #[cfg(target_arch = "x86_64")]
        Kernel::Sse2,
    ];

    /// Write bit `k` of `stream[i]` to bit `i % 8` of `rows[k][i / 8]`.
    /// `stream.len()` is a multiple of 8 and each row `stream.len() / 8` bytes.
    fn encode(self, stream: &[u8], rows: &mut [&mut [u8]; 8]) {
        let done = match self {
            Kernel::Portable => 0,
            #[cfg(target_arch = "x86_64")]
            Kernel::Sse2 => sse2::encode(stream, rows),
        };
        portable::encode(&stream[done..], rows, done / 8);
    }

    /// The inverse of [`encode`](Self::encode).
    fn decode(self, rows: &[&[u8]; 8], stream: &mut [u8]) {
        let done = match self {
            Kernel::Portable => 0,
            #[cfg(target_arch = "x86_64")]
            Kernel::Sse2 => sse2::decode(rows, stream),
        };
        portable::decode(rows, &mut stream[done..], done / 8);
    }
}

/// The portable kernel: one group of 8 bytes at a time, as an 8x8 bit matrix in a `u64`.
mod portable {
    /// Transpose the 8x8 bit matrix whose row `r` is byte `r` of `x` (little-endian) and whose
    /// column `c` is bit `c`: bit `c` of byte `r` becomes bit `r` of byte `c`. It is its own
    /// inverse. Three rounds of swapping the off-diagonal blocks of 1x1, 2x2 and 4x4 bits
    /// (Hacker's Delight 7-3; Bitshuffle's `TRANS_BIT_8X8`).
    #[inline(always)]
    pub(super) fn transpose(mut x: u64) -> u64 {
        let t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
        x ^= t ^ (t << 7);
        let t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
        x ^= t ^ (t << 14);
        let t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
        x ^ t ^ (t << 28)
    }

    /// [`Kernel::encode`](super::Kernel::encode) of `stream`, whose first group is group
    /// `first` of the rows.
    pub(super) fn encode(stream: &[u8], rows: &mut [&mut [u8]; 8], first: usize) {
        for (g, group) in stream.chunks_exact(8).enumerate() {
            let x = transpose(u64::from_le_bytes(group.try_into().unwrap_or_default()));
            for (k, row) in rows.iter_mut().enumerate() {
                row[first + g] = (x >> (8 * k)) as u8;
            }
        }
    }

    /// [`Kernel::decode`](super::Kernel::decode) into `stream`, whose first group is group
    /// `first` of the rows.
    pub(super) fn decode(rows: &[&[u8]; 8], stream: &mut [u8], first: usize) {
        for (g, group) in stream.chunks_exact_mut(8).enumerate() {
            let x = rows
                .iter()
                .enumerate()
                .fold(0u64, |x, (k, row)| x | u64::from(row[first + g]) << (8 * k));
            group.copy_from_slice(&transpose(x).to_le_bytes());
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2;

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition in docs/FORMAT.md, one bit at a time.
    fn reference(w: usize, src: &[u8]) -> Vec<u8> {
        let mut dst = src.to_vec();
        if w == 0 {
            return dst;
        }
        let m = src.len() / w / 8 * 8;
        let r = m / 8;
        dst[..w * m].fill(0);
        for i in 0..m {
            for j in 0..w {
                for k in 0..8 {
                    let bit = (src[w * i + j] >> k) & 1;
                    dst[(8 * j + k) * r + i / 8] |= bit << (i % 8);
                }
            }
        }
        dst
    }

    fn bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// Every kernel against the reference, and back.
    fn check(w: usize, src: &[u8]) {
        let len = src.len();
        let expected = reference(w, src);
        for &kernel in Kernel::ALL {
            let mut out = vec![0xAA; len];
            bitshuffle_with(kernel, w, src, &mut out);
            assert!(out == expected, "w={w} len={len} {kernel:?}");
            let mut back = vec![0x55; len];
            bitunshuffle_with(kernel, w, &out, &mut back);
            assert!(back == src, "w={w} len={len} {kernel:?}: bitunshuffle");
        }
    }

    #[test]
    fn format_example() {
        let mut src: Vec<u8> = (256u16..=264).flat_map(|v| v.to_le_bytes()).collect();
        src.push(0xFF);
        let expected =
            [0xAA, 0xCC, 0xF0, 0, 0, 0, 0, 0, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x01, 0xFF];
        assert_eq!(reference(2, &src), expected);
        check(2, &src);
    }

    #[test]
    fn transpose_moves_bit_c_of_byte_r_to_bit_r_of_byte_c() {
        for r in 0..8 {
            for c in 0..8 {
                let x = 1u64 << (8 * r + c);
                assert_eq!(portable::transpose(x), 1u64 << (8 * c + r), "r={r} c={c}");
            }
        }
    }

    #[test]
    fn matches_reference_and_inverts_for_all_small_shapes() {
        for w in 0..=17 {
            for len in 0..=300 {
                check(w, &bytes(len, len as u64 * 31 + w as u64));
            }
        }
    }

    /// Lengths around the kernels' steps (16 and 128 elements) and the tiles, up to 1 MiB.
    #[test]
    fn matches_reference_on_large_odd_lengths() {
        for w in [1, 2, 3, 4, 8, 16, 255] {
            let tile = Shape::new(w, usize::MAX).map_or(0, |s| s.tile);
            for elems in [tile - 8, tile, tile + 8, tile + 136, 3 * tile + 8 * 77] {
                for extra in [0, 1, w.saturating_sub(1)] {
                    check(w, &bytes(elems * w + extra, 7));
                }
            }
        }
        check(4, &bytes(1 << 20, 3));
        check(8, &bytes((1 << 20) + 5, 3));
    }

    #[test]
    fn large_element_sizes_use_one_kernel_step_per_tile() {
        let s = Shape::new(255, usize::MAX).unwrap();
        assert_eq!(s.tile, KERNEL_ELEMS);
        let s = Shape::new(4, usize::MAX).unwrap();
        assert_eq!((s.tile, s.tile * 4), (4096, TILE_BYTES));
    }

    proptest::proptest! {
        /// Any bytes, element size and length, every kernel.
        #[test]
        fn any_input_matches_reference(
            w in 0usize..=33,
            src in proptest::collection::vec(proptest::num::u8::ANY, 0..20_000),
        ) {
            check(w, &src);
        }
    }

    #[test]
    #[should_panic(expected = "differ in length")]
    fn length_mismatch_panics() {
        bitunshuffle(4, &[0; 8], &mut [0; 9]);
    }
}
