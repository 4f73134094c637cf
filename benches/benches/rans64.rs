//! Criterion benchmarks of `int4-rans64-t1` (`tetrad_rans::rans64`): decode and encode per arm,
//! version 3's decode per SIMD arm, and `zstd -d` on the same packed int4 bytes in the same
//! run.
//!
//! Data: 64 MiB of `tetrad_benches::synth::int4_bytes` (per-row int4 of Gaussian/Laplace
//! weights), or the packed int4 file named by `TETRAD_BENCH_INPUT` (for real weights; the
//! bytes are read as they are). Throughput is in nibbles, so criterion's `Gelem/s` reads as
//! G nibbles/s. zstd runs at level 19 (the smallest frame, the ratio reference), level 3 (the
//! CLI default) and level 1 (on int4 data the frame that decodes fastest, see `tetrad bench
//! codecs`). The printed header gives sizes, bits per nibble and the order-0 entropy bound.
//! Run: `cargo bench -p tetrad-benches --bench rans64` (thread CPU time by default; see
//! `tetrad_benches::clock`).
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

use tetrad_benches::clock::Clock;
use tetrad_benches::synth;
use tetrad_rans::rans64::{self, Arm};

fn data() -> (String, Vec<u8>) {
    match std::env::var("TETRAD_BENCH_INPUT") {
        Ok(path) => {
            let bytes = std::fs::read(&path).expect("TETRAD_BENCH_INPUT is readable");
            (path, bytes)
        }
        Err(_) => ("synth64MiB".to_string(), synth::int4_bytes(64 << 20, 0x7E7_2AD)),
    }
}

#[allow(clippy::cast_precision_loss)]
fn benches(c: &mut Criterion<Clock>) {
    let (name, packed) = data();
    let nibbles = 2 * packed.len() as u64;
    let mut blob = vec![0u8; rans64::max_encoded_len(packed.len(), rans64::DEFAULT_CHUNK_SHIFT)];
    let len =
        rans64::encode_v2_into(&packed, rans64::DEFAULT_CHUNK_SHIFT, &mut blob).expect("encode");
    blob.truncate(len);
    let entropy = synth::entropy_bits(&synth::nibble_histogram(&packed));
    let z19 = zstd::bulk::compress(&packed, 19).expect("zstd -19");
    let z3 = zstd::bulk::compress(&packed, 3).expect("zstd -3");
    let z1 = zstd::bulk::compress(&packed, 1).expect("zstd -1");
    let bits = |n: usize| 8.0 * n as f64 / nibbles as f64;
    println!(
        "rans64 {name}: {} packed bytes; int4-rans64-t1 {} bytes ({:.4} bits/nibble, ratio {:.4}); \
         pooled order-0 entropy {entropy:.4} bits/nibble; zstd -19 {} bytes ({:.4}, ratio {:.4}); \
         zstd -3 {} bytes (ratio {:.4})",
        packed.len(),
        len,
        bits(len),
        packed.len() as f64 / len as f64,
        z19.len(),
        bits(z19.len()),
        packed.len() as f64 / z19.len() as f64,
        z3.len(),
        packed.len() as f64 / z3.len() as f64,
    );
    let mut out = vec![0u8; packed.len()];
    for &arm in Arm::ALL.iter().filter(|a| a.is_available()) {
        rans64::decode_with(arm, &blob, &mut out).expect("decode");
        assert_eq!(out, packed, "{arm} must round-trip");
        let mut g = c.benchmark_group(format!("rans64_decode/{arm}"));
        g.throughput(Throughput::Elements(nibbles));
        let samples = if arm == Arm::Scalar { 10 } else { 20 };
        g.sample_size(samples).measurement_time(Duration::from_secs(8));
        g.bench_function(BenchmarkId::from_parameter(&name), |b| {
            b.iter(|| rans64::decode_with(arm, black_box(&blob), &mut out))
        });
        g.finish();
    }
    // Version 3 (16-bit states, byte refills) of the same bytes, every decode arm.
    let mut blob3 = vec![0u8; rans64::max_encoded_len(packed.len(), rans64::DEFAULT_CHUNK_SHIFT)];
    let len3 = rans64::encode_v3_into(&packed, rans64::DEFAULT_CHUNK_SHIFT, &mut blob3)
        .expect("encode version 3");
    blob3.truncate(len3);
    println!(
        "rans64 {name}: version 3 {len3} bytes ({:.4} bits/nibble, {:.4} x version 2)",
        bits(len3),
        len3 as f64 / len as f64
    );
    for &arm in Arm::ALL.iter().filter(|a| a.is_available() && **a != Arm::Scalar) {
        rans64::decode_with(arm, &blob3, &mut out).expect("decode version 3");
        assert_eq!(out, packed, "{arm} must round-trip version 3");
        let mut g = c.benchmark_group(format!("rans64_v3_decode/{arm}"));
        g.throughput(Throughput::Elements(nibbles));
        g.sample_size(20).measurement_time(Duration::from_secs(8));
        g.bench_function(BenchmarkId::from_parameter(&name), |b| {
            b.iter(|| rans64::decode_with(arm, black_box(&blob3), &mut out))
        });
        g.finish();
    }
    let mut dz = zstd::bulk::Decompressor::new().expect("zstd context");
    for (level, z) in [(19, &z19), (3, &z3), (1, &z1)] {
        let mut g = c.benchmark_group(format!("zstd_decode/{level}"));
        g.throughput(Throughput::Elements(nibbles));
        g.sample_size(20).measurement_time(Duration::from_secs(8));
        g.bench_function(BenchmarkId::from_parameter(&name), |b| {
            b.iter(|| {
                let n = dz.decompress_to_buffer(black_box(z.as_slice()), &mut out).expect("zstd");
                assert_eq!(n, packed.len());
            })
        });
        g.finish();
    }
    let mut g = c.benchmark_group("rans64_encode");
    g.throughput(Throughput::Elements(nibbles));
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    let mut dst = vec![0u8; rans64::max_encoded_len(packed.len(), rans64::DEFAULT_CHUNK_SHIFT)];
    for &arm in Arm::ALL.iter().filter(|a| a.can_encode()) {
        g.bench_function(BenchmarkId::new(arm.name(), &name), |b| {
            b.iter(|| {
                rans64::encode_v2_with(
                    arm,
                    black_box(&packed),
                    rans64::DEFAULT_CHUNK_SHIFT,
                    &mut dst,
                )
            })
        });
    }
    g.finish();
}

fn config() -> Criterion<Clock> {
    Criterion::default()
        .with_measurement(Clock::from_env("rans64"))
        .warm_up_time(Duration::from_secs(1))
}

criterion_group! { name = group; config = config(); targets = benches }
criterion_main!(group);
