//! The energy strategy and energy reporting (decision 0046): `adz compress -s energy`, the
//! summary's and the trace's joules per GB, and `adz cost`'s energy next to money.

mod common;

use common::*;

fn json(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    ok(&out);
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

#[test]
fn cost_prices_energy_next_to_money() {
    let v = json(&["cost", "--json", "--ratio", "2", "--ratio", "1"]);
    // The thesis' node: 300 W with 25 % cooling for 5 s per GB; its storage: 3000 W per PB.
    let full = v["compression_joules_per_gb_full"].as_f64().unwrap();
    assert!((full - 1875.0).abs() < 1e-6, "{full}");
    let idle = v["compression_joules_per_gb_idle"].as_f64().unwrap();
    assert!((idle - 1875.0 * 0.75).abs() < 1e-6, "{idle}");
    let store = v["storage_joules_per_gb_year"].as_f64().unwrap();
    assert!((store - 118_260.0).abs() < 1e-6, "{store}");
    let r2 = &v["ratios"][0];
    // Ratio 2 saves half a GB-year per GB: 1875 J are repaid in 1875 / (118260 / 365 / 2) days.
    let days = r2["energy_days_to_redeem"].as_f64().unwrap();
    assert!((days - 1875.0 / (118_260.0 / 365.0 / 2.0)).abs() < 1e-9, "{days}");
    // 40 TB for a quarter: half its storage energy, less compressing 40 TB.
    let kwh = r2["energy_saved_kwh"].as_f64().unwrap();
    let want = (118_260.0 * 40_000.0 * 0.25 * 0.5 - 1875.0 * 40_000.0) / 3.6e6;
    assert!((kwh - want).abs() < 1e-6, "{kwh} vs {want}");
    assert!(v["ratios"][1]["energy_days_to_redeem"].is_null(), "ratio 1 never repays");
    let text = run(&["cost", "--ratio", "2"]);
    ok(&text);
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("energy: compressing a GB 1875 J") && out.contains("kWh saved"), "{out}");
}

#[test]
fn compress_energy_reports_joules_and_round_trips() {
    let d = Dir::new();
    let data = mixed(6 << 20);
    let input = d.write("in", &data);
    // No machine profile: the built-in watts.
    let out = adz()
        .env("XDG_CONFIG_HOME", d.path("config"))
        .args([
            "compress",
            "-s",
            "energy",
            "--link",
            "117MB/s",
            "-T",
            "2",
            "--retention",
            "3y",
            &input,
            &d.s("out.adz"),
            "--trace",
            &d.s("t.jsonl"),
        ])
        .output()
        .unwrap();
    ok(&out);
    let err = stderr(&out);
    assert!(err.contains("strategy energy=watts:12.5,storage:283824"), "{err}");
    let rapl = std::path::Path::new("/sys/class/powercap").exists();
    assert!(
        err.contains("J/GB written")
            && (err.contains("RAPL not readable") || rapl)
            && err.contains("keeping the output 3.000 y"),
        "{err}"
    );
    let trace = std::fs::read_to_string(d.path("t.jsonl")).unwrap();
    for line in trace.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["joules_per_gb"].as_f64().is_some_and(|j| j >= 0.0), "{line}");
    }
    ok(&run(&["decompress", &d.s("out.adz"), &d.s("back")]));
    assert_eq!(std::fs::read(d.path("back")).unwrap(), data);
    // Other strategies have no energy price per block: no field in their trace.
    ok(&run(&["compress", "-s", "s1", &input, &d.s("s1.adz"), "--trace", &d.s("s1.jsonl")]));
    let s1 = std::fs::read_to_string(d.path("s1.jsonl")).unwrap();
    assert!(!s1.contains("joules_per_gb"));
}

#[test]
fn free_storage_stores_most_blocks_raw() {
    // With storing free, compressing only costs energy: raw wins, but for the blocks sampled
    // to keep the data measured.
    let d = Dir::new();
    let input = d.write("in", &adz_datagen::generate(adz_datagen::Kind::Text, 48 << 20, 5));
    let out = run(&[
        "compress",
        "-s",
        "energy",
        "--storage-energy",
        "0",
        "--link",
        "117MB/s",
        "-T",
        "2",
        &input,
        &d.s("out.adz"),
        "--trace",
        &d.s("t.jsonl"),
    ]);
    ok(&out);
    let trace = std::fs::read_to_string(d.path("t.jsonl")).unwrap();
    let configs: Vec<String> = trace
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["config"].to_string())
        .collect();
    let raw = configs.iter().skip(8).filter(|c| c.contains("none")).count();
    assert!(raw * 4 >= (configs.len() - 8) * 3, "{} raw of {}: {configs:?}", raw, configs.len());
}

#[test]
fn energy_flags_are_checked() {
    let d = Dir::new();
    let input = d.write("in", b"hello hello hello");
    for (args, want) in [
        (&["--max-slowdown", "2"][..], "add -s energy"),
        (&["-s", "energy", "--max-slowdown", "0.5"][..], "--max-slowdown must be"),
        (&["-s", "energy", "--core-watts=-3"][..], "--core-watts must be"),
        (&["-s", "energy", "--retention", "3q"][..], "unknown unit"),
        (&["-s", "energy=watts:x"][..], "not a number"),
    ] {
        let mut a = vec!["compress"];
        a.extend_from_slice(args);
        a.extend_from_slice(&[&input, "-f"]);
        let o = run(&a);
        assert!(!o.status.success(), "{args:?} should fail");
        let e = stderr(&o);
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

/// `adz profile --core-watts` records a power figure; `-s energy` and the summary use it when no
/// --core-watts is given, and a flag still wins.
#[test]
fn the_profiles_power_figure_prices_the_energy_strategy() {
    let d = Dir::new();
    let config = d.path("config");
    let profile = config.join("adz/profile.json");
    let prof = |extra: &[&str]| {
        let mut args = vec!["profile", "--size", "64KiB", "--rungs", "zstd:1", "-T", "1", "-q"];
        args.extend_from_slice(extra);
        run(&args)
    };
    let bad = prof(&["--core-watts=-3", "--out", profile.to_str().unwrap()]);
    assert!(!bad.status.success() && stderr(&bad).contains("--core-watts"), "{}", stderr(&bad));
    ok(&prof(&["--core-watts", "7", "--out", profile.to_str().unwrap()]));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&profile).unwrap()).unwrap();
    assert_eq!(v["core_power"]["watts"].as_f64(), Some(7.0), "{}", v["core_power"]);
    assert_eq!(v["core_power"]["source"].as_str(), Some("given"));

    let input = d.write("in", &mixed(2 << 20));
    let compress = |extra: &[&str]| {
        let mut args = vec!["compress", "-f", "-s", "energy", "--link", "117MB/s", "-T", "2"];
        args.extend_from_slice(extra);
        args.push(&input);
        let out = d.s("out.adz");
        args.push(&out);
        let o = adz().env("XDG_CONFIG_HOME", &config).args(&args).output().unwrap();
        ok(&o);
        stderr(&o)
    };
    let err = compress(&[]);
    assert!(err.contains("strategy energy=watts:7,"), "{err}");
    // Where RAPL reads, the joules are its own; else CPU time x the profile's watts.
    assert!(
        !err.contains("RAPL not readable") || err.contains("x 7 W per core (the profile's)"),
        "{err}"
    );
    let err = compress(&["--core-watts", "5"]);
    assert!(err.contains("strategy energy=watts:5,") && !err.contains("the profile's"), "{err}");
}
