//! Reference-increment filters (docs/FORMAT.md, "Filter ids"; MRC's encode/decode, seed paper
//! 003 section II-B): each word is stored as its increment from the word before it, so a
//! smooth sequence becomes a run of small numbers that a codec compresses well.
//!
//! - `delta:N` reads the data as little-endian unsigned integers of N bytes and stores
//!   `x[i] - x[i-1]` (wrapping), with `x[-1] = 0`. For counters, indices, timestamps.
//! - `xor:N` stores `x[i] ^ x[i-1]`. For floating-point data, where neighbours share sign,
//!   exponent and leading mantissa bits, so their XOR has many leading zero bits (Gorilla's
//!   and MRC's encoding); an arithmetic difference of floats' bit patterns has no such
//!   property.
//!
//! N is 1, 2, 4 or 8. Bytes after the last whole word (`len % N`) are copied as they are. Each
//! frame starts again from zero: a frame is its own reference point.
//!
//! Encoding is a subtraction per word that the compiler vectorises; decoding is a running sum
//! (or running XOR), one dependent operation per word.

use adz_format::FilterId;

use crate::{Error, Result};

/// Encode `src` into `dst` with wrapping differences of consecutive `width`-byte little-endian
/// integers.
///
/// ```
/// let src: Vec<u8> = [100u16, 101, 103, 99].iter().flat_map(|v| v.to_le_bytes()).collect();
/// let mut enc = vec![0; 8];
/// adz_codec::delta_encode(2, &src, &mut enc)?;
/// let diffs: Vec<u16> = enc.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
/// assert_eq!(diffs, [100, 1, 2, 65532]); // 99 - 103 wraps
/// let mut back = vec![0; 8];
/// adz_codec::delta_decode(2, &enc, &mut back)?;
/// assert_eq!(back, src);
/// # Ok::<(), adz_codec::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Filter`] if `width` is not 1, 2, 4 or 8 or the buffers differ in length.
pub fn delta_encode(width: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
    run(FilterId::Delta, width, src, dst, Op::DeltaEncode)
}

/// Undo [`delta_encode`]; same requirements.
pub fn delta_decode(width: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
    run(FilterId::Delta, width, src, dst, Op::DeltaDecode)
}

/// Encode `src` into `dst` with the XOR of consecutive `width`-byte words.
///
/// ```
/// let vals = [1.0f64, 1.0000001, 1.0000002];
/// let src: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
/// let mut enc = vec![0; src.len()];
/// adz_codec::xor_encode(8, &src, &mut enc)?;
/// // Neighbours share sign, exponent and the top of the mantissa: the high bytes are zero.
/// assert_eq!(&enc[14..16], &[0, 0]);
/// let mut back = vec![0; src.len()];
/// adz_codec::xor_decode(8, &enc, &mut back)?;
/// assert_eq!(back, src);
/// # Ok::<(), adz_codec::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Filter`] if `width` is not 1, 2, 4 or 8 or the buffers differ in length.
pub fn xor_encode(width: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
    run(FilterId::Xor, width, src, dst, Op::XorEncode)
}

/// Undo [`xor_encode`]; same requirements.
pub fn xor_decode(width: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
    run(FilterId::Xor, width, src, dst, Op::XorDecode)
}

#[derive(Clone, Copy)]
enum Op {
    DeltaEncode,
    DeltaDecode,
    XorEncode,
    XorDecode,
}

fn run(filter: FilterId, width: usize, src: &[u8], dst: &mut [u8], op: Op) -> Result<()> {
    if src.len() != dst.len() {
        return Err(Error::Filter {
            filter,
            message: format!(
                "source is {} bytes but destination {}: filters keep the length",
                src.len(),
                dst.len()
            ),
        });
    }
    match width {
        1 => words::<1, u8>(src, dst, op),
        2 => words::<2, u16>(src, dst, op),
        4 => words::<4, u32>(src, dst, op),
        8 => words::<8, u64>(src, dst, op),
        _ => {
            return Err(Error::Filter {
                filter,
                message: format!("word size {width}: expected 1, 2, 4 or 8 bytes"),
            })
        }
    }
    Ok(())
}

/// The unsigned integer of one word.
trait Word: Copy {
    fn load(b: &[u8]) -> Self;
    fn store(self, b: &mut [u8]);
    fn sub(self, o: Self) -> Self;
    fn add(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    const ZERO: Self;
}

macro_rules! word {
    ($t:ty, $n:literal) => {
        impl Word for $t {
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                let mut a = [0u8; $n];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn xor(self, o: Self) -> Self {
                self ^ o
            }
            const ZERO: Self = 0;
        }
    };
}
word!(u8, 1);
word!(u16, 2);
word!(u32, 4);
word!(u64, 8);

#[inline(always)]
fn words<const N: usize, W: Word>(src: &[u8], dst: &mut [u8], op: Op) {
    let body = src.len() / N * N;
    let (src_body, src_tail) = src.split_at(body);
    let (dst_body, dst_tail) = dst.split_at_mut(body);
    let pairs = src_body.chunks_exact(N).zip(dst_body.chunks_exact_mut(N));
    let mut prev = W::ZERO;
    match op {
        // Encoders keep the previous *input* word; decoders the previous *output* word.
        Op::DeltaEncode => {
            for (s, d) in pairs {
                let x = W::load(s);
                x.sub(prev).store(d);
                prev = x;
            }
        }
        Op::XorEncode => {
            for (s, d) in pairs {
                let x = W::load(s);
                x.xor(prev).store(d);
                prev = x;
            }
        }
        Op::DeltaDecode => {
            for (s, d) in pairs {
                prev = prev.add(W::load(s));
                prev.store(d);
            }
        }
        Op::XorDecode => {
            for (s, d) in pairs {
                prev = prev.xor(W::load(s));
                prev.store(d);
            }
        }
    }
    dst_tail.copy_from_slice(src_tail);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition on u128 arithmetic, one word at a time.
    fn reference(width: usize, src: &[u8], xor: bool) -> Vec<u8> {
        let mut out = src.to_vec();
        let n = src.len() / width;
        let mask = if width == 16 { u128::MAX } else { (1u128 << (8 * width)) - 1 };
        let word = |i: usize| {
            src[i * width..(i + 1) * width]
                .iter()
                .rev()
                .fold(0u128, |acc, &b| (acc << 8) | u128::from(b))
        };
        for i in 0..n {
            let prev = if i == 0 { 0 } else { word(i - 1) };
            let v = if xor { word(i) ^ prev } else { word(i).wrapping_sub(prev) & mask };
            for j in 0..width {
                out[i * width + j] = (v >> (8 * j)) as u8;
            }
        }
        out
    }

    fn bytes(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(151).wrapping_add((i >> 5) as u8)).collect()
    }

    #[test]
    fn matches_definition_and_inverts_for_all_small_shapes() {
        for width in [1, 2, 4, 8] {
            for len in 0..=70 {
                let src = bytes(len);
                let mut enc = vec![0xAA; len];
                let mut back = vec![0x55; len];
                delta_encode(width, &src, &mut enc).unwrap();
                assert_eq!(enc, reference(width, &src, false), "delta:{width} len {len}");
                delta_decode(width, &enc, &mut back).unwrap();
                assert_eq!(back, src, "delta:{width} len {len}");
                xor_encode(width, &src, &mut enc).unwrap();
                assert_eq!(enc, reference(width, &src, true), "xor:{width} len {len}");
                xor_decode(width, &enc, &mut back).unwrap();
                assert_eq!(back, src, "xor:{width} len {len}");
            }
        }
    }

    #[test]
    fn trailing_partial_word_passes_through() {
        let src = [1, 0, 0, 0, 3, 0, 0, 0, 9, 8, 7];
        let mut enc = [0; 11];
        delta_encode(4, &src, &mut enc).unwrap();
        assert_eq!(enc, [1, 0, 0, 0, 2, 0, 0, 0, 9, 8, 7]);
        xor_encode(4, &src, &mut enc).unwrap();
        assert_eq!(enc, [1, 0, 0, 0, 2, 0, 0, 0, 9, 8, 7]);
    }

    #[test]
    fn smooth_integers_become_small_differences() {
        let src: Vec<u8> = (0..100u64).flat_map(|i| (1_000_000 + 3 * i).to_le_bytes()).collect();
        let mut enc = vec![0; src.len()];
        delta_encode(8, &src, &mut enc).unwrap();
        for (i, w) in enc.chunks(8).enumerate().skip(1) {
            assert_eq!(u64::from_le_bytes(w.try_into().unwrap()), 3, "word {i}");
        }
    }

    #[test]
    fn bad_width_and_lengths_are_typed_errors() {
        for w in [0, 3, 5, 16] {
            let e = delta_decode(w, &[0; 8], &mut [0; 8]).unwrap_err();
            assert!(matches!(e, Error::Filter { filter: FilterId::Delta, .. }), "{e:?}");
            let e = xor_decode(w, &[0; 8], &mut [0; 8]).unwrap_err();
            assert!(matches!(e, Error::Filter { filter: FilterId::Xor, .. }), "{e:?}");
        }
        let e = xor_encode(8, &[0; 8], &mut [0; 9]).unwrap_err();
        assert!(matches!(e, Error::Filter { filter: FilterId::Xor, .. }), "{e:?}");
    }
}
