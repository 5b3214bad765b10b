//! The writer's options and the limits they are checked against.

use adz_control::{Hint, Link, Priors, Strategy};
use adz_format::FileHeader;

use super::trace::TraceSink;
use crate::error::{Error, Result};
use crate::pool::{default_buffers, MIX_BUFFERS};
use crate::stream::DEFAULT_BLOCK_SIZE;

/// How a [`Writer`](crate::Writer) works.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// What the controller aims for.
    pub strategy: Strategy,
    /// The link speed: measured from the sink (`Auto`) or given.
    pub link: Link,
    /// Compression threads; 0 = one per core.
    pub threads: usize,
    /// Raw bytes per block.
    pub block_size: u32,
    /// Buffers in each pool; 0 = 2 × threads + 2 (the thesis' minimum is 2 × threads, so the
    /// workers can run two pipeline cycles ahead of the sink), and 4 more while an adaptive
    /// strategy mixes raw blocks with a minority (at most half) of compressed ones. A number
    /// given here is kept as given.
    pub buffers: usize,
    /// Hints for the whole file (`write-once`, `hot`, `dtype=...`).
    pub hints: Vec<Hint>,
    /// Where to write one JSON line per block (see [`TraceRecord`](crate::TraceRecord)).
    pub trace: Option<TraceSink>,
    /// Predict the controller's start rung from a sample before the first block is
    /// compressed (adaptive strategies only; see [`crate::predict`]). Default `Auto`.
    pub predict: Predict,
    /// The write's size, if known (a file's length): the sample's budget is 2 % of it.
    /// Without it, the budget is 2 % of the blocks held for the prediction.
    pub size_hint: Option<u64>,
    /// With `link: Auto`, a guess of the link (bytes/s) for the prediction; the controller
    /// still measures the link. None: the prediction picks the start with the least regret
    /// over links from 25 MB/s to 12 GB/s, or up to what the upload can carry where it says
    /// (`Upload::rate_ceiling`: an S3 upload's parts in flight; decision 0060).
    pub link_guess: Option<f64>,
    /// Each rung's prior speed and ratio, for the controller and the prediction: the
    /// built-in reference table (the default), or one measured on this machine by `adz
    /// profile` (`adz_tier::profile::Profile::priors`).
    pub priors: Priors,
}

/// The most compression threads a writer starts ([`WriteOptions::threads`]): far more than
/// any machine adz runs on has cores, and few enough that their stacks and codec states fit.
pub const MAX_THREADS: usize = 1024;

/// The most buffers per pool ([`WriteOptions::buffers`]). Each pool preallocates a slot per
/// buffer, so a huge count costs memory before any block is read.
pub const MAX_BUFFERS: usize = 1 << 16;

impl WriteOptions {
    /// Threads and buffers per pool the writer uses (0 resolved), and the buffers a pool may
    /// add during a mix.
    pub(super) fn resolved(&self) -> (usize, usize, usize) {
        let threads = if self.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.threads
        };
        let buffers =
            if self.buffers == 0 { default_buffers(threads) } else { self.buffers.max(2) };
        let room = if self.buffers == 0 && self.strategy.is_adaptive() { MIX_BUFFERS } else { 0 };
        (threads, buffers, room)
    }

    /// The most memory the writer's buffers take, in bytes: two pools (raw blocks and
    /// frames) of `buffers` (+ `MIX_BUFFERS`, 4, during a mix) buffers, each a block (a frame
    /// buffer a little more: a frame's header, and what a codec may write past the block
    /// before it is stored raw). Codec state (per thread) comes on top.
    pub fn buffer_memory(&self) -> u64 {
        let (_, buffers, room) = self.resolved();
        let block = u64::from(self.block_size);
        let per_pair = 2 * block + block / 128 + 4096;
        (buffers + room) as u64 * per_pair
    }

    /// Check the options against adz's limits ([`MAX_THREADS`], [`MAX_BUFFERS`], a block
    /// size of 1 byte ..= 64 MiB) and the buffers' memory ([`buffer_memory`]) against what
    /// the machine has available (Linux: `MemAvailable`, and the cgroup's limit); a
    /// [`Writer`](crate::Writer) does this before it creates anything. [`Error::Limit`] or
    /// [`Error::Config`] if they cannot work.
    ///
    /// [`buffer_memory`]: WriteOptions::buffer_memory
    pub fn check(&self) -> Result<()> {
        FileHeader::new(self.block_size)?;
        if self.threads > MAX_THREADS {
            return Err(Error::Limit {
                option: "threads",
                value: self.threads as u64,
                why: format!("at most {MAX_THREADS}"),
            });
        }
        if self.buffers > MAX_BUFFERS {
            return Err(Error::Limit {
                option: "buffers",
                value: self.buffers as u64,
                why: format!("at most {MAX_BUFFERS} per pool"),
            });
        }
        let need = self.buffer_memory();
        if let Some(avail) = available_memory() {
            if need > avail {
                let (threads, buffers, _) = self.resolved();
                let (option, value) = if self.buffers != 0 {
                    ("buffers", buffers as u64)
                } else {
                    ("threads", threads as u64)
                };
                return Err(Error::Limit {
                    option,
                    value,
                    why: format!(
                        "{buffers} buffers per pool of {} byte blocks need up to {} MB, more than the {} MB of memory available; give fewer threads or buffers, or smaller blocks",
                        self.block_size,
                        need / 1_000_000,
                        avail / 1_000_000
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Memory this process can still take, in bytes, if the system says: `MemAvailable` of
/// `/proc/meminfo`, lowered to what the cgroup (v2) allows beyond its current use.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let mut avail = kb.saturating_mul(1024);
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{f}"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    if let (Some(max), Some(cur)) = (read("memory.max"), read("memory.current")) {
        avail = avail.min(max.saturating_sub(cur));
    }
    Some(avail)
}

/// Whether a [`Writer`](crate::Writer) predicts its start ([`WriteOptions::predict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Predict {
    /// Hold the first blocks (up to `buffers - 1`, at most 8) until a sample of them, or one
    /// given with [`Writer::predict_from`](crate::Writer::predict_from), has been predicted;
    /// start the controller there.
    #[default]
    Auto,
    /// No prediction: the controller's own start.
    Off,
}

impl Default for WriteOptions {
    fn default() -> WriteOptions {
        WriteOptions {
            strategy: Strategy::Throughput,
            link: Link::Auto,
            threads: 0,
            block_size: DEFAULT_BLOCK_SIZE,
            buffers: 0,
            hints: Vec::new(),
            trace: None,
            predict: Predict::Auto,
            size_hint: None,
            link_guess: None,
            priors: Priors::builtin(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::static_opts;
    use crate::Writer;

    #[test]
    fn options_out_of_range_are_refused_before_anything_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let store = adz_store::LocalStorage::new(dir.path()).unwrap();
        let cases = [
            (WriteOptions { threads: MAX_THREADS + 1, ..static_opts(4096) }, "threads"),
            (WriteOptions { buffers: MAX_BUFFERS + 1, ..static_opts(4096) }, "buffers"),
            (WriteOptions { buffers: 60_000, ..static_opts(64 << 20) }, "buffers"),
        ];
        for (opts, what) in cases {
            let e = Writer::create(&store, "x.adz", opts).unwrap_err();
            assert!(matches!(e, Error::Limit { option, .. } if option == what), "{e}");
        }
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        let e = WriteOptions { buffers: 60_000, ..static_opts(64 << 20) }.check().unwrap_err();
        assert!(e.to_string().contains("memory available"), "{e}");
        assert!(WriteOptions { threads: MAX_THREADS, ..static_opts(4096) }.check().is_ok());
        let default = WriteOptions::default();
        assert!(default.buffer_memory() >= 2 * 6 * u64::from(DEFAULT_BLOCK_SIZE));
    }
}
