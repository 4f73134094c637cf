//! The CFS1 adapter ([`Cfs1Matrix`]) equals dense int4-row matmul on the decoded bytes, bit
//! for bit, on every available kernel arm, for random shapes (odd `I`, `I` not a multiple of
//! 256, `O = 1`), `S ∈ {1, 3, 16}`, f32 and int8 activations, every tile size; its checks
//! refuse by name; corrupted blobs leave an all-zero `y`.
#![allow(clippy::cast_possible_truncation)]

use rand::{Rng, SeedableRng, rngs::StdRng};
use tetrad_fse::{DecodeTable, Mode, encode_into, max_encoded_len};
use tetrad_quant::Format;
use tetrad_quant::adapter::{Acts, AdapterError, Cfs1Matrix};
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::{Matrix, Scales, matmul_q8_with, matmul_with, quantize_activations};

struct Case {
    codes: Vec<u8>,
    scales: Vec<f32>,
    blob: Vec<u8>,
}

/// Int4-row codes of `[o, i]` peaked around 8 (like real weights; never nibble 0), or uniform
/// bytes when `raw` (so the blob falls back to mode 0), coded as one CFS1 blob.
fn case(o: usize, i: usize, seed: u64, raw: bool) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let stride = i.div_ceil(2);
    let mut codes = vec![0u8; o * stride];
    for b in &mut codes {
        if raw {
            *b = rng.random();
            continue;
        }
        let lo =
            (8 + rng.random_range(-3i32..=3) + rng.random_range(-4i32..=4) / 2).clamp(1, 15) as u8;
        let hi = (8 + rng.random_range(-3i32..=3)).clamp(1, 15) as u8;
        *b = lo | hi << 4;
    }
    if i % 2 == 1 {
        // The padding nibble of an odd row is stored as 8 (zero weight), as the quantizer does.
        for r in 0..o {
            codes[r * stride + stride - 1] = (codes[r * stride + stride - 1] & 0x0F) | 0x80;
        }
    }
    let scales: Vec<f32> = (0..o).map(|_| rng.random_range(0.001f32..0.05)).collect();
    let mut blob = vec![0u8; max_encoded_len(codes.len())];
    let n = encode_into(&codes, &mut blob).unwrap();
    blob.truncate(n);
    Case { codes, scales, blob }
}

fn isas() -> Vec<Isa> {
    tetrad_quant::isa::ALL.iter().copied().filter(|a| a.is_available()).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Fused == dense on every arm, f32 and q8, default tiles and one-row tiles and a few odd
/// tile budgets.
fn check_shape(o: usize, i: usize, seed: u64, raw: bool) {
    let c = case(o, i, seed, raw);
    let m = Cfs1Matrix::new(&c.blob, &c.scales, o, i).unwrap();
    // Tiny matrices fall back to raw too (a table costs 32 bytes); peaked ones of 512+ bytes
    // compress.
    if raw {
        assert_eq!(m.header().mode, Mode::Raw, "[{o},{i}]");
    } else if m.dense_len() >= 512 {
        assert_eq!(m.header().mode, Mode::Rans, "[{o},{i}]");
    }
    let mut back = vec![0u8; m.dense_len()];
    m.decode_into((), &mut back).unwrap();
    assert_eq!(back, c.codes);
    let dense = Matrix::new(Format::Int4Row, &c.codes, Scales::F32(&c.scales), o, i, 0).unwrap();
    for s in [1usize, 3, 16] {
        let mut rng = StdRng::seed_from_u64(seed ^ (99 + s as u64));
        let x: Vec<f32> = (0..s * i).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let mut q = vec![0i8; s * i];
        let mut qs = vec![0f32; s];
        let xq = quantize_activations(&x, s, i, &mut q, &mut qs).unwrap();
        for &isa in &isas() {
            let mut want = vec![0f32; s * o];
            matmul_with(isa, &dense, &x, s, &mut want).unwrap();
            let mut want_q = vec![0f32; s * o];
            matmul_q8_with(isa, &dense, &xq, &mut want_q).unwrap();

            let mut y = vec![f32::NAN; s * o];
            m.matmul_with(isa, (), Acts::F32 { x: &x, s }, &mut y).unwrap();
            assert_eq!(bits(&y), bits(&want), "{isa:?} [{o},{i}] S={s} raw={raw}");
            let mut yq = vec![f32::NAN; s * o];
            m.matmul_with(isa, (), Acts::Q8(&xq), &mut yq).unwrap();
            assert_eq!(bits(&yq), bits(&want_q), "q8 {isa:?} [{o},{i}] S={s} raw={raw}");

            // Tiles of 1, 2, 3 and 7 rows: the same bits.
            let mut table = DecodeTable::new();
            for rows in [1usize, 2, 3, 7] {
                let mut y = vec![f32::NAN; s * o];
                let mut wbuf = vec![0u8; rows * m.row_bytes()];
                let mut ybuf = vec![0f32; rows * s];
                m.matmul_band_work(
                    isa,
                    (),
                    Acts::F32 { x: &x, s },
                    0..o,
                    &mut y,
                    &mut wbuf,
                    &mut ybuf,
                    &mut table,
                )
                .unwrap();
                assert_eq!(bits(&y), bits(&want), "{rows}-row tiles {isa:?} [{o},{i}] S={s}");
            }
        }
    }
}

#[test]
fn fused_equals_dense_bit_for_bit_on_every_arm() {
    let shapes =
        [(1, 1), (1, 7), (1, 4096), (3, 33), (5, 255), (17, 256), (9, 257), (40, 1000), (2, 7168)];
    for (k, &(o, i)) in shapes.iter().enumerate() {
        check_shape(o, i, k as u64, false);
    }
}

#[test]
fn random_shapes_equal_dense() {
    let mut rng = StdRng::seed_from_u64(2026);
    for k in 0..24 {
        let o = if k % 4 == 0 { 1 } else { rng.random_range(1..48) };
        let i = rng.random_range(1..1300);
        check_shape(o, i, 1000 + k, false);
    }
}

#[test]
fn raw_mode_blobs_multiply_too() {
    // Uniform bytes do not compress: the blob is raw (mode 0), read piece by piece.
    check_shape(6, 301, 5, true);
    check_shape(1, 64, 6, true);
}

#[test]
fn large_matrix_many_tiles() {
    // 96 × 4096: 2 KiB rows, several default tiles (TILE_BYTES) and fast decode blocks.
    check_shape(96, 4096, 77, false);
}

#[test]
fn checks_refuse_before_anything_is_multiplied() {
    let c = case(8, 100, 1, false);
    assert!(matches!(
        Cfs1Matrix::new(&c.blob, &c.scales, 8, 102),
        Err(AdapterError::RawLen { got: 400, expected: 408, .. })
    ));
    assert_eq!(
        Cfs1Matrix::new(&c.blob, &c.scales, 8, 102).unwrap_err().class(),
        "E_RAWLEN_MISMATCH"
    );
    assert_eq!(
        Cfs1Matrix::new(&c.blob, &c.scales[..7], 8, 100).unwrap_err().class(),
        "E_SCALE_COUNT"
    );
    assert_eq!(
        Cfs1Matrix::new(&c.blob[..30], &c.scales, 8, 100).unwrap_err().class(),
        "E_SHORT_RANS"
    );
    let mut bad_magic = c.blob.clone();
    bad_magic[0] = b'X';
    assert_eq!(Cfs1Matrix::new(&bad_magic, &c.scales, 8, 100).unwrap_err().class(), "E_MAGIC");
    assert_eq!(
        Cfs1Matrix::new(&c.blob, &c.scales, usize::MAX, 4).unwrap_err().class(),
        "E_ADAPTER_OVERFLOW"
    );

    let m = Cfs1Matrix::new(&c.blob, &c.scales, 8, 100).unwrap();
    let mut table = DecodeTable::new();
    let mut y = vec![3f32; 8];
    let e = m.matmul_band_work(
        Isa::Scalar,
        (),
        Acts::F32 { x: &[0.5; 100], s: 1 },
        0..8,
        &mut y,
        &mut [0u8; 10],
        &mut [0f32; 1],
        &mut table,
    );
    assert_eq!(e.unwrap_err().class(), "E_SCRATCH");
    assert!(y.iter().all(|&v| v == 0.0));
    let mut y = vec![3f32; 7];
    let e = m.matmul_with(Isa::Scalar, (), Acts::F32 { x: &[0.5; 100], s: 1 }, &mut y);
    assert!(matches!(e, Err(AdapterError::Kernel(_))), "{e:?}");
    let mut short = vec![0u8; 399];
    assert!(m.decode_into((), &mut short).is_err());
}

/// Every corruption of the payload (a flipped byte, a cut, an extra byte) is refused with a
/// payload-stage class and leaves `y` all zeros; none is accepted (the seal's escape chance is
/// about 2^-46 per blob).
#[test]
fn corrupted_blobs_leave_no_partial_output() {
    let (o, i) = (32, 512);
    let c = case(o, i, 3, false);
    let x = vec![1.0f32; 3 * i];
    let mut refused = 0;
    let mut bads: Vec<Vec<u8>> = (49..c.blob.len())
        .step_by(37)
        .map(|k| {
            let mut bad = c.blob.clone();
            bad[k] ^= 0x24;
            bad
        })
        .collect();
    bads.push(c.blob[..c.blob.len() - 1].to_vec());
    let mut longer = c.blob.clone();
    longer.push(0);
    bads.push(longer);
    let mut state = c.blob.clone();
    state[42] ^= 0x10; // initial state A, still ≥ L
    bads.push(state);
    for bad in &bads {
        let m = Cfs1Matrix::new(bad, &c.scales, o, i).unwrap();
        for &isa in &isas() {
            let mut y = vec![7.0f32; 3 * o];
            match m.matmul_with(isa, (), Acts::F32 { x: &x, s: 3 }, &mut y) {
                Err(AdapterError::Cfs1(e)) => {
                    assert!(e.is_payload(), "{e}");
                    assert!(y.iter().all(|&v| v.to_bits() == 0), "zero-filled on error");
                    refused += 1;
                }
                Err(e) => panic!("unexpected {e}"),
                Ok(()) => panic!("a corrupted blob was accepted"),
            }
        }
        let mut out = vec![0x55u8; o * i / 2];
        assert!(m.decode_into((), &mut out).is_err());
        assert!(out.iter().all(|&b| b == 0));
    }
    assert!(refused > 100, "only {refused} corruptions tried");
}
