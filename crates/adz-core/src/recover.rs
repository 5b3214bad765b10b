//! Salvaging a file whose writer died: keep every complete frame whose checksums hold, in
//! order, and write them as a valid file with a trailer (docs/FORMAT.md, "Recovery").
//!
//! ```
//! use adz_core::{recover::recover, FrameWriter, FrameWriterOptions};
//! use adz_core::store::{MemoryStorage, Storage};
//!
//! let data = b"frames survive their writer. ".repeat(1000);
//! let opts = FrameWriterOptions { block_size: 4096, ..Default::default() };
//! let mut w = FrameWriter::new(Vec::new(), opts)?;
//! w.write_data(&data)?;
//! let file = w.finish()?.0;
//!
//! let store = MemoryStorage::new();
//! store.put("torn.adz", &file[..file.len() / 2])?; // the writer died half-way
//! let report = recover(&store, "torn.adz", &store, "saved.adz")?;
//! assert!(report.frames_kept > 0 && !report.complete);
//! assert_eq!(report.raw_bytes_kept, report.frames_kept * 4096);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{self, Read};

use adz_format::{FileHeader, FrameHeader, TrailerBuilder, FILE_HEADER_LEN, FRAME_HEADER_LEN};
use adz_store::{Storage, Upload};
use serde::Serialize;

use crate::scan::FrameScanner;
use crate::{Error, FrameDecoder, Result};

/// What [`recover`] kept and what it dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecoverReport {
    /// Complete frames whose checksums hold, now in the output.
    pub frames_kept: u64,
    /// Raw bytes in those frames: the output decompresses to exactly these, the first
    /// `raw_bytes_kept` bytes the writer was given.
    pub raw_bytes_kept: u64,
    /// Bytes of the input after the last kept frame that were dropped (a torn frame, damaged
    /// frames and everything after them; not counting a valid trailer).
    pub bytes_dropped: u64,
    /// Raw bytes known to be lost: the raw length of the first frame dropped, when its header
    /// could still be read. Frames after it cannot be located, so the loss may be larger.
    pub raw_bytes_lost_at_least: u64,
    /// Bytes of the input.
    pub input_bytes: u64,
    /// Bytes of the recovered file.
    pub output_bytes: u64,
    /// The input was a complete, valid file (its trailer matched): nothing was lost.
    pub complete: bool,
    /// Why the scan stopped.
    pub reason: String,
}

/// Recover `name` from `storage` into `out_name` in `out` (the two may be one store). The
/// input is read forward in pieces, so memory stays at about one frame.
pub fn recover(
    storage: &dyn Storage,
    name: &str,
    out: &dyn Storage,
    out_name: &str,
) -> Result<RecoverReport> {
    let size = storage.size(name)?;
    let src = io::BufReader::with_capacity(1 << 20, StorageRead { storage, name, pos: 0, size });
    let upload = out.create(out_name)?;
    recover_inner(src, Some(size), upload)
}

/// [`recover_stream`] for an input of known length `input_len` (a regular file): the bytes
/// after the last kept frame are counted from the length, not read, so a scan that stops
/// early on a huge file stops reading there too.
pub fn recover_sized<R: Read>(
    src: R,
    input_len: u64,
    upload: Box<dyn Upload>,
) -> Result<RecoverReport> {
    recover_inner(src, Some(input_len), upload)
}

/// Recover the adz stream `src` into `upload`, which is committed once the output is
/// complete (and aborted on an error, so nothing incomplete appears under its name).
///
/// Fails only if `src` does not start with a valid file header (nothing can be recovered
/// then: it is not an adz file, or it was cut within its first 32 bytes) or on an I/O error.
pub fn recover_stream<R: Read>(src: R, upload: Box<dyn Upload>) -> Result<RecoverReport> {
    recover_inner(src, None, upload)
}

fn recover_inner<R: Read>(
    src: R,
    input_len: Option<u64>,
    mut upload: Box<dyn Upload>,
) -> Result<RecoverReport> {
    let mut src = CountingRead { inner: src, count: 0 };
    let mut scan = FrameScanner::new(&mut src);
    let header: FileHeader = scan.file_header()?;
    upload.append(&header.encode())?;
    let mut dec = FrameDecoder::new();
    let mut raw = Vec::new();
    let mut kept = TrailerBuilder::new();
    let mut file_offset = FILE_HEADER_LEN as u64;
    let mut lost_at_least = 0;
    let (complete, reason) = loop {
        match scan.next_frame() {
            Ok(None) => {
                break (true, "the file is complete: its trailer matches its frames".to_owned())
            }
            Ok(Some(f)) => {
                raw.resize(f.header.raw_len as usize, 0);
                if let Err(e) = dec.decode(&f.header, scan.payload(), f.frame, f.offset, &mut raw) {
                    lost_at_least = u64::from(f.header.raw_len);
                    break (false, chain(&e));
                }
                let h: FrameHeader = f.header;
                upload.append(&h.encode())?;
                upload.append(scan.payload())?;
                kept.push(&h, file_offset);
                file_offset += FRAME_HEADER_LEN as u64 + u64::from(h.stored_len);
            }
            Err(e) => {
                lost_at_least = scan.torn_frame().map_or(0, |h| u64::from(h.raw_len));
                break (false, chain(&e));
            }
        }
    };
    drop(scan);
    // The report says how much was dropped: from the length when it is known, else by
    // reading the rest of the stream.
    let input_bytes = match input_len {
        Some(len) => len.max(src.count),
        None => {
            io::copy(&mut src, &mut io::sink()).map_err(|e| Error::io("reading the input", e))?;
            src.count
        }
    };
    let trailer = kept.encode(file_offset);
    upload.append(&trailer)?;
    let output_bytes = upload.commit()?;
    let bytes_dropped = if complete { 0 } else { input_bytes.saturating_sub(file_offset) };
    Ok(RecoverReport {
        frames_kept: kept.entries().len() as u64,
        raw_bytes_kept: kept.raw_size(),
        bytes_dropped,
        raw_bytes_lost_at_least: lost_at_least,
        input_bytes,
        output_bytes,
        complete,
        reason,
    })
}

/// Counts the bytes read through it.
struct CountingRead<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for CountingRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// Reads an object forward in ranged requests of at most 4 MiB.
struct StorageRead<'a> {
    storage: &'a dyn Storage,
    name: &'a str,
    pos: u64,
    size: u64,
}

impl Read for StorageRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.size - self.pos).min(4 << 20);
        if n == 0 {
            return Ok(0);
        }
        let bytes = self
            .storage
            .get_range(self.name, self.pos..self.pos + n)
            .map_err(|e| io::Error::other(Error::from(e)))?;
        buf[..bytes.len()].copy_from_slice(&bytes);
        self.pos += bytes.len() as u64;
        Ok(bytes.len())
    }
}

/// An error and its causes, each once, cause last (the report's reason).
fn chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}
