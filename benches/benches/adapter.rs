//! Criterion benchmarks of the decode-then-matmul adapter (`tetrad_quant::adapter`) beside
//! what bounds it: standalone record decode and dense int4-row matmul of the same matrix.
//!
//! Matrix: 4096 × 4096 per-row int4 (8 MiB packed, larger than this machine's L2 and its
//! share of L3), Gaussian + Laplace rows from `tetrad::synth`, coded as one record. Elements =
//! weights (`O · I`), so `Gelem/s` reads as G weights/s = G nibbles/s.
//! Run: `cargo bench -p tetrad-benches --bench adapter` (thread CPU time by default; see
//! `tetrad_benches::clock`).
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use tetrad_benches::clock::Clock;
use tetrad_benches::synth;
use tetrad_quant::Format;
use tetrad_quant::adapter::{Acts, Rans256Matrix};
use tetrad_quant::kernels::{Matrix, Scales, matmul_with};
use tetrad_rans::{Arm, Table, encode_record_packed, max_record_len};

const O: usize = 4096;
const I: usize = 4096;

fn bench(c: &mut Criterion<Clock>) {
    let (codes, scales) = synth::int4_rows(O, I, synth::Dist::Laplace, 7);
    let table = Table::from_histogram(14, &synth::nibble_histogram(&codes)).expect("table");
    let mut blob = vec![0u8; max_record_len(2 * codes.len(), 256)];
    let n = encode_record_packed(&table, &codes, &mut blob).expect("encode");
    blob.truncate(n);
    let fused = Rans256Matrix::new(&blob, &table, &scales, O, I).expect("record");
    let dense =
        Matrix::new(Format::Int4Row, &codes, Scales::F32(&scales), O, I, 0).expect("matrix");
    let isa = tetrad_quant::isa::best();
    let arm = Arm::best();
    eprintln!("adapter bench: kernel arm {}, decode arm {arm}, record {n} bytes", isa.name());

    let mut g = c.benchmark_group("adapter_4096x4096");
    g.sample_size(10);
    g.throughput(Throughput::Elements((O * I) as u64));
    let mut out = vec![0u8; codes.len()];
    g.bench_function(BenchmarkId::new("record_decode", arm.name()), |b| {
        b.iter(|| fused.decode_into(arm, black_box(&mut out)).expect("decode"))
    });
    for s in [1usize, 16] {
        let x: Vec<f32> = (0..s * I).map(|k| ((k as f32) * 0.01).sin()).collect();
        let mut y = vec![0f32; s * O];
        g.bench_function(BenchmarkId::new(format!("fused_s{s}"), isa.name()), |b| {
            b.iter(|| {
                fused
                    .matmul_with(isa, arm, Acts::F32 { x: &x, s }, black_box(&mut y))
                    .expect("fused")
            })
        });
        g.bench_function(BenchmarkId::new(format!("dense_int4_s{s}"), isa.name()), |b| {
            b.iter(|| matmul_with(isa, &dense, &x, s, black_box(&mut y)).expect("dense"))
        });
    }
    g.finish();
}

fn config() -> Criterion<Clock> {
    Criterion::default().with_measurement(Clock::from_env("adapter")).configure_from_args()
}

criterion_group! { name = benches; config = config(); targets = bench }
criterion_main!(benches);
