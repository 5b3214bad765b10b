//! S3-compatible object storage (AWS S3, MinIO, Ceph RGW, S3 gateways) as a [`Storage`].
//!
//! [`S3Storage`] is one bucket. It is built on the `object_store` crate and keeps a small
//! tokio runtime inside, because the [`Storage`] trait is synchronous: each call blocks the
//! calling thread until the request is done, and many threads may call at once.
//!
//! ```no_run
//! use adz_store::s3::{S3Config, S3Storage};
//! use adz_store::Storage;
//!
//! let config = S3Config::from_env()
//!     .endpoint("http://127.0.0.1:9000")
//!     .allow_http(true);
//! let store = S3Storage::new("my-bucket", config)?;
//! let mut upload = store.create("run1/out.adz")?;
//! upload.append(b"...")?;
//! upload.commit()?; // the object appears, whole, only now
//! # Ok::<(), adz_store::Error>(())
//! ```
//!
//! # Writing
//!
//! An [`Upload`] buffers one part; when the part is full it is sent as a part of an S3
//! multipart upload while the writer goes on, with at most [`S3Config::streams`] parts in
//! flight (the next full part waits for the oldest to finish, which is the back-pressure the
//! adz pipeline measures as the link's speed). Memory is at most `streams + 1` parts. Part
//! sizes follow [`PartSizes`]. `commit` sends the last part and completes the upload, which
//! publishes the object atomically; an object smaller than one part is sent with one PUT
//! instead. `abort`, a drop, or a failure aborts the multipart upload: no object appears.
//! A killed process leaves an incomplete multipart upload, which is never visible as an
//! object (a bucket lifecycle rule `AbortIncompleteMultipartUpload` reclaims its space).
//!
//! A failed part is sent again with the same part number (which replaces it) following the
//! [`RetryPolicy`]; whole-object operations are retried by wrapping the store in
//! [`Retrying`](crate::Retrying), which [`S3Storage::retrying`] does.
//!
//! # Reading
//!
//! `get_range` is one ranged GET, `get_tail` one suffix GET (`Range: bytes=-N`), which is how
//! an adz reader finds a file's trailer in one request.

mod errors;
mod parts;
mod upload;

use std::collections::VecDeque;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode,
    PutOptions, PutPayload, RetryConfig,
};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use self::errors::{remote_error, remote_other};
pub use self::parts::{PartSizes, DEFAULT_PART, MAX_PART, MAX_PARTS, MIN_PART};
use self::upload::S3Upload;
pub use self::upload::REQUEST_RATE;
use crate::{
    validate_name, validate_prefix, Error, ObjectMeta, RemoteKind, Result, RetryPolicy, Retrying,
    Storage, Tail, Upload,
};

/// How to reach an S3-compatible store.
///
/// [`S3Config::from_env`] reads the standard AWS variables; the builder methods override them
/// (the CLI's `--s3-endpoint` and `--s3-allow-http`).
#[derive(Clone)]
#[non_exhaustive]
pub struct S3Config {
    /// The endpoint URL, e.g. `http://127.0.0.1:9000`; `None` means AWS S3 in `region`.
    pub endpoint: Option<String>,
    /// The region; `us-east-1` unless set (MinIO accepts any).
    pub region: String,
    /// The access key id.
    pub access_key_id: Option<String>,
    /// The secret access key.
    pub secret_access_key: Option<String>,
    /// A session token for temporary credentials.
    pub session_token: Option<String>,
    /// Allow `http://` endpoints (no TLS). Off unless asked for.
    pub allow_http: bool,
    /// Parts of one upload in flight at once (at least 1).
    pub streams: usize,
    /// A fixed part size; `None` sizes parts from the expected object size ([`PartSizes`]).
    pub part_size: Option<u64>,
    /// How failed parts and whole-object operations are retried.
    pub retry: RetryPolicy,
    /// The time limit of one request (a part upload included).
    pub request_timeout: Duration,
    /// The time limit for opening a connection.
    pub connect_timeout: Duration,
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the secret.
        f.debug_struct("S3Config")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("allow_http", &self.allow_http)
            .field("streams", &self.streams)
            .field("part_size", &self.part_size)
            .finish_non_exhaustive()
    }
}

impl Default for S3Config {
    fn default() -> S3Config {
        S3Config {
            endpoint: None,
            region: "us-east-1".to_owned(),
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            allow_http: false,
            streams: 4,
            part_size: None,
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

impl S3Config {
    /// Reads `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT`), `AWS_REGION` (or `AWS_DEFAULT_REGION`),
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` and `AWS_ALLOW_HTTP`
    /// (`true`/`1`). Nothing else is consulted: no profile files, and no instance metadata
    /// service (credentials must be given).
    pub fn from_env() -> S3Config {
        let var = |names: &[&str]| {
            names.iter().find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
        };
        let d = S3Config::default();
        S3Config {
            endpoint: var(&["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]),
            region: var(&["AWS_REGION", "AWS_DEFAULT_REGION"]).unwrap_or(d.region.clone()),
            access_key_id: var(&["AWS_ACCESS_KEY_ID"]),
            secret_access_key: var(&["AWS_SECRET_ACCESS_KEY"]),
            session_token: var(&["AWS_SESSION_TOKEN"]),
            allow_http: var(&["AWS_ALLOW_HTTP"])
                .is_some_and(|v| matches!(v.trim(), "1" | "true" | "TRUE")),
            ..d
        }
    }

    /// Sets the endpoint URL.
    pub fn endpoint(mut self, url: impl Into<String>) -> S3Config {
        self.endpoint = Some(url.into());
        self
    }

    /// Sets the region.
    pub fn region(mut self, region: impl Into<String>) -> S3Config {
        self.region = region.into();
        self
    }

    /// Sets the access key id and secret.
    pub fn credentials(mut self, key_id: impl Into<String>, secret: impl Into<String>) -> S3Config {
        self.access_key_id = Some(key_id.into());
        self.secret_access_key = Some(secret.into());
        self
    }

    /// Allows or refuses `http://` endpoints.
    pub fn allow_http(mut self, allow: bool) -> S3Config {
        self.allow_http = allow;
        self
    }

    /// Sets how many parts of one upload may be in flight (at least 1).
    pub fn streams(mut self, streams: usize) -> S3Config {
        self.streams = streams.max(1);
        self
    }

    /// Sets a fixed part size (5 MiB ..= 5 GiB).
    pub fn part_size(mut self, bytes: u64) -> S3Config {
        self.part_size = Some(bytes);
        self
    }

    /// Sets the retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> S3Config {
        self.retry = policy;
        self
    }

    /// Sets the time limits of a request and of opening a connection.
    pub fn timeouts(mut self, request: Duration, connect: Duration) -> S3Config {
        self.request_timeout = request;
        self.connect_timeout = connect;
        self
    }
}

fn config_error(msg: String) -> Error {
    Error::Generic { store: "s3", source: msg.into() }
}

struct Shared {
    client: Arc<AmazonS3>,
    runtime: Runtime,
    bucket: String,
    config: S3Config,
}

impl Shared {
    /// Runs `f` on the runtime, blocking this thread. Called from inside some other tokio
    /// runtime (a caller's async code, or a drop there), where blocking is not allowed, it
    /// blocks a helper thread instead of panicking.
    fn block_on<F>(&self, f: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.runtime.block_on(f);
        }
        std::thread::scope(|s| {
            s.spawn(|| self.runtime.block_on(f)).join().expect("the S3 request thread panicked")
        })
    }
}

/// One bucket of an S3-compatible object store. See the [module docs](self).
pub struct S3Storage {
    shared: Arc<Shared>,
}

impl fmt::Debug for S3Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Storage")
            .field("bucket", &self.shared.bucket)
            .field("config", &self.shared.config)
            .finish()
    }
}

impl S3Storage {
    /// Connects to `bucket` as `config` says. No request is sent yet, so a wrong endpoint or
    /// key shows on the first operation.
    pub fn new(bucket: &str, config: S3Config) -> Result<S3Storage> {
        crate::location::check_bucket(bucket)
            .map_err(|reason| config_error(format!("invalid bucket name {bucket:?}: {reason}")))?;
        let (Some(key_id), Some(secret)) = (&config.access_key_id, &config.secret_access_key)
        else {
            return Err(config_error(
                "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".to_owned(),
            ));
        };
        if let Some(endpoint) = &config.endpoint {
            if endpoint.starts_with("http://") && !config.allow_http {
                return Err(config_error(format!(
                    "the endpoint {endpoint} is plain http (no TLS); allow it with --s3-allow-http \
                     (or AWS_ALLOW_HTTP=true)"
                )));
            }
            if !endpoint.starts_with("http://") && !endpoint.starts_with("https://") {
                return Err(config_error(format!(
                    "the endpoint {endpoint:?} is not an http:// or https:// URL"
                )));
            }
        }
        let client_options = ClientOptions::new()
            .with_allow_http(config.allow_http)
            .with_timeout(config.request_timeout)
            .with_connect_timeout(config.connect_timeout);
        // One layer of retries only: ours (per part, and Retrying for whole operations).
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 0,
            retry_timeout: Duration::from_secs(1),
        };
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region(&config.region)
            .with_access_key_id(key_id)
            .with_secret_access_key(secret)
            .with_allow_http(config.allow_http)
            .with_virtual_hosted_style_request(false)
            .with_client_options(client_options)
            .with_retry(retry);
        if let Some(token) = &config.session_token {
            builder = builder.with_token(token);
        }
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint.trim_end_matches('/'));
        }
        let client =
            builder.build().map_err(|e| Error::Generic { store: "s3", source: e.into() })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("adz-s3")
            .enable_all()
            .build()
            .map_err(|e| Error::io("start the S3 client runtime for", bucket, e))?;
        Ok(S3Storage {
            shared: Arc::new(Shared {
                client: Arc::new(client),
                runtime,
                bucket: bucket.to_owned(),
                config,
            }),
        })
    }

    /// This store wrapped in [`Retrying`] with the configured policy: what a program should
    /// use.
    pub fn retrying(self) -> Retrying<S3Storage> {
        let policy = self.shared.config.retry.clone();
        Retrying::new(self, policy)
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.shared.bucket
    }

    /// Begins an upload whose final size is expected to be about `expected` bytes, which
    /// sizes its parts (see [`PartSizes`]); [`Storage::create`] expects nothing.
    pub fn create_sized(&self, name: &str, expected: Option<u64>) -> Result<Box<dyn Upload>> {
        validate_name(name)?;
        let sizes = PartSizes::new(self.shared.config.part_size, expected)?;
        Ok(Box::new(S3Upload::new(Arc::clone(&self.shared), path(name)?, name, sizes)))
    }

    fn block_on<F>(&self, f: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        self.shared.block_on(f)
    }

    fn head(&self, name: &str) -> Result<u64> {
        let p = path(name)?;
        let meta = self
            .block_on(self.shared.client.head(&p))
            .map_err(|e| remote_error("size", name, e))?;
        Ok(meta.size)
    }
}

/// The object_store path of a valid name.
fn path(name: &str) -> Result<Path> {
    Path::parse(name).map_err(|_| Error::InvalidName {
        name: name.to_owned(),
        reason: "the object store cannot represent this name",
    })
}

/// The largest object one `CopyObject` request copies (AWS S3's limit, which MinIO keeps).
const MAX_COPY_OBJECT: u64 = 5 << 30;

impl Storage for S3Storage {
    fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
        self.create_sized(name, None)
    }

    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        validate_name(name)?;
        let p = path(name)?;
        let payload = PutPayload::from(data.to_vec());
        self.block_on(self.shared.client.put(&p, payload))
            .map_err(|e| remote_error("put", name, e))?;
        Ok(())
    }

    /// `PUT` with `If-None-Match: *` (AWS S3 since 2024, MinIO, R2). A store that ignores
    /// the header would overwrite: docs/OBJECT-STORAGE.md lists the stores known to honour it.
    fn put_if_absent(&self, name: &str, data: &[u8]) -> Result<()> {
        validate_name(name)?;
        let p = path(name)?;
        let payload = PutPayload::from(data.to_vec());
        let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
        match self.block_on(self.shared.client.put_opts(&p, payload, opts)) {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                Err(Error::AlreadyExists { name: name.to_owned() })
            }
            Err(object_store::Error::NotImplemented { .. }) => {
                Err(Error::Unsupported { op: "put if absent", name: name.to_owned() })
            }
            Err(e) => Err(remote_error("put if absent", name, e)),
        }
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
        validate_name(name)?;
        if range.start > range.end {
            return Err(Error::InvalidRange { name: name.to_owned(), range });
        }
        if range.start == range.end {
            // S3 cannot express an empty range; the object must still exist and be long enough.
            Error::check_range(name, &range, self.head(name)?)?;
            return Ok(Vec::new());
        }
        let p = path(name)?;
        let opts =
            GetOptions { range: Some(GetRange::Bounded(range.clone())), ..GetOptions::default() };
        let client = &self.shared.client;
        let result = self.block_on(async {
            let r = client.get_opts(&p, opts).await?;
            let size = r.meta.size;
            Ok::<_, object_store::Error>((size, r.bytes().await?))
        });
        match result {
            Ok((size, bytes)) => {
                // S3 answers a range that runs past the end with what there is.
                Error::check_range(name, &range, size)?;
                if bytes.len() as u64 != range.end - range.start {
                    return Err(remote_other("get", name, "the server sent a short range"));
                }
                Ok(bytes.to_vec())
            }
            Err(e) => {
                let err = remote_error("get", name, e);
                if matches!(err, Error::Remote { kind: RemoteKind::Other, .. }) {
                    // Most likely 416, a range that starts past the end: say so precisely.
                    if let Ok(size) = self.head(name) {
                        Error::check_range(name, &range, size)?;
                    }
                }
                Err(err)
            }
        }
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        validate_name(name)?;
        let p = path(name)?;
        let client = &self.shared.client;
        let bytes = self
            .block_on(async { client.get(&p).await?.bytes().await })
            .map_err(|e| remote_error("get", name, e))?;
        Ok(bytes.to_vec())
    }

    fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
        validate_name(name)?;
        if max_len == 0 {
            return Ok(Tail { object_size: self.head(name)?, bytes: Vec::new() });
        }
        let p = path(name)?;
        // A suffix longer than any object reads the whole object (RFC 9110); keep the header
        // within what every server parses.
        let suffix = max_len.min(1 << 62);
        let opts = GetOptions { range: Some(GetRange::Suffix(suffix)), ..GetOptions::default() };
        let client = &self.shared.client;
        let result = self.block_on(async {
            let r = client.get_opts(&p, opts).await?;
            let size = r.meta.size;
            Ok::<_, object_store::Error>((size, r.bytes().await?))
        });
        match result {
            Ok((object_size, bytes)) => {
                if bytes.len() as u64 != max_len.min(object_size) {
                    return Err(remote_other("get", name, "the server sent a short tail"));
                }
                Ok(Tail { object_size, bytes: bytes.to_vec() })
            }
            Err(e) => {
                let err = remote_error("get", name, e);
                // An empty object has no suffix to send (416).
                if matches!(err, Error::Remote { kind: RemoteKind::Other, .. })
                    && self.head(name).ok() == Some(0)
                {
                    return Ok(Tail { object_size: 0, bytes: Vec::new() });
                }
                Err(err)
            }
        }
    }

    fn size(&self, name: &str) -> Result<u64> {
        validate_name(name)?;
        self.head(name)
    }

    fn delete(&self, name: &str) -> Result<()> {
        validate_name(name)?;
        // S3 deletes a missing key without complaint; the trait promises NotFound.
        self.head(name)?;
        let p = path(name)?;
        self.block_on(self.shared.client.delete(&p)).map_err(|e| remote_error("delete", name, e))
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        // object_store lists whole path segments; list the prefix's directory and filter.
        let dir = match prefix.rsplit_once('/') {
            Some((dir, _)) => Some(path(dir)?),
            None => None,
        };
        let client = &self.shared.client;
        let all: Vec<object_store::ObjectMeta> = self
            .block_on(ObjectStore::list(&**client, dir.as_ref()).try_collect())
            .map_err(|e| remote_error("list", prefix, e))?;
        let mut out: Vec<ObjectMeta> = all
            .into_iter()
            .filter(|m| m.location.as_ref().starts_with(prefix))
            .map(|m| {
                ObjectMeta::new(m.location.as_ref(), m.size).with_modified(m.last_modified.into())
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// `CopyObject`, inside the server. S3 copies at most 5 GiB in one request; a larger
    /// object is read and uploaded through this process (object_store has no multipart copy).
    fn copy(&self, from: &str, to: &str) -> Result<()> {
        validate_name(from)?;
        validate_name(to)?;
        // Also what a missing `from` fails with, named, whatever the server's copy says.
        let size = self.head(from)?;
        if from == to {
            return Ok(());
        }
        if size > MAX_COPY_OBJECT {
            return crate::copy_through(self, from, to);
        }
        let (f, t) = (path(from)?, path(to)?);
        self.block_on(self.shared.client.copy(&f, &t)).map_err(|e| remote_error("copy", from, e))
    }

    fn list_with_delimiter(&self, prefix: &str) -> Result<crate::Listing> {
        validate_prefix(prefix)?;
        let dir = match prefix.strip_suffix('/') {
            Some(dir) => Some(path(dir)?),
            None if prefix.is_empty() => None,
            // Not a directory: the plain listing, grouped.
            None => return Ok(crate::Listing::group(prefix, self.list(prefix)?)),
        };
        let client = &self.shared.client;
        let l = self
            .block_on(ObjectStore::list_with_delimiter(&**client, dir.as_ref()))
            .map_err(|e| remote_error("list", prefix, e))?;
        let mut out = crate::Listing {
            objects: l
                .objects
                .into_iter()
                .filter(|m| m.location.as_ref().starts_with(prefix))
                .map(|m| {
                    ObjectMeta::new(m.location.as_ref(), m.size)
                        .with_modified(m.last_modified.into())
                })
                .collect(),
            prefixes: l.common_prefixes.iter().map(|p| format!("{}/", p.as_ref())).collect(),
        };
        out.objects.sort();
        out.prefixes.sort();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_errors_are_clear() {
        let chain = |e: Error| crate::chain_text(&e);
        let no_keys = chain(S3Storage::new("bucket", S3Config::default()).unwrap_err());
        assert!(no_keys.contains("AWS_ACCESS_KEY_ID"), "{no_keys}");
        let http = S3Config::default().credentials("k", "s").endpoint("http://127.0.0.1:1");
        let msg = chain(S3Storage::new("bucket", http.clone()).unwrap_err());
        assert!(msg.contains("--s3-allow-http"), "{msg}");
        assert!(S3Storage::new("bucket", http.clone().allow_http(true)).is_ok());
        assert!(S3Storage::new("Bad_Bucket", http.allow_http(true)).is_err());
    }

    /// A writer bounds the link it does not know yet by the upload's streams (nothing is
    /// sent to make the upload).
    #[test]
    fn an_upload_bounds_its_rate_by_its_streams() {
        let config = S3Config::default()
            .credentials("k", "s")
            .endpoint("http://127.0.0.1:1")
            .allow_http(true);
        for streams in [1, 4, 16] {
            let store = S3Storage::new("bucket", config.clone().streams(streams)).unwrap();
            let upload = store.create("a.adz").unwrap();
            assert_eq!(upload.rate_ceiling(), Some(streams as f64 * REQUEST_RATE));
            upload.abort().unwrap();
        }
    }

    #[test]
    fn usable_from_inside_another_runtime() {
        let config = S3Config::default()
            .credentials("k", "s")
            .endpoint("http://127.0.0.1:1")
            .allow_http(true)
            .retry(RetryPolicy::none());
        let store = S3Storage::new("bucket", config).unwrap();
        let caller = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let _inside = caller.enter();
        // Errors, not "cannot start a runtime from within a runtime" panics.
        assert!(matches!(
            store.size("x"),
            Err(Error::Remote { kind: RemoteKind::Unreachable, .. })
        ));
        let mut upload = store.create_sized("x", None).unwrap();
        upload.append(b"abc").unwrap();
        drop(upload);
        let upload = store.create_sized("x", None).unwrap();
        assert!(upload.commit().is_err());
    }

    #[test]
    fn unreachable_endpoint_fails_fast_and_says_so() {
        // Port 1 on loopback: nothing listens, the connection is refused at once.
        let config = S3Config::default()
            .credentials("k", "s")
            .endpoint("http://127.0.0.1:1")
            .allow_http(true)
            .retry(RetryPolicy::new(3, Duration::from_millis(5)));
        let store = S3Storage::new("bucket", config).unwrap().retrying();
        let start = Instant::now();
        let err = store.size("x").unwrap_err();
        match &err {
            Error::RetriesExhausted { attempts: 3, last, .. } => assert!(
                matches!(**last, Error::Remote { kind: RemoteKind::Unreachable, .. }),
                "{last:?}"
            ),
            other => panic!("expected RetriesExhausted over Unreachable, got {other:?}"),
        }
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
