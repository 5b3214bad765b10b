//! The conformance suite against every backend and decorator in this crate.

use std::sync::Arc;

use adz_store::conformance::run_all;
use adz_store::{Counting, Faulty, LocalStorage, MemoryStorage, Storage, Throttled};

#[test]
fn memory() {
    run_all(&MemoryStorage::new());
}

#[test]
fn local() {
    let dir = tempfile::tempdir().unwrap();
    run_all(&LocalStorage::new(dir.path()).unwrap());
}

#[test]
fn local_without_sync() {
    let dir = tempfile::tempdir().unwrap();
    run_all(&LocalStorage::new(dir.path()).unwrap().sync_on_commit(false));
}

#[test]
fn throttled_memory() {
    // Fast enough to keep the suite quick, slow enough that pacing really happens.
    let store = Throttled::new(MemoryStorage::new(), 2e9).throttle_reads(true);
    run_all(&store);
    assert!(store.link_stats().bytes > 0);
    assert!(store.read_link_stats().unwrap().bytes > 0);
}

#[test]
fn faulty_memory_passing_through() {
    let store = Faulty::pass_through(MemoryStorage::new());
    run_all(&store);
    assert_eq!(store.faults_injected(), 0);
}

#[test]
fn counting_local() {
    let dir = tempfile::tempdir().unwrap();
    let store = Counting::new(LocalStorage::new(dir.path()).unwrap().sync_on_commit(false));
    run_all(&store);
    let stats = store.stats();
    assert!(stats.bytes_written > 0 && stats.bytes_read > 0 && stats.commits > 0);
}

#[test]
fn stacked_decorators_over_trait_objects() {
    let inner: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let store: Box<dyn Storage> =
        Box::new(Counting::new(Faulty::pass_through(Throttled::new(inner, 4e9))));
    run_all(&store);
}
