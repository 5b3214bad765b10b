//! Reading an adz file forward, frame after frame, from any `Read` (a pipe, a socket, a file).
//! Streaming decompression, `verify`, `inspect -` and recovery are built on this one scanner,
//! so the rules for walking a file live in one place.

use std::io::{self, Read};

use adz_format::{
    parse_index_header, FileHeader, Footer, FrameHeader, Index, TrailerBuilder, FILE_HEADER_LEN,
    FOOTER_LEN, FRAME_HEADER_LEN, FRAME_MAGIC, INDEX_ENTRY_LEN, INDEX_HEADER_LEN, INDEX_MAGIC,
};

use crate::{Error, Result};

/// A frame found by the scanner. Its payload is [`FrameScanner::payload`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannedFrame {
    /// Frame number, from 0.
    pub frame: u64,
    /// File offset of the frame header.
    pub offset: u64,
    /// The checked frame header.
    pub header: FrameHeader,
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Start,
    Frames,
    Done,
}

/// Walks an adz file forward. Checks every frame header, that frames are contiguous in raw
/// offsets, and at the end that the trailer describes exactly the frames seen and ends the
/// input. It does not decode payloads: pair it with [`crate::FrameDecoder`].
#[derive(Debug)]
pub struct FrameScanner<R> {
    src: R,
    state: State,
    header: Option<FileHeader>,
    offset: u64,
    raw_offset: u64,
    seen: TrailerBuilder,
    payload: Vec<u8>,
    torn: Option<FrameHeader>,
}

impl<R: Read> FrameScanner<R> {
    /// A scanner over `src`, positioned at the start of the file.
    pub fn new(src: R) -> FrameScanner<R> {
        FrameScanner {
            src,
            state: State::Start,
            header: None,
            offset: 0,
            raw_offset: 0,
            seen: TrailerBuilder::new(),
            payload: Vec::new(),
            torn: None,
        }
    }

    /// The file header (read on first use).
    pub fn file_header(&mut self) -> Result<FileHeader> {
        if let Some(h) = self.header {
            return Ok(h);
        }
        let mut b = [0u8; FILE_HEADER_LEN];
        let n = self.read_full(&mut b)?;
        let h = FileHeader::parse(&b[..n])?;
        self.header = Some(h);
        self.offset = FILE_HEADER_LEN as u64;
        self.state = State::Frames;
        Ok(h)
    }

    /// The next frame, or `None` once the trailer has been read and checked.
    pub fn next_frame(&mut self) -> Result<Option<ScannedFrame>> {
        if self.state == State::Done {
            return Ok(None);
        }
        self.file_header()?;
        let frame = self.seen.entries().len() as u64;
        let offset = self.offset;
        let mut head = [0u8; FRAME_HEADER_LEN];
        let n = self.read_full(&mut head[..4])?;
        if n < 4 {
            return Err(adz_format::Error::Truncated {
                what: format!("frame {frame} or trailer (the file ends before its trailer: cut short, or its writer did not finish)"),
                offset,
                needed: 4,
                available: n as u64,
            }
            .into());
        }
        if head[..4] == INDEX_MAGIC {
            self.read_trailer(&head[..4])?;
            return Ok(None);
        }
        if head[..4] != FRAME_MAGIC {
            return Err(
                adz_format::Error::BadMagic { what: format!("frame {frame}"), offset }.into()
            );
        }
        let n = 4 + self.read_full(&mut head[4..])?;
        let header = FrameHeader::parse(&head[..n], frame, offset)?;
        if header.raw_offset != self.raw_offset {
            return Err(adz_format::Error::BadField {
                what: format!("frame {frame}"),
                offset,
                field: "raw_offset",
                value: i128::from(header.raw_offset),
                reason: format!("the previous frame ends at raw offset {}", self.raw_offset),
            }
            .into());
        }
        let stored = header.stored_len as usize;
        // Grown as bytes arrive, not from the claimed length: a cut or hostile stream costs
        // what it holds, not the up to 64 MiB its header claims.
        self.payload.clear();
        self.payload.reserve(stored.min(1 << 20));
        let got = (&mut self.src)
            .take(stored as u64)
            .read_to_end(&mut self.payload)
            .map_err(|e| Error::io(format!("reading at offset {}", self.offset), e))?;
        if got < stored {
            self.torn = Some(header);
            return Err(adz_format::Error::Truncated {
                what: format!("frame {frame} payload"),
                offset: offset + FRAME_HEADER_LEN as u64,
                needed: stored as u64,
                available: got as u64,
            }
            .into());
        }
        self.seen.push(&header, offset);
        self.offset += header.frame_len();
        self.raw_offset = header.raw_end();
        Ok(Some(ScannedFrame { frame, offset, header }))
    }

    /// The payload of the frame last returned by [`next_frame`](Self::next_frame).
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The header of a frame whose payload the input cut short (the error of
    /// [`next_frame`](Self::next_frame) was a truncation): what recovery reports as lost.
    pub fn torn_frame(&self) -> Option<&FrameHeader> {
        self.torn.as_ref()
    }

    /// Raw bytes in the frames seen so far.
    pub fn raw_offset(&self) -> u64 {
        self.raw_offset
    }

    /// File bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The frames seen so far, as index entries.
    pub fn frames_seen(&self) -> &TrailerBuilder {
        &self.seen
    }

    fn read_trailer(&mut self, magic: &[u8]) -> Result<()> {
        let index_offset = self.offset;
        let mut head = [0u8; INDEX_HEADER_LEN];
        head[..4].copy_from_slice(magic);
        let n = 4 + self.read_full(&mut head[4..])?;
        let count = parse_index_header(&head[..n], index_offset)?;
        let seen = self.seen.entries().len() as u64;
        if count != seen {
            return Err(adz_format::Error::IndexMismatch {
                frame: seen,
                reason: format!("the index lists {count} frames, the file holds {seen}"),
            }
            .into());
        }
        // Bounded: `count` equals the number of frames actually read.
        let rest_len = seen as usize * INDEX_ENTRY_LEN + FOOTER_LEN;
        let mut trailer = head.to_vec();
        trailer.resize(INDEX_HEADER_LEN + rest_len, 0);
        let got = self.read_full(&mut trailer[INDEX_HEADER_LEN..])?;
        if got < rest_len {
            return Err(adz_format::Error::Truncated {
                what: "trailer".to_owned(),
                offset: index_offset + INDEX_HEADER_LEN as u64,
                needed: rest_len as u64,
                available: got as u64,
            }
            .into());
        }
        let file_len = index_offset + trailer.len() as u64;
        let expected = self.seen.encode(index_offset);
        if trailer != expected {
            // Say precisely what is wrong where the format's own checks can tell.
            let footer = Footer::parse(&trailer, file_len)?;
            Index::parse(&trailer, &footer)?;
            // Well formed, so the entries are what differs: name the first that does.
            let frame = trailer[INDEX_HEADER_LEN..]
                .chunks_exact(INDEX_ENTRY_LEN)
                .zip(expected[INDEX_HEADER_LEN..].chunks_exact(INDEX_ENTRY_LEN))
                .take(seen as usize)
                .position(|(a, b)| a != b)
                .map_or(seen, |i| i as u64);
            return Err(adz_format::Error::IndexMismatch {
                frame,
                reason: format!(
                    "the trailer is well formed but this entry does not describe frame {frame} \
                     as the file holds it (at offset {})",
                    self.seen.entries().get(frame as usize).map_or(index_offset, |e| e.file_offset)
                ),
            }
            .into());
        }
        let mut extra = [0u8; 1];
        if self.read_full(&mut extra)? != 0 {
            return Err(adz_format::Error::BadField {
                what: "footer".to_owned(),
                offset: file_len,
                field: "end of file",
                value: 0,
                reason: "bytes follow the footer; the file must end there".to_owned(),
            }
            .into());
        }
        self.offset = file_len;
        self.state = State::Done;
        Ok(())
    }

    /// Read until `buf` is full or the input ends; returns the bytes read.
    fn read_full(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match self.src.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(format!("reading at offset {}", self.offset), e)),
            }
        }
        Ok(n)
    }
}
