//! `adz recompress` and `adz analyze` as a user runs them.

mod common;
use common::*;

use adz_datagen::{generate, Kind};

fn compress(dir: &Dir, name: &str, data: &[u8], codec: &str) -> String {
    let input = dir.write(&format!("{name}.raw"), data);
    let out = dir.s(name);
    ok(&run(&["compress", "-q", "--codec", codec, "-B", "128K", &input, &out]));
    std::fs::remove_file(&input).unwrap();
    out
}

fn json(o: &std::process::Output) -> serde_json::Value {
    ok(o);
    serde_json::from_slice(&o.stdout).expect("JSON output")
}

#[test]
fn recompress_a_tree_round_trips_smaller_and_a_rerun_skips_it() {
    let dir = Dir::new();
    std::fs::create_dir(dir.path("sub")).unwrap();
    let a = generate(Kind::Text, 1 << 20, 1);
    let b = mixed(1 << 20);
    let fa = compress(&dir, "a.adz", &a, "lz4");
    let fb = compress(&dir, "sub/b.adz", &b, "lz4");
    dir.write("notes.txt", b"not an adz file");
    let before = std::fs::metadata(&fa).unwrap().len();
    let r = json(&run(&["recompress", "--to", "zstd:19", "--json", &dir.s("")]));
    assert_eq!(r["files"].as_array().unwrap().len(), 2, "{r}");
    assert!(r["bytes_saved"].as_u64().unwrap() > 0, "{r}");
    assert!(r["days_to_pay"].as_f64().is_some(), "{r}");
    assert!(std::fs::metadata(&fa).unwrap().len() < before);
    for (f, data) in [(&fa, &a), (&fb, &b)] {
        let d = run(&["decompress", f, "-"]);
        ok(&d);
        assert!(d.stdout == *data, "{f}: round trip differs");
        ok(&run(&["verify", "-q", f]));
    }
    assert_eq!(dir.listing(), vec!["a.adz", "notes.txt", "sub"]);
    let again = json(&run(&["recompress", "--to", "zstd:19", "--json", &dir.s("")]));
    for f in again["files"].as_array().unwrap() {
        assert_eq!(f["skipped"], true, "{again}");
    }
    assert_eq!(again["bytes_saved"], 0);
}

#[test]
fn a_killed_run_is_resumed_its_temporary_removed() {
    // What a kill leaves: one file done, one not, and a temporary of a dead process.
    let dir = Dir::new();
    let data = generate(Kind::Text, 1 << 20, 2);
    let done = compress(&dir, "done.adz", &data, "lz4");
    let todo = compress(&dir, "todo.adz", &data, "lz4");
    ok(&run(&["recompress", "-q", "--to", "zstd:9", &done]));
    let done_bytes = std::fs::read(&done).unwrap();
    let todo_bytes = std::fs::read(&todo).unwrap();
    // No process has pid 999999999 (above Linux's pid_max): a stale temporary.
    dir.write(".todo.adz.adz-incomplete-999999999-0", &todo_bytes[..5000]);
    let r = json(&run(&["recompress", "--to", "zstd:9", "--json", &dir.s("")]));
    assert_eq!(r["stale_temporaries_removed"], 1, "{r}");
    let files = r["files"].as_array().unwrap();
    let by_name =
        |n: &str| files.iter().find(|f| f["name"].as_str().unwrap().ends_with(n)).unwrap();
    assert_eq!(by_name("done.adz")["skipped"], true);
    assert_eq!(by_name("todo.adz")["skipped"], false);
    assert_eq!(std::fs::read(&done).unwrap(), done_bytes, "a finished file is not rewritten");
    assert!(std::fs::read(&todo).unwrap().len() < todo_bytes.len());
    assert_eq!(dir.listing(), vec!["done.adz", "todo.adz"]);
}

#[test]
fn a_corrupt_file_fails_alone_and_stays_as_it_was() {
    let dir = Dir::new();
    let data = generate(Kind::Text, 1 << 20, 3);
    let bad = compress(&dir, "bad.adz", &data, "lz4");
    let good = compress(&dir, "good.adz", &data, "lz4");
    let mut bytes = std::fs::read(&bad).unwrap();
    bytes[32 + 56 + 100] ^= 0x10; // payload of frame 0
    std::fs::write(&bad, &bytes).unwrap();
    let good_before = std::fs::metadata(&good).unwrap().len();
    let o = run(&["recompress", "--to", "zstd:9", &dir.s("")]);
    let err = fail(&o);
    assert!(err.contains("bad.adz") && err.contains("frame 0"), "{err}");
    assert_eq!(std::fs::read(&bad).unwrap(), bytes, "the damaged file is left as it was");
    assert!(std::fs::metadata(&good).unwrap().len() < good_before, "the other file goes on");
    assert_eq!(dir.listing(), vec!["bad.adz", "good.adz"]);
}

#[test]
fn a_dry_run_writes_nothing_and_older_than_filters() {
    let dir = Dir::new();
    let data = generate(Kind::Text, 1 << 20, 4);
    let f = compress(&dir, "x.adz", &data, "lz4");
    let before = std::fs::read(&f).unwrap();
    let r = json(&run(&["recompress", "--dry-run", "--json", "--to", "zstd:9", &f]));
    assert_eq!(std::fs::read(&f).unwrap(), before);
    assert_eq!(r["files"][0]["estimated"], true);
    assert!(r["bytes_saved"].as_u64().unwrap() > 0, "{r}");
    // Just written: not older than a day.
    let r = json(&run(&["recompress", "--json", "--older-than", "1d", &dir.s("")]));
    assert_eq!(r["files"].as_array().unwrap().len(), 0, "{r}");
    assert_eq!(std::fs::read(&f).unwrap(), before);
    let o = run(&["recompress", "-s", "throughput", &f]);
    assert!(fail(&o).contains("archive or static"));
}

#[test]
fn analyze_counts_duplicates_and_zeros() {
    let dir = Dir::new();
    // One 64 KiB block of noise, 8 times, then 1 MiB of zeros.
    let block = generate(Kind::Random, 64 << 10, 5);
    let mut data = block.repeat(8);
    data.extend(vec![0u8; 1 << 20]);
    let f = dir.write("d.bin", &data);
    let r = json(&run(&["analyze", "--json", &f]));
    assert_eq!(r["bytes"], data.len() as u64);
    // 1 MiB of 1.5 MiB is zero blocks.
    let zero = r["zero_block_share"].as_f64().unwrap();
    assert!((zero - 2.0 / 3.0).abs() < 1e-9, "{zero}");
    let dedup = r["dedup"].as_array().unwrap();
    let fixed64 =
        dedup.iter().find(|d| d["method"] == "fixed" && d["chunk_size"] == 65536).unwrap();
    // 8 copies of the block plus 16 zero chunks: 24 chunks, 2 distinct.
    let ratio = fixed64["dedup_ratio"].as_f64().unwrap();
    assert!((ratio - 12.0).abs() < 1e-9, "{fixed64}");
    // Chunks shorter than the 64 KiB period of the noise repeat with it; CDC at 64 KiB
    // (chunks up to 256 KiB, longer than the period) still finds the zero chunks' copies.
    for d in dedup {
        let least = if d["method"] == "cdc" && d["chunk_size"] == 65536 { 1.5 } else { 4.0 };
        assert!(d["dedup_ratio"].as_f64().unwrap() > least, "{d}");
        assert!(d["table_bytes_per_tb"].as_f64().unwrap() > 0.0);
    }
    let rungs = r["rungs"].as_array().unwrap();
    assert_eq!(rungs.len(), 6);
    assert!(rungs.iter().all(|g| g["ratio"].as_f64().unwrap() > 0.5));

    // From stdin, a text table.
    let o = run_stdin(&["analyze", "-"], &data);
    ok(&o);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("zero 4K blocks:   66.7 %") && text.contains("cdc"), "{text}");
}

#[test]
fn killed_mid_file_the_old_file_is_intact_and_a_rerun_finishes() {
    let dir = Dir::new();
    let data = generate(Kind::Text, 6 << 20, 6);
    let f = compress(&dir, "k.adz", &data, "lz4");
    let old = std::fs::read(&f).unwrap();
    let mut child =
        adz().args(["recompress", "-q", "-T", "1", "--to", "xz:9", &f]).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    // Old or new, complete either way; here almost surely the old one.
    let now = std::fs::read(&f).unwrap();
    if now != old {
        ok(&run(&["verify", "-q", &f]));
    }
    let d = run(&["decompress", &f, "-"]);
    ok(&d);
    assert!(d.stdout == data);
    let r = json(&run(&["recompress", "--json", "--to", "xz:9", &dir.s("")]));
    assert_eq!(r["files"].as_array().unwrap().len(), 1, "{r}");
    assert!(std::fs::read(&f).unwrap().len() < old.len());
    assert_eq!(dir.listing(), vec!["k.adz"], "the killed run's temporary is removed");
    let d = run(&["decompress", &f, "-"]);
    ok(&d);
    assert!(d.stdout == data);
}

#[test]
fn sigint_mid_file_removes_the_temporary_and_keeps_the_old_file() {
    use std::os::unix::process::ExitStatusExt;
    let dir = Dir::new();
    let data = generate(Kind::Text, 6 << 20, 7);
    let f = compress(&dir, "i.adz", &data, "lz4");
    let old = std::fs::read(&f).unwrap();
    let mut child =
        adz().args(["recompress", "-q", "-T", "1", "--to", "xz:9", &f]).spawn().unwrap();
    // Wait until the new version's temporary exists, then interrupt as Ctrl-C would.
    let start = std::time::Instant::now();
    while !dir.listing().iter().any(|n| n.contains(".adz-incomplete-")) {
        assert!(start.elapsed().as_secs() < 60, "no temporary appeared");
        assert!(child.try_wait().unwrap().is_none(), "recompress ended before the signal");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(2), "dies of SIGINT: {status:?}");
    assert_eq!(dir.listing(), vec!["i.adz"], "the temporary is removed");
    assert!(std::fs::read(&f).unwrap() == old, "the old file is intact");
}

#[test]
fn a_recompressed_file_keeps_its_mode_and_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = Dir::new();
    let data = generate(Kind::Text, 1 << 20, 8);
    let f = compress(&dir, "m.adz", &data, "lz4");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    let me = std::fs::metadata(&f).unwrap().uid();
    // As root, give the file away too (its owner must survive); else only the mode is ours.
    let owner = if me == 0 {
        std::os::unix::fs::chown(&f, Some(4321), Some(4322)).unwrap();
        (4321, 4322)
    } else {
        let m = std::fs::metadata(&f).unwrap();
        (m.uid(), m.gid())
    };
    let before = std::fs::metadata(&f).unwrap();
    ok(&run(&["recompress", "-q", "--to", "zstd:9", &f]));
    let after = std::fs::metadata(&f).unwrap();
    assert_ne!(after.ino(), before.ino(), "a new file replaced the old one");
    assert_eq!(after.permissions().mode() & 0o7777, 0o640);
    assert_eq!((after.uid(), after.gid()), owner);
    let d = run(&["decompress", &f, "-"]);
    ok(&d);
    assert!(d.stdout == data);
}

#[test]
fn analyze_plot_writes_an_svg_with_each_series() {
    use quick_xml::events::Event;
    let dir = Dir::new();
    let text = generate(Kind::Text, 1 << 20, 9);
    let f = dir.write("twice.bin", &text.repeat(2));
    let svg = dir.s("report.svg");
    let r = json(&run(&["analyze", "--json", "--plot", &svg, &f]));
    assert!(!r["rungs"].as_array().unwrap().is_empty(), "{r}");
    // Well-formed XML whose root is <svg>, with every series named in a legend and every
    // rung named on the axis.
    let body = std::fs::read_to_string(&svg).unwrap();
    let mut reader = quick_xml::Reader::from_str(&body);
    let (mut root, mut texts, mut depth) = (None, String::new(), 0i64);
    loop {
        match reader.read_event().expect("well-formed SVG") {
            Event::Start(e) => {
                root.get_or_insert_with(|| e.name().as_ref().to_vec());
                depth += 1;
            }
            Event::End(_) => depth -= 1,
            Event::Empty(e) => {
                root.get_or_insert_with(|| e.name().as_ref().to_vec());
            }
            Event::Text(t) => {
                texts.push_str(&t.decode().unwrap());
                texts.push('\n');
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0, "every element closed");
    assert_eq!(root.as_deref(), Some(&b"svg"[..]));
    for series in ["compression ratio", "dedup, fixed-size chunks", "dedup, FastCDC chunks"] {
        assert!(texts.contains(series), "{series} missing: {texts}");
    }
    for g in r["rungs"].as_array().unwrap() {
        assert!(texts.contains(g["codec"].as_str().unwrap()), "{g} missing");
    }
    // A path that cannot be written is an error, not a silent skip.
    let o = run(&["analyze", "--plot", &dir.s("no/such/dir/x.svg"), &f]);
    assert!(fail(&o).contains("x.svg"));
}
