//! Pipeline overhead: the same bytes through a plain memcpy, a memcpy plus the xxh3 checksum
//! the format requires, and the write pipeline with codec `none` into a memory sink.
//! `cargo bench -p adz-core --bench pipeline`; figures go to docs/benchmarks/.

use std::hint::black_box;

use adz_core::control::{Link, Strategy};
use adz_core::store::NullStorage;
use adz_core::{WriteOptions, Writer};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const LEN: usize = 256 << 20;
const BLOCK: usize = 1 << 20;

fn opts(threads: usize) -> WriteOptions {
    WriteOptions {
        strategy: Strategy::Static("none".parse().unwrap()),
        link: Link::Fixed(1e12),
        threads,
        ..WriteOptions::default()
    }
}

fn bench(c: &mut Criterion) {
    let data = adz_datagen::generate(adz_datagen::Kind::Text, LEN, 1);
    let mut g = c.benchmark_group("pipeline-none-256MiB");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(LEN as u64));

    // What any writer must do at least: move every byte once.
    let mut dst = vec![0u8; LEN];
    g.bench_function("memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&data));
            black_box(&dst);
        })
    });
    // ... and the format's checksum of every byte, per 1 MiB block.
    g.bench_function("memcpy+xxh3", |b| {
        b.iter(|| {
            for (s, d) in data.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
                d.copy_from_slice(s);
                black_box(adz_core::format::xxh3(s));
            }
            black_box(&dst);
        })
    });
    // The pipeline into a sink that keeps nothing (it counts bytes), so the figure is the
    // pipeline's own cost: cutting, two pool hand-offs, the encoder (checksum, raw copy into
    // the frame buffer), the sequencer.
    for threads in [1usize, 2] {
        g.bench_with_input(BenchmarkId::new("writer.write", threads), &threads, |b, &t| {
            let store = NullStorage::new();
            b.iter(|| {
                let mut w = Writer::create(&store, "x", opts(t)).unwrap();
                w.write(&data).unwrap();
                black_box(w.finish().unwrap());
            })
        });
        g.bench_with_input(BenchmarkId::new("writer.write_async", threads), &threads, |b, &t| {
            let store = NullStorage::new();
            let shared: std::sync::Arc<[u8]> = data.clone().into();
            b.iter(|| {
                let mut w = Writer::create(&store, "x", opts(t)).unwrap();
                let h = w.write_async(std::sync::Arc::clone(&shared)).unwrap();
                black_box(h.wait().unwrap());
                black_box(w.finish().unwrap());
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
