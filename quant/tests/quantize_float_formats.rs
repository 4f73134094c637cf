//! The mxfp4 and fp8-e4m3-b128 quantizers (`tetrad_quant::quantize`): rounding to the nearest
//! representable value with ties to the even code, saturation, canonical `+0`, the group and
//! block scales, and that the kernels read back exactly the values the quantizer chose.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use proptest::prelude::*;
use tetrad_quant::quantize::{
    QuantizeError, e2m1_code, mxfp4_group_exponent, quantize_fp8_e4m3_b128, quantize_mxfp4,
};
use tetrad_quant::scalar::{E2M1, dequantize_row, e4m3_to_f32, ue8m0_to_f32};
use tetrad_quant::{Format, Matrix, Scales};

fn e2m1_value(code: u8) -> f32 {
    let v = E2M1[usize::from(code & 7)];
    if code & 8 != 0 { -v } else { v }
}

#[test]
fn e2m1_rounds_to_nearest_ties_to_even_and_saturates() {
    for (v, want) in [
        (0.0f32, 0u8),
        (0.25, 0), // tie 0 | 0.5: even index 0
        (0.26, 1),
        (0.75, 2), // tie 0.5 | 1: index 2
        (1.25, 2), // tie 1 | 1.5: index 2
        (1.75, 4), // tie 1.5 | 2: index 4
        (2.5, 4),  // tie 2 | 3: index 4
        (3.5, 6),  // tie 3 | 4: index 6
        (5.0, 6),  // tie 4 | 6: index 6
        (5.01, 7),
        (6.0, 7),
        (7.99, 7), // saturates
        (1e30, 7),
        (-0.2, 0), // rounds to zero: +0, never 0x8
        (-0.0, 0),
        (-0.3, 9),
        (-5.0, 14),
        (-100.0, 15),
    ] {
        assert_eq!(e2m1_code(v), want, "{v}");
    }
    for code in 0u8..16 {
        if code == 8 {
            continue; // -0 is never produced
        }
        assert_eq!(e2m1_code(e2m1_value(code)), code, "every value maps to its own code");
    }
}

#[test]
fn mxfp4_exponent_puts_the_largest_magnitude_in_the_top_binade() {
    assert_eq!(mxfp4_group_exponent(&[0.0; 32]), 127, "all zero: scale 1");
    assert_eq!(mxfp4_group_exponent(&[1.0]), 125, "1 = 4 · 2^-2");
    assert_eq!(mxfp4_group_exponent(&[-7.9, 0.1]), 127, "7.9 in [4, 8)");
    assert_eq!(mxfp4_group_exponent(&[8.0]), 128);
    assert_eq!(mxfp4_group_exponent(&[f32::MAX]), 252);
    assert_eq!(mxfp4_group_exponent(&[1e-40]), 1, "subnormal: clamped to the smallest scale");
    assert_eq!(mxfp4_group_exponent(&[f32::MIN_POSITIVE]), 1);
}

#[test]
fn fp8_rounds_to_nearest_ties_to_even_and_saturates() {
    // One block with max|w| = 448: scale 1, so codes are the values themselves.
    let mut w = vec![0f32; 4];
    let cases = [
        (448.0f32, 0x7Eu8),
        (1.0, 0x38),
        (1.0625, 0x38),          // tie 1 | 1.125: even code 0x38
        (1.1875, 0x3A),          // tie 1.125 | 1.25: even code 0x3A
        (0.0009, 0x00),          // below half the smallest subnormal 2^-9: +0
        (0.002_929_687_5, 0x02), // 1.5 · 2^-9 ties 2^-9 | 2 · 2^-9: even code 2
        (-0.0009, 0x00),         // rounds to zero: +0, never 0x80
        (-2.0, 0xC0),
        (-448.0, 0xFE),
    ];
    for (v, want) in cases {
        w[0] = 448.0;
        w[1] = v;
        let (mut codes, mut scales) = (vec![0u8; 4], vec![0f32; 1]);
        quantize_fp8_e4m3_b128(&w, 2, 2, &mut codes, &mut scales).unwrap();
        assert_eq!(scales[0], 1.0);
        assert_eq!(codes[1], want, "{v}");
    }
    // Every finite code's value maps to itself.
    for code in (0u8..=0xFE).filter(|c| c & 0x7F != 0x7F && *c != 0x80) {
        let w = [448.0, e4m3_to_f32(code)];
        let (mut codes, mut scales) = (vec![0u8; 2], vec![0f32; 1]);
        quantize_fp8_e4m3_b128(&w, 1, 2, &mut codes, &mut scales).unwrap();
        assert_eq!(codes[1], code, "{code:#04x}");
    }
}

#[test]
fn fp8_block_scales_are_per_128_by_128_block() {
    let (o, i) = (130usize, 260usize); // 2 × 3 blocks, partial on both axes
    let w: Vec<f32> = (0..o * i).map(|k| (k as f32 * 0.37).sin() * (1 + k / 9000) as f32).collect();
    let (mut codes, mut scales) = (vec![0u8; o * i], vec![0f32; 6]);
    quantize_fp8_e4m3_b128(&w, o, i, &mut codes, &mut scales).unwrap();
    for (b, &s) in scales.iter().enumerate() {
        let (br, bc) = (b / 3, b % 3);
        let mut amax = 0f32;
        for r in br * 128..(br * 128 + 128).min(o) {
            for c in bc * 128..(bc * 128 + 128).min(i) {
                amax = amax.max(w[r * i + c].abs());
            }
        }
        assert_eq!(s, amax / 448.0, "block {b}");
    }
    // A block's largest magnitude is exactly ±448 · s (code 0x7E or 0xFE).
    assert!(codes.iter().any(|&c| c & 0x7F == 0x7E));
    assert!(codes.iter().all(|&c| c & 0x7F != 0x7F), "never a NaN code");
}

#[test]
fn refusals() {
    let (mut c, mut s8, mut s) = (vec![0u8; 2], vec![0u8; 1], vec![0f32; 1]);
    assert_eq!(
        quantize_mxfp4(&[f32::NAN, 1.0, 0.0, 0.0], 1, 4, &mut c, &mut s8),
        Err(QuantizeError::NonFinite { index: 0 })
    );
    assert!(matches!(
        quantize_mxfp4(&[1.0; 4], 1, 4, &mut c, &mut [0u8; 2]),
        Err(QuantizeError::Length { what: "scales", .. })
    ));
    assert_eq!(
        quantize_fp8_e4m3_b128(&[1.0, f32::INFINITY], 1, 2, &mut c, &mut s),
        Err(QuantizeError::NonFinite { index: 1 })
    );
    assert!(matches!(
        quantize_fp8_e4m3_b128(&[1.0; 2], 1, 2, &mut [0u8; 3], &mut s),
        Err(QuantizeError::Length { what: "codes", .. })
    ));
}

fn weights() -> impl Strategy<Value = (usize, usize, Vec<f32>)> {
    (1usize..6, 1usize..200).prop_flat_map(|(o, i)| {
        let v = prop_oneof![
            4 => -10.0f32..10.0,
            1 => Just(0.0f32),
            1 => -1e-30f32..1e-30,
            1 => prop_oneof![Just(-6.0e3f32), Just(3.0e4), Just(f32::MIN_POSITIVE)],
        ];
        (Just(o), Just(i), proptest::collection::vec(v, o * i))
    })
}

proptest! {
    /// mxfp4: the kernels read back, value for value, the e2m1 code times the group scale the
    /// quantizer chose; each value is the grid point nearest `w / scale` (saturated at 6).
    #[test]
    fn mxfp4_reads_back_the_nearest_grid_value((o, i, w) in weights()) {
        let (stride, groups) = (i.div_ceil(2), i.div_ceil(32));
        let (mut codes, mut scales) = (vec![0u8; o * stride], vec![0u8; o * groups]);
        quantize_mxfp4(&w, o, i, &mut codes, &mut scales).unwrap();
        prop_assert!(scales.iter().all(|&e| (1..=254).contains(&e)));
        if i % 2 == 1 {
            prop_assert!((0..o).all(|r| codes[r * stride + stride - 1] >> 4 == 0), "padding nibble 0");
        }
        let m = Matrix::new(Format::Mxfp4, &codes, Scales::Ue8m0(&scales), o, i, 0).unwrap();
        let mut row = vec![0f32; i];
        for r in 0..o {
            dequantize_row(&m, r, &mut row);
            for c in 0..i {
                let x = ue8m0_to_f32(scales[r * groups + c / 32]);
                let v = w[r * i + c] / x;
                let got = row[c] / x;
                // The nearest grid magnitude (ties either way), saturated at 6.
                let best = E2M1.iter().map(|g| (g - v.abs().min(6.0)).abs()).fold(f32::MAX, f32::min);
                prop_assert!(((got.abs() - v.abs().min(6.0)).abs() - best).abs() <= f32::EPSILON * 8.0,
                    "row {r} col {c}: w {} -> {}", w[r * i + c], row[c]);
                prop_assert!(got == 0.0 || got.signum() == v.signum());
            }
        }
    }

    /// fp8-e4m3-b128: the kernels read back `e4m3(code) · s`, the code nearest `w / s`.
    #[test]
    fn fp8_reads_back_the_nearest_code((o, i, w) in weights()) {
        let (bo, bi) = (o.div_ceil(128), i.div_ceil(128));
        let (mut codes, mut scales) = (vec![0u8; o * i], vec![0f32; bo * bi]);
        quantize_fp8_e4m3_b128(&w, o, i, &mut codes, &mut scales).unwrap();
        let m = Matrix::new(Format::Fp8E4m3B128, &codes, Scales::F32(&scales), o, i, 0).unwrap();
        let mags: Vec<f32> = (0u8..0x7F).map(e4m3_to_f32).collect();
        let mut row = vec![0f32; i];
        for r in 0..o {
            dequantize_row(&m, r, &mut row);
            for c in 0..i {
                let s = scales[(r / 128) * bi + c / 128];
                let code = codes[r * i + c];
                prop_assert_eq!(row[c], e4m3_to_f32(code) * s);
                let a = (w[r * i + c] / s).abs().min(448.0);
                let best = mags.iter().map(|g| (f64::from(*g) - f64::from(a)).abs()).fold(f64::MAX, f64::min);
                prop_assert_eq!((f64::from(e4m3_to_f32(code & 0x7F)) - f64::from(a)).abs(), best);
            }
        }
    }
}
