//! `--link auto` says what it measured and how sure it is (decision 0033).

use std::process::Command;

use adz_datagen::{generate, Kind};

#[test]
fn a_measured_link_is_reported_with_its_interval_in_the_summary_and_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    std::fs::write(&input, generate(Kind::Random, 32 << 20, 3)).unwrap();
    let trace = dir.path().join("t.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_adz"))
        .args(["compress", "-f", "-s", "throughput", "--throttle", "40MB/s", "--trace"])
        .arg(&trace)
        .arg(&input)
        .arg(dir.path().join("out.adz"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Random data goes through raw: every write blocks on the throttle, so the drain rate
    // settles within the write.
    let line = stderr.lines().find(|l| l.contains("link 40.0 MB/s")).expect(&stderr);
    assert!(line.contains("95 % within"), "{line}");
    let last = std::fs::read_to_string(&trace).unwrap();
    let last: serde_json::Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    let (low, high) =
        (last["link_low_mbs"].as_f64().unwrap(), last["link_high_mbs"].as_f64().unwrap());
    assert!(low <= high && low > 30.0 && high < 50.0, "{low}..{high}");
}

/// `--sync-every` flushes a local output to the disk as it goes: the file is whole and the
/// same after a round trip, and a size that is not one is refused before anything is written.
#[test]
fn sync_every_writes_a_whole_file_and_refuses_a_bad_size() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.bin");
    let data = generate(Kind::Text, 5 << 20, 4);
    std::fs::write(&input, &data).unwrap();
    let out = dir.path().join("out.adz");
    let adz = || Command::new(env!("CARGO_BIN_EXE_adz"));
    let run = adz()
        .args(["compress", "-q", "-s", "throughput", "--sync-every", "1M"])
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let back = adz().arg("decompress").arg(&out).arg("-").output().unwrap();
    assert!(back.status.success());
    assert_eq!(back.stdout, data);

    let bad = dir.path().join("bad.adz");
    let run =
        adz().args(["compress", "--sync-every", "lots"]).arg(&input).arg(&bad).output().unwrap();
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("--sync-every"));
    assert!(!bad.exists());
}
