//! Sequential (single-threaded) writing and reading of adz files over `Write` and `Read`.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use adz_format::{CodecSpec, FileHeader, Filters, TrailerBuilder};
use serde::Serialize;

use crate::scan::FrameScanner;
use crate::summary::WriteSummary;
use crate::{Error, FrameDecoder, FrameEncoder, Result};

/// The default block size: 1 MiB.
pub const DEFAULT_BLOCK_SIZE: u32 = 1 << 20;

/// How a [`FrameWriter`] encodes blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameWriterOptions {
    /// Raw bytes per block.
    pub block_size: u32,
    /// Codec and level for every block.
    pub codec: CodecSpec,
    /// Filters for every block.
    pub filters: Filters,
    /// A compressed block is kept only if it is at most this fraction of its raw size.
    pub keep_ratio: f64,
}

impl Default for FrameWriterOptions {
    fn default() -> FrameWriterOptions {
        FrameWriterOptions {
            block_size: DEFAULT_BLOCK_SIZE,
            codec: CodecSpec::default_for(adz_format::CodecId::Zstd),
            filters: Filters::NONE,
            keep_ratio: 1.0,
        }
    }
}

/// Writes an adz file to any `Write`, one block at a time on the calling thread.
///
/// Nothing reaches `sink` beyond complete frames and, at [`finish`](Self::finish), the trailer:
/// a writer that is dropped without `finish` leaves a file without trailer, which readers
/// reject as incomplete and recovery can salvage frame by frame.
#[derive(Debug)]
pub struct FrameWriter<W: Write> {
    sink: W,
    opts: FrameWriterOptions,
    pending: Vec<u8>,
    encoder: FrameEncoder,
    frame: Vec<u8>,
    trailer: TrailerBuilder,
    file_offset: u64,
    configs: BTreeMap<String, u64>,
    sink_busy: Duration,
    started: Instant,
}

impl<W: Write> FrameWriter<W> {
    /// Start a file: writes the file header to `sink`.
    pub fn new(mut sink: W, opts: FrameWriterOptions) -> Result<FrameWriter<W>> {
        let header = FileHeader::new(opts.block_size)?;
        sink.write_all(&header.encode()).map_err(|e| Error::io("writing the file header", e))?;
        Ok(FrameWriter {
            sink,
            opts,
            pending: Vec::with_capacity(opts.block_size as usize),
            encoder: FrameEncoder::new(),
            frame: Vec::new(),
            trailer: TrailerBuilder::new(),
            file_offset: adz_format::FILE_HEADER_LEN as u64,
            configs: BTreeMap::new(),
            sink_busy: Duration::ZERO,
            started: Instant::now(),
        })
    }

    /// Append raw data.
    pub fn write_data(&mut self, mut data: &[u8]) -> Result<()> {
        let block = self.opts.block_size as usize;
        while !data.is_empty() {
            if self.pending.is_empty() && data.len() >= block {
                // Whole blocks straight from the caller's buffer: no copy.
                let (head, rest) = data.split_at(block);
                self.emit(Some(head))?;
                data = rest;
                continue;
            }
            let take = (block - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() == block {
                self.emit(None)?;
            }
        }
        Ok(())
    }

    /// Encode one block (from `block`, or the pending buffer) and write its frame.
    fn emit(&mut self, block: Option<&[u8]>) -> Result<()> {
        let raw = block.unwrap_or(&self.pending);
        self.frame.clear();
        let frame_no = self.trailer.entries().len();
        let h = self.encoder.encode(
            raw,
            self.trailer.raw_size(),
            self.opts.codec,
            self.opts.filters,
            self.opts.keep_ratio,
            &mut self.frame,
        )?;
        let t0 = Instant::now();
        self.sink
            .write_all(&self.frame)
            .map_err(|e| Error::io(format!("writing frame {frame_no}"), e))?;
        self.sink_busy += t0.elapsed();
        self.trailer.push(&h, self.file_offset);
        self.file_offset += self.frame.len() as u64;
        *self.configs.entry(h.describe()).or_default() += 1;
        if block.is_none() {
            self.pending.clear();
        }
        Ok(())
    }

    /// Raw bytes accepted so far.
    pub fn raw_bytes(&self) -> u64 {
        self.trailer.raw_size() + self.pending.len() as u64
    }

    /// Write the last block and the trailer, flush, and return the sink with a summary.
    pub fn finish(mut self) -> Result<(W, WriteSummary)> {
        if !self.pending.is_empty() {
            self.emit(None)?;
        }
        let trailer = self.trailer.encode(self.file_offset);
        self.sink.write_all(&trailer).map_err(|e| Error::io("writing the trailer", e))?;
        self.sink.flush().map_err(|e| Error::io("flushing", e))?;
        let summary = WriteSummary {
            raw_bytes: self.trailer.raw_size(),
            stored_bytes: self.file_offset + trailer.len() as u64,
            frames: self.trailer.entries().len() as u64,
            configs: self.configs,
            seconds: self.started.elapsed().as_secs_f64(),
            link: None,
            sink_seconds: self.sink_busy.as_secs_f64(),
            strategy: format!("static={}", self.opts.codec),
            ..WriteSummary::default()
        };
        Ok((self.sink, summary))
    }
}

impl<W: Write> Write for FrameWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_data(buf)?;
        Ok(buf.len())
    }

    /// Flushes the sink; a partial block stays buffered (frames are whole blocks).
    fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
    }
}

/// Counts from decoding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DecodeStats {
    /// Frames decoded.
    pub frames: u64,
    /// Raw bytes produced.
    pub raw_bytes: u64,
    /// Bytes of the adz file read.
    pub stored_bytes: u64,
}

/// Decode a whole adz stream from `src` to `dst`, checking everything, on the calling thread.
/// `progress` is called after every frame with the file bytes consumed so far.
pub fn decode_stream<R: Read, W: Write>(
    src: R,
    mut dst: W,
    mut progress: impl FnMut(u64),
) -> Result<DecodeStats> {
    let mut scan = FrameScanner::new(src);
    let mut dec = FrameDecoder::new();
    let mut out = Vec::new();
    let mut stats = DecodeStats::default();
    while let Some(f) = scan.next_frame()? {
        out.resize(f.header.raw_len as usize, 0);
        dec.decode(&f.header, scan.payload(), f.frame, f.offset, &mut out)?;
        dst.write_all(&out)
            .map_err(|e| Error::io(format!("writing decoded frame {}", f.frame), e))?;
        stats.frames += 1;
        stats.raw_bytes += out.len() as u64;
        progress(scan.offset());
    }
    dst.flush().map_err(|e| Error::io("flushing the output", e))?;
    stats.stored_bytes = scan.offset();
    Ok(stats)
}

/// A `Read` adapter that decompresses an adz stream.
#[derive(Debug)]
pub struct Decoder<R> {
    scan: FrameScanner<R>,
    dec: FrameDecoder,
    out: Vec<u8>,
    pos: usize,
}

impl<R: Read> Decoder<R> {
    /// Decode the adz stream `src`.
    pub fn new(src: R) -> Decoder<R> {
        Decoder { scan: FrameScanner::new(src), dec: FrameDecoder::new(), out: Vec::new(), pos: 0 }
    }
}

impl<R: Read> Read for Decoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.out.len() {
            match self.scan.next_frame()? {
                None => return Ok(0),
                Some(f) => {
                    self.out.resize(f.header.raw_len as usize, 0);
                    self.dec.decode(
                        &f.header,
                        self.scan.payload(),
                        f.frame,
                        f.offset,
                        &mut self.out,
                    )?;
                    self.pos = 0;
                }
            }
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// One problem found by [`verify_stream`].
#[derive(Debug)]
pub struct FrameProblem {
    /// The frame, if the problem is in one frame's contents.
    pub frame: Option<u64>,
    /// What is wrong.
    pub error: Error,
}

/// What [`verify_stream`] found.
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Frames whose data checked out.
    pub good_frames: u64,
    /// Frames read in all.
    pub frames: u64,
    /// Raw bytes in all frames read.
    pub raw_bytes: u64,
    /// Problems, in file order. Empty means the file is intact.
    pub problems: Vec<FrameProblem>,
}

/// Check every checksum of an adz stream. Damaged frame contents are reported frame by frame
/// and the check goes on; damage to the structure (a frame header, the trailer) ends it, since
/// nothing after it can be located with confidence.
pub fn verify_stream<R: Read>(src: R, mut progress: impl FnMut(u64)) -> VerifyReport {
    let mut scan = FrameScanner::new(src);
    let mut dec = FrameDecoder::new();
    let mut out = Vec::new();
    let mut report = VerifyReport::default();
    loop {
        match scan.next_frame() {
            Ok(None) => break,
            Ok(Some(f)) => {
                report.frames += 1;
                report.raw_bytes += u64::from(f.header.raw_len);
                out.resize(f.header.raw_len as usize, 0);
                match dec.decode(&f.header, scan.payload(), f.frame, f.offset, &mut out) {
                    Ok(()) => report.good_frames += 1,
                    Err(error) => {
                        report.problems.push(FrameProblem { frame: Some(f.frame), error })
                    }
                }
                progress(scan.offset());
            }
            Err(error) => {
                report.problems.push(FrameProblem { frame: error.frame(), error });
                break;
            }
        }
    }
    report
}
