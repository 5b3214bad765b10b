//! A few spread slices of the data: what the predictor compresses instead of the data.
//!
//! Data of one kind (text, an array of doubles) is sampled by a few long slices, one per equal
//! stretch of the data: long, because a short slice gives the codecs less history than a block
//! and compresses worse. Data of several kinds (a tar of mixed files, a container of arrays
//! and text) would need many slices to be represented by slices at random places, and many
//! slices in the same bytes are short ones. So the data is first **probed**:
//! [`SampleConfig::probes`] windows of `PROBE_LEN` bytes, one per equal stretch, each given
//! its entropy class (`adz_control::classify`, the class the writer gives every block; about
//! 3 us a probe), an eighth of them first. If those see one class and their entropy hardly
//! varies (`ENTROPY_SPREAD`), the slices are placed as for data of one kind, as before.
//! Otherwise all probes are looked at and the sample is **stratified by class** within the
//! same bytes: each class gets bytes in proportion to its share of the probes (at least a
//! minimum slice) and slices at evenly spaced probes of that class, each slice kept within its
//! class's bytes around its probe. Each slice carries a weight, the bytes of the write it
//! stands for (its class's share of the write over the class's slices); the predictor weighs
//! each slice's stored bytes per raw byte and seconds per raw byte by it, so that a class
//! counts with its share of the write however long its slices are. How many slices, and how
//! short they may be cut: [`SampleConfig::strata`].

use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};
use std::time::Instant;

use adz_control::classify;
use adz_format::xxh3;

use crate::{Error, Result};

/// Bytes of one probe: what `adz_control::classify` looks at in a block (16 windows of 256
/// bytes). Fewer bytes bias the entropy of random bytes down towards the random class's bound.
pub(crate) const PROBE_LEN: usize = 4096;

/// Every this-many-th probe is looked at first; the others only if those see more than one
/// kind of data.
pub(crate) const PROBE_FIRST: usize = 8;

/// Probes whose entropy varies more than this (standard deviation, bits per byte) see data
/// of several kinds even within one entropy class. On 64 probes: datagen's text, doubles,
/// sparse and random 0.004-0.04; the first 256 MiB of a Linux source tar 0.48-0.54 (all but
/// 2 % text, and files of C, documentation and data compress from 2x to 8x).
pub(crate) const ENTROPY_SPREAD: f64 = 0.2;

/// At most one probe per this many bytes of the source: kinds of data that alternate faster
/// are mixed within every slice anyway (a slice is at least 16 KiB).
pub(crate) const PROBE_SPACING: u64 = 64 << 10;

/// The windows in which the bytes around a probe are classified to keep a slice within its
/// class (each classified as a block is: 16 windows of 256 bytes).
pub(crate) const PLACE_WINDOW: usize = 64 << 10;

/// How to take a [`Sample`]. Defaults: 3 slices of 5 % of the data each (Papio's 3 x 5 %),
/// each at most one block (1 MiB) and at least 16 KiB, all together at most 2 % of the data
/// plus one slice, placed at reproducible random offsets (seed 0); up to 512 probes find the
/// kinds of data, and data of several kinds gets its slices by kind within the same bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleConfig {
    /// How many slices for data of one kind (at least 1); also for data of several kinds
    /// each alike within itself (at least one per kind, so perhaps more).
    pub slices: usize,
    /// Each slice's share of the data (Papio: 0.05).
    pub slice_fraction: f64,
    /// The most bytes of one slice: the block size, so a slice compresses as a block does.
    pub max_slice: usize,
    /// The fewest bytes of one slice (unless the data is shorter): codecs need some context
    /// before their ratio means anything.
    pub min_slice: usize,
    /// All slices together are at most this share of the data, plus one `min_slice`.
    pub budget: f64,
    /// The probes read at most the bytes of a uniform plan with this `budget` (default: the
    /// same 2 %). Separate from `budget` so that a sample cut to a time budget
    /// ([`Predictor::plan_sample`](crate::predict::Predictor::plan_sample)) can keep its
    /// probes, whose count it bounds through [`SampleConfig::probes`].
    pub probe_budget: f64,
    /// Seed of the slices' and probes' offsets: the same seed and data give the same sample.
    pub seed: u64,
    /// The most probes of `PROBE_LEN` bytes spread over the data to find its kinds of
    /// data (entropy classes) and their shares before the slices are placed. Fewer on short
    /// data: the probes read at most the slices' bytes (see `probe_budget`), and at most one per
    /// `PROBE_SPACING`. Below 2: no probes, the slices are placed as for data of one kind.
    /// Default 512: on datagen's `mixed` (4 MiB segments of four classes) shifted off the
    /// stretches' grid, the ratio was predicted within 7 % over ten seeds with 256 probes,
    /// within 3 % with 512.
    pub probes: usize,
    /// How many slices in all for data whose kinds vary within themselves (at least
    /// `slices`, at least one per kind), in the bytes of the uniform plan, each at least
    /// `min_slice` long. Default 12: on 256 MiB of a Linux source tar (98 % text, files of
    /// 2x to 8x) 3 slices predicted zstd:1's ratio up to 56 % off over ten seeds at 1GbE,
    /// 12 within 18 %.
    pub mixed_slices: usize,
    /// The shortest slice a sample of kinds each alike within itself is planned (or later
    /// cut) to before it has fewer slices: lz4's 64 KiB window, below which a slice
    /// compresses markedly worse than a block (on datagen's `mixed` at 10GbE, a 0.6 MB sample
    /// in 14 slices of 42 KiB predicted lz4:1's ratio 5 % low, in 7 of 80 KiB 0.5 %).
    /// Default 64 KiB.
    pub context_slice: usize,
}

impl Default for SampleConfig {
    fn default() -> SampleConfig {
        SampleConfig {
            slices: 3,
            slice_fraction: 0.05,
            max_slice: 1 << 20,
            min_slice: 16 << 10,
            budget: 0.02,
            probe_budget: 0.02,
            seed: 0,
            probes: 512,
            mixed_slices: 12,
            context_slice: 64 << 10,
        }
    }
}

/// One slice of a plan: where it lies in the source, how long it is, and the bytes of the
/// write it stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlannedSlice {
    /// Offset in the source; for a slice of a class, the offset of its probe.
    pub offset: u64,
    /// Bytes.
    pub len: usize,
    /// Bytes of the write it stands for.
    pub weight: f64,
    /// The entropy class the slice is to hold (a stratified plan), or None (one kind of
    /// data). A slice of a class is taken from that class's bytes around its probe: see
    /// `SampleConfig::place`.
    pub class: Option<u8>,
}

impl SampleConfig {
    /// The slices `(offset, len)` to take from `source_len` bytes that stand for a write of
    /// `data_len` bytes (`data_len >= source_len`: a writer samples the blocks it holds, a
    /// file is sampled whole), as for data of one kind: one per equal stretch. The budget
    /// applies to `data_len`; slices lie in `source_len`.
    pub fn plan(&self, source_len: u64, data_len: u64) -> Vec<(u64, usize)> {
        let data_len = data_len.max(source_len);
        if source_len == 0 {
            return Vec::new();
        }
        let frac = |x: f64| if x.is_finite() { x.clamp(0.0, 1.0) } else { 0.0 };
        let min_slice = self.min_slice.max(1) as u64;
        let max_slice = (self.max_slice.max(1) as u64).max(min_slice);
        let mut n = self.slices.max(1) as u64;
        let mut len =
            ((data_len as f64 * frac(self.slice_fraction)) as u64).clamp(min_slice, max_slice);
        // The budget: n x len <= budget x data + min_slice. Shorter slices first, then fewer.
        let budget = (data_len as f64 * frac(self.budget)) as u64 + min_slice;
        if n * len > budget {
            len = (budget / n).max(min_slice);
            while n > 1 && n * len > budget {
                n -= 1;
            }
            len = len.min(budget / n).max(1);
        }
        // The slices must fit the source, each in its own stretch.
        let len = len.min(source_len / n).max(1).min(source_len);
        let n = n.min(source_len / len).max(1);
        let stretch = source_len / n;
        let mut state = self.seed ^ 0x5eed_5a4d_91e5_0001;
        (0..n)
            .map(|i| {
                let room = stretch - len.min(stretch);
                let off = if room == 0 { 0 } else { splitmix(&mut state) % (room + 1) };
                (i * stretch + off, len as usize)
            })
            .collect()
    }

    /// Where to probe `source_len` bytes that stand for a write of `data_len`: the offsets
    /// of `PROBE_LEN`-byte windows, one per equal stretch at a reproducible random place in
    /// it. At most [`SampleConfig::probes`], at most the uniform plan's bytes, at most one per
    /// `PROBE_SPACING` of the source; empty if fewer than two.
    pub fn probe_plan(&self, source_len: u64, data_len: u64) -> Vec<u64> {
        let uniform = SampleConfig { budget: self.probe_budget, ..self.clone() };
        let total: u64 = uniform.plan(source_len, data_len).iter().map(|p| p.1 as u64).sum();
        let n = (self.probes as u64)
            .min(total / PROBE_LEN as u64)
            .min(source_len / PROBE_SPACING.max(PROBE_LEN as u64));
        if n < 2 {
            return Vec::new();
        }
        let stretch = source_len / n;
        let room = stretch - PROBE_LEN as u64;
        let mut state = self.seed ^ 0x9b0b_e5a1_c0de_0002;
        (0..n).map(|i| i * stretch + splitmix(&mut state) % (room + 1)).collect()
    }

    /// The slices to take, given the entropy class found at each probe of
    /// [`SampleConfig::probe_plan`] (`probes[i]` = (offset, class)). One class (or no
    /// probes): the uniform [`SampleConfig::plan`], each slice standing for an equal share
    /// of the write. Several: stratified by class within the uniform plan's bytes: class `c`
    /// with a share `s` of the probes gets `s` of the bytes (at least a minimum slice, or an
    /// equal split of a small sample) in `ceil(slices x s)` slices, at evenly spaced probes of
    /// its class (random phase), each standing for `s x data_len / slices`.
    pub fn plan_stratified(
        &self,
        source_len: u64,
        data_len: u64,
        probes: &[(u64, u8)],
        spread: Option<f64>,
    ) -> Vec<PlannedSlice> {
        let data_len = data_len.max(source_len);
        let uniform = self.plan(source_len, data_len);
        let mut classes: Vec<u8> = probes.iter().map(|p| p.1).collect();
        classes.sort_unstable();
        classes.dedup();
        let Some(spread) = spread.filter(|_| !classes.is_empty() && !uniform.is_empty()) else {
            let w = data_len as f64 / uniform.len().max(1) as f64;
            return uniform
                .into_iter()
                .map(|(offset, len)| PlannedSlice { offset, len, weight: w, class: None })
                .collect();
        };
        let total: u64 = uniform.iter().map(|p| p.1 as u64).sum();
        let longest = uniform.iter().map(|p| p.1 as u64).max().unwrap_or(1);
        // As many slices as the spread asks for, as long as they stay at least the floor
        // long (shorter slices first, then fewer), and at least one per class.
        let (slices, floor) = self.strata(spread);
        let n = slices.min((total / floor.max(1) as u64) as usize).max(classes.len());
        let p = probes.len() as f64;
        let count = |c: u8| probes.iter().filter(|q| q.1 == c).count();
        let share = |c: u8| count(c) as f64 / p;
        let shares: Vec<f64> = classes.iter().map(|&c| share(c)).collect();
        let caps: Vec<usize> = classes.iter().map(|&c| count(c)).collect();
        let slices = allocate(n, &shares, &caps);
        // Bytes per class in proportion to its share, each at least a floor; the classes
        // above the floor share what the floored ones leave.
        let floor = (self.min_slice.max(1) as u64).min(total / classes.len() as u64).max(1);
        let mut floored: Vec<bool> = classes.iter().map(|_| false).collect();
        let bytes: Vec<u64> = loop {
            let n_floored = floored.iter().filter(|&&f| f).count() as u64;
            let rest = total.saturating_sub(floor * n_floored) as f64;
            let rest_share: f64 =
                classes.iter().zip(&floored).filter(|(_, &f)| !f).map(|(&c, _)| share(c)).sum();
            let b: Vec<u64> = classes
                .iter()
                .zip(&floored)
                .map(|(&c, &f)| if f { floor } else { (rest * share(c) / rest_share) as u64 })
                .collect();
            let mut changed = false;
            for (i, &v) in b.iter().enumerate() {
                if !floored[i] && v < floor {
                    floored[i] = true;
                    changed = true;
                }
            }
            if !changed {
                break b;
            }
        };
        let mut state = self.seed ^ 0x57a7_1f1e_d5a3_0003;
        let mut out = Vec::new();
        for ((&c, &b), &m) in classes.iter().zip(&bytes).zip(&slices) {
            let at: Vec<u64> = probes.iter().filter(|q| q.1 == c).map(|q| q.0).collect();
            let (n_c, s_c) = (at.len(), share(c));
            let len = (b / m as u64).clamp(1, longest);
            // Systematic choice among the class's probes: evenly spaced, random phase.
            let phase = (splitmix(&mut state) % 1024) as f64 / 1024.0;
            for j in 0..m {
                let idx = (((j as f64 + phase) * n_c as f64 / m as f64) as usize).min(n_c - 1);
                out.push(PlannedSlice {
                    offset: at[idx],
                    len: len as usize,
                    weight: s_c * data_len as f64 / m as f64,
                    class: Some(c),
                });
            }
        }
        out.sort_by_key(|s| s.offset);
        out
    }

    /// A stratified sample's slices in all, and the shortest they are planned (or cut) to
    /// before there are fewer of them, given the spread of the probes' entropy within each
    /// kind (`within`, bits per byte). Kinds each alike within themselves (under
    /// `ENTROPY_SPREAD`): `slices` (at least one per kind), at least `context_slice` long,
    /// since a short slice's lack of history is then the larger error. Kinds that vary
    /// within themselves: `mixed_slices`, at least `min_slice` long, since which stretches
    /// the slices hit is then the larger error.
    pub fn strata(&self, within: f64) -> (usize, usize) {
        if within > ENTROPY_SPREAD {
            (self.mixed_slices.max(self.slices).max(1), self.min_slice.max(1))
        } else {
            (self.slices.max(1), self.context_slice.max(1))
        }
    }

    /// Where to read for a planned slice: the slice itself, or for a slice of a class the
    /// bytes around its probe that `SampleConfig::place` chooses from (`len` on either
    /// side).
    fn region(&self, slice: &PlannedSlice, source_len: u64) -> (u64, usize) {
        match slice.class {
            None => (slice.offset, slice.len),
            Some(_) => {
                let start = slice.offset.saturating_sub(slice.len as u64);
                let end = (slice.offset + (PROBE_LEN + slice.len) as u64).min(source_len);
                (start, end.saturating_sub(start) as usize)
            }
        }
    }

    /// The slice to take from `region` (the bytes at `region_start` that
    /// `SampleConfig::region` named), as `(offset, len)` in the source and the bytes
    /// classified to find it: the planned slice
    /// if it has no class; else the run of its class around its probe, grown from the probe
    /// a `PLACE_WINDOW` at a time while the window is of the class, half the slice on
    /// either side, then the rest on the side with room (the whole run if it is shorter
    /// than the slice). Data whose kinds change every few MiB would otherwise give a slice
    /// that runs over the end of its class's stretch the wrong weight for the bytes beyond
    /// (random bytes that run into text count that text with random data's share).
    fn place(&self, slice: &PlannedSlice, region_start: u64, region: &[u8]) -> (u64, usize, u64) {
        let Some(class) = slice.class else {
            return (slice.offset, slice.len.min(region.len()), 0);
        };
        let probe = slice.offset.saturating_sub(region_start) as usize;
        if probe >= region.len() {
            return (region_start, slice.len.min(region.len()), 0);
        }
        let w = PLACE_WINDOW;
        let looked = std::cell::Cell::new(0u64);
        let is_class = |a: usize, b: usize| {
            // classify reads at most 16 windows of 256 bytes of a window.
            looked.set(looked.get() + (b.saturating_sub(a)).min(PROBE_LEN) as u64);
            a < b && classify(&region[a..b]) == class
        };
        let (mut lo, mut hi) = (probe, (probe + PROBE_LEN).min(region.len()));
        let (want, half) = (slice.len, slice.len / 2);
        let left = |lo: &mut usize, hi: usize, done: &dyn Fn(usize, usize) -> bool| {
            while *lo > 0 && !done(*lo, hi) && is_class(lo.saturating_sub(w), *lo) {
                *lo = lo.saturating_sub(w);
            }
        };
        left(&mut lo, hi, &|lo, _| probe - lo >= half);
        while hi < region.len() && hi - lo < want && is_class(hi, (hi + w).min(region.len())) {
            hi = (hi + w).min(region.len());
        }
        left(&mut lo, hi, &|lo, hi| hi - lo >= want);
        let len = want.min(hi - lo);
        let start = (probe + PROBE_LEN / 2).saturating_sub(len / 2).clamp(lo, hi - len);
        (region_start + start as u64, len, looked.get())
    }
}

/// Slices of the data, with where they came from and what they stand for.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// `(raw offset, bytes)` of each slice, in offset order.
    pub slices: Vec<(u64, Vec<u8>)>,
    /// The length of the write the sample stands for.
    pub data_len: u64,
    /// Bytes of the write each slice stands for (in the order of `slices`). Empty: each
    /// slice stands for a share of the write in proportion to its length.
    pub weights: Vec<f64>,
    /// The kinds of data the probes found: `(entropy class, share of the probes)`, by class.
    /// Empty: not probed (too short, or fewer than 2 probes).
    pub kinds: Vec<(u8, f64)>,
    /// The entropy class each slice was placed for (in the order of `slices`), if the sample
    /// is stratified; empty otherwise.
    pub classes: Vec<u8>,
    /// For a stratified sample, the spread of the probes' entropy within each kind (see
    /// [`SampleConfig::strata`]); None: data of one kind.
    pub spread: Option<f64>,
    /// For a stratified sample, where the kinds lie: `(offset, class)` of every probe, in
    /// offset order, over the first `span` bytes of the write (the source sampled); empty
    /// for data of one kind. The predictor reckons the write time along it
    /// ([`Layout`](crate::predict::estimate::Layout)).
    pub map: Vec<(u64, u8)>,
    /// Bytes of the source the sample was taken from (the probes' and slices' offsets are
    /// within it): the whole write for a file, the blocks a writer holds for a writer.
    pub span: u64,
    /// Bytes classified to take the sample (the probes, and windows around the slices of a
    /// stratified sample): the predictor plans their cost against its time budget at
    /// `LOOK_SPEED`, so that the sample it compresses does not depend on timing.
    pub look_bytes: u64,
    /// Seconds spent classifying them (wall time; not part of equality): counted as spent
    /// when the predictor decides whether a costlier rung still fits its budget.
    pub look_seconds: f64,
    /// What moving the slices' bytes cost as the writer moves a block (not part of
    /// equality): the predictor's measure of the pipeline's own cost per byte on this
    /// machine (see [`Feed`]).
    pub feed: Feed,
}

/// What taking the slices cost per byte, measured as the writer's feeder moves a block:
/// read from the file (or copied from the blocks a writer holds) into a buffer whose pages
/// are already in memory, as the feeder's reused pool buffers are, and checksummed as a
/// worker checksums a block. On the 2-vCPU benchmark machine reading slices of a file on
/// tmpfs this way took 0.28-0.34 ns per byte, and a raw write of 512 MiB through the whole
/// pipeline 0.30-0.35 ns per byte of wall time; into fresh pages the reads took 0.6-1.0 ns.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Feed {
    /// Bytes moved and timed.
    pub bytes: u64,
    /// Seconds moving them (wall time).
    pub seconds: f64,
    /// Seconds checksumming them (xxh3, as a worker checksums every block).
    pub hash_seconds: f64,
}

/// The fewest bytes [`Feed`] must have timed to stand for the machine: below that, a read's
/// fixed cost (the system call, the seek) weighs more than the bytes.
pub const FEED_MIN_BYTES: u64 = 64 << 10;

impl Feed {
    /// Seconds per byte to move the input into the pipeline's buffers (None: too few bytes
    /// timed, or no clock).
    pub fn seconds_per_byte(&self) -> Option<f64> {
        (self.bytes >= FEED_MIN_BYTES && self.seconds.is_finite() && self.seconds > 0.0)
            .then(|| self.seconds / self.bytes as f64)
    }

    /// Seconds per byte to checksum it (None as for [`seconds_per_byte`](Self::seconds_per_byte)).
    pub fn hash_per_byte(&self) -> Option<f64> {
        self.seconds_per_byte()?;
        (self.hash_seconds.is_finite() && self.hash_seconds >= 0.0)
            .then(|| self.hash_seconds / self.bytes as f64)
    }

    fn add(&mut self, bytes: usize, seconds: f64, hash_seconds: f64) {
        self.bytes += bytes as u64;
        self.seconds += seconds;
        self.hash_seconds += hash_seconds;
    }
}

/// What the predictor plans a byte classified (`adz_control::classify`) to cost when it cuts
/// the sample for its time budget: 1 GB/s. Measured: 512 probes of 4 KiB of a 512 MiB input
/// in 1.4-1.7 ms (1.2-1.5 GB/s) on the 2-vCPU machine of the benchmarks, with a build
/// running beside it.
pub(crate) const LOOK_SPEED: f64 = 1e9;

impl PartialEq for Sample {
    fn eq(&self, other: &Sample) -> bool {
        self.slices == other.slices
            && self.data_len == other.data_len
            && self.weights == other.weights
            && self.kinds == other.kinds
            && self.classes == other.classes
            && self.spread == other.spread
            && self.map == other.map
            && self.span == other.span
            && self.look_bytes == other.look_bytes
    }
}

impl Sample {
    /// A sample of `data` (the whole write).
    pub fn from_slice(data: &[u8], cfg: &SampleConfig) -> Sample {
        Sample::from_parts(&[data], data.len() as u64, cfg)
    }

    /// A sample of the concatenation of `parts`, standing for a write of `data_len` bytes of
    /// which `parts` are the beginning (a writer's first blocks).
    pub fn from_parts(parts: &[&[u8]], data_len: u64, cfg: &SampleConfig) -> Sample {
        let source_len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let read = |off: u64, n: usize, timed: bool| -> Result<(Cow<'_, [u8]>, f64)> {
            if !timed {
                return Ok((view(parts, off, n), 0.0));
            }
            // Copied as `Writer::write` copies a block, into pages already in memory.
            let mut buf = vec![1u8; n];
            let t = Instant::now();
            let got = fill_range(parts, off, &mut buf);
            let secs = t.elapsed().as_secs_f64();
            buf.truncate(got);
            Ok((Cow::Owned(buf), secs))
        };
        Sample::take(cfg, source_len, data_len, read).expect("reading memory does not fail")
    }

    /// A sample of a seekable input of `len` bytes (a file), read slice by slice: only the
    /// probes and the bytes around the slices are read.
    pub fn from_reader<R: Read + Seek>(mut r: R, len: u64, cfg: &SampleConfig) -> Result<Sample> {
        let read = |off: u64, n: usize, timed: bool| -> Result<(Cow<'static, [u8]>, f64)> {
            // A slice is read as the feeder reads a block: into pages already in memory.
            let mut buf = if timed { vec![1u8; n] } else { vec![0u8; n] };
            r.seek(SeekFrom::Start(off)).map_err(|e| Error::io("seeking the input", e))?;
            let t = Instant::now();
            r.read_exact(&mut buf).map_err(|e| Error::io("reading a sample of the input", e))?;
            Ok((Cow::Owned(buf), t.elapsed().as_secs_f64()))
        };
        Sample::take(cfg, len, len, read)
    }

    /// Probe, plan, read and place: a sample of `source_len` bytes read by `read(offset,
    /// len)`, standing for a write of `data_len` bytes.
    fn take<'a>(
        cfg: &SampleConfig,
        source_len: u64,
        data_len: u64,
        mut read: impl FnMut(u64, usize, bool) -> Result<(Cow<'a, [u8]>, f64)>,
    ) -> Result<Sample> {
        let (mut look, mut look_bytes) = (0.0, 0u64);
        let mut feed = Feed::default();
        // Every PROBE_FIRST-th probe first. If they all see one kind of data, and the
        // entropy of their bytes hardly varies, the data is of one kind and the rest are not
        // looked at: data of one kind pays an eighth of the probes.
        let offsets = cfg.probe_plan(source_len, data_len);
        let mut classes: Vec<Option<u8>> = vec![None; offsets.len()];
        let first = if offsets.len() / PROBE_FIRST >= 2 { PROBE_FIRST } else { 1 };
        let mut entropies: Vec<(u8, f64)> = Vec::new();
        for (i, &off) in offsets.iter().enumerate().step_by(first) {
            let (bytes, _) = read(off, PROBE_LEN, false)?;
            let t = Instant::now();
            let class = classify(&bytes);
            classes[i] = Some(class);
            entropies.push((class, adz_control::entropy(&bytes)));
            look += t.elapsed().as_secs_f64();
            look_bytes += 2 * bytes.len() as u64;
        }
        let all: Vec<f64> = entropies.iter().map(|e| e.1).collect();
        let one = entropies.first().map(|e| e.0);
        let mixed = !offsets.is_empty()
            && (entropies.iter().any(|e| Some(e.0) != one) || spread(&all) > ENTROPY_SPREAD);
        // Several kinds, each alike within itself (datagen's `mixed`): a few long slices, at
        // least one per kind. Kinds that vary within themselves (a source tar's text): many.
        let spread = mixed.then(|| within_spread(&entropies));
        if mixed {
            for (i, &off) in offsets.iter().enumerate() {
                if classes[i].is_none() {
                    let (bytes, _) = read(off, PROBE_LEN, false)?;
                    let t = Instant::now();
                    classes[i] = Some(classify(&bytes));
                    look += t.elapsed().as_secs_f64();
                    look_bytes += bytes.len() as u64;
                }
            }
        }
        let probes: Vec<(u64, u8)> =
            offsets.iter().zip(&classes).filter_map(|(&o, c)| c.map(|c| (o, c))).collect();
        let plan = cfg.plan_stratified(source_len, data_len, &probes, spread);
        let mut placed: Vec<(u64, Vec<u8>, f64, Option<u8>)> = Vec::with_capacity(plan.len());
        for s in &plan {
            let (at, n) = cfg.region(s, source_len);
            let (region, secs) = read(at, n, true)?;
            let t = Instant::now();
            std::hint::black_box(xxh3(&region));
            feed.add(region.len(), secs, t.elapsed().as_secs_f64());
            let t = Instant::now();
            let (off, len, looked) = cfg.place(s, at, &region);
            look += t.elapsed().as_secs_f64();
            look_bytes += looked;
            let from = (off - at) as usize;
            placed.push((off, region[from..from + len].to_vec(), s.weight, s.class));
        }
        // Slices placed around nearby probes may overlap: the later one starts where the
        // earlier ends; one wholly inside another adds its weight to it.
        placed.sort_by_key(|p| p.0);
        let mut slices: Vec<(u64, Vec<u8>)> = Vec::with_capacity(placed.len());
        let mut weights: Vec<f64> = Vec::with_capacity(placed.len());
        let mut classes: Vec<u8> = Vec::with_capacity(placed.len());
        let mut end = 0u64;
        for (off, mut bytes, w, class) in placed {
            let cut = end.saturating_sub(off).min(bytes.len() as u64) as usize;
            bytes.drain(..cut);
            if bytes.is_empty() {
                if let Some(last) = weights.last_mut() {
                    *last += w;
                }
                continue;
            }
            let off = off + cut as u64;
            end = off + bytes.len() as u64;
            slices.push((off, bytes));
            weights.push(w);
            if let Some(c) = class {
                classes.push(c);
            }
        }
        Ok(Sample {
            slices,
            data_len: data_len.max(source_len),
            weights,
            kinds: kinds(&probes),
            classes,
            spread,
            map: if mixed { probes } else { Vec::new() },
            span: source_len,
            look_bytes,
            look_seconds: look,
            feed,
        })
    }

    /// Bytes in the sample.
    pub fn bytes(&self) -> u64 {
        self.slices.iter().map(|(_, s)| s.len() as u64).sum()
    }

    /// True if the sample holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes() == 0
    }

    /// The slice a rung compresses first, to set its codec up, and whose time is then not
    /// taken (see [`Predictor::measure`](crate::predict::Predictor::measure)): the longest
    /// (the first of equals), so that the set-up fits the others. None: no slices.
    pub fn setup_slice(&self) -> Option<usize> {
        (0..self.slices.len()).rev().max_by_key(|&i| self.slices[i].1.len())
    }

    /// True if [`setup_slice`](Sample::setup_slice) is the only slice of its kind (of the
    /// sample's one kind, or of its class in a stratified sample) with bytes to stand for: no
    /// other slice can give its time, so a rung compresses it twice.
    pub fn setup_alone(&self) -> bool {
        let Some(first) = self.setup_slice() else { return false };
        let kind = |i: usize| self.classes.get(i).copied();
        !(0..self.slices.len()).any(|i| {
            i != first
                && kind(i) == kind(first)
                && !self.slices[i].1.is_empty()
                && self.weight(i) > 0.0
        })
    }

    /// Bytes a rung compresses to be measured on this sample: every slice once, and the
    /// set-up slice a second time if it is alone of its kind.
    pub fn measured_bytes(&self) -> u64 {
        let again = match self.setup_slice() {
            Some(i) if self.setup_alone() => self.slices[i].1.len() as u64,
            _ => 0,
        };
        self.bytes() + again
    }

    /// Bytes of the write slice `i` stands for: its weight, or its length if the sample has
    /// no weights.
    pub fn weight(&self, i: usize) -> f64 {
        match self.weights.get(i) {
            Some(&w) if w.is_finite() && w >= 0.0 => w,
            _ => self.slices.get(i).map_or(0.0, |s| s.1.len() as f64),
        }
    }

    /// The same sample with every slice cut to at most `len` bytes (a smaller budget). Each
    /// slice still stands for the same bytes of the write.
    pub fn truncated(&self, len: usize) -> Sample {
        let slices =
            self.slices.iter().map(|(o, s)| (*o, s[..s.len().min(len.max(1))].to_vec())).collect();
        let weights = (0..self.slices.len()).map(|i| self.weight(i)).collect();
        Sample {
            slices,
            data_len: self.data_len,
            weights,
            kinds: self.kinds.clone(),
            classes: self.classes.clone(),
            spread: self.spread,
            map: self.map.clone(),
            span: self.span,
            look_bytes: self.look_bytes,
            look_seconds: self.look_seconds,
            feed: self.feed,
        }
    }

    /// The longest slice such that cutting every slice to it leaves at most `bytes` in the
    /// sample (short slices stay whole, the long ones share the rest equally).
    pub fn cut_for(&self, bytes: u64) -> usize {
        let lens: Vec<u64> = self.slices.iter().map(|s| s.1.len() as u64).collect();
        water_level(&lens, bytes)
    }
}

impl Sample {
    /// The sample cut to at most `bytes` (the predictor's time budget), as the plan is cut
    /// to its byte budget: shorter slices first, then fewer. Slices are cut (the longest
    /// first) down to `floor` bytes; a stratified sample that still does not fit then keeps
    /// fewer slices per class (`ceil(n x share)` for the largest `n` that fits, at least one
    /// per class, evenly spaced among the class's slices, the class's weight shared among
    /// those kept); then slices are cut further, to at least `least` bytes. A sample of one
    /// kind keeps all its slices.
    pub fn fit(&self, bytes: u64, floor: usize, least: usize) -> Sample {
        if self.bytes() <= bytes {
            return self.clone();
        }
        let n = self.slices.len();
        // The slices kept and the weight each stands for: all of them, unless a stratified
        // sample has to keep fewer.
        let mut keep: Vec<(usize, f64)> = (0..n).map(|i| (i, self.weight(i))).collect();
        let stratified = self.classes.len() == n && n > 0;
        if stratified && self.cut_for(bytes) < floor {
            let mut classes: Vec<u8> = self.classes.clone();
            classes.sort_unstable();
            classes.dedup();
            let of = |c: u8| (0..n).filter(move |&i| self.classes[i] == c);
            let weight = |c: u8| of(c).map(|i| self.weight(i)).sum::<f64>();
            let total: f64 = classes.iter().map(|&c| weight(c)).sum();
            let shares: Vec<f64> = classes
                .iter()
                .map(|&c| if total > 0.0 { weight(c) / total } else { 0.0 })
                .collect();
            let caps: Vec<usize> = classes.iter().map(|&c| of(c).count()).collect();
            let counts = |k: usize| allocate(k, &shares, &caps);
            // The most slices of `floor` bytes that fit, by class.
            let fits = |m: &[usize]| {
                let mut lens: Vec<usize> = Vec::new();
                for (&c, &k) in classes.iter().zip(m) {
                    let idx: Vec<usize> = of(c).collect();
                    lens.extend(
                        pick(&idx, k).into_iter().map(|i| self.slices[i].1.len().min(floor)),
                    );
                }
                lens.iter().map(|&l| l as u64).sum::<u64>() <= bytes
            };
            let mut k = n;
            while k > 1 && !fits(&counts(k)) {
                k -= 1;
            }
            let m = counts(k);
            keep.clear();
            for (&c, &kc) in classes.iter().zip(&m) {
                let idx: Vec<usize> = of(c).collect();
                let w = weight(c) / kc as f64;
                keep.extend(pick(&idx, kc).into_iter().map(|i| (i, w)));
            }
            keep.sort_unstable_by_key(|k| k.0);
        }
        // Then every kept slice cut to the same length (the longest first), copying only
        // what is kept.
        let lens: Vec<u64> = keep.iter().map(|&(i, _)| self.slices[i].1.len() as u64).collect();
        let cut = water_level(&lens, bytes).max(least).max(1);
        Sample {
            slices: keep
                .iter()
                .map(|&(i, _)| {
                    let (off, s) = &self.slices[i];
                    (*off, s[..s.len().min(cut)].to_vec())
                })
                .collect(),
            data_len: self.data_len,
            weights: keep.iter().map(|&(_, w)| w).collect(),
            kinds: self.kinds.clone(),
            classes: if self.classes.len() == n {
                keep.iter().map(|&(i, _)| self.classes[i]).collect()
            } else {
                Vec::new()
            },
            spread: self.spread,
            map: self.map.clone(),
            span: self.span,
            look_bytes: self.look_bytes,
            look_seconds: self.look_seconds,
            feed: self.feed,
        }
    }
}

/// `n` slices among classes of `shares` (summing to 1): at least one per class and at most
/// its `caps`, the others one at a time to the class furthest below its share.
fn allocate(n: usize, shares: &[f64], caps: &[usize]) -> Vec<usize> {
    let want: Vec<f64> = shares.iter().map(|s| n as f64 * s.max(0.0)).collect();
    let mut m: Vec<usize> = caps.iter().map(|&cap| cap.min(1)).collect();
    // One at a time to the class furthest below its share that can take one.
    while m.iter().sum::<usize>() < n {
        let next = (0..m.len()).filter(|&i| m[i] < caps[i]).max_by(|&a, &b| {
            (want[a] - m[a] as f64).total_cmp(&(want[b] - m[b] as f64)).then(b.cmp(&a))
        });
        match next {
            Some(i) => m[i] += 1,
            None => break,
        }
    }
    m
}

/// The longest `cut` such that `sum(min(len, cut))` over `lens` is at most `bytes`
/// (`usize::MAX`: all fit).
fn water_level(lens: &[u64], bytes: u64) -> usize {
    let mut lens = lens.to_vec();
    lens.sort_unstable();
    let mut left = bytes;
    let mut n = lens.len() as u64;
    for l in lens {
        if l * n > left {
            return usize::try_from(left / n).unwrap_or(usize::MAX);
        }
        left -= l;
        n -= 1;
    }
    usize::MAX
}

/// `k` of `idx`, evenly spaced (all if `k >= idx.len()`).
fn pick(idx: &[usize], k: usize) -> Vec<usize> {
    let n = idx.len();
    if k >= n {
        return idx.to_vec();
    }
    (0..k).map(|j| idx[((2 * j + 1) * n / (2 * k)).min(n - 1)]).collect()
}

/// `len` bytes from `off` of the concatenation of `parts` (fewer at its end), borrowed if
/// they lie in one part.
fn view<'p>(parts: &[&'p [u8]], off: u64, len: usize) -> Cow<'p, [u8]> {
    let mut pos = 0u64;
    for p in parts {
        let end = pos + p.len() as u64;
        if off >= pos && off < end {
            let from = (off - pos) as usize;
            if p.len() - from >= len {
                return Cow::Borrowed(&p[from..from + len]);
            }
            break;
        }
        pos = end;
    }
    Cow::Owned(copy_range(parts, off, len))
}

/// Copy the concatenation of `parts` from `off` into `buf`; returns the bytes copied (fewer
/// than `buf.len()` at its end).
fn fill_range(parts: &[&[u8]], off: u64, buf: &mut [u8]) -> usize {
    let mut done = 0usize;
    let mut pos = 0u64;
    for p in parts {
        let (start, end) = (pos, pos + p.len() as u64);
        pos = end;
        let want = off + done as u64;
        if done == buf.len() || want >= end {
            continue;
        }
        let from = (want - start) as usize;
        let take = (buf.len() - done).min(p.len() - from);
        buf[done..done + take].copy_from_slice(&p[from..from + take]);
        done += take;
    }
    done
}

/// `len` bytes from `off` of the concatenation of `parts` (fewer at its end).
fn copy_range(parts: &[&[u8]], off: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    let n = fill_range(parts, off, &mut out);
    out.truncate(n);
    out
}

/// The standard deviation of `xs` (0 for fewer than two).
fn spread(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / xs.len() as f64).sqrt()
}

/// The pooled standard deviation of the entropies within each class: `(class, entropy)`.
fn within_spread(xs: &[(u8, f64)]) -> f64 {
    let mut sum_sq = 0.0;
    let mut n = 0usize;
    let mut classes: Vec<u8> = xs.iter().map(|x| x.0).collect();
    classes.sort_unstable();
    classes.dedup();
    for c in classes {
        let v: Vec<f64> = xs.iter().filter(|x| x.0 == c).map(|x| x.1).collect();
        sum_sq += spread(&v).powi(2) * v.len() as f64;
        n += v.len();
    }
    if n == 0 {
        0.0
    } else {
        (sum_sq / n as f64).sqrt()
    }
}

/// `(class, share)` of the probes, by class.
fn kinds(probes: &[(u64, u8)]) -> Vec<(u8, f64)> {
    let mut out: Vec<(u8, f64)> = Vec::new();
    for &(_, c) in probes {
        match out.iter_mut().find(|k| k.0 == c) {
            Some(k) => k.1 += 1.0,
            None => out.push((c, 1.0)),
        }
    }
    out.sort_by_key(|k| k.0);
    for k in &mut out {
        k.1 /= probes.len() as f64;
    }
    out
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_respect_the_budget_and_the_source() {
        let cfg = SampleConfig::default();
        for len in [0u64, 1, 100, 16 << 10, 1 << 20, 5 << 20, 100 << 20, 10 << 30] {
            let plan = cfg.plan(len, len);
            let total: u64 = plan.iter().map(|p| p.1 as u64).sum();
            assert!(total as f64 <= 0.02 * len as f64 + (16 << 10) as f64, "{len}: {total}");
            for w in plan.windows(2) {
                assert!(w[0].0 + w[0].1 as u64 <= w[1].0, "{len}: overlapping {plan:?}");
            }
            for &(o, n) in &plan {
                assert!(o + n as u64 <= len, "{len}: {plan:?}");
            }
            assert_eq!(plan.is_empty(), len == 0);
        }
        // Large data: 3 slices of one block.
        assert_eq!(
            cfg.plan(10 << 30, 10 << 30).iter().map(|p| p.1).collect::<Vec<_>>(),
            [1 << 20; 3]
        );
    }

    #[test]
    fn parts_and_slice_agree() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let cfg = SampleConfig { seed: 9, ..SampleConfig::default() };
        let whole = Sample::from_slice(&data, &cfg);
        let parts: Vec<&[u8]> = data.chunks(65_537).collect();
        assert_eq!(Sample::from_parts(&parts, data.len() as u64, &cfg), whole);
        let read =
            Sample::from_reader(std::io::Cursor::new(&data), data.len() as u64, &cfg).unwrap();
        assert_eq!(read, whole);
        for (o, s) in &whole.slices {
            assert_eq!(&data[*o as usize..*o as usize + s.len()], &s[..]);
        }
    }

    /// Segments of `seg` bytes: text-like (entropy class 2) and random (class 4) in turn, or
    /// as `kinds` says.
    fn segments(kinds: &[u8], seg: usize, n: usize) -> Vec<u8> {
        let mut state = 7u64;
        let mut out = Vec::with_capacity(seg * n);
        for i in 0..n {
            for _ in 0..seg {
                let r = splitmix(&mut state);
                out.push(match kinds[i % kinds.len()] {
                    4 => r as u8,
                    // 16 letters: 4 bits per byte.
                    _ => b'a' + (r % 16) as u8,
                });
            }
        }
        out
    }

    #[test]
    fn one_kind_is_sampled_as_before() {
        // Probes that see one kind change nothing: the uniform plan, equal weights.
        let data = segments(&[2], 1 << 20, 40);
        let cfg = SampleConfig::default();
        let s = Sample::from_slice(&data, &cfg);
        let plan = cfg.plan(data.len() as u64, data.len() as u64);
        assert_eq!(s.slices.iter().map(|x| (x.0, x.1.len())).collect::<Vec<_>>(), plan);
        assert_eq!(s.kinds, [(2, 1.0)]);
        assert!(s.spread.is_none() && s.classes.is_empty());
        // Only the first eighth of the probes were looked at (twice: class and entropy).
        let probes = cfg.probe_plan(data.len() as u64, data.len() as u64).len();
        assert!(probes > 100, "{probes}");
        let first = probes.div_ceil(PROBE_FIRST) as u64;
        assert_eq!(s.look_bytes, 2 * first * PROBE_LEN as u64);
        for i in 0..3 {
            assert_eq!(s.weight(i), data.len() as f64 / 3.0);
        }
        // No probes: the same slices.
        let none = Sample::from_slice(&data, &SampleConfig { probes: 0, ..cfg });
        assert_eq!(none.slices, s.slices);
        assert!(none.kinds.is_empty() && none.look_bytes == 0);
    }

    #[test]
    fn kinds_are_sampled_in_their_shares() {
        // A quarter random, three quarters text, in segments of 3 MiB and a bit.
        let seg = (3 << 20) + 4321;
        let data = segments(&[2, 2, 4, 2], seg, 24);
        let cfg = SampleConfig::default();
        let s = Sample::from_slice(&data, &cfg);
        assert_eq!(s.kinds.len(), 2, "{:?}", s.kinds);
        assert!((s.kinds[1].1 - 0.25).abs() < 0.02, "{:?}", s.kinds);
        // The kinds are alike within themselves: 3 slices, at least one per kind, in the
        // bytes of the uniform plan, each of its kind's bytes only.
        assert_eq!(s.spread.map(|x| x < ENTROPY_SPREAD), Some(true));
        assert_eq!(s.slices.len(), 3);
        assert_eq!(s.classes.iter().filter(|&&c| c == 4).count(), 1, "{:?}", s.classes);
        let uniform: u64 =
            cfg.plan(data.len() as u64, data.len() as u64).iter().map(|p| p.1 as u64).sum();
        assert!(s.bytes() <= uniform, "{} > {uniform}", s.bytes());
        for ((off, bytes), &c) in s.slices.iter().zip(&s.classes) {
            assert_eq!(classify(bytes), c, "slice at {off}");
            let kind = [2, 2, 4, 2][(*off as usize / seg) % 4];
            let last = [2, 2, 4, 2][((*off as usize + bytes.len() - 1) / seg) % 4];
            assert!(kind == c && last == c, "slice at {off} of {c} runs over a border");
        }
        for w in s.slices.windows(2) {
            assert!(w[0].0 + w[0].1.len() as u64 <= w[1].0, "overlapping slices");
        }
        // The weights: the whole write, each kind its share.
        let total: f64 = (0..s.slices.len()).map(|i| s.weight(i)).sum();
        assert!((total - data.len() as f64).abs() < 1.0, "{total}");
        let random: f64 =
            (0..s.slices.len()).filter(|&i| s.classes[i] == 4).map(|i| s.weight(i)).sum();
        assert!((random / total - s.kinds[1].1).abs() < 1e-9);
        // The same from a reader, and from parts.
        let read =
            Sample::from_reader(std::io::Cursor::new(&data), data.len() as u64, &cfg).unwrap();
        assert_eq!(read, s);
        let parts: Vec<&[u8]> = data.chunks(1_000_003).collect();
        assert_eq!(Sample::from_parts(&parts, data.len() as u64, &cfg), s);
    }

    #[test]
    fn kinds_that_vary_within_get_more_slices() {
        // Text of 2, 3, 4 and 5 bits per byte: one entropy class, but not one kind.
        let mut data = Vec::new();
        let mut state = 3u64;
        for i in 0..64 {
            let bits = 2 + i % 4;
            for _ in 0..(1 << 20) {
                data.push(b'a' + (splitmix(&mut state) % (1 << bits)) as u8);
            }
        }
        let cfg = SampleConfig::default();
        let s = Sample::from_slice(&data, &cfg);
        assert!(s.spread.is_some_and(|x| x > ENTROPY_SPREAD), "{:?}", s.spread);
        assert_eq!(s.slices.len(), cfg.mixed_slices, "{:?}", s.kinds);
        assert!(s.slices.iter().all(|x| x.1.len() >= cfg.min_slice));
    }

    #[test]
    fn a_cut_keeps_long_slices_and_every_kind() {
        let seg = (3 << 20) + 4321;
        let data = segments(&[2, 2, 4, 2], seg, 24);
        let s = Sample::from_slice(&data, &SampleConfig::default());
        let total: f64 = (0..s.slices.len()).map(|i| s.weight(i)).sum();
        // Room for two 64 KiB slices: one per kind, each standing for its whole kind.
        let cut = s.fit(150_000, 64 << 10, 4096);
        assert_eq!(cut.slices.len(), 2);
        let mut classes = cut.classes.clone();
        classes.sort_unstable();
        assert_eq!(classes, [2, 4]);
        assert!(cut.bytes() <= 150_000);
        let cut_total: f64 = (0..cut.slices.len()).map(|i| cut.weight(i)).sum();
        assert!((cut_total - total).abs() < 1.0);
        // Less room: the slices are cut further, never below `least`.
        let tiny = s.fit(1000, 64 << 10, 4096);
        assert_eq!(tiny.slices.len(), 2);
        assert!(tiny.slices.iter().all(|x| x.1.len() == 4096));
        // A sample of one kind keeps its slices and cuts them (as before).
        let one = Sample::from_slice(&segments(&[2], 1 << 20, 40), &SampleConfig::default());
        let cut = one.fit(3 * 5000, 64 << 10, 4096);
        assert_eq!(cut.slices.len(), 3);
        assert!(cut.slices.iter().all(|x| x.1.len() == 5000));
        // Enough room: nothing changes.
        assert_eq!(s.fit(u64::MAX, 64 << 10, 4096), s);
    }

    #[test]
    fn allocation_and_water_filling() {
        assert_eq!(allocate(12, &[0.4, 0.2, 0.2, 0.2], &[100; 4]), [5, 3, 2, 2]);
        assert_eq!(allocate(3, &[0.4, 0.2, 0.2, 0.2], &[100; 4]), [1, 1, 1, 1]);
        assert_eq!(allocate(3, &[0.99, 0.01], &[100; 2]), [2, 1]);
        assert_eq!(allocate(12, &[0.5, 0.5], &[2, 100]), [2, 10]);
        let s = Sample {
            slices: vec![(0, vec![0; 10]), (100, vec![0; 50]), (200, vec![0; 100])],
            ..Sample::default()
        };
        assert_eq!(s.cut_for(160), usize::MAX);
        assert_eq!(s.cut_for(110), 50);
        assert_eq!(s.cut_for(70), 30);
        assert_eq!(s.cut_for(3), 1);
    }
}
