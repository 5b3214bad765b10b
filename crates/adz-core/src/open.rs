//! Opening adz files by path, and the text forms of the writer's options, for every front end:
//! the CLI, the Python module and the C API all parse `--strategy`, `--link`, `--hint`,
//! `--codec` and sizes here, so the three accept exactly the same spellings.
//!
//! [`storage_for`] is the single place that turns a path into a [`Storage`] and an object
//! name: local paths, `file://` URLs and, with the cargo feature `s3`, `s3://bucket/key`
//! objects, so every front end (the Python module, the C API) gets them at once.
//!
//! ```
//! use adz_core::open::{create_writer, open_stream, parse_hint, parse_link, parse_strategy};
//! use adz_core::WriteOptions;
//! use std::io::Read;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("field.adz");
//! let path = path.to_str().unwrap();
//! let opts = WriteOptions {
//!     strategy: parse_strategy("static=zstd:3")?,
//!     link: parse_link("1GbE")?,
//!     hints: vec![parse_hint("dtype=f64")?.1],
//!     threads: 2,
//!     ..Default::default()
//! };
//! let mut w = create_writer(path, opts)?;
//! w.write(&[1u8; 100_000])?;
//! w.finish()?;
//!
//! let mut back = Vec::new();
//! open_stream(path)?.read_to_end(&mut back)?;
//! assert_eq!(back, vec![1u8; 100_000]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{self, Read};
use std::ops::Range;
use std::sync::Arc;

use adz_control::{Hint, Link, Strategy};
use adz_format::{CodecSpec, Filters, MAX_FRAME_RAW_LEN};
use adz_store::location::Location;
use adz_store::{LinkSpeed, LocalStorage, MemoryStorage, Storage};

use crate::{Decoder, Error, Reader, ReaderOptions, Result, WriteOptions, Writer};

/// Text that is not a valid option value. Its message says what was wrong and which forms
/// are accepted, without a prefix, so a command line parser can show it as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Error {
        Error::Config(e.0)
    }
}

/// The storage that holds `path`, and the object name of `path` in it.
///
/// A local path is split into a [`LocalStorage`] rooted at its directory and the file name
/// (see [`LocalStorage::for_path`]), so writes are atomic: a temporary name, fsync, rename on
/// commit. `file:///abs/path` is the same. `s3://bucket/key` (with the cargo feature `s3`)
/// is an S3-compatible object, configured from the environment as for the CLI
/// (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`, `AWS_ALLOW_HTTP`; see `adz_store::s3::S3Config::from_env`), with
/// retries of transient errors; an upload is committed only when the writer finishes.
/// Without the feature, and for any other scheme, a URL is refused rather than written as a
/// local file named `s3:`.
pub fn storage_for(path: &str) -> Result<(Arc<dyn Storage>, String)> {
    if path.is_empty() {
        return Err(Error::Config("the path is empty".to_owned()));
    }
    if Location::is_url(path) {
        match Location::parse(path).map_err(|e| Error::Config(e.to_string()))? {
            Location::Local(p) => {
                let (store, name) = LocalStorage::for_path(p)?;
                return Ok((Arc::new(store), name));
            }
            Location::S3 { bucket, key } => return s3_storage(path, &bucket, key),
            _ => return Err(Error::Config(format!("{path}: not a file or object location"))),
        }
    }
    let (store, name) = LocalStorage::for_path(path)?;
    Ok((Arc::new(store), name))
}

#[cfg(feature = "s3")]
fn s3_storage(_url: &str, bucket: &str, key: String) -> Result<(Arc<dyn Storage>, String)> {
    use adz_store::s3::{S3Config, S3Storage};
    use adz_store::Retrying;
    let config = S3Config::from_env();
    let policy = config.retry.clone();
    let s3 = S3Storage::new(bucket, config)?;
    Ok((Arc::new(Retrying::new(Arc::new(s3), policy)), key))
}

#[cfg(not(feature = "s3"))]
fn s3_storage(url: &str, _bucket: &str, _key: String) -> Result<(Arc<dyn Storage>, String)> {
    Err(Error::Config(format!(
        "{url}: s3:// needs adz built with the cargo feature `s3`; give a local path"
    )))
}

/// Create the adz file `path` and start the adaptive pipeline writing it. Nothing is visible
/// under `path` until [`Writer::finish`] succeeds; an existing file is replaced then.
pub fn create_writer(path: &str, opts: WriteOptions) -> Result<Writer> {
    let (store, name) = storage_for(path)?;
    Writer::create(&*store, &name, opts)
}

/// Open the adz file `path` for random access ([`Reader`]: reads decode only the frames a
/// range overlaps, every checksum checked). Costs one storage request for the trailer.
///
/// A file whose trailer is missing or damaged (its writer died) is refused with
/// [`Error::Format`]; `adz recover` (or [`crate::recover()`]) salvages its complete frames.
pub fn open_reader(path: &str, opts: ReaderOptions) -> Result<Reader> {
    let (store, name) = storage_for(path)?;
    Reader::open(store, &name, opts)
}

/// True if `e` says a file has no usable trailer (footer magic wrong, or the file too short
/// for one): what a writer that died leaves. Front ends add the hint to run `adz recover`.
pub fn is_missing_trailer(e: &Error) -> bool {
    use adz_format::Error as F;
    match e {
        Error::Format(F::BadMagic { what, .. }) => what.starts_with("footer"),
        Error::Format(F::Truncated { what, .. }) => what == "trailer",
        _ => false,
    }
}

/// Decode the adz file `path` from its start, checking every checksum (a sequential reader,
/// for callers that only stream; [`open_reader`] gives random access).
pub fn open_stream(path: &str) -> Result<Decoder<StorageRead>> {
    let (store, name) = storage_for(path)?;
    Ok(Decoder::new(StorageRead::new(store, name)?))
}

/// Compress `data` into a complete adz file in memory, through the same pipeline as a file
/// write (for codecs that store chunks, such as the Python numcodecs codec).
pub fn compress_to_vec(data: &[u8], opts: WriteOptions) -> Result<Vec<u8>> {
    let store = MemoryStorage::new();
    let mut w = Writer::create(&store, "chunk.adz", opts)?;
    w.write(data)?;
    w.finish()?;
    Ok(store.get("chunk.adz")?)
}

/// Decompress a complete adz file held in memory, checking every checksum. `limit` bounds the
/// output: a file that decodes to more is refused before it is decoded further.
pub fn decompress_slice(file: &[u8], limit: Option<u64>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut dec = Decoder::new(file);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match dec.read(&mut buf) {
            Ok(n) => n,
            Err(e) => {
                // The decoder wraps its typed error in an io::Error: unwrap it again.
                let kind = e.kind();
                return Err(match e.into_inner() {
                    Some(inner) => match inner.downcast::<Error>() {
                        Ok(typed) => *typed,
                        Err(other) => Error::io("decoding", io::Error::new(kind, other)),
                    },
                    None => Error::io("decoding", io::Error::from(kind)),
                });
            }
        };
        if n == 0 {
            return Ok(out);
        }
        if limit.is_some_and(|l| (out.len() + n) as u64 > l) {
            return Err(Error::Config(format!(
                "the data decodes to more than the {} bytes allowed",
                limit.unwrap_or(0)
            )));
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// A `Read` over an object of any [`Storage`], in ranged reads of 4 MiB.
#[derive(Debug)]
pub struct StorageRead {
    store: Arc<dyn Storage>,
    name: String,
    size: u64,
    pos: u64,
    buf: Vec<u8>,
    buf_pos: usize,
}

const READ_CHUNK: u64 = 4 << 20;

impl StorageRead {
    /// Read object `name` of `store` from its start.
    pub fn new(store: Arc<dyn Storage>, name: String) -> Result<StorageRead> {
        let size = store.size(&name)?;
        Ok(StorageRead { store, name, size, pos: 0, buf: Vec::new(), buf_pos: 0 })
    }
}

impl Read for StorageRead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.buf_pos == self.buf.len() {
            if self.pos >= self.size {
                return Ok(0);
            }
            let end = (self.pos + READ_CHUNK).min(self.size);
            self.buf = self
                .store
                .get_range(&self.name, self.pos..end)
                .map_err(|e| io::Error::other(Error::from(e)))?;
            if self.buf.is_empty() {
                return Ok(0);
            }
            self.pos += self.buf.len() as u64;
            self.buf_pos = 0;
        }
        let n = out.len().min(self.buf.len() - self.buf_pos);
        out[..n].copy_from_slice(&self.buf[self.buf_pos..self.buf_pos + n]);
        self.buf_pos += n;
        Ok(n)
    }
}

/// A strategy: `throughput` (`s1`), `keep-pace` (`s2`), `prolong=F` (`s3=F`), `archive`,
/// `static=CODEC:LEVEL`.
pub fn parse_strategy(s: &str) -> Result<Strategy, ParseError> {
    s.parse().map_err(|e: adz_control::Error| ParseError(e.to_string()))
}

/// One codec and level: `none`, `lz4[:ACCEL]`, `lz4hc[:L]`, `zstd[:L]`, `xz[:L]`.
pub fn parse_codec(s: &str) -> Result<CodecSpec, ParseError> {
    s.parse().map_err(|e: adz_format::Error| ParseError(e.to_string()))
}

/// `auto` or a rate (`1GbE`, `10GbE`, `500MB/s`, `25Gbit/s`, ...).
pub fn parse_link(s: &str) -> Result<Link, ParseError> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(Link::Auto);
    }
    s.parse::<LinkSpeed>()
        .map(|l| Link::Fixed(l.bytes_per_sec()))
        .map_err(|e| ParseError(e.to_string()))
}

/// `1234`, `64K`, `1M`, `2G`, `1T` (binary units; `KiB`, `MB` ... are accepted as the same) as a
/// byte count.
pub fn parse_bytes(s: &str) -> Result<u64, ParseError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| ParseError(format!("{s:?} is not a size (e.g. 4096, 64K, 1MiB)")))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(ParseError(format!(
                "unknown unit in {s:?}; use K, M, G or T (binary), e.g. 64K, 1MiB"
            )))
        }
    };
    n.checked_mul(mult).ok_or_else(|| ParseError(format!("{s:?} is too large")))
}

/// A block size: a byte count (see [`parse_bytes`]) of 1 byte ..= 64 MiB.
pub fn parse_block_size(s: &str) -> Result<u32, ParseError> {
    let bytes = parse_bytes(s)?;
    check_block_size(bytes)
        .map_err(|_| ParseError(format!("block size must be 1 byte ..= 64 MiB, got {s}")))
}

/// A block size in bytes, checked to be 1 ..= 64 MiB.
pub fn check_block_size(bytes: u64) -> Result<u32, ParseError> {
    if bytes == 0 || bytes > u64::from(MAX_FRAME_RAW_LEN) {
        return Err(ParseError(format!("block size must be 1 byte ..= 64 MiB, got {bytes}")));
    }
    Ok(bytes as u32)
}

/// A hint, for the whole file or a range: `HINT`, `HINT@START..END`, or
/// `no-compress=START..END` (sizes as in [`parse_bytes`]).
pub fn parse_hint(s: &str) -> Result<(Option<Range<u64>>, Hint), ParseError> {
    let range = |r: &str| -> Result<Range<u64>, ParseError> {
        let (a, b) = r
            .split_once("..")
            .ok_or_else(|| ParseError(format!("{r:?} is not a range START..END")))?;
        let (a, b) = (parse_bytes(a)?, parse_bytes(b)?);
        if a >= b {
            return Err(ParseError(format!("the range {r:?} is empty")));
        }
        Ok(a..b)
    };
    let (hint, r) = match (s.split_once('@'), s.strip_prefix("no-compress=")) {
        (Some((h, r)), _) => (h, Some(range(r)?)),
        (None, Some(r)) => ("no-compress", Some(range(r)?)),
        (None, None) => (s, None),
    };
    let hint: Hint = hint.parse().map_err(|e: adz_control::Error| ParseError(e.to_string()))?;
    if r.is_some() && matches!(hint, Hint::ReadsPerWrite(_)) {
        return Err(ParseError(
            "reads-per-write is about the whole file; it takes no @START..END".to_owned(),
        ));
    }
    Ok((r, hint))
}

/// A filter chain, applied in order: `shuffle:8,xor:8`, `delta:4`, `bitshuffle:4`, `none`.
pub fn parse_filters(s: &str) -> Result<Filters, ParseError> {
    s.parse().map_err(|e: adz_format::Error| ParseError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_units() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("64K").unwrap(), 64 << 10);
        assert_eq!(parse_bytes("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_bytes(" 2g ").unwrap(), 2 << 30);
        assert!(parse_bytes("1X").unwrap_err().0.contains("unknown unit"));
        assert!(parse_bytes("99999999999T").unwrap_err().0.contains("too large"));
        assert!(parse_block_size("0").is_err());
        assert!(parse_block_size("65M").is_err());
        assert_eq!(parse_block_size("64M").unwrap(), 64 << 20);
    }

    #[test]
    fn links_strategies_codecs() {
        assert_eq!(parse_link("AUTO").unwrap(), Link::Auto);
        assert_eq!(parse_link("1GbE").unwrap(), Link::Fixed(117e6));
        assert!(parse_link("fast").is_err());
        assert_eq!(parse_strategy("s2").unwrap(), Strategy::KeepPace);
        assert!(parse_strategy("fastest").unwrap_err().0.contains("throughput"));
        assert_eq!(parse_codec("zstd:5").unwrap().to_string(), "zstd:5");
        assert!(parse_codec("gzip").is_err());
    }

    #[test]
    fn hints_with_ranges() {
        assert_eq!(parse_hint("hot").unwrap(), (None, Hint::Hot));
        assert_eq!(parse_hint("no-compress=1K..2K").unwrap(), (Some(1024..2048), Hint::NoCompress));
        let (r, h) = parse_hint("dtype=f64@0..1M").unwrap();
        assert_eq!((r, h.to_string()), (Some(0..1 << 20), "dtype=f64".to_owned()));
        assert!(parse_hint("hot@5..5").unwrap_err().0.contains("empty"));
        assert_eq!(parse_filters("shuffle:8,xor:8").unwrap().to_string(), "shuffle:8,xor:8");
        assert!(parse_filters("delta:3").is_err());
        assert!(parse_filters("shuffle:0").is_err()); // element sizes are 1..=255
        assert_eq!(parse_filters("xor:4,bitshuffle:4").unwrap().to_string(), "xor:4,bitshuffle:4");
        assert!(parse_filters("bitshuffle:256").is_err());
        assert!(parse_hint("reads-per-write=4@0..10").unwrap_err().0.contains("whole file"));
    }

    #[test]
    fn urls_are_refused_not_written_as_files() {
        let e = storage_for("gopher://host/key.adz").unwrap_err().to_string();
        assert!(e.contains("gopher"), "{e}");
        assert!(storage_for("s3://bucket").is_err(), "no key");
        #[cfg(not(feature = "s3"))]
        {
            let e = storage_for("s3://bucket/key.adz").unwrap_err().to_string();
            assert!(e.contains("feature `s3`"), "{e}");
        }
        assert!(storage_for("").is_err());
    }

    #[test]
    fn file_urls_are_local_paths() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("u.adz");
        let url = format!("file://{}", path.display());
        let mut w = create_writer(&url, WriteOptions { threads: 1, ..Default::default() }).unwrap();
        w.write(b"through a file URL").unwrap();
        w.finish().unwrap();
        let r = open_reader(path.to_str().unwrap(), ReaderOptions::default()).unwrap();
        assert_eq!(r.read_range(0, 100).unwrap(), b"through a file URL");
    }

    #[test]
    fn write_then_stream_then_memory_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.adz");
        let path = path.to_str().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let opts = WriteOptions { threads: 2, block_size: 65536, ..Default::default() };
        let mut w = create_writer(path, opts.clone()).unwrap();
        w.write(&data).unwrap();
        w.finish().unwrap();
        let mut back = Vec::new();
        open_stream(path).unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back, data);

        let file = compress_to_vec(&data, opts).unwrap();
        assert_eq!(decompress_slice(&file, None).unwrap(), data);
        assert!(decompress_slice(&file, Some(1000)).is_err());
        let mut bad = file.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x40;
        assert!(decompress_slice(&bad, None).is_err());
        assert!(matches!(open_stream(&format!("{path}.missing")), Err(Error::Store(_))));

        let r = open_reader(path, ReaderOptions::default()).unwrap();
        assert_eq!(r.len(), data.len() as u64);
        assert_eq!(r.read_range(123_456, 70_000).unwrap(), &data[123_456..193_456]);
        assert!(matches!(
            open_reader(&format!("{path}.missing"), ReaderOptions::default()),
            Err(Error::Store(_))
        ));
        // A file cut short (no trailer) is a format error, not a short read.
        let cut = dir.path().join("cut.adz");
        std::fs::write(&cut, &file[..file.len() - 20]).unwrap();
        assert!(matches!(
            open_reader(cut.to_str().unwrap(), ReaderOptions::default()),
            Err(ref e @ Error::Format(_)) if is_missing_trailer(e)
        ));
    }
}
