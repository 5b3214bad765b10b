//! Which machine profile a tiered write takes its costs from, and the tiers opened with it:
//! the one rule the CLI (`--profile`, `--no-profile`) and the Python binding
//! (`adz.open_tiers(profile=...)`) share.
//!
//! A profile given by path must load. With none, the built-in table is used. Otherwise the
//! default profile ([`default_path`]) is used if a file is there, and one that cannot be used
//! is left out (a [`LeftOut`] for the caller to warn of) in favour of the built-in table.

use std::path::{Path, PathBuf};

use super::{default_path, CostModel, Profile};
use crate::config::TiersConfig;
use crate::error::TierError;
use crate::place::CostTable;
use crate::tiered::Tiered;

/// Where the profile comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ProfileChoice {
    /// The default profile if a file is there (one that cannot be used is left out).
    #[default]
    Default,
    /// No profile: the built-in table.
    None,
    /// This profile; one that cannot be used is an error.
    Path(PathBuf),
}

/// A default profile that exists but cannot be used, and why; the caller warns of it.
#[derive(Debug, thiserror::Error)]
#[error("the profile {} is left out: {error}", path.display())]
pub struct LeftOut {
    /// The default profile's path.
    pub path: PathBuf,
    /// Why it cannot be used.
    pub error: TierError,
}

/// The profile [`ProfileChoice::load`] chose.
#[derive(Debug)]
pub struct ChosenProfile {
    /// The profile and its path, if one is used.
    pub profile: Option<(PathBuf, Profile)>,
    /// The default profile, if it was left out.
    pub left_out: Option<LeftOut>,
}

/// The costs [`ProfileChoice::costs`] chose.
#[derive(Debug)]
pub struct ChosenCosts {
    /// What placement takes its costs from.
    pub model: CostModel,
    /// The profile the model comes from and its path; `None` for the built-in table.
    pub profile: Option<(PathBuf, Profile)>,
    /// The threads the model is for.
    pub threads: usize,
    /// The default profile, if it was left out.
    pub left_out: Option<LeftOut>,
}

impl ChosenCosts {
    /// Where the costs come from, in words.
    pub fn source(&self) -> String {
        match &self.profile {
            Some((path, p)) => format!(
                "the profile {} ({} rungs, {} blocks measured)",
                path.display(),
                p.rungs.len(),
                p.samples.len()
            ),
            None => format!("the built-in table for {} threads", self.threads),
        }
    }
}

impl ProfileChoice {
    /// From a path option and a "no profile" flag; a path wins over the flag.
    pub fn from_options(path: Option<PathBuf>, no_profile: bool) -> ProfileChoice {
        match (path, no_profile) {
            (Some(p), _) => ProfileChoice::Path(p),
            (None, true) => ProfileChoice::None,
            (None, false) => ProfileChoice::Default,
        }
    }

    /// The profile file to read, if any: the given one, else the default one if it exists.
    pub fn path(&self) -> Option<PathBuf> {
        self.path_at(default_path().as_deref())
    }

    /// The profile, loaded (see the module docs).
    pub fn load(&self) -> Result<ChosenProfile, TierError> {
        self.load_at(default_path().as_deref())
    }

    /// The costs for `threads` threads: the chosen profile's [`Profile::cost_model`], or the
    /// built-in [`CostTable::reference`] without one.
    pub fn costs(&self, threads: usize) -> Result<ChosenCosts, TierError> {
        self.costs_at(default_path().as_deref(), threads)
    }

    fn path_at(&self, default: Option<&Path>) -> Option<PathBuf> {
        match self {
            ProfileChoice::Path(p) => Some(p.clone()),
            ProfileChoice::None => None,
            ProfileChoice::Default => default.filter(|d| d.exists()).map(Path::to_owned),
        }
    }

    /// Applies `use_it` to the chosen profile: its error is the caller's for a given profile,
    /// a [`LeftOut`] for the default one.
    fn choose<T>(
        &self,
        default: Option<&Path>,
        use_it: impl FnOnce(&Path) -> Result<T, TierError>,
    ) -> Result<(Option<T>, Option<LeftOut>), TierError> {
        let Some(path) = self.path_at(default) else { return Ok((None, None)) };
        match use_it(&path) {
            Ok(t) => Ok((Some(t), None)),
            Err(e) if matches!(self, ProfileChoice::Path(_)) => Err(e),
            Err(error) => Ok((None, Some(LeftOut { path, error }))),
        }
    }

    fn load_at(&self, default: Option<&Path>) -> Result<ChosenProfile, TierError> {
        let (profile, left_out) =
            self.choose(default, |path| Ok((path.to_owned(), Profile::load(path)?)))?;
        Ok(ChosenProfile { profile, left_out })
    }

    fn costs_at(&self, default: Option<&Path>, threads: usize) -> Result<ChosenCosts, TierError> {
        let (chosen, left_out) = self.choose(default, |path| {
            let p = Profile::load(path)?;
            Ok((p.cost_model(threads)?, (path.to_owned(), p)))
        })?;
        let (model, profile) = match chosen {
            Some((model, profile)) => (model, Some(profile)),
            None => (
                CostModel::from_table(CostTable::reference(&CostTable::default_rungs(), threads)),
                None,
            ),
        };
        Ok(ChosenCosts { model, profile, threads, left_out })
    }
}

/// Opens the tiers of `config`; a tier whose bandwidth is "measure" takes `profile`'s
/// measurement of it, if it has one, instead of measuring at open. With `measured`, every
/// other tier the profile measured takes its figures for placement (its storage and throttle
/// keep the configured rate).
pub fn open_with_profile(
    mut config: TiersConfig,
    profile: Option<&Profile>,
    measured: bool,
) -> Result<Tiered, TierError> {
    let mut placement = Vec::new();
    if let Some(p) = profile {
        for (i, t) in config.tiers.iter_mut().enumerate() {
            let Some(m) = p.tier(&t.name) else { continue };
            if t.bandwidth.is_none() {
                t.bandwidth = Some(m.bandwidth);
                t.latency = m.latency;
            } else if measured {
                placement.push((i, m.bandwidth, m.latency));
            }
        }
    }
    let mut tiers = Tiered::open(config)?;
    for (i, bandwidth, latency) in placement {
        tiers.set_placement_figures(i, bandwidth, latency);
    }
    Ok(tiers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{measure, DataSet, TierProfile};

    /// A profile measured on 128 KiB of text in 32 KiB blocks at two rungs (raw and zstd:1),
    /// with two tiers' figures.
    fn profile() -> Profile {
        let data =
            b"the costs of a tiered write, from a profile. ".repeat(3000)[..128 << 10].to_vec();
        let sets = [DataSet { name: "text".into(), source: "test".into(), data }];
        let rungs = ["none".parse().unwrap(), "zstd:1".parse().unwrap()];
        let mut p = measure(&sets, &rungs, 32 << 10, 1, &mut |_| {}).unwrap();
        p.tiers = vec![
            TierProfile { name: "fast".into(), bandwidth: 7e8, latency: 1e-3 },
            TierProfile { name: "slow".into(), bandwidth: 3e7, latency: 2e-3 },
        ];
        p
    }

    /// A directory with a good profile (`good.json`) and a broken one (`broken.json`).
    fn profiles() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.json");
        profile().save(&good).unwrap();
        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "{}").unwrap();
        (dir, good, broken)
    }

    fn builtin_rungs() -> usize {
        CostTable::default_rungs().len()
    }

    #[test]
    fn options_choose_a_given_path_over_no_profile() {
        let p = PathBuf::from("p.json");
        assert_eq!(ProfileChoice::from_options(Some(p.clone()), true), ProfileChoice::Path(p));
        assert_eq!(ProfileChoice::from_options(None, true), ProfileChoice::None);
        assert_eq!(ProfileChoice::from_options(None, false), ProfileChoice::Default);
    }

    #[test]
    fn a_given_profile_gives_the_costs_and_one_that_does_not_load_is_an_error() {
        let (_dir, good, broken) = profiles();
        // The default is broken: a given profile does not look at it.
        let c = ProfileChoice::Path(good.clone()).costs_at(Some(&broken), 3).unwrap();
        assert_eq!(c.model.table.rungs.len(), 2);
        assert_eq!(c.profile.as_ref().unwrap().0, good);
        assert!(c.left_out.is_none());
        assert!(c.source().starts_with("the profile "), "{}", c.source());
        assert!(c.source().ends_with("(2 rungs, 4 blocks measured)"), "{}", c.source());

        let e = ProfileChoice::Path(broken.clone()).costs_at(Some(&good), 3).unwrap_err();
        assert!(matches!(e, TierError::Profile(ref m) if m.contains("not an adz profile")), "{e}");
        let e = ProfileChoice::Path(broken).load_at(Some(&good)).unwrap_err();
        assert!(matches!(e, TierError::Profile(_)), "{e}");
        let missing = good.with_file_name("missing.json");
        assert!(ProfileChoice::Path(missing).costs_at(None, 3).is_err());
    }

    #[test]
    fn no_profile_is_the_builtin_table_even_with_a_default_profile() {
        let (_dir, good, _) = profiles();
        let c = ProfileChoice::None.costs_at(Some(&good), 3).unwrap();
        assert_eq!(c.model.table.rungs.len(), builtin_rungs());
        assert!(c.profile.is_none() && c.left_out.is_none());
        assert_eq!(c.source(), "the built-in table for 3 threads");
        let l = ProfileChoice::None.load_at(Some(&good)).unwrap();
        assert!(l.profile.is_none() && l.left_out.is_none());
    }

    #[test]
    fn the_default_profile_is_used_if_it_is_there() {
        let (dir, good, _) = profiles();
        let c = ProfileChoice::Default.costs_at(Some(&good), 3).unwrap();
        assert_eq!(c.model.table.rungs.len(), 2);
        assert_eq!(c.profile.unwrap().0, good);
        let l = ProfileChoice::Default.load_at(Some(&good)).unwrap();
        let (path, p) = l.profile.unwrap();
        assert_eq!((path, p.rungs), (good, profile().rungs));

        // None there (or no default path at all): the built-in table, and no warning.
        for default in [Some(dir.path().join("absent.json")), None] {
            let c = ProfileChoice::Default.costs_at(default.as_deref(), 3).unwrap();
            assert_eq!(c.model.table.rungs.len(), builtin_rungs());
            assert!(c.profile.is_none() && c.left_out.is_none());
        }
    }

    #[test]
    fn a_broken_default_profile_is_left_out_with_the_reason() {
        let (_dir, _, broken) = profiles();
        let c = ProfileChoice::Default.costs_at(Some(&broken), 3).unwrap();
        assert_eq!(c.model.table.rungs.len(), builtin_rungs());
        assert!(c.profile.is_none());
        let left = c.left_out.unwrap();
        assert_eq!(left.path, broken);
        assert!(matches!(left.error, TierError::Profile(_)));
        let text = left.to_string();
        assert!(text.starts_with(&format!("the profile {} is left out: ", broken.display())));
        assert!(text.contains("not an adz profile"), "{text}");

        let l = ProfileChoice::Default.load_at(Some(&broken)).unwrap();
        assert!(l.profile.is_none());
        assert_eq!(l.left_out.unwrap().path, broken);
    }

    #[test]
    fn measure_tiers_take_the_profiles_figures_and_measured_ones_all_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let text = "[[tier]]\nname = \"fast\"\npath = \"fast\"\nbandwidth = \"measure\"\n\
                    [[tier]]\nname = \"slow\"\npath = \"slow\"\nbandwidth = \"100MB/s\"\n";
        let config = || TiersConfig::parse(text, dir.path()).unwrap();
        let p = profile();
        let bandwidths = |t: &Tiered| t.tiers().iter().map(|t| t.bandwidth).collect::<Vec<_>>();

        let t = open_with_profile(config(), Some(&p), false).unwrap();
        assert_eq!(bandwidths(&t), [7e8, 1e8]);
        assert_eq!(t.tiers()[0].config.latency, 1e-3);
        let t = open_with_profile(config(), Some(&p), true).unwrap();
        assert_eq!(bandwidths(&t), [7e8, 3e7]);
        assert_eq!(t.tiers()[1].config.latency, 2e-3);
    }
}
