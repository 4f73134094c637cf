//! int2-row and int3-g64 on the int8 path: the weights against crumb planes of the
//! activations ([`q8_int2_row`], [`q8_int3_g64`]).

use core::arch::x86_64::*;
use core::ops::Range;

use super::nib_f32::nib64;
use super::reduce::{AlignedActs, XA, epilogue_row, prefetch_l2};
use super::{Dot, mask64};
use crate::arch::x86_64::{group_sums64, int3_epilogue, streams};
use crate::kernels::{Matrix, QuantizedActs, Scales};

/// int2-row int8-activation kernel. Each activation row is first split into the four crumb planes
/// of every 256-column block (plane `k` = columns `4b + k`, `b < 64`: the crumbs at bits `2k` of
/// the block's 64 weight bytes; zero past `I`), in an aligned stack buffer; then per weight row and
/// block: one 64-byte load (masked for the last block), three shifts, four `& 3`, four `dpbusd`
/// (crumb `0..=3` unsigned against the plane). `d = Σ crumb·x − 2·Σx` is exact (|d| ≤ 3 · 127 · I <
/// 2³¹), then the reference's one-group epilogue. Rows of more than [`XA`] columns take the generic
/// path. Weight rows are read once per activation row.
///
/// # Safety
/// Features available; shapes as asserted by [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows); `I ≤
/// XA`.
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
        let nb = ni.div_ceil(256);
        // One f32 scale per row (the scale kind is checked by `Matrix::new`); read here rather
        // than through `scalar::group_scale_q8`, which LLVM left as a call per row.
        let Scales::F32(sf) = m.scales() else { unreachable!("scale kind checked by Matrix::new") };
        let stream = streams(m);
        let three = _mm512_set1_epi8(3);
        let mut planes = AlignedActs(core::mem::MaybeUninit::uninit());
        let base = planes.0.as_mut_ptr().cast::<i8>();
        for si in 0..xq.s() {
            let (q, sx) = xq.row(si);
            let xsum: i32 = q.iter().map(|&v| i32::from(v)).sum();
            // the buffer holds XA ≥ 256 · nb bytes (I ≤ XA, a multiple of 256).
            crumb_planes(q, base);
            for (r, o) in rows.clone().enumerate() {
                let row = m.row_bytes(o).as_ptr();
                let z = _mm512_setzero_si512();
                let (mut a0, mut a1, mut a2, mut a3) = (z, z, z, z);
                for j in 0..nb {
                    let rem = ni - 256 * j;
                    if stream {
                        prefetch_l2(row.wrapping_add(64 * j).cast());
                    }
                    // the row has ceil(I/4) bytes: a full block reads the 64 at
                    // 64·j (256·j + 256 ≤ I), the last one the ceil(rem/4) there (masked);
                    // the four planes of block j (256 bytes at 256·j) were written above.
                    {
                        let w = if rem >= 256 {
                            _mm512_loadu_si512(row.add(64 * j).cast())
                        } else {
                            _mm512_maskz_loadu_epi8(mask64(rem.div_ceil(4)), row.add(64 * j).cast())
                        };
                        let p = base.add(256 * j);
                        let x = |k: usize| _mm512_load_si512(p.add(64 * k).cast());
                        a0 = D::dpbusd(a0, _mm512_and_si512(w, three), x(0));
                        a1 =
                            D::dpbusd(a1, _mm512_and_si512(_mm512_srli_epi16::<2>(w), three), x(1));
                        a2 =
                            D::dpbusd(a2, _mm512_and_si512(_mm512_srli_epi16::<4>(w), three), x(2));
                        a3 =
                            D::dpbusd(a3, _mm512_and_si512(_mm512_srli_epi16::<6>(w), three), x(3));
                    }
                }
                let d = _mm512_reduce_add_epi32(_mm512_add_epi32(
                    _mm512_add_epi32(a0, a1),
                    _mm512_add_epi32(a2, a3),
                ));
                let sc = sf[o];
                y[si * nr + r] = epilogue_row(d - 2 * xsum, sc, sx, ni);
            }
        }
    }
}

/// Splits activation row `q` into the four crumb planes of every 256-column block at
/// `base` (plane `k` byte `b` = column `256j + 4b + k`, zero past `I`; the layout of
/// [`q8_int2_row`] and [`q8_int3_g64`]).
///
/// # Safety
/// `base` valid for writes of `256 · ceil(I/256)` bytes (`I = q.len()`).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
pub(super) unsafe fn crumb_planes(q: &[i8], base: *mut i8) {
    for j in 0..q.len().div_ceil(256) {
        for k in 0..4 {
            for b in 0..64 {
                let c = 256 * j + 4 * b + k;
                // SAFETY: 256·j + 64·k + b < 256 · ceil(I/256): the caller's contract.
                unsafe { base.add(256 * j + 64 * k + b).write(q.get(c).copied().unwrap_or(0)) };
            }
        }
    }
}

/// int3-g64 int8-activation kernel, four 64-column groups (96 weight bytes) per step. The
/// activation row is split once into crumb planes ([`crumb_planes`]), and its per-group sums kept.
/// A step loads the four 16-byte low planes into one vector (group `g` in 128-bit lane `g`) and the
/// four 8-byte high planes into 32 bytes, which widen to 64 nibbles (`nib64`: byte `16g + b` = bits
/// `4b .. 4b + 4` of group `g`'s high plane, i.e. the high bits of columns `4b + k`). Per plane `k`
/// (one `vpternlogd`, `a | (b & c)`): `u = ((lo ≫ 2k) & 3) | (bit k of the nibble) · 4 ∈ [0, 7]`,
/// one `dpbusd` against plane `k`. Each 128-bit lane then sums to its group's `Σ u·x`; `d = Σ u·x −
/// 4·Σx` (exact), and the reference's epilogue runs per group in order (`acc = acc + (d as f32) ·
/// s`, then `acc · sx`). A last step of fewer than four groups reads a zero-padded copy.
///
/// # Safety
/// Features available; shapes as asserted by [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows); `I ≤
/// XA`.
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
        let (full, nq) = (ng / 4, ng.div_ceil(4));
        let mut planes = AlignedActs(core::mem::MaybeUninit::uninit());
        let base = planes.0.as_mut_ptr().cast::<i8>();
        let mut gsum = [0i32; XA / 64];
        for si in 0..xq.s() {
            let (q, sx) = xq.row(si);
            // the buffer holds XA ≥ 256 · ceil(I/256) bytes (I ≤ XA, XA a
            // multiple of 256).
            crumb_planes(q, base);
            group_sums64(q, &mut gsum);
            for (r, o) in rows.clone().enumerate() {
                let row = m.row_bytes(o);
                let sc = &sf[o * ng..(o + 1) * ng];
                let mut acc = 0.0f32;
                for qi in 0..full {
                    // groups 4qi .. 4qi + 4 exist: 96 bytes at 96·qi are in the
                    // row; the planes of block qi were written above.
                    let d = int3_quad::<D>(row.as_ptr().add(96 * qi), base.add(256 * qi));
                    // The reference's epilogue of the four groups, its products as one
                    // vector: `d − 4·Σx` (exact), `as f32` (`vcvtdq2ps`, the same
                    // rounding), `· s`; then the four `acc +=` in group order. Written
                    // out, since LLVM otherwise moves every sum through a general
                    // register (int3-g64 q8, avx512-vnni, 512 × 1024: 7–9 % slower in
                    // the `kernels` bench's shape).
                    // gsum and sc hold the 4 values at 4·qi (4·qi + 4 ≤ ng).
                    let dv = _mm_sub_epi32(
                        _mm_loadu_si128(d.as_ptr().cast()),
                        _mm_slli_epi32::<2>(_mm_loadu_si128(gsum.as_ptr().add(4 * qi).cast())),
                    );
                    let p = _mm_mul_ps(_mm_cvtepi32_ps(dv), _mm_loadu_ps(sc.as_ptr().add(4 * qi)));
                    let mut pk = [0f32; 4];
                    // pk holds 4 f32.
                    _mm_storeu_ps(pk.as_mut_ptr(), p);
                    for v in pk {
                        acc += v;
                    }
                }
                if full < nq {
                    let mut tail = [0u8; 96];
                    tail[..row.len() - 96 * full].copy_from_slice(&row[96 * full..]);
                    // the copy holds 96 bytes; the planes of block `full` were
                    // written above.
                    let d = int3_quad::<D>(tail.as_ptr(), base.add(256 * full));
                    let g0 = 4 * full;
                    int3_epilogue(&mut acc, d, ng - g0, &gsum[g0..], &sc[g0..]);
                }
                y[si * nr + r] = acc * sx;
            }
        }
    }
}

/// `Σ u·x` of four int3-g64 groups (96 bytes at `w`) against their crumb planes (256
/// bytes at `p`), one sum per group; see [`q8_int3_g64`].
///
/// # Safety
/// `w` valid for reads of 96 bytes; `p` 64-byte aligned and valid for 256.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn int3_quad<D: Dot>(w: *const u8, p: *const i8) -> [i32; 4] {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        // the caller's contract: group g's planes are at 24·g (16 bytes low, then
        // 8 bytes high), g < 4.
        let (lo, hi) = {
            let l = |g: usize| _mm_loadu_si128(w.add(24 * g).cast());
            let lo = _mm512_inserti32x4::<3>(
                _mm512_inserti32x4::<2>(
                    _mm512_inserti32x4::<1>(_mm512_castsi128_si512(l(0)), l(1)),
                    l(2),
                ),
                l(3),
            );
            let h = |g: usize| w.add(24 * g + 16).cast::<i64>().read_unaligned();
            (lo, _mm256_setr_epi64x(h(0), h(1), h(2), h(3)))
        };
        let nib = nib64(hi);
        let three = _mm512_set1_epi8(3);
        let four = _mm512_set1_epi8(4);
        let u = [
            _mm512_ternarylogic_epi32::<0xF8>(
                _mm512_and_si512(_mm512_slli_epi16::<2>(nib), four),
                lo,
                three,
            ),
            _mm512_ternarylogic_epi32::<0xF8>(
                _mm512_and_si512(_mm512_slli_epi16::<1>(nib), four),
                _mm512_srli_epi16::<2>(lo),
                three,
            ),
            _mm512_ternarylogic_epi32::<0xF8>(
                _mm512_and_si512(nib, four),
                _mm512_srli_epi16::<4>(lo),
                three,
            ),
            _mm512_ternarylogic_epi32::<0xF8>(
                _mm512_and_si512(_mm512_srli_epi16::<1>(nib), four),
                _mm512_srli_epi16::<6>(lo),
                three,
            ),
        ];
        let mut acc = _mm512_setzero_si512();
        for (k, uk) in u.iter().enumerate() {
            // plane k of the block: 64 bytes at 64·k, aligned.
            acc = D::dpbusd(acc, *uk, _mm512_load_si512(p.add(64 * k).cast()));
        }
        // Each 128-bit lane (one group) to its sum, in every dword of the lane.
        let t = _mm512_add_epi32(acc, _mm512_shuffle_epi32::<0x4E>(acc));
        let t = _mm512_add_epi32(t, _mm512_shuffle_epi32::<0xB1>(t));
        let mut out = [0i32; 16];
        // out holds 16 i32.
        _mm512_storeu_si512(out.as_mut_ptr().cast(), t);
        [out[0], out[4], out[8], out[12]]
    }
}
