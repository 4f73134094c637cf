//! int2-row and int3-g64: the int8-path kernels on crumb planes of the activations
//! ([`q8_int2_row`], [`q8_int3_g64`]) and the fused f32 row kernel ([`small_row_f32`]).

use core::arch::x86_64::*;
use core::ops::Range;

use super::Dot;
use super::grouped::grouped_row_f32;
use super::reduce::{hsum_epi32, nibbles};
use crate::arch::x86_64::{group_sums64, int3_epilogue};
use crate::format::Format;
use crate::kernels::{Matrix, QuantizedActs, Scales};
use crate::scalar;

/// One 128-column int2 block into `acc`: `acc[k] += dpbusd(crumbs at bits 2k, plane k)`.
///
/// # Safety
/// `w` valid for reads of 32 bytes; `p` 32-byte aligned and valid for 128.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn crumb_block<D: Dot>(
    acc: [__m256i; 4],
    w: *const u8,
    p: *const i8,
) -> [__m256i; 4] {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let three = _mm256_set1_epi8(3);
        {
            let w = _mm256_loadu_si256(w.cast());
            let x = |k: usize| _mm256_load_si256(p.add(32 * k).cast());
            [
                D::dpbusd(acc[0], _mm256_and_si256(w, three), x(0)),
                D::dpbusd(acc[1], _mm256_and_si256(_mm256_srli_epi16::<2>(w), three), x(1)),
                D::dpbusd(acc[2], _mm256_and_si256(_mm256_srli_epi16::<4>(w), three), x(2)),
                D::dpbusd(acc[3], _mm256_and_si256(_mm256_srli_epi16::<6>(w), three), x(3)),
            ]
        }
    }
}

/// Activation codes [`q8_int2_row`] splits into crumb planes (a multiple of 128).
pub(in crate::arch::x86_64) const PLANES: usize = 32 << 10;

/// A 32-byte-aligned stack buffer for [`q8_int2_row`]'s crumb planes.
#[repr(C, align(32))]
pub(super) struct Planes(core::mem::MaybeUninit<[i8; PLANES]>);

/// Splits activation row `q` into the four crumb planes of every 128-column block at
/// `base` (plane `k` byte `b` = column `128j + 4b + k`, zero past `I`): the layout of
/// [`q8_int2_row`] and [`q8_int3_g64`].
///
/// # Safety
/// `base` valid for writes of `128 · ceil(I/128)` bytes (`I = q.len()`).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn crumb_planes(q: &[i8], base: *mut i8) {
    for j in 0..q.len().div_ceil(128) {
        for k in 0..4 {
            for b in 0..32 {
                let c = 128 * j + 4 * b + k;
                // SAFETY: 128·j + 32·k + b < 128 · ceil(I/128): the caller's contract.
                unsafe {
                    base.add(128 * j + 32 * k + b).write(q.get(c).copied().unwrap_or(0));
                }
            }
        }
    }
}

/// int2-row int8-activation kernel (as the AVX-512 one, on 128-column blocks): each activation row
/// is split once into the four crumb planes of every block (plane `k` = columns `4b + k`, `b < 32`:
/// the crumbs at bits `2k` of the block's 32 weight bytes; zero past `I`); then per weight row and
/// block one 32-byte load (the last, partial block from a zero-padded copy), three shifts, four `&
/// 3` and four `dpbusd`. `d = Σ crumb·x − 2·Σx` is exact, then the reference's epilogue `((0 + d·s)
/// · sx)`.
///
/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows); `I ≤ PLANES`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn q8_int2_row<D: Dot>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let (ni, nr) = (m.i(), rows.len());
        let nb = ni.div_ceil(128);
        // One f32 scale per row (the scale kind is checked by `Matrix::new`); read here rather
        // than through `scalar::group_scale_q8`, which LLVM left as a call per row.
        let Scales::F32(sf) = m.scales() else { unreachable!("scale kind checked by Matrix::new") };
        let mut planes = Planes(core::mem::MaybeUninit::uninit());
        let base = planes.0.as_mut_ptr().cast::<i8>();
        for si in 0..xq.s() {
            let (q, sx) = xq.row(si);
            let xsum: i32 = q.iter().map(|&v| i32::from(v)).sum();
            // the buffer holds PLANES ≥ 128 · ceil(I/128) bytes (I ≤ PLANES, a
            // multiple of 128).
            crumb_planes(q, base);
            for (r, o) in rows.clone().enumerate() {
                let row = m.row_bytes(o);
                let mut a = [_mm256_setzero_si256(); 4];
                let full = ni / 128;
                for j in 0..full {
                    // 128·j + 128 ≤ I: the 32 bytes at 32·j are in the row; the
                    // planes of block j were written above.
                    a = crumb_block::<D>(a, row.as_ptr().add(32 * j), base.add(128 * j));
                }
                if full < nb {
                    // The partial last block from a zero-padded copy (outside the loop:
                    // a call there clobbers every ymm register).
                    let mut tail = [0u8; 32];
                    tail[..row.len() - 32 * full].copy_from_slice(&row[32 * full..]);
                    // the copy holds 32 bytes; the planes of block `full` were
                    // written above.
                    a = crumb_block::<D>(a, tail.as_ptr(), base.add(128 * full));
                }
                let [a0, a1, a2, a3] = a;
                let d = hsum_epi32(_mm256_add_epi32(
                    _mm256_add_epi32(a0, a1),
                    _mm256_add_epi32(a2, a3),
                )) - 2 * xsum;
                let sc = sf[o];
                let mut acc = 0.0f32;
                if ni > 0 {
                    #[allow(clippy::cast_precision_loss)] // the spec's rounding
                    let df = d as f32;
                    acc += df * sc;
                }
                y[si * nr + r] = acc * sx;
            }
        }
    }
}

/// int3-g64 int8-activation kernel (as the AVX-512 one, two 64-column groups — 48 weight bytes —
/// per step instead of four). The activation row is split once into the crumb planes of
/// [`crumb_planes`] (a 128-column block is two groups, group `g` of the pair in 128-bit lane `g`),
/// and its per-group sums kept. A step loads the two 16-byte low planes into one vector and the two
/// 8-byte high planes into 16 bytes, which widen to 32 nibbles ([`nibbles`]: byte `b` of lane `g` =
/// bits `4b .. 4b + 4` of group `g`'s high plane, the high bits of columns `4b + k`). Per plane
/// `k`: `u = ((lo ≫ 2k) & 3) | (bit k of the nibble) · 4 ∈ [0, 7]` and one `dpbusd` against plane
/// `k`. Each lane then sums to its group's `Σ u·x`; `d = Σ u·x − 4·Σx` (exact), and the reference's
/// epilogue runs per group in order (`acc = acc + (d as f32) · s`, then `acc · sx`). A last step of
/// one group reads a zero-padded copy.
///
/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows); `I ≤ PLANES`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn q8_int3_g64<D: Dot>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let (nr, ng) = (rows.len(), m.groups_per_row());
        let Scales::F32(sf) = m.scales() else { unreachable!("scale kind checked by Matrix::new") };
        let full = ng / 2;
        let mut planes = Planes(core::mem::MaybeUninit::uninit());
        let base = planes.0.as_mut_ptr().cast::<i8>();
        let mut gsum = [0i32; PLANES / 64];
        for si in 0..xq.s() {
            let (q, sx) = xq.row(si);
            // the buffer holds PLANES ≥ 128 · ceil(I/128) bytes (I ≤ PLANES, a
            // multiple of 128).
            crumb_planes(q, base);
            group_sums64(q, &mut gsum);
            for (r, o) in rows.clone().enumerate() {
                let row = m.row_bytes(o);
                let sc = &sf[o * ng..(o + 1) * ng];
                let mut acc = 0.0f32;
                for j in 0..full {
                    // groups 2j and 2j + 1 exist: 48 bytes at 48·j are in the row;
                    // the planes of block j were written above.
                    let d = int3_pair::<D>(row.as_ptr().add(48 * j), base.add(128 * j));
                    int3_epilogue(&mut acc, d, 2, &gsum[2 * j..], &sc[2 * j..]);
                }
                if full < ng.div_ceil(2) {
                    // The last, single group, from a zero-padded copy (outside the loop:
                    // a call there clobbers every ymm register).
                    let mut tail = [0u8; 48];
                    tail[..24].copy_from_slice(&row[48 * full..]);
                    // the copy holds 48 bytes; the planes of block `full` were
                    // written above.
                    let d = int3_pair::<D>(tail.as_ptr(), base.add(128 * full));
                    int3_epilogue(&mut acc, d, 1, &gsum[2 * full..], &sc[2 * full..]);
                }
                y[si * nr + r] = acc * sx;
            }
        }
    }
}

/// `Σ u·x` of two int3-g64 groups (48 bytes at `w`) against their crumb planes (128
/// bytes at `p`), one sum per group; see [`q8_int3_g64`].
///
/// # Safety
/// `w` valid for reads of 48 bytes; `p` 32-byte aligned and valid for 128.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn int3_pair<D: Dot>(w: *const u8, p: *const i8) -> [i32; 2] {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        // the caller's contract: group g's planes are at 24·g (16 bytes low, then
        // 8 bytes high), g < 2.
        let (lo, hi) = {
            let lo = _mm256_loadu2_m128i(w.add(24).cast(), w.cast());
            let h = |g: usize| w.add(24 * g + 16).cast::<i64>().read_unaligned();
            (lo, _mm_set_epi64x(h(1), h(0)))
        };
        let (n0, n1) = nibbles(hi);
        let nib = _mm256_set_m128i(n1, n0);
        let three = _mm256_set1_epi8(3);
        let four = _mm256_set1_epi8(4);
        let u = |crumbs: __m256i, high: __m256i| {
            _mm256_or_si256(_mm256_and_si256(crumbs, three), _mm256_and_si256(high, four))
        };
        let u = [
            u(lo, _mm256_slli_epi16::<2>(nib)),
            u(_mm256_srli_epi16::<2>(lo), _mm256_slli_epi16::<1>(nib)),
            u(_mm256_srli_epi16::<4>(lo), nib),
            u(_mm256_srli_epi16::<6>(lo), _mm256_srli_epi16::<1>(nib)),
        ];
        let mut acc = _mm256_setzero_si256();
        for (k, uk) in u.iter().enumerate() {
            // plane k of the block: 32 bytes at 32·k, aligned.
            acc = D::dpbusd(acc, *uk, _mm256_load_si256(p.add(32 * k).cast()));
        }
        // Each 128-bit lane (one group) to its sum.
        let t = _mm256_add_epi32(acc, _mm256_shuffle_epi32::<0x4E>(acc));
        let t = _mm256_add_epi32(t, _mm256_shuffle_epi32::<0xB1>(t));
        let (l0, l1) = (_mm256_castsi256_si128(t), _mm256_extracti128_si256::<1>(t));
        [_mm_cvtsi128_si32(l0), _mm_cvtsi128_si32(l1)]
    }
}

/// [`grouped_row_f32`] for int2-row and int3-g64: 64-column blocks (16 bytes of int2,
/// or one 24-byte int3 group) decoded with SSE2 (`crate::arch::x86_64::small_codes64`)
/// and widened to 8 × 8 f32.
///
/// # Safety
/// The arm's features available; every `xs[k]` points at `I` values.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn small_row_f32<const T: usize>(
    m: &Matrix<'_>,
    o: usize,
    xs: [*const f32; T],
) -> [f32; T] {
    let row = m.row_bytes(o);
    let int3 = m.format() == Format::Int3G64;
    let unit = if int3 { 24 } else { 16 };
    let block = |col: usize| {
        let c = crate::arch::x86_64::small_codes64(&row[unit * (col / 64)..], int3);
        let f = |t: __m128i| _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(t));
        let hi = |t: __m128i| f(_mm_srli_si128::<8>(t));
        [f(c[0]), hi(c[0]), f(c[1]), hi(c[1]), f(c[2]), hi(c[2]), f(c[3]), hi(c[3])]
    };
    let value = |c: usize| f32::from(scalar::code_i8(m, o, c).unwrap_or(0));
    // SAFETY: the caller's contract; int2-row has one group, int3-g64 groups of 64.
    unsafe { grouped_row_f32::<T, 8>(m, o, xs, block, value) }
}
