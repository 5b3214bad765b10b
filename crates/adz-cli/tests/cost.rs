//! `adz cost`: the thesis' numbers by default, every input a flag, clear errors.

use std::process::Command;

fn adz(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_adz")).args(args).output().expect("run adz")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = adz(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

#[test]
fn default_reproduces_thesis_table_3_1() {
    let v = json(&["cost", "--json"]);
    let rows = v["ratios"].as_array().unwrap();
    let got: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r["ratio"].as_f64().unwrap(), r["storage_savings"].as_f64().unwrap()))
        .collect();
    let table = [
        (1.05, 25.0),
        (1.1, 48.0),
        (1.2, 88.0),
        (1.3, 122.0),
        (1.4, 151.0),
        (1.5, 177.0),
        (2.0, 265.0),
    ];
    assert_eq!(got.len(), table.len());
    for ((r, s), (tr, ts)) in got.iter().zip(table) {
        assert_eq!(*r, tr);
        assert!((s - ts).abs() <= 1.0, "ratio {r}: {s} vs {ts}");
    }
    let full = v["compression_cost_per_gb_full"].as_f64().unwrap();
    assert!((full - 0.00061).abs() < 0.000005, "{full}");
}

#[test]
fn flags_change_the_model() {
    let base = json(&["cost", "--json", "--ratio", "2"]);
    let dear = json(&["cost", "--json", "--ratio", "2", "--energy-price", "0.28"]);
    let b = base["storage_cost_per_gb_year"].as_f64().unwrap();
    let d = dear["storage_cost_per_gb_year"].as_f64().unwrap();
    assert!(d > b);
    // A faster compressor needs fewer machine seconds per GB: cheaper, pays sooner.
    let fast = json(&["cost", "--json", "--ratio", "2", "--speed", "1000MB/s"]);
    let days = |v: &serde_json::Value| v["ratios"][0]["days_to_redeem_full"].as_f64().unwrap();
    assert!(days(&fast) < days(&base));
    let with_link = json(&["cost", "--json", "--ratio", "2", "--link", "1GbE", "--data-gb", "1"]);
    let w = &with_link["ratios"][0]["write"];
    assert!(w["duration_seconds"].as_f64().unwrap() < w["raw_seconds"].as_f64().unwrap());
}

#[test]
fn bad_inputs_are_refused_clearly() {
    for args in [
        &["cost", "--ratio", "-1"][..],
        &["cost", "--idle-share", "2"],
        &["cost", "--machine-years", "0"],
        &["cost", "--prolong", "0.5"],
        &["cost", "--bench", "/nonexistent/results.csv"],
    ] {
        let out = adz(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error"), "{args:?}: {err}");
    }
}

#[test]
fn prices_the_adaptive_rows_of_a_bench_csv() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("results.csv");
    std::fs::write(
        &csv,
        "dataset,bytes,link_mbs,workload,config,kind,seconds,ratio\n\
         text,1000000000,100,sync,none,raw,10.0,1.0\n\
         text,1000000000,100,sync,s1,adaptive,4.0,2.5\n\
         text,1000000000,100,sync,s3=1.5,adaptive,15.0,3.0\n",
    )
    .unwrap();
    let v = json(&["cost", "--json", "--bench", csv.to_str().unwrap()]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2, "only adaptive rows: {v}");
    assert_eq!(rows[0]["config"], "s1");
    assert_eq!(rows[0]["cost"]["days_to_redeem"].as_f64(), Some(0.0));
    assert!(rows[1]["cost"]["days_to_redeem"].as_f64().unwrap() > 0.0);

    // Link 0, the real sink of `adz-bench run --sink`: priced at its raw row's speed (1 GB in
    // 5 s); a sink row of a dataset without a raw row is left out.
    let sink = dir.path().join("sink.csv");
    std::fs::write(
        &sink,
        "dataset,bytes,link_mbs,workload,config,kind,seconds,ratio\n\
         text,1000000000,0,sync,none,raw,5.0,1.0\n\
         text,1000000000,0,sync,s1,adaptive,4.0,2.5\n\
         climate,1000000000,0,sync,s1,adaptive,4.0,2.5\n",
    )
    .unwrap();
    let v = json(&["cost", "--json", "--bench", sink.to_str().unwrap()]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["dataset"], "text");
    assert!((rows[0]["cost"]["raw_seconds"].as_f64().unwrap() - 5.0).abs() < 1e-9, "{v}");
    let no_adaptive = dir.path().join("none.csv");
    std::fs::write(&no_adaptive, "dataset,bytes,link_mbs,workload,config,kind,seconds,ratio\n")
        .unwrap();
    assert!(!adz(&["cost", "--bench", no_adaptive.to_str().unwrap()]).status.success());
}
