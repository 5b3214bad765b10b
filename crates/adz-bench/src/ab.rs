//! `adz-bench ab`: several builds of `adz` side by side on the same files and links, in one run.
//!
//! Every round runs each (file, link) cell once per build, and rotates the builds' order from
//! one round to the next: on this kind of machine the first run of a cell after another cell
//! can be up to 2x off (page cache, CPU frequency, the other build's threads winding down), and
//! a fixed order would charge that to one build. Before each run the input is read once, untimed,
//! so that every run starts from the same state, its input just read. Rows go to a CSV as soon
//! as they are measured; the summary compares medians.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};

/// One build under test: a name for the tables and the `adz` binary.
#[derive(Clone, Debug, PartialEq)]
pub struct Build {
    /// The name in the CSV and the tables.
    pub name: String,
    /// The `adz` binary.
    pub path: PathBuf,
}

impl std::str::FromStr for Build {
    type Err = String;
    fn from_str(s: &str) -> Result<Build, String> {
        let (name, path) = match s.split_once('=') {
            Some((n, p)) => (n.to_owned(), PathBuf::from(p)),
            None => {
                let p = PathBuf::from(s);
                let n = p.file_name().map_or(s.into(), |n| n.to_string_lossy().into_owned());
                (n, p)
            }
        };
        if name.is_empty() || path.as_os_str().is_empty() {
            return Err(format!("`{s}`: give NAME=PATH or PATH"));
        }
        Ok(Build { name, path })
    }
}

/// One measured run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbRow {
    /// The input's name (a dataset name, or the file's name).
    pub dataset: String,
    /// The link, MB/s (10^6 bytes/s), given to `--throttle`.
    pub link_mbs: f64,
    /// The build's name.
    pub build: String,
    /// The round, from 1.
    pub round: usize,
    /// Wall seconds of the whole command.
    pub seconds: f64,
    /// Raw bytes / bytes written.
    pub ratio: f64,
}

/// What to run.
pub struct AbPlan {
    /// The builds, at least two; the first is the reference of the summary.
    pub builds: Vec<Build>,
    /// (name, path) of every input.
    pub inputs: Vec<(String, PathBuf)>,
    /// Links, MB/s.
    pub links: Vec<f64>,
    /// Rounds.
    pub rounds: usize,
    /// Arguments given to `adz compress` before `--throttle` (e.g. `-s throughput`).
    pub args: Vec<String>,
    /// Directory for the outputs (one file per build, overwritten every run).
    pub tmp: PathBuf,
}

/// The builds' order in round `round` (from 1): as given in the first round (so a CSV lists
/// the reference first), then rotated by one every round.
pub fn rotated(n: usize, round: usize) -> Vec<usize> {
    (0..n).map(|i| (i + round - 1) % n).collect()
}

/// Run the plan, appending each row to `csv` (with a header) and returning every row.
pub fn run(plan: &AbPlan, csv: &Path) -> Result<Vec<AbRow>> {
    ensure!(plan.builds.len() >= 2, "give at least two builds (--build NAME=PATH)");
    ensure!(plan.rounds >= 1, "--rounds must be at least 1");
    for b in &plan.builds {
        ensure!(b.path.is_file(), "build {}: no file {}", b.name, b.path.display());
    }
    let mut names: Vec<&str> = plan.builds.iter().map(|b| b.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    ensure!(names.len() == plan.builds.len(), "two builds have the same name");
    let mut out = csv::Writer::from_writer(BufWriter::new(
        File::create(csv).with_context(|| format!("creating {}", csv.display()))?,
    ));
    let mut rows = Vec::new();
    let total = plan.rounds * plan.inputs.len() * plan.links.len() * plan.builds.len();
    for round in 1..=plan.rounds {
        for (name, input) in &plan.inputs {
            let raw = std::fs::metadata(input)
                .with_context(|| format!("reading {}", input.display()))?
                .len();
            for &link in &plan.links {
                for i in rotated(plan.builds.len(), round) {
                    let b = &plan.builds[i];
                    let dst = plan.tmp.join(format!("adz-bench-ab-{}.adz", b.name));
                    warm(input)?;
                    let seconds = run_one(b, &plan.args, link, input, &dst)?;
                    let stored = std::fs::metadata(&dst)?.len().max(1);
                    let row = AbRow {
                        dataset: name.clone(),
                        link_mbs: link,
                        build: b.name.clone(),
                        round,
                        seconds,
                        ratio: raw as f64 / stored as f64,
                    };
                    out.serialize(&row)?;
                    out.flush()?;
                    rows.push(row);
                    eprint!("\radz-bench ab: {}/{total} runs", rows.len());
                }
            }
        }
    }
    eprintln!();
    for b in &plan.builds {
        let _ = std::fs::remove_file(plan.tmp.join(format!("adz-bench-ab-{}.adz", b.name)));
    }
    Ok(rows)
}

/// Read all of `path` and drop it, so that a timed run finds its input in memory the machine
/// has touched just now. Returns the bytes read.
fn warm(path: &Path) -> Result<u64> {
    let mut f = File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        match std::io::Read::read(&mut f, &mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }
}

fn run_one(b: &Build, args: &[String], link: f64, input: &Path, dst: &Path) -> Result<f64> {
    let t0 = Instant::now();
    let out = Command::new(&b.path)
        .arg("compress")
        .args(["-q", "-f"])
        .args(args)
        .arg("--throttle")
        .arg(format!("{link}MB/s"))
        .arg(input)
        .arg(dst)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", b.path.display()))?;
    let seconds = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "{} compress {} failed ({}): {}",
            b.name,
            input.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(seconds)
}

/// Read the CSV a run wrote.
pub fn read_csv(path: &Path) -> Result<Vec<AbRow>> {
    let mut r =
        csv::Reader::from_path(path).with_context(|| format!("reading {}", path.display()))?;
    let rows = r.deserialize().collect::<Result<Vec<AbRow>, _>>()?;
    ensure!(!rows.is_empty(), "{}: no rows", path.display());
    Ok(rows)
}

/// The median of `v` (the mean of the two middle values of an even count).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The geometric mean of positive values.
pub fn geo_mean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// The markdown summary: per link and input, each build's median seconds and ratio, and each
/// build's speed relative to the first (`reference` seconds / build seconds; above 1 is
/// faster), with the geometric mean per link.
pub fn summary(rows: &[AbRow]) -> String {
    let mut builds: Vec<String> = Vec::new();
    for r in rows {
        if !builds.contains(&r.build) {
            builds.push(r.build.clone());
        }
    }
    type Cell = (u64, String, String);
    let mut cells: BTreeMap<Cell, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut datasets: Vec<String> = Vec::new();
    for r in rows {
        if !datasets.contains(&r.dataset) {
            datasets.push(r.dataset.clone());
        }
        let key = (crate::results::link_key(r.link_mbs), r.dataset.clone(), r.build.clone());
        let e = cells.entry(key).or_default();
        e.0.push(r.seconds);
        e.1.push(r.ratio);
    }
    let mut links: Vec<u64> = cells.keys().map(|k| k.0).collect();
    links.dedup();
    let reference = &builds[0];
    let mut s = String::new();
    let rounds = rows.iter().map(|r| r.round).max().unwrap_or(0);
    s.push_str(&format!(
        "Medians of {rounds} rounds; speed = {reference}'s seconds / the build's (above 1: faster than {reference}).\n\n"
    ));
    s.push_str("| link MB/s | input |");
    for b in &builds {
        s.push_str(&format!(" {b} s | {b} ratio |"));
    }
    for b in &builds[1..] {
        s.push_str(&format!(" {b} speed |"));
    }
    s.push('\n');
    s.push_str(&"|---".repeat(2 + 2 * builds.len() + builds.len() - 1));
    s.push_str("|\n");
    for &link in &links {
        let mut speeds: Vec<Vec<f64>> = vec![Vec::new(); builds.len()];
        for d in &datasets {
            let med = |b: &String| {
                cells.get(&(link, d.clone(), b.clone())).map(|(t, r)| {
                    let (mut t, mut r) = (t.clone(), r.clone());
                    (median(&mut t), median(&mut r))
                })
            };
            let Some((ref_t, _)) = med(reference) else { continue };
            s.push_str(&format!("| {} | {d} |", link as f64 / 1000.0));
            for b in &builds {
                match med(b) {
                    Some((t, r)) => s.push_str(&format!(" {t:.3} | {r:.3} |")),
                    None => s.push_str(" - | - |"),
                }
            }
            for (i, b) in builds.iter().enumerate().skip(1) {
                match med(b) {
                    Some((t, _)) => {
                        speeds[i].push(ref_t / t);
                        s.push_str(&format!(" {:.3} |", ref_t / t));
                    }
                    None => s.push_str(" - |"),
                }
            }
            s.push('\n');
        }
        s.push_str(&format!("| {} | **geometric mean** |", link as f64 / 1000.0));
        s.push_str(&" | |".repeat(builds.len()));
        for v in speeds.iter().skip(1) {
            if v.is_empty() {
                s.push_str(" - |");
            } else {
                s.push_str(&format!(" **{:.3}** |", geo_mean(v)));
            }
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(dataset: &str, link: f64, build: &str, round: usize, seconds: f64) -> AbRow {
        AbRow {
            dataset: dataset.into(),
            link_mbs: link,
            build: build.into(),
            round,
            seconds,
            ratio: 2.0,
        }
    }

    #[test]
    fn warming_reads_the_whole_input() {
        let dir = std::env::temp_dir().join(format!("adz-ab-warm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("in.bin");
        // Longer than the read buffer and not a multiple of it.
        std::fs::write(&f, vec![7u8; (3 << 20) + 5]).unwrap();
        assert_eq!(warm(&f).unwrap(), (3 << 20) + 5);
        assert!(warm(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_build_goes_first_once_in_as_many_rounds() {
        for n in 1..5 {
            let firsts: Vec<usize> = (1..=n).map(|r| rotated(n, r)[0]).collect();
            let mut sorted = firsts.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n = {n}: {firsts:?}");
            assert_eq!(rotated(n, 1), (0..n).collect::<Vec<_>>(), "the first round as given");
            for r in 1..=n {
                let mut o = rotated(n, r);
                o.sort_unstable();
                assert_eq!(o, (0..n).collect::<Vec<_>>(), "each build runs once a round");
            }
        }
    }

    #[test]
    fn build_names_default_to_the_file_name() {
        let b: Build = "old=/dev/shm/adz".parse().unwrap();
        assert_eq!((b.name.as_str(), b.path.to_str()), ("old", Some("/dev/shm/adz")));
        let b: Build = "target/release/adz".parse().unwrap();
        assert_eq!(b.name, "adz");
        assert!("=x".parse::<Build>().is_err());
    }

    #[test]
    fn the_summary_compares_medians_to_the_first_build() {
        let mut rows = Vec::new();
        // `a` takes 2 s (one outlier at 9 s), `b` 1 s at 117 MB/s; both 1 s at 1200 MB/s.
        for (round, ta) in [(1, 2.0), (2, 9.0), (3, 2.0)] {
            rows.push(row("fits", 117.0, "a", round, ta));
            rows.push(row("fits", 117.0, "b", round, 1.0));
            rows.push(row("fits", 1200.0, "a", round, 1.0));
            rows.push(row("fits", 1200.0, "b", round, 1.0));
        }
        let s = summary(&rows);
        assert!(s.contains("| 117 | fits | 2.000 | 2.000 | 1.000 | 2.000 | 2.000 |"), "{s}");
        assert!(s.contains("| 117 | **geometric mean** | | | | | **2.000** |"), "{s}");
        assert!(s.contains("| 1200 | **geometric mean** | | | | | **1.000** |"), "{s}");
    }

    #[test]
    fn a_failing_build_stops_the_run_with_its_message() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::write(&input, b"x").unwrap();
        let plan = AbPlan {
            builds: vec!["f=/bin/false".parse().unwrap(), "t=/bin/true".parse().unwrap()],
            inputs: vec![("in".into(), input)],
            links: vec![117.0],
            rounds: 1,
            args: vec![],
            tmp: dir.path().to_owned(),
        };
        let e = run(&plan, &dir.path().join("ab.csv")).unwrap_err().to_string();
        assert!(e.contains("f compress") && e.contains("failed"), "{e}");
    }
}
