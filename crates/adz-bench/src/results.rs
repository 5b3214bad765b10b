//! One CSV row per run: the file format `run` writes and `report`, `plot` and `adz cost --bench`
//! read.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// What kind of configuration a row measured.
pub const KIND_RAW: &str = "raw";
/// A static rung of the ladder.
pub const KIND_STATIC: &str = "static";
/// S1/S2/S3.
pub const KIND_ADAPTIVE: &str = "adaptive";
/// An external tool (zstd, lz4, xz) piped into the same throttled sink.
pub const KIND_EXTERNAL: &str = "external";
/// The oracle bound computed from per-block measurements (no run of its own).
pub const KIND_ORACLE: &str = "oracle";

/// One run. See docs/EVALUATION.md for every column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Dataset name (`text`, `matrix`, `climate`, `mixed`, `linux`, `incompressible`).
    pub dataset: String,
    /// Raw bytes written.
    pub bytes: u64,
    /// Link speed, MB/s (10^6 bytes/s).
    pub link_mbs: f64,
    /// `sync` or `async`.
    pub workload: String,
    /// `none`, `zstd:3`, `s1`, `s2`, `s3=1.5`, `s1-auto`, `zstd --adapt -T2`, `oracle`, ...
    pub config: String,
    /// One of the `KIND_*` constants.
    pub kind: String,
    /// Compression threads.
    pub threads: usize,
    /// Wall seconds: the whole write (sync), or the application's rounds of compute and
    /// writes (async).
    pub seconds: f64,
    /// Raw MB per wall second (bytes / seconds / 10^6).
    pub write_mbs: f64,
    /// Raw bytes / stored bytes.
    pub ratio: f64,
    /// Stored bytes (the adz file with headers and trailer, or the tool's output).
    pub stored_bytes: u64,
    /// Async only: seconds the application computed.
    pub compute_seconds: Option<f64>,
    /// Async only: share of the writes' duration that overlapped the computation.
    pub async_share: Option<f64>,
    /// The configurations the frames used, `zstd:3=120;none=4` (adz rows), or the oracle's mix.
    pub configs_used: String,
}

impl Row {
    /// The cell a row belongs to: (dataset, link, workload).
    pub fn cell(&self) -> (String, u64, String) {
        (self.dataset.clone(), (self.link_mbs * 1000.0).round() as u64, self.workload.clone())
    }
}

/// Write rows as CSV (header first).
pub fn write_csv(path: &Path, rows: &[Row]) -> Result<()> {
    let tmp = path.with_extension("csv.tmp");
    {
        let mut w = csv::Writer::from_path(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        for r in rows {
            w.serialize(r)?;
        }
        w.flush()?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Read rows written by [`write_csv`].
pub fn read_csv(path: &Path) -> Result<Vec<Row>> {
    let mut rd =
        csv::Reader::from_path(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut rows = Vec::new();
    for (i, r) in rd.deserialize().enumerate() {
        rows.push(r.with_context(|| format!("{}: row {}", path.display(), i + 2))?);
    }
    Ok(rows)
}

#[cfg(test)]
pub(crate) fn row(
    dataset: &str,
    link: f64,
    workload: &str,
    config: &str,
    kind: &str,
    seconds: f64,
    ratio: f64,
) -> Row {
    let bytes = 1_000_000_000;
    Row {
        dataset: dataset.into(),
        bytes,
        link_mbs: link,
        workload: workload.into(),
        config: config.into(),
        kind: kind.into(),
        threads: 2,
        seconds,
        write_mbs: bytes as f64 / seconds / 1e6,
        ratio,
        stored_bytes: (bytes as f64 / ratio) as u64,
        compute_seconds: None,
        async_share: None,
        configs_used: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trip_keeps_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        let mut a = row("text", 117.0, "async", "zstd --adapt -T2", KIND_EXTERNAL, 3.5, 2.25);
        a.compute_seconds = Some(1.25);
        a.async_share = Some(0.5);
        a.configs_used = "zstd:3=10;none=2".into();
        let b = row("matrix", 6000.0, "sync", "s3=1.5", KIND_ADAPTIVE, 0.5, 1.1);
        write_csv(&p, &[a.clone(), b.clone()]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("dataset,bytes,link_mbs,workload,config,kind,threads,seconds,"));
        assert_eq!(read_csv(&p).unwrap(), vec![a, b]);
    }

    #[test]
    fn bad_csv_names_the_row() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        let good = row("text", 117.0, "sync", "none", KIND_RAW, 1.0, 1.0);
        write_csv(&p, &[good]).unwrap();
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str("text,notanumber,117,sync,none,raw,2,1,1,1,1,,,\n");
        std::fs::write(&p, text).unwrap();
        let err = format!("{:#}", read_csv(&p).unwrap_err());
        assert!(err.contains("row 3"), "{err}");
    }
}
