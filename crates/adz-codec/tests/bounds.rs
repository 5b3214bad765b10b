//! `max_compressed_len` is an upper bound: incompressible data, which makes every codec
//! expand, fits in it at every parameter, including into a buffer of exactly that size.

mod common;

use adz_codec::{max_compressed_len, CodecContext, CodecId, CodecSpec};
use common::random;

fn check(ctx: &mut CodecContext, spec: CodecSpec, raw: &[u8]) {
    let bound = max_compressed_len(spec.id(), raw.len());
    assert_eq!(bound, ctx.codec(spec.id()).max_compressed_len(raw.len()));
    let mut dst = vec![0; bound];
    let n = ctx
        .compress_into(spec, raw, &mut dst)
        .unwrap_or_else(|e| panic!("{spec} on {} random bytes: {e}", raw.len()));
    assert!(n <= bound, "{spec}: {n} > {bound}");
    let mut back = vec![0; raw.len()];
    ctx.decompress_into(spec.id(), &dst[..n], &mut back).unwrap();
    assert!(back == raw, "{spec} on {} random bytes", raw.len());
}

/// Every parameter of the small ranges, a sample of lz4's accelerations.
fn all_params(id: CodecId) -> Vec<i32> {
    match id {
        CodecId::Lz4 => vec![1, 2, 3, 8, 17, 100, 1000, 65537],
        _ => id.param_range().collect(),
    }
}

#[test]
fn bound_holds_for_random_data_at_every_parameter() {
    let mut ctx = CodecContext::new();
    for id in CodecId::ALL {
        for param in all_params(id) {
            let spec = CodecSpec::new(id, param).unwrap();
            for len in [0, 1, 2, 15, 255, 4097, 70_001] {
                check(&mut ctx, spec, &random(len, len as u64 + 11));
            }
            // An empty `Vec` has a dangling pointer: the C libraries must not touch it.
            check(&mut ctx, spec, &Vec::new());
        }
    }
}

/// Long enough for xz's chunking and zstd's block splitting to add up.
#[test]
fn bound_holds_for_a_large_random_block() {
    let raw = random(3 << 20, 99);
    let mut ctx = CodecContext::new();
    for spec in ["none", "lz4:1", "lz4hc:1", "zstd:-7", "zstd:1", "xz:0"] {
        check(&mut ctx, spec.parse().unwrap(), &raw);
    }
}
