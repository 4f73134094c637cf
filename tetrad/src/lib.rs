//! tetrad: lossless entropy codecs for 4-bit quantized LLM weights — the `std` side.
//!
//! # Overview
//! The codecs live in `no_std` crates ([`tetrad_rans`], [`tetrad_fse`]) and the formats and
//! kernels in [`tetrad_quant`]. This crate is the only one that touches files, JSON and the
//! terminal: safetensors containers, the `tetrad` command-line tool, and [`synth`], the
//! realistic synthetic weights used by the demo, the benchmarks and the tests.
//!
//! For an engine: [`container::Container`] opens a checkpoint (a shard or a directory of
//! shards) and hands out a tensor by name and `[O, I]` as a [`container::TensorView`] whose
//! format was decided by its stamp (verified) or by byte arithmetic, never guessed;
//! [`TensorView::matmul`](container::TensorView::matmul) ([`multiply`]) multiplies with it
//! whatever it is — a dense registry format on the SIMD kernels, or an `int4-rans256-g0`
//! record, an `int4-rans64-t1` blob or a CFS1 blob decoded tile by tile into the int4-row
//! kernel, bit-identical to the dense product. `tetrad matmul` is that call on files.
//!
//! ```
//! use tetrad::container::Container;
//!
//! // A small checkpoint of int4-row expert weights (stamped by nothing: byte arithmetic).
//! let dir = tempfile::tempdir()?;
//! tetrad::synth::write_expert_checkpoint(dir.path(), 1, 1, 64, 256, 7)?;
//! let c = Container::open(dir.path())?;
//! let name = "model.layers.0.mlp.experts.0.up_proj.weight";
//! let w = c.tensor(name, 64, 256)?;
//! let (x, mut y) = (vec![0.5f32; 256], vec![0f32; 64]); // S = 1 activation row
//! let how = w.matmul(name, tetrad::quant::isa::best(), &x, 1, &mut y, 1)?;
//! assert_eq!(how, "int4-row");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # MSRV
//! Rust 1.89.
#![deny(unsafe_code)] // one audited exception: the read-only file map in `io`.

pub mod adapter;
pub mod cfse;
#[cfg(feature = "cli")]
pub mod cli;
pub mod container;
pub mod error;
pub mod gguf;
pub mod io;
pub mod json;
pub mod meta;
pub mod multiply;
pub mod output;
pub mod packed;
pub mod prepared;
pub mod progress;
#[cfg(feature = "cli")]
pub mod quantize_container;
pub mod rans64;
pub mod shard;
pub mod shardset;
#[cfg(feature = "cli")]
pub mod stats;
#[cfg(feature = "cli")]
pub mod synth;
pub mod table_json;
#[cfg(all(test, feature = "cli"))]
mod write_faults;

pub use tetrad_fse as fse;
pub use tetrad_quant as quant;
pub use tetrad_rans as rans;
