//! [`FrameBytes`]: a decoded frame's bytes as the reader and its cache hand them out, and an
//! opt-in pool of their buffers ([`recycle_frame_buffers`], [`frame_buffer`]).

use std::ops::{Deref, Range};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Buffers smaller than this are left to the allocator.
const MIN_POOLED: usize = 64 << 10;

/// Idle bytes the pool may keep (0: no pool).
static POOL_LIMIT: AtomicU64 = AtomicU64::new(0);
/// Idle buffers, and their bytes (capacities).
static POOL: Mutex<(Vec<Vec<u8>>, u64)> = Mutex::new((Vec::new(), 0));

/// Keep the buffers of dropped [`FrameBytes`] (of 64 KiB or more), up to `max_idle_bytes` for
/// the whole process, for [`frame_buffer`] to hand out again: a buffer reused has its pages
/// in place, a new one is faulted in page by page as it is first written. 0 (the default)
/// keeps none and empties the pool.
pub fn recycle_frame_buffers(max_idle_bytes: u64) {
    POOL_LIMIT.store(max_idle_bytes, Ordering::Relaxed);
    if max_idle_bytes == 0 {
        *super::lock(&POOL) = (Vec::new(), 0);
    }
}

/// A buffer of `len` bytes to be overwritten whole (by a fetch): a recycled one of at most
/// twice that capacity if the pool holds one (its bytes are stale, not zeroed again), else
/// a new zeroed one. For a [`Storage`](adz_store::Storage) that fetches frames.
pub fn frame_buffer(len: usize) -> Vec<u8> {
    if len >= MIN_POOLED && POOL_LIMIT.load(Ordering::Relaxed) > 0 {
        let mut pool = super::lock(&POOL);
        let fits = |v: &Vec<u8>| v.capacity() >= len && v.capacity() / 2 <= len;
        if let Some(k) = pool.0.iter().rposition(fits) {
            let mut v = pool.0.swap_remove(k);
            pool.1 -= v.capacity() as u64;
            drop(pool);
            v.truncate(len);
            v.resize(len, 0); // zeroes only what the buffer held less than `len`
            return v;
        }
    }
    vec![0; len]
}

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

impl Drop for FrameBytes {
    fn drop(&mut self) {
        let limit = POOL_LIMIT.load(Ordering::Relaxed);
        if limit == 0 {
            return;
        }
        // The last holder of the buffer gives it back, if the pool has room.
        if let Some(v) = Arc::get_mut(&mut self.buf) {
            let cap = v.capacity() as u64;
            if cap >= MIN_POOLED as u64 {
                let mut pool = super::lock(&POOL);
                if pool.1 + cap <= limit {
                    pool.1 += cap;
                    pool.0.push(std::mem::take(v));
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_frame_lends_its_buffer_only_while_recycling_is_on() {
        // A length no other test uses: the pool is process-wide.
        let len = (MIN_POOLED << 1) + 17;
        let ptr_of = |f: &FrameBytes| f.as_slice().as_ptr();
        recycle_frame_buffers(4 * len as u64);
        let f = FrameBytes::from(frame_buffer(len));
        let p = ptr_of(&f);
        let copy = f.clone();
        drop(f); // not the last holder: nothing to recycle yet
        let other = frame_buffer(len);
        assert_ne!(other.as_ptr(), p);
        drop(copy);
        let again = frame_buffer(len);
        assert_eq!((again.as_ptr(), again.len()), (p, len));
        // A slice of a shared buffer is handed out whole again, then too small a request
        // (under half the capacity) gets a new buffer.
        let s = FrameBytes::slice(Arc::new(again), 56..len);
        drop(s);
        let small = frame_buffer(len / 2 - 1);
        assert_ne!(small.as_ptr(), p);
        let shorter = frame_buffer(len - 56);
        assert_eq!((shorter.as_ptr(), shorter.len()), (p, len - 56));
        recycle_frame_buffers(0);
        let f = FrameBytes::from(frame_buffer(len));
        let p = ptr_of(&f);
        drop(f);
        let _keep = frame_buffer(len);
        assert_eq!(POOL.lock().unwrap().0.iter().filter(|v| v.as_ptr() == p).count(), 0);
    }
}
