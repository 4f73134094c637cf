//! The `int4-rans64-t1` adapter ([`Rans64Matrix`]) equals dense int4-row matmul on the decoded
//! bytes, bit for bit, on every available kernel arm and every available decode arm, for
//! shapes whose rows straddle chunk boundaries (4 KiB chunks), odd `I`, `O = 1`, raw chunks,
//! `S ∈ {1, 3}`, f32 and int8 activations, several scratch sizes, and every row band; its
//! checks refuse by name (damaged chunks when the matrix is built); corrupted blobs whose
//! checks were rewritten leave an all-zero `y`.
#![allow(clippy::cast_possible_truncation)]

use rand::{Rng, SeedableRng, rngs::StdRng};
use tetrad_quant::Format;
use tetrad_quant::adapter::{Acts, AdapterError};
use tetrad_quant::adapter_rans64::{Rans64Matrix, SCRATCH_SLACK};
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::{Matrix, Scales, matmul_q8_with, matmul_with, quantize_activations};
use tetrad_rans::rans64::{self, Arm};

#[path = "../../rans/tests/support/blob_v2.rs"]
#[allow(dead_code)] // shared with the rans tests; this file uses `reseal` only
mod blob_v2;

struct Case {
    codes: Vec<u8>,
    scales: Vec<f32>,
    blob: Vec<u8>,
}

/// Int4-row codes of `[o, i]` peaked around 8 (or uniform bytes when `raw`, so chunks are
/// stored raw), coded with chunk shift `shift`.
fn case(o: usize, i: usize, seed: u64, raw: bool, shift: u8) -> Case {
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
    let scales: Vec<f32> = (0..o).map(|_| rng.random_range(0.001f32..0.05)).collect();
    let mut blob = vec![0u8; rans64::max_encoded_len(codes.len(), shift)];
    // Even seeds: the version the encoder writes (3); odd seeds: version 2.
    let n = if seed.is_multiple_of(2) {
        rans64::encode_into(&codes, shift, &mut blob).unwrap()
    } else {
        rans64::encode_v2_into(&codes, shift, &mut blob).unwrap()
    };
    blob.truncate(n);
    Case { codes, scales, blob }
}

fn isas() -> Vec<Isa> {
    tetrad_quant::isa::ALL.iter().copied().filter(|a| a.is_available()).collect()
}

fn arms() -> Vec<Arm> {
    Arm::ALL.iter().copied().filter(|a| a.is_available()).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn check_shape(o: usize, i: usize, seed: u64, raw: bool) {
    let c = case(o, i, seed, raw, 12);
    let m = Rans64Matrix::new(&c.blob, &c.scales, o, i).unwrap();
    for &arm in &arms() {
        let mut back = vec![0u8; m.dense_len()];
        m.decode_into(arm, &mut back).unwrap();
        assert_eq!(back, c.codes);
    }
    let dense = Matrix::new(Format::Int4Row, &c.codes, Scales::F32(&c.scales), o, i, 0).unwrap();
    let stride = m.row_bytes();
    for s in [1usize, 3] {
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
            for &arm in &arms() {
                let mut y = vec![f32::NAN; s * o];
                m.matmul_with(isa, arm, Acts::F32 { x: &x, s }, &mut y).unwrap();
                assert_eq!(bits(&y), bits(&want), "{isa:?} {arm} [{o},{i}] S={s} raw={raw}");
                let mut yq = vec![f32::NAN; s * o];
                m.matmul_with(isa, arm, Acts::Q8(&xq), &mut yq).unwrap();
                assert_eq!(bits(&yq), bits(&want_q), "q8 {isa:?} {arm} [{o},{i}] S={s}");
            }
            // The smallest scratch (one row + slack, one output row per kernel call) and a
            // few odd ones: the same bits.
            // On the AVX-512 decode arms, scratches of two rows plus slack or more split the
            // band into two halves decoded in lockstep (`decode_next_pair`).
            let sizes = [
                (stride + SCRATCH_SLACK, 1usize),
                (2 * (stride + SCRATCH_SLACK) + 1, 1),
                (3 * stride + 100, 2),
                (5000, 7),
                (20_000, 3),
            ];
            for (wlen, yrows) in sizes {
                for &arm in &arms() {
                    let mut y = vec![f32::NAN; s * o];
                    let mut wbuf = vec![0u8; wlen];
                    let mut ybuf = vec![0f32; yrows * s];
                    m.matmul_scratch(
                        isa,
                        arm,
                        Acts::F32 { x: &x, s },
                        &mut y,
                        &mut wbuf,
                        &mut ybuf,
                    )
                    .unwrap();
                    let what = format!("scratch {wlen}/{yrows} {isa:?} {arm} [{o},{i}]");
                    assert_eq!(bits(&y), bits(&want), "{what}");
                }
            }
            // Row bands: each equals the matching columns of y.
            let cuts = [0, o / 3, o / 2, o / 2 + 1, o];
            for a in 0..cuts.len() {
                for b in a..cuts.len() {
                    let (r0, r1) = (cuts[a], cuts[b]);
                    if r0 > r1 {
                        continue;
                    }
                    let yb = m.band_with(isa, Arm::best(), Acts::F32 { x: &x, s }, r0..r1).unwrap();
                    let n = r1 - r0;
                    for si in 0..s {
                        assert_eq!(
                            bits(&yb[si * n..(si + 1) * n]),
                            bits(&want[si * o + r0..si * o + r1]),
                            "band {r0}..{r1} {isa:?} [{o},{i}]"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn fused_equals_dense_bit_for_bit_on_every_arm() {
    // 4 KiB chunks: rows of 2000 / 2049 bytes straddle chunk boundaries.
    let shapes = [(1, 1), (1, 7), (3, 33), (17, 256), (9, 4000), (7, 4097), (40, 1000), (2, 9000)];
    for (k, &(o, i)) in shapes.iter().enumerate() {
        check_shape(o, i, k as u64, false);
    }
}

#[test]
fn random_shapes_equal_dense() {
    let mut rng = StdRng::seed_from_u64(2027);
    for k in 0..10 {
        let o = if k % 4 == 0 { 1 } else { rng.random_range(1..40) };
        let i = rng.random_range(1..3000);
        check_shape(o, i, 1000 + k, false);
    }
}

#[test]
fn raw_chunks_multiply_too() {
    check_shape(6, 3001, 5, true);
    check_shape(1, 64, 6, true);
}

#[test]
fn checks_refuse_before_anything_is_multiplied() {
    let c = case(8, 100, 1, false, 12);
    assert!(matches!(
        Rans64Matrix::new(&c.blob, &c.scales, 8, 102),
        Err(AdapterError::ByteCount { got: 400, expected: 408, .. })
    ));
    assert_eq!(
        Rans64Matrix::new(&c.blob, &c.scales, 8, 102).unwrap_err().class(),
        "E_COUNT_MISMATCH"
    );
    assert_eq!(
        Rans64Matrix::new(&c.blob, &c.scales[..7], 8, 100).unwrap_err().class(),
        "E_SCALE_COUNT"
    );
    assert_eq!(
        Rans64Matrix::new(&c.blob[..10], &c.scales, 8, 100).unwrap_err().class(),
        "E_TRUNCATED"
    );
    let mut bad_magic = c.blob.clone();
    bad_magic[0] = b'X';
    assert_eq!(Rans64Matrix::new(&bad_magic, &c.scales, 8, 100).unwrap_err().class(), "E_MAGIC");
    assert_eq!(
        Rans64Matrix::new(&c.blob, &c.scales, usize::MAX, 4).unwrap_err().class(),
        "E_ADAPTER_OVERFLOW"
    );

    let m = Rans64Matrix::new(&c.blob, &c.scales, 8, 100).unwrap();
    let x = [0.5f32; 100];
    let mut y = vec![3f32; 8];
    let e = m.matmul_scratch(
        Isa::Scalar,
        Arm::Scalar,
        Acts::F32 { x: &x, s: 1 },
        &mut y,
        &mut [0u8; 60],
        &mut [0f32; 1],
    );
    assert_eq!(e.unwrap_err().class(), "E_SCRATCH");
    assert!(y.iter().all(|&v| v == 0.0));
    let mut y = vec![3f32; 7];
    let e = m.matmul_with(Isa::Scalar, Arm::Scalar, Acts::F32 { x: &x, s: 1 }, &mut y);
    assert!(matches!(e, Err(AdapterError::Kernel(_))), "{e:?}");
    let mut y = vec![3f32; 4];
    let mut ybuf = [0f32; 8];
    let e = m.matmul_band(
        Isa::Scalar,
        Arm::Scalar,
        Acts::F32 { x: &x, s: 1 },
        6..10,
        &mut y,
        &mut [0u8; 4096],
        &mut ybuf,
    );
    assert_eq!(e.unwrap_err().class(), "E_BAND");
    let mut short = vec![0u8; 399];
    assert_eq!(m.decode_into(Arm::Scalar, &mut short).unwrap_err().class(), "E_OUTPUT_LENGTH");
    for &arm in Arm::ALL {
        if !arm.is_available() {
            let mut y = vec![3f32; 8];
            let e = m.matmul_with(Isa::Scalar, arm, Acts::F32 { x: &x, s: 1 }, &mut y);
            assert_eq!(e.unwrap_err().class(), "E_PATH_UNAVAILABLE", "{arm}");
            assert!(y.iter().all(|&v| v == 0.0));
        }
    }
}

/// A damaged chunk is refused when the matrix is built (`E_CHECKSUM`), before any multiply;
/// the built matrix has verified its checks, so multiplies do not repeat them.
#[test]
fn damaged_chunks_are_refused_at_construction() {
    let (o, i) = (16, 1500);
    let c = case(o, i, 3, false, 12);
    let m = Rans64Matrix::new(&c.blob, &c.scales, o, i).unwrap();
    assert!(m.blob().checks_verified());
    let n_chunks = m.blob().n_chunks();
    assert!(n_chunks >= 3, "{n_chunks}");
    let bodies = rans64::HEADER_LEN + 12 * n_chunks;
    let mut classes = std::collections::BTreeMap::new();
    for k in (bodies..c.blob.len()).step_by(37) {
        let mut bad = c.blob.clone();
        bad[k] ^= 0x24;
        let e = Rans64Matrix::new(&bad, &c.scales, o, i).unwrap_err();
        assert!(matches!(e, AdapterError::Blob(rans64::Error::Checksum { .. })), "{e:?}");
        *classes.entry(e.class()).or_insert(0) += 1;
    }
    assert_eq!(classes.len(), 1, "{classes:?}");
}

/// Every corruption of a chunk body that the parse accepts, its check rewritten so that it
/// reaches the decoders, is either refused (and leaves `y` all zeros) or, if the decoder
/// accepts it, gives exactly dense matmul on what it decoded; most are refused.
#[test]
fn corrupted_blobs_leave_no_partial_output() {
    let (o, i) = (16, 1500);
    let c = case(o, i, 3, false, 12);
    let x = vec![1.0f32; 2 * i];
    let (mut refused, mut tried) = (0, 0);
    for k in (rans64::HEADER_LEN + 8..c.blob.len()).step_by(53) {
        let mut bad = c.blob.clone();
        bad[k] ^= 0x24;
        blob_v2::reseal(&mut bad);
        let Ok(m) = Rans64Matrix::new(&bad, &c.scales, o, i) else { continue };
        tried += 1;
        // The scalar decode arm runs one band, the AVX-512 ones two half-bands at once: the
        // same refusal (the first in chunk order) either way.
        let mut first: Option<Result<(), AdapterError>> = None;
        for &arm in &arms() {
            let mut y = vec![f32::NAN; 2 * o];
            let got = m.matmul_with(Isa::Scalar, arm, Acts::F32 { x: &x, s: 2 }, &mut y);
            assert_eq!(*first.get_or_insert(got), got, "byte {k} {arm}");
            match got {
                Err(e) => {
                    assert!(y.iter().all(|&v| v == 0.0), "byte {k} {arm}: {e}");
                    if arm == Arm::Scalar {
                        refused += 1;
                    }
                }
                Ok(()) => {
                    let mut back = vec![0u8; o * i.div_ceil(2)];
                    rans64::decode_with(arm, &bad, &mut back).unwrap();
                    let dense =
                        Matrix::new(Format::Int4Row, &back, Scales::F32(&c.scales), o, i, 0)
                            .unwrap();
                    let mut want = vec![0f32; 2 * o];
                    matmul_with(Isa::Scalar, &dense, &x, 2, &mut want).unwrap();
                    assert_eq!(bits(&y), bits(&want), "byte {k} {arm}");
                }
            }
        }
    }
    assert!(tried > 20, "{tried}");
    assert!(refused * 10 >= tried * 8, "{refused} of {tried} refused");
}
