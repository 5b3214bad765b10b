//! `adz profile`, and `adz compress --tiers` taking its costs from the profile.

use std::process::{Command, Output};

fn adz(args: &[&str], home: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adz"))
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("run adz")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn profile_then_compress_through_tiers_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(
        data.join("a.txt"),
        adz_datagen::generate(adz_datagen::Kind::Text, 300 << 10, 1),
    )
    .unwrap();
    std::fs::write(
        data.join("b.f64"),
        adz_datagen::generate(adz_datagen::Kind::Doubles, 300 << 10, 2),
    )
    .unwrap();
    let conf = d.join("t.toml");
    std::fs::write(&conf, "[[tier]]\nname = \"disk\"\npath = \"disk\"\nbandwidth = \"measure\"\n")
        .unwrap();
    let (data_s, conf_s) = (data.to_str().unwrap(), conf.to_str().unwrap());
    let small = ["--block-size", "64KiB", "--per-file", "256KiB", "--data", data_s];

    // To stdout: every default rung on both files, and the tier.
    let mut args = vec!["profile", "--out", "-", "--tiers", conf_s];
    args.extend(small);
    let out = adz(&args, d);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rungs: Vec<&str> =
        json["rungs"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert_eq!(rungs, ["none", "lz4:1", "zstd:1", "zstd:3", "zstd:6", "zstd:12", "xz:1"]);
    assert_eq!(json["version"], 1);
    assert_eq!(json["sets"].as_array().unwrap().len(), 2);
    assert_eq!(json["samples"].as_array().unwrap().len(), 8);
    assert!(json["tiers"][0]["bandwidth"].as_f64().unwrap() > 0.0);
    assert!(json["predictor"]["blocks_per_second"].as_f64().unwrap() > 0.0);

    // To the default path under $HOME; compress --tiers then says it used it.
    let mut args = vec!["profile", "--quiet", "--rungs", "none,zstd:1"];
    args.extend(small);
    let out = adz(&args, d);
    assert!(out.status.success(), "{}", stderr(&out));
    let default = d.join(".config/adz/profile.json");
    assert!(default.exists());
    let input = data.join("a.txt");
    let out = adz(&["compress", "--tiers", conf_s, input.to_str().unwrap(), "run"], d);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("costs from the profile"), "{}", stderr(&out));
    let out =
        adz(&["compress", "--tiers", conf_s, "--no-profile", input.to_str().unwrap(), "r2"], d);
    assert!(stderr(&out).contains("costs from the built-in table"), "{}", stderr(&out));
    let back = d.join("back");
    let out = adz(&["decompress", "--tiers", conf_s, "run", back.to_str().unwrap()], d);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&input).unwrap());

    // adz predict from the profile's cost predictor: one row per profiled rung.
    let out = adz(&["predict", input.to_str().unwrap(), "--cost-profile", "default", "--json"], d);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rungs"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["rung"], "zstd:1");
    assert!(rows[1]["ratio"].as_f64().unwrap() > 1.5, "{v}");

    // An old or broken profile is a clear error, and writes nothing.
    let text = std::fs::read_to_string(&default).unwrap();
    std::fs::write(&default, text.replacen("\"version\": 1", "\"version\": 7", 1)).unwrap();
    let out = adz(&["compress", "--tiers", conf_s, input.to_str().unwrap(), "r3"], d);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("profile version 7, this adz reads version 1"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&default, "{}").unwrap();
    // Status places nothing: it warns of the bad profile and shows the tiers; a flush, which
    // places data with the profile's costs, refuses.
    let out = adz(&["tier", "--tiers", conf_s, "status"], d);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("not an adz profile"), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("capacity"));
    let out = adz(&["tier", "--tiers", conf_s, "flush"], d);
    assert!(!out.status.success() && stderr(&out).contains("not an adz profile"));
    let out = adz(&["profile", "--data", d.join("nope").to_str().unwrap(), "--out", "-"], d);
    assert!(!out.status.success() && stderr(&out).contains("cannot read the directory"));
}

#[test]
fn adaptive_writes_take_their_priors_from_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in.txt");
    std::fs::write(&input, adz_datagen::generate(adz_datagen::Kind::Text, 3 << 20, 4)).unwrap();
    let prof = d.join("p.json");
    let (input_s, prof_s) = (input.to_str().unwrap(), prof.to_str().unwrap());
    let args = [
        "profile",
        "-q",
        "--size",
        "256KiB",
        "--rungs",
        "none,lz4:1,zstd:1,zstd:6",
        "--out",
        prof_s,
    ];
    let out = adz(&args, d);
    assert!(out.status.success(), "{}", stderr(&out));
    let compress = |extra: &[&str], out_name: &str| {
        let mut args = vec!["compress", "-s", "throughput", "--link", "1GbE", "-f"];
        args.extend(extra);
        let o = d.join(out_name);
        args.extend([input_s, o.to_str().unwrap()]);
        let run = adz(&args, d);
        (run, o)
    };

    let (run, o) = compress(&["--profile", prof_s], "a.adz");
    assert!(run.status.success(), "{}", stderr(&run));
    let want = format!("priors from the profile {prof_s} (4 rungs measured)");
    assert!(stderr(&run).contains(&want), "{}", stderr(&run));
    let back = d.join("back");
    let run = adz(&["decompress", o.to_str().unwrap(), back.to_str().unwrap()], d);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&input).unwrap());

    // The default path is used when it exists; --no-profile and static writes leave it out.
    let default = d.join(".config/adz/profile.json");
    std::fs::create_dir_all(default.parent().unwrap()).unwrap();
    std::fs::copy(&prof, &default).unwrap();
    let (run, _) = compress(&[], "b.adz");
    assert!(stderr(&run).contains("priors from the profile"), "{}", stderr(&run));
    let (run, _) = compress(&["--no-profile"], "c.adz");
    assert!(run.status.success() && !stderr(&run).contains("priors"), "{}", stderr(&run));
    let run =
        adz(&["compress", "-c", "zstd:3", "-f", input_s, d.join("d.adz").to_str().unwrap()], d);
    assert!(run.status.success() && !stderr(&run).contains("priors"), "{}", stderr(&run));

    // A broken default profile is named in a warning and the write goes on with the built-in
    // priors; a broken profile given by name is an error that writes nothing.
    std::fs::write(&default, "{}").unwrap();
    let (run, o) = compress(&[], "e.adz");
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("warning: the profile") && !stderr(&run).contains("priors from"));
    assert!(o.exists());
    let (run, o) = compress(&["--profile", default.to_str().unwrap()], "f.adz");
    assert!(
        !run.status.success() && stderr(&run).contains("not an adz profile"),
        "{}",
        stderr(&run)
    );
    assert!(!o.exists());
}
