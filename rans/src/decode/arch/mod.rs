//! Per-ISA SIMD decode arms: the only modules of the crate allowed to use `unsafe`.
//!
//! Each arm exposes a safe `rounds` function with the kernel contract of
//! `decode::rounds_with` and a `detected()` check; the unsafe intrinsics stay inside, each
//! block with a `// SAFETY:` comment. The availability check (CPU detection plus the
//! first-use selftest) lives in `decode/mod.rs`.
#![allow(unsafe_code)] // The SIMD arms (CONTRIBUTING.md): every block carries a SAFETY comment.

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(super) mod x86_64;

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(super) mod aarch64;
