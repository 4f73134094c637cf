//! The per-call dispatch of each path ([`f32_rows`], [`q8_rows`]: which kernel runs for a
//! format, batch and residency) and the generic decode-then-dot loops for the rest: a
//! 256-column chunk of a row decoded into an L1 buffer, then 512-bit dot products per group
//! segment.

use core::arch::x86_64::*;
use core::ops::Range;

use super::grouped::{band_special, g32_multiple};
use super::int4_int8_q8::{q8_int4_row, q8_int8_row};
use super::nib_f32::{Kind, f32_tiled};
use super::reduce::{XA, dot_f32, dot_i8};
use super::small_ints::{q8_int2_row, q8_int3_g64};
use super::{CH, Dot, I4_MAG, MX_MAG, ST, mask64};
use crate::arch::x86_64::streams;
use crate::format::Format;
use crate::kernels::{Matrix, QuantizedActs};
use crate::scalar;

/// Decodes columns `c0 .. c0 + n` (`c0` a multiple of [`CH`], `n ≤ CH`) of `row` into
/// integer codes in `buf` (the generic paths only; int2 and int3 with SSE2).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn decode_codes(m: &Matrix<'_>, row: &[u8], c0: usize, n: usize, buf: &mut [i8; CH]) {
    match m.format() {
        Format::Int8Row => {
            for (d, &b) in buf[..n].iter_mut().zip(&row[c0..c0 + n]) {
                *d = i8::from_le_bytes([b]);
            }
        }
        Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => {
            let mx = m.format() == Format::Mxfp4;
            for (k, d) in buf[..n].iter_mut().enumerate() {
                let c = c0 + k;
                let nib = usize::from((row[c / 2] >> (4 * (c % 2))) & 0xF);
                *d = if mx {
                    if nib & 8 != 0 { -MX_MAG[nib] } else { MX_MAG[nib] }
                } else if nib < 8 {
                    -I4_MAG[nib]
                } else {
                    I4_MAG[nib]
                };
            }
        }
        _ => crate::arch::x86_64::decode_small_ints(m, row, c0, &mut buf[..n]),
    }
}

/// Decodes columns `c0 .. c0 + n` of `row` into unscaled f32 values, returning a
/// pointer to them (into `row` itself for f32 weights).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn decode_f32(
    m: &Matrix<'_>,
    row: &[u8],
    c0: usize,
    n: usize,
    ibuf: &mut [i8; CH],
    fbuf: &mut [f32; CH],
) -> *const f32 {
    if m.format() == Format::F32 {
        return row[4 * c0..4 * (c0 + n)].as_ptr().cast();
    }
    let codes: *const i8 = if m.format() == Format::Int8Row {
        row[c0..c0 + n].as_ptr().cast()
    } else {
        decode_codes(m, row, c0, n, ibuf);
        ibuf.as_ptr()
    };
    let mut k = 0;
    while k < n {
        let mk = mask64((n - k).min(16));
        // SAFETY: `codes` points at n valid bytes; the masked load reads only those below
        // n; the 16 f32 stored at k ≤ CH − 16 are within fbuf (k is a multiple of 16).
        unsafe {
            let b = _mm512_castsi512_si128(_mm512_maskz_loadu_epi8(mk, codes.add(k)));
            let f = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
            _mm512_storeu_ps(fbuf.as_mut_ptr().add(k), f);
        }
        k += 16;
    }
    fbuf.as_ptr()
}

/// # Safety
/// Features available; shapes as asserted by [`matmul_f32_rows_on`](super::matmul_f32_rows_on).
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn f32_rows(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    // int4-row and fp8 at S ≥ 2: the 256-bit small-batch passes (8, 4 or 2 activation
    // rows per pass over L1-resident activation chunks; `docs/kernels.md`). On Zen 4 a
    // 512-bit FMA has the throughput of two 256-bit ones, and these passes measured
    // 1.2 × (int4-row) and 1.6 × (fp8) faster than this arm's 4-row tiles at S = 16
    // there; the last single row, if any, stays here.
    let (ni, nr) = (m.i(), rows.len());
    let n = if s >= 2 && matches!(m.format(), Format::Int4Row | Format::Fp8E4m3B128) {
        let r = rows.clone();
        crate::arch::x86_64::avx2::plain::matmul_f32_small_batch(m, x, s, r, y).unwrap_or(0)
    } else {
        0
    };
    if n == s {
        return;
    }
    let (x, s, y) = (&x[n * ni..], s - n, &mut y[n * nr..]);
    match m.format() {
        Format::Int4Row => {
            // SAFETY: same contract.
            unsafe { f32_tiled(m, x, s, rows, y, Kind::Int4) }
        }
        Format::Int4Grouped if m.group_len().is_multiple_of(32) => {
            // SAFETY: same contract.
            unsafe { f32_tiled(m, x, s, rows, y, Kind::Int4) }
        }
        Format::Mxfp4 => {
            // SAFETY: same contract.
            unsafe { f32_tiled(m, x, s, rows, y, Kind::Mx) }
        }
        Format::Fp8E4m3B128 => {
            // SAFETY: same contract.
            unsafe { f32_tiled(m, x, s, rows, y, Kind::Fp8) }
        }
        Format::Int8Row | Format::Int2Row | Format::Int3G64 | Format::F32 => {
            // The AVX2 arm's fused kernels: int8-row on 8-row bands (per 8 weights one `vpmovsxbd`,
            // one conversion, one FMA; from DRAM the next band prefetched), int2-row / int3-g64
            // decoded 64 columns at a time in registers. This arm's chunked path (codes widened
            // into an L1 buffer, then a dot) was slower for all three (Zen 4, the `kernels` bench,
            // S = 1, G weights/s, L2 / DRAM): int8-row 8 / 5 against 28 / 22, int2-row 5.1 / 5.9
            // against 13.0 / 12.3, int3-g64 3.6 / 3.3 against 5.6 / 6.7. f32 weights: the AVX2
            // arm's 256-bit dot was faster on every core measured (512 × 1024, S = 1: Zen 4 11.1
            // against 8.6, Intel Xeon 7.5 against 6.3, Zen 5 13.4 against 10.4; from DRAM within
            // noise of each other).
            let r = rows.clone();
            if !crate::arch::x86_64::avx2::plain::matmul_f32_rows(m, x, s, r, y) {
                // SAFETY: same contract.
                unsafe { f32_generic(m, x, s, rows, y) }
            }
        }
        // SAFETY: same contract.
        _ => unsafe { f32_generic(m, x, s, rows, y) },
    }
}

/// Generic f32 path: 256-column chunks decoded once into L1 buffers and reused by up to
/// [`ST`] activation rows; per group segment a 512-bit FMA dot product.
///
/// # Safety
/// Features available; shapes as asserted by [`matmul_f32_rows_on`](super::matmul_f32_rows_on).
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn f32_generic(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    let (ni, gl, nr) = (m.i(), m.group_len(), rows.len());
    let mut ibuf = [0i8; CH];
    let mut fbuf = [0f32; CH];
    let mut s0 = 0;
    while s0 < s {
        let st = (s - s0).min(ST);
        for (r, o) in rows.clone().enumerate() {
            let row = m.row_bytes(o);
            let mut acc = [_mm512_setzero_ps(); ST];
            let mut part = [_mm512_setzero_ps(); ST];
            let (mut g, mut gend, mut c0) = (0, gl.min(ni), 0);
            while c0 < ni {
                let n = (ni - c0).min(CH);
                let wp = decode_f32(m, row, c0, n, &mut ibuf, &mut fbuf);
                let mut pos = c0;
                while pos < c0 + n {
                    let end = gend.min(c0 + n);
                    for (k, p) in part[..st].iter_mut().enumerate() {
                        let xs = &x[(s0 + k) * ni + pos..(s0 + k) * ni + end];
                        // SAFETY: wp points at n values for columns c0..c0+n and
                        // c0 ≤ pos < end ≤ c0 + n; xs has end − pos values.
                        *p = _mm512_add_ps(*p, unsafe {
                            dot_f32(wp.add(pos - c0), xs.as_ptr(), end - pos)
                        });
                    }
                    pos = end;
                    if pos == gend {
                        let sc = _mm512_set1_ps(if m.format() == Format::F32 {
                            1.0
                        } else {
                            scalar::group_scale(m, o, g)
                        });
                        for (a, p) in acc[..st].iter_mut().zip(&mut part[..st]) {
                            *a = _mm512_fmadd_ps(*p, sc, *a);
                            *p = _mm512_setzero_ps();
                        }
                        g += 1;
                        gend = (gend + gl).min(ni);
                    }
                }
                c0 += n;
            }
            for (k, a) in acc[..st].iter().enumerate() {
                y[(s0 + k) * nr + r] = _mm512_reduce_add_ps(*a);
            }
        }
        s0 += st;
    }
}

/// # Safety
/// Features available; shapes as asserted by [`matmul_q8_rows_on`](super::matmul_q8_rows_on).
#[inline(always)]
pub(super) unsafe fn q8_rows<D: Dot>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        // int4-row and int8-row GEMV streamed from DRAM: the AVX2 arm's 8-row band
        // kernels (same exact sums, bit-identical results). On Zen 4 (512-bit
        // operations at half rate) they kept closer to the read of the same bytes than
        // this arm's 512-bit bands, in the same runs: int4-row 0.91–0.94 of the read
        // against 0.83–0.90, int8-row 0.92–0.97 against 0.86–0.99 (three alternating
        // runs of each build, the `kernels` bench, `docs/PERFORMANCE.md`); in L2 this
        // arm stays 1.3–1.4 × faster, so only streaming matrices go there.
        if xq.s() == 1
            && streams(m)
            && matches!(m.format(), Format::Int4Row | Format::Int8Row)
            && crate::arch::x86_64::avx2::plain::matmul_q8_rows(m, xq, rows.clone(), y)
        {
            return;
        }
        match m.format() {
            Format::Int4Row => q8_int4_row::<D>(m, xq, rows, y),
            Format::Int8Row => q8_int8_row::<D>(m, xq, rows, y),
            Format::Int2Row if m.i() <= XA => q8_int2_row::<D>(m, xq, rows, y),
            Format::Int3G64 if m.i() <= XA => q8_int3_g64::<D>(m, xq, rows, y),
            Format::Mxfp4 => {
                // VBMI detected where its variant runs.
                match (band_special(m), crate::isa::vbmi_lookups()) {
                    (true, true) => D::q8_mx_rows16_vbmi::<true>(m, xq, rows, y),
                    (false, true) => D::q8_mx_rows16_vbmi::<false>(m, xq, rows, y),
                    (true, false) => D::q8_g32_rows16::<true, false, true>(m, xq, rows, y),
                    (false, false) => D::q8_g32_rows16::<true, false, false>(m, xq, rows, y),
                }
            }
            Format::Int4Grouped if m.group_len() == 32 => {
                if band_special(m) {
                    D::q8_g32_rows16::<false, false, true>(m, xq, rows, y);
                } else {
                    D::q8_g32_rows16::<false, false, false>(m, xq, rows, y);
                }
            }
            Format::Int4Grouped
                if g32_multiple(m.group_len())
                    && m.o() * m.groups_per_row() <= i32::MAX as usize =>
            {
                // The scale indices fit the gather's i32.
                if band_special(m) {
                    D::q8_g32_rows16::<false, true, true>(m, xq, rows, y);
                } else {
                    D::q8_g32_rows16::<false, true, false>(m, xq, rows, y);
                }
            }
            _ => q8_generic::<D>(m, xq, rows, y),
        }
    }
}

/// Generic int8 path: 256-column chunks decoded once into an L1 buffer of codes, reused
/// by up to [`ST`] activation rows; exact dot products per group segment.
///
/// # Safety
/// Features available; shapes as asserted by [`matmul_q8_rows_on`](super::matmul_q8_rows_on).
#[inline(always)]
pub(super) unsafe fn q8_generic<D: Dot>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let (ni, gl, nr, s) = (m.i(), m.group_len(), rows.len(), xq.s());
        let mut ibuf = [0i8; CH];
        let mut s0 = 0;
        while s0 < s {
            let st = (s - s0).min(ST);
            for (r, o) in rows.clone().enumerate() {
                let row = m.row_bytes(o);
                let mut acc = [0f32; ST];
                let mut d = [0i32; ST];
                let (mut g, mut gend, mut c0) = (0, gl.min(ni), 0);
                while c0 < ni {
                    let n = (ni - c0).min(CH);
                    decode_codes(m, row, c0, n, &mut ibuf);
                    let mut pos = c0;
                    while pos < c0 + n {
                        let end = gend.min(c0 + n);
                        for (k, dk) in d[..st].iter_mut().enumerate() {
                            let xs = &xq.row(s0 + k).0[pos..end];
                            let ws = &ibuf[pos - c0..end - c0];
                            let (wp, xp) = (ws.as_ptr(), xs.as_ptr());
                            // both slices hold end − pos codes.
                            *dk += dot_i8::<D, false>(wp, xp, end - pos);
                        }
                        pos = end;
                        if pos == gend {
                            let sc = scalar::group_scale_q8(m, o, g);
                            for (a, dk) in acc[..st].iter_mut().zip(&mut d[..st]) {
                                #[allow(clippy::cast_precision_loss)] // the spec's rounding
                                let df = *dk as f32;
                                *a += df * sc;
                                *dk = 0;
                            }
                            g += 1;
                            gend = (gend + gl).min(ni);
                        }
                    }
                    c0 += n;
                }
                for (k, a) in acc[..st].iter().enumerate() {
                    y[(s0 + k) * nr + r] = *a * xq.row(s0 + k).1;
                }
            }
            s0 += st;
        }
    }
}
