//! [`Prefixed`]: a store seen under a key prefix, so that an `s3://bucket/prefix` tier holds
//! its objects under `prefix/` and lists (and so counts and collects) only those.

use std::ops::Range;

use adz_store::{ObjectMeta, Result, Storage, Tail, Upload};

/// `inner` with every name put under `prefix/`; `list` returns names without it.
#[derive(Debug)]
pub(crate) struct Prefixed<S> {
    inner: S,
    /// Empty (the whole bucket) or `prefix/`.
    prefix: String,
}

impl<S: Storage> Prefixed<S> {
    /// `prefix` without leading or trailing `/`; empty for none.
    pub(crate) fn new(inner: S, prefix: &str) -> Prefixed<S> {
        let prefix = prefix.trim_matches('/');
        let prefix = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
        Prefixed { inner, prefix }
    }

    fn full(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }
}

impl<S: Storage> Storage for Prefixed<S> {
    fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
        self.inner.create(&self.full(name))
    }
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        self.inner.put(&self.full(name), data)
    }
    fn put_if_absent(&self, name: &str, data: &[u8]) -> Result<()> {
        self.inner.put_if_absent(&self.full(name), data)
    }
    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
        self.inner.get_range(&self.full(name), range)
    }
    fn get(&self, name: &str) -> Result<Vec<u8>> {
        self.inner.get(&self.full(name))
    }
    fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
        self.inner.get_tail(&self.full(name), max_len)
    }
    fn size(&self, name: &str) -> Result<u64> {
        self.inner.size(&self.full(name))
    }
    fn delete(&self, name: &str) -> Result<()> {
        self.inner.delete(&self.full(name))
    }
    fn copy(&self, from: &str, to: &str) -> Result<()> {
        self.inner.copy(&self.full(from), &self.full(to))
    }
    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let mut out = self.inner.list(&self.full(prefix))?;
        for o in &mut out {
            if let Some(rest) = o.name.strip_prefix(&self.prefix) {
                o.name = rest.to_owned();
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adz_store::MemoryStorage;

    #[test]
    fn names_live_under_the_prefix_and_list_without_it() {
        let mem = MemoryStorage::new();
        mem.put("other/x.adz", b"not ours").unwrap();
        mem.put("tiersx/y.adz", b"not ours either").unwrap();
        let p = Prefixed::new(mem.clone(), "/tiers/");
        p.put("run/00000001.adz", b"abc").unwrap();
        assert_eq!(mem.get("tiers/run/00000001.adz").unwrap(), b"abc");
        assert_eq!(p.get_range("run/00000001.adz", 1..3).unwrap(), b"bc");
        let names: Vec<_> = p.list("").unwrap().into_iter().map(|o| o.name).collect();
        assert_eq!(names, ["run/00000001.adz"]);
        p.delete("run/00000001.adz").unwrap();
        assert!(p.list("").unwrap().is_empty());
        assert_eq!(mem.list("").unwrap().len(), 2, "nothing outside the prefix was touched");
        let whole = Prefixed::new(mem.clone(), "");
        assert_eq!(whole.list("other/").unwrap()[0].name, "other/x.adz");
    }
}
