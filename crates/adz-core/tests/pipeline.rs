//! The adaptive write pipeline: order, bounded memory, failures, strategies, async writes,
//! hints. Deterministic: no assertion depends on how fast anything runs.

use std::io::Cursor;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use adz_core::control::{Dtype, Hint, Link, Strategy as AdzStrategy};
use adz_core::store::{FaultPlan, Faulty, MemoryStorage, Storage, Upload};
use adz_core::{decode_stream, FileInfo, WriteOptions, Writer};
use adz_datagen::{generate, Kind};
use proptest::prelude::*;

fn read_back(store: &dyn Storage, name: &str) -> Vec<u8> {
    let file = store.get(name).unwrap();
    let mut out = Vec::new();
    decode_stream(&file[..], &mut out, |_| {}).unwrap();
    out
}

fn opts(strategy: &str, threads: usize, block: u32) -> WriteOptions {
    WriteOptions {
        strategy: strategy.parse().unwrap(),
        link: Link::Fixed(100e6),
        threads,
        block_size: block,
        ..WriteOptions::default()
    }
}

/// Run `f` on a thread and fail the test if it does not finish in time (a deadlock).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs)).expect("deadlock: did not finish in time")
}

fn mixed(len: usize, seed: u64) -> Vec<u8> {
    let mut d = generate(Kind::Text, len / 3, seed);
    d.extend(generate(Kind::Random, len / 3, seed));
    d.extend(generate(Kind::Doubles, len - d.len(), seed));
    d
}

#[test]
fn round_trip_through_every_strategy() {
    let data = mixed(700_000, 1);
    for strategy in
        ["throughput", "keep-pace", "prolong=1.5", "archive", "static=lz4:1", "static=zstd:3"]
    {
        for link in [Link::Auto, Link::Fixed(117e6), Link::Fixed(6000e6)] {
            let store = MemoryStorage::new();
            let o = WriteOptions { link, ..opts(strategy, 2, 32 * 1024) };
            let mut w = Writer::create(&store, "f.adz", o).unwrap();
            w.write(&data).unwrap();
            let s = w.finish().unwrap();
            assert_eq!(s.raw_bytes, data.len() as u64);
            assert_eq!(s.stored_bytes, store.size("f.adz").unwrap());
            assert_eq!(s.frames, data.len().div_ceil(32 * 1024) as u64);
            assert!(read_back(&store, "f.adz") == data, "{strategy} {link:?}");
        }
    }
}

#[test]
fn static_strategy_uses_its_codec() {
    let data = generate(Kind::Text, 300_000, 2);
    let store = MemoryStorage::new();
    let mut w = Writer::create(&store, "s.adz", opts("static=lz4hc:3", 2, 65536)).unwrap();
    w.write(&data).unwrap();
    let s = w.finish().unwrap();
    assert_eq!(s.configs.keys().collect::<Vec<_>>(), vec!["lz4hc:3"]);
}

#[test]
fn empty_write_gives_a_valid_empty_file() {
    let store = MemoryStorage::new();
    let w = Writer::create(&store, "e.adz", opts("throughput", 2, 4096)).unwrap();
    let s = w.finish().unwrap();
    assert_eq!(s.raw_bytes, 0);
    assert!(read_back(&store, "e.adz").is_empty());
}

#[derive(Debug, Clone)]
enum Op {
    Sync(usize),
    Async(usize),
    From(usize),
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the sizes, the mix of sync, async and read-from writes, the thread count and
    /// the codecs chosen (fast raw blocks next to slow compressed ones, so workers finish out
    /// of order), the file holds the bytes in write order.
    #[test]
    fn output_order_is_input_order(
        ops in prop::collection::vec(
            prop_oneof![
                (0usize..50_000).prop_map(Op::Sync),
                (0usize..50_000).prop_map(Op::Async),
                (0usize..50_000).prop_map(Op::From),
            ],
            1..12,
        ),
        threads in 1usize..5,
        block in prop::sample::select(vec![1000u32, 4096, 10_000]),
        seed in any::<u64>(),
    ) {
        let store = MemoryStorage::new();
        let mut w = Writer::create(&store, "o.adz", opts("throughput", threads, block)).unwrap();
        let mut expected = Vec::new();
        let mut handles = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let kind = [Kind::Text, Kind::Random, Kind::Sparse][i % 3];
            match *op {
                Op::Sync(n) => {
                    let d = generate(kind, n, seed ^ i as u64);
                    w.write(&d).unwrap();
                    expected.extend_from_slice(&d);
                }
                Op::Async(n) => {
                    let d = generate(kind, n, seed ^ i as u64);
                    expected.extend_from_slice(&d);
                    handles.push((w.write_async(d.clone()).unwrap(), d));
                }
                Op::From(n) => {
                    let d = generate(kind, n, seed ^ i as u64);
                    // Every other one gives short reads, as a pipe does.
                    let got = if i % 2 == 0 {
                        w.write_from(&mut Cursor::new(&d)).unwrap()
                    } else {
                        w.write_from(&mut Trickle(Cursor::new(&d), 777)).unwrap()
                    };
                    prop_assert_eq!(got, n as u64);
                    expected.extend_from_slice(&d);
                }
            }
        }
        for (h, d) in handles {
            prop_assert_eq!(h.wait().unwrap(), d, "wait returns the caller's buffer");
        }
        let s = w.finish().unwrap();
        prop_assert_eq!(s.raw_bytes, expected.len() as u64);
        prop_assert!(read_back(&store, "o.adz") == expected);
    }
}

/// A reader that gives at most `.1` bytes a read.
struct Trickle<R>(R, usize);

impl<R: std::io::Read> std::io::Read for Trickle<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1);
        self.0.read(&mut buf[..n])
    }
}

/// An upload whose appends block until the test opens the gate: a stalled sink.
#[derive(Debug, Clone)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn new() -> Gate {
        Gate(Arc::new((Mutex::new(false), Condvar::new())))
    }
    fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }
    fn wait(&self) {
        let mut open = self.0 .0.lock().unwrap();
        while !*open {
            open = self.0 .1.wait(open).unwrap();
        }
    }
}

#[derive(Debug)]
struct GatedUpload {
    gate: Gate,
    inner: Box<dyn Upload>,
}

impl Upload for GatedUpload {
    fn append(&mut self, data: &[u8]) -> adz_core::store::Result<()> {
        self.gate.wait();
        self.inner.append(data)
    }
    fn bytes_written(&self) -> u64 {
        self.inner.bytes_written()
    }
    fn commit(self: Box<Self>) -> adz_core::store::Result<u64> {
        self.inner.commit()
    }
    fn abort(self: Box<Self>) -> adz_core::store::Result<()> {
        self.inner.abort()
    }
}

#[test]
fn memory_is_bounded_by_the_pool_when_the_sink_stalls() {
    let store = MemoryStorage::new();
    let gate = Gate::new();
    let upload =
        Box::new(GatedUpload { gate: gate.clone(), inner: store.create("m.adz").unwrap() });
    let block = 4096usize;
    let buffers = 4usize;
    let o = WriteOptions { buffers, ..opts("static=lz4:1", 2, block as u32) };
    let w = Arc::new(Mutex::new(Writer::with_upload(upload, o).unwrap()));
    let data = generate(Kind::Text, 100 * block, 3);
    let writer = {
        let w = Arc::clone(&w);
        let data = data.clone();
        std::thread::spawn(move || w.lock().unwrap().write(&data).unwrap())
    };
    // Give the pipeline ample time to fill every buffer it has.
    std::thread::sleep(Duration::from_millis(300));
    let accepted = {
        // The writer thread holds the lock while blocked in write: read progress through it
        // only after checking it is blocked (not finished).
        assert!(!writer.is_finished(), "write must block while the sink is stalled");
        gate.open();
        writer.join().unwrap();
        w.lock().unwrap().raw_bytes()
    };
    assert_eq!(accepted, data.len() as u64);
    let w = Arc::try_unwrap(w).unwrap().into_inner().unwrap();
    w.finish().unwrap();
    assert!(read_back(&store, "m.adz") == data);
}

#[test]
fn accepted_bytes_stop_at_the_pool_size() {
    // The same stall, observed through progress: raw bytes accepted never exceed what the
    // buffers hold (raw pool + frame pool + the block being filled).
    let store = MemoryStorage::new();
    let gate = Gate::new();
    let upload =
        Box::new(GatedUpload { gate: gate.clone(), inner: store.create("p.adz").unwrap() });
    let block = 4096usize;
    let buffers = 3usize;
    let o = WriteOptions { buffers, ..opts("static=lz4:1", 2, block as u32) };
    let mut w = Writer::with_upload(upload, o).unwrap();
    let data = generate(Kind::Text, 200 * block, 4);
    let progress = Arc::new(Mutex::new(0u64));
    let (tx, rx) = mpsc::channel::<Writer>();
    let feeder = {
        let data = data.clone();
        let progress = Arc::clone(&progress);
        std::thread::spawn(move || {
            for chunk in data.chunks(block) {
                w.write(chunk).unwrap();
                *progress.lock().unwrap() = w.raw_bytes();
            }
            tx.send(w).unwrap();
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let seen = *progress.lock().unwrap();
    let bound = ((2 * buffers + 1) * block) as u64;
    assert!(seen <= bound, "accepted {seen} bytes with the sink stalled; the pools hold {bound}");
    assert!(seen >= block as u64, "the pipeline should accept at least one block");
    gate.open();
    feeder.join().unwrap();
    let w = rx.recv().unwrap();
    w.finish().unwrap();
    assert!(read_back(&store, "p.adz") == data);
}

#[test]
fn sink_error_surfaces_and_nothing_is_committed() {
    for fail_at in [0u64, 10, 5000, 100_000] {
        let store = Arc::new(Faulty::new(
            MemoryStorage::new(),
            FaultPlan::new().fail_append_after(fail_at),
        ));
        let data = mixed(400_000, 5);
        let result = within(30, {
            let store = Arc::clone(&store);
            move || {
                let mut w = Writer::create(&*store, "x.adz", opts("throughput", 2, 8192))?;
                for chunk in data.chunks(30_000) {
                    w.write(chunk)?;
                }
                w.finish()
            }
        });
        let err = result.expect_err("the sink failed: the write must fail");
        assert!(
            err.to_string().contains("write failed") || err.to_string().contains("injected"),
            "{err}"
        );
        assert!(
            store.inner().size("x.adz").is_err(),
            "nothing may be committed (fail at {fail_at})"
        );
    }
}

#[test]
fn commit_failure_is_an_error() {
    let store = Faulty::new(MemoryStorage::new(), FaultPlan::new().fail_commit());
    let mut w = Writer::create(&store, "c.adz", opts("throughput", 2, 8192)).unwrap();
    w.write(&generate(Kind::Text, 50_000, 1)).unwrap();
    assert!(w.finish().is_err());
    assert!(store.inner().size("c.adz").is_err());
}

#[test]
fn dropping_a_writer_mid_stream_commits_nothing_and_does_not_hang() {
    let store = MemoryStorage::new();
    let data = mixed(500_000, 6);
    within(30, {
        let store = store.clone();
        move || {
            let mut w = Writer::create(&store, "d.adz", opts("throughput", 3, 4096)).unwrap();
            w.write(&data).unwrap();
            let _h = w.write_async(data.clone()).unwrap();
            drop(w);
        }
    });
    assert!(store.size("d.adz").is_err());

    // Also with a stalled sink: the drop must not wait for the stall forever.
    let store = MemoryStorage::new();
    let slow =
        Faulty::new(store.clone(), FaultPlan::new().stall_appends(Duration::from_millis(20)));
    within(30, move || {
        let mut w = Writer::create(&slow, "d2.adz", opts("throughput", 2, 4096)).unwrap();
        w.write(&generate(Kind::Text, 200_000, 1)).unwrap();
        drop(w);
    });
    assert!(store.size("d2.adz").is_err());
}

#[test]
fn async_wait_after_failure_returns_an_error_not_a_hang() {
    let store = Faulty::new(MemoryStorage::new(), FaultPlan::new().fail_append_after(100));
    let data = generate(Kind::Text, 2_000_000, 1);
    within(30, move || {
        let mut w = Writer::create(&store, "a.adz", opts("static=zstd:3", 2, 4096)).unwrap();
        let h = w.write_async(data).unwrap();
        let r = h.wait();
        let f = w.finish();
        assert!(r.is_err() || f.is_err());
        assert!(f.is_err());
    });
}

#[test]
fn no_compress_hint_stores_raw_and_dtype_hint_shuffles() {
    let store = MemoryStorage::new();
    let text = generate(Kind::Text, 100_000, 7);
    let doubles = generate(Kind::Doubles, 80_000, 7);
    let mut w = Writer::create(&store, "h.adz", opts("static=zstd:3", 2, 16_384)).unwrap();
    // A no-compress range that starts and ends inside blocks: blocks are cut at its borders.
    w.advise(10_000..50_000, Hint::NoCompress).unwrap();
    w.advise(100_000..180_000, Hint::Dtype(Dtype::F64)).unwrap();
    w.write(&text).unwrap();
    w.write(&doubles).unwrap();
    w.finish().unwrap();

    let file = store.get("h.adz").unwrap();
    let info = FileInfo::read_seekable(Cursor::new(&file), true).unwrap();
    let frames = info.frame_list.unwrap();
    for f in &frames {
        let range = f.raw_offset..f.raw_offset + u64::from(f.raw_len);
        let inside_nc = range.start >= 10_000 && range.end <= 50_000;
        let outside_nc = range.end <= 10_000 || range.start >= 50_000;
        assert!(inside_nc || outside_nc, "frame {range:?} straddles the hint border");
        if inside_nc {
            assert_eq!(f.config, "none (stored raw)", "frame {range:?}");
        } else if range.start >= 100_000 {
            assert!(f.config.contains("shuffle:8"), "frame {range:?}: {}", f.config);
        } else {
            assert!(
                f.config.starts_with("zstd:3") && !f.config.contains("shuffle"),
                "{}",
                f.config
            );
        }
    }
    let mut out = Vec::new();
    decode_stream(&file[..], &mut out, |_| {}).unwrap();
    assert!(out[..100_000] == text[..] && out[100_000..] == doubles[..]);
}

#[test]
fn hints_in_the_past_are_refused() {
    let store = MemoryStorage::new();
    let mut w = Writer::create(&store, "p.adz", opts("throughput", 1, 4096)).unwrap();
    w.write(&[1u8; 10_000]).unwrap();
    assert!(w.advise(5_000..20_000, Hint::NoCompress).is_err());
    assert!(w.advise(20_000..20_000, Hint::NoCompress).is_err());
    assert!(w.advise(20_000..30_000, Hint::NoCompress).is_ok());
    w.finish().unwrap();
}

#[test]
fn hint_at_the_write_position_then_write_from() {
    let store = MemoryStorage::new();
    let mut w = Writer::create(&store, "q.adz", opts("static=lz4:1", 2, 4096)).unwrap();
    let a = generate(Kind::Text, 1000, 1);
    let b = generate(Kind::Text, 9000, 2);
    w.write(&a).unwrap();
    w.advise(1000..3000, Hint::NoCompress).unwrap();
    assert_eq!(w.write_from(&mut Cursor::new(&b)).unwrap(), 9000);
    w.finish().unwrap();
    let file = store.get("q.adz").unwrap();
    let info = FileInfo::read_seekable(Cursor::new(&file), true).unwrap();
    let starts: Vec<u64> = info.frame_list.unwrap().iter().map(|f| f.raw_offset).collect();
    assert_eq!(starts, vec![0, 1000, 3000, 7096]);
    assert!(read_back(&store, "q.adz") == [a, b].concat());
}

/// A trace sink the test can read back.
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn trace_has_one_line_per_block() {
    let store = MemoryStorage::new();
    let buf = Arc::new(Mutex::new(Vec::<u8>::new()));
    let o = WriteOptions {
        trace: Some(adz_core::TraceSink::new(SharedBuf(Arc::clone(&buf)))),
        ..opts("throughput", 2, 8192)
    };
    let mut w = Writer::create(&store, "t.adz", o).unwrap();
    w.write(&mixed(100_000, 8)).unwrap();
    let s = w.finish().unwrap();
    let text = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len() as u64, s.frames);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["seq"], i as u64);
        assert!(l["config"].is_string() && l["raw"].as_u64().unwrap() > 0);
    }
    // The data class of each block: text first, random in the middle third.
    assert_eq!(lines[0]["class"], 2, "{}", lines[0]);
    assert_eq!(lines[5]["class"], 4, "{}", lines[5]);
}

/// The pipeline's CPU time the controller is told (`SinkMeasurement::cpu`, in the trace as
/// `pipeline_cpu_s`) includes every worker's time on its blocks (a worker counts it before
/// handing the frame on), and more: the feeder and the sequencer. With zstd:19 the workers'
/// time is most of it, so a worker that did not count its time would show.
#[test]
fn the_pipeline_cpu_time_includes_the_workers() {
    if !cfg!(target_os = "linux") {
        return; // thread CPU clocks are what cpu-time reads there; elsewhere they may be zero
    }
    let store = MemoryStorage::new();
    let trace = Arc::new(Mutex::new(Vec::<u8>::new()));
    let o = WriteOptions {
        trace: Some(adz_core::TraceSink::new(SharedBuf(Arc::clone(&trace)))),
        ..opts("static=zstd:19", 2, 1 << 16)
    };
    let mut w = Writer::create(&store, "c.adz", o).unwrap();
    w.write(&generate(Kind::Text, 8 << 16, 3)).unwrap();
    w.finish().unwrap();
    let text = String::from_utf8(trace.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let sum = |k: &str| lines.iter().map(|l| l[k].as_f64().unwrap()).sum::<f64>();
    let (pipe, workers) = (sum("pipeline_cpu_s"), sum("cpu_s"));
    assert_eq!(lines.len(), 8);
    assert!(workers > 0.0 && pipe >= workers, "pipeline {pipe} s, workers {workers} s");
}

#[test]
fn strategies_parse() {
    assert!("prolong=1.5".parse::<AdzStrategy>().is_ok());
    assert!("bogus".parse::<AdzStrategy>().is_err());
}
