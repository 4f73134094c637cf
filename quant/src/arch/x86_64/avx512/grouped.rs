//! mxfp4 and int4-grouped with whole 32-column subgroups on the int8 path: bands of 16 rows,
//! one output row per lane ([`band_body`], the body of the arms' `q8_g32_rows16` and
//! `q8_mx_rows16_vbmi` entries), and the transposes of its sums and scales.

use core::arch::x86_64::*;
use core::ops::Range;

use super::reduce::split_even_odd;
use super::{Dot, MX_OFF, mask16, mask64};
use crate::arch::x86_64::{BandPrefetch, streams};
use crate::kernels::{Matrix, QuantizedActs, Scales};

/// Activation codes per chunk of [`Dot::q8_g32_rows16`] (de-interleaved
/// on the stack, 16 KiB, plus 8 KiB of per-block corrections). Rows up to 16 Ki columns are one
/// chunk, so a band reads its rows whole: with 8192-column chunks a 14 336-column matrix from DRAM
/// was read in two passes of partial rows, at 0.62–0.65 of a plain read of the same bytes (mxfp4
/// q8, avx512-vnni, Zen 4, the `kernels` bench, 9362 × 14 336); one pass: 0.87; int4-grouped `gs =
/// 32` 0.56 → 0.77–0.81. Unchanged in cache.
pub(in crate::arch::x86_64) const QC: usize = 16384;

/// Sums of 16 vectors of i32 lanes, 4 per 128-bit lane `q`, into 4 vectors: lane `r` of
/// result `q` = the sum of the four lanes of 128-bit lane `q` of `a[r]`. Every lane of
/// `a` must fit in i16 and every pair sum too (|lane| ≤ 16 383): then the two
/// `vpackssdw` + `vpmaddwd(·, 1)` levels are exact; a 4 × 4 transpose of 128-bit lanes
/// (`vshufi32x4`) finishes.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn reduce16x4(a: [__m512i; 16]) -> [__m512i; 4] {
    let ones = _mm512_set1_epi16(1);
    let mut h = [_mm512_setzero_si512(); 8];
    for (j, hj) in h.iter_mut().enumerate() {
        // lane q: [a2j(0)+a2j(1), a2j(2)+a2j(3), a2j+1(0)+a2j+1(1), a2j+1(2)+a2j+1(3)]
        *hj = _mm512_madd_epi16(_mm512_packs_epi32(a[2 * j], a[2 * j + 1]), ones);
    }
    let mut f = [_mm512_setzero_si512(); 4];
    for (k, fk) in f.iter_mut().enumerate() {
        // lane q: the full sums of rows 4k .. 4k + 4
        *fk = _mm512_madd_epi16(_mm512_packs_epi32(h[2 * k], h[2 * k + 1]), ones);
    }
    let t0 = _mm512_shuffle_i32x4::<0x44>(f[0], f[1]);
    let t1 = _mm512_shuffle_i32x4::<0xEE>(f[0], f[1]);
    let t2 = _mm512_shuffle_i32x4::<0x44>(f[2], f[3]);
    let t3 = _mm512_shuffle_i32x4::<0xEE>(f[2], f[3]);
    [
        _mm512_shuffle_i32x4::<0x88>(t0, t2),
        _mm512_shuffle_i32x4::<0xDD>(t0, t2),
        _mm512_shuffle_i32x4::<0x88>(t1, t3),
        _mm512_shuffle_i32x4::<0xDD>(t1, t3),
    ]
}

/// A 16 × 4 transpose of dwords: `row(r)` gives 4 dwords of row `r`; result `k` has
/// dword `k` of row `r` in lane `r` (16 loads combined into four vectors by
/// `vinserti32x4`, then `vpunpck{l,h}{dq,qdq}` within 128-bit lanes). `K`: one copy
/// per band-kernel instance (see [`scales_f32_16x4`]).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn transpose16x4<D: Dot, const K: bool, const V: bool>(
    row: impl Fn(usize) -> __m128i,
) -> [__m512i; 4] {
    // z(j): 128-bit lane L holds row j + 4L.
    let z = |j: usize| {
        let v = _mm512_castsi128_si512(row(j));
        let v = _mm512_inserti32x4::<1>(v, row(j + 4));
        let v = _mm512_inserti32x4::<2>(v, row(j + 8));
        _mm512_inserti32x4::<3>(v, row(j + 12))
    };
    transpose_lanes4(z(0), z(1), z(2), z(3))
}

/// [`transpose16x4`] where all 16 bytes at every `row(r)` are readable: each row is
/// loaded broadcast to the four 128-bit lanes (done by the load unit) and merged under
/// a mask (`vpblendmd`), which spares the shuffle port the 12 `vinserti32x4`. `K`: one
/// copy per band-kernel instance (see [`scales_f32_16x4`]).
///
/// # Safety
/// Every `row(r)` is valid for reads of 16 bytes.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn transpose16x4_full<D: Dot, const K: bool, const V: bool>(
    row: impl Fn(usize) -> *const u8,
) -> [__m512i; 4] {
    // SAFETY: 16 bytes at row(r) are readable (the caller's contract).
    let bc = |r: usize| _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(row(r).cast()) });
    let z = |j: usize| {
        let v = bc(j);
        let v = _mm512_mask_blend_epi32(0x00F0, v, bc(j + 4));
        let v = _mm512_mask_blend_epi32(0x0F00, v, bc(j + 8));
        _mm512_mask_blend_epi32(0xF000, v, bc(j + 12))
    };
    transpose_lanes4(z(0), z(1), z(2), z(3))
}

/// The 4 × 4 dword transposes within the 128-bit lanes of `z0 .. z3`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn transpose_lanes4(z0: __m512i, z1: __m512i, z2: __m512i, z3: __m512i) -> [__m512i; 4] {
    let (t0, t1) = (_mm512_unpacklo_epi32(z0, z1), _mm512_unpackhi_epi32(z0, z1));
    let (t2, t3) = (_mm512_unpacklo_epi32(z2, z3), _mm512_unpackhi_epi32(z2, z3));
    [
        _mm512_unpacklo_epi64(t0, t2),
        _mm512_unpackhi_epi64(t0, t2),
        _mm512_unpacklo_epi64(t1, t3),
        _mm512_unpackhi_epi64(t1, t3),
    ]
}

/// The f32 group scales of groups `g .. g + n` (`n ≤ 4`) of the 16 rows `o[r]`, one
/// vector per group, lane `r` = row `o[r]` (int4-grouped; groups past `n` are 0).
///
/// It must be inlined into the band loop: an out-of-line call there clobbers every zmm
/// register (gs 32 ran at 48 instead of 70 G weights/s). LLVM inlines it only while it
/// has one caller, so each band-kernel instance calls its own copy: `D` is the instance's
/// arm, `K` its `SPECIAL`, `V` its `VBMI` (the same for [`scales_ue8_16x16`] and the
/// transposes). The
/// wider groups gather instead ([`gather_scales16`]).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn scales_f32_16x4<D: Dot, const K: bool, const V: bool>(
    s: &[f32],
    o: &[usize; 16],
    ng: usize,
    g: usize,
    n: usize,
) -> [__m512; 4] {
    let t = if n == 4 {
        // SAFETY: each slice holds the 4 scales (16 bytes) read.
        unsafe {
            transpose16x4_full::<D, K, V>(|r: usize| {
                s[o[r] * ng + g..o[r] * ng + g + 4].as_ptr().cast()
            })
        }
    } else {
        let mk = mask16(n);
        transpose16x4::<D, K, V>(|r: usize| {
            let sr = &s[o[r] * ng + g..o[r] * ng + g + n];
            // SAFETY: the masked load reads the n < 4 scales of sr only.
            _mm512_castsi512_si128(unsafe { _mm512_maskz_loadu_epi32(mk, sr.as_ptr().cast()) })
        })
    };
    t.map(|v| _mm512_castsi512_ps(v))
}

/// The f32 scales `s[base[r] + g]` of the 16 rows of a band, lane `r` (two AVX2
/// `vgatherdps`, which Miri implements; all indices are below `2^31`).
///
/// # Safety
/// Every `base[r] + g` indexes `s` (and fits in i32).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn gather_scales16(s: &[f32], base: &[i32; 16], g: usize) -> __m512 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    let gv = _mm256_set1_epi32(g as i32);
    // SAFETY: base holds 16 i32 (two 32-byte loads); the gathered indices are in s.
    unsafe {
        let i0 = _mm256_add_epi32(_mm256_loadu_si256(base.as_ptr().cast()), gv);
        let i1 = _mm256_add_epi32(_mm256_loadu_si256(base.as_ptr().add(8).cast()), gv);
        let lo = _mm256_i32gather_ps::<4>(s.as_ptr(), i0);
        let hi = _mm256_i32gather_ps::<4>(s.as_ptr(), i1);
        let v = _mm512_castps256_ps512(lo);
        _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castps_pd(v), _mm256_castps_pd(hi)))
    }
}

/// The UE8M0 bytes of groups `g .. g + n` (`n ≤ 16`) of the 16 rows `o[r]`, for four
/// blocks: result `k` holds in lane `r` the bytes of groups `g + 4k .. g + 4k + 4` of
/// row `o[r]`, group `g + 4k + q` in byte `q` (0 past `n`). `K`: one copy per
/// band-kernel instance (see [`scales_f32_16x4`]).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn scales_ue8_16x16<D: Dot, const K: bool, const V: bool>(
    e: &[u8],
    o: &[usize; 16],
    ng: usize,
    g: usize,
    n: usize,
) -> [__m512i; 4] {
    if n == 16 {
        // SAFETY: each slice holds the 16 bytes read.
        unsafe {
            transpose16x4_full::<D, K, V>(|r: usize| e[o[r] * ng + g..o[r] * ng + g + 16].as_ptr())
        }
    } else {
        let mk = mask64(n);
        transpose16x4::<D, K, V>(|r: usize| {
            let er = &e[o[r] * ng + g..o[r] * ng + g + n];
            // SAFETY: the masked load reads the n < 16 bytes of er only.
            _mm512_castsi512_si128(unsafe { _mm512_maskz_loadu_epi8(mk, er.as_ptr().cast()) })
        })
    }
}

/// `2^(e − 127)` as f32 for the byte `q` of every lane of `v` (`e = 0` → `+0.0`;
/// `e ≤ 254`: a normal f32, never subnormal): the byte shifted into the exponent field.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn ue8_pow2(v: __m512i, q: usize) -> __m512 {
    let sh = match q {
        0 => _mm512_slli_epi32::<23>(v),
        1 => _mm512_slli_epi32::<15>(v),
        2 => _mm512_slli_epi32::<7>(v),
        _ => _mm512_srli_epi32::<1>(v),
    };
    _mm512_castsi512_ps(_mm512_and_si512(sh, _mm512_set1_epi32(0x7F80_0000)))
}

/// Whether rows of `m` lie a multiple of 4 KiB apart: the band kernel's 16 loads of a block then
/// fall into one L1 set (8 ways), and [`Dot::q8_g32_rows16`] first
/// copies the band's rows, [`RB`] blocks at a time, into a [`BandBuf`] (avx512-vnni, mxfp4 q8, 64 ×
/// 8192: 33 → 45 G weights/s; int4-grouped `gs = 32` 33 → 49).
pub(in crate::arch::x86_64) fn restrides(m: &Matrix<'_>) -> bool {
    m.row_bytes(0).len().is_multiple_of(4096)
}

/// [`RB`] 64-byte blocks of each of the 16 rows of a band, cache-line aligned.
#[repr(C, align(64))]
pub(super) struct BandBuf([[u8; 64 * RB]; 16]);

/// Blocks per row in a [`BandBuf`].
pub(super) const RB: usize = 8;

/// The body of [`Dot::q8_g32_rows16`] and
/// [`Dot::q8_mx_rows16_vbmi`] (`VBMI`: the lookups by `vpermb`),
/// inlined into each: every instance has one caller, and so do the scale helpers it calls, whose
/// copies are told apart by `<SPECIAL, VBMI>`.
///
/// # Safety
/// Features available (VBMI too when `VBMI`); shapes as asserted by
/// [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn band_body<
    D: Dot,
    const MX: bool,
    const WIDE: bool,
    const SPECIAL: bool,
    const VBMI: bool,
>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let (ni, nr, ngs) = (m.i(), rows.len(), m.groups_per_row());
        // 32-column subgroups per row and per group (mxfp4: 1, groups are 32 columns).
        let (nsub, per) = (ni.div_ceil(32), m.group_len() / 32);
        if nr == 0 || ni == 0 {
            for v in &mut y[..nr * xq.s()] {
                *v = 0.0; // no groups: acc = 0, y = 0 · sx = 0 (sx finite, ≥ 0)
            }
            return;
        }
        // the table holds 16 bytes.
        let lut = _mm512_broadcast_i32x4(_mm_loadu_si128(MX_OFF.as_ptr().cast()));
        let off = _mm512_set1_epi8(if MX { 12 } else { 8 });
        let low = _mm512_set1_epi8(0x0F);
        let mut xbuf = [0i8; QC];
        let mut cbuf = [_mm512_setzero_si512(); QC / 128];
        let stream = SPECIAL && streams(m);
        let restride = SPECIAL && restrides(m);
        let mut wbuf = BandBuf([[0u8; 64 * RB]; 16]);
        for si in 0..xq.s() {
            let (q, sx) = xq.row(si);
            let ys = &mut y[si * nr..(si + 1) * nr];
            let mut c0 = 0;
            while c0 < ni {
                let cn = (ni - c0).min(QC);
                let nb = cn.div_ceil(128);
                for (b, cb) in cbuf[..nb].iter_mut().enumerate() {
                    let col = c0 + 128 * b;
                    let rem = ni - col;
                    // the masked loads read the min(rem, 128) codes at col only;
                    // the stores write xbuf[128b .. 128b + 128] (b < QC / 128).
                    {
                        let x0 = _mm512_maskz_loadu_epi8(mask64(rem), q.as_ptr().add(col));
                        let x1 = _mm512_maskz_loadu_epi8(
                            mask64(rem.saturating_sub(64)),
                            q.as_ptr().add(col + 64.min(rem)),
                        );
                        let (xe, xo) = split_even_odd(x0, x1);
                        _mm512_storeu_si512(xbuf.as_mut_ptr().add(128 * b).cast(), xe);
                        _mm512_storeu_si512(xbuf.as_mut_ptr().add(128 * b + 64).cast(), xo);
                        let c = D::dpbusd(D::dpbusd(_mm512_setzero_si512(), off, xe), off, xo);
                        *cb = _mm512_sub_epi32(_mm512_setzero_si512(), c);
                    }
                }
                let (first, last) = (c0 == 0, c0 + cn == ni);
                let mut r0 = 0;
                while r0 < nr {
                    let nv = (nr - r0).min(16);
                    let o: [usize; 16] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                    let rp: [*const u8; 16] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                    // From DRAM: the next band's lines (the next chunk's first band after
                    // the last), one band ahead, into L2 (see `band_prefetch`).
                    let pf =
                        if stream { BandPrefetch::<16>::next(m, &rows, r0, c0, cn) } else { None };
                    let mut acc = if first {
                        _mm512_setzero_ps()
                    } else {
                        // the masked load reads the nv values of this band in ys.
                        _mm512_maskz_loadu_ps(mask16(nv), ys.as_ptr().add(r0))
                    };
                    let mut ue4 = [_mm512_setzero_si512(); 4];
                    // int4-grouped, groups of more than one block: the exact sum of the
                    // current group's blocks so far (chunks start at group boundaries:
                    // QC is a multiple of gs).
                    let mut part = _mm512_setzero_si512();
                    // The band's rows' first scale indices, o[r] · ngs (< s.len() ≤
                    // i32::MAX, checked by the dispatch).
                    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
                    let sbase: [i32; 16] = core::array::from_fn(|r| (o[r] * ngs) as i32);
                    for (b, &cb) in cbuf[..nb].iter().enumerate() {
                        let col = c0 + 128 * b;
                        let rem = ni - col;
                        // xbuf[128b .. 128b + 128] was written above.
                        let (xe, xo) = {
                            (
                                _mm512_loadu_si512(xbuf.as_ptr().add(128 * b).cast()),
                                _mm512_loadu_si512(xbuf.as_ptr().add(128 * b + 64).cast()),
                            )
                        };
                        let wm = mask64(rem.div_ceil(2));
                        if let Some(pf) = &pf {
                            // Hints: never fault, whatever the (wrapping) address.
                            for p in pf.w {
                                _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(64 * b).cast());
                            }
                            if (128 * b) % pf.line_cols == 0 {
                                for p in pf.s {
                                    _mm_prefetch::<_MM_HINT_T1>(
                                        p.wrapping_add(64 * (128 * b / pf.line_cols)).cast(),
                                    );
                                }
                            }
                        }
                        if restride && b % RB == 0 {
                            // The full blocks b .. b + k of every row into wbuf.
                            let k = ((ni - col) / 128).min(RB);
                            for (r, wr) in wbuf.0.iter_mut().enumerate() {
                                for j in 0..k {
                                    // col + 128·k ≤ I: the row's bytes col/2 + 64j
                                    // .. + 64 exist; wr holds RB · 64 bytes (j < k ≤ RB).
                                    let v = _mm512_loadu_si512(rp[r].add(col / 2 + 64 * j).cast());
                                    _mm512_storeu_si512(wr.as_mut_ptr().add(64 * j).cast(), v);
                                }
                            }
                        }
                        let mut a = [_mm512_setzero_si512(); 16];
                        for (r, ar) in a.iter_mut().enumerate() {
                            // the row has ceil(I/2) bytes; a full block reads the
                            // 64 at col/2 (col + 128 ≤ I), or their copy in wbuf (64 at
                            // 64 · (b mod RB)), a partial one the ceil(rem/2) holding
                            // columns col..I (masked).
                            let w = {
                                if restride && rem >= 128 {
                                    _mm512_loadu_si512(wbuf.0[r].as_ptr().add(64 * (b % RB)).cast())
                                } else if rem >= 128 {
                                    _mm512_loadu_si512(rp[r].add(col / 2).cast())
                                } else {
                                    _mm512_maskz_loadu_epi8(wm, rp[r].add(col / 2).cast())
                                }
                            };
                            let (ue, uo) = if MX && VBMI {
                                // vpermb reads index bits 0–5 and `lut` repeats the table
                                // in every 16 bytes: only the nibble's 4 bits matter.
                                // VBMI is available (the caller's contract).
                                {
                                    (
                                        _mm512_permutexvar_epi8(w, lut),
                                        _mm512_permutexvar_epi8(_mm512_srli_epi16::<4>(w), lut),
                                    )
                                }
                            } else {
                                let lo = _mm512_and_si512(w, low);
                                let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(w), low);
                                if MX {
                                    (_mm512_shuffle_epi8(lut, lo), _mm512_shuffle_epi8(lut, hi))
                                } else {
                                    (lo, hi)
                                }
                            };
                            *ar = D::dpbusd(D::dpbusd(cb, ue, xe), uo, xo);
                        }
                        let d = reduce16x4(a);
                        let g = (c0 + 128 * b) / 32;
                        let n = (nsub - g).min(4);
                        match m.scales() {
                            Scales::Ue8m0(e) if MX => {
                                if b % 4 == 0 {
                                    ue4 = scales_ue8_16x16::<D, SPECIAL, VBMI>(
                                        e,
                                        &o,
                                        ngs,
                                        g,
                                        (ngs - g).min(16),
                                    );
                                }
                                let v = ue4[b % 4];
                                let half = _mm512_set1_ps(0.5);
                                for (qi, dq) in d.iter().enumerate().take(n) {
                                    let df = _mm512_mul_ps(_mm512_cvtepi32_ps(*dq), half);
                                    acc = _mm512_add_ps(acc, _mm512_mul_ps(df, ue8_pow2(v, qi)));
                                }
                            }
                            Scales::F32(s) if !MX => {
                                // g: the block's first 32-column subgroup, n of them here
                                // (past them d is 0: codes and activations are 0 there).
                                if !WIDE {
                                    // gs = 32: four groups per block.
                                    let sc = scales_f32_16x4::<D, SPECIAL, VBMI>(s, &o, ngs, g, n);
                                    for (dq, sq) in d.iter().zip(&sc).take(n) {
                                        let p = _mm512_mul_ps(_mm512_cvtepi32_ps(*dq), *sq);
                                        acc = _mm512_add_ps(acc, p);
                                    }
                                } else {
                                    // The block's complete groups: the first, how many and
                                    // their exact sums (one call site for the scale fetch,
                                    // so that it stays inlined).
                                    let z = _mm512_setzero_si512();
                                    let d01 = _mm512_add_epi32(d[0], d[1]);
                                    let d23 = _mm512_add_epi32(d[2], d[3]);
                                    let (gi, cnt, dg) = if per == 2 {
                                        // gs = 64: two groups per block.
                                        (g / 2, n.div_ceil(2), [d01, d23])
                                    } else {
                                        // gs = 128 · 2^k: a group closes after per / 4
                                        // blocks, or at the row's end.
                                        part = _mm512_add_epi32(part, _mm512_add_epi32(d01, d23));
                                        let closes = (g + 4) & (per - 1) == 0 || g + n == nsub;
                                        (g >> per.trailing_zeros(), usize::from(closes), [part, z])
                                    };
                                    for (k, dq) in dg.iter().enumerate().take(cnt) {
                                        // lane r reads s[o[r]·ngs + gi + k], a
                                        // scale of row o[r] (gi + k < ngs).
                                        let sc = gather_scales16(s, &sbase, gi + k);
                                        let p = _mm512_mul_ps(_mm512_cvtepi32_ps(*dq), sc);
                                        acc = _mm512_add_ps(acc, p);
                                        part = z;
                                    }
                                }
                            }
                            _ => unreachable!("scale kind checked by Matrix::new"),
                        }
                    }
                    if last {
                        acc = _mm512_mul_ps(acc, _mm512_set1_ps(sx));
                    }
                    // the masked store writes the nv values of this band in ys.
                    _mm512_mask_storeu_ps(ys.as_mut_ptr().add(r0), mask16(nv), acc);
                    r0 += 16;
                }
                c0 += cn;
            }
        }
    }
}
