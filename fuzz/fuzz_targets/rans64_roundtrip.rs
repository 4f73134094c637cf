//! `int4-rans64-t1` roundtrip: any packed int4 bytes, any chunk shift in `12..=26` (small
//! inputs, so large shifts give one short chunk), encode within `max_encoded_len`,
//! deterministically and to the same bytes on every encode arm (scalar, AVX2), and decode
//! back exactly on every available arm (version 2, and version 3 from its own encoder),
//! through the fused
//! matmul adapter's row bands too (its output must equal dense int4-row matmul on the input);
//! a row count `S` that does not match the activations is refused by name, up to `usize::MAX`.
//! Input: `[shift selector, shape selector, skew] + bytes`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tetrad_quant::Format;
use tetrad_quant::adapter::Acts;
use tetrad_quant::adapter_rans64::Rans64Matrix;
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::{Matrix, Scales, matmul_with};
use tetrad_rans::rans64::{self, Arm};

fuzz_target!(|data: &[u8]| {
    let [sel, shape, skew, rest @ ..] = data else { return };
    let (sel, shape, skew) = (*sel, *shape, *skew);
    let shift =
        rans64::MIN_CHUNK_SHIFT + sel % (rans64::MAX_CHUNK_SHIFT - rans64::MIN_CHUNK_SHIFT + 1);
    // Optionally skew the bytes so coded (not raw) chunks are common.
    let src: Vec<u8> = if skew & 1 == 1 {
        rest.iter().map(|&b| if b < 16 { b } else { 0x88 ^ (b & 0x11) }).collect()
    } else {
        rest.to_vec()
    };
    let cap = rans64::max_encoded_len(src.len(), shift);
    let mut blob = vec![0u8; cap];
    let len = rans64::encode_v2_into(&src, shift, &mut blob).expect("encodes");
    assert!(len <= cap);
    blob.truncate(len);
    let mut again = vec![0u8; cap];
    let len2 = rans64::encode_v2_into(&src, shift, &mut again).expect("encodes");
    assert_eq!(&again[..len2], &blob[..], "encoder is deterministic");
    for &arm in Arm::ALL.iter().filter(|a| a.can_encode()) {
        let n = rans64::encode_v2_with(arm, &src, shift, &mut again).expect("encodes");
        assert_eq!(&again[..n], &blob[..], "encode arm {arm}");
    }
    for &arm in Arm::ALL.iter().filter(|a| a.is_available()) {
        let mut out = vec![0xA5u8; src.len()];
        rans64::decode_with(arm, &blob, &mut out).expect("own blob decodes");
        assert_eq!(out, src, "{arm}");
    }
    // Version 3 of the same bytes: within the same bound, deterministic, decoded back exactly
    // on every arm.
    let mut blob3 = vec![0u8; cap];
    let len3 = rans64::encode_v3_into(&src, shift, &mut blob3).expect("encodes version 3");
    blob3.truncate(len3);
    let len3b = rans64::encode_v3_into(&src, shift, &mut again).expect("encodes version 3");
    assert_eq!(&again[..len3b], &blob3[..], "version-3 encoder is deterministic");
    for &arm in Arm::ALL.iter().filter(|a| a.is_available()) {
        let mut out = vec![0xA5u8; src.len()];
        rans64::decode_with(arm, &blob3, &mut out).expect("own version-3 blob decodes");
        assert_eq!(out, src, "version 3 on {arm}");
    }
    // As an [O, I] int4-row matrix: O rows of `stride` bytes (I = 2·stride or 2·stride − 1).
    let stride = usize::from(shape % 16) + 1;
    if src.is_empty() || !src.len().is_multiple_of(stride) {
        return;
    }
    let o = src.len() / stride;
    let i = 2 * stride - usize::from(shape >> 7);
    let scales: Vec<f32> = (0..o).map(|r| 0.01 + (r % 7) as f32 * 0.003).collect();
    let m = Rans64Matrix::new(&blob, &scales, o, i).expect("matrix");
    let dense = Matrix::new(Format::Int4Row, &src, Scales::F32(&scales), o, i, 0).expect("dense");
    let x: Vec<f32> = (0..i).map(|k| (k as f32 * 0.7).sin()).collect();
    let mut want = vec![0f32; o];
    matmul_with(Isa::Scalar, &dense, &x, 1, &mut want).expect("dense matmul");
    let m3 = Rans64Matrix::new(&blob3, &scales, o, i).expect("version-3 matrix");
    for m in [&m, &m3] {
        let mut y = vec![f32::NAN; o];
        m.matmul_with(Isa::Scalar, Arm::best(), Acts::F32 { x: &x, s: 1 }, &mut y).expect("fused");
        assert_eq!(
            y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
    let r0 = usize::from(shape) % o;
    let band =
        m.band_with(Isa::Scalar, Arm::Scalar, Acts::F32 { x: &x, s: 1 }, r0..o).expect("band");
    assert_eq!(
        band.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want[r0..].iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // A row count that does not match `x` (one activation row) is refused by name before
    // anything is sized by it; `y` is zero-filled.
    let lie = match sel >> 5 {
        0 => usize::MAX >> (shape % 63),
        1 => usize::from(skew).max(2),
        _ => return,
    };
    let mut y = vec![f32::NAN; o];
    let e = m.matmul_with(Isa::Scalar, Arm::Scalar, Acts::F32 { x: &x, s: lie }, &mut y);
    assert!(e.expect_err("S does not match x").class().starts_with("E_KERNEL"));
    assert!(y.iter().all(|&v| v == 0.0));
    let e = m.band_with(Isa::Scalar, Arm::Scalar, Acts::F32 { x: &x, s: lie }, r0..o);
    assert!(e.expect_err("S does not match x").class().starts_with("E_KERNEL"));
});
