//! fp8 e4m3 on the f32 path: the decodes through half precision and the row kernel
//! ([`fp8_row_f32`]).

use core::arch::x86_64::*;

use super::reduce::prefetch_l2;
use super::{mask16, mask64};
use crate::arch::x86_64::streams;
use crate::kernels::{Matrix, Scales};

/// 16 e4m3 bytes → 16 f32 values `e4m3 · 2⁻⁸` (exact) through IEEE half precision,
/// with no float arithmetic on subnormal operands (which costs a microcode assist per
/// instruction on this class of CPU: the former `bits · 2¹²⁰` decode, whose `bits` are
/// subnormal f32 for exponent-0 codes, ran at half speed on random codes).
/// `(b ≪ 7) & 0xBF80` on the sign-extended 16-bit lane is the f16 `e4m3 · 2⁻⁸` exactly
/// — f16 has one more exponent bit and subnormals down to 2⁻²⁴, so e4m3 subnormals stay
/// exact — then `vcvtph2ps` (exact; the result is a normal f32, `|e4m3 · 2⁻⁸| ≥ 2⁻¹⁷`,
/// or zero). The factor `2⁸` is restored by the caller (on the activations, see
/// [`fp8_row_f32`], or by [`fp8x16_unit`]). NaN codes (`|b| = 0x7F`) decode to ±1.875;
/// callers never let them reach an output (see [`fp8_has_nan`]).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn fp8x16(b: __m128i) -> __m512 {
    let t = _mm256_cvtepi8_epi16(b);
    #[allow(clippy::cast_possible_wrap)] // bit pattern
    let h = _mm256_and_si256(_mm256_slli_epi16::<7>(t), _mm256_set1_epi16(0xBF80u16 as i16));
    cvtph16(h)
}

/// 32 e4m3 bytes → the 16 even-indexed and the 16 odd-indexed ones as f32
/// `e4m3 · 2⁻⁸` (exact), as [`fp8x16`] but without widening: in each 16-bit lane
/// `w = b_odd · 2⁸ + b_even`, `(w ≫ₐ 1) & 0xBF80` is the f16 of `b_odd` (sign in bits
/// 15 and 14, the latter cleared) and `((w ≪ 8) ≫ₐ 1) & 0xBF80` the f16 of `b_even`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn fp8x32_even_odd(w: __m256i) -> (__m512, __m512) {
    #[allow(clippy::cast_possible_wrap)] // bit pattern
    let m = _mm256_set1_epi16(0xBF80u16 as i16);
    let he = _mm256_and_si256(_mm256_srai_epi16::<1>(_mm256_slli_epi16::<8>(w)), m);
    let ho = _mm256_and_si256(_mm256_srai_epi16::<1>(w), m);
    (cvtph16(he), cvtph16(ho))
}

/// 16 IEEE halves → 16 f32 (exact): two 8-lane `vcvtph2ps` (F16C) joined by
/// `vinserti64x4`, the same value as the 16-lane form, which Miri cannot execute.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn cvtph16(h: __m256i) -> __m512 {
    let lo = _mm256_castps_si256(_mm256_cvtph_ps(_mm256_castsi256_si128(h)));
    let hi = _mm256_castps_si256(_mm256_cvtph_ps(_mm256_extracti128_si256::<1>(h)));
    _mm512_castsi512_ps(_mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi))
}

/// [`fp8x16`] times `2⁸`: the exact e4m3 values (the multiplication is exact and its
/// operand normal).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn fp8x16_unit(b: __m128i) -> __m512 {
    _mm512_mul_ps(fp8x16(b), _mm512_set1_ps(256.0))
}

/// Whether any of the `n` bytes at `p` is an e4m3 NaN code (`b & 0x7F == 0x7F`).
///
/// # Safety
/// Features available; `p` valid for reads of `n` bytes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn fp8_has_nan(p: *const u8, n: usize) -> bool {
    let sev = _mm512_set1_epi8(0x7F);
    let (mut a0, mut a1) = (_mm512_setzero_si512(), _mm512_setzero_si512());
    let mut k = 0;
    while k + 128 <= n {
        // SAFETY: k + 128 ≤ n.
        unsafe {
            let v0 = _mm512_loadu_si512(p.add(k).cast());
            let v1 = _mm512_loadu_si512(p.add(k + 64).cast());
            a0 = _mm512_max_epu8(a0, _mm512_and_si512(v0, sev));
            a1 = _mm512_max_epu8(a1, _mm512_and_si512(v1, sev));
        }
        k += 128;
    }
    while k < n {
        // SAFETY: the masked load reads only the first min(64, n − k) bytes, all valid.
        let v = unsafe { _mm512_maskz_loadu_epi8(mask64(n - k), p.add(k).cast()) };
        a0 = _mm512_max_epu8(a0, _mm512_and_si512(v, sev));
        k += 64;
    }
    _mm512_cmpeq_epi8_mask(_mm512_max_epu8(a0, a1), sev) != 0
}

/// Whether every activation of `x` is below `2¹²⁰` in magnitude, so that `x · 2⁸` is
/// finite (and exact: a multiplication by a power of two with a finite result).
/// NaN activations make it `false` too.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn scalable_by_256(x: &[f32]) -> bool {
    // Compared as integers (Miri has no shim for the float compare-to-mask): for
    // |x| (sign cleared), bits < bits(2^120) ⇔ |x| < 2^120; NaN and ∞ bits are above.
    let lim = _mm512_set1_epi32(0x7B80_0000);
    let abs = _mm512_set1_epi32(0x7FFF_FFFF);
    let mut ok = u16::MAX;
    for c in x.chunks(16) {
        // SAFETY: the masked load reads the c.len() ≤ 16 values of the chunk only.
        let v = unsafe { _mm512_maskz_loadu_epi32(mask16(c.len()), c.as_ptr().cast()) };
        ok &= _mm512_cmplt_epi32_mask(_mm512_and_si512(v, abs), lim);
    }
    ok == u16::MAX
}

/// Fused fp8-e4m3-b128 f32-activation kernel for one weight row and `T` activation rows.
///
/// A row holding a NaN code is NaN for every activation row (as in the reference, where the NaN
/// reaches the row's accumulator whatever the activations), so NaN codes are never decoded: the row
/// is checked (a pre-pass, or, when `DE`, two byte maxima carried through the decode) and the
/// outputs set to NaN.
///
/// `DE` (the fast path): `xs[k]` are the activations de-interleaved per 32 columns (16 even, then
/// 16 odd, zero past `I`, see [`deinterleave`](super::nib_f32::deinterleave)) and multiplied by
/// `2⁸` (exact: [`scalable_by_256`]); 32 weight bytes decode without widening ([`fp8x32_even_odd`])
/// to `e4m3 · 2⁻⁸`, so each FMA forms the same real product `e4m3 · x` as with unscaled activations
/// and exact weights: no multiplication by `2⁸` per 16 weights, and no operand of any float
/// instruction is subnormal unless an activation is. Two accumulators per activation row and
/// 128-block.
///
/// Not `DE`: `xs[k]` are the activations; each 16 weight bytes decode through [`fp8x16_unit`]
/// (exact e4m3 values), four accumulators.
///
/// Either way, per 128-block: `acc = fma(Σ, block scale, acc)`, within the documented tolerance of
/// the reference.
///
/// # Safety
/// Features available; every `xs[k]` points at `I` values (not `DE`) or at `ceil(I/32)·32` values
/// (`DE`).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn fp8_row_f32<const T: usize, const DE: bool>(
    m: &Matrix<'_>,
    o: usize,
    xs: [*const f32; T],
) -> [f32; T] {
    let ni = m.i();
    let rp = m.row_bytes(o).as_ptr();
    // SAFETY: the row holds I bytes. (No probe where with_nan_codes_checked found no
    // NaN code in the matrix.)
    if !DE && !m.fp8_nan_free() && unsafe { fp8_has_nan(rp, ni) } {
        return [f32::NAN; T];
    }
    // DE: the NaN check rides on the decode: the largest byte as unsigned (0xFF is the
    // negative NaN code) and as signed (0x7F the positive one) of the whole row.
    // (Not where with_nan_codes_checked found no NaN code: the maxima stay zero.)
    let probe = !m.fp8_nan_free();
    let (mut max_u, mut max_s) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let sc_row = match m.scales() {
        Scales::F32(s) => &s[m.scale_index(o, 0)..m.scale_index(o, 0) + m.groups_per_row()],
        _ => unreachable!("fp8 matrices have f32 block scales (Matrix::new)"),
    };
    let mut acc = [_mm512_setzero_ps(); T];
    let full = ni / 128;
    // DE from DRAM: each block's two lines prefetched ahead (`prefetch_l2`); the other
    // form's NaN pre-pass reads the row ahead of its decode instead.
    let stream = DE && streams(m);
    for (g, &scg) in sc_row.iter().enumerate().take(full) {
        let c0 = 128 * g;
        let mut p = [[_mm512_setzero_ps(); 4]; T];
        if DE {
            if stream {
                prefetch_l2(rp.wrapping_add(c0).cast());
                prefetch_l2(rp.wrapping_add(c0 + 64).cast());
            }
            for j in 0..4 {
                // SAFETY: c0 + 128 ≤ I: the 32 bytes at c0 + 32·j are in the row.
                let v = unsafe { _mm256_loadu_si256(rp.add(c0 + 32 * j).cast()) };
                if probe {
                    max_u = _mm256_max_epu8(max_u, v);
                    max_s = _mm256_max_epi8(max_s, v);
                }
                let (we, wo) = fp8x32_even_odd(v);
                for k in 0..T {
                    // SAFETY: c0 + 32·j + 32 ≤ ipad values of xs[k].
                    unsafe {
                        let xe = _mm512_loadu_ps(xs[k].add(c0 + 32 * j));
                        let xo = _mm512_loadu_ps(xs[k].add(c0 + 32 * j + 16));
                        p[k][0] = _mm512_fmadd_ps(we, xe, p[k][0]);
                        p[k][1] = _mm512_fmadd_ps(wo, xo, p[k][1]);
                    }
                }
            }
        } else {
            for j in 0..8 {
                // SAFETY: c0 + 128 ≤ I: the 16 bytes at c0 + 16·j are in the row.
                let w = fp8x16_unit(unsafe { _mm_loadu_si128(rp.add(c0 + 16 * j).cast()) });
                for k in 0..T {
                    // SAFETY: c0 + 16·j + 16 ≤ I values of xs[k].
                    let xv = unsafe { _mm512_loadu_ps(xs[k].add(c0 + 16 * j)) };
                    p[k][j % 4] = _mm512_fmadd_ps(w, xv, p[k][j % 4]);
                }
            }
        }
        let sc = _mm512_set1_ps(scg);
        for k in 0..T {
            let part = if DE {
                _mm512_add_ps(p[k][0], p[k][1])
            } else {
                _mm512_add_ps(_mm512_add_ps(p[k][0], p[k][1]), _mm512_add_ps(p[k][2], p[k][3]))
            };
            acc[k] = _mm512_fmadd_ps(part, sc, acc[k]);
        }
    }
    if full * 128 < ni {
        // The last, partial block: masked loads of its columns only.
        let c0 = full * 128;
        let mut p = [[_mm512_setzero_ps(); 4]; T];
        let mut col = c0;
        let mut j = 0;
        while col < ni {
            if DE {
                let rem = (ni - col).min(32);
                // SAFETY: masked load of the rem bytes of columns col..col + rem ≤ I.
                let b = unsafe { _mm512_maskz_loadu_epi8(mask64(rem), rp.add(col).cast()) };
                let b = _mm512_castsi512_si256(b);
                max_u = _mm256_max_epu8(max_u, b);
                max_s = _mm256_max_epi8(max_s, b);
                let (we, wo) = fp8x32_even_odd(b);
                for k in 0..T {
                    // SAFETY: col + 32 ≤ ipad values of xs[k] (zero past I).
                    unsafe {
                        let xe = _mm512_loadu_ps(xs[k].add(col));
                        let xo = _mm512_loadu_ps(xs[k].add(col + 16));
                        p[k][j] = _mm512_fmadd_ps(we, xe, p[k][j]);
                        p[k][j + 1] = _mm512_fmadd_ps(wo, xo, p[k][j + 1]);
                    }
                }
                j = (j + 2) % 4;
                col += 32;
            } else {
                let rem = (ni - col).min(16);
                // SAFETY: masked load of the rem bytes of columns col..col + rem ≤ I.
                let b = unsafe { _mm512_maskz_loadu_epi8(mask64(rem), rp.add(col).cast()) };
                let w = fp8x16_unit(_mm512_castsi512_si128(b));
                for k in 0..T {
                    // SAFETY: masked load of rem values of columns below I.
                    let xv = unsafe { _mm512_maskz_loadu_ps(mask16(rem), xs[k].add(col)) };
                    p[k][j] = _mm512_fmadd_ps(w, xv, p[k][j]);
                }
                j = (j + 1) % 4;
                col += 16;
            }
        }
        let sc = _mm512_set1_ps(sc_row[full]);
        for k in 0..T {
            let part =
                _mm512_add_ps(_mm512_add_ps(p[k][0], p[k][1]), _mm512_add_ps(p[k][2], p[k][3]));
            acc[k] = _mm512_fmadd_ps(part, sc, acc[k]);
        }
    }
    #[allow(clippy::cast_possible_wrap)] // bit pattern
    let nan = _mm256_movemask_epi8(_mm256_or_si256(
        _mm256_cmpeq_epi8(max_u, _mm256_set1_epi8(0xFFu8 as i8)),
        _mm256_cmpeq_epi8(max_s, _mm256_set1_epi8(0x7F)),
    ));
    if DE && nan != 0 {
        return [f32::NAN; T];
    }
    let mut out = [0f32; T];
    for k in 0..T {
        out[k] = _mm512_reduce_add_ps(acc[k]);
    }
    out
}
