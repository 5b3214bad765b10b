//! [`Tiered`]: datasets written over a hierarchy of tiers, read back through the catalog.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use adz_core::{FrameEncoder, Reader, ReaderOptions};
use adz_format::{Filters, FrameHeader, TrailerBuilder};
use adz_store::Storage;
use xxhash_rust::xxh3::xxh3_64;

use crate::catalog::{Catalog, Copy, Segment};
use crate::config::{open_tier, TierConfig, TiersConfig};
use crate::error::TierError;
use crate::place::{place, CostTable, Piece, TierSlot};
use crate::predictor::{Features, Scratch};
use crate::profile::CostModel;

/// A compressed block is kept only if it saves 3 % (the pipeline's keep threshold).
pub(crate) const KEEP_RATIO: f64 = 0.97;

/// One open tier.
#[derive(Debug, Clone)]
pub struct Tier {
    /// Its configuration.
    pub config: TierConfig,
    /// Its storage.
    pub store: Arc<dyn Storage>,
    /// Its write bandwidth, bytes per second (given or measured).
    pub bandwidth: f64,
}

/// Datasets spread over tiers, fastest first; see the crate docs.
///
/// One process at a time writes or flushes a given set of tiers (there is no lock between
/// processes); readers may run alongside a flush.
#[derive(Debug)]
pub struct Tiered {
    pub(crate) tiers: Vec<Tier>,
    pub(crate) catalog: Arc<dyn Storage>,
    pub(crate) config: TiersConfig,
    /// Threads that encode a segment.
    pub(crate) threads: usize,
}

/// One thread per core.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What a [`Tiered::write`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteReport {
    /// Raw bytes written.
    pub raw: u64,
    /// Stored bytes per tier, in tier order.
    pub stored: Vec<u64>,
    /// Segments written.
    pub segments: u64,
    /// Pieces whose costs the predictor gave (their class was not in the profile).
    pub predicted: u64,
    /// Runs that did not fit where the DP put them (their real size was larger than
    /// predicted): the frames that fit stayed there, the rest went to a lower tier.
    pub spilled: u64,
    /// The DP's predicted seconds for the whole write.
    pub predicted_seconds: f64,
    /// Seconds the DP itself took.
    pub placement_seconds: f64,
    /// Wall seconds of the write.
    pub seconds: f64,
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The object that holds segment `id` of dataset `name` on a tier.
pub(crate) fn segment_object(name: &str, id: u64) -> String {
    format!("{name}/{id:08}.adz")
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(input: &mut dyn Read, buf: &mut [u8]) -> Result<usize, TierError> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TierError::Input(e)),
        }
    }
    Ok(n)
}

/// One frame of an encoded segment: raw bytes, payload bytes, and the seconds its encoding took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FrameStat {
    pub raw: u64,
    pub payload: u64,
    pub seconds: f64,
}

/// Encodes `data` as one adz file at `rung`, its blocks on up to `threads` threads.
///
/// Each thread encodes a contiguous run of the blocks into its own buffer; the runs are then
/// joined behind one file header and indexed by one trailer, so the bytes are those of a
/// [`adz_core::FrameWriter`] on one thread (a test checks it).
pub(crate) fn encode(
    data: &[u8],
    rung: adz_format::CodecSpec,
    block_size: u32,
    threads: usize,
) -> Result<(Vec<u8>, Vec<FrameStat>), TierError> {
    let bs = block_size as usize;
    let header = adz_format::FileHeader::new(block_size)
        .map_err(|e| TierError::frames("starting a segment")(e.into()))?;
    let blocks = data.len().div_ceil(bs);
    let n = threads.clamp(1, blocks.max(1));
    // Thread k encodes blocks k*blocks/n .. (k+1)*blocks/n.
    type Run = (Vec<u8>, Vec<(FrameHeader, usize, f64)>);
    let run = |k: usize| -> Result<Run, TierError> {
        let (first, end) = (k * blocks / n, (k + 1) * blocks / n);
        let mut enc = FrameEncoder::new();
        let mut out = Vec::with_capacity((end - first) * bs / 2 + 64);
        let mut frames = Vec::with_capacity(end - first);
        for b in first..end {
            let raw = &data[b * bs..((b + 1) * bs).min(data.len())];
            let (start, t0) = (out.len(), Instant::now());
            let h = enc
                .encode(raw, (b * bs) as u64, rung, Filters::NONE, KEEP_RATIO, &mut out)
                .map_err(TierError::frames(format!("encoding a segment at {rung}")))?;
            frames.push((h, out.len() - start, t0.elapsed().as_secs_f64()));
        }
        Ok((out, frames))
    };
    let parts: Vec<_> = if n == 1 {
        vec![run(0)]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..n).map(|k| s.spawn(move || run(k))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    let mut bytes = Vec::with_capacity(
        parts.iter().map(|p| p.as_ref().map_or(0, |p| p.0.len())).sum::<usize>() + 4096,
    );
    bytes.extend_from_slice(&header.encode());
    let mut trailer = TrailerBuilder::new();
    let mut stats = Vec::with_capacity(blocks);
    for part in parts {
        let (frames_bytes, frames) = part?;
        let mut offset = bytes.len() as u64;
        for (h, len, seconds) in frames {
            trailer.push(&h, offset);
            offset += len as u64;
            stats.push(FrameStat {
                raw: u64::from(h.raw_len),
                payload: u64::from(h.stored_len),
                seconds,
            });
        }
        bytes.extend_from_slice(&frames_bytes);
    }
    let index_offset = bytes.len() as u64;
    bytes.extend_from_slice(&trailer.encode(index_offset));
    Ok((bytes, stats))
}

impl Tiered {
    /// Opens (creating their directories) the tiers and the catalog of `config`, measuring
    /// the bandwidth of tiers whose bandwidth is `"measure"`.
    pub fn open(config: TiersConfig) -> Result<Tiered, TierError> {
        let mut tiers = Vec::new();
        for t in &config.tiers {
            let (store, bandwidth) = open_tier(t)?;
            tiers.push(Tier { config: t.clone(), store, bandwidth });
        }
        std::fs::create_dir_all(&config.catalog).map_err(|e| {
            TierError::Config(format!(
                "cannot create the catalog {}: {e}",
                config.catalog.display()
            ))
        })?;
        // A catalog save cut short is worth nothing (the old catalog stands): `gc` removes it.
        let catalog = adz_store::LocalStorage::new(&config.catalog)
            .map_err(TierError::store("opening the catalog"))?
            .recoverable_temporaries(false);
        Ok(Tiered { tiers, catalog: Arc::new(catalog), config, threads: cores() })
    }

    /// Builds tiers over stores the caller made (decorated ones, in tests): `stores[i]` is
    /// tier `i` of `config`, whose bandwidth must be given.
    pub fn with_stores(
        config: TiersConfig,
        stores: Vec<Arc<dyn Storage>>,
        catalog: Arc<dyn Storage>,
    ) -> Result<Tiered, TierError> {
        if stores.len() != config.tiers.len() {
            return Err(TierError::Config(format!(
                "{} stores for {} tiers",
                stores.len(),
                config.tiers.len()
            )));
        }
        let mut tiers = Vec::new();
        for (t, store) in config.tiers.iter().zip(stores) {
            let bandwidth = t.bandwidth.ok_or_else(|| {
                TierError::Config(format!("tier {:?}: give its bandwidth", t.name))
            })?;
            tiers.push(Tier { config: t.clone(), store, bandwidth });
        }
        Ok(Tiered { tiers, catalog, config, threads: cores() })
    }

    /// Sets the threads that encode each segment (default: one per core; at least 1).
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// Tells placement that tier `t` writes at `bandwidth` bytes/s with `latency` seconds
    /// per object (a measurement, e.g. from a machine profile), whatever its configuration
    /// says; the tier's storage (and its throttle) is unchanged. Out-of-range `t` or
    /// figures that are not positive (latency: not negative) are ignored.
    pub fn set_placement_figures(&mut self, t: usize, bandwidth: f64, latency: f64) {
        if let Some(tier) = self.tiers.get_mut(t) {
            if bandwidth.is_finite() && bandwidth > 0.0 && latency.is_finite() && latency >= 0.0 {
                tier.bandwidth = bandwidth;
                tier.config.latency = latency;
            }
        }
    }

    /// The threads that encode each segment.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The tiers, fastest first.
    pub fn tiers(&self) -> &[Tier] {
        &self.tiers
    }

    /// The configuration.
    pub fn config(&self) -> &TiersConfig {
        &self.config
    }

    /// The catalog's storage.
    pub fn catalog_store(&self) -> &Arc<dyn Storage> {
        &self.catalog
    }

    /// Dataset `name`'s catalog.
    pub fn catalog(&self, name: &str) -> Result<Catalog, TierError> {
        Catalog::load(&*self.catalog, name)
    }

    /// The names of all tiered datasets.
    pub fn datasets(&self) -> Result<Vec<String>, TierError> {
        Catalog::list(&*self.catalog)
    }

    /// Bytes stored on tier `t` (everything there, orphans of a crash included).
    pub fn used(&self, t: usize) -> Result<u64, TierError> {
        let tier = &self.tiers[t];
        let objects = tier
            .store
            .list("")
            .map_err(TierError::store(format!("listing tier {:?}", tier.config.name)))?;
        Ok(objects.iter().map(|o| o.size).sum())
    }

    /// Bytes free on tier `t`: its capacity less what is on it. A tier without a capacity
    /// (a parallel file system) is not listed, which could take long there.
    pub fn free(&self, t: usize) -> Result<u64, TierError> {
        let capacity = self.tiers[t].config.capacity;
        if capacity == u64::MAX {
            return Ok(u64::MAX);
        }
        Ok(capacity.saturating_sub(self.used(t)?))
    }

    pub(crate) fn tier_index(&self, name: &str) -> Option<usize> {
        self.tiers.iter().position(|t| t.config.name == name)
    }

    /// Writes dataset `name` from `input`: each batch of the input is cut into blocks, each
    /// block classified, the DP ([`place`]) puts the blocks on tiers and rungs, and each
    /// tier's run is written as one adz file (a segment). The catalog is replaced at the end,
    /// atomically; an older dataset of that name stays readable until then and its segments
    /// are deleted after. On an error, the segments written so far are deleted and the old
    /// dataset, if any, stays as it was.
    pub fn write(
        &self,
        name: &str,
        input: &mut dyn Read,
        costs: &CostTable,
    ) -> Result<WriteReport, TierError> {
        self.write_with(name, input, &mut CostModel::from_table(costs.clone()))
    }

    /// [`Tiered::write`] with a [`CostModel`]: pieces of classes the model did not measure
    /// (or every piece, with `predict_every_block`) get their costs from its predictor, which
    /// each encoded frame then corrects.
    pub fn write_with(
        &self,
        name: &str,
        input: &mut dyn Read,
        costs: &mut CostModel,
    ) -> Result<WriteReport, TierError> {
        adz_store::validate_name(name).map_err(TierError::store("dataset name"))?;
        let started = Instant::now();
        let old = match self.catalog(name) {
            Ok(c) => Some(c),
            Err(TierError::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        let mut cat = Catalog::new(name, old.as_ref().map_or(0, |c| c.next_id));
        let mut written: Vec<(usize, String)> = Vec::new();
        let result = self.write_segments(&mut cat, input, costs, &mut written);
        let result = result.and_then(|report| cat.save(&*self.catalog).map(|()| report));
        match result {
            Ok(mut report) => {
                if let Some(old) = old {
                    for s in &old.segments {
                        for c in &s.copies {
                            if let Some(t) = self.tier_index(&c.tier) {
                                // A failure leaves an orphan that `gc` removes later.
                                let _ = self.tiers[t].store.delete(&c.object);
                            }
                        }
                    }
                }
                report.seconds = started.elapsed().as_secs_f64();
                Ok(report)
            }
            Err(e) => {
                for (t, object) in written {
                    let _ = self.tiers[t].store.delete(&object);
                }
                Err(e)
            }
        }
    }

    fn write_segments(
        &self,
        cat: &mut Catalog,
        input: &mut dyn Read,
        model: &mut CostModel,
        written: &mut Vec<(usize, String)>,
    ) -> Result<WriteReport, TierError> {
        let block = self.config.block_size as usize;
        let mut free =
            (0..self.tiers.len()).map(|t| self.free(t)).collect::<Result<Vec<_>, _>>()?;
        let mut report = WriteReport { stored: vec![0; self.tiers.len()], ..Default::default() };
        let mut buf = vec![0u8; self.config.batch as usize];
        let mut scratch = Scratch::default();
        let mut predictions = Vec::new();
        loop {
            let n = read_full(input, &mut buf)?;
            if n == 0 {
                break;
            }
            let data = &buf[..n];
            let classes: Vec<u8> = data.chunks(block).map(adz_control::classify).collect();
            let features: Vec<Features> = if model.predictor.is_some() {
                data.chunks(block).map(|b| Features::of_with(b, &mut scratch)).collect()
            } else {
                Vec::new()
            };
            // The batch's table: the model's rows per class, then one row per predicted piece.
            let mut costs = model.table.clone();
            let rows = costs.classes.len();
            let mut pieces = Vec::with_capacity(classes.len());
            for (i, (b, &c)) in data.chunks(block).zip(&classes).enumerate() {
                let c = (c as usize).min(rows - 1);
                let predict = model.predict_every_block || !model.measured[c];
                let row =
                    if predict { model.predict(&features[i], &mut predictions) } else { None };
                let class = match row {
                    Some(row) => {
                        costs.classes.push(row);
                        report.predicted += 1;
                        costs.classes.len() - 1
                    }
                    None => c,
                };
                pieces.push(Piece { raw: b.len() as u64, class });
            }
            let slots: Vec<TierSlot> = self
                .tiers
                .iter()
                .zip(&free)
                .map(|(t, &free)| TierSlot {
                    // Each tier's run is one file: its header and trailer take room too.
                    free: free.saturating_sub(crate::place::FILE_OVERHEAD),
                    bandwidth: t.bandwidth,
                    latency: t.config.latency,
                })
                .collect();
            let t0 = Instant::now();
            let plan = place(&pieces, &slots, &costs)?;
            report.placement_seconds += t0.elapsed().as_secs_f64();
            report.predicted_seconds += plan.seconds;
            for seg in plan.segments {
                let rung = costs.rungs[seg.rung];
                // The DP's sizes are predictions. A run larger than its tier's room is cut:
                // the frames that fit stay on the tier, the rest goes to the next tier, so no
                // tier ever holds more than its capacity and a wrong ratio wastes no room.
                let (mut pieces, mut t) = (seg.pieces.clone(), seg.tier);
                while !pieces.is_empty() {
                    let span = |p: &std::ops::Range<usize>| p.start * block..(p.end * block).min(n);
                    let (mut bytes, mut stats) =
                        encode(&data[span(&pieces)], rung, self.config.block_size, self.threads)?;
                    let mut take = pieces.clone();
                    let size = bytes.len() as u64;
                    if size > free[t] {
                        if t + 1 == self.tiers.len() {
                            return Err(TierError::NoRoom { raw: span(&pieces).len() as u64 });
                        }
                        report.spilled += 1;
                        // The frames that fit, guessed from the mean frame size, then checked.
                        let room = free[t].saturating_sub(crate::place::FILE_OVERHEAD);
                        let mut k = (pieces.len() as u128 * room as u128 / size as u128) as usize;
                        loop {
                            if k == 0 {
                                bytes.clear();
                                break;
                            }
                            take = pieces.start..pieces.start + k;
                            (bytes, stats) = encode(
                                &data[span(&take)],
                                rung,
                                self.config.block_size,
                                self.threads,
                            )?;
                            if bytes.len() as u64 <= free[t] {
                                break;
                            }
                            k -= 1;
                        }
                        if k == 0 {
                            t += 1;
                            continue;
                        }
                    }
                    // Each frame corrects the predictor for its class and rung.
                    if let Some(p) = model.predictor.as_mut() {
                        for (f, st) in features[take.clone()].iter().zip(&stats) {
                            let ratio = st.raw as f64 / st.payload.max(1) as f64;
                            p.observe(f, seg.rung, ratio, st.raw as f64 / st.seconds.max(1e-9));
                        }
                    }
                    let range = span(&take);
                    self.put_segment(
                        cat,
                        t,
                        &bytes,
                        rung,
                        range.len() as u64,
                        &classes[take.clone()],
                        written,
                    )?;
                    free[t] -= bytes.len() as u64;
                    report.stored[t] += bytes.len() as u64;
                    report.segments += 1;
                    pieces = take.end..pieces.end;
                    t += 1;
                }
            }
            report.raw += n as u64;
        }
        Ok(report)
    }

    /// Puts one segment on tier `t` and adds it to the catalog (in memory).
    #[allow(clippy::too_many_arguments)]
    fn put_segment(
        &self,
        cat: &mut Catalog,
        t: usize,
        bytes: &[u8],
        rung: adz_format::CodecSpec,
        raw_len: u64,
        classes: &[u8],
        written: &mut Vec<(usize, String)>,
    ) -> Result<(), TierError> {
        let id = cat.next_id;
        let object = segment_object(&cat.name, id);
        let tier = &self.tiers[t];
        tier.store.put(&object, bytes).map_err(TierError::store(format!(
            "writing {object:?} to tier {:?}",
            tier.config.name
        )))?;
        written.push((t, object.clone()));
        cat.next_id += 1;
        cat.segments.push(Segment {
            id,
            raw_offset: cat.raw_len,
            raw_len,
            frames: classes.len() as u64,
            class: most_common(classes),
            written: now_secs(),
            copies: vec![Copy {
                tier: tier.config.name.clone(),
                object,
                rung: rung.to_string(),
                stored: bytes.len() as u64,
                xxh3: xxh3_64(bytes),
            }],
        });
        cat.raw_len += raw_len;
        Ok(())
    }

    /// Opens dataset `name` for reading.
    pub fn reader(&self, name: &str) -> Result<TieredReader, TierError> {
        let catalog = self.catalog(name)?;
        Ok(TieredReader { catalog, tiers: self.tiers.clone(), open: Mutex::new(HashMap::new()) })
    }
}

fn most_common(classes: &[u8]) -> u8 {
    let mut count = [0usize; 256];
    for &c in classes {
        count[c as usize] += 1;
    }
    (0..=255u8).max_by_key(|&c| (count[c as usize], std::cmp::Reverse(c))).unwrap_or(0)
}

/// Readers kept open at once.
const OPEN_READERS: usize = 16;

/// Reads a tiered dataset: each segment from the fastest tier that holds a good copy.
#[derive(Debug)]
pub struct TieredReader {
    catalog: Catalog,
    tiers: Vec<Tier>,
    open: Mutex<HashMap<usize, (usize, Arc<Reader>)>>,
}

impl TieredReader {
    /// Raw bytes of the dataset.
    pub fn len(&self) -> u64 {
        self.catalog.raw_len
    }

    /// True for an empty dataset.
    pub fn is_empty(&self) -> bool {
        self.catalog.raw_len == 0
    }

    /// The catalog the reader follows.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Opens segment `k` from its fastest readable copy; returns the tier index and reader.
    fn segment(&self, k: usize) -> Result<(usize, Arc<Reader>), TierError> {
        if let Some(r) = self.open.lock().unwrap_or_else(PoisonError::into_inner).get(&k) {
            return Ok(r.clone());
        }
        let seg = &self.catalog.segments[k];
        let mut copies: Vec<(usize, &Copy)> = seg
            .copies
            .iter()
            .filter_map(|c| self.tiers.iter().position(|t| t.config.name == c.tier).map(|t| (t, c)))
            .collect();
        copies.sort_by_key(|&(t, _)| t);
        let mut last = TierError::Catalog {
            name: self.catalog.name.clone(),
            reason: format!("segment {} has no copy on a configured tier", seg.id),
        };
        for (t, c) in copies {
            let opts = ReaderOptions { cache_bytes: 8 << 20, ..Default::default() };
            match Reader::open(Arc::clone(&self.tiers[t].store), &c.object, opts) {
                Ok(r) if r.len() == seg.raw_len && r.file_len() == c.stored => {
                    let entry = (t, Arc::new(r));
                    let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
                    if open.len() >= OPEN_READERS {
                        open.clear();
                    }
                    open.insert(k, entry.clone());
                    return Ok(entry);
                }
                Ok(r) => {
                    last = TierError::Catalog {
                        name: self.catalog.name.clone(),
                        reason: format!(
                            "{:?} on tier {:?} holds {} raw bytes in {} bytes, the catalog says {} in {}",
                            c.object, c.tier, r.len(), r.file_len(), seg.raw_len, c.stored
                        ),
                    }
                }
                Err(e) => {
                    last = TierError::Frames {
                        what: format!("opening {:?} on tier {:?}", c.object, c.tier),
                        source: Box::new(e),
                    }
                }
            }
        }
        Err(last)
    }

    /// The tier that serves segment `k` (the fastest with a readable copy).
    pub fn tier_of(&self, k: usize) -> Result<String, TierError> {
        let (t, _) = self.segment(k)?;
        Ok(self.tiers[t].config.name.clone())
    }

    /// Reads raw bytes at `offset` into `buf`; returns how many (short only at the end).
    pub fn read_at(&self, mut offset: u64, buf: &mut [u8]) -> Result<usize, TierError> {
        let mut done = 0;
        while done < buf.len() && offset < self.len() {
            let k = self.catalog.segment_at(offset).expect("offset within the dataset");
            let seg = &self.catalog.segments[k];
            let (_, r) = self.segment(k)?;
            let n = r.read_at(offset - seg.raw_offset, &mut buf[done..]).map_err(
                TierError::frames(format!("reading segment {} of {:?}", seg.id, self.catalog.name)),
            )?;
            if n == 0 {
                break;
            }
            done += n;
            offset += n as u64;
        }
        Ok(done)
    }

    /// Reads `len` bytes at `offset`; fails if they are not all there.
    pub fn read_range(&self, offset: u64, len: u64) -> Result<Vec<u8>, TierError> {
        let size = self.len();
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(TierError::OutOfRange { offset, len, size });
        }
        let mut buf = vec![0u8; len as usize];
        let n = self.read_at(offset, &mut buf)?;
        debug_assert_eq!(n as u64, len);
        Ok(buf)
    }

    /// Writes the whole dataset to `out`, segment by segment; returns the raw bytes written.
    pub fn copy_to(&self, mut out: &mut dyn Write, threads: usize) -> Result<u64, TierError> {
        let mut total = 0;
        for k in 0..self.catalog.segments.len() {
            let (_, r) = self.segment(k)?;
            total += r.copy_to(&mut out, threads).map_err(TierError::frames(format!(
                "copying segment {} of {:?}",
                k, self.catalog.name
            )))?;
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adz_core::{FrameWriter, FrameWriterOptions};

    /// Segments encoded on several threads are byte for byte the file one thread writes,
    /// and decode to the input.
    #[test]
    fn parallel_segments_give_the_same_bytes() {
        let data = adz_datagen::generate(adz_datagen::Kind::Mixed, (5 << 20) + 12_345, 3);
        for rung in ["zstd:3", "lz4:1", "none"] {
            let rung: adz_format::CodecSpec = rung.parse().unwrap();
            let opts = FrameWriterOptions {
                block_size: 256 << 10,
                codec: rung,
                keep_ratio: KEEP_RATIO,
                ..Default::default()
            };
            let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
            w.write_data(&data).unwrap();
            let (one, _) = w.finish().unwrap();
            for threads in [1, 2, 3, 8, 64] {
                let (bytes, stats) = encode(&data, rung, 256 << 10, threads).unwrap();
                assert!(bytes == one, "{rung} on {threads} threads differs");
                assert_eq!(stats.len(), data.len().div_ceil(256 << 10));
                assert_eq!(stats.iter().map(|s| s.raw).sum::<u64>(), data.len() as u64);
            }
            assert_eq!(crate::flush::decode_all(&one, "test").unwrap(), data);
        }
        let (empty, stats) = encode(&[], "zstd:1".parse().unwrap(), 1 << 20, 4).unwrap();
        assert!(stats.is_empty());
        assert!(crate::flush::decode_all(&empty, "test").unwrap().is_empty());
    }
}
