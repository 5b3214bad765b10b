//! The machine profile (`adz profile`, issue 27): what each rung of the ladder costs on this
//! machine, per kind of data, on one thread and on all cores, and each tier's bandwidth and
//! latency; saved as versioned JSON.
//!
//! [`measure`] compresses every block of each data set at every rung, one block at a time
//! on one thread (the blocks' features, ratio and speed are the predictor's training rows),
//! then the whole set on all threads (the all-core speed a parallel write sees).
//! [`Profile::cost_model`] turns it into the DP's [`CostTable`] per data class, and the
//! fitted [`Predictor`] for blocks of classes the profile did not see; [`Profile::priors`]
//! into the controller's and the prediction's priors (what a rung costs and saves before a
//! write has measured it).

use std::path::Path;

use adz_control::{Priors, Reference};
use adz_format::CodecSpec;
use serde::{Deserialize, Serialize};

use crate::error::TierError;
use crate::place::{CostTable, RungCost, CLASSES};
use crate::predictor::{Accuracy, Features, Prediction, Predictor, Sample};

mod choice;
mod measure;
pub use choice::{open_with_profile, ChosenCosts, ChosenProfile, LeftOut, ProfileChoice};
pub use measure::{measure, measure_tier, predictions_per_second, work, DataSet, Step};

/// The priors come from the sets on which every codec rung saves at least 2 % ...
const PRIOR_ALL_RATIO: f64 = 1.02;
/// ... or, if there are none, from those some rung shrinks by 5 % ([`Profile::priors`]).
const PRIOR_ANY_RATIO: f64 = 1.05;

/// The profile format this build writes and reads.
pub const PROFILE_VERSION: u32 = 1;

/// A measured machine; see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// [`PROFILE_VERSION`].
    pub version: u32,
    /// When it was measured, seconds since the Unix epoch.
    pub created: u64,
    /// The adz version that measured it.
    pub adz: String,
    /// Threads of the all-core measurements.
    pub threads: usize,
    /// Raw bytes per block.
    pub block_size: u32,
    /// The rungs measured, as codec settings (`"zstd:3"`).
    #[serde(with = "crate::place::rung_names")]
    pub rungs: Vec<CodecSpec>,
    /// The data sets measured.
    pub sets: Vec<SetProfile>,
    /// Every block measured on one thread: the predictor's training rows.
    pub samples: Vec<Sample>,
    /// The tiers measured (none without `--tiers`).
    #[serde(default)]
    pub tiers: Vec<TierProfile>,
    /// How well the predictor did when the profile was taken.
    #[serde(default)]
    pub predictor: Option<PredictorReport>,
    /// What one busy core of this machine draws: the energy strategy's price of a CPU second
    /// and the summary's joules where RAPL is not readable, when no `--core-watts` is given.
    #[serde(default)]
    pub core_power: Option<CorePower>,
}

/// Watts per busy core, and how the profile found them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorePower {
    /// Watts one busy core draws.
    pub watts: f64,
    /// `rapl`: the CPU packages' RAPL joules over the profile's CPU seconds (idle power and
    /// other processes included, so an upper bound on a busy core's share); `given`: from
    /// `adz profile --core-watts` (a datasheet's figure).
    pub source: String,
}

/// One data set's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetProfile {
    /// Its name (a kind of generated data, or a file name).
    pub name: String,
    /// Where it came from (`generated`, or a path).
    pub source: String,
    /// Raw bytes measured.
    pub raw: u64,
    /// Blocks measured.
    pub blocks: u64,
    /// Its most common data class.
    pub class: u8,
    /// Per rung (in the profile's order).
    pub rungs: Vec<SetRung>,
}

/// One rung on one data set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetRung {
    /// Raw / stored payload over the set.
    pub ratio: f64,
    /// Raw bytes per second on one thread.
    pub speed_one: f64,
    /// Raw bytes per second on all the profile's threads.
    pub speed_all: f64,
}

/// One tier's measured figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierProfile {
    /// The tier's name in the configuration.
    pub name: String,
    /// Write bandwidth, bytes per second (a large object, committed).
    pub bandwidth: f64,
    /// Seconds per object beyond its bytes (small objects, committed).
    pub latency: f64,
}

/// The predictor's accuracy and speed when the profile was taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictorReport {
    /// Each data set predicted by a predictor fitted on the other sets (none with one set).
    pub held_out: Option<Accuracy>,
    /// The same, corrected online after each block.
    pub held_out_online: Option<Accuracy>,
    /// Blocks predicted per second on one core (features and every rung).
    pub blocks_per_second: f64,
}

/// What the DP of a write takes its costs from: a table per data class and, for blocks of
/// classes the table has no measurements of, a predictor.
#[derive(Debug, Clone)]
pub struct CostModel {
    /// Per data class, as the write sees it (all its threads).
    pub table: CostTable,
    /// Per class of the table: whether it was measured (else it holds a pooled guess).
    pub measured: Vec<bool>,
    /// Predicts the costs of one block from its features.
    pub predictor: Option<Predictor>,
    /// Per rung: the write's speed over one thread's (the predictor predicts one thread).
    pub scale: Vec<f64>,
    /// Predict every block, not only those of unmeasured classes.
    pub predict_every_block: bool,
}

impl CostModel {
    /// A model that is just `table` (every class taken as measured, no predictor).
    pub fn from_table(table: CostTable) -> CostModel {
        let n = table.classes.len();
        let rungs = table.rungs.len();
        CostModel {
            table,
            measured: vec![true; n],
            predictor: None,
            scale: vec![1.0; rungs],
            predict_every_block: false,
        }
    }

    /// Rung costs for a block with features `f` from the predictor, as the write sees them,
    /// or `None` without a predictor.
    pub fn predict(&self, f: &Features, out: &mut Vec<Prediction>) -> Option<Vec<RungCost>> {
        let p = self.predictor.as_ref()?;
        p.predict_all(f, out);
        Some(
            out.iter()
                .zip(&self.scale)
                .map(|(q, s)| RungCost { speed: q.speed * s, ratio: q.ratio.max(1.0) })
                .collect(),
        )
    }
}

impl Profile {
    /// Reads and checks a profile file; a missing or different version is a clear error.
    pub fn load(path: &Path) -> Result<Profile, TierError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TierError::Profile(format!("cannot read {}: {e}", path.display())))?;
        Profile::from_json(&text).map_err(|e| match e {
            TierError::Profile(why) => TierError::Profile(format!("{}: {why}", path.display())),
            other => other,
        })
    }

    /// Parses and checks a profile.
    pub fn from_json(text: &str) -> Result<Profile, TierError> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| TierError::Profile(format!("not JSON: {e}")))?;
        match v.get("version").and_then(serde_json::Value::as_u64) {
            None => {
                return Err(TierError::Profile(
                    "not an adz profile (no \"version\"); make one with `adz profile`".into(),
                ))
            }
            Some(n) if n != u64::from(PROFILE_VERSION) => {
                return Err(TierError::Profile(format!(
                    "profile version {n}, this adz reads version {PROFILE_VERSION}; \
                     measure again with `adz profile`"
                )))
            }
            Some(_) => {}
        }
        let p: Profile = serde_json::from_value(v)
            .map_err(|e| TierError::Profile(format!("bad profile: {e}")))?;
        p.check()?;
        Ok(p)
    }

    /// The profile as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a profile serialises")
    }

    /// Writes the profile to `path` atomically (a temporary file, then a rename), creating
    /// its directory.
    pub fn save(&self, path: &Path) -> Result<(), TierError> {
        let err =
            |e: std::io::Error| TierError::Profile(format!("cannot write {}: {e}", path.display()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, self.to_json()).map_err(err)?;
        std::fs::rename(&tmp, path).map_err(err)
    }

    fn check(&self) -> Result<(), TierError> {
        let bad = |why: String| Err(TierError::Profile(format!("bad profile: {why}")));
        let r = self.rungs.len();
        if r == 0 || self.samples.is_empty() || self.sets.is_empty() {
            return bad("it has no rungs, sets or measured blocks".into());
        }
        for s in &self.sets {
            if s.rungs.len() != r {
                return bad(format!("set {:?} has {} rungs of {r}", s.name, s.rungs.len()));
            }
            let ok = |x: f64| x.is_finite() && x > 0.0;
            if !s.rungs.iter().all(|x| ok(x.ratio) && ok(x.speed_one) && ok(x.speed_all)) {
                return bad(format!("set {:?} has a speed or ratio that is not > 0", s.name));
            }
        }
        for (i, s) in self.samples.iter().enumerate() {
            let ok = |v: &[f64]| v.len() == r && v.iter().all(|x| x.is_finite() && *x > 0.0);
            if !ok(&s.ratio) || !ok(&s.speed) || s.set >= self.sets.len() {
                return bad(format!("measured block {i} does not match the rungs and sets"));
            }
        }
        for t in &self.tiers {
            if !(t.bandwidth.is_finite() && t.bandwidth > 0.0 && t.latency >= 0.0) {
                return bad(format!("tier {:?}: bandwidth must be > 0, latency >= 0", t.name));
            }
        }
        Ok(())
    }

    /// Per rung: the all-core speed over the one-thread speed, over all the sets, kept
    /// within 1 ..= threads (a write can always run one thread; less than that measured is
    /// the noise of a shared machine).
    pub fn speedup(&self) -> Vec<f64> {
        let most = self.threads.max(1) as f64;
        (0..self.rungs.len())
            .map(|r| {
                let raw: f64 = self.sets.iter().map(|s| s.raw as f64).sum();
                let one: f64 = self.sets.iter().map(|s| s.raw as f64 / s.rungs[r].speed_one).sum();
                let all: f64 = self.sets.iter().map(|s| s.raw as f64 / s.rungs[r].speed_all).sum();
                ((raw / all) / (raw / one)).clamp(1.0, most)
            })
            .collect()
    }

    /// The DP's cost model for a write on `threads` threads: per class of
    /// [`adz_control::classify`], each rung's ratio and speed over the blocks of that class
    /// (one thread's speed times the measured all-core speed-up, scaled linearly for fewer
    /// threads than the profile had); a class without blocks gets the pooled figures and
    /// is left to the predictor.
    pub fn cost_model(&self, threads: usize) -> Result<CostModel, TierError> {
        let n = threads.clamp(1, self.threads.max(1));
        let scale: Vec<f64> = self
            .speedup()
            .into_iter()
            .map(|s| {
                if self.threads <= 1 {
                    1.0
                } else {
                    1.0 + (s - 1.0) * (n - 1) as f64 / (self.threads - 1) as f64
                }
            })
            .collect();
        let row = |blocks: &[&Sample]| -> Vec<RungCost> {
            (0..self.rungs.len())
                .map(|r| {
                    let raw: f64 = blocks.iter().map(|s| s.raw as f64).sum();
                    let stored: f64 = blocks.iter().map(|s| s.raw as f64 / s.ratio[r]).sum();
                    let secs: f64 = blocks.iter().map(|s| s.raw as f64 / s.speed[r]).sum();
                    RungCost { speed: raw / secs * scale[r], ratio: (raw / stored).max(1.0) }
                })
                .collect()
        };
        let all: Vec<&Sample> = self.samples.iter().collect();
        let pooled = row(&all);
        let mut classes = Vec::new();
        let mut measured = Vec::new();
        for k in 0..CLASSES {
            let of: Vec<&Sample> = all.iter().copied().filter(|s| s.class as usize == k).collect();
            measured.push(!of.is_empty());
            classes.push(if of.is_empty() { pooled.clone() } else { row(&of) });
        }
        let table = CostTable::new(self.rungs.clone(), classes)?;
        Ok(CostModel {
            table,
            measured,
            predictor: Some(Predictor::fit(&self.samples, self.rungs.len())?),
            scale,
            predict_every_block: false,
        })
    }

    /// The controller's and the prediction's priors from this profile: per rung, the
    /// geometric mean of its one-thread speed, and the mean of ln(ln(ratio)) (the model's
    /// coordinate, in which a harder input shifts every rung alike), over the sets on which
    /// every codec rung saves at least 2 %. Where a rung saves nothing (LZ4 on float
    /// arrays, anything on random data) that coordinate does not hold and the rung's speed
    /// is zstd's early exit, not its cost; if no set qualifies, the sets some rung shrinks
    /// by 5 % are used, and if none does, every set.
    pub fn priors(&self) -> Result<Priors, TierError> {
        let codec = |s: &SetProfile| -> Vec<f64> {
            s.rungs
                .iter()
                .zip(&self.rungs)
                .filter(|(_, &c)| c != CodecSpec::NONE)
                .map(|(r, _)| r.ratio)
                .collect()
        };
        let all_save: Vec<&SetProfile> =
            self.sets.iter().filter(|s| codec(s).iter().all(|&r| r >= PRIOR_ALL_RATIO)).collect();
        let some_save: Vec<&SetProfile> =
            self.sets.iter().filter(|s| codec(s).iter().any(|&r| r >= PRIOR_ANY_RATIO)).collect();
        let sets = [all_save, some_save, self.sets.iter().collect()]
            .into_iter()
            .find(|v| !v.is_empty())
            .ok_or_else(|| TierError::Profile("no data sets measured".into()))?;
        let n = sets.len() as f64;
        let mean = |f: &dyn Fn(&SetRung) -> f64, r: usize| {
            sets.iter().map(|s| f(&s.rungs[r])).sum::<f64>() / n
        };
        Priors::measured(self.rungs.iter().enumerate().map(|(r, &spec)| {
            let speed = mean(&|x| x.speed_one.ln(), r).exp();
            let ratio = mean(&|x| x.ratio.max(1.0 + 1e-3).ln().ln(), r).exp().exp();
            (spec, Reference { speed, ratio })
        }))
        .map_err(|e| TierError::Profile(e.to_string()))
    }

    /// The measured bandwidth and latency of tier `name`, if the profile has it.
    pub fn tier(&self, name: &str) -> Option<&TierProfile> {
        self.tiers.iter().find(|t| t.name == name)
    }
}

impl Accuracy {
    /// Pools the scores of several sets, weighting each by its predictions (medians are
    /// taken as the weighted mean of the sets' medians).
    pub fn pool(parts: &[Accuracy]) -> Accuracy {
        let n: u64 = parts.iter().map(|a| a.predictions).sum();
        if n == 0 {
            return Accuracy::default();
        }
        let w = |f: fn(&Accuracy) -> f64| {
            parts.iter().map(|a| f(a) * a.predictions as f64).sum::<f64>() / n as f64
        };
        Accuracy {
            predictions: n,
            ratio_within_4pct: w(|a| a.ratio_within_4pct),
            speed_within_10pct: w(|a| a.speed_within_10pct),
            ratio_median_error: w(|a| a.ratio_median_error),
            speed_median_error: w(|a| a.speed_median_error),
        }
    }
}

/// The profile's path when none is given: `$XDG_CONFIG_HOME/adz/profile.json`, else
/// `$HOME/.config/adz/profile.json`; `None` without either variable.
pub fn default_path() -> Option<std::path::PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(x) => std::path::PathBuf::from(x),
        None => std::path::PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?)
            .join(".config"),
    };
    Some(base.join("adz").join("profile.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_sets() -> Vec<DataSet> {
        let text = b"profile the tiers and their codecs, block by block. ".repeat(2500);
        let mut s = 9u64;
        let random: Vec<u8> = (0..100_000)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                (s >> 56) as u8
            })
            .collect();
        vec![
            DataSet { name: "text".into(), source: "test".into(), data: text },
            DataSet { name: "random".into(), source: "test".into(), data: random },
        ]
    }

    fn rungs() -> Vec<CodecSpec> {
        ["none", "lz4:1", "zstd:1", "zstd:3", "zstd:6", "zstd:12", "xz:1"]
            .iter()
            .map(|r| r.parse().unwrap())
            .collect()
    }

    /// Equal but for the last bits of floats (serde_json's reading may round them).
    fn same(a: &Profile, b: &Profile) {
        fn eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
            use serde_json::Value as V;
            match (a, b) {
                (V::Number(x), V::Number(y)) => {
                    let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                    (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
                }
                (V::Array(x), V::Array(y)) => {
                    x.len() == y.len() && x.iter().zip(y).all(|(x, y)| eq(x, y))
                }
                (V::Object(x), V::Object(y)) => {
                    x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| eq(v, w)))
                }
                _ => a == b,
            }
        }
        let (a, b) = (serde_json::to_value(a).unwrap(), serde_json::to_value(b).unwrap());
        assert!(eq(&a, &b), "{a}\n{b}");
    }

    fn tiny_profile() -> Profile {
        let sets = tiny_sets();
        let mut done = 0;
        let p = measure(&sets, &rungs(), 32 << 10, 2, &mut |s| done += s.bytes).unwrap();
        assert_eq!(done, work(&sets, &rungs()));
        p
    }

    #[test]
    fn a_run_on_tiny_input_has_every_rung_and_round_trips() {
        let p = tiny_profile();
        assert_eq!(p.rungs, rungs());
        assert_eq!(p.sets.len(), 2);
        for s in &p.sets {
            assert_eq!(s.rungs.len(), 7);
        }
        assert!(p.samples.iter().all(|s| s.ratio.len() == 7 && s.speed.len() == 7));
        // Text shrinks at every codec rung, random data at none.
        assert!(p.sets[0].rungs[1..].iter().all(|r| r.ratio > 3.0), "{:?}", p.sets[0]);
        assert!(p.sets[1].rungs.iter().all(|r| r.ratio < 1.01), "{:?}", p.sets[1]);
        assert_eq!((p.sets[0].class, p.sets[1].class), (2, 4));
        let report = p.predictor.as_ref().unwrap();
        assert!(report.held_out.is_some() && report.blocks_per_second > 0.0);

        let json = p.to_json();
        let back = Profile::from_json(&json).unwrap();
        same(&back, &p);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("adz/profile.json");
        p.save(&path).unwrap();
        same(&Profile::load(&path).unwrap(), &p);
    }

    #[test]
    fn bad_and_old_profiles_are_clear_errors() {
        let p = tiny_profile();
        let json = p.to_json();
        let err = |text: &str| Profile::from_json(text).unwrap_err().to_string();
        let old = json.replacen("\"version\": 1", "\"version\": 0", 1);
        assert!(err(&old).contains("profile version 0, this adz reads version 1"), "{}", err(&old));
        assert!(err("{\"rungs\": []}").contains("not an adz profile"));
        assert!(err("[1, 2").contains("not JSON"));
        let bad_rung = json.replacen("\"zstd:12\"", "\"zstd:99\"", 1);
        assert!(err(&bad_rung).contains("bad profile"), "{}", err(&bad_rung));
        let mut short = p.clone();
        short.samples[0].speed.pop();
        assert!(err(&short.to_json()).contains("measured block 0"));
        let missing = tempfile::tempdir().unwrap();
        let e = Profile::load(&missing.path().join("none.json")).unwrap_err().to_string();
        assert!(e.contains("cannot read"), "{e}");
    }

    #[test]
    fn priors_come_from_the_sets_that_compress() {
        let p = tiny_profile();
        let priors = p.priors().unwrap();
        assert_eq!(priors.measured_rungs().count(), 7);
        // The random set compresses at no rung, so the text set alone gives the figures.
        let text = &p.sets[0];
        for (r, &spec) in p.rungs.iter().enumerate().skip(1) {
            let got = priors.get(spec);
            assert!((got.speed / text.rungs[r].speed_one - 1.0).abs() < 1e-9, "{spec}");
            assert!((got.ratio / text.rungs[r].ratio - 1.0).abs() < 1e-9, "{spec}");
        }
        // Rungs between the measured ones are filled in.
        let z2 = priors.get("zstd:2".parse().unwrap());
        let (z1, z3) = (text.rungs[2], text.rungs[3]);
        let (lo, hi) = (z1.speed_one.min(z3.speed_one), z1.speed_one.max(z3.speed_one));
        assert!(z2.speed > 0.5 * lo && z2.speed < 2.0 * hi, "{z2:?}");
        // A set LZ4 cannot shrink (float arrays) leaves the shape alone while another set
        // compresses at every rung.
        let mut floats = p.clone();
        let mut f = floats.sets[0].clone();
        f.rungs[1].ratio = 1.0;
        f.rungs.iter_mut().for_each(|r| r.speed_one *= 7.0);
        floats.sets.push(f);
        assert_eq!(floats.priors().unwrap(), priors);
        // With only data that does not compress, every set counts.
        let mut random = p.clone();
        random.sets.remove(0);
        let r = random.priors().unwrap().get("zstd:3".parse().unwrap());
        assert!((r.speed / random.sets[0].rungs[3].speed_one - 1.0).abs() < 1e-9);
        random.sets.clear();
        assert!(random.priors().unwrap_err().to_string().contains("no data sets"));
    }

    #[test]
    fn cost_model_follows_the_measurements() {
        let p = tiny_profile();
        let m = p.cost_model(2).unwrap();
        assert_eq!(m.measured, vec![false, false, true, false, true]);
        // Class 2 (text) compresses, class 4 (random) does not.
        assert!(m.table.classes[2][2].ratio > 3.0);
        assert!(m.table.classes[4].iter().all(|c| c.ratio < 1.01));
        // One thread is the one-thread speed.
        let one = p.cost_model(1).unwrap();
        let sp = p.speedup();
        for (r, &sp) in sp.iter().enumerate() {
            let ratio = m.table.classes[2][r].speed / one.table.classes[2][r].speed;
            let want = sp;
            assert!((1.0..=2.0).contains(&sp));
            assert!((ratio - want).abs() < 1e-9 * want.max(1.0), "{ratio} {want}");
        }
        assert!(m.predictor.is_some());
    }
}
