//! Quick `int4-rans64-t1` decode timing: the best wall time of many whole-blob decodes per arm
//! (not a benchmark: benches/benches/rans64.rs measures it beside zstd). The companion of
//! `decode_speed` (the record format), for A/B runs of one arm's loop.
//! Run: `cargo run --release -p tetrad-rans --example rans64_speed [BYTES [ARM [HIST]]]`, where
//! `HIST` is 16 comma-separated symbol counts (default: a weight-like bell).
#![allow(missing_docs, clippy::cast_possible_truncation, clippy::cast_precision_loss)]
use std::time::Instant;
use tetrad_rans::Table;
use tetrad_rans::rans64::{Arm, DEFAULT_CHUNK_SHIFT, decode_with, encode_into, max_encoded_len};

fn main() {
    let bytes: usize = std::env::args().nth(1).map_or(8 << 20, |s| s.parse().unwrap());
    // The same default bell and the same draw as `decode_speed`: slots of a 14-bit table
    // built from the histogram, picked by a fixed xorshift.
    let hist: [u64; 16] = std::env::args().nth(3).map_or(
        [0, 60, 90, 160, 300, 600, 1200, 2200, 3000, 2200, 1200, 600, 300, 160, 90, 60],
        |h| {
            let v: Vec<u64> = h.split(',').map(|c| c.trim().parse().unwrap()).collect();
            v.try_into().expect("HIST: 16 comma-separated counts")
        },
    );
    let table = Table::from_histogram(14, &hist).unwrap();
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut nib = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        table.symbol((s >> 20) as usize & 16383)
    };
    let packed: Vec<u8> = (0..bytes).map(|_| nib() | (nib() << 4)).collect();
    let mut blob = vec![0u8; max_encoded_len(bytes, DEFAULT_CHUNK_SHIFT)];
    let len = encode_into(&packed, DEFAULT_CHUNK_SHIFT, &mut blob).unwrap();
    blob.truncate(len);
    let mut out = vec![0u8; bytes];
    let only = std::env::args().nth(2).filter(|a| a != "all");
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
