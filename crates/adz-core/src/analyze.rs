//! What a user's data would gain from compression and from deduplication, before anything
//! is chosen (`adz analyze`, docs/LIFECYCLE.md).
//!
//! - **Compressibility**: a few rungs measured on the predictor's [`Sample`] of each input
//!   (ratio, one thread's speed), and the write time the predictor's [`WriteModel`] gives at a
//!   link, against sending the data raw.
//! - **Zero blocks**: the share of the data in 4 KiB blocks that are all zero (every byte).
//! - **Deduplication**: every byte is cut into chunks of fixed size (4, 8, 16, 64 KiB) and by
//!   content-defined chunking (FastCDC 2020 at the same average sizes, minimum average / 4,
//!   maximum average x 4); each chunk's content is hashed (XXH3-128). Memory is bounded by a
//!   hash sample: a table keeps only the chunks whose hash falls in a shrinking share of the
//!   hash space (1, 1/2, 1/4 ... as it fills), so duplicates are sampled together and the
//!   dedup ratio (all chunk bytes / distinct chunk bytes) is estimated on a uniform sample of
//!   distinct chunk contents. Exact while the table never filled.
//!
//! ```
//! use adz_core::analyze::{Analyzer, AnalyzeOptions};
//!
//! // One 64 KiB block of noise written 8 times: every chunking finds the 8 copies.
//! let block = adz_datagen::generate(adz_datagen::Kind::Random, 64 << 10, 7);
//! let data = block.repeat(8);
//! let mut a = Analyzer::new(AnalyzeOptions { rungs: vec![], ..Default::default() });
//! a.add_stream(&mut &data[..])?;
//! let report = a.report();
//! let fixed64 = report.dedup.iter().find(|d| d.method == "fixed" && d.chunk_size == 64 << 10).unwrap();
//! assert!((fixed64.dedup_ratio - 8.0).abs() < 1e-9);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};

use adz_format::CodecSpec;
use serde::Serialize;
use xxhash_rust::xxh3::xxh3_128;

use crate::predict::{PredictConfig, Predictor, Sample, SampleConfig, WriteModel};
use crate::{Error, Result};

/// The chunk sizes (fixed) and average sizes (content-defined) analysed.
pub const CHUNK_SIZES: [usize; 4] = [4 << 10, 8 << 10, 16 << 10, 64 << 10];

/// Bytes a dedup table is assumed to spend per distinct chunk: a 32-byte strong hash (as a
/// dedup store keys chunks by SHA-256), an 8-byte location, and 24 bytes of hash-table
/// overhead (load factor and a reference count).
pub const ENTRY_BYTES: u64 = 64;

/// The size of a zero block.
pub const ZERO_BLOCK: usize = 4 << 10;

/// Bytes of a stream kept for its compressibility sample (the sample is taken from this
/// prefix: a stream cannot be read twice).
pub const STREAM_PREFIX: usize = 32 << 20;

/// What to analyse.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeOptions {
    /// Rungs whose ratio and speed are measured. Default lz4:1, zstd:1, zstd:3, zstd:9,
    /// zstd:19, xz:6.
    pub rungs: Vec<CodecSpec>,
    /// The link the write times are predicted for, bytes/s. Default 117 MB/s (1GbE).
    pub link: f64,
    /// Threads of the predicted write (0: one per core).
    pub threads: usize,
    /// The most distinct chunks one dedup table keeps before it samples half as many hashes;
    /// memory is about 40 bytes a chunk for each of the eight tables. Default 131072.
    pub max_table_entries: usize,
    /// How the compressibility sample of each input is taken.
    pub sample: SampleConfig,
}

impl Default for AnalyzeOptions {
    fn default() -> AnalyzeOptions {
        let rungs = ["lz4:1", "zstd:1", "zstd:3", "zstd:9", "zstd:19", "xz:6"]
            .iter()
            .map(|s| s.parse().expect("valid rung"))
            .collect();
        AnalyzeOptions {
            rungs,
            link: 117e6,
            threads: 0,
            max_table_entries: 1 << 17,
            sample: SampleConfig::default(),
        }
    }
}

/// One rung on the data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RungReport {
    /// The rung.
    pub codec: String,
    /// raw / stored, over all inputs (each input's sample standing for its length).
    pub ratio: f64,
    /// One thread's compression speed, raw bytes/s.
    pub speed: f64,
    /// Predicted seconds to write all the data at the link with this rung on all threads.
    pub write_seconds: f64,
}

/// Deduplication with one chunking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DedupReport {
    /// `fixed` or `cdc` (FastCDC 2020).
    pub method: &'static str,
    /// The chunk size (fixed) or average size asked for (cdc).
    pub chunk_size: usize,
    /// Chunks cut.
    pub chunks: u64,
    /// Their mean length.
    pub mean_chunk: f64,
    /// All bytes / distinct bytes (estimated on the hash sample).
    pub dedup_ratio: f64,
    /// The share of the hash space the table kept (1: every chunk, the ratio is exact).
    pub sample_rate: f64,
    /// Distinct chunks in the table at the end (the sample the ratio stands on).
    pub sampled_distinct: u64,
    /// Memory of a dedup table for 1 TB (10^12 bytes) of such data: one [`ENTRY_BYTES`]
    /// entry per distinct chunk.
    pub table_bytes_per_tb: f64,
    /// The dedup ratio times the ratio of [`AnalyzeReport::combined_with`]: both applied, if
    /// the distinct chunks compress as the data does.
    pub combined_ratio: Option<f64>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalyzeReport {
    /// Inputs analysed.
    pub inputs: u64,
    /// Bytes analysed (all of every input).
    pub bytes: u64,
    /// Bytes in all-zero 4 KiB blocks, as a share of all bytes.
    pub zero_block_share: f64,
    /// Bytes the rungs were measured on.
    pub sampled_bytes: u64,
    /// The link of the predicted write times, bytes/s.
    pub link: f64,
    /// Seconds to write all the data raw through it.
    pub raw_write_seconds: f64,
    /// Each rung.
    pub rungs: Vec<RungReport>,
    /// The rung dedup is combined with (zstd:3 if measured, else the first).
    pub combined_with: Option<String>,
    /// Bytes per dedup table entry assumed.
    pub entry_bytes: u64,
    /// Each chunking.
    pub dedup: Vec<DedupReport>,
}

/// A dedup table over a hash sample.
#[derive(Debug, Default)]
struct Table {
    /// hash -> (chunk length, copies).
    entries: HashMap<u128, (u32, u32)>,
    /// Only hashes whose top `shift` bits (of the low 64) are zero are kept.
    shift: u32,
    chunks: u64,
    bytes: u64,
}

impl Table {
    fn add(&mut self, chunk: &[u8], max: usize) {
        self.chunks += 1;
        self.bytes += chunk.len() as u64;
        let h = xxh3_128(chunk);
        if !keeps(h, self.shift) {
            return;
        }
        let e = self.entries.entry(h).or_insert((chunk.len() as u32, 0));
        e.1 = e.1.saturating_add(1);
        while self.entries.len() > max.max(1) && self.shift < 63 {
            self.shift += 1;
            let shift = self.shift;
            self.entries.retain(|&h, _| keeps(h, shift));
        }
    }

    fn report(&self, method: &'static str, chunk_size: usize) -> DedupReport {
        let (mut all, mut distinct) = (0f64, 0f64);
        for &(len, n) in self.entries.values() {
            all += f64::from(len) * f64::from(n);
            distinct += f64::from(len);
        }
        let dedup_ratio = if distinct > 0.0 { all / distinct } else { 1.0 };
        let mean_chunk = if self.chunks > 0 { self.bytes as f64 / self.chunks as f64 } else { 0.0 };
        let table_bytes_per_tb = if mean_chunk > 0.0 {
            1e12 / mean_chunk / dedup_ratio * ENTRY_BYTES as f64
        } else {
            0.0
        };
        DedupReport {
            method,
            chunk_size,
            chunks: self.chunks,
            mean_chunk,
            dedup_ratio,
            sample_rate: 0.5f64.powi(self.shift as i32),
            sampled_distinct: self.entries.len() as u64,
            table_bytes_per_tb,
            combined_ratio: None,
        }
    }
}

fn keeps(h: u128, shift: u32) -> bool {
    shift == 0 || (h as u64) >> (64 - shift) == 0
}

/// One chunking of the stream: its table and the bytes not yet cut.
#[derive(Debug)]
struct Chunker {
    cdc: bool,
    size: usize,
    pending: Vec<u8>,
    table: Table,
}

impl Chunker {
    fn feed(&mut self, data: &[u8], last: bool, max: usize) {
        self.pending.extend_from_slice(data);
        let mut used = 0;
        if self.cdc {
            let avg = self.size;
            let cuts = fastcdc::v2020::FastCDC::new(&self.pending, avg / 4, avg, avg * 4);
            for c in cuts {
                let end = c.offset + c.length;
                // A chunk that ends at the end of what is held may be cut short by it.
                if end == self.pending.len() && !last {
                    break;
                }
                self.table.add(&self.pending[c.offset..end], max);
                used = end;
            }
        } else {
            for c in self.pending.chunks(self.size) {
                if c.len() < self.size && !last {
                    break;
                }
                self.table.add(c, max);
                used += c.len();
            }
        }
        self.pending.drain(..used);
    }
}

/// Accumulates inputs into an [`AnalyzeReport`].
#[derive(Debug)]
pub struct Analyzer {
    opts: AnalyzeOptions,
    predictor: Predictor,
    chunkers: Vec<Chunker>,
    inputs: u64,
    bytes: u64,
    zero_bytes: u64,
    zero_pending: Vec<u8>,
    /// Per rung: (raw bytes stood for, stored bytes, seconds of one thread).
    rungs: Vec<(f64, f64, f64)>,
    sampled: u64,
}

const READ_PIECE: usize = 4 << 20;

impl Analyzer {
    /// An analyser with no input yet.
    pub fn new(opts: AnalyzeOptions) -> Analyzer {
        let chunkers = [false, true]
            .iter()
            .flat_map(|&cdc| {
                CHUNK_SIZES.iter().map(move |&size| Chunker {
                    cdc,
                    size,
                    pending: Vec::new(),
                    table: Table::default(),
                })
            })
            .collect();
        let predictor = Predictor::new(PredictConfig { threads: 1, ..PredictConfig::default() });
        let rungs = vec![(0.0, 0.0, 0.0); opts.rungs.len()];
        Analyzer {
            opts,
            predictor,
            chunkers,
            inputs: 0,
            bytes: 0,
            zero_bytes: 0,
            zero_pending: Vec::new(),
            rungs,
            sampled: 0,
        }
    }

    /// A seekable input of `len` bytes (a file): the compressibility sample is taken from all
    /// of it, then it is read through once for zero blocks and deduplication.
    pub fn add_file<R: Read + Seek>(&mut self, r: &mut R, len: u64) -> Result<()> {
        if len > 0 && !self.opts.rungs.is_empty() {
            let sample = Sample::from_reader(&mut *r, len, &self.opts.sample)?;
            self.add_sample(&sample)?;
        }
        r.seek(SeekFrom::Start(0)).map_err(|e| Error::io("seeking the input", e))?;
        self.stream(r, None).map(|_| ())
    }

    /// An input read once (stdin): the compressibility sample is taken from its first
    /// [`STREAM_PREFIX`] bytes, standing for all of it.
    pub fn add_stream(&mut self, r: &mut dyn Read) -> Result<()> {
        let mut prefix = Vec::new();
        let total = self.stream(r, Some(&mut prefix))?;
        if !prefix.is_empty() && !self.opts.rungs.is_empty() {
            let sample = Sample::from_parts(&[&prefix], total, &self.opts.sample);
            self.add_sample(&sample)?;
        }
        Ok(())
    }

    /// Measure every rung on `sample`, which stands for `sample.data_len` bytes.
    fn add_sample(&mut self, sample: &Sample) -> Result<()> {
        if sample.is_empty() {
            return Ok(());
        }
        let len = sample.data_len as f64;
        self.sampled += sample.bytes();
        for (i, &spec) in self.opts.rungs.iter().enumerate() {
            let (perf, _) = self.predictor.measure(sample, spec)?;
            let r = &mut self.rungs[i];
            r.0 += len;
            r.1 += len / perf.ratio.max(1e-9);
            r.2 += len / perf.speed.max(1.0);
        }
        Ok(())
    }

    /// Read `r` to its end through the zero-block count and the chunkers; keep its first
    /// [`STREAM_PREFIX`] bytes in `prefix` if given. Returns the bytes read.
    fn stream(&mut self, r: &mut dyn Read, mut prefix: Option<&mut Vec<u8>>) -> Result<u64> {
        let mut buf = vec![0u8; READ_PIECE];
        let mut total = 0u64;
        loop {
            let n = match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("reading the input", e)),
            };
            let data = &buf[..n];
            total += n as u64;
            if let Some(p) = prefix.as_deref_mut() {
                let room = STREAM_PREFIX.saturating_sub(p.len()).min(n);
                p.extend_from_slice(&data[..room]);
            }
            self.feed(data, false);
        }
        self.feed(&[], true);
        self.inputs += 1;
        Ok(total)
    }

    fn feed(&mut self, data: &[u8], last: bool) {
        self.bytes += data.len() as u64;
        let max = self.opts.max_table_entries;
        for c in &mut self.chunkers {
            c.feed(data, last, max);
        }
        self.zero_pending.extend_from_slice(data);
        let mut used = 0;
        for b in self.zero_pending.chunks(ZERO_BLOCK) {
            if b.len() < ZERO_BLOCK && !last {
                break;
            }
            if b.iter().all(|&x| x == 0) {
                self.zero_bytes += b.len() as u64;
            }
            used += b.len();
        }
        self.zero_pending.drain(..used);
    }

    /// The report on everything added so far.
    pub fn report(&self) -> AnalyzeReport {
        let threads = if self.opts.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.opts.threads
        };
        let model = WriteModel::new(self.bytes, threads, 1 << 20);
        let link = self.opts.link;
        let rungs: Vec<RungReport> = self
            .opts
            .rungs
            .iter()
            .zip(&self.rungs)
            .filter(|(_, r)| r.0 > 0.0)
            .map(|(spec, &(raw, stored, secs))| {
                let perf = crate::predict::RungPerf::new(raw / secs.max(1e-12), raw / stored);
                RungReport {
                    codec: spec.to_string(),
                    ratio: perf.ratio,
                    speed: perf.speed,
                    write_seconds: model.time_compressed(perf, link),
                }
            })
            .collect();
        let with = rungs.iter().find(|r| r.codec == "zstd:3").or(rungs.first());
        let dedup = self
            .chunkers
            .iter()
            .map(|c| {
                let mut d = c.table.report(if c.cdc { "cdc" } else { "fixed" }, c.size);
                d.combined_ratio = with.map(|w| w.ratio * d.dedup_ratio);
                d
            })
            .collect();
        AnalyzeReport {
            inputs: self.inputs,
            bytes: self.bytes,
            zero_block_share: if self.bytes > 0 {
                self.zero_bytes as f64 / self.bytes as f64
            } else {
                0.0
            },
            sampled_bytes: self.sampled,
            link,
            raw_write_seconds: model.time_raw(link),
            combined_with: with.map(|w| w.codec.clone()),
            rungs,
            entry_bytes: ENTRY_BYTES,
            dedup,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dedup(report: &AnalyzeReport, method: &str, size: usize) -> DedupReport {
        report.dedup.iter().find(|d| d.method == method && d.chunk_size == size).unwrap().clone()
    }

    #[test]
    fn a_sampled_table_estimates_the_ratio_of_a_full_one() {
        // 4000 distinct 4 KiB chunks, each 3 times: a table of 500 entries must sample.
        let mut data = Vec::new();
        for i in 0..4000u32 {
            let c = adz_datagen::generate(adz_datagen::Kind::Random, 4096, u64::from(i));
            for _ in 0..3 {
                data.extend_from_slice(&c);
            }
        }
        let opts = AnalyzeOptions { rungs: vec![], max_table_entries: 500, ..Default::default() };
        let mut a = Analyzer::new(opts);
        a.add_stream(&mut &data[..]).unwrap();
        let d = dedup(&a.report(), "fixed", 4096);
        assert!(d.sample_rate < 1.0 && d.sampled_distinct <= 500, "{d:?}");
        assert!((d.dedup_ratio - 3.0).abs() < 1e-9, "{d:?}");
        assert_eq!(d.chunks, 12_000);
    }

    #[test]
    fn cdc_finds_duplicates_a_one_byte_shift_hides_from_fixed_chunks() {
        let base = adz_datagen::generate(adz_datagen::Kind::Random, 4 << 20, 3);
        let mut data = base.clone();
        data.push(b'x');
        data.extend_from_slice(&base);
        let mut a = Analyzer::new(AnalyzeOptions { rungs: vec![], ..Default::default() });
        a.add_stream(&mut &data[..]).unwrap();
        let r = a.report();
        for size in CHUNK_SIZES {
            let fixed = dedup(&r, "fixed", size);
            let cdc = dedup(&r, "cdc", size);
            assert!(fixed.dedup_ratio < 1.05, "{fixed:?}");
            assert!(cdc.dedup_ratio > 1.9, "{cdc:?}");
        }
        // The file concatenated with itself: 2 for fixed chunks (4 MiB is a multiple of each
        // size); nearly 2 for CDC, whose chunk across the seam is new.
        let twice = base.repeat(2);
        let mut a = Analyzer::new(AnalyzeOptions { rungs: vec![], ..Default::default() });
        a.add_stream(&mut &twice[..]).unwrap();
        let r = a.report();
        for d in &r.dedup {
            let least = if d.method == "fixed" { 2.0 } else { 1.9 };
            assert!(d.dedup_ratio >= least && d.dedup_ratio <= 2.0, "{d:?}");
        }
        assert_eq!(r.zero_block_share, 0.0);
    }
}
