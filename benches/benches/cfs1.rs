//! Criterion benchmarks of the CFS1 codec (`tetrad-fse`) on realistic per-row int4 codes,
//! with zstd (level 19 encode once, its decoder timed) on the same bytes in the same run.
//!
//! Throughput is in elements = nibbles (int4 weights) of *decoded output*, so criterion's
//! "Melem/s" divided by 1000 is G nibbles/s. Run with
//! `cargo bench -p tetrad-benches --bench cfs1`.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use tetrad_benches::synth;
use tetrad_fse::{compress_into, decompress_into, max_compressed_len};

const SIZES: [(usize, &str); 2] = [(1 << 20, "1MiB"), (64 << 20, "64MiB")];

fn cfs1(c: &mut Criterion) {
    for (bytes, label) in SIZES {
        let src = synth::int4_bytes(bytes, 0x7e7_4ad);
        let h = synth::nibble_histogram(&src);
        let mut blob = vec![0u8; max_compressed_len(src.len())];
        let len = compress_into(&src, &mut blob).expect("bound-sized buffer");
        blob.truncate(len);
        let zblob = zstd::bulk::compress(&src, 19).expect("zstd compresses");
        #[allow(clippy::cast_precision_loss)]
        let (r_cfs1, r_zstd) =
            (src.len() as f64 / len as f64, src.len() as f64 / zblob.len() as f64);
        eprintln!(
            "cfs1/{label}: {} bytes, order-0 entropy {:.4} bits/nibble (limit {:.4}x), \
             cfs1 {} bytes ({r_cfs1:.4}x), zstd-19 {} bytes ({r_zstd:.4}x)",
            src.len(),
            synth::entropy_bits(&h),
            4.0 / synth::entropy_bits(&h),
            len,
            zblob.len()
        );

        let mut g = c.benchmark_group(format!("cfs1/{label}"));
        g.throughput(Throughput::Elements(2 * src.len() as u64));
        g.sample_size(10);
        g.warm_up_time(Duration::from_secs(1));
        g.measurement_time(Duration::from_secs(if bytes > 1 << 20 { 8 } else { 3 }));

        let mut out = vec![0u8; src.len()];
        assert_eq!(decompress_into(&blob, &mut out), Ok(src.len()));
        assert_eq!(out, src);
        g.bench_function(BenchmarkId::new("decode", label), |b| {
            b.iter(|| decompress_into(black_box(&blob), black_box(&mut out)))
        });
        let mut enc = vec![0u8; max_compressed_len(src.len())];
        g.bench_function(BenchmarkId::new("encode", label), |b| {
            b.iter(|| compress_into(black_box(&src), black_box(&mut enc)))
        });
        let mut dz = zstd::bulk::Decompressor::new().expect("zstd context");
        assert_eq!(dz.decompress_to_buffer(&zblob, &mut out).expect("zstd decodes"), src.len());
        assert_eq!(out, src);
        g.bench_function(BenchmarkId::new("zstd19_decode", label), |b| {
            b.iter(|| dz.decompress_to_buffer(black_box(&zblob), black_box(&mut out)))
        });
        g.finish();
    }
}

criterion_group!(benches, cfs1);
criterion_main!(benches);
