//! The catalog: for each tiered dataset, one small JSON file that says which tier holds each
//! run of frames (a segment, itself an adz file), written atomically (temporary file, fsync,
//! rename: [`Storage::put`] on a [`adz_store::LocalStorage`]).

use adz_store::Storage;
use serde::{Deserialize, Serialize};

use crate::error::TierError;

/// The catalog format's version.
pub const CATALOG_VERSION: u32 = 1;

/// Suffix of a catalog file.
pub const CATALOG_SUFFIX: &str = ".tiers.json";

/// One copy of a segment on one tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Copy {
    /// The tier's name.
    pub tier: String,
    /// The object's name on that tier.
    pub object: String,
    /// The rung its frames were written at (`"zstd:3"`; frames that did not shrink are raw).
    pub rung: String,
    /// The object's size.
    pub stored: u64,
    /// xxh3-64 of the object's bytes.
    pub xxh3: u64,
}

/// A run of frames: one adz file holding raw bytes `raw_offset..raw_offset + raw_len`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// Number of the segment within its dataset, unique for the dataset's life.
    pub id: u64,
    /// Where the segment's raw bytes start in the dataset.
    pub raw_offset: u64,
    /// Raw bytes.
    pub raw_len: u64,
    /// Frames in the segment.
    pub frames: u64,
    /// The most common data class of its blocks (a row of the cost table).
    pub class: u8,
    /// When it was written, seconds since the Unix epoch (for age-based flushing).
    pub written: u64,
    /// Where it is. Only one copy is kept once a flush is done; a reader takes the first
    /// (fastest tier) copy that it can read.
    pub copies: Vec<Copy>,
}

/// A tiered dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    /// [`CATALOG_VERSION`].
    pub version: u32,
    /// The dataset's name.
    pub name: String,
    /// Raw bytes.
    pub raw_len: u64,
    /// The next segment id to give out.
    pub next_id: u64,
    /// Segments in raw order, contiguous.
    pub segments: Vec<Segment>,
}

impl Catalog {
    /// An empty dataset.
    pub fn new(name: &str, next_id: u64) -> Catalog {
        Catalog {
            version: CATALOG_VERSION,
            name: name.to_owned(),
            raw_len: 0,
            next_id,
            segments: Vec::new(),
        }
    }

    /// The catalog file's object name for dataset `name`.
    pub fn object_name(name: &str) -> String {
        format!("{name}{CATALOG_SUFFIX}")
    }

    /// Reads and checks dataset `name`'s catalog; [`TierError::NotFound`] if there is none.
    pub fn load(store: &dyn Storage, name: &str) -> Result<Catalog, TierError> {
        let bytes = match store.get(&Catalog::object_name(name)) {
            Ok(b) => b,
            Err(adz_store::Error::NotFound { .. }) => {
                return Err(TierError::NotFound { name: name.to_owned() })
            }
            Err(e) => return Err(TierError::store(format!("reading the catalog of {name:?}"))(e)),
        };
        let bad = |reason: String| TierError::Catalog { name: name.to_owned(), reason };
        let c: Catalog = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if c.version != CATALOG_VERSION {
            return Err(bad(format!("version {} (this build reads {CATALOG_VERSION})", c.version)));
        }
        if c.name != name {
            return Err(bad(format!("names dataset {:?}", c.name)));
        }
        let mut at = 0;
        for s in &c.segments {
            if s.raw_offset != at || s.copies.is_empty() || s.id >= c.next_id {
                return Err(bad(format!("segment {} is out of place or has no copy", s.id)));
            }
            at += s.raw_len;
        }
        if at != c.raw_len {
            return Err(bad(format!("segments hold {at} bytes, the dataset {}", c.raw_len)));
        }
        Ok(c)
    }

    /// Replaces the catalog file atomically.
    pub fn save(&self, store: &dyn Storage) -> Result<(), TierError> {
        let bytes = serde_json::to_vec_pretty(self).expect("a catalog serializes");
        store
            .put(&Catalog::object_name(&self.name), &bytes)
            .map_err(TierError::store(format!("writing the catalog of {:?}", self.name)))
    }

    /// The names of every dataset in a catalog directory.
    pub fn list(store: &dyn Storage) -> Result<Vec<String>, TierError> {
        let objects = store.list("").map_err(TierError::store("listing the catalog"))?;
        Ok(objects
            .into_iter()
            .filter_map(|o| o.name.strip_suffix(CATALOG_SUFFIX).map(str::to_owned))
            .collect())
    }

    /// The segment holding raw byte `offset`.
    pub fn segment_at(&self, offset: u64) -> Option<usize> {
        let i = self.segments.partition_point(|s| s.raw_offset + s.raw_len <= offset);
        (i < self.segments.len()).then_some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adz_store::MemoryStorage;

    fn seg(id: u64, raw_offset: u64, raw_len: u64) -> Segment {
        let copy = Copy {
            tier: "a".into(),
            object: format!("d/{id}"),
            rung: "zstd:1".into(),
            stored: 1,
            xxh3: 2,
        };
        Segment { id, raw_offset, raw_len, frames: 1, class: 2, written: 0, copies: vec![copy] }
    }

    #[test]
    fn round_trip_and_checks() {
        let store = MemoryStorage::new();
        let mut c = Catalog::new("runs/d", 0);
        c.segments = vec![seg(0, 0, 10), seg(1, 10, 5)];
        c.raw_len = 15;
        c.next_id = 2;
        c.save(&store).unwrap();
        assert_eq!(Catalog::load(&store, "runs/d").unwrap(), c);
        assert_eq!(Catalog::list(&store).unwrap(), vec!["runs/d".to_string()]);
        assert_eq!(c.segment_at(0), Some(0));
        assert_eq!(c.segment_at(9), Some(0));
        assert_eq!(c.segment_at(10), Some(1));
        assert_eq!(c.segment_at(15), None);
        assert!(matches!(Catalog::load(&store, "other"), Err(TierError::NotFound { .. })));

        // A gap between segments, a copy-less segment, a wrong total: refused.
        for broken in [
            {
                let mut b = c.clone();
                b.segments[1].raw_offset = 11;
                b
            },
            {
                let mut b = c.clone();
                b.segments[0].copies.clear();
                b
            },
            {
                let mut b = c.clone();
                b.raw_len = 16;
                b
            },
        ] {
            broken.save(&store).unwrap();
            assert!(matches!(Catalog::load(&store, "runs/d"), Err(TierError::Catalog { .. })));
        }
        store.put("runs/d.tiers.json", b"{not json").unwrap();
        assert!(matches!(Catalog::load(&store, "runs/d"), Err(TierError::Catalog { .. })));
    }
}
