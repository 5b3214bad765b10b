//! The sequencer: writes the workers' frames to the upload in block order, tells the
//! controller what each write cost the sink, sizes the pools during a mix, and hands each
//! written frame to the observer (the trace), if any.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use adz_control::{SinkMeasurement, Status};
use adz_format::{FileHeader, TrailerBuilder};
use adz_store::Upload;
use crossbeam::channel::Receiver;

use super::shared::{count_cpu, lock, Done, Shared};
use super::trace::{BlockRecord, Observer};
use crate::error::PipelineError;
use crate::pool::MixBuffers;

/// What the sequencer hands back when it is done.
pub(super) struct Sequenced {
    pub(super) upload: Box<dyn Upload>,
    pub(super) trailer: TrailerBuilder,
    pub(super) file_offset: u64,
    pub(super) configs: BTreeMap<String, u64>,
    pub(super) sink_busy: Duration,
}

/// The sequencer's state between frames.
struct Sequencer<'a> {
    shared: &'a Shared,
    out: Sequenced,
    /// A write failed: the frames still coming are only released.
    failed: bool,
    /// Frames finished ahead of `next`.
    waiting: BTreeMap<u64, Done>,
    next: u64,
    /// Was the next frame already waiting when the last append finished? Then its append
    /// starts at once and its time is pure sink time (see `SinkMeasurement::backlogged`).
    backlogged: bool,
    /// When the last append ended (None before the first frame: its wait is the write's
    /// start-up, not the pipeline's pace).
    last_end: Option<Instant>,
    /// The sequencer's own CPU time is counted from here.
    cpu_mark: Option<cpu_time::ThreadTime>,
    /// The process's CPU time is counted from here (see `SinkMeasurement::cpu`).
    process_mark: Option<cpu_time::ProcessTime>,
    mix_buffers: MixBuffers,
    observer: Option<Box<dyn Observer>>,
    /// When the writer was created.
    started: Instant,
    /// The upload's network transfers since the last write (S3 parts), for the controller.
    transfers: Vec<adz_store::Transfer>,
}

/// The sequencer thread: the file header, then every frame from `done_rx` in order. `grow`:
/// the pools may grow during a mix.
pub(super) fn sequencer(
    shared: &Shared,
    upload: Box<dyn Upload>,
    header: FileHeader,
    done_rx: Receiver<Done>,
    grow: bool,
    observer: Option<Box<dyn Observer>>,
    started: Instant,
) -> Option<Sequenced> {
    let out = Sequenced {
        upload,
        trailer: TrailerBuilder::new(),
        file_offset: 0,
        configs: BTreeMap::new(),
        sink_busy: Duration::ZERO,
    };
    let mut s = Sequencer {
        shared,
        out,
        failed: false,
        waiting: BTreeMap::new(),
        next: 0,
        backlogged: false,
        last_end: None,
        cpu_mark: None,
        process_mark: None,
        mix_buffers: MixBuffers::new(grow),
        observer,
        started,
        transfers: Vec::new(),
    };
    s.write_header(&header);
    for done in done_rx.iter() {
        s.waiting.insert(done.seq, done);
        while let Some(d) = s.waiting.remove(&s.next) {
            s.next += 1;
            s.write(d, &done_rx);
        }
    }
    if !s.waiting.is_empty() && !s.failed {
        shared.fail(format!("block {} never arrived", s.next));
    }
    if let Some(o) = s.observer.take() {
        o.finish();
    }
    Some(s.out)
}

impl Sequencer<'_> {
    fn write_header(&mut self, header: &FileHeader) {
        let head = header.encode();
        let t0 = Instant::now();
        if let Err(e) = self.out.upload.append(&head) {
            self.shared.fail(PipelineError::caused_by("writing the file header", e));
            self.failed = true;
        }
        self.out.sink_busy = t0.elapsed();
        self.out.file_offset = head.len() as u64;
        self.cpu_mark = cpu_time::ThreadTime::try_now().ok();
        self.process_mark = cpu_time::ProcessTime::try_now().ok();
    }

    /// Write frame `d` (the next in order), account for it and let its buffers go.
    fn write(&mut self, d: Done, done_rx: &Receiver<Done>) {
        if self.failed {
            self.release(d);
            return;
        }
        let t0 = Instant::now();
        let upload = &mut self.out.upload;
        let written = upload.append(&d.frame[..d.frame_len]).and_then(|()| match &d.raw_payload {
            Some(raw) => upload.append(raw),
            None => Ok(()),
        });
        if let Err(e) = written {
            self.shared.fail(PipelineError::caused_by(format!("writing frame {}", d.seq), e));
            self.failed = true;
            self.release(d);
            return;
        }
        let end = Instant::now();
        let busy = end - t0;
        let waited = self.last_end.map_or(Duration::ZERO, |e| t0.saturating_duration_since(e));
        self.last_end = Some(end);
        count_cpu(&self.shared.cpu_ns, &mut self.cpu_mark);
        let pipeline_cpu = Duration::from_nanos(self.shared.cpu_ns.swap(0, Ordering::Relaxed));
        // The whole process's CPU time: an application computing while the write goes on
        // shares the cores with the pipeline (decision 0062). The pipeline's threads alone
        // where the process clock cannot be read.
        let now = cpu_time::ProcessTime::try_now().ok();
        let cpu = match (now, self.process_mark) {
            (Some(now), Some(then)) => now.as_duration().saturating_sub(then.as_duration()),
            _ => pipeline_cpu,
        };
        if now.is_some() {
            self.process_mark = now;
        }
        let this_backlogged = self.backlogged;
        while let Ok(more) = done_rx.try_recv() {
            self.waiting.insert(more.seq, more);
        }
        self.backlogged = self.waiting.contains_key(&self.next);
        self.out.sink_busy += busy;
        let frame_len = d.header.frame_len();
        self.account(&d);
        let sink = SinkMeasurement {
            bytes: frame_len,
            busy,
            backlogged: this_backlogged,
            raw: u64::from(d.header.raw_len),
            waited,
            cpu,
        };
        // An upload that times its network transfers tells the link better than its buffer.
        let timed = self.out.upload.take_transfers(&mut self.transfers);
        let parts: Vec<_> = self.transfers.drain(..).map(|t| (t.bytes, t.link_time())).collect();
        let (status, mixing) = {
            let mut dsp = lock(&self.shared.dispatch);
            if timed {
                dsp.controller.record_transfers(&parts);
            }
            dsp.controller.record_sink(&sink);
            (dsp.controller.status_of(d.class), dsp.controller.compresses_in_mix_of(d.class))
        };
        let pools = [&self.shared.raw, &self.shared.frames];
        self.mix_buffers.update(pools, mixing);
        if let Some(o) = &mut self.observer {
            o.block(&record(&d, &status, &sink, self.started.elapsed()));
        }
        self.release(d);
    }

    /// The frame is in the file: the trailer, the summary's counts and the progress.
    fn account(&mut self, d: &Done) {
        let out = &mut self.out;
        out.trailer.push(&d.header, out.file_offset);
        out.file_offset += d.header.frame_len();
        *out.configs.entry(d.header.describe()).or_default() += 1;
        self.shared.raw_written.fetch_add(u64::from(d.header.raw_len), Ordering::Relaxed);
        self.shared.stored_written.store(out.file_offset, Ordering::Relaxed);
    }

    /// Give the frame's buffers back to their pools.
    fn release(&self, d: Done) {
        self.shared.frames.give(d.frame);
        if let Some(raw) = d.raw_payload {
            self.shared.raw.give(raw);
        }
    }
}

/// The observer's record of frame `d`, written `at` after the writer was created.
fn record(d: &Done, status: &Status, sink: &SinkMeasurement, at: Duration) -> BlockRecord {
    BlockRecord {
        seq: d.seq,
        header: d.header,
        measurement: d.measurement,
        class: d.class,
        agg_speed: status.speed,
        target: status.target,
        link: status.link,
        link_interval: super::writer::settled_interval(status),
        shadow_share: status.shadow_share,
        sink: sink.busy,
        pipeline_cpu: sink.cpu,
        backlogged: sink.backlogged,
        at,
        core_watts: status.strategy.energy().map(|c| c.core_watts),
    }
}
