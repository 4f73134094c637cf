//! The scalar reference kernels: **the normative spec** of every kernel in this crate.
//!
//! Every SIMD arm in `crate::arch` computes the same function as the code here and is tested
//! against it. The code is written for clarity, not speed: one weight at a time, in the order
//! stated below, so that the order *is* the specification.
//!
//! # Value rules (`docs/FORMATS.md`)
//! [`dequantize_row`] produces `W[o, i]` exactly as the registry defines it: the unscaled value
//! `v` of the code ([`code_value`]) times the scale of its group ([`group_scale`]), one f32
//! multiplication (a single rounding; exact for the integer formats whenever the product is
//! representable).
//!
//! # f32 activations ([`matmul_f32_rows`])
//! For each activation row `s` and output row `o`, with `G` groups per row (see
//! [`crate::kernels::Matrix::group_len`]):
//! ```text
//! acc = 0.0f32
//! for g in 0..G:                       // groups in increasing column order
//!     part = 0.0f32
//!     for i in group g (increasing):   // v = unscaled code value, exact in f32
//!         part = part + v(o, i) * x[s, i]      // two roundings: product, then sum (no FMA)
//!     acc = acc + part * scale(o, g)
//! y[s, o] = acc
//! ```
//! (`f32` weights: one group, `v` = the weight, scale 1.0.) SIMD arms sum in other orders
//! (lanes, FMA, scales folded into the weights); they are held to the tolerance of
//! `docs/kernels.md`: `|y − y*| ≤ (I + 4) · 2⁻²⁴ · Σᵢ |x[s,i] · W[o,i]| + (I + 4) · 2⁻¹⁴⁹`
//! against the exact (f64) result `y*`, a bound that holds for every summation order.
//!
//! # int8 activations ([`matmul_q8_rows`])
//! Integer formats and mxfp4 only. Activations are first quantized per row
//! ([`crate::kernels::quantize_activations`]): `sx = max|x| / 127`, `q = round_half_even(x / sx)`
//! clamped to `[−127, 127]` (all zero when `sx == 0`). Weights give integer codes
//! ([`code_i8`]: the stored value minus its offset; mxfp4: **twice** the e2m1 value, an integer
//! in `[−12, 12]`, with the group scale halved to `2^(e−128)` ([`group_scale_q8`])). Then
//! ```text
//! acc = 0.0f32
//! for g in 0..G:
//!     d = Σ_{i in g} code(o, i) · q[s, i]        // exact i32 (|d| < 2^31 since I ≤ 2^17)
//!     acc = acc + (d as f32) * scale_q8(o, g)    // i32 → f32 rounds to nearest even
//! y[s, o] = acc * sx[s]
//! ```
//! Every arm reproduces this bit for bit.

use crate::format::Format;
use crate::kernels::{Matrix, QuantizedActs, Scales};

/// The e2m1 magnitudes of mxfp4 codes 0..7 (`docs/FORMATS.md`).
pub const E2M1: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];

/// Twice the e2m1 magnitudes: mxfp4 values as integers (used by the int8-activation path).
pub const E2M1_X2: [i8; 8] = [0, 1, 2, 3, 4, 6, 8, 12];

/// Exact value of an OCP E4M3FN byte: bit 7 sign, bits 6..3 exponent (bias 7), bits 2..0
/// mantissa; exponent 0 is subnormal (`m · 2⁻⁹`); `0x7F`/`0xFF` are NaN; no infinities.
pub fn e4m3_to_f32(b: u8) -> f32 {
    let mag = b & 0x7F;
    if mag == 0x7F {
        return f32::NAN;
    }
    let e = i32::from(mag >> 3);
    let m = f32::from(mag & 7);
    let v = if e == 0 { m * pow2(-9) } else { (1.0 + m / 8.0) * pow2(e - 7) };
    if b & 0x80 != 0 { -v } else { v }
}

/// `2^k` as an f32 for `-149 ≤ k ≤ 127` (subnormal powers included), built from bits.
pub fn pow2(k: i32) -> f32 {
    debug_assert!((-149..=127).contains(&k));
    if k >= -126 {
        #[allow(clippy::cast_sign_loss)] // k + 127 ∈ [1, 254]
        let bits = ((k + 127) as u32) << 23;
        f32::from_bits(bits)
    } else {
        #[allow(clippy::cast_sign_loss)] // k + 149 ∈ [0, 22]
        let bits = 1u32 << (k + 149) as u32;
        f32::from_bits(bits)
    }
}

/// A UE8M0 scale byte as f32: `2^(e−127)`; DECISION (`docs/FORMATS.md`): `e = 0` is `+0.0`.
/// `e = 255` (NaN) never reaches a kernel: [`Matrix::new`] refuses it.
pub fn ue8m0_to_f32(e: u8) -> f32 {
    match e {
        0 => 0.0,
        255 => f32::NAN,
        _ => pow2(i32::from(e) - 127),
    }
}

/// The mxfp4 group scale of the int8-activation path, `2^(e−128)` (half of
/// [`ue8m0_to_f32`], because [`code_i8`] doubles the e2m1 value); `e = 0` is `+0.0`.
pub fn ue8m0_half(e: u8) -> f32 {
    match e {
        0 => 0.0,
        255 => f32::NAN,
        _ => pow2(i32::from(e) - 128),
    }
}

/// The integer code of weight `(o, i)`: int8 byte; nibble − 8; crumb − 2; u3 − 4; mxfp4:
/// `±2·e2m1`. `None` for `f32` and fp8 (no integer code).
pub fn code_i8(m: &Matrix<'_>, o: usize, i: usize) -> Option<i8> {
    let row = m.row_bytes(o);
    #[allow(clippy::cast_possible_wrap)] // stored offset codes are < 16
    Some(match m.format() {
        Format::Int8Row => i8::from_le_bytes([row[i]]),
        Format::Int4Row | Format::Int4Grouped => ((row[i / 2] >> (4 * (i % 2))) & 0xF) as i8 - 8,
        Format::Int2Row => ((row[i / 4] >> (2 * (i % 4))) & 3) as i8 - 2,
        Format::Int3G64 => {
            let grp = &row[(i / 64) * 24..][..24];
            let k = i % 64;
            let u =
                ((grp[k >> 2] >> (2 * (k & 3))) & 3) | (((grp[16 + (k >> 3)] >> (k & 7)) & 1) << 2);
            u as i8 - 4
        }
        Format::Mxfp4 => {
            let nib = (row[i / 2] >> (4 * (i % 2))) & 0xF;
            let mag = E2M1_X2[usize::from(nib & 7)];
            if nib & 8 != 0 { -mag } else { mag }
        }
        _ => return None,
    })
}

/// The unscaled value `v` of weight `(o, i)` as f32 (exact): the integer code, the e2m1 value
/// (mxfp4), the e4m3 value (fp8), or the raw weight (`f32`).
pub fn code_value(m: &Matrix<'_>, o: usize, i: usize) -> f32 {
    let row = m.row_bytes(o);
    match m.format() {
        Format::F32 => {
            f32::from_le_bytes([row[4 * i], row[4 * i + 1], row[4 * i + 2], row[4 * i + 3]])
        }
        Format::Fp8E4m3B128 => e4m3_to_f32(row[i]),
        Format::Mxfp4 => {
            let nib = (row[i / 2] >> (4 * (i % 2))) & 0xF;
            let mag = E2M1[usize::from(nib & 7)];
            if nib & 8 != 0 { -mag } else { mag }
        }
        _ => f32::from(code_i8(m, o, i).unwrap_or(0)),
    }
}

/// The f32 scale of group `g` of row `o` (`1.0` for `f32` weights; mxfp4: `2^(e−127)`).
pub fn group_scale(m: &Matrix<'_>, o: usize, g: usize) -> f32 {
    match (m.format(), m.scales()) {
        (Format::F32, _) => 1.0,
        (Format::Mxfp4, Scales::Ue8m0(e)) => ue8m0_to_f32(e[m.scale_index(o, g)]),
        (_, Scales::F32(s)) => s[m.scale_index(o, g)],
        _ => 1.0,
    }
}

/// The scale of group `g` of row `o` on the int8-activation path: as [`group_scale`], except
/// mxfp4, whose codes are doubled, uses `2^(e−128)`.
pub fn group_scale_q8(m: &Matrix<'_>, o: usize, g: usize) -> f32 {
    match (m.format(), m.scales()) {
        (Format::Mxfp4, Scales::Ue8m0(e)) => ue8m0_half(e[m.scale_index(o, g)]),
        _ => group_scale(m, o, g),
    }
}

/// Exact dequantization of row `o`: `out[i] = W[o, i] = v(o, i) · scale(o, g(i))` (raw for
/// `f32` weights). `out` must hold at least `I` values; only the first `I` are written.
///
/// # Panics
/// If `o ≥ O` or `out.len() < I`.
pub fn dequantize_row(m: &Matrix<'_>, o: usize, out: &mut [f32]) {
    let gl = m.group_len();
    for (i, v) in out[..m.i()].iter_mut().enumerate() {
        *v = if m.format() == Format::F32 {
            code_value(m, o, i)
        } else {
            code_value(m, o, i) * group_scale(m, o, i / gl)
        };
    }
}

/// The f32-activation reference kernel over output rows `rows`: `y` holds `S × rows.len()`
/// values, `y[s · rows.len() + (o − rows.start)]`. Shapes are checked by the caller
/// ([`crate::kernels`]); the summation order is the one in the module documentation.
pub fn matmul_f32_rows(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: core::ops::Range<usize>,
    y: &mut [f32],
) {
    let (ni, gl) = (m.i(), m.group_len());
    let nr = rows.len();
    for si in 0..s {
        let xs = &x[si * ni..(si + 1) * ni];
        for (r, o) in rows.clone().enumerate() {
            let mut acc = 0.0f32;
            for g in 0..m.groups_per_row() {
                let mut part = 0.0f32;
                for (i, &xv) in xs.iter().enumerate().take(((g + 1) * gl).min(ni)).skip(g * gl) {
                    part += code_value(m, o, i) * xv;
                }
                acc += part * group_scale(m, o, g);
            }
            y[si * nr + r] = acc;
        }
    }
}

/// The int8-activation reference kernel over output rows `rows` (integer formats and mxfp4;
/// the caller has checked the format). Layout of `y` as in [`matmul_f32_rows`].
pub fn matmul_q8_rows(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: core::ops::Range<usize>,
    y: &mut [f32],
) {
    let (ni, gl) = (m.i(), m.group_len());
    let nr = rows.len();
    for si in 0..xq.s() {
        let (qs, sx) = xq.row(si);
        for (r, o) in rows.clone().enumerate() {
            let mut acc = 0.0f32;
            for g in 0..m.groups_per_row() {
                let mut d = 0i32;
                for (i, &q) in qs.iter().enumerate().take(((g + 1) * gl).min(ni)).skip(g * gl) {
                    d += i32::from(code_i8(m, o, i).unwrap_or(0)) * i32::from(q);
                }
                #[allow(clippy::cast_precision_loss)] // the rounding is part of the spec
                let df = d as f32;
                acc += df * group_scale_q8(m, o, g);
            }
            y[si * nr + r] = acc * sx;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3_decode_matches_the_definition() {
        assert_eq!(e4m3_to_f32(0x00), 0.0);
        assert!(e4m3_to_f32(0x80).is_sign_negative() && e4m3_to_f32(0x80) == 0.0);
        assert_eq!(e4m3_to_f32(0x01), pow2(-9)); // smallest subnormal
        assert_eq!(e4m3_to_f32(0x07), 7.0 * pow2(-9));
        assert_eq!(e4m3_to_f32(0x08), pow2(-6)); // smallest normal
        assert_eq!(e4m3_to_f32(0x38), 1.0);
        assert_eq!(e4m3_to_f32(0x7E), 448.0);
        assert_eq!(e4m3_to_f32(0xFE), -448.0);
        assert!(e4m3_to_f32(0x7F).is_nan() && e4m3_to_f32(0xFF).is_nan());
        for b in 0..=255u8 {
            let v = e4m3_to_f32(b);
            assert!(v.is_nan() == (b & 0x7F == 0x7F));
        }
    }

    #[test]
    fn ue8m0_and_pow2() {
        assert_eq!(ue8m0_to_f32(127), 1.0);
        assert_eq!(ue8m0_to_f32(0), 0.0);
        assert_eq!(ue8m0_to_f32(1), f32::MIN_POSITIVE);
        assert_eq!(ue8m0_to_f32(254), pow2(127));
        assert_eq!(ue8m0_half(1), f32::MIN_POSITIVE / 2.0);
        assert_eq!(pow2(-149), f32::from_bits(1));
        assert_eq!(pow2(0), 1.0);
    }
}
