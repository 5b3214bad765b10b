//! One LRU of decoded frames shared by every file of a mount, bounded in bytes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A frame of one opened version of a file: (reader id, frame index). Reader ids are never
/// reused, so a new version of a file never meets the frames of an old one.
pub(crate) type Key = (u64, usize);

/// Decoded frames, least recently used evicted first, at most `capacity` bytes.
#[derive(Debug, Default)]
pub(crate) struct FrameCache {
    capacity: u64,
    used: u64,
    tick: u64,
    frames: HashMap<Key, (Arc<Vec<u8>>, u64)>,
    order: BTreeMap<u64, Key>,
}

impl FrameCache {
    pub(crate) fn new(capacity: u64) -> FrameCache {
        FrameCache { capacity, ..Default::default() }
    }

    pub(crate) fn get(&mut self, key: Key) -> Option<Arc<Vec<u8>>> {
        let (data, t) = self.frames.get_mut(&key)?;
        self.order.remove(t);
        self.tick += 1;
        *t = self.tick;
        self.order.insert(self.tick, key);
        Some(Arc::clone(data))
    }

    pub(crate) fn contains(&self, key: Key) -> bool {
        self.frames.contains_key(&key)
    }

    pub(crate) fn insert(&mut self, key: Key, data: Arc<Vec<u8>>) {
        let len = data.len() as u64;
        if len > self.capacity || self.frames.contains_key(&key) {
            return;
        }
        while self.used + len > self.capacity {
            let Some((_, old)) = self.order.pop_first() else { break };
            if let Some((d, _)) = self.frames.remove(&old) {
                self.used -= d.len() as u64;
            }
        }
        self.tick += 1;
        self.order.insert(self.tick, key);
        self.frames.insert(key, (data, self.tick));
        self.used += len;
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_and_stays_within_capacity() {
        let mut c = FrameCache::new(10);
        c.insert((1, 0), Arc::new(vec![0; 4]));
        c.insert((1, 1), Arc::new(vec![1; 4]));
        assert!(c.get((1, 0)).is_some());
        c.insert((2, 0), Arc::new(vec![2; 4]));
        assert!(c.contains((1, 0)), "recently used stays");
        assert!(!c.contains((1, 1)), "least recently used goes");
        assert!(c.used() <= 10);
        c.insert((3, 0), Arc::new(vec![3; 11]));
        assert!(!c.contains((3, 0)), "larger than the cache: not cached");
    }
}
