//! int4-row and int8-row, f32-activation path: weight rows in bands of 8 against one
//! activation row ([`f32_int4_band8`], [`f32_int8_band8`]).

use core::arch::x86_64::*;
use core::ops::Range;

use super::reduce::sums8_ps;
use crate::arch::x86_64::streams;
use crate::kernels::{Matrix, Scales};

/// The band loop of the one-activation-row f32 band kernels ([`f32_int4_band8`],
/// [`f32_nib_band8`](super::grouped::f32_nib_band8), [`f32_fp8_band8`](super::fp8::f32_fp8_band8)):
/// `rows` in bands of 8 (a final, shorter band repeats its last row and stores only its own);
/// `band(o, rp, wt)` gets the band's row indices, row pointers and each row's bytes from `tail_at`
/// on, zero-padded to `W` (copied here, outside the kernels' block loops), and returns lane `r` =
/// the output of row `o[r]`.
///
/// # Safety
/// The arm's features available; `rows.end ≤ O`, `y.len() == rows.len()`; every row has at most
/// `tail_at + W` bytes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_bands8<const W: usize>(
    m: &Matrix<'_>,
    rows: Range<usize>,
    tail_at: usize,
    y: &mut [f32],
    mut band: impl FnMut(&[usize; 8], &[*const u8; 8], &[[u8; W]; 8]) -> __m256,
) {
    let nr = rows.len();
    let mut wt = [[0u8; W]; 8];
    let mut r0 = 0;
    while r0 < nr {
        let nv = (nr - r0).min(8);
        let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
        let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
        for (r, t) in wt.iter_mut().enumerate() {
            let row = m.row_bytes(o[r]);
            if tail_at < row.len() {
                t[..row.len() - tail_at].copy_from_slice(&row[tail_at..]);
            }
        }
        let mut out = [0f32; 8];
        // SAFETY: out holds 8 f32.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), band(&o, &rp, &wt)) };
        y[r0..r0 + nv].copy_from_slice(&out[..nv]);
        r0 += 8;
    }
}

/// Columns up to which [`f32_int4_band8`] splits the activations once per call (64 KiB
/// of stack).
pub(super) const EO_MAX: usize = 16_384;

/// Fused int4-row f32-activation kernel for **one** activation row `x` (the GEMV case),
/// weight rows in bands of 8 (a final, shorter band repeats its last row and stores only
/// its own). The activations of each 16 columns are split into even and odd columns
/// ([`split_even_odd_ps`]) — once per call into a stack buffer where `I` ≤ [`EO_MAX`],
/// else per band and block — so that a row's 8 weight bytes decode in byte order:
/// `vpmovzxbd` (byte `k` in lane `k`), `& 0xF` (column `2k`) and `≫ 4` (column
/// `2k + 1`), `− 8`, exact conversion, one FMA each with the even or the odd
/// activations into the row's accumulator. The partial last block runs on zero-padded
/// copies (padding codes meet zero activations). Per row: `Σ v·x` (8 lanes, one
/// `vhaddps` tree for the band), times the row's scale: within the f32 tolerance
/// (module doc), like the other arms' orders; both activation sources give the same
/// bits. The column-order decode it replaced (4 bytes broadcast, `vpsrlvd` by
/// `4·lane`) was bound by `vpsrlvd` on Zen 2 (the `kernels` bench): 9.1 G weights/s in L2
/// against 16.7 (14.8 with the split per band and block). From DRAM (more than 24 MiB
/// of weights) each band prefetches the next band's rows into L2, one line per row
/// every 4 blocks (Zen 2, 4096 × 14336: 15.2 → 15.8).
///
/// # Safety
/// The arm's features available; `m` is int4-row, `x.len() == I`, `y.len() ==
/// rows.len()`, `rows.end ≤ O`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_int4_band8(m: &Matrix<'_>, x: &[f32], rows: Range<usize>, y: &mut [f32]) {
    let ni = m.i();
    let Scales::F32(sf) = m.scales() else { unreachable!("int4-row has f32 scales (Matrix::new)") };
    let blocks = ni / 32;
    let tn = ni - 32 * blocks;
    // The partial last block: activations zero-padded to 32, each row's bytes to 16.
    let mut xt = [0f32; 32];
    xt[..tn].copy_from_slice(&x[32 * blocks..]);
    // The split activations of every block, when they fit (zero-padded tail block).
    let whole = ni <= EO_MAX;
    let mut xeo = [const { core::mem::MaybeUninit::<f32>::uninit() }; EO_MAX + 32];
    let xep = xeo.as_mut_ptr().cast::<f32>();
    if whole {
        // SAFETY: xeo holds EO_MAX + 32 ≥ 32 · ceil(I / 32) values.
        unsafe { split_all(x, &xt, xep) };
    }
    let xep = xep.cast_const(); // 32 values per block written when `whole`
    // From DRAM: the next band's rows, one band ahead, into L2 (a line of each row
    // every 4 blocks).
    let (stream, end) = (streams(m), rows.end);
    let band = |o: &[usize; 8], rp: &[*const u8; 8], wt: &[[u8; 16]; 8]| {
        let mut acc = [_mm256_setzero_ps(); 8];
        let next = stream && o[0] + 8 < end;
        let np: [*const u8; 8] = if next {
            core::array::from_fn(|r| m.row_bytes((o[0] + 8 + r).min(end - 1)).as_ptr())
        } else {
            [core::ptr::null(); 8]
        };
        for b in 0..blocks {
            // b < blocks: 32 activations at 32·b (their split at 32·b of xeo when
            // `whole`), 16 bytes at 16·b of every row.
            let w = core::array::from_fn(|r| rp[r].wrapping_add(16 * b));
            if next && b % 4 == 0 {
                for p in np {
                    // A hint: never faults, whatever the (wrapping) address.
                    _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(16 * b).cast());
                }
            }
            // SAFETY: b < blocks, so 32 activations start at 32·b of xep (of xeo's split
            // halves when `whole`); loadu has no alignment need.
            let xv = unsafe {
                if whole {
                    let p = xep.add(32 * b);
                    core::array::from_fn(|k| _mm256_loadu_ps(p.add(8 * k)))
                } else {
                    split_even_odd_ps(x.as_ptr().add(32 * b))
                }
            };
            // SAFETY: 16 bytes at every w[r].
            unsafe { int4_split_block(&mut acc, w, xv) };
        }
        if tn > 0 {
            // SAFETY: xt holds 32 values.
            let xv = unsafe { split_even_odd_ps(xt.as_ptr()) };
            let w = core::array::from_fn(|r| wt[r].as_ptr());
            // SAFETY: 16 bytes in every wt[r].
            unsafe { int4_split_block(&mut acc, w, xv) };
        }
        let sc: [f32; 8] = core::array::from_fn(|r| sf[o[r]]);
        // SAFETY: sc holds 8 f32.
        _mm256_mul_ps(sums8_ps(acc), unsafe { _mm256_loadu_ps(sc.as_ptr()) })
    };
    // SAFETY: same contract; a row has 16·blocks + 16 bytes at most.
    unsafe { f32_bands8::<16>(m, rows, 16 * blocks, y, band) };
}

/// 32 activations at `p` → `[even, odd]` of columns `0..16`, then of `16..32` (8 each,
/// in order): the pairing of [`f32_int4_band8`]'s byte-order nibble decode.
///
/// # Safety
/// The arm's features available; `p` points at 32 readable f32.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn split_even_odd_ps(p: *const f32) -> [__m256; 4] {
    let mut v = [_mm256_setzero_ps(); 4];
    for h in 0..2 {
        // SAFETY: 16·h + 16 ≤ 32 values at p (caller).
        let (a, c) = unsafe {
            let q = p.add(16 * h);
            (_mm256_loadu_ps(q), _mm256_loadu_ps(q.add(8)))
        };
        // Per 128-bit lane [a0 a2 c0 c2 | a4 a6 c4 c6]; the 64-bit permute orders it.
        let fix = |t: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(t)));
        v[2 * h] = fix(_mm256_shuffle_ps::<0x88>(a, c));
        v[2 * h + 1] = fix(_mm256_shuffle_ps::<0xDD>(a, c));
    }
    v
}

/// Every 32-column block's [`split_even_odd_ps`] into `xep` (block `b` at `32·b`): the
/// full blocks from `x`, a partial last one from `xt` (`x`'s tail, zero-padded to 32).
///
/// # Safety
/// The arm's features available; `xep` points at `32 · ceil(I / 32)` writable f32.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn split_all(x: &[f32], xt: &[f32; 32], xep: *mut f32) {
    let blocks = x.len() / 32;
    for b in 0..x.len().div_ceil(32) {
        let src = if b < blocks { x[32 * b..].as_ptr() } else { xt.as_ptr() };
        // SAFETY: 32 values at src; 32·b + 32 ≤ 32 · ceil(I / 32) values at xep.
        unsafe {
            let v = split_even_odd_ps(src);
            for (k, vk) in v.into_iter().enumerate() {
                _mm256_storeu_ps(xep.add(32 * b + 8 * k), vk);
            }
        }
    }
}

/// `acc[r] +=` the int4 codes (`nib − 8`) of the 16 bytes at `w[r]` (32 columns)
/// against one block's split activations `xv` ([`split_even_odd_ps`]): per 8 bytes
/// `vpmovzxbd`, `& 0xF` (even columns) and `≫ 4` (odd), `− 8`, exact conversion, one
/// FMA each, in that order.
///
/// # Safety
/// The arm's features available; every `w[r]` points at 16 readable bytes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn int4_split_block<const R: usize>(
    acc: &mut [__m256; R],
    w: [*const u8; R],
    xv: [__m256; 4],
) {
    // Not int4_split_codes per row: decoding a row's 32 columns before its FMAs ran at
    // 14.9 against 17.0 G weights/s (Zen 2, 512 × 1024).
    let (low, eight) = (_mm256_set1_epi32(0xF), _mm256_set1_epi32(8));
    for h in 0..2 {
        let (xe, xo) = (xv[2 * h], xv[2 * h + 1]);
        for (r, ar) in acc.iter_mut().enumerate() {
            // SAFETY: each w[r] points at 16 bytes (caller).
            let d = unsafe { _mm_loadl_epi64(w[r].add(8 * h).cast()) };
            let d = _mm256_cvtepu8_epi32(d);
            let lo = _mm256_sub_epi32(_mm256_and_si256(d, low), eight);
            let hi = _mm256_sub_epi32(_mm256_srli_epi32::<4>(d), eight);
            *ar = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), xe, *ar);
            *ar = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), xo, *ar);
        }
    }
}

/// The int4 codes (`nib − 8`) of the 16 bytes at `w` as f32 in the order of
/// [`split_even_odd_ps`]: even columns of `0..16`, odd ones, then of `16..32`.
///
/// # Safety
/// The arm's features available; `w` points at 16 readable bytes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn int4_split_codes(w: *const u8) -> [__m256; 4] {
    let (low, eight) = (_mm256_set1_epi32(0xF), _mm256_set1_epi32(8));
    let mut v = [_mm256_setzero_ps(); 4];
    for h in 0..2 {
        // SAFETY: 8 bytes at w + 8h (caller: 16).
        let d = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(w.add(8 * h).cast()) });
        v[2 * h] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(d, low), eight));
        v[2 * h + 1] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32::<4>(d), eight));
    }
    v
}

/// Fused int8-row f32-activation kernel (every `S`): weight rows in bands of 8 (a final,
/// shorter band repeats its last row and stores only its own), each band against every
/// activation row in turn (the band's bytes stay in L1/L2 after the first). Per
/// 8-column step the 8 activations are loaded once for the band; a row's 8 weight bytes
/// are sign-extended (`vpmovsxbd`) and converted exactly to f32, then one FMA into the
/// row's accumulator (8 independent FMA chains). The partial last 32 columns run on
/// zero-padded copies. Per row: `Σ w·x` (one `vhaddps` tree for the band), times the
/// row's scale: within the f32 tolerance (module doc). From DRAM (`streams`), each
/// 32-column block of the first activation row prefetches the next 256 bytes of a
/// later band, as [`band8_sums`](crate::arch::x86_64::band8_sums).
///
/// # Safety
/// The arm's features available; `m` is int8-row, `x.len() ≥ s · I`, `y.len() ≥ s ·
/// rows.len()`, `rows.end ≤ O`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_int8_band8(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    let (ni, nr) = (m.i(), rows.len());
    let Scales::F32(sf) = m.scales() else { unreachable!("int8-row has f32 scales (Matrix::new)") };
    let blocks = ni / 32;
    let tn = ni - 32 * blocks;
    let stream = streams(m);
    let mut xt = [0f32; 32];
    let mut wt = [[0u8; 32]; 8];
    let mut r0 = 0;
    while r0 < nr {
        let nv = (nr - r0).min(8);
        let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
        let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
        if tn > 0 {
            for (r, t) in wt.iter_mut().enumerate() {
                t[..tn].copy_from_slice(&m.row_bytes(o[r])[32 * blocks..]);
            }
        }
        let ahead = crate::arch::x86_64::band_ahead(rp[0], m.row_bytes(0).len());
        let sc: [f32; 8] = core::array::from_fn(|r| sf[o[r]]);
        for si in 0..s {
            let xs = &x[si * ni..(si + 1) * ni];
            if tn > 0 {
                xt[..tn].copy_from_slice(&xs[32 * blocks..]);
            }
            let tail = (tn > 0).then(|| (wt.each_ref().map(|t| t.as_ptr()), xt.as_ptr()));
            // SAFETY: every row holds I ≥ 32·blocks bytes and xs I values; the tail
            // copies hold 32 of each.
            let sum = unsafe {
                if stream && si == 0 {
                    int8_band8_f32::<true>(rp, xs.as_ptr(), blocks, tail, ahead)
                } else {
                    int8_band8_f32::<false>(rp, xs.as_ptr(), blocks, tail, ahead)
                }
            };
            let mut out = [0f32; 8];
            // SAFETY: sc and out hold 8 f32.
            unsafe {
                _mm256_storeu_ps(
                    out.as_mut_ptr(),
                    _mm256_mul_ps(sum, _mm256_loadu_ps(sc.as_ptr())),
                );
            }
            y[si * nr + r0..si * nr + r0 + nv].copy_from_slice(&out[..nv]);
        }
        r0 += 8;
    }
}

/// `Σ w·x` of 8 int8 rows (`rows[r]`, `32 · blocks` bytes, then the zero-padded `tail`
/// copies of 32) against the f32 activations at `x` (`32 · blocks` values, then the
/// tail's 32), lane `r` of the result = row `r` ([`f32_int8_band8`]).
///
/// # Safety
/// The arm's features available; the pointers valid for those reads.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn int8_band8_f32<const STREAM: bool>(
    rows: [*const u8; 8],
    x: *const f32,
    blocks: usize,
    tail: Option<([*const u8; 8], *const f32)>,
    ahead: *const u8,
) -> __m256 {
    let mut acc = [_mm256_setzero_ps(); 8];
    // 32 columns: 4 steps of 8.
    let block = |acc: &mut [__m256; 8], w: [*const u8; 8], xb: *const f32| {
        for q in 0..4 {
            // SAFETY: xb points at 32 values, each w[r] at 32 bytes (callers).
            let xq = unsafe { _mm256_loadu_ps(xb.add(8 * q)) };
            for r in 0..8 {
                // SAFETY: w[r] points at 32 bytes (callers) and 8·q + 8 ≤ 32.
                let b = unsafe { _mm_loadl_epi64(w[r].add(8 * q).cast()) };
                let v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
                acc[r] = _mm256_fmadd_ps(v, xq, acc[r]);
            }
        }
    };
    for b in 0..blocks {
        if STREAM {
            for l in 0..4 {
                // A hint: never faults, whatever the (wrapping) address.
                _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(256 * b + 64 * l).cast());
            }
        }
        let w = core::array::from_fn(|r| rows[r].wrapping_add(32 * b));
        block(&mut acc, w, x.wrapping_add(32 * b));
    }
    if let Some((w, xt)) = tail {
        block(&mut acc, w, xt);
    }
    sums8_ps(acc)
}
