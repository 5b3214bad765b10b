//! The write's trace (`WriteOptions::trace`): one JSON line per block. The sequencer hands
//! each written frame's figures to an [`Observer`] as a plain [`BlockRecord`]; the trace
//! observer formats and writes them on a thread of its own, off the sequencer's path.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use adz_control::BlockMeasurement;
use adz_format::FrameHeader;
use crossbeam::channel::{bounded, Receiver, Sender};
use serde::Serialize;

use super::shared::lock;

/// Where trace lines go: any writer, shared with the thread that writes the trace.
#[derive(Clone)]
pub struct TraceSink(Arc<Mutex<dyn Write + Send>>);

impl TraceSink {
    /// Trace to `w`.
    pub fn new(w: impl Write + Send + 'static) -> TraceSink {
        TraceSink(Arc::new(Mutex::new(w)))
    }

    /// Flush the writer.
    pub fn flush(&self) -> std::io::Result<()> {
        lock(&self.0).flush()
    }
}

impl std::fmt::Debug for TraceSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceSink")
    }
}

/// One line of `--trace`: what happened to one block.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRecord {
    /// Block number.
    pub seq: u64,
    /// Raw offset.
    pub offset: u64,
    /// Raw bytes.
    pub raw: u64,
    /// Payload bytes stored.
    pub stored: u64,
    /// Codec and filters chosen (`zstd:3`, `lz4:1 shuffle:8`, `none`).
    pub config: String,
    /// Why the controller chose it.
    pub reason: String,
    /// The block's data class (see `adz_control::classify`); each class has its own
    /// controller, whose estimates the `*_mbs` fields are.
    pub class: u8,
    /// Compression did not pay: stored raw.
    pub stored_raw: bool,
    /// Wall time the worker spent, seconds.
    pub wall_s: f64,
    /// CPU time the worker spent, seconds.
    pub cpu_s: f64,
    /// This block's compression speed on one thread, raw MB/s.
    pub speed_mbs: f64,
    /// The controller's estimate of the aggregate compression speed, MB/s.
    pub agg_speed_mbs: Option<f64>,
    /// The controller's target, MB/s.
    pub target_mbs: Option<f64>,
    /// The link speed in use, MB/s.
    pub link_mbs: Option<f64>,
    /// The measured link's 95 % interval, MB/s, once its drain rate is known (see
    /// `WriteSummary::link_interval`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_low_mbs: Option<f64>,
    /// The upper end of that interval, MB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_high_mbs: Option<f64>,
    /// Time the sink took for this frame, seconds.
    pub sink_s: f64,
    /// CPU time the process spent since the previous frame was written, seconds: the
    /// pipeline's threads (feeder, workers, sequencer) and the application computing beside
    /// them; what the controller is told (`SinkMeasurement::cpu`, decision 0062).
    pub pipeline_cpu_s: f64,
    /// The frame was waiting when the previous write ended (the sink is the bottleneck).
    pub backlogged: bool,
    /// Seconds since the writer was created, when the frame was written.
    pub t_s: f64,
    /// The rung a slice of this block was also compressed with, for the controller to learn
    /// (shadow compression; `adz_control::Decision::shadow`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow: Option<String>,
    /// The class controller's shadow compression so far, as a share of its blocks' CPU time.
    pub shadow_share: f64,
    /// The energy strategy only: the pipeline's CPU time for this frame at the strategy's watts
    /// per core, joules per GB (1e9 raw bytes) written (decision 0046).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joules_per_gb: Option<f64>,
}

/// What the sequencer knows of a block once its frame is written: plain values, turned into
/// a [`TraceRecord`] by the observer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockRecord {
    pub(crate) seq: u64,
    pub(crate) header: FrameHeader,
    pub(crate) measurement: BlockMeasurement,
    pub(crate) class: u8,
    /// The class controller's estimates after the frame (`Status::speed`, `target`, `link`,
    /// `shadow_share`).
    pub(crate) agg_speed: Option<f64>,
    pub(crate) target: Option<f64>,
    pub(crate) link: Option<f64>,
    /// The measured link's settled 95 % interval.
    pub(crate) link_interval: Option<(f64, f64)>,
    pub(crate) shadow_share: f64,
    /// The sink's time for the frame.
    pub(crate) sink: Duration,
    /// The pipeline's CPU time reported with the frame.
    pub(crate) pipeline_cpu: Duration,
    pub(crate) backlogged: bool,
    /// Since the writer was created.
    pub(crate) at: Duration,
    /// The energy strategy's watts per busy core (None for the other strategies).
    pub(crate) core_watts: Option<f64>,
}

impl From<&BlockRecord> for TraceRecord {
    fn from(r: &BlockRecord) -> TraceRecord {
        let m = &r.measurement;
        TraceRecord {
            seq: r.seq,
            offset: r.header.raw_offset,
            raw: m.raw_len,
            stored: m.stored_len,
            config: r.header.describe(),
            reason: format!("{:?}", m.decision.reason),
            class: r.class,
            stored_raw: m.stored_raw,
            wall_s: m.wall.as_secs_f64(),
            cpu_s: m.cpu.as_secs_f64(),
            speed_mbs: m.raw_len as f64 / m.wall.as_secs_f64().max(1e-9) / 1e6,
            agg_speed_mbs: r.agg_speed.map(|v| v / 1e6),
            target_mbs: r.target.map(|v| v / 1e6),
            link_mbs: r.link.map(|v| v / 1e6),
            link_low_mbs: r.link_interval.map(|(low, _)| low / 1e6),
            link_high_mbs: r.link_interval.map(|(_, high)| high / 1e6),
            sink_s: r.sink.as_secs_f64(),
            pipeline_cpu_s: r.pipeline_cpu.as_secs_f64(),
            backlogged: r.backlogged,
            t_s: r.at.as_secs_f64(),
            shadow: m.decision.shadow.map(|c| c.to_string()),
            shadow_share: r.shadow_share,
            joules_per_gb: r
                .core_watts
                .filter(|_| m.raw_len > 0)
                .map(|w| r.pipeline_cpu.as_secs_f64() * w / m.raw_len as f64 * 1e9),
        }
    }
}

/// Watches the frames the sequencer writes, in order.
pub(crate) trait Observer: Send {
    /// A frame was written.
    fn block(&mut self, record: &BlockRecord);

    /// The write is over: returns once every record observed has been handled.
    fn finish(self: Box<Self>);
}

/// Records waiting for the trace thread before the sequencer waits for it: enough to ride
/// out a slow trace writer for a while, few enough to bound the memory.
const TRACE_QUEUE: usize = 256;

/// The trace as an [`Observer`]: records go through a bounded channel to a thread that
/// formats them as JSON lines and writes them to the [`TraceSink`].
pub(crate) struct TraceThread {
    tx: Sender<BlockRecord>,
    thread: JoinHandle<()>,
}

impl TraceThread {
    /// Start the thread writing to `sink`. The first write error goes to `on_error` (the
    /// write then fails); records after it are dropped.
    pub(crate) fn start(
        sink: TraceSink,
        on_error: impl FnOnce(std::io::Error) + Send + 'static,
    ) -> std::io::Result<TraceThread> {
        let (tx, rx) = bounded::<BlockRecord>(TRACE_QUEUE);
        let thread = std::thread::Builder::new()
            .name("adz-trace".to_owned())
            .spawn(move || write_trace(&sink, &rx, on_error))?;
        Ok(TraceThread { tx, thread })
    }
}

impl Observer for TraceThread {
    fn block(&mut self, record: &BlockRecord) {
        // Fails only if the thread is gone, which it is not before `finish`.
        let _ = self.tx.send(*record);
    }

    fn finish(self: Box<Self>) {
        let TraceThread { tx, thread } = *self;
        drop(tx);
        let _ = thread.join();
    }
}

/// The trace thread: one JSON line per record, the writer locked once per batch received.
fn write_trace(
    sink: &TraceSink,
    rx: &Receiver<BlockRecord>,
    on_error: impl FnOnce(std::io::Error),
) {
    let mut line = String::new();
    for first in rx.iter() {
        let mut w = lock(&sink.0);
        let mut written = Ok(());
        for r in std::iter::once(first).chain(rx.try_iter()) {
            line.clear();
            line.push_str(&serde_json::to_string(&TraceRecord::from(&r)).unwrap_or_default());
            line.push('\n');
            written = w.write_all(line.as_bytes());
            if written.is_err() {
                break;
            }
        }
        drop(w);
        if let Err(e) = written {
            on_error(e);
            // Drain what comes, so the sequencer never waits for a trace that is over.
            rx.iter().for_each(drop);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Condvar;
    use std::time::Instant;

    use adz_store::{MemoryStorage, Storage};

    use super::*;
    use crate::{Error, WriteOptions, Writer};

    /// A trace writer that waits until its gate opens, or fails every write.
    struct Gated {
        gate: Arc<(Mutex<bool>, Condvar)>,
        out: Arc<Mutex<Vec<u8>>>,
        fail: bool,
    }

    impl Write for Gated {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.fail {
                return Err(std::io::Error::other("trace disk full"));
            }
            let (open, cv) = &*self.gate;
            let mut g = open.lock().unwrap();
            while !*g {
                g = cv.wait(g).unwrap();
            }
            self.out.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn opts(trace: Gated) -> WriteOptions {
        WriteOptions {
            strategy: "static=zstd:1".parse().unwrap(),
            threads: 1,
            block_size: 4096,
            buffers: 32,
            trace: Some(TraceSink::new(trace)),
            ..Default::default()
        }
    }

    #[test]
    fn a_stalled_trace_writer_does_not_hold_the_frames_up() {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let out = Arc::new(Mutex::new(Vec::new()));
        let trace = Gated { gate: Arc::clone(&gate), out: Arc::clone(&out), fail: false };
        let store = MemoryStorage::new();
        let mut w = Writer::create(&store, "t.adz", opts(trace)).unwrap();
        let data: Vec<u8> = (0..16 * 4096u32).map(|i| (i % 251) as u8).collect();
        w.write(&data).unwrap();
        let t0 = Instant::now();
        while w.progress().raw_written < data.len() as u64 && t0.elapsed().as_secs() < 10 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let written = w.progress().raw_written;
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        let summary = w.finish().unwrap();
        assert_eq!(written, data.len() as u64, "every frame written while the trace waited");

        // finish returns after the last line; the lines are those of TraceRecord, in order.
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count() as u64, summary.frames);
        for (i, line) in text.lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(v["seq"], i as u64);
            assert_eq!(v["offset"], i as u64 * 4096);
            assert_eq!(v["config"], "zstd:1");
            assert!(line.starts_with("{\"seq\":"), "fields in TraceRecord's order: {line}");
            assert_eq!(keys.len(), 19, "no shadow field without a shadow: {line}");
        }
    }

    #[test]
    fn a_trace_write_error_fails_the_write() {
        let gate = Arc::new((Mutex::new(true), Condvar::new()));
        let trace = Gated { gate, out: Arc::default(), fail: true };
        let store = MemoryStorage::new();
        let mut w = Writer::create(&store, "t.adz", opts(trace)).unwrap();
        let data = vec![7u8; 16 * 4096];
        let e = match w.write(&data) {
            Err(e) => e,
            Ok(()) => w.finish().unwrap_err(),
        };
        assert!(matches!(e, Error::Pipeline(_)), "{e:?}");
        let chain = adz_store::chain_text(&e);
        assert!(
            chain.contains("writing the trace") && chain.contains("trace disk full"),
            "{chain}"
        );
        assert!(store.size("t.adz").is_err(), "nothing committed");
    }
}
