//! Arbitrary f32 matrices (NaN, infinities, subnormals, huge values included) through every
//! reference quantizer: never a panic; finite input always quantizes; codes stay in range and
//! never use the most negative code; every weight is within half a scale step of its code.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tetrad_quant::quantize::{
    QuantizeError, quantize_int2_row, quantize_int3_g64, quantize_int4_grouped, quantize_int4_row,
    quantize_int8_row,
};

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

    let groups = if gs == 0 { 0 } else { i.div_ceil(gs) };
    let mut sg = vec![0f32; o * groups];
    let rg = quantize_int4_grouped(w, o, i, gs, &mut c4, &mut sg);
    if gs == 0 {
        assert_eq!(rg, Err(QuantizeError::GroupSize));
    } else {
        assert_eq!(rg.is_ok(), finite);
    }
});
