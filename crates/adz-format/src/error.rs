use thiserror::Error;

/// Everything that can be wrong with bytes that claim to be an adz file.
///
/// Messages name what is wrong and where (frame number, file offset), so a user can tell a
/// truncated download from a flipped bit from a file of another format.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The magic number of a structure is wrong: not an adz file, or not where one was expected.
    #[error("bad magic in {what} at offset {offset}: not an adz file, or damaged")]
    BadMagic {
        /// Which structure ("file header", "frame 3", "footer", ...).
        what: String,
        /// File offset of the structure.
        offset: u64,
    },
    /// A major version this build cannot read.
    #[error("unsupported adz format version {major}.{minor} (this build reads 1.x)")]
    UnsupportedVersion {
        /// Major version in the file.
        major: u8,
        /// Minor version in the file.
        minor: u8,
    },
    /// A checksum over a header or the index does not match.
    #[error("checksum mismatch in {what} at offset {offset} (stored {stored:#x}, computed {computed:#x})")]
    Checksum {
        /// Which structure ("file header", "frame 3 header", "index").
        what: String,
        /// File offset of the structure.
        offset: u64,
        /// The checksum stored in the file.
        stored: u64,
        /// The checksum of the bytes as read.
        computed: u64,
    },
    /// The checksum of a frame's decoded data does not match: the payload is damaged.
    #[error("frame {frame} at offset {offset}: data checksum mismatch (stored {stored:#018x}, decoded data has {computed:#018x})")]
    DataChecksum {
        /// Frame number.
        frame: u64,
        /// File offset of the frame header.
        offset: u64,
        /// The checksum stored in the frame header.
        stored: u64,
        /// The checksum of the decoded data.
        computed: u64,
    },
    /// The checksum of a frame's payload does not match: the stored bytes are damaged.
    #[error("frame {frame} at offset {offset}: payload checksum mismatch (stored {stored:#018x}, payload has {computed:#018x})")]
    PayloadChecksum {
        /// Frame number.
        frame: u64,
        /// File offset of the frame header.
        offset: u64,
        /// The checksum stored in the frame header.
        stored: u64,
        /// The checksum of the payload as read.
        computed: u64,
    },
    /// A field holds a value the format does not allow here.
    #[error("{what} at offset {offset}: invalid {field} = {value}: {reason}")]
    BadField {
        /// Which structure ("frame 3", "footer", ...).
        what: String,
        /// File offset of the structure.
        offset: u64,
        /// Field name as in docs/FORMAT.md.
        field: &'static str,
        /// The value found.
        value: i128,
        /// Why it is invalid.
        reason: String,
    },
    /// A frame uses a codec this build does not know.
    #[error("frame {frame} at offset {offset}: unknown codec id {id} (written by a newer adz?)")]
    UnknownCodec {
        /// Frame number.
        frame: u64,
        /// File offset of the frame header.
        offset: u64,
        /// The codec id found.
        id: u8,
    },
    /// A filter slot holds a filter id this build does not know.
    #[error("unknown filter id {id} (written by a newer adz?)")]
    UnknownFilter {
        /// The filter id found.
        id: u8,
    },
    /// Filter slots are not well formed.
    #[error("filter slot {slot}: {reason}")]
    BadFilterSlot {
        /// Slot number 0..4.
        slot: usize,
        /// Why.
        reason: &'static str,
    },
    /// The data ends before a structure it must hold.
    #[error("truncated: {what} at offset {offset} needs {needed} bytes, only {available} present")]
    Truncated {
        /// What was being read.
        what: String,
        /// Where it starts.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes there are.
        available: u64,
    },
    /// The index and a frame disagree, or the index does not describe contiguous frames.
    #[error("index entry {frame}: {reason}")]
    IndexMismatch {
        /// Frame number.
        frame: u64,
        /// What disagrees.
        reason: String,
    },
    /// A codec or filter parameter out of range (from a caller, not a file).
    #[error("invalid parameter {value} for {what}: valid range is {min}..={max}")]
    InvalidParam {
        /// Codec or filter name.
        what: &'static str,
        /// The value given.
        value: i64,
        /// Smallest valid value.
        min: i64,
        /// Largest valid value.
        max: i64,
    },
    /// A filter parameter inside the range but not one the filter takes (`delta:3`), from a
    /// caller. In a file this is [`Error::BadFilterSlot`].
    #[error("invalid parameter {param} for filter {filter}: expected {valid}")]
    BadFilterParam {
        /// Filter name.
        filter: &'static str,
        /// The value given.
        param: u8,
        /// The valid values, in words.
        valid: &'static str,
    },
    /// A textual codec/filter description could not be parsed.
    #[error("cannot parse {input:?}: {reason}")]
    Parse {
        /// The text given.
        input: String,
        /// Why.
        reason: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
