//! The link an S3 upload measures (issue 30, decision 0048): its parts' request times, not how
//! fast its part buffer takes data. MinIO on 127.0.0.1 (as for tests/s3.rs: `make s3-test`)
//! is reached through a proxy of this test's own that forwards the uploads at a fixed rate, so
//! the upload path is a real TCP link of known speed with kernel buffers on both sides. The
//! controller is fed as adz-core's sequencer feeds it: every append's time, and the transfers.
#![cfg(feature = "s3")]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use adz_control::{Controller, ControllerConfig, Link, SinkMeasurement, Strategy};
use adz_store::s3::{S3Config, S3Storage, MIN_PART};
use adz_store::{RetryPolicy, Storage, Transfer};

/// The test server's configuration and bucket, or `None` (after saying why) to skip.
fn server() -> Option<(S3Config, String)> {
    let required = std::env::var("ADZ_REQUIRE_S3").is_ok_and(|v| v == "1");
    let config = S3Config::from_env();
    let Some(endpoint) = config.endpoint.clone() else {
        assert!(!required, "ADZ_REQUIRE_S3=1 but AWS_ENDPOINT_URL is not set");
        eprintln!("skipping S3 timing test: AWS_ENDPOINT_URL is not set (run `make s3-test`)");
        return None;
    };
    assert!(endpoint.starts_with("http://127.0.0.1:"), "loopback only: {endpoint}");
    let bucket = std::env::var("ADZ_S3_BUCKET").unwrap_or_else(|_| "adz-test".to_owned());
    Some((config.retry(RetryPolicy::new(3, Duration::from_millis(50))), bucket))
}

/// A TCP proxy on 127.0.0.1 to `upstream` that forwards what clients send at `rate` bytes/s
/// in all (one token bucket for every connection), and the answers at once. Its threads end
/// with their connections.
fn throttled_proxy(upstream: SocketAddr, rate: f64) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // When the link is free again.
    let free = Arc::new(Mutex::new(Instant::now()));
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(upstream) else { return };
            let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let free = Arc::clone(&free);
            thread::spawn(move || pump(client, server, Some((free, rate))));
            thread::spawn(move || pump(s2, c2, None));
        }
    });
    addr
}

/// Copies `from` to `to` until `from` ends, each chunk after its time on the link, if any.
fn pump(mut from: TcpStream, mut to: TcpStream, link: Option<(Arc<Mutex<Instant>>, f64)>) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some((free, rate)) = &link {
            let done = {
                let mut f = free.lock().unwrap();
                *f = (*f).max(Instant::now()) + Duration::from_secs_f64(n as f64 / rate);
                *f
            };
            thread::sleep(done.saturating_duration_since(Instant::now()));
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Uploads `total` bytes in 1 MiB appends through a proxy at `rate`, pausing `pause` before
/// each, and feeds a `--link auto` controller as adz-core's sequencer does. Returns it, just
/// before the commit, with the transfers the upload reported.
fn upload_through(rate: f64, total: usize, pause: Duration) -> Option<(Controller, Vec<Transfer>)> {
    let (config, bucket) = server()?;
    let endpoint = config.endpoint.clone().unwrap();
    let upstream: SocketAddr = endpoint.trim_start_matches("http://").parse().unwrap();
    let proxy = throttled_proxy(upstream, rate);
    let config = config.endpoint(format!("http://{proxy}")).part_size(MIN_PART).streams(4);
    let store = S3Storage::new(&bucket, config).unwrap();
    let mut ctl = Controller::new(ControllerConfig::new(Strategy::Throughput, Link::Auto, 2));
    let frame: Vec<u8> =
        (0..1u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let mut upload = store.create("adz-s3-tests/timing/object").unwrap();
    let (mut all, mut fresh) = (Vec::new(), Vec::new());
    let mut last_end: Option<Instant> = None;
    for _ in 0..total / frame.len() {
        thread::sleep(pause);
        let t0 = Instant::now();
        upload.append(&frame).unwrap();
        let end = Instant::now();
        assert!(upload.take_transfers(&mut fresh), "an S3 upload measures its parts");
        let parts: Vec<_> = fresh.iter().map(|t| (t.bytes, t.link_time())).collect();
        all.append(&mut fresh);
        ctl.record_transfers(&parts);
        let waited = last_end.map_or(Duration::ZERO, |e| t0 - e);
        last_end = Some(end);
        ctl.record_sink(&SinkMeasurement {
            bytes: frame.len() as u64,
            busy: end - t0,
            backlogged: pause.is_zero(),
            raw: 2 * frame.len() as u64,
            waited,
            cpu: Duration::ZERO,
        });
    }
    upload.commit().unwrap();
    store.delete("adz-s3-tests/timing/object").unwrap();
    Some((ctl, all))
}

const RATE: f64 = 30e6;

/// The estimate, and that it is within `low..=high` of the proxy's rate: a part's request
/// also carries its signing (a SHA-256 of the part, slow in a debug build) and MinIO's own
/// time, which parts in flight together overlap and a lone part does not.
fn check(ctl: &Controller, parts: &[Transfer], what: &str, (low, high): (f64, f64)) {
    let e = ctl.link_estimate().expect("measured");
    let per_part: Vec<String> = parts
        .iter()
        .map(|t| format!("{:.1}", t.bytes as f64 / t.link_time().as_secs_f64() / 1e6))
        .collect();
    eprintln!("{what}: {e:?}; parts, MB/s: {}", per_part.join(" "));
    assert!(parts.len() >= 4, "{what}: {} parts", parts.len());
    let r = e.rate / RATE;
    assert!((low..=high).contains(&r), "{what}: {:.1} MB/s", e.rate / 1e6);
    assert_eq!(ctl.link(), Some(e.rate), "{what}: the estimate is the link in use");
}

#[test]
fn a_writer_slower_than_the_link_still_measures_the_link() {
    // 1 MiB every 70 ms, 15 MB/s: the part buffer never fills, every append is a copy, and
    // only the parts' requests see the 30 MB/s link.
    let Some((ctl, parts)) = upload_through(RATE, 40 << 20, Duration::from_millis(70)) else {
        return;
    };
    check(&ctl, &parts, "paced writer", (0.6, 1.1));
    // One part at a time: each had the link to itself.
    assert!(parts.iter().all(|t| t.in_flight < 1.5), "{parts:?}");
}

#[test]
fn a_writer_faster_than_the_link_measures_the_link_not_the_part_buffer() {
    // Appends as fast as memory: 4 parts of 5 MiB in flight share the link.
    let Some((ctl, parts)) = upload_through(RATE, 48 << 20, Duration::ZERO) else {
        return;
    };
    check(&ctl, &parts, "fast writer", (0.85, 1.15));
    assert!(parts.iter().any(|t| t.in_flight > 2.0), "{parts:?}");
}
