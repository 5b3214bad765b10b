//! `adz predict` and `adz compress --predict` as a user runs them (issue 6).

use std::io::Write;
use std::process::{Command, Output, Stdio};

use adz_datagen::{generate, Kind};

fn adz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_adz"))
}

fn run(args: &[&str]) -> Output {
    adz().args(args).output().expect("run adz")
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "adz failed: {}\n{}", o.status, String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&ok(o)).expect("valid JSON")
}

fn file(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, data).unwrap();
    p.to_str().unwrap().to_owned()
}

#[test]
fn text_compresses_on_a_slow_link_and_random_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let text = file(&dir, "text.bin", &generate(Kind::Text, 8 << 20, 1));
    let random = file(&dir, "random.bin", &generate(Kind::Random, 8 << 20, 2));
    // A generous budget: which rungs are measured must not depend on this machine's load.
    let v =
        json(&run(&["predict", &text, "--link", "25MB/s", "-T", "2", "--budget", "1", "--json"]));
    let p = &v["prediction"];
    assert_eq!(p["pays"], true, "{v}");
    assert_ne!(p["start"], "none");
    assert_eq!(p["heuristic"]["class"], "unknown");
    assert!(p["rungs"].as_array().unwrap().len() >= 3);
    assert!(p["rungs"][0]["ratio"].as_f64().unwrap() > 1.5);
    assert!(p["sampled_bytes"].as_f64().unwrap() <= 0.02 * (8 << 20) as f64 + 16384.0);
    // The pipeline's costs were timed on this machine while the file's sample was read.
    assert_eq!(p["path_measured"], true, "{v}");
    let (c, c1) = (p["path_cost"].as_f64().unwrap(), p["serial_cost"].as_f64().unwrap());
    assert!(c1 > 0.0 && c > c1, "{v}");

    let v = json(&run(&["predict", &random, "--link", "25MB/s", "--json"]));
    let p = &v["prediction"];
    assert_eq!(p["pays"], false, "{v}");
    assert_eq!(p["start"], "none");
    assert_eq!(p["incompressible"], true);
    assert_eq!(p["compressed_bytes"], 0);

    // Human-readable: the table, the decision.
    let out = ok(&run(&["predict", &text, "--link", "1GbE", "--rungs", "lz4:1,zstd:1"]));
    assert!(out.contains("lz4:1") && out.contains("zstd:1"), "{out}");
    assert!(out.contains("decision:"), "{out}");
    let out = ok(&run(&["predict", &random, "--link", "1GbE"]));
    assert!(
        out.contains("random-looking") && out.contains("raw: compression does not pay"),
        "{out}"
    );
}

#[test]
fn check_compares_with_a_real_compression() {
    let dir = tempfile::tempdir().unwrap();
    let text = file(&dir, "text.bin", &generate(Kind::Text, 32 << 20, 3));
    let v = json(&run(&[
        "predict",
        &text,
        "--link",
        "1GbE",
        "--rungs",
        "lz4:1,zstd:1",
        "--budget",
        "1",
        "--check",
        "--json",
    ]));
    let check = v["check"].as_array().expect("check figures");
    assert_eq!(check.len(), 2, "{v}");
    for c in check {
        let err = c["ratio_error"].as_f64().unwrap();
        assert!(err.abs() < 0.07, "{c}");
        assert!(c["ratio"].as_f64().unwrap() > 1.5);
        assert!(c["time_error"].is_number());
    }
}

#[test]
fn stdin_is_read_up_to_a_limit() {
    let data = generate(Kind::Text, 3 << 20, 4);
    let mut child = adz()
        .args(["predict", "-", "--stdin-limit", "1MiB", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let v = json(&out);
    assert_eq!(v["prediction"]["data_bytes"], 1 << 20);
    // Link unknown: the least-regret start, with its regret.
    assert!(v["prediction"]["regret"].is_number(), "{v}");
}

#[test]
fn bad_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(&dir, "x", b"abc");
    for args in [
        vec!["predict", "/nonexistent/file"],
        vec!["predict", &f, "--budget", "0"],
        vec!["predict", &f, "--link", "fast"],
        vec!["predict", &f, "--rungs", "gzip:3"],
        vec!["compress", &f, "--predict", "maybe"],
    ] {
        let o = run(&args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(!o.stderr.is_empty());
    }
    // A tiny input still predicts.
    let v = json(&run(&["predict", &f, "--json"]));
    assert_eq!(v["prediction"]["data_bytes"], 3);
}

#[test]
fn compress_predicts_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = generate(Kind::Random, 3 << 20, 5);
    let input = file(&dir, "random.bin", &data);
    let out = dir.path().join("random.adz");
    let o = run(&[
        "compress",
        "-s",
        "throughput",
        "--link",
        "1GbE",
        "-T",
        "2",
        &input,
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("predicted start none"), "{err}");
    // Random data predicted so: the first frame is stored without an attempt.
    let info = run(&["inspect", out.to_str().unwrap(), "--frames", "--json"]);
    let v = json(&info);
    assert_eq!(v["frame_list"][0]["config"], "none (stored raw)", "{v}");
    let back = dir.path().join("back");
    ok(&run(&["decompress", out.to_str().unwrap(), back.to_str().unwrap()]));
    assert_eq!(std::fs::read(&back).unwrap(), data);
    // --predict off: no prediction line.
    let o = run(&[
        "compress",
        "-s",
        "throughput",
        "--link",
        "1GbE",
        "--predict",
        "off",
        "-f",
        &input,
        out.to_str().unwrap(),
    ]);
    ok(&o);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("predicted start"));
}

#[test]
fn the_throttle_is_the_predictions_link_guess() {
    // Text through a 1GbE throttle with --link auto: the prediction knows the link is at most
    // the throttle and starts compressing, instead of hedging over links up to 12 GB/s.
    let dir = tempfile::tempdir().unwrap();
    let data = generate(Kind::Text, 8 << 20, 3);
    let input = file(&dir, "text.bin", &data);
    let out = dir.path().join("text.adz");
    let o = run(&[
        "compress",
        "-s",
        "throughput",
        "--throttle",
        "1GbE",
        "-T",
        "2",
        &input,
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    let line =
        err.lines().find(|l| l.contains("predicted start")).unwrap_or_else(|| panic!("{err}"));
    assert!(!line.contains("predicted start none"), "{err}");
    let info = run(&["inspect", out.to_str().unwrap(), "--frames", "--json"]);
    let v = json(&info);
    let first = v["frame_list"][0]["config"].as_str().unwrap().to_owned();
    assert!(!first.starts_with("none"), "first frame {first}: {v}");
}
