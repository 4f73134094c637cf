//! Arbitrary f32 matrices (NaN, infinities, subnormals, huge values included) through every
//! reference quantizer: never a panic; finite input always quantizes; codes stay in range and
//! never use the most negative code; every weight is within half a scale step of its code.
//! mxfp4 and fp8-e4m3-b128: scales in range, no NaN or `-0` code, and each code is the one
//! nearest the weight over its scale (saturated), ties to the even code.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tetrad_quant::quantize::{
    QuantizeError, quantize_fp8_e4m3_b128, quantize_int2_row, quantize_int3_g64,
    quantize_int4_grouped, quantize_int4_row, quantize_int8_row, quantize_mxfp4,
};
use tetrad_quant::scalar::{E2M1, e4m3_to_f32, ue8m0_to_f32};

/// True when `code` (a magnitude index into `values`) is the nearest to `a`, ties to even.
fn is_nearest(values: &[f64], code: usize, a: f64) -> bool {
    let d = (values[code] - a).abs();
    values.iter().enumerate().all(|(k, v)| {
        let dk = (v - a).abs();
        dk > d || (dk == d && (k == code || code % 2 == 0))
    })
}

#[derive(Debug, Arbitrary)]
struct Input {
    cols: u8,
    gs: u8,
    weights: Vec<f32>,
}

fuzz_target!(|inp: Input| {
    let i = usize::from(inp.cols).max(1);
    let o = (inp.weights.len() / i).min(64);
    let w = &inp.weights[..o * i];
    let finite = w.iter().all(|v| v.is_finite());
    let gs = usize::from(inp.gs);

    let mut s_row = vec![0f32; o];
    let mut c8 = vec![0u8; o * i];
    let r = quantize_int8_row(w, o, i, &mut c8, &mut s_row);
    assert_eq!(r.is_ok(), finite, "{r:?}");
    if r.is_ok() {
        for (k, (&b, &v)) in c8.iter().zip(w).enumerate() {
            let q = b as i8;
            assert!(q >= -127, "most negative int8 code at {k}");
            let s = s_row[k / i];
            let err = (f64::from(q) * f64::from(s) - f64::from(v)).abs();
            // Half a step, plus f32 rounding of w / s.
            assert!(err <= f64::from(s) * 0.5001 + 1e-30, "w {v} q {q} s {s}");
        }
    } else {
        assert!(matches!(r, Err(QuantizeError::NonFinite { .. })));
    }

    let mut c4 = vec![0u8; o * i.div_ceil(2)];
    assert_eq!(quantize_int4_row(w, o, i, &mut c4, &mut s_row).is_ok(), finite);
    if finite {
        assert!(c4.iter().all(|b| b & 0xF != 0 && b >> 4 != 0), "nibble 0 emitted");
    }
    let mut c2 = vec![0u8; o * i.div_ceil(4)];
    assert_eq!(quantize_int2_row(w, o, i, &mut c2, &mut s_row).is_ok(), finite);

    let mut c3 = vec![0u8; o * i.div_ceil(64) * 24];
    let mut s3 = vec![0f32; o * i.div_ceil(64)];
    assert_eq!(quantize_int3_g64(w, o, i, &mut c3, &mut s3).is_ok(), finite);

    let mut cm = vec![0u8; o * i.div_ceil(2)];
    let mut em = vec![0u8; o * i.div_ceil(32)];
    assert_eq!(quantize_mxfp4(w, o, i, &mut cm, &mut em).is_ok(), finite);
    if finite {
        let grid: Vec<f64> = E2M1.iter().map(|&v| f64::from(v)).collect();
        assert!(em.iter().all(|e| (1..=254).contains(e)), "UE8M0 byte out of range");
        for r in 0..o {
            for c in 0..i {
                let nib = (cm[r * i.div_ceil(2) + c / 2] >> (4 * (c % 2))) & 15;
                assert_ne!(nib, 8, "-0 emitted");
                let v = w[r * i + c] / ue8m0_to_f32(em[r * i.div_ceil(32) + c / 32]);
                let a = f64::from(v.abs()).min(6.0);
                assert!(is_nearest(&grid, usize::from(nib & 7), a), "w {} nib {nib}", w[r * i + c]);
                assert!(nib & 7 == 0 || (nib & 8 != 0) == (v < 0.0), "sign");
            }
        }
    }
    let mut cf = vec![0u8; o * i];
    let mut sf = vec![0f32; o.div_ceil(128) * i.div_ceil(128)];
    assert_eq!(quantize_fp8_e4m3_b128(w, o, i, &mut cf, &mut sf).is_ok(), finite);
    if finite {
        let mags: Vec<f64> = (0u8..0x7F).map(|b| f64::from(e4m3_to_f32(b))).collect();
        for (k, &b) in cf.iter().enumerate() {
            assert!(b & 0x7F != 0x7F && b != 0x80, "NaN or -0 code {b:#04x}");
            let s = sf[(k / i / 128) * i.div_ceil(128) + (k % i) / 128];
            assert!(s.is_finite() && s >= 1e-8, "scale {s}");
            let a = f64::from((w[k] / s).abs()).min(448.0);
            assert!(is_nearest(&mags, usize::from(b & 0x7F), a), "w {} byte {b:#04x} s {s}", w[k]);
        }
    }

    let groups = if gs == 0 { 0 } else { i.div_ceil(gs) };
    let mut sg = vec![0f32; o * groups];
    let rg = quantize_int4_grouped(w, o, i, gs, &mut c4, &mut sg);
    if gs == 0 {
        assert_eq!(rg, Err(QuantizeError::GroupSize));
    } else {
        assert_eq!(rg.is_ok(), finite);
    }
});
