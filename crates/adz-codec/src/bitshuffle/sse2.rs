//! The SSE2 kernel of the bit transposition. SSE2 is part of the x86-64 baseline, so it needs
//! no detection.
//!
//! The crate's only `unsafe` code: the intrinsics' 16-byte loads and stores, each from or into
//! a fixed-size array reference that holds those 16 bytes, and the intrinsics themselves
//! (`unsafe fn`s up to Rust 1.86, which the workspace's `rust-version` 1.85 still builds).
#![allow(unsafe_code)]

use std::arch::x86_64::{
    __m128i, _mm_and_si128, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi64x, _mm_slli_epi16,
    _mm_slli_epi64, _mm_srli_epi64, _mm_storeu_si128, _mm_unpackhi_epi16, _mm_unpackhi_epi32,
    _mm_unpackhi_epi8, _mm_unpacklo_epi16, _mm_unpacklo_epi32, _mm_unpacklo_epi8, _mm_xor_si128,
};

/// Encode the stream's whole 16-byte chunks (see `Kernel::encode`) and return how many bytes
/// that was; the caller finishes the rest (0 or 8 bytes).
pub(super) fn encode(stream: &[u8], rows: &mut [&mut [u8]; 8]) -> usize {
    let chunks = stream.chunks_exact(16);
    let done = stream.len() - chunks.remainder().len();
    for (c, chunk) in chunks.enumerate() {
        let Ok(chunk) = chunk.try_into() else { break };
        for (row, mask) in rows.iter_mut().zip(movemasks(chunk)) {
            row[2 * c..2 * c + 2].copy_from_slice(&mask.to_le_bytes());
        }
    }
    done
}

/// Bit `k` of each of the 16 bytes, as the 16 bits of element `k`: `movemask` reads the top
/// bit of every byte, and a left shift by one brings the next bit up (what it carries into the
/// next byte's bit 0 is shifted out before it reaches the top).
#[inline(always)]
fn movemasks(chunk: &[u8; 16]) -> [u16; 8] {
    let mut masks = [0u16; 8];
    // SAFETY: the load reads the 16 bytes `chunk` refers to; the rest are register operations.
    unsafe {
        let mut x = _mm_loadu_si128(chunk.as_ptr().cast());
        for mask in masks.iter_mut().rev() {
            *mask = _mm_movemask_epi8(x) as u16;
            x = _mm_slli_epi16::<1>(x);
        }
    }
    masks
}

/// Decode whole steps of 128 bytes of the stream (see `Kernel::decode`), 16 bytes of each row
/// at a time, and return how many bytes that was; the caller finishes the rest.
pub(super) fn decode(rows: &[&[u8]; 8], stream: &mut [u8]) -> usize {
    let done = stream.len() / 128 * 128;
    for (s, out) in stream[..done].chunks_exact_mut(128).enumerate() {
        let mut ins = rows.iter().map(|row| row[16 * s..16 * s + 16].try_into());
        let ins: [&[u8; 16]; 8] = std::array::from_fn(|_| match ins.next() {
            Some(Ok(a)) => a,
            _ => &[0; 16],
        });
        if let Ok(out) = out.try_into() {
            decode_step(&ins, out);
        }
    }
    done
}

/// 16 bytes of each of the eight rows to 128 bytes of the stream. Three rounds of unpacks
/// transpose the 8x16 byte matrix, so that each 64-bit lane holds one group's byte of each
/// row, row `k` in byte `k`: an 8x8 bit matrix whose transpose is the group's eight bytes.
#[inline(always)]
fn decode_step(ins: &[&[u8; 16]; 8], out: &mut [u8; 128]) {
    // SAFETY: each load reads the 16 bytes one of `ins` refers to, each store writes 16 of the
    // 128 bytes `out` refers to (at 16 * i for i < 8); the rest are register operations.
    unsafe {
        let [a, b, c, d, e, f, g, h] = ins.map(|row| _mm_loadu_si128(row.as_ptr().cast()));
        // Rows k, k+1 interleaved by byte: columns 0..8 (lo) and 8..16 (hi).
        let (ab0, ab1) = (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b));
        let (cd0, cd1) = (_mm_unpacklo_epi8(c, d), _mm_unpackhi_epi8(c, d));
        let (ef0, ef1) = (_mm_unpacklo_epi8(e, f), _mm_unpackhi_epi8(e, f));
        let (gh0, gh1) = (_mm_unpacklo_epi8(g, h), _mm_unpackhi_epi8(g, h));
        // Rows 0..4 and 4..8 by column: four columns each.
        let (a0, a1) = (_mm_unpacklo_epi16(ab0, cd0), _mm_unpackhi_epi16(ab0, cd0));
        let (e0, e1) = (_mm_unpacklo_epi16(ef0, gh0), _mm_unpackhi_epi16(ef0, gh0));
        let (a2, a3) = (_mm_unpacklo_epi16(ab1, cd1), _mm_unpackhi_epi16(ab1, cd1));
        let (e2, e3) = (_mm_unpacklo_epi16(ef1, gh1), _mm_unpackhi_epi16(ef1, gh1));
        // All eight rows of two columns per register.
        let groups = [
            _mm_unpacklo_epi32(a0, e0),
            _mm_unpackhi_epi32(a0, e0),
            _mm_unpacklo_epi32(a1, e1),
            _mm_unpackhi_epi32(a1, e1),
            _mm_unpacklo_epi32(a2, e2),
            _mm_unpackhi_epi32(a2, e2),
            _mm_unpacklo_epi32(a3, e3),
            _mm_unpackhi_epi32(a3, e3),
        ];
        for (i, x) in groups.into_iter().enumerate() {
            _mm_storeu_si128(out[16 * i..].as_mut_ptr().cast(), transpose_lanes(x));
        }
    }
}

/// `portable::transpose` of each 64-bit lane.
///
/// # Safety
///
/// None beyond SSE2, which x86-64 always has: `unsafe` only because the intrinsics are
/// `unsafe fn`s before Rust 1.87.
#[inline(always)]
unsafe fn transpose_lanes(x: __m128i) -> __m128i {
    let x = swap_blocks::<7>(x, _mm_set1_epi64x(0x00AA_00AA_00AA_00AA));
    let x = swap_blocks::<14>(x, _mm_set1_epi64x(0x0000_CCCC_0000_CCCC));
    swap_blocks::<28>(x, _mm_set1_epi64x(0x0000_0000_F0F0_F0F0))
}

/// One round of the transpose: swap the bits of `mask` with those `SHIFT` above them.
///
/// # Safety
///
/// As [`transpose_lanes`].
#[inline(always)]
unsafe fn swap_blocks<const SHIFT: i32>(x: __m128i, mask: __m128i) -> __m128i {
    let t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64::<SHIFT>(x)), mask);
    _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64::<SHIFT>(t)))
}
