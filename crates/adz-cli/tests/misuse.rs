//! Misuse: what a careless user or a hostile environment does to the CLI (issue 24). Each test
//! checks the exit status, the message, and that no stray or misleading file is left.

mod common;

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use adz_datagen::{generate, Kind};
use common::*;

fn usage_error(o: &std::process::Output) -> String {
    assert_eq!(o.status.code(), Some(2), "expected exit 2: {}\n{}", o.status, stderr(o));
    stderr(o)
}

/// Run `script` in bash with `$ADZ` set to the binary.
fn bash(script: &str) -> std::process::Output {
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("ADZ", env!("CARGO_BIN_EXE_adz"))
        .output()
        .expect("run bash")
}

#[test]
fn the_trace_is_never_the_input_or_the_output_nor_replaced_without_force() {
    let d = Dir::new();
    let data = generate(Kind::Random, 100_000, 1);
    let v = d.write("v.bin", &data);
    let o = d.s("o.adz");

    let e = fail(&run(&["compress", "-q", &v, &o, "--trace", &v]));
    assert!(e.contains("is the input"), "{e}");
    assert_eq!(std::fs::read(&v).unwrap(), data, "the input is intact");
    assert_eq!(d.listing(), ["v.bin"]);

    let e = fail(&run(&["compress", "-q", &v, &o, "--trace", &o]));
    assert!(e.contains("is the output"), "{e}");
    assert_eq!(d.listing(), ["v.bin"]);

    // A hard link to the input is the input, whatever its name.
    std::fs::hard_link(d.path("v.bin"), d.path("link")).unwrap();
    let e = fail(&run(&["compress", "-q", &v, &o, "--trace", &d.s("link"), "--force"]));
    assert!(e.contains("is the input"), "{e}");
    assert_eq!(std::fs::read(d.path("link")).unwrap(), data);
    std::fs::remove_file(d.path("link")).unwrap();

    let t = d.write("t.jsonl", b"keep me");
    let e = fail(&run(&["compress", "-q", &v, &o, "--trace", &t]));
    assert!(e.contains("already exists") && e.contains("--force"), "{e}");
    assert_eq!(std::fs::read(&t).unwrap(), b"keep me");
    assert_eq!(d.listing(), ["t.jsonl", "v.bin"]);

    // An input that cannot be opened leaves no trace file either.
    let e = fail(&run(&["compress", "-q", &d.s("missing"), &o, "--trace", &d.s("new.jsonl")]));
    assert!(e.contains("missing"), "{e}");
    assert_eq!(d.listing(), ["t.jsonl", "v.bin"]);

    ok(&run(&["compress", "-q", &v, &o, "--trace", &t, "--force"]));
    let trace = std::fs::read_to_string(&t).unwrap();
    assert!(trace.lines().count() >= 1 && trace.starts_with('{'), "{trace}");

    let e = fail(&run(&["compress", "-q", &v, &v, "--force"]));
    assert!(e.contains("same file"), "{e}");
    assert_eq!(std::fs::read(&v).unwrap(), data);
}

#[test]
fn extreme_threads_and_buffers_are_usage_errors_that_create_nothing() {
    let d = Dir::new();
    let v = d.write("v.bin", &generate(Kind::Text, 200_000, 1));
    let o = d.s("o.adz");
    for (args, want) in [
        (vec!["--threads", "100000"], "threads 100000 is too large"),
        (vec!["--buffers", "1000000000"], "buffers 1000000000 is too large"),
        // Within the count, but 2 x 60000 x 64 MiB is no machine's memory.
        (vec!["--buffers", "60000", "-B", "64M"], "memory available"),
    ] {
        let started = Instant::now();
        let mut all = vec!["compress", "-q", &v, &o];
        all.extend(&args);
        let e = usage_error(&run(&all));
        assert!(e.contains(want) && e.starts_with("adz: error:"), "{args:?}: {e}");
        assert_eq!(d.listing(), ["v.bin"], "{args:?}: nothing created");
        assert!(started.elapsed() < Duration::from_secs(10), "{args:?}: refused at once");
    }
    // Through stdout too: refused before anything is written.
    let o = run_stdin(&["compress", "--threads", "5000", "-", "-"], b"abc");
    usage_error(&o);
    assert!(o.stdout.is_empty());
}

#[test]
fn a_directory_as_input_is_one_clear_error_and_leaves_no_temporary() {
    let d = Dir::new();
    std::fs::create_dir(d.path("somedir")).unwrap();
    let dir = std::fs::File::open(d.path("somedir")).unwrap();
    let o = adz()
        .args(["compress", "-q", "-", &d.s("o.adz")])
        .stdin(Stdio::from(dir))
        .output()
        .unwrap();
    let e = fail(&o);
    assert_eq!(e.matches("Is a directory").count(), 1, "the cause once: {e}");
    assert_eq!(d.listing(), ["somedir"], "no temporary without a complete frame");
}

#[test]
fn static_codecs_never_probe_other_codecs() {
    let d = Dir::new();
    let v = d.write("r.bin", &generate(Kind::Random, 4 << 20, 2));
    let t = d.s("t.jsonl");
    ok(&run(&["compress", "-q", "--codec", "lz4", "-B", "64K", &v, &d.s("r.adz"), "--trace", &t]));
    let trace = std::fs::read_to_string(&t).unwrap();
    assert_eq!(trace.lines().count(), 64);
    for line in trace.lines() {
        let rec: serde_json::Value = serde_json::from_str(line).unwrap();
        let config = rec["config"].as_str().unwrap();
        assert!(config.starts_with("lz4"), "one codec for every block: {config}");
    }
}

/// A tmpfs of 2 MiB mounted on a new directory, unmounted when dropped; None (with the reason
/// printed) where mounting is not allowed.
struct SmallDisk {
    dir: Dir,
}

impl SmallDisk {
    fn mount() -> Option<SmallDisk> {
        let dir = Dir::new();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
            .arg(dir.0.path())
            .output();
        match o {
            Ok(o) if o.status.success() => Some(SmallDisk { dir }),
            Ok(o) => {
                eprintln!("skipped: cannot mount a tmpfs (not root?): {}", stderr(&o).trim());
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount: {e}");
                None
            }
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.0.path()).status();
    }
}

#[test]
fn a_full_disk_names_the_cause_and_leaves_nothing() {
    let Some(disk) = SmallDisk::mount() else { return };
    let d = Dir::new();
    let data = generate(Kind::Random, 6 << 20, 3);
    let v = d.write("v.bin", &data);
    let e = fail(&run(&["compress", "-q", "-T", "2", &v, &disk.dir.s("o.adz")]));
    assert!(e.contains("No space left on device"), "{e}");
    assert_eq!(e.matches("No space left on device").count(), 1, "{e}");
    assert!(disk.dir.listing().is_empty(), "{:?}", disk.dir.listing());

    let a = d.s("v.adz");
    ok(&run(&["compress", "-q", "--codec", "none", &v, &a]));
    let e = fail(&run(&["decompress", "-q", &a, &disk.dir.s("v.bin")]));
    assert!(e.contains("No space left on device"), "{e}");
    assert!(disk.dir.listing().is_empty(), "{:?}", disk.dir.listing());
}

#[test]
fn a_closed_stdout_is_an_error_not_a_silent_loss() {
    let d = Dir::new();
    let v = d.write("v.bin", &generate(Kind::Text, 100_000, 1));
    let a = d.s("v.adz");
    ok(&run(&["compress", "-q", &v, &a]));
    for cmd in [
        format!("$ADZ decompress {a} - >&-"),
        format!("$ADZ cat {a} >&-"),
        format!("$ADZ compress {v} - >&-"),
        format!("$ADZ inspect {a} >&-"),
        format!("$ADZ recover {a} - >&-"),
    ] {
        let o = bash(&cmd);
        let e = fail(&o);
        assert!(e.contains("standard output is closed"), "{cmd}: {e}");
    }
    // Commands that do not write to stdout do not care.
    ok(&bash(&format!("$ADZ compress -q {v} {} >&-", d.s("w.adz"))));
    ok(&bash(&format!("$ADZ verify -q {a} >&-")));
    std::fs::remove_file(d.path("w.adz")).unwrap();
    // /dev/null is not closed: a discarded output is what was asked for.
    for null_mode in ["> /dev/null", "1<> /dev/null"] {
        let o = bash(&format!("$ADZ decompress {a} - {null_mode}"));
        ok(&o);
    }
    assert_eq!(d.listing(), ["v.adz", "v.bin"]);
}

/// Run `adz args` with stdout a pipe of which 10 bytes are read before it is closed.
fn cut_pipe(args: &[&str]) -> std::process::Output {
    let mut child = adz()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut ten = [0u8; 10];
    out.read_exact(&mut ten).unwrap();
    drop(out);
    child.wait_with_output().unwrap()
}

#[test]
fn a_broken_pipe_fails_an_archive_but_not_a_decompression() {
    let d = Dir::new();
    let data = generate(Kind::Random, 8 << 20, 4);
    let v = d.write("big.bin", &data);
    let a = d.s("big.adz");
    ok(&run(&["compress", "-q", &v, &a]));
    for _ in 0..3 {
        // The archive on stdout is cut: never success, always the same message.
        let o = cut_pipe(&["compress", "-q", &v, "-"]);
        let e = fail(&o);
        assert!(e.contains("Broken pipe"), "{e}");
        let o = cut_pipe(&["recover", "-q", &a, "-"]);
        let e = fail(&o);
        assert!(e.contains("Broken pipe"), "{e}");
        // A reader of decompressed data that stops early wanted no more.
        for args in [&["decompress", "-q", &a, "-"][..], &["cat", &a]] {
            let o = cut_pipe(args);
            ok(&o);
            assert!(stderr(&o).is_empty(), "{args:?}: {}", stderr(&o));
        }
    }
    // The shell's view: pipefail sees the failure.
    let o = bash(&format!("set -o pipefail; $ADZ compress -q {v} - | head -c 10 > /dev/null"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(d.listing(), ["big.adz", "big.bin"]);
}

fn temporaries(dir: &Path, marker: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(marker))
        .collect()
}

/// Wait (at most 20 s) until a file with `marker` in `dir` is at least `min` bytes long.
fn wait_for_temporary(dir: &Path, marker: &str, min: u64) -> std::path::PathBuf {
    let started = Instant::now();
    loop {
        if let Some(p) = temporaries(dir, marker)
            .into_iter()
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() >= min))
        {
            return p;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no {marker} file in {dir:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, sig: &str) {
    let st = Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().unwrap();
    assert!(st.success());
}

/// `adz args` reading stdin from a pipe that the test feeds `data` into and keeps open.
fn feeding(args: &[&str], data: &[u8]) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = adz()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(data).unwrap();
    stdin.flush().unwrap();
    (child, stdin)
}

#[test]
fn an_interrupted_compress_keeps_complete_frames_for_recover_and_nothing_else() {
    let d = Dir::new();
    let data = generate(Kind::Text, 2 << 20, 5);
    for sig in ["INT", "TERM", "KILL"] {
        let o = d.s("o.adz");
        let (child, stdin) = feeding(&["compress", "-q", "-B", "64K", "-T", "1", "-", &o], &data);
        // The 2 MiB are 32 frames; a few of them reach the file while stdin stays open.
        let tmp = wait_for_temporary(d.0.path(), ".o.adz.adz-tmp-", 4096);
        std::thread::sleep(Duration::from_millis(300));
        signal(child.id(), sig);
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        let signo = match sig {
            "INT" => 2,
            "TERM" => 15,
            _ => 9,
        };
        assert_eq!(out.status.signal(), Some(signo), "{sig}: {}", stderr(&out));
        if sig != "KILL" {
            let e = stderr(&out);
            assert!(e.contains("adz recover") && e.contains(tmp.to_str().unwrap()), "{sig}: {e}");
        }
        assert!(!d.path("o.adz").exists(), "{sig}: nothing complete-looking");
        let saved = d.s("saved.adz");
        ok(&run(&["recover", "-q", tmp.to_str().unwrap(), &saved]));
        let back = run(&["decompress", "-q", &saved, "-"]);
        ok(&back);
        assert!(!back.stdout.is_empty() && data.starts_with(&back.stdout), "{sig}: a prefix");
        std::fs::remove_file(&tmp).unwrap();
        std::fs::remove_file(&saved).unwrap();
        assert!(d.listing().is_empty(), "{sig}: {:?}", d.listing());
    }

    // Interrupted before any frame is complete: nothing to recover, nothing left.
    let (child, stdin) = feeding(&["compress", "-q", "-", &d.s("o.adz")], b"only a few bytes");
    wait_for_temporary(d.0.path(), ".o.adz.adz-tmp-", 0);
    signal(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.signal(), Some(2));
    assert!(!stderr(&out).contains("recover"), "{}", stderr(&out));
    assert!(d.listing().is_empty(), "{:?}", d.listing());
}

#[test]
fn an_interrupted_decompress_leaves_nothing_and_a_killed_one_nothing_that_looks_recoverable() {
    let d = Dir::new();
    let data = generate(Kind::Random, 4 << 20, 6);
    let v = d.write("v.bin", &data);
    let a = d.s("v.adz");
    ok(&run(&["compress", "-q", "-B", "64K", &v, &a]));
    std::fs::remove_file(&v).unwrap();
    let adz_file = std::fs::read(&a).unwrap();
    for sig in ["INT", "TERM", "KILL"] {
        let out_path = d.s("out.bin");
        // Half the file through stdin, which stays open: the decoder waits for the rest.
        let (child, stdin) =
            feeding(&["decompress", "-q", "-", &out_path], &adz_file[..adz_file.len() / 2]);
        let tmp = wait_for_temporary(d.0.path(), ".out.bin.adz-incomplete-", 1);
        std::thread::sleep(Duration::from_millis(200));
        signal(child.id(), sig);
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        assert!(out.status.signal().is_some(), "{sig}: {}", out.status);
        assert!(temporaries(d.0.path(), ".adz-tmp-").is_empty(), "{sig}: nothing to recover");
        if sig == "KILL" {
            // Left behind, but its name says it is no adz file.
            assert!(tmp.exists());
            std::fs::remove_file(&tmp).unwrap();
        }
        assert_eq!(d.listing(), ["v.adz"], "{sig}");
    }
}
