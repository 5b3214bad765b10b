//! Measures how closely a `Throttled` link keeps its speed, by wall clock.
//!
//! ```text
//! cargo run --release -p adz-store --example link_accuracy [seconds per run] [speeds...]
//! cargo run --release -p adz-store --example link_accuracy 2 10MB/s 1GbE 10GbE ib-fdr4
//! ```
//!
//! Each run pushes 1 MiB appends through `Throttled<NullStorage>` from 1 and from 4 threads
//! for about the given time and prints the achieved rate and its error. This is a benchmark,
//! not a test: on a loaded machine the writers may fall behind a fast link, and the result is
//! then a measurement of the machine.

use std::time::{Duration, Instant};

use adz_store::{parse_rate, NullStorage, Storage, Throttled};

const APPEND: usize = 1 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1.0);
    let mut speeds: Vec<String> = args.collect();
    if speeds.is_empty() {
        speeds = ["10MB/s", "1GbE", "10GbE", "ib-fdr4"].map(String::from).to_vec();
    }

    println!(
        "{:>10} {:>8} {:>12} {:>14} {:>8} {:>6}",
        "link", "threads", "bytes", "achieved", "error", "idle"
    );
    for speed in &speeds {
        let bytes_per_sec = parse_rate(speed)?;
        for threads in [1, 4] {
            let total = (bytes_per_sec * seconds) as u64;
            let per_thread = total / threads / APPEND as u64 * APPEND as u64;
            let link = Throttled::new(NullStorage::new(), bytes_per_sec);
            let data = vec![0u8; APPEND];
            let start = Instant::now();
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (link, data) = (&link, &data);
                    s.spawn(move || {
                        let mut upload = link.create(&format!("t{t}")).expect("create");
                        for _ in 0..per_thread / APPEND as u64 {
                            upload.append(data).expect("append");
                        }
                        upload.commit().expect("commit");
                    });
                }
            });
            let elapsed = start.elapsed().max(Duration::from_nanos(1));
            let stats = link.link_stats();
            let achieved = stats.bytes as f64 / elapsed.as_secs_f64();
            println!(
                "{:>10} {:>8} {:>12} {:>9.1} MB/s {:>+7.2}% {:>6}",
                speed,
                threads,
                stats.bytes,
                achieved / 1e6,
                (achieved / bytes_per_sec - 1.0) * 100.0,
                stats.idle_restarts,
            );
        }
    }
    Ok(())
}
