//! The adaptive write pipeline (thesis 3.2 and 4.1): the application's bytes are cut into
//! blocks, N workers compress them with the codec the controller picks for each block, and a
//! sequencer writes the frames in order to a storage upload.
//!
//! ```text
//!  write / write_from / write_async ─► cutter ─► job queue ─► workers (N) ─► sequencer ─► Upload
//!                                                  ▲   decisions  │ measurements │ sink times
//!                                                  └── Controller ◄──────────────┘
//! ```
//!
//! Memory is bounded by two pools of `buffers` buffers each: raw blocks (filled by `write` and
//! `write_from`; `write_async` needs none, its blocks are slices of the caller's buffer) and
//! frames (a worker takes one before it takes a job, and the sequencer gives it back once the
//! frame is written). Because a worker holds a frame buffer before it pops a job, and jobs are
//! popped in order, the job the sequencer waits for is always in the hands of a worker that can
//! finish it: the pools cannot deadlock.
//!
//! While an adaptive strategy mixes raw blocks with a minority of compressed ones, the
//! sequencer adds `MIX_BUFFERS` (4) to each pool and takes them back once the mix ends, so the
//! raw frames finished behind a slow compressed one can wait and the link does not idle
//! (`docs/decisions/0014-buffers-during-a-mix.md`). Memory stays bounded by
//! `buffers + MIX_BUFFERS` per pool.
//!
//! The rooms: `options` and `writer` (the application's side; its write calls in `cutter`,
//! its finish, abort and drop in `finish`), `handle` (of an asynchronous write), `start` (the
//! predicted start), `worker`, `sequencer`, `trace` (an observer of the written frames, off
//! the sequencer's path) and `shared` (what the threads share); the pools are in
//! `crate::pool`, which the predictor's write model uses too.

mod cutter;
mod finish;
mod handle;
mod options;
mod sequencer;
mod shared;
mod start;
mod trace;
mod worker;
mod writer;

pub use crate::summary::WriteSummary;
pub use finish::Abandoned;
pub use handle::WriteHandle;
pub use options::{Predict, WriteOptions, MAX_BUFFERS, MAX_THREADS};
pub use trace::{TraceRecord, TraceSink};
pub use writer::{Progress, Writer};

/// Options of a one-thread static zstd:1 write of `block_size` blocks, for the rooms' tests.
#[cfg(test)]
fn static_opts(block_size: u32) -> WriteOptions {
    WriteOptions {
        strategy: adz_control::Strategy::Static("zstd:1".parse().unwrap()),
        threads: 1,
        block_size,
        ..Default::default()
    }
}
