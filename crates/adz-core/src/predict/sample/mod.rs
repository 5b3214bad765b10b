//! A few spread slices of the data: what the predictor compresses instead of the data.
//!
//! Data of one kind (text, an array of doubles) is sampled by a few long slices, one per equal
//! stretch of the data: long, because a short slice gives the codecs less history than a block
//! and compresses worse. Data of several kinds (a tar of mixed files, a container of arrays
//! and text) would need many slices to be represented by slices at random places, and many
//! slices in the same bytes are short ones. So the data is first **probed**:
//! [`SampleConfig::probes`] windows of `PROBE_LEN` bytes, one per equal stretch, each given
//! its entropy class (`adz_control::classify`, the class the writer gives every block; about
//! 2-3 us a probe besides its read), an eighth of them first. If those see one class and
//! their entropy hardly varies (`ENTROPY_SPREAD`), the slices are placed as for data of one
//! kind, as before.
//! Otherwise all probes are looked at and the sample is **stratified by class** within the
//! same bytes: each class gets bytes in proportion to its share of the probes (at least a
//! minimum slice) and slices at evenly spaced probes of that class, each slice kept within its
//! class's bytes around its probe. Each slice carries a weight, the bytes of the write it
//! stands for (its class's share of the write over the class's slices); the predictor weighs
//! each slice's stored bytes per raw byte and seconds per raw byte by it, so that a class
//! counts with its share of the write however long its slices are. How many slices, and how
//! short they may be cut: [`SampleConfig::strata`].

mod fit;
mod place;
mod plan;
mod probe;

use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};
use std::time::Instant;

use self::place::{merge, take_slices};
use self::probe::{kinds, probe, Look};
use crate::{Error, Result};

/// Bytes of one probe: what `adz_control::classify` looks at in a block (16 windows of 256
/// bytes). Fewer bytes bias the entropy of random bytes down towards the random class's bound.
pub(crate) const PROBE_LEN: usize = 4096;

/// Every this-many-th probe is looked at first; the others only if those see more than one
/// kind of data.
pub(crate) const PROBE_FIRST: usize = 8;

/// Probes whose entropy varies more than this (standard deviation, bits per byte) see data
/// of several kinds even within one entropy class: it separates datagen's one-kind data from
/// a source tar's text (docs/PREDICTOR.md, "Method", has the spreads measured).
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
    /// `min_slice` long. Default 12: on a source tar 3 slices predicted the ratio far worse
    /// than 12 (docs/PREDICTOR.md, "Budget").
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
/// worker checksums a block: fresh pages would cost about twice as much and overstate the
/// pipeline's cost (docs/PREDICTOR.md, "Method").
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
#[doc(hidden)] // a tuning constant, public only for tests/predict.rs
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

    pub(super) fn add(&mut self, bytes: usize, seconds: f64, hash_seconds: f64) {
        self.bytes += bytes as u64;
        self.seconds += seconds;
        self.hash_seconds += hash_seconds;
    }
}

/// What the predictor plans a byte classified (`adz_control::classify`) to cost when it cuts
/// the sample for its time budget: 1 GB/s, a little below what was measured on the
/// benchmark machine (docs/PREDICTOR.md, "Budget").
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
        let mut look = Look::default();
        let probed = probe(cfg, source_len, data_len, &mut read, &mut look)?;
        let plan = cfg.plan_stratified(source_len, data_len, &probed.probes, probed.spread);
        let mut feed = Feed::default();
        let placed = take_slices(cfg, &plan, source_len, &mut read, &mut feed, &mut look)?;
        let (slices, weights, classes) = merge(placed);
        Ok(Sample {
            slices,
            data_len: data_len.max(source_len),
            weights,
            kinds: kinds(&probed.probes),
            classes,
            spread: probed.spread,
            map: if probed.mixed { probed.probes } else { Vec::new() },
            span: source_len,
            look_bytes: look.bytes,
            look_seconds: look.seconds,
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
pub(super) fn fill_range(parts: &[&[u8]], off: u64, buf: &mut [u8]) -> usize {
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

#[cfg(test)]
pub(super) mod tests {
    use super::plan::splitmix;
    use super::*;
    use adz_control::classify;

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
    pub(super) fn segments(kinds: &[u8], seg: usize, n: usize) -> Vec<u8> {
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
        // Only the first eighth of the probes were looked at (once: the class is the entropy's).
        let probes = cfg.probe_plan(data.len() as u64, data.len() as u64).len();
        assert!(probes > 100, "{probes}");
        let first = probes.div_ceil(PROBE_FIRST) as u64;
        assert_eq!(s.look_bytes, first * PROBE_LEN as u64);
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
}
