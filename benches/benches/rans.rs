//! Criterion benchmarks of `tetrad-rans`: checked record decode per arm, and record encode.
//!
//! Data: `tetrad_benches::synth::int4_bytes` (per-row int4 of Gaussian/Laplace weights), coded
//! with its own histogram table at the format's 14 scale bits and 256 streams. Throughput is in
//! nibbles (`Throughput::Elements(n_nibbles)`), so criterion's `Gelem/s` reads as G nibbles/s.
//! `zstd_decode` decodes the same packed bytes compressed with `zstd -3` (the zstd CLI's
//! default level) in the same run, with the same clock, for comparison.
//! Run: `cargo bench -p tetrad-benches --bench rans`.
//!
//! Clock: a machine may be shared by other processes, so by default the bench
//! measures this thread's CPU time (`/proc/thread-self/schedstat`, ns) rather than wall time;
//! under contention wall time mostly measures the other processes. `TETRAD_BENCH_CLOCK=wall`
//! switches to wall-clock time (the right choice on an idle machine). The clock in use is
//! printed once.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

use tetrad_benches::clock::Clock;
use tetrad_benches::synth;
use tetrad_rans::{Arm, Record, Table, decode_record_with, encode_record_packed, max_record_len};

struct Case {
    name: &'static str,
    packed: Vec<u8>,
    table: Table,
    record: Vec<u8>,
}

fn case(name: &'static str, bytes: usize) -> Case {
    let packed = synth::int4_bytes(bytes, 0x7E7_2AD);
    let hist = synth::nibble_histogram(&packed);
    let table = Table::from_histogram(14, &hist).expect("histogram of real data");
    let mut record = vec![0u8; max_record_len(2 * packed.len(), 256)];
    let len = encode_record_packed(&table, &packed, &mut record).expect("encode");
    record.truncate(len);
    let entropy = synth::entropy_bits(&hist);
    #[allow(clippy::cast_precision_loss)]
    let bits = 8.0 * record.len() as f64 / (2.0 * packed.len() as f64);
    println!(
        "rans {name}: {} packed bytes -> {} record bytes; {bits:.4} bits/nibble vs order-0 \
         entropy {entropy:.4} ({:.4}x entropy; ratio {:.4} of the int4 bytes)",
        packed.len(),
        record.len(),
        bits / entropy,
        record.len() as f64 / packed.len() as f64,
    );
    Case { name, packed, table, record }
}

fn bench_case(c: &mut Criterion<Clock>, cs: &Case, samples: usize, secs: u64) {
    let rec = Record::parse(&cs.record).expect("parse");
    let nibbles = 2 * cs.packed.len() as u64;
    let mut out = vec![0u8; cs.packed.len()];
    for &arm in Arm::ALL.iter().filter(|a| a.is_available()) {
        decode_record_with(arm, &cs.table, &rec, &mut out).expect("decode");
        assert_eq!(out, cs.packed, "{arm} must round-trip");
        let mut g = c.benchmark_group(format!("rans_decode/{arm}"));
        g.throughput(Throughput::Elements(nibbles));
        g.sample_size(samples).measurement_time(Duration::from_secs(secs));
        g.bench_function(BenchmarkId::from_parameter(cs.name), |b| {
            b.iter(|| decode_record_with(arm, &cs.table, black_box(&rec), &mut out))
        });
        g.finish();
    }
    // zstd -d (level 3, the CLI default) on the same packed int4 bytes, same clock, same run.
    let z = zstd::bulk::compress(&cs.packed, 3).expect("zstd compress");
    println!(
        "zstd -3 {}: {} -> {} bytes (ratio {:.4})",
        cs.name,
        cs.packed.len(),
        z.len(),
        z.len() as f64 / cs.packed.len() as f64
    );
    let mut dz = zstd::bulk::Decompressor::new().expect("zstd context");
    let mut g = c.benchmark_group("zstd_decode");
    g.throughput(Throughput::Elements(nibbles));
    g.sample_size(samples).measurement_time(Duration::from_secs(secs));
    g.bench_function(BenchmarkId::from_parameter(cs.name), |b| {
        b.iter(|| {
            let n = dz.decompress_to_buffer(black_box(&z), &mut out).expect("zstd decode");
            assert_eq!(n, out.len());
        })
    });
    g.finish();
    let mut g = c.benchmark_group("rans_encode");
    g.throughput(Throughput::Elements(nibbles));
    g.sample_size(samples).measurement_time(Duration::from_secs(secs));
    let mut dst = vec![0u8; max_record_len(2 * cs.packed.len(), 256)];
    g.bench_function(BenchmarkId::from_parameter(cs.name), |b| {
        b.iter(|| encode_record_packed(&cs.table, black_box(&cs.packed), &mut dst))
    });
    g.finish();
}

fn benches(c: &mut Criterion<Clock>) {
    let small = case("1MiB", 1 << 20);
    bench_case(c, &small, 20, 3);
    drop(small);
    let big = case("64MiB", 64 << 20);
    bench_case(c, &big, 10, 8);
}

/// This process's user + system CPU seconds (`/proc/self/stat`, clock ticks of 1/100 s).
fn process_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
}

/// 1 vs 2 threads on one 64 MiB record with the best arm (`decode_record_threads`). Wall time
/// (thread CPU time cannot measure a parallel speed-up), so on the shared machine the ratio
/// is a lower bound. Before the group, the process's user + system CPU time per decode is
/// printed for 1 and 2 threads (10 decodes each): the parallel overhead, which contention
/// does not hide.
fn threads(c: &mut Criterion) {
    let big = case("64MiB", 64 << 20);
    let rec = Record::parse(&big.record).expect("parse");
    let mut out = vec![0u8; big.packed.len()];
    let arm = Arm::best();
    for t in [1usize, 2, 1, 2] {
        let runs = 10;
        let (c0, w0) = (process_cpu_s(), std::time::Instant::now());
        for _ in 0..runs {
            tetrad_rans::decode_record_threads(arm, &big.table, &rec, &mut out, t).expect("decode");
        }
        let wall = w0.elapsed().as_secs_f64() / f64::from(runs);
        if let (Some(c0), Some(c1)) = (c0, process_cpu_s()) {
            println!(
                "rans_decode_threads/{arm} {t} thread(s): user+sys {:.1} ms per decode, wall \
                 {:.1} ms per decode",
                (c1 - c0) * 1e3 / f64::from(runs),
                wall * 1e3
            );
        }
    }
    let mut g = c.benchmark_group(format!("rans_decode_threads/{arm}"));
    g.throughput(Throughput::Elements(2 * big.packed.len() as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for t in [1usize, 2] {
        tetrad_rans::decode_record_threads(arm, &big.table, &rec, &mut out, t).expect("decode");
        assert_eq!(out, big.packed);
        g.bench_function(BenchmarkId::from_parameter(format!("{t}-thread-wall")), |b| {
            b.iter(|| {
                tetrad_rans::decode_record_threads(arm, &big.table, black_box(&rec), &mut out, t)
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = rans;
    config = Criterion::default().with_measurement(Clock::from_env("rans"));
    targets = benches
}
criterion_group!(rans_threads, threads);
criterion_main!(rans, rans_threads);
