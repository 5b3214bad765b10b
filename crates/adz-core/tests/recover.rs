//! Recovery keeps exactly the complete, intact frames of a file whose writer died, and
//! writes them as a valid file.

use std::io::Cursor;

use adz_core::control::Link;
use adz_core::format::FRAME_HEADER_LEN;
use adz_core::store::{FaultPlan, Faulty, MemoryStorage, Storage};
use adz_core::{
    decode_stream, recover, recover_stream, Error, FileInfo, FrameWriter, FrameWriterOptions,
    RecoverReport, WriteOptions, Writer,
};
use adz_datagen::{generate, Kind};

fn sample(block: u32) -> (Vec<u8>, Vec<u8>) {
    let mut data = generate(Kind::Text, 3000, 21);
    data.extend(generate(Kind::Random, 700, 21));
    let opts = FrameWriterOptions {
        block_size: block,
        codec: "zstd:3".parse().unwrap(),
        ..Default::default()
    };
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_data(&data).unwrap();
    (w.finish().unwrap().0, data)
}

/// File offsets where each frame ends.
fn frame_ends(file: &[u8]) -> Vec<u64> {
    let info = FileInfo::read_seekable(Cursor::new(file), true).unwrap();
    info.frame_list
        .unwrap()
        .iter()
        .map(|f| f.file_offset + FRAME_HEADER_LEN as u64 + u64::from(f.stored_len))
        .collect()
}

fn recover_bytes(input: &[u8]) -> Result<(RecoverReport, Vec<u8>), Error> {
    let store = MemoryStorage::new();
    let report = recover_stream(input, store.create("out.adz").unwrap())?;
    Ok((report, store.get("out.adz").unwrap()))
}

fn decode(file: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    decode_stream(file, &mut out, |_| {}).expect("a recovered file is a valid file");
    out
}

#[test]
fn a_file_cut_at_every_offset_keeps_exactly_the_complete_frames() {
    let (file, data) = sample(512);
    let ends = frame_ends(&file);
    assert!(ends.len() >= 7);
    for cut in 0..=file.len() {
        let input = &file[..cut];
        if cut < 32 {
            let err = recover_bytes(input).unwrap_err();
            assert!(matches!(err, Error::Format(_)), "cut {cut}: {err}");
            continue;
        }
        let (report, out) = recover_bytes(input).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        let complete = ends.iter().filter(|&&e| e <= cut as u64).count() as u64;
        assert_eq!(report.frames_kept, complete, "cut {cut}");
        assert_eq!(report.complete, cut == file.len(), "cut {cut}");
        let back = decode(&out);
        assert_eq!(back.len() as u64, report.raw_bytes_kept);
        assert!(back == data[..back.len()], "cut {cut}: recovered bytes differ");
        let kept_end = if complete == 0 { 32 } else { ends[complete as usize - 1] } as usize;
        assert_eq!(&out[..kept_end], &file[..kept_end], "cut {cut}: frames copied as they were");
        assert_eq!(report.input_bytes, cut as u64);
        assert_eq!(report.output_bytes, out.len() as u64);
        if !report.complete {
            assert_eq!(report.bytes_dropped, (cut - kept_end) as u64, "cut {cut}");
        }
    }
}

#[test]
fn a_damaged_frame_ends_the_recovery_before_it() {
    let (file, data) = sample(512);
    let ends = frame_ends(&file);
    // A flipped byte in frame 3's payload: frames 0..3 are kept, and nothing after (the
    // frames after a damaged one are not trusted).
    let mut bad = file.clone();
    bad[ends[2] as usize + FRAME_HEADER_LEN + 4] ^= 0x08;
    let (report, out) = recover_bytes(&bad).unwrap();
    assert_eq!(report.frames_kept, 3);
    assert!(!report.complete);
    assert!(report.reason.contains("frame 3"), "{}", report.reason);
    assert_eq!(report.raw_bytes_lost_at_least, 512);
    assert!(decode(&out) == data[..3 * 512]);

    // A complete file whose trailer is damaged: every frame is kept.
    let mut bad = file.clone();
    let n = bad.len();
    bad[n - 30] ^= 1;
    let (report, out) = recover_bytes(&bad).unwrap();
    assert_eq!(report.frames_kept, ends.len() as u64);
    assert!(!report.complete);
    assert!(decode(&out) == data);

    // An intact file comes back unchanged.
    let (report, out) = recover_bytes(&file).unwrap();
    assert!(report.complete);
    assert_eq!((report.bytes_dropped, report.raw_bytes_lost_at_least), (0, 0));
    assert_eq!(out, file);
}

#[test]
fn a_torn_frame_reports_its_raw_length_as_lost() {
    let (file, _) = sample(512);
    let ends = frame_ends(&file);
    // Cut inside frame 2's payload.
    let (report, _) = recover_bytes(&file[..ends[1] as usize + FRAME_HEADER_LEN + 10]).unwrap();
    assert_eq!(report.frames_kept, 2);
    assert_eq!(report.raw_bytes_lost_at_least, 512);
    assert!(report.reason.contains("truncated"), "{}", report.reason);
}

#[test]
fn recovery_after_a_simulated_crash_keeps_every_frame_written_before_it() {
    let data = generate(Kind::Mixed, 3 << 20, 22);
    let opts = || WriteOptions {
        strategy: "static=zstd:1".parse().unwrap(),
        link: Link::Fixed(100e6),
        threads: 2,
        block_size: 64 << 10,
        ..WriteOptions::default()
    };
    // The file an uninterrupted writer makes (static strategy: the same frames every time).
    let whole = MemoryStorage::new();
    let mut w = Writer::create(&whole, "f.adz", opts()).unwrap();
    w.write(&data).unwrap();
    w.finish().unwrap();
    let full = whole.get("f.adz").unwrap();
    let ends = frame_ends(&full);

    for crash_at in [40u64, 100_000, 777_777, full.len() as u64 - 100] {
        let disk = MemoryStorage::new();
        let store = Faulty::new(disk.clone(), FaultPlan::new().torn_write_after(crash_at));
        let mut w = Writer::create(&store, "f.adz", opts()).unwrap();
        let _ = w.write(&data);
        assert!(w.finish().is_err(), "the crash is an error");
        let torn = disk.get("f.adz").unwrap();
        assert_eq!(torn, &full[..crash_at as usize]);

        let report = recover(&disk, "f.adz", &disk, "r.adz").unwrap();
        let expected = ends.iter().filter(|&&e| e <= crash_at).count() as u64;
        assert_eq!(report.frames_kept, expected, "crash at {crash_at}");
        let back = decode(&disk.get("r.adz").unwrap());
        assert!(back == data[..back.len()]);
        assert_eq!(back.len() as u64, report.raw_bytes_kept);
    }
}

#[test]
fn not_an_adz_file_is_an_error_and_writes_nothing() {
    let store = MemoryStorage::new();
    store.put("x", b"this is not an adz file, just some text").unwrap();
    assert!(recover(&store, "x", &store, "out.adz").is_err());
    assert!(store.size("out.adz").is_err(), "nothing appears under the output name");
}

fn files_in(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

#[test]
fn a_dropped_writer_leaves_its_frames_recoverable_and_abort_leaves_nothing() {
    use adz_core::store::LocalStorage;
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStorage::new(dir.path()).unwrap();
    let data = generate(Kind::Text, 2 << 20, 23);
    let opts = || WriteOptions {
        strategy: "static=zstd:1".parse().unwrap(),
        threads: 2,
        block_size: 32 << 10,
        ..WriteOptions::default()
    };
    let mut w = Writer::create(&store, "w.adz", opts()).unwrap();
    w.write(&data).unwrap();
    drop(w); // as in a panic or an early return: no finish
    assert!(store.size("w.adz").is_err(), "nothing under the name");
    let files = files_in(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.starts_with(".w.adz.adz-tmp-"), "{name}");

    let out = MemoryStorage::new();
    let report = recover_stream(
        std::io::BufReader::new(std::fs::File::open(&files[0]).unwrap()),
        out.create("r.adz").unwrap(),
    )
    .unwrap();
    assert!(!report.complete);
    let back = decode(&out.get("r.adz").unwrap());
    assert!(back == data[..back.len()]);
    assert_eq!(back.len() as u64, report.raw_bytes_kept);
    std::fs::remove_file(&files[0]).unwrap();

    // An explicit abort keeps nothing.
    let mut w = Writer::create(&store, "a.adz", opts()).unwrap();
    w.write(&data).unwrap();
    w.abort().unwrap();
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn a_writer_dropped_after_a_write_error_keeps_nothing() {
    use adz_core::store::LocalStorage;
    let dir = tempfile::tempdir().unwrap();
    let local = LocalStorage::new(dir.path()).unwrap();
    let store = Faulty::new(local, FaultPlan::new().fail_append_after(50_000));
    let opts = WriteOptions {
        strategy: "static=none".parse().unwrap(),
        threads: 2,
        block_size: 16 << 10,
        ..WriteOptions::default()
    };
    let mut w = Writer::create(&store, "e.adz", opts).unwrap();
    let data = generate(Kind::Random, 1 << 20, 24);
    let mut failed = w.write(&data).is_err();
    for _ in 0..100 {
        if failed {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        failed = w.write(&data[..1]).is_err();
    }
    assert!(failed, "the injected append failure reaches the writer");
    drop(w);
    assert!(files_in(dir.path()).is_empty(), "{:?}", files_in(dir.path()));
}
