//! Quick decode timing: the best wall time of many runs per arm (not a benchmark, see
//! benches/benches/rans.rs). Wall time, because a thread's CPU time is only accounted at
//! scheduler ticks on some kernels (4 ms steps: every arm then reads the same).
//! Run: `cargo run --release -p tetrad-rans --example decode_speed [BYTES [ARM [HIST]]]`, where
//! `HIST` is 16 comma-separated symbol counts (default: a weight-like bell).
#![allow(missing_docs, clippy::cast_possible_truncation, clippy::cast_precision_loss)]
use std::time::Instant;
use tetrad_rans::{Arm, Record, Table, decode_record_with, encode_record_packed, max_record_len};

fn main() {
    let bytes: usize = std::env::args().nth(1).map_or(1 << 20, |s| s.parse().unwrap());
    // A weight-like histogram (peak at 8, code 0 absent), or the caller's.
    let hist: [u64; 16] = std::env::args().nth(3).map_or(
        [0, 60, 90, 160, 300, 600, 1200, 2200, 3000, 2200, 1200, 600, 300, 160, 90, 60],
        |h| {
            let v: Vec<u64> = h.split(',').map(|c| c.trim().parse().unwrap()).collect();
            v.try_into().expect("HIST: 16 comma-separated counts")
        },
    );
    let table = Table::from_histogram(14, &hist).unwrap();
    let mut s = 0x1234_5678_9abc_def0u64;
    let packed: Vec<u8> = (0..bytes)
        .map(|_| {
            let mut nib = || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                table.symbol((s >> 20) as usize & 16383)
            };
            nib() | (nib() << 4)
        })
        .collect();
    let mut rec = vec![0u8; max_record_len(2 * bytes, 256)];
    let len = encode_record_packed(&table, &packed, &mut rec).unwrap();
    rec.truncate(len);
    let r = Record::parse_format(&rec).unwrap();
    let mut out = vec![0u8; bytes];
    let only = std::env::args().nth(2).filter(|a| a != "all");
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
