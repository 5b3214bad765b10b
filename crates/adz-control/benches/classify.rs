//! What the entropy look costs: `classify` of a 1 MiB block (the writer classifies every
//! block) and `entropy` of a 4 KiB window (the predictor's probes), on sparse, text-like and
//! random bytes. Sparse bytes are the slow case of a byte histogram: a run of one byte value
//! makes every count wait for the previous one.

use adz_control::{classify, entropy};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut s = 1;
    let n = 1 << 20;
    let mut sparse = vec![0u8; n];
    for i in (0..n).step_by(61) {
        sparse[i] = (splitmix(&mut s) % 7) as u8;
    }
    let text: Vec<u8> =
        (0..n).map(|_| b"etaoin shrdlu cmfwyp\n"[(splitmix(&mut s) % 21) as usize]).collect();
    let random: Vec<u8> = (0..n).map(|_| splitmix(&mut s) as u8).collect();
    vec![("sparse", sparse), ("text", text), ("random", random)]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("look");
    for (name, data) in inputs() {
        g.throughput(Throughput::Bytes(4096));
        g.bench_with_input(BenchmarkId::new("classify-1MiB-block", name), &data, |b, d| {
            b.iter(|| classify(std::hint::black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("entropy-4KiB", name), &data[..4096], |b, d| {
            b.iter(|| entropy(std::hint::black_box(d)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
