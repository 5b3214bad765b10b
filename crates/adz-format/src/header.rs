//! The 32-byte file header (docs/FORMAT.md, "File header").

use crate::{le_u32, le_u64, xxh3, Error, Result, MAX_FRAME_RAW_LEN};

/// The file magic: "\x89ADZ\r\n\x1a\n".
pub const FILE_MAGIC: [u8; 8] = [0x89, b'A', b'D', b'Z', 0x0D, 0x0A, 0x1A, 0x0A];
/// Size of the file header.
pub const FILE_HEADER_LEN: usize = 32;
/// The major version this crate writes and reads.
pub const VERSION_MAJOR: u8 = 1;
/// The minor version this crate writes. 1.1 added the `delta` and `xor` filters (ids 2 and 3),
/// 1.2 the `bitshuffle` filter (id 4); a reader reads the files of lower minor versions
/// unchanged.
pub const VERSION_MINOR: u8 = 2;

const VERSION_OFFSET: usize = FILE_MAGIC.len();
const FLAGS_OFFSET: usize = VERSION_OFFSET + 2;
const BLOCK_SIZE_OFFSET: usize = FLAGS_OFFSET + 2;
const RESERVED_OFFSET: usize = BLOCK_SIZE_OFFSET + 4;
const CHECKSUM_OFFSET: usize = RESERVED_OFFSET + 8;
const _: () = assert!(CHECKSUM_OFFSET + 8 == FILE_HEADER_LEN);

/// The file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// Minor format version of the file (the major is always [`VERSION_MAJOR`] once parsed).
    pub version_minor: u8,
    /// Nominal raw bytes per block.
    pub block_size: u32,
}

impl FileHeader {
    /// A header for a new file with the given block size (1 ..= `MAX_FRAME_RAW_LEN`).
    pub fn new(block_size: u32) -> Result<FileHeader> {
        check_block_size(block_size, 0)?;
        Ok(FileHeader { version_minor: VERSION_MINOR, block_size })
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; FILE_HEADER_LEN] {
        let mut b = [0u8; FILE_HEADER_LEN];
        b[..VERSION_OFFSET].copy_from_slice(&FILE_MAGIC);
        b[VERSION_OFFSET] = VERSION_MAJOR;
        b[VERSION_OFFSET + 1] = self.version_minor;
        // flags and reserved stay zero
        b[BLOCK_SIZE_OFFSET..RESERVED_OFFSET].copy_from_slice(&self.block_size.to_le_bytes());
        let sum = xxh3(&b[..CHECKSUM_OFFSET]);
        b[CHECKSUM_OFFSET..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Parse and check a file header.
    pub fn parse(b: &[u8]) -> Result<FileHeader> {
        let what = || "file header".to_owned();
        if b.len() < FILE_HEADER_LEN {
            // A short file that does not even start like adz is "not an adz file", not "truncated".
            if !FILE_MAGIC.starts_with(&b[..b.len().min(FILE_MAGIC.len())]) || b.is_empty() {
                return Err(Error::BadMagic { what: what(), offset: 0 });
            }
            return Err(Error::Truncated {
                what: what(),
                offset: 0,
                needed: FILE_HEADER_LEN as u64,
                available: b.len() as u64,
            });
        }
        if b[..VERSION_OFFSET] != FILE_MAGIC {
            return Err(Error::BadMagic { what: what(), offset: 0 });
        }
        let stored = le_u64(b, CHECKSUM_OFFSET);
        let computed = xxh3(&b[..CHECKSUM_OFFSET]);
        if stored != computed {
            return Err(Error::Checksum { what: what(), offset: 0, stored, computed });
        }
        let (major, minor) = (b[VERSION_OFFSET], b[VERSION_OFFSET + 1]);
        if major != VERSION_MAJOR {
            return Err(Error::UnsupportedVersion { major, minor });
        }
        let flags = u16::from_le_bytes([b[FLAGS_OFFSET], b[FLAGS_OFFSET + 1]]);
        if flags != 0 {
            return Err(Error::BadField {
                what: what(),
                offset: 0,
                field: "flags",
                value: i128::from(flags),
                reason: "no file flag is defined in format 1.x".to_owned(),
            });
        }
        if b[RESERVED_OFFSET..CHECKSUM_OFFSET].iter().any(|&x| x != 0) {
            return Err(Error::BadField {
                what: what(),
                offset: 0,
                field: "reserved",
                value: i128::from(le_u64(b, RESERVED_OFFSET)),
                reason: "reserved bytes must be zero".to_owned(),
            });
        }
        let block_size = le_u32(b, BLOCK_SIZE_OFFSET);
        check_block_size(block_size, 0)?;
        Ok(FileHeader { version_minor: minor, block_size })
    }
}

fn check_block_size(block_size: u32, offset: u64) -> Result<()> {
    if block_size == 0 || block_size > MAX_FRAME_RAW_LEN {
        return Err(Error::BadField {
            what: "file header".to_owned(),
            offset,
            field: "block_size",
            value: i128::from(block_size),
            reason: format!("must be 1..={MAX_FRAME_RAW_LEN}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let h = FileHeader::new(1 << 20).unwrap();
        let b = h.encode();
        assert_eq!(&b[..8], &FILE_MAGIC);
        assert_eq!(FileHeader::parse(&b).unwrap(), h);
    }

    #[test]
    fn rejects_bad_block_size() {
        assert!(FileHeader::new(0).is_err());
        assert!(FileHeader::new(MAX_FRAME_RAW_LEN + 1).is_err());
        assert!(FileHeader::new(MAX_FRAME_RAW_LEN).is_ok());
    }

    #[test]
    fn short_input() {
        assert!(matches!(FileHeader::parse(b""), Err(Error::BadMagic { .. })));
        assert!(matches!(FileHeader::parse(b"PK\x03\x04"), Err(Error::BadMagic { .. })));
        let b = FileHeader::new(4096).unwrap().encode();
        assert!(matches!(FileHeader::parse(&b[..20]), Err(Error::Truncated { needed: 32, .. })));
    }

    #[test]
    fn newer_major_is_rejected_with_its_version() {
        let mut b = FileHeader::new(4096).unwrap().encode();
        b[8] = 2;
        b[9] = 0;
        let sum = xxh3(&b[..24]);
        b[24..].copy_from_slice(&sum.to_le_bytes());
        assert_eq!(FileHeader::parse(&b), Err(Error::UnsupportedVersion { major: 2, minor: 0 }));
    }

    #[test]
    fn newer_minor_is_accepted() {
        let mut b = FileHeader::new(4096).unwrap().encode();
        b[9] = 7;
        let sum = xxh3(&b[..24]);
        b[24..].copy_from_slice(&sum.to_le_bytes());
        assert_eq!(FileHeader::parse(&b).unwrap().version_minor, 7);
    }

    #[test]
    fn writes_1_2_and_reads_1_0_and_1_1() {
        let mut b = FileHeader::new(4096).unwrap().encode();
        assert_eq!(&b[8..10], &[1, 2], "this build writes format 1.2");
        for minor in [0, 1] {
            b[9] = minor;
            let sum = xxh3(&b[..24]);
            b[24..].copy_from_slice(&sum.to_le_bytes());
            assert_eq!(FileHeader::parse(&b).unwrap().version_minor, minor);
        }
    }
}
