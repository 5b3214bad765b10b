use super::*;

#[test]
fn every_external_key_names_a_tool_and_others_none() {
    let all = full_externals(2);
    assert_eq!(all.len(), EXTERNAL_KEYS.len());
    assert_eq!(all[0].name, "zstd --adapt -T2 -c");
    assert_eq!(external("xz-6", 2).unwrap().name, "xz -T2 -6 -c");
    assert_eq!(external("zstd-19", 4).unwrap().argv, ["zstd", "-T4", "-19", "-c"]);
    for bad in ["zstd", "zstd-2", "xz-9", "gzip-1", ""] {
        assert!(external(bad, 2).is_none(), "{bad}");
    }
    let quick: Vec<_> = quick_externals(2).into_iter().map(|e| e.name).collect();
    assert_eq!(quick, ["zstd --adapt -T2 -c", "zstd -T2 -3 -c"]);
}

/// Counts what the pump's reader took, and the link's bytes at the moment the reader saw
/// the end of the tool's output.
struct Watched<R> {
    inner: R,
    linked: Arc<std::sync::atomic::AtomicU64>,
    linked_at_eof: Arc<Mutex<Option<u64>>>,
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(b)?;
        if n == 0 {
            let linked = self.linked.load(std::sync::atomic::Ordering::SeqCst);
            *self.linked_at_eof.lock().unwrap() = Some(linked);
        }
        Ok(n)
    }
}

/// The harness buffers an external tool as adz buffers itself: while a slow link sleeps,
/// the reader drains the tool's whole output (as many blocks as adz keeps in flight) into
/// the queue, so the tool has finished long before the link has. Reading and writing in
/// one loop, the end of the output is seen only after the link took all of it.
#[test]
fn the_pipe_is_drained_while_the_link_sleeps() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let depth = pipe_depth(2);
    assert_eq!(depth, 6);
    let total = (depth * PIPE_BLOCK) as u64;
    let mut child = Command::new("head")
        .args(["-c", &total.to_string(), "/dev/zero"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("head");
    let linked = Arc::new(AtomicU64::new(0));
    let at_eof = Arc::new(Mutex::new(None));
    let src = Watched {
        inner: child.stdout.take().unwrap(),
        linked: Arc::clone(&linked),
        linked_at_eof: Arc::clone(&at_eof),
    };
    // 16 MB/s: the link needs ~0.4 s for the 6 MiB, reading them takes milliseconds.
    let store = Throttled::new(adz_core::store::MemoryStorage::new(), 16e6).burst(64 << 10);
    let mut up = store.create("x").unwrap();
    let copied = pump(src, depth, |b| {
        up.append(b)?;
        linked.fetch_add(b.len() as u64, Ordering::SeqCst);
        Ok(())
    })
    .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(copied, total);
    assert_eq!(up.commit().unwrap(), total);
    let at_eof = at_eof.lock().unwrap().expect("the reader saw the end of the output");
    // The first block may be on the link already; the rest waited in the queue.
    assert!(at_eof <= PIPE_BLOCK as u64, "the link had {at_eof} of {total} bytes at the end");
}

/// A tool through the queue stores exactly its output; a failing link is an error, and the
/// tool is not left hanging on a full pipe.
#[test]
fn an_external_tool_through_the_queue_stores_its_output() {
    let data = Arc::new((0..3_000_000u32).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    let store = adz_core::store::MemoryStorage::new();
    let cat = External::new(&["cat"]);
    let (_, stored) = external_write(&data, &store, "o", &cat, 2).unwrap();
    assert_eq!(stored, data.len() as u64);
    let mut calls = 0;
    let err = pump(&data[..], 1, |_| {
        calls += 1;
        if calls == 2 {
            bail!("link down")
        }
        Ok(())
    })
    .unwrap_err();
    assert!(format!("{err:#}").contains("link down"), "{err:#}");
}

#[test]
fn adaptive_names_parse() {
    let a: Adaptive = "s3=1.5".parse().unwrap();
    assert_eq!(a.strategy, Strategy::Prolong(1.5));
    assert!(!a.auto_link);
    let a: Adaptive = "s1-auto".parse().unwrap();
    assert_eq!(a.strategy, Strategy::Throughput);
    assert!(a.auto_link);
    assert!("static=zstd:3".parse::<Adaptive>().is_err());
    assert!("nonsense".parse::<Adaptive>().is_err());
}

#[test]
fn estimate_grows_with_rungs_and_size() {
    let plan = Plan {
        datasets: vec![("a".into(), PathBuf::new())],
        size: 1 << 30,
        links_mbs: vec![117.0],
        workloads: vec![Workload::Sync],
        statics: quick_statics(),
        adaptive: ["s1", "s2"].iter().map(|s| s.parse().unwrap()).collect(),
        externals: vec![],
        threads: 2,
        block_size: BLOCK_SIZE,
        asynchronism: 0.5,
        rounds: 4,
        async_repeats: 1,
        trace_dir: None,
        sink: None,
    };
    let none = HashSet::new();
    let small = estimate_seconds(&plan, 2, &[], &none);
    let full = estimate_seconds(&Plan { statics: full_statics(), ..plan.clone() }, 2, &[], &none);
    assert!(full > small && small > 0.0);
    let big = estimate_seconds(&Plan { size: 2 << 30, ..plan.clone() }, 2, &[], &none);
    let overhead = 0.1 * planned_rows(&plan, &[]) as f64;
    assert!(((big - overhead) / (small - overhead) - 2.0).abs() < 1e-9);
    // Rows already done are not estimated again.
    let done: HashSet<Key> = tasks(&plan).iter().take(3).map(|t| plan.key(t)).collect();
    let rest = estimate_seconds(&plan, 2, &[], &done);
    assert!(rest < small && rest > 0.0);
    // Async rows with repeats cost that many runs; sync rows do not change.
    let once = Plan { workloads: vec![Workload::Async], ..plan.clone() };
    let thrice = Plan { async_repeats: 3, ..once.clone() };
    let (a1, a3) =
        (estimate_seconds(&once, 2, &[], &none), estimate_seconds(&thrice, 2, &[], &none));
    assert!((a3 / a1 - 3.0).abs() < 1e-9, "{a1} {a3}");
    let sync3 = Plan { async_repeats: 3, ..plan.clone() };
    assert_eq!(estimate_seconds(&sync3, 2, &[], &none), small);
}

/// Slow first sweeps (cold pages, thread start) and a stray slow one do not move the
/// calibration: it is the median of the warm sweeps.
#[test]
fn the_calibration_is_the_median_of_warm_sweeps() {
    let mut k = 0usize;
    let fake = move || {
        k += 1;
        match k {
            1..=3 => 0.005, // cold
            20 => 0.050,    // disturbed
            _ if k % 2 == 0 => 0.0006,
            _ => 0.0007,
        }
    };
    let m = median_sweep(fake);
    assert!(m == 0.0006 || m == 0.0007, "{m}");
    assert!(calibrate_sweep() > 0.0);
}

#[test]
fn the_median_run_is_kept() {
    let run = |seconds: f64| Measured {
        seconds,
        stored: (seconds * 1000.0) as u64,
        configs: String::new(),
        compute_seconds: Some(seconds / 2.0),
        async_share: Some(0.5),
        trace: format!("{seconds}").into_bytes(),
    };
    assert!(median_run(vec![]).is_none());
    assert_eq!(median_run(vec![run(2.0)]).unwrap().seconds, 2.0);
    // Slowest first: the middle one, with its own stored bytes, compute time and trace.
    let m = median_run(vec![run(3.0), run(1.0), run(2.0)]).unwrap();
    assert_eq!((m.seconds, m.stored, m.compute_seconds), (2.0, 2000, Some(1.0)));
    assert_eq!(m.trace, b"2");
    // Even: the lower middle.
    assert_eq!(median_run(vec![run(4.0), run(1.0), run(3.0), run(2.0)]).unwrap().seconds, 2.0);
}
