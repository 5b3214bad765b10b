//! The tier configuration file (TOML; docs/TIERS.md has an example).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use adz_format::CodecSpec;
use adz_store::{LocalStorage, Storage, Throttled};
use serde::Deserialize;

use crate::error::TierError;

/// A byte count in the file: a number, or a string with a unit (`"512MiB"`, `"4 GiB"`, `"1GB"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

impl Size {
    fn bytes(&self, what: &str) -> Result<u64, TierError> {
        match self {
            Size::Bytes(n) => Ok(*n),
            Size::Text(s) => {
                parse_size(s).map_err(|why| TierError::Config(format!("{what}: {why}")))
            }
        }
    }
}

/// Parses `"4GiB"`, `"512 MiB"`, `"1GB"`, `"100"` into bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let num: f64 = num.parse().map_err(|_| format!("{s:?} is not a size such as \"4GiB\""))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024f64.powi(2),
        "gib" => 1024f64.powi(3),
        "tib" => 1024f64.powi(4),
        other => return Err(format!("unknown unit {other:?} in {s:?}")),
    };
    let v = num * mult;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(format!("{s:?} is out of range"));
    }
    Ok(v as u64)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    catalog: Option<PathBuf>,
    block_size: Option<Size>,
    batch: Option<Size>,
    #[serde(default)]
    flush: FlushFile,
    #[serde(rename = "tier")]
    tiers: Vec<TierFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlushFile {
    high: Option<f64>,
    low: Option<f64>,
    max_age: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TierFile {
    name: String,
    path: PathBuf,
    capacity: Option<Size>,
    bandwidth: String,
    #[serde(default)]
    latency: f64,
    #[serde(default)]
    throttle: bool,
    rung: Option<String>,
    // S3 tiers only (docs/TIERS.md): the endpoint, plain http, seconds per request.
    endpoint: Option<String>,
    allow_http: Option<bool>,
    timeout: Option<f64>,
}

/// Where an `s3://bucket/prefix` tier keeps its objects, and how to reach it. What is not
/// given here comes from the environment as for every `s3://` location of adz
/// (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, `AWS_REGION`; credentials only from
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct S3Tier {
    /// The bucket.
    pub bucket: String,
    /// The key prefix, without leading or trailing `/` (empty: the bucket's root): segment
    /// objects are `prefix/NAME/ID.adz`.
    pub prefix: String,
    /// The endpoint URL (`endpoint = "http://127.0.0.1:9000"`); `None`: `AWS_ENDPOINT_URL`,
    /// else AWS S3.
    pub endpoint: Option<String>,
    /// Allow a plain `http://` endpoint (`allow_http = true`); `None`: `AWS_ALLOW_HTTP`.
    pub allow_http: Option<bool>,
    /// Seconds one request may take (`timeout = 30`), so that a server that stopped
    /// answering fails the operation; `None`: the S3 client's default (300 s).
    pub timeout: Option<f64>,
}

/// One tier as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct TierConfig {
    /// The tier's name (`"shm"`, `"nvme"`, `"pfs"`), as the catalog records it.
    pub name: String,
    /// A local directory (`/dev/shm/adz` for memory); for an S3 tier, its `s3://` URL as
    /// written (see `s3`).
    pub path: PathBuf,
    /// Bytes the tier may hold; `u64::MAX` for no limit.
    pub capacity: u64,
    /// Write bandwidth, bytes per second: given, or measured when the tiers are opened
    /// (`bandwidth = "measure"`).
    pub bandwidth: Option<f64>,
    /// Seconds per object written (a file create, a request).
    pub latency: f64,
    /// Make the tier behave as a link of `bandwidth` ([`Throttled`]), writes and reads each
    /// at that speed, for benchmarks.
    pub throttle: bool,
    /// The rung frames take when flushed into this tier; `None`: chosen by the DP.
    pub rung: Option<CodecSpec>,
    /// `Some` for an `s3://bucket/prefix` tier: where and how to reach it.
    pub s3: Option<S3Tier>,
}

/// When the flusher moves data down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlushPolicy {
    /// A tier filled past this fraction of its capacity is flushed ...
    pub high: f64,
    /// ... down to this fraction.
    pub low: f64,
    /// Segments older than this many seconds are flushed whatever the fill.
    pub max_age: Option<f64>,
}

impl Default for FlushPolicy {
    fn default() -> FlushPolicy {
        FlushPolicy { high: 0.8, low: 0.5, max_age: None }
    }
}

/// The whole configuration: tiers fastest first, where the catalog lives, and the policies.
#[derive(Debug, Clone, PartialEq)]
pub struct TiersConfig {
    /// Tiers, fastest first; the last is where flushed data ends.
    pub tiers: Vec<TierConfig>,
    /// The directory of catalog files (default: `.adz-catalog` in the last tier's directory).
    pub catalog: PathBuf,
    /// Raw bytes per frame.
    pub block_size: u32,
    /// Raw bytes the DP places at once (one write request in HCompress' terms); bounds memory.
    pub batch: u64,
    /// The flusher's thresholds.
    pub flush: FlushPolicy,
}

impl TiersConfig {
    /// Reads a TOML configuration file; relative paths in it are taken from its directory.
    pub fn load(path: &Path) -> Result<TiersConfig, TierError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TierError::Config(format!("cannot read {}: {e}", path.display())))?;
        let base = path.parent().unwrap_or(Path::new("."));
        TiersConfig::parse(&text, base)
    }

    /// Parses a TOML configuration; relative paths are taken from `base`.
    pub fn parse(text: &str, base: &Path) -> Result<TiersConfig, TierError> {
        let file: FileConfig =
            toml::from_str(text).map_err(|e| TierError::Config(e.to_string()))?;
        if file.tiers.is_empty() {
            return Err(TierError::Config("no [[tier]]".into()));
        }
        let mut tiers = Vec::new();
        for t in file.tiers {
            let what = format!("tier {:?}", t.name);
            if t.name.is_empty() || tiers.iter().any(|x: &TierConfig| x.name == t.name) {
                return Err(TierError::Config(format!(
                    "{what}: names must be non-empty and unique"
                )));
            }
            let bandwidth = match t.bandwidth.trim() {
                "measure" => None,
                rate => Some(
                    adz_store::parse_rate(rate)
                        .map_err(|e| TierError::Config(format!("{what}: bandwidth: {e}")))?,
                ),
            };
            if t.throttle && bandwidth.is_none() {
                return Err(TierError::Config(format!("{what}: throttle needs a given bandwidth")));
            }
            let rung = t
                .rung
                .map(|r| r.parse::<CodecSpec>())
                .transpose()
                .map_err(|e| TierError::Config(format!("{what}: rung: {e}")))?;
            if !(t.latency.is_finite() && t.latency >= 0.0) {
                return Err(TierError::Config(format!("{what}: latency must be >= 0 seconds")));
            }
            let s3 = s3_tier(&what, &t.path, t.endpoint, t.allow_http, t.timeout)?;
            tiers.push(TierConfig {
                capacity: t.capacity.map(|c| c.bytes(&what)).transpose()?.unwrap_or(u64::MAX),
                path: if s3.is_some() { t.path } else { base.join(t.path) },
                s3,
                name: t.name,
                bandwidth,
                latency: t.latency,
                throttle: t.throttle,
                rung,
            });
        }
        let catalog = match file.catalog {
            Some(c) if is_s3(&c) => {
                return Err(TierError::Config(format!(
                    "catalog {}: the catalog is a local directory, not an s3:// location",
                    c.display()
                )))
            }
            Some(c) => base.join(c),
            None => {
                let last = tiers.last().expect("at least one tier");
                if last.s3.is_some() {
                    return Err(TierError::Config(format!(
                        "tier {:?} is on S3: give `catalog = \"DIR\"`, a local directory for \
                         the catalog (by default it is in the last tier's directory)",
                        last.name
                    )));
                }
                last.path.join(".adz-catalog")
            }
        };
        let block_size =
            file.block_size.map(|s| s.bytes("block_size")).transpose()?.unwrap_or(1 << 20);
        if !(4096..=(64 << 20)).contains(&block_size) {
            return Err(TierError::Config("block_size must be 4KiB..=64MiB".into()));
        }
        let batch = file.batch.map(|s| s.bytes("batch")).transpose()?.unwrap_or(64 << 20);
        if batch < block_size {
            return Err(TierError::Config("batch must be at least one block".into()));
        }
        let d = FlushPolicy::default();
        let flush = FlushPolicy {
            high: file.flush.high.unwrap_or(d.high),
            low: file.flush.low.unwrap_or(d.low),
            max_age: file.flush.max_age,
        };
        if !(0.0..=1.0).contains(&flush.low) || !(flush.low..=1.0).contains(&flush.high) {
            return Err(TierError::Config("flush: need 0 <= low <= high <= 1".into()));
        }
        Ok(TiersConfig { tiers, catalog, block_size: block_size as u32, batch, flush })
    }
}

fn is_s3(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.len() >= 5 && p[..5].eq_ignore_ascii_case("s3://"))
}

/// The S3 settings of a tier whose path is `s3://bucket/prefix`; `None` for a local tier,
/// which must not have them.
fn s3_tier(
    what: &str,
    path: &Path,
    endpoint: Option<String>,
    allow_http: Option<bool>,
    timeout: Option<f64>,
) -> Result<Option<S3Tier>, TierError> {
    if !is_s3(path) {
        if endpoint.is_some() || allow_http.is_some() || timeout.is_some() {
            return Err(TierError::Config(format!(
                "{what}: endpoint, allow_http and timeout are for s3:// tiers only"
            )));
        }
        return Ok(None);
    }
    let url = path.to_str().expect("checked by is_s3");
    let (bucket, prefix) = adz_store::location::parse_s3_prefix(url)
        .map_err(|e| TierError::Config(format!("{what}: {e}")))?;
    let prefix = prefix.trim_end_matches('/').to_owned();
    if !prefix.is_empty() && prefix.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
        return Err(TierError::Config(format!("{what}: {url}: not a usable key prefix")));
    }
    if let Some(e) = &endpoint {
        if !(e.starts_with("http://") || e.starts_with("https://")) {
            return Err(TierError::Config(format!(
                "{what}: endpoint {e:?} is not an http:// or https:// URL"
            )));
        }
    }
    if let Some(t) = timeout {
        if !(t.is_finite() && t > 0.0 && t <= 86_400.0) {
            return Err(TierError::Config(format!("{what}: timeout must be 0 < seconds <= 86400")));
        }
    }
    Ok(Some(S3Tier { bucket, prefix, endpoint, allow_http, timeout }))
}

impl TiersConfig {
    /// Gives every S3 tier that does not set them in the file this endpoint and, if
    /// `allow_http`, plain http: for the CLI's `--s3-endpoint` and `--s3-allow-http`, which
    /// then take precedence over the environment as for other `s3://` locations.
    pub fn s3_defaults(&mut self, endpoint: Option<&str>, allow_http: bool) {
        for s3 in self.tiers.iter_mut().filter_map(|t| t.s3.as_mut()) {
            if s3.endpoint.is_none() {
                s3.endpoint = endpoint.map(str::to_owned);
            }
            if allow_http && s3.allow_http.is_none() {
                s3.allow_http = Some(true);
            }
        }
    }
}

/// Opens a tier as storage (a local directory, created if missing, or an S3 prefix),
/// throttled if asked, and measures its bandwidth if not given. Returns the storage and the
/// bandwidth.
pub(crate) fn open_tier(t: &TierConfig) -> Result<(Arc<dyn Storage>, f64), TierError> {
    let raw: Arc<dyn Storage> = match &t.s3 {
        Some(s3) => open_s3(&t.name, s3)?,
        None => {
            std::fs::create_dir_all(&t.path).map_err(|e| {
                TierError::Config(format!(
                    "tier {:?}: cannot create {}: {e}",
                    t.name,
                    t.path.display()
                ))
            })?;
            // A segment half-written when a process dies is worth nothing (its source is
            // intact), so its temporary is marked as not recoverable, and `gc` removes it.
            Arc::new(
                LocalStorage::new(&t.path)
                    .map_err(TierError::store(format!("tier {:?}", t.name)))?
                    .recoverable_temporaries(false),
            )
        }
    };
    let bandwidth = match t.bandwidth {
        Some(b) => b,
        None => measure(&*raw).map_err(TierError::store(format!("measuring tier {:?}", t.name)))?,
    };
    // A throttled tier is a full-duplex link of its bandwidth: reads are paced too, so that a
    // reader of a slow tier (issue 27's BD-CATS-like workload) sees its speed.
    let store: Arc<dyn Storage> = if t.throttle {
        Arc::new(Throttled::new(raw, bandwidth).throttle_reads(true))
    } else {
        raw
    };
    Ok((store, bandwidth))
}

/// An S3 tier: the bucket as configured (the tier's settings over the environment's), behind
/// retries of transient errors as every `s3://` location of adz, under the tier's prefix.
#[cfg(feature = "s3")]
fn open_s3(name: &str, s3: &S3Tier) -> Result<Arc<dyn Storage>, TierError> {
    use adz_store::s3::{S3Config, S3Storage};
    use adz_store::Retrying;

    use crate::prefixed::Prefixed;
    let mut config = S3Config::from_env();
    if let Some(e) = &s3.endpoint {
        config = config.endpoint(e.clone());
    }
    if let Some(allow) = s3.allow_http {
        config = config.allow_http(allow);
    }
    if let Some(secs) = s3.timeout {
        let request = std::time::Duration::from_secs_f64(secs);
        let connect = config.connect_timeout.min(request);
        config = config.timeouts(request, connect);
    }
    let policy = config.retry.clone();
    let bucket = S3Storage::new(&s3.bucket, config)
        .map_err(TierError::store(format!("tier {name:?}: bucket {}", s3.bucket)))?;
    Ok(Arc::new(Prefixed::new(Retrying::new(bucket, policy), &s3.prefix)))
}

#[cfg(not(feature = "s3"))]
fn open_s3(name: &str, _s3: &S3Tier) -> Result<Arc<dyn Storage>, TierError> {
    Err(TierError::Config(format!(
        "tier {name:?}: s3:// tiers need adz built with the cargo feature `s3`"
    )))
}

/// Write bandwidth of a store: one 32 MiB object, committed (and so synced), then deleted,
/// also when the write failed (a request that timed out may still have landed).
fn measure(store: &dyn Storage) -> adz_store::Result<f64> {
    const PROBE: &str = ".adz-bandwidth-probe";
    let data = vec![0x5au8; 32 << 20];
    let t0 = Instant::now();
    if let Err(e) = store.put(PROBE, &data) {
        let _ = store.delete(PROBE);
        return Err(e);
    }
    let secs = t0.elapsed().as_secs_f64().max(1e-6);
    store.delete(PROBE)?;
    Ok(data.len() as f64 / secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
        batch = "8MiB"
        [flush]
        high = 0.9
        [[tier]]
        name = "shm"
        path = "shm"
        capacity = "1GiB"
        bandwidth = "10GB/s"
        [[tier]]
        name = "disk"
        path = "/data/adz"
        capacity = 4000000
        bandwidth = "1200MB/s"
        throttle = true
        rung = "zstd:9"
    "#;

    #[test]
    fn parses_the_example() {
        let c = TiersConfig::parse(EXAMPLE, Path::new("/etc")).unwrap();
        assert_eq!(c.tiers.len(), 2);
        assert_eq!(c.tiers[0].path, Path::new("/etc/shm"));
        assert_eq!(c.tiers[0].capacity, 1 << 30);
        assert_eq!(c.tiers[0].bandwidth, Some(10e9));
        assert_eq!(c.tiers[1].capacity, 4_000_000);
        assert_eq!(c.tiers[1].rung, Some("zstd:9".parse().unwrap()));
        assert!(c.tiers[1].throttle);
        assert_eq!(c.catalog, Path::new("/data/adz/.adz-catalog"));
        assert_eq!((c.batch, c.block_size), (8 << 20, 1 << 20));
        assert_eq!(c.flush, FlushPolicy { high: 0.9, low: 0.5, max_age: None });
    }

    #[test]
    fn rejects_bad_files() {
        let bad = [
            "",
            "[[tier]]\nname = \"a\"\npath = \"x\"\nbandwidth = \"fast\"",
            "[[tier]]\nname = \"a\"\npath = \"x\"\nbandwidth = \"1GB/s\"\ncapacity = \"3 parsecs\"",
            "[[tier]]\nname = \"a\"\npath = \"x\"\nbandwidth = \"measure\"\nthrottle = true",
            "[[tier]]\nname = \"a\"\npath = \"x\"\nbandwidth = \"1GB/s\"\n[[tier]]\nname = \"a\"\npath = \"y\"\nbandwidth = \"1GB/s\"",
            "[[tier]]\nname = \"a\"\npath = \"x\"\nbandwidth = \"1GB/s\"\ncolour = 3",
            "[flush]\nhigh = 0.2\nlow = 0.5\n[[tier]]\nname = \"a\"\npath = \"x\"\nbandwidth = \"1GB/s\"",
        ];
        for text in bad {
            assert!(
                matches!(TiersConfig::parse(text, Path::new("/")), Err(TierError::Config(_))),
                "{text}"
            );
        }
    }

    const S3: &str = r#"
        catalog = "cat"
        [[tier]]
        name = "shm"
        path = "shm"
        bandwidth = "10GB/s"
        [[tier]]
        name = "minio"
        path = "s3://adz-tiers/run/a/"
        bandwidth = "117MB/s"
        throttle = true
        endpoint = "http://127.0.0.1:9000"
        allow_http = true
        timeout = 2.5
    "#;

    #[test]
    fn parses_an_s3_tier() {
        let c = TiersConfig::parse(S3, Path::new("/etc")).unwrap();
        assert_eq!(c.tiers[0].s3, None);
        let t = &c.tiers[1];
        assert_eq!(t.path, Path::new("s3://adz-tiers/run/a/"), "kept as written");
        let s3 = t.s3.as_ref().unwrap();
        assert_eq!((s3.bucket.as_str(), s3.prefix.as_str()), ("adz-tiers", "run/a"));
        assert_eq!(s3.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!((s3.allow_http, s3.timeout), (Some(true), Some(2.5)));
        assert_eq!(c.catalog, Path::new("/etc/cat"));
        // The whole bucket, settings from the environment (or the CLI's flags).
        let text = S3.replace("s3://adz-tiers/run/a/", "s3://adz-tiers");
        let text = text.replace("endpoint = \"http://127.0.0.1:9000\"", "");
        let mut c =
            TiersConfig::parse(&text.replace("allow_http = true", ""), Path::new("/")).unwrap();
        let s3 = c.tiers[1].s3.clone().unwrap();
        assert_eq!((s3.prefix.as_str(), s3.endpoint, s3.allow_http), ("", None, None));
        c.s3_defaults(Some("http://127.0.0.1:9"), true);
        let s3 = c.tiers[1].s3.clone().unwrap();
        assert_eq!(
            (s3.endpoint.as_deref(), s3.allow_http),
            (Some("http://127.0.0.1:9"), Some(true))
        );
        let mut c = TiersConfig::parse(S3, Path::new("/")).unwrap();
        c.s3_defaults(Some("http://elsewhere:1"), false);
        assert_eq!(
            c.tiers[1].s3.as_ref().unwrap().endpoint.as_deref(),
            Some("http://127.0.0.1:9000")
        );
    }

    #[test]
    fn rejects_bad_s3_tiers() {
        let bad = [
            // The catalog cannot default into an S3 bottom tier, nor be on S3.
            S3.replace("catalog = \"cat\"", ""),
            S3.replace("catalog = \"cat\"", "catalog = \"s3://adz-tiers/cat\""),
            S3.replace("s3://adz-tiers/run/a/", "s3://Bad_Bucket/x"),
            S3.replace("s3://adz-tiers/run/a/", "s3://adz-tiers/a/./b"),
            S3.replace("http://127.0.0.1:9000", "127.0.0.1:9000"),
            S3.replace("timeout = 2.5", "timeout = 0"),
            S3.replace("timeout = 2.5", "timeout = -1"),
            // S3 settings on a local tier.
            S3.replace("bandwidth = \"10GB/s\"", "bandwidth = \"10GB/s\"\ntimeout = 3"),
        ];
        for text in bad {
            match TiersConfig::parse(&text, Path::new("/")) {
                Err(TierError::Config(msg)) => assert!(!msg.is_empty()),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[cfg(not(feature = "s3"))]
    #[test]
    fn s3_tiers_need_the_feature() {
        let c = TiersConfig::parse(S3, Path::new("/")).unwrap();
        let e = open_tier(&c.tiers[1]).unwrap_err().to_string();
        assert!(e.contains("feature `s3`"), "{e}");
    }

    #[test]
    fn a_throttled_tier_paces_writes_and_reads() {
        let dir = tempfile::tempdir().unwrap();
        let text = "[[tier]]\nname = \"t\"\npath = \"t\"\nbandwidth = \"20MB/s\"\nthrottle = true";
        let c = TiersConfig::parse(text, dir.path()).unwrap();
        let (store, bandwidth) = open_tier(&c.tiers[0]).unwrap();
        assert_eq!(bandwidth, 20e6);
        let data = vec![7u8; 4 << 20];
        let t0 = Instant::now();
        store.put("x", &data).unwrap();
        let put = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        assert_eq!(store.get("x").unwrap(), data);
        let get = t0.elapsed().as_secs_f64();
        // 4 MiB at 20 MB/s: 0.21 s each way (less a burst of 1 MiB at most).
        assert!(put > 0.15 && get > 0.15, "put {put:.3} s, get {get:.3} s");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("4 GiB"), Ok(4 << 30));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("-1").is_err());
    }
}
