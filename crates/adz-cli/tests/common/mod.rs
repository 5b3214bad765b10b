//! What the CLI test binaries share: running `adz`, checking its exit, a temporary directory.
#![allow(dead_code)] // each test binary uses part of it

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use adz_datagen::{generate, Kind};

pub fn adz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_adz"))
}

pub fn run(args: &[&str]) -> Output {
    adz().args(args).output().expect("run adz")
}

pub fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = adz()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn adz");
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn ok(o: &Output) {
    assert!(o.status.success(), "adz failed: {}\n{}", o.status, stderr(o));
}

pub fn fail(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(1), "expected exit 1: {}\n{}", o.status, stderr(o));
    stderr(o)
}

pub struct Dir(pub tempfile::TempDir);

impl Dir {
    pub fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
    pub fn s(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_owned()
    }
    pub fn write(&self, name: &str, data: &[u8]) -> String {
        std::fs::write(self.path(name), data).unwrap();
        self.s(name)
    }
    /// Every file in the directory (to see that nothing half-written is left behind).
    pub fn listing(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.0.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

pub fn mixed(len: usize) -> Vec<u8> {
    let mut d = generate(Kind::Text, len / 2, 3);
    d.extend(generate(Kind::Random, len / 4, 3));
    d.extend(generate(Kind::Doubles, len - d.len(), 3));
    d
}
