//! Degenerate and hostile shapes through every adapter (`int4-rans256-g0`, CFS1,
//! `int4-rans64-t1`): activation counts that do not match `x` (up to `usize::MAX` rows) are
//! refused by name before anything is sized by them, and zero-row or zero-column matrices
//! give exactly what dense int4-row matmul gives. Nothing panics or aborts on an allocation
//! (this runs in debug, where an overflow would panic).
#![allow(clippy::cast_possible_truncation)]

use tetrad_quant::Format;
use tetrad_quant::adapter::{Acts, Cfs1Matrix, Rans256Matrix};
use tetrad_quant::adapter_rans64::Rans64Matrix;
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::{Matrix, Scales, matmul_with, quantize_activations};
use tetrad_rans::rans64::Arm as Arm64;
use tetrad_rans::{Arm, Table, encode_record_packed, max_record_len};

struct Blobs {
    codes: Vec<u8>,
    scales: Vec<f32>,
    table: Table,
    record: Vec<u8>,
    cfs1: Vec<u8>,
    rans64: Vec<u8>,
}

fn blobs(o: usize, i: usize) -> Blobs {
    let codes: Vec<u8> = (0..o * i.div_ceil(2)).map(|k| (k * 37 % 251) as u8).collect();
    let scales: Vec<f32> = (0..o).map(|r| 0.01 + r as f32 * 0.001).collect();
    let mut hist = [1u64; 16];
    for b in &codes {
        hist[usize::from(b & 15)] += 1;
        hist[usize::from(b >> 4)] += 1;
    }
    let table = Table::from_histogram(14, &hist).unwrap();
    let mut record = vec![0u8; max_record_len(2 * codes.len(), 256)];
    // An empty matrix has no record (the record encoder refuses zero symbols).
    let n = encode_record_packed(&table, &codes, &mut record).unwrap_or(0);
    record.truncate(n);
    let mut cfs1 = vec![0u8; tetrad_fse::max_encoded_len(codes.len())];
    let n = tetrad_fse::encode_into(&codes, &mut cfs1).unwrap();
    cfs1.truncate(n);
    let mut rans64 = vec![0u8; tetrad_rans::rans64::max_encoded_len(codes.len(), 12)];
    let n = tetrad_rans::rans64::encode_into(&codes, 12, &mut rans64).unwrap();
    rans64.truncate(n);
    Blobs { codes, scales, table, record, cfs1, rans64 }
}

/// Every adapter's result (or refusal class) for `acts` into a `y` of `y_len` floats; a
/// refusal must leave `y` all zeros.
fn every_adapter(
    b: &Blobs,
    o: usize,
    i: usize,
    acts: Acts<'_>,
    y_len: usize,
) -> Vec<Result<Vec<u32>, &'static str>> {
    let mut out = Vec::new();
    let mut finish = |r: Result<(), &'static str>, y: Vec<f32>| {
        if r.is_err() {
            assert!(y.iter().all(|&v| v.to_bits() == 0), "{r:?}: y not zero-filled");
        }
        out.push(r.map(|()| y.iter().map(|v| v.to_bits()).collect()));
    };
    if let Ok(m) = Rans256Matrix::new(&b.record, &b.table, &b.scales, o, i) {
        let mut y = vec![f32::NAN; y_len];
        let r = m.matmul_with(Isa::Scalar, Arm::Scalar, acts, &mut y).map_err(|e| e.class());
        finish(r, y);
    }
    let m = Cfs1Matrix::new(&b.cfs1, &b.scales, o, i).unwrap();
    let mut y = vec![f32::NAN; y_len];
    let r = m.matmul_with(Isa::Scalar, (), acts, &mut y).map_err(|e| e.class());
    finish(r, y);
    let m = Rans64Matrix::new(&b.rans64, &b.scales, o, i).unwrap();
    let mut y = vec![f32::NAN; y_len];
    let r = m.matmul_with(Isa::Scalar, Arm64::Scalar, acts, &mut y).map_err(|e| e.class());
    finish(r, y);
    for arm in [Arm64::Scalar, Arm64::best()] {
        match m.band_with(Isa::Scalar, arm, acts, 0..o) {
            Ok(y) => out.push(Ok(y.iter().map(|v| v.to_bits()).collect())),
            Err(e) => out.push(Err(e.class())),
        }
    }
    out
}

#[test]
fn activation_counts_that_do_not_match_x_are_refused() {
    let (o, i) = (8, 64);
    let b = blobs(o, i);
    let x = vec![0.5f32; i];
    for s in [usize::MAX, usize::MAX / 2, usize::MAX / 64 + 1, 1 << 40, 1 << 33, 2, 0] {
        for r in every_adapter(&b, o, i, Acts::F32 { x: &x, s }, o) {
            let class = r.expect_err("a refusal");
            assert!(matches!(class, "E_KERNEL_LENGTH" | "E_KERNEL_OVERFLOW"), "S = {s}: {class}");
        }
    }
    // int8 activations of another width.
    let x = vec![0.5f32; 2 * 32];
    let (mut q, mut sc) = (vec![0i8; 64], vec![0f32; 2]);
    let q8 = quantize_activations(&x, 2, 32, &mut q, &mut sc).unwrap();
    for r in every_adapter(&b, o, i, Acts::Q8(&q8), 2 * o) {
        assert_eq!(r.expect_err("a refusal"), "E_KERNEL_LENGTH");
    }
    // A band past the matrix is refused before anything is allocated for it.
    let m = Rans64Matrix::new(&b.rans64, &b.scales, o, i).unwrap();
    let e = m.band_with(Isa::Scalar, Arm64::Scalar, Acts::F32 { x: &x[..i], s: 1 }, 0..usize::MAX);
    assert_eq!(e.unwrap_err().class(), "E_BAND");
}

#[test]
fn empty_matrices_equal_dense() {
    for (o, i) in [(4usize, 0usize), (0, 64), (0, 0), (1, 0)] {
        let b = blobs(o, i);
        for s in [0usize, 1, 3] {
            let x = vec![0.25f32; s * i];
            let dense =
                Matrix::new(Format::Int4Row, &b.codes, Scales::F32(&b.scales), o, i, 0).unwrap();
            let mut want = vec![f32::NAN; s * o];
            matmul_with(Isa::Scalar, &dense, &x, s, &mut want).unwrap();
            let want: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
            for r in every_adapter(&b, o, i, Acts::F32 { x: &x, s }, s * o) {
                assert_eq!(r, Ok(want.clone()), "[{o}, {i}] S = {s}");
            }
        }
    }
}

#[test]
fn zero_columns_and_huge_s_are_refused_not_allocated() {
    // With I = 0, `x` is empty for any S: nothing bounds S but the output. A caller's `y`
    // cannot be that large, and `band_with` (which allocates the output) refuses it.
    let (o, i) = (4, 0);
    let b = blobs(o, i);
    for s in [1usize << 40, usize::MAX / 8] {
        let r = every_adapter(&b, o, i, Acts::F32 { x: &[], s }, o);
        for class in r.into_iter().map(|r| r.expect_err("a refusal")) {
            assert!(
                matches!(class, "E_KERNEL_LENGTH" | "E_KERNEL_OVERFLOW" | "E_ADAPTER_OVERFLOW"),
                "S = {s}: {class}"
            );
        }
    }
    // No rows: nothing to compute for any S.
    let b = blobs(0, 0);
    for r in every_adapter(&b, 0, 0, Acts::F32 { x: &[], s: 1 << 40 }, 0) {
        assert_eq!(r, Ok(vec![]));
    }
}
