//! `adz dataset` on MinIO: 8 `adz dataset write` processes write one dataset under
//! `s3://bucket/prefix`, then commit, ls, cat (the whole and ranges across parts) and gc; two
//! racing `adz dataset commit --base 0` processes, one wins through the conditional put.

use std::process::{Child, Stdio};

use adz_datagen::{generate, Kind};

use super::{adz, bucket, fail, ok, prefix, run, stderr};

/// Part `i`'s bytes: text and random in turn, distinct lengths.
fn part(i: usize) -> Vec<u8> {
    let kind = if i % 2 == 0 { Kind::Text } else { Kind::Random };
    generate(kind, 150_000 + i * 21_000, 40 + i as u64)
}

/// `n` writer processes at once: the even ones at their displacement, the odd ones appended at
/// commit (after the placed ones, in id order). Returns the dataset's bytes in order.
fn write_parts(dir: &std::path::Path, ds: &str, n: usize) -> Vec<u8> {
    let data: Vec<Vec<u8>> = (0..n).map(part).collect();
    let mut placed = Vec::new();
    let mut children: Vec<Child> = Vec::new();
    for (i, d) in data.iter().enumerate() {
        let file = dir.join(format!("in{i}"));
        std::fs::write(&file, d).unwrap();
        let mut c = adz();
        c.args(["dataset", "write", ds]).arg(&file).args(["--id", &format!("r{i}")]);
        if i % 2 == 0 {
            c.args(["--part-offset", &placed.len().to_string()]);
            placed.extend_from_slice(d);
        }
        c.args(["-B", "32K", "-T", "1"]).stdout(Stdio::null()).stderr(Stdio::piped());
        children.push(c.spawn().expect("spawn adz"));
    }
    for c in children {
        ok(&c.wait_with_output().unwrap());
    }
    for d in data.iter().skip(1).step_by(2) {
        placed.extend_from_slice(d);
    }
    placed
}

#[test]
fn eight_writer_processes_one_dataset_on_s3() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ds = format!("{}ckpt", prefix(&bucket, "dataset"));
    let all = write_parts(dir.path(), &ds, 8);
    assert!(fail(&run(&["dataset", "ls", &ds])).contains("no committed dataset"));

    let o = run(&["dataset", "commit", &ds]);
    assert!(ok(&o).contains("version 1: 8 parts"), "{o:?}");
    let ls = ok(&run(&["dataset", "ls", &ds]));
    assert!(ls.contains(&format!("version 1: {} bytes in 8 parts", all.len())), "{ls}");
    // The S3 flags reach `adz dataset` as every other command (no endpoint in the environment).
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap();
    let o = adz()
        .args(["--s3-endpoint", &endpoint, "dataset", "ls", &ds])
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_ALLOW_HTTP")
        .output()
        .unwrap();
    assert_eq!(ok(&o), ls);

    let o = run(&["dataset", "cat", &ds]);
    ok(&o);
    assert!(o.stdout == all, "the whole dataset differs from the concatenation");
    // Ranges across part boundaries, and `adz cat` of the dataset name.
    let mut rng = 29u64;
    for k in 0..12 {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let offset = (rng >> 33) % all.len() as u64;
        let len = 1 + (rng >> 20) % if k % 3 == 0 { 400_000 } else { 5000 };
        let end = (offset + len).min(all.len() as u64) as usize;
        let args = ["dataset", "cat", &ds, "-o", &offset.to_string(), "-n", &len.to_string()];
        let o = run(&args);
        ok(&o);
        assert!(o.stdout == all[offset as usize..end], "cat {offset}+{len}");
    }
    let o = run(&["cat", &ds, "-o", "140000", "-n", "300000"]);
    ok(&o);
    assert!(o.stdout == all[140_000..440_000], "adz cat of a range of the dataset");

    // A writer after the commit: gc lists it (dry run) and removes it; the dataset still reads.
    let late = dir.path().join("late");
    std::fs::write(&late, b"late").unwrap();
    ok(&adz().args(["dataset", "write", &ds]).arg(&late).args(["--id", "late"]).output().unwrap());
    let dry = ok(&run(&["dataset", "gc", &ds, "--dry-run"]));
    assert!(dry.contains("late.append.adz"), "{dry}");
    let gc = ok(&run(&["dataset", "gc", &ds]));
    assert!(gc.contains("late.append.adz"), "{gc}");
    assert!(!ok(&run(&["dataset", "gc", &ds, "--dry-run"])).contains("late.append.adz"));
    assert!(run(&["dataset", "cat", &ds]).stdout == all);
}

#[test]
fn racing_commit_processes_on_s3_one_wins() {
    let Some(bucket) = bucket() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ds = format!("{}race", prefix(&bucket, "dataset-race"));
    let all = write_parts(dir.path(), &ds, 2);
    let commits: Vec<Child> = (0..4)
        .map(|_| {
            adz()
                .args(["dataset", "commit", &ds, "--base", "0"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = commits.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    assert_eq!(outs.iter().filter(|o| o.status.success()).count(), 1, "{outs:?}");
    for loser in outs.iter().filter(|o| !o.status.success()) {
        let e = fail(loser);
        assert!(e.contains("lost to a concurrent commit") && e.contains("retry"), "{e}");
    }
    let ls = ok(&run(&["dataset", "ls", &ds]));
    assert!(ls.contains("version 1:"), "{ls}");
    let o = run(&["dataset", "cat", &ds]);
    assert!(o.stdout == all, "{}", stderr(&o));
}
