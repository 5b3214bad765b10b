//! `adz compress --tiers`, `adz tier status|flush|evict|gc`, `adz decompress --tiers`.

use std::process::{Command, Output};

fn adz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adz")).args(args).output().expect("run adz")
}

fn ok(args: &[&str]) -> String {
    let out = adz(args);
    assert!(out.status.success(), "adz {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn compress_flush_evict_and_decompress_through_tiers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let conf = d.join("t.toml");
    std::fs::write(
        &conf,
        "batch = \"2MiB\"\n[flush]\nhigh = 0.5\nlow = 0.25\n\
         [[tier]]\nname = \"mem\"\npath = \"mem\"\ncapacity = \"2MiB\"\nbandwidth = \"4GB/s\"\n\
         [[tier]]\nname = \"disk\"\npath = \"disk\"\nbandwidth = \"100MB/s\"\nrung = \"zstd:9\"\n",
    )
    .unwrap();
    let data = adz_datagen::generate(adz_datagen::Kind::Mixed, 12 << 20, 5);
    let input = d.join("in.bin");
    std::fs::write(&input, &data).unwrap();
    let (conf, input) = (conf.to_str().unwrap(), input.to_str().unwrap());

    let out = adz(&["compress", "--tiers", conf, input, "run/1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status = ok(&["tier", "--tiers", conf, "status"]);
    assert!(status.contains("mem") && status.contains("dataset \"run/1\""), "{status}");

    let flushed = ok(&["tier", "--tiers", conf, "flush"]);
    assert!(flushed.starts_with("moved "), "{flushed}");
    let evicted = ok(&["tier", "--tiers", conf, "evict", "mem"]);
    assert!(evicted.starts_with("moved "), "{evicted}");
    let status = ok(&["tier", "--tiers", conf, "status"]);
    let mem = status.lines().find(|l| l.starts_with("mem")).unwrap();
    assert!(mem.contains(" 0 "), "nothing left on mem: {status}");

    let back = d.join("back.bin");
    ok(&["decompress", "--tiers", conf, "run/1", back.to_str().unwrap()]);
    assert!(std::fs::read(&back).unwrap() == data);
    ok(&["tier", "--tiers", conf, "gc"]);

    // Errors are clear and change nothing.
    let out = adz(&["decompress", "--tiers", conf, "nope", "-"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no tiered dataset \"nope\""));
    let out = adz(&["tier", "--tiers", conf, "evict", "disk"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nowhere to evict to"));
    let out = adz(&["compress", "--tiers", conf, input]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("dataset's name as OUTPUT"));
}
