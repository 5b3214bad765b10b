//! Where the CLI reads from and writes to: a path, `-`, or an `s3://bucket/key` URL (see
//! `remote.rs`). Output files are written through adz-store's local storage, so they appear
//! under their name only when complete (temporary name, fsync, rename), and objects through a
//! multipart upload completed on commit; a failed or interrupted command leaves no
//! complete-looking file or object.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use adz_store::location::Location;
use adz_store::{LocalStorage, Storage, Upload};
use anyhow::{bail, Context, Result};

use crate::remote::{self, RemoteInput};

/// An input: a file, standard input, or an object in a bucket.
pub enum Input {
    Stdin,
    File { path: PathBuf, len: u64 },
    Remote(RemoteInput),
}

/// `arg` as a local path, after `file://` is taken off; `None` for an `s3://` URL.
fn local_path(arg: &str) -> Result<Option<PathBuf>> {
    if !Location::is_url(arg) {
        return Ok(Some(PathBuf::from(arg)));
    }
    match Location::parse(arg)? {
        Location::Local(p) => Ok(Some(p)),
        _ => Ok(None),
    }
}

impl Input {
    pub fn open(arg: &str) -> Result<Input> {
        if arg == "-" {
            return Ok(Input::Stdin);
        }
        if let Some((bucket, key)) = remote::s3_location(arg)? {
            return Ok(Input::Remote(RemoteInput::open(arg, &bucket, &key)?));
        }
        let path = local_path(arg)?.expect("not an s3 URL");
        let meta = std::fs::metadata(&path).with_context(|| format!("cannot read {arg}"))?;
        if meta.is_dir() {
            bail!("{arg} is a directory");
        }
        Ok(Input::File { path, len: meta.len() })
    }

    /// Size in bytes, if known (for progress).
    pub fn len(&self) -> Option<u64> {
        match self {
            Input::Stdin => None,
            Input::File { len, .. } => Some(*len),
            Input::Remote(r) => Some(r.len()),
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            Input::Stdin => None,
            Input::File { path, .. } => Some(path),
            Input::Remote(_) => None,
        }
    }

    pub fn reader(&self) -> Result<Box<dyn Read>> {
        Ok(match self {
            Input::Stdin => Box::new(io::stdin().lock()),
            Input::File { path, .. } => Box::new(BufReader::with_capacity(
                1 << 20,
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
            )),
            Input::Remote(r) => r.reader(),
        })
    }

    pub fn describe(&self) -> String {
        match self {
            Input::Stdin => "<stdin>".to_owned(),
            Input::File { path, .. } => path.display().to_string(),
            Input::Remote(r) => r.url().to_owned(),
        }
    }
}

/// Standard output for data: its file descriptor duplicated into a `File` behind a
/// `BufWriter`. `io::stdout()` is line-buffered and searches every write for a newline
/// (`memrchr` was 1.6 % of the CPU profile of a raw 512 MiB `adz compress ... -`), and cuts
/// binary data at its newlines into more writes; writes of a block or more go straight to
/// the descriptor here.
pub fn data_stdout() -> Result<io::BufWriter<File>> {
    use std::os::fd::AsFd;
    if stdout_at_start::was_closed() {
        bail!("standard output is closed; give an output file, or redirect stdout");
    }
    let out = io::stdout();
    out.lock().flush().context("flushing stdout")?;
    let fd = out.as_fd().try_clone_to_owned().context("duplicating stdout")?;
    Ok(io::BufWriter::with_capacity(OUT_BUF, File::from(fd)))
}

/// An output being written: standard output, or an upload that becomes visible on commit.
pub enum Output {
    Stdout(io::BufWriter<File>),
    File {
        upload: Option<Box<dyn Upload>>,
        path: PathBuf,
        buf: Vec<u8>,
        /// Removes the temporary file if a signal stops the process.
        _cleanup: Option<InProgress>,
    },
}

const OUT_BUF: usize = 1 << 20;

impl Output {
    /// Open `arg` for writing: `-` is standard output. An existing file is refused without
    /// `force`.
    pub fn create(arg: &str, force: bool) -> Result<Output> {
        if arg == "-" {
            return Ok(Output::Stdout(data_stdout()?));
        }
        let (upload, path) = file_upload(arg, force, None, false, None)?;
        let cleanup = InProgress::new(&*upload, OnSignal::Remove);
        Ok(Output::File {
            upload: Some(upload),
            path,
            buf: Vec::with_capacity(OUT_BUF),
            _cleanup: cleanup,
        })
    }

    /// Make the output complete: flush, and for a file, commit it under its name.
    pub fn commit(mut self) -> Result<()> {
        self.flush().context("writing the output")?;
        match &mut self {
            Output::Stdout(s) => s.flush().context("writing to stdout"),
            Output::File { upload, path, .. } => {
                let upload = upload.take().expect("upload present until commit");
                upload.commit().with_context(|| format!("cannot complete {}", path.display()))?;
                Ok(())
            }
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Output::Stdout(_) => "<stdout>".to_owned(),
            Output::File { path, .. } => path.display().to_string(),
        }
    }
}

impl Write for Output {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Output::Stdout(s) => s.write(data),
            Output::File { upload, buf, .. } => {
                if buf.len() + data.len() > OUT_BUF && !buf.is_empty() {
                    let up = upload.as_mut().expect("upload present until commit");
                    up.append(buf)?;
                    buf.clear();
                }
                if data.len() >= OUT_BUF {
                    upload.as_mut().expect("upload present until commit").append(data)?;
                } else {
                    buf.extend_from_slice(data);
                }
                Ok(data.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Stdout(s) => s.flush(),
            Output::File { upload, buf, .. } => {
                if !buf.is_empty() {
                    upload.as_mut().expect("upload present until commit").append(buf)?;
                    buf.clear();
                }
                Ok(())
            }
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        // Not committed: abort, so nothing appears under the output name.
        if let Output::File { upload, .. } = self {
            if let Some(up) = upload.take() {
                let _ = up.abort();
            }
        }
    }
}

/// Standard output as an upload: for `compress ... -`. There is nothing to make atomic on a
/// pipe; abort leaves what was written (the reader sees a file without a trailer, which every
/// adz reader rejects as incomplete).
#[derive(Debug)]
pub struct StdoutUpload {
    out: io::BufWriter<File>,
    written: u64,
}

impl StdoutUpload {
    pub fn new() -> Result<StdoutUpload> {
        if io::stdout().is_terminal() {
            bail!("refusing to write compressed data to a terminal; give an output file or redirect stdout");
        }
        Ok(StdoutUpload { out: data_stdout()?, written: 0 })
    }
}

impl Upload for StdoutUpload {
    fn append(&mut self, data: &[u8]) -> adz_store::Result<()> {
        self.out.write_all(data).map_err(|source| adz_store::Error::Io {
            op: "write",
            name: "<stdout>".to_owned(),
            source,
        })?;
        self.written += data.len() as u64;
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }

    fn commit(mut self: Box<Self>) -> adz_store::Result<u64> {
        self.out.flush().map_err(|source| adz_store::Error::Io {
            op: "flush",
            name: "<stdout>".to_owned(),
            source,
        })?;
        Ok(self.written)
    }

    fn abort(self: Box<Self>) -> adz_store::Result<()> {
        Ok(())
    }
}

/// The upload `recover` writes through: a file or object (visible only once committed) or
/// stdout. Its temporary file is removed if a signal stops the process (the input is intact:
/// run it again).
pub fn create_upload(arg: &str, force: bool) -> Result<(Box<dyn Upload>, String)> {
    create_upload_sized(arg, force, None, OnSignal::Remove, None)
}

/// The upload `compress` writes through, for an output of about `expected` bytes (it sizes S3
/// parts), with what a signal does to its temporary file; a local file is flushed to the disk
/// every `sync_every` bytes if given (see `LocalStorage::write_back`).
pub fn create_upload_sized(
    arg: &str,
    force: bool,
    expected: Option<u64>,
    on_signal: OnSignal,
    sync_every: Option<u64>,
) -> Result<(Box<dyn Upload>, String)> {
    if arg == "-" {
        return Ok((Box::new(StdoutUpload::new()?), "<stdout>".to_owned()));
    }
    let (upload, path) = file_upload(arg, force, expected, true, sync_every)?;
    Ok((registered(upload, on_signal), path.display().to_string()))
}

/// `upload`, its temporary file known to the signal handler until it is committed or dropped.
pub fn registered(upload: Box<dyn Upload>, on_signal: OnSignal) -> Box<dyn Upload> {
    match InProgress::new(&*upload, on_signal) {
        Some(guard) => Box::new(Registered { inner: upload, _guard: guard }),
        None => upload,
    }
}

/// An upload whose temporary file the signal handler knows until it is committed or dropped.
#[derive(Debug)]
struct Registered {
    inner: Box<dyn Upload>,
    _guard: InProgress,
}

impl Upload for Registered {
    fn append(&mut self, data: &[u8]) -> adz_store::Result<()> {
        self.inner.append(data)
    }
    fn bytes_written(&self) -> u64 {
        self.inner.bytes_written()
    }
    fn temporary_path(&self) -> Option<&Path> {
        self.inner.temporary_path()
    }
    fn commit(self: Box<Self>) -> adz_store::Result<u64> {
        self.inner.commit()
    }
    fn abort(self: Box<Self>) -> adz_store::Result<()> {
        self.inner.abort()
    }
    fn abandon(self: Box<Self>) -> adz_store::Result<Option<String>> {
        self.inner.abandon()
    }
}

/// An upload for the file `arg` through adz-store's local storage: written under a temporary
/// name, visible under `arg` only once committed; or for an `s3://` object, a multipart
/// upload completed on commit. An existing file or object is refused without `force`.
/// `adz_file`: the output is an adz file, whose temporary file a crash leaves recoverable
/// (named `.NAME.adz-tmp-*`); else it is named `.NAME.adz-incomplete-*`. `sync_every`: a local
/// file is flushed to the disk after every that many bytes.
fn file_upload(
    arg: &str,
    force: bool,
    expected: Option<u64>,
    adz_file: bool,
    sync_every: Option<u64>,
) -> Result<(Box<dyn Upload>, PathBuf)> {
    if let Some((bucket, key)) = remote::s3_location(arg)? {
        let upload = remote::create_upload(arg, &bucket, &key, force, expected)?;
        return Ok((upload, PathBuf::from(arg)));
    }
    let path = local_path(arg)?.expect("not an s3 URL");
    if !force && path.exists() {
        bail!("{arg} already exists; use --force to overwrite it");
    }
    let (store, name) =
        LocalStorage::for_path(&path).with_context(|| format!("cannot write {arg}"))?;
    let store = store.recoverable_temporaries(adz_file).write_back(sync_every);
    let upload = store.create(&name).with_context(|| format!("cannot create {arg}"))?;
    Ok((upload, path))
}

/// What to do with an output's temporary file if a signal (SIGINT, SIGTERM, SIGHUP) stops
/// the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSignal {
    /// Delete it: a decompressed output, a salvage (run again from the intact input).
    Remove,
    /// Keep it if it holds a complete frame (`adz recover` salvages it), and say so; else
    /// delete it.
    KeepIfFrames,
}

/// Temporary files of outputs in progress, for [`clean_up_after_signal`].
static IN_PROGRESS: Mutex<Vec<(u64, PathBuf, OnSignal)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn in_progress() -> std::sync::MutexGuard<'static, Vec<(u64, PathBuf, OnSignal)>> {
    IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner())
}

/// An output's temporary file, known to the signal handler while this lives.
#[derive(Debug)]
pub struct InProgress(u64);

impl InProgress {
    /// Register `upload`'s temporary file (None if it has none: stdout, an object).
    pub fn new(upload: &dyn Upload, on_signal: OnSignal) -> Option<InProgress> {
        let path = upload.temporary_path()?.to_path_buf();
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        in_progress().push((id, path, on_signal));
        Some(InProgress(id))
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        in_progress().retain(|(id, _, _)| *id != self.0);
    }
}

/// After SIGINT, SIGTERM or SIGHUP: delete the temporary files of outputs in progress, except
/// an adz file's that holds a complete frame, which is kept and named on stderr.
pub fn clean_up_after_signal() {
    for (_, path, on_signal) in in_progress().drain(..) {
        if on_signal == OnSignal::KeepIfFrames && holds_a_frame(&path) {
            eprintln!(
                "adz: interrupted; the complete frames written so far are kept in {}: `adz recover {} OUT` salvages them",
                path.display(),
                path.display()
            );
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Does the adz file at `path` begin with a file header and one complete, intact frame?
pub fn holds_a_frame(path: &Path) -> bool {
    let Ok(f) = File::open(path) else { return false };
    let mut scan = adz_core::FrameScanner::new(BufReader::new(f));
    scan.file_header().is_ok() && matches!(scan.next_frame(), Ok(Some(_)))
}

/// Whether standard output was closed when the process started (`adz ... >&-`). The Rust
/// runtime reopens a closed fd 0-2 on /dev/null before `main`, and that looks like any
/// other /dev/null (`stdout=subprocess.DEVNULL` opens it read-write too), so a constructor
/// looks first. Data written there would be lost without a word: commands that write to
/// stdout refuse to run.
pub mod stdout_at_start {
    #[cfg(target_os = "linux")]
    mod check {
        #![allow(unsafe_code)]
        use std::sync::atomic::{AtomicBool, Ordering};

        pub static CLOSED: AtomicBool = AtomicBool::new(false);

        extern "C" fn look() {
            // SAFETY: fcntl(F_GETFD) on a descriptor number only reads the descriptor table;
            // an unused number gives -1 (EBADF).
            let flags = unsafe { libc::fcntl(1, libc::F_GETFD) };
            CLOSED.store(flags == -1, Ordering::Relaxed);
        }

        /// Run by the loader before the Rust runtime starts (ELF `.init_array`).
        #[used]
        #[link_section = ".init_array"]
        static LOOK: extern "C" fn() = look;

        pub fn closed() -> bool {
            CLOSED.load(Ordering::Relaxed)
        }
    }

    /// True if fd 1 was closed when the process started (Linux; elsewhere always false).
    pub fn was_closed() -> bool {
        #[cfg(target_os = "linux")]
        {
            check::closed()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }
}
