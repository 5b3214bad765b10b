//! A real kill: a child process evicts a tier through a throttled (slow) lower tier and is
//! killed mid-flush, several times; after each kill every byte still reads back equal to the
//! source, and a final evict and gc leave a clean state.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use adz_datagen::{generate, Kind};
use adz_tier::{CostTable, RungCost, Tiered, TiersConfig};

const DIR_VAR: &str = "ADZ_TIER_KILL_TEST_DIR";

fn config(dir: &Path) -> TiersConfig {
    // 1 MiB segments of 256 KiB frames; the lower tier takes 40 MB/s, so each segment's
    // move takes tens of milliseconds and a kill lands inside one.
    let text = r#"
        batch = "1MiB"
        block_size = "256KiB"
        [[tier]]
        name = "fast"
        path = "fast"
        bandwidth = "4GB/s"
        [[tier]]
        name = "slow"
        path = "slow"
        bandwidth = "40MB/s"
        throttle = true
        rung = "lz4:1"
    "#;
    TiersConfig::parse(text, dir).unwrap()
}

fn raw_only() -> CostTable {
    CostTable::new(vec!["none".parse().unwrap()], vec![vec![RungCost { speed: 1e10, ratio: 1.0 }]])
        .unwrap()
}

/// The child: evicts the fast tier (run only by `killed_flush_loses_nothing`).
#[test]
#[ignore = "run as a child process by killed_flush_loses_nothing"]
fn child_evicts() {
    let Ok(dir) = std::env::var(DIR_VAR) else { return };
    let tiers = Tiered::open(config(Path::new(&dir))).unwrap();
    tiers.evict("fast", &raw_only()).unwrap();
}

fn check(tiers: &Tiered, data: &[u8]) {
    let r = tiers.reader("d").unwrap();
    let mut out = Vec::new();
    r.copy_to(&mut out, 1).unwrap();
    assert!(out == data, "the dataset reads back equal to the source");
}

#[test]
fn killed_flush_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tiers = Tiered::open(config(dir.path())).unwrap();
    let data = generate(Kind::Mixed, 24 << 20, 11);
    tiers.write("d", &mut &data[..], &raw_only()).unwrap();
    let on_fast = |t: &Tiered| {
        t.catalog("d").unwrap().segments.iter().filter(|s| s.copies[0].tier == "fast").count()
    };
    let start = on_fast(&tiers);
    assert_eq!(start, 24, "the write put every segment on the fast tier");
    let mut kills = 0;
    // After the child's first moved segment, a little later each time, so that the kills land
    // at different steps of the next segment's move (a fixed delay from the start let a quiet
    // machine finish the whole eviction first).
    for extra_ms in [0, 7, 15, 3, 11] {
        let before = on_fast(&tiers);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["child_evicts", "--exact", "--ignored", "--test-threads=1"])
            .env(DIR_VAR, dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while on_fast(&tiers) == before && Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(extra_ms));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
        // Whatever step the kill hit, the catalog is whole and every byte is readable.
        check(&tiers, &data);
    }
    assert!(kills >= 3, "the child was killed mid-flush ({kills} times)");
    let moved_by_children = start - on_fast(&tiers);
    assert!(moved_by_children > 0, "the children made progress before being killed");
    tiers.gc().unwrap();
    check(&tiers, &data);
    // gc removed the temporaries of the uploads and catalog saves the kills cut short.
    let mut temporaries = Vec::new();
    for sub in ["fast/d", "slow/d", "slow/.adz-catalog"] {
        for e in std::fs::read_dir(dir.path().join(sub)).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name.starts_with('.') {
                temporaries.push(name);
            }
        }
    }
    assert!(temporaries.is_empty(), "left behind: {temporaries:?}");
    tiers.evict("fast", &raw_only()).unwrap();
    tiers.gc().unwrap();
    assert_eq!(on_fast(&tiers), 0);
    assert_eq!(tiers.used(0).unwrap(), 0, "nothing is left on the fast tier");
    check(&tiers, &data);
}
