//! Datasets on the in-memory store: parts written at offsets and appended, one commit, reads
//! as one file that touch only the parts needed; overlaps, conflicts, swapped and corrupted
//! parts, gaps and gc.

use std::ops::Range;
use std::sync::{Arc, Barrier};

use adz_core::dataset::{
    manifest_name, Dataset, DatasetError, DatasetReader, DatasetWriter, GcOptions, Placement,
};
use adz_core::store::{MemoryStorage, Storage};
use adz_core::{ReaderOptions, WriteOptions};

fn opts() -> WriteOptions {
    WriteOptions {
        strategy: "static=zstd:1".parse().unwrap(),
        threads: 1,
        block_size: 16 << 10,
        ..Default::default()
    }
}

/// Distinct, mildly compressible bytes for part `i`.
fn part_data(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| ((j / 7) as u8).wrapping_mul(31).wrapping_add(i as u8 * 17)).collect()
}

fn write_part(store: &dyn Storage, ds: &str, id: &str, at: Placement, data: &[u8]) {
    let mut w = DatasetWriter::create(store, ds, id, at, opts()).unwrap();
    w.write(data).unwrap();
    w.finish().unwrap();
}

/// Four parts at offsets (written out of order), returned with their concatenation.
fn four_parts(store: &dyn Storage) -> Vec<u8> {
    let lens = [100_000, 1, 70_000, 33_333];
    let datas: Vec<Vec<u8>> = lens.iter().enumerate().map(|(i, &l)| part_data(i, l)).collect();
    let mut offset = 0;
    let mut offsets = Vec::new();
    for d in &datas {
        offsets.push(offset);
        offset += d.len() as u64;
    }
    for i in [2, 0, 3, 1] {
        write_part(store, "ds", &format!("r{i}"), Placement::At(offsets[i]), &datas[i]);
    }
    datas.concat()
}

#[test]
fn parts_read_as_one_file_and_a_range_opens_only_its_parts() {
    let store = Arc::new(MemoryStorage::new());
    let all = four_parts(&*store);
    assert!(Dataset::latest(&*store, "ds").unwrap().is_none(), "nothing visible before commit");
    let m = Dataset::commit(&*store, "ds", None).unwrap();
    assert_eq!((m.version, m.len, m.parts.len()), (1, all.len() as u64, 4));
    assert!(m.gaps().is_empty());

    let r = DatasetReader::open(store.clone(), "ds", ReaderOptions::default()).unwrap();
    assert_eq!(r.len(), all.len() as u64);
    // A range inside part 2 opens part 2 only.
    assert_eq!(r.read_range(120_000, 5000).unwrap(), &all[120_000..125_000]);
    assert_eq!(r.parts_opened(), 1);
    // Across parts 0, 1 and 2.
    assert_eq!(r.read_range(99_990, 30).unwrap(), &all[99_990..100_020]);
    assert_eq!(r.parts_opened(), 3);
    // Past the end: short, then empty.
    assert_eq!(r.read_range(all.len() as u64 - 3, 10).unwrap(), &all[all.len() - 3..]);
    assert!(r.read_range(all.len() as u64 + 5, 10).unwrap().is_empty());

    let mut out = Vec::new();
    assert_eq!(r.copy_to(&mut out, 2).unwrap(), all.len() as u64);
    assert_eq!(out, all);
}

#[test]
fn appended_parts_follow_the_placed_ones_in_id_order_and_versions_grow() {
    let store = MemoryStorage::new();
    write_part(&store, "ds", "b", Placement::Append, b"BBB");
    write_part(&store, "ds", "x", Placement::At(0), b"xx");
    write_part(&store, "ds", "a", Placement::Append, b"A");
    // `a-b` sorts after `a` as an id, before it as an object name (`a-b.` < `a.`).
    write_part(&store, "ds", "a-b", Placement::Append, b"");
    let m = Dataset::commit(&store, "ds", None).unwrap();
    assert_eq!(m.len, 6);
    let ranges: Vec<_> = m.parts.iter().map(|p| (p.name.as_str(), p.range())).collect();
    assert_eq!(
        ranges,
        [
            ("ds.parts/x.at-0.adz", 0..2),
            ("ds.parts/a.append.adz", 2..3),
            ("ds.parts/a-b.append.adz", 3..3),
            ("ds.parts/b.append.adz", 3..6)
        ]
    );

    // A second commit after another writer: version 2, the old one still there.
    write_part(&store, "ds", "c", Placement::Append, b"CC");
    let m2 = Dataset::commit(&store, "ds", Some(1)).unwrap();
    assert_eq!((m2.version, m2.len), (2, 8));
    assert_eq!(Dataset::load(&store, "ds", 1).unwrap(), m);
    let r = DatasetReader::open(Arc::new(store), "ds", ReaderOptions::default()).unwrap();
    assert_eq!(r.read_range(0, 8).unwrap(), b"xxABBBCC");
}

#[test]
fn overlapping_parts_are_refused_and_nothing_is_committed() {
    let store = MemoryStorage::new();
    write_part(&store, "ds", "a", Placement::At(0), &[1; 100]);
    write_part(&store, "ds", "b", Placement::At(99), &[2; 10]);
    let e = Dataset::commit(&store, "ds", None).unwrap_err();
    assert!(matches!(e, DatasetError::Overlap { .. }), "{e}");
    assert!(e.to_string().contains("ds.parts/a.at-0.adz"), "{e}");
    assert_eq!(Dataset::latest_version(&store, "ds").unwrap(), 0);
}

#[test]
fn a_gap_reads_as_an_error_naming_it_and_the_rest_reads() {
    let store = Arc::new(MemoryStorage::new());
    write_part(&*store, "ds", "a", Placement::At(0), b"0123");
    write_part(&*store, "ds", "b", Placement::At(10), b"abcd");
    let m = Dataset::commit(&*store, "ds", None).unwrap();
    assert_eq!(m.gaps(), vec![Range { start: 4, end: 10 }]);
    let r = DatasetReader::open(store, "ds", ReaderOptions::default()).unwrap();
    assert_eq!(r.read_range(0, 4).unwrap(), b"0123");
    assert_eq!(r.read_range(10, 4).unwrap(), b"abcd");
    let e = r.read_range(2, 10).unwrap_err();
    assert!(matches!(e, DatasetError::Gap { ref gap } if *gap == (4..10)), "{e}");
}

#[test]
fn a_base_version_that_is_not_the_latest_is_a_conflict() {
    let store = MemoryStorage::new();
    write_part(&store, "ds", "a", Placement::At(0), b"x");
    Dataset::commit(&store, "ds", Some(0)).unwrap();
    let e = Dataset::commit(&store, "ds", Some(0)).unwrap_err();
    assert!(matches!(e, DatasetError::CommitConflict { version: 1, .. }), "{e}");
    assert_eq!(Dataset::latest_version(&store, "ds").unwrap(), 1);
}

#[test]
fn a_leftover_candidate_blocks_its_version_until_gc_removes_it() {
    let store = MemoryStorage::new();
    write_part(&store, "ds", "a", Placement::At(0), b"x");
    // A commit that died after writing its candidate for version 1.
    store.put(&format!("ds.manifest/c{:020}-dead", 1), b"{}").unwrap();
    let e = Dataset::commit(&store, "ds", None).unwrap_err();
    assert!(matches!(e, DatasetError::CommitConflict { version: 1, .. }), "{e}");
    assert!(e.to_string().contains("candidate"), "{e}");
    // Plain gc leaves a candidate of the next version (a commit may be running)...
    let report = Dataset::gc(&store, "ds", GcOptions::default()).unwrap();
    assert!(report.manifests.is_empty());
    let stale = GcOptions { stale_candidates: true, ..Default::default() };
    assert_eq!(Dataset::gc(&store, "ds", stale).unwrap().manifests.len(), 1);
    assert_eq!(Dataset::commit(&store, "ds", None).unwrap().version, 1);
}

#[test]
fn racing_commits_never_both_take_a_version() {
    for round in 0..10 {
        let store = Arc::new(MemoryStorage::new());
        write_part(&*store, "ds", "a", Placement::At(0), b"some bytes");
        let threads = 6;
        let barrier = Arc::new(Barrier::new(threads));
        let results: Vec<_> = (0..threads)
            .map(|_| {
                let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    Dataset::commit(&*store, "ds", Some(0))
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let wins = results.iter().filter(|r| r.is_ok()).count();
        // Never two; and the rivals' backoff lets one of them through.
        assert_eq!(wins, 1, "round {round}: {wins} commits took version 1");
        for r in &results {
            if let Err(e) = r {
                assert!(matches!(e, DatasetError::CommitConflict { .. }), "{e}");
            }
        }
        // No leftover candidates: every loser removed its own, the winner too.
        let leftovers = store.list("ds.manifest/c").unwrap();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        assert_eq!(Dataset::latest_version(&*store, "ds").unwrap(), wins as u64);
    }
}

#[test]
fn a_corrupted_part_fails_its_ranges_naming_part_and_frame_and_others_read() {
    let store = Arc::new(MemoryStorage::new());
    let all = four_parts(&*store);
    let m = Dataset::commit(&*store, "ds", None).unwrap();
    let bad = &m.parts[2];
    assert_eq!(bad.range(), 100_001..170_001);
    // Flip a byte inside the part's first frame payload.
    let mut bytes = store.get(&bad.name).unwrap();
    bytes[200] ^= 0xff;
    store.put(&bad.name, &bytes).unwrap();

    let r = DatasetReader::open(store.clone(), "ds", ReaderOptions::default()).unwrap();
    let e = r.read_range(100_001, 100).unwrap_err();
    assert_eq!(e.part(), Some(bad.name.as_str()));
    assert_eq!(e.frame(), Some(0), "{e}");
    let chain = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(chain.contains(&bad.name) && chain.contains("frame 0"), "{chain}");
    // Its other frames and the other parts still read.
    assert_eq!(r.read_range(100_001 + 40_000, 100).unwrap(), &all[140_001..140_101]);
    assert_eq!(r.read_range(0, 100_001).unwrap(), &all[..100_001]);
    assert_eq!(r.read_range(170_001, 1000).unwrap(), &all[170_001..171_001]);
    assert!(r.copy_to(std::io::sink(), 1).is_err());
}

#[test]
fn a_part_swapped_after_the_commit_is_detected() {
    let store = Arc::new(MemoryStorage::new());
    write_part(&*store, "ds", "a", Placement::At(0), &part_data(0, 50_000));
    write_part(&*store, "ds", "b", Placement::At(50_000), &part_data(1, 50_000));
    Dataset::commit(&*store, "ds", None).unwrap();
    // Part b rewritten with other bytes of the same length.
    write_part(&*store, "ds", "b", Placement::At(50_000), &part_data(9, 50_000));
    let r = DatasetReader::open(store, "ds", ReaderOptions::default()).unwrap();
    let e = r.read_range(60_000, 10).unwrap_err();
    assert!(
        matches!(e, DatasetError::PartMismatch { ref part, .. } if part == "ds.parts/b.at-50000.adz"),
        "{e}"
    );
    assert_eq!(r.read_range(0, 10).unwrap(), &part_data(0, 10)[..]);
}

#[test]
fn gc_removes_uncommitted_parts_and_old_manifests_only() {
    let store = MemoryStorage::new();
    write_part(&store, "ds", "a", Placement::At(0), b"a");
    Dataset::commit(&store, "ds", None).unwrap();
    write_part(&store, "ds", "b", Placement::At(1), b"b");
    Dataset::commit(&store, "ds", None).unwrap();
    // A writer finished after the last commit, and never got committed.
    write_part(&store, "ds", "late", Placement::Append, b"zzz");

    let dry = Dataset::gc(&store, "ds", GcOptions::dry_run()).unwrap();
    assert_eq!(dry.parts, ["ds.parts/late.append.adz"]);
    assert_eq!(dry.manifests, [manifest_name("ds", 1)]);
    assert_eq!(store.list("ds.").unwrap().len(), 5, "dry run removes nothing");
    Dataset::gc(&store, "ds", GcOptions::default()).unwrap();
    let left: Vec<_> = store.list("ds.").unwrap().into_iter().map(|o| o.name).collect();
    assert_eq!(
        left,
        [manifest_name("ds", 2), "ds.parts/a.at-0.adz".into(), "ds.parts/b.at-1.adz".into()]
    );
    let r = DatasetReader::open(Arc::new(store), "ds", ReaderOptions::default()).unwrap();
    assert_eq!(r.read_range(0, 2).unwrap(), b"ab");
}

#[test]
fn bad_ids_and_a_missing_dataset_are_clear_errors() {
    let store = MemoryStorage::new();
    for id in ["", "a/b", "a.b", &"x".repeat(65)] {
        let e = DatasetWriter::create(&store, "ds", id, Placement::Append, opts()).unwrap_err();
        assert!(matches!(e, DatasetError::InvalidId { .. }), "{id:?}: {e}");
    }
    let e = DatasetReader::open(Arc::new(store), "ds", ReaderOptions::default()).unwrap_err();
    assert!(matches!(e, DatasetError::NotFound { .. }), "{e}");
}

#[test]
fn a_manifest_pointing_outside_its_parts_is_refused() {
    let store = MemoryStorage::new();
    write_part(&store, "ds", "a", Placement::At(0), b"a");
    let m = Dataset::commit(&store, "ds", None).unwrap();
    let json = String::from_utf8(store.get(&manifest_name("ds", 1)).unwrap()).unwrap();
    let evil = json.replace(&m.parts[0].name, "secret.adz");
    store.put(&manifest_name("ds", 1), evil.as_bytes()).unwrap();
    let e = Dataset::latest(&store, "ds").unwrap_err();
    assert!(matches!(e, DatasetError::BadManifest { .. }), "{e}");
}

#[test]
fn an_empty_part_inside_another_does_not_hide_it() {
    let store = Arc::new(MemoryStorage::new());
    write_part(&*store, "ds", "a", Placement::At(0), b"01234");
    write_part(&*store, "ds", "b", Placement::At(5), b"56789");
    write_part(&*store, "ds", "e", Placement::At(3), b"");
    Dataset::commit(&*store, "ds", None).unwrap();
    let r = DatasetReader::open(store, "ds", ReaderOptions::default()).unwrap();
    for start in 0..10 {
        assert_eq!(r.read_range(start, 10).unwrap(), &b"0123456789"[start as usize..], "{start}");
    }
}

#[test]
fn a_part_with_a_damaged_index_is_refused_at_commit_by_name() {
    let store = MemoryStorage::new();
    write_part(&store, "ds", "a", Placement::At(0), &part_data(0, 100_000));
    let name = "ds.parts/a.at-0.adz";
    let mut bytes = store.get(name).unwrap();
    // The first index entry: after the 16-byte index header, which the footer points at.
    let footer = &bytes[bytes.len() - 40..];
    let index_offset = u64::from_le_bytes(footer[..8].try_into().unwrap()) as usize;
    bytes[index_offset + 16] ^= 1;
    store.put(name, &bytes).unwrap();
    let e = Dataset::commit(&store, "ds", None).unwrap_err();
    assert_eq!(e.part(), Some(name), "{e}");
    assert_eq!(Dataset::latest_version(&store, "ds").unwrap(), 0);
}

/// A store whose reads each take 20 ms, counting how many are in flight at once.
#[derive(Debug)]
struct Gauge {
    inner: MemoryStorage,
    now: std::sync::atomic::AtomicUsize,
    max: std::sync::atomic::AtomicUsize,
}

impl Gauge {
    fn read<T>(&self, f: impl FnOnce() -> T) -> T {
        use std::sync::atomic::Ordering::SeqCst;
        let n = self.now.fetch_add(1, SeqCst) + 1;
        self.max.fetch_max(n, SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let out = f();
        self.now.fetch_sub(1, SeqCst);
        out
    }
}

impl Storage for Gauge {
    fn create(&self, name: &str) -> adz_core::store::Result<Box<dyn adz_core::store::Upload>> {
        self.inner.create(name)
    }
    fn get_range(&self, name: &str, range: Range<u64>) -> adz_core::store::Result<Vec<u8>> {
        self.read(|| self.inner.get_range(name, range))
    }
    fn get_tail(&self, name: &str, max_len: u64) -> adz_core::store::Result<adz_core::store::Tail> {
        self.read(|| self.inner.get_tail(name, max_len))
    }
    fn size(&self, name: &str) -> adz_core::store::Result<u64> {
        self.inner.size(name)
    }
    fn delete(&self, name: &str) -> adz_core::store::Result<()> {
        self.inner.delete(name)
    }
    fn list(&self, prefix: &str) -> adz_core::store::Result<Vec<adz_core::store::ObjectMeta>> {
        self.inner.list(prefix)
    }
}

#[test]
fn a_commit_reads_the_parts_footers_in_parallel_and_lists_them_in_order() {
    // A commit of many parts is bound by the store's request latency: reading the parts one
    // after the other took 20-40 minutes for 64,000 parts on paper (OBJECT-STORAGE.md).
    let store = Gauge { inner: MemoryStorage::new(), now: 0.into(), max: 0.into() };
    let mut all = Vec::new();
    for i in 0..12 {
        let data = part_data(i, 20_000 + i * 999);
        write_part(&store, "ds", &format!("r{i:02}"), Placement::At(all.len() as u64), &data);
        all.extend_from_slice(&data);
    }
    let m = Dataset::commit(&store, "ds", None).unwrap();
    let in_flight = store.max.load(std::sync::atomic::Ordering::SeqCst);
    assert!(in_flight >= 4, "at most {in_flight} part reads at once");
    let names: Vec<String> = m.parts.iter().map(|p| p.name.clone()).collect();
    let expected: Vec<String> = (0..12).map(|i| format!("ds.parts/r{i:02}.at-")).collect();
    assert!(names.iter().zip(&expected).all(|(n, e)| n.starts_with(e.as_str())), "{names:?}");
    let r = DatasetReader::open(Arc::new(store), "ds", ReaderOptions::default()).unwrap();
    assert_eq!(r.read_range(0, all.len() as u64).unwrap(), all);
}
