//! What a resumable run keeps in its output directory besides results.csv and the traces:
//! `plan.json`, the plan the rows belong to, the datasets they were measured on and the async
//! workload's calibration. A later `run` with the same `--out` compares its own plan with it
//! and refuses to mix rows of different plans.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// File name of the state in the output directory.
pub const PLAN_FILE: &str = "plan.json";

/// Version of the state file's layout.
const FORMAT: u32 = 1;

/// Everything that decides which rows a run has and what they measure. Two runs may share an
/// output directory only if these are equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    /// `--size`: bytes of each dataset.
    pub size: u64,
    /// `--seed` of the generated datasets.
    pub seed: u64,
    /// `--matrix-iterations`.
    pub matrix_iterations: usize,
    /// Dataset names, in run order.
    pub datasets: Vec<String>,
    /// Links, MB/s.
    pub links_mbs: Vec<f64>,
    /// Workloads (`sync`, `async`).
    pub workloads: Vec<String>,
    /// Static rungs.
    pub statics: Vec<String>,
    /// Adaptive configurations.
    pub adaptive: Vec<String>,
    /// External tools (their row names), available or not.
    pub externals: Vec<String>,
    /// Compression threads (resolved: never 0).
    pub threads: usize,
    /// Block size.
    pub block_size: u32,
    /// Async: the asynchronism factor.
    pub asynchronism: f64,
    /// Async: writes per file.
    pub rounds: usize,
    /// Async: runs per adz row, of which the median is kept (1 in plans written before the
    /// option existed).
    #[serde(default = "one")]
    pub async_repeats: usize,
    /// `--sink`: the real store of the sink's link, if any.
    #[serde(default)]
    pub sink: Option<String>,
}

fn one() -> usize {
    1
}

/// One dataset as the rows measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetRecord {
    /// Name.
    pub name: String,
    /// Bytes used (the prefix a run writes).
    pub bytes: u64,
    /// [`fingerprint`] of those bytes.
    pub fingerprint: String,
}

/// The contents of `plan.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    /// Layout version.
    pub format: u32,
    /// The plan.
    pub plan: PlanRecord,
    /// The datasets, in plan order.
    pub datasets: Vec<DatasetRecord>,
    /// Seconds of one sweep of the async workload's solver, measured by the first run in this
    /// directory and reused by every resumed one, so that a cell's compute work per round is
    /// the same for all its configurations whichever session ran them.
    pub async_sweep_seconds: f64,
}

impl State {
    /// A new state.
    pub fn new(plan: PlanRecord, datasets: Vec<DatasetRecord>, async_sweep_seconds: f64) -> State {
        State { format: FORMAT, plan, datasets, async_sweep_seconds }
    }

    /// Read `dir/plan.json`; None if there is none.
    pub fn load(dir: &Path) -> Result<Option<State>> {
        let path = dir.join(PLAN_FILE);
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let state: State = serde_json::from_slice(&text)
            .with_context(|| format!("{} is not a run's plan", path.display()))?;
        if state.format != FORMAT {
            bail!(
                "{} has layout {}, this version reads {FORMAT}; use another --out or --fresh",
                path.display(),
                state.format
            );
        }
        Ok(Some(state))
    }

    /// Write `dir/plan.json` (whole or not at all).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join(PLAN_FILE);
        let tmp = dir.join(format!("{PLAN_FILE}.tmp"));
        let mut text = serde_json::to_vec_pretty(self)?;
        text.push(b'\n');
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))
    }

    /// How this state differs from a run's plan and datasets, one line per difference
    /// (empty: the run may resume here).
    pub fn differences(&self, plan: &PlanRecord, datasets: &[DatasetRecord]) -> Vec<String> {
        let mut out = field_differences(&self.plan, plan);
        if out.is_empty() {
            for (old, new) in self.datasets.iter().zip(datasets) {
                if old != new {
                    out.push(format!(
                        "dataset {}: the rows there were measured on {} bytes (fingerprint {}), \
                         this run's {} is {} bytes (fingerprint {})",
                        old.name, old.bytes, old.fingerprint, new.name, new.bytes, new.fingerprint
                    ));
                }
            }
        }
        out
    }
}

/// Field-by-field differences of two records of the same type: `size: 8388608 there, 300000
/// in this run`.
fn field_differences<T: Serialize>(old: &T, new: &T) -> Vec<String> {
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) =
        (serde_json::to_value(old), serde_json::to_value(new))
    else {
        return vec!["the plans cannot be compared".into()];
    };
    a.iter()
        .filter_map(|(k, va)| {
            let vb = b.get(k).unwrap_or(&serde_json::Value::Null);
            (va != vb).then(|| format!("{}: {va} there, {vb} in this run", k.replace('_', "-")))
        })
        .collect()
}

/// A fingerprint of a dataset's bytes (64-bit FNV-1a over 8-byte little-endian words and the
/// tail, in hex): equal bytes, equal fingerprint; it tells a changed dataset (another machine's
/// `mixed`, a changed generator) from the one the rows were measured on.
pub fn fingerprint(data: &[u8]) -> String {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(PRIME);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    h = (h ^ data.len() as u64).wrapping_mul(PRIME);
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> PlanRecord {
        PlanRecord {
            size: 8 << 20,
            seed: 1,
            matrix_iterations: 100,
            datasets: vec!["text".into(), "matrix".into()],
            links_mbs: vec![117.0, 1200.0],
            workloads: vec!["sync".into(), "async".into()],
            statics: vec!["none".into(), "zstd:3".into()],
            adaptive: vec!["s1".into()],
            externals: vec![],
            threads: 2,
            block_size: 1 << 20,
            asynchronism: 0.5,
            rounds: 4,
            async_repeats: 3,
            sink: None,
        }
    }

    fn ds(name: &str, data: &[u8]) -> DatasetRecord {
        DatasetRecord {
            name: name.into(),
            bytes: data.len() as u64,
            fingerprint: fingerprint(data),
        }
    }

    #[test]
    fn state_round_trips_and_names_each_difference() {
        let dir = tempfile::tempdir().unwrap();
        assert!(State::load(dir.path()).unwrap().is_none());
        let sets = vec![ds("text", b"hello world"), ds("matrix", &[0u8; 100])];
        let s = State::new(plan(), sets.clone(), 0.0125);
        s.save(dir.path()).unwrap();
        let back = State::load(dir.path()).unwrap().unwrap();
        assert_eq!(back.plan, plan());
        assert_eq!(back.datasets, sets);
        assert_eq!(back.async_sweep_seconds, 0.0125);
        assert!(back.differences(&plan(), &sets).is_empty());

        let other = PlanRecord { size: 300_000, links_mbs: vec![117.0], ..plan() };
        let d = back.differences(&other, &sets);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().any(|l| l == "size: 8388608 there, 300000 in this run"), "{d:?}");
        assert!(d.iter().any(|l| l.starts_with("links-mbs: [117.0,1200.0] there")), "{d:?}");

        let changed = vec![ds("text", b"hello world"), ds("matrix", &[1u8; 100])];
        let d = back.differences(&plan(), &changed);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].starts_with("dataset matrix: the rows there were measured on 100 bytes"));

        std::fs::write(dir.path().join(PLAN_FILE), "{\"format\": 1}").unwrap();
        let err = format!("{:#}", State::load(dir.path()).unwrap_err());
        assert!(err.contains("is not a run's plan"), "{err}");
    }

    /// A plan written before `async_repeats` existed measured each async row once: it reads
    /// as 1, so a run with repeats does not resume into it unnoticed.
    #[test]
    fn an_older_plan_had_one_async_run_per_row() {
        let dir = tempfile::tempdir().unwrap();
        let sets = vec![ds("text", b"hello world")];
        State::new(plan(), sets.clone(), 0.01).save(dir.path()).unwrap();
        let path = dir.path().join(PLAN_FILE);
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        v["plan"].as_object_mut().unwrap().remove("async_repeats").unwrap();
        std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
        let back = State::load(dir.path()).unwrap().unwrap();
        assert_eq!(back.plan.async_repeats, 1);
        let d = back.differences(&plan(), &sets);
        assert_eq!(d, ["async-repeats: 1 there, 3 in this run"]);
    }

    #[test]
    fn fingerprint_tells_bytes_apart() {
        let a = vec![7u8; 1000];
        let mut b = a.clone();
        b[999] = 8;
        assert_eq!(fingerprint(&a), fingerprint(&a.clone()));
        assert_ne!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&a[..999]), "a prefix is another dataset");
        assert_ne!(fingerprint(&[0u8; 8]), fingerprint(&[0u8; 16]));
        assert_eq!(fingerprint(&[]).len(), 16);
    }
}
