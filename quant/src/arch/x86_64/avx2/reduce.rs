//! Horizontal sums and the dot steps over a run of columns: the f32 FMA dot and the exact int8
//! dot (generic over the arm's [`Dot`] step), the nibble split and the even/odd
//! activation split shared by the int8-path kernels.

use core::arch::x86_64::*;

use super::{Dot, MASKS};

/// The `vhaddps` tree of 4 vectors: lanes `r` and `4 + r` hold halves of `Σ p[r]`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn sums4_half_ps(p: [__m256; 4]) -> __m256 {
    let h = |a: __m256, b: __m256| _mm256_hadd_ps(a, b);
    h(h(p[0], p[1]), h(p[2], p[3]))
}

/// [`sums4_half_ps`] of two halves `[lo, hi]` → lane `r` = row `r`'s sum, rows 0..4 of
/// `lo`, 4..8 of `hi` (the cross-half add of [`sums8_ps`]).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn sums8_halves_ps([lo, hi]: [__m256; 2]) -> __m256 {
    _mm256_add_ps(_mm256_permute2f128_ps::<0x20>(lo, hi), _mm256_permute2f128_ps::<0x31>(lo, hi))
}

/// The horizontal sums of 8 vectors as one vector (lane `r` = `Σ p[r]`): one
/// `vhaddps` tree and a cross-half add.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn sums8_ps(p: [__m256; 8]) -> __m256 {
    let h = |a: __m256, b: __m256| _mm256_hadd_ps(a, b);
    let lo = h(h(p[0], p[1]), h(p[2], p[3]));
    let hi = h(h(p[4], p[5]), h(p[6], p[7]));
    _mm256_add_ps(_mm256_permute2f128_ps::<0x20>(lo, hi), _mm256_permute2f128_ps::<0x31>(lo, hi))
}

/// The sum of an activation row's `8 / T` FMA chains in the small-batch passes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn chains_sum<const T: usize>([a0, a1, a2, a3]: [__m256; 4]) -> __m256 {
    match 8 / T {
        4 => _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
        2 => _mm256_add_ps(a0, a1),
        _ => a0,
    }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn hsum_ps(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_shuffle_ps::<1>(s, s));
    _mm_cvtss_f32(s)
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn hsum_epi32(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s)
}

/// `Σ w[k] · x[k]` for `k < n` as 8 lanes.
///
/// # Safety
/// `w` and `x` must be valid for reads of `n` f32 (unaligned is fine); the arm's features
/// available.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_f32(w: *const f32, x: *const f32, n: usize) -> __m256 {
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
        // SAFETY: MASKS has 16 entries and 1 ≤ n − k ≤ 7, so the 8-lane window is in
        // bounds; the masked loads touch only the first n − k lanes (masked-off lanes never
        // fault).
        unsafe {
            let mask = _mm256_loadu_si256(MASKS.as_ptr().add(8 - (n - k)).cast());
            let wv = _mm256_maskload_ps(w.add(k), mask);
            let xv = _mm256_maskload_ps(x.add(k), mask);
            a1 = _mm256_fmadd_ps(wv, xv, a1);
        }
    }
    _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))
}

/// One 32-byte block of the int8 dot: `acc + Σ w·x` in 8 i32 lanes, as
/// `dpbusd(acc, |w|, sign(x, w))`: the unsigned operand is `|w| ≤ 128`, the signed one
/// `x` negated where `w < 0` (zero where `w = 0`), in `[−127, 127]` (module doc).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn dot32_i8<D: Dot>(acc: __m256i, w: __m256i, x: __m256i) -> __m256i {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe { D::dpbusd(acc, _mm256_abs_epi8(w), _mm256_sign_epi8(x, w)) }
}

/// Exact `Σ w[k] · x[k]` for `k < n` (`x` in `[−127, 127]`).
///
/// # Safety
/// `w` and `x` valid for reads of `n` bytes; the arm's features available.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn dot_i8<D: Dot>(w: *const i8, x: *const i8, n: usize) -> i32 {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let (mut a0, mut a1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        let mut k = 0;
        while k + 64 <= n {
            // k + 64 ≤ n.
            {
                let w0 = _mm256_loadu_si256(w.add(k).cast());
                let x0 = _mm256_loadu_si256(x.add(k).cast());
                let w1 = _mm256_loadu_si256(w.add(k + 32).cast());
                let x1 = _mm256_loadu_si256(x.add(k + 32).cast());
                a0 = dot32_i8::<D>(a0, w0, x0);
                a1 = dot32_i8::<D>(a1, w1, x1);
            }
            k += 64;
        }
        while k + 32 <= n {
            // k + 32 ≤ n.
            {
                let w0 = _mm256_loadu_si256(w.add(k).cast());
                let x0 = _mm256_loadu_si256(x.add(k).cast());
                a0 = dot32_i8::<D>(a0, w0, x0);
            }
            k += 32;
        }
        if k < n {
            let (mut tw, mut tx) = ([0i8; 32], [0i8; 32]);
            // n − k < 32 bytes are copied from valid ranges into 32-byte locals.
            {
                core::ptr::copy_nonoverlapping(w.add(k), tw.as_mut_ptr(), n - k);
                core::ptr::copy_nonoverlapping(x.add(k), tx.as_mut_ptr(), n - k);
            }
            // the locals are 32 bytes.
            let (wv, xv) = {
                (_mm256_loadu_si256(tw.as_ptr().cast()), _mm256_loadu_si256(tx.as_ptr().cast()))
            };
            a1 = dot32_i8::<D>(a1, wv, xv);
        }
        hsum_epi32(_mm256_add_epi32(a0, a1))
    }
}

/// Splits 16 packed bytes into 32 nibbles in column order (low nibble = even column).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn nibbles(v: __m128i) -> (__m128i, __m128i) {
    let m = _mm_set1_epi8(0x0F);
    let lo = _mm_and_si128(v, m);
    let hi = _mm_and_si128(_mm_srli_epi16::<4>(v), m);
    (_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi))
}

/// Splits 64 activation codes (`x0` = columns 0..32, `x1` = 32..64 of a block) into
/// the 32 even and the 32 odd columns, in order: the layout of the low and high
/// nibbles of the block's 32 weight bytes. `vpshufb` gathers the 8 even then the 8 odd
/// bytes of each 16-byte lane, `vpermq` puts each vector's even qwords in its low half,
/// two `vperm2i128` join the halves.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn split_even_odd(x0: __m256i, x1: __m256i) -> (__m256i, __m256i) {
    #[rustfmt::skip]
    let pat = _mm256_setr_epi8(
        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
    );
    // qwords [E0 O0 E1 O1] → [E0 E1 O0 O1] (Ek, Ok: even, odd columns of 16 columns).
    let a = _mm256_permute4x64_epi64::<0xD8>(_mm256_shuffle_epi8(x0, pat));
    let b = _mm256_permute4x64_epi64::<0xD8>(_mm256_shuffle_epi8(x1, pat));
    (_mm256_permute2x128_si256::<0x20>(a, b), _mm256_permute2x128_si256::<0x31>(a, b))
}

/// The i16 pair sums of 8 + 8 i32 lanes: lane `q` of each 128-bit half of the result
/// is `[a0+a1, a2+a3, b0+b1, b2+b3][q]` of that half of `a` and `b`. Exact when every
/// lane of `a` and `b` fits in i16 (`vpackssdw` saturates); the sums are i32.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn pack_sum(a: __m256i, b: __m256i) -> __m256i {
    _mm256_madd_epi16(_mm256_packs_epi32(a, b), _mm256_set1_epi16(1))
}
