//! Weight formats of 4-bit-era LLM inference: the registry, byte-arithmetic format inference
//! with stamps (TRUST-VERIFY-REFUSE), the quantizers, and the quantized matmul kernels.
//!
//! # Overview
//! - [`format`]: the registry — [`Format`], its ordinals, names, byte formulas and statuses.
//! - [`resolve`](mod@resolve): format inference from byte arithmetic ([`resolve()`]), stamp-aware.
//! - [`stamp`]: the `colibri.fmt` stamp document (strict allocation-free JSON), the `std`
//!   container-level [`stamp::StampSet`], and [`stamp::verify`] (TRUST-VERIFY-REFUSE).
//! - [`quantize`]: the reference quantizers of `docs/FORMATS.md` (round half to even, never the
//!   most negative code), producing the exact bytes a colibrì-style container stores.
//! - [`adapter_rans64`]: the fused decode-and-multiply over an `int4-rans64-t1` blob of
//!   int4-row bytes (tiles from its chunk decoder straight into the int4-row kernel).
//!
//! # Crate features
//! - `std` (default): runtime CPU feature detection for the SIMD kernel arms. Without it the
//!   crate is `no_std` and arms are chosen from `cfg!(target_feature)` at compile time.
//!
//! # MSRV
//! Rust 1.89 (AVX-512 intrinsics).
#![no_std]
#![deny(unsafe_code)] // `unsafe` is allowed only inside `arch/` modules (STYLE.md).

#[cfg(feature = "std")]
extern crate std;

pub mod adapter;
pub mod adapter_rans64;
mod arch;
pub mod format;
pub mod isa;
pub mod kernels;
pub mod quantize;
pub mod resolve;
pub mod scalar;
pub mod stamp;

pub use format::Format;
pub use isa::Isa;
pub use kernels::{KernelError, Matrix, QuantizedActs, Scales};
pub use resolve::{ResolveError, Resolved, resolve};
