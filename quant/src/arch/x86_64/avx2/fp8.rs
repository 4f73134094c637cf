//! fp8 e4m3 (f32 path only: the format has no int8-activation path): the decodes through
//! F16C or f32 bits, the row kernel and the band kernel of one activation row.

use core::arch::x86_64::*;
use core::ops::Range;

use super::batched::f32_multi_passes;
use super::int4_int8_f32::f32_bands8;
use super::reduce::{hsum_ps, sums4_half_ps, sums8_halves_ps};
use crate::kernels::{Matrix, Scales};
use crate::scalar;

/// Whether every finite activation stays finite times `2⁸` (the fp8 kernels that move
/// the decode's `2⁸` onto the activations need it).
pub(super) fn scalable_by_256(x: &[f32]) -> bool {
    finite_magnitude_below(x, (127 + 120) << 23) // |x| < 2¹²⁰
}

/// Whether every finite `|x|` has bits below `limit` (a power of two's): branch-free
/// over the slice (it vectorises), unlike a short-circuiting `all`, which ran as a
/// scalar loop of 6 % of a 512 × 1024 fp8 GEMV's time. `|x| · 2ᵏ` is exact unless it
/// overflows, and finite exactly when `|x| < 2¹²⁸⁻ᵏ`.
pub(super) fn finite_magnitude_below(x: &[f32], limit: u32) -> bool {
    let over = x.iter().fold(0u32, |any, v| {
        let a = v.to_bits() & 0x7FFF_FFFF;
        any | u32::from(a >= limit && a < 0x7F80_0000)
    });
    over == 0
}

/// `2¹²⁰`: e4m3 bits moved into an f32's (`(sext(b) ≪ 20) & 0x87F0_0000`) read as
/// `e4m3 · 2⁻¹²⁰`, exactly (the e4m3 subnormals land on f32 subnormals).
pub(super) const TWO_120: f32 = f32::from_bits((127 + 120) << 23);

/// Whether every finite activation stays finite times `2¹²⁰` (`|x| < 2⁸`), so that the
/// fp8 band kernel may decode e4m3 to f32 bits with integer operations only.
pub(super) fn scalable_by_2_120(x: &[f32]) -> bool {
    finite_magnitude_below(x, (127 + 8) << 23) // |x| < 2⁸
}

/// The low eight e4m3 bytes of `b` → eight exact f32 values, through IEEE half precision
/// with no float arithmetic on a subnormal operand (which costs a microcode assist per
/// instruction on AMD Zen: the former `bits · 2¹²⁰` decode, whose `bits` are subnormal
/// f32 for exponent-0 codes, ran at ~4.5 G weights/s in L2 on random codes).
/// `(b ≪ 7) & 0xBF80` on the sign-extended 16-bit lane is the f16 `e4m3 · 2⁻⁸` exactly
/// (f16 has one more exponent bit and subnormals down to 2⁻²⁴, so e4m3 subnormals stay
/// exact), `vcvtph2ps` (F16C) converts it exactly to a normal f32 (`|e4m3 · 2⁻⁸| ≥ 2⁻¹⁷`,
/// or zero), and `× 2⁸` is exact. NaN codes (`|b| = 0x7F`) would decode to ±480; `nan`
/// maps them to all-ones (a NaN), otherwise the caller has checked there are none.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn fp8x8(b: __m128i, nan: bool) -> __m256 {
    let t = _mm_cvtepi8_epi16(b);
    #[allow(clippy::cast_possible_wrap)] // bit pattern
    let h = _mm_and_si128(_mm_slli_epi16::<7>(t), _mm_set1_epi16(0xBF80u16 as i16));
    let f = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0));
    if nan {
        let sev = _mm_set1_epi16(0x7F);
        let is_nan = _mm_cmpeq_epi16(_mm_and_si128(t, sev), sev);
        _mm256_or_ps(f, _mm256_castsi256_ps(_mm256_cvtepi16_epi32(is_nan)))
    } else {
        f
    }
}

/// Sixteen e4m3 bytes → two vectors of eight exact f32 values, as [`fp8x8`] with the
/// integer steps done once on 16 lanes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn fp8x16(b: __m128i, nan: bool) -> (__m256, __m256) {
    let t = _mm256_cvtepi8_epi16(b);
    #[allow(clippy::cast_possible_wrap)] // bit pattern
    let h = _mm256_and_si256(_mm256_slli_epi16::<7>(t), _mm256_set1_epi16(0xBF80u16 as i16));
    let u = _mm256_set1_ps(256.0);
    let lo = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), u);
    let hi = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256::<1>(h)), u);
    if nan {
        let sev = _mm256_set1_epi16(0x7F);
        let m = _mm256_cmpeq_epi16(_mm256_and_si256(t, sev), sev);
        let ml = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(m));
        let mh = _mm256_cvtepi16_epi32(_mm256_extracti128_si256::<1>(m));
        (_mm256_or_ps(lo, _mm256_castsi256_ps(ml)), _mm256_or_ps(hi, _mm256_castsi256_ps(mh)))
    } else {
        (lo, hi)
    }
}

/// Fused fp8-e4m3-b128 f32-activation kernel for one weight row and `T` activation rows:
/// per 128-column block, decode 16 bytes at a time in registers ([`fp8x16`]; NaN handling
/// only when the block holds a NaN code), 2 accumulators per activation row,
/// `acc = fma(part, scale, acc)`.
///
/// # Safety
/// The arm's features available; every `xs[k]` points at `I` values.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn fp8_row_f32<const T: usize>(
    m: &Matrix<'_>,
    o: usize,
    xs: [*const f32; T],
) -> [f32; T] {
    let ni = m.i();
    let row = m.row_bytes(o);
    let mut acc = [_mm256_setzero_ps(); T];
    let mut tail_acc = [0f32; T];
    let nan_code = _mm256_set1_epi8(0x7F);
    for g in 0..m.groups_per_row() {
        let (c0, c1) = (128 * g, (128 * g + 128).min(ni));
        let n8 = (c1 - c0) / 8;
        // NaN codes in the block? (only full 32-byte pieces are probed; the rest is decoded
        // with NaN handling)
        let mut has_nan = (c1 - c0) % 32 != 0;
        for p in 0..(c1 - c0) / 32 {
            // SAFETY: c0 + 32·p + 32 ≤ c1 ≤ I bytes of the row.
            let v = unsafe { _mm256_loadu_si256(row.as_ptr().add(c0 + 32 * p).cast()) };
            let hit = _mm256_cmpeq_epi8(_mm256_and_si256(v, nan_code), nan_code);
            has_nan |= _mm256_movemask_epi8(hit) != 0;
        }
        let mut p0 = [_mm256_setzero_ps(); T];
        let mut p1 = [_mm256_setzero_ps(); T];
        let mut j = 0;
        while j + 2 <= n8 {
            let col = c0 + 8 * j;
            // SAFETY: col + 16 ≤ c1 ≤ I.
            let b = unsafe { _mm_loadu_si128(row.as_ptr().add(col).cast()) };
            let (w0, w1) = fp8x16(b, has_nan);
            for k in 0..T {
                // SAFETY: col + 16 ≤ I values of xs[k].
                unsafe {
                    p0[k] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[k].add(col)), p0[k]);
                    p1[k] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[k].add(col + 8)), p1[k]);
                }
            }
            j += 2;
        }
        if j < n8 {
            let col = c0 + 8 * j;
            // SAFETY: col + 8 ≤ c1 ≤ I.
            let w0 = fp8x8(unsafe { _mm_loadl_epi64(row.as_ptr().add(col).cast()) }, true);
            for k in 0..T {
                // SAFETY: col + 8 ≤ I values of xs[k].
                let xv = unsafe { _mm256_loadu_ps(xs[k].add(col)) };
                p0[k] = _mm256_fmadd_ps(w0, xv, p0[k]);
            }
        }
        let sc = scalar::group_scale(m, o, g);
        let scv = _mm256_set1_ps(sc);
        for k in 0..T {
            let mut tail = 0.0f32;
            for (c, &b) in row.iter().enumerate().take(c1).skip(c0 + 8 * n8) {
                // SAFETY: c < I.
                tail += scalar::e4m3_to_f32(b) * unsafe { *xs[k].add(c) };
            }
            acc[k] = _mm256_fmadd_ps(_mm256_add_ps(p0[k], p1[k]), scv, acc[k]);
            tail_acc[k] += tail * sc;
        }
    }
    let mut out = [0f32; T];
    for k in 0..T {
        out[k] = hsum_ps(acc[k]) + tail_acc[k];
    }
    out
}

/// 32 e4m3 bytes → four vectors of eight exact f32 values `e4m3 · 2⁻⁸`, columns 0..8,
/// 8..16, 16..24, 24..32 (the f16 step of [`fp8x16`] without its `× 2⁸`, which the band
/// kernel moves onto the activations). `vpunpck{l,h}bw(v, v)` puts each byte in both
/// halves of a 16-bit lane; an arithmetic shift right by 1 and `& 0xBF80` leave the
/// f16 `(sext(b) ≪ 7) & 0xBF80` of [`fp8x8`], with no lane-crossing widening; the
/// halves of the two vectors are the four 8-column pieces. With `NAN`, codes
/// `|b| = 0x7F` become all-ones (a NaN).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn fp8x32_low<const NAN: bool>(v: __m256i) -> [__m256; 4] {
    #[allow(clippy::cast_possible_wrap)] // bit pattern
    let keep = _mm256_set1_epi16(0xBF80u16 as i16);
    let a = _mm256_unpacklo_epi8(v, v); // columns 0..8 | 16..24
    let b = _mm256_unpackhi_epi8(v, v); // columns 8..16 | 24..32
    let ha = _mm256_and_si256(_mm256_srai_epi16::<1>(a), keep);
    let hb = _mm256_and_si256(_mm256_srai_epi16::<1>(b), keep);
    let lo = _mm256_castsi256_si128;
    let hi = _mm256_extracti128_si256::<1>;
    let w = [
        _mm256_cvtph_ps(lo(ha)),
        _mm256_cvtph_ps(lo(hb)),
        _mm256_cvtph_ps(hi(ha)),
        _mm256_cvtph_ps(hi(hb)),
    ];
    if !NAN {
        return w;
    }
    let sev = _mm256_set1_epi16(0x7F);
    let ma = _mm256_cmpeq_epi16(_mm256_and_si256(a, sev), sev);
    let mb = _mm256_cmpeq_epi16(_mm256_and_si256(b, sev), sev);
    let m = [lo(ma), lo(mb), hi(ma), hi(mb)];
    core::array::from_fn(|k| _mm256_or_ps(w[k], _mm256_castsi256_ps(_mm256_cvtepi16_epi32(m[k]))))
}

/// Whether any of the `R` rows' 128 bytes at `w[r]` is an e4m3 NaN code (`|b| = 0x7F`,
/// i.e. `b | 0x80 = 0xFF`): one `vpor` and one `vpmaxub` per 32 bytes.
///
/// # Safety
/// The arm's features available; every `w[r]` points at 128 readable bytes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn band_has_nan<const R: usize>(w: [*const u8; R]) -> bool {
    #[allow(clippy::cast_possible_wrap)] // bit pattern
    let top = _mm256_set1_epi8(0x80u8 as i8);
    let mut mx = _mm256_setzero_si256();
    for p in w {
        for q in 0..4 {
            // SAFETY: 32 · q + 32 ≤ 128 bytes at p (caller).
            let v = unsafe { _mm256_loadu_si256(p.add(32 * q).cast()) };
            mx = _mm256_max_epu8(mx, _mm256_or_si256(v, top));
        }
    }
    let ones = _mm256_cmpeq_epi8(mx, _mm256_set1_epi8(-1));
    _mm256_movemask_epi8(ones) != 0
}

/// 8 e4m3 bytes at `p` → eight f32 `e4m3 · 2⁻¹²⁰`, exactly, with integer operations
/// only: sign-extended to i32 (`vpmovsxbd` from memory), shifted left by 20 and masked
/// with `0x87F0_0000` (the exponent field `E` under f32's bias is `2^(E − 7 − 120)`;
/// `E = 0` lands on f32 subnormals of the same value). With `NAN`, codes `|b| = 0x7F`
/// become all-ones (a NaN), as in [`fp8x32_low`].
///
/// # Safety
/// The arm's features available; `p` points at 8 readable bytes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn fp8x8_bits<const NAN: bool>(p: *const u8) -> __m256 {
    #[allow(clippy::cast_possible_wrap)] // bit pattern
    let keep = _mm256_set1_epi32(0x87F0_0000u32 as i32);
    // SAFETY: 8 bytes at p (caller).
    let z = _mm256_cvtepi8_epi32(unsafe { _mm_loadl_epi64(p.cast()) });
    let d = _mm256_and_si256(_mm256_slli_epi32::<20>(z), keep);
    if !NAN {
        return _mm256_castsi256_ps(d);
    }
    let sev = _mm256_set1_epi32(0x7F);
    let nan = _mm256_cmpeq_epi32(_mm256_and_si256(z, sev), sev);
    _mm256_castsi256_ps(_mm256_or_si256(d, nan))
}

/// 32 e4m3 bytes at `p` → four [`fp8x8_bits`] vectors (columns 0..8, 8..16, 16..24,
/// 24..32), `e4m3 · 2⁻¹²⁰` each.
///
/// # Safety
/// The arm's features available; `p` points at 32 readable bytes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn fp8x32_bits<const NAN: bool>(p: *const u8) -> [__m256; 4] {
    // SAFETY: 8 bytes at p + 8k for k < 4 (caller: 32 bytes).
    unsafe {
        [
            fp8x8_bits::<NAN>(p),
            fp8x8_bits::<NAN>(p.add(8)),
            fp8x8_bits::<NAN>(p.add(16)),
            fp8x8_bits::<NAN>(p.add(24)),
        ]
    }
}

/// One 128-column block of 4 fp8 weight rows (bytes at `w[r]`) against `xs`, the block's
/// 128 activations scaled to match `decode`: row `r`'s 8-lane partial sums. `decode(p)`
/// turns the 16 bytes at `p` into two 8-column vectors, [`fp8x16_bits`] (`e4m3 ·
/// 2⁻¹²⁰` against `x · 2¹²⁰`) or [`fp8x16_low`] (`e4m3 · 2⁻⁸` against `x · 2⁸`): the
/// same products either way, added in the same order (two chains per row: columns
/// `16j .. 16j + 8` into the first, `16j + 8 .. 16j + 16` into the second, then their
/// sum), so both decodes give the same bits. The 4 rows share each activation
/// load (8 chains in flight). On Zen 2 (the `kernels` bench) the f16 route is bound by `vcvtph2ps`
/// (2 uops per 8 values): in a loop of 4 rows, 3.3 weights per cycle against 5.2 for the
/// bits. A subnormal weight entering an FMA costs nothing there (the product is
/// normal); a `vmulps` by `2¹²⁰` of the decoded weights instead takes the
/// subnormal-operand slow path and halves the rate.
///
/// # Safety
/// The arm's features available; every `w[r]` points at 128 bytes, `xs` at 128 f32;
/// `decode` reads 16 bytes at its argument.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn fp8_rows4_block(
    w: [*const u8; 4],
    xs: *const f32,
    decode: impl Fn(*const u8) -> [__m256; 2],
) -> [__m256; 4] {
    let mut a = [[_mm256_setzero_ps(); 2]; 4];
    for c in (0..128).step_by(16) {
        // SAFETY: c + 16 ≤ 128 values at xs and bytes at every w[r] (caller).
        unsafe {
            let xv = [_mm256_loadu_ps(xs.add(c)), _mm256_loadu_ps(xs.add(c + 8))];
            for (r, ar) in a.iter_mut().enumerate() {
                let d = decode(w[r].add(c));
                ar[0] = _mm256_fmadd_ps(d[0], xv[0], ar[0]);
                ar[1] = _mm256_fmadd_ps(d[1], xv[1], ar[1]);
            }
        }
    }
    core::array::from_fn(|r| _mm256_add_ps(a[r][0], a[r][1]))
}

/// 16 e4m3 bytes at `p` → two vectors of eight exact f32 values `e4m3 · 2⁻⁸`, columns
/// 0..8 and 8..16: the 128-bit form of [`fp8x32_low`] (the same bits per column).
///
/// # Safety
/// The arm's features available; `p` points at 16 readable bytes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn fp8x16_low<const NAN: bool>(p: *const u8) -> [__m256; 2] {
    // SAFETY: 16 bytes at p (caller).
    let v = unsafe { _mm_loadu_si128(p.cast()) };
    #[allow(clippy::cast_possible_wrap)] // bit pattern
    let keep = _mm_set1_epi16(0xBF80u16 as i16);
    let ab = [_mm_unpacklo_epi8(v, v), _mm_unpackhi_epi8(v, v)];
    let w = ab.map(|t| _mm256_cvtph_ps(_mm_and_si128(_mm_srai_epi16::<1>(t), keep)));
    if !NAN {
        return w;
    }
    let sev = _mm_set1_epi16(0x7F);
    core::array::from_fn(|k| {
        let m = _mm_cmpeq_epi16(_mm_and_si128(ab[k], sev), sev);
        _mm256_or_ps(w[k], _mm256_castsi256_ps(_mm256_cvtepi16_epi32(m)))
    })
}

/// 16 e4m3 bytes at `p` → two [`fp8x8_bits`] vectors (columns 0..8, 8..16).
///
/// # Safety
/// The arm's features available; `p` points at 16 readable bytes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn fp8x16_bits<const NAN: bool>(p: *const u8) -> [__m256; 2] {
    // SAFETY: 8 bytes at p and at p + 8 (caller: 16).
    unsafe { [fp8x8_bits::<NAN>(p), fp8x8_bits::<NAN>(p.add(8))] }
}

/// The 128-column blocks `0 .. blocks` of 4 fp8 weight rows (bytes at `w[r]`) against
/// `xs` (their activations, `x · 2¹²⁰` with `BITS`, else `x · 2⁸`): per block one NaN
/// probe of the 4 rows ([`band_has_nan`], with `probe`), the rows' 8-lane partial sums
/// ([`fp8_rows4_block`]; [`fp8x16_bits`] with `BITS`, else [`fp8x16_low`], with NaN
/// handling only where the probe finds a NaN code) and `acc[r] += part[r] · scale`
/// lane-wise, block `g`'s scale of row `r` at `sc[r] + g`.
///
/// # Safety
/// The arm's features available; `128 · blocks` bytes at every `w[r]` and values at
/// `xs`, `blocks` scales at every `sc[r]`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn fp8_rows4_sweep<const BITS: bool>(
    probe: bool,
    mut acc: [__m256; 4],
    w: [*const u8; 4],
    xs: *const f32,
    blocks: usize,
    sc: [*const f32; 4],
) -> [__m256; 4] {
    for g in 0..blocks {
        // SAFETY: block g < blocks of every row, of xs and of every scale run (caller).
        unsafe {
            let (wg, xg) = (w.map(|p| p.add(128 * g)), xs.add(128 * g));
            let part = match (BITS, probe && band_has_nan(wg)) {
                (true, true) => fp8_rows4_block(wg, xg, |p| fp8x16_bits::<true>(p)),
                (true, false) => fp8_rows4_block(wg, xg, |p| fp8x16_bits::<false>(p)),
                (false, true) => fp8_rows4_block(wg, xg, |p| fp8x16_low::<true>(p)),
                (false, false) => fp8_rows4_block(wg, xg, |p| fp8x16_low::<false>(p)),
            };
            for (r, (a, p)) in acc.iter_mut().zip(part).enumerate() {
                *a = _mm256_fmadd_ps(p, _mm256_broadcast_ss(&*sc[r].add(g)), *a);
            }
        }
    }
    acc
}

/// fp8-e4m3-b128, f32 activations, one activation row (the GEMV case): weight rows in bands of 8 (a
/// final, shorter band repeats its last row and stores only its own), each half of a band (4 rows)
/// swept over the row's full blocks ([`fp8_rows4_sweep`]: per 128-column block the rows' 8-lane
/// partial sums from [`fp8_rows4_block`] and `acc[r] = fma(part[r], scale, acc[r])` lane-wise), one
/// `vhaddps` tree per half at the end. Per block one NaN probe of the 4 rows ([`band_has_nan`])
/// picks the decode with NaN handling only where it finds a NaN code (a probe of whole rows before
/// the sweep was slower from L3: its loads did not overlap the decode; a matrix from
/// [`Matrix::with_nan_codes_checked`] that found no NaN code skips the probes). A partial last
/// block runs on zero-padded copies (zero codes and activations add `0`). The activations are
/// scaled to match the decode — `x · 2¹²⁰` for the bits decode where every `|x| < 2⁸`, else `x ·
/// 2⁸` for the f16 route (the caller has checked that every `x · 2⁸` is finite) — into a stack
/// buffer once per call for `I` ≤ 16 384, else per band and 16 384-column chunk. On Zen 2 (the
/// `kernels` bench) (bits decode) the sweeps instead of one `vhaddps` tree and scale per 8-row
/// block measured 11.9 → 14.0 G weights/s at 512 × 1024 (10.6 → 13.0 at 256 × 20 480); the NaN
/// probe is 12 % of the time (15.7 without it).
///
/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_f32_rows`](crate::arch::x86_64::matmul_f32_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_fp8_band8(m: &Matrix<'_>, x: &[f32], rows: Range<usize>, y: &mut [f32]) {
    const XS_MAX: usize = 16_384; // columns of scaled activations on the stack
    const CHUNK: usize = XS_MAX / 128; // blocks per chunk
    let ni = m.i();
    let full = ni / 128;
    let tn = ni - 128 * full;
    let bits = crate::isa::fp8_bits_decode() && scalable_by_2_120(&x[..ni]);
    let probe = !m.fp8_nan_free(); // with_nan_codes_checked found none: no probes
    let scale = _mm256_set1_ps(if bits { TWO_120 } else { 256.0 });
    // Writes x[from .. from + n] · scale at `to` (n a multiple of 8).
    let scale_into = |from: &[f32], to: *mut f32| {
        for (c, v) in from.chunks_exact(8).enumerate() {
            // SAFETY: 8 values in v; `to` has room for from.len() values (callers).
            unsafe {
                let v = _mm256_mul_ps(_mm256_loadu_ps(v.as_ptr()), scale);
                _mm256_storeu_ps(to.add(8 * c), v);
            }
        }
    };
    // The padded tail block, scaled (zero padding stays zero).
    let mut xt = [0f32; 128];
    xt[..tn].copy_from_slice(&x[128 * full..ni]);
    scale_into(&xt.clone(), xt.as_mut_ptr());
    // The full blocks' scaled activations: all of them once per call where I ≤ XS_MAX,
    // else one chunk at a time per band.
    let whole = full <= CHUNK;
    let mut xs = [const { core::mem::MaybeUninit::<f32>::uninit() }; XS_MAX];
    let xsp = xs.as_mut_ptr().cast::<f32>();
    if whole {
        scale_into(&x[..128 * full], xsp);
    }
    let Scales::F32(sf) = m.scales() else {
        unreachable!("fp8-e4m3-b128 has f32 scales (Matrix::new)")
    };
    let band = |o: &[usize; 8], rp: &[*const u8; 8], wt: &[[u8; 128]; 8]| {
        // A band of at most 4 rows repeats row 3 in its second half: skipped (zeros).
        let halves = if o[4] == o[3] { 1 } else { 2 };
        let mut acc = [[_mm256_setzero_ps(); 4]; 2];
        for c0 in (0..full).step_by(CHUNK) {
            let nb = CHUNK.min(full - c0);
            if !whole {
                scale_into(&x[128 * c0..128 * (c0 + nb)], xsp);
            }
            let xc = if whole { xsp.wrapping_add(128 * c0) } else { xsp };
            for (h, ah) in acc.iter_mut().enumerate().take(halves) {
                // Block g's scale of row o[4h + r] is sf[scale_index(o, 0) + g].
                let sc =
                    core::array::from_fn(|r| sf[m.scale_index(o[4 * h + r], 0) + c0..].as_ptr());
                let w = core::array::from_fn(|r| rp[4 * h + r].wrapping_add(128 * c0));
                // SAFETY: blocks c0 .. c0 + nb ≤ full of every row, their scaled
                // activations at xc (written above), their nb scales at every sc[r].
                *ah = unsafe {
                    if bits {
                        fp8_rows4_sweep::<true>(probe, *ah, w, xc, nb, sc)
                    } else {
                        fp8_rows4_sweep::<false>(probe, *ah, w, xc, nb, sc)
                    }
                };
            }
        }
        if tn > 0 {
            for (h, ah) in acc.iter_mut().enumerate().take(halves) {
                let sc =
                    core::array::from_fn(|r| sf[m.scale_index(o[4 * h + r], 0) + full..].as_ptr());
                let w = core::array::from_fn(|r| wt[4 * h + r].as_ptr());
                // SAFETY: one block: 128 bytes in every copy, 128 values in xt, one
                // scale at every sc[r].
                *ah = unsafe {
                    if bits {
                        fp8_rows4_sweep::<true>(probe, *ah, w, xt.as_ptr(), 1, sc)
                    } else {
                        fp8_rows4_sweep::<false>(probe, *ah, w, xt.as_ptr(), 1, sc)
                    }
                };
            }
        }
        sums8_halves_ps(acc.map(|a| sums4_half_ps(a)))
    };
    // SAFETY: same contract; a row has 128·full + 128 bytes at most.
    unsafe { f32_bands8::<128>(m, rows, 128 * full, y, band) };
}

/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_f32_rows`](crate::arch::x86_64::matmul_f32_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_fp8(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    let (ni, nr) = (m.i(), rows.len());
    if scalable_by_256(&x[..s * ni]) {
        // SAFETY: same contract.
        let n = unsafe { f32_multi_passes(m, x, s, rows.clone(), y) };
        if n < s {
            let (xs, ys) = (&x[n * ni..(n + 1) * ni], &mut y[n * nr..(n + 1) * nr]);
            // SAFETY: same contract, activation row n; every x · 2⁸ is finite.
            unsafe { f32_fp8_band8(m, xs, rows, ys) };
        }
        return;
    }
    let mut s0 = 0;
    while s0 < s {
        let st = if s - s0 >= 4 {
            4
        } else if s - s0 >= 2 {
            2
        } else {
            1
        };
        let xp = |k: usize| x[(s0 + k) * ni..].as_ptr();
        for (r, o) in rows.clone().enumerate() {
            // SAFETY: each pointer addresses the I values of activation row s0 + k.
            let v: [f32; 4] = unsafe {
                match st {
                    4 => fp8_row_f32::<4>(m, o, [xp(0), xp(1), xp(2), xp(3)]),
                    2 => {
                        let v = fp8_row_f32::<2>(m, o, [xp(0), xp(1)]);
                        [v[0], v[1], 0.0, 0.0]
                    }
                    _ => [fp8_row_f32::<1>(m, o, [xp(0)])[0], 0.0, 0.0, 0.0],
                }
            };
            for k in 0..st {
                y[(s0 + k) * nr + r] = v[k];
            }
        }
        s0 += st;
    }
}
