//! One controller per kind of data.
//!
//! A controller's model learns "this data on this machine" from the blocks it measures. When a
//! write changes data every few blocks (a tar of sources, images and archives; a file of text
//! headers and float arrays), the blocks it measures are of another kind than the next one it
//! decides for, and a rung first measured on one kind keeps that kind's figures in its
//! correction: the model chases each change a pipeline's depth too late and compares rungs
//! measured on different data. The pipeline therefore classifies each block with a cheap look
//! at its bytes (`BlockContext::class`), and [`ClassedController`] keeps one [`Controller`] per
//! class, so that each learns from one kind of data only. All of them hear every sink
//! measurement (the link is one), and a new class's controller starts from what the others
//! measured of the link and the workers ([`Controller::fork`]). The workers' wall/CPU ratio
//! is one for all classes, updated by every class's blocks: it is the machine's, and a class
//! created before anything was measured would otherwise time its first blocks by their wall
//! time alone.
//!
//! With every block in class 0 (no classifier) it behaves exactly like one [`Controller`].

use std::collections::HashMap;

use adz_format::{CodecSpec, Filters};

use crate::controller::{
    BlockContext, BlockMeasurement, Control, Controller, ControllerConfig, Decision,
    ShadowMeasurement, SinkMeasurement, Status,
};

/// At most this many classes get their own controller; higher class numbers share the last.
pub const MAX_CLASSES: usize = 16;

/// A [`Controller`] per data class, behind the same [`Control`] interface.
#[derive(Clone, Debug)]
pub struct ClassedController {
    /// Indexed by class; created on first use (class 0 at once).
    inner: Vec<Option<Controller>>,
    /// Global block number -> (class, the inner controller's own decision).
    in_flight: HashMap<u64, (usize, Decision)>,
    seq: u64,
    last_class: usize,
    /// Classes whose controller, once created, starts in probe mode.
    probe_start: [bool; MAX_CLASSES],
    /// Classes whose controller, once created, starts at this rung.
    start_of: [Option<CodecSpec>; MAX_CLASSES],
    /// Classes whose controller, once created, starts with these filters.
    filters_of: [Option<Filters>; MAX_CLASSES],
    /// Raw bytes decided per class, decaying with a half-life of [`SHARE_MEMORY`] bytes.
    bytes: [f64; MAX_CLASSES],
    /// Mean length, in blocks, of a class's runs of consecutive blocks (0: none yet).
    run_mean: [f64; MAX_CLASSES],
    /// Blocks in the current run (of `last_class`).
    run: u64,
}

/// Half-life, in raw bytes decided, of the classes' shares of the write (S1's CPU budget).
const SHARE_MEMORY: f64 = (64u64 << 20) as f64;

/// S1's budget across classes: the share of N blocks of other data whose link time a run of
/// one class may count on to hide its CPU time beyond its own link time (see
/// [`ClassedController::s1_workers`]). At least N frames wait for the link when a run starts
/// (2 N buffers), but some of them are the run's own first blocks' and the data before it may
/// be any other class; on the simulated demo mix a half let the sparse records climb past
/// zstd:3 for 0.1 % of their ratio, and a whole one to zstd:6.
const BACKLOG_SHARE: f64 = 0.25;

/// Weight of one run in a class's mean run length.
const RUN_WEIGHT: f64 = 0.25;

/// The controller a writer drives for `cfg`: one per data class, behind the [`Control`]
/// trait, so that a pipeline names no concrete controller.
pub fn new_control(cfg: ControllerConfig) -> Box<dyn Control + Send> {
    Box::new(ClassedController::new(cfg))
}

impl ClassedController {
    /// A controller for every class, all configured by `cfg`.
    pub fn new(cfg: ControllerConfig) -> ClassedController {
        let mut inner = vec![None; MAX_CLASSES];
        inner[0] = Some(Controller::new(cfg));
        ClassedController {
            inner,
            in_flight: HashMap::new(),
            seq: 0,
            last_class: 0,
            probe_start: [false; MAX_CLASSES],
            start_of: [None; MAX_CLASSES],
            filters_of: [None; MAX_CLASSES],
            bytes: [0.0; MAX_CLASSES],
            run_mean: [0.0; MAX_CLASSES],
            run: 0,
        }
    }

    /// The controller of `class` (created if need be).
    fn get(&mut self, class: usize) -> &mut Controller {
        let class = class.min(MAX_CLASSES - 1);
        if self.inner[class].is_none() {
            let base = self.inner[self.last_class].as_ref().or(self.inner[0].as_ref());
            let mut fork = base.expect("class 0 always exists").fork();
            if let Some(rung) = self.start_of[class] {
                fork.set_start(rung);
            }
            if self.probe_start[class] {
                fork.start_incompressible();
            }
            if let Some(f) = self.filters_of[class] {
                fork.set_filters(f);
            }
            self.inner[class] = Some(fork);
        }
        self.inner[class].as_mut().expect("just created")
    }

    /// The controller of class 0 (the only one without a classifier).
    pub fn primary(&self) -> &Controller {
        self.inner[0].as_ref().expect("class 0 always exists")
    }

    /// Set every class's start rung (see [`Controller::set_start`]).
    pub fn set_start(&mut self, rung: CodecSpec) {
        for c in self.inner.iter_mut().flatten() {
            c.set_start(rung);
        }
    }

    /// Tell every class's controller the raw path's cost measured before the write (see
    /// [`Controller::set_path_cost`]); a class created later inherits it.
    pub fn set_path_cost(&mut self, cpu: f64, serial: f64) {
        for c in self.inner.iter_mut().flatten() {
            c.set_path_cost(cpu, serial);
        }
    }

    /// Set the start rung of `class`'s controller, now or when the class's first block comes
    /// (a sampling predictor's start for a new kind of data; see [`Controller::set_start`]).
    pub fn set_start_of(&mut self, class: u8, rung: CodecSpec) {
        let class = (class as usize).min(MAX_CLASSES - 1);
        self.start_of[class] = Some(rung);
        if let Some(c) = &mut self.inner[class] {
            c.set_start(rung);
        }
    }

    /// Start the filters of `class`'s controller at `filters`, now or when the class's first
    /// block comes (see [`Controller::set_filters`]).
    pub fn set_filters_of(&mut self, class: u8, filters: Filters) {
        let class = (class as usize).min(MAX_CLASSES - 1);
        self.filters_of[class] = Some(filters);
        if let Some(c) = &mut self.inner[class] {
            c.set_filters(filters);
        }
    }

    /// Start the controller of `class` in probe mode (see
    /// [`Controller::start_incompressible`]), now or when the class's first block comes:
    /// a sampling predictor found that kind of data incompressible. Other classes start
    /// afresh.
    pub fn start_incompressible(&mut self, class: u8) {
        let class = (class as usize).min(MAX_CLASSES - 1);
        self.probe_start[class] = true;
        if let Some(c) = &mut self.inner[class] {
            c.start_incompressible();
        }
    }

    /// The status of the controller of `class` (the primary one if that class has none).
    pub fn status_of(&self, class: u8) -> Status {
        let class = (class as usize).min(MAX_CLASSES - 1);
        self.inner[class].as_ref().unwrap_or_else(|| self.primary()).status()
    }

    /// S1: the workers the controller of `class` may count on when several classes share the
    /// write (None: all N, as for a write of one class, or before two classes have measured
    /// anything). From each S1 class's predicted `(cpu, stored)` per rung and its share of the
    /// raw bytes, [`s1_plan`] picks one rung per class under one CPU price; the class is then
    /// given the workers at which its own rung choice finds the planned rung just fast enough
    /// for the link (`L cpu / stored`), never fewer than N while the write keeps up with the
    /// link. Two limits keep the plan to what a pipeline can do: rungs whose ratio is within
    /// 1 % of a cheaper one's are left out (as S1 does within a class), and so are rungs whose
    /// CPU time over a run of the class's blocks would exceed their own link time by more than
    /// the frames waiting for the link can cover (a quarter of N blocks of the other
    /// class that stores least): the oracle's bound assumes every block's CPU time overlaps
    /// any other's link time, while 2 N buffers overlap only neighbouring runs.
    pub(crate) fn s1_workers(&self, class: u8) -> Option<f64> {
        let class = (class as usize).min(MAX_CLASSES - 1);
        let link = self.inner[class].as_ref()?.link()?;
        let total: f64 = self.bytes.iter().sum();
        let mut who = Vec::new();
        let mut options = Vec::new();
        for (c, ctl) in self.inner.iter().enumerate() {
            let w = if total > 0.0 { self.bytes[c] / total } else { 0.0 };
            let Some(costs) = ctl.as_ref().filter(|_| w > 0.0).and_then(|c| c.s1_costs()) else {
                continue;
            };
            who.push(c);
            options.push((w, costs));
        }
        let me = who.iter().position(|&c| c == class)?;
        if who.len() < 2 {
            return None;
        }
        let n = self.primary().config().threads.max(1) as f64;
        // What each class is predicted to store now (its controller's current decision).
        let now: Vec<f64> = who
            .iter()
            .map(|&c| self.inner[c].as_ref().and_then(|c| c.s1_current()).map_or(1.0, |x| x.1))
            .collect();
        let mut allowed = Vec::with_capacity(who.len());
        for (i, &c) in who.iter().enumerate() {
            // The pipeline overlaps one class's CPU with another's link time only as far as
            // its buffers reach: at least N frames (2 N buffers, N of them being compressed)
            // wait for the link when a run of this class starts. A run may take longer in
            // CPU than on the link by at most the link time of N blocks of the other class
            // that stores the least (the one it may follow).
            let backlog = BACKLOG_SHARE
                * n
                * (0..who.len()).filter(|&j| j != i).map(|j| now[j]).fold(1.0, f64::min);
            let k = self.run_mean[c].max(if c == self.last_class { self.run as f64 } else { 1.0 });
            let opts = &options[i].1;
            let fits = |&(cpu, stored): &(f64, f64)| k * (cpu * link / n - stored) <= backlog;
            // As S1 does within a class: a ratio within RATIO_TIE of a cheaper option's buys
            // nothing worth its CPU.
            let tied = |o: usize| {
                opts.iter().any(|&(cpu, stored)| {
                    cpu < opts[o].0 && stored <= opts[o].1 * (1.0 + crate::controller::RATIO_TIE)
                })
            };
            let mut keep: Vec<usize> =
                (0..opts.len()).filter(|&o| fits(&opts[o]) && !tied(o)).collect();
            if keep.is_empty() {
                let cheapest = (0..opts.len()).min_by(|&a, &b| opts[a].0.total_cmp(&opts[b].0));
                keep.extend(cheapest);
            }
            allowed.push(keep);
        }
        let filtered: Vec<(f64, Vec<(f64, f64)>)> = options
            .iter()
            .zip(&allowed)
            .map(|((w, opts), keep)| (*w, keep.iter().map(|&o| opts[o]).collect()))
            .collect();
        let plan = s1_plan(&filtered, n, link);
        let options = filtered;
        let (cpu, stored) = options[me].1[plan.picks[me]];
        // The knee of the class's planned option: the workers at which its own S1 finds that
        // option just fast enough for the link. While the write keeps up with the link, never
        // fewer than N (a knee exactly at the class's rung makes every noisy measurement a
        // reason to descend); when even the cheapest schedule cannot, fewer in proportion.
        let knee = link * cpu / stored;
        let workers = if plan.headroom >= 1.0 { knee.max(n) } else { knee * plan.headroom };
        (workers.is_finite() && workers > 0.0).then_some(workers)
    }

    /// Classes that have a controller.
    pub fn classes(&self) -> usize {
        self.inner.iter().filter(|c| c.is_some()).count()
    }
}

/// S1's schedule for a write of several classes (see [`s1_plan`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct S1Plan {
    /// Per class, the index of the option chosen.
    pub picks: Vec<usize>,
    /// `N T / U` of the schedule: the CPU time the workers have while the link sends the
    /// write over the CPU time the schedule takes (at least 1 unless even the cheapest options
    /// are CPU-bound).
    pub headroom: f64,
}

/// S1's shared CPU budget: the schedule of one option per class (each `(cpu, stored)` per raw
/// byte of that class: worker seconds and stored bytes) that stores the fewest bytes while
/// the workers keep up with the link, as the oracle (`adz-bench`'s) computes per block.
///
/// Each class's controller maximises `min(N S, L f)` as if its blocks had the workers and the
/// link to themselves. They do not: the write takes
/// `max(sum of CPU time / N, sum of stored bytes / L)`, and a class that is cheap in CPU
/// (random data sent raw, sparse data at GB/s) leaves CPU time that a dear one (text) can
/// spend on a better ratio; when the write is CPU-bound, the classes that give back CPU
/// for the fewest bytes must give it back. With `w_c` the classes' shares of the raw bytes,
/// every class picks the option minimising `stored + lambda cpu`, one price `lambda` (bytes
/// per worker second) for all: the classes then climb where the bytes saved per extra CPU
/// second are highest, and descend where the bytes lost per CPU second saved are lowest. The
/// price is the lowest at which `sum w_c cpu_c / N <= sum w_c stored_c / L` (bisected on a
/// log scale); if even the cheapest options are CPU-bound, they are the schedule, with
/// headroom below 1.
pub(crate) fn s1_plan(classes: &[(f64, Vec<(f64, f64)>)], n: f64, link: f64) -> S1Plan {
    let pick = |lambda: f64| -> Vec<usize> {
        classes
            .iter()
            .map(|(_, opts)| {
                let cost = |&(cpu, stored): &(f64, f64)| stored + lambda * cpu;
                (0..opts.len())
                    .min_by(|&a, &b| {
                        cost(&opts[a])
                            .total_cmp(&cost(&opts[b]))
                            .then(opts[a].0.total_cmp(&opts[b].0))
                    })
                    .unwrap_or(0)
            })
            .collect()
    };
    let headroom = |picks: &[usize]| -> f64 {
        let (mut u, mut t) = (0.0, 0.0);
        for ((w, opts), &p) in classes.iter().zip(picks) {
            if let Some(&(cpu, stored)) = opts.get(p) {
                u += w * cpu;
                t += w * stored / link;
            }
        }
        if u > 0.0 {
            n * t / u
        } else {
            f64::INFINITY
        }
    };
    let plan = |picks: Vec<usize>| S1Plan { headroom: headroom(&picks), picks };
    let (mut lo, mut hi) = (0.0f64, 60.0f64); // ln lambda, bytes per worker second
    let best = pick(lo.exp());
    if headroom(&best) >= 1.0 {
        return plan(best);
    }
    let cheapest = pick(1e30);
    if headroom(&cheapest) < 1.0 {
        return plan(cheapest);
    }
    for _ in 0..48 {
        let mid = 0.5 * (lo + hi);
        if headroom(&pick(mid.exp())) >= 1.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    plan(pick(hi.exp()))
}

impl Control for ClassedController {
    fn next_block(&mut self, ctx: &BlockContext) -> Decision {
        let class = (ctx.class as usize).min(MAX_CLASSES - 1);
        let decay = 0.5f64.powf(ctx.raw_len as f64 / SHARE_MEMORY);
        for b in &mut self.bytes {
            *b *= decay;
        }
        self.bytes[class] += ctx.raw_len as f64;
        if class != self.last_class && self.run > 0 {
            let m = &mut self.run_mean[self.last_class];
            let k = self.run as f64;
            *m = if *m > 0.0 { *m + RUN_WEIGHT * (k - *m) } else { k };
            self.run = 0;
        }
        self.run += 1;
        self.get(class);
        let n = self.primary().config().threads.max(1) as f64;
        let workers = self.s1_workers(class as u8).unwrap_or(n);
        let c = self.get(class);
        c.set_workers(workers);
        let d = c.next_block(ctx);
        self.last_class = class;
        let seq = self.seq;
        self.seq += 1;
        self.in_flight.insert(seq, (class, d));
        Decision { seq, ..d }
    }

    fn record_block(&mut self, m: &BlockMeasurement) {
        // A measurement of a block this controller did not decide is ignored.
        let Some((class, d)) = self.in_flight.remove(&m.decision.seq) else { return };
        let m = BlockMeasurement { decision: d, ..*m };
        // The workers' wall/CPU ratio is the machine's, not the data's: every class times its
        // blocks with the one all classes' blocks have measured. Otherwise a class created
        // before anything was measured times its first block by its wall time alone, and a
        // worker that waited for a core makes a rung look twice as slow as it is (the text
        // of `adz-datagen mixed` on a busy machine: zstd:3 left for good after one block).
        let shared = self.inner.iter().flatten().find_map(|c| c.stretch());
        let c = self.get(class);
        c.set_stretch(c.stretch().or(shared));
        let before = c.pipe_work();
        c.record_block(&m);
        let stretch = c.stretch();
        // The compression work of one class slows the whole pipeline: every class's account
        // of the pipeline's pace counts it.
        let after = c.pipe_work();
        let work = (after.0 - before.0, after.1 - before.1);
        for (i, c) in self.inner.iter_mut().enumerate() {
            if let Some(c) = c {
                c.set_stretch(stretch);
                if i != class.min(MAX_CLASSES - 1) {
                    c.note_work(work.0, work.1);
                }
            }
        }
    }

    fn record_sink(&mut self, m: &SinkMeasurement) {
        for c in self.inner.iter_mut().flatten() {
            c.record_sink(m);
        }
    }

    fn record_transfers(&mut self, parts: &[(u64, std::time::Duration)]) {
        for c in self.inner.iter_mut().flatten() {
            c.record_transfers(parts);
        }
    }

    fn keep_threshold(&self) -> f64 {
        self.primary().keep_threshold()
    }

    /// The status of the controller that decided the last block.
    fn status(&self) -> Status {
        self.inner[self.last_class].as_ref().unwrap_or_else(|| self.primary()).status()
    }

    fn record_shadow(&mut self, m: &ShadowMeasurement) {
        // Before the block's own measurement, which ends its entry.
        let Some(&(class, d)) = self.in_flight.get(&m.decision.seq) else { return };
        let m = ShadowMeasurement { decision: d, ..*m };
        self.get(class).record_shadow(&m);
    }

    fn set_path_cost(&mut self, cpu: f64, serial: f64) {
        ClassedController::set_path_cost(self, cpu, serial)
    }

    fn set_start(&mut self, rung: CodecSpec) {
        ClassedController::set_start(self, rung)
    }

    fn set_start_of(&mut self, class: u8, rung: CodecSpec) {
        ClassedController::set_start_of(self, class, rung)
    }

    fn set_filters_of(&mut self, class: u8, filters: Filters) {
        ClassedController::set_filters_of(self, class, filters)
    }

    fn start_incompressible(&mut self, class: u8) {
        ClassedController::start_incompressible(self, class)
    }

    fn status_of(&self, class: u8) -> Status {
        ClassedController::status_of(self, class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{DataModel, Segment, SimConfig};
    use crate::{Ladder, Link, Strategy};

    #[test]
    fn one_class_is_exactly_one_controller() {
        let l = Ladder::standard();
        let segs = [
            Segment::new(60, DataModel::monotone("text", &l, 0.8, 1.0, 0.1)),
            Segment::new(30, DataModel::incompressible(&l)),
            Segment::new(60, DataModel::monotone("hard", &l, 0.3, 1.0, 0.1)),
        ];
        for strategy in [Strategy::Throughput, Strategy::KeepPace, Strategy::Prolong(1.5)] {
            let cfg = ControllerConfig::new(strategy, Link::Auto, 4);
            let sim = SimConfig::new(4, 117e6).with_jitter(0.2, 3);
            let a = sim.run(&mut Controller::new(cfg.clone()), &segs);
            let mut classed = ClassedController::new(cfg);
            let b = sim.run(&mut classed, &segs);
            assert_eq!(a.blocks, b.blocks, "{strategy}");
            assert_eq!(classed.classes(), 1);
        }
    }

    const L: f64 = 117e6;

    /// Per raw byte: worker seconds at `mbs` MB/s, stored bytes at `ratio`.
    fn opt(mbs: f64, ratio: f64) -> (f64, f64) {
        (1.0 / (mbs * 1e6), 1.0 / ratio)
    }

    #[test]
    fn a_class_that_needs_no_cpu_lets_the_dear_one_climb() {
        // Text-like data alone on 2 workers: the 100 MB/s rung cannot keep a 117 MB/s link
        // full (200 MB/s against 117 x 3.9 = 456), the 250 MB/s one can.
        let text = vec![opt(500.0, 3.0), opt(250.0, 3.7), opt(100.0, 3.9)];
        let alone = s1_plan(&[(1.0, text.clone())], 2.0, L);
        assert_eq!(alone.picks, vec![1]);
        // Half the write is random data, sent raw: no CPU, all link. The link now takes twice
        // as long per raw byte of text, and the text can afford its best rung.
        let plan = s1_plan(&[(0.5, text.clone()), (0.5, vec![(0.0, 1.0)])], 2.0, L);
        assert_eq!(plan.picks, vec![2, 0]);
        assert!(plan.headroom >= 1.0, "{plan:?}");
        // Not if the other half is as dear as the text.
        let plan = s1_plan(&[(0.5, text.clone()), (0.5, text)], 2.0, L);
        assert_eq!(plan.picks, vec![1, 1]);
    }

    #[test]
    fn a_cpu_bound_write_gives_back_cpu_where_it_costs_the_fewest_bytes() {
        // Both classes' best rungs together need more CPU than 1.5 workers have while the link
        // sends (headroom 0.82). Descending saves the same CPU in both; class a then stores 0.03
        // more bytes per raw byte, class c 0.17: a descends, c keeps its rung.
        let a = vec![opt(600.0, 3.0), opt(200.0, 3.3)];
        let c = vec![opt(600.0, 2.0), opt(200.0, 3.0)];
        let best = s1_plan(&[(0.5, vec![a[1]]), (0.5, vec![c[1]])], 1.5, L);
        assert!(best.headroom < 1.0, "{best:?}");
        let plan = s1_plan(&[(0.5, a), (0.5, c)], 1.5, L);
        assert_eq!(plan.picks, vec![0, 1]);
        assert!(plan.headroom >= 1.0, "{plan:?}");
        // If even the cheapest rungs cannot keep up, they are the plan, headroom below 1.
        let slow = vec![opt(50.0, 3.0), opt(20.0, 3.3)];
        let plan = s1_plan(&[(0.5, slow.clone()), (0.5, slow)], 1.5, L);
        assert_eq!(plan.picks, vec![0, 0]);
        assert!(plan.headroom < 1.0);
    }

    #[test]
    fn a_measurement_of_an_unknown_block_is_ignored() {
        let cfg = ControllerConfig::new(Strategy::KeepPace, Link::Fixed(117e6), 2);
        let mut c = ClassedController::new(cfg);
        let ctx = BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class: 3 };
        let d = c.next_block(&ctx);
        assert_eq!(d.seq, 0);
        let m = BlockMeasurement {
            decision: Decision { seq: 99, ..d },
            raw_len: 1 << 20,
            stored_len: 1 << 18,
            stored_raw: false,
            wall: std::time::Duration::from_millis(5),
            cpu: std::time::Duration::from_millis(5),
        };
        let before = c.status();
        c.record_block(&m);
        assert_eq!(format!("{:?}", c.status()), format!("{before:?}"));
        // Block numbers are global across classes.
        let d2 = c.next_block(&BlockContext { class: 1, ..ctx });
        assert_eq!(d2.seq, 1);
        assert_eq!(c.classes(), 3);
    }
}
