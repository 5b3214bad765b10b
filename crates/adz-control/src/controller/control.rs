//! The [`Control`] trait: everything a pipeline asks of a controller.

use adz_format::{CodecSpec, Filters};

use super::{
    BlockContext, BlockMeasurement, Controller, Decision, ShadowMeasurement, SinkMeasurement,
    Status,
};

/// What a pipeline (or the simulator) needs of a controller: [`Controller`] and
/// [`ClassedController`](crate::ClassedController) both are one. Object safe, so that a
/// pipeline can hold a `Box<dyn Control + Send>`.
///
/// The per-class methods (`*_of`, `start_incompressible`) name a data class
/// ([`BlockContext::class`]); a single-class [`Controller`] ignores it.
pub trait Control {
    /// Decide the next block's codec, level and filters.
    fn next_block(&mut self, ctx: &BlockContext) -> Decision;
    /// What a worker measured for one block.
    fn record_block(&mut self, m: &BlockMeasurement);
    /// What the sink measured for one write.
    fn record_sink(&mut self, m: &SinkMeasurement);
    /// The network transfers the sink measured (see [`Controller::record_transfers`]); by
    /// default ignored.
    fn record_transfers(&mut self, parts: &[(u64, std::time::Duration)]) {
        let _ = parts;
    }
    /// A compressed block is kept only if `stored <= raw * keep_threshold()`.
    fn keep_threshold(&self) -> f64;
    /// The current state, for progress and traces.
    fn status(&self) -> Status;
    /// What a worker measured for a block's shadow (call it before that block's
    /// `record_block`).
    fn record_shadow(&mut self, m: &ShadowMeasurement);
    /// The raw path's costs measured before the write (see [`Controller::set_path_cost`]).
    fn set_path_cost(&mut self, cpu: f64, serial: f64);
    /// The start rung of every class, held until something has been measured (see
    /// [`Controller::set_start`]).
    fn set_start(&mut self, rung: CodecSpec);
    /// The start rung of `class`, now or when its first block comes. By default the start
    /// of every class (`class` ignored).
    fn set_start_of(&mut self, class: u8, rung: CodecSpec) {
        let _ = class;
        self.set_start(rung);
    }
    /// Start `class`'s filters at `filters` (see [`Controller::set_filters`]), now or when its
    /// first block comes. By default ignored.
    fn set_filters_of(&mut self, class: u8, filters: Filters) {
        let _ = (class, filters);
    }
    /// Start `class` in probe mode, as if its data had already proved incompressible (see
    /// [`Controller::start_incompressible`]).
    fn start_incompressible(&mut self, class: u8);
    /// The status of the controller of `class`. By default [`Control::status`].
    fn status_of(&self, class: u8) -> Status {
        let _ = class;
        self.status()
    }
    /// Whether the pipeline should give its buffer pools extra room: the controller mixes
    /// raw blocks with a minority of compressed ones (see [`Status::compresses_in_mix`]).
    fn compresses_in_mix(&self) -> bool {
        self.status().compresses_in_mix()
    }
    /// [`Control::compresses_in_mix`] for the controller of `class` (the class of the frame
    /// just written). By default that of [`Control::status_of`].
    fn compresses_in_mix_of(&self, class: u8) -> bool {
        self.status_of(class).compresses_in_mix()
    }
}

impl Control for Controller {
    fn next_block(&mut self, ctx: &BlockContext) -> Decision {
        Controller::next_block(self, ctx)
    }
    fn record_block(&mut self, m: &BlockMeasurement) {
        Controller::record_block(self, m)
    }
    fn record_sink(&mut self, m: &SinkMeasurement) {
        Controller::record_sink(self, m)
    }
    fn record_transfers(&mut self, parts: &[(u64, std::time::Duration)]) {
        Controller::record_transfers(self, parts)
    }
    fn keep_threshold(&self) -> f64 {
        Controller::keep_threshold(self)
    }
    fn status(&self) -> Status {
        Controller::status(self)
    }
    fn record_shadow(&mut self, m: &ShadowMeasurement) {
        Controller::record_shadow(self, m)
    }
    fn set_path_cost(&mut self, cpu: f64, serial: f64) {
        Controller::set_path_cost(self, cpu, serial)
    }
    fn set_start(&mut self, rung: CodecSpec) {
        Controller::set_start(self, rung)
    }
    fn start_incompressible(&mut self, _class: u8) {
        Controller::start_incompressible(self)
    }
    fn set_filters_of(&mut self, _class: u8, filters: Filters) {
        Controller::set_filters(self, filters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClassedController, ControllerConfig, Link, Mode, Reason, Strategy};

    fn ctx(class: u8) -> BlockContext<'static> {
        BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class }
    }

    fn cfg() -> ControllerConfig {
        ControllerConfig::new(Strategy::Throughput, Link::Auto, 2)
    }

    #[test]
    fn both_controllers_are_send_trait_objects() {
        let lz4: CodecSpec = "lz4:1".parse().unwrap();
        let mut ctls: Vec<Box<dyn Control + Send>> =
            vec![Box::new(Controller::new(cfg())), Box::new(ClassedController::new(cfg()))];
        for c in &mut ctls {
            c.set_path_cost(1e-9, 1e-9);
            c.set_start(lz4);
            let d = c.next_block(&ctx(0));
            assert_eq!((d.codec, d.reason), (lz4, Reason::Start));
            assert_eq!(c.status_of(0).rung, lz4);
            assert!(!c.compresses_in_mix());
        }
    }

    #[test]
    fn a_single_controller_ignores_the_class() {
        let zstd3: CodecSpec = "zstd:3".parse().unwrap();
        let mut c: Box<dyn Control + Send> = Box::new(Controller::new(cfg()));
        c.set_start_of(5, zstd3);
        assert_eq!(c.next_block(&ctx(0)).codec, zstd3, "the start of every class");
        let mut c: Box<dyn Control + Send> = Box::new(Controller::new(cfg()));
        c.start_incompressible(5);
        assert_eq!(c.next_block(&ctx(0)).reason, Reason::Incompressible);
        assert_eq!(c.status_of(5).mode, Mode::Probe);
    }

    #[test]
    fn a_classed_controller_starts_each_class_as_told() {
        let zstd3: CodecSpec = "zstd:3".parse().unwrap();
        let mut c: Box<dyn Control + Send> = Box::new(ClassedController::new(cfg()));
        c.set_start_of(2, zstd3);
        c.start_incompressible(4);
        assert_ne!(c.next_block(&ctx(0)).codec, zstd3, "class 0 keeps the default start");
        assert_eq!(c.next_block(&ctx(2)).codec, zstd3);
        assert_eq!(c.next_block(&ctx(4)).reason, Reason::Incompressible);
        assert_eq!(c.status_of(4).mode, Mode::Probe);
        assert_eq!(c.status_of(2).rung, zstd3);
    }

    #[test]
    fn a_classed_controller_starts_each_class_with_its_filters() {
        let zstd3: CodecSpec = "zstd:3".parse().unwrap();
        let shuffle4: Filters = "shuffle:4".parse().unwrap();
        let mut c: Box<dyn Control + Send> = Box::new(ClassedController::new(cfg()));
        c.set_start(zstd3);
        c.set_filters_of(3, shuffle4);
        assert_eq!(c.next_block(&ctx(3)).filters, shuffle4);
        assert_eq!(c.next_block(&ctx(2)).filters, Filters::NONE, "other classes: none");
        assert_eq!(c.status_of(3).filters, shuffle4);
        // A hint that names the filters wins.
        let none = [crate::Hint::Filters(Filters::NONE)];
        let hinted = BlockContext { hints: &none, ..ctx(3) };
        assert_eq!(c.next_block(&hinted).filters, Filters::NONE);
        // A static strategy applies only the filters a user names.
        let mut s: Box<dyn Control + Send> = Box::new(ClassedController::new(
            ControllerConfig::new(Strategy::Static(zstd3), Link::Auto, 2),
        ));
        s.set_filters_of(3, shuffle4);
        assert_eq!(s.next_block(&ctx(3)).filters, Filters::NONE);
    }
}
