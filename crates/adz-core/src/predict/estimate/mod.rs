//! The write-time formulas: how long a write of `D` bytes takes through a link of `L` bytes/s
//! with and without compression (Papio's equations 1 and 2, generalised to adz's pipeline).
//!
//! Papio compresses a chunk and then sends it, so its write time with compression is the sum
//! `D/C + D/(f L)`. adz compresses block `k+1` on N workers while block `k` is on the link, so
//! the two stages overlap and the slower one sets the pace; the faster one only adds its time
//! for one block at the start or the end (the pipeline fill):
//!
//! ```text
//! T_raw     = D / L
//! T(r)      = max(D / (N s), D / (f L)) + fill
//! fill      = b / (f L)   if compression is the bottleneck (the last frame still has to go)
//!           = b / s       otherwise (the first block has to be compressed before anything goes)
//! speedup   = T_raw / T(r)
//! ```
//!
//! with `s` one thread's compression speed of rung `r` (raw bytes/s), `f` its ratio, `N` the
//! worker threads and `b = min(block, D)`.
//!
//! The workers do not have the cores to themselves: reading the input, cutting blocks,
//! sequencing and writing frames cost CPU too, `c` seconds per raw byte (the pipeline's *path
//! cost*). With `C` cores the compression stage takes at least the CPU time of the whole
//! write over the cores. And every byte passes the pipeline's one-thread stages (the feeder
//! that reads the input, the sequencer), `c1` seconds per raw byte, whatever the cores:
//!
//! ```text
//! D / (N s)  ->  max(D / (N s), (D / s + D c) / C, D c1)
//! D / L      ->  max(D / L, D c / C, D c1)
//! ```
//!
//! Text through two workers on two cores compresses at 1.8x one worker, not 2x: lz4:1 on the
//! kernel tar took 0.96-0.98 s for 1 GiB where `D / (N s)` says 0.64 s and the CPU term
//! 0.83 s; with no compression at all the pipeline moves 4.9-5.3 GB/s
//! (docs/benchmarks/2026-11-25-predict-cores).
//!
//! Compression *pays* when some rung's speedup exceeds 1 (for S1) and the rung saves at least
//! the keep threshold's 3 % (a block that saves less is stored raw anyway).

use adz_control::Schedule;
use adz_control::{Strategy, MAX_CLASSES, RATIO_TIE};

/// What one rung achieves on the data, per thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RungPerf {
    /// Compression speed of one thread, raw bytes/s.
    pub speed: f64,
    /// raw / compressed (1.0 or a little less: nothing saved).
    pub ratio: f64,
    /// `(speed, ratio)` on each kind of data (by entropy class), where the sample measured
    /// the kinds apart (a stratified sample); all None for data of one kind. With a
    /// [`Layout`] in the model, the write time is reckoned block by block from these.
    pub kinds: [Option<(f64, f64)>; MAX_CLASSES],
}

impl RungPerf {
    /// A rung of one-thread speed `speed` (raw bytes/s) and ratio `ratio` on data of one kind.
    pub fn new(speed: f64, ratio: f64) -> RungPerf {
        RungPerf { speed, ratio, kinds: [None; MAX_CLASSES] }
    }

    /// The same rung with its speed and ratio on each kind of data (`(class, speed, ratio)`;
    /// classes past `MAX_CLASSES` are left out).
    pub fn with_kinds(mut self, kinds: &[(u8, f64, f64)]) -> RungPerf {
        for &(class, speed, ratio) in kinds {
            if let Some(k) = self.kinds.get_mut(class as usize) {
                *k = Some((speed, ratio));
            }
        }
        self
    }

    /// Speed and ratio on blocks of class `class`: the kind's own if measured, else the
    /// whole sample's.
    fn on(&self, class: u8) -> (f64, f64) {
        self.kinds.get(class as usize).copied().flatten().unwrap_or((self.speed, self.ratio))
    }

    /// True if any kind was measured apart.
    fn by_kind(&self) -> bool {
        self.kinds.iter().any(Option::is_some)
    }
}

/// The most blocks a write with a [`Layout`] is reckoned in one by one; a longer write is
/// reckoned in groups of consecutive blocks (each group as one block of their bytes).
pub const MAX_STEPS: usize = 4096;

/// The kinds of data along a write: the entropy class of each step of the write (a block, or
/// a group of blocks past [`MAX_STEPS`]), where the data has several kinds that the sample
/// measured apart. Sections of different kinds load the stages in turn: a section that
/// compresses slowly is compression-bound while one that compresses well waits for the
/// link, and the pipeline's buffers only carry a few blocks from one to the next. A write of
/// 4 MiB sections of text, doubles, sparse and random data through 1200 MB/s on two cores
/// took 12-27 % longer than the whole write's averages say.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Class of each step, in order.
    pub steps: Vec<u8>,
}

impl Layout {
    /// The layout of a write of `bytes` in blocks of `block` bytes, given the class found at
    /// some offsets of its first `span` bytes (`map`: `(offset, class)`, in offset order; a
    /// writer's probes see only the blocks it holds, and the rest of the write is taken to
    /// go on alike, the map repeated). Each step takes the class of the probe nearest its
    /// middle. None: no map, or a map of one class (the averages are then exact).
    pub fn from_map(map: &[(u64, u8)], span: u64, bytes: u64, block: u64) -> Option<Layout> {
        let first = map.first()?.1;
        if span == 0 || bytes == 0 || map.iter().all(|m| m.1 == first) {
            return None;
        }
        let (n, step) = steps(bytes, block);
        let steps = (0..n)
            .map(|i| {
                let mid = ((i as f64 + 0.5) * step).min(bytes as f64 - 1.0) as u64 % span;
                let at = map.partition_point(|m| m.0 <= mid);
                let before = at.checked_sub(1).map(|j| map[j]);
                let after = map.get(at).copied();
                match (before, after) {
                    (Some(b), Some(a)) => {
                        if mid - b.0 <= a.0 - mid {
                            b.1
                        } else {
                            a.1
                        }
                    }
                    (Some(x), None) | (None, Some(x)) => x.1,
                    (None, None) => first,
                }
            })
            .collect();
        Some(Layout { steps })
    }
}

/// The steps a write of `bytes` in blocks of `block` is reckoned in, and each step's bytes:
/// one block per step, or groups of blocks past [`MAX_STEPS`].
fn steps(bytes: u64, block: u64) -> (usize, f64) {
    let blocks = bytes.div_ceil(block.max(1)).max(1);
    let group = blocks.div_ceil(MAX_STEPS as u64);
    let n = blocks.div_ceil(group) as usize;
    (n, bytes as f64 / n as f64)
}

/// The machine and the write the formulas are applied to.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteModel {
    /// Raw bytes of the write.
    pub bytes: u64,
    /// Worker threads.
    pub threads: usize,
    /// Raw bytes per block.
    pub block_size: u64,
    /// Cores the pipeline shares (0: as many as the workers, so that only `D / (N s)` counts).
    pub cpus: usize,
    /// CPU seconds per raw byte the pipeline spends besides compressing: the path cost `c`.
    pub path_cost: f64,
    /// Seconds per raw byte of the pipeline's slowest one-thread stage, `c1`: a limit on its
    /// speed whatever the cores.
    pub serial_cost: f64,
    /// The kinds of data along the write, where they differ: the write time with a rung
    /// measured kind by kind ([`RungPerf::kinds`]) is then reckoned step by step
    /// ([`WriteModel::time_by_kind`]).
    pub layout: Option<std::sync::Arc<Layout>>,
}

impl WriteModel {
    /// A write of `bytes` on `threads` workers in blocks of `block_size`, with the workers
    /// alone on their cores (no path cost; see [`WriteModel::on_cores`]).
    pub fn new(bytes: u64, threads: usize, block_size: u64) -> WriteModel {
        WriteModel {
            bytes,
            threads,
            block_size,
            cpus: 0,
            path_cost: 0.0,
            serial_cost: 0.0,
            layout: None,
        }
    }

    /// The same write with the kinds of data along it (None: one kind, or not known).
    pub fn with_layout(self, layout: Option<Layout>) -> WriteModel {
        WriteModel { layout: layout.map(std::sync::Arc::new), ..self }
    }

    /// The same write on `cpus` cores shared with a path costing `path_cost` CPU seconds per
    /// raw byte, whose one-thread stages take `serial_cost` seconds per raw byte.
    pub fn on_cores(self, cpus: usize, path_cost: f64, serial_cost: f64) -> WriteModel {
        WriteModel { cpus, path_cost, serial_cost, ..self }
    }

    /// The cores, the path cost and the serial cost (a cost that is not a finite positive
    /// number counts as 0).
    fn cores(&self) -> (f64, f64, f64) {
        let cpus = if self.cpus == 0 { self.threads.max(1) } else { self.cpus };
        let cost = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
        (cpus as f64, cost(self.path_cost), cost(self.serial_cost))
    }

    /// Seconds to send the raw data through a link of `link` bytes/s (or to move it through
    /// the pipeline, if that takes longer).
    pub fn time_raw(&self, link: f64) -> f64 {
        let (cpus, c, c1) = self.cores();
        let d = self.bytes as f64;
        (d / link).max(d * c / cpus).max(d * c1)
    }

    /// Seconds to compress the data with `p` on every worker (the compression stage alone),
    /// sharing the cores with the path and behind its one-thread stages.
    pub fn time_compress(&self, p: RungPerf) -> f64 {
        let (cpus, c, c1) = self.cores();
        let d = self.bytes as f64;
        let workers = d / (self.threads.max(1) as f64 * p.speed);
        workers.max((d / p.speed + d * c) / cpus).max(d * c1)
    }

    /// Seconds to send the compressed data (the transfer stage alone).
    pub fn time_transfer(&self, p: RungPerf, link: f64) -> f64 {
        self.bytes as f64 / (p.ratio.max(1.0) * link)
    }

    /// Seconds for the whole write with compression: the slower stage plus the pipeline fill;
    /// with a [`Layout`] and a rung measured kind by kind, reckoned step by step
    /// ([`WriteModel::time_by_kind`]).
    pub fn time_compressed(&self, p: RungPerf, link: f64) -> f64 {
        if let Some(layout) = self.layout.as_deref().filter(|_| p.by_kind()) {
            return self.time_by_kind(layout, p, link);
        }
        let (c, t) = (self.time_compress(p), self.time_transfer(p, link));
        let b = self.block_size.min(self.bytes) as f64;
        let fill = if c >= t { b / (p.ratio.max(1.0) * link) } else { b / p.speed };
        c.max(t) + fill
    }

    /// Seconds for the write with compression, step by step along `layout`, each step at
    /// its kind's speed and ratio (`p.kinds`, or `p`'s own for a kind not measured): the
    /// feeder hands out the steps in order (`c1` seconds per byte), the earliest free of the
    /// N workers compresses each, taking `max(b / s, N b (1/s + c) / C)` (N workers at once
    /// share the C cores with the path), but only once a frame buffer is free (the pipeline's
    /// `2 N + 2`; the 4 a mix adds are not modelled), and the link sends
    /// the frames in order, `b / (f L)` each. For data of one kind this is the formula of
    /// [`WriteModel::time_compressed`]; for sections of different kinds, each section's
    /// slower stage sets its pace, and the buffers carry only a few blocks across.
    pub fn time_by_kind(&self, layout: &Layout, p: RungPerf, link: f64) -> f64 {
        let (cpus, c, c1) = self.cores();
        let n = self.threads.max(1);
        let (count, step) = steps(self.bytes, self.block_size);
        if layout.steps.is_empty() || self.bytes == 0 {
            return 0.0;
        }
        // The pipeline's frame buffers, in steps (a step may be several blocks).
        let block = self.block_size.clamp(1, self.bytes) as f64;
        let depth = (crate::pool::default_buffers(n) as f64 * block / step).round() as usize;
        let mut schedule = Schedule::new(n, depth);
        for i in 0..count {
            let (s, f) = p.on(layout.steps[i * layout.steps.len() / count]);
            let s = if s > 0.0 { s } else { f64::INFINITY };
            // The feeder hands the steps out in order, c1 seconds per byte.
            schedule.start((i + 1) as f64 * step * c1);
            let work = (step / s).max(n as f64 * step * (1.0 / s + c) / cpus);
            schedule.finish(work, step / (f.max(1.0) * link));
        }
        schedule.end()
    }

    /// `time_raw / time_compressed`: above 1, compressing with `p` makes the write faster.
    pub fn speedup(&self, p: RungPerf, link: f64) -> f64 {
        let t = self.time_compressed(p, link);
        if t > 0.0 {
            self.time_raw(link) / t
        } else {
            1.0
        }
    }
}

/// A rung *saves* if a block it compresses would be kept (it saves at least 3 %).
pub fn saves(p: RungPerf, keep_threshold: f64) -> bool {
    p.ratio.is_finite() && p.ratio > 0.0 && 1.0 / p.ratio <= keep_threshold
}

/// The start rung for `strategy` among `rungs` (index into it), or `None` for raw (no rung
/// pays), given the link:
///
/// * S1 (throughput): of raw and the rungs, those within `margin` of the shortest write time
///   count as equally fast and the best ratio wins (the controller's own rule), ratios within
///   [`RATIO_TIE`] counting as equal (the faster of those wins, as in the controller's S1):
///   raw, which saves nothing, only when every rung is clearly slower. A write bound by its
///   raw path (the reader, the checksum) takes about as long compressed, and then the
///   smaller output is the better one.
/// * S2 (keep-pace): the best ratio among rungs whose write takes no longer than raw (ties
///   as for S1).
/// * S3 (prolong=F): the best ratio among rungs whose write takes at most F times raw.
/// * Archive and static have no start to choose: the S1 answer, for the report.
pub fn choose(
    strategy: Strategy,
    model: &WriteModel,
    rungs: &[RungPerf],
    link: f64,
    keep_threshold: f64,
    margin: f64,
) -> Option<usize> {
    let raw = model.time_raw(link);
    let ok: Vec<(usize, f64, f64)> = rungs
        .iter()
        .enumerate()
        .filter(|(_, p)| saves(**p, keep_threshold) && p.speed > 0.0)
        .map(|(i, p)| (i, model.time_compressed(*p, link), p.ratio))
        .collect();
    // The most ratio within `limit`; ratios within RATIO_TIE of it count as equal and the
    // fastest to compress of those wins: a sample cannot tell them apart, and a slower rung
    // whose speed the sample overrates holds up the whole start.
    let best_ratio_within = |limit: f64| {
        let within = || ok.iter().filter(move |(_, t, _)| *t <= limit);
        let top = within().map(|x| x.2).fold(f64::NAN, f64::max);
        within()
            .filter(|x| x.2 * (1.0 + RATIO_TIE) >= top)
            .max_by(|a, b| rungs[a.0].speed.total_cmp(&rungs[b.0].speed))
            .map(|x| x.0)
    };
    match strategy.target_time(raw) {
        Some(limit) => best_ratio_within(limit),
        None => {
            let fastest = ok.iter().map(|x| x.1).fold(raw, f64::min);
            best_ratio_within(fastest * (1.0 + margin))
        }
    }
}

/// The write time of the option `choice` (a rung index, or `None` for raw) at `link`.
pub fn time_of(model: &WriteModel, rungs: &[RungPerf], choice: Option<usize>, link: f64) -> f64 {
    match choice {
        Some(i) => model.time_compressed(rungs[i], link),
        None => model.time_raw(link),
    }
}

/// The time S2 and S3 aim the write at: `T_raw` for keep-pace, `F x T_raw` for prolong=F;
/// None for the other strategies (S1 has no time target, it minimises the time).
pub fn target_time(strategy: Strategy, model: &WriteModel, link: f64) -> Option<f64> {
    strategy.target_time(model.time_raw(link))
}

/// The write's predicted time under `strategy` with the option `choice`: its time, and for
/// S2/S3 at least the target time if a slower rung can take that long, since the controller
/// moves to slower rungs until the write takes its target time (`slowest`: the slowest rung
/// it can reach, estimated; the write then takes at least that rung's time if it is below the
/// target). The prediction's time budget is a share of this: before, S2 on text at 1GbE
/// reckoned 2 % of its fast start's 0.6 s where the write would take 2.3 s.
pub fn write_time(
    strategy: Strategy,
    model: &WriteModel,
    rungs: &[RungPerf],
    choice: Option<usize>,
    link: f64,
    slowest: Option<RungPerf>,
) -> f64 {
    let t = time_of(model, rungs, choice, link);
    match target_time(strategy, model, link) {
        Some(target) => {
            let reach = slowest.map_or(target, |p| model.time_compressed(p, link).min(target));
            t.max(reach)
        }
        None => t,
    }
}

/// For S2/S3 when every measured rung that saves is faster than the target (the start would
/// be the slowest of them, short of the target): the unmeasured candidate to start at
/// instead, as an index into `unmeasured` (estimates of candidates not measured: the
/// reference table's speed scaled by the measured speed level, and a ratio no better than
/// the best measured). Of the candidates predicted to meet the target, the slowest to
/// compress: at or just faster than the target, since the controller holds a start until its
/// first measurement
/// and a start slower than the target costs time on every block until then, one faster only
/// ratio. None: not S2/S3, nothing measured saves, a measured rung already misses the target
/// (the choice among measured rungs stands), or no candidate is predicted to meet it.
pub fn extrapolate_start(
    strategy: Strategy,
    model: &WriteModel,
    measured: &[RungPerf],
    unmeasured: &[RungPerf],
    link: f64,
    keep_threshold: f64,
) -> Option<usize> {
    let target = target_time(strategy, model, link)?;
    let saving: Vec<&RungPerf> =
        measured.iter().filter(|p| saves(**p, keep_threshold) && p.speed > 0.0).collect();
    if saving.is_empty() || saving.iter().any(|p| model.time_compressed(**p, link) > target) {
        return None;
    }
    unmeasured
        .iter()
        .enumerate()
        .filter(|(_, p)| saves(**p, keep_threshold) && p.speed > 0.0)
        .filter(|(_, p)| model.time_compressed(**p, link) <= target)
        .min_by(|a, b| a.1.speed.total_cmp(&b.1.speed))
        .map(|(i, _)| i)
}

/// Links (bytes/s) the minimax-regret start is checked against when the link is unknown:
/// from a slow WAN (25 MB/s) to beyond InfiniBand FDR4 (12 GB/s), a factor of ~2 apart.
#[doc(hidden)] // a tuning constant, public only for tests/predict.rs
pub const LINK_GRID: [f64; 10] =
    [25e6, 50e6, 117e6, 250e6, 500e6, 1200e6, 2500e6, 4000e6, 6000e6, 12000e6];

/// The links an unknown link is checked against when it can be no faster than `ceiling`
/// bytes/s (None: [`LINK_GRID`]): the grid's links below the ceiling, and the ceiling.
///
/// ```
/// use adz_core::predict::{estimate::plausible_links, LINK_GRID};
///
/// assert_eq!(plausible_links(None), LINK_GRID.to_vec());
/// assert_eq!(plausible_links(Some(360e6)), vec![25e6, 50e6, 117e6, 250e6, 360e6]);
/// assert_eq!(plausible_links(Some(10e6)), vec![10e6]);
/// ```
pub fn plausible_links(ceiling: Option<f64>) -> Vec<f64> {
    let Some(top) = ceiling.filter(|c| c.is_finite() && *c > 0.0) else {
        return LINK_GRID.to_vec();
    };
    let mut links: Vec<f64> = LINK_GRID.iter().copied().filter(|&l| l < top).collect();
    links.push(top);
    links
}

/// The start when the link is unknown: the option (rung index or `None` for raw) whose
/// worst relative regret over `links` is smallest. The regret of an option at a link is
/// `T(option) / T(best option for that link) - 1` under `strategy`'s objective: write time for
/// S1; for S2/S3 the ratio lost against the best option that meets the time bound, or the time
/// over the bound when it misses it. Returns the choice and its worst regret.
pub fn minimax_regret(
    strategy: Strategy,
    model: &WriteModel,
    rungs: &[RungPerf],
    links: &[f64],
    keep_threshold: f64,
) -> (Option<usize>, f64) {
    let mut options: Vec<Option<usize>> = vec![None];
    options.extend(
        (0..rungs.len())
            .filter(|&i| saves(rungs[i], keep_threshold) && rungs[i].speed > 0.0)
            .map(Some),
    );
    let bound = strategy.slowdown();
    let ratio_of = |o: Option<usize>| o.map_or(1.0, |i| rungs[i].ratio.max(1.0));
    let regret = |o: Option<usize>, link: f64| -> f64 {
        let t = time_of(model, rungs, o, link);
        match bound {
            None => {
                let best = options
                    .iter()
                    .map(|&b| time_of(model, rungs, b, link))
                    .fold(f64::INFINITY, f64::min);
                t / best - 1.0
            }
            Some(f) => {
                let limit = model.time_raw(link) * f;
                if t > limit {
                    t / limit - 1.0
                } else {
                    let best = options
                        .iter()
                        .filter(|&&b| time_of(model, rungs, b, link) <= limit)
                        .map(|&b| ratio_of(b))
                        .fold(1.0, f64::max);
                    best / ratio_of(o) - 1.0
                }
            }
        }
    };
    options
        .iter()
        .map(|&o| (o, links.iter().map(|&l| regret(o, l)).fold(0.0, f64::max)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((None, 0.0))
}

#[cfg(test)]
mod tests;
