//! tetrad: lossless entropy codecs for 4-bit quantized LLM weights — the `std` side.
//!
//! # Overview
//! The codecs live in `no_std` crates ([`tetrad_rans`], [`tetrad_fse`]) and the formats and
//! kernels in [`tetrad_quant`]. This crate is the only one that touches files, JSON and the
//! terminal: safetensors containers, the `tetrad` command-line tool, and [`synth`], the
//! realistic synthetic weights used by the demo, the benchmarks and the tests.
//!
//! # MSRV
//! Rust 1.89.
#![deny(unsafe_code)] // one audited exception: the read-only file map in `io`.

pub mod adapter;
pub mod cfse;
pub mod cli;
pub mod container;
pub mod gguf;
pub mod io;
pub mod json;
pub mod progress;
pub mod quantize_container;
pub mod rans256;
pub mod rans64;
pub mod shard;
pub mod shardset;
pub mod stats;
pub mod synth;
pub mod table_json;

pub use tetrad_fse as fse;
pub use tetrad_quant as quant;
pub use tetrad_rans as rans;
