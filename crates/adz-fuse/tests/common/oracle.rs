//! Random sequences of open, write at offset, truncate, read, rename and close through a
//! mount, against the same sequence in a plain directory (the oracle); for tests/oracle.rs
//! (a local source) and tests/s3.rs.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use proptest::prelude::*;

const NAMES: [&str; 3] = ["f0", "f1", "f2"];

#[derive(Debug, Clone)]
pub enum Op {
    Write { file: usize, off: u64, len: usize, seed: u8 },
    Truncate { file: usize, len: u64 },
    Read { file: usize, off: u64, len: usize },
    Rename { from: usize, to: usize },
    Close { file: usize },
    Unlink { file: usize },
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, 0..300_000u64, 1..100_000usize, any::<u8>())
            .prop_map(|(file, off, len, seed)| Op::Write { file, off, len, seed }),
        1 => (0..3usize, 0..250_000u64).prop_map(|(file, len)| Op::Truncate { file, len }),
        3 => (0..3usize, 0..320_000u64, 1..150_000usize).prop_map(|(file, off, len)| Op::Read { file, off, len }),
        1 => (0..3usize, 0..3usize).prop_map(|(from, to)| Op::Rename { from, to }),
        2 => (0..3usize).prop_map(|file| Op::Close { file }),
        1 => (0..3usize).prop_map(|file| Op::Unlink { file }),
    ]
}

/// One side: a directory and the files open in it, by name.
struct Side<'a> {
    dir: &'a Path,
    open: HashMap<usize, File>,
}

impl Side<'_> {
    fn file(&mut self, i: usize) -> &File {
        let path = self.dir.join(NAMES[i]);
        self.open.entry(i).or_insert_with(|| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()))
        })
    }

    /// The outcome of `op`, compared between the sides.
    fn apply(&mut self, op: &Op) -> Result<Vec<u8>, i32> {
        let err = |e: std::io::Error| e.raw_os_error().unwrap_or(-1);
        match *op {
            Op::Write { file, off, len, seed } => {
                let bytes: Vec<u8> =
                    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
                self.file(file).write_all_at(&bytes, off).map_err(err)?;
                Ok(Vec::new())
            }
            Op::Truncate { file, len } => {
                self.file(file).set_len(len).map_err(err)?;
                Ok(Vec::new())
            }
            Op::Read { file, off, len } => {
                if !self.dir.join(NAMES[file]).exists() && !self.open.contains_key(&file) {
                    return Err(libc::ENOENT);
                }
                let mut buf = vec![0; len];
                let mut got = 0;
                while got < len {
                    let n =
                        self.file(file).read_at(&mut buf[got..], off + got as u64).map_err(err)?;
                    if n == 0 {
                        break;
                    }
                    got += n;
                }
                buf.truncate(got);
                Ok(buf)
            }
            Op::Rename { from, to } => {
                fs::rename(self.dir.join(NAMES[from]), self.dir.join(NAMES[to])).map_err(err)?;
                if from != to {
                    // Open files follow the file; a file replaced at `to` stays open, unlinked.
                    self.open.remove(&to);
                    if let Some(f) = self.open.remove(&from) {
                        self.open.insert(to, f);
                    }
                }
                Ok(Vec::new())
            }
            Op::Close { file } => {
                self.open.remove(&file);
                Ok(Vec::new())
            }
            Op::Unlink { file } => {
                fs::remove_file(self.dir.join(NAMES[file])).map_err(err)?;
                self.open.remove(&file);
                Ok(Vec::new())
            }
        }
    }
}

/// Random sequences of [`Op`]s (24 cases, each in a directory `c{case}` of its own) in
/// `mnt` and in a plain directory under `oracle_root`: the outcomes must match, and after the
/// last close each file must read the same and be stored as an adz file: `stored("c0/f1")`
/// decodes the stored adz file behind `c0/f1`, or is None when there is none.
pub fn random_operations_match(
    mnt: &Path,
    oracle_root: &Path,
    stored: &dyn Fn(&str) -> Option<Vec<u8>>,
) {
    fs::create_dir(oracle_root).unwrap();
    let case = std::sync::atomic::AtomicU32::new(0);
    let config =
        ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() };
    proptest!(config, |(ops in proptest::collection::vec(op(), 1..14))| {
        let case = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mounted = mnt.join(format!("c{case}"));
        let oracle = oracle_root.join(format!("c{case}"));
        fs::create_dir(&mounted).unwrap();
        fs::create_dir(&oracle).unwrap();
        let mut a = Side { dir: &mounted, open: HashMap::new() };
        let mut b = Side { dir: &oracle, open: HashMap::new() };
        for op in &ops {
            let (x, y) = (a.apply(op), b.apply(op));
            prop_assert_eq!(x, y, "{:?}", op);
        }
        a.open.clear();
        b.open.clear();
        for name in NAMES {
            let (x, y) = (fs::read(mounted.join(name)).ok(), fs::read(oracle.join(name)).ok());
            prop_assert_eq!(&x, &y, "{} after close", name);
            // Closed files are adz files in the source, holding the same bytes.
            prop_assert_eq!(stored(&format!("c{case}/{name}")), y);
        }
    });
}
