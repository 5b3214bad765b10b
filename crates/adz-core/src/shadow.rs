//! Shadow compression: a worker compresses a slice of its block with a second rung the
//! controller asked for ([`Decision::shadow`]), and with the block's own rung, so that the
//! controller keeps learning rungs it does not use, on the same bytes.

use adz_control::{Decision, ShadowMeasurement, SHADOW_BYTES};

use crate::FrameEncoder;

/// Measure `d.shadow` against `d.codec` on the middle [`SHADOW_BYTES`] of `block` (all of a
/// shorter block), with `d.filters`. `scratch` holds the frames and is reused. None when the
/// decision asks for no shadow, or a codec fails (the block itself is unaffected).
pub(crate) fn measure(
    encoder: &mut FrameEncoder,
    scratch: &mut Vec<u8>,
    block: &[u8],
    d: &Decision,
) -> Option<ShadowMeasurement> {
    let spec = d.shadow?;
    if block.is_empty() {
        return None;
    }
    let len = block.len().min(SHADOW_BYTES);
    let from = (block.len() - len) / 2;
    let slice = &block[from..from + len];
    let mut run = |codec| {
        let cpu0 = cpu_time::ThreadTime::now();
        // Keep ratio 1: the slice's compressed length whenever it does not grow.
        let (header, ..) = encoder.encode_at(slice, 0, codec, d.filters, 1.0, scratch, 0).ok()?;
        Some((u64::from(header.stored_len), cpu0.elapsed()))
    };
    let (base_stored, base_cpu) = run(d.codec)?;
    let (stored, cpu) = run(spec)?;
    Some(ShadowMeasurement {
        decision: *d,
        raw_len: len as u64,
        base_stored,
        base_cpu,
        stored,
        cpu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use adz_control::Reason;
    use adz_format::{CodecSpec, Filters};

    fn decision(codec: &str, shadow: Option<&str>) -> Decision {
        Decision {
            codec: codec.parse().unwrap(),
            filters: Filters::NONE,
            reason: Reason::Hold,
            seq: 7,
            shadow: shadow.map(|s| s.parse().unwrap()),
        }
    }

    #[test]
    fn measures_both_rungs_on_the_middle_slice() {
        // 16-bit pixels with noise: LZ4 stores them raw, zstd:1 shrinks them.
        let mut s = 3u64;
        let block: Vec<u8> = (0..(1 << 20))
            .map(|i| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if i % 2 == 0 {
                    3 + (s >> 63) as u8
                } else {
                    (s >> 56) as u8
                }
            })
            .collect();
        let (mut enc, mut scratch) = (FrameEncoder::new(), Vec::new());
        let d = decision("lz4:1", Some("zstd:1"));
        let m = measure(&mut enc, &mut scratch, &block, &d).expect("a shadow");
        assert_eq!(m.raw_len, SHADOW_BYTES as u64);
        assert_eq!(m.decision, d);
        assert!(m.base_stored as f64 > 0.97 * m.raw_len as f64, "{m:?}");
        assert!((m.stored as f64) < 0.75 * m.raw_len as f64, "{m:?}");
        // No shadow asked, or an empty block: nothing measured.
        assert!(measure(&mut enc, &mut scratch, &block, &decision("lz4:1", None)).is_none());
        assert!(measure(&mut enc, &mut scratch, &[], &d).is_none());
        // A block shorter than the slice is measured whole.
        let m = measure(&mut enc, &mut scratch, &block[..1000], &d).unwrap();
        assert_eq!(m.raw_len, 1000);
        assert_ne!(m.decision.shadow, Some(CodecSpec::NONE));
    }
}
