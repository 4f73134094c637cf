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
//! - [`kernels`]: `y = x · Wᵀ` for every format with a value rule — [`Matrix`] (a checked view
//!   of one tensor), f32 or int8-quantized ([`QuantizedActs`]) activations, whole matrices or
//!   row ranges, on the best arm or a forced one; [`scalar`] is the normative reference.
//! - [`isa`]: the SIMD arms ([`Isa`]), runtime detection and each arm's first-use selftest.
//! - [`adapter`]: the fused decode-and-multiply, one adapter ([`adapter::FusedMatrix`]) over
//!   a tile-decoder trait ([`adapter::TileSource`]) for an `int4-rans256-g0` record
//!   ([`adapter::Rans256Matrix`]) or a CFS1 blob ([`adapter::Cfs1Matrix`]) of int4-row bytes:
//!   tiles decoded into cache and fed to the int4-row kernel, bit-identical to dense.
//! - [`adapter_rans64`]: its source for an `int4-rans64-t1` blob of int4-row bytes
//!   ([`adapter_rans64::Rans64Matrix`]: tiles from the chunk decoder, row bands from any
//!   chunk).
//!
//! # Example: quantize, multiply, and multiply from a compressed record
//!
//! ```
//! use tetrad_quant::adapter::Rans256Matrix;
//! use tetrad_quant::{Format, Matrix, Scales, kernels, quantize};
//! use tetrad_rans::{FORMAT_SCALE_BITS, FORMAT_STREAMS, Table};
//! use tetrad_rans::{encode_record_packed, max_record_len};
//!
//! // A 64 × 100 float matrix, quantized to int4-row: nibbles + one f32 scale per row.
//! let (o, i): (usize, usize) = (64, 100);
//! let w: Vec<f32> = (0..o * i).map(|k| ((k * 7919 % 201) as f32 - 100.0) / 50.0).collect();
//! let mut codes = vec![0u8; o * i.div_ceil(2)];
//! let mut scales = vec![0f32; o];
//! quantize::quantize_int4_row(&w, o, i, &mut codes, &mut scales)?;
//!
//! // Dense: y = x · Wᵀ for S = 2 activation rows, on this CPU's best arm.
//! let m = Matrix::new(Format::Int4Row, &codes, Scales::F32(&scales), o, i, 0)?;
//! let s = 2;
//! let x: Vec<f32> = (0..s * i).map(|k| (k % 13) as f32 - 6.0).collect();
//! let mut y = vec![0f32; s * o];
//! kernels::matmul(&m, &x, s, &mut y)?;
//!
//! // The same bytes entropy-coded as an int4-rans256-g0 record: the adapter decodes it tile
//! // by tile straight into the same kernel, so the product is the dense one, bit for bit.
//! let mut hist = [0u64; 16];
//! for b in &codes {
//!     hist[usize::from(b & 15)] += 1;
//!     hist[usize::from(b >> 4)] += 1;
//! }
//! let table = Table::from_histogram(FORMAT_SCALE_BITS, &hist)?;
//! let mut record = vec![0u8; max_record_len(2 * codes.len(), FORMAT_STREAMS)];
//! let n = encode_record_packed(&table, &codes, &mut record)?;
//! let c = Rans256Matrix::new(&record[..n], &table, &scales, o, i)?;
//! let mut yc = vec![0f32; s * o];
//! c.matmul(&x, s, &mut yc)?;
//! assert_eq!(y, yc);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Crate features
//! - `std` (default): runtime CPU feature detection for the SIMD kernel arms. Without it the
//!   crate is `no_std` and arms are chosen from `cfg!(target_feature)` at compile time.
//!
//! # MSRV
//! Rust 1.89 (AVX-512 intrinsics).
#![no_std]
#![deny(unsafe_code)] // `unsafe` is allowed only inside `arch/` modules (CONTRIBUTING.md).

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
