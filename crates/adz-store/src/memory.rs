//! Objects in a map in memory, for tests.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::ops::Range;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::{validate_name, validate_prefix, Error, ObjectMeta, Result, Storage, Tail, Upload};

type Objects = BTreeMap<String, Arc<Vec<u8>>>;

/// A store that keeps objects in memory.
///
/// Clones share the same objects, so a test can keep a clone to look at what a pipeline
/// wrote, or to [`modify`](MemoryStorage::modify) bytes behind a reader's back.
///
/// Uploads buffer their bytes privately and publish them with one map insert on commit, so
/// readers never see a partial object. Objects are reference-counted: a read in progress keeps
/// the version it started with even if the object is replaced.
///
/// ```
/// use adz_store::{MemoryStorage, Storage};
///
/// let store = MemoryStorage::new();
/// store.put("a", b"hello")?;
/// store.modify("a", |bytes| bytes[0] = b'j')?;
/// assert_eq!(store.get("a")?, b"jello");
/// # Ok::<(), adz_store::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryStorage {
    objects: Arc<RwLock<Objects>>,
}

impl MemoryStorage {
    /// An empty store.
    pub fn new() -> MemoryStorage {
        MemoryStorage::default()
    }

    /// Returns the object's bytes without copying them.
    pub fn get_shared(&self, name: &str) -> Result<Arc<Vec<u8>>> {
        validate_name(name)?;
        self.read().get(name).cloned().ok_or_else(|| Error::NotFound { name: name.to_owned() })
    }

    /// Changes an object's bytes in place (to corrupt a file in a test, say) and returns what
    /// `f` returns. Readers that already hold the old bytes keep them.
    pub fn modify<R>(&self, name: &str, f: impl FnOnce(&mut Vec<u8>) -> R) -> Result<R> {
        let mut objects = self.write();
        let bytes =
            objects.get_mut(name).ok_or_else(|| Error::NotFound { name: name.to_owned() })?;
        Ok(f(Arc::make_mut(bytes)))
    }

    /// The number of committed objects.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no object is stored.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    // A panic while the lock is held cannot leave the map half-updated (every change is a
    // single insert, remove or in-place edit), so a poisoned lock is still safe to use.
    fn read(&self) -> RwLockReadGuard<'_, Objects> {
        self.objects.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Objects> {
        self.objects.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Storage for MemoryStorage {
    fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
        validate_name(name)?;
        Ok(Box::new(MemoryUpload {
            objects: Arc::clone(&self.objects),
            name: name.to_owned(),
            buffer: Vec::new(),
        }))
    }

    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        validate_name(name)?;
        self.write().insert(name.to_owned(), Arc::new(data.to_vec()));
        Ok(())
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
        let bytes = self.get_shared(name)?;
        Error::check_range(name, &range, bytes.len() as u64)?;
        // The check above bounds both ends by the length of an in-memory vector.
        Ok(bytes[range.start as usize..range.end as usize].to_vec())
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        Ok(self.get_shared(name)?.to_vec())
    }

    fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
        let bytes = self.get_shared(name)?;
        let object_size = bytes.len() as u64;
        let start = object_size.saturating_sub(max_len) as usize;
        Ok(Tail { object_size, bytes: bytes[start..].to_vec() })
    }

    fn size(&self, name: &str) -> Result<u64> {
        Ok(self.get_shared(name)?.len() as u64)
    }

    fn delete(&self, name: &str) -> Result<()> {
        validate_name(name)?;
        match self.write().remove(name) {
            Some(_) => Ok(()),
            None => Err(Error::NotFound { name: name.to_owned() }),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        Ok(self
            .read()
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(name, _)| name.starts_with(prefix))
            .map(|(name, bytes)| ObjectMeta::new(name.clone(), bytes.len() as u64))
            .collect())
    }

    /// Shares the bytes: no copy, as an object store copies without sending them.
    fn copy(&self, from: &str, to: &str) -> Result<()> {
        validate_name(to)?;
        let bytes = self.get_shared(from)?;
        self.write().insert(to.to_owned(), bytes);
        Ok(())
    }
}

/// An upload to a [`MemoryStorage`]: a private buffer until commit.
#[derive(Debug)]
struct MemoryUpload {
    objects: Arc<RwLock<Objects>>,
    name: String,
    buffer: Vec<u8>,
}

impl Upload for MemoryUpload {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.buffer.extend_from_slice(data);
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.buffer.len() as u64
    }

    fn commit(self: Box<Self>) -> Result<u64> {
        let MemoryUpload { objects, name, buffer } = *self;
        let size = buffer.len() as u64;
        objects.write().unwrap_or_else(PoisonError::into_inner).insert(name, Arc::new(buffer));
        Ok(size)
    }

    fn abort(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_objects() {
        let a = MemoryStorage::new();
        let b = a.clone();
        a.put("x", b"1").unwrap();
        assert_eq!(b.get("x").unwrap(), b"1");
        assert_eq!(b.len(), 1);
        b.delete("x").unwrap();
        assert!(a.is_empty());
    }

    #[test]
    fn modify_copies_on_write() {
        let store = MemoryStorage::new();
        store.put("x", b"abc").unwrap();
        let before = store.get_shared("x").unwrap();
        let old = store.modify("x", |bytes| std::mem::replace(&mut bytes[1], b'X')).unwrap();
        assert_eq!(old, b'b');
        assert_eq!(store.get("x").unwrap(), b"aXc");
        assert_eq!(*before, b"abc", "a reader holding the old bytes keeps them");
        assert!(matches!(store.modify("y", |_| ()), Err(Error::NotFound { .. })));
    }

    #[test]
    fn list_is_a_string_prefix_in_name_order() {
        let store = MemoryStorage::new();
        for name in ["run/b", "run-2", "run/a", "ru", "runs", "other"] {
            store.put(name, name.as_bytes()).unwrap();
        }
        let names: Vec<_> = store.list("run").unwrap().into_iter().map(|m| m.name).collect();
        assert_eq!(names, ["run-2", "run/a", "run/b", "runs"]);
        assert_eq!(store.list("run/").unwrap()[1], ObjectMeta::new("run/b", 5));
        assert_eq!(store.list("").unwrap().len(), 6);
        assert!(store.list("zzz").unwrap().is_empty());
    }

    #[test]
    fn uploads_are_private_until_commit() {
        let store = MemoryStorage::new();
        let mut upload = store.create("x").unwrap();
        upload.append(b"abc").unwrap();
        assert!(store.is_empty());
        assert_eq!(upload.commit().unwrap(), 3);
        assert_eq!(store.get_tail("x", 2).unwrap().bytes, b"bc");
    }
}
