//! The reference quantizers of the format registry (`docs/FORMATS.md`, "Quantizers").
//!
//! Every integer format here is symmetric: a group of weights (a row, or a `gs`-wide slice of a
//! row) gets one f32 scale `s = max(max|w| / qmax, 1e-8)`, and each weight becomes
//! `q = round_half_even(w / s)` clamped to `[-qmax, qmax]`. The most negative code of the
//! storage type (int8 −128, int4 nibble 0, int2 crumb 0, int3 u = 0) is therefore never
//! produced, which is what keeps int4 nibble streams on 15 symbols and lets `int4-rans256-g0`
//! tables be built from real histograms.
//!
//! These functions define the bytes `tetrad quantize` writes; they are the spec, not a fast
//! path (quantization is a one-off cost). `core` has no `round_ties_even` without `std`, so
//! rounding uses the classic `(v + 1.5·2^23) − 1.5·2^23` identity, exact under IEEE
//! round-to-nearest-even for `|v| < 2^22` — and `v` is already clamped to `|v| ≤ 127`.

/// Why a tensor could not be quantized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantizeError {
    /// A buffer does not have the length the shape demands.
    #[error("{what} buffer has {got} elements, expected {expected}")]
    Length {
        /// Which buffer (`"weights"`, `"codes"` or `"scales"`).
        what: &'static str,
        /// Length the shape `[O, I]` demands.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// `O · I` (or a derived size) overflows `usize`.
    #[error("shape [{o}, {i}] overflows usize")]
    Overflow {
        /// Rows.
        o: usize,
        /// Columns.
        i: usize,
    },
    /// Group size zero.
    #[error("group size must be at least 1, got 0")]
    GroupSize,
    /// A weight is NaN or infinite; it has no quantized code.
    #[error("weight at flat index {index} is not finite")]
    NonFinite {
        /// Flat index `o · I + i` of the first offending weight.
        index: usize,
    },
}

impl QuantizeError {
    /// Stable machine-readable class name of this error.
    pub const fn class(&self) -> &'static str {
        match self {
            Self::Length { .. } => "E_QUANT_LENGTH",
            Self::Overflow { .. } => "E_QUANT_OVERFLOW",
            Self::GroupSize => "E_QUANT_GROUP_SIZE",
            Self::NonFinite { .. } => "E_QUANT_NONFINITE",
        }
    }
}

/// Smallest scale a group may get (an all-zero group quantizes to code 0 with this scale).
pub const SCALE_FLOOR: f32 = 1e-8;

/// Rounds to the nearest integer, ties to even, for `|v| < 2^22`.
#[inline]
fn round_half_even_small(v: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 · 2^23
    (v + MAGIC) - MAGIC
}

/// The largest magnitude in `w` (0 when empty). Callers check their weights finite first.
#[inline]
fn amax(w: &[f32]) -> f32 {
    w.iter().fold(0.0f32, |m, &v| if v.abs() > m { v.abs() } else { m })
}

/// `max(amax / qmax, 1e-8)`: the symmetric scale of values whose largest magnitude is `amax`.
#[inline]
fn floored_scale(amax: f32, qmax: f32) -> f32 {
    let s = amax / qmax;
    if s > SCALE_FLOOR { s } else { SCALE_FLOOR }
}

/// The symmetric scale of one group: `max(max|w| / qmax, 1e-8)`.
#[inline]
pub fn group_scale(w: &[f32], qmax: f32) -> f32 {
    floored_scale(amax(w), qmax)
}

/// Quantizes one weight with scale `s` to an integer in `[-qmax, qmax]`, half to even.
#[inline]
pub fn quantize_value(w: f32, s: f32, qmax: f32) -> i32 {
    let v = (w / s).clamp(-qmax, qmax);
    // Exact: the value is an integer in [-127, 127] after rounding.
    #[allow(clippy::cast_possible_truncation)]
    let q = round_half_even_small(v) as i32;
    q
}

fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), QuantizeError> {
    if expected == got { Ok(()) } else { Err(QuantizeError::Length { what, expected, got }) }
}

fn check_finite(w: &[f32]) -> Result<(), QuantizeError> {
    match w.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(QuantizeError::NonFinite { index }),
        None => Ok(()),
    }
}

fn mul(o: usize, i: usize, a: usize, b: usize) -> Result<usize, QuantizeError> {
    a.checked_mul(b).ok_or(QuantizeError::Overflow { o, i })
}

/// Shared driver: quantizes `w[O, I]` in groups of `gs` columns (restarting at each row),
/// writing one scale per group and handing `(row, column, q)` to `store`.
fn quantize_grouped(
    w: &[f32],
    o: usize,
    i: usize,
    gs: usize,
    qmax: f32,
    scales: &mut [f32],
    mut store: impl FnMut(usize, usize, i32),
) -> Result<(), QuantizeError> {
    if gs == 0 {
        return Err(QuantizeError::GroupSize);
    }
    check_len("weights", mul(o, i, o, i)?, w.len())?;
    let groups = i.div_ceil(gs);
    check_len("scales", mul(o, i, o, groups)?, scales.len())?;
    check_finite(w)?;
    for row in 0..o {
        let wr = &w[row * i..(row + 1) * i];
        for g in 0..groups {
            let lo = g * gs;
            let hi = (lo + gs).min(i);
            let s = group_scale(&wr[lo..hi], qmax);
            scales[row * groups + g] = s;
            for (c, &v) in wr[lo..hi].iter().enumerate() {
                store(row, lo + c, quantize_value(v, s, qmax));
            }
        }
    }
    Ok(())
}

/// `int8-row`: one byte per weight (two's-complement i8 in `[-127, 127]`), one scale per row.
/// `codes` holds `O·I` bytes, `scales` `O` floats.
pub fn quantize_int8_row(
    w: &[f32],
    o: usize,
    i: usize,
    codes: &mut [u8],
    scales: &mut [f32],
) -> Result<(), QuantizeError> {
    check_len("codes", mul(o, i, o, i)?, codes.len())?;
    quantize_grouped(w, o, i, i.max(1), 127.0, scales, |r, c, q| {
        #[allow(clippy::cast_possible_truncation)] // q ∈ [-127, 127]
        let b = q as i8 as u8;
        codes[r * i + c] = b;
    })
}

/// Writes nibble `q + 8` of column `c` into an int4 row (low nibble = even column).
fn put_nibble(row: &mut [u8], c: usize, q: i32) {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // q + 8 ∈ [1, 15]
    let nib = (q + 8) as u8;
    let b = &mut row[c / 2];
    *b = if c.is_multiple_of(2) { (*b & 0xF0) | nib } else { (*b & 0x0F) | (nib << 4) };
}

fn int4_codes(
    w: &[f32],
    o: usize,
    i: usize,
    gs: usize,
    codes: &mut [u8],
    scales: &mut [f32],
) -> Result<(), QuantizeError> {
    let stride = i.div_ceil(2);
    check_len("codes", mul(o, i, o, stride)?, codes.len())?;
    // Every byte starts as 0x88: an odd I leaves its last high nibble at 8, the code for zero.
    codes.fill(0x88);
    quantize_grouped(w, o, i, gs, 7.0, scales, |r, c, q| {
        put_nibble(&mut codes[r * stride..(r + 1) * stride], c, q);
    })
}

/// `int4-row`: nibbles `q + 8` (`q ∈ [-7, 7]`), row stride `ceil(I/2)`, one scale per row.
pub fn quantize_int4_row(
    w: &[f32],
    o: usize,
    i: usize,
    codes: &mut [u8],
    scales: &mut [f32],
) -> Result<(), QuantizeError> {
    int4_codes(w, o, i, i.max(1), codes, scales)
}

/// `int4-grouped`: like int4-row with one scale per `gs` columns of each row
/// (`O · ceil(I/gs)` scales, index `o · ceil(I/gs) + g`).
pub fn quantize_int4_grouped(
    w: &[f32],
    o: usize,
    i: usize,
    gs: usize,
    codes: &mut [u8],
    scales: &mut [f32],
) -> Result<(), QuantizeError> {
    int4_codes(w, o, i, gs, codes, scales)
}

/// `int2-row`: crumbs `q + 2` (`q ∈ [-1, 1]`), four per byte LSB first, stride `ceil(I/4)`;
/// unused crumbs are 0.
pub fn quantize_int2_row(
    w: &[f32],
    o: usize,
    i: usize,
    codes: &mut [u8],
    scales: &mut [f32],
) -> Result<(), QuantizeError> {
    let stride = i.div_ceil(4);
    check_len("codes", mul(o, i, o, stride)?, codes.len())?;
    codes.fill(0);
    quantize_grouped(w, o, i, i.max(1), 1.0, scales, |r, c, q| {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // q + 2 ∈ [1, 3]
        let crumb = (q + 2) as u8;
        codes[r * stride + c / 4] |= crumb << (2 * (c % 4));
    })
}

/// Bytes of one int3-g64 group: a 16-byte low plane (2 bits a value) then an 8-byte high plane.
pub const INT3_GROUP_BYTES: usize = 24;

/// `int3-g64`: per 64-column group a scale (`qmax = 3`) and 24 bytes holding `u = q + 4`:
/// bits 0..1 of `u` in the low plane at `lo[k/4] >> 2(k%4)`, bit 2 at `hi[k/8] >> (k%8)`.
/// Unused tail positions hold `u = 0`.
pub fn quantize_int3_g64(
    w: &[f32],
    o: usize,
    i: usize,
    codes: &mut [u8],
    scales: &mut [f32],
) -> Result<(), QuantizeError> {
    let groups = i.div_ceil(64);
    let stride = mul(o, i, groups, INT3_GROUP_BYTES)?;
    check_len("codes", mul(o, i, o, stride)?, codes.len())?;
    codes.fill(0);
    quantize_grouped(w, o, i, 64, 3.0, scales, |r, c, q| {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // q + 4 ∈ [1, 7]
        let u = (q + 4) as u8;
        let (g, k) = (c / 64, c % 64);
        let grp = &mut codes[r * stride + g * INT3_GROUP_BYTES..][..INT3_GROUP_BYTES];
        grp[k / 4] |= (u & 3) << (2 * (k % 4));
        grp[16 + k / 8] |= ((u >> 2) & 1) << (k % 8);
    })
}

/// The index of the entry of `table` (ascending, non-negative) nearest to `a ≥ 0`, ties to
/// the even index; `a` beyond the last entry saturates to it. The distances are taken in f64,
/// where the difference of two f32 values in these tables' range is exact, so a tie is seen
/// as a tie.
fn nearest_even(table: &[f32], a: f32) -> usize {
    let k = table.partition_point(|&t| t < a);
    if k == 0 {
        return 0;
    }
    if k == table.len() {
        return k - 1;
    }
    let below = f64::from(a) - f64::from(table[k - 1]);
    let above = f64::from(table[k]) - f64::from(a);
    if below < above || (below == above && (k - 1).is_multiple_of(2)) { k - 1 } else { k }
}

/// The UE8M0 exponent byte of one mxfp4 group (OCP MX): `floor(log2(max|w|)) − 2 + 127`, the
/// shared scale that puts the group's largest magnitude in e2m1's top binade `[4, 8)`
/// (values in `[6, 8)` saturate to 6), clamped to `[1, 254]` (byte 0 reads as `+0.0` and 255
/// as NaN). An all-zero group gets 127 (scale 1; every code is 0).
pub fn mxfp4_group_exponent(w: &[f32]) -> u8 {
    let amax = amax(w);
    if amax == 0.0 {
        return 127;
    }
    // The biased f32 exponent is floor(log2) + 127 for a normal value; a subnormal amax (field
    // 0) is far below the clamp either way.
    #[allow(clippy::cast_possible_wrap)] // an 8-bit field
    let biased = ((amax.to_bits() >> 23) & 0xFF) as i32;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped to [1, 254]
    let e = (biased - 2).clamp(1, 254) as u8;
    e
}

/// The mxfp4 code of `v` (a weight over its group scale): sign in bit 3, the nearest e2m1
/// magnitude's index in bits 0..2, ties to the even index, `|v| > 6` saturating to 6; a value
/// that rounds to zero is `+0` (code 0, never `0x8`).
pub fn e2m1_code(v: f32) -> u8 {
    #[allow(clippy::cast_possible_truncation)] // an index into 8 entries
    let idx = nearest_even(&crate::scalar::E2M1, v.abs()) as u8;
    if idx != 0 && v < 0.0 { idx | 8 } else { idx }
}

/// `mxfp4`: per row, per 32-column group, a UE8M0 exponent byte `e`
/// ([`mxfp4_group_exponent`]) and each weight's [`e2m1_code`] of `w / 2^(e−127)`, packed two
/// to a byte (low nibble = even column; an odd `I` leaves its last high nibble 0). `codes`
/// holds `O · ceil(I/2)` bytes, `scales` `O · ceil(I/32)` exponent bytes. Not in the shared
/// spec's quantizer list: DECISION in `docs/FORMATS.md`.
pub fn quantize_mxfp4(
    w: &[f32],
    o: usize,
    i: usize,
    codes: &mut [u8],
    scales: &mut [u8],
) -> Result<(), QuantizeError> {
    check_len("weights", mul(o, i, o, i)?, w.len())?;
    let (stride, groups) = (i.div_ceil(2), i.div_ceil(32));
    check_len("codes", mul(o, i, o, stride)?, codes.len())?;
    check_len("scales", mul(o, i, o, groups)?, scales.len())?;
    check_finite(w)?;
    codes.fill(0);
    for row in 0..o {
        let wr = &w[row * i..(row + 1) * i];
        let cr = &mut codes[row * stride..(row + 1) * stride];
        for g in 0..groups {
            let cols = g * 32..(g * 32 + 32).min(i);
            let e = mxfp4_group_exponent(&wr[cols.clone()]);
            scales[row * groups + g] = e;
            let x = crate::scalar::ue8m0_to_f32(e);
            for c in cols {
                let nib = e2m1_code(wr[c] / x);
                cr[c / 2] |= if c.is_multiple_of(2) { nib } else { nib << 4 };
            }
        }
    }
    Ok(())
}

/// The non-negative finite E4M3FN values, codes `0x00..=0x7E` (ascending).
fn e4m3_magnitudes() -> [f32; 127] {
    let mut t = [0f32; 127];
    for (code, v) in (0u8..).zip(t.iter_mut()) {
        *v = crate::scalar::e4m3_to_f32(code);
    }
    t
}

/// `fp8-e4m3-b128`: per 128 × 128 block (row-major over `[ceil(O/128)][ceil(I/128)]`) an f32
/// scale `s = max(max|w| / 448, 1e-8)`, and each weight the E4M3FN byte nearest to `w / s`
/// (ties to the even code, `|w / s| > 448` saturating to 448, never a NaN code; a value that
/// rounds to zero is `+0`, byte 0). `codes` holds `O · I` bytes, `scales`
/// `ceil(O/128) · ceil(I/128)` floats. Not in the shared spec's quantizer list: DECISION in
/// `docs/FORMATS.md`.
pub fn quantize_fp8_e4m3_b128(
    w: &[f32],
    o: usize,
    i: usize,
    codes: &mut [u8],
    scales: &mut [f32],
) -> Result<(), QuantizeError> {
    let n = mul(o, i, o, i)?;
    check_len("weights", n, w.len())?;
    check_len("codes", n, codes.len())?;
    let (bo, bi) = (o.div_ceil(128), i.div_ceil(128));
    check_len("scales", mul(o, i, bo, bi)?, scales.len())?;
    check_finite(w)?;
    let mags = e4m3_magnitudes();
    for (b, scale) in scales.iter_mut().enumerate() {
        let (rows, cols) = (
            (b / bi) * 128..((b / bi) * 128 + 128).min(o),
            (b % bi) * 128..((b % bi) * 128 + 128).min(i),
        );
        let block_amax = rows.clone().map(|r| amax(&w[r * i..][cols.clone()])).fold(0.0, f32::max);
        let s = floored_scale(block_amax, 448.0);
        *scale = s;
        for r in rows {
            for c in cols.clone() {
                let v = w[r * i + c] / s;
                #[allow(clippy::cast_possible_truncation)] // an index into 127 entries
                let idx = nearest_even(&mags, v.abs()) as u8;
                codes[r * i + c] = if idx != 0 && v < 0.0 { idx | 0x80 } else { idx };
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_half_to_even() {
        for (v, want) in [
            (0.5f32, 0.0f32),
            (1.5, 2.0),
            (2.5, 2.0),
            (-0.5, -0.0),
            (-1.5, -2.0),
            (6.5, 6.0),
            (-7.5, -8.0),
            (0.49999997, 0.0),
        ] {
            assert_eq!(round_half_even_small(v), want, "{v}");
        }
    }

    #[test]
    fn int4_row_matches_hand_computation() {
        // Row 0: max 7 → s = 1; row 1: all zero → s = 1e-8, every code 8.
        let w = [7.0f32, -7.0, 2.5, 3.5, -0.4, 0.0, 0.0, 0.0, 0.0, 0.0];
        let mut codes = [0u8; 6];
        let mut scales = [0f32; 2];
        quantize_int4_row(&w, 2, 5, &mut codes, &mut scales).unwrap();
        assert_eq!(scales, [1.0, SCALE_FLOOR]);
        // nibbles row 0: 15, 1, 10 (2.5→2), 12 (3.5→4), 8 (-0.4→0), pad 8
        assert_eq!(codes[..3], [0x1F, 0xCA, 0x88]);
        assert_eq!(codes[3..], [0x88, 0x88, 0x88]);
    }

    #[test]
    fn never_emits_most_negative_code() {
        let w = [-1.0f32, 1.0, -0.999, 0.3];
        let mut c8 = [0u8; 4];
        let mut s = [0f32; 1];
        quantize_int8_row(&w, 1, 4, &mut c8, &mut s).unwrap();
        assert!(c8.iter().all(|&b| b as i8 >= -127));
        assert_eq!(c8[0] as i8, -127);
        let mut c2 = [0u8; 1];
        quantize_int2_row(&w, 1, 4, &mut c2, &mut s).unwrap();
        // crumbs: 1, 3, 1, 2 (0.3 → 0)
        assert_eq!(c2[0], 0b10_01_11_01);
    }

    #[test]
    fn int3_layout_and_grouped_scales() {
        let mut w = [0f32; 65];
        w[0] = 3.0;
        w[1] = -3.0;
        w[9] = 1.0;
        w[64] = -2.0;
        let mut codes = [0u8; 48];
        let mut scales = [0f32; 2];
        quantize_int3_g64(&w, 1, 65, &mut codes, &mut scales).unwrap();
        assert_eq!(scales, [1.0, 2.0 / 3.0]);
        // u: k0 = 7 (lo 3, hi 1), k1 = 1 (lo 1), k9 = 5 (lo 1, hi 1), others 4 (lo 0, hi 1).
        assert_eq!(codes[0] & 0x0F, 0b01_11);
        assert_eq!(codes[2] & 0b1100, 0b0100);
        assert_eq!(codes[16], 0b1111_1101);
        assert_eq!(codes[17], 0xFF);
        // group 1: k0 = -2/(2/3) = -3 → u = 1; tail positions u = 0.
        assert_eq!(codes[24], 1);
        assert_eq!(codes[40], 0);
        let mut g = [0u8; 33];
        let mut gsc = [0f32; 5];
        quantize_int4_grouped(&w, 1, 65, 16, &mut g, &mut gsc).unwrap();
        assert_eq!(gsc[0], 3.0 / 7.0);
        assert_eq!(gsc[1], SCALE_FLOOR);
    }

    #[test]
    fn refusals() {
        let mut c = [0u8; 2];
        let mut s = [0f32; 1];
        assert_eq!(
            quantize_int4_row(&[f32::NAN, 0.0, 0.0], 1, 3, &mut c, &mut s),
            Err(QuantizeError::NonFinite { index: 0 })
        );
        assert_eq!(
            quantize_int4_row(&[0.0; 4], 1, 3, &mut c, &mut s).unwrap_err().class(),
            "E_QUANT_LENGTH"
        );
        assert_eq!(
            quantize_int4_grouped(&[0.0; 3], 1, 3, 0, &mut c, &mut s),
            Err(QuantizeError::GroupSize)
        );
    }
}
