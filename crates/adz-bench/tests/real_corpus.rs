//! The real-data corpus' build refuses bytes it did not pin, with no network: a download whose
//! sha256 differs from the manifest (through `adz-bench datasets`), and a built file whose
//! sha256 differs (through scripts/real-corpus.py on a small manifest of a local `.deb`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_download_with_another_sha256_is_refused() {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("real-corpus.json"))
            .unwrap(),
    )
    .unwrap();
    let grib = manifest["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "python-grib-doc")
        .expect("real-grib's input");
    let (file, pinned) = (grib["file"].as_str().unwrap(), grib["sha256"].as_str().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let downloads = cache.join("datasets/real/downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    std::fs::write(downloads.join(file), b"not the package").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_adz-bench"))
        .args(["datasets", "--cache", cache.to_str().unwrap(), "--datasets", "real-grib"])
        .env_remove("REAL_CORPUS_REPIN")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("sha256 mismatch") && err.contains(pinned), "{err}");
    assert!(err.contains("REAL_CORPUS_REPIN=1"), "says how to re-pin: {err}");
    // Nothing built, and the download is left for inspection, not replaced.
    assert!(!cache.join("datasets/real/real-grib.grib").exists());
    assert_eq!(std::fs::read(downloads.join(file)).unwrap(), b"not the package");
}

/// An `ar` archive (the container of a `.deb`) with the given members.
fn ar(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut v = b"!<arch>\n".to_vec();
    for (name, data) in members {
        let hdr =
            format!("{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", name, 0, 0, 0, 100644, data.len());
        assert_eq!(hdr.len(), 60);
        v.extend_from_slice(hdr.as_bytes());
        v.extend_from_slice(data);
        if data.len() % 2 == 1 {
            v.push(b'\n');
        }
    }
    v
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_owned()
}

/// A built dataset whose sha256 is not the pinned one is refused and kept aside; with the
/// right pin the same build appears under its name, and only then.
#[test]
fn a_built_file_with_another_sha256_is_refused_and_the_right_one_appears() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let downloads = cache.join("datasets/real/downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let deb = downloads.join("fake_1_all.deb");
    std::fs::write(&deb, ar(&[("debian-binary", b"2.0\n"), ("data.tar.xz", b"hello")])).unwrap();
    let manifest = |dataset_sha: &str| {
        serde_json::json!({
            "inputs": [{"name": "fake", "registry": "debian", "version": "1",
                        "file": "fake_1_all.deb", "sha256": sha256(&deb)}],
            "datasets": [{"name": "real-x", "kind": "compressed", "file": "real-x.xz",
                          "parts": [{"input": "fake", "member": "data.tar.xz"}],
                          "bytes": 5, "sha256": dataset_sha}]
        })
        .to_string()
    };
    let mpath = dir.path().join("manifest.json");
    let build = || {
        Command::new("python3")
            .arg(repo().join("scripts/real-corpus.py"))
            .args(["build", "real-x"])
            .env("CACHE", &cache)
            .env("REAL_CORPUS_MANIFEST", &mpath)
            .env_remove("REAL_CORPUS_REPIN")
            .output()
            .unwrap()
    };
    let built = cache.join("datasets/real/real-x.xz");
    std::fs::write(&mpath, manifest(&"0".repeat(64))).unwrap();
    let out = build();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("the built file has 5 bytes"), "{}", stderr(&out));
    assert!(!built.exists());
    let kept = cache.join("datasets/real/real-x.xz.mismatch");
    assert_eq!(std::fs::read(&kept).unwrap(), b"hello");
    std::fs::write(&mpath, manifest(&sha256(&kept))).unwrap();
    let out = build();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(&built).unwrap(), b"hello");
}
