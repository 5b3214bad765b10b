//! `s3://bucket/key` locations: the S3 flags, opening a bucket, uploads, ranged reading, and
//! `adz ls`.
//!
//! Credentials and the endpoint come from the usual AWS variables (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL`); the flags
//! override the endpoint and allow plain http.
//!
//! Reading goes through the `Storage` trait's ranged reads (`get_range`), several requests in
//! flight, so that the random-access `Reader` can take over the same `Arc<dyn Storage>`.

use std::collections::VecDeque;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use adz_core::FileInfo;
use adz_store::location::{parse_s3_prefix, Location};
use adz_store::{Error as StoreError, Storage, Upload};
use anyhow::{bail, Context, Result};
use clap::Args;

/// Flags for `s3://` locations; they apply to every command.
#[derive(Args, Clone, Debug, Default)]
pub struct S3Args {
    /// The S3 endpoint for s3:// locations, e.g. http://127.0.0.1:9000 for a local MinIO.
    /// Default: $AWS_ENDPOINT_URL, else AWS S3 in $AWS_REGION. Credentials come from
    /// $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (and $AWS_SESSION_TOKEN).
    #[arg(long, global = true, value_name = "URL", help_heading = "Object storage (s3://)")]
    pub s3_endpoint: Option<String>,
    /// Allow an http:// endpoint (no TLS), e.g. a MinIO on this machine. Also $AWS_ALLOW_HTTP.
    #[arg(long, global = true, help_heading = "Object storage (s3://)")]
    pub s3_allow_http: bool,
    /// Requests in flight at once for one s3:// object: parts being uploaded, or ranges being
    /// read. Memory is about (N + 1) x part size.
    #[arg(
        long,
        global = true,
        value_name = "N",
        default_value_t = 4,
        value_parser = clap::value_parser!(u16).range(1..=64),
        help_heading = "Object storage (s3://)"
    )]
    pub streams: u16,
    /// Size of the parts of an s3:// upload, 5M ..= 5G. Default: from the input's size, at
    /// least 8 MiB, so that 10,000 parts hold it (growing for streams of unknown size).
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_part_size,
          help_heading = "Object storage (s3://)")]
    pub part_size: Option<u64>,
}

fn parse_part_size(s: &str) -> Result<u64, String> {
    let bytes = crate::parse_bytes(s)?;
    if !(5 << 20..=5 << 30).contains(&bytes) {
        return Err(format!("S3 parts are 5 MiB ..= 5 GiB, got {s}"));
    }
    Ok(bytes)
}

static ARGS: OnceLock<S3Args> = OnceLock::new();

/// Records the S3 flags for the whole command.
pub fn init(args: S3Args) {
    let _ = ARGS.set(args);
}

fn args() -> S3Args {
    ARGS.get().cloned().unwrap_or_default()
}

/// The tiers configured in `path`, with `--s3-endpoint` and `--s3-allow-http` given to every
/// s3:// tier that does not set its own.
pub(crate) fn load_tiers(path: &std::path::Path) -> Result<adz_tier::TiersConfig> {
    let mut config = adz_tier::TiersConfig::load(path)?;
    let a = args();
    config.s3_defaults(a.s3_endpoint.as_deref(), a.s3_allow_http);
    Ok(config)
}

/// An open bucket: the storage for whole-object operations (with retries) and the way to
/// start uploads.
pub(crate) struct Bucket {
    pub(crate) store: Arc<dyn Storage>,
    #[cfg(feature = "s3")]
    s3: Arc<adz_store::s3::S3Storage>,
}

#[cfg(feature = "s3")]
pub(crate) fn open_bucket(bucket: &str) -> Result<Bucket> {
    use adz_store::s3::{S3Config, S3Storage};
    use adz_store::Retrying;
    let a = args();
    let mut config = S3Config::from_env().streams(usize::from(a.streams));
    if let Some(endpoint) = a.s3_endpoint {
        config = config.endpoint(endpoint);
    }
    if a.s3_allow_http {
        config = config.allow_http(true);
    }
    if let Some(size) = a.part_size {
        config = config.part_size(size);
    }
    let policy = config.retry.clone();
    let s3 = Arc::new(
        S3Storage::new(bucket, config).with_context(|| format!("cannot use bucket {bucket}"))?,
    );
    let store: Arc<dyn Storage> = Arc::new(Retrying::new(Arc::clone(&s3), policy));
    Ok(Bucket { store, s3 })
}

#[cfg(not(feature = "s3"))]
pub(crate) fn open_bucket(_bucket: &str) -> Result<Bucket> {
    bail!("this adz was built without S3 support (cargo feature `s3`)")
}

impl Bucket {
    #[cfg(feature = "s3")]
    fn upload(&self, key: &str, expected: Option<u64>) -> Result<Box<dyn Upload>> {
        Ok(self.s3.create_sized(key, expected)?)
    }

    #[cfg(not(feature = "s3"))]
    fn upload(&self, key: &str, _expected: Option<u64>) -> Result<Box<dyn Upload>> {
        Ok(self.store.create(key)?)
    }
}

/// The store of `bucket` as the S3 flags say, with retries: for `adz dataset`.
pub fn bucket_store(bucket: &str) -> Result<Arc<dyn Storage>> {
    Ok(open_bucket(bucket)?.store)
}

/// `bucket` and `key` of an `s3://` argument; `None` for a local path or `-`.
pub fn s3_location(arg: &str) -> Result<Option<(String, String)>> {
    if !Location::is_url(arg) {
        return Ok(None);
    }
    match Location::parse(arg)? {
        Location::S3 { bucket, key } => Ok(Some((bucket, key))),
        _ => Ok(None),
    }
}

/// Starts an upload to `s3://bucket/key`; refuses to replace an object without `force`.
/// `expected` (the input's size, if known) sizes the parts.
pub fn create_upload(
    url: &str,
    bucket: &str,
    key: &str,
    force: bool,
    expected: Option<u64>,
) -> Result<Box<dyn Upload>> {
    let b = open_bucket(bucket)?;
    if !force {
        match b.store.size(key) {
            Ok(_) => bail!("{url} already exists; use --force to overwrite it"),
            Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot write {url}")),
        }
    }
    b.upload(key, expected).with_context(|| format!("cannot create {url}"))
}

/// An object to read: its store, key and size.
pub struct RemoteInput {
    url: String,
    store: Arc<dyn Storage>,
    key: String,
    len: u64,
}

impl RemoteInput {
    /// Opens `s3://bucket/key` for reading (one HEAD request for its size).
    pub fn open(url: &str, bucket: &str, key: &str) -> Result<RemoteInput> {
        let b = open_bucket(bucket)?;
        let len = match b.store.size(key) {
            Ok(len) => len,
            // A HEAD answers 404 without saying whether the bucket exists; a list does.
            Err(e @ StoreError::NotFound { .. }) => match b.store.list(key) {
                Err(bucket_err @ StoreError::Remote { .. }) => {
                    return Err(bucket_err).with_context(|| format!("cannot read {url}"))
                }
                _ => return Err(e).with_context(|| format!("cannot read {url}")),
            },
            Err(e) => return Err(e).with_context(|| format!("cannot read {url}")),
        };
        Ok(RemoteInput { url: url.to_owned(), store: b.store, key: key.to_owned(), len })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    /// The random-access [`adz_core::Reader`] over this object: the trailer in one suffix
    /// request, then only the frames a read needs (neighbours coalesced), decoded in parallel.
    pub fn open_reader(&self, opts: adz_core::ReaderOptions) -> Result<adz_core::Reader> {
        adz_core::Reader::open(Arc::clone(&self.store), &self.key, opts)
            .with_context(|| format!("cannot read {}", self.url))
    }

    /// A sequential reader with `--streams` ranged requests of 8 MiB in flight.
    pub fn reader(&self) -> Box<dyn Read> {
        Box::new(ReadAhead::new(
            Arc::clone(&self.store),
            self.key.clone(),
            self.len,
            usize::from(args().streams),
        ))
    }

    /// A seekable reader that reads only what is asked for (for the trailer and index).
    pub fn seekable(&self) -> BufReader<RangeReader> {
        BufReader::with_capacity(
            64 << 10,
            RangeReader {
                store: Arc::clone(&self.store),
                key: self.key.clone(),
                len: self.len,
                pos: 0,
            },
        )
    }
}

/// Reads an object by ranged requests: one per `read` call.
pub struct RangeReader {
    store: Arc<dyn Storage>,
    key: String,
    len: u64,
    pos: u64,
}

impl Read for RangeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.len.saturating_sub(self.pos));
        if n == 0 {
            return Ok(0);
        }
        let bytes = self.store.get_range(&self.key, self.pos..self.pos + n)?;
        buf[..bytes.len()].copy_from_slice(&bytes);
        self.pos += bytes.len() as u64;
        Ok(bytes.len())
    }
}

impl Seek for RangeReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

const CHUNK: u64 = 8 << 20;

/// Reads an object front to back with up to `depth` chunk requests in flight.
struct ReadAhead {
    store: Arc<dyn Storage>,
    key: String,
    len: u64,
    /// Where the next chunk to request starts.
    next: u64,
    depth: usize,
    pending: VecDeque<JoinHandle<adz_store::Result<Vec<u8>>>>,
    current: io::Cursor<Vec<u8>>,
}

impl ReadAhead {
    fn new(store: Arc<dyn Storage>, key: String, len: u64, depth: usize) -> ReadAhead {
        let mut r = ReadAhead {
            store,
            key,
            len,
            next: 0,
            depth: depth.max(1),
            pending: VecDeque::new(),
            current: io::Cursor::new(Vec::new()),
        };
        r.fill();
        r
    }

    fn fill(&mut self) {
        while self.pending.len() < self.depth && self.next < self.len {
            let range = self.next..(self.next + CHUNK).min(self.len);
            self.next = range.end;
            let (store, key) = (Arc::clone(&self.store), self.key.clone());
            self.pending.push_back(std::thread::spawn(move || store.get_range(&key, range)));
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.current.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            let Some(handle) = self.pending.pop_front() else { return Ok(0) };
            let chunk =
                handle.join().map_err(|_| io::Error::other("a read-ahead thread panicked"))??;
            self.current = io::Cursor::new(chunk);
            self.fill();
        }
    }
}

/// List objects under an s3:// prefix with their sizes and, for adz files, raw size and ratio.
#[derive(Args)]
pub struct LsArgs {
    /// s3://BUCKET or s3://BUCKET/PREFIX (a plain prefix: s3://b/run lists run1/..., run2/...).
    url: String,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn ls(a: LsArgs) -> Result<ExitCode> {
    let (bucket, prefix) = parse_s3_prefix(&a.url)?;
    let b = open_bucket(&bucket)?;
    let objects = b.store.list(&prefix).with_context(|| format!("cannot list {}", a.url))?;
    let mut out = io::stdout().lock();
    if !a.json {
        writeln!(out, "{:>14} {:>14} {:>7} {:>7}  name", "stored", "raw", "ratio", "frames")?;
    }
    for o in &objects {
        let input = RemoteInput {
            url: format!("s3://{bucket}/{}", o.name),
            store: Arc::clone(&b.store),
            key: o.name.clone(),
            len: o.size,
        };
        // Only the trailer is read; anything that is not an adz file shows no raw size.
        let info = FileInfo::read_seekable(input.seekable(), false).ok();
        if a.json {
            let line = serde_json::json!({
                "name": o.name,
                "url": input.url,
                "stored_bytes": o.size,
                "raw_bytes": info.as_ref().map(|i| i.raw_bytes),
                "ratio": info.as_ref().map(|i| i.ratio),
                "frames": info.as_ref().map(|i| i.frames),
            });
            writeln!(out, "{line}")?;
        } else {
            match &info {
                Some(i) => writeln!(
                    out,
                    "{:>14} {:>14} {:>7.3} {:>7}  {}",
                    o.size, i.raw_bytes, i.ratio, i.frames, o.name
                )?,
                None => {
                    writeln!(out, "{:>14} {:>14} {:>7} {:>7}  {}", o.size, "-", "-", "-", o.name)?
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
