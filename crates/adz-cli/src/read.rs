//! Reading back: `adz cat` (a byte range), `adz recover` (salvage a file whose writer died),
//! and the parallel random-access path of `adz decompress` for seekable files.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::ops::Range;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use adz_core::store::{self, ObjectMeta, Storage, Tail, Upload};
use adz_core::{
    decode_stream, recover_sized, recover_stream, Decoder, ReadStats, Reader, ReaderOptions,
};
use anyhow::{bail, Context, Result};
use clap::Args;

use crate::io::{Input, Output};
use crate::progress;

/// Flags `decompress` shares with `cat`.
#[derive(Args)]
pub struct ReadArgs {
    /// Decoding threads for a file (default: one per core). Frames are decoded in parallel
    /// and written in order. Standard input is decoded as a stream on one thread.
    #[arg(short = 'T', long, default_value_t = 0, value_name = "N")]
    pub threads: usize,
    /// Print what was read to stderr: frames and bytes decoded, cache hits, storage requests.
    #[arg(long)]
    pub stats: bool,
}

#[derive(Args)]
#[command(after_help = "\
Examples:
  adz cat data.adz --offset 1G --length 4K      4 KiB at 1 GiB: decodes one frame (two if the
                                                range crosses a frame end)
  adz cat data.adz -o 100M | head -c 1000       a closed pipe is not an error
  adz cat --stats data.adz -o 0 -n 10 > /dev/null   what was decoded and fetched")]
pub struct CatArgs {
    /// adz file, or - for stdin (read forward: the bytes before OFFSET are decoded and
    /// skipped).
    file: String,
    /// First raw byte to print. Accepts K, M, G suffixes (binary), e.g. 1G.
    #[arg(short, long, default_value = "0", value_parser = parse_offset, value_name = "OFFSET")]
    offset: u64,
    /// Raw bytes to print (fewer at the end of the file). Default: to the end.
    #[arg(short = 'n', long, value_parser = parse_offset, value_name = "LENGTH")]
    length: Option<u64>,
    /// Bytes of decoded frames to cache (K, M, G suffixes). Only frames the range needs are
    /// decoded, each once.
    #[arg(long, default_value = "64M", value_parser = parse_offset, value_name = "SIZE")]
    cache: u64,
    #[command(flatten)]
    read: ReadArgs,
}

#[derive(Args)]
#[command(after_help = "\
A file is kept up to the first frame that fails any check (a torn last frame, a damaged
frame): every kept frame is one its writer wrote completely, and the output decompresses to
exactly the first bytes that were written. The report says what was kept and what was lost.

Examples:
  adz recover run.adz saved.adz                      a file whose trailer is missing or damaged
  adz recover .run.adz.adz-tmp-4242-0 run.adz        what a killed `adz compress` left behind
  adz recover --json cut.adz saved.adz               the report as JSON")]
pub struct RecoverArgs {
    /// The damaged or incomplete adz file (a file whose writer died, or the temporary file
    /// `.NAME.adz-tmp-PID-N` a killed `adz compress` leaves), or - for stdin.
    broken: String,
    /// Where to write the recovered file, or - for stdout.
    output: String,
    /// Overwrite OUTPUT if it exists.
    #[arg(short, long)]
    force: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
    /// Print the report as JSON on stdout (OUTPUT must then be a file).
    #[arg(long)]
    json: bool,
}

impl RecoverArgs {
    /// Whether the command writes to stdout (the salvage, or the JSON report).
    pub fn writes_stdout(&self) -> bool {
        self.output == "-" || self.json
    }
}

fn parse_offset(s: &str) -> Result<u64, String> {
    crate::parse_bytes(s)
}

/// A single local file as a read-only [`Storage`], for the [`Reader`]. Any file name works
/// (a `LocalStorage` refuses names it would use for its own temporary files), and reads are
/// positional, so threads do not share a file position.
#[derive(Debug)]
struct FileSource {
    file: File,
    size: u64,
    /// Serialises seek + read where positional reads are not available.
    #[cfg_attr(unix, allow(dead_code))]
    lock: Mutex<()>,
}

impl FileSource {
    fn open(path: &Path) -> Result<FileSource> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let size =
            file.metadata().with_context(|| format!("cannot read {}", path.display()))?.len();
        Ok(FileSource { file, size, lock: Mutex::new(()) })
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
        }
        #[cfg(not(unix))]
        {
            use std::io::{Seek, SeekFrom};
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let mut f = &self.file;
            f.seek(SeekFrom::Start(offset))?;
            f.read_exact(buf)
        }
    }
}

impl Storage for FileSource {
    fn create(&self, name: &str) -> store::Result<Box<dyn Upload>> {
        let e = io::Error::new(io::ErrorKind::PermissionDenied, "read-only source");
        Err(store::Error::Io { op: "create", name: name.to_owned(), source: e })
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> store::Result<Vec<u8>> {
        store::Error::check_range(name, &range, self.size)?;
        let len = usize::try_from(range.end - range.start).map_err(|_| store::Error::Io {
            op: "read",
            name: name.to_owned(),
            source: io::Error::new(io::ErrorKind::OutOfMemory, "range too large"),
        })?;
        let mut buf = vec![0; len];
        self.read_exact_at(&mut buf, range.start).map_err(|source| store::Error::Io {
            op: "read",
            name: name.to_owned(),
            source,
        })?;
        Ok(buf)
    }

    fn get_tail(&self, name: &str, max_len: u64) -> store::Result<Tail> {
        let start = self.size.saturating_sub(max_len);
        Ok(Tail { object_size: self.size, bytes: self.get_range(name, start..self.size)? })
    }

    fn size(&self, _name: &str) -> store::Result<u64> {
        Ok(self.size)
    }

    fn delete(&self, name: &str) -> store::Result<()> {
        let e = io::Error::new(io::ErrorKind::PermissionDenied, "read-only source");
        Err(store::Error::Io { op: "delete", name: name.to_owned(), source: e })
    }

    fn list(&self, _prefix: &str) -> store::Result<Vec<ObjectMeta>> {
        Ok(Vec::new())
    }
}

/// A [`Reader`] over a regular file, or `None` if `path` is not one (a pipe, a device):
/// those are read as streams.
fn open_reader(path: &Path, opts: ReaderOptions) -> Result<Option<Reader>> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        return Ok(None);
    }
    let src = FileSource::open(path)?;
    let name = path.display().to_string();
    match Reader::open(Arc::new(src), &name, opts) {
        Ok(reader) => Ok(Some(reader)),
        Err(e) => {
            use adz_core::format::Error as F;
            let no_trailer = match &e {
                adz_core::Error::Format(F::BadMagic { what, .. }) => what.starts_with("footer"),
                adz_core::Error::Format(F::Truncated { what, .. }) => what == "trailer",
                _ => false,
            };
            let hint = if no_trailer {
                format!("; if its writer died, `adz recover {name} OUT` keeps its complete frames")
            } else {
                String::new()
            };
            Err(anyhow::Error::new(e).context(format!("cannot read {name}{hint}")))
        }
    }
}

fn print_stats(what: &str, s: &ReadStats) {
    eprintln!(
        "{what}: {} frames decoded ({} bytes), {} cache hits, {} storage reads ({} bytes)",
        s.frames_decoded, s.bytes_decoded, s.cache_hits, s.fetches, s.bytes_fetched
    );
}

/// Counts bytes on their way to the output, for the progress bar.
struct Progress<'a, W> {
    out: W,
    pb: &'a indicatif::ProgressBar,
}

impl<W: Write> Write for Progress<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.pb.inc(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// What `decompress` did.
pub struct Decompressed {
    pub frames: u64,
    pub raw_bytes: u64,
}

/// Decompress `input` to `output`: a regular file with the parallel reader, anything else as
/// a checked stream. Leaves committing `output` to the caller.
pub fn decompress_to(
    input: &Input,
    output: &mut Output,
    args: &ReadArgs,
    quiet: bool,
) -> Result<Decompressed> {
    let opts = ReaderOptions { threads: args.threads, ..Default::default() };
    let reader = match input {
        Input::Remote(r) => Some(r.open_reader(opts)?),
        _ => match input.path() {
            Some(path) => open_reader(path, opts)?,
            None => None,
        },
    };
    let Some(reader) = reader else {
        let pb = progress::bar(input.len(), quiet, "decompress");
        let stats = decode_stream(input.reader()?, &mut *output, |pos| pb.set_position(pos))
            .with_context(|| format!("decompressing {}", input.describe()))?;
        pb.finish_and_clear();
        if args.stats {
            let s = ReadStats {
                frames_decoded: stats.frames,
                bytes_decoded: stats.raw_bytes,
                bytes_fetched: stats.stored_bytes,
                ..Default::default()
            };
            print_stats(&input.describe(), &s);
        }
        return Ok(Decompressed { frames: stats.frames, raw_bytes: stats.raw_bytes });
    };
    let pb = progress::bar(Some(reader.len()), quiet, "decompress");
    let written = reader
        .copy_to(Progress { out: &mut *output, pb: &pb }, args.threads)
        .with_context(|| format!("decompressing {}", input.describe()))?;
    pb.finish_and_clear();
    let s = reader.stats();
    if args.stats {
        print_stats(&input.describe(), &s);
    }
    Ok(Decompressed { frames: s.frames_decoded, raw_bytes: written })
}

pub fn cat(a: CatArgs) -> Result<ExitCode> {
    if let Some(code) = crate::dataset::cat_if_dataset(&a.file, a.offset, a.length, a.read.threads)?
    {
        return Ok(code);
    }
    let input = Input::open(&a.file)?;
    let mut out = crate::io::data_stdout()?;
    let opts =
        ReaderOptions { threads: a.read.threads, cache_bytes: a.cache, ..Default::default() };
    let reader = match (&input, input.path()) {
        (Input::Remote(r), _) => Some(r.open_reader(opts)?),
        (_, Some(path)) => open_reader(path, opts)?,
        (_, None) => None,
    };
    let Some(reader) = reader else {
        return cat_stream(&input, a.offset, a.length, a.read.stats, &mut out);
    };
    // Even an empty or out-of-range read fails on a file that is not adz.
    reader.check_header().with_context(|| format!("reading {}", input.describe()))?;
    let end = match a.length {
        Some(n) => a.offset.saturating_add(n).min(reader.len()),
        None => reader.len(),
    };
    if a.offset == 0 && end == reader.len() {
        reader
            .copy_to(&mut out, a.read.threads)
            .with_context(|| format!("reading {}", input.describe()))?;
    } else {
        // In pieces, so memory stays bounded whatever the length; each piece's frames are
        // decoded in parallel.
        const PIECE: usize = 16 << 20;
        let mut buf = vec![0u8; PIECE.min(end.saturating_sub(a.offset) as usize)];
        let mut pos = a.offset;
        while pos < end {
            let n = ((end - pos) as usize).min(buf.len());
            let got = reader
                .read_at(pos, &mut buf[..n])
                .with_context(|| format!("reading {} at offset {pos}", input.describe()))?;
            if got == 0 {
                break;
            }
            out.write_all(&buf[..got]).context("writing to stdout")?;
            pos += got as u64;
        }
    }
    out.flush().context("writing to stdout")?;
    if a.read.stats {
        print_stats(&input.describe(), &reader.stats());
    }
    Ok(ExitCode::SUCCESS)
}

/// `cat` of a stream: decode forward, skip to the offset, copy the range.
fn cat_stream(
    input: &Input,
    offset: u64,
    length: Option<u64>,
    stats: bool,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let mut dec = Decoder::new(input.reader()?);
    let skipped = io::copy(&mut (&mut dec).take(offset), &mut io::sink())
        .with_context(|| format!("reading {}", input.describe()))?;
    let mut copied = 0;
    if skipped == offset {
        let mut range: Box<dyn Read> = match length {
            Some(n) => Box::new((&mut dec).take(n)),
            None => Box::new(&mut dec),
        };
        copied =
            copy_out(&mut range, out).with_context(|| format!("reading {}", input.describe()))?;
    }
    out.flush().context("writing to stdout")?;
    if stats {
        eprintln!(
            "{}: read as a stream (every frame up to the range decoded): {skipped} bytes skipped, {copied} printed",
            input.describe()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `io::copy`, but a failed write is reported as such (so a closed pipe is recognised).
fn copy_out(src: &mut dyn Read, out: &mut impl Write) -> Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0;
    loop {
        let k = match src.read(&mut buf) {
            Ok(0) => return Ok(n),
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        out.write_all(&buf[..k]).context("writing to stdout")?;
        n += k as u64;
    }
}

pub fn recover(a: RecoverArgs) -> Result<ExitCode> {
    let input = Input::open(&a.broken)?;
    if a.json && a.output == "-" {
        bail!("--json prints the report on stdout, so OUTPUT must be a file");
    }
    if let (Some(p), false) = (input.path(), a.output == "-") {
        if let (Ok(x), Ok(y)) = (std::fs::canonicalize(p), std::fs::canonicalize(&a.output)) {
            if x == y {
                bail!("input and output are the same file: {}", a.output);
            }
        }
    }
    // A regular file's length says how much was dropped; only a stream is read to its end.
    let (src, len): (Box<dyn Read>, Option<u64>) = match input.path() {
        Some(p) => {
            let f = File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
            let meta = f.metadata().with_context(|| format!("cannot read {}", p.display()))?;
            let len = meta.is_file().then_some(meta.len());
            (Box::new(BufReader::with_capacity(1 << 20, f)), len)
        }
        None => (input.reader()?, None),
    };
    let (upload, out_name) = crate::io::create_upload(&a.output, a.force)?;
    let report = match len {
        Some(len) => recover_sized(src, len, upload),
        None => recover_stream(src, upload),
    }
    .with_context(|| format!("recovering {} into {out_name}", input.describe()))?;
    if a.json {
        let mut out = io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else if !a.quiet {
        let from = input.describe();
        if report.complete {
            eprintln!(
                "{from}: the file was complete; copied {} frames ({} raw bytes) to {out_name}",
                report.frames_kept, report.raw_bytes_kept
            );
        } else {
            eprintln!(
                "{from} -> {out_name}: kept {} frames, {} raw bytes ({} bytes written)",
                report.frames_kept, report.raw_bytes_kept, report.output_bytes
            );
            let lost = if report.raw_bytes_lost_at_least > 0 {
                format!(", at least {} raw bytes", report.raw_bytes_lost_at_least)
            } else {
                String::new()
            };
            eprintln!(
                "  lost: the last {} of {} input bytes{lost}; the scan stopped at: {}",
                report.bytes_dropped, report.input_bytes, report.reason
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
