//! Recompressing a written adz file more densely, frame by frame (docs/LIFECYCLE.md).
//!
//! A frame is re-encoded only if its rung is below the target rung on the standard ladder
//! and it was compressed, or sent raw by choice (codec `none`); a frame stored raw because
//! its codec could not shrink it, or already at or past the target, is copied as it is,
//! after its payload checksum is checked, without decoding. A frame stored raw without an
//! entropy coder having tried it (sent raw by choice, codec `none`; or by LZ4 or zstd's
//! negative levels, which leave literals as they are) is first tried with zstd:1, as the
//! controller's probes do: if that cannot save 3 % the data is taken as incompressible and
//! the frame kept raw, marked as stored raw by zstd:1 so that a rerun copies it, without the
//! target's far dearer attempt (an S1 write's random stretches are such frames). A re-encoded
//! frame is kept only
//! if it is smaller, and only after it has been decoded again and its raw checksum matched.
//! The new file is written through [`Storage::create`] (a temporary file renamed over the old
//! one on commit, or an object committed over the old), so the old file stays whole until
//! the new one is complete.
//!
//! ```
//! use std::sync::Arc;
//! use adz_core::recompress::{recompress, RecompressOptions};
//! use adz_core::store::{MemoryStorage, Storage};
//! use adz_core::{FrameWriter, FrameWriterOptions};
//!
//! let data = b"a line of a log, 2026-11-27 10:35:11 INFO ok\n".repeat(40_000);
//! let opts = FrameWriterOptions { block_size: 256 << 10, codec: "lz4:1".parse()?, ..Default::default() };
//! let mut w = FrameWriter::new(Vec::new(), opts)?;
//! w.write_data(&data)?;
//! let store: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
//! store.put("log.adz", &w.finish()?.0)?;
//! let report = recompress(&store, "log.adz", &RecompressOptions::to("zstd:19".parse()?), &|_| {})?;
//! assert!(report.bytes_after < report.bytes_before);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::io::BufReader;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use adz_control::{entropy_coded, Ladder, KEEP_THRESHOLD};
use adz_format::{
    CodecId, CodecSpec, FileHeader, FrameHeader, IndexEntry, TrailerBuilder, FILE_HEADER_LEN,
    FRAME_HEADER_LEN,
};
use adz_store::{Storage, Upload};
use crossbeam::channel::{bounded, Receiver, Sender};
use serde::Serialize;
use thiserror::Error;

use crate::cost::{CostModel, Machine};
use crate::open::StorageRead;
use crate::reader::{Reader, ReaderOptions};
use crate::{Error, FrameDecoder, FrameEncoder};

mod dry_run;
pub use self::dry_run::estimate;

/// Why a recompression stopped. In every case the old file or object is as it was.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RecompressError {
    /// A frame of the source is damaged (checksum, codec, header): nothing was replaced.
    #[error("{name}: frame {frame} at offset {offset} is damaged; the file was left as it was")]
    Damaged {
        /// The object.
        name: String,
        /// Frame number.
        frame: u64,
        /// File offset of the frame header.
        offset: u64,
        /// What is wrong.
        #[source]
        source: Box<Error>,
    },
    /// A re-encoded frame did not decode to the frame's raw data (a codec bug): nothing was
    /// replaced.
    #[error(
        "{name}: frame {frame} re-encoded with {codec} did not verify; the file was left as it was"
    )]
    Verify {
        /// The object.
        name: String,
        /// Frame number.
        frame: u64,
        /// The codec it was re-encoded with.
        codec: CodecSpec,
        /// What the check found.
        #[source]
        source: Box<Error>,
    },
    /// The source could not be read, or is not a complete adz file.
    #[error("{name}: reading it")]
    Read {
        /// The object.
        name: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// The new file could not be written or committed.
    #[error("{name}: writing its recompressed version")]
    Write {
        /// The object.
        name: String,
        /// Why.
        #[source]
        source: adz_store::Error,
    },
    /// An option cannot work.
    #[error("invalid option: {0}")]
    Config(String),
}

/// How to recompress.
#[derive(Debug, Clone, PartialEq)]
pub struct RecompressOptions {
    /// The rung to re-encode with; frames at or past it on the standard ladder are copied.
    pub target: CodecSpec,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// A re-encoded frame is kept only if its payload is at most this share of the old one
    /// (and strictly smaller). Default 0.99: a gain of less than 1 % is not worth a rewrite.
    pub keep_ratio: f64,
}

impl RecompressOptions {
    /// Recompress to `target` with the defaults.
    pub fn to(target: CodecSpec) -> RecompressOptions {
        RecompressOptions { target, threads: 0, keep_ratio: 0.99 }
    }

    /// The archive target: the last rung of the standard ladder (`-s archive`).
    pub fn archive() -> RecompressOptions {
        let ladder = Ladder::standard();
        RecompressOptions::to(ladder.get(ladder.len() - 1).expect("the ladder is not empty"))
    }
}

/// What a recompression did (or, from [`estimate`], would do).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RecompressReport {
    /// The object.
    pub name: String,
    /// The target rung.
    pub target: String,
    /// Frames in the file.
    pub frames: u64,
    /// Frames below the target that were re-encoded and kept.
    pub recoded: u64,
    /// Frames copied as they were (at or past the target, incompressible, or not improved).
    pub copied: u64,
    /// Frames decoded to be re-encoded (kept or not); the others were copied without being
    /// decoded.
    pub decoded: u64,
    /// Frames stored raw without an entropy coder's attempt (codec `none`, LZ4, zstd's negative
    /// levels) that a zstd:1 probe could not shrink by 3 %: kept raw without an attempt at the
    /// target, marked as stored raw by zstd:1 (counted in `decoded` and `copied` too).
    pub probed: u64,
    /// Raw bytes of the file.
    pub raw_bytes: u64,
    /// File size before.
    pub bytes_before: u64,
    /// File size after.
    pub bytes_after: u64,
    /// CPU seconds spent decoding, re-encoding and verifying (all threads).
    pub cpu_seconds: f64,
    /// Wall seconds.
    pub seconds: f64,
    /// True if every frame was already at the target: the file was not touched.
    pub skipped: bool,
    /// True for a dry run's estimate from a sample (nothing written).
    pub estimated: bool,
}

impl RecompressReport {
    /// Bytes saved (0 if none).
    pub fn saved(&self) -> u64 {
        self.bytes_before.saturating_sub(self.bytes_after)
    }

    /// Days of storage until the bytes saved have paid for the CPU seconds spent, at the cost
    /// model's prices (the whole machine's cost per second, thesis 3.4.1 and 3.4.3). None if
    /// nothing was saved.
    pub fn days_to_pay(&self, model: &CostModel) -> Option<f64> {
        days_to_pay(self.saved(), self.cpu_seconds, model)
    }
}

/// Days until `saved` bytes of storage have paid for `cpu_seconds` of the compute node (full
/// machine cost). None if nothing is saved.
pub fn days_to_pay(saved: u64, cpu_seconds: f64, model: &CostModel) -> Option<f64> {
    let per_day = model.storage_cost_per_gb_year() / 365.0 * saved as f64 / 1e9;
    (per_day > 0.0).then(|| model.machine_cost(cpu_seconds, Machine::Full).total() / per_day)
}

/// A rung's position on the standard ladder (raw 0); a setting not on it counts as the rung
/// closest to it in reference speed.
pub fn rung_rank(spec: CodecSpec) -> usize {
    if spec.id() == CodecId::None {
        return 0;
    }
    Ladder::standard().nearest(spec)
}

/// True if the frame an index entry describes would be copied to `target` as it is: stored
/// raw by an entropy coder that could not shrink it (zstd:1 and up, xz), at or past the
/// target, or of a codec this build does not know (it cannot be decoded here). A frame that
/// LZ4 or zstd's negative levels stored raw is not done: they store literals as they are, and
/// data they cannot shrink (pixels, floats) often compresses with an entropy coder.
pub fn frame_done(e: &IndexEntry, target: CodecSpec) -> bool {
    let Some(id) = CodecId::from_u8(e.codec_id) else { return true };
    match CodecSpec::new(id, e.codec_param) {
        Ok(spec) if e.stored_raw() && entropy_coded(spec) => true,
        Ok(spec) => spec.id() != CodecId::None && rung_rank(spec) >= rung_rank(target),
        Err(_) => true,
    }
}

/// How many frames of an index [`recompress`] would re-encode (0: the file is at the target).
/// Reads nothing but the index: the cheap check a resumed run uses to skip finished files.
pub fn pending_frames(entries: &[IndexEntry], target: CodecSpec) -> usize {
    entries.iter().filter(|e| !frame_done(e, target)).count()
}

fn check(opts: &RecompressOptions) -> Result<usize, RecompressError> {
    if opts.target.id() == CodecId::None {
        return Err(RecompressError::Config("the target rung must compress (not none)".into()));
    }
    if !(opts.keep_ratio > 0.0 && opts.keep_ratio <= 1.0) {
        return Err(RecompressError::Config(format!(
            "keep ratio {} must be in (0, 1]",
            opts.keep_ratio
        )));
    }
    if opts.threads > crate::pipeline::MAX_THREADS {
        return Err(RecompressError::Config(format!(
            "{} threads: at most {}",
            opts.threads,
            crate::pipeline::MAX_THREADS
        )));
    }
    Ok(if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    })
}

/// Frames re-encoded and kept, decoded, and found incompressible by the probe.
type Counts = (u64, u64, u64);

/// One frame handed to a worker.
struct Job {
    seq: u64,
    offset: u64,
    header: FrameHeader,
    payload: Vec<u8>,
}

/// A worker's frame, ready to write.
struct Done {
    seq: u64,
    header: FrameHeader,
    /// Header and payload.
    bytes: Vec<u8>,
    recoded: bool,
    decoded: bool,
    /// A raw frame the probe found incompressible.
    probed: bool,
}

enum Msg {
    Frame(Done),
    /// The source's trailer was read and matched every frame: `frames` in all.
    End {
        frames: u64,
        file_len: u64,
    },
    Failed(RecompressError),
}

/// What one worker does with a frame: copy it (checking its payload checksum) or decode,
/// re-encode, verify, and keep the smaller.
struct Worker {
    dec: FrameDecoder,
    enc: FrameEncoder,
    raw: Vec<u8>,
    check: Vec<u8>,
    /// The probe's output.
    probe: Vec<u8>,
}

/// A raw frame is re-encoded only if the probe rung, zstd level 1 (the controller's probe
/// rung with an entropy stage, a few ms per MiB), saves what the controller's default keep threshold asks ([`KEEP_THRESHOLD`]).
const PROBE_LEVEL: i32 = 1;

impl Worker {
    fn new() -> Worker {
        Worker {
            dec: FrameDecoder::new(),
            enc: FrameEncoder::new(),
            raw: Vec::new(),
            check: Vec::new(),
            probe: Vec::new(),
        }
    }

    fn process(
        &mut self,
        job: Job,
        opts: &RecompressOptions,
        name: &str,
    ) -> Result<Done, RecompressError> {
        let Job { seq, offset, header: h, payload } = job;
        let damaged = |source: Error| RecompressError::Damaged {
            name: name.to_owned(),
            frame: seq,
            offset,
            source: Box::new(source),
        };
        let copy = |payload: Vec<u8>| {
            let mut bytes = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
            bytes.extend_from_slice(&h.encode());
            bytes.extend_from_slice(&payload);
            Done { seq, header: h, bytes, recoded: false, decoded: false, probed: false }
        };
        if frame_done(&IndexEntry::from_frame(&h, offset), opts.target) {
            h.check_payload(&payload, seq, offset).map_err(|e| damaged(e.into()))?;
            return Ok(copy(payload));
        }
        self.raw.resize(h.raw_len as usize, 0);
        self.dec.decode(&h, &payload, seq, offset, &mut self.raw).map_err(damaged)?;
        let filters = h.filters().map_err(|e| damaged(e.into()))?;
        if h.stored_raw() {
            let probe =
                CodecSpec::new(CodecId::Zstd, PROBE_LEVEL).map_err(|e| damaged(e.into()))?;
            self.probe.clear();
            let p = self
                .enc
                .encode(&self.raw, h.raw_offset, probe, filters, KEEP_THRESHOLD, &mut self.probe)
                .map_err(damaged)?;
            if p.stored_raw() {
                // Incompressible. Without filters the probe's frame is the old payload under
                // a header saying zstd:1 stored it raw, which a rerun copies; with filters the
                // old frame is kept as it was.
                let same = filters.is_empty()
                    && p.raw_checksum == h.raw_checksum
                    && self.probe.get(FRAME_HEADER_LEN..) == Some(&payload[..]);
                if same {
                    let bytes = std::mem::take(&mut self.probe);
                    return Ok(Done {
                        seq,
                        header: p,
                        bytes,
                        recoded: false,
                        decoded: true,
                        probed: true,
                    });
                }
                return Ok(Done { decoded: true, probed: true, ..copy(payload) });
            }
        }
        let mut out = Vec::new();
        let new = self
            .enc
            .encode(&self.raw, h.raw_offset, opts.target, filters, 1.0, &mut out)
            .map_err(damaged)?;
        let limit = (f64::from(h.stored_len) * opts.keep_ratio) as u64;
        if new.stored_raw() || u64::from(new.stored_len) >= u64::from(h.stored_len).min(limit + 1) {
            return Ok(Done { decoded: true, ..copy(payload) });
        }
        // Verify before use: the new payload must decode to the bytes of the old raw checksum.
        let verify = |e: Error| RecompressError::Verify {
            name: name.to_owned(),
            frame: seq,
            codec: opts.target,
            source: Box::new(e),
        };
        if new.raw_checksum != h.raw_checksum || new.raw_offset != h.raw_offset {
            return Err(verify(Error::Config("the new frame's header does not match".into())));
        }
        self.check.resize(h.raw_len as usize, 0);
        self.dec
            .decode(&new, &out[FRAME_HEADER_LEN..], seq, offset, &mut self.check)
            .map_err(verify)?;
        Ok(Done { seq, header: new, bytes: out, recoded: true, decoded: true, probed: false })
    }
}

/// Recompress object `name` of `store` to `opts.target`, replacing it only once the new
/// version is complete and every frame of it verified. `progress` is called with the source
/// bytes read so far. A file already at the target (see [`pending_frames`]) is not touched:
/// the report says `skipped`.
///
/// Memory: at most `2 x threads + 2` frames in flight, each its payload plus its raw data
/// and the new frame in a worker.
pub fn recompress(
    store: &Arc<dyn Storage>,
    name: &str,
    opts: &RecompressOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<RecompressReport, RecompressError> {
    let threads = check(opts)?;
    let started = Instant::now();
    let read_err = |source: Error| read_error(name, source);
    let (reader, mut report) = open_unchanged(store, name, opts)?;
    let entries = reader.index().entries();
    if pending_frames(entries, opts.target) == 0 {
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    drop(reader);
    let src = StorageRead::new(Arc::clone(store), name.to_owned()).map_err(read_err)?;
    let write_err = |source| RecompressError::Write { name: name.to_owned(), source };
    let mut upload = store.create(name).map_err(write_err)?;
    match rewrite(src, &mut *upload, threads, opts, name, progress) {
        Ok(((recoded, decoded, probed), frames, cpu, written)) => {
            let after = upload.commit().map_err(write_err)?;
            debug_assert_eq!(after, written);
            report.recoded = recoded;
            report.decoded = decoded;
            report.probed = probed;
            report.copied = frames - recoded;
            report.bytes_after = after;
            report.cpu_seconds = cpu;
            report.skipped = false;
            report.seconds = started.elapsed().as_secs_f64();
            Ok(report)
        }
        Err(e) => {
            let _ = upload.abort();
            Err(e)
        }
    }
}

/// The streaming rewrite: a reader thread scans the source, workers re-encode, this thread
/// writes the frames in order and the trailer. Returns (frames re-encoded, frames, CPU
/// seconds, bytes written).
fn rewrite(
    src: StorageRead,
    upload: &mut dyn Upload,
    threads: usize,
    opts: &RecompressOptions,
    name: &str,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Counts, u64, f64, u64), RecompressError> {
    let read_err = |source: Error| read_error(name, source);
    let write_err = |source| RecompressError::Write { name: name.to_owned(), source };
    let mut scanner = crate::FrameScanner::new(BufReader::with_capacity(1 << 20, src));
    let file_header = scanner.file_header().map_err(read_err)?;
    let in_flight = 2 * threads + 2;
    let (job_tx, job_rx) = bounded::<Job>(in_flight);
    let (msg_tx, msg_rx) = bounded::<Msg>(in_flight);
    // A credit per frame in flight, returned when it is written: bounds the frames held
    // whatever order the workers finish in.
    let (credit_tx, credit_rx) = bounded::<()>(in_flight);
    for _ in 0..in_flight {
        credit_tx.send(()).expect("the channel has room");
    }
    let stop = AtomicBool::new(false);
    let cpu = std::sync::Mutex::new(0.0f64);
    let out = crossbeam::scope(|s| {
        let reader_tx = msg_tx.clone();
        let stop = &stop;
        let scanner = &mut scanner;
        s.spawn(move |_| {
            scan_frames(scanner, &credit_rx, &job_tx, &reader_tx, stop, name, progress)
        });
        for _ in 0..threads {
            let rx = job_rx.clone();
            let tx = msg_tx.clone();
            let cpu = &cpu;
            s.spawn(move |_| {
                let secs = recode_frames(&rx, &tx, stop, opts, name);
                *cpu.lock().unwrap_or_else(|e| e.into_inner()) += secs;
            });
        }
        drop(job_rx);
        drop(msg_tx);
        let result = write_in_order(&msg_rx, &credit_tx, upload, file_header, write_err);
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        // Unblock everyone: the reader waits on credits, the workers on the results channel.
        drop(credit_tx);
        drop(msg_rx);
        result
    })
    .map_err(|_| RecompressError::Config("a recompression thread panicked".into()))?;
    let (recoded, frames, written) = out?;
    let cpu = *cpu.lock().unwrap_or_else(|e| e.into_inner());
    Ok((recoded, frames, cpu, written))
}

/// The reader thread of [`rewrite`]: scan the source frame by frame, one credit per frame,
/// and hand each to the workers; the end (or the failure) goes to the writer on `msg_tx`.
fn scan_frames(
    scanner: &mut crate::FrameScanner<BufReader<StorageRead>>,
    credit_rx: &Receiver<()>,
    job_tx: &Sender<Job>,
    msg_tx: &Sender<Msg>,
    stop: &AtomicBool,
    name: &str,
    progress: &(dyn Fn(u64) + Sync),
) {
    let send_fail = |tx: &Sender<Msg>, e: Error, offset: u64| {
        let failed = match e.frame() {
            Some(frame) => RecompressError::Damaged {
                name: name.to_owned(),
                frame,
                offset,
                source: Box::new(e),
            },
            None => read_error(name, e),
        };
        let _ = tx.send(Msg::Failed(failed));
    };
    loop {
        if stop.load(Ordering::Relaxed) || credit_rx.recv().is_err() {
            return;
        }
        match scanner.next_frame() {
            Ok(Some(f)) => {
                progress(scanner.offset());
                let job = Job {
                    seq: f.frame,
                    offset: f.offset,
                    header: f.header,
                    payload: scanner.payload().to_vec(),
                };
                if job_tx.send(job).is_err() {
                    return;
                }
            }
            Ok(None) => {
                let frames = scanner.frames_seen().entries().len() as u64;
                let file_len = scanner.offset();
                let _ = msg_tx.send(Msg::End { frames, file_len });
                return;
            }
            Err(e) => {
                let offset = scanner.offset();
                return send_fail(msg_tx, e, offset);
            }
        }
    }
}

/// A worker of [`rewrite`]: re-encode the frames of `rx` and send each (or its failure) to
/// the writer. Returns the CPU seconds it spent.
fn recode_frames(
    rx: &Receiver<Job>,
    tx: &Sender<Msg>,
    stop: &AtomicBool,
    opts: &RecompressOptions,
    name: &str,
) -> f64 {
    let mut w = Worker::new();
    let t0 = cpu_time::ThreadTime::now();
    for job in rx {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let msg = match w.process(job, opts, name) {
            Ok(d) => Msg::Frame(d),
            Err(e) => Msg::Failed(e),
        };
        if tx.send(msg).is_err() {
            break;
        }
    }
    t0.elapsed().as_secs_f64()
}

/// Write frames as they come back, in order, then the trailer. Returns ((re-encoded,
/// decoded, probed incompressible), frames, bytes written).
fn write_in_order(
    rx: &crossbeam::channel::Receiver<Msg>,
    credits: &Sender<()>,
    upload: &mut dyn Upload,
    file_header: FileHeader,
    write_err: impl Fn(adz_store::Error) -> RecompressError,
) -> Result<(Counts, u64, u64), RecompressError> {
    let header = FileHeader::new(file_header.block_size)
        .map_err(|e| RecompressError::Config(e.to_string()))?;
    upload.append(&header.encode()).map_err(&write_err)?;
    let mut offset = FILE_HEADER_LEN as u64;
    let mut trailer = TrailerBuilder::new();
    let mut waiting: BTreeMap<u64, Done> = BTreeMap::new();
    let (mut next, mut recoded, mut decoded, mut probed) = (0u64, 0u64, 0u64, 0u64);
    let mut end = None;
    for msg in rx {
        match msg {
            Msg::Failed(e) => return Err(e),
            Msg::End { frames, file_len } => end = Some((frames, file_len)),
            Msg::Frame(d) => {
                waiting.insert(d.seq, d);
                while let Some(d) = waiting.remove(&next) {
                    upload.append(&d.bytes).map_err(&write_err)?;
                    trailer.push(&d.header, offset);
                    offset += d.bytes.len() as u64;
                    recoded += u64::from(d.recoded);
                    decoded += u64::from(d.decoded);
                    probed += u64::from(d.probed);
                    next += 1;
                    let _ = credits.send(());
                }
            }
        }
        if end.is_some_and(|(frames, _)| frames == next) {
            break;
        }
    }
    match end {
        Some((frames, _)) if frames == next => {}
        _ => {
            return Err(RecompressError::Config(
                "the source ended before its trailer was read".into(),
            ))
        }
    }
    let tail = trailer.encode(offset);
    upload.append(&tail).map_err(&write_err)?;
    Ok(((recoded, decoded, probed), next, offset + tail.len() as u64))
}

fn read_error(name: &str, source: Error) -> RecompressError {
    RecompressError::Read { name: name.to_owned(), source: Box::new(source) }
}

/// Opens `name` and the report of a run that changes nothing yet: every frame copied, the
/// file skipped.
fn open_unchanged(
    store: &Arc<dyn Storage>,
    name: &str,
    opts: &RecompressOptions,
) -> Result<(Reader, RecompressReport), RecompressError> {
    let reader = Reader::open(Arc::clone(store), name, ReaderOptions::default())
        .map_err(|source| read_error(name, source))?;
    let frames = reader.index().entries().len() as u64;
    let report = RecompressReport {
        name: name.to_owned(),
        target: opts.target.to_string(),
        frames,
        raw_bytes: reader.len(),
        bytes_before: reader.file_len(),
        bytes_after: reader.file_len(),
        copied: frames,
        skipped: true,
        ..Default::default()
    };
    Ok((reader, report))
}
