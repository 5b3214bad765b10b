//! Unmodified applications' workloads, run through a mount (local or S3) by the tests: Python
//! reads and `numpy.memmap`, a shared writable `mmap`, sqlite3 inserts and updates, h5py
//! chunked writes. Each gives what the file must hold afterwards, so a test checks it through
//! the mount and again in the stored adz file.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use super::{bounded, run};

/// 100,000 little-endian f64 values `i * 0.5`: the file [`NUMPY_READ`] checks.
pub fn f64_values() -> Vec<u8> {
    (0..100_000u32).flat_map(|i| (f64::from(i) * 0.5).to_le_bytes()).collect()
}

/// Seeks and reads one value of [`f64_values`], then maps the file with numpy (where numpy is
/// installed: else it prints `no numpy`) and checks its shape, last value and sum.
pub const NUMPY_READ: &str = r#"
import sys
p = sys.argv[1]
with open(p, 'rb') as f:
    f.seek(8 * 12345)
    import struct
    assert struct.unpack('<d', f.read(8))[0] == 12345 * 0.5
try:
    import numpy as np
except ImportError:
    print('no numpy'); sys.exit(0)
a = np.memmap(p, dtype='<f8', mode='r')
assert a.shape == (100000,), a.shape
assert float(a[99999]) == 99999 * 0.5
assert float(a.sum()) == sum(i * 0.5 for i in range(100000))
print('numpy ok')
"#;

/// Writes 100,000 `a`s, then changes five bytes through a shared writable mapping: the
/// kernel writes the pages back, msync (`flush`) commits them. The file then holds
/// [`mmap_written`].
pub const MMAP_WRITE: &str = r#"
import mmap, sys
p = sys.argv[1]
with open(p, 'wb') as f:
    f.write(b'a' * 100000)
with open(p, 'r+b') as f:
    m = mmap.mmap(f.fileno(), 0)
    m[70000:70005] = b'HELLO'
    m.flush()
    m.close()
"#;

/// What [`MMAP_WRITE`] leaves in its file.
pub fn mmap_written() -> Vec<u8> {
    let mut want = vec![b'a'; 100_000];
    want[70_000..70_005].copy_from_slice(b"HELLO");
    want
}

/// The query that checks the database [`sqlite_workload`] makes, and its answer.
pub const SQLITE_QUERY: &str =
    "PRAGMA integrity_check; SELECT count(*), sum(v = 'changed') FROM t;";
pub const SQLITE_ANSWER: &str = "ok\n2728|390";

/// Create a table in database `db` with sqlite3 and run four transactions of 750 inserts,
/// then an update and a delete: random overwrites of pages and an fsync per commit.
pub fn sqlite_workload(db: &Path) {
    let mut sql = String::from("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);\n");
    for batch in 0..4 {
        sql.push_str("BEGIN;\n");
        for i in 0..750 {
            sql.push_str(&format!(
                "INSERT INTO t(v) VALUES('row {batch} {i} {}');\n",
                "x".repeat(i % 50)
            ));
        }
        sql.push_str("COMMIT;\n");
    }
    sql.push_str(
        "UPDATE t SET v = 'changed' WHERE id % 7 = 0;\nDELETE FROM t WHERE id % 11 = 0;\n",
    );
    let mut child = bounded("sqlite3").arg(db).stdin(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(sql.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
}

/// Check database `db` with [`SQLITE_QUERY`].
pub fn sqlite_check(db: &Path) {
    let out = run(bounded("sqlite3").arg(db).arg(SQLITE_QUERY));
    assert_eq!(out.trim(), SQLITE_ANSWER, "{}: {out}", db.display());
}

/// Fails unless sqlite3 is installed (scripts/deps.sh installs it).
pub fn require_sqlite() {
    if std::process::Command::new("sqlite3").arg("-version").output().is_err() {
        panic!("sqlite3 is missing: scripts/deps.sh installs it");
    }
}

/// A SQLite database's size by its header: the page size (at 16) times the page count (at
/// 28); a database cut short has fewer bytes.
#[expect(clippy::big_endian_bytes, reason = "SQLite's header is big-endian")]
pub fn sqlite_size_by_header(db: &[u8]) -> u64 {
    let page_size = u64::from(u16::from_be_bytes([db[16], db[17]]));
    let pages = u64::from(u32::from_be_bytes(db[28..32].try_into().unwrap()));
    page_size * pages
}

/// Writes a chunked HDF5 file with h5py (two datasets, an attribute), then rewrites ten rows
/// of one in place; [`H5PY_CHECK`] checks it.
pub const H5PY_WRITE: &str = r#"
import sys, h5py, numpy as np
p = sys.argv[1]
a = np.arange(300 * 1000, dtype='<f8').reshape(300, 1000) * 0.25
with h5py.File(p, 'w') as f:
    d = f.create_dataset('x', data=a, chunks=(25, 1000))
    d.attrs['units'] = 'K'
    f.create_dataset('y', data=np.sin(np.arange(50000.0)), chunks=(5000,))
with h5py.File(p, 'r+') as f:
    f['x'][100:110, :] = -1.0
print('h5py ok')
"#;

/// What [`H5PY_WRITE`]'s file must hold; prints `h5py ok`.
pub const H5PY_CHECK: &str = r#"
import sys, h5py, numpy as np
a = np.arange(300 * 1000, dtype='<f8').reshape(300, 1000) * 0.25
a[100:110, :] = -1.0
with h5py.File(sys.argv[1], 'r') as f:
    assert f['x'].chunks == (25, 1000)
    assert np.array_equal(f['x'][...], a)
    assert f['x'].attrs['units'] == 'K'
    assert np.array_equal(f['y'][...], np.sin(np.arange(50000.0)))
print('h5py ok')
"#;

/// Run Python script `script` on `file` with `python`; requires `h5py ok` in its output.
pub fn h5py(python: &Path, script: &str, file: &Path) {
    let out = run(bounded(python.to_str().unwrap()).arg("-c").arg(script).arg(file));
    assert!(out.contains("h5py ok"), "{}: {out}", file.display());
}
