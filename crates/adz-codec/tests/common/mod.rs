//! Test data shared by the integration tests (included with `mod common;`).

#![allow(dead_code)]

/// Deterministic pseudo-random bytes (xorshift64*), so failures reproduce from a seed.
pub fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Text made of a small vocabulary: compressible, like logs.
pub fn text(len: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "adz ",
        "block ",
        "frame ",
        "zstd ",
        "level=3 ",
        "ok\n",
        "GET /index.html ",
        "200 ",
        "compress ",
        "2024-01-01T00:00:00Z ",
        "worker-7 ",
        "ratio=2.41\n",
    ];
    let picks = random(len / 3 + 1, seed);
    let mut out = Vec::with_capacity(len + 32);
    for p in picks {
        if out.len() >= len {
            break;
        }
        out.extend_from_slice(WORDS[usize::from(p) % WORDS.len()].as_bytes());
    }
    out.resize(len, b'.');
    out
}

/// Little-endian f64 values of a ramp, cut to `len` bytes (so a partial element may trail).
pub fn f64_ramp(len: usize, seed: u64) -> Vec<u8> {
    let start = (seed % 1000) as f64 * 0.25;
    let mut out: Vec<u8> =
        (0..len / 8 + 1).flat_map(|i| (start + i as f64 * 0.001).to_le_bytes()).collect();
    out.truncate(len);
    out
}

/// Data of a given kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Random,
    Zeros,
    Text,
    F64Ramp,
}

pub fn make(kind: Kind, len: usize, seed: u64) -> Vec<u8> {
    match kind {
        Kind::Random => random(len, seed),
        Kind::Zeros => vec![0; len],
        Kind::Text => text(len, seed),
        Kind::F64Ramp => f64_ramp(len, seed),
    }
}
