//! Property round trips: filters, then a codec, then back, over codecs x levels x filters x
//! data shapes. Failures are persisted by proptest next to this file.

mod common;

use adz_codec::{
    apply_filters, max_compressed_len, undo_filters, CodecContext, CodecId, CodecSpec, FilterSpec,
    Filters,
};
use common::{make, Kind};
use proptest::prelude::*;

fn spec(id: CodecId, param: i32) -> CodecSpec {
    CodecSpec::new(id, param).unwrap()
}

/// Levels cheap enough for inputs of tens of KiB.
fn fast_specs() -> impl Strategy<Value = CodecSpec> {
    prop_oneof![
        Just(CodecSpec::NONE),
        prop::sample::select(vec![1, 2, 8, 65537]).prop_map(|p| spec(CodecId::Lz4, p)),
        prop::sample::select(vec![1, 9]).prop_map(|p| spec(CodecId::Lz4Hc, p)),
        prop::sample::select(vec![-7, -1, 1, 3]).prop_map(|p| spec(CodecId::Zstd, p)),
        Just(spec(CodecId::Xz, 0)),
    ]
}

/// Slow levels: used on small inputs only, to keep the suite quick.
fn slow_specs() -> impl Strategy<Value = CodecSpec> {
    prop_oneof![
        Just(spec(CodecId::Lz4Hc, 12)),
        prop::sample::select(vec![19, 22]).prop_map(|p| spec(CodecId::Zstd, p)),
        prop::sample::select(vec![6, 9]).prop_map(|p| spec(CodecId::Xz, p)),
    ]
}

fn filters() -> impl Strategy<Value = Filters> {
    let shuffle = |sizes: &[u8]| {
        let list: Vec<FilterSpec> =
            sizes.iter().map(|&k| FilterSpec::shuffle(k).unwrap()).collect();
        Filters::new(&list).unwrap()
    };
    prop::sample::select(vec![
        Filters::NONE,
        shuffle(&[1]),
        shuffle(&[2]),
        shuffle(&[4]),
        shuffle(&[8]),
        shuffle(&[3]),
        shuffle(&[16]),
        shuffle(&[4, 2]),
        "bitshuffle:4".parse().unwrap(),
        "bitshuffle:1".parse().unwrap(),
        "shuffle:8,bitshuffle:8".parse().unwrap(),
    ])
}

fn length(max: usize) -> impl Strategy<Value = usize> {
    prop_oneof![Just(0), Just(1), 4095..=4097usize, 2..max]
}

fn data(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let kind = prop::sample::select(vec![Kind::Random, Kind::Zeros, Kind::Text, Kind::F64Ramp]);
    (kind, length(max), any::<u64>()).prop_map(|(kind, len, seed)| make(kind, len, seed))
}

fn round_trip(spec: CodecSpec, filters: &Filters, raw: &[u8]) -> Result<(), TestCaseError> {
    let mut ctx = CodecContext::new();
    let mut scratch = Vec::new();
    let mut filtered = vec![0; raw.len()];
    apply_filters(filters, raw, &mut filtered, &mut scratch).unwrap();

    let bound = max_compressed_len(spec.id(), raw.len());
    let mut payload = vec![0; bound];
    let n = ctx.compress_into(spec, &filtered, &mut payload).unwrap();
    prop_assert!(n <= bound);
    payload.truncate(n);

    let mut decoded = vec![0xA5; raw.len()];
    ctx.decompress_into(spec.id(), &payload, &mut decoded).unwrap();
    prop_assert!(decoded == filtered, "{} decoded differs", spec);
    let mut back = vec![0x5A; raw.len()];
    undo_filters(filters, &decoded, &mut back, &mut scratch).unwrap();
    prop_assert!(back == raw, "{} {} round trip differs", spec, filters);
    Ok(())
}

proptest! {
    // Cheap (about 0.3 s in all): more cases cover more of codecs x filters x shapes.
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn round_trips_at_fast_levels(spec in fast_specs(), filters in filters(), raw in data(70_000)) {
        round_trip(spec, &filters, &raw)?;
    }

    #[test]
    fn round_trips_at_slow_levels(spec in slow_specs(), filters in filters(), raw in data(5_000)) {
        round_trip(spec, &filters, &raw)?;
    }
}

/// One context serves a stream of blocks with changing codecs and levels, as a worker's does.
#[test]
fn one_context_serves_many_blocks() {
    let mut ctx = CodecContext::new();
    let specs = ["zstd:3", "lz4:1", "zstd:-7", "xz:1", "zstd:19", "lz4hc:9", "none", "zstd:3"];
    for (i, s) in specs.iter().cycle().take(40).enumerate() {
        let spec: CodecSpec = s.parse().unwrap();
        let raw =
            make(if i % 2 == 0 { Kind::Text } else { Kind::F64Ramp }, 3000 + 997 * i, i as u64);
        let mut payload = vec![0; max_compressed_len(spec.id(), raw.len())];
        let n = ctx.compress_into(spec, &raw, &mut payload).unwrap();
        if spec.id() != CodecId::None {
            assert!(n < raw.len(), "{spec} did not compress {} bytes of {i}", raw.len());
        }
        let mut back = vec![0; raw.len()];
        ctx.decompress_into(spec.id(), &payload[..n], &mut back).unwrap();
        assert_eq!(back, raw, "block {i} with {spec}");
    }
}

/// shuffle:8 must help zstd on f64 data; otherwise the filter is pointless.
#[test]
fn shuffle_helps_on_f64_data() {
    let raw = make(Kind::F64Ramp, 1 << 16, 7);
    let spec: CodecSpec = "zstd:3".parse().unwrap();
    let mut ctx = CodecContext::new();
    let mut size = |filters: Filters| {
        let mut filtered = vec![0; raw.len()];
        apply_filters(&filters, &raw, &mut filtered, &mut Vec::new()).unwrap();
        let mut payload = vec![0; max_compressed_len(spec.id(), raw.len())];
        ctx.compress_into(spec, &filtered, &mut payload).unwrap()
    };
    let plain = size(Filters::NONE);
    let shuffled = size(Filters::new(&[FilterSpec::shuffle(8).unwrap()]).unwrap());
    assert!(shuffled * 2 < plain, "shuffled {shuffled} vs plain {plain}");
}
