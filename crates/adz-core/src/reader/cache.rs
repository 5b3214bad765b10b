//! The LRU of decoded frames a [`Reader`](super::Reader) keeps between reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// An LRU of decoded frames, bounded in bytes.
#[derive(Debug, Default)]
pub(super) struct FrameCache {
    capacity: u64,
    used: u64,
    tick: u64,
    frames: HashMap<usize, (Arc<Vec<u8>>, u64)>,
    order: BTreeMap<u64, usize>,
}

impl FrameCache {
    /// An empty cache of at most `capacity` bytes.
    pub(super) fn new(capacity: u64) -> FrameCache {
        FrameCache { capacity, ..Default::default() }
    }

    pub(super) fn get(&mut self, frame: usize) -> Option<Arc<Vec<u8>>> {
        let (data, t) = self.frames.get_mut(&frame)?;
        self.order.remove(t);
        self.tick += 1;
        *t = self.tick;
        self.order.insert(self.tick, frame);
        Some(Arc::clone(data))
    }

    pub(super) fn insert(&mut self, frame: usize, data: Arc<Vec<u8>>) {
        let len = data.len() as u64;
        if len > self.capacity || self.frames.contains_key(&frame) {
            return;
        }
        while self.used + len > self.capacity {
            let Some((_, old)) = self.order.pop_first() else { break };
            if let Some((d, _)) = self.frames.remove(&old) {
                self.used -= d.len() as u64;
            }
        }
        self.tick += 1;
        self.order.insert(self.tick, frame);
        self.frames.insert(frame, (data, self.tick));
        self.used += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_evicts_least_recently_used() {
        let mut c = FrameCache { capacity: 30, ..Default::default() };
        c.insert(0, Arc::new(vec![0; 10]));
        c.insert(1, Arc::new(vec![1; 10]));
        c.insert(2, Arc::new(vec![2; 10]));
        assert!(c.get(0).is_some()); // 1 is now the oldest
        c.insert(3, Arc::new(vec![3; 10]));
        assert!(c.get(1).is_none());
        assert!(c.get(0).is_some() && c.get(2).is_some() && c.get(3).is_some());
        assert_eq!(c.used, 30);
        c.insert(4, Arc::new(vec![4; 31])); // larger than the cache: not kept
        assert!(c.get(4).is_none());
        assert_eq!(c.used, 30);
    }
}
