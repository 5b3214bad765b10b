//! Shuffle, bitshuffle and either followed by a codec on 1 MiB chunks like the HDF5
//! benchmark's VPIC-like file (issue 26): smooth float32 fields, sorted float32 positions,
//! random normal float32 momenta and sequential int64 ids.
//! `cargo bench -p adz-codec --bench shuffle`.

use std::hint::black_box;

use adz_codec::{
    apply_filters, bitshuffle, bitunshuffle, max_compressed_len, shuffle, unshuffle, CodecContext,
    CodecId, CodecSpec, Filters,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const CHUNK: usize = 1 << 20;

/// xorshift64*, uniform in [0, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.next().max(1e-300), self.next());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// (name, element size, one chunk of bytes).
fn chunks() -> Vec<(&'static str, usize, Vec<u8>)> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let n = CHUNK / 4;
    let f32s = |v: &mut dyn FnMut(usize) -> f32| -> Vec<u8> {
        (0..n).flat_map(|i| v(i).to_le_bytes()).collect()
    };
    // A 16 x 128 x 128 block of a field: smooth waves plus noise of 1e-3.
    let field = f32s(&mut |i| {
        let (x, y, z) = ((i >> 14) as f64, ((i >> 7) & 127) as f64, (i & 127) as f64);
        let step = std::f64::consts::TAU / 127.0;
        let f = (x * step * 2.0).sin() * (y * step * 2.0).cos() + 0.5 * (z * step + 1.0).sin();
        (f + 1e-3 * rng.normal()) as f32
    });
    let mut rng = Rng(7);
    let position = f32s(&mut |i| ((i / 8) % 64) as f32 + rng.next() as f32);
    let mut rng = Rng(11);
    let momentum = f32s(&mut |_| (0.1 * rng.normal()) as f32);
    let ids: Vec<u8> = (0..CHUNK as u64 / 8).flat_map(|i| (1_000_000 + i).to_le_bytes()).collect();
    vec![("field", 4, field), ("position", 4, position), ("momentum", 4, momentum), ("id", 8, ids)]
}

fn bench(c: &mut Criterion) {
    let data = chunks();
    let mut g = c.benchmark_group("shuffle-1MiB");
    g.throughput(Throughput::Bytes(CHUNK as u64));
    let mut out = vec![0u8; CHUNK];
    for k in [2usize, 4, 8] {
        let src = &data[0].2;
        g.bench_with_input(BenchmarkId::new("shuffle", k), &k, |b, &k| {
            b.iter(|| shuffle(k, black_box(src), &mut out))
        });
        g.bench_with_input(BenchmarkId::new("unshuffle", k), &k, |b, &k| {
            b.iter(|| unshuffle(k, black_box(src), &mut out))
        });
        g.bench_with_input(BenchmarkId::new("bitshuffle", k), &k, |b, &k| {
            b.iter(|| bitshuffle(k, black_box(src), &mut out))
        });
        g.bench_with_input(BenchmarkId::new("bitunshuffle", k), &k, |b, &k| {
            b.iter(|| bitunshuffle(k, black_box(src), &mut out))
        });
    }
    g.finish();

    // What adz-core's FrameEncoder runs for a chunk: the filters into a buffer, then the codec.
    let mut g = c.benchmark_group("shuffle+codec-1MiB");
    g.throughput(Throughput::Bytes(CHUNK as u64));
    let mut ctx = CodecContext::new();
    let bound = [CodecId::Lz4, CodecId::Zstd].map(|c| max_compressed_len(c, CHUNK));
    let mut payload = vec![0u8; bound.into_iter().max().unwrap_or(CHUNK)];
    let mut scratch = Vec::new();
    for (name, k, src) in &data {
        for filter in ["shuffle", "bitshuffle"] {
            let filters: Filters = format!("{filter}:{k}").parse().unwrap();
            for spec in ["lz4:1", "zstd:-4", "zstd:1"] {
                let spec: CodecSpec = spec.parse().unwrap();
                g.bench_function(BenchmarkId::new(format!("{spec} {filter}d"), name), |b| {
                    b.iter(|| {
                        apply_filters(&filters, black_box(src), &mut out, &mut scratch).unwrap();
                        black_box(ctx.compress_into(spec, &out, &mut payload).unwrap())
                    })
                });
            }
        }
        let spec: CodecSpec = "lz4:1".parse().unwrap();
        let mut shuffled = vec![0u8; CHUNK];
        shuffle(*k, src, &mut shuffled);
        g.bench_function(BenchmarkId::new("lz4:1 of shuffled bytes", name), |b| {
            b.iter(|| {
                black_box(ctx.compress_into(spec, black_box(&shuffled), &mut payload).unwrap())
            })
        });
        g.bench_function(BenchmarkId::new("lz4:1 unshuffled", name), |b| {
            b.iter(|| black_box(ctx.compress_into(spec, black_box(src), &mut payload).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
