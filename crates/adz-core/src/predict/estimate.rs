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
/// * S1 (throughput): the rung with the shortest write time, if it beats raw;
///   rungs within `margin` of the shortest count as equally fast and the best ratio wins
///   (the controller's own rule), ratios within [`RATIO_TIE`] counting as equal (the faster
///   of those wins, as in the controller's S1).
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
            let fastest = ok.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
            if fastest >= raw {
                return None;
            }
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
mod tests {
    use super::*;

    const MB: f64 = 1e6;

    fn model(threads: usize) -> WriteModel {
        WriteModel::new(1000 << 20, threads, 1 << 20)
    }

    #[test]
    fn formulas_on_known_speeds_and_ratios() {
        let m = model(4);
        let d = m.bytes as f64;
        // 4 x 100 MB/s = 400 MB/s of compression, ratio 4: 400 MB/s raw through a 100 MB/s link.
        let p = RungPerf::new(100.0 * MB, 4.0);
        assert!((m.time_raw(100.0 * MB) - d / 100e6).abs() < 1e-9);
        assert!((m.time_compress(p) - d / 400e6).abs() < 1e-9);
        assert!((m.time_transfer(p, 100.0 * MB) - d / 400e6).abs() < 1e-9);
        // Compression-bound at a fast link: the last frame is added.
        let t = m.time_compressed(p, 1000.0 * MB);
        assert!((t - (d / 400e6 + (1 << 20) as f64 / 4000e6)).abs() < 1e-9, "{t}");
        // Link-bound at a slow link: the first block's compression is added.
        let t = m.time_compressed(p, 10.0 * MB);
        assert!((t - (d / 40e6 + (1 << 20) as f64 / 100e6)).abs() < 1e-9, "{t}");
        assert!((m.speedup(p, 10.0 * MB) - (d / 10e6) / t).abs() < 1e-9);
        // Papio's serial sum is never shorter than the pipeline's max + fill.
        for link in [10.0 * MB, 100.0 * MB, 1000.0 * MB] {
            let serial = m.time_compress(p) + m.time_transfer(p, link);
            assert!(m.time_compressed(p, link) <= serial + 1e-9);
        }
    }

    /// Workers sharing the cores with the pipeline's path: the compression stage takes the
    /// whole write's CPU time over the cores when that is longer than the workers' own time,
    /// raw data moves no faster than the path, and neither moves faster than the path's
    /// one-thread stages.
    #[test]
    fn the_path_cost_shares_the_cores_with_the_workers() {
        let d = (1000u64 << 20) as f64;
        let c = 0.5e-9; // 2 GB/s of path per core
        let p = RungPerf::new(500.0 * MB, 3.0);
        // Two workers on two cores: (D/s + D c) / 2 = D (2 ns + 0.5 ns) / 2, not D / (2 s).
        let shared = model(2).on_cores(2, c, 0.0);
        let t = shared.time_compress(p);
        assert!((t - d * (2e-9 + c) / 2.0).abs() < 1e-9, "{t}");
        assert!(t > model(2).time_compress(p));
        // Two workers on eight cores: the workers' own time sets the pace.
        assert!((model(2).on_cores(8, c, 0.0).time_compress(p) - d / 1000e6).abs() < 1e-9);
        // Raw: the link at 1GbE, the path at a link faster than 2 cores / 0.5 ns = 4 GB/s.
        assert!((shared.time_raw(117.0 * MB) - d / 117e6).abs() < 1e-9);
        assert!((shared.time_raw(6000.0 * MB) - d * c / 2.0).abs() < 1e-9);
        // The write time and the speedup follow: slower than without the path at a fast link.
        assert!(shared.time_compressed(p, 6000.0 * MB) > model(2).time_compressed(p, 6000.0 * MB));
        // A one-thread stage of 0.25 ns (4 GB/s) limits raw and a fast rung alike.
        let serial = model(2).on_cores(2, 0.0, 0.25e-9);
        assert!((serial.time_raw(6000.0 * MB) - d * 0.25e-9).abs() < 1e-9);
        let fast = RungPerf::new(8000.0 * MB, 50.0);
        assert!((serial.time_compress(fast) - d * 0.25e-9).abs() < 1e-9);
        assert_eq!(serial.time_compress(p), d / 1000e6, "a slow rung is not limited by it");
        // No path (0, negative or NaN) and no cores given: the workers alone.
        for bad in [0.0, -1.0, f64::NAN] {
            let m = model(2).on_cores(0, bad, bad);
            assert_eq!(m.time_compress(p), model(2).time_compress(p));
            assert_eq!(m.time_raw(6000.0 * MB), d / 6000e6);
        }
    }

    #[test]
    fn decision_flips_to_raw_as_the_link_passes_the_compression_speed() {
        let m = model(2);
        let rungs = [RungPerf::new(300.0 * MB, 2.0)];
        // Aggregate compression 600 MB/s, ratio 2: pays while L f < ... i.e. while the link is
        // slower than what compression feeds, up to about 600 MB/s.
        let mut last = true;
        let mut flipped_at = None;
        for link in [50.0, 100.0, 200.0, 400.0, 550.0, 650.0, 1000.0, 6000.0] {
            let pays = choose(Strategy::Throughput, &m, &rungs, link * MB, 0.97, 0.05).is_some();
            if last && !pays {
                flipped_at = Some(link);
            }
            assert!(!pays || last, "compress again at {link} MB/s after raw");
            last = pays;
        }
        let at = flipped_at.expect("raw at some speed");
        assert!((550.0..=650.0).contains(&at), "flips at {at} MB/s");
    }

    #[test]
    fn strategies_pick_their_rungs() {
        let m = model(4);
        let rungs = [
            RungPerf::new(700.0 * MB, 2.1),
            RungPerf::new(300.0 * MB, 2.9),
            RungPerf::new(60.0 * MB, 3.4),
            RungPerf::new(20.0 * MB, 3.8),
        ];
        let link = 117.0 * MB;
        // S2: fastest-ratio rung still as fast as the link: 4 x 60 = 240 >= 117; 80 < 117.
        assert_eq!(choose(Strategy::KeepPace, &m, &rungs, link, 0.97, 0.05), Some(2));
        // S3 with F = 1.5 allows 78 MB/s: 4 x 20 = 80.
        assert_eq!(choose(Strategy::Prolong(1.5), &m, &rungs, link, 0.97, 0.05), Some(3));
        // S1: min(4 s, L f): 2.1 L = 246, 2.9 L = 339, min(240, 398) = 240, 80 -> rung 1.
        assert_eq!(choose(Strategy::Throughput, &m, &rungs, link, 0.97, 0.05), Some(1));
        // Nothing saves 3 %: raw.
        let flat = [RungPerf::new(700.0 * MB, 1.01)];
        assert_eq!(choose(Strategy::Throughput, &m, &flat, 10.0 * MB, 0.97, 0.05), None);
        assert_eq!(choose(Strategy::KeepPace, &m, &flat, 10.0 * MB, 0.97, 0.05), None);
    }

    #[test]
    fn ratios_a_sample_cannot_tell_apart_start_at_the_faster_rung() {
        // The netCDF-4 file of the real corpus at 117 MB/s: a sample mostly of random bytes
        // gives zstd:3 and zstd:6 the same ratio and both keep the link full, so zstd:6 (1.6x
        // slower, 0.01 % more ratio) used to be the start; on the float blocks of the file's
        // start it could not keep up.
        let m = model(2);
        let rungs = [RungPerf::new(1580.0 * MB, 1.2598), RungPerf::new(985.0 * MB, 1.2600)];
        for s in [Strategy::Throughput, Strategy::KeepPace] {
            assert_eq!(choose(s, &m, &rungs, 117.0 * MB, 0.97, 0.05), Some(0), "{s:?}");
        }
        // A ratio more than 1 % better still wins.
        let rungs = [RungPerf::new(1580.0 * MB, 1.25), RungPerf::new(985.0 * MB, 1.27)];
        assert_eq!(choose(Strategy::Throughput, &m, &rungs, 117.0 * MB, 0.97, 0.05), Some(1));
    }

    #[test]
    fn minimax_regret_weighs_the_slowest_and_fastest_links() {
        let m = model(2);
        let rungs = [
            RungPerf::new(800.0 * MB, 2.1),
            RungPerf::new(350.0 * MB, 3.0),
            RungPerf::new(8.0 * MB, 3.8),
        ];
        // 2 threads: the fastest rung compresses 1.6 GB/s, 7.5x slower than a 12 GB/s link;
        // raw loses only 3x (the best ratio) at the slowest link: raw is the safer start.
        let (choice, regret) = minimax_regret(Strategy::Throughput, &m, &rungs, &LINK_GRID, 0.97);
        assert_eq!(choice, None);
        assert!((regret - 2.0).abs() < 0.1, "{regret}");
        // 16 threads: a fast rung loses little at any link, raw 2-3x at slow ones.
        let m16 = model(16);
        let (choice, regret) = minimax_regret(Strategy::Throughput, &m16, &rungs, &LINK_GRID, 0.97);
        assert!(matches!(choice, Some(0) | Some(1)), "{choice:?}");
        assert!(regret < 1.0, "{regret}");
        // S2 never picks the slow rung: it misses the time bound by 6x at 117 MB/s already.
        let (choice, _) = minimax_regret(Strategy::KeepPace, &m16, &rungs, &LINK_GRID, 0.97);
        assert_ne!(choice, Some(2));
        // Incompressible data: raw, no regret.
        let flat = [RungPerf::new(2000.0 * MB, 1.0)];
        assert_eq!(minimax_regret(Strategy::Throughput, &m, &flat, &LINK_GRID, 0.97), (None, 0.0));
    }

    #[test]
    fn s2_and_s3_take_their_target_time() {
        let m = model(4);
        let link = 117.0 * MB;
        let raw = m.time_raw(link);
        // Every rung far faster than the link: the start's own time is short, but the
        // controller slows down to the target, so that is the write's time.
        let fast = [RungPerf::new(500.0 * MB, 3.0)];
        let t1 = m.time_compressed(fast[0], link);
        assert!(t1 < 0.5 * raw);
        let xz9 = RungPerf::new(5.0 * MB, 3.5);
        assert_eq!(write_time(Strategy::Throughput, &m, &fast, Some(0), link, Some(xz9)), t1);
        assert_eq!(write_time(Strategy::KeepPace, &m, &fast, Some(0), link, Some(xz9)), raw);
        assert_eq!(target_time(Strategy::Prolong(2.0), &m, link), Some(2.0 * raw));
        let t3 = write_time(Strategy::Prolong(2.0), &m, &fast, Some(0), link, Some(xz9));
        assert_eq!(t3, 2.0 * raw);
        // Unless no rung is that slow (at 10 MB/s even the slowest rung, 4 x 400 MB/s, is
        // link-bound): then the longer of the start's and the slowest rung's time.
        let slow_link = 10.0 * MB;
        let quick = RungPerf::new(400.0 * MB, 2.5);
        let t = write_time(Strategy::KeepPace, &m, &fast, Some(0), slow_link, Some(quick));
        assert_eq!(t, m.time_compressed(quick, slow_link));
        assert!(t > m.time_compressed(fast[0], slow_link) && t < m.time_raw(slow_link));
        // Raw chosen (nothing keeps pace): the target, which is raw's time.
        assert_eq!(write_time(Strategy::KeepPace, &m, &[], None, link, Some(xz9)), raw);
    }

    #[test]
    fn the_start_is_extrapolated_to_just_meet_the_target() {
        let m = model(4);
        let measured = [RungPerf::new(700.0 * MB, 2.1), RungPerf::new(300.0 * MB, 2.9)];
        // Guesses for three slower candidates: 4 x 60 = 240, 4 x 20 = 80, 4 x 5 = 20 MB/s.
        let guesses = [60.0, 20.0, 5.0].map(|s| RungPerf::new(s * MB, 2.9));
        let s2 = Strategy::KeepPace;
        // At 117 MB/s: 240 keeps pace, 80 does not.
        assert_eq!(extrapolate_start(s2, &m, &measured, &guesses, 117.0 * MB, 0.97), Some(0));
        // At 50 MB/s: 80 keeps pace, 20 does not; S3 at F = 3 allows 16.7 MB/s: 20 does.
        assert_eq!(extrapolate_start(s2, &m, &measured, &guesses, 50.0 * MB, 0.97), Some(1));
        let s3 = Strategy::Prolong(3.0);
        assert_eq!(extrapolate_start(s3, &m, &measured, &guesses, 50.0 * MB, 0.97), Some(2));
        // A link so fast that a measured rung misses the target: the measured choice stands.
        assert_eq!(extrapolate_start(s2, &m, &measured, &guesses, 1500.0 * MB, 0.97), None);
        // S1 has no target; nothing measured saves: nothing to extrapolate from.
        let s1 = Strategy::Throughput;
        assert_eq!(extrapolate_start(s1, &m, &measured, &guesses, 50.0 * MB, 0.97), None);
        let flat = [RungPerf::new(700.0 * MB, 1.0)];
        assert_eq!(extrapolate_start(s2, &m, &flat, &guesses, 50.0 * MB, 0.97), None);
        // No candidate meets it (a link faster than every guess): None.
        assert_eq!(extrapolate_start(s2, &m, &measured, &guesses[1..], 117.0 * MB, 0.97), None);
    }

    /// Data of one kind, or kinds measured alike: step by step, the write takes the
    /// averages' time (the formula's max of the stages plus a block's fill), within 1 %.
    #[test]
    fn one_kind_step_by_step_takes_the_formulas_time() {
        let layout = Layout { steps: (0..1000).map(|i| [2u8, 3][i % 7 / 4]).collect() };
        for (threads, cpus, c, c1) in [(4, 0, 0.0, 0.0), (2, 2, 0.22e-9, 0.2e-9)] {
            let m = model(threads).on_cores(cpus, c, c1);
            let kinded = m.clone().with_layout(Some(layout.clone()));
            for p in [RungPerf::new(100.0 * MB, 3.0), RungPerf::new(2000.0 * MB, 1.5)] {
                let same = p.with_kinds(&[(2, p.speed, p.ratio), (3, p.speed, p.ratio)]);
                for link in [50.0 * MB, 117.0 * MB, 1200.0 * MB, 6000.0 * MB] {
                    let (formula, steps) =
                        (m.time_compressed(p, link), kinded.time_compressed(same, link));
                    assert!(
                        (steps / formula - 1.0).abs() < 0.01,
                        "{threads} {p:?} {link}: {steps} vs {formula}"
                    );
                    // A rung not measured by kind takes the formula, layout or not.
                    assert_eq!(kinded.time_compressed(p, link), formula);
                }
            }
        }
    }

    /// Sections of two kinds much longer than the pipeline's buffers: one compresses slowly
    /// (compression-bound), one is incompressible and fast (link-bound). Each section's slower
    /// stage sets its pace, so the write takes the sum of each kind's own time, not the max
    /// of the whole write's averages, which lets the slow kind borrow the fast kind's spare
    /// compression time.
    #[test]
    fn long_sections_of_two_kinds_take_each_kinds_time() {
        let m = model(2);
        let link = 300.0 * MB;
        let (slow, fast) = ((2u8, 100.0 * MB, 3.0), (4u8, 10_000.0 * MB, 1.0));
        // Half and half by bytes: the averages of the whole write.
        let pooled =
            RungPerf::new(1.0 / (0.5 / slow.1 + 0.5 / fast.1), 1.0 / (0.5 / slow.2 + 0.5 / fast.2));
        let p = pooled.with_kinds(&[slow, fast]);
        let half = m.bytes as f64 / 2.0;
        // Compression-bound, then link-bound.
        let each = half / (2.0 * slow.1) + half / link;
        // Sections of 100 blocks: the buffers (6 blocks) carry little across.
        let long =
            Layout { steps: (0..1000).map(|i| if i / 100 % 2 == 0 { 2 } else { 4 }).collect() };
        let t = m.clone().with_layout(Some(long)).time_compressed(p, link);
        let averages = m.time_compressed(pooled, link);
        assert!((t / each - 1.0).abs() < 0.05, "{t} vs {each}");
        assert!(t > 1.3 * averages, "{t} vs {averages}");
        // Kinds alternating every block: the buffers smooth them, and the averages hold.
        let short = Layout { steps: (0..1000).map(|i| if i % 2 == 0 { 2 } else { 4 }).collect() };
        let t = m.with_layout(Some(short)).time_compressed(p, link);
        assert!((t / averages - 1.0).abs() < 0.05, "{t} vs {averages}");
    }

    /// The layout from the probes' map: each step takes the nearest probe's class, the map is
    /// repeated past the bytes it covers, a map of one kind gives none, and a long write is
    /// reckoned in at most MAX_STEPS steps.
    #[test]
    fn the_layout_follows_the_nearest_probe() {
        let mib = 1u64 << 20;
        // Probes at 0.5, 1.5, ... MiB over 8 MiB: 2 2 4 4 4 2 2 2.
        let map: Vec<(u64, u8)> = [2, 2, 4, 4, 4, 2, 2, 2]
            .iter()
            .enumerate()
            .map(|(i, &c)| (i as u64 * mib + mib / 2, c))
            .collect();
        let l = Layout::from_map(&map, 8 * mib, 8 * mib, mib).unwrap();
        assert_eq!(l.steps, [2, 2, 4, 4, 4, 2, 2, 2]);
        // A writer's 8 MiB of a 16 MiB write: the map again for the rest.
        let l = Layout::from_map(&map, 8 * mib, 16 * mib, mib).unwrap();
        assert_eq!(l.steps, [2, 2, 4, 4, 4, 2, 2, 2, 2, 2, 4, 4, 4, 2, 2, 2]);
        // Probes sparser than the blocks: the nearest one, ties to the earlier.
        let sparse = [(0, 2u8), (4 * mib, 4)];
        let l = Layout::from_map(&sparse, 8 * mib, 8 * mib, mib).unwrap();
        assert_eq!(l.steps, [2, 2, 4, 4, 4, 4, 4, 4]);
        // One kind, no map, an empty write: nothing to reckon step by step.
        assert_eq!(Layout::from_map(&[(0, 2), (mib, 2)], 2 * mib, 8 * mib, mib), None);
        assert_eq!(Layout::from_map(&[], 8 * mib, 8 * mib, mib), None);
        assert_eq!(Layout::from_map(&map, 8 * mib, 0, mib), None);
        // 1 TiB in 1 MiB blocks: 4096 steps of 256 blocks.
        let l = Layout::from_map(&map, 8 * mib, 1 << 40, mib).unwrap();
        assert_eq!(l.steps.len(), MAX_STEPS);
    }
}
