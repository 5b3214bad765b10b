//! `adz dataset`: 8 processes write one dataset to a local directory and it reads as one file;
//! a writer killed before the commit leaves no dataset and gc removes its leftovers; two
//! racing commits, one wins; a corrupted part fails only its own ranges; verify names the bad
//! frames and parts.

mod common;

use std::io::Write;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adz_core::dataset::DatasetReader;
use adz_core::store::LocalStorage;
use adz_core::ReaderOptions;
use common::{adz, fail, mixed, ok, run, stderr, Dir};

/// Part `i`'s bytes: distinct lengths and contents.
fn part(i: usize) -> Vec<u8> {
    let mut d = mixed(90_000 + i * 23_456);
    d.rotate_left(i * 1000);
    d
}

/// Starts writer `i` of `ds` on `file` at `offset`.
fn spawn_writer(ds: &str, i: usize, offset: u64, file: &str) -> Child {
    let offset = offset.to_string();
    let id = format!("r{i}");
    adz()
        .args(["dataset", "write", ds, file, "--id", &id, "--part-offset", &offset])
        .args(["-B", "16K", "-T", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn adz")
}

/// `n` writer processes at once, each with its part at its displacement; returns the
/// concatenation.
fn write_parts(dir: &Dir, ds: &str, n: usize) -> Vec<u8> {
    let mut all = Vec::new();
    let mut children = Vec::new();
    for i in 0..n {
        let data = part(i);
        let file = dir.write(&format!("in{i}"), &data);
        children.push(spawn_writer(ds, i, all.len() as u64, &file));
        all.extend_from_slice(&data);
    }
    for c in children {
        ok(&c.wait_with_output().unwrap());
    }
    all
}

/// A small deterministic generator for the random ranges.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn cat(ds: &str, offset: u64, len: u64) -> std::process::Output {
    run(&["dataset", "cat", ds, "-o", &offset.to_string(), "-n", &len.to_string()])
}

#[test]
fn eight_processes_write_one_dataset_that_reads_as_the_concatenation() {
    let dir = Dir::new();
    let ds = dir.s("ckpt");
    let all = write_parts(&dir, &ds, 8);
    assert!(fail(&run(&["dataset", "ls", &ds])).contains("no committed dataset"));

    let o = run(&["dataset", "commit", &ds]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("version 1: 8 parts"), "{o:?}");

    // The whole read, through the CLI.
    let o = run(&["dataset", "cat", &ds]);
    ok(&o);
    assert!(o.stdout == all, "the whole dataset differs from the concatenation");
    // `adz cat` and `adz decompress` take a dataset name as they take a file.
    let o = run(&["cat", &ds, "-o", "150000", "-n", "200000"]);
    ok(&o);
    assert!(o.stdout == all[150_000..350_000], "adz cat of a range of the dataset");
    let out = dir.s("out.bin");
    ok(&run(&["decompress", &ds, &out]));
    assert!(std::fs::read(&out).unwrap() == all, "adz decompress of the dataset");
    assert!(fail(&run(&["decompress", &ds])).contains("give OUTPUT"));

    // 50 random ranges through the library, each on a fresh reader, which opens only the
    // parts the range touches; a few through the CLI too.
    let store = Arc::new(LocalStorage::new(dir.0.path()).unwrap());
    let manifest = adz_core::dataset::Dataset::latest(&*store, "ckpt").unwrap().unwrap();
    let mut rng = Lcg(29);
    for k in 0..50 {
        let offset = rng.below(all.len() as u64);
        let len = 1 + rng.below(if k % 5 == 0 { 300_000 } else { 5000 });
        let end = (offset + len).min(all.len() as u64);
        let r = DatasetReader::open(store.clone(), "ckpt", ReaderOptions::default()).unwrap();
        let got = r.read_range(offset, len).unwrap();
        assert!(got == all[offset as usize..end as usize], "range {offset}+{len}");
        let touched =
            manifest.parts.iter().filter(|p| p.offset < end && offset < p.offset + p.len).count();
        assert_eq!(r.parts_opened(), touched, "range {offset}+{len} opened other parts");
        if k % 10 == 0 {
            let o = cat(&ds, offset, len);
            ok(&o);
            assert!(o.stdout == all[offset as usize..end as usize], "cat {offset}+{len}");
        }
    }
}

#[test]
fn a_writer_killed_before_the_commit_leaves_no_dataset_and_gc_removes_the_parts() {
    let dir = Dir::new();
    let ds = dir.s("ckpt");
    // One writer finishes its part; the job dies before anyone commits.
    let file = dir.write("in0", &part(0));
    ok(&spawn_writer(&ds, 0, 0, &file).wait_with_output().unwrap());
    // Another is killed in the middle of its part.
    let mut child = adz()
        .args(["dataset", "write", &ds, "-", "--id", "r1", "--part-offset", "1M", "-B", "16K"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&part(1)).unwrap();
    let parts_dir = dir.path("ckpt.parts");
    let deadline = Instant::now() + Duration::from_secs(20);
    // Wait until it has frames in its temporary file, then kill it.
    while !std::fs::read_dir(&parts_dir).unwrap().any(|e| {
        let e = e.unwrap();
        e.file_name().to_string_lossy().starts_with(".r1.") && e.metadata().unwrap().len() > 0
    }) {
        assert!(Instant::now() < deadline, "the writer never started its part");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);

    assert!(fail(&run(&["dataset", "ls", &ds])).contains("no committed dataset"));
    assert!(fail(&run(&["dataset", "cat", &ds])).contains("no committed dataset"));
    assert!(!dir.path("ckpt.manifest").exists());

    let o = run(&["dataset", "gc", &ds, "--dry-run"]);
    ok(&o);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("would remove ckpt.parts/r0.at-0.adz"), "{text}");
    assert!(!text.contains("r1"), "the killed writer's upload is not a part: {text}");
    ok(&run(&["dataset", "gc", &ds]));
    let left: Vec<String> = std::fs::read_dir(&parts_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // Only the killed writer's hidden temporary is left (for `adz recover`), never listed.
    assert!(left.iter().all(|n| n.starts_with(".r1.at-1048576.adz.adz-tmp-")), "{left:?}");
    // A commit now finds nothing to commit but works: an empty dataset.
    ok(&run(&["dataset", "commit", &ds]));
    assert!(run(&["dataset", "cat", &ds]).stdout.is_empty());
}

#[test]
fn two_racing_commits_one_wins_and_the_other_gets_a_clear_error() {
    let dir = Dir::new();
    let ds = dir.s("ckpt");
    let all = write_parts(&dir, &ds, 2);
    let commits: Vec<Child> = (0..2)
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
    let wins = outs.iter().filter(|o| o.status.success()).count();
    assert_eq!(wins, 1, "{outs:?}");
    let loser = outs.iter().find(|o| !o.status.success()).unwrap();
    let e = fail(loser);
    assert!(e.contains("lost to a concurrent commit") && e.contains("retry"), "{e}");
    let o = run(&["dataset", "ls", &ds]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("version 1:"), "{o:?}");
    assert!(run(&["dataset", "cat", &ds]).stdout == all);
}

#[test]
fn a_corrupted_part_fails_its_ranges_naming_part_and_frame_and_the_others_read() {
    let dir = Dir::new();
    let ds = dir.s("ckpt");
    let all = write_parts(&dir, &ds, 3);
    ok(&run(&["dataset", "commit", &ds]));
    let (p0, p1) = (part(0).len() as u64, part(1).len() as u64);
    // Damage a byte of part r1's first frame (past its 32-byte header and frame header).
    let bad = dir.path("ckpt.parts").join(format!("r1.at-{p0}.adz"));
    let mut bytes = std::fs::read(&bad).unwrap();
    bytes[100] ^= 0x55;
    std::fs::write(&bad, bytes).unwrap();

    let e = fail(&cat(&ds, p0 + 10, 100));
    assert!(e.contains(&format!("part ckpt.parts/r1.at-{p0}.adz")) && e.contains("frame 0"), "{e}");
    // The whole read fails too; the other parts' ranges read.
    fail(&run(&["dataset", "cat", &ds]));
    for (offset, len) in [(0, p0), (p0 + p1, 5000), (p0 + 40_000, 100)] {
        let o = cat(&ds, offset, len);
        ok(&o);
        assert!(o.stdout == all[offset as usize..(offset + len) as usize], "{}", stderr(&o));
    }
}

#[test]
fn verify_passes_a_whole_dataset_and_names_every_bad_frame_and_a_swapped_part() {
    let dir = Dir::new();
    let ds = dir.s("ckpt");
    write_parts(&dir, &ds, 3);
    ok(&run(&["dataset", "commit", &ds]));
    let o = run(&["dataset", "verify", &ds]);
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("version 1: OK (3 parts"), "{out}");

    // Damage the payloads of frames 0 and 2 of part r1, and put r0's bytes where r2 was.
    let p0 = part(0).len() as u64;
    let p1 = part(1).len() as u64;
    let r1 = dir.path("ckpt.parts").join(format!("r1.at-{p0}.adz"));
    let f = std::fs::File::open(&r1).unwrap();
    let info = adz_core::FileInfo::read_seekable(std::io::BufReader::new(f), true).unwrap();
    let frames = info.frame_list.unwrap();
    assert!(frames.len() > 3);
    let mut bytes = std::fs::read(&r1).unwrap();
    for k in [0, 2] {
        let mid = (frames[k].file_offset + frames[k + 1].file_offset) / 2;
        bytes[mid as usize] ^= 0x55;
    }
    std::fs::write(&r1, bytes).unwrap();
    let r0 = dir.path("ckpt.parts").join("r0.at-0.adz");
    let r2 = dir.path("ckpt.parts").join(format!("r2.at-{}.adz", p0 + p1));
    std::fs::copy(&r0, &r2).unwrap();

    let e = fail(&run(&["dataset", "verify", &ds]));
    let r1_name = format!("part ckpt.parts/r1.at-{p0}.adz");
    let lines: Vec<&str> = e.lines().filter(|l| l.contains(&r1_name)).collect();
    assert!(lines.iter().any(|l| l.contains("frame 0")), "{e}");
    assert!(lines.iter().any(|l| l.contains("frame 2")), "{e}");
    assert!(!lines.iter().any(|l| l.contains("frame 1 ")), "only the damaged frames: {e}");
    assert!(
        e.contains(&format!("r2.at-{}.adz", p0 + p1))
            && e.contains("not the part the manifest committed"),
        "{e}"
    );
    assert!(e.contains("DAMAGED: 1 of 3 parts are good"), "{e}");
}
