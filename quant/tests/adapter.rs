//! The decode-then-matmul adapter equals dense int4-row matmul on the decoded bytes, bit for
//! bit, on every available kernel arm and record-decode arm; corrupted records leave no output.
#![allow(clippy::cast_possible_truncation)]

use rand::{Rng, SeedableRng, rngs::StdRng};
use tetrad_quant::Format;
use tetrad_quant::adapter::{Acts, AdapterError, Rans256Matrix};
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::{Matrix, Scales, matmul_q8_with, matmul_with, quantize_activations};
use tetrad_rans::{Arm, Table, encode_record_packed, max_record_len};

struct Case {
    codes: Vec<u8>,
    scales: Vec<f32>,
    table: Table,
    blob: Vec<u8>,
}

fn case(o: usize, i: usize, seed: u64) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let stride = i.div_ceil(2);
    let mut codes = vec![0u8; o * stride];
    for b in &mut codes {
        // Peaked around 8 like real weights, never nibble 0.
        let lo =
            (8 + rng.random_range(-3i32..=3) + rng.random_range(-4i32..=4) / 2).clamp(1, 15) as u8;
        let hi = (8 + rng.random_range(-3i32..=3)).clamp(1, 15) as u8;
        *b = lo | hi << 4;
    }
    if i % 2 == 1 {
        for r in 0..o {
            codes[r * stride + stride - 1] = (codes[r * stride + stride - 1] & 0x0F) | 0x80;
        }
    }
    let scales: Vec<f32> = (0..o).map(|_| rng.random_range(0.001f32..0.05)).collect();
    let mut h = [0u64; 16];
    for &b in &codes {
        h[usize::from(b & 15)] += 1;
        h[usize::from(b >> 4)] += 1;
    }
    let table = Table::from_histogram(14, &h).unwrap();
    let mut blob = vec![0u8; max_record_len(2 * codes.len(), 256)];
    let n = encode_record_packed(&table, &codes, &mut blob).unwrap();
    blob.truncate(n);
    Case { codes, scales, table, blob }
}

fn isas() -> Vec<Isa> {
    tetrad_quant::isa::ALL.iter().copied().filter(|a| a.is_available()).collect()
}

fn arms() -> Vec<Arm> {
    Arm::ALL.iter().copied().filter(|a| a.is_available()).collect()
}

#[test]
fn fused_equals_dense_bit_for_bit_on_every_arm() {
    let shapes =
        [(1, 1), (1, 7), (3, 33), (5, 255), (17, 256), (9, 257), (40, 1000), (64, 4096), (2, 7168)];
    for (k, &(o, i)) in shapes.iter().enumerate() {
        let c = case(o, i, k as u64);
        let m = Rans256Matrix::new(&c.blob, &c.table, &c.scales, o, i).unwrap();
        let dense =
            Matrix::new(Format::Int4Row, &c.codes, Scales::F32(&c.scales), o, i, 0).unwrap();
        let mut back = vec![0u8; m.dense_len()];
        m.decode_into(Arm::Scalar, &mut back).unwrap();
        assert_eq!(back, c.codes);
        for s in [1usize, 3, 16] {
            let mut rng = StdRng::seed_from_u64(99 + s as u64);
            let x: Vec<f32> = (0..s * i).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            let mut q = vec![0i8; s * i];
            let mut qs = vec![0f32; s];
            let xq = quantize_activations(&x, s, i, &mut q, &mut qs).unwrap();
            for &isa in &isas() {
                let mut want = vec![0f32; s * o];
                matmul_with(isa, &dense, &x, s, &mut want).unwrap();
                let mut want_q = vec![0f32; s * o];
                matmul_q8_with(isa, &dense, &xq, &mut want_q).unwrap();
                for &arm in &arms() {
                    let mut y = vec![f32::NAN; s * o];
                    m.matmul_with(isa, arm, Acts::F32 { x: &x, s }, &mut y).unwrap();
                    assert_eq!(
                        y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        "{isa:?} {arm:?} [{o},{i}] S={s}"
                    );
                    let mut yq = vec![f32::NAN; s * o];
                    m.matmul_with(isa, arm, Acts::Q8(&xq), &mut yq).unwrap();
                    assert_eq!(yq, want_q, "q8 {isa:?} {arm:?} [{o},{i}] S={s}");
                }
                // One-row tiles give the same bits.
                let mut y = vec![0f32; s * o];
                let mut wbuf = vec![0u8; m.row_bytes()];
                let mut ybuf = vec![0f32; s];
                m.matmul_scratch(
                    isa,
                    Arm::Scalar,
                    Acts::F32 { x: &x, s },
                    &mut y,
                    &mut wbuf,
                    &mut ybuf,
                )
                .unwrap();
                assert_eq!(y, want, "one-row tiles {isa:?} [{o},{i}] S={s}");
            }
        }
    }
}

#[test]
fn checks_refuse_before_anything_is_multiplied() {
    let c = case(8, 100, 1);
    assert!(matches!(
        Rans256Matrix::new(&c.blob, &c.table, &c.scales, 8, 102),
        Err(AdapterError::NSymbols { got: 800, expected: 816, .. })
    ));
    assert_eq!(
        Rans256Matrix::new(&c.blob, &c.table, &c.scales[..7], 8, 100).unwrap_err().class(),
        "E_SCALE_COUNT"
    );
    assert_eq!(
        Rans256Matrix::new(&c.blob[..100], &c.table, &c.scales, 8, 100).unwrap_err().class(),
        "E_TRUNCATED"
    );
    let m = Rans256Matrix::new(&c.blob, &c.table, &c.scales, 8, 100).unwrap();
    let mut y = vec![0f32; 8];
    let mut tiny = [0u8; 10];
    let mut yb = [0f32; 1];
    let e = m.matmul_scratch(
        Isa::Scalar,
        Arm::Scalar,
        Acts::F32 { x: &[0.5; 100], s: 1 },
        &mut y,
        &mut tiny,
        &mut yb,
    );
    assert_eq!(e.unwrap_err().class(), "E_SCRATCH");
}

#[test]
fn corrupted_records_leave_no_partial_output() {
    let c = case(32, 512, 3);
    let mut flipped = 0;
    for k in (1056..c.blob.len()).step_by(97) {
        let mut bad = c.blob.clone();
        bad[k] ^= 0x24;
        let Ok(m) = Rans256Matrix::new(&bad, &c.table, &c.scales, 32, 512) else { continue };
        let x = vec![1.0f32; 512];
        let mut y = vec![7.0f32; 32];
        match m.matmul_with(Isa::Scalar, Arm::Scalar, Acts::F32 { x: &x, s: 1 }, &mut y) {
            Err(AdapterError::Decode(_)) => {
                assert!(y.iter().all(|&v| v == 0.0), "zero-filled on error");
                flipped += 1;
            }
            Err(e) => panic!("unexpected {e}"),
            Ok(()) => panic!("a flipped payload byte at {k} was accepted"),
        }
    }
    assert!(flipped > 10, "only {flipped} corruptions tried");
}

/// The allocating entry points' tile budget: 24 KiB for one f32 activation row and for int8
/// activations, the larger L2-resident tile for f32 batches.
#[test]
fn tile_budget_by_activations() {
    use tetrad_quant::adapter::{BATCH_TILE_BYTES, TILE_BYTES, tile_bytes};
    let x = [0f32; 8];
    assert_eq!(tile_bytes(&Acts::F32 { x: &x, s: 1 }), TILE_BYTES);
    assert_eq!(tile_bytes(&Acts::F32 { x: &x, s: 2 }), BATCH_TILE_BYTES);
    assert_eq!(tile_bytes(&Acts::F32 { x: &x, s: 16 }), BATCH_TILE_BYTES);
    let (mut q, mut qs) = ([0i8; 8], [0f32; 1]);
    let xq = quantize_activations(&x, 1, 8, &mut q, &mut qs).unwrap();
    assert_eq!(tile_bytes(&Acts::Q8(&xq)), TILE_BYTES);
    const { assert!(TILE_BYTES < BATCH_TILE_BYTES && BATCH_TILE_BYTES <= 256 * 1024) };
}
