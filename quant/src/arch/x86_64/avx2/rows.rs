//! The two paths' entry bodies ([`f32_rows`], [`q8_rows`]): they run the kernel
//! [`dispatch`] names for the call, or the generic decode-then-dot loops (a 256-column chunk of
//! a row decoded into an L1 buffer, then dot products per group segment).

use core::arch::x86_64::*;
use core::ops::Range;

use super::fp8::{f32_fp8, fp8x8};
use super::grouped::f32_fused;
use super::int4_int8_f32::f32_int8_band8;
use super::int4_int8_q8::q8_int4_row;
use super::reduce::{dot_f32, dot_i8, hsum_ps, nibbles};
use super::small_ints::{q8_int2_row, q8_int3_g64};
use super::{CH, Dot, MX_LUT, ST};
use crate::arch::x86_64::dispatch::{self, F32, Q8, Width};
use crate::format::Format;
use crate::kernels::{Matrix, QuantizedActs, Scales};
use crate::scalar;

/// The f32-path scale of group `g` of row `o` as this arm uses it (mxfp4 codes are
/// doubled).
pub(super) fn scale_f32(m: &Matrix<'_>, o: usize, g: usize) -> f32 {
    if let Scales::Ue8m0(e) = m.scales() {
        crate::arch::UE8M0_HALF[usize::from(e[m.scale_index(o, g)])]
    } else {
        scalar::group_scale(m, o, g)
    }
}

/// Decodes columns `c0 .. c0 + n` (`c0` a multiple of [`CH`], `n ≤ CH`) of `row` into
/// integer codes in `buf`, returning a pointer to the codes (into `row` itself for
/// int8-row).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn decode_i8(
    m: &Matrix<'_>,
    row: &[u8],
    c0: usize,
    n: usize,
    buf: &mut [i8; CH],
) -> *const i8 {
    match m.format() {
        Format::Int8Row => return row[c0..c0 + n].as_ptr().cast(),
        Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => {
            let bytes = &row[c0 / 2..(c0 + n).div_ceil(2)];
            let mx = m.format() == Format::Mxfp4;
            // SAFETY: MX_LUT has 16 bytes.
            let lut = unsafe { _mm_loadu_si128(MX_LUT.as_ptr().cast()) };
            let eight = _mm_set1_epi8(8);
            let full = n / 32;
            for b in 0..full {
                // SAFETY: 16 bytes at 16·b lie within `bytes` (b < n/32, bytes.len() ≥
                // n/2); the stores write 32 bytes at 32·b < CH.
                unsafe {
                    let v = _mm_loadu_si128(bytes.as_ptr().add(16 * b).cast());
                    let (a, c) = nibbles(v);
                    let (a, c) = if mx {
                        (_mm_shuffle_epi8(lut, a), _mm_shuffle_epi8(lut, c))
                    } else {
                        (_mm_sub_epi8(a, eight), _mm_sub_epi8(c, eight))
                    };
                    _mm_storeu_si128(buf.as_mut_ptr().add(32 * b).cast(), a);
                    _mm_storeu_si128(buf.as_mut_ptr().add(32 * b + 16).cast(), c);
                }
            }
            for k in 32 * full..n {
                let nib = (bytes[k / 2] >> (4 * (k % 2))) & 0xF;
                #[allow(clippy::cast_possible_wrap)] // nibble < 16
                let c = if mx { MX_LUT[usize::from(nib)] } else { nib as i8 - 8 };
                buf[k] = c;
            }
        }
        _ => crate::arch::x86_64::decode_small_ints(m, row, c0, &mut buf[..n]),
    }
    buf.as_ptr()
}

/// Decodes columns `c0 .. c0 + n` of `row` into unscaled f32 values (mxfp4: doubled),
/// returning a pointer to them (into `row` itself for f32 weights).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn decode_f32(
    m: &Matrix<'_>,
    row: &[u8],
    c0: usize,
    n: usize,
    ibuf: &mut [i8; CH],
    fbuf: &mut [f32; CH],
) -> *const f32 {
    match m.format() {
        Format::F32 => return row[4 * c0..4 * (c0 + n)].as_ptr().cast(),
        Format::Fp8E4m3B128 => {
            let bytes = &row[c0..c0 + n];
            let full = n / 8;
            for b in 0..full {
                // SAFETY: 8 bytes at 8·b are within `bytes`; 8 f32 stored at 8·b < CH.
                unsafe {
                    let v = _mm_loadl_epi64(bytes.as_ptr().add(8 * b).cast());
                    _mm256_storeu_ps(fbuf.as_mut_ptr().add(8 * b), fp8x8(v, true));
                }
            }
            for (f, &b) in fbuf[8 * full..n].iter_mut().zip(&bytes[8 * full..]) {
                *f = scalar::e4m3_to_f32(b);
            }
        }
        _ => {
            let codes = decode_i8(m, row, c0, n, ibuf);
            let full = n / 8;
            for b in 0..full {
                // SAFETY: `codes` points at n valid bytes (the row or `ibuf`);
                // 8·b + 8 ≤ n ≤ CH.
                unsafe {
                    let t = _mm256_cvtepi8_epi32(_mm_loadl_epi64(codes.add(8 * b).cast()));
                    _mm256_storeu_ps(fbuf.as_mut_ptr().add(8 * b), _mm256_cvtepi32_ps(t));
                }
            }
            for (k, f) in fbuf.iter_mut().enumerate().take(n).skip(8 * full) {
                // SAFETY: k < n.
                *f = f32::from(unsafe { *codes.add(k) });
            }
        }
    }
    fbuf.as_ptr()
}

/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_f32_rows`](crate::arch::x86_64::matmul_f32_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_rows(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    match dispatch::f32(Width::Avx2, m, s) {
        // SAFETY: the caller's contract (this module's features, the asserted shapes); the
        // table chose it for int4-row, mxfp4, int2-row, int3-g64 or int4-grouped with `gs` a
        // multiple of 32, the formats `f32_fused` takes.
        F32::Fused => return unsafe { f32_fused(m, x, s, rows, y) },
        // SAFETY: the caller's contract (this module's features, the asserted shapes); fp8.
        F32::Fp8 => return unsafe { f32_fp8(m, x, s, rows, y) },
        // SAFETY: the caller's contract (this module's features, the asserted shapes);
        // int8-row.
        F32::Int8Bands => return unsafe { f32_int8_band8(m, x, s, rows, y) },
        F32::Tiled { .. } | F32::Avx2 | F32::Generic => {}
    }
    let (ni, gl, nr) = (m.i(), m.group_len(), rows.len());
    let mut ibuf = [0i8; CH];
    let mut fbuf = [0f32; CH];
    let mut s0 = 0;
    while s0 < s {
        let st = (s - s0).min(ST);
        for (r, o) in rows.clone().enumerate() {
            let row = m.row_bytes(o);
            let mut acc = [_mm256_setzero_ps(); ST];
            let mut part = [_mm256_setzero_ps(); ST];
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
                        *p = _mm256_add_ps(*p, unsafe {
                            dot_f32(wp.add(pos - c0), xs.as_ptr(), end - pos)
                        });
                    }
                    pos = end;
                    if pos == gend {
                        let sc = _mm256_set1_ps(scale_f32(m, o, g));
                        for (a, p) in acc[..st].iter_mut().zip(&mut part[..st]) {
                            *a = _mm256_fmadd_ps(*p, sc, *a);
                            *p = _mm256_setzero_ps();
                        }
                        g += 1;
                        gend = (gend + gl).min(ni);
                    }
                }
                c0 += n;
            }
            for (k, a) in acc[..st].iter().enumerate() {
                y[(s0 + k) * nr + r] = hsum_ps(*a);
            }
        }
        s0 += st;
    }
}

/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows).
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
        match dispatch::q8(Width::Avx2, m, xq.s()) {
            Q8::Int4Row => return q8_int4_row::<D>(m, xq, rows, y),
            Q8::Int8Row => {
                return crate::arch::x86_64::bands::q8_int8_row::<crate::arch::x86_64::Avx2<D>, 32>(
                    m, xq, rows, y,
                );
            }
            // The table chose these for I ≤ PLANE_COLS = PLANES only.
            Q8::Int2Planes => return q8_int2_row::<D>(m, xq, rows, y),
            Q8::Int3Planes => return q8_int3_g64::<D>(m, xq, rows, y),
            // The table chose the band for mxfp4 and int4-grouped with whole subgroups only.
            Q8::Band { mx, wide, special, .. } => {
                return match (mx, wide, special) {
                    (true, _, true) => D::q8_band8::<true, false, true>(m, xq, rows, y),
                    (true, _, false) => D::q8_band8::<true, false, false>(m, xq, rows, y),
                    (false, false, true) => D::q8_band8::<false, false, true>(m, xq, rows, y),
                    (false, false, false) => D::q8_band8::<false, false, false>(m, xq, rows, y),
                    (false, true, true) => D::q8_band8::<false, true, true>(m, xq, rows, y),
                    (false, true, false) => D::q8_band8::<false, true, false>(m, xq, rows, y),
                };
            }
            Q8::Avx2Bands | Q8::Generic => {}
        }
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
                    let wp = decode_i8(m, row, c0, n, &mut ibuf);
                    let mut pos = c0;
                    while pos < c0 + n {
                        let end = gend.min(c0 + n);
                        for (k, dk) in d[..st].iter_mut().enumerate() {
                            let xs = &xq.row(s0 + k).0[pos..end];
                            // wp points at n codes for columns c0..c0+n ⊇ pos..end.
                            *dk += dot_i8::<D>(wp.add(pos - c0), xs.as_ptr(), end - pos);
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
