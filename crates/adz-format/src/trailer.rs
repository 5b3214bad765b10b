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
    /// describe contiguous frames from the file header to the index.
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
        let sum_end = b.len() - FOOTER_LEN + F_CHECKSUM;
        let computed = xxh3(&b[..sum_end]);
        if computed != footer.index_checksum {
            return Err(Error::Checksum {
                what: "index".to_owned(),
                offset: off,
                stored: footer.index_checksum,
                computed,
            });
        }
        let bad = |field: &'static str, value: u64, reason: String| Error::BadField {
            what: "index".to_owned(),
            offset: off,
            field,
            value: i128::from(value),
            reason,
        };
        let reserved = le_u32(b, INDEX_MAGIC.len());
        if reserved != 0 {
            return Err(bad("reserved", u64::from(reserved), "must be zero".to_owned()));
        }
        let count = le_u64(b, IDX_COUNT_OFFSET);
        if count != footer.frame_count {
            return Err(bad(
                "frame_count",
                count,
                format!("the footer says {}", footer.frame_count),
            ));
        }
        let mut entries = Vec::with_capacity(count as usize);
        let mut next_file = FILE_HEADER_LEN as u64;
        let mut next_raw = 0u64;
        for (i, chunk) in
            b[INDEX_HEADER_LEN..b.len() - FOOTER_LEN].chunks_exact(INDEX_ENTRY_LEN).enumerate()
        {
            let e = IndexEntry::parse(chunk);
            let i = i as u64;
            let mismatch = |reason: String| Error::IndexMismatch { frame: i, reason };
            if le_u32(chunk, E_RESERVED) & 0xFFFF != 0 || e.flags & !FLAG_STORED_RAW != 0 {
                return Err(mismatch("reserved bits are set".to_owned()));
            }
            if e.raw_len == 0 || e.raw_len > MAX_FRAME_RAW_LEN {
                return Err(mismatch(format!(
                    "raw_len {} outside 1..={MAX_FRAME_RAW_LEN}",
                    e.raw_len
                )));
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
            if e.file_offset != next_file {
                return Err(mismatch(format!(
                    "file_offset {} but the previous frame ends at {next_file}",
                    e.file_offset
                )));
            }
            if e.raw_offset != next_raw {
                return Err(mismatch(format!(
                    "raw_offset {} but the previous frame ends at raw offset {next_raw}",
                    e.raw_offset
                )));
            }
            next_file = e.file_range().end;
            next_raw += u64::from(e.raw_len);
            entries.push(e);
        }
        if next_file != off {
            return Err(Error::IndexMismatch {
                frame: count,
                reason: format!("frames end at {next_file}, but the index starts at {off}"),
            });
        }
        if next_raw != footer.raw_size {
            return Err(bad(
                "raw_size",
                footer.raw_size,
                format!("the frames hold {next_raw} raw bytes"),
            ));
        }
        Ok(Index { entries, footer: *footer })
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
mod tests {
    use super::*;
    use crate::spec::{CodecSpec, Filters};

    fn file_with(frames: &[(u32, u32)]) -> (Vec<u8>, TrailerBuilder) {
        // Build the layout only (payload bytes are zeros): enough for the index checks.
        let mut file = vec![0u8; FILE_HEADER_LEN];
        let mut t = TrailerBuilder::new();
        let mut raw = 0;
        for &(raw_len, stored_len) in frames {
            let h = FrameHeader::new(
                CodecSpec::NONE,
                Filters::NONE,
                false,
                raw_len,
                stored_len,
                raw,
                7,
                8,
            );
            t.push(&h, file.len() as u64);
            file.extend_from_slice(&h.encode());
            file.resize(file.len() + stored_len as usize, 0);
            raw += u64::from(raw_len);
        }
        let off = file.len() as u64;
        file.extend_from_slice(&t.encode(off));
        (file, t)
    }

    fn parse_file(file: &[u8]) -> Result<Index> {
        let footer = Footer::parse(&file[file.len() - FOOTER_LEN..], file.len() as u64)?;
        Index::parse(&file[footer.index_offset as usize..], &footer)
    }

    #[test]
    fn round_trip_and_lookup() {
        let (file, t) = file_with(&[(100, 50), (100, 100), (30, 10)]);
        let idx = parse_file(&file).unwrap();
        assert_eq!(idx.entries(), t.entries());
        assert_eq!(idx.raw_size(), 230);
        assert_eq!(idx.frames_for(0..1), 0..1);
        assert_eq!(idx.frames_for(99..101), 0..2);
        assert_eq!(idx.frames_for(100..200), 1..2);
        assert_eq!(idx.frames_for(150..230), 1..3);
        assert_eq!(idx.frames_for(229..10_000), 2..3);
        assert_eq!(idx.frames_for(230..231), 0..0);
        assert_eq!(idx.frames_for(5..5), 0..0);
    }

    #[test]
    fn empty_file_has_empty_index() {
        let (file, _) = file_with(&[]);
        assert_eq!(file.len(), FILE_HEADER_LEN + INDEX_HEADER_LEN + FOOTER_LEN);
        let idx = parse_file(&file).unwrap();
        assert!(idx.entries().is_empty());
        assert_eq!(idx.frames_for(0..10), 0..0);
    }

    #[test]
    fn footer_checks() {
        let (file, _) = file_with(&[(10, 10)]);
        let n = file.len();
        let foot = |f: &[u8]| Footer::parse(&f[f.len() - FOOTER_LEN..], f.len() as u64);
        // Wrong magic.
        let mut f = file.clone();
        f[n - 1] ^= 1;
        assert!(matches!(foot(&f), Err(Error::BadMagic { .. })));
        // Index offset pointing elsewhere.
        let mut f = file.clone();
        f[n - FOOTER_LEN] ^= 4;
        assert!(matches!(foot(&f), Err(Error::BadField { field: "index_offset", .. })));
        // A frame count that would need a huge index (and would overflow).
        let mut f = file.clone();
        f[n - FOOTER_LEN + F_FRAME_COUNT..][..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(foot(&f), Err(Error::BadField { field: "frame_count", .. })));
        let mut f = file.clone();
        f[n - FOOTER_LEN + F_FRAME_COUNT..][..8].copy_from_slice(&(MAX_FRAME_COUNT).to_le_bytes());
        assert!(matches!(foot(&f), Err(Error::BadField { field: "index_offset", .. })));
        // Index offset inside the header.
        let mut f = file.clone();
        f[n - FOOTER_LEN..][..8].copy_from_slice(&5u64.to_le_bytes());
        assert!(matches!(foot(&f), Err(Error::BadField { field: "index_offset", .. })));
        // Too short to hold a trailer at all.
        assert!(matches!(Footer::parse(&file[..40], 40), Err(Error::Truncated { .. })));
    }

    /// Rewrite bytes of the trailer and fix its checksum, so the later checks are exercised.
    fn resum(file: &mut [u8]) {
        let n = file.len();
        let off = le_u64(&file[n - FOOTER_LEN..], 0) as usize;
        let sum = xxh3(&file[off..n - FOOTER_LEN + F_CHECKSUM]);
        file[n - FOOTER_LEN + F_CHECKSUM..][..8].copy_from_slice(&sum.to_le_bytes());
    }

    #[test]
    fn index_checks() {
        let (file, _) = file_with(&[(100, 50), (100, 100)]);
        let off = le_u64(&file[file.len() - FOOTER_LEN..], 0) as usize;
        let e0 = off + INDEX_HEADER_LEN;
        let e1 = e0 + INDEX_ENTRY_LEN;

        let mut f = file.clone();
        f[e0 + E_RAW_CHECKSUM] ^= 1; // no resum
        assert!(matches!(parse_file(&f), Err(Error::Checksum { .. })));

        let case = |patch: &dyn Fn(&mut Vec<u8>)| {
            let mut f = file.clone();
            patch(&mut f);
            resum(&mut f);
            parse_file(&f).unwrap_err()
        };
        assert!(matches!(case(&|f| f[off] = b'X'), Error::BadMagic { .. }));
        assert!(matches!(case(&|f| f[off + 4] = 1), Error::BadField { field: "reserved", .. }));
        assert!(matches!(
            case(&|f| f[off + IDX_COUNT_OFFSET] = 3),
            Error::BadField { field: "frame_count", .. }
        ));
        assert!(matches!(
            case(&|f| f[e1 + E_FILE_OFFSET] ^= 1),
            Error::IndexMismatch { frame: 1, .. }
        ));
        assert!(matches!(
            case(&|f| f[e1 + E_RAW_OFFSET] ^= 1),
            Error::IndexMismatch { frame: 1, .. }
        ));
        assert!(matches!(case(&|f| f[e0 + E_RESERVED] = 1), Error::IndexMismatch { frame: 0, .. }));
        assert!(matches!(case(&|f| f[e0 + E_FLAGS] = 0x40), Error::IndexMismatch { frame: 0, .. }));
        assert!(matches!(
            case(&|f| f[e0 + E_RAW_LEN..][..4].fill(0)),
            Error::IndexMismatch { frame: 0, .. }
        ));
        assert!(matches!(
            case(&|f| f[e0 + E_STORED_LEN] = 101),
            Error::IndexMismatch { frame: 0, .. }
        ));
        assert!(matches!(
            case(&|f| f[e0 + E_FLAGS] = FLAG_STORED_RAW),
            Error::IndexMismatch { frame: 0, .. }
        ));
        // Stored length of the last frame changed: frames no longer end at the index.
        assert!(matches!(
            case(&|f| f[e1 + E_STORED_LEN] = 99),
            Error::IndexMismatch { frame: 2, .. }
        ));
        let n = file.len();
        assert!(matches!(
            case(&|f| f[n - FOOTER_LEN + F_RAW_SIZE] ^= 1),
            Error::BadField { field: "raw_size", .. }
        ));
    }

    #[test]
    fn entry_must_match_frame() {
        let h = FrameHeader::new(CodecSpec::NONE, Filters::NONE, false, 10, 10, 0, 1, 2);
        let e = IndexEntry::from_frame(&h, 32);
        assert!(e.check_frame(&h, 0).is_ok());
        let mut other = h;
        other.raw_checksum = 2;
        assert!(matches!(e.check_frame(&other, 4), Err(Error::IndexMismatch { frame: 4, .. })));
    }
}
