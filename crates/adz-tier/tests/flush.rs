//! Writing, reading and flushing through tiers over in-memory stores, with faults injected
//! at each step of a flush: every frame stays readable and equal to the source.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use adz_datagen::{generate, Kind};
use adz_store::{FaultPlan, Faulty, MemoryStorage, ObjectMeta, Storage, Tail, Upload};
use adz_tier::{CostTable, RungCost, TierError, Tiered, TiersConfig};
use xxhash_rust::xxh3::xxh3_64;

/// Fails every delete while `fail` is set: the one step Faulty cannot target alone.
#[derive(Debug)]
struct NoDelete<S> {
    inner: S,
    fail: std::sync::atomic::AtomicBool,
}

impl<S: Storage> Storage for NoDelete<S> {
    fn create(&self, name: &str) -> adz_store::Result<Box<dyn Upload>> {
        self.inner.create(name)
    }
    fn get_range(&self, name: &str, range: Range<u64>) -> adz_store::Result<Vec<u8>> {
        self.inner.get_range(name, range)
    }
    fn get(&self, name: &str) -> adz_store::Result<Vec<u8>> {
        self.inner.get(name)
    }
    fn get_tail(&self, name: &str, max_len: u64) -> adz_store::Result<Tail> {
        self.inner.get_tail(name, max_len)
    }
    fn size(&self, name: &str) -> adz_store::Result<u64> {
        self.inner.size(name)
    }
    fn delete(&self, name: &str) -> adz_store::Result<()> {
        if self.fail.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(adz_store::Error::Injected { what: format!("delete of {name:?}") });
        }
        self.inner.delete(name)
    }
    fn list(&self, prefix: &str) -> adz_store::Result<Vec<ObjectMeta>> {
        self.inner.list(prefix)
    }
}

struct Rig {
    tiers: Tiered,
    fast: Arc<NoDelete<Faulty<MemoryStorage>>>,
    slow: Arc<Faulty<MemoryStorage>>,
    catalog: Arc<Faulty<MemoryStorage>>,
    data: Vec<u8>,
}

const CONFIG: &str = r#"
    batch = "1MiB"
    block_size = "256KiB"
    [[tier]]
    name = "fast"
    path = "fast"
    capacity = "3MiB"
    bandwidth = "4GB/s"
    [[tier]]
    name = "slow"
    path = "slow"
    bandwidth = "50MB/s"
    rung = "zstd:9"
"#;

/// One rung only, lz4:1, so that flushing to the slow tier's zstd:9 re-encodes.
fn lz4_only() -> CostTable {
    let cost = RungCost { speed: 500e6, ratio: 2.0 };
    CostTable::new(vec!["lz4:1".parse().unwrap()], vec![vec![cost]]).unwrap()
}

fn rig(config: &str, data: Vec<u8>) -> Rig {
    let config = TiersConfig::parse(config, Path::new("/unused")).unwrap();
    let fast = Arc::new(NoDelete {
        inner: Faulty::pass_through(MemoryStorage::new()),
        fail: false.into(),
    });
    let slow = Arc::new(Faulty::pass_through(MemoryStorage::new()));
    let catalog = Arc::new(Faulty::pass_through(MemoryStorage::new()));
    let tiers = Tiered::with_stores(
        config,
        vec![fast.clone() as Arc<dyn Storage>, slow.clone() as Arc<dyn Storage>],
        catalog.clone() as Arc<dyn Storage>,
    )
    .unwrap();
    tiers.write("d", &mut &data[..], &lz4_only()).unwrap();
    Rig { tiers, fast, slow, catalog, data }
}

fn text(len: usize) -> Vec<u8> {
    generate(Kind::Text, len, 7)
}

/// Every frame reads back equal to the source, and every catalogued copy is there, whole.
fn check_consistent(rig: &Rig) {
    let r = rig.tiers.reader("d").unwrap();
    assert_eq!(r.len(), rig.data.len() as u64);
    let mut out = Vec::new();
    r.copy_to(&mut out, 1).unwrap();
    assert!(out == rig.data, "the dataset reads back equal to the source");
    for s in &r.catalog().segments {
        for c in &s.copies {
            let store: &dyn Storage = if c.tier == "fast" { &*rig.fast } else { &*rig.slow };
            assert_eq!(xxh3_64(&store.get(&c.object).unwrap()), c.xxh3, "{c:?}");
        }
    }
}

fn segments_on(rig: &Rig, tier: &str) -> usize {
    let cat = rig.tiers.catalog("d").unwrap();
    cat.segments.iter().filter(|s| s.copies.iter().any(|c| c.tier == tier)).count()
}

#[test]
fn write_places_within_capacity_and_reads_from_the_fastest_tier() {
    // 8 MiB at a predicted ratio 2: more than the fast tier's 3 MiB.
    let rig = rig(CONFIG, text(8 << 20));
    check_consistent(&rig);
    let used = rig.tiers.used(0).unwrap();
    assert!(used <= 3 << 20, "the fast tier holds {used} bytes, more than its 3 MiB");
    assert!(segments_on(&rig, "fast") > 0 && segments_on(&rig, "slow") > 0);
    // A segment with copies on both tiers is read from the fast one.
    let mut cat = rig.tiers.catalog("d").unwrap();
    let k = cat.segments.iter().position(|s| s.copies[0].tier == "fast").unwrap();
    let copy = cat.segments[k].copies[0].clone();
    rig.slow.put(&copy.object, &rig.fast.get(&copy.object).unwrap()).unwrap();
    let mut below = copy.clone();
    below.tier = "slow".into();
    cat.segments[k].copies.insert(0, below);
    cat.save(&*rig.catalog).unwrap();
    let r = rig.tiers.reader("d").unwrap();
    assert_eq!(r.tier_of(k).unwrap(), "fast");
    // Gone from the fast tier: read from the one below.
    rig.fast.delete(&copy.object).unwrap();
    let r = rig.tiers.reader("d").unwrap();
    assert_eq!(r.tier_of(k).unwrap(), "slow");
    let mut out = Vec::new();
    r.copy_to(&mut out, 1).unwrap();
    assert!(out == rig.data);
}

#[test]
fn evict_recompresses_for_the_slow_tier_and_gc_finds_nothing() {
    let rig = rig(CONFIG, text(6 << 20));
    let on_fast = segments_on(&rig, "fast");
    let report = rig.tiers.evict("fast", &lz4_only()).unwrap();
    assert_eq!(report.moved as usize, on_fast);
    assert_eq!(
        report.recompressed as usize, on_fast,
        "lz4:1 is lighter than the slow tier's zstd:9"
    );
    assert!(report.bytes_out < report.bytes_in);
    assert_eq!(segments_on(&rig, "fast"), 0);
    assert_eq!(rig.tiers.used(0).unwrap(), 0, "nothing is left on the fast tier");
    let cat = rig.tiers.catalog("d").unwrap();
    assert!(cat.segments.iter().all(|s| s.copies.len() == 1 && s.copies[0].tier == "slow"));
    assert!(cat.segments.iter().any(|s| s.copies[0].rung == "zstd:9"));
    assert_eq!(rig.tiers.gc().unwrap(), 0);
    check_consistent(&rig);
}

#[test]
fn dense_enough_segments_are_copied_as_they_are() {
    let rig = rig(&CONFIG.replace("zstd:9", "lz4:4"), text(6 << 20));
    let report = rig.tiers.evict("fast", &lz4_only()).unwrap();
    assert!(report.moved > 0);
    assert_eq!((report.copied, report.recompressed), (report.moved, 0));
    assert_eq!(report.bytes_in, report.bytes_out);
    check_consistent(&rig);
}

#[test]
fn flush_follows_the_fill_policy() {
    // high 0.5: the fast tier (3 MiB, filled by the write) is flushed down to low = 0.
    let tiers = CONFIG.split_once("[[tier]]").map(|(_, t)| t).unwrap();
    let config = format!(
        "batch = \"1MiB\"\nblock_size = \"256KiB\"\n[flush]\nhigh = 0.5\nlow = 0.0\n[[tier]]{tiers}"
    );
    let rig = rig(&config, text(6 << 20));
    assert!(segments_on(&rig, "fast") > 0);
    let report = rig.tiers.flush(&lz4_only()).unwrap();
    assert!(report.moved > 0);
    assert_eq!(segments_on(&rig, "fast"), 0);
    // Below the threshold nothing moves.
    let again = rig.tiers.flush(&lz4_only()).unwrap();
    assert_eq!(again.moved, 0);
    check_consistent(&rig);
}

/// Each step of a flush fails in turn; the flush reports it, the dataset stays whole and
/// readable, and once the fault is gone a flush and a gc finish the job.
#[test]
fn a_fault_at_any_step_of_a_flush_loses_nothing() {
    type Inject = fn(&Rig, bool);
    let steps: [(&str, Inject); 6] = [
        ("read the source", |r, on| {
            r.fast.inner.set_plan(if on { FaultPlan::new().fail_reads() } else { FaultPlan::new() })
        }),
        ("commit below", |r, on| {
            r.slow.set_plan(if on { FaultPlan::new().fail_commit() } else { FaultPlan::new() })
        }),
        ("torn write below", |r, on| {
            r.slow.set_plan(if on {
                FaultPlan::new().torn_write_after(1000)
            } else {
                FaultPlan::new()
            })
        }),
        ("read back below", |r, on| {
            r.slow.set_plan(if on { FaultPlan::new().fail_reads() } else { FaultPlan::new() })
        }),
        ("save the catalog", |r, on| {
            r.catalog.set_plan(if on { FaultPlan::new().fail_commit() } else { FaultPlan::new() })
        }),
        ("delete the source", |r, on| r.fast.fail.store(on, std::sync::atomic::Ordering::Relaxed)),
    ];
    for (step, inject) in steps {
        let rig = rig(CONFIG, text(6 << 20));
        let before = segments_on(&rig, "fast");
        inject(&rig, true);
        let err = rig.tiers.evict("fast", &lz4_only());
        assert!(err.is_err(), "{step}: the flush must report the fault");
        inject(&rig, false);
        check_consistent(&rig);
        let moved_early = before - segments_on(&rig, "fast");
        assert!(moved_early <= 1, "{step}: at most the failing segment changed tiers");
        rig.tiers.gc().unwrap();
        check_consistent(&rig);
        let report = rig.tiers.evict("fast", &lz4_only()).unwrap();
        assert_eq!(report.moved as usize + moved_early, before, "{step}");
        rig.tiers.gc().unwrap();
        assert_eq!(rig.tiers.used(0).unwrap(), 0, "{step}: the fast tier ends empty");
        check_consistent(&rig);
    }
}

#[test]
fn a_corrupt_source_is_not_flushed() {
    let rig = rig(CONFIG, text(6 << 20));
    let cat = rig.tiers.catalog("d").unwrap();
    let copy = cat.segments.iter().find(|s| s.copies[0].tier == "fast").unwrap().copies[0].clone();
    let mut bytes = rig.fast.get(&copy.object).unwrap();
    let last = bytes.len() - 100;
    bytes[last] ^= 1;
    rig.fast.put(&copy.object, &bytes).unwrap();
    assert!(matches!(rig.tiers.evict("fast", &lz4_only()), Err(TierError::Checksum { .. })));
    assert_eq!(rig.tiers.catalog("d").unwrap(), cat, "the catalog is unchanged");
}

#[test]
fn a_failed_write_keeps_the_old_dataset() {
    let rig = rig(CONFIG, text(2 << 20));
    let old = rig.tiers.catalog("d").unwrap();
    rig.catalog.set_plan(FaultPlan::new().fail_commit());
    assert!(rig.tiers.write("d", &mut &text(5 << 20)[..], &lz4_only()).is_err());
    rig.catalog.set_plan(FaultPlan::new());
    assert_eq!(rig.tiers.catalog("d").unwrap(), old);
    check_consistent(&rig);
    assert_eq!(rig.tiers.gc().unwrap(), 0, "the failed write cleaned up after itself");
    // Replacing the dataset deletes the old segments.
    let data = text(5 << 20);
    rig.tiers.write("d", &mut &data[..], &lz4_only()).unwrap();
    let rig = Rig { data, ..rig };
    check_consistent(&rig);
    assert_eq!(rig.tiers.gc().unwrap(), 0);
}

#[test]
fn raw_placement_fills_the_fast_tier_without_spilling() {
    // Raw frames: the DP's sizes are exact, headers and trailers included, so nothing spills
    // and the fast tier is filled to within one block of its 3 MiB.
    // One batch for the whole write: the DP fills the fast tier to its last byte.
    let rig = rig(&CONFIG.replace("batch = \"1MiB\"", "batch = \"8MiB\""), Vec::new());
    let raw = RungCost { speed: 1e10, ratio: 1.0 };
    let costs = CostTable::new(vec!["none".parse().unwrap()], vec![vec![raw]]).unwrap();
    let data = generate(Kind::Random, 8 << 20, 3);
    let report = rig.tiers.write("r", &mut &data[..], &costs).unwrap();
    assert_eq!(report.spilled, 0);
    let used = rig.tiers.used(0).unwrap();
    assert!(used <= 3 << 20 && used > (3 << 20) - (256 << 10), "fast tier holds {used}");
    assert_eq!(report.stored[0], used);
    let r = rig.tiers.reader("r").unwrap();
    assert_eq!(r.read_range(0, 8 << 20).unwrap(), data);
}

#[test]
fn a_run_larger_than_predicted_keeps_what_fits_on_its_tier() {
    // The table promises ratio 8 on random data: the DP plans all 8 MiB for the fast tier
    // (1 MiB stored), the real run is 8 MiB. The frames that fit stay there, the rest goes down.
    let rig = rig(&CONFIG.replace("batch = \"1MiB\"", "batch = \"8MiB\""), Vec::new());
    let hope = RungCost { speed: 1e9, ratio: 8.0 };
    let costs = CostTable::new(vec!["lz4:1".parse().unwrap()], vec![vec![hope]]).unwrap();
    let data = generate(Kind::Random, 8 << 20, 4);
    let report = rig.tiers.write("r", &mut &data[..], &costs).unwrap();
    assert_eq!(report.spilled, 1);
    let used = rig.tiers.used(0).unwrap();
    assert!(used <= 3 << 20 && used > (3 << 20) - (256 << 10), "fast tier holds {used}");
    let r = rig.tiers.reader("r").unwrap();
    assert_eq!(r.read_range(0, 8 << 20).unwrap(), data);
}
