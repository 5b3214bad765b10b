//! `adz` with s3:// locations against a real S3-compatible server (MinIO on 127.0.0.1,
//! started by `make s3-test`). Without `AWS_ENDPOINT_URL` each test says why it is skipped and
//! passes, unless `ADZ_REQUIRE_S3=1`.
#![cfg(feature = "s3")]

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use adz_datagen::{generate, Kind};

#[path = "s3/corrupt.rs"]
mod corrupt;
#[path = "s3/dataset.rs"]
mod dataset;

/// The bucket, or `None` (after saying why) to skip.
fn bucket() -> Option<String> {
    adz_store::conformance::s3_test_bucket()
}

macro_rules! bucket_or_skip {
    () => {
        match bucket() {
            Some(b) => b,
            None => return,
        }
    };
}

fn adz() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_adz"));
    c.arg("--s3-allow-http");
    c
}

fn run(args: &[&str]) -> Output {
    adz().args(args).output().expect("run adz")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "adz failed: {}\n{}", o.status, stderr(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn fail(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(1), "expected exit 1: {}\n{}", o.status, stderr(o));
    stderr(o)
}

/// A prefix of its own for each test and run, so that runs do not see each other's objects.
fn prefix(bucket: &str, test: &str) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("s3://{bucket}/adz-cli-tests/{test}-{}-{nanos}/", std::process::id())
}

#[test]
fn compress_to_s3_read_back_and_list() {
    let bucket = bucket_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    // 24 MiB of mixed data: several 5 MiB parts even after compression of the text.
    let mut data = generate(Kind::Random, 12 << 20, 7);
    data.extend(generate(Kind::Text, 12 << 20, 7));
    let input = dir.path().join("data.bin");
    std::fs::write(&input, &data).unwrap();
    let p = prefix(&bucket, "roundtrip");
    let url = format!("{p}data.bin.adz");

    ok(&run(&[
        "compress",
        "-q",
        "--part-size",
        "5M",
        "--streams",
        "3",
        input.to_str().unwrap(),
        &url,
    ]));

    // Back to a local file, byte for byte.
    let out = dir.path().join("back.bin");
    ok(&run(&["decompress", "-q", &url, out.to_str().unwrap()]));
    assert!(std::fs::read(&out).unwrap() == data, "decompressed bytes differ");
    // And to stdout.
    let o = run(&["decompress", "-q", &url, "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout == data, "decompressed bytes to stdout differ");

    // Random access: only the frames a range needs.
    for (offset, length) in [(0usize, 10usize), (5 << 20, 3 << 20), ((24 << 20) - 7, 100)] {
        let o =
            run(&["cat", &url, "--offset", &offset.to_string(), "--length", &length.to_string()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let end = (offset + length).min(data.len());
        assert!(o.stdout == data[offset..end], "cat {offset} +{length}");
    }

    let v = ok(&run(&["verify", &url]));
    assert!(v.contains("OK") && v.contains(&url), "{v}");

    let info = ok(&run(&["inspect", "--json", &url]));
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["raw_bytes"], data.len() as u64);
    assert_eq!(info["frames"], 24);

    // ls: the object with its stored and raw size; a plain string prefix.
    let listing = ok(&run(&["ls", "--json", &p]));
    let lines: Vec<serde_json::Value> =
        listing.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1, "{listing}");
    assert_eq!(lines[0]["url"], url.as_str());
    assert_eq!(lines[0]["raw_bytes"], data.len() as u64);
    assert_eq!(lines[0]["stored_bytes"], info["file_bytes"]);
    let table = ok(&run(&["ls", &p]));
    assert!(table.contains("data.bin.adz") && table.contains(&data.len().to_string()), "{table}");

    // An existing object is not replaced without --force.
    let e = fail(&run(&["compress", "-q", input.to_str().unwrap(), &url]));
    assert!(e.contains("already exists") && e.contains("--force"), "{e}");
    ok(&run(&["compress", "-q", "-f", "-c", "lz4", input.to_str().unwrap(), &url]));
    ok(&run(&["verify", "-q", &url]));
}

#[test]
fn a_killed_compress_leaves_no_object() {
    let bucket = bucket_or_skip!();
    let url = format!("{}killed.adz", prefix(&bucket, "killed"));
    let mut child = adz()
        .args(["compress", "-q", "-c", "none", "--part-size", "5M", "-", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // 20 MiB: parts are on their way when the process dies.
    stdin.write_all(&generate(Kind::Random, 20 << 20, 9)).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    let e = fail(&run(&["inspect", &url]));
    assert!(e.contains("not found"), "{e}");
    let listing = ok(&run(&["ls", &url]));
    assert!(!listing.contains("killed.adz"), "{listing}");
}

#[test]
fn bad_credentials_bucket_and_endpoint_fail_with_one_clear_line() {
    let bucket = bucket_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.bin");
    std::fs::write(&input, generate(Kind::Text, 100_000, 1)).unwrap();
    let input = input.to_str().unwrap();
    let url = format!("{}x.adz", prefix(&bucket, "errors"));

    let o = adz()
        .args(["compress", "-q", input, &url])
        .env("AWS_SECRET_ACCESS_KEY", "wrong-secret")
        .output()
        .unwrap();
    let e = fail(&o);
    assert!(e.contains("rejected the credentials") || e.contains("access denied"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");

    let e = fail(&run(&["compress", "-q", input, "s3://adz-no-such-bucket/x.adz"]));
    assert!(e.contains("bucket does not exist"), "{e}");
    let e = fail(&run(&["decompress", "-q", "s3://adz-no-such-bucket/x.adz", "-"]));
    assert!(e.contains("bucket does not exist"), "{e}");
    let e = fail(&run(&["inspect", &url]));
    assert!(e.contains("not found"), "{e}");

    let start = Instant::now();
    let e = fail(&run(&["--s3-endpoint", "http://127.0.0.1:1", "inspect", &url]));
    assert!(e.contains("cannot connect") && e.contains("gave up after"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(30), "bounded retries");

    // Plain http must be asked for.
    let o = Command::new(env!("CARGO_BIN_EXE_adz"))
        .args(["inspect", &url])
        .env_remove("AWS_ALLOW_HTTP")
        .output()
        .unwrap();
    assert!(fail(&o).contains("--s3-allow-http"));
    // A URL that is not an object is refused before any request.
    let e = fail(&run(&["inspect", &format!("s3://{bucket}")]));
    assert!(e.contains("no object"), "{e}");
}

#[test]
fn eight_writer_processes_then_eight_reader_processes() {
    let bucket = bucket_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let p = prefix(&bucket, "scale");
    let inputs: Vec<(std::path::PathBuf, Vec<u8>)> = (0..8u64)
        .map(|i| {
            let mut data = generate(Kind::Random, 3 << 20, i);
            data.extend(generate(Kind::Text, (3 << 20) + 4097 * i as usize, i));
            let path = dir.path().join(format!("in-{i}"));
            std::fs::write(&path, &data).unwrap();
            (path, data)
        })
        .collect();
    let url = |i: usize| format!("{p}obj-{i}.adz");
    let writers: Vec<_> = inputs
        .iter()
        .enumerate()
        .map(|(i, (path, _))| {
            adz()
                .args(["compress", "-q", "-T", "1", "--part-size", "5M"])
                .arg(path)
                .arg(url(i))
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for w in writers {
        ok(&w.wait_with_output().unwrap());
    }
    // Each reader process reads another writer's object.
    let readers: Vec<_> = (0..8)
        .map(|i| {
            adz()
                .args(["decompress", "-q", &url((i + 3) % 8), "-"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, r) in readers.into_iter().enumerate() {
        let out = r.wait_with_output().unwrap();
        ok(&out);
        assert!(out.stdout == inputs[(i + 3) % 8].1, "object {} read back wrong", (i + 3) % 8);
    }
    let listing = ok(&run(&["ls", "--json", &p]));
    assert_eq!(listing.lines().count(), 8, "{listing}");
}

#[test]
fn decompress_to_s3() {
    let bucket = bucket_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let data = generate(Kind::Text, 2 << 20, 5);
    let input = dir.path().join("t.bin");
    std::fs::write(&input, &data).unwrap();
    let p = prefix(&bucket, "decompress-to");
    let (packed, unpacked) = (format!("{p}t.adz"), format!("{p}t.bin"));
    ok(&run(&["compress", "-q", input.to_str().unwrap(), &packed]));
    ok(&run(&["decompress", "-q", &packed, &unpacked]));
    let o = run(&["compress", "-q", "-c", "none", &unpacked, "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The raw object read back through adz: compress it to stdout and decompress locally.
    let back = dir.path().join("back.adz");
    std::fs::write(&back, &o.stdout).unwrap();
    let o = run(&["decompress", "-q", back.to_str().unwrap(), "-"]);
    assert!(o.stdout == data);
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&ok(o)).expect("JSON output")
}

#[test]
fn recompress_objects_and_a_prefix_then_analyze_an_object() {
    let bucket = bucket_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let p = prefix(&bucket, "recompress");
    let (a, b) = (generate(Kind::Text, 3 << 20, 21), generate(Kind::Text, 2 << 20, 22));
    let mut urls = Vec::new();
    for (name, data) in [("a", &a), ("b", &b)] {
        let input = dir.path().join(name);
        std::fs::write(&input, data).unwrap();
        let url = format!("{p}runs/{name}.adz");
        ok(&run(&["compress", "-q", "-c", "lz4", "-B", "256K", input.to_str().unwrap(), &url]));
        urls.push(url);
    }
    let size = |url: &str| json(&run(&["inspect", "--json", url]))["file_bytes"].as_u64().unwrap();
    let (a_before, b_before) = (size(&urls[0]), size(&urls[1]));

    // One object by its URL: replaced by a smaller one that reads back the same.
    let r = json(&run(&["recompress", "--json", "--to", "zstd:19", &urls[0]]));
    assert_eq!(r["files"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["files"][0]["name"], urls[0].as_str());
    assert!(size(&urls[0]) < a_before);
    let o = run(&["decompress", "-q", &urls[0], "-"]);
    assert!(o.status.success() && o.stdout == a, "{}", stderr(&o));

    // The prefix: the done object is skipped by its index, the other recompressed.
    let r = json(&run(&["recompress", "--json", "--to", "zstd:19", &format!("{p}runs/")]));
    let files = r["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{r}");
    assert_eq!(files[0]["skipped"], true, "{r}");
    assert_eq!(files[1]["skipped"], false, "{r}");
    assert!(size(&urls[1]) < b_before);
    let o = run(&["decompress", "-q", &urls[1], "-"]);
    assert!(o.status.success() && o.stdout == b, "{}", stderr(&o));
    // Nothing else appeared under the prefix (no temporaries, no copies).
    let listing = ok(&run(&["ls", "--json", &p]));
    assert_eq!(listing.lines().count(), 2, "{listing}");

    // --older-than reads the objects' last-modified times: written just now, none is a day
    // old (the object and the prefix alike); all are at least 0 s old.
    for url in [urls[1].clone(), format!("{p}runs/")] {
        let r = json(&run(&["recompress", "--json", "--to", "xz:6", "--older-than", "1d", &url]));
        assert_eq!(r["files"].as_array().unwrap().len(), 0, "{r}");
    }
    let r = json(&run(&["recompress", "--json", "--to", "xz:6", "--older-than", "0s", &urls[1]]));
    assert_eq!(r["files"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["files"][0]["skipped"], false, "{r}");
    let e = fail(&run(&["recompress", &format!("{p}none/")]));
    assert!(e.contains("no such object"), "{e}");

    // analyze reads an object: 1 MiB of text twice is 2x at fixed 64 KiB chunks.
    let twice = [&a[..1 << 20], &a[..1 << 20]].concat();
    let input = dir.path().join("twice.bin");
    std::fs::write(&input, &twice).unwrap();
    let packed = format!("{p}twice.adz");
    let raw = format!("{p}twice.bin");
    ok(&run(&["compress", "-q", input.to_str().unwrap(), &packed]));
    ok(&run(&["decompress", "-q", &packed, &raw]));
    let local = json(&run(&["analyze", "--json", input.to_str().unwrap()]));
    let remote = json(&run(&["analyze", "--json", &raw]));
    assert_eq!(remote["bytes"], twice.len() as u64);
    let fixed64 = |r: &serde_json::Value| {
        r["dedup"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["method"] == "fixed" && d["chunk_size"] == 65536)
            .unwrap()["dedup_ratio"]
            .as_f64()
            .unwrap()
    };
    assert!((fixed64(&remote) - 2.0).abs() < 1e-9, "{remote}");
    assert_eq!(remote["dedup"], local["dedup"], "the object is read as the file is");
    assert_eq!(remote["rungs"].as_array().unwrap().len(), local["rungs"].as_array().unwrap().len());
}

#[test]
fn a_killed_recompress_leaves_the_old_object_and_a_rerun_finishes() {
    let bucket = bucket_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let data = generate(Kind::Text, 6 << 20, 23);
    let input = dir.path().join("k.bin");
    std::fs::write(&input, &data).unwrap();
    let url = format!("{}k.adz", prefix(&bucket, "recompress-killed"));
    ok(&run(&["compress", "-q", "-c", "lz4", "-B", "256K", input.to_str().unwrap(), &url]));
    let mut child = adz()
        .args(["recompress", "-q", "-T", "1", "--to", "xz:9", &url])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    // The old object, or (if the run got that far) the new one, complete either way.
    ok(&run(&["verify", "-q", &url]));
    let o = run(&["decompress", "-q", &url, "-"]);
    assert!(o.status.success() && o.stdout == data);
    let r = json(&run(&["recompress", "--json", "--to", "xz:9", &url]));
    assert_eq!(r["files"].as_array().unwrap().len(), 1, "{r}");
    let o = run(&["decompress", "-q", &url, "-"]);
    assert!(o.status.success() && o.stdout == data);
    let info = json(&run(&["inspect", "--json", &url]));
    assert!(info["file_bytes"].as_u64().unwrap() < (data.len() / 3) as u64, "{info}");
}

#[test]
fn s3_tiers_take_the_endpoint_flags() {
    let bucket = bucket_or_skip!();
    let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("set with the bucket");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("data.bin");
    std::fs::write(&input, generate(Kind::Text, 3 << 20, 5)).unwrap();
    let s3 = prefix(&bucket, "tiers");
    let conf = d.join("t.toml");
    std::fs::write(
        &conf,
        format!(
            "catalog = \"cat\"\n[[tier]]\nname = \"ram\"\npath = \"ram\"\ncapacity = \"1MiB\"\n\
             bandwidth = \"1GB/s\"\n[[tier]]\nname = \"bucket\"\npath = \"{s3}\"\nbandwidth = \"1GB/s\"\n"
        ),
    )
    .unwrap();
    let (conf, input_s) = (conf.to_str().unwrap(), input.to_str().unwrap());
    // The endpoint only as a flag: the tier has none and the environment none.
    let tiered = |args: &[&str]| {
        adz()
            .args(["--s3-endpoint", &endpoint])
            .args(args)
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_ALLOW_HTTP")
            .current_dir(d)
            .output()
            .unwrap()
    };
    ok(&tiered(&["compress", "-q", "--tiers", conf, input_s, "ds"]));
    let back = d.join("back");
    ok(&tiered(&["decompress", "-q", "--tiers", conf, "ds", back.to_str().unwrap()]));
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&input).unwrap());
    let status = ok(&tiered(&["tier", "--tiers", conf, "status"]));
    assert!(status.contains("bucket"), "{status}");
    // Without the flag the tier has no endpoint to reach (AWS itself is never tried here: the
    // configuration refuses plain http without --s3-allow-http, or fails to connect).
    let o = Command::new(env!("CARGO_BIN_EXE_adz"))
        .args(["decompress", "-q", "--tiers", conf, "ds", "-"])
        .env_remove("AWS_ENDPOINT_URL")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
        .current_dir(d)
        .output()
        .unwrap();
    assert!(!o.status.success());
}
