//! One CSV row per run: the file format `run` writes and `report`, `plot` and `adz cost --bench`
//! read.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
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

/// What identifies a row within a run: (dataset, link in kB/s, workload, config). A run's rows
/// also share bytes (per dataset) and threads, which a resumed run checks separately.
pub type Key = (String, u64, String, String);

/// A link speed as the integer the keys compare (kB/s), so 117 and 117.0 are the same link.
pub fn link_key(link_mbs: f64) -> u64 {
    (link_mbs * 1000.0).round() as u64
}

/// The `link_mbs` of rows written to the real sink of `run --sink` (not throttled: the sink is
/// the link, and its speed is what the raw row measured).
pub const SINK_LINK: f64 = 0.0;

/// Whether `link_mbs` is the real sink's ([`SINK_LINK`]).
pub fn is_sink(link_mbs: f64) -> bool {
    link_mbs == SINK_LINK
}

/// A link for people: `117 MB/s`, or `sink` for the real sink.
pub fn link_label(link_mbs: f64) -> String {
    if is_sink(link_mbs) {
        "sink".to_owned()
    } else {
        format!("{link_mbs} MB/s")
    }
}

impl Row {
    /// The cell a row belongs to: (dataset, link, workload).
    pub fn cell(&self) -> (String, u64, String) {
        (self.dataset.clone(), link_key(self.link_mbs), self.workload.clone())
    }

    /// The row's [`Key`].
    pub fn key(&self) -> Key {
        (self.dataset.clone(), link_key(self.link_mbs), self.workload.clone(), self.config.clone())
    }
}

/// Write rows as CSV (header first), as a one-shot run used to.
#[cfg(test)]
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
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&bytes, path)
}

/// One CSV line (with the header line first if `header`), as one buffer.
fn encode(row: &Row, header: bool) -> Result<Vec<u8>> {
    let mut w = csv::WriterBuilder::new().has_headers(header).from_writer(Vec::new());
    w.serialize(row)?;
    w.into_inner().map_err(|e| anyhow::anyhow!("cannot encode a CSV row: {e}"))
}

/// The header line (with its newline).
fn header_line() -> Result<Vec<u8>> {
    let blank = Row {
        dataset: String::new(),
        bytes: 0,
        link_mbs: 0.0,
        workload: String::new(),
        config: String::new(),
        kind: String::new(),
        threads: 0,
        seconds: 0.0,
        write_mbs: 0.0,
        ratio: 0.0,
        stored_bytes: 0,
        compute_seconds: None,
        async_share: None,
        configs_used: String::new(),
    };
    let both = encode(&blank, true)?;
    let end = both.iter().position(|&b| b == b'\n').context("no header line")?;
    Ok(both[..=end].to_vec())
}

/// Parse CSV text (header first); `path` names the file in errors.
fn parse(text: &[u8], path: &Path) -> Result<Vec<Row>> {
    let mut rd = csv::Reader::from_reader(text);
    let mut rows = Vec::new();
    for (i, r) in rd.deserialize().enumerate() {
        rows.push(r.with_context(|| format!("{}: row {}", path.display(), i + 2))?);
    }
    Ok(rows)
}

/// The complete lines of `bytes` and the torn last line, if the file does not end in a newline
/// (a run killed while writing a row).
fn split_torn(bytes: &[u8]) -> (&[u8], Option<String>) {
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return (bytes, None);
    }
    let cut = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    (&bytes[..cut], Some(String::from_utf8_lossy(&bytes[cut..]).into_owned()))
}

/// Read a results.csv that a run may still be appending to, or that a killed run left: the
/// complete rows, and the torn last line if there is one (not parsed, not repaired).
pub fn read_csv_partial(path: &Path) -> Result<(Vec<Row>, Option<String>)> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (good, torn) = split_torn(&bytes);
    Ok((parse(good, path)?, torn))
}

/// A results.csv open for appending: every row is written whole, in one write, and flushed to
/// the disk before the next run starts, so a run killed at any moment loses at most the row in
/// progress.
pub struct Appender {
    file: File,
    path: PathBuf,
}

/// What [`Appender::open`] found in the file.
pub struct Existing {
    /// The complete rows already there.
    pub rows: Vec<Row>,
    /// The torn last line it cut off, if any.
    pub torn: Option<String>,
}

impl Appender {
    /// Open `path` for appending, creating it with the header line if it is missing or empty.
    /// A torn last line (no newline: the run was killed while writing it) is cut off and
    /// returned; every complete line must parse, or this is an error naming the row.
    pub fn open(path: &Path) -> Result<(Appender, Existing)> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let (good, torn) = split_torn(&bytes);
        let header = header_line()?;
        if !good.is_empty() && !good.starts_with(&header) {
            bail!(
                "{} does not start with the columns this version writes ({}); it is from another \
                 version or not a results file",
                path.display(),
                String::from_utf8_lossy(header.trim_ascii_end())
            );
        }
        let rows = parse(good, path)?;
        let good_len = good.len() as u64;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {} for appending", path.display()))?;
        if torn.is_some() {
            file.set_len(good_len)
                .with_context(|| format!("cannot cut the torn last line of {}", path.display()))?;
        }
        if good_len == 0 {
            file.write_all(&header)?;
            file.sync_data()?;
        }
        Ok((Appender { file, path: path.to_owned() }, Existing { rows, torn }))
    }

    /// Append one row and flush it to the disk.
    pub fn append(&mut self, row: &Row) -> Result<()> {
        let line = encode(row, false)?;
        self.file
            .write_all(&line)
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("cannot append to {}", self.path.display()))
    }
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

    #[test]
    fn appended_rows_read_back_and_a_torn_line_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        let a = row("text", 117.0, "sync", "none", KIND_RAW, 1.0, 1.0);
        let mut b = row("text", 117.0, "async", "s1", KIND_ADAPTIVE, 2.0, 3.0);
        b.compute_seconds = Some(0.5);
        b.async_share = Some(0.25);
        b.configs_used = "zstd:3=4;none=1".into();
        {
            let (mut w, ex) = Appender::open(&p).unwrap();
            assert!(ex.rows.is_empty() && ex.torn.is_none());
            w.append(&a).unwrap();
            w.append(&b).unwrap();
        }
        // The same file as a one-shot write, so report and plot cannot tell them apart.
        let one_shot = dir.path().join("one.csv");
        write_csv(&one_shot, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), std::fs::read(&one_shot).unwrap());

        // Killed while writing a third row: the file ends in half a line.
        let mut text = std::fs::read(&p).unwrap();
        let whole = text.len();
        text.extend_from_slice(b"matrix,1000000000,117,sy");
        std::fs::write(&p, &text).unwrap();
        assert!(read_csv(&p).is_err(), "the torn line does not parse");
        let (rows, torn) = read_csv_partial(&p).unwrap();
        assert_eq!(rows, vec![a.clone(), b.clone()]);
        assert_eq!(torn.as_deref(), Some("matrix,1000000000,117,sy"));

        let (mut w, ex) = Appender::open(&p).unwrap();
        assert_eq!(ex.rows, vec![a.clone(), b.clone()]);
        assert_eq!(ex.torn.as_deref(), Some("matrix,1000000000,117,sy"));
        assert_eq!(std::fs::metadata(&p).unwrap().len(), whole as u64);
        let c = row("matrix", 117.0, "sync", "none", KIND_RAW, 1.0, 1.0);
        w.append(&c).unwrap();
        assert_eq!(read_csv(&p).unwrap(), vec![a, b, c]);
    }

    #[test]
    fn a_torn_header_is_rewritten_and_a_foreign_file_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        std::fs::write(&p, "dataset,bytes,li").unwrap();
        let (mut w, ex) = Appender::open(&p).unwrap();
        assert!(ex.rows.is_empty());
        assert_eq!(ex.torn.as_deref(), Some("dataset,bytes,li"));
        let a = row("text", 117.0, "sync", "none", KIND_RAW, 1.0, 1.0);
        w.append(&a).unwrap();
        assert_eq!(read_csv(&p).unwrap(), vec![a]);

        let q = dir.path().join("other.csv");
        std::fs::write(&q, "name,value\nx,1\n").unwrap();
        let err = format!("{:#}", Appender::open(&q).err().unwrap());
        assert!(err.contains("does not start with the columns"), "{err}");
        assert_eq!(std::fs::read_to_string(&q).unwrap(), "name,value\nx,1\n", "left alone");
    }
}
