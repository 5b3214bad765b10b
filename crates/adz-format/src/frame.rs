//! The 48-byte frame header (docs/FORMAT.md, "Frame").

use crate::ids::CodecId;
use crate::spec::{CodecSpec, Filters, FILTER_SLOTS};
use crate::{le_u32, le_u64, xxh3, Error, Result, MAX_FRAME_RAW_LEN};

/// The frame magic "ADZF".
pub const FRAME_MAGIC: [u8; 4] = *b"ADZF";
/// Size of a frame header.
pub const FRAME_HEADER_LEN: usize = 56;
/// Frame flag bit 0: the payload is the raw data; codec and filters are not applied.
pub const FLAG_STORED_RAW: u8 = 0x01;
const KNOWN_FLAGS: u8 = FLAG_STORED_RAW;

const CODEC_ID_OFFSET: usize = FRAME_MAGIC.len();
const FLAGS_OFFSET: usize = CODEC_ID_OFFSET + 1;
const RESERVED_OFFSET: usize = FLAGS_OFFSET + 1;
const PARAM_OFFSET: usize = RESERVED_OFFSET + 2;
const RAW_LEN_OFFSET: usize = PARAM_OFFSET + 4;
const STORED_LEN_OFFSET: usize = RAW_LEN_OFFSET + 4;
const FILTERS_OFFSET: usize = STORED_LEN_OFFSET + 4;
const RAW_OFFSET_OFFSET: usize = FILTERS_OFFSET + 2 * FILTER_SLOTS;
const RAW_CHECKSUM_OFFSET: usize = RAW_OFFSET_OFFSET + 8;
const PAYLOAD_CHECKSUM_OFFSET: usize = RAW_CHECKSUM_OFFSET + 8;
const HEADER_CHECKSUM_OFFSET: usize = PAYLOAD_CHECKSUM_OFFSET + 8;
const _: () = assert!(HEADER_CHECKSUM_OFFSET + 4 == FRAME_HEADER_LEN);

/// A frame header. Fields are the on-disk values; [`FrameHeader::parse`] has checked them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Codec id byte. Known to this build unless the frame is stored raw.
    pub codec_id: u8,
    /// Frame flags ([`FLAG_STORED_RAW`]).
    pub flags: u8,
    /// Codec parameter.
    pub codec_param: i32,
    /// Raw bytes in the frame, 1 ..= `MAX_FRAME_RAW_LEN`.
    pub raw_len: u32,
    /// Payload bytes, 1 ..= `raw_len`.
    pub stored_len: u32,
    /// Filter slot bytes.
    pub filter_slots: [u8; 2 * FILTER_SLOTS],
    /// Offset of the frame's first raw byte.
    pub raw_offset: u64,
    /// xxh3 of the frame's raw data.
    pub raw_checksum: u64,
    /// xxh3 of the frame's payload as stored.
    pub payload_checksum: u64,
}

impl FrameHeader {
    /// A header for a frame the writer encoded with `codec` and `filters`; `stored_raw` says the
    /// payload is the raw data because encoding did not pay.
    #[allow(clippy::too_many_arguments)] // one argument per header field, all needed
    pub fn new(
        codec: CodecSpec,
        filters: Filters,
        stored_raw: bool,
        raw_len: u32,
        stored_len: u32,
        raw_offset: u64,
        raw_checksum: u64,
        payload_checksum: u64,
    ) -> FrameHeader {
        debug_assert!((1..=MAX_FRAME_RAW_LEN).contains(&raw_len));
        debug_assert!(stored_len >= 1 && stored_len <= raw_len);
        debug_assert!(!stored_raw || stored_len == raw_len);
        FrameHeader {
            codec_id: codec.id().as_u8(),
            flags: if stored_raw { FLAG_STORED_RAW } else { 0 },
            codec_param: codec.param(),
            raw_len,
            stored_len,
            filter_slots: filters.to_slots(),
            raw_offset,
            raw_checksum,
            payload_checksum,
        }
    }

    /// True if the payload is the raw data.
    pub fn stored_raw(&self) -> bool {
        self.flags & FLAG_STORED_RAW != 0
    }

    /// The codec, if this build knows it.
    pub fn codec(&self) -> Option<CodecSpec> {
        CodecSpec::new(CodecId::from_u8(self.codec_id)?, self.codec_param).ok()
    }

    /// The filter pipeline (checked by `parse` for frames that are not stored raw).
    pub fn filters(&self) -> Result<Filters> {
        Filters::from_slots(self.filter_slots)
    }

    /// Offset one past the frame's last raw byte.
    pub fn raw_end(&self) -> u64 {
        self.raw_offset + u64::from(self.raw_len)
    }

    /// Total bytes of the frame in the file: header plus payload.
    pub fn frame_len(&self) -> u64 {
        FRAME_HEADER_LEN as u64 + u64::from(self.stored_len)
    }

    /// Check the payload against `payload_checksum`; frame number and offset are for the error.
    pub fn check_payload(&self, payload: &[u8], frame: u64, offset: u64) -> Result<()> {
        let computed = xxh3(payload);
        if computed != self.payload_checksum {
            return Err(Error::PayloadChecksum {
                frame,
                offset,
                stored: self.payload_checksum,
                computed,
            });
        }
        Ok(())
    }

    /// A short description such as `zstd:3 shuffle:8` or `zstd:3 (stored raw)`.
    pub fn describe(&self) -> String {
        let codec = match self.codec() {
            Some(c) => c.to_string(),
            None => format!("codec#{}:{}", self.codec_id, self.codec_param),
        };
        let filters = match self.filters() {
            Ok(f) if f.is_empty() => String::new(),
            Ok(f) => format!(" {f}"),
            Err(_) => " filters?".to_owned(),
        };
        let raw = if self.stored_raw() { " (stored raw)" } else { "" };
        format!("{codec}{filters}{raw}")
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; FRAME_HEADER_LEN] {
        let mut b = [0u8; FRAME_HEADER_LEN];
        b[..CODEC_ID_OFFSET].copy_from_slice(&FRAME_MAGIC);
        b[CODEC_ID_OFFSET] = self.codec_id;
        b[FLAGS_OFFSET] = self.flags;
        b[PARAM_OFFSET..RAW_LEN_OFFSET].copy_from_slice(&self.codec_param.to_le_bytes());
        b[RAW_LEN_OFFSET..STORED_LEN_OFFSET].copy_from_slice(&self.raw_len.to_le_bytes());
        b[STORED_LEN_OFFSET..FILTERS_OFFSET].copy_from_slice(&self.stored_len.to_le_bytes());
        b[FILTERS_OFFSET..RAW_OFFSET_OFFSET].copy_from_slice(&self.filter_slots);
        b[RAW_OFFSET_OFFSET..RAW_CHECKSUM_OFFSET].copy_from_slice(&self.raw_offset.to_le_bytes());
        b[RAW_CHECKSUM_OFFSET..PAYLOAD_CHECKSUM_OFFSET]
            .copy_from_slice(&self.raw_checksum.to_le_bytes());
        b[PAYLOAD_CHECKSUM_OFFSET..HEADER_CHECKSUM_OFFSET]
            .copy_from_slice(&self.payload_checksum.to_le_bytes());
        let sum = xxh3(&b[..HEADER_CHECKSUM_OFFSET]) as u32;
        b[HEADER_CHECKSUM_OFFSET..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// True if `b` starts with the frame magic.
    pub fn has_magic(b: &[u8]) -> bool {
        b.starts_with(&FRAME_MAGIC)
    }

    /// Parse and check the header of frame number `frame`, found at file offset `offset`.
    ///
    /// Checks the magic, the header checksum, reserved bits, the length limits, and (unless the
    /// frame is stored raw, when they are not needed) that codec and filters are known.
    pub fn parse(b: &[u8], frame: u64, offset: u64) -> Result<FrameHeader> {
        let what = || format!("frame {frame}");
        if b.len() < FRAME_HEADER_LEN {
            return Err(Error::Truncated {
                what: format!("frame {frame} header"),
                offset,
                needed: FRAME_HEADER_LEN as u64,
                available: b.len() as u64,
            });
        }
        if !Self::has_magic(b) {
            return Err(Error::BadMagic { what: what(), offset });
        }
        let stored = le_u32(b, HEADER_CHECKSUM_OFFSET);
        let computed = xxh3(&b[..HEADER_CHECKSUM_OFFSET]) as u32;
        if stored != computed {
            return Err(Error::Checksum {
                what: format!("frame {frame} header"),
                offset,
                stored: u64::from(stored),
                computed: u64::from(computed),
            });
        }
        let bad = |field: &'static str, value: i128, reason: String| Error::BadField {
            what: what(),
            offset,
            field,
            value,
            reason,
        };
        let mut filter_slots = [0u8; 2 * FILTER_SLOTS];
        filter_slots.copy_from_slice(&b[FILTERS_OFFSET..RAW_OFFSET_OFFSET]);
        let h = FrameHeader {
            codec_id: b[CODEC_ID_OFFSET],
            flags: b[FLAGS_OFFSET],
            codec_param: le_u32(b, PARAM_OFFSET) as i32,
            raw_len: le_u32(b, RAW_LEN_OFFSET),
            stored_len: le_u32(b, STORED_LEN_OFFSET),
            filter_slots,
            raw_offset: le_u64(b, RAW_OFFSET_OFFSET),
            raw_checksum: le_u64(b, RAW_CHECKSUM_OFFSET),
            payload_checksum: le_u64(b, PAYLOAD_CHECKSUM_OFFSET),
        };
        if h.flags & !KNOWN_FLAGS != 0 {
            return Err(bad("flags", i128::from(h.flags), "unknown flag bits".to_owned()));
        }
        let reserved = u16::from_le_bytes([b[RESERVED_OFFSET], b[RESERVED_OFFSET + 1]]);
        if reserved != 0 {
            return Err(bad("reserved", i128::from(reserved), "must be zero".to_owned()));
        }
        if h.raw_len == 0 || h.raw_len > MAX_FRAME_RAW_LEN {
            return Err(bad(
                "raw_len",
                i128::from(h.raw_len),
                format!("must be 1..={MAX_FRAME_RAW_LEN}"),
            ));
        }
        if h.stored_len == 0 || h.stored_len > h.raw_len {
            return Err(bad(
                "stored_len",
                i128::from(h.stored_len),
                format!("must be 1..=raw_len ({})", h.raw_len),
            ));
        }
        if h.stored_raw() && h.stored_len != h.raw_len {
            return Err(bad(
                "stored_len",
                i128::from(h.stored_len),
                format!("a frame stored raw must have stored_len = raw_len ({})", h.raw_len),
            ));
        }
        if h.raw_offset.checked_add(u64::from(h.raw_len)).is_none() {
            return Err(bad("raw_offset", i128::from(h.raw_offset), "overflows".to_owned()));
        }
        if !h.stored_raw() {
            let id = CodecId::from_u8(h.codec_id).ok_or(Error::UnknownCodec {
                frame,
                offset,
                id: h.codec_id,
            })?;
            if !id.param_range().contains(&h.codec_param) {
                return Err(bad(
                    "codec_param",
                    i128::from(h.codec_param),
                    format!("{id} takes {:?}", id.param_range()),
                ));
            }
            Filters::from_slots(h.filter_slots).map_err(|e| bad("filters", 0, e.to_string()))?;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::FilterSpec;

    fn sample() -> FrameHeader {
        FrameHeader::new(
            "zstd:5".parse().unwrap(),
            Filters::new(&[FilterSpec::shuffle(8).unwrap()]).unwrap(),
            false,
            1000,
            400,
            4096,
            0xDEAD_BEEF,
            0xFEED,
        )
    }

    #[test]
    fn round_trip() {
        let h = sample();
        let b = h.encode();
        assert_eq!(FrameHeader::parse(&b, 0, 32).unwrap(), h);
        assert_eq!(h.describe(), "zstd:5 shuffle:8");
        assert_eq!(h.frame_len(), 456);
    }

    /// Rewrite one field and fix the header checksum, so the field check itself is exercised.
    fn with(mut b: [u8; FRAME_HEADER_LEN], f: impl FnOnce(&mut [u8])) -> [u8; FRAME_HEADER_LEN] {
        f(&mut b);
        let sum = xxh3(&b[..HEADER_CHECKSUM_OFFSET]) as u32;
        b[HEADER_CHECKSUM_OFFSET..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    #[test]
    fn every_field_check_fires() {
        let good = sample().encode();
        let field = |b: &[u8]| match FrameHeader::parse(b, 3, 99) {
            Err(Error::BadField { field, .. }) => field,
            other => panic!("expected BadField, got {other:?}"),
        };
        assert_eq!(field(&with(good, |b| b[FLAGS_OFFSET] = 0x80)), "flags");
        assert_eq!(field(&with(good, |b| b[RESERVED_OFFSET] = 1)), "reserved");
        assert_eq!(field(&with(good, |b| b[RAW_LEN_OFFSET..][..4].fill(0))), "raw_len");
        assert_eq!(
            field(&with(good, |b| b[RAW_LEN_OFFSET..][..4]
                .copy_from_slice(&(MAX_FRAME_RAW_LEN + 1).to_le_bytes()))),
            "raw_len"
        );
        assert_eq!(field(&with(good, |b| b[STORED_LEN_OFFSET..][..4].fill(0))), "stored_len");
        assert_eq!(
            field(&with(good, |b| b[STORED_LEN_OFFSET..][..4]
                .copy_from_slice(&1001u32.to_le_bytes()))),
            "stored_len"
        );
        assert_eq!(field(&with(good, |b| b[FLAGS_OFFSET] = FLAG_STORED_RAW)), "stored_len");
        assert_eq!(
            field(&with(good, |b| b[PARAM_OFFSET..][..4].copy_from_slice(&23i32.to_le_bytes()))),
            "codec_param"
        );
        assert_eq!(field(&with(good, |b| b[FILTERS_OFFSET] = 77)), "filters");
        assert_eq!(field(&with(good, |b| b[RAW_OFFSET_OFFSET..][..8].fill(0xFF))), "raw_offset");
        assert!(matches!(
            FrameHeader::parse(&with(good, |b| b[CODEC_ID_OFFSET] = 200), 3, 99),
            Err(Error::UnknownCodec { frame: 3, offset: 99, id: 200 })
        ));
        assert!(matches!(
            FrameHeader::parse(&with(good, |b| b[0] = b'X'), 3, 99),
            Err(Error::BadMagic { offset: 99, .. })
        ));
    }

    #[test]
    fn checksum_and_truncation() {
        let mut b = sample().encode();
        b[14] ^= 1;
        assert!(matches!(FrameHeader::parse(&b, 1, 0), Err(Error::Checksum { .. })));
        assert!(matches!(FrameHeader::parse(&b[..55], 1, 0), Err(Error::Truncated { .. })));
    }

    #[test]
    fn stored_raw_frame_with_unknown_codec_is_readable() {
        let mut h = sample();
        h.flags = FLAG_STORED_RAW;
        h.stored_len = h.raw_len;
        h.codec_id = 200;
        h.filter_slots = [99, 1, 0, 0, 0, 0, 0, 0];
        let parsed = FrameHeader::parse(&h.encode(), 0, 0).unwrap();
        assert!(parsed.stored_raw());
        assert_eq!(parsed.codec(), None);
    }
}
