//! Quick decode timing: the best wall time of many runs per arm (not a benchmark, see
//! benches/benches/rans.rs). Wall time, because a thread's CPU time is only accounted at
//! scheduler ticks on some kernels (4 ms steps: every arm then reads the same).
//! Run: `cargo run --release -p tetrad-rans --example decode_speed [BYTES [ARM [HIST]]]`, where
//! `HIST` is 16 comma-separated symbol counts (default: a weight-like bell).
#![allow(missing_docs, clippy::cast_possible_truncation, clippy::cast_precision_loss)]
use std::time::Instant;
use tetrad_rans::{Arm, Record, decode_record_with, encode_record_packed, max_record_len};

mod support;

fn main() {
    let support::Setup { table, packed, only } = support::setup(1 << 20);
    let bytes = packed.len();
    let mut rec = vec![0u8; max_record_len(2 * bytes, 256)];
    let len = encode_record_packed(&table, &packed, &mut rec).unwrap();
    rec.truncate(len);
    let r = Record::parse(&rec).unwrap();
    let mut out = vec![0u8; bytes];
    let reps = 40;
    for &arm in Arm::ALL
        .iter()
        .filter(|a| a.is_available() && only.as_deref().is_none_or(|o| o == a.name()))
    {
        let mut best = f64::MAX;
        for _ in 0..reps {
            let t = Instant::now();
            decode_record_with(arm, &table, &r, &mut out).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
        }
        assert_eq!(out, packed);
        println!("{arm}: {:.3} G nibbles/s", 2.0 * bytes as f64 / best / 1e9);
    }
}
