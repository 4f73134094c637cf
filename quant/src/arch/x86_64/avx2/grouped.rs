//! int4-grouped and mxfp4 (and the fused f32 path of int4-row): the fused f32 row kernels
//! ([`f32_fused`]), the f32 band kernel of one activation row ([`f32_nib_band8`]) and the
//! int8-path band kernel with one output row per lane ([`q8_band8`]).

use core::arch::x86_64::*;
use core::ops::Range;

use super::batched::f32_multi_passes;
use super::int4_int8_f32::{
    EO_MAX, f32_bands8, f32_int4_band8, int4_split_block, split_all, split_even_odd_ps,
};
use super::reduce::{hsum_ps, nibbles, pack_sum, split_even_odd, sums4_half_ps, sums8_halves_ps};
use super::rows::scale_f32;
use super::small_ints::small_row_f32;
use super::{Dot, MX_LUT, MX_OFF, QC};
use crate::arch::x86_64::BandPrefetch;
use crate::format::Format;
use crate::kernels::{Matrix, QuantizedActs, Scales};

/// One 32-column block of a nibble row as 4 × 8 f32 values (`nib − 8`, or `±2·e2m1`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn nibble_block_f32(v: __m128i, mx: bool, lut: __m128i) -> [__m256; 4] {
    let (a, c) = nibbles(v);
    let (a, c) = if mx {
        (_mm_shuffle_epi8(lut, a), _mm_shuffle_epi8(lut, c))
    } else {
        let eight = _mm_set1_epi8(8);
        (_mm_sub_epi8(a, eight), _mm_sub_epi8(c, eight))
    };
    let f = |t: __m128i| _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(t));
    [f(a), f(_mm_srli_si128::<8>(a)), f(c), f(_mm_srli_si128::<8>(c))]
}

/// The fused f32-activation row kernel shared by the nibble formats and int2 / int3, for
/// `T` activation rows sharing each weight decode: per block of `8·V` columns (`V`
/// vectors of 8) `block(col)` decodes the weights to f32 in registers, then `V` FMAs per
/// activation row into independent chains (four for one row and 64-column blocks — an
/// int3 group is then two dependent FMAs deep — else two: registers); the group's
/// partial sum is scaled at each group end (`acc = fma(part, scale, acc)`); the columns
/// past a group's last full block are summed on the side with `value(c)`. Returns `y`
/// for the `T` rows.
///
/// # Safety
/// The arm's features available; every `xs[k]` points at `I` values; every group of
/// `m` starts on a block (`gs` a multiple of `8·V`).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn grouped_row_f32<const T: usize, const V: usize>(
    m: &Matrix<'_>,
    o: usize,
    xs: [*const f32; T],
    block: impl Fn(usize) -> [__m256; V],
    value: impl Fn(usize) -> f32,
) -> [f32; T] {
    let (ni, gl) = (m.i(), m.group_len());
    let chains = if T == 1 && V == 8 { 4 } else { 2 };
    let mut acc = [_mm256_setzero_ps(); T];
    let mut tail_acc = [0f32; T];
    for g in 0..m.groups_per_row() {
        let (c0, c1) = (g * gl, ((g + 1) * gl).min(ni));
        let nfull = (c1 - c0) / (8 * V);
        let mut p = [[_mm256_setzero_ps(); 4]; T];
        for b in 0..nfull {
            let col = c0 + 8 * V * b;
            // col + 8·V ≤ I: the block is within the row.
            let w = block(col);
            for k in 0..T {
                // SAFETY: col + 8·V ≤ I values of xs[k].
                unsafe {
                    let xp = xs[k].add(col);
                    for (h, wh) in w.iter().enumerate() {
                        let q = &mut p[k][h % chains];
                        *q = _mm256_fmadd_ps(*wh, _mm256_loadu_ps(xp.add(8 * h)), *q);
                    }
                }
            }
        }
        let sc = scale_f32(m, o, g);
        let scv = _mm256_set1_ps(sc);
        for k in 0..T {
            let mut tail = 0.0f32;
            for c in c0 + 8 * V * nfull..c1 {
                // SAFETY: c < I.
                tail += value(c) * unsafe { *xs[k].add(c) };
            }
            let [q0, q1, q2, q3] = p[k];
            let part = if chains == 4 {
                _mm256_add_ps(_mm256_add_ps(q0, q1), _mm256_add_ps(q2, q3))
            } else {
                _mm256_add_ps(q0, q1)
            };
            acc[k] = _mm256_fmadd_ps(part, scv, acc[k]);
            tail_acc[k] += tail * sc;
        }
    }
    let mut out = [0f32; T];
    for k in 0..T {
        out[k] = hsum_ps(acc[k]) + tail_acc[k];
    }
    out
}

/// [`grouped_row_f32`] for int4-row, int4-grouped (`gs` a multiple of 32) and mxfp4:
/// 32-column blocks of 16 nibble bytes ([`nibble_block_f32`]).
///
/// # Safety
/// The arm's features available; every `xs[k]` points at `I` values.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn nibble_row_f32<const T: usize>(
    m: &Matrix<'_>,
    o: usize,
    xs: [*const f32; T],
) -> [f32; T] {
    let row = m.row_bytes(o);
    let mx = m.format() == Format::Mxfp4;
    // SAFETY: MX_LUT has 16 bytes.
    let lut = unsafe { _mm_loadu_si128(MX_LUT.as_ptr().cast()) };
    let block = |col: usize| {
        // SAFETY: col + 32 ≤ I, so the 16 bytes at col/2 are within the row.
        let v = unsafe { _mm_loadu_si128(row.as_ptr().add(col / 2).cast()) };
        nibble_block_f32(v, mx, lut)
    };
    let value = |c: usize| {
        let nib = (row[c / 2] >> (4 * (c % 2))) & 0xF;
        #[allow(clippy::cast_possible_wrap)] // nibble < 16
        let v = if mx { MX_LUT[usize::from(nib)] } else { nib as i8 - 8 };
        f32::from(v)
    };
    // SAFETY: the caller's contract; groups are multiples of 32 columns.
    unsafe { grouped_row_f32::<T, 4>(m, o, xs, block, value) }
}

/// The fused f32 path ([`nibble_row_f32`], [`small_row_f32`]) over `rows`, activation rows 4, 2 or
/// 1 at a time.
///
/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_f32_rows`](crate::arch::x86_64::matmul_f32_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_fused(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    let (ni, nr) = (m.i(), rows.len());
    let small = matches!(m.format(), Format::Int2Row | Format::Int3G64);
    let mut s0 = 0;
    if matches!(m.format(), Format::Int4Grouped | Format::Mxfp4) {
        // SAFETY: same contract. Activation rows 0..n done (n = 0 where the passes do
        // not apply: S = 1, or gs not dividing 512).
        s0 = unsafe { f32_multi_passes(m, x, s, rows.clone(), y) };
    }
    while s0 < s {
        let st = if s - s0 >= 4 {
            4
        } else if s - s0 >= 2 {
            2
        } else {
            1
        };
        if m.format() == Format::Int4Row {
            // SAFETY: same contract.
            let n = unsafe { f32_multi_passes(m, x, s, rows.clone(), y) };
            if n < s {
                let (xs, ys) = (&x[n * ni..(n + 1) * ni], &mut y[n * nr..(n + 1) * nr]);
                // SAFETY: same contract, activation row n.
                unsafe { f32_int4_band8(m, xs, rows.clone(), ys) };
            }
            return;
        }
        let band = match m.format() {
            Format::Mxfp4 => Some(true),
            Format::Int4Grouped => Some(false),
            _ => None,
        };
        if let (1, Some(mx)) = (st, band) {
            let (xs, ys) = (&x[s0 * ni..(s0 + 1) * ni], &mut y[s0 * nr..(s0 + 1) * nr]);
            // SAFETY: same contract, activation row s0; int4-grouped reaches here with
            // gs % 32 == 0.
            unsafe {
                if mx {
                    f32_nib_band8::<true>(m, xs, rows.clone(), ys);
                } else {
                    f32_nib_band8::<false>(m, xs, rows.clone(), ys);
                }
            }
            s0 += 1;
            continue;
        }
        let xp = |k: usize| x[(s0 + k) * ni..].as_ptr();
        for (r, o) in rows.clone().enumerate() {
            // SAFETY: each pointer addresses the I values of activation row s0 + k.
            let v: [f32; 4] = unsafe {
                match st {
                    4 if small => small_row_f32::<4>(m, o, [xp(0), xp(1), xp(2), xp(3)]),
                    4 => nibble_row_f32::<4>(m, o, [xp(0), xp(1), xp(2), xp(3)]),
                    2 => {
                        let v = if small {
                            small_row_f32::<2>(m, o, [xp(0), xp(1)])
                        } else {
                            nibble_row_f32::<2>(m, o, [xp(0), xp(1)])
                        };
                        [v[0], v[1], 0.0, 0.0]
                    }
                    _ if small => [small_row_f32::<1>(m, o, [xp(0)])[0], 0.0, 0.0, 0.0],
                    _ => [nibble_row_f32::<1>(m, o, [xp(0)])[0], 0.0, 0.0, 0.0],
                }
            };
            for k in 0..st {
                y[(s0 + k) * nr + r] = v[k];
            }
        }
        s0 += st;
    }
}

/// One 32-column block of 4 int4-grouped or mxfp4 (`MX`) weight rows (16 bytes at `w[r]`) into the
/// rows' group sums `part`: mxfp4 by [`nibble_block_f32`] and 4 FMAs against the 32 activations at
/// `xb`; int4-grouped by [`int4_split_block`] against the block's split activations (at `split`
/// when given, else split from `xb`).
///
/// # Safety
/// The arm's features available; 16 bytes at every `w[r]`, 32 values at `xb` and at `split` when
/// given.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn nib_block4<const MX: bool>(
    part: &mut [__m256; 4],
    w: [*const u8; 4],
    xb: *const f32,
    split: Option<*const f32>,
    lut: __m128i,
) {
    // SAFETY: the caller's contract.
    unsafe {
        if MX {
            let xv: [__m256; 4] = core::array::from_fn(|q| _mm256_loadu_ps(xb.add(8 * q)));
            for (r, pr) in part.iter_mut().enumerate() {
                let d = nibble_block_f32(_mm_loadu_si128(w[r].cast()), MX, lut);
                for q in 0..4 {
                    *pr = _mm256_fmadd_ps(d[q], xv[q], *pr);
                }
            }
        } else {
            let xv = match split {
                Some(p) => core::array::from_fn(|k| _mm256_loadu_ps(p.add(8 * k))),
                None => split_even_odd_ps(xb),
            };
            int4_split_block(part, w, xv);
        }
    }
}

/// The end of group `g` of 4 int4-grouped or mxfp4 (`MX`) rows: `acc[r] = fma(part[r],
/// scale, acc[r])`, row `r`'s scales at `sc[r]` (`f32`, or UE8M0 bytes for `MX`, as
/// `2^(e − 128)` for the doubled codes).
///
/// # Safety
/// A scale of group `g` at every `sc[r]` (the one of the format's kind).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn nib_group_end<const MX: bool>(
    acc: &mut [__m256; 4],
    part: [__m256; 4],
    sc: &[(*const f32, *const u8); 4],
    g: usize,
) {
    for (r, (a, pr)) in acc.iter_mut().zip(part).enumerate() {
        // SAFETY: the caller's contract.
        let s = unsafe {
            if MX { crate::arch::UE8M0_HALF[usize::from(*sc[r].1.add(g))] } else { *sc[r].0.add(g) }
        };
        *a = _mm256_fmadd_ps(pr, _mm256_set1_ps(s), *a);
    }
}

/// The groups `0 .. groups` of `bpg` full 32-column blocks of 4 int4-grouped or mxfp4
/// (`MX`) weight rows (bytes at `w[r]`) against the activations at `x` (their split,
/// block by block, at `split` when given): [`nib_block4`] per block,
/// [`nib_group_end`] per group. Pointers advance by the block, so the loop keeps no
/// per-block index arithmetic or bounds checks.
///
/// # Safety
/// The arm's features available; `16 · bpg · groups` bytes at every `w[r]`, `32 · bpg ·
/// groups` values at `x` (and at `split` when given), `groups` scales at every `sc[r]`
/// (the one of the format's kind).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn nib_rows4_sweep<const MX: bool>(
    w: [*const u8; 4],
    x: *const f32,
    split: Option<*const f32>,
    groups: usize,
    bpg: usize,
    sc: &[(*const f32, *const u8); 4],
    lut: __m128i,
) -> [__m256; 4] {
    let mut acc = [_mm256_setzero_ps(); 4];
    let (mut w, mut xb, mut xe) = (w, x, split);
    for g in 0..groups {
        let mut part = [_mm256_setzero_ps(); 4];
        for _ in 0..bpg {
            // SAFETY: one full block at w[r], xb (and xe) (caller).
            unsafe { nib_block4::<MX>(&mut part, w, xb, xe, lut) };
            w = w.map(|p| p.wrapping_add(16));
            xb = xb.wrapping_add(32);
            xe = xe.map(|p| p.wrapping_add(32));
        }
        // SAFETY: group g < groups has a scale at every sc[r] (caller).
        unsafe { nib_group_end::<MX>(&mut acc, part, sc, g) };
    }
    acc
}

/// Fused f32-activation kernel for int4-grouped (`gs` a multiple of 32) and mxfp4 (`MX`) with
/// **one** activation row `x` (the GEMV case; batches of 2 and more share each decode in
/// [`nibble_row_f32`], faster from `S = 4` on Zen 2 (the `kernels` bench)): weight rows in bands of
/// 8 (a final, shorter band repeats its last row and stores only its own), each half band (4 rows)
/// over the whole row before the other, so that its 4 group sums and 4 accumulators stay in
/// registers (8 of each spilled; mxfp4, Zen 2, 512 × 1024: 6.75 → 7.75 G weights/s; int4-grouped
/// unchanged at 10.6; the same sums in the same order), its groups of full blocks in one
/// [`nib_rows4_sweep`] (no per-block index arithmetic: mxfp4 7.75 → 8.9, int4-grouped gs 32 10.6 →
/// 13.6). Per 32-column block the 32 activations are loaded once for the half band; a row's 16
/// bytes are split into column-order codes (`±2·e2m1` by `vpshufb`), widened and converted exactly
/// ([`nibble_block_f32`]), then 4 FMAs into the row's group sum — int4-grouped instead decodes in
/// byte order against the activations split into even and odd columns, as [`f32_int4_band8`]
/// ([`int4_split_block`]; Zen 2, gs 32, 512 × 1024: 7.0 → 10.8 G weights/s, 4096 × 14336: 6.3 →
/// 9.3); at each group end `acc = fma(part, scale, acc)` per row with the row's group scale
/// broadcast (mxfp4: `2^(e − 128)`, for the doubled codes). The partial last block runs on
/// zero-padded copies (padding codes meet zero activations). Per row: `Σ acc` (one `vhaddps` tree
/// for the band): within the f32 tolerance (module doc). Before it (the row kernel
/// [`nibble_row_f32`], whose per-group bookkeeping ran once per 32 weights) these formats ran at
/// 2.1 (gs 32) and 3.9 (mxfp4) G weights/s in L2 on Zen 2 (the `kernels` bench).
///
/// # Safety
/// The arm's features available; `m` is int4-grouped with `gs % 32 == 0` or mxfp4, `x.len() == I`,
/// `y.len() == rows.len()`, `rows.end ≤ O`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_nib_band8<const MX: bool>(
    m: &Matrix<'_>,
    x: &[f32],
    rows: Range<usize>,
    y: &mut [f32],
) {
    let (ni, gl) = (m.i(), m.group_len());
    let (blocks, bpg) = (ni / 32, gl / 32);
    let tn = ni - 32 * blocks;
    let all = blocks + usize::from(tn > 0);
    // SAFETY: MX_LUT has 16 bytes.
    let lut = unsafe { _mm_loadu_si128(MX_LUT.as_ptr().cast()) };
    let (sf, se): (&[f32], &[u8]) = match m.scales() {
        Scales::F32(v) => (v, &[]),
        Scales::Ue8m0(e) => (&[], e),
        Scales::None => (&[], &[]),
    };
    let mut xt = [0f32; 32];
    xt[..tn].copy_from_slice(&x[32 * blocks..ni]);
    // int4-grouped: the byte-order decode of f32_int4_band8, on the activations split
    // once per call where they fit.
    let whole = !MX && ni <= EO_MAX;
    let mut xeo = [const { core::mem::MaybeUninit::<f32>::uninit() }; EO_MAX + 32];
    let xep = xeo.as_mut_ptr().cast::<f32>();
    if whole {
        // SAFETY: xeo holds EO_MAX + 32 ≥ 32 · ceil(I / 32) values.
        unsafe { split_all(&x[..ni], &xt, xep) };
    }
    let xep = xep.cast_const(); // 32 values per block written when `whole`
    let band = |o: &[usize; 8], rp: &[*const u8; 8], wt: &[[u8; 16]; 8]| {
        // Each half band (4 rows) over the whole row: 4 group sums and 4 accumulators
        // stay in registers (8 of each spilled).
        let halves = if o[4] == o[3] { 1 } else { 2 }; // ≤ 4 rows: row 3 repeated
        let mut res = [_mm256_setzero_ps(); 2];
        for (h, rh) in res.iter_mut().enumerate().take(halves) {
            // Group g's scale of row o[4h + r] is at sb[r] + g.
            let sb: [usize; 4] = core::array::from_fn(|r| m.scale_index(o[4 * h + r], 0));
            // The groups of full blocks in one sweep, the rest (a group holding the
            // padded last block) below.
            let gfull = blocks / bpg;
            let w0 = core::array::from_fn(|r| rp[4 * h + r]);
            let sc = core::array::from_fn(|r| {
                if MX {
                    (core::ptr::null(), se[sb[r]..].as_ptr())
                } else {
                    (sf[sb[r]..].as_ptr(), core::ptr::null())
                }
            });
            let split = whole.then_some(xep); // block b's split at 32·b
            // SAFETY: gfull · bpg ≤ blocks full blocks of every row and of x (and of
            // its split in xeo when `whole`); gfull ≤ groups scales of every row.
            let mut acc =
                unsafe { nib_rows4_sweep::<MX>(w0, x.as_ptr(), split, gfull, bpg, &sc, lut) };
            for g in gfull..m.groups_per_row() {
                let mut part = [_mm256_setzero_ps(); 4];
                for b in g * bpg..((g + 1) * bpg).min(all) {
                    // SAFETY: b < blocks: 32 activations at 32·b (their split at 32·b
                    // of xeo when `whole`) and 16 bytes at 16·b of every row; else the
                    // 32- and 16-long padded copies.
                    unsafe {
                        if b < blocks {
                            let w = core::array::from_fn(|r| rp[4 * h + r].add(16 * b));
                            let xs = split.map(|p| p.add(32 * b));
                            nib_block4::<MX>(&mut part, w, x.as_ptr().add(32 * b), xs, lut);
                        } else {
                            let w = core::array::from_fn(|r| wt[4 * h + r].as_ptr());
                            nib_block4::<MX>(&mut part, w, xt.as_ptr(), None, lut);
                        }
                    }
                }
                // SAFETY: g < groups: a scale of group g at every sc[r].
                unsafe { nib_group_end::<MX>(&mut acc, part, &sc, g) };
            }
            *rh = sums4_half_ps(acc);
        }
        // Per row the same sums, in the same order, as one vhaddps tree over 8.
        sums8_halves_ps(res)
    };
    // SAFETY: same contract; a row has 16·blocks + 16 bytes at most.
    unsafe { f32_bands8::<16>(m, rows, 16 * blocks, y, band) };
}

/// A 8 × 4 transpose of dwords: `row(r)` gives 4 dwords of row `r`; result `k` has
/// dword `k` of row `r` in lane `r` (rows `r` and `r + 4` joined by `vinserti128`, then
/// `vpunpck{l,h}{dq,qdq}` within the 128-bit halves).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn transpose8x4(row: impl Fn(usize) -> __m128i) -> [__m256i; 4] {
    let z = |j: usize| _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(row(j)), row(j + 4));
    let (z0, z1, z2, z3) = (z(0), z(1), z(2), z(3));
    let (t0, t1) = (_mm256_unpacklo_epi32(z0, z1), _mm256_unpackhi_epi32(z0, z1));
    let (t2, t3) = (_mm256_unpacklo_epi32(z2, z3), _mm256_unpackhi_epi32(z2, z3));
    [
        _mm256_unpacklo_epi64(t0, t2),
        _mm256_unpackhi_epi64(t0, t2),
        _mm256_unpacklo_epi64(t1, t3),
        _mm256_unpackhi_epi64(t1, t3),
    ]
}

/// Row `o`'s 16 bytes from `v[o · ng + g]` as one vector (`n = min(16, ng − g)` of
/// them, zeros past `n`): 4-byte UE8M0 scales of 4 groups per dword.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn row16(v: &[u8], o: usize, ng: usize, g: usize) -> __m128i {
    let n = (ng - g).min(16);
    let src = &v[o * ng + g..o * ng + g + n];
    if n == 16 {
        // SAFETY: src holds 16 bytes.
        unsafe { _mm_loadu_si128(src.as_ptr().cast()) }
    } else {
        let mut t = [0u8; 16];
        t[..n].copy_from_slice(src);
        // SAFETY: t holds 16 bytes.
        unsafe { _mm_loadu_si128(t.as_ptr().cast()) }
    }
}

/// The f32 scales of groups `g .. g + 4` of the 8 rows `o[r]` (0 past the row's last
/// group), one vector per group, lane `r` = row `o[r]` (by [`transpose8x4`]). `D`, the arm,
/// only tells the copies apart: each is then called by one arm's band kernels, as when it
/// was inlined into them.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn scales4<D: Dot>(sf: &[f32], o: &[usize; 8], ngs: usize, g: usize) -> [__m256i; 4] {
    transpose8x4(|r| {
        let k = (ngs - g).min(4);
        let s = &sf[o[r] * ngs + g..o[r] * ngs + g + k];
        if k == 4 {
            // SAFETY: s holds 4 f32.
            return unsafe { _mm_loadu_si128(s.as_ptr().cast()) };
        }
        let mut t = [0f32; 4];
        t[..k].copy_from_slice(s);
        // SAFETY: t holds 4 f32.
        unsafe { _mm_loadu_si128(t.as_ptr().cast()) }
    })
}

/// The exact i32 block sums of one row: `cb + Σ (code + offset) · x` over the block's
/// 64 columns, lane `k` = columns `8k .. 8k + 8` (so lanes 0..4 = the first 32-column
/// subgroup, 4..8 the second), from the row's 32 bytes of the block at `p`.
///
/// # Safety
/// The arm's features available; `p` valid for reads of 32 bytes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn row_block<D: Dot, const MX: bool>(
    p: *const u8,
    cb: __m256i,
    xe: __m256i,
    xo: __m256i,
    low: __m256i,
    lut: __m256i,
) -> __m256i {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        // 32 bytes at p (the caller's contract).
        let w = _mm256_loadu_si256(p.cast());
        let lo = _mm256_and_si256(w, low);
        let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(w), low);
        let (ue, uo) = if MX {
            (_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi))
        } else {
            (lo, hi)
        };
        D::dpbusd2(cb, ue, xe, uo, xo)
    }
}

/// int8-activation kernel for nibble groups of 32 columns (mxfp4 when `MX`, int4-grouped `gs = 32`)
/// or of a multiple of 32 dividing [`QC`] (int4-grouped, `WIDE`: 64, 128, …, 16384) with **one
/// output row per i32 lane**: bands of 8 rows share each activation load, and the reference's
/// epilogue (`acc = acc + (d as f32) · scale`, groups in order, then `acc · sx`) runs as 8-lane
/// vector operations, each lane performing exactly the reference's f32 operations for its row:
/// bit-identical.
///
/// Per 64-column block: the activation codes are split once per chunk into even and odd columns
/// ([`split_even_odd`]), matching the low and high nibbles of the 32 weight bytes of each row; a
/// row's block is then one load, `& 0x0F`, `≫ 4 & 0x0F`, (mxfp4: two `vpshufb` to `code + 12`) and
/// one `dpbusd2` ([`row_block`]). The unsigned operands are the code plus an offset (`nib ≤ 15`;
/// `code + 12 ≤ 24`: within `dpbusd2`'s bound `u ≤ 64`, so both arms are exact), and the
/// accumulator starts at `−offset · Σx` over the same lane's columns, so every i32 lane ends at `Σ
/// code · x` over 8 columns of one subgroup (|·| ≤ 8 · 12 · 127 = 12 192). Two `vpackssdw` +
/// `vpmaddwd(·, 1)` levels ([`pack_sum`]; exact: lanes and their pair sums fit in i16) and two
/// `vperm2i128` give per subgroup one vector with row `r`'s exact sum in lane `r`.
///
/// Epilogue per group: int4: `p = (d as f32) · s` (one `vmulps`, as the reference; the `gs = 32`
/// scales of 4 groups come by one 8 × 4 transpose, [`transpose8x4`]); mxfp4: `p = ((d as f32) ·
/// 0.5) · 2^(e−127)`, where `(d as f32) · 0.5` is exact (`|d| < 2¹⁶`), so `p` is the single
/// rounding of `d · 2^(e−128)`: the reference's `(d as f32) · ue8m0_half(e)`, for every `e` (`e =
/// 0`: `±0`, as `d · (+0.0)`; `e = 1`: `2^(e−127)` is normal, so no subnormal operand); the UE8M0
/// bytes of 16 groups come by one transpose, each group's `2^(e−127)` is its byte shifted into the
/// exponent field. Then `acc = acc + p` (`vaddps`; not an FMA, which would skip the product's
/// rounding).
///
/// `WIDE` (int4-grouped, `gs = 32k`, `k ≥ 2`): a group's `d` is the i32 sum of its `k` subgroup
/// sums (both halves of every block in it), added exactly before the epilogue (`|d| ≤ gs · 8 · 127
/// < 2²⁴`); the group closes after `k / 2` blocks or at the row's end; the scales of 4 groups come
/// by one transpose. Groups never span chunks, as `gs` divides `QC`.
///
/// Rows past the range's last one (a final band of fewer than 8) repeat the last row and are not
/// stored. Columns: chunks of [`QC`]; between chunks the 8 accumulators wait in `y` (exact: f32
/// stored as f32). The last, partial block reads its codes from zero-padded copies; the codes past
/// `I` meet zero activations.
///
/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn q8_band8<D: Dot, const MX: bool, const WIDE: bool, const STREAM: bool>(
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
        let (nsub, per) = (ni.div_ceil(32), if MX { 1 } else { m.group_len() / 32 });
        if nr == 0 || ni == 0 {
            for v in &mut y[..nr * xq.s()] {
                *v = 0.0; // no groups: acc = 0, y = 0 · sx = 0 (sx finite, ≥ 0)
            }
            return;
        }
        let (sf, se): (&[f32], &[u8]) = match m.scales() {
            Scales::F32(s) if !MX => (s, &[]),
            Scales::Ue8m0(e) if MX => (&[], e),
            _ => unreachable!("scale kind checked by Matrix::new"),
        };
        // the table holds 16 bytes.
        let lut16 = _mm_loadu_si128(MX_OFF.as_ptr().cast());
        let lut = _mm256_broadcastsi128_si256(lut16);
        let off = _mm256_set1_epi8(if MX { 12 } else { 8 });
        let low = _mm256_set1_epi8(0x0F);
        let z = _mm256_setzero_si256();
        let mut xbuf = [0i8; QC];
        let mut cbuf = [z; QC / 64];
        for si in 0..xq.s() {
            let (q, sx) = xq.row(si);
            let ys = &mut y[si * nr..(si + 1) * nr];
            let mut c0 = 0;
            while c0 < ni {
                let cn = (ni - c0).min(QC);
                let nb = cn.div_ceil(64);
                for (b, cb) in cbuf[..nb].iter_mut().enumerate() {
                    let col = c0 + 64 * b;
                    let mut t = [0i8; 64];
                    let src: &[i8] = if ni - col >= 64 {
                        &q[col..col + 64]
                    } else {
                        t[..ni - col].copy_from_slice(&q[col..]);
                        &t
                    };
                    // src holds 64 codes; the stores write xbuf[64b .. 64b + 64]
                    // (b < nb ≤ QC / 64).
                    {
                        let x0 = _mm256_loadu_si256(src.as_ptr().cast());
                        let x1 = _mm256_loadu_si256(src.as_ptr().add(32).cast());
                        let (xe, xo) = split_even_odd(x0, x1);
                        _mm256_storeu_si256(xbuf.as_mut_ptr().add(64 * b).cast(), xe);
                        _mm256_storeu_si256(xbuf.as_mut_ptr().add(64 * b + 32).cast(), xo);
                        *cb = _mm256_sub_epi32(z, D::dpbusd2(z, off, xe, off, xo));
                    }
                }
                let (first, last) = (c0 == 0, c0 + cn == ni);
                let gc = c0 / 32; // the chunk's first subgroup
                let mut r0 = 0;
                while r0 < nr {
                    let nv = (nr - r0).min(8);
                    let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                    let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                    // From DRAM: the next band's lines, one band ahead, into L2.
                    let pf =
                        if STREAM { BandPrefetch::<8>::next(m, &rows, r0, c0, cn) } else { None };
                    let mut t = [0f32; 8];
                    if !first {
                        t[..nv].copy_from_slice(&ys[r0..r0 + nv]);
                    }
                    // t holds 8 f32.
                    let mut acc = _mm256_loadu_ps(t.as_ptr());
                    // The partial last block's weight bytes, zero-padded (copied here,
                    // not in the block loop: a call there clobbers every ymm register).
                    let mut tails = [[0u8; 32]; 8];
                    let (lcol, lrem) = (c0 + 64 * (nb - 1), ni - c0 - 64 * (nb - 1));
                    if lrem < 64 {
                        let k = lrem.div_ceil(2);
                        for (r, tr) in tails.iter_mut().enumerate() {
                            tr[..k].copy_from_slice(&m.row_bytes(o[r])[lcol / 2..lcol / 2 + k]);
                        }
                    }
                    let tp: [*const u8; 8] = core::array::from_fn(|r| tails[r].as_ptr());
                    // gs = 32: f32 scales of 4 groups, or UE8M0 bytes of 16 groups, one
                    // vector per 4 groups, lane r = row o[r].
                    let (mut sc4, mut g4) = ([z; 4], 0);
                    // WIDE: the exact sums of the current group's blocks so far.
                    let (mut part0, mut part1) = (z, z);
                    for (b, &cb) in cbuf[..nb].iter().enumerate() {
                        let col = c0 + 64 * b;
                        let rem = ni - col;
                        // Row r's 32 bytes of the block: in the row, or (the partial
                        // last block) in its zero-padded copy.
                        let wp = |r: usize| {
                            if rem >= 64 {
                                // col + 64 ≤ I: the 32 bytes at col/2 are in row r.
                                rp[r].add(col / 2)
                            } else {
                                tp[r]
                            }
                        };
                        // xbuf[64b .. 64b + 64] was written above.
                        let (xe, xo) = {
                            (
                                _mm256_loadu_si256(xbuf.as_ptr().add(64 * b).cast()),
                                _mm256_loadu_si256(xbuf.as_ptr().add(64 * b + 32).cast()),
                            )
                        };
                        if let Some(pf) = &pf {
                            // Hints: never fault, whatever the (wrapping) address.
                            if b % 2 == 0 {
                                for p in pf.w {
                                    _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(32 * b).cast());
                                }
                            }
                            if (64 * b) % pf.line_cols == 0 {
                                for p in pf.s {
                                    _mm_prefetch::<_MM_HINT_T1>(
                                        p.wrapping_add(64 * (64 * b / pf.line_cols)).cast(),
                                    );
                                }
                            }
                        }
                        let mut h = [z; 4];
                        for (j, hj) in h.iter_mut().enumerate() {
                            // wp(r) points at 32 readable bytes (above).
                            let (a0, a1) = {
                                (
                                    row_block::<D, MX>(wp(2 * j), cb, xe, xo, low, lut),
                                    row_block::<D, MX>(wp(2 * j + 1), cb, xe, xo, low, lut),
                                )
                            };
                            *hj = pack_sum(a0, a1);
                        }
                        // Half q of f0 (f1): the sums of subgroup q of rows 0..4 (4..8).
                        let (f0, f1) = (pack_sum(h[0], h[1]), pack_sum(h[2], h[3]));
                        let g = gc + 2 * b; // the block's first subgroup
                        let n = (nsub - g).min(2); // its subgroups (past them d is 0)
                        if WIDE {
                            part0 = _mm256_add_epi32(part0, f0);
                            part1 = _mm256_add_epi32(part1, f1);
                            if (g + 2) % per == 0 || g + n == nsub {
                                let d = _mm256_add_epi32(
                                    _mm256_permute2x128_si256::<0x20>(part0, part1),
                                    _mm256_permute2x128_si256::<0x31>(part0, part1),
                                );
                                let gi = g / per;
                                // Scales of 4 groups from g4 (the chunk's first
                                // group, then every fourth).
                                if gi * per == gc || gi - g4 == 4 {
                                    sc4 = scales4::<D>(sf, &o, ngs, gi);
                                    g4 = gi;
                                }
                                let sc = _mm256_castsi256_ps(sc4[gi - g4]);
                                let p = _mm256_mul_ps(_mm256_cvtepi32_ps(d), sc);
                                acc = _mm256_add_ps(acc, p);
                                (part0, part1) = (z, z);
                            }
                        } else {
                            let d = [
                                _mm256_permute2x128_si256::<0x20>(f0, f1),
                                _mm256_permute2x128_si256::<0x31>(f0, f1),
                            ];
                            if MX {
                                if b % 8 == 0 {
                                    sc4 = transpose8x4(|r| row16(se, o[r], ngs, g));
                                }
                                let v = sc4[(b % 8) / 2];
                                // This block's two groups: bytes 0, 1 (b even) or 2, 3.
                                let v = if b % 2 == 0 { v } else { _mm256_srli_epi32::<16>(v) };
                                let e = _mm256_set1_epi32(0x7F80_0000);
                                let pw = [
                                    _mm256_and_si256(_mm256_slli_epi32::<23>(v), e),
                                    _mm256_and_si256(_mm256_slli_epi32::<15>(v), e),
                                ];
                                let half = _mm256_set1_ps(0.5);
                                let p = |k: usize| {
                                    let df = _mm256_mul_ps(_mm256_cvtepi32_ps(d[k]), half);
                                    _mm256_mul_ps(df, _mm256_castsi256_ps(pw[k]))
                                };
                                acc = _mm256_add_ps(acc, p(0));
                                if n == 2 {
                                    acc = _mm256_add_ps(acc, p(1));
                                }
                            } else {
                                if b % 2 == 0 {
                                    sc4 = scales4::<D>(sf, &o, ngs, g);
                                }
                                let (s0, s1) =
                                    if b % 2 == 0 { (sc4[0], sc4[1]) } else { (sc4[2], sc4[3]) };
                                let p = |dk: __m256i, sk: __m256i| {
                                    _mm256_mul_ps(_mm256_cvtepi32_ps(dk), _mm256_castsi256_ps(sk))
                                };
                                acc = _mm256_add_ps(acc, p(d[0], s0));
                                if n == 2 {
                                    acc = _mm256_add_ps(acc, p(d[1], s1));
                                }
                            }
                        }
                    }
                    if last {
                        acc = _mm256_mul_ps(acc, _mm256_set1_ps(sx));
                    }
                    // t holds 8 f32.
                    _mm256_storeu_ps(t.as_mut_ptr(), acc);
                    ys[r0..r0 + nv].copy_from_slice(&t[..nv]);
                    r0 += 8;
                }
                c0 += cn;
            }
        }
    }
}
