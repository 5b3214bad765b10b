//! Shadow compression: a worker compresses a slice of its block with a second rung the
//! controller asked for ([`Decision::shadow`]), and with the block's own rung, so that the
//! controller keeps learning rungs it does not use, on the same bytes.

use adz_control::{Decision, ShadowMeasurement, FILTER_PROBE_BYTES, SHADOW_BYTES};

use adz_format::{CodecSpec, Filters};

use crate::FrameEncoder;

/// Measure `d.shadow` against `d.codec` on the middle [`SHADOW_BYTES`] of `block` (all of a
/// shorter block), the block's codec through `d.filters` and the shadow through
/// `d.shadow_filters` (the same filters unless the decision names others: a filter probe, on
/// the middle [`FILTER_PROBE_BYTES`]). `scratch` holds the frames and is reused. None when the
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
    let slice_len = if d.shadow_filters.is_some() { FILTER_PROBE_BYTES } else { SHADOW_BYTES };
    let len = block.len().min(slice_len);
    let from = (block.len() - len) / 2;
    let slice = &block[from..from + len];
    let mut run = |codec, filters| {
        let cpu0 = cpu_time::ThreadTime::now();
        // Keep ratio 1: the slice's compressed length whenever it does not grow.
        let (header, ..) = encoder.encode_at(slice, 0, codec, filters, 1.0, scratch, 0).ok()?;
        Some((u64::from(header.stored_len), cpu0.elapsed()))
    };
    let (base_stored, base_cpu) = run(d.codec, d.filters)?;
    let (stored, cpu) = run(spec, d.shadow_filters.unwrap_or(d.filters))?;
    Some(ShadowMeasurement {
        decision: *d,
        raw_len: len as u64,
        base_stored,
        base_cpu,
        stored,
        cpu,
    })
}

/// Bytes of a class's data the start's choice of filters compresses through each candidate:
/// more than a probe's slice, since it decides without a second look.
pub(crate) const START_FILTER_BYTES: usize = 64 << 10;

/// The filters a class whose data `bytes` are starts with, at rung `codec`
/// ([`adz_control::start_filters`] on the middle [`START_FILTER_BYTES`] of `bytes`).
pub(crate) fn start_filters(
    encoder: &mut FrameEncoder,
    scratch: &mut Vec<u8>,
    bytes: &[u8],
    codec: CodecSpec,
) -> Filters {
    if codec == CodecSpec::NONE || bytes.is_empty() {
        return Filters::NONE;
    }
    let len = bytes.len().min(START_FILTER_BYTES);
    let from = (bytes.len() - len) / 2;
    let slice = &bytes[from..from + len];
    adz_control::start_filters(|filters| {
        let (header, ..) = encoder.encode_at(slice, 0, codec, filters, 1.0, scratch, 0).ok()?;
        Some(u64::from(header.stored_len))
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
            shadow_filters: None,
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

    /// `n` 32-bit pixels: a smooth image plus noise in the low byte. Shuffled by 4, the high
    /// bytes make long runs; unshuffled, the noise breaks every match.
    fn pixels(n: u32, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..n)
            .flat_map(|i| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let smooth = 70_000.0 + 3_000.0 * (f64::from(i) / 300.0).sin();
                (smooth as u32 + (s >> 56) as u32).to_le_bytes()
            })
            .collect()
    }

    #[test]
    fn a_filter_probe_compresses_the_slice_through_both_chains() {
        let block = pixels(1 << 18, 5);
        let (mut enc, mut scratch) = (FrameEncoder::new(), Vec::new());
        let mut d = decision("zstd:1", Some("zstd:1"));
        d.shadow_filters = Some("shuffle:4".parse().unwrap());
        let m = measure(&mut enc, &mut scratch, &block, &d).expect("a probe");
        assert_eq!(m.raw_len, FILTER_PROBE_BYTES as u64);
        assert!((m.stored as f64) < 0.8 * m.base_stored as f64, "{m:?}");
        // The same decision without the probe's filters measures one chain twice.
        d.shadow_filters = None;
        let m = measure(&mut enc, &mut scratch, &block, &d).unwrap();
        assert_eq!(m.stored, m.base_stored);
        assert_eq!(m.raw_len, SHADOW_BYTES as u64);
    }

    #[test]
    fn the_start_filters_of_pixels_and_of_text() {
        let pixels = pixels(1 << 16, 9);
        let text: Vec<u8> =
            b"Shadows and probes: the controller measures what it does not use.\n".repeat(4000);
        let (mut enc, mut scratch) = (FrameEncoder::new(), Vec::new());
        let zstd1: CodecSpec = "zstd:1".parse().unwrap();
        let f = start_filters(&mut enc, &mut scratch, &pixels, zstd1);
        assert!(f.iter().any(|x| x.to_string() == "shuffle:4"), "{f}");
        assert_eq!(start_filters(&mut enc, &mut scratch, &text, zstd1), Filters::NONE);
        assert_eq!(start_filters(&mut enc, &mut scratch, &pixels, CodecSpec::NONE), Filters::NONE);
    }

    /// f32 particle positions (a cell plus a uniform offset) start on bit planes; sequential
    /// 64-bit ids, whose whole bytes repeat, on a byte chain.
    #[test]
    fn the_start_filters_take_bitshuffle_where_it_stores_least() {
        let mut s = 3u64;
        let particles: Vec<u8> = (0..1u32 << 16)
            .flat_map(|i| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (((i / 8) % 64) as f32 + (s >> 40) as f32 / (1u64 << 24) as f32).to_le_bytes()
            })
            .collect();
        let ids: Vec<u8> = (0..1u64 << 15).flat_map(|i| (1_000_000 + i).to_le_bytes()).collect();
        let (mut enc, mut scratch) = (FrameEncoder::new(), Vec::new());
        for codec in ["lz4:1", "zstd:1"] {
            let codec: CodecSpec = codec.parse().unwrap();
            let f = start_filters(&mut enc, &mut scratch, &particles, codec);
            assert_eq!(f.to_string(), "bitshuffle:4", "{codec}");
            let f = start_filters(&mut enc, &mut scratch, &ids, codec);
            assert!(!f.to_string().contains("bitshuffle"), "{codec}: {f}");
        }
    }
}
