//! Criterion benchmarks of the CFS1 codec (`tetrad-fse`) on realistic per-row int4 codes,
//! with zstd (level 19 encode once, its decoder timed) on the same bytes in the same run.
//!
//! Throughput is in elements = nibbles (int4 weights) of *decoded output*, so criterion's
//! "Melem/s" divided by 1000 is G nibbles/s. Run with
//! `cargo bench -p tetrad-benches --bench cfs1`.
//!
//! Time is the shared bench clock [`tetrad_benches::clock`]: this thread's on-CPU time by
//! default (on a shared machine wall time mostly measures the run queue), wall time with `TETRAD_BENCH_CLOCK=wall`. On-CPU time still includes the
//! neighbours' cache and SMT interference, so it is a slightly pessimistic single-core figure.
//! Every group here is single-threaded, so the thread clock is the right one.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use tetrad_benches::clock::Clock;
use tetrad_benches::synth;
use tetrad_fse::{decode_into, encode_into, max_encoded_len};

const SIZES: [(usize, &str); 2] = [(1 << 20, "1MiB"), (64 << 20, "64MiB")];

/// The decoder's per-state recurrence alone — slot → table load → multiply → add → branch-free
/// refill select — for one state over `steps` steps, with constant refill bytes and no
/// stream: one step can only start when the previous one ends, so time per step is the
/// chain's latency. The two-state decoder overlaps two such chains, so one pair per chain
/// latency, i.e. `2 / latency` nibbles per second, is its bound.
fn one_state_chain(table: &[(u16, u16); 4096], steps: usize, mut x: u32) -> u32 {
    const L: u32 = 1 << 23;
    for _ in 0..steps {
        let (f, b) = table[(x & 4095) as usize];
        let y = u32::from(f) * (x >> 12) + u32::from(b & 0xfff);
        let one = (y << 8) | 0xa5;
        let two = (y << 16) | 0x5a5a;
        x = std::hint::select_unpredictable(
            y < 1 << 15,
            two,
            std::hint::select_unpredictable(y < L, one, y),
        );
    }
    x
}

fn chain_table(blob: &[u8]) -> [(u16, u16); 4096] {
    let mut t = [(0u16, 0u16); 4096];
    let mut slot = 0;
    for s in 0..16u16 {
        let at = 9 + 2 * usize::from(s);
        let f = u16::from_le_bytes([blob[at], blob[at + 1]]);
        for k in 0..f {
            t[slot] = (f, k | s << 12);
            slot += 1;
        }
    }
    t
}

fn cfs1(c: &mut Criterion<Clock>) {
    for (bytes, label) in SIZES {
        let src = synth::int4_bytes(bytes, 0x7e7_4ad);
        let h = synth::nibble_histogram(&src);
        let mut blob = vec![0u8; max_encoded_len(src.len())];
        let len = encode_into(&src, &mut blob).expect("bound-sized buffer");
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
        g.measurement_time(Duration::from_secs(if bytes > 1 << 20 { 6 } else { 3 }));

        let mut out = vec![0u8; src.len()];
        assert_eq!(decode_into(&blob, &mut out), Ok(src.len()));
        assert_eq!(out, src);
        g.bench_function(BenchmarkId::new("decode", label), |b| {
            b.iter(|| decode_into(black_box(&blob), black_box(&mut out)))
        });
        let mut enc = vec![0u8; max_encoded_len(src.len())];
        g.bench_function(BenchmarkId::new("encode", label), |b| {
            b.iter(|| encode_into(black_box(&src), black_box(&mut enc)))
        });
        let mut dz = zstd::bulk::Decompressor::new().expect("zstd context");
        assert_eq!(dz.decompress_to_buffer(&zblob, &mut out).expect("zstd decodes"), src.len());
        assert_eq!(out, src);
        g.bench_function(BenchmarkId::new("zstd19_decode", label), |b| {
            b.iter(|| dz.decompress_to_buffer(black_box(&zblob), black_box(&mut out)))
        });
        if bytes == 1 << 20 {
            let table = chain_table(&blob);
            let steps = src.len();
            // Elements = steps; the decode bound in nibbles/s is twice this rate.
            g.throughput(Throughput::Elements(steps as u64));
            g.bench_function(BenchmarkId::new("one_state_chain_steps", label), |b| {
                b.iter(|| one_state_chain(black_box(&table), steps, black_box(1 << 23)))
            });
        }
        g.finish();
    }
}

fn config() -> Criterion<Clock> {
    Criterion::default().with_measurement(Clock::from_env("cfs1")).configure_from_args()
}

criterion_group! { name = benches; config = config(); targets = cfs1 }
criterion_main!(benches);
