//! int4-row and int8-row, int8-activation path, this width's parts: the row kernel for 2 or 4
//! activation rows at a time ([`q8_int4_row`]), and the block steps of the 8-row band kernels
//! (the [`Bands`] impl, through [`band8_sums`]) that `crate::arch::x86_64::bands` drives for one
//! activation row of int4-row and for int8-row.

use core::arch::x86_64::*;
use core::marker::PhantomData;
use core::ops::Range;

use super::Dot;
use super::reduce::{dot32_i8, hsum_epi32, split_even_odd};
#[cfg(doc)]
use crate::arch::x86_64::band8_sums;
use crate::arch::x86_64::bands::Bands;
use crate::arch::x86_64::{Avx2, BandStep};
use crate::kernels::{Matrix, QuantizedActs, Scales};

/// `Σ nib · x` over the full 64-column blocks of one int4 row for `T` activation rows at
/// once (one weight load and unpack shared by the `T` rows):
/// `dpbusd2(acc, nib, x, nib', x')` with `nib ≤ 15`, `|x| ≤ 127` (within `dpbusd2`'s
/// bound: in the AVX2 arm, pair sums ≤ 3810, two added ≤ 7620, no i16 saturation).
///
/// # Safety
/// The arm's features available; `row` holds at least `32 · blocks` bytes and every
/// `xs[k]` at least `64 · blocks`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn int4_blocks_q8<D: Dot, const T: usize>(
    row: *const u8,
    xs: [*const i8; T],
    blocks: usize,
) -> [i32; T] {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let mut acc = [_mm256_setzero_si256(); T];
        let mask = _mm256_set1_epi8(0x0F);
        for b in 0..blocks {
            // b < blocks, so the 32 bytes at 32·b are within the row.
            let v = _mm256_loadu_si256(row.add(32 * b).cast());
            let lo = _mm256_and_si256(v, mask);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), mask);
            let a = _mm256_unpacklo_epi8(lo, hi); // columns 0..16 | 32..48
            let c = _mm256_unpackhi_epi8(lo, hi); // columns 16..32 | 48..64
            let w0 = _mm256_permute2x128_si256::<0x20>(a, c); // columns 0..32
            let w1 = _mm256_permute2x128_si256::<0x31>(a, c); // columns 32..64
            for k in 0..T {
                // 64 codes at 64·b are within xs[k].
                let (x0, x1) = {
                    (
                        _mm256_loadu_si256(xs[k].add(64 * b).cast()),
                        _mm256_loadu_si256(xs[k].add(64 * b + 32).cast()),
                    )
                };
                acc[k] = D::dpbusd2(acc[k], w0, x0, w1, x1);
            }
        }
        let mut out = [0i32; T];
        for k in 0..T {
            out[k] = hsum_epi32(acc[k]);
        }
        out
    }
}

/// Fused int4-row int8-activation kernel: `d = Σ nib·x − 8·Σx` (exact), then the scalar reference's
/// epilogue `((0 + d·s) · sx)`. Activation rows 4 or 2 at a time share each weight row's loads
/// ([`int4_blocks_q8`]); a single one (`S = 1`, or the last of an odd batch) takes the 8-row band
/// kernel [`q8_int4_band8`](crate::arch::x86_64::bands::q8_int4_band8).
///
/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_q8_rows`](crate::arch::x86_64::matmul_q8_rows).
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
        let blocks = ni / 64;
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
                crate::arch::x86_64::bands::q8_int4_band8::<Avx2<D>, 32, 64>(
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
            for (r, o) in rows.clone().enumerate() {
                let row = m.row_bytes(o);
                // the row has ceil(I/2) ≥ 32·blocks bytes and each activation row I ≥
                // 64·blocks codes.
                let d4: [i32; 4] = {
                    match st {
                        4 => int4_blocks_q8::<D, 4>(row.as_ptr(), xp, blocks),
                        2 => {
                            let d = int4_blocks_q8::<D, 2>(row.as_ptr(), [xp[0], xp[1]], blocks);
                            [d[0], d[1], 0, 0]
                        }
                        _ => [int4_blocks_q8::<D, 1>(row.as_ptr(), [xp[0]], blocks)[0], 0, 0, 0],
                    }
                };
                let sc = sf[o];
                for k in 0..st {
                    let (q, sx) = xq.row(s0 + k);
                    let mut d = d4[k] - 8 * xsum[k];
                    for (c, &xv) in q.iter().enumerate().skip(64 * blocks) {
                        d += i32::from((row[c / 2] >> (4 * (c % 2))) & 0xF) * i32::from(xv);
                    }
                    let mut acc = 0.0f32;
                    if ni > 0 {
                        #[allow(clippy::cast_precision_loss)] // the spec's rounding
                        let df = d as f32;
                        acc += df * sc;
                    }
                    y[(s0 + k) * nr + r] = acc * sx;
                }
            }
            s0 += st;
        }
    }
}

/// `Σ nib · x` of 8 int4 rows against **one** activation row ([`band8_sums`], 64-column
/// blocks): the block's activation codes are loaded once and split into even and odd
/// columns ([`split_even_odd`]: the layout of the low and high nibbles of a row's 32
/// bytes), shared by the 8 rows; a row's block is one load, `& 0x0F`, `≫ 4 & 0x0F` and
/// one `dpbusd2` (no unpacking into column order). In the zero-padded tail the padding
/// nibbles meet zero codes. Exact as [`int4_blocks_q8`] (`nib ≤ 15`, `|x| ≤ 127`).
pub(crate) struct Int4Step<D> {
    /// `0x0F` in every byte.
    mask: __m256i,
    dot: PhantomData<D>,
}

impl<D: Dot> BandStep<__m256i> for Int4Step<D> {
    const W: usize = 32;
    const X: usize = 64;

    #[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
    #[inline(always)]
    unsafe fn step(&self, acc: &mut [__m256i; 8], w: [*const u8; 8], x: *const i8) {
        // SAFETY: the caller has `D`'s features; `x` points at 64 readable codes, each `w[r]`
        // at 32 bytes (`BandStep::step`'s contract).
        unsafe {
            let (xe, xo) =
                split_even_odd(_mm256_loadu_si256(x.cast()), _mm256_loadu_si256(x.add(32).cast()));
            for r in 0..8 {
                let w = _mm256_loadu_si256(w[r].cast());
                let lo = _mm256_and_si256(w, self.mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(w), self.mask);
                acc[r] = D::dpbusd2(acc[r], lo, xe, hi, xo);
            }
        }
    }
}

/// `Σ w · x` of 8 int8 rows against one activation row ([`band8_sums`], 32-column
/// blocks): the block's activation codes are loaded once for the 8 rows, each row's
/// block is one load and one [`dot32_i8`].
pub(crate) struct Int8Step<D>(PhantomData<D>);

// Copied into each band (`D` itself, a marker type, need not be `Copy`).
impl<D> Clone for Int4Step<D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<D> Copy for Int4Step<D> {}

impl<D: Dot> BandStep<__m256i> for Int8Step<D> {
    const W: usize = 32;
    const X: usize = 32;

    #[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
    #[inline(always)]
    unsafe fn step(&self, acc: &mut [__m256i; 8], w: [*const u8; 8], x: *const i8) {
        // SAFETY: the caller has `D`'s features; `x` and each `w[r]` point at 32 readable
        // bytes (`BandStep::step`'s contract).
        unsafe {
            let xv = _mm256_loadu_si256(x.cast());
            for r in 0..8 {
                let w = _mm256_loadu_si256(w[r].cast());
                acc[r] = dot32_i8::<D>(acc[r], w, xv);
            }
        }
    }
}

impl<D: Dot> Bands for Avx2<D> {
    type Acc = __m256i;
    type Int4 = Int4Step<D>;
    type Int8 = Int8Step<D>;

    #[inline(always)]
    unsafe fn int4_step() -> Int4Step<D> {
        // SAFETY: the caller has the arm's features (`Bands::int4_step`'s contract).
        Int4Step { mask: unsafe { _mm256_set1_epi8(0x0F) }, dot: PhantomData }
    }

    #[inline(always)]
    fn int8_step() -> Int8Step<D> {
        Int8Step(PhantomData)
    }
}
