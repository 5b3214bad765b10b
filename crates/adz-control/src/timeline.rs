//! The pipeline's timing, block by block ([`Schedule`]): shared by the simulator and by
//! adz-core's predictor, which times its estimate of a write with it.

/// The pipeline's timing, block by block: the earliest free of N workers takes the next block once
/// a buffer is free (at most `buffers` blocks between a worker taking a block and its frame
/// written), and the link writes the frames in order, each after the one before. The simulator
/// (`sim::SimConfig::run`) times its blocks with it, and adz-core's predictor its write along the
/// kinds of data; so both take the same pipeline.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// When each worker is free.
    workers: Vec<f64>,
    buffers: usize,
    /// Write ends of the last `buffers` blocks, oldest first.
    ends: std::collections::VecDeque<f64>,
    last_end: f64,
    /// The worker that [`Schedule::start`] gave the next block.
    taken: usize,
    started: f64,
}

/// When one block ran, from [`Schedule::finish`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// Its worker took it.
    pub start: f64,
    /// Its worker finished it.
    pub finish: f64,
    /// The link was free before it: the previous frame's write end (0 for the first).
    pub prev_end: f64,
    /// Its frame was written, from `max(finish, prev_end)`.
    pub write_end: f64,
}

impl Schedule {
    /// `threads` workers (at least 1) and `buffers` blocks in flight (at least 1).
    pub fn new(threads: usize, buffers: usize) -> Schedule {
        let buffers = buffers.max(1);
        Schedule {
            workers: vec![0.0; threads.max(1)],
            buffers,
            ends: std::collections::VecDeque::with_capacity(buffers),
            last_end: 0.0,
            taken: 0,
            started: 0.0,
        }
    }

    /// When the next block starts, not before `ready`: its earliest free worker, once the
    /// block `buffers` before it has been written.
    pub fn start(&mut self, ready: f64) -> f64 {
        let (w, free) = self
            .workers
            .iter()
            .copied()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("at least one worker");
        let room = if self.ends.len() >= self.buffers { self.ends[0] } else { 0.0 };
        self.taken = w;
        self.started = free.max(room).max(ready);
        self.started
    }

    /// The block [`Schedule::start`] started takes `work` seconds on its worker and `send`
    /// seconds on the link.
    pub fn finish(&mut self, work: f64, send: f64) -> Slot {
        let finish = self.started + work;
        self.workers[self.taken] = finish;
        let prev_end = self.last_end;
        let write_end = finish.max(prev_end) + send;
        self.last_end = write_end;
        if self.ends.len() >= self.buffers {
            self.ends.pop_front();
        }
        self.ends.push_back(write_end);
        Slot { start: self.started, finish, prev_end, write_end }
    }

    /// When the last frame so far was written.
    pub fn end(&self) -> f64 {
        self.last_end
    }
}
