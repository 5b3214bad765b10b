//! The flusher: moves segments down the tiers, crash-safe; `gc` and `status`.
//!
//! A segment moves from tier `t` to a lower tier `u` in this order:
//! 1. read it from `t` and check it against the catalog's checksum;
//! 2. copy it as it is if its rung is already as dense as `u`'s rung, else decode it and
//!    encode it again at `u`'s rung;
//! 3. write it to `u` (an atomic put) and read it back: its checksum, and for a re-encoded
//!    segment every frame's checksums and the raw data's hash, must match;
//! 4. replace the catalog, atomically, with one that names the copy on `u` only;
//! 5. delete the copy on `t`.
//!
//! A crash before 4 leaves the catalog naming `t`, whose copy is intact; after 4, the catalog
//! names `u`, whose copy was verified. Either way every frame stays readable, and what is
//! left over (a copy on `u` before 4, on `t` after) is an orphan that [`Tiered::gc`] removes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;

use adz_core::recompress::rung_rank;
use adz_core::Decoder;
use adz_format::CodecSpec;
use xxhash_rust::xxh3::xxh3_64;

use crate::catalog::{Catalog, Copy};
use crate::error::TierError;
use crate::place::{place, CostTable, Piece, TierSlot};
use crate::tiered::{encode, now_secs, Tiered};

/// What a flush did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlushReport {
    /// Segments moved.
    pub moved: u64,
    /// Of those, segments copied as they were (already dense enough).
    pub copied: u64,
    /// Of those, segments re-encoded at a denser rung.
    pub recompressed: u64,
    /// Stored bytes read from the upper tiers.
    pub bytes_in: u64,
    /// Stored bytes written to the lower tiers.
    pub bytes_out: u64,
}

/// One tier's state, for `adz tier status`.
#[derive(Debug, Clone, PartialEq)]
pub struct TierStatus {
    /// The tier's name.
    pub name: String,
    /// Its capacity (`u64::MAX`: none).
    pub capacity: u64,
    /// Bytes on it.
    pub used: u64,
    /// Its bandwidth, bytes per second.
    pub bandwidth: f64,
    /// Segments the catalogs place on it.
    pub segments: u64,
    /// Raw bytes of those segments.
    pub raw: u64,
    /// Stored bytes of those segments (the rest of `used` is orphans and catalog files).
    pub stored: u64,
}

/// Decodes a whole adz file held in memory, checking every frame.
pub(crate) fn decode_all(bytes: &[u8], what: &str) -> Result<Vec<u8>, TierError> {
    let mut raw = Vec::new();
    Decoder::new(bytes)
        .read_to_end(&mut raw)
        .map_err(|source| TierError::Decode { what: what.to_owned(), source })?;
    Ok(raw)
}

impl Tiered {
    /// The state of every tier.
    pub fn status(&self) -> Result<Vec<TierStatus>, TierError> {
        let mut out: Vec<TierStatus> = Vec::new();
        for (t, tier) in self.tiers.iter().enumerate() {
            out.push(TierStatus {
                name: tier.config.name.clone(),
                capacity: tier.config.capacity,
                used: self.used(t)?,
                bandwidth: tier.bandwidth,
                segments: 0,
                raw: 0,
                stored: 0,
            });
        }
        for name in self.datasets()? {
            let cat = self.catalog(&name)?;
            for s in &cat.segments {
                for c in &s.copies {
                    if let Some(t) = self.tier_index(&c.tier) {
                        out[t].segments += 1;
                        out[t].raw += s.raw_len;
                        out[t].stored += c.stored;
                    }
                }
            }
        }
        Ok(out)
    }

    /// The rung segments take on tier `u`: the tier's `rung` if configured, else the DP's
    /// choice for one segment of `raw` bytes of `class` on that tier alone.
    fn rung_for(
        &self,
        u: usize,
        raw: u64,
        class: u8,
        costs: &CostTable,
    ) -> Result<CodecSpec, TierError> {
        if let Some(r) = self.tiers[u].config.rung {
            return Ok(r);
        }
        let tier = &self.tiers[u];
        let slot =
            TierSlot { free: u64::MAX, bandwidth: tier.bandwidth, latency: tier.config.latency };
        let plan = place(&[Piece { raw, class: class as usize }], &[slot], costs)?;
        Ok(costs.rungs[plan.segments[0].rung])
    }

    /// Moves segments down as the policy says: every tier but the last filled past `high`
    /// of its capacity is emptied, oldest segments first, down to `low`; segments older than
    /// `max_age` move whatever the fill. Lower tiers are flushed first, to make room.
    pub fn flush(&self, costs: &CostTable) -> Result<FlushReport, TierError> {
        let policy = self.config.flush;
        let mut report = FlushReport::default();
        let cutoff = policy.max_age.map(|a| now_secs().saturating_sub(a.max(0.0) as u64));
        for t in (0..self.tiers.len().saturating_sub(1)).rev() {
            let cap = self.tiers[t].config.capacity;
            let used = self.used(t)?;
            let target = if cap != u64::MAX && used as f64 > policy.high * cap as f64 {
                (policy.low * cap as f64) as u64
            } else {
                u64::MAX
            };
            self.drain(t, target, cutoff, costs, &mut report)?;
        }
        Ok(report)
    }

    /// Moves every segment off tier `name` to the tiers below.
    pub fn evict(&self, name: &str, costs: &CostTable) -> Result<FlushReport, TierError> {
        let t = self
            .tier_index(name)
            .ok_or_else(|| TierError::Config(format!("no tier named {name:?}")))?;
        if t + 1 == self.tiers.len() {
            return Err(TierError::Config(format!(
                "tier {name:?} is the last: there is nowhere to evict to"
            )));
        }
        let mut report = FlushReport::default();
        self.drain(t, 0, None, costs, &mut report)?;
        Ok(report)
    }

    /// Moves segments off tier `t`, oldest first, while its catalogued bytes exceed `target`
    /// or a segment was written before `cutoff`.
    fn drain(
        &self,
        t: usize,
        target: u64,
        cutoff: Option<u64>,
        costs: &CostTable,
        report: &mut FlushReport,
    ) -> Result<(), TierError> {
        let tier_name = self.tiers[t].config.name.clone();
        let mut catalogs: BTreeMap<String, Catalog> = BTreeMap::new();
        // (written, dataset, segment id) of every segment on tier t.
        let mut queue = Vec::new();
        let mut used = 0u64;
        for name in self.datasets()? {
            let cat = self.catalog(&name)?;
            for s in &cat.segments {
                if let Some(c) = s.copies.iter().find(|c| c.tier == tier_name) {
                    used += c.stored;
                    queue.push((s.written, name.clone(), s.id));
                }
            }
            catalogs.insert(name, cat);
        }
        queue.sort();
        for (written, name, id) in queue {
            let old = cutoff.is_some_and(|c| written < c);
            if used <= target && !old {
                continue;
            }
            let cat = catalogs.get_mut(&name).expect("loaded above");
            let freed = self.move_segment(cat, id, t, costs, report)?;
            used = used.saturating_sub(freed);
        }
        Ok(())
    }

    /// Moves segment `id` of `cat` from tier `t` down (steps 1-5 of the module docs);
    /// returns the bytes freed on `t`.
    fn move_segment(
        &self,
        cat: &mut Catalog,
        id: u64,
        t: usize,
        costs: &CostTable,
        report: &mut FlushReport,
    ) -> Result<u64, TierError> {
        let k = cat.segments.iter().position(|s| s.id == id).expect("a catalogued segment");
        let seg = cat.segments[k].clone();
        let from_name = &self.tiers[t].config.name;
        let src = seg.copies.iter().find(|c| &c.tier == from_name).expect("a copy on t").clone();
        let from = &self.tiers[t];
        let what = format!("segment {:?} on tier {from_name:?}", src.object);
        // 1. Read and check.
        let bytes =
            from.store.get(&src.object).map_err(TierError::store(format!("reading {what}")))?;
        let found = xxh3_64(&bytes);
        if found != src.xxh3 {
            return Err(TierError::Checksum { what, expected: src.xxh3, found });
        }
        // 2. Where to, and at which rung. The lower tiers' free room is their capacity less
        // what is on them.
        let mut chosen = None;
        let mut raw: Option<Vec<u8>> = None;
        for u in t + 1..self.tiers.len() {
            let rung = self.rung_for(u, seg.raw_len, seg.class, costs)?;
            let src_rung: Option<CodecSpec> = src.rung.parse().ok();
            let dense_enough = src_rung.is_some_and(|s| rung_rank(s) >= rung_rank(rung));
            let (out, recoded) = if dense_enough {
                (bytes.clone(), false)
            } else {
                if raw.is_none() {
                    raw = Some(decode_all(&bytes, &format!("decoding {what}"))?);
                }
                let (re, _) = encode(
                    raw.as_deref().expect("decoded"),
                    rung,
                    self.config.block_size,
                    self.threads,
                )?;
                // A re-encoding that does not shrink the segment is not worth keeping.
                if re.len() < bytes.len() {
                    (re, true)
                } else {
                    (bytes.clone(), false)
                }
            };
            let free = self.free(u)?;
            if free >= out.len() as u64 {
                let rung = if recoded { rung.to_string() } else { src.rung.clone() };
                chosen = Some((u, out, recoded, rung));
                break;
            }
        }
        let Some((u, out, recoded, rung)) = chosen else {
            return Err(TierError::NoRoom { raw: seg.raw_len });
        };
        // 3. Write below and verify what was written.
        let to = &self.tiers[u];
        let dest = format!("segment {:?} on tier {:?}", src.object, to.config.name);
        to.store.put(&src.object, &out).map_err(TierError::store(format!("writing {dest}")))?;
        let sum = xxh3_64(&out);
        let back =
            to.store.get(&src.object).map_err(TierError::store(format!("reading back {dest}")))?;
        let found = xxh3_64(&back);
        if found != sum {
            return Err(TierError::Checksum { what: dest, expected: sum, found });
        }
        if recoded {
            let raw_sum = xxh3_64(raw.as_deref().expect("decoded"));
            let again = xxh3_64(&decode_all(&back, &format!("verifying {dest}"))?);
            if again != raw_sum {
                return Err(TierError::Checksum {
                    what: format!("raw data of {dest}"),
                    expected: raw_sum,
                    found: again,
                });
            }
        }
        // 4. The catalog names the new copy only.
        let copy = Copy {
            tier: to.config.name.clone(),
            object: src.object.clone(),
            rung,
            stored: out.len() as u64,
            xxh3: sum,
        };
        let mut next = cat.clone();
        next.segments[k].copies.retain(|c| c.tier != *from_name && c.tier != to.config.name);
        next.segments[k].copies.insert(0, copy);
        next.save(&*self.catalog)?;
        *cat = next;
        // 5. Remove the copy above.
        from.store
            .delete(&src.object)
            .map_err(TierError::store(format!("deleting the flushed {what}")))?;
        report.moved += 1;
        report.bytes_in += bytes.len() as u64;
        report.bytes_out += out.len() as u64;
        if recoded {
            report.recompressed += 1;
        } else {
            report.copied += 1;
        }
        Ok(src.stored)
    }

    /// Deletes the segment objects that no catalog names (what a crash during a write or a
    /// flush leaves). Only segments numbered below their dataset's next id are touched, so a
    /// write in progress, whose catalog is not yet saved, keeps its segments. Also removes,
    /// in each tier's directory, the temporary files of segment uploads whose process is
    /// gone. Returns the bytes freed.
    pub fn gc(&self) -> Result<u64, TierError> {
        let mut freed = 0;
        // An S3 tier has no temporaries: a segment is one PUT, which lands whole or not at all.
        for tier in self.tiers.iter().filter(|t| t.config.s3.is_none()) {
            freed += remove_stale_temporaries(&tier.config.path);
        }
        freed += remove_stale_temporaries(&self.config.catalog);
        freed += self.gc_objects()?;
        Ok(freed)
    }

    fn gc_objects(&self) -> Result<u64, TierError> {
        let mut live: HashMap<String, (u64, HashSet<(String, String)>)> = HashMap::new();
        for name in self.datasets()? {
            let cat = self.catalog(&name)?;
            let copies = cat
                .segments
                .iter()
                .flat_map(|s| s.copies.iter().map(|c| (c.tier.clone(), c.object.clone())))
                .collect();
            live.insert(name, (cat.next_id, copies));
        }
        let mut freed = 0;
        for tier in &self.tiers {
            let objects = tier
                .store
                .list("")
                .map_err(TierError::store(format!("listing tier {:?}", tier.config.name)))?;
            for o in objects {
                let Some((dataset, file)) = o.name.rsplit_once('/') else { continue };
                let Some(id) = file.strip_suffix(".adz").and_then(|n| n.parse::<u64>().ok()) else {
                    continue;
                };
                let Some((next_id, copies)) = live.get(dataset) else { continue };
                if id < *next_id && !copies.contains(&(tier.config.name.clone(), o.name.clone())) {
                    tier.store
                        .delete(&o.name)
                        .map_err(TierError::store(format!("deleting orphan {:?}", o.name)))?;
                    freed += o.size;
                }
            }
        }
        Ok(freed)
    }
}

/// The marker of `LocalStorage`'s non-recoverable temporaries: `.NAME.adz-incomplete-PID-N`.
const TEMP_MARKER: &str = ".adz-incomplete-";

/// Removes, under `dir`, the temporaries of segment uploads (`.ID.adz.adz-incomplete-PID-N`)
/// and catalog saves (`.NAME.tiers.json.adz-incomplete-PID-N`) whose process no longer runs; returns their bytes. A directory that cannot be read (a
/// tier that is not local) is skipped.
fn remove_stale_temporaries(dir: &std::path::Path) -> u64 {
    let mut freed = 0;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            freed += remove_stale_temporaries(&path);
            continue;
        }
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(at) = name.find(TEMP_MARKER) else { continue };
        let ours =
            name[..at].ends_with(".adz") || name[..at].ends_with(crate::catalog::CATALOG_SUFFIX);
        if !name.starts_with('.') || !ours {
            continue;
        }
        let pid = name[at + TEMP_MARKER.len()..].split('-').next().unwrap_or("");
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if pid == std::process::id() || std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let size = e.metadata().map_or(0, |m| m.len());
        if std::fs::remove_file(&path).is_ok() {
            freed += size;
        }
    }
    freed
}
