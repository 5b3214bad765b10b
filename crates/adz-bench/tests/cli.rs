//! The harness end to end on tiny data: the CSV has every planned row and column, the report
//! and plots are written, plot-trace makes a valid PNG, and a run stopped part way resumes to
//! the rows of a one-shot run.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adz-bench")).args(args).output().expect("run adz-bench")
}

fn ok(args: &[&str]) -> Output {
    let out = bench(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

const COLUMNS: &str = "dataset,bytes,link_mbs,workload,config,kind,threads,seconds,write_mbs,ratio,stored_bytes,compute_seconds,async_share,configs_used";

fn read(path: &Path) -> (String, Vec<Vec<String>>) {
    let mut rd = csv::Reader::from_path(path).unwrap();
    let header = rd.headers().unwrap().iter().collect::<Vec<_>>().join(",");
    let rows = rd.records().map(|r| r.unwrap().iter().map(str::to_owned).collect()).collect();
    (header, rows)
}

/// PNG signature, and the IHDR's width and height.
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert!(b.len() > 1000, "{} is {} bytes", path.display(), b.len());
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{} is not a PNG", path.display());
    assert_eq!(&b[12..16], b"IHDR");
    // PNG numbers are big-endian (the project lints forbid the std helpers for that).
    let be = |s: &[u8]| s.iter().fold(0u32, |a, &x| (a << 8) | u32::from(x));
    let (w, h) = (be(&b[16..20]), be(&b[20..24]));
    (w, h)
}

#[test]
fn run_writes_every_planned_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let out = dir.path().join("out");
    ok(&[
        "run",
        "--quick",
        "--size",
        "300000",
        "--datasets",
        "text,climate",
        "--links",
        "1200",
        "--workloads",
        "sync,async",
        "--static",
        "none,lz4:1,zstd:1",
        "--adaptive",
        "s1,s2",
        "--no-external",
        "-T",
        "2",
        "--rounds",
        "2",
        "--cache",
        cache.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let (header, rows) = read(&out.join("results.csv"));
    assert_eq!(header, COLUMNS);
    // 2 datasets x 1 link x (5 configs x 2 workloads + 1 oracle).
    assert_eq!(rows.len(), 22, "{rows:?}");
    let keys: BTreeSet<_> =
        rows.iter().map(|r| (r[0].clone(), r[3].clone(), r[4].clone())).collect();
    assert_eq!(keys.len(), rows.len(), "a row appears twice");
    for ds in ["text", "climate"] {
        for wl in ["sync", "async"] {
            for cfg in ["none", "lz4:1", "zstd:1", "s1", "s2"] {
                assert!(
                    keys.contains(&(ds.into(), wl.into(), cfg.into())),
                    "{ds} {wl} {cfg} missing"
                );
            }
        }
        assert!(keys.contains(&(ds.into(), "sync".into(), "oracle".into())));
    }
    for r in &rows {
        let (bytes, secs, ratio): (u64, f64, f64) =
            (r[1].parse().unwrap(), r[7].parse().unwrap(), r[9].parse().unwrap());
        assert_eq!(bytes, 300_000, "{r:?}");
        assert!(secs > 0.0 && ratio > 0.0, "{r:?}");
        let kind = r[5].as_str();
        assert_eq!(
            kind,
            match r[4].as_str() {
                "none" => "raw",
                "oracle" => "oracle",
                "s1" | "s2" => "adaptive",
                _ => "static",
            }
        );
        // Async rows say how long the application computed and how much overlapped.
        assert_eq!(r[3] == "async", !r[11].is_empty(), "{r:?}");
        assert_eq!(r[3] == "async", !r[12].is_empty(), "{r:?}");
        if r[3] == "async" {
            let share: f64 = r[12].parse().unwrap();
            assert!((0.0..=1.0).contains(&share), "{r:?}");
        }
    }
    // Text compresses with zstd:1; raw stores about the input (plus headers and index).
    let get = |ds: &str, cfg: &str| {
        rows.iter().find(|r| r[0] == ds && r[3] == "sync" && r[4] == cfg).unwrap()
    };
    assert!(get("text", "zstd:1")[9].parse::<f64>().unwrap() > 1.5);
    assert!((get("text", "none")[9].parse::<f64>().unwrap() - 1.0).abs() < 0.01);
    // The summary and the traces of the adaptive runs are there.
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| text | 1200 | sync |"), "{md}");
    let traces: BTreeSet<String> = std::fs::read_dir(out.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    // s1, s2 x 2 datasets x 2 workloads, and the sync static sweep (the oracle's input).
    assert_eq!(traces.len(), 2 * 2 * 2 + 2 * 3, "{traces:?}");
    assert!(traces.contains("text-1200-async-s2.jsonl"), "{traces:?}");
    assert!(traces.contains("climate-1200-sync-zstd:1.jsonl"), "{traces:?}");

    // report and plot read the CSV back.
    let rep = ok(&["report", out.join("results.csv").to_str().unwrap()]);
    assert_eq!(String::from_utf8(rep.stdout).unwrap(), md);
    let plots = dir.path().join("plots");
    let p = ok(&["plot", out.join("results.csv").to_str().unwrap(), plots.to_str().unwrap()]);
    let files: Vec<&str> = std::str::from_utf8(&p.stdout).unwrap().lines().collect();
    assert_eq!(files.len(), 4, "one per dataset and workload: {files:?}");
    for f in files {
        assert_eq!(png_size(Path::new(f)), (1400, 700));
    }
}

/// `--sink`: one more link, a real store written unthrottled. Sync only and no oracle there;
/// the adaptive rows measure it; every row's object is gone at the end; the report, the
/// traces and the plots name it `sink`.
#[test]
fn a_real_sink_is_one_more_link() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, out) = (dir.path().join("cache"), dir.path().join("out"));
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let object = store.join("bench.adz");
    let args = [
        "run",
        "--quick",
        "--size",
        "300000",
        "--datasets",
        "text",
        "--links",
        "1200",
        "--sink",
        object.to_str().unwrap(),
        "--workloads",
        "sync,async",
        "--static",
        "none,zstd:1",
        "--adaptive",
        "s1",
        "--no-external",
        "-T",
        "2",
        "--rounds",
        "2",
        "--cache",
        cache.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    ok(&args);
    let (_, rows) = read(&out.join("results.csv"));
    let at = |link: &str| -> Vec<(String, String)> {
        rows.iter().filter(|r| r[2] == link).map(|r| (r[3].clone(), r[4].clone())).collect()
    };
    // 1200 MB/s: sync none, zstd:1, oracle, s1; async none, zstd:1, s1.
    assert_eq!(at("1200.0").len(), 7, "{rows:?}");
    let sink = at("0.0");
    let want: Vec<(String, String)> =
        ["none", "zstd:1", "s1"].iter().map(|c| ("sync".to_owned(), c.to_string())).collect();
    assert_eq!(sink, want, "sync only, no oracle: {rows:?}");
    let z1 = rows.iter().find(|r| r[2] == "0.0" && r[4] == "zstd:1").unwrap();
    assert!(z1[9].parse::<f64>().unwrap() > 1.5, "zstd:1 written to the sink: {z1:?}");
    let s1 = rows.iter().find(|r| r[2] == "0.0" && r[4] == "s1").unwrap();
    assert!(s1[7].parse::<f64>().unwrap() > 0.0 && !s1[13].is_empty(), "{s1:?}");
    assert!(!object.exists(), "the sink's object is deleted at the end");
    assert_eq!(std::fs::read_dir(&store).unwrap().count(), 0, "nothing left in the store");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| text | sink | sync |"), "{md}");
    assert!(out.join("traces/text-sink-sync-s1.jsonl").exists());
    let plots = dir.path().join("plots");
    let p = ok(&["plot", out.join("results.csv").to_str().unwrap(), plots.to_str().unwrap()]);
    assert!(std::str::from_utf8(&p.stdout).unwrap().contains("text-sink-sync.png"));
    // The sink is part of the plan: another one does not resume here.
    let mut other = args.to_vec();
    let elsewhere = store.join("other.adz");
    let i = other.iter().position(|a| *a == "--sink").unwrap();
    other[i + 1] = elsewhere.to_str().unwrap();
    let o = bench(&other);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("sink:"), "{o:?}");
}

#[test]
fn quick_preset_includes_external_tools_when_present() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ok(&[
        "run",
        "--quick",
        "--size",
        "200000",
        "--datasets",
        "text",
        "--links",
        "1200",
        "--workloads",
        "sync",
        "--cache",
        dir.path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let (_, rows) = read(&out.join("results.csv"));
    let zstd = Command::new("zstd").arg("--version").output().is_ok_and(|o| o.status.success());
    // 6 static rungs + s1, s2, s3=1.5, s1-auto + oracle (+ zstd --adapt and zstd -3).
    assert_eq!(rows.len(), 11 + if zstd { 2 } else { 0 }, "{rows:?}");
    if zstd {
        let adapt =
            rows.iter().find(|r| r[4].starts_with("zstd --adapt")).expect("zstd --adapt row");
        assert_eq!(adapt[5], "external");
        assert!(adapt[9].parse::<f64>().unwrap() > 1.5, "{adapt:?}");
    }
}

#[test]
fn plot_trace_writes_a_png() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let mut s = String::new();
    for i in 0..60u64 {
        let cfg = ["lz4:1", "zstd:1", "zstd:3", "none", "xz:0"][(i / 12) as usize];
        s.push_str(&format!(
            "{{\"seq\":{i},\"offset\":{},\"raw\":1048576,\"stored\":{},\"config\":\"{cfg}\",\"reason\":\"target\",\"class\":1,\"stored_raw\":false,\"wall_s\":0.01,\"cpu_s\":0.01,\"speed_mbs\":100.0,\"agg_speed_mbs\":{},\"target_mbs\":250.0,\"link_mbs\":117.0,\"sink_s\":0.005,\"backlogged\":true,\"t_s\":{}}}\n",
            i << 20,
            300_000 + i * 1000,
            200.0 + i as f64,
            i as f64 * 0.01
        ));
    }
    std::fs::write(&trace, s).unwrap();
    let png = dir.path().join("t.png");
    ok(&["plot-trace", trace.to_str().unwrap(), png.to_str().unwrap(), "--title", "test"]);
    assert_eq!(png_size(&png), (1200, 800));

    // Not a trace: a clear error naming the line, and no PNG.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"seq\":1}\nnot json\n").unwrap();
    let png2 = dir.path().join("bad.png");
    let out = bench(&["plot-trace", bad.to_str().unwrap(), png2.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!png2.exists());
}

#[test]
fn bad_arguments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["run", "--links", "0", "--estimate"][..],
        &["run", "--static", "zstd:99"],
        &["run", "--adaptive", "static=zstd:3"],
        &["run", "--async-repeats", "0", "--estimate"],
        &[
            "run",
            "--datasets",
            "nope",
            "--out",
            dir.path().to_str().unwrap(),
            "--cache",
            dir.path().to_str().unwrap(),
        ],
        &["report", "/nonexistent.csv"],
        &["datasets", "--real", "--datasets", "text"],
    ] {
        let out = bench(args);
        assert!(!out.status.success(), "{args:?} succeeded");
    }
}

#[test]
fn estimate_runs_nothing_and_states_the_time() {
    let out = ok(&["run", "--estimate", "-T", "2"]);
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("estimated run time"), "{s}");
    assert!(s.contains("48 static rungs"), "{s}");
    assert!(s.contains("async adz rows: the median of 3 runs each"), "{s}");
    // --real plans the real corpus (an estimate builds and downloads nothing).
    let real = String::from_utf8(ok(&["run", "--estimate", "--real", "-T", "2"]).stdout).unwrap();
    assert!(real.contains(" 8 datasets x 3 links"), "{real}");
    let quick = String::from_utf8(ok(&["run", "--estimate", "--quick", "-T", "2"]).stdout).unwrap();
    assert!(!quick.contains("median"), "{quick}");
}

/// A small plan of 2 datasets x 2 links: per (dataset, link) 3 static rungs + s1 on sync and
/// async, and the oracle: 36 rows, 32 of them measured.
fn small_plan<'a>(cache: &'a str, out: &'a str, size: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--quick",
        "--size",
        size,
        "--datasets",
        "text,climate",
        "--links",
        "1200,6000",
        "--workloads",
        "sync,async",
        "--static",
        "none,lz4:1,zstd:1",
        "--adaptive",
        "s1",
        "--no-external",
        "-T",
        "2",
        "--rounds",
        "2",
        "--cache",
        cache,
        "--out",
        out,
    ]
}

const SMALL_ROWS: usize = 36;

/// (dataset, link, workload, config, kind) of each row, in file order.
fn row_ids(csv: &Path) -> Vec<[String; 5]> {
    let (header, rows) = read(csv);
    assert_eq!(header, COLUMNS);
    rows.iter().map(|r| [0, 2, 3, 4, 5].map(|i| r[i].clone())).collect()
}

/// No row twice, and an oracle row for a (dataset, link) exactly when its sync static sweep is
/// complete.
fn check_partial(ids: &[[String; 5]]) {
    let keys: BTreeSet<_> = ids.iter().collect();
    assert_eq!(keys.len(), ids.len(), "a row appears twice: {ids:?}");
    for ds in ["text", "climate"] {
        for link in ["1200", "6000"] {
            let has = |cfg: &str| {
                ids.iter().any(|r| r[0] == ds && r[1] == link && r[2] == "sync" && r[3] == cfg)
            };
            let sweep = ["none", "lz4:1", "zstd:1"].iter().all(|c| has(c));
            assert_eq!(has("oracle"), sweep, "{ds} at {link}: oracle vs sweep in {ids:?}");
        }
    }
}

#[test]
fn a_stopped_run_resumes_to_the_rows_of_a_one_shot_run() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (cache, one, parts) =
        (cache.to_str().unwrap(), dir.path().join("one"), dir.path().join("parts"));
    ok(&small_plan(cache, one.to_str().unwrap(), "200000"));
    let expected = row_ids(&one.join("results.csv"));
    assert_eq!(expected.len(), SMALL_ROWS);
    check_partial(&expected);

    // The same plan, 5 measured rows per run, the CSV checked after each.
    let mut args = small_plan(cache, parts.to_str().unwrap(), "200000");
    args.extend(["--max-rows", "5"]);
    let csv = parts.join("results.csv");
    let mut plan_json = None;
    let mut runs = 0;
    loop {
        let out = ok(&args);
        runs += 1;
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let ids = row_ids(&csv);
        check_partial(&ids);
        // Rows come in the one-shot run's order.
        assert_eq!(ids[..], expected[..ids.len()], "run {runs}");
        // The async calibration and the plan are written once, then only read.
        let pj = std::fs::read(parts.join("plan.json")).unwrap();
        assert_eq!(plan_json.get_or_insert_with(|| pj.clone()), &pj, "run {runs}");
        assert!(err.contains(&format!("/{SMALL_ROWS} ")), "progress lines: {err}");
        if ids.len() == SMALL_ROWS {
            assert!(err.contains("complete: all 36 rows"), "{err}");
            break;
        }
        assert!(err.contains("stopped (--max-rows reached)"), "{err}");
        assert!(err.contains(&format!("{} rows left", SMALL_ROWS - ids.len())), "{err}");
        if runs == 2 {
            // Killed while writing the next row: half a line at the end. The next run cuts it
            // off (saying so) and measures that row again.
            let mut text = std::fs::read(&csv).unwrap();
            let last = text[..text.len() - 1].iter().rposition(|&b| b == b'\n').unwrap();
            text.truncate(last + 1 + (text.len() - last) / 2);
            std::fs::write(&csv, &text).unwrap();
            let out = ok(&args);
            runs += 1;
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("ended in a partial row"), "{err}");
            check_partial(&row_ids(&csv));
        }
        assert!(runs < 20, "no progress");
    }
    assert!(runs >= 7, "32 measured rows, 5 per run: {runs} runs");
    assert_eq!(row_ids(&csv), expected);

    // Done: another run measures nothing and says so; report and plot read it as a one-shot
    // CSV (the summary is the report of the file).
    let before = std::fs::read(&csv).unwrap();
    let out = ok(&args);
    assert!(String::from_utf8_lossy(&out.stderr).contains("(0 written by this run)"));
    assert_eq!(std::fs::read(&csv).unwrap(), before);
    let rep = ok(&["report", csv.to_str().unwrap()]);
    let md = std::fs::read_to_string(parts.join("summary.md")).unwrap();
    assert_eq!(String::from_utf8(rep.stdout).unwrap(), md);
    let one_md = std::fs::read_to_string(one.join("summary.md")).unwrap();
    let table_rows = |m: &str| m.lines().filter(|l| l.starts_with("| ")).count();
    assert_eq!(table_rows(&md), table_rows(&one_md));
    let plots = dir.path().join("plots");
    let p = ok(&["plot", csv.to_str().unwrap(), plots.to_str().unwrap()]);
    assert_eq!(std::str::from_utf8(&p.stdout).unwrap().lines().count(), 8);
}

#[test]
fn max_minutes_zero_runs_nothing_and_says_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, out) = (dir.path().join("cache"), dir.path().join("out"));
    let mut args = small_plan(cache.to_str().unwrap(), out.to_str().unwrap(), "100000");
    args.extend(["--max-minutes", "0"]);
    let o = ok(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stopped (--max-minutes 0 reached)"), "{err}");
    assert!(err.contains("36 rows left"), "{err}");
    assert!(err.contains("Run the same command again to continue"), "{err}");
    assert_eq!(row_ids(&out.join("results.csv")).len(), 0, "header only");

    // --estimate counts what is left in --out.
    args.truncate(args.len() - 2);
    args.push("--estimate");
    let o = ok(&args);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("already holds 0 of these rows"), "{s}");

    let bad = bench(&["run", "--max-minutes", "-1", "--estimate"]);
    assert!(!bad.status.success());
}

#[test]
fn a_different_plan_in_out_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, out) = (dir.path().join("cache"), dir.path().join("out"));
    let (cache, out_s) = (cache.to_str().unwrap(), out.to_str().unwrap());
    let mut args = small_plan(cache, out_s, "100000");
    args.extend(["--max-rows", "2"]);
    ok(&args);
    let csv = out.join("results.csv");
    let before = std::fs::read(&csv).unwrap();
    assert_eq!(row_ids(&csv).len(), 2);

    // Another --size: refused, naming the difference; nothing written.
    let mut other = small_plan(cache, out_s, "120000");
    other.extend(["--max-rows", "2"]);
    let o = bench(&other);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("holds the results of another plan"), "{err}");
    assert!(err.contains("size: 100000 there, 120000 in this run"), "{err}");
    assert!(err.contains("--fresh"), "{err}");
    assert_eq!(std::fs::read(&csv).unwrap(), before);

    // Other links: refused as well.
    let mut links = args.clone();
    let i = links.iter().position(|a| *a == "1200,6000").unwrap();
    links[i] = "1200";
    let o = bench(&links);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("links-mbs"));

    // Async rows measured once (--quick's default) do not mix with medians of three.
    let mut repeats = args.clone();
    repeats.extend(["--async-repeats", "3"]);
    let o = bench(&repeats);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("async-repeats: 1 there, 3 in this run"), "{err}");
    assert_eq!(std::fs::read(&csv).unwrap(), before);

    // A row that is not in the plan (an edited file): refused, naming the row.
    let mut text = String::from_utf8(before.clone()).unwrap();
    text.push_str("text,100000,117,sync,none,raw,2,1,0.1,1,100000,,,\n");
    std::fs::write(&csv, &text).unwrap();
    let o = bench(&args);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("row 4 (text, 100000 bytes, 117 MB/s, sync, none"), "{err}");
    assert!(err.contains("is not a row of this run's plan"), "{err}");

    // A results.csv without the plan it belongs to: refused.
    std::fs::write(&csv, &before).unwrap();
    std::fs::remove_file(out.join("plan.json")).unwrap();
    let o = bench(&args);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("plan.json does not"));

    // --fresh starts over with the new plan.
    other.push("--fresh");
    ok(&other);
    let (_, rows) = read(&csv);
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r[1] == "120000"), "{rows:?}");
}
