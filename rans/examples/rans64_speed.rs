//! Quick `int4-rans64-t1` decode timing: the best wall time of many whole-blob decodes per arm
//! (not a benchmark: benches/benches/rans64.rs measures it beside zstd). The companion of
//! `decode_speed` (the record format), for A/B runs of one arm's loop.
//! Run: `cargo run --release -p tetrad-rans --example rans64_speed [BYTES [ARM [HIST]]]`, where
//! `HIST` is 16 comma-separated symbol counts (default: a weight-like bell).
#![allow(missing_docs, clippy::cast_possible_truncation, clippy::cast_precision_loss)]
use std::time::Instant;
use tetrad_rans::rans64::{Arm, DEFAULT_CHUNK_SHIFT, decode_with, encode_into, max_encoded_len};

mod support;

fn main() {
    // The same data as `decode_speed` (`support::setup`).
    let support::Setup { packed, only, .. } = support::setup(8 << 20);
    let bytes = packed.len();
    let mut blob = vec![0u8; max_encoded_len(bytes, DEFAULT_CHUNK_SHIFT)];
    let len = encode_into(&packed, DEFAULT_CHUNK_SHIFT, &mut blob).unwrap();
    blob.truncate(len);
    let mut out = vec![0u8; bytes];
    for &arm in Arm::ALL
        .iter()
        .filter(|a| a.is_available() && only.as_deref().is_none_or(|o| o == a.name()))
    {
        let mut best = f64::MAX;
        for _ in 0..20 {
            let t = Instant::now();
            decode_with(arm, &blob, &mut out).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
        }
        assert_eq!(out, packed);
        println!("{}: {:.3} G nibbles/s", arm.name(), 2.0 * bytes as f64 / best / 1e9);
    }
}
