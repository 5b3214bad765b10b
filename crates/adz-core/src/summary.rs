//! What a write did: shared by the pipeline's [`Writer`](crate::Writer) and the plain
//! [`FrameWriter`](crate::FrameWriter), in a module of its own so neither imports the other.

use std::collections::BTreeMap;

use serde::Serialize;

/// What a write did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WriteSummary {
    /// Raw bytes written by the application.
    pub raw_bytes: u64,
    /// Bytes of the adz file, headers and trailer included.
    pub stored_bytes: u64,
    /// Number of frames.
    pub frames: u64,
    /// Frames per configuration (`zstd:3`, `zstd:3 (stored raw)`, `none (stored raw)`, ...).
    pub configs: BTreeMap<String, u64>,
    /// Wall time from creation to the commit, seconds.
    pub seconds: f64,
    /// The link speed the controller used at the end (given, or measured), bytes/s.
    pub link: Option<f64>,
    /// The measured link's 95 % interval (low, high), bytes/s, once the sink had blocked often
    /// enough for its drain rate to be known (`adz_control::LinkEstimate`, decision 0033);
    /// None with a given link, or while the figure is not settled: the rate the output accepted
    /// data at, which a buffer (a pipe, TCP, the page cache) inflates, or a drain rate whose
    /// segments still disagree (a reader that drains in bursts).
    pub link_interval: Option<(f64, f64)>,
    /// Time the sink was busy, seconds.
    pub sink_seconds: f64,
    /// The strategy.
    pub strategy: String,
    /// Bytes the predictor compressed to choose the start (0: no prediction).
    pub predict_bytes: u64,
    /// The start the predictor chose (`none`: raw), if it ran.
    pub predict_start: Option<String>,
    /// Shadow measurements made (slices compressed with a second rung for the controller to
    /// learn; `adz_control::Decision::shadow`).
    pub shadows: u64,
    /// Their CPU time over the CPU time of the blocks' own compression.
    pub shadow_share: f64,
}

impl WriteSummary {
    /// Raw bytes per stored byte.
    pub fn ratio(&self) -> f64 {
        if self.raw_bytes == 0 {
            1.0
        } else {
            self.raw_bytes as f64 / self.stored_bytes.max(1) as f64
        }
    }

    /// Raw bytes per second of wall time.
    pub fn speed(&self) -> f64 {
        self.raw_bytes as f64 / self.seconds.max(1e-9)
    }

    /// How much faster than sending the raw bytes through the same link (None if the link is
    /// unknown).
    pub fn speedup(&self) -> Option<f64> {
        self.link.map(|l| (self.raw_bytes as f64 / l) / self.seconds.max(1e-9))
    }
}
