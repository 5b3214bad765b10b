//! Placement decisions per second: the DP over pieces x tiers x rungs.
//! `cargo bench -p adz-tier --bench place`; figures in docs/TIERS.md.

use std::hint::black_box;

use adz_tier::{place, CostTable, Piece, TierSlot};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// `n` tiers, each 10x slower and 4x larger than the one above, the last unlimited.
fn tiers(n: usize) -> Vec<TierSlot> {
    (0..n)
        .map(|t| TierSlot {
            free: if t + 1 == n { u64::MAX } else { (256u64 << 20) * 4u64.pow(t as u32) },
            bandwidth: 10e9 / 10f64.powi(t as i32),
            latency: 1e-5,
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let costs = CostTable::reference(&CostTable::default_rungs(), 2);
    let mut g = c.benchmark_group("place");
    for &(pieces, t) in
        &[(64usize, 3usize), (1024, 1), (1024, 2), (1024, 3), (1024, 4), (1024, 8), (8192, 3)]
    {
        // 1 MiB pieces of mixed classes, as the writer's blocks.
        let ps: Vec<Piece> =
            (0..pieces).map(|i| Piece { raw: 1 << 20, class: 1 + i % 4 }).collect();
        let slots = tiers(t);
        // One "decision" is one piece placed (tier and rung).
        g.throughput(Throughput::Elements(pieces as u64));
        g.bench_with_input(BenchmarkId::new(format!("{t}-tiers"), pieces), &ps, |b, ps| {
            b.iter(|| black_box(place(black_box(ps), &slots, &costs).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
