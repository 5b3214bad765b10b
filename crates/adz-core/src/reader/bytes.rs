//! [`FrameBytes`]: a decoded frame's bytes as the reader and its cache hand them out.

use std::ops::{Deref, Range};
use std::sync::Arc;

/// A decoded frame's bytes, cheap to clone and shared with the cache: a buffer of its own,
/// or, for a frame stored raw, the payload's part of the bytes fetched for it (no copy).
#[derive(Clone)]
pub struct FrameBytes {
    buf: Arc<Vec<u8>>,
    range: Range<usize>,
}

impl FrameBytes {
    /// `range` of a shared buffer (which it keeps alive: the caller bounds what is beyond it).
    pub(super) fn slice(buf: Arc<Vec<u8>>, range: Range<usize>) -> FrameBytes {
        assert!(range.start <= range.end && range.end <= buf.len(), "slice past the buffer");
        FrameBytes { buf, range }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }

    /// Whether the bytes are part of a larger shared buffer (a raw frame's fetched bytes).
    pub fn is_shared_slice(&self) -> bool {
        self.range.len() != self.buf.len()
    }
}

impl std::fmt::Debug for FrameBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (len, range) = (self.buf.len(), &self.range);
        write!(f, "FrameBytes({} bytes, {range:?} of a buffer of {len})", range.len())
    }
}

impl From<Vec<u8>> for FrameBytes {
    fn from(v: Vec<u8>) -> FrameBytes {
        FrameBytes { range: 0..v.len(), buf: Arc::new(v) }
    }
}

impl Deref for FrameBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for FrameBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}
