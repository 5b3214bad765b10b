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

use crate::controller::{
    BlockContext, BlockMeasurement, Control, Controller, ControllerConfig, Decision,
    SinkMeasurement, Status,
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
    start_of: [Option<adz_format::CodecSpec>; MAX_CLASSES],
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
            self.inner[class] = Some(fork);
        }
        self.inner[class].as_mut().expect("just created")
    }

    /// The controller of class 0 (the only one without a classifier).
    pub fn primary(&self) -> &Controller {
        self.inner[0].as_ref().expect("class 0 always exists")
    }

    /// Set every class's start rung (see [`Controller::set_start`]).
    pub fn set_start(&mut self, rung: adz_format::CodecSpec) {
        for c in self.inner.iter_mut().flatten() {
            c.set_start(rung);
        }
    }

    /// Set the start rung of `class`'s controller, now or when the class's first block comes
    /// (a sampling predictor's start for a new kind of data; see [`Controller::set_start`]).
    pub fn set_start_of(&mut self, class: u8, rung: adz_format::CodecSpec) {
        let class = (class as usize).min(MAX_CLASSES - 1);
        self.start_of[class] = Some(rung);
        if let Some(c) = &mut self.inner[class] {
            c.set_start(rung);
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

    /// Classes that have a controller.
    pub fn classes(&self) -> usize {
        self.inner.iter().filter(|c| c.is_some()).count()
    }
}

impl Control for ClassedController {
    fn next_block(&mut self, ctx: &BlockContext) -> Decision {
        let class = (ctx.class as usize).min(MAX_CLASSES - 1);
        let d = self.get(class).next_block(ctx);
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
        c.record_block(&m);
        let stretch = c.stretch();
        for c in self.inner.iter_mut().flatten() {
            c.set_stretch(stretch);
        }
    }

    fn record_sink(&mut self, m: &SinkMeasurement) {
        for c in self.inner.iter_mut().flatten() {
            c.record_sink(m);
        }
    }

    fn keep_threshold(&self) -> f64 {
        self.primary().keep_threshold()
    }

    /// The status of the controller that decided the last block.
    fn status(&self) -> Status {
        self.inner[self.last_class].as_ref().unwrap_or_else(|| self.primary()).status()
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
