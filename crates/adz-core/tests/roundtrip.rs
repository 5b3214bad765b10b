//! Property round trips: codecs x levels x filters x block sizes x data shapes, through every
//! reading path.

use std::io::{Cursor, Read};

use adz_core::format::{CodecSpec, FilterSpec, Filters};
use adz_core::{decode_stream, verify_stream, Decoder, FileInfo, FrameWriter, FrameWriterOptions};
use adz_datagen::{generate, Kind};
use proptest::prelude::*;

fn codecs() -> impl Strategy<Value = CodecSpec> {
    prop::sample::select(vec![
        "none",
        "lz4:1",
        "lz4:8",
        "lz4:65537",
        "lz4hc:1",
        "lz4hc:9",
        "zstd:-7",
        "zstd:-1",
        "zstd:1",
        "zstd:3",
        "zstd:9",
        "xz:0",
        "xz:6",
    ])
    .prop_map(|s| s.parse().unwrap())
}

fn filters() -> impl Strategy<Value = Filters> {
    let shuffles = prop::sample::select(vec![
        vec![],
        vec![1u8],
        vec![2],
        vec![4],
        vec![8],
        vec![3],
        vec![8, 4],
    ])
    .prop_map(|sizes| {
        let list: Vec<FilterSpec> =
            sizes.iter().map(|&n| FilterSpec::shuffle(n).unwrap()).collect();
        Filters::new(&list).unwrap()
    });
    // Format 1.1's reference-increment filters, alone and chained with shuffle, and 1.2's
    // bitshuffle.
    let increments = prop::sample::select(vec![
        "delta:8",
        "xor:8",
        "delta:8,shuffle:8",
        "xor:8,shuffle:8",
        "delta:1,xor:2,shuffle:4,delta:4",
        "bitshuffle:8",
        "bitshuffle:1",
        "xor:4,bitshuffle:4",
        "delta:2,bitshuffle:3",
    ])
    .prop_map(|s| s.parse::<Filters>().unwrap());
    prop_oneof![shuffles, increments]
}

/// Data shapes around the block size: empty, 1 byte, block-1, block, block+1, several blocks.
fn data(block: usize) -> impl Strategy<Value = Vec<u8>> {
    let lens = prop::sample::select(vec![0, 1, block - 1, block, block + 1, 3 * block + 17]);
    let kinds = prop::sample::select(vec![Kind::Text, Kind::Doubles, Kind::Random, Kind::Sparse]);
    (lens, kinds, any::<u64>(), any::<bool>()).prop_map(|(len, kind, seed, zeros)| {
        if zeros {
            vec![0; len]
        } else {
            generate(kind, len, seed)
        }
    })
}

fn write(data: &[u8], opts: FrameWriterOptions) -> Vec<u8> {
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    // Write in uneven pieces to exercise the block cutter.
    for piece in data.chunks(opts.block_size as usize / 3 + 7) {
        w.write_data(piece).unwrap();
    }
    let (file, summary) = w.finish().unwrap();
    assert_eq!(summary.raw_bytes, data.len() as u64);
    assert_eq!(summary.stored_bytes, file.len() as u64);
    file
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(
        (block, data) in prop::sample::select(vec![1usize, 7, 4096, 65536])
            .prop_flat_map(|b| (Just(b), data(b.max(2)))),
        codec in codecs(),
        filters in filters(),
    ) {
        let opts = FrameWriterOptions { block_size: block as u32, codec, filters, ..FrameWriterOptions::default() };
        let file = write(&data, opts);

        let mut out = Vec::new();
        let stats = decode_stream(&file[..], &mut out, |_| {}).unwrap();
        prop_assert_eq!(&out, &data);
        prop_assert_eq!(stats.frames, data.len().div_ceil(block) as u64);

        let mut out2 = Vec::new();
        Decoder::new(&file[..]).read_to_end(&mut out2).unwrap();
        prop_assert_eq!(&out2, &data);

        let report = verify_stream(&file[..], |_| {});
        prop_assert!(report.problems.is_empty());
        prop_assert_eq!(report.raw_bytes, data.len() as u64);

        let info = FileInfo::read_seekable(Cursor::new(&file), false).unwrap();
        prop_assert_eq!(info.raw_bytes, data.len() as u64);
        prop_assert_eq!(info.file_bytes, file.len() as u64);
        let scanned = FileInfo::scan(&file[..], false).unwrap();
        prop_assert_eq!(scanned, info);
    }
}

#[test]
fn compressible_data_shrinks_and_random_data_is_stored_raw() {
    let opts = FrameWriterOptions { block_size: 65536, ..FrameWriterOptions::default() };
    let text = generate(Kind::Text, 1 << 20, 1);
    let file = write(&text, opts);
    assert!(file.len() * 3 < text.len(), "text should compress 3x with zstd:3: {}", file.len());

    let random = generate(Kind::Random, 1 << 20, 1);
    let file = write(&random, opts);
    let info = FileInfo::read_seekable(Cursor::new(&file), false).unwrap();
    assert_eq!(info.configs.keys().collect::<Vec<_>>(), vec!["zstd:3 (stored raw)"]);
    // Overhead of storing raw: headers and index only.
    assert!(file.len() < random.len() + 16 * (56 + 40) + 100);
}

#[test]
fn summary_counts_configurations() {
    let mut data = generate(Kind::Text, 200_000, 2);
    data.extend(generate(Kind::Random, 200_000, 2));
    let opts = FrameWriterOptions {
        block_size: 100_000,
        codec: "lz4:1".parse().unwrap(),
        ..Default::default()
    };
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_data(&data).unwrap();
    let (_, summary) = w.finish().unwrap();
    assert_eq!(summary.frames, 4);
    assert_eq!(summary.configs.get("lz4:1"), Some(&2));
    assert_eq!(summary.configs.get("lz4:1 (stored raw)"), Some(&2));
}
