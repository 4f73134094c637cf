//! The quantized matmul kernels over arbitrary shapes, codes, scales and activations:
//! - `Matrix::new` with arbitrary (possibly wrong) lengths: `Ok` or a named refusal;
//! - int8-activation path (integer formats and mxfp4): every available arm is bit-identical to
//!   the scalar reference (NaN only where scalar is NaN), for the whole matrix and for row
//!   ranges;
//! - f32 path: every arm (scalar included) within `f32_tolerance` of an f64 oracle built from
//!   `scalar::code_value`/`group_scale` (the `docs/kernels.md` bound; skipped only where partial
//!   sums can overflow f32, as in the crate's own tests), with the bound's absolute term scaled
//!   by the row's largest group scale (see the regression in tetrad-quant); row ranges equal the
//!   full result;
//! - a forced arm that is not available is `E_PATH_UNAVAILABLE`, never a silent downgrade;
//! - the AVX-512 mxfp4 kernel in both lookup forms (`isa::set_vbmi_lookups`, from `s`);
//! - fp8: the AVX2 arms' two decodes (straight to f32 bits, and through f16) give the same
//!   bits (`isa::set_fp8_bits_decode`), and so does the view from `with_nan_codes_checked`
//!   (marked NaN-free exactly when no byte is a NaN code);
//! - batches of 1–3 activation rows, and of 4–16 (the small-batch passes) for one `s` in 8.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use tetrad_fuzz::assert_class;
use tetrad_quant::format::GROUP_SIZE_CANDIDATES;
use tetrad_quant::isa::{self, Isa};
use tetrad_quant::kernels::{self, KernelError, Matrix, Scales};
use tetrad_quant::{Format, scalar};

const DENSE: [Format; 8] = [
    Format::F32,
    Format::Int8Row,
    Format::Int4Row,
    Format::Int4Grouped,
    Format::Int2Row,
    Format::Int3G64,
    Format::Mxfp4,
    Format::Fp8E4m3B128,
];

#[derive(Debug, Arbitrary)]
struct Input {
    fmt: u8,
    o: u8,
    i: u16,
    s: u8,
    gs: u8,
    /// Perturb the weight / scale lengths (0 = exact).
    dw: i8,
    ds: i8,
    rows: (u8, u8),
    codes: Vec<u8>,
    scale_bits: Vec<u32>,
    x_bits: Vec<u32>,
}

fn finite(bits: u32, cap: f32) -> f32 {
    let v = f32::from_bits(bits);
    if v.is_finite() { v.clamp(-cap, cap) } else { 1.0 }
}

fn oracle(m: &Matrix<'_>, x: &[f32], si: usize, o: usize) -> (f64, f64) {
    let (ni, gl) = (m.i(), m.group_len());
    let (mut y, mut abs) = (0.0f64, 0.0f64);
    for i in 0..ni {
        let w = if m.format() == Format::F32 {
            f64::from(scalar::code_value(m, o, i))
        } else {
            f64::from(scalar::code_value(m, o, i)) * f64::from(scalar::group_scale(m, o, i / gl))
        };
        let t = w * f64::from(x[si * ni + i]);
        y += t;
        abs += t.abs();
    }
    (y, abs)
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn run(inp: Input) {
    // Both forms of the AVX-512 mxfp4 lookups (`vpermb` where the CPU has VBMI, `vpshufb`).
    isa::set_vbmi_lookups(inp.s < 128);
    let format = DENSE[usize::from(inp.fmt) % DENSE.len()];
    let o = 1 + usize::from(inp.o) % 9;
    let i = 1 + usize::from(inp.i) % 320;
    let s = if inp.s >= 224 { 4 + usize::from(inp.s) % 13 } else { 1 + usize::from(inp.s) % 3 };
    let gs = match inp.gs {
        0 => 0,
        g if g < 128 => {
            GROUP_SIZE_CANDIDATES[usize::from(g) % GROUP_SIZE_CANDIDATES.len()] as usize
        }
        g => usize::from(g),
    };
    // Lengths the format needs, then perturbed.
    let stride = match format {
        Format::F32 => 4 * i,
        Format::Int8Row | Format::Fp8E4m3B128 => i,
        Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => i.div_ceil(2),
        Format::Int2Row => i.div_ceil(4),
        Format::Int3G64 => i.div_ceil(64) * 24,
        _ => unreachable!(),
    };
    let nscales = match format {
        Format::F32 => 0,
        Format::Int8Row | Format::Int4Row | Format::Int2Row => o,
        Format::Fp8E4m3B128 => o.div_ceil(128) * i.div_ceil(128),
        Format::Int4Grouped => o * i.div_ceil(gs.max(1)),
        Format::Int3G64 => o * i.div_ceil(64),
        Format::Mxfp4 => o * i.div_ceil(32),
        _ => unreachable!(),
    };
    let nw = (o * stride).saturating_add_signed(isize::from(inp.dw % 2));
    let ns = nscales.saturating_add_signed(isize::from(inp.ds % 2));
    let codes = if inp.codes.is_empty() { vec![0x5A] } else { inp.codes };
    let weights: Vec<u8> = (0..nw).map(|k| codes[k % codes.len()]).collect();
    let sb = if inp.scale_bits.is_empty() { vec![0x3F80_0000] } else { inp.scale_bits };
    let f32_scales: Vec<f32> = (0..ns).map(|k| finite(sb[k % sb.len()], 1e6)).collect();
    let ue8: Vec<u8> = (0..ns).map(|k| 100 + (sb[k % sb.len()] % 50) as u8).collect();
    let scales = match format {
        Format::F32 if ns == 0 => Scales::None,
        Format::Mxfp4 => Scales::Ue8m0(&ue8),
        _ => Scales::F32(&f32_scales),
    };
    let m = match Matrix::new(format, &weights, scales, o, i, gs) {
        Ok(m) => m,
        Err(e) => {
            assert_class(e.class());
            return;
        }
    };
    let xb = if inp.x_bits.is_empty() { vec![0x3F80_0000] } else { inp.x_bits };
    let x: Vec<f32> = (0..s * i).map(|k| finite(xb[k % xb.len()], 1e4)).collect();
    let (r0, r1) = (usize::from(inp.rows.0) % (o + 1), usize::from(inp.rows.1) % (o + 1));
    let rows = r0.min(r1)..r0.max(r1);

    // f32 path.
    let mut ys = vec![0f32; s * o];
    kernels::matmul_with(Isa::Scalar, &m, &x, s, &mut ys).expect("scalar runs");
    for isa in isa::ALL {
        let mut y = vec![0f32; s * o];
        let r = kernels::matmul_with(isa, &m, &x, s, &mut y);
        if !isa.is_available() {
            assert_eq!(r, Err(KernelError::Unavailable { isa }));
            continue;
        }
        r.expect("available arm runs");
        if format == Format::Fp8E4m3B128 {
            let mut yf = vec![0f32; s * o];
            isa::set_fp8_bits_decode(false);
            let r = kernels::matmul_with(isa, &m, &x, s, &mut yf);
            isa::set_fp8_bits_decode(true);
            r.expect("available arm runs");
            for (k, (a, b)) in y.iter().zip(&yf).enumerate() {
                assert!(same(*a, *b), "{isa} fp8 k={k}: bits decode {a}, f16 decode {b}");
            }
            // Checked once for NaN codes: marked only without any, and the same bits.
            let mc = m.with_nan_codes_checked();
            assert_eq!(mc.fp8_nan_free(), !weights.iter().any(|b| b & 0x7F == 0x7F));
            let mut yc = vec![0f32; s * o];
            kernels::matmul_with(isa, &mc, &x, s, &mut yc).expect("available arm runs");
            for (k, (a, b)) in y.iter().zip(&yc).enumerate() {
                assert!(same(*a, *b), "{isa} fp8 k={k}: unchecked {a}, checked {b}");
            }
        }
        for si in 0..s {
            for oo in 0..o {
                let (want, abs) = oracle(&m, &x, si, oo);
                let got = y[si * o + oo];
                if want.is_nan() {
                    assert!(got.is_nan(), "{isa} {format}: want NaN, got {got}");
                    continue;
                }
                // The documented bound plus its absolute (underflow) term scaled by the row's
                // largest group scale: partial sums of code·x are rounded in f32 *before* the
                // group scale multiplies them, so a subnormal partial product's error
                // (≤ 2^-150) is amplified by the scale. The documented `f32_tolerance` alone
                // misses this (regression: tetrad-quant tests/fuzz_regressions.rs).
                let smax = (0..m.groups_per_row())
                    .map(|g| f64::from(scalar::group_scale(&m, oo, g).abs()))
                    .fold(1.0f64, f64::max);
                let tol = kernels::f32_tolerance(i, abs) + (i + 4) as f64 * 2f64.powi(-149) * smax;
                if 2.0 * abs + tol > f64::from(f32::MAX) {
                    continue;
                }
                assert!(
                    (f64::from(got) - want).abs() <= tol,
                    "{isa} {format} O={o} I={i} s={si} o={oo}: got {got}, want {want}, tol {tol}"
                );
            }
        }
        let mut yr = vec![0f32; s * rows.len()];
        kernels::matmul_rows_with(isa, &m, &x, s, rows.clone(), &mut yr).expect("row range");
        for si in 0..s {
            for (k, oo) in rows.clone().enumerate() {
                assert!(same(yr[si * rows.len() + k], y[si * o + oo]), "{isa} row range differs");
            }
        }
    }

    // int8-activation path: bit-exact across arms.
    let mut q = vec![0i8; s * i];
    let mut qs = vec![0f32; s];
    let xq = kernels::quantize_activations(&x, s, i, &mut q, &mut qs).expect("finite x");
    let mut ys = vec![0f32; s * o];
    let rs = kernels::matmul_q8_with(Isa::Scalar, &m, &xq, &mut ys);
    if !m.has_q8() {
        assert!(matches!(rs, Err(KernelError::Mode { .. })));
        return;
    }
    rs.expect("scalar q8 runs");
    for isa in isa::available() {
        let mut y = vec![0f32; s * o];
        kernels::matmul_q8_with(isa, &m, &xq, &mut y).expect("available arm runs");
        for (k, (a, b)) in ys.iter().zip(&y).enumerate() {
            assert!(same(*a, *b), "{isa} q8 {format} O={o} I={i} k={k}: scalar {a} vs {b}");
        }
        let mut yr = vec![0f32; s * rows.len()];
        kernels::matmul_q8_rows_with(isa, &m, &xq, rows.clone(), &mut yr).expect("row range");
        for si in 0..s {
            for (k, oo) in rows.clone().enumerate() {
                assert!(
                    same(yr[si * rows.len() + k], ys[si * o + oo]),
                    "{isa} q8 row range differs"
                );
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(inp) = Input::arbitrary_take_rest(Unstructured::new(data)) {
        run(inp);
    }
});
