//! The AVX-512 arms (512-bit): [`Plain`] (AVX-512 F + BW) and [`Vnni`] (F + BW + VNNI), for
//! every format with a value rule, both accumulation modes.
//!
//! The two arms differ only in the exact int8 dot step `dpbusd(acc, u, s)` = `acc + Σ₄ u·s`
//! (unsigned bytes `u` times signed bytes `s`, four products per i32 lane), the method of
//! [`Dot`]:
//! - `vnni`: one `vpdpbusd` (non-saturating, wrapping i32 lanes);
//! - `plain`: `vpmaddubsw` + `vpmaddwd(·, 1)` + `vpaddd`. `vpmaddubsw` saturates its i16 pair
//!   sums, so every caller keeps `u ≤ 128` and `s ∈ [−127, 127]` (pair sums ≤ 32 512): then the
//!   two definitions agree exactly, and the arms are bit-identical to each other and to the
//!   scalar reference on the int8-activation path.
//!
//! The operand trap of `vpdpbusd`: the *first* byte operand is unsigned. Signed weight codes
//! therefore go in as magnitudes (`|w| ≤ 128`) with the sign moved onto the activation
//! (`s = −x` where `w < 0`, a masked subtract; `x ≠ −128` by the activation quantizer), or, for
//! int4, as the raw nibble (`0..=15`) with `8·Σx` subtracted afterwards, or, for 32-column
//! groups, as the code plus an offset (nibble; mxfp4 `code + 12`) with `offset·Σx` subtracted
//! through the accumulator's initial value.
//!
//! Decoding:
//! - int4-row, int8-activation path: 32 bytes → 64 nibbles in column order with `vpmovzxbw`, a
//!   shift by 4 and one `vpternlogd` (`(z | z≪4) & 0x0F0F`);
//! - mxfp4 and int4-grouped `gs = 32`, int8-activation path: 64 bytes → the 64 low nibbles
//!   (even columns) and the 64 high ones (odd columns), against activations split once into
//!   even and odd columns; mxfp4 codes through a 16-entry `vpshufb` table (`code + 12`), or,
//!   where the CPU has VBMI (and not under Miri), `vpermb` on the unmasked bytes;
//! - int4 / mxfp4, f32 path: 16 bytes → 32 nibbles in column order (128-bit `and`/shift/
//!   unpack), `vpmovzxbd`, then `vpermps` from a 16-entry f32 table (`nib − 8`, or the e2m1
//!   value): one instruction per 16 weights, no integer→float conversion;
//! - fp8 e4m3: no table, through IEEE half precision (`vcvtph2ps`, exact, never a subnormal
//!   float operand: see `fp8x16`); with activations de-interleaved and pre-multiplied by `2⁸`
//!   (exact) when they fit a stack buffer, 32 bytes decode without widening
//!   (`fp8x32_even_odd`). A NaN code makes its whole output row NaN (as in the reference), so
//!   the decode never patches NaN in; the row is checked instead;
//! - int2-row, int8-activation path: the activation row split once into the four crumb planes
//!   of each 256-column block, then per 64 weight bytes three shifts, four `& 3` and four
//!   `dpbusd` (`q8_int2_row`);
//! - int3-g64, int8-activation path: four groups per step, the low planes as crumbs against
//!   the same crumb planes of the activations, the high planes widened to nibbles whose bit
//!   `k` is the third bit of plane `k` (`q8_int3_g64`);
//! - int8, int2 and int3 (f32 path, or rows over 32 Ki columns) and int4-grouped with a group
//!   size that is not a multiple of 32: a 256-column chunk decoded into an L1 buffer, then
//!   512-bit dot products per group segment.
//!
//! Group tails never read past a row: partial vectors use zero-masked loads (`vmovdqu8`/
//! `vmovups` with a mask), which do not touch (or fault on) masked-off bytes.
//!
//! f32 path: per group, FMA partial sums in several accumulators, `acc = fma(part, scale, acc)`,
//! one horizontal sum per output: within the documented tolerance of the scalar reference.
//! int8 path: exact i32 group sums, then the scalar reference's epilogue (`acc += (d as f32) ·
//! scale` in group order, `y = acc · sx`): bit-exact. For 32-column groups (mxfp4,
//! int4-grouped `gs = 32`) the epilogue itself is vectorised with one output row per lane:
//! 16 rows at a time, exact group sums transposed into lanes (`vpackssdw`, `vpmaddwd`,
//! `vshufi32x4`), scales gathered per group, and each lane performing the reference's f32
//! operations for its row (see `q8_g32_rows16`).
//!
//! Layout: the f32-activation path does not use the dot step, so it is one set of functions
//! compiled with `avx512f,avx512bw` and run by both arms; the int8-activation path is written
//! once as `#[inline(always)]` bodies generic over [`Dot`], monomorphised inside each arm's
//! `#[target_feature]` entry points (the [`Dot`] impls of [`Plain`] and [`Vnni`]): a body never
//! runs outside an entry compiled with its arm's features. By format family:
//! - `reduce`: the dot steps over a run of columns, prefetching, the aligned activation copy;
//! - `rows`: each path's entry body, which runs the kernel `super::dispatch` names for the call,
//!   and the generic decode-then-dot loops;
//! - `nib_f32`: int4-row, int4-grouped and mxfp4 on the f32 path (row kernels for 1 to 4
//!   activation rows, the de-interleaved form, the small-batch tiles);
//! - `fp8`: fp8 e4m3 (f32 path);
//! - `int4_int8_q8`: int4-row and int8-row on the int8 path (bands of 8 rows, row kernels);
//! - `small_ints`: int2-row and int3-g64 on the int8 path;
//! - `grouped`: mxfp4 and int4-grouped with 32-column subgroups on the int8 path (bands of 16
//!   rows, one output row per lane).
//!
//! Unsafe: as in the 256-bit arms (`super::avx2`): the f32-path functions are
//! `#[target_feature]` functions, so only their loads and stores are unsafe; the int8-path bodies
//! are `#[inline(always)]` functions without target features, in which every intrinsic call is an
//! unsafe operation under the entry point's features, marked
//! `#[expect(clippy::multiple_unsafe_ops_per_block)]`, as are the f32 functions whose loads and
//! stores still share one bounds argument.

mod fp8;
mod grouped;
mod int4_int8_q8;
mod nib_f32;
mod reduce;
mod rows;
mod small_ints;

pub(super) use grouped::{QC, restrides};
pub(super) use reduce::XA;

use core::arch::x86_64::{
    __m512i, _mm512_add_epi32, _mm512_dpbusd_epi32, _mm512_madd_epi16, _mm512_maddubs_epi16,
    _mm512_set1_epi16,
};
use core::ops::Range;

use super::{Arm, Avx512};
use crate::isa::Isa;
use crate::kernels::{Matrix, QuantizedActs};

/// Columns decoded per chunk (generic paths).
const CH: usize = 256;
/// Activation rows per batch tile of the generic paths.
const ST: usize = 16;

/// `|code|` of each int4 nibble (`|nib − 8|`); negative codes are the nibbles below 8.
static I4_MAG: [i8; 16] = [8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7];
/// `|code|` of each mxfp4 nibble on the int8 path (`2·e2m1`); bit 3 is the sign.
static MX_MAG: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12];
/// mxfp4 nibble → its int8-path code plus 12 (`2·e2m1 + 12 ∈ [0, 24]`; bit 3 is the sign).
static MX_OFF: [i8; 16] = [12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0];
/// int4 nibble values `nib − 8` as f32.
static I4_F32: [f32; 16] =
    [-8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
/// mxfp4 nibble values (e2m1, bit 3 the sign) as f32, as `crate::scalar::code_value`.
static MX_F32: [f32; 16] =
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0];

/// Mask of the first `n` of 64 byte lanes.
#[inline]
fn mask64(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// Mask of the first `n` of 16 dword lanes.
#[inline]
fn mask16(n: usize) -> u16 {
    if n >= 16 { u16::MAX } else { (1u16 << n) - 1 }
}

/// What differs between the two arms: the exact int8 dot step, and the int8-path entry points
/// compiled with the arm's features (each a thin `#[target_feature]` function monomorphising a
/// generic body of this module for `Self`).
pub(crate) trait Dot: Sized {
    /// The arm.
    const ISA: Isa;

    /// `acc + Σ₄ u·s` per i32 lane (`u` unsigned bytes, `s` signed); exact for every caller
    /// (`u ≤ 128`, `|s| ≤ 127`: the plain arm's `vpmaddubsw` does not saturate).
    ///
    /// # Safety
    /// The CPU has [`Dot::ISA`]'s features.
    unsafe fn dpbusd(acc: __m512i, u: __m512i, s: __m512i) -> __m512i;

    /// [`rows::q8_rows`] for this arm.
    ///
    /// # Safety
    /// The CPU has [`Dot::ISA`]'s features; shapes as asserted by [`matmul_q8_rows`](super::matmul_q8_rows).
    unsafe fn q8_rows(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]);

    /// The band kernel [`grouped::band_body`] for this arm (without VBMI).
    ///
    /// # Safety
    /// As [`Dot::q8_rows`], and `m` a matrix the band kernel takes (`rows::q8_rows`).
    unsafe fn q8_g32_rows16<const MX: bool, const WIDE: bool, const SPECIAL: bool>(
        m: &Matrix<'_>,
        xq: &QuantizedActs<'_>,
        rows: Range<usize>,
        y: &mut [f32],
    );

    /// [`Dot::q8_g32_rows16`] for mxfp4 on a CPU with AVX-512 VBMI: the code lookups are one
    /// `vpermb` each on the raw byte (low nibble) and the byte shifted right by 4 (high
    /// nibble), with the 16-entry table repeated four times, so index bits 4–5 do not matter
    /// and the two `& 0x0F` of the other form are not needed.
    ///
    /// # Safety
    /// As [`Dot::q8_g32_rows16`] for mxfp4, and the CPU has AVX-512 VBMI.
    unsafe fn q8_mx_rows16_vbmi<const SPECIAL: bool>(
        m: &Matrix<'_>,
        xq: &QuantizedActs<'_>,
        rows: Range<usize>,
        y: &mut [f32],
    );
}

/// The thin entry points of an arm: `$feat`, its `target_feature` list, `$feat_vbmi` the same
/// with VBMI; `$arm`, its type.
macro_rules! dot_entries {
    ($feat:literal, $feat_vbmi:literal, $arm:ty) => {
        #[target_feature(enable = $feat)]
        unsafe fn q8_rows(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            // SAFETY: the caller's contract (this arm's features; the shapes).
            unsafe { rows::q8_rows::<$arm>(m, xq, rows, y) }
        }

        #[target_feature(enable = $feat)]
        // Never inlined: inlined into `q8_rows` beside its other instances, the gs = 32 loop
        // ran at 48 instead of 70 G weights/s (avx512-vnni, 512 × 1024, the `kernels` bench).
        #[inline(never)]
        unsafe fn q8_g32_rows16<const MX: bool, const WIDE: bool, const SPECIAL: bool>(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            // SAFETY: the caller's contract (this arm's features; the shapes and format); VBMI
            // is not used.
            unsafe { grouped::band_body::<$arm, MX, WIDE, SPECIAL, false>(m, xq, rows, y) }
        }

        #[target_feature(enable = $feat_vbmi)]
        #[inline(never)]
        unsafe fn q8_mx_rows16_vbmi<const SPECIAL: bool>(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            // SAFETY: the caller's contract, VBMI included (its `vpermb` is inlined here).
            unsafe { grouped::band_body::<$arm, true, false, SPECIAL, true>(m, xq, rows, y) }
        }
    };
}

/// The AVX-512 F + BW arm (`Isa::Avx512`): the int8 dot step is `vpmaddubsw` + `vpmaddwd`.
pub(crate) struct Plain;

impl Dot for Plain {
    const ISA: Isa = Isa::Avx512;

    /// Exact when `u ≤ 128` and `|s| ≤ 127` (no i16 saturation in `vpmaddubsw`: pair sums ≤
    /// 2 · 128 · 127 = 32 512), which every caller guarantees.
    #[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
    #[inline(always)]
    unsafe fn dpbusd(acc: __m512i, u: __m512i, s: __m512i) -> __m512i {
        // SAFETY: the caller has AVX-512 BW (this arm's features), all these intrinsics need.
        unsafe {
            _mm512_add_epi32(
                acc,
                _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)),
            )
        }
    }

    dot_entries!("avx512f,avx512bw", "avx512f,avx512bw,avx512vbmi", Plain);
}

/// The AVX-512 F + BW + VNNI arm (`Isa::Avx512Vnni`): the int8 dot step is one `vpdpbusd`
/// (u8 × s8 products summed four at a time into i32, no saturation).
pub(crate) struct Vnni;

impl Dot for Vnni {
    const ISA: Isa = Isa::Avx512Vnni;

    #[inline(always)]
    unsafe fn dpbusd(acc: __m512i, u: __m512i, s: __m512i) -> __m512i {
        // SAFETY: the caller has AVX-512 VNNI (this arm's features).
        unsafe { _mm512_dpbusd_epi32(acc, u, s) }
    }

    dot_entries!("avx512f,avx512bw,avx512vnni", "avx512f,avx512bw,avx512vnni,avx512vbmi", Vnni);
}

impl<D: Dot> Arm for Avx512<D> {
    const ISA: Isa = D::ISA;

    unsafe fn f32_rows(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]) {
        // SAFETY: the caller's contract: the CPU has `D::ISA`'s features (AVX-512 F and BW among
        // them, this width's f32 path, which has no dot step); the shapes.
        unsafe { rows::f32_rows(m, x, s, rows, y) }
    }

    unsafe fn q8_rows(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]) {
        // SAFETY: the caller's contract: the CPU has `D::ISA`'s features; the shapes.
        unsafe { D::q8_rows(m, xq, rows, y) }
    }
}
