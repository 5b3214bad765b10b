//! The LRU of decoded frames a [`Reader`](super::Reader) keeps between reads; `adz mount`
//! keeps one for all its files with a key that names the file too.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use super::FrameBytes;

/// Decoded frames, least recently used evicted first, at most `capacity` bytes. `K` names a
/// frame: its index in one file (a [`Reader`](super::Reader)'s), or a file and an index.
#[derive(Debug)]
pub struct FrameCache<K = usize> {
    capacity: u64,
    used: u64,
    tick: u64,
    frames: HashMap<K, (FrameBytes, u64)>,
    order: BTreeMap<u64, K>,
}

impl<K: Copy + Eq + Hash> FrameCache<K> {
    /// An empty cache of at most `capacity` bytes.
    pub fn new(capacity: u64) -> FrameCache<K> {
        FrameCache { capacity, used: 0, tick: 0, frames: HashMap::new(), order: BTreeMap::new() }
    }

    /// The frame's bytes, if cached; it becomes the most recently used.
    pub fn get(&mut self, key: K) -> Option<FrameBytes> {
        let (data, t) = self.frames.get_mut(&key)?;
        self.order.remove(t);
        self.tick += 1;
        *t = self.tick;
        self.order.insert(self.tick, key);
        Some(data.clone())
    }

    /// Whether the frame is cached (without making it recently used).
    pub fn contains(&self, key: K) -> bool {
        self.frames.contains_key(&key)
    }

    /// Keep the frame, evicting the least recently used ones to make room; a frame larger
    /// than the whole cache is not kept.
    pub fn insert(&mut self, key: K, data: FrameBytes) {
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

    /// Drop the frame, if cached.
    pub fn remove(&mut self, key: K) -> Option<FrameBytes> {
        let (data, t) = self.frames.remove(&key)?;
        self.order.remove(&t);
        self.used -= data.len() as u64;
        Some(data)
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_evicts_least_recently_used() {
        let mut c = FrameCache::new(30);
        c.insert(0, FrameBytes::from(vec![0; 10]));
        c.insert(1, FrameBytes::from(vec![1; 10]));
        c.insert(2, FrameBytes::from(vec![2; 10]));
        assert!(c.get(0).is_some()); // 1 is now the oldest
        c.insert(3, FrameBytes::from(vec![3; 10]));
        assert!(c.get(1).is_none());
        assert!(c.get(0).is_some() && c.get(2).is_some() && c.get(3).is_some());
        assert_eq!(c.used(), 30);
        c.insert(4, FrameBytes::from(vec![4; 31])); // larger than the cache: not kept
        assert!(c.get(4).is_none());
        assert_eq!(c.used(), 30);
    }

    #[test]
    fn keys_may_name_a_file_and_a_frame_and_contains_does_not_refresh() {
        let mut c: FrameCache<(u64, usize)> = FrameCache::new(10);
        c.insert((1, 0), FrameBytes::from(vec![0; 4]));
        c.insert((1, 1), FrameBytes::from(vec![1; 4]));
        assert!(c.contains((1, 0)));
        c.insert((2, 0), FrameBytes::from(vec![2; 4]));
        assert!(!c.contains((1, 0)), "contains did not make (1, 0) recently used");
        assert!(c.contains((1, 1)) && c.contains((2, 0)));
        assert!(c.used() <= 10);
        // Removed: gone, its bytes no longer counted, and it is not evicted a second time.
        assert_eq!(c.remove((1, 1)).map(|d| d.len()), Some(4));
        assert!(c.remove((1, 1)).is_none() && !c.contains((1, 1)));
        assert_eq!(c.used(), 4);
        c.insert((3, 0), FrameBytes::from(vec![3; 6]));
        assert!(c.contains((2, 0)) && c.contains((3, 0)));
    }
}
