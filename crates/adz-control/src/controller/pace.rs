//! The pace of the pipeline: the link estimate, the sink's account of how fast raw blocks move
//! (the pipe window), the pipeline's CPU time, and the workers' wall/CPU ratio (the stretch).

use super::{Controller, SinkMeasurement};

/// What the sink saw of the pipeline's pace, smoothed over the last few writes (each sum
/// decays with a half-life of [`PIPE_HALFLIFE`] raw bytes): the elapsed time of the writes
/// (waited + busy), their raw bytes, the raw bytes of the frames stored raw, the bytes sent,
/// and the worker time (thread-seconds) spent on compression attempts.
#[derive(Clone, Debug, Default)]
pub(super) struct PipeWindow {
    pub(super) writes: u64,
    pub(super) elapsed: f64,
    pub(super) raw: f64,
    pub(super) raw_stored_raw: f64,
    pub(super) sent: f64,
    pub(super) work: f64,
    /// The pipeline's CPU seconds (all its threads) and the workers' CPU seconds on compression
    /// attempts, over the same writes (zero while the sink does not report CPU time).
    pub(super) cpu: f64,
    pub(super) cpu_work: f64,
    /// Aggregate raw bytes/s at which the pipeline moves raw blocks, all its costs included
    /// (None until the sink has shown it).
    pub(super) raw_speed: Option<f64>,
}

/// Half-life of the sink's account of the pipeline's pace, raw bytes (16 blocks of 1 MiB).
pub(super) const PIPE_HALFLIFE: f64 = 16.0 * 1048576.0;

/// Writes before the sink's account of the pipeline's pace is used: the first ones wait for
/// the write's start (prediction, the first blocks).
pub(super) const PIPE_MIN_WRITES: u64 = 8;

/// The link counts as the bottleneck when it was busy at least this share of the writes'
/// elapsed time (its bytes at the link's speed): then the elapsed time is the link's and
/// says only that the pipeline was at least that fast.
pub(super) const PIPE_LINK_BOUND: f64 = 0.9;

/// The pipeline's CPU time tells the raw path's cost only while what compression does not
/// explain is at least this share of it (below, it is the noise of two clocks).
pub(super) const CPU_PATH_MIN: f64 = 0.05;

/// The mix counts a raw block at the pipeline's raw speed the sink saw only while that is
/// below this many times the link (see [`Controller::mix_fraction`]).
pub(super) const PIPE_TRUSTED: f64 = 1.25;

/// The most one block's wall/CPU ratio may exceed the usual one in the smoothed ratio.
pub(super) const STRETCH_CLIP: f64 = 1.5;

/// Weight of one block in the smoothed wall/CPU ratio (about the last 10 blocks).
pub(super) const STRETCH_RATE: f64 = 0.1;

/// Weight of one sink write in the smoothed share of backlogged writes (about 16 writes).
pub(super) const BACKLOG_WEIGHT: f64 = 1.0 / 16.0;
/// At or below this share of backlogged writes the sink is starved: no compressed blocks in a
/// mix of raw and compressed.
pub(super) const BACKLOG_STARVED: f64 = 0.2;
/// At or above this share the link is the bottleneck: the mix formula applies in full.
pub(super) const BACKLOG_BUSY: f64 = 0.5;

impl Controller {
    /// What the sink measured: bytes written and time spent writing them.
    pub fn record_sink(&mut self, m: &SinkMeasurement) {
        let busy = m.busy.as_secs_f64();
        let waited = m.waited.as_secs_f64();
        self.link.add(m.bytes, busy, waited, m.backlogged);
        let x = if m.backlogged { 1.0 } else { 0.0 };
        // A frame the sink waited for longer than the link takes to send it is strong
        // evidence that the pipeline, not the link, sets the pace: it weighs four writes.
        let link = self.link();
        let strong = !m.backlogged && link.is_some_and(|l| waited * l > m.bytes as f64);
        let w = if strong { 4.0 * BACKLOG_WEIGHT } else { BACKLOG_WEIGHT };
        // Not while the pipeline fills (2 frames per worker find the sink idle whatever the
        // link); after it, from a neutral start where the mix applies in full (decision 0011).
        self.sink_writes += 1;
        if self.sink_writes > 2 * self.cfg.threads.max(1) as u64 {
            let b = self.sink_backlog.unwrap_or(BACKLOG_BUSY);
            self.sink_backlog = Some(b + w * (x - b));
        }
        self.track_schedule(m.raw, busy + waited);
        self.record_pace(m, busy + waited, link);
    }

    /// Compression work (thread-seconds) the pipeline spent: told by [`Controller::record_block`]
    /// for this controller's blocks, and by a [`ClassedController`](crate::ClassedController)
    /// for the other classes' (the pipeline's pace is the write's, not one class's).
    /// `secs` is the work as the pipeline gets it (CPU time times the workers' wall/CPU
    /// ratio), `cpu` the workers' CPU time alone.
    pub(crate) fn note_work(&mut self, secs: f64, cpu: f64) {
        if secs.is_finite() && secs > 0.0 {
            self.pipe.work += secs;
        }
        if cpu.is_finite() && cpu > 0.0 {
            self.pipe.cpu_work += cpu;
        }
    }

    /// The sink's account of the pipeline's pace. Over the last few writes, the elapsed time
    /// `E` is the link's (it was busy nearly all of it) or the CPU's: compression took `W / N`
    /// of it (worker time over the workers) and moving the raw frames the rest, so the
    /// pipeline moves raw blocks at `X / (E - W / N)` (`X` their raw bytes): on few cores far
    /// below the workers' checksum speed (decision 0010). While the link is the bottleneck the
    /// figure is only a lower bound, and only raises the estimate.
    pub(super) fn record_pace(&mut self, m: &SinkMeasurement, elapsed: f64, link: Option<f64>) {
        if m.raw == 0 || !elapsed.is_finite() {
            return;
        }
        let p = &mut self.pipe;
        let raw = m.raw as f64;
        let keep = 0.5f64.powf(raw / PIPE_HALFLIFE);
        p.elapsed = p.elapsed * keep + elapsed;
        p.raw = p.raw * keep + raw;
        p.raw_stored_raw = p.raw_stored_raw * keep + if m.bytes >= m.raw { raw } else { 0.0 };
        p.sent = p.sent * keep + m.bytes as f64;
        p.work *= keep;
        p.cpu = p.cpu * keep + m.cpu.as_secs_f64();
        p.cpu_work *= keep;
        p.writes += 1;
        let Some(link) = link else { return };
        if p.writes < PIPE_MIN_WRITES || p.elapsed <= 0.0 {
            return;
        }
        // Frames stored raw must make a fair share of the window, else their cost is noise.
        if p.raw_stored_raw < 0.25 * p.raw {
            return;
        }
        let moving = p.elapsed - p.work / self.cfg.threads.max(1) as f64;
        if moving <= 0.05 * p.elapsed {
            // Compression alone explains the time: nothing is left to measure the raw path.
            return;
        }
        let speed = p.raw_stored_raw / moving;
        let link_bound = p.sent / link >= PIPE_LINK_BOUND * p.elapsed;
        // While the link is the bottleneck the sink's clock says only that the pipeline was at
        // least that fast. The pipeline's CPU time says how much faster it could be: moving
        // the raw bytes cost `cpu - cpu_work` CPU seconds, so with `cpus` CPUs it could move
        // them at `cpus X / (cpu - cpu_work)` (X all raw bytes: every frame takes that path;
        // decision 0012).
        let by_cpu = self.cpu_raw_speed();
        let p = &mut self.pipe;
        p.raw_speed = match (p.raw_speed, by_cpu) {
            (v, Some(c)) if link_bound => Some(v.unwrap_or(0.0).max(speed).max(c)),
            (Some(v), None) if link_bound => Some(v.max(speed)),
            (None, None) if link_bound => None,
            _ => Some(speed),
        };
    }

    /// The speed at which the pipeline's CPUs could move raw blocks, from the CPU time the
    /// sink reports (None without it, or while compression explains nearly all of it).
    pub(super) fn cpu_raw_speed(&self) -> Option<f64> {
        self.cpu_path_cost().map(|c| self.cpus() / c)
    }

    /// CPU seconds the pipeline spends per raw byte besides compression (the raw path), from
    /// the CPU time the sink reports; before [`PIPE_MIN_WRITES`] writes, the cost measured
    /// before the write if there is one ([`Controller::set_path_cost`]); None without either,
    /// or while compression explains nearly all of it.
    pub(super) fn cpu_path_cost(&self) -> Option<f64> {
        let p = &self.pipe;
        if p.writes < PIPE_MIN_WRITES {
            return self.path_prior;
        }
        let path = p.cpu - p.cpu_work;
        if p.cpu <= 0.0 || path <= CPU_PATH_MIN * p.cpu {
            return None;
        }
        (p.raw > 0.0).then(|| path / p.raw)
    }

    /// The speed at which the pipeline can move raw blocks, raw bytes/s: the least of what
    /// its CPUs can ([`Controller::cpu_path_cost`]), what the sink saw
    /// ([`Controller::pipeline_raw_speed`]) and, before the pipeline has measured itself, what
    /// its one-thread stages can ([`Controller::set_path_cost`]); the CPUs' figure alone misses
    /// a one-thread stage (decision 0017). None before any is known.
    pub(super) fn raw_path_speed(&self) -> Option<f64> {
        let cpu = self.cpu_path_cost().map(|c| self.cpus() / c);
        let serial = self.serial_prior.filter(|_| self.pipe.writes < PIPE_MIN_WRITES);
        [cpu, serial.map(|s| 1.0 / s), self.pipe.raw_speed].into_iter().flatten().reduce(f64::min)
    }

    /// Whether the raw path alone is slower than the strategy's target for raw data (S1 and
    /// S2: the link; S3: link / F): then every compressed block only slows the write, and a
    /// probe can find nothing the strategy would use.
    pub(super) fn raw_path_too_slow(&self) -> bool {
        match (self.link(), self.raw_path_speed()) {
            (Some(link), Some(v)) => v < self.cfg.strategy.target_speed(link, 1.0),
            _ => false,
        }
    }

    /// CPUs the pipeline may use ([`ControllerConfig::cpus`](crate::ControllerConfig::cpus), else
    /// the workers).
    pub(super) fn cpus(&self) -> f64 {
        if self.cfg.cpus == 0 {
            self.threads
        } else {
            self.cfg.cpus as f64
        }
    }

    /// A rung's compression speed per worker in CPU time: the model's speed is the pipeline's
    /// (CPU time times the workers' usual wall/CPU ratio), so this undoes that ratio.
    pub(super) fn cpu_speed(&self, rung: usize) -> f64 {
        self.model.speed(rung, self.clock) * self.stretch.unwrap_or(1.0)
    }

    /// Compression work in this controller's account of the pipeline's pace (see
    /// [`Controller::note_work`]).
    pub(crate) fn pipe_work(&self) -> (f64, f64) {
        (self.pipe.work, self.pipe.cpu_work)
    }

    /// Aggregate raw bytes/s at which the whole pipeline moves raw blocks, as the sink saw it
    /// (None until it has shown that the pipeline, not the link, set the pace).
    pub fn pipeline_raw_speed(&self) -> Option<f64> {
        self.pipe.raw_speed
    }

    /// The workers' smoothed wall/CPU ratio (None before the first measurement with both).
    pub(crate) fn stretch(&self) -> Option<f64> {
        self.stretch
    }

    /// Take the workers' wall/CPU ratio measured elsewhere (by the other classes' controllers
    /// of the same write: it is the machine's, not the data's).
    pub(crate) fn set_stretch(&mut self, stretch: Option<f64>) {
        if stretch.is_some() {
            self.stretch = stretch;
        }
    }

    /// A block's time as the pipeline gets it: its CPU time times the workers' usual wall/CPU
    /// ratio (wall time alone until that is known, or without CPU times), not its own wall
    /// time, which on a busy machine says more about when its worker got a core than about
    /// the data (decision 0002).
    pub(super) fn block_secs(&self, wall: f64, cpu: f64) -> f64 {
        match self.stretch {
            Some(stretch) if cpu > 0.0 => cpu * stretch,
            // The first block with both times: no usual ratio yet. An idle machine's (1) is the
            // prior, and the block counts as at most STRETCH_CLIP times it, as any block does.
            None if cpu > 0.0 && wall > 0.0 => cpu * (wall / cpu).clamp(1.0, STRETCH_CLIP),
            _ if wall > 0.0 => wall,
            _ => cpu,
        }
    }

    /// Moves the smoothed wall/CPU ratio by one block's: the mean, not the harmonic mean (the
    /// pipeline's throughput is set by the mean time per block), each block counted as at
    /// most STRETCH_CLIP times the usual ratio, so that one descheduled block does not make
    /// every later one look slow.
    pub(super) fn update_stretch(&mut self, wall: f64, cpu: f64) {
        let x = (wall / cpu).clamp(1.0, 1e3);
        self.stretch = Some(match self.stretch {
            None => x.min(STRETCH_CLIP),
            Some(v) => v + STRETCH_RATE * (x.min(v * STRETCH_CLIP) - v),
        });
    }
}
