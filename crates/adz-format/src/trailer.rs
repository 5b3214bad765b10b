//! The trailer: index header, one index entry per frame, and the footer that ends the file
//! (docs/FORMAT.md, "Trailer").

use std::ops::Range;

use crate::frame::{FrameHeader, FLAG_STORED_RAW, FRAME_HEADER_LEN};
use crate::header::FILE_HEADER_LEN;
use crate::{le_u32, le_u64, xxh3, Error, Result, MAX_FRAME_COUNT, MAX_FRAME_RAW_LEN};

/// The index magic "ADZI".
pub const INDEX_MAGIC: [u8; 4] = *b"ADZI";
/// Size of the index header.
pub const INDEX_HEADER_LEN: usize = 16;
/// Size of one index entry.
pub const INDEX_ENTRY_LEN: usize = 40;
/// Size of the footer.
pub const FOOTER_LEN: usize = 40;
/// The footer magic, the file's last 8 bytes: "ADZ-END\n".
pub const FOOTER_MAGIC: [u8; 8] = *b"ADZ-END\n";
/// The smallest frame: its header and one payload byte (a frame holds at least one raw byte,
/// and its payload at least one byte). Bounds how many frames the bytes before an index hold.
pub const MIN_FRAME_LEN: u64 = FRAME_HEADER_LEN as u64 + 1;

const IDX_COUNT_OFFSET: usize = INDEX_MAGIC.len() + 4;

const E_RAW_OFFSET: usize = 0;
const E_FILE_OFFSET: usize = E_RAW_OFFSET + 8;
const E_RAW_LEN: usize = E_FILE_OFFSET + 8;
const E_STORED_LEN: usize = E_RAW_LEN + 4;
const E_CODEC_ID: usize = E_STORED_LEN + 4;
const E_FLAGS: usize = E_CODEC_ID + 1;
const E_RESERVED: usize = E_FLAGS + 1;
const E_PARAM: usize = E_RESERVED + 2;
const E_RAW_CHECKSUM: usize = E_PARAM + 4;
const _: () = assert!(E_RAW_CHECKSUM + 8 == INDEX_ENTRY_LEN);

const F_INDEX_OFFSET: usize = 0;
const F_FRAME_COUNT: usize = F_INDEX_OFFSET + 8;
const F_RAW_SIZE: usize = F_FRAME_COUNT + 8;
const F_CHECKSUM: usize = F_RAW_SIZE + 8;
const F_MAGIC: usize = F_CHECKSUM + 8;
const _: () = assert!(F_MAGIC + FOOTER_MAGIC.len() == FOOTER_LEN);

/// One frame as the index describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// Offset of the frame's first raw byte.
    pub raw_offset: u64,
    /// Offset of the frame header in the file.
    pub file_offset: u64,
    /// Raw bytes in the frame.
    pub raw_len: u32,
    /// Payload bytes.
    pub stored_len: u32,
    /// Codec id byte.
    pub codec_id: u8,
    /// Frame flags.
    pub flags: u8,
    /// Codec parameter.
    pub codec_param: i32,
    /// xxh3 of the frame's raw data.
    pub raw_checksum: u64,
}

impl IndexEntry {
    /// The entry for a frame whose header starts at `file_offset`.
    pub fn from_frame(h: &FrameHeader, file_offset: u64) -> IndexEntry {
        IndexEntry {
            raw_offset: h.raw_offset,
            file_offset,
            raw_len: h.raw_len,
            stored_len: h.stored_len,
            codec_id: h.codec_id,
            flags: h.flags,
            codec_param: h.codec_param,
            raw_checksum: h.raw_checksum,
        }
    }

    /// Raw byte range of the frame.
    pub fn raw_range(&self) -> Range<u64> {
        self.raw_offset..self.raw_offset + u64::from(self.raw_len)
    }

    /// File byte range of the whole frame (header and payload).
    pub fn file_range(&self) -> Range<u64> {
        self.file_offset..self.file_offset + FRAME_HEADER_LEN as u64 + u64::from(self.stored_len)
    }

    /// True if the payload is the raw data.
    pub fn stored_raw(&self) -> bool {
        self.flags & FLAG_STORED_RAW != 0
    }

    /// Check that frame number `frame`'s header agrees with this entry.
    pub fn check_frame(&self, h: &FrameHeader, frame: u64) -> Result<()> {
        let expected = IndexEntry::from_frame(h, self.file_offset);
        if expected != *self {
            return Err(Error::IndexMismatch {
                frame,
                reason: format!(
                    "frame header at offset {} does not match its index entry",
                    self.file_offset
                ),
            });
        }
        Ok(())
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.raw_offset.to_le_bytes());
        out.extend_from_slice(&self.file_offset.to_le_bytes());
        out.extend_from_slice(&self.raw_len.to_le_bytes());
        out.extend_from_slice(&self.stored_len.to_le_bytes());
        out.push(self.codec_id);
        out.push(self.flags);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.codec_param.to_le_bytes());
        out.extend_from_slice(&self.raw_checksum.to_le_bytes());
    }

    fn parse(b: &[u8]) -> IndexEntry {
        IndexEntry {
            raw_offset: le_u64(b, E_RAW_OFFSET),
            file_offset: le_u64(b, E_FILE_OFFSET),
            raw_len: le_u32(b, E_RAW_LEN),
            stored_len: le_u32(b, E_STORED_LEN),
            codec_id: b[E_CODEC_ID],
            flags: b[E_FLAGS],
            codec_param: le_u32(b, E_PARAM) as i32,
            raw_checksum: le_u64(b, E_RAW_CHECKSUM),
        }
    }
}

/// The footer, the last [`FOOTER_LEN`] bytes of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Offset of the index header.
    pub index_offset: u64,
    /// Number of frames.
    pub frame_count: u64,
    /// Total raw bytes.
    pub raw_size: u64,
    /// Checksum over index header, entries and footer bytes 0..24.
    pub index_checksum: u64,
}

impl Footer {
    /// Parse the footer of a file of `file_len` bytes, whose last bytes are `b`, and check that
    /// the index it points to fits the file exactly. Nothing is allocated from its values.
    pub fn parse(b: &[u8], file_len: u64) -> Result<Footer> {
        let min_len = (FILE_HEADER_LEN + INDEX_HEADER_LEN + FOOTER_LEN) as u64;
        let offset = file_len.saturating_sub(FOOTER_LEN as u64);
        if file_len < min_len || b.len() < FOOTER_LEN {
            return Err(Error::Truncated {
                what: "trailer".to_owned(),
                offset,
                needed: min_len,
                available: file_len.min(b.len() as u64),
            });
        }
        let b = &b[b.len() - FOOTER_LEN..];
        if b[F_MAGIC..] != FOOTER_MAGIC {
            return Err(Error::BadMagic {
                what: "footer (no trailer: truncated or still being written?)".to_owned(),
                offset,
            });
        }
        let f = Footer {
            index_offset: le_u64(b, F_INDEX_OFFSET),
            frame_count: le_u64(b, F_FRAME_COUNT),
            raw_size: le_u64(b, F_RAW_SIZE),
            index_checksum: le_u64(b, F_CHECKSUM),
        };
        let bad = |field: &'static str, value: u64, reason: String| Error::BadField {
            what: "footer".to_owned(),
            offset,
            field,
            value: i128::from(value),
            reason,
        };
        if f.frame_count > MAX_FRAME_COUNT {
            return Err(bad(
                "frame_count",
                f.frame_count,
                format!("above the limit {MAX_FRAME_COUNT}"),
            ));
        }
        if f.index_offset < FILE_HEADER_LEN as u64 {
            return Err(bad(
                "index_offset",
                f.index_offset,
                "points into the file header".to_owned(),
            ));
        }
        let end = f.trailer_len().and_then(|len| f.index_offset.checked_add(len));
        if end != Some(file_len) {
            return Err(bad(
                "index_offset",
                f.index_offset,
                format!(
                    "an index of {} entries there does not end the file of {file_len} bytes",
                    f.frame_count
                ),
            ));
        }
        // The frames lie between the file header and the index: no more of them than fit.
        let room = f.index_offset - FILE_HEADER_LEN as u64;
        if f.frame_count > room / MIN_FRAME_LEN || (f.frame_count == 0 && room != 0) {
            return Err(bad(
                "frame_count",
                f.frame_count,
                format!(
                    "{} frames of at least {MIN_FRAME_LEN} bytes each do not fit in the {room} \
                     bytes before the index",
                    f.frame_count
                ),
            ));
        }
        Ok(f)
    }

    /// Length of the whole trailer (index header, entries, footer), if it does not overflow.
    pub fn trailer_len(&self) -> Option<u64> {
        self.frame_count
            .checked_mul(INDEX_ENTRY_LEN as u64)?
            .checked_add((INDEX_HEADER_LEN + FOOTER_LEN) as u64)
    }
}

/// The parsed and validated index of a complete file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    entries: Vec<IndexEntry>,
    footer: Footer,
}

impl Index {
    /// Parse the trailer `b` (from the index header to the end of the file), whose footer has
    /// already been parsed by [`Footer::parse`]. Checks the checksum and that the entries
    /// describe contiguous frames from the file header to the index. An index too large to
    /// hold in one piece is read with an [`IndexParser`] instead.
    pub fn parse(b: &[u8], footer: &Footer) -> Result<Index> {
        let off = footer.index_offset;
        let needed = footer.trailer_len().unwrap_or(u64::MAX);
        if b.len() as u64 != needed {
            return Err(Error::Truncated {
                what: "index".to_owned(),
                offset: off,
                needed,
                available: b.len() as u64,
            });
        }
        if b[..INDEX_MAGIC.len()] != INDEX_MAGIC {
            return Err(Error::BadMagic { what: "index".to_owned(), offset: off });
        }
        // With the whole trailer at hand, a damaged one is reported as a checksum mismatch
        // before its fields are judged.
        let sum_end = b.len() - FOOTER_LEN + F_CHECKSUM;
        let computed = xxh3(&b[..sum_end]);
        if computed != footer.index_checksum {
            return Err(index_checksum_error(footer, computed));
        }
        let mut p = IndexParser::new(footer);
        p.feed(b)?;
        p.finish()
    }

    /// The entries, in frame order.
    pub fn entries(&self) -> &[IndexEntry] {
        &self.entries
    }

    /// The footer.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// Total raw bytes.
    pub fn raw_size(&self) -> u64 {
        self.footer.raw_size
    }

    /// The frames that hold any byte of the raw `range` (empty if the range is empty or past
    /// the end).
    pub fn frames_for(&self, range: Range<u64>) -> Range<usize> {
        if range.start >= range.end || range.start >= self.raw_size() {
            return 0..0;
        }
        let first = self.entries.partition_point(|e| e.raw_range().end <= range.start);
        let last = self.entries.partition_point(|e| e.raw_offset < range.end);
        first..last
    }
}

fn index_checksum_error(footer: &Footer, computed: u64) -> Error {
    Error::Checksum {
        what: "index".to_owned(),
        offset: footer.index_offset,
        stored: footer.index_checksum,
        computed,
    }
}

/// Parses a trailer fed in pieces of any size, in order, so that a reader never holds more
/// of it than one piece and the entries checked so far. Every entry is checked as it
/// arrives, and a piece that cannot be an index (zeros of a sparse file, another format)
/// fails at once, before the rest is read; the checksum is checked by
/// [`finish`](Self::finish), once every byte has been fed.
#[derive(Clone)]
pub struct IndexParser {
    footer: Footer,
    trailer_len: u64,
    /// Trailer bytes fed so far.
    pos: u64,
    hasher: xxhash_rust::xxh3::Xxh3,
    /// The start of a record (index header, entry, footer) split between two pieces.
    carry: Vec<u8>,
    entries: Vec<IndexEntry>,
    next_file: u64,
    next_raw: u64,
}

impl std::fmt::Debug for IndexParser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexParser")
            .field("footer", &self.footer)
            .field("pos", &self.pos)
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl IndexParser {
    /// A parser for the trailer that `footer` (from [`Footer::parse`]) describes.
    pub fn new(footer: &Footer) -> IndexParser {
        IndexParser {
            footer: *footer,
            trailer_len: footer.trailer_len().unwrap_or(u64::MAX),
            pos: 0,
            hasher: xxhash_rust::xxh3::Xxh3::new(),
            carry: Vec::with_capacity(INDEX_ENTRY_LEN),
            // Grown only as entries are checked: the count is a claim until then.
            entries: Vec::with_capacity(footer.frame_count.min(1 << 12) as usize),
            next_file: FILE_HEADER_LEN as u64,
            next_raw: 0,
        }
    }

    /// Trailer bytes still to be fed.
    pub fn remaining(&self) -> u64 {
        self.trailer_len - self.pos
    }

    /// Feed the next bytes of the trailer (from the index header on).
    pub fn feed(&mut self, mut b: &[u8]) -> Result<()> {
        if b.len() as u64 > self.remaining() {
            return Err(Error::Truncated {
                what: "index (more bytes than its trailer holds)".to_owned(),
                offset: self.footer.index_offset,
                needed: self.trailer_len,
                available: self.pos + b.len() as u64,
            });
        }
        let sum_end = self.trailer_len - (FOOTER_LEN - F_CHECKSUM) as u64;
        let hashed = (sum_end.saturating_sub(self.pos)).min(b.len() as u64) as usize;
        self.hasher.update(&b[..hashed]);
        while !b.is_empty() {
            let (record_start, record_len) = self.record_at(self.pos);
            let done = (self.pos - record_start) as usize;
            let take = (record_len - done).min(b.len());
            if done == 0 && take == record_len {
                // The whole record is in this piece: no copy.
                self.record(record_start, &b[..take])?;
            } else {
                self.carry.extend_from_slice(&b[..take]);
                if self.carry.len() == record_len {
                    let rec = std::mem::take(&mut self.carry);
                    self.record(record_start, &rec)?;
                    self.carry = rec;
                    self.carry.clear();
                }
            }
            self.pos += take as u64;
            b = &b[take..];
        }
        Ok(())
    }

    /// Where the record holding trailer byte `pos` starts, and its length.
    fn record_at(&self, pos: u64) -> (u64, usize) {
        let entries_end = self.trailer_len - FOOTER_LEN as u64;
        if pos < INDEX_HEADER_LEN as u64 {
            (0, INDEX_HEADER_LEN)
        } else if pos < entries_end {
            let k = (pos - INDEX_HEADER_LEN as u64) / INDEX_ENTRY_LEN as u64;
            (INDEX_HEADER_LEN as u64 + k * INDEX_ENTRY_LEN as u64, INDEX_ENTRY_LEN)
        } else {
            (entries_end, FOOTER_LEN)
        }
    }

    /// Check one whole record, which starts at trailer byte `start`.
    fn record(&mut self, start: u64, rec: &[u8]) -> Result<()> {
        let off = self.footer.index_offset;
        if start == self.trailer_len - FOOTER_LEN as u64 {
            // The footer: already parsed by the caller, and covered by the checksum.
            return Ok(());
        }
        if start != 0 {
            return self.entry(rec);
        }
        let bad = |field: &'static str, value: u64, reason: String| Error::BadField {
            what: "index".to_owned(),
            offset: off,
            field,
            value: i128::from(value),
            reason,
        };
        if rec[..INDEX_MAGIC.len()] != INDEX_MAGIC {
            return Err(Error::BadMagic { what: "index".to_owned(), offset: off });
        }
        let reserved = le_u32(rec, INDEX_MAGIC.len());
        if reserved != 0 {
            return Err(bad("reserved", u64::from(reserved), "must be zero".to_owned()));
        }
        let count = le_u64(rec, IDX_COUNT_OFFSET);
        if count != self.footer.frame_count {
            return Err(bad(
                "frame_count",
                count,
                format!("the footer says {}", self.footer.frame_count),
            ));
        }
        Ok(())
    }

    fn entry(&mut self, chunk: &[u8]) -> Result<()> {
        let e = IndexEntry::parse(chunk);
        let i = self.entries.len() as u64;
        let mismatch = |reason: String| Error::IndexMismatch { frame: i, reason };
        if le_u32(chunk, E_RESERVED) & 0xFFFF != 0 || e.flags & !FLAG_STORED_RAW != 0 {
            return Err(mismatch("reserved bits are set".to_owned()));
        }
        if e.raw_len == 0 || e.raw_len > MAX_FRAME_RAW_LEN {
            return Err(mismatch(format!("raw_len {} outside 1..={MAX_FRAME_RAW_LEN}", e.raw_len)));
        }
        if e.stored_len == 0
            || e.stored_len > e.raw_len
            || (e.stored_raw() && e.stored_len != e.raw_len)
        {
            return Err(mismatch(format!(
                "stored_len {} invalid for raw_len {}",
                e.stored_len, e.raw_len
            )));
        }
        if e.file_offset != self.next_file {
            return Err(mismatch(format!(
                "file_offset {} but the previous frame ends at {}",
                e.file_offset, self.next_file
            )));
        }
        if e.raw_offset != self.next_raw {
            return Err(mismatch(format!(
                "raw_offset {} but the previous frame ends at raw offset {}",
                e.raw_offset, self.next_raw
            )));
        }
        if e.file_range().end > self.footer.index_offset {
            return Err(mismatch(format!(
                "the frame ends at {}, past the index at {}",
                e.file_range().end,
                self.footer.index_offset
            )));
        }
        self.next_file = e.file_range().end;
        self.next_raw += u64::from(e.raw_len);
        self.entries.push(e);
        Ok(())
    }

    /// Check what only the whole trailer can tell (its length, checksum, that the frames end
    /// at the index and hold the footer's raw size) and return the index.
    pub fn finish(mut self) -> Result<Index> {
        let off = self.footer.index_offset;
        if self.pos != self.trailer_len {
            return Err(Error::Truncated {
                what: "index".to_owned(),
                offset: off,
                needed: self.trailer_len,
                available: self.pos,
            });
        }
        let computed = self.hasher.digest();
        if computed != self.footer.index_checksum {
            return Err(index_checksum_error(&self.footer, computed));
        }
        if self.next_file != off {
            return Err(Error::IndexMismatch {
                frame: self.footer.frame_count,
                reason: format!("frames end at {}, but the index starts at {off}", self.next_file),
            });
        }
        if self.next_raw != self.footer.raw_size {
            return Err(Error::BadField {
                what: "index".to_owned(),
                offset: off,
                field: "raw_size",
                value: i128::from(self.footer.raw_size),
                reason: format!("the frames hold {} raw bytes", self.next_raw),
            });
        }
        self.entries.shrink_to_fit();
        Ok(Index { entries: self.entries, footer: self.footer })
    }
}

/// Collects index entries while frames are written, then encodes the trailer.
#[derive(Debug, Default, Clone)]
pub struct TrailerBuilder {
    entries: Vec<IndexEntry>,
    raw_size: u64,
}

impl TrailerBuilder {
    /// An empty builder.
    pub fn new() -> TrailerBuilder {
        TrailerBuilder::default()
    }

    /// Record a frame written at `file_offset`.
    pub fn push(&mut self, h: &FrameHeader, file_offset: u64) {
        self.raw_size += u64::from(h.raw_len);
        self.entries.push(IndexEntry::from_frame(h, file_offset));
    }

    /// The entries so far.
    pub fn entries(&self) -> &[IndexEntry] {
        &self.entries
    }

    /// Raw bytes recorded so far.
    pub fn raw_size(&self) -> u64 {
        self.raw_size
    }

    /// The trailer bytes for an index that starts at `index_offset`.
    pub fn encode(&self, index_offset: u64) -> Vec<u8> {
        let count = self.entries.len() as u64;
        let mut out = Vec::with_capacity(
            INDEX_HEADER_LEN + self.entries.len() * INDEX_ENTRY_LEN + FOOTER_LEN,
        );
        out.extend_from_slice(&INDEX_MAGIC);
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&count.to_le_bytes());
        for e in &self.entries {
            e.encode(&mut out);
        }
        out.extend_from_slice(&index_offset.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&self.raw_size.to_le_bytes());
        let sum = xxh3(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out.extend_from_slice(&FOOTER_MAGIC);
        out
    }
}

/// Parse an index header during a forward read; returns the frame count it announces.
pub fn parse_index_header(b: &[u8], offset: u64) -> Result<u64> {
    if b.len() < INDEX_HEADER_LEN {
        return Err(Error::Truncated {
            what: "index header".to_owned(),
            offset,
            needed: INDEX_HEADER_LEN as u64,
            available: b.len() as u64,
        });
    }
    if b[..INDEX_MAGIC.len()] != INDEX_MAGIC {
        return Err(Error::BadMagic { what: "index".to_owned(), offset });
    }
    Ok(le_u64(b, IDX_COUNT_OFFSET))
}

#[cfg(test)]
mod tests;
