//! x86-64 arms: AVX2 + FMA and AVX2 + FMA + AVX-VNNI (256-bit, `avx2::{plain, vnni}`),
//! AVX-512 F + BW and AVX-512 F + BW + VNNI (512-bit, `avx512::{plain, vnni}`). Each file is one
//! kernel body instantiated twice, the two instances differing only in the exact int8 dot step.
//!
//! All arms share one structure: each output row is processed in chunks of 256 columns; a
//! chunk is decoded once (SIMD unpacking) into a small L1-resident buffer of unscaled values
//! (f32 path) or integer codes (int8-activation path), and that buffer is then reused by every
//! activation row of the batch (weights are decoded once per row and batch tile, not once per
//! activation row). Scale groups are walked in the order of the scalar reference.
pub(crate) mod avx2;
pub(crate) mod avx512;
