//! The reference-increment filters (`delta:N`, `xor:N`) in chains with `shuffle:N`,
//! `bitshuffle:N` and every codec: property round trips over random chains and data, what they gain on smooth numbers,
//! and typed errors for parameters a decoder must refuse.

mod common;

use adz_codec::{
    apply_filters, delta_decode, delta_encode, max_compressed_len, undo_filters, xor_decode,
    xor_encode, CodecContext, CodecId, CodecSpec, Error, FilterId, FilterSpec, Filters,
};
use common::{make, Kind};
use proptest::prelude::*;

type FilterFn = fn(usize, &[u8], &mut [u8]) -> adz_codec::Result<()>;

fn one_filter() -> impl Strategy<Value = FilterSpec> {
    prop_oneof![
        prop::sample::select(vec![1u8, 2, 4, 8]).prop_map(|n| FilterSpec::delta(n).unwrap()),
        prop::sample::select(vec![1u8, 2, 4, 8]).prop_map(|n| FilterSpec::xor(n).unwrap()),
        prop::sample::select(vec![2u8, 3, 4, 8, 16]).prop_map(|n| FilterSpec::shuffle(n).unwrap()),
        prop::sample::select(vec![1u8, 2, 4, 8, 16])
            .prop_map(|n| FilterSpec::bitshuffle(n).unwrap()),
    ]
}

fn chains() -> impl Strategy<Value = Filters> {
    prop::collection::vec(one_filter(), 1..=4).prop_map(|l| Filters::new(&l).unwrap())
}

fn codecs() -> impl Strategy<Value = CodecSpec> {
    prop::sample::select(vec!["none", "lz4:1", "lz4hc:4", "zstd:-3", "zstd:3", "xz:0"])
        .prop_map(|s| s.parse().unwrap())
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    let kind = prop::sample::select(vec![Kind::Random, Kind::Zeros, Kind::Text, Kind::F64Ramp]);
    let len = prop_oneof![Just(0usize), Just(1), 2..20_000usize];
    (kind, len, any::<u64>()).prop_map(|(k, n, seed)| make(k, n, seed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any chain of up to four filters, then any codec, decodes to the input.
    #[test]
    fn chains_with_every_codec_round_trip(filters in chains(), spec in codecs(), raw in data()) {
        let mut ctx = CodecContext::new();
        let mut scratch = Vec::new();
        let mut filtered = vec![0; raw.len()];
        apply_filters(&filters, &raw, &mut filtered, &mut scratch).unwrap();
        let mut payload = vec![0; max_compressed_len(spec.id(), raw.len())];
        let n = ctx.compress_into(spec, &filtered, &mut payload).unwrap();
        let mut decoded = vec![0; raw.len()];
        ctx.decompress_into(spec.id(), &payload[..n], &mut decoded).unwrap();
        let mut back = vec![0xEE; raw.len()];
        undo_filters(&filters, &decoded, &mut back, &mut scratch).unwrap();
        prop_assert!(back == raw, "{} {} differs", filters, spec);
    }

    /// Each filter alone is a bijection on any bytes: decode(encode(x)) = x and
    /// encode(decode(x)) = x, so no payload decodes to the same bytes as another.
    #[test]
    fn each_filter_is_a_bijection(w in prop::sample::select(vec![1usize, 2, 4, 8]),
                                  raw in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut a = vec![0; raw.len()];
        let mut b = vec![0; raw.len()];
        let pairs: [(FilterFn, FilterFn); 2] =
            [(delta_encode, delta_decode), (xor_encode, xor_decode)];
        for (enc, dec) in pairs {
            enc(w, &raw, &mut a).unwrap();
            dec(w, &a, &mut b).unwrap();
            prop_assert_eq!(&b, &raw);
            dec(w, &raw, &mut a).unwrap();
            enc(w, &a, &mut b).unwrap();
            prop_assert_eq!(&b, &raw);
        }
    }
}

/// On a ramp of integers, delta turns every word after the first into the same small step,
/// and the codec sees that: at least ten times smaller than without the filter.
#[test]
fn delta_shrinks_a_counter_sequence() {
    let raw: Vec<u8> = (0..50_000u64).flat_map(|i| (7 * i + 1_000_003).to_le_bytes()).collect();
    let size = |filters: &str| {
        let f: Filters = filters.parse().unwrap();
        let mut filtered = vec![0; raw.len()];
        apply_filters(&f, &raw, &mut filtered, &mut Vec::new()).unwrap();
        let spec: CodecSpec = "lz4:1".parse().unwrap();
        let mut out = vec![0; max_compressed_len(CodecId::Lz4, raw.len())];
        CodecContext::new().compress_into(spec, &filtered, &mut out).unwrap()
    };
    let (plain, delta) = (size("none"), size("delta:8"));
    assert!(delta * 10 < plain, "delta:8 {delta} vs none {plain}");
}

/// A frame can only name valid parameters (the slot parser refuses the rest, see
/// adz-format); called directly, the filters refuse a bad word size with a typed error.
#[test]
fn bad_word_sizes_are_typed_errors() {
    for w in [0usize, 3, 6, 7, 9, 16, 255] {
        for (id, r) in [
            (FilterId::Delta, delta_decode(w, &[1; 16], &mut [0; 16])),
            (FilterId::Xor, xor_decode(w, &[1; 16], &mut [0; 16])),
        ] {
            match r {
                Err(Error::Filter { filter, message }) => {
                    assert_eq!(filter, id);
                    assert!(message.contains("1, 2, 4 or 8"), "{message}");
                }
                other => panic!("{id} with width {w}: {other:?}"),
            }
        }
    }
    assert!(FilterSpec::delta(3).is_err() && FilterSpec::xor(0).is_err());
    assert!(Filters::from_slots([3, 5, 0, 0, 0, 0, 0, 0]).is_err());
}
