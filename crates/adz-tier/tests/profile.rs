//! Tiered writes take their costs from a machine profile: different measured costs, different
//! placement; classes the profile lacks are predicted.

use adz_tier::predictor::{Features, Sample};
use adz_tier::profile::{SetProfile, SetRung};
use adz_tier::{Profile, Tiered, TiersConfig, PROFILE_VERSION};

/// A profile of two rungs, raw and zstd:3 (ratio 4 at `speed` bytes/s on one thread), measured
/// on text blocks only (class 2).
fn profile(speed: f64) -> Profile {
    let text = adz_datagen::generate(adz_datagen::Kind::Text, 1 << 20, 1);
    let features = Features::of(&text);
    let samples = (0..6)
        .map(|_| Sample {
            set: 0,
            class: 2,
            raw: 1 << 20,
            features,
            ratio: vec![1.0, 4.0],
            speed: vec![1e10, speed],
        })
        .collect();
    Profile {
        version: PROFILE_VERSION,
        created: 0,
        adz: "test".into(),
        threads: 2,
        block_size: 1 << 20,
        rungs: vec!["none".parse().unwrap(), "zstd:3".parse().unwrap()],
        sets: vec![SetProfile {
            name: "text".into(),
            source: "test".into(),
            raw: 6 << 20,
            blocks: 6,
            class: 2,
            rungs: vec![
                SetRung { ratio: 1.0, speed_one: 1e10, speed_all: 2e10 },
                SetRung { ratio: 4.0, speed_one: speed, speed_all: 2.0 * speed },
            ],
        }],
        samples,
        tiers: Vec::new(),
        predictor: None,
        core_power: None,
    }
}

fn tiers(dir: &std::path::Path) -> Tiered {
    let config = TiersConfig::parse(
        "[[tier]]\nname = \"disk\"\npath = \"disk\"\nbandwidth = \"100MB/s\"\n",
        dir,
    )
    .unwrap();
    Tiered::open(config).unwrap()
}

#[test]
fn the_profiles_costs_change_the_placement() {
    let data = adz_datagen::generate(adz_datagen::Kind::Text, 4 << 20, 2);
    let mut rungs = Vec::new();
    // Fast compression pays on a 100 MB/s tier; compression at 1 MB/s does not.
    for speed in [1e9, 1e6] {
        let dir = tempfile::tempdir().unwrap();
        let t = tiers(dir.path());
        let p = Profile::from_json(&profile(speed).to_json()).unwrap();
        let mut model = p.cost_model(2).unwrap();
        let report = t.write_with("d", &mut &data[..], &mut model).unwrap();
        assert_eq!(report.predicted, 0, "every block is text, a class the profile measured");
        let cat = t.catalog("d").unwrap();
        let used: Vec<String> = cat.segments.iter().map(|s| s.copies[0].rung.clone()).collect();
        assert_eq!(t.reader("d").unwrap().read_range(0, data.len() as u64).unwrap(), data);
        rungs.push(used);
    }
    assert_eq!(rungs, vec![vec!["zstd:3".to_owned()], vec!["none".to_owned()]]);
}

#[test]
fn blocks_of_classes_the_profile_lacks_are_predicted() {
    let dir = tempfile::tempdir().unwrap();
    let t = tiers(dir.path());
    let mut model = profile(1e9).cost_model(2).unwrap();
    assert_eq!(model.measured, vec![false, false, true, false, false]);
    // Random data (class 4) and doubles (class 3): not in the profile.
    let mut data = adz_datagen::generate(adz_datagen::Kind::Random, 2 << 20, 3);
    data.extend(adz_datagen::generate(adz_datagen::Kind::Text, 2 << 20, 4));
    let report = t.write_with("d", &mut &data[..], &mut model).unwrap();
    assert_eq!(report.predicted, 2);
    assert_eq!(t.reader("d").unwrap().read_range(0, data.len() as u64).unwrap(), data);
    // With every block predicted, all four are.
    model.predict_every_block = true;
    let report = t.write_with("e", &mut &data[..], &mut model).unwrap();
    assert_eq!(report.predicted, 4);
}

#[test]
fn measured_tier_figures_change_the_placement() {
    let data = adz_datagen::generate(adz_datagen::Kind::Text, 2 << 20, 5);
    let mut rungs = Vec::new();
    // zstd:3 at 20 MB/s (2 threads) does not pay on the configured 100 MB/s, but does on the
    // 1 MB/s a measurement found.
    for measured in [None, Some(1e6)] {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tiers(dir.path());
        if let Some(bw) = measured {
            t.set_placement_figures(0, bw, 0.01);
            t.set_placement_figures(7, bw, 0.01); // no such tier: ignored
        }
        let mut model = profile(1e7).cost_model(2).unwrap();
        t.write_with("d", &mut &data[..], &mut model).unwrap();
        let cat = t.catalog("d").unwrap();
        rungs.push(cat.segments[0].copies[0].rung.clone());
    }
    assert_eq!(rungs, ["none", "zstd:3"]);
}
