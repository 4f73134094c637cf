//! Criterion benchmarks of `tetrad-rans`: checked record decode per arm, and record encode.
//!
//! Data: `tetrad_benches::synth::int4_bytes` (per-row int4 of Gaussian/Laplace weights), coded
//! with its own histogram table at the format's 14 scale bits and 256 streams. Throughput is in
//! nibbles (`Throughput::Elements(n_nibbles)`), so criterion's `Gelem/s` reads as G nibbles/s.
//! Run: `cargo bench -p tetrad-benches --bench rans`.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
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

fn bench_case(c: &mut Criterion, cs: &Case, samples: usize, secs: u64) {
    let rec = Record::parse_format(&cs.record).expect("parse");
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
    let mut g = c.benchmark_group("rans_encode");
    g.throughput(Throughput::Elements(nibbles));
    g.sample_size(samples).measurement_time(Duration::from_secs(secs));
    let mut dst = vec![0u8; max_record_len(2 * cs.packed.len(), 256)];
    g.bench_function(BenchmarkId::from_parameter(cs.name), |b| {
        b.iter(|| encode_record_packed(&cs.table, black_box(&cs.packed), &mut dst))
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let small = case("1MiB", 1 << 20);
    bench_case(c, &small, 20, 3);
    drop(small);
    let big = case("64MiB", 64 << 20);
    bench_case(c, &big, 10, 8);
}

criterion_group!(rans, benches);
criterion_main!(rans);
