//! int4-row and int8-row, int8-activation path, this width's parts: the row kernel for 2 or 4
//! activation rows at a time ([`q8_int4_row`]), and the block steps of the 8-row band kernels
//! (the [`Bands`] impl, through [`band8_sums`]) that `crate::arch::x86_64::bands` drives for one
//! activation row of int4-row and for int8-row.

use core::arch::x86_64::*;
use core::marker::PhantomData;
use core::ops::Range;

use super::nib_f32::nib64;
use super::reduce::{
    AlignedActs, align_acts, dot64_signed, epilogue_row, prefetch_l2, split_even_odd,
};
use super::{Dot, mask64};
#[cfg(doc)]
use crate::arch::x86_64::band8_sums;
use crate::arch::x86_64::bands::Bands;
use crate::arch::x86_64::{Avx512, BandStep, streams};
use crate::kernels::{Matrix, QuantizedActs, Scales};

/// `Σ nib · x` over a whole int4 row (`nib` = the raw nibble `0..=15`) for `T`
/// activation rows sharing each weight load. Masked tail; the padding nibble of an odd
/// `I` meets a zero activation lane.
///
/// # Safety
/// Features available; `row` holds `ceil(I/2)` bytes and every `xs[k]` `I` codes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn int4_row_dots<D: Dot, const T: usize, const STREAM: bool>(
    row: *const u8,
    xs: [*const i8; T],
    ni: usize,
) -> [i32; T] {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let mut a0 = [_mm512_setzero_si512(); T];
        let mut a1 = [_mm512_setzero_si512(); T];
        let blocks = ni / 64;
        let mut b = 0;
        while b + 2 <= blocks {
            if STREAM {
                prefetch_l2(row.wrapping_add(32 * b).cast());
            }
            // b + 2 ≤ blocks: 64 bytes at 32·b are within the row.
            let (w0, w1) = {
                (
                    nib64(_mm256_loadu_si256(row.add(32 * b).cast())),
                    nib64(_mm256_loadu_si256(row.add(32 * b + 32).cast())),
                )
            };
            for k in 0..T {
                // 128 codes at 64·b are within xs[k].
                a0[k] = D::dpbusd(a0[k], w0, _mm512_loadu_si512(xs[k].add(64 * b).cast()));
                a1[k] = D::dpbusd(a1[k], w1, _mm512_loadu_si512(xs[k].add(64 * b + 64).cast()));
            }
            b += 2;
        }
        let mut c = 64 * b;
        while c < ni {
            let rem = ni - c;
            // the masked loads read the ceil(rem/2) ≤ 32 row bytes at c/2 and the
            // min(rem, 64) codes at c, all valid.
            {
                let wb =
                    _mm512_maskz_loadu_epi8(mask64(rem.div_ceil(2).min(32)), row.add(c / 2).cast());
                let w = nib64(_mm512_castsi512_si256(wb));
                for k in 0..T {
                    let xv = _mm512_maskz_loadu_epi8(mask64(rem), xs[k].add(c));
                    a0[k] = D::dpbusd(a0[k], w, xv);
                }
            }
            c += 64;
        }
        let mut out = [0i32; T];
        for k in 0..T {
            out[k] = _mm512_reduce_add_epi32(_mm512_add_epi32(a0[k], a1[k]));
        }
        out
    }
}

/// `Σ nib · x` of 8 int4 rows against **one** activation row ([`band8_sums`],
/// 128-column blocks): the block's 128 activation codes are loaded once and split into
/// even and odd columns ([`split_even_odd`]), shared by the 8 rows; a row's block is
/// one 64-byte load, `& 0x0F`, `≫ 4 & 0x0F` and two `dpbusd` (no unpacking into column
/// order). In the zero-padded tail the padding nibbles meet zero codes. Exact: `nib ≤
/// 15`, `|x| ≤ 127`.
pub(crate) struct Int4Step<D> {
    /// `0x0F` in every byte.
    mask: __m512i,
    dot: PhantomData<D>,
}

impl<D: Dot> BandStep<__m512i> for Int4Step<D> {
    const W: usize = 64;
    const X: usize = 128;

    #[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
    #[inline(always)]
    unsafe fn step(&self, acc: &mut [__m512i; 8], w: [*const u8; 8], x: *const i8) {
        // SAFETY: the caller has `D`'s features; `x` points at 128 readable codes, each `w[r]`
        // at 64 bytes (`BandStep::step`'s contract).
        unsafe {
            let (xe, xo) =
                split_even_odd(_mm512_loadu_si512(x.cast()), _mm512_loadu_si512(x.add(64).cast()));
            for r in 0..8 {
                let w = _mm512_loadu_si512(w[r].cast());
                let lo = _mm512_and_si512(w, self.mask);
                let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(w), self.mask);
                acc[r] = D::dpbusd(D::dpbusd(acc[r], lo, xe), hi, xo);
            }
        }
    }
}

/// `Σ w · x` of 8 int8 rows against one activation row ([`band8_sums`], 64-column
/// blocks): the block's activation codes are loaded once for the 8 rows, each row's
/// block is one load and one [`dot64_signed`].
pub(crate) struct Int8Step<D>(PhantomData<D>);

// Copied into each band (`D` itself, a marker type, need not be `Copy`).
impl<D> Clone for Int4Step<D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<D> Copy for Int4Step<D> {}

impl<D: Dot> BandStep<__m512i> for Int8Step<D> {
    const W: usize = 64;
    const X: usize = 64;

    #[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
    #[inline(always)]
    unsafe fn step(&self, acc: &mut [__m512i; 8], w: [*const u8; 8], x: *const i8) {
        // SAFETY: the caller has `D`'s features; `x` and each `w[r]` point at 64 readable
        // bytes (`BandStep::step`'s contract).
        unsafe {
            let xv = _mm512_loadu_si512(x.cast());
            for r in 0..8 {
                let w = _mm512_loadu_si512(w[r].cast());
                acc[r] = dot64_signed::<D>(acc[r], w, xv);
            }
        }
    }
}

/// Fused int4-row int8-activation kernel: `d = Σ nib·x − 8·Σx` (exact), then the
/// scalar reference's epilogue. Activation rows 4 or 2 at a time share each weight
/// row's loads ([`int4_row_dots`]); a single one (`S = 1`, or the last of an odd batch)
/// takes the 8-row band kernel [`q8_int4_band8`](crate::arch::x86_64::bands::q8_int4_band8).
///
/// # Safety
/// Features available; shapes as asserted by [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn q8_int4_row<D: Dot>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let (ni, nr, s) = (m.i(), rows.len(), xq.s());
        // One f32 scale per row (the scale kind is checked by `Matrix::new`); read here rather
        // than through `scalar::group_scale_q8`, which LLVM left as a call per row.
        let Scales::F32(sf) = m.scales() else { unreachable!("scale kind checked by Matrix::new") };
        let stream = streams(m);
        let mut s0 = 0;
        while s0 < s {
            let st = if s - s0 >= 4 {
                4
            } else if s - s0 >= 2 {
                2
            } else {
                1
            };
            let mut xp = [core::ptr::null::<i8>(); 4];
            let mut xsum = [0i32; 4];
            for k in 0..st {
                let q = xq.row(s0 + k).0;
                xp[k] = q.as_ptr();
                xsum[k] = q.iter().map(|&v| i32::from(v)).sum();
            }
            if st == 1 {
                crate::arch::x86_64::bands::q8_int4_band8::<Avx512<D>, 64, 128>(
                    m,
                    xq,
                    s0,
                    xsum[0],
                    rows.clone(),
                    y,
                );
                s0 += 1;
                continue;
            }
            let mut abuf = AlignedActs(core::mem::MaybeUninit::uninit());
            // each xp[k], k < st, points at an activation row of I codes.
            align_acts(&mut xp, st, ni, &mut abuf);
            for (r, o) in rows.clone().enumerate() {
                let row = m.row_bytes(o).as_ptr();
                // the row has ceil(I/2) bytes and each activation row I codes.
                let d4: [i32; 4] = {
                    match st {
                        4 if stream => int4_row_dots::<D, 4, true>(row, xp, ni),
                        4 => int4_row_dots::<D, 4, false>(row, xp, ni),
                        _ => {
                            // st = 2 (a single activation row took q8_int4_band8).
                            let x2 = [xp[0], xp[1]];
                            let d = if stream {
                                int4_row_dots::<D, 2, true>(row, x2, ni)
                            } else {
                                int4_row_dots::<D, 2, false>(row, x2, ni)
                            };
                            [d[0], d[1], 0, 0]
                        }
                    }
                };
                let sc = sf[o];
                for k in 0..st {
                    let sx = xq.row(s0 + k).1;
                    y[(s0 + k) * nr + r] = epilogue_row(d4[k] - 8 * xsum[k], sc, sx, ni);
                }
            }
            s0 += st;
        }
    }
}

impl<D: Dot> Bands for Avx512<D> {
    type Acc = __m512i;
    type Int4 = Int4Step<D>;
    type Int8 = Int8Step<D>;

    #[inline(always)]
    unsafe fn int4_step() -> Int4Step<D> {
        // SAFETY: the caller has the arm's features (`Bands::int4_step`'s contract).
        Int4Step { mask: unsafe { _mm512_set1_epi8(0x0F) }, dot: PhantomData }
    }

    #[inline(always)]
    fn int8_step() -> Int8Step<D> {
        Int8Step(PhantomData)
    }
}
