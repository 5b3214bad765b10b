//! `adz mount`: a read-write POSIX file system (FUSE) over a directory of adz files, or over
//! a prefix of an object store ([`mount_store`], directories as prefixes).
//!
//! Each regular file `NAME.adz` in the source directory appears as `NAME` with its raw size;
//! other entries pass through. Reads decode only the frames a range needs, through one LRU of
//! decoded frames shared by the whole mount; sequential readers are read ahead. A file written
//! in order from its start streams through the adaptive pipeline while it is written; other
//! changes go to a sparse staging file in `SOURCE/.adz-staging/`, compressed on close or
//! fsync. Either way the new version is a temporary next to `NAME.adz`, renamed over it on
//! close or fsync: a reader of the source never sees a torn file, and a daemon killed
//! mid-write leaves the previous version intact.
//! docs/MOUNT.md says what POSIX behaviour is supported and with which errno each limit fails.
//!
//! ```no_run
//! use adz_fuse::{mount, MountOptions};
//! let m = mount("/data/src".as_ref(), "/mnt/adz".as_ref(), MountOptions::default())?;
//! // ... use /mnt/adz ...
//! m.unmount()?;
//! # Ok::<(), adz_fuse::Error>(())
//! ```

mod fs;

use std::io;
use std::path::{Path, PathBuf};

pub use adz_core::WriteOptions;
pub use fs::AdzFs;

/// Name of the hidden directory in the source that holds the staging files of open writes.
pub const STAGING_DIR: &str = ".adz-staging";

/// Default size of the shared cache of decoded frames.
pub const DEFAULT_CACHE_BYTES: u64 = 256 << 20;

/// Default of [`MountOptions::read_ahead_bytes`].
pub const DEFAULT_READ_AHEAD_BYTES: u64 = 16 << 20;

/// The kernel's read-ahead window for a mount, by default: a whole FUSE request, the most the
/// kernel asks for at once (1 MiB), rather than its default 128 KiB (one request in eight).
pub const DEFAULT_KERNEL_READ_AHEAD_BYTES: u64 = 1 << 20;

/// What can go wrong setting up a mount.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The source directory cannot be used.
    #[error("source {path}: {source}")]
    Source {
        /// The source directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The kernel refused the mount (no /dev/fuse, not root and no fusermount3, a busy
    /// mount point).
    #[error("mounting on {path}: {source}")]
    Mount {
        /// The mount point.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Unmounting failed.
    #[error("unmounting {path}: {source}")]
    Unmount {
        /// The mount point.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The object store cannot be used (unreachable, no such bucket, a bad prefix).
    #[error("source {location}: {source}")]
    Store {
        /// `s3://bucket/prefix`.
        location: String,
        /// Why.
        source: adz_core::store::Error,
    },
    /// Invalid options.
    #[error(transparent)]
    Core(#[from] adz_core::Error),
}

/// How a mount works.
#[derive(Debug, Clone)]
pub struct MountOptions {
    /// How written files are compressed (strategy, link, threads, frame size). Default: S1
    /// (`throughput`) with the link measured (`auto`).
    pub write: WriteOptions,
    /// Bytes of decoded frames kept for later reads, shared by all files.
    pub cache_bytes: u64,
    /// Refuse every change (EROFS); the kernel mount is read-only too.
    pub read_only: bool,
    /// Raw bytes decoded ahead of a sequential reader into the cache, at most a quarter of
    /// `cache_bytes`; 0 turns read-ahead off.
    pub read_ahead_bytes: u64,
    /// The kernel's read-ahead window for the mount (`/sys/class/bdi/MAJ:MIN/read_ahead_kb`,
    /// set once the mount is up; needs root, else a warning is logged); 0 leaves the
    /// kernel's. The page cache asks the daemon for this much at a time, in requests of at
    /// most 1 MiB.
    pub kernel_read_ahead_bytes: u64,
    /// Threads that decode the frames of one read; 0 = one per core.
    pub decode_threads: usize,
    /// Threads that serve kernel requests.
    pub fuse_threads: usize,
    /// For evaluation: pace every commit's output to this many bytes/s, as
    /// `adz compress --throttle` does (a simulated link to storage).
    pub throttle: Option<f64>,
    /// Stream files written in order through the pipeline as they are written (default);
    /// false stages every written file and compresses it on close, as before decision 0042.
    pub stream_writes: bool,
    /// Where the staging files of a mount over an object store go ([`mount_store`]); default
    /// `$TMPDIR/adz-mount-spool`. A local source stages in `SOURCE/.adz-staging`.
    pub spool: Option<PathBuf>,
}

impl Default for MountOptions {
    fn default() -> MountOptions {
        MountOptions {
            write: WriteOptions::default(),
            cache_bytes: DEFAULT_CACHE_BYTES,
            read_only: false,
            read_ahead_bytes: DEFAULT_READ_AHEAD_BYTES,
            kernel_read_ahead_bytes: DEFAULT_KERNEL_READ_AHEAD_BYTES,
            decode_threads: 0,
            fuse_threads: 4,
            throttle: None,
            stream_writes: true,
            spool: None,
        }
    }
}

/// What the read and write paths of a mount have done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MountStats {
    /// Frames decoded because a read needed them.
    pub frames_decoded: u64,
    /// Frames decoded ahead of a sequential reader, before a read asked for them.
    pub frames_read_ahead: u64,
    /// Frames reads found decoded already in the shared cache.
    pub cache_hits: u64,
    /// Bytes written into streams: compressed while the application wrote, never staged.
    pub bytes_streamed: u64,
    /// Streams turned into staging files by a change that could not stream.
    pub stream_fallbacks: u64,
}

/// A mounted file system, served by a background thread. Dropping it unmounts too.
#[derive(Debug)]
pub struct Mount {
    session: Option<fuser::BackgroundSession>,
    mountpoint: PathBuf,
    counters: std::sync::Arc<fs::Counters>,
}

impl Mount {
    /// What the read and write paths have done so far.
    pub fn stats(&self) -> MountStats {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &self.counters;
        MountStats {
            frames_decoded: c.frames_decoded.load(Relaxed),
            frames_read_ahead: c.frames_read_ahead.load(Relaxed),
            cache_hits: c.cache_hits.load(Relaxed),
            bytes_streamed: c.bytes_streamed.load(Relaxed),
            stream_fallbacks: c.stream_fallbacks.load(Relaxed),
        }
    }

    /// The mount point.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Something that can unmount this mount from another thread (a signal handler's).
    pub fn unmounter(&self) -> Unmounter {
        Unmounter { mountpoint: self.mountpoint.clone() }
    }

    /// Wait until the file system is unmounted (`fusermount3 -u`, `umount`, or an
    /// [`Unmounter`]); open files have been flushed when this returns.
    pub fn join(mut self) -> Result<(), Error> {
        let s = self.session.take().expect("a mount has its session until joined");
        s.join().map_err(|source| Error::Unmount { path: self.mountpoint.clone(), source })
    }

    /// Unmount (lazily, as `umount -l`: open files are flushed when they are closed) and
    /// wait for the serving thread to end.
    pub fn unmount(mut self) -> Result<(), Error> {
        let s = self.session.take().expect("a mount has its session until joined");
        s.umount_and_join()
            .map_err(|source| Error::Unmount { path: self.mountpoint.clone(), source })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.umount_and_join();
        }
    }
}

/// Unmounts a [`Mount`] by its path (detaching it, as `umount -l`).
#[derive(Debug, Clone)]
pub struct Unmounter {
    mountpoint: PathBuf,
}

impl Unmounter {
    /// Detach the mount; the [`Mount`]'s [`join`](Mount::join) returns once the kernel has
    /// let go of it.
    pub fn unmount(&self) -> Result<(), Error> {
        nix::mount::umount2(&self.mountpoint, nix::mount::MntFlags::MNT_DETACH).map_err(|e| {
            Error::Unmount { path: self.mountpoint.clone(), source: io::Error::from(e) }
        })
    }
}

/// Mount the adz files of directory `source` on `mountpoint` and serve it from a
/// background thread until the returned [`Mount`] is unmounted or dropped.
pub fn mount(source: &Path, mountpoint: &Path, opts: MountOptions) -> Result<Mount, Error> {
    opts.write.check()?;
    let fs = AdzFs::new(source, &opts)?;
    serve(fs, &source.display().to_string(), mountpoint, &opts)
}

/// Mount the objects of `store` under `prefix` (`""` for all; directories are the prefixes
/// ending in `/`), e.g. an S3 bucket, on `mountpoint`. `label` names the source in messages
/// and in the mount table (`s3://bucket/prefix`). Staging files go to
/// [`MountOptions::spool`]. docs/MOUNT.md says what an object store cannot do.
pub fn mount_store(
    store: std::sync::Arc<dyn adz_core::store::Storage>,
    prefix: &str,
    label: &str,
    mountpoint: &Path,
    opts: MountOptions,
) -> Result<Mount, Error> {
    opts.write.check()?;
    let s3 = fs::S3Source::new(store, prefix, label.trim_end_matches('/').to_owned() + "/")
        .map_err(|source| Error::Store { location: label.to_owned(), source })?;
    let fs = AdzFs::on_store(s3, &opts)?;
    serve(fs, label, mountpoint, &opts)
}

fn serve(fs: AdzFs, label: &str, mountpoint: &Path, opts: &MountOptions) -> Result<Mount, Error> {
    let counters = fs.counters();
    let mut mount_options = vec![
        fuser::MountOption::FSName(format!("adz:{label}")),
        fuser::MountOption::Subtype("adz".to_owned()),
        fuser::MountOption::DefaultPermissions,
    ];
    if opts.read_only {
        mount_options.push(fuser::MountOption::RO);
    }
    let mut config = fuser::Config::default();
    config.mount_options = mount_options;
    // Root mounts for everyone, as a local file system would; permissions are checked by
    // the kernel (default_permissions) against the modes and owners in the source.
    if nix::unistd::geteuid().is_root() {
        config.acl = fuser::SessionACL::All;
    }
    config.n_threads = Some(opts.fuse_threads.max(1));
    let session = fuser::spawn_mount(fs, mountpoint, &config)
        .map_err(|source| Error::Mount { path: mountpoint.to_path_buf(), source })?;
    let m = Mount { session: Some(session), mountpoint: mountpoint.to_path_buf(), counters };
    if opts.kernel_read_ahead_bytes > 0 {
        if let Err(e) = set_kernel_read_ahead(mountpoint, opts.kernel_read_ahead_bytes) {
            log::warn!(
                "{}: the kernel's read-ahead stays at its default: {e}",
                mountpoint.display()
            );
        }
    }
    Ok(m)
}

/// Set the kernel's read-ahead window of the mount on `mountpoint` to `bytes` (in KiB, as
/// the kernel keeps it), through the sysfs file of the mount's backing device.
fn set_kernel_read_ahead(mountpoint: &Path, bytes: u64) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    // The root's attributes come from the daemon, so this waits for the kernel's handshake
    // with it; the handshake's reply would otherwise set the window back to the default.
    let dev = std::fs::metadata(mountpoint)?.dev();
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    let path = format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb");
    std::fs::write(&path, bytes.div_ceil(1024).to_string())
        .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))
}

/// Print this crate's log (damaged frames, failed commits) on stderr as `adz mount: ...`,
/// and only errors of the FUSE library (which warns about every operation a file system
/// leaves to the kernel, such as extended attributes). For a binary; call it once.
pub fn log_to_stderr() {
    struct Stderr;
    impl log::Log for Stderr {
        fn enabled(&self, m: &log::Metadata<'_>) -> bool {
            m.level() <= log::Level::Error
                || (m.target().starts_with("adz_fuse") && m.level() <= log::Level::Info)
        }
        fn log(&self, r: &log::Record<'_>) {
            if self.enabled(r.metadata()) {
                eprintln!("adz mount: {}: {}", r.level().as_str().to_lowercase(), r.args());
            }
        }
        fn flush(&self) {}
    }
    static LOGGER: Stderr = Stderr;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
}
