//! The two paths' entry bodies ([`f32_rows`], [`q8_rows`]): they run the kernel
//! [`dispatch`] names for the call, or the generic decode-then-dot loops (a 256-column chunk of
//! a row decoded into an L1 buffer, then dot products per group segment).

use core::arch::x86_64::*;
use core::ops::Range;

use crate::arch::x86_64 as x86;

use super::int4_int8_q8::q8_int4_row;
use super::nib_f32::{Kind, f32_tiled};
use super::reduce::{dot_f32, dot_i8};
use super::small_ints::{q8_int2_row, q8_int3_g64};
use super::{CH, Dot, I4_MAG, MX_MAG, ST, mask64};
use crate::arch::x86_64::dispatch::{self, F32, Q8, Width};
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
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
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
/// Features available; shapes as asserted by [`matmul_f32_rows`](crate::arch::x86_64::matmul_f32_rows).
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn f32_rows(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    let (ni, nr) = (m.i(), rows.len());
    match dispatch::f32(Width::Avx512, m, s) {
        F32::Tiled { mx, fp8, avx2_batch } => {
            // Activation rows 0..n by the 256-bit small-batch passes (n = 0 where they do not
            // apply), the rest here.
            let n = if avx2_batch {
                let r = rows.clone();
                crate::arch::x86_64::avx2::matmul_f32_small_batch(m, x, s, r, y).unwrap_or(0)
            } else {
                0
            };
            if n < s {
                let (x, s, y) = (&x[n * ni..], s - n, &mut y[n * nr..]);
                let kind = match (mx, fp8) {
                    (true, _) => Kind::Mx,
                    (_, true) => Kind::Fp8,
                    _ => Kind::Int4,
                };
                // SAFETY: the caller's contract (this module's features, the asserted shapes,
                // here for activation rows n..s); the table chose the tiles for int4-row,
                // int4-grouped with `gs` a multiple of 32, mxfp4 and fp8, as `kind` says.
                unsafe { f32_tiled(m, x, s, rows, y, kind) }
            }
        }
        F32::Avx2 => {
            if !x86::matmul_f32_rows::<x86::Avx2<x86::avx2::Plain>>(m, x, s, rows.clone(), y) {
                // SAFETY: the caller's contract (this module's features, the asserted shapes).
                unsafe { f32_generic(m, x, s, rows, y) }
            }
        }
        // SAFETY: the caller's contract (this module's features, the asserted shapes).
        F32::Fused | F32::Fp8 | F32::Int8Bands | F32::Generic => unsafe {
            f32_generic(m, x, s, rows, y)
        },
    }
}

/// Generic f32 path: 256-column chunks decoded once into L1 buffers and reused by up to
/// [`ST`] activation rows; per group segment a 512-bit FMA dot product.
///
/// # Safety
/// Features available; shapes as asserted by [`matmul_f32_rows`](crate::arch::x86_64::matmul_f32_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
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
/// Features available; shapes as asserted by [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
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
        match dispatch::q8(Width::Avx512, m, xq.s()) {
            Q8::Avx2Bands => {
                if !x86::matmul_q8_rows::<x86::Avx2<x86::avx2::Plain>>(m, xq, rows.clone(), y) {
                    // Without AVX2 (never with AVX-512 in practice): this arm's kernels.
                    if m.format() == Format::Int4Row {
                        q8_int4_row::<D>(m, xq, rows, y);
                    } else {
                        crate::arch::x86_64::bands::q8_int8_row::<crate::arch::x86_64::Avx512<D>, 64>(
                            m, xq, rows, y,
                        );
                    }
                }
            }
            Q8::Int4Row => q8_int4_row::<D>(m, xq, rows, y),
            Q8::Int8Row => crate::arch::x86_64::bands::q8_int8_row::<
                crate::arch::x86_64::Avx512<D>,
                64,
            >(m, xq, rows, y),
            // The table chose these for I ≤ PLANE_COLS = XA only.
            Q8::Int2Planes => q8_int2_row::<D>(m, xq, rows, y),
            Q8::Int3Planes => q8_int3_g64::<D>(m, xq, rows, y),
            // The table chose the band for mxfp4 and int4-grouped with whole subgroups only
            // (with at most `i32::MAX` scales when `wide`: the gather's indices), and `vbmi`
            // where the CPU has VBMI.
            Q8::Band { mx, wide, special, vbmi } => match (mx, vbmi, wide, special) {
                (true, true, _, true) => D::q8_mx_rows16_vbmi::<true>(m, xq, rows, y),
                (true, true, _, false) => D::q8_mx_rows16_vbmi::<false>(m, xq, rows, y),
                (true, false, _, true) => D::q8_g32_rows16::<true, false, true>(m, xq, rows, y),
                (true, false, _, false) => D::q8_g32_rows16::<true, false, false>(m, xq, rows, y),
                (false, _, false, true) => D::q8_g32_rows16::<false, false, true>(m, xq, rows, y),
                (false, _, false, false) => {
                    D::q8_g32_rows16::<false, false, false>(m, xq, rows, y);
                }
                (false, _, true, true) => D::q8_g32_rows16::<false, true, true>(m, xq, rows, y),
                (false, _, true, false) => D::q8_g32_rows16::<false, true, false>(m, xq, rows, y),
            },
            Q8::Generic => q8_generic::<D>(m, xq, rows, y),
        }
    }
}

/// Generic int8 path: 256-column chunks decoded once into an L1 buffer of codes, reused
/// by up to [`ST`] activation rows; exact dot products per group segment.
///
/// # Safety
/// Features available; shapes as asserted by [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
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
