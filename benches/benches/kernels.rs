//! Kernel throughput (criterion): G weights/s for `S = 1` per format, accumulation mode and
//! available arm, on (a) an L2-resident matrix and (b) a matrix several times the L3 size, plus
//! a STREAM-like read of the same weight bytes in the same run (the DRAM ceiling), and 2-thread
//! row splitting on the large int4-row / int8-row matrices.
//!
//! Run: `cargo bench -p tetrad-benches --bench kernels` (filter with a trailing substring, e.g.
//! `-- int4-row`). Current results, with the CPU: docs/PERFORMANCE.md, "Kernels".
//! `TETRAD_DRAM_I=N` sets the row length of the DRAM matrices (default 14336).
//!
//! Clock: a machine may be shared, so the single-thread groups measure this thread's
//! CPU time (`/proc/thread-self/schedstat`) unless `TETRAD_BENCH_CLOCK=wall`; the 2-thread
//! group always uses wall time (CPU time of one thread cannot measure two).
#![allow(missing_docs, clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tetrad_quant::kernels::{self, Matrix, Scales};
use tetrad_quant::{Format, Isa, isa};

struct Owned {
    format: Format,
    o: usize,
    i: usize,
    gs: usize,
    w: Vec<u8>,
    sf: Vec<f32>,
    se: Vec<u8>,
}

impl Owned {
    fn matrix(&self) -> Matrix<'_> {
        let scales = match self.format {
            Format::F32 => Scales::None,
            Format::Mxfp4 => Scales::Ue8m0(&self.se),
            _ => Scales::F32(&self.sf),
        };
        Matrix::new(self.format, &self.w, scales, self.o, self.i, self.gs).unwrap()
    }
}

fn stride(format: Format, i: usize) -> usize {
    match format {
        Format::F32 => 4 * i,
        Format::Int8Row | Format::Fp8E4m3B128 => i,
        Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => i.div_ceil(2),
        Format::Int2Row => i.div_ceil(4),
        Format::Int3G64 => i.div_ceil(64) * 24,
        _ => unreachable!(),
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn make(format: Format, gs: usize, o: usize, i: usize) -> Owned {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut w = vec![0u8; o * stride(format, i)];
    for c in w.chunks_mut(8) {
        let v = rng.next().to_le_bytes();
        c.copy_from_slice(&v[..c.len()]);
    }
    match format {
        Format::F32 => {
            for c in w.chunks_exact_mut(4) {
                let v = (rng.next() % 2000) as f32 / 1000.0 - 1.0;
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        Format::Fp8E4m3B128 => w.iter_mut().filter(|b| **b & 0x7F == 0x7F).for_each(|b| *b = 0x7E),
        _ => {}
    }
    let gl = match format {
        Format::Int4Grouped => gs,
        Format::Int3G64 => 64,
        Format::Mxfp4 => 32,
        Format::Fp8E4m3B128 => 128,
        _ => i,
    };
    let groups = i.div_ceil(gl);
    let ns = match format {
        Format::F32 | Format::Mxfp4 => 0,
        Format::Int8Row | Format::Int4Row | Format::Int2Row => o,
        Format::Fp8E4m3B128 => o.div_ceil(128) * groups,
        _ => o * groups,
    };
    let sf = (0..ns).map(|k| 0.01 + (k % 7) as f32 * 0.001).collect();
    let se = if format == Format::Mxfp4 {
        (0..o * groups).map(|k| 120 + (k % 16) as u8).collect()
    } else {
        vec![]
    };
    Owned { format, o, i, gs: gs.max(1), w, sf, se }
}

/// STREAM-like read: sums the bytes as u64 words with four independent accumulators.
fn stream_read(bytes: &[u8]) -> u64 {
    let mut a = [0u64; 4];
    for c in bytes.chunks_exact(32) {
        for (k, acc) in a.iter_mut().enumerate() {
            *acc = acc.wrapping_add(u64::from_le_bytes(c[8 * k..8 * k + 8].try_into().unwrap()));
        }
    }
    a.iter().fold(0, |s, v| s.wrapping_add(*v))
}

const FORMATS: [(Format, usize, &str); 8] = [
    (Format::F32, 0, "f32"),
    (Format::Int8Row, 0, "int8-row"),
    (Format::Int4Row, 0, "int4-row"),
    (Format::Int4Grouped, 32, "int4-grouped-g32"),
    (Format::Int2Row, 0, "int2-row"),
    (Format::Int3G64, 0, "int3-g64"),
    (Format::Mxfp4, 0, "mxfp4"),
    (Format::Fp8E4m3B128, 0, "fp8-e4m3-b128"),
];

use tetrad_benches::clock::Clock;

type C = Criterion<Clock>;

fn bench_size(c: &mut C, label: &str, shape: impl Fn(Format) -> (usize, usize), arms: &[Isa]) {
    for (format, gs, name) in FORMATS {
        let (o, i) = shape(format);
        let t = make(format, gs, o, i);
        let m = t.matrix();
        let x: Vec<f32> = (0..i).map(|k| ((k * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
        let mut q = vec![0i8; i];
        let mut qs = [0f32; 1];
        let xq = kernels::quantize_activations(&x, 1, i, &mut q, &mut qs).unwrap();
        let mut y = vec![0f32; o];
        let mut g = c.benchmark_group(format!("kernels-{label}/{name}"));
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
        g.throughput(Throughput::Elements((o * i) as u64));
        g.bench_function("stream-read", |b| b.iter(|| black_box(stream_read(black_box(&t.w)))));
        for &arm in arms {
            g.bench_function(format!("f32/{arm}"), |b| {
                b.iter(|| kernels::matmul_with(arm, &m, black_box(&x), 1, &mut y).unwrap());
            });
            if m.has_q8() {
                g.bench_function(format!("q8/{arm}"), |b| {
                    b.iter(|| kernels::matmul_q8_with(arm, &m, black_box(&xq), &mut y).unwrap());
                });
            }
            if format == Format::Fp8E4m3B128 {
                // A matrix checked once for NaN codes (none here): the kernels skip their
                // per-block probes, as an engine's long-lived weights would.
                let mc = m.with_nan_codes_checked();
                assert!(mc.fp8_nan_free());
                g.bench_function(format!("f32-checked/{arm}"), |b| {
                    b.iter(|| kernels::matmul_with(arm, &mc, black_box(&x), 1, &mut y).unwrap());
                });
            }
        }
        g.finish();
    }
}

/// Rows split over two threads with the row-range API (large int4-row / int8-row).
fn bench_threads(c: &mut Criterion, arm: Isa) {
    for (format, name) in [(Format::Int4Row, "int4-row"), (Format::Int8Row, "int8-row")] {
        let (o, i) = large_shape(format);
        let t = make(format, 0, o, i);
        let m = t.matrix();
        let x: Vec<f32> = (0..i).map(|k| ((k * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
        let mut q = vec![0i8; i];
        let mut qs = [0f32; 1];
        let xq = kernels::quantize_activations(&x, 1, i, &mut q, &mut qs).unwrap();
        let mut y = vec![0f32; o];
        let mut g = c.benchmark_group(format!("kernels-dram-2threads/{name}"));
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
        g.throughput(Throughput::Elements((o * i) as u64));
        let half = o / 2;
        g.bench_function(format!("f32/{arm}"), |b| {
            b.iter(|| {
                let (y0, y1) = y.split_at_mut(half);
                std::thread::scope(|s| {
                    s.spawn(|| kernels::matmul_rows_with(arm, &m, &x, 1, 0..half, y0).unwrap());
                    kernels::matmul_rows_with(arm, &m, &x, 1, half..o, y1).unwrap();
                });
            });
        });
        g.bench_function(format!("q8/{arm}"), |b| {
            b.iter(|| {
                let (y0, y1) = y.split_at_mut(half);
                std::thread::scope(|s| {
                    s.spawn(|| kernels::matmul_q8_rows_with(arm, &m, &xq, 0..half, y0).unwrap());
                    kernels::matmul_q8_rows_with(arm, &m, &xq, half..o, y1).unwrap();
                });
            });
        });
        g.bench_function("stream-read-2threads", |b| {
            b.iter(|| {
                let (w0, w1) = t.w.split_at(t.w.len() / 2);
                std::thread::scope(|s| {
                    let h = s.spawn(|| stream_read(w0));
                    black_box(stream_read(w1).wrapping_add(h.join().unwrap()))
                })
            });
        });
        g.finish();
    }
}

/// L2-resident: 512 × 1024 weights (256 KiB of int4; f32 is 2 MiB and is not L2-resident).
fn l2_shape(_: Format) -> (usize, usize) {
    (512, 1024)
}

/// ≫ L3 (32 MiB here): I = 14336 (or `TETRAD_DRAM_I`) and at least 4096 rows, enough rows for
/// ≥ 128 MiB of weights.
fn large_shape(format: Format) -> (usize, usize) {
    let i = std::env::var("TETRAD_DRAM_I").ok().and_then(|v| v.parse().ok()).unwrap_or(14336);
    let o = (128usize << 20).div_ceil(stride(format, i)).max(4096);
    (o, i)
}

fn kernels_bench(c: &mut C) {
    let simd: Vec<Isa> = isa::available().filter(|a| *a != Isa::Scalar).collect();
    let mut l2_arms = vec![Isa::Scalar];
    l2_arms.extend(&simd);
    eprintln!("best arm: {}; benchmarking {:?}", isa::best(), l2_arms);
    bench_size(c, "l2", l2_shape, &l2_arms);
    bench_size(c, "dram", large_shape, &simd);
}

fn threads_bench(c: &mut Criterion) {
    bench_threads(c, isa::best());
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(Clock::from_env("kernels"));
    targets = kernels_bench
}
criterion_group!(threads, threads_bench);
criterion_main!(benches, threads);
