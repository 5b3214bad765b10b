//! `adz mount`: serve a directory or an S3 prefix of adz files as a POSIX file system
//! (docs/MOUNT.md).

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use adz_core::control::{Link, Strategy};
use adz_core::store::LinkSpeed;
use adz_core::WriteOptions;
use anyhow::{bail, Context, Result};
use clap::Args;

/// Set in the daemon that `adz mount` (without --foreground) starts.
const DAEMON_ENV: &str = "ADZ_MOUNT_DAEMON";

pub(crate) const AFTER_HELP: &str = "\
Each NAME.adz in SOURCE appears as NAME with its raw size; other files pass through. Files
written through the mount are compressed when closed or fsynced, and replace the old version
atomically. SOURCE may be s3://BUCKET/PREFIX (directories are prefixes; the --s3-* flags and
AWS_* variables say how to reach it; no symlinks, modes or owners). Unmount with
`fusermount3 -u MOUNTPOINT` or `umount MOUNTPOINT`. See docs/MOUNT.md.";

#[derive(Args)]
pub(crate) struct MountArgs {
    /// Directory holding the adz files, or s3://BUCKET/PREFIX.
    source: String,
    /// Where to mount it (an existing directory).
    mountpoint: PathBuf,
    /// How files written through the mount are compressed (as for compress). Default:
    /// throughput (S1).
    #[arg(short, long, value_name = "STRATEGY")]
    strategy: Option<Strategy>,
    /// The link to storage the adaptive strategies aim at (as for compress).
    #[arg(short, long, default_value = "auto", value_name = "RATE|auto", value_parser = crate::parse_link)]
    link: Link,
    /// Bytes of decoded frames cached for reads, shared by all files (K, M, G suffixes).
    #[arg(long, default_value = "256MiB", value_parser = crate::parse_bytes, value_name = "SIZE")]
    cache: u64,
    /// Raw bytes decoded ahead of a sequential reader, within the cache (at most a quarter of
    /// it); 0 turns read-ahead off.
    #[arg(long, default_value = "16MiB", value_parser = crate::parse_bytes, value_name = "SIZE")]
    read_ahead: u64,
    /// The kernel's read-ahead window for the mount: how much its page cache asks the daemon
    /// for at once while a file is read in order (requests of at most 1 MiB); 0 keeps the
    /// kernel's default (128 KiB). Set as root only (a warning otherwise).
    #[arg(long, default_value = "1MiB", value_parser = crate::parse_bytes, value_name = "SIZE")]
    kernel_read_ahead: u64,
    /// Mount read-only: every change fails with EROFS.
    #[arg(long)]
    read_only: bool,
    /// Stay in the foreground (logs on stderr) until unmounted or interrupted.
    #[arg(short, long)]
    foreground: bool,
    /// Compression threads per file being committed (default: one per core).
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// For evaluation: pace each commit's output to RATE, as `adz compress --throttle`.
    #[arg(long, value_name = "RATE")]
    throttle: Option<LinkSpeed>,
    /// Stage every written file raw and compress it on close or fsync, instead of streaming
    /// files written in order as they are written (for comparison; docs/MOUNT.md).
    #[arg(long)]
    stage_writes: bool,
    /// Where an s3:// mount keeps the raw bytes of files being written: staging files and
    /// the copies of streams (default: $TMPDIR/adz-mount-spool).
    #[arg(long, value_name = "DIR")]
    spool: Option<PathBuf>,
}

pub(crate) fn run(a: MountArgs) -> Result<ExitCode> {
    let s3 = match a.source.starts_with("s3://") {
        true => Some(adz_store::location::parse_s3_prefix(&a.source)?),
        false => None,
    };
    if s3.is_none() && !std::path::Path::new(&a.source).is_dir() {
        bail!("{}: not a directory", a.source);
    }
    if !a.mountpoint.is_dir() {
        bail!("{}: the mount point is not a directory", a.mountpoint.display());
    }
    if !a.foreground && std::env::var_os(DAEMON_ENV).is_none() {
        return daemonize(&a);
    }
    adz_fuse::log_to_stderr();
    let opts = adz_fuse::MountOptions {
        write: WriteOptions {
            strategy: a.strategy.unwrap_or(Strategy::Throughput),
            link: a.link,
            threads: a.threads,
            ..Default::default()
        },
        cache_bytes: a.cache,
        read_ahead_bytes: a.read_ahead,
        kernel_read_ahead_bytes: a.kernel_read_ahead,
        read_only: a.read_only,
        throttle: a.throttle.map(LinkSpeed::bytes_per_sec),
        stream_writes: !a.stage_writes,
        spool: a.spool.clone(),
        ..Default::default()
    };
    let m = match s3 {
        Some((bucket, prefix)) => {
            let store = crate::remote::bucket_store(&bucket)?;
            adz_fuse::mount_store(store, &prefix, &a.source, &a.mountpoint, opts)
        }
        None => adz_fuse::mount(a.source.as_ref(), &a.mountpoint, opts),
    }
    .with_context(|| format!("mounting {} on {}", a.source, a.mountpoint.display()))?;
    // SIGINT and SIGTERM unmount (open files are committed as they close); SIGHUP is ignored,
    // so that a daemon outlives the terminal that started it.
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("installing signal handlers")?;
    let unmounter = m.unmounter();
    std::thread::Builder::new()
        .name("adz-mount-signals".to_owned())
        .spawn(move || {
            for sig in signals.forever() {
                if sig != SIGHUP {
                    if let Err(e) = unmounter.unmount() {
                        eprintln!("adz mount: {e}");
                    }
                }
            }
        })
        .context("starting the signal thread")?;
    m.join().context("serving the mount")?;
    Ok(ExitCode::SUCCESS)
}

/// Start this command again in the background and return once the mount is up (or report
/// why the daemon failed).
fn daemonize(a: &MountArgs) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("finding the adz executable")?;
    let mut child = Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(DAEMON_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .context("starting the mount daemon")?;
    let mountpoint = std::fs::canonicalize(&a.mountpoint)?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Some(status) = child.try_wait()? {
            bail!("the mount daemon exited ({status}) before the mount was up");
        }
        if is_mounted(&mountpoint) {
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    bail!("{} was not mounted after 30 s", a.mountpoint.display())
}

/// Whether `/proc/self/mountinfo` lists `path` as a mount point.
fn is_mounted(path: &std::path::Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else { return false };
    let want = path.to_string_lossy().replace(' ', "\\040");
    info.lines().any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}
