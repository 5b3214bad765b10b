//! The adz controller: told what compression achieved, asked what to do with the next block.
//!
//! Between blocks the controller moves along a [`Ladder`] of codec settings, from raw at the
//! top through LZ4, zstd and xz, so that compression keeps the link to storage exactly full
//! (or, depending on the [`Strategy`], as full as the strategy wants). Like Blosc2's tuner
//! plug-in (`next_cparams` / `update`), it owns no threads and does no I/O: the pipeline asks
//! [`Controller::next_block`] for every block, in order, and reports what happened with
//! [`Controller::record_block`] (from a worker) and [`Controller::record_sink`] (from the
//! writer), through the [`Control`] trait that [`Controller`] and [`ClassedController`] share.
//! That makes it testable with made-up measurements, as the simulator (feature `sim`) does.
//!
//! ```
//! use std::time::Duration;
//! use adz_control::{BlockContext, BlockMeasurement, Controller, ControllerConfig, Link,
//!                   Reason, SinkMeasurement, Strategy};
//!
//! // Keep pace with a 117 MB/s link (1GbE) using 4 worker threads.
//! let mut ctl = Controller::new(ControllerConfig::new(Strategy::KeepPace, Link::Fixed(117e6), 4));
//! let ctx = BlockContext { raw_offset: 0, raw_len: 1 << 20, hints: &[], class: 0 };
//! let first = ctl.next_block(&ctx);
//! assert_eq!(first.reason, Reason::Start);
//!
//! // A worker reports: 1 MiB took 50 ms (21 MB/s per thread, 84 MB/s for 4 threads: slower
//! // than the link) and came out at a third of its size.
//! ctl.record_block(&BlockMeasurement {
//!     decision: first,
//!     raw_len: 1 << 20,
//!     stored_len: 350_000,
//!     stored_raw: false,
//!     wall: Duration::from_millis(50),
//!     cpu: Duration::from_millis(50),
//! });
//! ctl.record_sink(&SinkMeasurement {
//!     bytes: 350_048,
//!     busy: Duration::from_millis(3),
//!     backlogged: true,
//!     raw: 1 << 20,
//!     waited: Duration::ZERO,
//!     cpu: Duration::from_millis(60),
//! });
//!
//! // Too slow: the next block gets a faster setting at once.
//! let next = ctl.next_block(&BlockContext { raw_offset: 1 << 20, ..ctx });
//! assert_eq!(next.reason, Reason::TooSlow);
//! let ladder = ctl.ladder();
//! assert!(ladder.position(next.codec) < ladder.position(first.codec));
//! println!("{}", ctl.status()); // "keep-pace zstd:.. target 117.0 MB/s speed .. MB/s ..."
//! ```
//!
//! # How it decides
//!
//! Each rule below is a decision record under `docs/decisions/`, with what was tried and the
//! measurements; the numbers in parentheses are those records.
//!
//! * **Measurements.** A block's speed is its CPU time times the workers' smoothed wall/CPU
//!   ratio, which is the machine's, not the data's (0002). The sink's writes give the link's
//!   speed with [`Link::Auto`] (0015) and, with the pipeline's CPU time, what moving raw
//!   blocks costs (0010, 0012).
//! * **The model.** The ladder's priors ([`Priors`]: the reference table [`reference()`], or
//!   rungs measured on this machine by `adz profile`) give the ladder's shape; measurements
//!   set a level and per-rung corrections, asymmetrically (slow news at once, fast news when
//!   it repeats) and aware of the noise (0003, 0004, 0005). Measurements of blocks decided
//!   before a move are late, not stale: they teach the model but do not count towards the
//!   next move ([`Decision::seq`]).
//! * **Targets.** The aggregate compression speed the strategy wants, with `L` the link and
//!   `f(r)` rung `r`'s ratio ([`Strategy::target_speed`]):
//!
//! | strategy | target of rung r | chosen rung |
//! |---|---|---|
//! | S1 `throughput` | `L x f(r)` | the highest predicted write throughput `min(N S(r), L f(r))` (0006) |
//! | S2 `keep-pace` | `L` | the last rung at least as fast as the link (0007) |
//! | S3 `prolong=F` | `L / F` | the last rung at least as fast as `L/F` (0007) |
//! | `archive` | none | the last rung (xz:9) |
//! | `static=C:L` | none | `C:L` |
//!
//! * **Moves.** Too slow: move at once, aimed by the model. Too fast: move after 3 confirming
//!   fresh measurements, at most 2 rungs, past a 10 % dead band (S1: a 5 % margin). More
//!   effort only where it buys ratio (0007, 0009). S2 and S3 blend two rungs and keep a
//!   schedule from the sink's clock, so that a write takes its target's time (0008).
//! * **Fast links.** When no rung is fast enough, a share of the blocks is compressed and the
//!   rest sent raw ([`Reason::MixCompress`], [`Reason::MixRaw`]); the share follows from the
//!   CPU and link times, shrinks while frames seldom wait for the sink, and the mix uses the
//!   fastest rung within 10 % of the best (0010-0013). While it mixes, the pipeline gives its
//!   pools a few more buffers ([`Control::compresses_in_mix`], 0014).
//! * **Incompressible data.** A block is kept only if it saves 3 %
//!   ([`Controller::keep_threshold`]); one that does not switches to probe mode: raw blocks
//!   with a cheap probe every 4-10 blocks, paced by its cost where compression cannot gain
//!   (0016, 0017). A rung without an entropy stage that fails moves the lanes to zstd:1
//!   instead ([`Reason::BlindRung`], 0020).
//! * **Classes and shadows.** A [`ClassedController`] keeps one controller per kind of data
//!   ([`BlockContext::class`], [`classify()`]) and plans S1's CPU across them (0018, 0019).
//!   Shadow compression keeps the model learning rungs it does not use, within 3 % of the
//!   compression CPU ([`Decision::shadow`], 0021).
//! * **Hints** ([`BlockContext::hints`]): `no-compress` sends a block raw, unseen by the
//!   controller; `dtype=T` adds the shuffle filter; `hot` decides a block as S1 and
//!   `write-once` an S1 block as S2, each in its own lane (rung and move state) over one model.
//!
//! Every tunable and its default is a field of [`ControllerConfig`]; the defaults' reasons
//! and what the simulator shows of them are in decision 0024.
//!
//! # Simulator
//!
//! The cargo feature `sim` (off by default) adds `adz_control::sim`, a deterministic
//! simulator of the pipeline (workers, buffers, an ordered writer and a link) for tests and
//! benchmarks. The example `sim_decisions` prints every decision over a grid of simulated
//! writes: its output before and after a change shows whether the change kept behaviour
//! (decision 0022).

mod classed;
mod classify;
mod controller;
mod error;
mod hint;
mod ladder;
mod model;
pub mod mrc;
mod priors;
#[cfg(feature = "sim")]
pub mod sim;
mod strategy;
mod timeline;

pub use adz_format::{CodecSpec, FilterSpec, Filters};

pub use crate::classed::{new_control, ClassedController, MAX_CLASSES};
pub use crate::classify::{class_of, classify, entropy};
pub use crate::controller::{
    start_filters, BlockContext, BlockMeasurement, Control, Controller, ControllerConfig, Decision,
    LinkEstimate, Mode, Reason, ShadowMeasurement, SinkMeasurement, Status, FILTER_PROBE_BYTES,
    INITIAL_LEVEL, KEEP_THRESHOLD, RATIO_TIE, SHADOW_BYTES,
};
pub use crate::error::{Error, Result};
pub use crate::hint::{Dtype, Hint};
pub use crate::ladder::{entropy_coded, reference, Ladder, Reference};
pub use crate::priors::Priors;
pub use crate::strategy::{EnergyCost, Link, Strategy};
pub use crate::timeline::{Schedule, Slot};
