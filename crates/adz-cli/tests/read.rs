//! `adz cat`, `adz decompress` through the parallel reader, and `adz recover`, as a user runs
//! them.

mod common;
use common::*;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use adz_datagen::{generate, Kind};

/// A compressed file of `data` with 64 KiB blocks; returns its path.
fn compressed(dir: &Dir, data: &[u8]) -> String {
    let input = dir.write("d.bin", data);
    ok(&run(&["compress", "-q", "-B", "64K", &input, &dir.s("d.adz")]));
    dir.s("d.adz")
}

#[test]
fn cat_prints_exactly_the_range() {
    let dir = Dir::new();
    let data = mixed(1 << 20);
    let file = compressed(&dir, &data);
    for (off, len) in [(0usize, 10usize), (65_530, 20), (1000, 300_000), ((1 << 20) - 5, 100)] {
        let o = run(&["cat", &file, "--offset", &off.to_string(), "--length", &len.to_string()]);
        ok(&o);
        let end = (off + len).min(data.len());
        assert!(o.stdout == data[off..end], "{off}+{len}");
        // The same through stdin, read as a stream.
        let o = adz()
            .args(["cat", "-", "-o", &off.to_string(), "-n", &len.to_string()])
            .stdin(std::fs::File::open(&file).unwrap())
            .output()
            .unwrap();
        ok(&o);
        assert!(o.stdout == data[off..end], "stdin {off}+{len}");
    }
    // Sizes with suffixes, the whole file, and past the end.
    let o = run(&["cat", &file, "-o", "64K", "-n", "1K"]);
    ok(&o);
    assert!(o.stdout == data[65_536..65_536 + 1024]);
    let o = run(&["cat", &file]);
    ok(&o);
    assert!(o.stdout == data);
    let o = run(&["cat", &file, "-o", "10M"]);
    ok(&o);
    assert!(o.stdout.is_empty());
}

#[test]
fn cat_stats_show_that_only_the_needed_frames_are_decoded() {
    let dir = Dir::new();
    let data = mixed(1 << 20);
    let file = compressed(&dir, &data);
    let o = run(&["cat", &file, "-o", "100000", "-n", "4096", "--stats"]);
    ok(&o);
    let e = stderr(&o);
    assert!(e.contains("1 frames decoded (65536 bytes)"), "{e}");
    // Across a frame end: two.
    let o = run(&["cat", &file, "-o", "131000", "-n", "4096", "--stats"]);
    ok(&o);
    assert!(stderr(&o).contains("2 frames decoded"), "{}", stderr(&o));
}

#[test]
fn cat_into_a_closed_pipe_exits_0() {
    let dir = Dir::new();
    let data = generate(Kind::Text, 8 << 20, 4);
    let file = compressed(&dir, &data);
    for args in ["", "--offset 1000 --length 7000000"] {
        let script = format!(
            "{} cat {file} {args} | head -c 10 > /dev/null; exit ${{PIPESTATUS[0]}}",
            env!("CARGO_BIN_EXE_adz")
        );
        let o = Command::new("bash").arg("-c").arg(&script).output().unwrap();
        assert!(o.status.success(), "adz cat should exit 0 on a closed pipe: {}", stderr(&o));
        assert!(o.stderr.is_empty(), "{}", stderr(&o));
    }
}

#[test]
fn decompress_on_any_number_of_threads_gives_the_same_bytes() {
    let dir = Dir::new();
    let data = mixed(3 << 20);
    let file = compressed(&dir, &data);
    for t in ["1", "2", "4"] {
        let out = dir.s(&format!("out{t}"));
        let o = run(&["decompress", "-T", t, "--stats", &file, &out]);
        ok(&o);
        assert!(std::fs::read(&out).unwrap() == data, "-T {t}");
        assert!(stderr(&o).contains("48 frames decoded"), "{}", stderr(&o));
    }
    // To stdout, and from stdin (streamed).
    let o = run(&["decompress", "-T", "2", &file, "-"]);
    ok(&o);
    assert!(o.stdout == data);
    let o = adz()
        .args(["decompress", "--stats", "-", "-"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    ok(&o);
    assert!(o.stdout == data);
    assert!(stderr(&o).contains("48 frames decoded"), "{}", stderr(&o));
}

#[test]
fn a_damaged_frame_names_the_frame_and_leaves_no_output() {
    let dir = Dir::new();
    let data = mixed(1 << 20);
    let file = compressed(&dir, &data);
    let mut bytes = std::fs::read(&file).unwrap();
    // Somewhere in the middle of the frames.
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    let bad = dir.write("bad.adz", &bytes);
    let e = fail(&run(&["decompress", "-T", "2", &bad, &dir.s("bad.out")]));
    assert!(e.contains("frame"), "{e}");
    assert!(!dir.path("bad.out").exists());
    let e = fail(&run(&["cat", &bad]));
    assert!(e.contains("frame"), "{e}");
    // A cut file: the trailer is missing.
    let cut = dir.write("cut.adz", &bytes[..bytes.len() - 10]);
    let e = fail(&run(&["cat", &cut, "-n", "10"]));
    assert!(e.contains("footer") || e.contains("trailer"), "{e}");
    assert_eq!(dir.listing(), ["bad.adz", "cut.adz", "d.adz", "d.bin"]);
}

#[test]
fn recover_keeps_the_complete_frames_of_a_cut_file() {
    let dir = Dir::new();
    let data = mixed(1 << 20);
    let file = compressed(&dir, &data);
    let bytes = std::fs::read(&file).unwrap();
    let cut = dir.write("cut.adz", &bytes[..bytes.len() * 2 / 3]);
    let o = run(&["recover", &cut, &dir.s("rec.adz")]);
    ok(&o);
    let e = stderr(&o);
    assert!(e.contains("kept") && e.contains("lost"), "{e}");
    let o = run(&["decompress", &dir.s("rec.adz"), "-"]);
    ok(&o);
    assert!(!o.stdout.is_empty() && o.stdout.len() % 65_536 == 0);
    assert!(o.stdout == data[..o.stdout.len()]);

    let o = run(&["recover", "--json", &cut, &dir.s("rec2.adz")]);
    ok(&o);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["raw_bytes_kept"].as_u64().unwrap(), o_len(&dir, "rec2.adz"));
    assert_eq!(report["complete"], false);

    // Not an adz file: an error, and no output.
    let junk = dir.write("junk", b"hello, this is not adz");
    let e = fail(&run(&["recover", &junk, &dir.s("junk.adz")]));
    assert!(e.contains("magic") || e.contains("adz"), "{e}");
    assert!(!dir.path("junk.adz").exists());
    // The output is not overwritten without --force.
    fail(&run(&["recover", &cut, &dir.s("rec.adz")]));
}

fn o_len(dir: &Dir, name: &str) -> u64 {
    let o = run(&["decompress", &dir.s(name), "-"]);
    ok(&o);
    o.stdout.len() as u64
}

#[cfg(unix)]
#[test]
fn a_killed_compress_leaves_a_temporary_file_that_recover_salvages() {
    let dir = Dir::new();
    let data = generate(Kind::Text, 4 << 20, 9);
    let mut child = adz()
        .args(["compress", "-q", "-T", "2", "-B", "16K", "-", &dir.s("out.adz")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Half the data, then the writer stalls with the pipe open (a slow producer).
    stdin.write_all(&data[..2 << 20]).unwrap();
    stdin.flush().unwrap();
    let started = Instant::now();
    let temp = loop {
        let found = dir.listing().into_iter().find(|n| n.starts_with(".out.adz.adz-tmp-"));
        if let Some(name) = &found {
            let len = std::fs::metadata(dir.path(name)).map(|m| m.len()).unwrap_or(0);
            if len > 200_000 {
                break dir.s(name);
            }
        }
        assert!(started.elapsed() < Duration::from_secs(60), "compress wrote nothing");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    drop(stdin);
    assert!(!dir.path("out.adz").exists(), "a killed write is never complete-looking");

    let o = run(&["recover", &temp, &dir.s("rec.adz")]);
    ok(&o);
    let o = run(&["decompress", &dir.s("rec.adz"), "-"]);
    ok(&o);
    assert!(o.stdout.len() >= 16 << 10, "at least one frame: {}", o.stdout.len());
    assert!(o.stdout == data[..o.stdout.len()], "the recovered bytes are the input's prefix");
}
