//! The `adz` command as a user runs it: one integration test binary (ripgrep's layout).

mod common;
use common::*;

use std::process::Command;

use adz_datagen::{generate, Kind};

#[test]
fn compress_decompress_files_with_default_names() {
    let dir = Dir::new();
    let data = mixed(3 << 20);
    let input = dir.write("data.bin", &data);
    ok(&run(&["compress", "-q", &input]));
    assert!(dir.path("data.bin.adz").exists());
    std::fs::remove_file(dir.path("data.bin")).unwrap();
    ok(&run(&["decompress", "-q", &dir.s("data.bin.adz")]));
    assert_eq!(std::fs::read(dir.path("data.bin")).unwrap(), data);
    assert_eq!(dir.listing(), vec!["data.bin", "data.bin.adz"]);
}

#[test]
fn every_codec_and_filter_round_trips_through_pipes() {
    let data = mixed(600_000);
    for codec in ["none", "lz4", "lz4:17", "lz4hc:4", "zstd:-3", "zstd:1", "zstd:12", "xz:2"] {
        for filter in [None, Some("shuffle:8")] {
            let mut args = vec!["compress", "--codec", codec, "--block-size", "64K", "-", "-"];
            if let Some(f) = filter {
                args.extend(["--filter", f]);
            }
            let c = run_stdin(&args, &data);
            ok(&c);
            let d = run_stdin(&["decompress", "-", "-"], &c.stdout);
            ok(&d);
            assert!(d.stdout == data, "{codec} {filter:?}: round trip differs");
        }
    }
}

#[test]
fn stdin_to_stdout_is_the_default() {
    let data = generate(Kind::Text, 100_000, 1);
    let c = run_stdin(&["compress"], &data);
    ok(&c);
    assert!(c.stdout.len() < data.len() / 2);
    let d = run_stdin(&["decompress"], &c.stdout);
    ok(&d);
    assert_eq!(d.stdout, data);
}

#[test]
fn empty_input_round_trips() {
    let c = run_stdin(&["compress", "-", "-"], b"");
    ok(&c);
    let d = run_stdin(&["decompress", "-", "-"], &c.stdout);
    ok(&d);
    assert!(d.stdout.is_empty());
}

#[test]
fn refuses_to_overwrite_without_force() {
    let dir = Dir::new();
    let input = dir.write("a.bin", b"hello hello hello");
    let out = dir.write("a.bin.adz", b"precious");
    let e = fail(&run(&["compress", &input]));
    assert!(e.contains("already exists") && e.contains("--force"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    ok(&run(&["compress", "-q", "--force", &input]));
    assert_ne!(std::fs::read(&out).unwrap(), b"precious");
}

#[test]
fn refuses_same_input_and_output() {
    let dir = Dir::new();
    let input = dir.write("a.bin", b"hello");
    let e = fail(&run(&["compress", "-f", &input, &input]));
    assert!(e.contains("same file"), "{e}");
    assert_eq!(std::fs::read(&input).unwrap(), b"hello");
}

#[test]
fn decompress_needs_a_name_it_can_derive() {
    let dir = Dir::new();
    let input = dir.write("noext", b"x");
    let e = fail(&run(&["decompress", &input]));
    assert!(e.contains("does not end in .adz"), "{e}");
}

#[test]
fn failed_decompress_leaves_no_output_file() {
    let dir = Dir::new();
    let data = mixed(2 << 20);
    let input = dir.write("d.bin", &data);
    ok(&run(&["compress", "-q", "--block-size", "256K", &input]));
    let mut file = std::fs::read(dir.path("d.bin.adz")).unwrap();
    // Damage the last frame: decoding fails after most of the output was produced.
    let n = file.len();
    file[n - 400] ^= 0x55;
    let bad = dir.write("bad.adz", &file);
    let e = fail(&run(&["decompress", &bad]));
    assert!(e.contains("checksum") || e.contains("index"), "{e}");
    assert_eq!(dir.listing(), vec!["bad.adz", "d.bin", "d.bin.adz"], "no partial 'bad' file");

    // Truncated: same.
    let cut = dir.write("cut.adz", &file[..file.len() / 2]);
    let e = fail(&run(&["decompress", &cut, &dir.s("cut.out")]));
    assert!(e.contains("truncated"), "{e}");
    assert!(!dir.path("cut.out").exists());
}

#[test]
fn not_an_adz_file() {
    let dir = Dir::new();
    let f = dir.write("x.adz", b"PK\x03\x04 this is a zip");
    for cmd in ["decompress", "inspect", "verify"] {
        let e = fail(&run(&[cmd, &f, if cmd == "decompress" { "-" } else { "--" }]));
        assert!(e.contains("not an adz file"), "{cmd}: {e}");
    }
}

#[test]
fn inspect_reports_codecs_and_frames() {
    let dir = Dir::new();
    let data = mixed(1 << 20);
    let input = dir.write("m.bin", &data);
    ok(&run(&["compress", "-q", "-c", "lz4:1", "-B", "128K", &input]));
    let adzf = dir.s("m.bin.adz");
    let o = run(&["inspect", &adzf]);
    ok(&o);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("format:      adz 1.2"), "{text}");
    assert!(text.contains("frames:      8"), "{text}");
    assert!(text.contains("lz4:1 (stored raw)"), "random quarter should be stored raw: {text}");

    let o = run(&["inspect", "--json", "--frames", &adzf]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["raw_bytes"], data.len() as u64);
    assert_eq!(v["frame_list"].as_array().unwrap().len(), 8);
    assert_eq!(v["frame_list"][1]["raw_offset"], 131072);

    // The same from stdin, by scanning.
    let file = std::fs::read(&adzf).unwrap();
    let o = run_stdin(&["inspect", "--json", "-"], &file);
    ok(&o);
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(w["raw_bytes"], v["raw_bytes"]);
    assert_eq!(w["configs"], v["configs"]);
}

#[test]
fn verify_names_the_bad_frame() {
    let dir = Dir::new();
    let data = generate(Kind::Text, 1 << 20, 9);
    let input = dir.write("t.bin", &data);
    ok(&run(&["compress", "-q", "-B", "128K", &input]));
    let adzf = dir.s("t.bin.adz");
    let o = run(&["verify", &adzf]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("OK (8 frames"));

    let json = run(&["inspect", "--json", "--frames", &adzf]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let off5 = v["frame_list"][5]["file_offset"].as_u64().unwrap() as usize;
    let mut file = std::fs::read(&adzf).unwrap();
    file[off5 + 56 + 10] ^= 1;
    let bad = dir.write("bad.adz", &file);
    let e = fail(&run(&["verify", &bad]));
    assert!(e.contains("frame 5") && e.contains("bad frames: 5"), "{e}");
}

#[test]
fn usage_errors_exit_2_and_teach() {
    let o = run(&["compress", "--codec", "zstd:99"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("-7..=22"), "{}", stderr(&o));
    let o = run(&["compress", "--block-size", "100M"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("64 MiB"), "{}", stderr(&o));
    let o = run(&["compress", "--filter", "delta:3"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["--help"]);
    ok(&o);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("Examples:") && help.contains("decompress"), "{help}");
    let o = run(&["compress", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("shuffle:8"));
}

#[test]
fn missing_input_is_a_clear_error() {
    let e = fail(&run(&["compress", "/nonexistent/file.bin"]));
    assert!(e.contains("/nonexistent/file.bin"), "{e}");
}

#[test]
fn broken_pipe_is_not_an_error() {
    // `adz decompress big.adz - | head -c 10`: the reader goes away early.
    let dir = Dir::new();
    let data = generate(Kind::Text, 8 << 20, 4);
    let input = dir.write("big.bin", &data);
    ok(&run(&["compress", "-q", "-c", "lz4", &input]));
    let script = format!(
        "{} decompress {} - | head -c 10 > /dev/null; exit ${{PIPESTATUS[0]}}",
        env!("CARGO_BIN_EXE_adz"),
        dir.s("big.bin.adz")
    );
    let o = Command::new("bash").arg("-c").arg(&script).output().unwrap();
    assert!(o.status.success(), "adz should exit 0 on a closed pipe: {}", stderr(&o));
}

#[test]
fn output_into_missing_directory_is_an_error_not_a_panic() {
    let dir = Dir::new();
    let input = dir.write("a", b"abc");
    let o = run(&["compress", &input, "/nonexistent-dir/x/y.adz"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn adaptive_strategies_round_trip_with_throttle_and_trace() {
    let dir = Dir::new();
    let data = mixed(3 << 20);
    let input = dir.write("a.bin", &data);
    for strategy in ["throughput", "keep-pace", "prolong=1.5", "archive", "static=lz4:1"] {
        let out = dir.s("a.adz");
        let trace = dir.s("t.jsonl");
        let o = run(&[
            "compress",
            "-f",
            "-s",
            strategy,
            "--throttle",
            "500MB/s",
            "--trace",
            &trace,
            "-T",
            "2",
            "-B",
            "256K",
            &input,
            &out,
        ]);
        ok(&o);
        let summary = stderr(&o);
        assert!(summary.contains("speedup") && summary.contains("link 500.0 MB/s"), "{summary}");
        let lines = std::fs::read_to_string(&trace).unwrap();
        assert_eq!(lines.lines().count(), 12, "{strategy}: one trace line per 256K block");
        let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
        assert!(first["config"].is_string(), "{first}");
        assert_eq!(first["seq"], 0);
        assert!(first["raw"].as_u64() == Some(256 * 1024), "{first}");
        let d = run(&["decompress", "-f", "-q", &out, &dir.s("back.bin")]);
        ok(&d);
        assert!(std::fs::read(dir.path("back.bin")).unwrap() == data, "{strategy}");
    }
}

#[test]
fn no_compress_hint_from_the_command_line() {
    let dir = Dir::new();
    let data = generate(Kind::Text, 1 << 20, 5);
    let input = dir.write("h.bin", &data);
    let out = dir.s("h.adz");
    ok(&run(&[
        "compress",
        "-q",
        "-c",
        "zstd:1",
        "-B",
        "128K",
        "--hint",
        "no-compress=100K..300K",
        &input,
        &out,
    ]));
    let o = run(&["inspect", "--json", "--frames", &out]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let frames = v["frame_list"].as_array().unwrap();
    let raw: Vec<(u64, String)> = frames
        .iter()
        .map(|f| (f["raw_offset"].as_u64().unwrap(), f["config"].as_str().unwrap().to_owned()))
        .collect();
    assert!(raw.contains(&(102_400, "none (stored raw)".to_owned())), "{raw:?}");
    assert!(raw.iter().any(|(o, c)| *o == 307_200 && c.starts_with("zstd:1")), "{raw:?}");
    assert!(raw.iter().all(|(o, c)| !(102_400..307_200).contains(o) || c == "none (stored raw)"));
}

#[test]
fn bad_strategy_link_and_hint_are_usage_errors() {
    for args in [
        vec!["compress", "-s", "fastest"],
        vec!["compress", "--link", "fast"],
        vec!["compress", "--hint", "no-compress=10..5"],
        vec!["compress", "--hint", "squash"],
        vec!["compress", "-s", "throughput", "-c", "lz4"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
    let o = run(&["compress", "-s", "fastest"]);
    assert!(
        stderr(&o).contains("keep-pace"),
        "the error should list the strategies: {}",
        stderr(&o)
    );
}
