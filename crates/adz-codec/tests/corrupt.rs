//! Hostile payloads: for every codec, random bytes, truncations, flipped bytes and wrong
//! destination lengths give an error (or, for a flipped byte, possibly other data: the frame's
//! raw checksum catches that a layer up), and never a panic or a write past the destination.

mod common;

use adz_codec::{max_compressed_len, CodecContext, CodecId, CodecSpec, Error};
use common::{make, random, Kind};
use proptest::prelude::*;

/// One representative spec per codec, plus the extremes that change the encoder most.
const SPECS: [&str; 8] =
    ["none", "lz4:1", "lz4:65537", "lz4hc:12", "zstd:-7", "zstd:3", "zstd:19", "xz:6"];

fn specs() -> impl Iterator<Item = CodecSpec> {
    SPECS.iter().map(|s| s.parse().unwrap())
}

/// A valid payload of `raw` (compressible text followed by some random bytes, so the payload
/// has both matches and literals).
fn raw_data() -> Vec<u8> {
    let mut raw = make(Kind::Text, 6000, 1);
    raw.extend_from_slice(&random(500, 2));
    raw
}

fn encode(ctx: &mut CodecContext, spec: CodecSpec, raw: &[u8]) -> Vec<u8> {
    let mut payload = vec![0; max_compressed_len(spec.id(), raw.len())];
    let n = ctx.compress_into(spec, raw, &mut payload).unwrap();
    payload.truncate(n);
    payload
}

fn assert_corrupt(result: adz_codec::Result<()>, codec: CodecId, what: &str) {
    match result {
        Err(Error::Corrupt { codec: c, .. }) if c == codec => {}
        other => panic!("{codec} {what}: expected Err(Corrupt), got {other:?}"),
    }
}

#[test]
fn random_bytes_are_rejected() {
    let mut ctx = CodecContext::new();
    for id in CodecId::ALL {
        for seed in 0..300u64 {
            let src = random(1 + (seed as usize * 37) % 3000, seed);
            // For `none` a payload of exactly the raw length is valid whatever it holds.
            let dst_len =
                if id == CodecId::None { src.len() + 1 } else { (seed as usize * 101) % 20_000 };
            let mut dst = vec![0; dst_len];
            assert_corrupt(
                ctx.decompress_into(id, &src, &mut dst),
                id,
                &format!("random seed {seed}"),
            );
        }
    }
}

#[test]
fn every_truncation_is_rejected() {
    let raw = raw_data();
    let mut ctx = CodecContext::new();
    for spec in specs() {
        let payload = encode(&mut ctx, spec, &raw);
        let mut dst = vec![0; raw.len()];
        for cut in 0..payload.len() {
            assert_corrupt(
                ctx.decompress_into(spec.id(), &payload[..cut], &mut dst),
                spec.id(),
                &format!("{spec} cut to {cut} of {}", payload.len()),
            );
        }
        ctx.decompress_into(spec.id(), &payload, &mut dst).unwrap();
        assert_eq!(dst, raw);
    }
}

#[test]
fn destination_one_byte_off_is_rejected() {
    let raw = raw_data();
    let mut ctx = CodecContext::new();
    for spec in specs() {
        let payload = encode(&mut ctx, spec, &raw);
        for len in [raw.len() - 1, raw.len() + 1, 0, raw.len() * 2] {
            let mut dst = vec![0; len];
            assert_corrupt(
                ctx.decompress_into(spec.id(), &payload, &mut dst),
                spec.id(),
                &format!("{spec} into {len} bytes"),
            );
        }
    }
}

#[test]
fn trailing_bytes_are_rejected() {
    let raw = raw_data();
    let mut ctx = CodecContext::new();
    for spec in specs() {
        let mut payload = encode(&mut ctx, spec, &raw);
        payload.push(0);
        let mut dst = vec![0; raw.len()];
        assert_corrupt(
            ctx.decompress_into(spec.id(), &payload, &mut dst),
            spec.id(),
            "trailing byte",
        );
    }
}

/// Every single-byte flip of a payload: an error or some output, never a panic. zstd and xz
/// must catch a good share themselves (headers, entropy coding), which shows their checks are
/// reached; LZ4 has no entropy coding, and a flipped literal (or a raw block of fast zstd) is
/// just other data, left to the frame's raw checksum.
#[test]
fn flipped_bytes_never_panic() {
    let raw = raw_data();
    let mut ctx = CodecContext::new();
    for spec in specs() {
        let payload = encode(&mut ctx, spec, &raw);
        let mut dst = vec![0; raw.len()];
        let (mut errors, mut same) = (0usize, 0usize);
        for at in 0..payload.len() {
            for mask in [0x01, 0x80, 0xFF] {
                let mut bad = payload.clone();
                bad[at] ^= mask;
                match ctx.decompress_into(spec.id(), &bad, &mut dst) {
                    Err(Error::Corrupt { .. }) => errors += 1,
                    Err(other) => panic!("{spec}: unexpected {other:?}"),
                    Ok(()) => same += usize::from(dst == raw),
                }
            }
        }
        let total = 3 * payload.len();
        if spec.id() == CodecId::None {
            assert_eq!(errors, 0, "none has nothing to check");
            assert_eq!(same, 0, "every flip of a stored byte changes the data");
        } else if spec.id() == CodecId::Zstd || spec.id() == CodecId::Xz {
            assert!(errors * 5 > total, "{spec}: only {errors} of {total} flips detected");
        } else {
            assert!(errors > 0, "{spec}: no flip detected");
        }
    }
}

proptest! {
    /// Arbitrary bytes into an arbitrary destination, for every codec: never a panic, and an
    /// `Ok` only when the payload decodes to exactly the destination.
    #[test]
    fn arbitrary_payloads_never_panic(
        src in prop::collection::vec(any::<u8>(), 0..600),
        dst_len in 0usize..3000,
    ) {
        let mut ctx = CodecContext::new();
        for id in CodecId::ALL {
            let mut dst = vec![0; dst_len];
            match ctx.decompress_into(id, &src, &mut dst) {
                Ok(()) => prop_assert!(id != CodecId::None || src.len() == dst_len),
                Err(Error::Corrupt { codec, .. }) => prop_assert_eq!(codec, id),
                Err(other) => prop_assert!(false, "{}: unexpected {:?}", id, other),
            }
        }
    }

    /// Valid payloads with a few random bytes overwritten.
    #[test]
    fn mangled_payloads_never_panic(
        spec in prop::sample::select(SPECS.to_vec()),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let spec: CodecSpec = spec.parse().unwrap();
        let raw = make(Kind::Text, 2000, 9);
        let mut ctx = CodecContext::new();
        let mut payload = encode(&mut ctx, spec, &raw);
        for (at, byte) in edits {
            let i = at.index(payload.len());
            payload[i] = byte;
        }
        let mut dst = vec![0; raw.len()];
        let _ = ctx.decompress_into(spec.id(), &payload, &mut dst);
    }
}
