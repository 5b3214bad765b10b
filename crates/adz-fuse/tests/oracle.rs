//! Random sequences of open, write at offset, truncate, read, rename and close through the
//! mount, against the same sequence in a plain directory (the oracle; `common::oracle`).

mod common;

#[test]
fn random_operations_match_a_plain_directory() {
    let Some(m) = common::Mounted::new(|_| {}) else { return };
    let src = m.src.clone();
    common::oracle::random_operations_match(&m.mnt, &m.dir.path().join("oracle"), &|rel| {
        let stored = src.join(format!("{rel}.adz"));
        stored.exists().then(|| common::decode(&stored))
    });
}
