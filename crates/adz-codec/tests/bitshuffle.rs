//! The `bitshuffle:N` filter through the filter pipeline and the codecs: round trips at every
//! element size and at lengths that are not a multiple of 8 elements or of the element size,
//! a bijection on any bytes (so no payload is refused or decodes like another), and what it
//! gains over a byte shuffle on numbers whose high bits barely change.

mod common;

use adz_codec::{
    apply_filters, bitshuffle, bitunshuffle, max_compressed_len, undo_filters, CodecContext,
    CodecSpec, FilterSpec, Filters,
};
use common::{make, Kind};
use proptest::prelude::*;

fn one(w: u8) -> Filters {
    Filters::new(&[FilterSpec::bitshuffle(w).unwrap()]).unwrap()
}

fn round_trip(filters: &Filters, spec: CodecSpec, raw: &[u8]) -> usize {
    let mut ctx = CodecContext::new();
    let mut scratch = Vec::new();
    let mut filtered = vec![0; raw.len()];
    apply_filters(filters, raw, &mut filtered, &mut scratch).unwrap();
    let mut payload = vec![0; max_compressed_len(spec.id(), raw.len())];
    let n = ctx.compress_into(spec, &filtered, &mut payload).unwrap();
    let mut decoded = vec![0; raw.len()];
    ctx.decompress_into(spec.id(), &payload[..n], &mut decoded).unwrap();
    let mut back = vec![0xEE; raw.len()];
    undo_filters(filters, &decoded, &mut back, &mut scratch).unwrap();
    assert!(back == raw, "{filters} {spec}: {} bytes differ", raw.len());
    n
}

/// Every element size the format allows, at the lengths around its edges: fewer than 8
/// elements (all copied), 8 elements, one element or a partial one more, and enough for the
/// SIMD kernel's steps and several tiles.
#[test]
fn every_element_size_round_trips_at_its_edge_lengths() {
    let spec: CodecSpec = "lz4:1".parse().unwrap();
    for w in 1..=255usize {
        let f = one(w as u8);
        for len in [
            0,
            1,
            w - 1,
            w,
            8 * w - 1,
            8 * w,
            8 * w + 1,
            9 * w + w / 2,
            16 * w + 3,
            136 * w + w - 1,
            (40_000 / w) * w + 5,
        ] {
            round_trip(&f, spec, &make(Kind::Random, len, (w * 1000 + len) as u64));
        }
    }
}

fn codecs() -> impl Strategy<Value = CodecSpec> {
    prop::sample::select(vec!["none", "lz4:1", "lz4hc:4", "zstd:-3", "zstd:3", "xz:0"])
        .prop_map(|s| s.parse().unwrap())
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    let kind = prop::sample::select(vec![Kind::Random, Kind::Zeros, Kind::Text, Kind::F64Ramp]);
    let len = prop_oneof![Just(0usize), 1..64usize, 64..70_000usize];
    (kind, len, any::<u64>()).prop_map(|(k, n, seed)| make(k, n, seed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any element size, any codec, any length: the frame's bytes come back.
    #[test]
    fn any_element_size_with_every_codec_round_trips(
        w in prop_oneof![1u8..=17, any::<u8>().prop_map(|w| w.max(1))],
        spec in codecs(),
        raw in data(),
    ) {
        round_trip(&one(w), spec, &raw);
    }

    /// bitunshuffle(bitshuffle(x)) = x and bitshuffle(bitunshuffle(x)) = x for any bytes:
    /// every payload undoes to exactly one input, so there is nothing for a decoder to refuse.
    #[test]
    fn is_a_bijection_on_any_bytes(
        w in 1usize..=255,
        raw in prop::collection::vec(any::<u8>(), 0..3000),
    ) {
        let (mut a, mut b) = (vec![0; raw.len()], vec![0; raw.len()]);
        bitshuffle(w, &raw, &mut a);
        bitunshuffle(w, &a, &mut b);
        prop_assert_eq!(&b, &raw);
        bitunshuffle(w, &raw, &mut a);
        bitshuffle(w, &a, &mut b);
        prop_assert_eq!(&b, &raw);
    }
}

/// Particle positions as f32: a cell index plus a uniform offset, so sign, exponent and the
/// top mantissa bits follow the cell and the rest is noise. A byte shuffle leaves the noise
/// in the bytes that hold the slow bits; bit planes separate them, and LZ4 finds the runs.
#[test]
fn bitshuffle_beats_shuffle_on_slowly_varying_floats_with_lz4() {
    let mut x = 7u64;
    let raw: Vec<u8> = (0..65_536)
        .flat_map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (((i / 8) % 64) as f32 + (x >> 40) as f32 / (1u64 << 24) as f32).to_le_bytes()
        })
        .collect();
    let lz4: CodecSpec = "lz4:1".parse().unwrap();
    let size = |f: &str| round_trip(&f.parse().unwrap(), lz4, &raw);
    let (shuffled, bits) = (size("shuffle:4"), size("bitshuffle:4"));
    assert!(bits * 100 < shuffled * 90, "bitshuffle:4 {bits} vs shuffle:4 {shuffled}");
    assert!(size("none") > shuffled);
}

/// Where whole bytes repeat (sequential 64-bit ids), a byte shuffle already makes the runs
/// and bit planes only cut them up: bitshuffle is no substitute for shuffle there.
#[test]
fn shuffle_beats_bitshuffle_on_sequential_ids() {
    let raw: Vec<u8> = (0..32_768u64).flat_map(|i| (1_000_000 + i).to_le_bytes()).collect();
    let zstd: CodecSpec = "zstd:1".parse().unwrap();
    let (shuffled, bits) = (
        round_trip(&"shuffle:8".parse().unwrap(), zstd, &raw),
        round_trip(&"bitshuffle:8".parse().unwrap(), zstd, &raw),
    );
    assert!(shuffled < bits, "shuffle:8 {shuffled} vs bitshuffle:8 {bits}");
}
