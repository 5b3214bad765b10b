//! The writer classifies blocks and gives each kind of data its own controller. Deterministic:
//! the assertions hold whatever the timing of workers and measurements.

use std::io::Cursor;

use adz_core::control::Link;
use adz_core::store::{MemoryStorage, Storage};
use adz_core::{decode_stream, FileInfo, WriteOptions, Writer};
use adz_datagen::{generate, Kind};

/// After a stretch of random data, the controller that saw it is in probe mode (blocks go raw
/// without an attempt until a probe finds compressible data). Text blocks after it belong to
/// another class, whose controller never saw the random data: every one is compressed.
/// (`archive`: a static strategy never enters probe mode, it keeps its one codec.)
#[test]
fn text_after_random_data_is_compressed_at_once() {
    let block = 64 * 1024;
    let mut data = generate(Kind::Text, 8 * block, 1);
    data.extend(generate(Kind::Random, 16 * block, 2));
    data.extend(generate(Kind::Text, 16 * block, 3));
    for threads in [1, 2, 4] {
        let store = MemoryStorage::new();
        let opts = WriteOptions {
            strategy: "archive".parse().unwrap(),
            link: Link::Fixed(117e6),
            threads,
            block_size: block as u32,
            ..WriteOptions::default()
        };
        let mut w = Writer::create(&store, "f.adz", opts).unwrap();
        w.write(&data).unwrap();
        w.finish().unwrap();
        let file = store.get("f.adz").unwrap();
        let info = FileInfo::read_seekable(Cursor::new(&file), true).unwrap();
        let frames = info.frame_list.unwrap();
        assert_eq!(frames.len(), 40);
        for f in frames.iter().filter(|f| f.raw_offset < 8 * block as u64 || f.frame >= 24) {
            assert!(
                !f.config.starts_with("none") && f.stored_len < f.raw_len / 2,
                "{threads} threads: text frame {} stored as {} ({} of {} bytes)",
                f.frame,
                f.config,
                f.stored_len,
                f.raw_len
            );
        }
        // And the random stretch went to probe mode: most of it was not even attempted.
        let attempted = frames[8..24].iter().filter(|f| !f.config.starts_with("none")).count();
        assert!(attempted <= 8, "{threads} threads: {attempted} of 16 random blocks attempted");
        let mut out = Vec::new();
        decode_stream(&file[..], &mut out, |_| {}).unwrap();
        assert_eq!(out, data);
    }
}
