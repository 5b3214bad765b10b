//! The adaptive decision: a few steps, each a move proposed from a read-only view of the
//! model's predictions.

use adz_format::{CodecId, CodecSpec};

use super::{Controller, Reason};
use crate::hint::Hint;
use crate::strategy::Strategy;

/// The adaptive state for one effective strategy (hints can switch a range to another one).
#[derive(Clone, Debug)]
pub(super) struct Lane {
    pub(super) strategy: Strategy,
    /// Ladder index >= 1: the rung in use, or in mix mode the rung of the compressed blocks.
    pub(super) rung: usize,
    pub(super) mixing: bool,
    pub(super) mix_acc: f64,
    pub(super) mix_fraction: f64,
    /// First block decided at the current rung/mode: measurements of older blocks are stale
    /// for this lane's move decisions.
    pub(super) since: u64,
    /// Fresh measurements at the current rung.
    pub(super) fresh: u32,
    /// Consecutive fresh measurements that confirm spending more effort: for S2/S3 faster than
    /// the target by more than the dead band; for S1 not clearly slower than predicted.
    pub(super) streak: u32,
    /// False until the link is known (Link::Auto): the lane holds its start rung.
    pub(super) started: bool,
    /// The rung was tried although predicted slightly too slow (never measured before).
    pub(super) tentative: bool,
    /// S2/S3: the share of blocks sent to rung `blend_to` (see [`Controller::blend_fraction`]).
    pub(super) blend: f64,
    pub(super) blend_to: usize,
    pub(super) blend_acc: f64,
    /// Why the lane moved outside a decision (reported with its next block).
    pub(super) note: Option<Reason>,
    /// Moved on a measurement rather than a prediction (see [`Reason::BlindRung`]): the
    /// rung is held until its first fresh measurement.
    pub(super) held: bool,
    /// The lane has seen the link's drain rate (see [`Controller::reaim`]).
    pub(super) drained: bool,
}

/// With `Link::Auto`, a first drain rate this far (25 %) from the accept rate it replaces
/// re-aims the lane at once (see [`Controller::reaim`]).
pub(super) const REAIM_GAP: f64 = 1.25;

/// How far below the target a rung that has never been measured may be predicted and still be
/// tried, one rung at a time, when the current rung has headroom: the reference shape's
/// typical error per step (the thesis' zstd levels deviate from a smooth curve by about this).
pub(super) const EXPLORE: f64 = 0.15;

/// S1: predicted ratios within this factor of each other (1 %) count as equal, and the faster
/// rung wins: a link-bound write gains at most that much, within what the model can tell
/// apart on rungs it has not measured (decision 0006).
pub const RATIO_TIE: f64 = 0.01;

/// S2/S3 spend more effort only where it buys ratio: a climb onto a rung measured on this data,
/// or a blend with one, needs that rung's ratio above the current one's by this factor
/// (0.25 %): below what text's consecutive levels differ by, above float arrays' ties
/// (decision 0009).
pub(super) const MIN_RATIO_GAIN: f64 = 0.0025;

/// Two rungs' ratios, measured on different blocks, are compared only where the data
/// compresses evenly: while one block's ratio strays from the prediction by more than this
/// (0.5 %) on average, the reference shape's word stands (text blocks stray by 10 % and more;
/// float arrays by 0.1 %).
pub(super) const RATIO_NOISE_LIMIT: f64 = 0.005;

impl Controller {
    pub(super) fn attempt(&mut self, seq: u64) {
        self.clock += 1;
        self.outstanding += 1;
        self.last_attempt = Some(seq);
    }

    /// The strategy for a block, after its hints: `hot` makes every strategy but `static`
    /// throughput; `write-once` makes throughput keep-pace (the other strategies already
    /// favour ratio at least as much). `hot` wins over `write-once`.
    pub(super) fn effective(&self, hints: &[Hint]) -> Strategy {
        let s = self.cfg.strategy;
        if matches!(s, Strategy::Static(_)) {
            return s;
        }
        if hints.contains(&Hint::Hot) {
            return Strategy::Throughput;
        }
        if hints.contains(&Hint::WriteOnce) && s == Strategy::Throughput {
            return Strategy::KeepPace;
        }
        s
    }

    pub(super) fn start_rung(&self) -> usize {
        let ladder = &self.cfg.ladder;
        match self.cfg.start {
            Some(s) => ladder.nearest(s),
            None => {
                let z1 = CodecSpec::new(CodecId::Zstd, 1).expect("zstd:1 is valid");
                ladder.position(z1).unwrap_or_else(|| ladder.nearest(z1))
            }
        }
    }

    pub(super) fn new_lane(&self, strategy: Strategy) -> Lane {
        let mut lane = Lane {
            strategy,
            rung: self.start_rung(),
            mixing: false,
            mix_acc: 0.0,
            mix_fraction: 1.0,
            since: self.seq,
            fresh: 0,
            streak: 0,
            started: false,
            tentative: false,
            blend: 0.0,
            blend_to: 0,
            blend_acc: 0.0,
            note: None,
            held: false,
            drained: false,
        };
        // A lane for a hint's strategy starts where the configured lane is: same data.
        if let Some(base) = self.lanes.first() {
            lane.rung = base.rung;
        }
        if self.cfg.start == Some(CodecSpec::NONE) {
            lane.mixing = true;
            lane.mix_fraction = 0.0;
        }
        lane
    }

    pub(super) fn headroom(&self, strategy: Strategy, link: f64, rung: usize) -> f64 {
        let now = self.clock;
        let speed = self.threads * self.model.speed(rung, now);
        speed / self.aim(strategy, link, self.model.ratio(rung, now))
    }

    /// S1's predicted write throughput of a rung, raw bytes/s: the compressors or the link,
    /// whichever is slower, `min(N S(r), L f(r))`. With the pipeline's CPU time
    /// ([`Controller::cpu_path_cost`]) the compressors' side is counted in CPU seconds: the
    /// raw path's `c` per byte and the rung's `1 / s` (its workers' CPU time) share `C` CPUs,
    /// `C / (c + 1 / s)`, at most `N s`. The workers' wall times count the raw path twice
    /// (once as their wait for a core).
    pub(super) fn throughput(&self, link: f64, rung: usize) -> f64 {
        let now = self.clock;
        let compress = match self.cpu_path_cost() {
            Some(c) => {
                let s_cpu = self.cpu_speed(rung);
                (self.cpus() / (c + 1.0 / s_cpu)).min(self.threads * s_cpu)
            }
            None => self.threads * self.model.speed(rung, now),
        };
        self.cfg.write_speed(compress, link, self.model.ratio(rung, now))
    }

    /// S1's choice among rungs `1..end`: of the rungs predicted to write within the margin of
    /// the fastest of them, the one with the best predicted ratio; of those whose ratio is
    /// within [`RATIO_TIE`] of that best, the fastest to compress (the same bytes for less CPU).
    /// Returns it and the fastest predicted throughput (None if the range is empty).
    pub(super) fn s1_pick(&self, link: f64, end: usize) -> Option<(usize, f64)> {
        let now = self.clock;
        let end = end.min(self.cfg.ladder.len());
        let t: Vec<f64> =
            (0..end).map(|r| if r == 0 { 0.0 } else { self.throughput(link, r) }).collect();
        let best = t.iter().copied().fold(0.0, f64::max);
        let margin = 1.0 + self.cfg.throughput_margin;
        let fast = || (1..end).filter(|&r| t[r] * margin >= best);
        let top = fast().map(|r| self.model.ratio(r, now)).fold(f64::NAN, f64::max);
        let pick = fast().filter(|&r| self.model.ratio(r, now) * (1.0 + RATIO_TIE) >= top).max_by(
            |&a, &b| {
                let (sa, sb) = (self.model.speed(a, now), self.model.speed(b, now));
                sa.total_cmp(&sb).then(t[a].total_cmp(&t[b]))
            },
        )?;
        Some((pick, best))
    }

    /// True if some codec rung is predicted at least `min` times as fast as its target: for
    /// S1, some rung keeps the link full with compressed data.
    pub(super) fn any_fast_enough(&self, strategy: Strategy, link: f64, min: f64) -> bool {
        (1..self.cfg.ladder.len()).any(|r| self.headroom(strategy, link, r) >= min)
    }

    /// The predicted headroom a rung needs to be tried: 1, or `1 - EXPLORE` for a rung that
    /// has never been measured.
    pub(super) fn min_headroom(&self, rung: usize) -> f64 {
        if self.model.confidence(rung, self.clock) > 0.0 {
            1.0
        } else {
            1.0 - EXPLORE
        }
    }

    /// Walking down the ladder from `from`, the last rung of the unbroken run of rungs whose
    /// predicted headroom is at least `min`.
    pub(super) fn last_ok_from(
        &self,
        strategy: Strategy,
        link: f64,
        from: usize,
        min: f64,
    ) -> Option<usize> {
        let mut last = None;
        for r in from.max(1)..self.cfg.ladder.len() {
            if self.headroom(strategy, link, r) >= min {
                last = Some(r);
            } else {
                break;
            }
        }
        last
    }

    /// S2/S3: whether rung `to` may buy ratio over rung `from`: it has not been measured, or
    /// the data compresses too unevenly to compare measurements taken on different blocks
    /// ([`RATIO_NOISE_LIMIT`]; the shape's word stands), or its measured ratio beats
    /// `from`'s by [`MIN_RATIO_GAIN`].
    pub(super) fn buys_ratio(&self, from: usize, to: usize) -> bool {
        let now = self.clock;
        self.model.confidence(to, now) <= 0.0
            || self.model.ratio_noise() > RATIO_NOISE_LIMIT
            || self.model.ratio(to, now) > self.model.ratio(from, now) * (1.0 + MIN_RATIO_GAIN)
    }

    pub(super) fn lane_index(&mut self, strategy: Strategy) -> usize {
        if self.lanes.is_empty() {
            // Lane 0 is always the configured strategy's, so status() can report it.
            let base = self.new_lane(self.cfg.strategy);
            self.lanes.push(base);
        }
        if let Some(i) = self.lanes.iter().position(|l| l.strategy == strategy) {
            return i;
        }
        let lane = self.new_lane(strategy);
        self.lanes.push(lane);
        self.lanes.len() - 1
    }

    /// The decision for block `seq` of an adaptive strategy's lane: a few steps, each a move
    /// proposed from a read-only [`View`] of the model's predictions, then the block's rung.
    pub(super) fn decide_adaptive(&mut self, strategy: Strategy, seq: u64) -> (CodecSpec, Reason) {
        let i = self.lane_index(strategy);
        // S1 uses a measured link once it says what the link does: before that the accept rate
        // of a buffer in front of the link (memory speed) would send it to raw blocks and its
        // fastest rungs, which a slower link pays for. S2 and S3 take it as it is: a link
        // thought too fast only makes them end early.
        let trusted =
            self.fixed_link.is_some() || strategy != Strategy::Throughput || self.link.trusted();
        let link = self.link().filter(|_| trusted);
        let Some(link) = link else { return self.start_decision(&self.lanes[i]) };
        let mut lane = self.lanes[i].clone();
        let mut reason = if self.model.has_speed() { Reason::Hold } else { Reason::Start };
        if !lane.started {
            lane.started = true;
            if let Some(m) = self.view(strategy, link).first_aim() {
                lane.apply(m, seq, &mut reason);
            }
        }
        if let Some(m) = self.reaim(&mut lane, strategy, link) {
            lane.apply(m, seq, &mut reason);
        }
        if self.cfg.start.is_some_and(|s| s != CodecSpec::NONE) && !self.model.has_speed() {
            // A start given from outside (a user, a sampling predictor) is a better guess than
            // the reference table: held until something has been measured. Not a raw start:
            // raw blocks measure no compression, so it is held only until the link is known.
            let out = self.start_decision(&lane);
            self.lanes[i] = lane;
            return out;
        }
        if lane.held && lane.fresh == 0 {
            let out = (self.rung_spec(lane.rung), lane.note.take().unwrap_or(reason));
            self.lanes[i] = lane;
            return out;
        }
        lane.held = false;
        if let Strategy::Energy(cost) = strategy {
            let out = self.decide_energy(&mut lane, cost, link, seq, reason);
            self.lanes[i] = lane;
            return out;
        }
        let (cur, was_mixing) = (lane.rung, lane.mixing);
        let view = self.view(strategy, link);
        let step = if lane.mixing {
            view.mix_step(&lane)
        } else if strategy == Strategy::Throughput {
            view.s1_step(&lane)
        } else {
            view.s2_step(&lane)
        };
        if let Some(m) = step {
            lane.apply(m, seq, &mut reason);
        }
        if !was_mixing && strategy != Strategy::Throughput {
            // Not on a rung tried on the shape's word until it has been measured (after that
            // the measurements, not the shape, say how much to blend).
            (lane.blend, lane.blend_to) =
                if lane.rung == cur && !(lane.tentative && lane.fresh == 0) {
                    self.blend_fraction(strategy, link, cur)
                } else {
                    (0.0, cur)
                };
        }
        let out = self.emit(&mut lane, strategy, link, reason);
        self.lanes[i] = lane;
        out
    }

    /// With `Link::Auto`, the first time the lane sees the sink's drain rate: if the accept
    /// rate it replaces was more than [`REAIM_GAP`] off (a buffer took the first writes at
    /// memory speed), the lane aims afresh at the rung the measured link asks for, as with a
    /// link given, rather than walking there a climb at a time (decision 0033).
    fn reaim(&self, lane: &mut Lane, strategy: Strategy, link: f64) -> Option<Move> {
        let (drained, accept) = self.link.drained();
        if self.fixed_link.is_some() || lane.drained || !drained {
            return None;
        }
        lane.drained = true;
        let gap = accept.map_or(1.0, |a| a.max(link) / a.min(link));
        if gap <= REAIM_GAP {
            return None;
        }
        let view = self.view(strategy, link);
        let aim = if strategy == Strategy::Throughput {
            view.any_fast_enough(1.0).then(|| view.s1_pick(view.n).map_or(1, |p| p.0))
        } else {
            view.last_ok_from(1, 1.0)
        };
        Some(match aim {
            Some(r) => Move::to(r, Some(Reason::LinkMeasured)),
            None => Move::mix(view.mix_rung(0).0, Some(Reason::LinkMeasured)),
        })
    }

    /// The codec of ladder rung `r`.
    fn rung_spec(&self, r: usize) -> CodecSpec {
        self.cfg.ladder.get(r).unwrap_or(CodecSpec::NONE)
    }

    /// A lane's start decision: its rung, or raw if it starts mixing.
    fn start_decision(&self, lane: &Lane) -> (CodecSpec, Reason) {
        if lane.mixing {
            (CodecSpec::NONE, Reason::Start)
        } else {
            (self.rung_spec(lane.rung), Reason::Start)
        }
    }

    fn view(&self, strategy: Strategy, link: f64) -> View<'_> {
        View { c: self, strategy, link, n: self.cfg.ladder.len() }
    }

    /// The block's codec from the lane's state after its move: in a mix, compressed or raw
    /// by the mix's share; in a blend, the current rung or the blend's partner by its share.
    fn emit(
        &self,
        lane: &mut Lane,
        strategy: Strategy,
        link: f64,
        reason: Reason,
    ) -> (CodecSpec, Reason) {
        let out = if lane.mixing {
            let p = self.mix_fraction(strategy, link, lane.rung);
            lane.mix_fraction = p;
            lane.mix_acc += p;
            if lane.mix_acc >= 1.0 - 1e-9 {
                lane.mix_acc -= 1.0;
                let r = if reason == Reason::Hold { Reason::MixCompress } else { reason };
                (self.rung_spec(lane.rung), r)
            } else {
                (CodecSpec::NONE, Reason::MixRaw)
            }
        } else if lane.blend > 0.0 {
            lane.blend_acc += lane.blend;
            if lane.blend_acc >= 1.0 - 1e-9 {
                lane.blend_acc -= 1.0;
                let r = if reason == Reason::Hold { Reason::Blend } else { reason };
                (self.rung_spec(lane.blend_to), r)
            } else {
                (self.rung_spec(lane.rung), reason)
            }
        } else {
            (self.rung_spec(lane.rung), reason)
        };
        match lane.note.take() {
            Some(note) if matches!(out.1, Reason::Hold | Reason::Start) => (out.0, note),
            _ => out,
        }
    }

    /// Counts block `seq`'s measurement (`speed` per thread at `rung`, where the model
    /// predicted `predicted` for all threads) towards the next move of every lane for which
    /// it is fresh: decided at the lane's current rung after the lane moved there.
    pub(super) fn count_fresh(
        &mut self,
        seq: u64,
        rung: usize,
        speed: f64,
        predicted: Option<f64>,
    ) {
        let Some(link) = self.link() else { return };
        let threshold = 1.0 + self.cfg.dead_band;
        // A measurement is "slower than predicted" for S1 beyond the margin or one unit of
        // measurement noise, whichever is wider.
        let slack = (1.0 + self.cfg.throughput_margin).max(self.model.noise().exp());
        let agg = speed * self.threads;
        let ratio = self.model.ratio(rung, self.clock);
        let aim = self.aim(self.cfg.strategy, link, ratio);
        for lane in &mut self.lanes {
            if lane.rung == rung && seq >= lane.since {
                lane.fresh = lane.fresh.saturating_add(1);
                let confirms = if lane.strategy == Strategy::Throughput {
                    // S1 moves on predicted throughputs; a fresh block confirms them unless
                    // it was clearly slower than predicted.
                    predicted.is_some_and(|p| agg * slack >= p)
                } else {
                    let aim = if lane.strategy == self.cfg.strategy {
                        aim
                    } else {
                        self.cfg.target_speed(lane.strategy, link, ratio)
                    };
                    agg / aim > threshold
                };
                lane.streak = if confirms { lane.streak.saturating_add(1) } else { 0 };
            }
        }
    }
}

/// A move a decision step proposes for a lane: to `rung`, mixing raw and compressed blocks or
/// not, and why (None: the decision's reason stands).
#[derive(Clone, Copy, Debug)]
pub(super) struct Move {
    rung: usize,
    mixing: bool,
    /// Tried on the shape's word although predicted a little short of the target.
    tentative: bool,
    reason: Option<Reason>,
}

impl Move {
    fn to(rung: usize, reason: Option<Reason>) -> Move {
        Move { rung, mixing: false, tentative: false, reason }
    }

    fn mix(rung: usize, reason: Option<Reason>) -> Move {
        Move { rung, mixing: true, tentative: false, reason }
    }
}

impl Lane {
    /// Take a move made at block `seq`: measurements of older blocks are stale from now on.
    fn apply(&mut self, m: Move, seq: u64, reason: &mut Reason) {
        self.rung = m.rung;
        self.mixing = m.mixing;
        self.tentative = m.tentative;
        self.since = seq;
        self.fresh = 0;
        self.streak = 0;
        if let Some(r) = m.reason {
            *reason = r;
        }
    }
}

/// A read-only view of the model's predictions for one strategy through one link: what the
/// decision steps look at.
pub(super) struct View<'a> {
    c: &'a Controller,
    strategy: Strategy,
    link: f64,
    /// Rungs on the ladder.
    n: usize,
}

impl View<'_> {
    fn headroom(&self, r: usize) -> f64 {
        self.c.headroom(self.strategy, self.link, r)
    }

    fn speed(&self, r: usize) -> f64 {
        self.c.model.speed(r, self.c.clock)
    }

    fn ratio(&self, r: usize) -> f64 {
        self.c.model.ratio(r, self.c.clock)
    }

    fn measured(&self, r: usize) -> bool {
        self.c.model.confidence(r, self.c.clock) > 0.0
    }

    fn any_fast_enough(&self, min: f64) -> bool {
        self.c.any_fast_enough(self.strategy, self.link, min)
    }

    fn last_ok_from(&self, from: usize, min: f64) -> Option<usize> {
        self.c.last_ok_from(self.strategy, self.link, from, min)
    }

    fn s1_pick(&self, end: usize) -> Option<(usize, f64)> {
        self.c.s1_pick(self.link, end)
    }

    fn mix_rung(&self, cur: usize) -> (usize, bool) {
        self.c.mix_rung(self.strategy, self.link, cur)
    }

    /// The highest rung one move towards more effort may reach from `cur`.
    fn climb_top(&self, cur: usize) -> usize {
        self.n.saturating_sub(1).min(cur + self.c.cfg.max_climb.max(1))
    }

    fn confirm(&self) -> u32 {
        self.c.cfg.confirm
    }

    /// With a fixed link and no start given, the first rung is aimed with the (pessimistic)
    /// reference table before anything has been measured.
    fn first_aim(&self) -> Option<Move> {
        let c = self.c;
        if !(c.cfg.start.is_none() && c.fixed_link.is_some() && !c.model.has_speed()) {
            return None;
        }
        let aim = if self.strategy == Strategy::Throughput {
            self.any_fast_enough(1.0).then(|| self.s1_pick(self.n).map_or(1, |p| p.0))
        } else {
            self.last_ok_from(1, 1.0)
        };
        Some(match aim {
            Some(r) => Move::to(r, None),
            None => Move::mix(self.mix_rung(0).0, None),
        })
    }

    /// In a mix: leave it for a rung fast enough, on fresh measurements of the mix's rung
    /// (leaving it spends more effort), or move the mix to its best rung.
    fn mix_step(&self, lane: &Lane) -> Option<Move> {
        let threshold = 1.0 + self.c.cfg.dead_band;
        let any_ok = if self.strategy == Strategy::Throughput {
            // To the rung predicted to write fastest, once one keeps the link full.
            self.any_fast_enough(threshold).then(|| self.s1_pick(self.n).map_or(1, |p| p.0))
        } else {
            // The run of rungs fast enough from the mix's own rung if it is one, else from the
            // first that is, at most a climb above the mix's rung: not from the ladder's top,
            // whose rungs measured once on a slow stretch would keep the write in the mix.
            let ok = |r: usize| self.headroom(r) >= threshold;
            let from = if ok(lane.rung) { Some(lane.rung) } else { (1..self.n).find(|&r| ok(r)) };
            from.and_then(|r| self.last_ok_from(r, threshold))
                .map(|r| r.min(lane.rung + self.c.cfg.max_climb.max(1)))
        };
        // Unless nothing is compressed to measure (all raw) or nothing was ever measured, or
        // a serial writer's mix, which measures a block in SERIAL_SAMPLE (the next chunk checks).
        let confirmed = lane.fresh >= self.confirm()
            || lane.mix_fraction <= 0.0
            || !self.c.model.has_speed()
            || self.c.cfg.serial;
        if let (Some(r), true) = (any_ok, confirmed) {
            return Some(Move::to(r, Some(Reason::Headroom)));
        }
        // To the mix's best rung once the current one falls out of the tie, or when a rung in
        // it is clearly (10 %) faster to compress: not back and forth on noise.
        let (pick, cur_tied) = self.mix_rung(lane.rung);
        let faster = self.speed(pick) > 1.1 * self.speed(lane.rung);
        (pick != lane.rung && (!cur_tied || faster)).then(|| Move::mix(pick, None))
    }

    /// S1: the rung with the highest predicted write throughput `min(N S, L f)`, or a mix when
    /// no rung keeps the link full (decisions 0006 and 0009).
    fn s1_step(&self, lane: &Lane) -> Option<Move> {
        let cur = lane.rung;
        if !self.any_fast_enough(1.0) {
            // Every rung is compression-bound: a mix of raw and compressed blocks writes faster.
            return Some(Move::mix(self.mix_rung(0).0, Some(Reason::TooSlow)));
        }
        let (pick, best) = self.s1_pick(self.n).unwrap_or((cur, 0.0));
        let margin = 1.0 + self.c.cfg.throughput_margin;
        let confirmed = lane.streak >= self.confirm();
        let top = self.climb_top(cur);
        // A rung never measured, within a climb, is tried if its prediction with the shape's
        // typical error in its favour would count as fast as the best.
        let explore = (cur + 1..=top).find(|&r| {
            let fast = self.c.threads * self.speed(r) / (1.0 - EXPLORE);
            let optimistic = self.c.cfg.write_speed(fast, self.link, self.ratio(r));
            !self.measured(r)
                && self.ratio(r) > self.ratio(cur) * (1.0 + RATIO_TIE)
                && optimistic * margin >= best
        });
        if lane.tentative && lane.fresh == 0 {
            // Tried on the shape's word: no evidence against it until it is measured.
            None
        } else if pick > cur && confirmed {
            // More effort: only on confirmed predictions, a bounded step at a time.
            Some(Move::to(pick.min(top), Some(Reason::Headroom)))
        } else if let Some((down, _)) =
            self.s1_pick(cur).filter(|&(_, b)| self.c.throughput(self.link, cur) * margin < b)
        {
            // Less effort writes clearly faster: at once.
            Some(Move::to(down, Some(Reason::TooSlow)))
        } else if pick < cur
            && lane.fresh >= self.confirm()
            && self.measured(pick)
            && self.ratio(cur) <= self.ratio(pick) * (1.0 + RATIO_TIE)
            && self.speed(pick) > self.speed(cur)
        {
            // The current rung buys no ratio over a faster one that writes as fast, both
            // measured (the shape's ratio for a rung never measured can be far off).
            Some(Move::to(pick, Some(Reason::SameRatio)))
        } else if let (Some(r), true) = (explore, confirmed) {
            Some(Move { tentative: true, ..Move::to(r, Some(Reason::Headroom)) })
        } else {
            None
        }
    }

    /// S2/S3: leave a rung that is too slow at once, one that buys no ratio over a faster one
    /// once measured, and climb on confirmed headroom beyond the dead band (decision 0007).
    fn s2_step(&self, lane: &Lane) -> Option<Move> {
        let cur = lane.rung;
        let h = self.headroom(cur);
        // A rung tried on the shape's word is not judged by that prediction until measured.
        let floor = if lane.tentative && lane.fresh == 0 { 1.0 - EXPLORE } else { 1.0 };
        if h < floor {
            return Some(match (1..cur).rev().find(|&r| self.headroom(r) >= 1.0) {
                Some(r) => Move::to(r, Some(Reason::TooSlow)),
                None => Move::mix(self.mix_rung(0).0, Some(Reason::TooSlow)),
            });
        }
        let same = (lane.fresh >= self.confirm())
            .then(|| {
                (1..cur).find(|&r| {
                    self.measured(r) && !self.c.buys_ratio(r, cur) && self.headroom(r) >= 1.0
                })
            })
            .flatten();
        if let Some(r) = same {
            // The same bytes for less CPU (float arrays: zstd:1 stores what zstd:14 does).
            return Some(Move::to(r, Some(Reason::SameRatio)));
        }
        if h >= 1.0 + self.c.cfg.dead_band && lane.streak >= self.confirm() {
            return self.s2_climb(cur, h);
        }
        None
    }

    /// S2/S3's climb from `cur` with headroom `h`: at least to the next rung predicted to meet
    /// the target, at most half the remaining distance (log scale), never past a rung
    /// predicted too slow, and on to a rung that buys ratio.
    fn s2_climb(&self, cur: usize, h: f64) -> Option<Move> {
        let n = self.n;
        let need = h.sqrt();
        // The next rung is tried if predicted within the shape's uncertainty of the target,
        // as long as that prediction rests on the shape rather than on its measurements.
        let next_ok = |r: usize| self.headroom(r) >= self.c.min_headroom(r);
        let first_ok = (cur + 1 < n && next_ok(cur + 1)).then_some(cur + 1);
        let half = self.last_ok_from(cur + 1, need);
        let climb = first_ok.max(half).map(|r| r.min(self.climb_top(cur))).and_then(|r| {
            if self.c.buys_ratio(cur, r) {
                return Some(r);
            }
            // It stores what the current rung does: on to the next rung that buys ratio while
            // the run is predicted fast enough (measured rungs, and one step into the unknown).
            (r + 1..n).take_while(|&k| next_ok(k)).find(|&k| self.c.buys_ratio(cur, k))
        })?;
        let tentative = self.headroom(climb) < 1.0;
        Some(Move { tentative, ..Move::to(climb, Some(Reason::Headroom)) })
    }
}
