//! The adz controller: told what compression achieved, asked what to do with the next block.
//!
//! Between blocks the controller moves along a [`Ladder`] of codec settings, from raw at the
//! top through LZ4, zstd and xz, so that compression keeps the link to storage exactly full
//! (or, depending on the [`Strategy`], as full as the strategy wants). Like Blosc2's tuner
//! plug-in (`next_cparams` / `update`), it owns no threads and does no I/O: the pipeline asks
//! [`Controller::next_block`] for every block, in order, and reports what happened with
//! [`Controller::record_block`] (from a worker) and [`Controller::record_sink`] (from the
//! writer). That makes it testable with made-up measurements, and [`sim`] is a deterministic
//! simulator of the pipeline that does exactly that.
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
//! # How the controller works
//!
//! ## Measurements
//!
//! * **Per block** ([`BlockMeasurement`]): raw and stored size, wall and CPU time of the
//!   worker. A block's *per-thread speed* is `raw_len / (cpu x s)`, with `s` the workers'
//!   smoothed wall/CPU ratio (`raw_len / wall` without CPU times).
//!   What the pipeline gets is wall time: a worker that competes with the application's
//!   threads for a core takes longer in wall time than in CPU time, and `s` carries that. But
//!   one block's own wall time says little: on 2 cores with 2 workers, the reader and the
//!   writer, the same block takes 1-3x its CPU time depending on when its worker gets a core,
//!   and one noisy block used to send S1 from zstd back to LZ4. Data that gets harder takes
//!   more CPU time; contention that lasts moves `s` (a mean over about 10 blocks, rate 0.1,
//!   each block's ratio counted as at most 1.5x the current `s`, so that one descheduled
//!   block does not make the next ones look slow either; the first block counts against a
//!   prior of 1, an idle machine, so it too is at most 1.5x). `s` is the machine's, not the
//!   data's: a [`ClassedController`]'s classes share one. `1/s` is reported as
//!   [`Status::cpu_share`]. Blocks shorter than the nominal block size weigh proportionally
//!   less.
//! * **Aggregate speed**: `threads x per-thread speed`. Each block is timed while the other
//!   workers run, so memory-bandwidth contention between them (the thesis measured 10x, not
//!   12x, on 12 cores) is already in the per-thread speed; idle time of a worker (waiting for
//!   a free buffer because the link is the bottleneck) is not in it, so the aggregate is the
//!   *capacity* of the compressors, which is what is compared with the target.
//! * **Per frame at the sink** ([`SinkMeasurement`]): bytes and the time the sink was busy
//!   writing them. Time the sink spends waiting for frames (compression too slow) is not
//!   busy time, so the estimate is the link's speed, not the pipeline's.
//!
//! ## The model: a reference shape, a level, and per-rung corrections
//!
//! A table of typical single-thread speed and ratio per codec setting ([`reference()`]) gives
//! the *shape* of the ladder. Everything measured is expressed relative to it (log scale):
//! a global *level* (this data on this machine is, say, 0.6x the reference speed) and a
//! per-rung *correction* (zstd:9 is 0.8x what the shape predicts here). The prediction for a
//! rung is `reference x level x correction`. A rung's correction is its own once it has been
//! measured; a rung never measured borrows the corrections of the nearest measured rungs on
//! either side (linear interpolation), because the shape's error is locally smooth: the rung
//! next to the current one is predicted from the current one's measurement and the shape's
//! step between them. This is the per-rung memory: a jump is aimed at the rung *predicted* to
//! meet the target, not made blind.
//!
//! The measured rung's prediction follows measurements asymmetrically: it moves 0.79 of the
//! way towards a slower measurement (`alpha_slow` 0.7, plus `alpha_rung` 0.3 of the rest), 0.4
//! towards a faster one (`alpha_fast` 0.15 plus 0.3 of the rest), in log space. Slow news is
//! acted on at once; fast news must repeat before it counts. Two refinements keep this sound
//! when measurements are noisy:
//!
//! * **Slow news must stand out of the noise.** The model tracks the mean absolute error of
//!   its predictions within runs of one rung (the measurement noise, rate 0.1). A slowdown of
//!   two noise units or more gets the full slow weight; one within one unit is likely noise
//!   and weighs like a correction (0.3); in between, in proportion. Without noise (the
//!   simulator's default) every slowdown is news, as before.
//! * **The level takes a fixed share of the measured rung's move**: 0.9 within a run of
//!   measurements of one rung (how the data changes), 0.2 for the first measurement after
//!   other rungs' (mostly how this rung differs from them, e.g. a rung tried and found slow
//!   stays remembered as slow); the rest goes to the rung's own correction. Earlier the
//!   level moved 0.7/0.15 and the correction symmetrically 0.3 of the rest: under noise the
//!   asymmetry ratcheted the level down and the correction up without bound (e^-13 after 400
//!   noisy blocks), and every other rung's prediction, relative to the level, collapsed with
//!   it (lz4:50 predicted at 35 MB/s). A share that does not depend on the error's sign
//!   cannot drift.
//!
//! Ratios are modelled the same way on the
//! ln(ratio) scale ("bits saved"), so that incompressible data is a level near zero, not a
//! ratio below 1. Data that gets easier or harder moves every rung together through the
//! level, which needs no forgetting; what one rung did relative to the others fades into its
//! neighbours' value with a half-life of 4096 compressed blocks, for data whose shape changes.
//! The model's clock counts compression attempts, so blocks sent raw (hints, probe mode,
//! mixes) do not age it.
//!
//! **Measurement lag.** With N workers, blocks k+1..k+N are decided before block k's
//! measurement arrives, and after a move the measurements of the old rung keep arriving for
//! about N blocks. Normalised by their rung's shape they are not stale, only late: they update
//! the level and their own rung's correction, which is why they never cause a second, blind
//! move. What they do *not* do is count toward moving again: a lane counts only *fresh*
//! measurements, of blocks it decided at its current rung after it moved there
//! ([`Decision::seq`] tells them apart).
//!
//! ## Targets
//!
//! The target is the aggregate compression speed (raw bytes/s) the strategy wants, with `L` the
//! link speed and `f(r)` the predicted ratio of rung `r`:
//!
//! | strategy | target of rung r | chosen rung |
//! |---|---|---|
//! | S1 `throughput` | `L x f(r)`: the effective link speed | the rung with the highest predicted write throughput `min(N S(r), L f(r))` (below) |
//! | S2 `keep-pace` | `L` | the last rung at least as fast as the link |
//! | S3 `prolong=F` | `L / F` | the last rung at least as fast as `L/F` |
//! | `archive` | none | the last rung (xz:9), probe mode for incompressible data |
//! | `static=C:L` | none | `C:L`, probe mode for incompressible data |
//!
//! "Last" is in ladder order, which is the order of preference (more effort, better ratio),
//! and the walk along it never passes a rung predicted too slow. On a ladder that is not
//! monotone in speed (xz:0 is faster than zstd:19 on most inputs) the controller therefore
//! stops before the slow zstd levels rather than jump over them to xz on the reference
//! table's word; it gets to xz only when the target is below what zstd:22 does.
//!
//! ## S1: the fastest write
//!
//! S1's objective is the write throughput, `T(r) = min(N S(r), L f(r))`: the compressors or
//! the link, whichever is slower (`N S` the aggregate compression speed of rung `r`). A rung
//! slower than its own target `L f` can still write fastest when its ratio is much higher:
//! on English-like text at 1GbE with 2 workers, lz4:1 (ratio 2.19, 900 MB/s) writes at
//! `min(900, 256) = 256` MB/s while zstd:1 (3.58, ~320-400 MB/s) writes at 320-400. The old
//! rule, "the last rung whose speed >= `L f`", raised the target with the ratio across the
//! LZ4 -> zstd change, found every zstd rung "too slow" and spent 191 of 300 blocks on
//! lz4:1. So S1 predicts `T` for every rung from the model and:
//!
//! * **picks** the rung with the best predicted ratio among those within
//!   [`ControllerConfig::throughput_margin`] (5 %) of the highest `T` (equally fast: store
//!   less); ratios within 1 % of that best count as equal, and the fastest of those rungs wins
//!   (the same bytes for less CPU: on float arrays every zstd level from 2 to 14 gives 1.047,
//!   and S1 used to climb to zstd:13 at a sixth of zstd:2's speed). A rung that buys no ratio
//!   over such a faster rung is left for it once both have been measured
//!   ([`Reason::SameRatio`]): the shape's ratio for a rung never measured can be far off (zstd's
//!   negative levels save nothing on those floats);
//! * **spends more effort** towards that pick only after `confirm` (3) fresh measurements of
//!   the current rung in a row that were not clearly slower than predicted (by more than the
//!   margin or one unit of measurement noise), at most `max_climb` (2) rungs per move. A rung
//!   never measured within that climb is also tried if its prediction with the shape's
//!   typical 15 % error in its favour would count as fast as the best (on the text above
//!   zstd's negative levels compress no faster than zstd:1, against 1.4x in the reference
//!   shape; without this, S1 stopped at zstd:-3);
//! * **spends less effort at once** when a faster rung is predicted to write clearly faster,
//!   by more than the margin, than the current one (the best of the faster rungs, even when a
//!   slower rung is predicted better still but not confirmed): the margin is the hysteresis,
//!   so noise in the estimate does not flip the rung;
//! * **mixes raw and compressed blocks** when no rung keeps the link full (`N S < L f` for
//!   every rung: then every rung is compression-bound, and the mix below writes faster than
//!   any of them, `L + S (1 - 1/f)`).
//!
//! The `hot` hint decides its blocks this way too.
//!
//! ## S2 and S3: moving along the ladder, asymmetric, aimed, with a dead band
//!
//! S2's and S3's targets do not depend on the ratio, so "the last rung at least as fast as
//! the target" is their objective. The too-slow trigger below is the model's smoothed
//! prediction, never one block's measurement, and with the noise-aware model and the
//! CPU-time-based speed above, one slow block moves it little unless the data really got
//! slower.
//!
//! With `h = predicted aggregate speed / target` at the current rung (the *headroom*):
//!
//! * **Too slow (`h < 1`): move at once.** The next block goes to the last rung above the
//!   current one whose prediction meets the target. Because the prediction scales with the
//!   measured level, the size of the jump is proportional to `log(target / measured)` divided
//!   by the ladder's log-speed step per rung: the thesis' listing 4.2
//!   (`level += difference / divisor`) on a log scale, with the divisor read off the reference
//!   shape instead of tuned by hand. At a codec's fast end the search simply continues into the
//!   next codec up (xz -> zstd -> LZ4), and beyond LZ4's fastest setting into the raw mix.
//! * **Too fast (`h >= 1.1`, the 10 % dead band): move conservatively**, and only after 3
//!   consecutive fresh measurements of the current rung all show that headroom. The move goes
//!   at least to the next rung if it is predicted to meet the target, and at most to the last
//!   rung of the unbroken run predicted to keep `sqrt(h)` of headroom: half the remaining
//!   distance on a log scale, never past a rung predicted too slow. So a start far too fast
//!   converges geometrically (a headroom of 100x takes about 6 moves), and a wrong prediction
//!   overshoots by at most half the distance it was aiming at. At a codec's slow end the walk
//!   continues into the next codec down (LZ4 -> zstd -> xz). A next rung that has *never*
//!   been measured is also tried if predicted within 15 % of the target: the reference shape
//!   is typically that far off per step on real data, and without this the climb would stop
//!   one rung short for good whenever the shape is pessimistic. If it turns out too slow, its
//!   measurement is remembered and it is not tried again until the data gets easier.
//! * **Otherwise hold.** Between `1` and `1.1` no move is made: that is the hysteresis that
//!   stops the controller from oscillating around the target. The thesis found oscillation
//!   costly because every undercut slows the write and cannot be made up by overshooting
//!   ("Decision Thresholds"), hence the asymmetry: undercutting is corrected on the first
//!   slow measurement, spending more effort waits for confirmation.
//! * **Blends.** A target between two rungs' speeds is met by sending a share of the blocks
//!   to the slower one (`Reason::Blend`), so that S2/S3 do not finish a rung's step early.
//! * **More effort only where it buys ratio.** A climb onto a rung that has been measured,
//!   and a blend with one, need that rung's ratio above the current one's by 0.25 %; the
//!   blend partner is the first rung within a climb that gives that. On float arrays zstd 1..22
//!   store the same bytes to within 0.01 %, and zstd:16 compresses 9x slower than zstd:15:
//!   blends into it stalled the ordered writer, and the link with it, for a block's time each
//!   (2 cores, 1GbE: S2 took 1.11 of its target time, S3 1.06-1.28; now 1.01-1.02 and
//!   0.74-0.76, S3 finishing early because nothing in its time buys ratio). Two rungs' ratios
//!   are measured on different blocks, so they are compared only where one block's ratio
//!   strays from the model's by less than 0.5 % on average (floats: 0.1 %); on text (10 %
//!   and more) the reference shape's word stands, as before. A climb whose target stores
//!   what the current rung does goes on past such measured ties to the next rung that buys
//!   ratio (or has not been measured), if the run is predicted fast enough. And a rung that
//!   buys nothing over a faster measured one that meets the target is left for it
//!   ([`Reason::SameRatio`], as in S1): the same bytes for less CPU.
//!
//! ## Fast links: the raw rung and the raw/compressed mix
//!
//! When no codec rung meets the target (even the fastest LZ4 is slower than `L f` in S1, or
//! slower than `L` or `L/F` in S2/S3), compressing every block would slow the write down. The
//! controller then sends a fraction `p` of the blocks compressed and the rest raw, spread evenly
//! (an error-diffusion accumulator, deterministic). With per raw byte `S` the aggregate
//! compression speed of the mix rung, `R` the aggregate speed of storing raw (measured from raw
//! blocks, infinite until measured), `f` its ratio:
//!
//! * CPU time `p/S + (1-p)/R`; link time `(1 - p (1 - 1/f)) / L`.
//! * S1 makes the two equal, so both stages are busy:
//!   `p = (1/L - 1/R) / (1/S - 1/R + (1 - 1/f)/L)`, and for `R -> inf` the throughput is
//!   `L + S (1 - 1/f)`: always more than raw's `L`, by the bytes per second the compressors save.
//! * S2 and S3 spend exactly the target's time on compression: `p = (1/T - 1/R) / (1/S - 1/R)`.
//!
//! `R` is what the workers measure of a raw block (a checksum, tens of GB/s), but a raw block
//! costs the pipeline more: the application's reader, the hand-offs and the writer's copies.
//! The sink tells how much (`SinkMeasurement::raw` and `waited`): over the last writes
//! (half-life 16 MiB) the elapsed time `E` (waited + busy) is the link's when the link was busy
//! for at least 90 % of it, else the CPU's, of which compression took `W / N` (the attempts'
//! worker time over the workers) and moving the frames stored raw, `X` raw bytes, the rest:
//! the pipeline moves raw blocks at `X / (E - W / N)` (a lower bound only while the link was
//! busy). Below 1.25 `L` it is `R`: below the link the pipeline cannot even fill it with raw
//! blocks, every compressed block takes CPU from them, and `p` comes out zero (all raw); a
//! little above, `p` is small (where pipeline and link are about even the estimate scatters
//! around `L`, 5.1-6.3 GB/s at 6000 MB/s). Further above it is not used: it also counts the
//! ordered writer's stalls behind a compressed block, which the mix pays for in the time it
//! saves. On 2 cores at 6000 MB/s
//! the workers stored raw at 50 GB/s where the pipeline moved 5.9 GB/s, and S1 compressed
//! a sixth to a third of the blocks and wrote 0.6-0.7 as fast as raw.
//!
//! **The pipeline's CPU time** (`SinkMeasurement::cpu`: its feeder, workers and sequencer,
//! not the application's computing, since the last write)
//! settles what the sink's clock cannot while the link is busy. Less the workers' CPU time on
//! compression, it is the raw path's cost `c` per raw byte, so with `C` CPUs
//! (`ControllerConfig::cpus`) the pipeline could move raw blocks at `C / c` (while the link is
//! the bottleneck, the raw speed is at least that). S1 then reckons in CPU seconds, every block
//! paying `c` and a compressed one also its workers' `1 / s` (the model's speed times the
//! usual wall/CPU ratio): a rung writes at `min(C / (c + 1/s), N s, L f)`, and the mix is
//! `p = (C - L c) / (C (1 - 1/f) + L / s)`, zero when the CPUs cannot even move raw blocks
//! as fast as the link. The workers' wall times alone count the raw path twice (once as
//! their own wait for a core). A kernel tar through 1200 MB/s on two cores: a stretch that
//! compresses 3-4x sent S1 into the mix, the pace then said raw blocks cost about the link's
//! time, and in a third of the runs the mix went all raw for good (0.72 of static lz4:50);
//! the CPUs were two-thirds idle.
//!
//! The mix also shrinks while frames seldom wait for the sink (fewer than half the writes
//! backlogged, smoothed over about 16 writes; none compressed at 20 % or fewer); a write the
//! sink waited for longer than the link takes to send it counts four times. The first `2 N`
//! writes, made while the pipeline fills, find the sink idle whatever the link and are not
//! counted; the share starts at one half (the mix in full).
//!
//! The mix rung: each rung's mix is valued by its throughput, `(C a s + L) / (1 + a c s)`
//! with `a = 1 - 1/f` in CPU seconds (that is `L / (1 - p a)` at the `p` above), or by the
//! bytes it saves per second, `S a`, without the CPU time; of the rungs within 10 % of the
//! best, the mix takes the fastest. Near the optimum the value hardly depends on the rung
//! (text at 1200 MB/s: every LZ4 level within 10 %), while a slow rung's block holds up the
//! frames behind it and one block's speed on two busy cores scatters by 2x: a mix that
//! drifted to lz4:1 wrote at 0.92x raw. `p` below 1/512 sends everything raw. Leaving the mix for full compression
//! is spending more effort, so it needs the same confirmation and dead band as any move down
//! the ladder. (Mixing two codec rungs, as the thesis' oscillation between LZ4 1 and zstd 1
//! did by accident, would fill the gaps between rungs too; it is not done.)
//!
//! The fluid formula assumes the ordered writer always has a finished frame to send. A
//! compressed block takes longer than a raw one, and frames leave in order, so while it is
//! being compressed the link lives on the finished frames queued before it: the pipeline
//! needs about `threads + (compression time of one block) x L / block size` buffers. In the
//! simulator at 6000 MB/s with 2 threads (LZ4 at 1.8 GB/s per thread, 3 link-block-times per
//! compressed block), 8 buffers give S1 6800 MB/s against raw's 6000 (the formula says 6790);
//! the thesis' minimum of 2 x threads = 4 buffers gives 6040: still not slower than raw, but
//! most of the gain is lost to the writer waiting.
//!
//! ## The link: given or measured
//!
//! [`Link::Fixed`] is used as given. With [`Link::Auto`] the link speed is
//! `sum(bytes) / sum(busy)` over the sink measurements, with sums fading by half every 32 MiB
//! written, so that a large write weighs more than a small one and the estimate follows a link
//! that changes speed within a few tens of MiB. Until the first sink measurement the lanes hold
//! the start rung (zstd:1 unless [`ControllerConfig::start`] says otherwise, e.g. from a
//! sampling predictor via [`Controller::set_start`]; a raw start is held only until the link
//! is known, since raw blocks measure no compression). zstd:1 because the thesis started there
//! on Ethernet links and because on two or more cores it outruns most single-stream sinks
//! while saving far more than LZ4. With a fixed link and no start given, the first rung is
//! aimed from the reference table assuming the machine is half as fast as the reference
//! (starting too slow costs time, starting too fast only some ratio on the first blocks).
//!
//! ## Incompressible data: keep threshold and probe mode
//!
//! A compressed block is kept only if `stored <= raw x 0.97`
//! ([`Controller::keep_threshold`]), i.e. it saves at least 3 %; otherwise the writer stores
//! it raw. ZFS demands 12.5 % because it allocates whole sectors, so a smaller saving often
//! frees nothing; adz packs frames byte by byte, so any saving is real, and the threshold only
//! has to separate "incompressible" from "poorly compressible": already compressed or
//! encrypted data comes back from LZ4 and zstd at 98-101 % of its size, while poorly
//! compressible data (the thesis' matrix.bin: zstd 1-4 save 7-9 %) is kept. A kept block
//! costs a decode on every read, so one that saves almost nothing is better stored raw.
//!
//! One block that comes back stored raw switches to **probe mode** (cheap to leave: any
//! compressible result of a *later* block that is still in flight switches back at once;
//! results of blocks decided before the incompressible one are older data and do not count).
//! Incompressible results never enter the speed model (LZ4 and zstd skip incompressible input
//! several times faster than they compress, which would make every rung look fast) and move
//! only the ratio level, which S1's effective ratio needs. In probe mode blocks go
//! raw without an attempt, except one probe at a time, alternately with LZ4 acceleration 1 and
//! zstd:1, the cheap tests ZFS uses before zstd (LZ4 skips incompressible input at several GB/s
//! per core; zstd:1 also catches data only an entropy coder shrinks, like float arrays). The
//! probe interval starts at 4 blocks and doubles after every failed probe up to 10 blocks. The
//! cap is the promise: compressible data after an incompressible stretch is compressed again
//! within 10 blocks (the probe block itself is compressed), at a cost of one cheap attempt per
//! 10 blocks. When a probe compresses, the strategies resume the rung they were at, and the
//! model takes the probe's measurement as the new level. Except where that rung is what
//! failed: a block stored raw at a rung cheaper than one that compressed the data within the
//! last 16 blocks (`SAVER_WINDOW`) marks its rung, and a lane at it goes on from the probe's
//! rung if that is the costlier. Float arrays are the case: zstd:1 and up save 10 %, LZ4 and
//! zstd's negative levels nothing, and S1 stepping down from a slow zstd level to a negative
//! one went into probe mode and back to that rung after every probe that compressed.
//!
//! ## Hints
//!
//! [`BlockContext::hints`] are the hints covering a block (the pipeline cuts blocks at hint
//! borders). `no-compress`: raw, no attempt, and the block is invisible to the controller (its
//! measurement is ignored, it starts no probe mode). `dtype=T`: the shuffle filter with
//! element size `T.size()` (none for 1-byte types). `hot`: the block is decided as throughput
//! (S1), whatever the configured strategy except `static`. `write-once`: a throughput (S1)
//! configuration is decided as keep-pace (S2) for the block; the other strategies already
//! favour ratio at least as much. Each effective strategy has its own *lane* (its own rung and
//! move state) sharing one model, so a hinted range and the rest of the file do not drag each
//! other's rung around.
//!
//! ## What the simulator shows
//!
//! `tests/controller.rs` runs the controller in [`sim`] (8 workers unless said otherwise,
//! 1 MiB blocks, data whose speeds follow the reference table x 0.8 with a ±10 % wiggle per
//! rung, so that the controller's shape is not the truth):
//!
//! | strategy | 117 MB/s | 1200 MB/s | 6000 MB/s |
//! |---|---|---|---|
//! | S1 throughput | zstd:8 | zstd:1 | lz4:12 |
//! | S2 keep-pace | zstd:14 | zstd:4 | lz4:3 |
//! | S3 prolong=1.5 | zstd:16 | zstd:5 | zstd:-4 |
//!
//! S1's is the rung that writes fastest (each is compression-bound, just past the last rung
//! that keeps the link full, which the old rule chose: zstd:7, zstd:-1, lz4:18); S2's and
//! S3's the last rung at least as fast as the target. Each is reached from lz4:50 and from
//! xz:9 within 8-120 blocks, with no too-slow block afterwards.
//!
//! The codec family change measured on real data (2 workers, 117 MB/s, per thread lz4:1
//! 450 MB/s ratio 2.2, zstd:-4 300 MB/s 3.1, zstd:1 160 MB/s 3.6, zstd:3 70 MB/s 3.76), with
//! each block's wall time 1-2.5x its CPU time and ±15 % speed jitter: from lz4:50, lz4:1,
//! zstd:1, xz:9 or aimed, S1 writes within 0-1.5 % of the best static rung (zstd:-2, 386-389
//! MB/s in the same runs) after 60 blocks, with 98-100 % of the blocks at zstd:-2, a neighbour
//! or a rung as fast, and no block back on LZ4 (the old rule: mostly lz4:1). The same within
//! 0-2.5 % with zstd:1 the best rung (two variants); without noise within 4.5 % (it settles
//! on zstd:-1, as fast within the margin and a better ratio); without CPU times within
//! 0-7 % (wall times alone are noisier). After the data turns 3.3x slower,
//! the too-slow rung is left N blocks later (as soon as the first slow measurement is in).
//! With 2 workers at 6000 MB/s no codec keeps up and S1 mixes 40 % LZ4 blocks with raw
//! ones. 100 incompressible blocks cost 12 attempts; compressible data after them is
//! compressed again within 3-4 blocks and the previous rung resumes 8 blocks later.
//!
//! ## Defaults and why
//!
//! | tunable | default | why |
//! |---|---|---|
//! | `schedule_blocks` | 8 | S2/S3 keep a schedule from the sink's clock: a write ahead of its target's time spends what it saved over the next 8 blocks plus the pipeline's depth (2 per worker: the sink hears of a block that late, and reacting faster overshoots), aiming at most at half the target; behind it, at most 4/3 of it (a behind cap of 1/8 of the horizon left a kernel tar 6 % late through 117 MB/s, when its later part got harder). On noisy data (blocks at 0.4-1.6x their mean speed) this takes S2 and S3 from 0.72-0.90 of their target time to 0.98-1.01 in the simulator, and on a kernel tar through a 117 MB/s link from 0.79-0.92 to 0.98-1.01. 0 turns it off |
//! | `throughput_margin` | 0.05 | S1: a rung is left for a faster one only when that is predicted to write more than 5 % faster, and rungs within 5 % of the fastest count as equally fast (the best ratio among them wins). Adjacent rungs' throughputs differ by 3-8 % near the best rung, so this keeps the estimate's noise from flipping the rung while costing at most 5 % |
//! | `max_climb` | 2 | a move to more effort climbs at most 2 rungs: speeds extrapolate badly to other data, and a too-slow rung costs more than a too-fast one |
//! | `dead_band` | 0.10 | adjacent rungs differ by 8-15 % in speed; a smaller band moves into rungs that are too slow on the next noisy block |
//! | `confirm` | 3 | three fresh blocks in a row: one block can be an outlier, and with N workers in flight a move costs N blocks to undo |
//! | `alpha_slow` / `alpha_fast` | 0.7 / 0.15 | act on slowness at once, on speed only when it repeats (the thesis' "decision thresholds") |
//! | `alpha_rung` | 0.3 | per-rung corrections and the ratio level average over ~3 blocks |
//! | `rung_memory` | 4096 attempts | easier or harder data moves every rung through the level; only a change of *shape* needs forgetting, and forgetting sooner makes the controller retry a rung it measured too slow every few dozen blocks (in the simulator with 256: 8 too-slow blocks in every 64) |
//! | `keep_threshold` | 0.97 | see above |
//! | `probe_after` | 1 | leaving probe mode is cheap (next compressible result), entering late costs a full attempt per block |
//! | `probe_interval_min` / `_max` | 4 / 10 blocks | about the measurement lag at first; the cap bounds the blocks missed after an incompressible stretch; a rung whose probe was futile (compressed, and probe mode was back within 16 blocks) waits longer, until the raw blocks in between carry 20x its cost beyond a raw block's link time (`PROBE_COST_SHARE` 0.05) |
//! | `probe_rungs` | lz4:1, zstd:1 | the cheap tests ZFS uses |
//! | `link_memory_bytes` | 32 MiB | a fraction of a second at 1GbE, a few ms at 10GbE: follows a changing link, averages a jittery one |
//! | `start` | zstd:1 (auto link) / aimed (fixed link) | see above |
//! | `block_size` | 1 MiB | the pipeline's default block; weights shorter blocks |

mod classed;
mod classify;
mod controller;
mod error;
mod hint;
mod ladder;
mod model;
pub mod mrc;
#[cfg(feature = "sim")]
pub mod sim;
mod strategy;
mod timeline;

pub use adz_format::{CodecSpec, FilterSpec, Filters};

pub use crate::classed::{s1_plan, ClassedController, S1Plan, MAX_CLASSES};
pub use crate::classify::{classify, entropy};
pub use crate::controller::{
    BlockContext, BlockMeasurement, Control, Controller, ControllerConfig, Decision, Mode, Reason,
    ShadowMeasurement, SinkMeasurement, Status, INITIAL_LEVEL, SHADOW_BYTES,
};
pub use crate::error::{Error, Result};
pub use crate::hint::{Dtype, Hint};
pub use crate::ladder::{entropy_coded, reference, Ladder, Reference};
pub use crate::strategy::{Link, Strategy};
pub use crate::timeline::{Schedule, Slot};
