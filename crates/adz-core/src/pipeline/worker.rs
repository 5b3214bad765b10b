//! A compression worker: takes a frame buffer, then the next job and the controller's decision
//! for it, compresses the block, tells the controller what it measured, and hands the frame to
//! the sequencer.

use std::sync::atomic::Ordering;
use std::time::Instant;

use adz_control::{BlockContext, BlockMeasurement, CodecSpec, Decision, ShadowMeasurement};
use crossbeam::channel::Sender;

use super::shared::{add_cpu, lock, BlockData, Done, Job, Shared};
use crate::error::PipelineError;
use crate::frame_codec::FrameEncoder;

/// A worker's own state: its codec contexts and its shadow frame buffer.
struct Worker {
    encoder: FrameEncoder,
    shadow_frame: Vec<u8>,
    /// Keep a compressed block only if it saves this share.
    keep: f64,
}

/// The worker thread's loop, until the queue closes or the pipeline fails.
pub(super) fn worker(shared: &Shared, done_tx: &Sender<Done>, keep: f64) {
    let mut w = Worker { encoder: FrameEncoder::new(), shadow_frame: Vec::new(), keep };
    loop {
        // A frame buffer first, then a job: see the module docs.
        let Ok(frame) = shared.take(&shared.frames) else { return };
        let Some((job, decision)) = next_job(shared) else {
            shared.frames.give(frame);
            return;
        };
        let Some(done) = w.compress(shared, job, decision, frame) else { return };
        if done_tx.send(done).is_err() {
            return;
        }
    }
}

/// The next job and the controller's decision for it; None once the queue is closed.
fn next_job(shared: &Shared) -> Option<(Job, Decision)> {
    let mut d = lock(&shared.dispatch);
    loop {
        if let Some(job) = d.queue.pop_front() {
            let ctx = BlockContext {
                raw_offset: job.raw_offset,
                raw_len: job.data.bytes().len(),
                hints: &job.hints,
                class: job.class,
            };
            let decision = d.controller.next_block(&ctx);
            return Some((job, decision));
        }
        if d.closed {
            return None;
        }
        d = shared.work.wait(d).unwrap_or_else(|e| e.into_inner());
    }
}

impl Worker {
    /// Compress `job` into `frame` as `decision` says, and account for it. None if it failed
    /// (the pipeline is failed then).
    fn compress(
        &mut self,
        shared: &Shared,
        job: Job,
        decision: Decision,
        mut frame: Vec<u8>,
    ) -> Option<Done> {
        let raw = job.data.bytes();
        let wall0 = Instant::now();
        let cpu0 = cpu_time::ThreadTime::now();
        let encoded = self.encoder.encode_at(
            raw,
            job.raw_offset,
            decision.codec,
            decision.filters,
            self.keep,
            &mut frame,
            0,
        );
        let cpu = cpu0.elapsed();
        let wall = wall0.elapsed();
        // After the block's own clock: the shadow's cost is reported on its own.
        let shadow =
            crate::shadow::measure(&mut self.encoder, &mut self.shadow_frame, raw, &decision);
        let raw_len = raw.len() as u64;
        let (header, payload_is_raw, mut frame_len) = match encoded {
            Ok(h) => h,
            Err(e) => {
                shared.fail(PipelineError::caused_by(
                    format!("compressing the block at raw offset {}", job.raw_offset),
                    e,
                ));
                return None;
            }
        };
        let raw_payload = raw_payload(shared, job.data, payload_is_raw, &mut frame, &mut frame_len);
        let measurement = BlockMeasurement {
            decision,
            raw_len,
            stored_len: u64::from(header.stored_len),
            stored_raw: header.stored_raw(),
            wall,
            cpu,
        };
        record(shared, &measurement, shadow.as_ref());
        Some(Done {
            seq: decision.seq,
            header,
            frame,
            frame_len,
            raw_payload,
            measurement,
            class: job.class,
        })
    }
}

/// The raw block to write after the frame's header when it is stored raw from a pool buffer
/// (no copy). A pool buffer not needed goes back; a raw slice of an asynchronous write is
/// copied into the frame, as the caller gets its buffer back once the block is compressed.
fn raw_payload(
    shared: &Shared,
    data: BlockData,
    payload_is_raw: bool,
    frame: &mut Vec<u8>,
    frame_len: &mut usize,
) -> Option<Vec<u8>> {
    match data {
        BlockData::Owned(buf) if payload_is_raw => Some(buf),
        BlockData::Owned(buf) => {
            shared.raw.give(buf);
            None
        }
        BlockData::Shared(s) => {
            if payload_is_raw {
                let data = &s.buf.as_ref().as_ref()[s.range.clone()];
                let end = *frame_len + data.len();
                if frame.len() < end {
                    frame.resize(end, 0);
                }
                frame[*frame_len..end].copy_from_slice(data);
                *frame_len = end;
            }
            drop(s);
            None
        }
    }
}

/// Tell the controller about the block (and its shadow), and count their CPU time.
fn record(shared: &Shared, m: &BlockMeasurement, shadow: Option<&ShadowMeasurement>) {
    {
        let mut d = lock(&shared.dispatch);
        if let Some(s) = shadow {
            d.controller.record_shadow(s);
        }
        d.controller.record_block(m);
    }
    if m.decision.codec != CodecSpec::NONE {
        add_cpu(&shared.block_ns, m.cpu);
    }
    if let Some(s) = shadow {
        add_cpu(&shared.cpu_ns, s.base_cpu + s.cpu);
        add_cpu(&shared.shadow_ns, s.base_cpu + s.cpu);
        shared.shadows.fetch_add(1, Ordering::Relaxed);
    }
    // The encode's CPU time, already measured: no second thread-clock read before the frame
    // goes on (`docs/decisions/0025-no-per-block-overhead-on-the-data-path.md`).
    add_cpu(&shared.cpu_ns, m.cpu);
}
