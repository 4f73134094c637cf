//! aarch64 arms: NEON (Advanced SIMD), NEON + dot product (`SDOT`), NEON + int8 matrix
//! multiply (`SMMLA`).
//!
//! All three share one structure, the one of the x86-64 arms: each output row is processed in
//! chunks of [`CH`] columns; a chunk is decoded once with NEON into a small L1-resident buffer of
//! unscaled f32 values (f32 path) or integer codes (int8-activation path), and that buffer is
//! reused by every activation row of the batch tile (up to [`ST`] rows), so a weight is decoded
//! once per row and tile, not once per activation row. Scale groups are walked in the order of
//! the scalar reference, and the int8-activation epilogue (`acc += (d as f32) · scale`, then
//! `· sx`) is the reference's own f32 code, so those results are bit-exact. Exception: the
//! int8-activation path of every arm for int4-row, mxfp4 and int4-grouped with `gs % 32 == 0`
//! (the 4-bit LLM formats) unpacks nibbles in registers with no buffer and shares each weight
//! load between up to 4 activation rows (`neon::q8_nibbles`, `i8mm::q8_nibbles`); likewise the
//! f32 path of those formats, of fp8, int2-row and int3-g64 (`neon::f32_fused`, used by all
//! three arms).
//!
//! The arms differ only in the exact i32 dot product of the int8-activation path:
//! - [`neon`]: `SMULL`/`SMULL2` (i8 × i8 → i16, at most 128 · 127 = 16256, no overflow) and
//!   `SADALP` (pairwise add into i32 lanes);
//! - [`dotprod`]: `SDOT` (four i8 products summed into each i32 lane);
//! - [`i8mm`]: `SMMLA` (a 2 × 8 by 8 × 2 i8 matrix product into a 2 × 2 i32 block), which
//!   computes four dot products at once: two weight rows against two activation rows.
//!
//! The f32 path needs neither extension, so `neon-dot` and `neon-i8mm` run the NEON f32 kernel
//! (after checking their own features, so forcing an arm the CPU lacks is still refused).
//!
//! `SDOT` and `SMMLA` intrinsics (`vdotq_s32`, `vmmlaq_s32`) are unstable on the pinned
//! toolchain (library features `stdarch_neon_dotprod`, `stdarch_neon_i8mm`); the two
//! instructions are emitted with stable `asm!` inside one-instruction safe wrappers
//! (`dotprod::sdot`, `i8mm::smmla`) whose only requirement is the target feature, enforced by
//! `#[target_feature]`. The target features themselves (`dotprod`, `i8mm`) and their runtime
//! detection are stable.
//!
//! Memory is touched through the safe helpers of this module: the slices to read or write come
//! as array references (`arr`, `arr_mut`: a bounds-checked view of `N` elements), and the
//! `#[target_feature]` loads and stores (`ld_u8`, `ld_s8`, `ld_f32`, `st_s8`, …) take those, so
//! the kernels need no `unsafe` of their own; each helper's one `unsafe` block is one vector
//! access. The int8-activation entry points share their checks (`q8_entry`).
//!
//! This module is only built when NEON is a target feature (every `aarch64-*-linux` target);
//! soft-float aarch64 targets get no SIMD arms.

/// Defines `pub(super) fn $name(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t`,
/// which emits the one instruction `$insn acc.4s, a.16b, b.16b` (an int8 multiply-accumulate
/// into i32 lanes whose intrinsic is unstable on the pinned toolchain) with `asm!`, under the
/// target features `$features`. Safe to call from code compiled with those features;
/// elsewhere the caller must have detected them (`unsafe` call).
macro_rules! int8_acc_insn {
    ($(#[$doc:meta])* $name:ident, $insn:literal, $features:literal) => {
        $(#[$doc])*
        #[inline]
        #[target_feature(enable = $features)]
        pub(super) fn $name(
            acc: core::arch::aarch64::int32x4_t,
            a: core::arch::aarch64::int8x16_t,
            b: core::arch::aarch64::int8x16_t,
        ) -> core::arch::aarch64::int32x4_t {
            let mut acc = acc;
            // SAFETY: the instruction reads its three vector registers and writes only `acc`:
            // no memory, stack or flags are touched (hence `pure, nomem, nostack,
            // preserves_flags`). It exists on this CPU because this function carries its
            // target feature, which its callers must guarantee.
            unsafe {
                core::arch::asm!(
                    concat!($insn, " {acc:v}.4s, {a:v}.16b, {b:v}.16b"),
                    acc = inout(vreg) acc,
                    a = in(vreg) a,
                    b = in(vreg) b,
                    options(pure, nomem, nostack, preserves_flags),
                );
            }
            acc
        }
    };
}

/// The two entry points of an arm that adds an int8 instruction to NEON (`dotprod`, `i8mm`):
/// `matmul_f32_rows`, the NEON f32 kernel after checking `$isa`'s features, and
/// `matmul_q8_rows`, which runs `$q8_rows` (an `unsafe fn` whose contract is `$isa`'s
/// features) through [`q8_entry`]. Each returns `false`, without running, if the CPU lacks
/// those features.
macro_rules! neon_plus_entries {
    ($isa:expr, $q8_rows:ident) => {
        /// f32-activation kernel over `rows` (layout of `crate::scalar::matmul_f32_rows`): the
        /// NEON one, after checking this arm's features. Returns `false`, without running, if
        /// the CPU lacks them.
        pub(crate) fn matmul_f32_rows(
            m: &$crate::kernels::Matrix<'_>,
            x: &[f32],
            s: usize,
            rows: core::ops::Range<usize>,
            y: &mut [f32],
        ) -> bool {
            $isa.cpu_supports() && super::neon::matmul_f32_rows(m, x, s, rows, y)
        }

        /// int8-activation kernel over `rows` (layout of `crate::scalar::matmul_q8_rows`).
        /// Returns `false`, without running, if the CPU lacks this arm's features.
        pub(crate) fn matmul_q8_rows(
            m: &$crate::kernels::Matrix<'_>,
            xq: &$crate::kernels::QuantizedActs<'_>,
            rows: core::ops::Range<usize>,
            y: &mut [f32],
        ) -> bool {
            // SAFETY: the kernel's contract is this arm's features, which `q8_entry` checks,
            // and it takes every shape `q8_entry` lets through.
            unsafe { super::q8_entry($isa, m, xq, rows, y, $q8_rows) }
        }
    };
}

pub(crate) mod dotprod;
pub(crate) mod i8mm;
pub(crate) mod neon;

use core::ops::Range;

use crate::isa::Isa;
use crate::kernels::{Matrix, QuantizedActs};

use core::arch::aarch64::{
    float32x4_t, int8x8_t, int8x16_t, int32x4_t, uint8x8_t, uint8x16_t, vld1_s8, vld1_u8,
    vld1q_f32, vld1q_s8, vld1q_u8, vst1q_f32, vst1q_s8, vst1q_s32,
};

/// Columns decoded per chunk.
const CH: usize = 256;
/// Activation rows per batch tile (accumulators live in fixed arrays).
const ST: usize = 16;

/// An arm's int8-activation entry point: `false`, without running, if the CPU lacks `isa`'s
/// features; else the shapes are asserted (layout of `crate::scalar::matmul_q8_rows`) and
/// `kernel` runs over `rows`.
///
/// # Safety
/// `kernel` may be called on any CPU with `isa`'s features (`Isa::cpu_supports`) with shapes that
/// pass the assertion here.
unsafe fn q8_entry(
    isa: Isa,
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
    kernel: unsafe fn(&Matrix<'_>, &QuantizedActs<'_>, Range<usize>, &mut [f32]),
) -> bool {
    if !isa.cpu_supports() {
        return false;
    }
    assert!(xq.i() == m.i() && y.len() >= xq.s() * rows.len() && rows.end <= m.o() && m.has_q8());
    // SAFETY: the CPU has `isa`'s features (checked above) and the shapes passed the assertion:
    // the caller's contract for `kernel`.
    unsafe { kernel(m, xq, rows, y) };
    true
}

/// The `N` elements of `s` from `at` on as an array reference: the length then travels in the
/// type, so the vector loads and stores below are safe functions.
///
/// # Panics
/// If `at + N > s.len()`.
#[inline(always)]
fn arr<T, const N: usize>(s: &[T], at: usize) -> &[T; N] {
    s[at..at + N].try_into().expect("a slice of N elements")
}

/// [`arr`] for writing.
///
/// # Panics
/// If `at + N > s.len()`.
#[inline(always)]
fn arr_mut<T, const N: usize>(s: &mut [T], at: usize) -> &mut [T; N] {
    (&mut s[at..at + N]).try_into().expect("a slice of N elements")
}

/// 16 bytes as a vector of `u8`.
#[inline]
#[target_feature(enable = "neon")]
fn ld_u8(v: &[u8; 16]) -> uint8x16_t {
    // SAFETY: `v` is 16 readable bytes; `vld1q_u8` has no alignment requirement.
    unsafe { vld1q_u8(v.as_ptr()) }
}

/// 16 bytes as a vector of `i8`.
#[inline]
#[target_feature(enable = "neon")]
fn ld_s8(v: &[i8; 16]) -> int8x16_t {
    // SAFETY: `v` is 16 readable bytes; `vld1q_s8` has no alignment requirement.
    unsafe { vld1q_s8(v.as_ptr()) }
}

/// 8 bytes as a 64-bit vector of `u8`.
#[inline]
#[target_feature(enable = "neon")]
fn ld_u8x8(v: &[u8; 8]) -> uint8x8_t {
    // SAFETY: `v` is 8 readable bytes; `vld1_u8` has no alignment requirement.
    unsafe { vld1_u8(v.as_ptr()) }
}

/// 8 bytes as a 64-bit vector of `i8`.
#[inline]
#[target_feature(enable = "neon")]
fn ld_s8x8(v: &[i8; 8]) -> int8x8_t {
    // SAFETY: `v` is 8 readable bytes; `vld1_s8` has no alignment requirement.
    unsafe { vld1_s8(v.as_ptr()) }
}

/// 4 `i32` as a vector.
#[cfg(test)]
#[inline]
#[target_feature(enable = "neon")]
fn ld_s32(v: &[i32; 4]) -> int32x4_t {
    // SAFETY: `v` is 4 readable i32; `vld1q_s32` needs only the element alignment, which the
    // reference has.
    unsafe { core::arch::aarch64::vld1q_s32(v.as_ptr()) }
}

/// 4 `f32` as a vector.
#[inline]
#[target_feature(enable = "neon")]
fn ld_f32(v: &[f32; 4]) -> float32x4_t {
    // SAFETY: `v` is 4 readable f32; `vld1q_f32` needs only the element alignment, which the
    // reference has.
    unsafe { vld1q_f32(v.as_ptr()) }
}

/// A vector of `i8` into 16 bytes.
#[inline]
#[target_feature(enable = "neon")]
fn st_s8(to: &mut [i8; 16], v: int8x16_t) {
    // SAFETY: `to` is 16 writable bytes, borrowed exclusively; no alignment requirement.
    unsafe { vst1q_s8(to.as_mut_ptr(), v) }
}

/// A vector of `f32` into 4 lanes.
#[inline]
#[target_feature(enable = "neon")]
fn st_f32(to: &mut [f32; 4], v: float32x4_t) {
    // SAFETY: `to` is 4 writable f32, borrowed exclusively, with the element alignment.
    unsafe { vst1q_f32(to.as_mut_ptr(), v) }
}

/// A vector of `i32` into 4 lanes.
#[inline]
#[target_feature(enable = "neon")]
fn st_s32(to: &mut [i32; 4], v: int32x4_t) {
    // SAFETY: `to` is 4 writable i32, borrowed exclusively, with the element alignment.
    unsafe { vst1q_s32(to.as_mut_ptr(), v) }
}
