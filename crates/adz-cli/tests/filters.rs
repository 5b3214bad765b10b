//! `--filter LIST`, the `filters=` and `reads-per-write=` hints, and `--frame-size auto`, as a
//! user runs them (issue 4: reference-increment filters and multi-reference sizing).

mod common;
use common::*;

use std::io::Write;
use std::process::Stdio;

use adz_datagen::{generate, Kind};

/// `adz inspect --json --frames FILE`.
fn inspect(file: &str) -> serde_json::Value {
    let o = run(&["inspect", "--json", "--frames", file]);
    ok(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

fn frame_configs(info: &serde_json::Value) -> Vec<String> {
    info["frame_list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["config"].as_str().unwrap().to_owned())
        .collect()
}

/// Compress `data` with `args`, check the round trip, and return `inspect`'s view of the file.
fn compress_round_trip(dir: &tempfile::TempDir, data: &[u8], args: &[&str]) -> serde_json::Value {
    let input = dir.path().join("in.bin");
    std::fs::write(&input, data).unwrap();
    let (i, z, back) = (
        input.to_str().unwrap().to_owned(),
        dir.path().join("in.adz").to_str().unwrap().to_owned(),
        dir.path().join("back.bin").to_str().unwrap().to_owned(),
    );
    let mut all = vec!["compress", "-q", "-f"];
    all.extend_from_slice(args);
    all.extend([i.as_str(), z.as_str()]);
    ok(&run(&all));
    ok(&run(&["decompress", "-q", "-f", &z, &back]));
    assert!(std::fs::read(&back).unwrap() == data, "{args:?}: round trip differs");
    ok(&run(&["verify", "-q", &z]));
    inspect(&z)
}

#[test]
fn filter_lists_chain_in_order_with_every_codec() {
    let dir = tempfile::tempdir().unwrap();
    // Doubles with a partial last element, so tails pass through every filter.
    let data = generate(Kind::Doubles, 300_003, 5);
    for codec in ["none", "lz4", "lz4hc:4", "zstd:3", "xz:1"] {
        for list in [
            "delta:8",
            "xor:8",
            "shuffle:8,xor:8",
            "xor:8,shuffle:8",
            "delta:4,xor:2",
            "bitshuffle:8",
            "xor:8,bitshuffle:8",
            "bitshuffle:3",
        ] {
            let info =
                compress_round_trip(&dir, &data, &["-c", codec, "-B", "64K", "--filter", list]);
            assert_eq!(info["version"], "1.2");
            let spec: adz_core::format::CodecSpec = codec.parse().unwrap();
            for c in frame_configs(&info) {
                // Frames whose compression did not pay are stored raw and say so; the others
                // name the chain exactly as given, in order.
                assert!(
                    c == format!("{spec} {list}") || c.ends_with("(stored raw)"),
                    "{codec} {list}: frame config {c}"
                );
                // Codec none keeps the filtered bytes: that is what it was asked for.
                if codec == "none" {
                    assert_eq!(c, format!("none {list}"));
                }
            }
        }
    }
    // Repeating the flag appends to the chain.
    let info = compress_round_trip(
        &dir,
        &data,
        &["-c", "zstd:1", "--filter", "xor:8", "--filter", "shuffle:8"],
    );
    assert!(frame_configs(&info).iter().all(|c| c == "zstd:1 xor:8,shuffle:8"), "{info}");
}

#[test]
fn xor_and_shuffle_beat_plain_zstd_on_doubles() {
    let dir = tempfile::tempdir().unwrap();
    let data = generate(Kind::Doubles, 1 << 20, 1);
    let size = |list: Option<&str>| {
        let mut args = vec!["-c", "zstd:3"];
        if let Some(l) = list {
            args.extend(["--filter", l]);
        }
        compress_round_trip(&dir, &data, &args)["file_bytes"].as_u64().unwrap()
    };
    let (plain, xs) = (size(None), size(Some("xor:8,shuffle:8")));
    assert!(xs < plain, "xor:8,shuffle:8 {xs} vs none {plain}");
}

/// Particle positions as f32 (a cell plus a uniform offset): the sign, exponent and top
/// mantissa bits follow the cell, the rest is noise. Bit planes give LZ4 runs that a byte
/// shuffle leaves mixed with the noise (issue 26, Bitshuffle+LZ4 on VPIC-like data).
#[test]
fn bitshuffle_beats_shuffle_with_lz4_on_particle_floats() {
    let dir = tempfile::tempdir().unwrap();
    let noise = generate(Kind::Random, 1 << 20, 3);
    let data: Vec<u8> = noise
        .chunks_exact(4)
        .enumerate()
        .flat_map(|(i, b)| {
            let u = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) >> 8;
            (((i / 8) % 64) as f32 + u as f32 / (1 << 24) as f32).to_le_bytes()
        })
        .collect();
    let size = |list: &str| {
        let info = compress_round_trip(&dir, &data, &["-c", "lz4", "--filter", list]);
        assert!(frame_configs(&info).iter().all(|c| c == &format!("lz4:1 {list}")), "{info}");
        info["file_bytes"].as_u64().unwrap()
    };
    let (shuffled, bits) = (size("shuffle:4"), size("bitshuffle:4"));
    assert!(bits * 100 < shuffled * 90, "bitshuffle:4 {bits} vs shuffle:4 {shuffled}");
}

#[test]
fn a_filters_hint_gives_a_range_its_own_chain() {
    let dir = tempfile::tempdir().unwrap();
    let data = generate(Kind::Doubles, 512 << 10, 2);
    let info = compress_round_trip(
        &dir,
        &data,
        &[
            "-c",
            "zstd:1",
            "-B",
            "64K",
            "--filter",
            "shuffle:8",
            "--hint",
            "filters=delta:8@128K..256K",
        ],
    );
    let frames = info["frame_list"].as_array().unwrap();
    assert_eq!(frames.len(), 8);
    for f in frames {
        let at = f["raw_offset"].as_u64().unwrap();
        let c = f["config"].as_str().unwrap();
        let want = if (128 << 10..256 << 10).contains(&at) { "delta:8" } else { "shuffle:8" };
        assert!(c.ends_with(want) || c.ends_with("(stored raw)"), "frame at {at}: {c}");
    }
    // `filters=none` switches a file-wide chain off for its range.
    let info = compress_round_trip(
        &dir,
        &data,
        &["-c", "zstd:1", "-B", "64K", "--filter", "xor:8", "--hint", "filters=none@0..64K"],
    );
    let configs = frame_configs(&info);
    assert_eq!(configs[0], "zstd:1", "{configs:?}");
    assert!(configs[1..].iter().all(|c| c.ends_with("xor:8")), "{configs:?}");
}

/// The check: reads-per-write 0, 1 and 10 give different frame sizes, as `inspect`
/// reports them. 4 MiB: 0 -> one frame of the whole file, 1 -> 128 KiB, 10 -> 64 KiB.
#[test]
fn frame_size_auto_follows_reads_per_write() {
    let dir = tempfile::tempdir().unwrap();
    let data = generate(Kind::Text, 4 << 20, 9);
    let mut sizes = Vec::new();
    for k in ["0", "1", "10"] {
        let hint = format!("reads-per-write={k}");
        let info = compress_round_trip(
            &dir,
            &data,
            &["-c", "lz4", "--frame-size", "auto", "--hint", &hint],
        );
        sizes.push(info["block_size"].as_u64().unwrap());
    }
    assert_eq!(sizes, [4 << 20, 128 << 10, 64 << 10]);
    // Without the hint, reads and writes weigh the same (K = 1).
    let info = compress_round_trip(&dir, &data, &["-c", "lz4", "-B", "auto"]);
    assert_eq!(info["block_size"], 128 << 10);
    // A read link 16 times faster than the write link makes reads cheap: 4x larger frames.
    let info = compress_round_trip(
        &dir,
        &data,
        &["-c", "lz4", "-B", "auto", "--link", "100MB/s", "--read-link", "1600MB/s"],
    );
    assert_eq!(info["block_size"], 512 << 10);
    // The old name of the flag still sets a fixed size.
    let info = compress_round_trip(&dir, &data, &["-c", "lz4", "--block-size", "256K"]);
    assert_eq!(info["block_size"], 256 << 10);
}

#[test]
fn frame_size_auto_on_stdin_uses_the_default_and_says_so() {
    let mut child = adz()
        .args(["compress", "-c", "lz4", "-B", "auto", "--hint", "reads-per-write=10", "-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let data = generate(Kind::Text, 3 << 20, 4);
    let mut stdin = child.stdin.take().unwrap();
    let feed = data.clone();
    let writer = std::thread::spawn(move || stdin.write_all(&feed));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    ok(&out);
    assert!(stderr(&out).contains("stdin"), "{}", stderr(&out));
    let dir = tempfile::tempdir().unwrap();
    let z = dir.path().join("s.adz");
    std::fs::write(&z, &out.stdout).unwrap();
    assert_eq!(inspect(z.to_str().unwrap())["block_size"], 1 << 20);
    let help = String::from_utf8_lossy(&run(&["compress", "--help"]).stdout).into_owned();
    assert!(help.contains("auto") && help.contains("stdin"), "{help}");
    assert!(help.contains("xor:N") && help.contains("delta:N"), "{help}");
    assert!(help.contains("bitshuffle:N"), "{help}");
}

#[test]
fn bad_filters_and_hints_are_usage_errors_that_teach() {
    for (args, says) in [
        (&["compress", "--filter", "delta:3"][..], "1, 2, 4 or 8"),
        (&["compress", "--filter", "xor:16"], "xor"),
        (&["compress", "--filter", "gzip:1"], "shuffle, delta, xor, bitshuffle"),
        (&["compress", "--filter", "bitshuffle:0"], "1..=255"),
        (&["compress", "--hint", "filters=bitshuffle:256"], "bitshuffle"),
        (&["compress", "--hint", "filters=delta:5"], "1, 2, 4 or 8"),
        (&["compress", "--hint", "reads-per-write=-1"], ">= 0"),
        (&["compress", "--hint", "reads-per-write=3@0..1M"], "whole file"),
        (&["compress", "--frame-size", "automatic"], "auto"),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    // Five filters do not fit a frame's four slots: an error, and no output file.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.bin");
    std::fs::write(&input, b"some data").unwrap();
    let o = run(&[
        "compress",
        "--filter",
        "xor:8,shuffle:8,delta:4,xor:4,shuffle:2",
        input.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("at most 4"), "{}", stderr(&o));
    assert!(!dir.path().join("in.bin.adz").exists());
}

#[test]
fn version_names_the_format() {
    let o = run(&["--version"]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("format 1.2"));
}

/// Random access reads frames through their filters: `adz cat` of ranges inside, across and
/// at the ends of frames of a delta/xor file equals the same bytes of the input.
#[test]
fn cat_reads_ranges_of_filtered_files() {
    let dir = tempfile::tempdir().unwrap();
    let data = generate(Kind::Doubles, 700_001, 8);
    let info = compress_round_trip(
        &dir,
        &data,
        &[
            "-c",
            "zstd:3",
            "-B",
            "64K",
            "--filter",
            "delta:8,shuffle:8",
            "--hint",
            "filters=xor:8,shuffle:8@100K..300K",
            "--hint",
            "filters=bitshuffle:8@400K..500K",
        ],
    );
    assert!(frame_configs(&info).iter().any(|c| c.ends_with("xor:8,shuffle:8")));
    assert!(frame_configs(&info).iter().any(|c| c.ends_with("bitshuffle:8")));
    let z = dir.path().join("in.adz");
    for (off, len) in
        [(0usize, 10usize), (65_530, 20), (100_000, 250_000), (699_990, 11), (123_457, 1)]
    {
        let o = run(&[
            "cat",
            z.to_str().unwrap(),
            "--offset",
            &off.to_string(),
            "--length",
            &len.to_string(),
        ]);
        ok(&o);
        assert!(o.stdout == data[off..off + len], "range {off}+{len} differs");
    }
}
