//! Criterion benchmarks of the decode-then-matmul adapter (`tetrad_quant::adapter`) beside
//! what bounds it: standalone decode and dense int4-row matmul of the same matrix, for the
//! three compressed forms (`int4-rans256-g0` record, CFS1 blob, `int4-rans64-t1` blob: one
//! `tetrad_quant::adapter::FusedMatrix` each), and the two-thread pipeline of
//! `tetrad::adapter`.
//!
//! Matrix: 4096 × 4096 per-row int4 (8 MiB packed, larger than this machine's L2 and its
//! share of L3), Laplace rows from `tetrad::synth`, coded as one record and as one CFS1 blob.
//! Elements = weights (`O · I`), so `Gelem/s` reads as G weights/s = G nibbles/s.
//! Activations are f32, except `fused_q8_s*` / `dense_int4_q8_s*` (the record adapter and the
//! dense kernel on int8-quantized activations, quantized inside the timed loop).
//!
//! `adapter_prepared_4096x4096` multiplies the same matrices through a container: one
//! `tetrad::prepared::PreparedTensor` per tensor (`prepared_*`: `matmul` with its held
//! scratch) against the per-call path an engine without it runs (`percall_*`:
//! `Container::tensor` and `TensorView::matmul` on every call), for dense int4-row, a record,
//! an `int4-rans64-t1` blob and a CFS1 blob, on one thread (CPU time).
//!
//! Groups: `adapter_4096x4096` is single-threaded and measured on this thread's CPU time
//! (`tetrad_benches::clock`, `TETRAD_BENCH_CLOCK=wall` for wall time);
//! `adapter_threads_4096x4096` runs 1 and 2 threads and is always measured in **wall** time
//! (thread CPU time would miss the second thread), so it is only meaningful on a machine with
//! two idle cores.
//! Run: `cargo bench -p tetrad-benches --bench adapter`.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use tetrad_benches::clock::Clock;
use tetrad_benches::synth;
use tetrad_quant::Format;
use tetrad_quant::adapter::{Acts, Cfs1Matrix, Rans256Matrix};
use tetrad_quant::adapter_rans64::Rans64Matrix;
use tetrad_quant::kernels::{
    Matrix, Scales, matmul_q8_with, matmul_rows_with, matmul_with, quantize_activations,
};
use tetrad_rans::{Arm, Table, encode_record_packed, max_record_len};

const O: usize = 4096;
const I: usize = 4096;

struct Data {
    codes: Vec<u8>,
    scales: Vec<f32>,
    table: Table,
    record: Vec<u8>,
    cfs1: Vec<u8>,
    rans64: Vec<u8>,
}

fn data() -> Data {
    let (codes, scales) = synth::int4_rows(O, I, synth::Dist::Laplace, 7);
    let table = Table::from_histogram(14, &synth::nibble_histogram(&codes)).expect("table");
    let mut record = vec![0u8; max_record_len(2 * codes.len(), 256)];
    let n = encode_record_packed(&table, &codes, &mut record).expect("encode");
    record.truncate(n);
    let mut cfs1 = vec![0u8; tetrad_fse::max_encoded_len(codes.len())];
    let n = tetrad_fse::encode_into(&codes, &mut cfs1).expect("encode");
    cfs1.truncate(n);
    let shift = tetrad_rans::rans64::DEFAULT_CHUNK_SHIFT;
    let mut rans64 = vec![0u8; tetrad_rans::rans64::max_encoded_len(codes.len(), shift)];
    let n = tetrad_rans::rans64::encode_into(&codes, shift, &mut rans64).expect("encode");
    rans64.truncate(n);
    Data { codes, scales, table, record, cfs1, rans64 }
}

fn acts(s: usize) -> Vec<f32> {
    (0..s * I).map(|k| ((k as f32) * 0.01).sin()).collect()
}

fn single(c: &mut Criterion<Clock>) {
    let d = data();
    let fused = Rans256Matrix::new(&d.record, &d.table, &d.scales, O, I).expect("record");
    let cfs1 = Cfs1Matrix::new(&d.cfs1, &d.scales, O, I).expect("cfs1 blob");
    let r64 = Rans64Matrix::new(&d.rans64, &d.scales, O, I).expect("rans64 blob");
    let dense =
        Matrix::new(Format::Int4Row, &d.codes, Scales::F32(&d.scales), O, I, 0).expect("matrix");
    let isa = tetrad_quant::isa::best();
    let arm = Arm::best();
    let arm64 = tetrad_rans::rans64::Arm::best();
    eprintln!(
        "adapter bench: kernel arm {}, decode arm {arm}, record {} bytes, cfs1 {} bytes ({:?})",
        isa.name(),
        d.record.len(),
        d.cfs1.len(),
        cfs1.header().mode
    );

    let mut g = c.benchmark_group("adapter_4096x4096");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements((O * I) as u64));
    let mut out = vec![0u8; d.codes.len()];
    cfs1.decode_into((), &mut out).expect("decode");
    assert_eq!(out, d.codes);
    fused.decode_into(arm, &mut out).expect("decode");
    assert_eq!(out, d.codes);
    r64.decode_into(arm64, &mut out).expect("decode");
    assert_eq!(out, d.codes);
    g.bench_function(BenchmarkId::new("rans64_decode", arm64.name()), |b| {
        b.iter(|| r64.decode_into(arm64, black_box(&mut out)).expect("decode"))
    });
    g.bench_function(BenchmarkId::new("record_decode", arm.name()), |b| {
        b.iter(|| fused.decode_into(arm, black_box(&mut out)).expect("decode"))
    });
    g.bench_function(BenchmarkId::new("cfs1_decode", "scalar"), |b| {
        b.iter(|| cfs1.decode_into((), black_box(&mut out)).expect("decode"))
    });
    for s in [1usize, 16] {
        let x = acts(s);
        let mut y = vec![0f32; s * O];
        g.bench_function(BenchmarkId::new(format!("fused_s{s}"), isa.name()), |b| {
            b.iter(|| {
                fused
                    .matmul_with(isa, arm, Acts::F32 { x: &x, s }, black_box(&mut y))
                    .expect("fused")
            })
        });
        g.bench_function(BenchmarkId::new(format!("cfs1_fused_s{s}"), isa.name()), |b| {
            b.iter(|| {
                cfs1.matmul_with(isa, (), Acts::F32 { x: &x, s }, black_box(&mut y)).expect("fused")
            })
        });
        g.bench_function(BenchmarkId::new(format!("rans64_fused_s{s}"), isa.name()), |b| {
            b.iter(|| {
                r64.matmul_with(isa, arm64, Acts::F32 { x: &x, s }, black_box(&mut y))
                    .expect("fused")
            })
        });
        g.bench_function(BenchmarkId::new(format!("dense_int4_s{s}"), isa.name()), |b| {
            b.iter(|| matmul_with(isa, &dense, &x, s, black_box(&mut y)).expect("dense"))
        });
        // int8-quantized activations (exact integer dot products), quantized inside the timed
        // loop as an engine would per call.
        let (mut q, mut qs) = (vec![0i8; s * I], vec![0f32; s]);
        g.bench_function(BenchmarkId::new(format!("fused_q8_s{s}"), isa.name()), |b| {
            b.iter(|| {
                let xq = quantize_activations(&x, s, I, &mut q, &mut qs).expect("quantize");
                fused.matmul_with(isa, arm, Acts::Q8(&xq), black_box(&mut y)).expect("fused")
            })
        });
        g.bench_function(BenchmarkId::new(format!("dense_int4_q8_s{s}"), isa.name()), |b| {
            b.iter(|| {
                let xq = quantize_activations(&x, s, I, &mut q, &mut qs).expect("quantize");
                matmul_q8_with(isa, &dense, &xq, black_box(&mut y)).expect("dense")
            })
        });
    }
    g.finish();
}

fn threads(c: &mut Criterion<Clock>) {
    let d = data();
    let fused = Rans256Matrix::new(&d.record, &d.table, &d.scales, O, I).expect("record");
    let cfs1 = Cfs1Matrix::new(&d.cfs1, &d.scales, O, I).expect("cfs1 blob");
    let dense =
        Matrix::new(Format::Int4Row, &d.codes, Scales::F32(&d.scales), O, I, 0).expect("matrix");
    let isa = tetrad_quant::isa::best();
    let arm = Arm::best();
    let mut g = c.benchmark_group("adapter_threads_4096x4096");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements((O * I) as u64));
    for s in [1usize, 16] {
        let x = acts(s);
        let mut y = vec![0f32; s * O];
        for t in [1usize, 2] {
            g.bench_function(BenchmarkId::new(format!("fused_s{s}_t{t}"), isa.name()), |b| {
                b.iter(|| {
                    tetrad::adapter::matmul(
                        &fused,
                        isa,
                        arm,
                        Acts::F32 { x: &x, s },
                        black_box(&mut y),
                        t,
                    )
                    .expect("fused")
                })
            });
            g.bench_function(BenchmarkId::new(format!("cfs1_fused_s{s}_t{t}"), isa.name()), |b| {
                b.iter(|| {
                    tetrad::adapter::matmul_cfs1(
                        &cfs1,
                        isa,
                        Acts::F32 { x: &x, s },
                        black_box(&mut y),
                        t,
                    )
                    .expect("fused")
                })
            });
        }
        g.bench_function(BenchmarkId::new(format!("dense_int4_s{s}_t1"), isa.name()), |b| {
            b.iter(|| matmul_with(isa, &dense, &x, s, black_box(&mut y)).expect("dense"))
        });
        // Dense on both cores too (rows split in halves, each half's `S × O/2` outputs in its
        // own buffer), so the fused pipeline's two threads can be compared at equal threads.
        let mut halves = [vec![0f32; s * (O / 2)], vec![0f32; s * (O - O / 2)]];
        g.bench_function(BenchmarkId::new(format!("dense_int4_s{s}_t2"), isa.name()), |b| {
            b.iter(|| {
                let (h0, h1) = halves.split_at_mut(1);
                let (dense, x) = (&dense, &x);
                std::thread::scope(|sc| {
                    sc.spawn(move || {
                        matmul_rows_with(isa, dense, x, s, 0..O / 2, black_box(&mut h0[0]))
                            .expect("dense half")
                    });
                    matmul_rows_with(isa, dense, x, s, O / 2..O, black_box(&mut h1[0]))
                        .expect("dense half");
                });
            })
        });
    }
    g.finish();
}

/// A container directory of the bench matrix in every format: `in/` (dense int4-row, and an
/// `int4-rans64-t1` blob stamped as such), `packed/` (records), `cfs/` (CFS1 blobs), under a
/// fresh directory of the system's temporary folder (removed by the caller).
fn containers() -> (std::path::PathBuf, [(std::path::PathBuf, &'static str); 4]) {
    use std::collections::BTreeMap;
    use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};
    let root = std::env::temp_dir().join(format!("tetrad-bench-adapter-{}", std::process::id()));
    let (input, packed, cfs, own) =
        (root.join("in"), root.join("packed"), root.join("cfs"), root.join("own"));
    let shards = synth::write_expert_checkpoint(&input, 1, 1, O, I, 7).expect("write");
    tetrad::packed::pack::pack(&tetrad::packed::pack::PackOptions {
        indir: input.clone(),
        outdir: packed.clone(),
        layers: None,
        select: None,
        force: false,
        threads: None,
        quiet: true,
    })
    .expect("pack");
    std::fs::create_dir_all(&cfs).expect("mkdir");
    for p in &shards {
        tetrad::cfse::pack(p, &cfs.join(p.file_name().expect("file")), &|_| {}).expect("cfse");
    }
    let d = data();
    let qs: Vec<u8> = d.scales.iter().flat_map(|f| f.to_le_bytes()).collect();
    let ts = [
        OutTensor { name: "w64", dtype: "U8", shape: &[d.rans64.len() as u64], data: &d.rans64 },
        OutTensor { name: "w64.qs", dtype: "F32", shape: &[O as u64], data: &qs },
    ];
    let meta: BTreeMap<String, String> =
        [("colibri.fmt".to_owned(), r#"{"w64": "int4-rans64-t1"}"#.to_owned())].into();
    std::fs::create_dir_all(&own).expect("mkdir");
    let bytes = shard_bytes(&meta, &ts, HeaderStyle::EscapedUnpadded).expect("shard");
    std::fs::write(own.join("w64.safetensors"), bytes).expect("write");
    let w = "model.layers.0.mlp.experts.0.up_proj.weight";
    (root, [(input, w), (packed, w), (own, "w64"), (cfs, w)])
}

fn prepared(c: &mut Criterion<Clock>) {
    use tetrad::container::Container;
    let (root, dirs) = containers();
    let isa = tetrad_quant::isa::best();
    let mut g = c.benchmark_group("adapter_prepared_4096x4096");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements((O * I) as u64));
    for (dir, name) in &dirs {
        let c = Container::open(dir).expect("open");
        let w = c.prepare(name, O as u64, I as u64).expect("prepare");
        let kind = match w.format() {
            Format::Int4Row if dir.ends_with("cfs") => "cfs1",
            f => f.name(),
        };
        for s in [1usize, 16] {
            let x = acts(s);
            let (mut y, mut want) = (vec![0f32; s * O], vec![0f32; s * O]);
            let view = c.tensor(name, O as u64, I as u64).expect("tensor");
            view.matmul(name, isa, &x, s, &mut want, 1).expect("per call");
            w.matmul(Acts::F32 { x: &x, s }, &mut y).expect("prepared");
            assert_eq!(y, want, "{kind}");
            g.bench_function(BenchmarkId::new(format!("percall_{kind}_s{s}"), isa.name()), |b| {
                b.iter(|| {
                    let view = c.tensor(name, O as u64, I as u64).expect("tensor");
                    view.matmul(name, isa, &x, s, black_box(&mut y), 1).expect("per call")
                })
            });
            g.bench_function(BenchmarkId::new(format!("prepared_{kind}_s{s}"), isa.name()), |b| {
                b.iter(|| w.matmul(Acts::F32 { x: &x, s }, black_box(&mut y)).expect("prepared"))
            });
        }
    }
    g.finish();
    let _ = std::fs::remove_dir_all(root);
}

fn config() -> Criterion<Clock> {
    Criterion::default().with_measurement(Clock::from_env("adapter")).configure_from_args()
}

fn config_wall() -> Criterion<Clock> {
    eprintln!("adapter threads group: wall time");
    Criterion::default().with_measurement(Clock::wall()).configure_from_args()
}

criterion_group! { name = benches; config = config(); targets = single, prepared }
criterion_group! { name = benches_threads; config = config_wall(); targets = threads }
criterion_main!(benches, benches_threads);
