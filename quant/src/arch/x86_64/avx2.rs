//! The AVX2 + FMA arm (256-bit), for every format with a value rule.
//!
//! Decoding (per 256-column chunk of a row, into an L1 buffer):
//! - int4 (row, grouped): 16 bytes → low/high nibbles (`and`, `srli`) → interleaved back into
//!   column order with `unpacklo/hi_epi8` → minus 8;
//! - mxfp4: the same nibble split, then a 16-entry `pshufb` table of `±2·e2m1` (integers in
//!   `[−12, 12]`), with the group scale halved to `2^(e−128)` (`crate::scalar::ue8m0_half`);
//! - fp8 e4m3: no table: the byte is sign-extended to 32 bits, shifted left by 20 and masked
//!   with `0x87F0_0000` (sign, exponent, mantissa land in f32 position: the f32 with those
//!   bits is exactly `e4m3 · 2⁻¹²⁰`, subnormals included), then multiplied by `2¹²⁰` (exact);
//!   NaN codes (`|b| = 0x7F`) are OR-ed to all-ones;
//! - int8: used in place; int2 / int3: the portable decoder of `crate::arch`.
//!
//! f32 path: `part += w · x` with FMA over 32 columns at a time (4 accumulators), a masked load
//! for the tail of each group segment, `acc = fma(part, scale, acc)` at each group end, one
//! horizontal sum per row. Within the documented tolerance of the scalar reference.
//!
//! int8 path: `maddubs(|w|, sign(x, w))` then `madd(·, 1)` — the sign trick keeps the unsigned
//! operand at most 128 and the signed one in `[−127, 127]`, so the i16 pair sums
//! (≤ 2·128·127 = 32512) never saturate — accumulated in i32 lanes, summed exactly per group,
//! then `acc += (d as f32) · scale` in the scalar reference's order: bit-exact.

// One SAFETY argument covers each block's loads (all in bounds for the same reason); clippy also
// counts the (safe, same-feature) intrinsic calls, which would split blocks into noise.
#![allow(clippy::multiple_unsafe_ops_per_block)]

use core::arch::x86_64::*;
use core::ops::Range;

use crate::format::Format;
use crate::kernels::{Matrix, QuantizedActs};
use crate::scalar;

/// Columns decoded per chunk.
const CH: usize = 256;
/// Activation rows per batch tile (accumulators live in a fixed array).
const ST: usize = 16;

fn cpu_ok() -> bool {
    crate::isa::Isa::Avx2.cpu_supports()
}

/// f32-activation kernel over `rows` (layout of `crate::scalar::matmul_f32_rows`). Returns
/// `false`, without running, if the CPU lacks AVX2 or FMA.
pub(crate) fn matmul_f32_rows(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    if !cpu_ok() {
        return false;
    }
    assert!(x.len() >= s * m.i() && y.len() >= s * rows.len() && rows.end <= m.o());
    // SAFETY: AVX2 and FMA were detected above; the shapes were asserted (every pointer access
    // below stays within `x`, `y`, the weight rows and the local buffers).
    unsafe { f32_rows(m, x, s, rows, y) };
    true
}

/// int8-activation kernel over `rows` (layout of `crate::scalar::matmul_q8_rows`). Returns
/// `false`, without running, if the CPU lacks AVX2 or FMA.
pub(crate) fn matmul_q8_rows(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    if !cpu_ok() {
        return false;
    }
    assert!(xq.i() == m.i() && y.len() >= xq.s() * rows.len() && rows.end <= m.o() && m.has_q8());
    // SAFETY: AVX2 and FMA were detected above; the shapes were asserted.
    unsafe { q8_rows(m, xq, rows, y) };
    true
}

/// Lane masks for the tail of a segment: `MASKS[8 - r..][..8]` enables the first `r` lanes.
static MASKS: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];

/// `±2·e2m1` for the 16 mxfp4 nibbles (bit 3 = sign).
static MX_LUT: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// The f32-path scale of group `g` of row `o` as this arm uses it (mxfp4 codes are doubled).
fn scale_f32(m: &Matrix<'_>, o: usize, g: usize) -> f32 {
    if m.format() == Format::Mxfp4 {
        scalar::group_scale_q8(m, o, g)
    } else {
        scalar::group_scale(m, o, g)
    }
}

#[inline]
#[target_feature(enable = "avx2,fma")]
fn hsum_ps(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_shuffle_ps::<1>(s, s));
    _mm_cvtss_f32(s)
}

#[inline]
#[target_feature(enable = "avx2,fma")]
fn hsum_epi32(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s)
}

/// `Σ w[k] · x[k]` for `k < n` as 8 lanes.
///
/// # Safety
/// `w` and `x` must be valid for reads of `n` f32 (unaligned is fine); AVX2 + FMA available.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_f32(w: *const f32, x: *const f32, n: usize) -> __m256 {
    let (mut a0, mut a1, mut a2, mut a3) =
        (_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps());
    let mut k = 0;
    while k + 32 <= n {
        // SAFETY: k + 32 ≤ n, both pointers valid for n reads.
        unsafe {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w.add(k)), _mm256_loadu_ps(x.add(k)), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w.add(k + 8)), _mm256_loadu_ps(x.add(k + 8)), a1);
            a2 =
                _mm256_fmadd_ps(_mm256_loadu_ps(w.add(k + 16)), _mm256_loadu_ps(x.add(k + 16)), a2);
            a3 =
                _mm256_fmadd_ps(_mm256_loadu_ps(w.add(k + 24)), _mm256_loadu_ps(x.add(k + 24)), a3);
        }
        k += 32;
    }
    while k + 8 <= n {
        // SAFETY: k + 8 ≤ n.
        unsafe { a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w.add(k)), _mm256_loadu_ps(x.add(k)), a0) };
        k += 8;
    }
    if k < n {
        // SAFETY: MASKS has 16 entries and 1 ≤ n − k ≤ 7, so the 8-lane window is in bounds; the
        // masked loads touch only the first n − k lanes (masked-off lanes never fault).
        unsafe {
            let mask = _mm256_loadu_si256(MASKS.as_ptr().add(8 - (n - k)).cast());
            let wv = _mm256_maskload_ps(w.add(k), mask);
            let xv = _mm256_maskload_ps(x.add(k), mask);
            a1 = _mm256_fmadd_ps(wv, xv, a1);
        }
    }
    _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))
}

/// One 32-byte block of the int8 dot: `Σ w·x` into 8 i32 lanes (no saturation, see module doc).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn dot32_i8(w: __m256i, x: __m256i) -> __m256i {
    let p = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    _mm256_madd_epi16(p, _mm256_set1_epi16(1))
}

/// Exact `Σ w[k] · x[k]` for `k < n` (`x` in `[−127, 127]`).
///
/// # Safety
/// `w` and `x` valid for reads of `n` bytes; AVX2 available.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_i8(w: *const i8, x: *const i8, n: usize) -> i32 {
    let (mut a0, mut a1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let mut k = 0;
    while k + 64 <= n {
        // SAFETY: k + 64 ≤ n.
        unsafe {
            let w0 = _mm256_loadu_si256(w.add(k).cast());
            let x0 = _mm256_loadu_si256(x.add(k).cast());
            let w1 = _mm256_loadu_si256(w.add(k + 32).cast());
            let x1 = _mm256_loadu_si256(x.add(k + 32).cast());
            a0 = _mm256_add_epi32(a0, dot32_i8(w0, x0));
            a1 = _mm256_add_epi32(a1, dot32_i8(w1, x1));
        }
        k += 64;
    }
    while k + 32 <= n {
        // SAFETY: k + 32 ≤ n.
        unsafe {
            let w0 = _mm256_loadu_si256(w.add(k).cast());
            let x0 = _mm256_loadu_si256(x.add(k).cast());
            a0 = _mm256_add_epi32(a0, dot32_i8(w0, x0));
        }
        k += 32;
    }
    if k < n {
        let (mut tw, mut tx) = ([0i8; 32], [0i8; 32]);
        // SAFETY: n − k < 32 bytes are copied from valid ranges into 32-byte locals.
        unsafe {
            core::ptr::copy_nonoverlapping(w.add(k), tw.as_mut_ptr(), n - k);
            core::ptr::copy_nonoverlapping(x.add(k), tx.as_mut_ptr(), n - k);
        }
        // SAFETY: the locals are 32 bytes.
        let (wv, xv) = unsafe {
            (_mm256_loadu_si256(tw.as_ptr().cast()), _mm256_loadu_si256(tx.as_ptr().cast()))
        };
        a1 = _mm256_add_epi32(a1, dot32_i8(wv, xv));
    }
    hsum_epi32(_mm256_add_epi32(a0, a1))
}

/// Splits 16 packed bytes into 32 nibbles in column order (low nibble = even column).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn nibbles(v: __m128i) -> (__m128i, __m128i) {
    let m = _mm_set1_epi8(0x0F);
    let lo = _mm_and_si128(v, m);
    let hi = _mm_and_si128(_mm_srli_epi16::<4>(v), m);
    (_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi))
}

/// Decodes columns `c0 .. c0 + n` (`c0` a multiple of [`CH`], `n ≤ CH`) of `row` into integer
/// codes in `buf`, returning a pointer to the codes (into `row` itself for int8-row).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn decode_i8(m: &Matrix<'_>, row: &[u8], c0: usize, n: usize, buf: &mut [i8; CH]) -> *const i8 {
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
                // SAFETY: 16 bytes at 16·b lie within `bytes` (b < n/32, bytes.len() ≥ n/2);
                // the stores write 32 bytes at 32·b < CH.
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
        _ => super::super::decode_small_ints(m, row, c0, &mut buf[..n]),
    }
    buf.as_ptr()
}

/// Decodes columns `c0 .. c0 + n` of `row` into unscaled f32 values (mxfp4: doubled),
/// returning a pointer to them (into `row` itself for f32 weights).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn decode_f32(
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
            let p120 = _mm256_set1_ps(scalar::pow2(120));
            #[allow(clippy::cast_possible_wrap)] // bit patterns
            let (keep, expm, nanv) = (
                _mm256_set1_epi32(0x87F0_0000u32 as i32),
                _mm256_set1_epi32(0x7FF0_0000),
                _mm256_set1_epi32(0x07F0_0000),
            );
            let full = n / 8;
            for b in 0..full {
                // SAFETY: 8 bytes at 8·b are within `bytes`; 8 f32 stored at 8·b < CH.
                unsafe {
                    let t = _mm256_cvtepi8_epi32(_mm_loadl_epi64(bytes.as_ptr().add(8 * b).cast()));
                    let bits = _mm256_and_si256(_mm256_slli_epi32::<20>(t), keep);
                    let f = _mm256_mul_ps(_mm256_castsi256_ps(bits), p120);
                    let nan = _mm256_cmpeq_epi32(_mm256_and_si256(bits, expm), nanv);
                    let f = _mm256_or_ps(f, _mm256_castsi256_ps(nan));
                    _mm256_storeu_ps(fbuf.as_mut_ptr().add(8 * b), f);
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
                // SAFETY: `codes` points at n valid bytes (the row or `ibuf`); 8·b + 8 ≤ n ≤ CH.
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
/// AVX2 + FMA available; shapes as asserted by [`matmul_f32_rows`].
#[target_feature(enable = "avx2,fma")]
unsafe fn f32_rows(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]) {
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
/// AVX2 available; shapes as asserted by [`matmul_q8_rows`].
#[target_feature(enable = "avx2,fma")]
unsafe fn q8_rows(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]) {
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
                        // SAFETY: wp points at n codes for columns c0..c0+n ⊇ pos..end.
                        *dk += unsafe { dot_i8(wp.add(pos - c0), xs.as_ptr(), end - pos) };
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
