//! `adz recompress`: re-encode written adz files more densely, file by file, each replaced
//! only once its new version is complete and verified (docs/LIFECYCLE.md).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use adz_core::control::Strategy;
use adz_core::cost::CostModel;
use adz_core::format::CodecSpec;
use adz_core::recompress::{self, RecompressOptions, RecompressReport};
use adz_core::store::{KeepAttributes, LocalStorage, ObjectMeta, Storage, Tail, Upload};
use adz_store::location::parse_s3_prefix;
use anyhow::{bail, Context, Result};
use clap::Args;

use crate::io::{self, OnSignal};
use crate::{progress, remote};

pub const AFTER_HELP: &str = "\
Frames below the target rung are decoded, re-encoded, decoded again to verify, and kept if
smaller; frames at or past it, and frames stored raw because their codec could not shrink
them, are copied without decoding. Frames sent raw by choice (codec none) are first tried
with zstd:1 and copied if that cannot save 3 %. Each file is written to .NAME.adz-incomplete-PID-N beside
it, fsynced, and renamed over it: killed at any moment, a file is either the old one or the
new one, complete. Ctrl-C removes the temporary. The new file keeps the old one's mode (and
owner, as root); an object is replaced by a multipart upload completed under its key. A
rerun skips files already at the target (read from their index) and removes temporaries
left by killed runs.

Examples:
  adz recompress run1.adz                    to the archive rung (xz:9)
  adz recompress --to zstd:19 --older-than 30d /data/runs
  adz recompress --dry-run /data/runs        estimate from a sample, write nothing
  adz recompress s3://archive/runs/          every *.adz object under the prefix";

#[derive(Args)]
pub struct RecompressArgs {
    /// adz files, directories searched for *.adz files, s3://BUCKET/KEY objects, or
    /// s3://BUCKET/PREFIX/ for the *.adz objects under a prefix.
    #[arg(required = true)]
    paths: Vec<String>,
    /// The rung to re-encode with (CODEC:LEVEL, e.g. zstd:19, xz:6).
    #[arg(long, value_name = "CODEC:LEVEL", conflicts_with = "strategy")]
    to: Option<CodecSpec>,
    /// archive (the last rung, xz:9; the default) or static=CODEC:LEVEL.
    #[arg(short, long, value_name = "STRATEGY")]
    strategy: Option<Strategy>,
    /// Only files (and s3:// objects, by their last-modified time) last written longer ago
    /// than this: 30d, 12h, 90m, 3600s.
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    older_than: Option<Duration>,
    /// Estimate from a sample of each file's frames; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Raw bytes per file a dry run re-encodes.
    #[arg(long, default_value = "4M", value_parser = crate::parse_bytes, value_name = "SIZE")]
    sample: u64,
    /// Threads (default: one per core).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

/// `30d`, `12h`, `90m`, `3600s` or seconds.
fn parse_age(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| format!("{s}: not an age like 30d, 12h, 90m"))?;
    let unit = match unit {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        "w" => 7.0 * 86400.0,
        _ => return Err(format!("{s}: unknown unit {unit} (s, m, h, d, w)")),
    };
    if !(n.is_finite() && n >= 0.0) {
        return Err(format!("{s}: must be a positive age"));
    }
    Ok(Duration::from_secs_f64(n * unit))
}

fn target(a: &RecompressArgs) -> Result<CodecSpec> {
    Ok(match (a.to, &a.strategy) {
        (Some(c), _) => c,
        (None, Some(Strategy::Static(c))) => *c,
        (None, None | Some(Strategy::Archive)) => RecompressOptions::archive().target,
        (None, Some(s)) => {
            bail!("-s {s}: recompress takes archive or static=CODEC:LEVEL (a fixed target rung)")
        }
    })
}

/// The marker of the temporary files `LocalStorage` writes for non-adz outputs, which
/// recompress uses for its new versions.
const TEMP_MARKER: &str = ".adz-incomplete-";

/// A temporary of a recompression (`.NAME.adz.adz-incomplete-PID-N`) whose process is gone.
fn stale_temporary(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    let Some(at) = name.find(TEMP_MARKER) else { return false };
    if !name.starts_with('.') || !name[..at].ends_with(".adz") {
        return false;
    }
    let pid = name[at + TEMP_MARKER.len()..].split('-').next().unwrap_or("");
    match pid.parse::<u32>() {
        Ok(pid) => pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists(),
        Err(_) => false,
    }
}

/// One adz file or object to recompress.
struct Item {
    /// The storage that holds it (for a local file, its directory, with the signal cleanup
    /// and the old file's mode and owner on the new version).
    store: Arc<dyn Storage>,
    /// Its name in `store`.
    name: String,
    /// The path or URL the user sees.
    shown: String,
    /// Its size in bytes.
    size: u64,
}

/// The adz files under `paths` (a file given by name is taken whatever its name) and the
/// stale temporaries found beside them; `s3://` arguments are left in the third list.
fn collect(paths: &[String]) -> Result<(Vec<PathBuf>, Vec<PathBuf>, Vec<String>)> {
    let (mut files, mut stale, mut objects) = (Vec::new(), Vec::new(), Vec::new());
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in paths {
        if p.starts_with("s3://") {
            objects.push(p.clone());
            continue;
        }
        let path = PathBuf::from(p);
        let meta = std::fs::metadata(&path).with_context(|| format!("cannot read {p}"))?;
        if meta.is_dir() {
            dirs.push(path);
        } else {
            files.push(path);
        }
    }
    while let Some(dir) = dirs.pop() {
        let rd =
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
        for e in rd {
            let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
            let path = e.path();
            let ft = e.file_type().with_context(|| format!("cannot read {}", path.display()))?;
            if ft.is_dir() {
                dirs.push(path);
            } else if ft.is_file() {
                if stale_temporary(&path) {
                    stale.push(path);
                } else if path.extension().is_some_and(|x| x == "adz")
                    && !path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
                {
                    files.push(path);
                }
            }
        }
    }
    files.sort();
    Ok((files, stale, objects))
}

/// The adz objects of an `s3://` argument: the object itself if it exists, else the `*.adz`
/// objects under it as a prefix (`s3://bucket/runs/`).
/// True if an object last written at `modified` is older than `age` (none given: all are);
/// an error if the store gave no time.
fn object_old_enough(
    modified: Option<SystemTime>,
    age: Option<Duration>,
    shown: &str,
) -> Result<bool> {
    let Some(age) = age else { return Ok(true) };
    let Some(m) = modified else {
        bail!("{shown}: the store gives no last-modified time, which --older-than needs");
    };
    Ok(SystemTime::now().duration_since(m).unwrap_or_default() >= age)
}

fn objects_of(url: &str, older_than: Option<Duration>) -> Result<Vec<Item>> {
    let (bucket, prefix) = parse_s3_prefix(url)?;
    let store = remote::open_bucket(&bucket)?.store;
    if !prefix.is_empty() && !prefix.ends_with('/') {
        match store.size(&prefix) {
            Ok(size) => {
                if older_than.is_some() {
                    // Its time comes with a listing (the prefix is its own name).
                    let listed =
                        store.list(&prefix).with_context(|| format!("cannot list {url}"))?;
                    let modified =
                        listed.iter().find(|o| o.name == prefix).and_then(|o| o.modified);
                    if !object_old_enough(modified, older_than, url)? {
                        return Ok(Vec::new());
                    }
                }
                return Ok(vec![Item { store, name: prefix, shown: url.to_owned(), size }]);
            }
            Err(adz_core::store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {url}")),
        }
    }
    let listed = store.list(&prefix).with_context(|| format!("cannot list {url}"))?;
    if listed.is_empty() {
        bail!("{url}: no such object, and no objects under it");
    }
    let mut out = Vec::new();
    for o in listed.into_iter().filter(|o| o.name.ends_with(".adz")) {
        let shown = format!("s3://{bucket}/{}", o.name);
        if object_old_enough(o.modified, older_than, &shown)? {
            out.push(Item { store: Arc::clone(&store), shown, name: o.name, size: o.size });
        }
    }
    Ok(out)
}

/// A local file as an [`Item`]: its directory's storage, whose new versions are known to the
/// signal handler and take the old file's mode (and owner, as root) before the rename.
fn local_item(path: &Path) -> Result<Item> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {shown}"))?;
    let (store, name) =
        LocalStorage::for_path(path).with_context(|| format!("cannot open {shown}"))?;
    let store = KeepingStore { inner: store.recoverable_temporaries(false), meta: meta.clone() };
    Ok(Item { store: Arc::new(store), name, shown, size: meta.len() })
}

/// A local directory's storage whose uploads register their temporary with the CLI's signal
/// cleanup and give it `meta`'s permissions (and owner, when run as root) before the commit.
#[derive(Debug)]
struct KeepingStore {
    inner: LocalStorage,
    meta: std::fs::Metadata,
}

impl Storage for KeepingStore {
    fn create(&self, name: &str) -> adz_core::store::Result<Box<dyn Upload>> {
        let inner = KeepAttributes::like(self.inner.create(name)?, &self.meta);
        Ok(io::registered(Box::new(inner), OnSignal::Remove))
    }
    fn get_range(&self, name: &str, range: Range<u64>) -> adz_core::store::Result<Vec<u8>> {
        self.inner.get_range(name, range)
    }
    fn get(&self, name: &str) -> adz_core::store::Result<Vec<u8>> {
        self.inner.get(name)
    }
    fn get_tail(&self, name: &str, max_len: u64) -> adz_core::store::Result<Tail> {
        self.inner.get_tail(name, max_len)
    }
    fn size(&self, name: &str) -> adz_core::store::Result<u64> {
        self.inner.size(name)
    }
    fn delete(&self, name: &str) -> adz_core::store::Result<()> {
        self.inner.delete(name)
    }
    fn list(&self, prefix: &str) -> adz_core::store::Result<Vec<ObjectMeta>> {
        self.inner.list(prefix)
    }
}

fn old_enough(path: &Path, age: Option<Duration>) -> Result<bool> {
    let Some(age) = age else { return Ok(true) };
    let m = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .with_context(|| format!("cannot read the time of {}", path.display()))?;
    Ok(SystemTime::now().duration_since(m).unwrap_or_default() >= age)
}

pub fn run(a: RecompressArgs) -> Result<ExitCode> {
    let target = target(&a)?;
    let opts = RecompressOptions { threads: a.threads, ..RecompressOptions::to(target) };
    let (files, stale, urls) = collect(&a.paths)?;
    let mut removed = 0;
    if !a.dry_run {
        for s in &stale {
            std::fs::remove_file(s).with_context(|| format!("cannot remove {}", s.display()))?;
            removed += 1;
        }
    }
    let mut todo = Vec::new();
    for f in files {
        if old_enough(&f, a.older_than)? {
            todo.push(local_item(&f)?);
        }
    }
    for u in &urls {
        todo.extend(objects_of(u, a.older_than)?);
    }
    let total: u64 = todo.iter().map(|i| i.size).sum();
    let pb = progress::bar(Some(total), a.quiet || a.json, "recompress");
    let mut reports: Vec<RecompressReport> = Vec::new();
    let mut failed = Vec::new();
    let mut done_bytes = 0u64;
    for item in &todo {
        let base = done_bytes;
        let r = if a.dry_run {
            recompress::estimate(&item.store, &item.name, &opts, a.sample)
        } else {
            recompress::recompress(&item.store, &item.name, &opts, &|n| pb.set_position(base + n))
        };
        done_bytes += item.size;
        pb.set_position(done_bytes);
        match r {
            Ok(mut r) => {
                r.name.clone_from(&item.shown);
                reports.push(r);
            }
            Err(e) => {
                pb.suspend(|| eprintln!("adz: error: {}", adz_core::store::chain_text(&e)));
                failed.push(item.shown.clone());
            }
        }
    }
    pb.finish_and_clear();
    print(&a, &reports, removed, &failed)?;
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::FAILURE)
    }
}

fn print(
    a: &RecompressArgs,
    reports: &[RecompressReport],
    removed: usize,
    failed: &[String],
) -> Result<()> {
    let model = CostModel::default();
    let before: u64 = reports.iter().map(|r| r.bytes_before).sum();
    let after: u64 = reports.iter().map(|r| r.bytes_after).sum();
    let cpu: f64 = reports.iter().map(|r| r.cpu_seconds).sum();
    let saved = before.saturating_sub(after);
    let days = recompress::days_to_pay(saved, cpu, &model);
    if a.json {
        let v = serde_json::json!({
            "dry_run": a.dry_run,
            "files": reports,
            "failed": failed,
            "stale_temporaries_removed": removed,
            "bytes_before": before,
            "bytes_after": after,
            "bytes_saved": saved,
            "cpu_seconds": cpu,
            "days_to_pay": days,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    if a.quiet {
        return Ok(());
    }
    for r in reports {
        if r.skipped {
            println!("{}: already at {} (skipped)", r.name, r.target);
        } else {
            println!(
                "{}: {} -> {} bytes{}, {} of {} frames re-encoded to {}{}, {:.2} CPU s",
                r.name,
                r.bytes_before,
                r.bytes_after,
                if r.estimated { " (estimated)" } else { "" },
                r.recoded,
                r.frames,
                r.target,
                if r.probed > 0 {
                    format!(" ({} raw frames found incompressible by a zstd:1 probe)", r.probed)
                } else {
                    String::new()
                },
                r.cpu_seconds
            );
        }
    }
    if removed > 0 {
        println!("removed {removed} temporary files of interrupted runs");
    }
    println!(
        "total: {before} -> {after} bytes, {saved} bytes saved{}, {cpu:.2} CPU s; {}",
        if a.dry_run { " (estimated)" } else { "" },
        match days {
            Some(d) => format!("the saving pays for the CPU after {d:.1} days of storage"),
            None => "nothing saved".to_owned(),
        }
    );
    if !failed.is_empty() {
        eprintln!(
            "adz: {} files failed and were left as they were: {}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}
