//! A store that throws data away, for benchmarks.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use crate::{validate_name, validate_prefix, Error, ObjectMeta, Result, Storage, Upload};

/// A store that discards every byte and remembers only object sizes.
///
/// `Throttled<NullStorage>` is a virtual network link with nothing behind it: a benchmark can
/// push gigabytes through it at 6 GB/s without keeping them in memory or waiting for a disk.
/// Reads return zeros (the object's size and ranges are checked as usual), so it does not pass
/// the conformance suite and is not meant for anything that reads back.
#[derive(Debug, Clone, Default)]
pub struct NullStorage {
    sizes: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl NullStorage {
    /// An empty store.
    pub fn new() -> NullStorage {
        NullStorage::default()
    }

    fn sizes(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, u64>> {
        self.sizes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Storage for NullStorage {
    fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
        validate_name(name)?;
        Ok(Box::new(NullUpload { sizes: Arc::clone(&self.sizes), name: name.to_owned(), size: 0 }))
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
        let size = self.size(name)?;
        Error::check_range(name, &range, size)?;
        let len = usize::try_from(range.end - range.start).map_err(|_| Error::OutOfRange {
            name: name.to_owned(),
            range: range.clone(),
            size,
        })?;
        Ok(vec![0; len])
    }

    fn size(&self, name: &str) -> Result<u64> {
        validate_name(name)?;
        self.sizes().get(name).copied().ok_or_else(|| Error::NotFound { name: name.to_owned() })
    }

    fn delete(&self, name: &str) -> Result<()> {
        validate_name(name)?;
        match self.sizes().remove(name) {
            Some(_) => Ok(()),
            None => Err(Error::NotFound { name: name.to_owned() }),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        Ok(self
            .sizes()
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(name, _)| name.starts_with(prefix))
            .map(|(name, &size)| ObjectMeta::new(name.clone(), size))
            .collect())
    }
}

#[derive(Debug)]
struct NullUpload {
    sizes: Arc<Mutex<BTreeMap<String, u64>>>,
    name: String,
    size: u64,
}

impl Upload for NullUpload {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.size += data.len() as u64;
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.size
    }

    fn commit(self: Box<Self>) -> Result<u64> {
        self.sizes.lock().unwrap_or_else(PoisonError::into_inner).insert(self.name, self.size);
        Ok(self.size)
    }

    fn abort(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_sizes_and_reads_zeros() {
        let store = NullStorage::new();
        let mut upload = store.create("big").unwrap();
        upload.append(&[7; 1000]).unwrap();
        upload.append(&[7; 24]).unwrap();
        assert!(matches!(store.size("big"), Err(Error::NotFound { .. })));
        assert_eq!(upload.commit().unwrap(), 1024);
        assert_eq!(store.size("big").unwrap(), 1024);
        assert_eq!(store.get_range("big", 1000..1024).unwrap(), vec![0; 24]);
        assert!(matches!(store.get_range("big", 1000..1025), Err(Error::OutOfRange { .. })));
        assert_eq!(store.list("b").unwrap(), [ObjectMeta::new("big", 1024)]);
        store.delete("big").unwrap();
        assert!(store.list("").unwrap().is_empty());
    }
}
