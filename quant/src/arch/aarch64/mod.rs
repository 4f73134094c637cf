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
//! This module is only built when NEON is a target feature (every `aarch64-*-linux` target);
//! soft-float aarch64 targets get no SIMD arms.

pub(crate) mod dotprod;
pub(crate) mod i8mm;
pub(crate) mod neon;

/// Columns decoded per chunk.
const CH: usize = 256;
/// Activation rows per batch tile (accumulators live in fixed arrays).
const ST: usize = 16;
