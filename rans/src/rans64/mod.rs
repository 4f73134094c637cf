//! `int4-rans64-t1`: tetrad's own entropy-coded int4 format, built for SIMD decode.
//!
//! `int4-rans256-g0` is fixed by compatibility: byte renormalisation (up to two refills per
//! symbol, a loop), a 14-bit slot table that needs a gather per symbol, 256 separate streams
//! with their own pointers. This format keeps what makes rANS exact (a static order-0 model
//! over the 16 nibble values, coded to within a hair of the entropy) and changes everything
//! that made the compat decoder slow:
//!
//! - **32-bit states, 16-bit renormalisation**: the state lives in `[2^16, 2^32)`, so a decode
//!   step needs *at most one* refill word and never loops.
//! - **64 lanes in 4 ways**: a chunk is coded by 64 interleaved states; lanes `16w..16w+16`
//!   form *way* `w`, and each way reads its own word stream. One way is one AVX-512 vector
//!   (two AVX2 vectors, four NEON vectors); its 16 lanes take their refill words from the
//!   way's stream in lane order, so a vector refill is one load plus an expand, and the four
//!   ways are four independent dependency chains.
//! - **A 16-bucket alias table instead of a slot table**: with `M = 4096` slots and 16 symbols
//!   the slots split into 16 buckets of 256; bucket `b` belongs to symbol `b` below a divider
//!   and to one *alias* symbol above it (Walker's alias method). Decoding a slot is a 16-entry
//!   lookup, a compare, and a second 16-entry lookup: one register permute each on AVX-512,
//!   no memory gathers, and the whole model fits in three registers. The mapping is a
//!   bijection on slots, so the coding is exactly as tight as a cumulative-frequency table.
//! - **Bytes per lane**: lane `ℓ` of a chunk codes the bytes `ℓ, ℓ + 64, ℓ + 128, …`, low
//!   nibble first, so a vector of decoded symbols packs into output bytes without shuffles.
//! - **Independent chunks with an index**: the tensor's packed bytes are cut into chunks of
//!   `2^chunk_shift` bytes (1 MiB by default), each with its own frequency table (at least as
//!   tight as one per tensor), its own final states and its own seal, so threads and row-band
//!   readers can decode any chunk alone. A chunk that would not shrink is stored raw.
//!
//! Integrity: every coded chunk carries the rANS seal (each of its 64 states ends exactly at
//! `L = 2^16` and each way's stream is consumed exactly), and since version 2 every chunk
//! (coded or raw) a 64-bit check of its stored bytes, verified before the chunk is decoded
//! ([`chunk_check`], `E_CHECKSUM`). The seal alone is not enough: rANS is a near-complete
//! code, and where a chunk's frequencies are (nearly) equal a damaged chunk is often another
//! genuine one (up to 0.9 % of single-bit flips of near-uniform chunks, and nearly all where
//! the frequencies are equal powers of two, decoded "successfully" to other nibbles under
//! version 1). The check covers the stored bytes, not the decoded ones, so
//! it costs one pass over the (smaller) coded chunk, which also warms the cache for its
//! decode. Version 1 blobs still decode, protected by the seal only.
//!
//! Versions: the above is version 2. Version 3 (the one [`encode_into`] writes; docs §7) keeps
//! the layout and halves every width: 16-bit states with byte renormalisation, `M = 256`, 128
//! lanes in 4 ways of 32, so a 256-bit vector holds 16 lanes and every alias-table lookup is
//! one byte shuffle; it decodes about 1.5 × faster on every SIMD arm for blobs 0.3–1 % larger.
//! [`encode_v2_into`] still writes version 2; every version is decoded.
//!
//! The normative description is `docs/int4-rans64-t1.md`; the scalar decoder here
//! ([`decode_with`] with [`Arm::Scalar`]) is its executable form, and every SIMD arm is
//! byte-identical to it, including the error on every invalid input.
//!
//! # Example
//! ```
//! use tetrad_rans::rans64;
//!
//! let packed: Vec<u8> = (0..100_000u32).map(|i| 0x88 ^ (i.wrapping_mul(2654435761) >> 29) as u8).collect();
//! let mut blob = vec![0u8; rans64::max_encoded_len(packed.len(), rans64::DEFAULT_CHUNK_SHIFT)];
//! let len = rans64::encode_into(&packed, rans64::DEFAULT_CHUNK_SHIFT, &mut blob)?;
//! blob.truncate(len);
//! assert!(len < packed.len());
//!
//! let mut out = vec![0u8; packed.len()];
//! rans64::decode_into(&blob, &mut out)?;
//! assert_eq!(out, packed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arch;
mod check;
mod decode;
mod decode3;
mod encode;
mod encode3;
mod error;
mod format;
mod model;
mod model3;

pub use check::{CHECK_LANES, CHECK_P, chunk_check, chunk_check_scalar, chunk_check_vectorized};
#[cfg(feature = "std")]
pub use decode::decode_threads;
pub use decode::{Arm, ChunkDecoder, decode_chunk_with, decode_into, decode_with};
pub use encode::{encode_into, encode_v2_into, encode_v2_with, max_encoded_len};
pub use encode3::encode_v3_into;
pub use error::{EncodeError, Error};
pub use format::{Blob, Chunk, ChunkBody};
pub use model::{Model, normalize};
pub use model3::{Model3, normalize3};

/// The format's registry name.
pub const FORMAT_NAME: &str = "int4-rans64-t1";
/// The four bytes every blob starts with.
pub const MAGIC: [u8; 4] = *b"T4R1";
/// The first version, without chunk checks (read, never written).
pub const VERSION_1: u8 = 1;
/// Version 2: 32-bit states, `M = 4096`, 16-bit renormalisation, 64 lanes in 4 ways of 16,
/// and a check per chunk ([`chunk_check`]). Written by [`encode_v2_into`]; read everywhere.
pub const VERSION_2: u8 = 2;
/// Version 3: 16-bit states, `M = 256`, byte renormalisation, 128 lanes in 4 ways of 32
/// (the chunk checks of version 2 kept). Written by [`encode_v3_into`]; read everywhere.
pub const VERSION_3: u8 = 3;
/// The version [`encode_into`] writes: 3, which decodes about 1.5 × faster than version 2
/// on every SIMD arm for blobs 0.3–1 % larger (`tetrad bench codecs` measures both).
pub const DEFAULT_VERSION: u8 = VERSION_3;
/// Bytes of the fixed blob header (magic, version, chunk shift, reserved, byte count).
pub const HEADER_LEN: usize = 16;
/// Interleaved rANS states per chunk.
pub const LANES: usize = 64;
/// Independent word streams per chunk.
pub const WAYS: usize = 4;
/// Lanes per way (one AVX-512 vector).
pub const WAY_LANES: usize = LANES / WAYS;
/// Bits of the model's total: frequencies sum to `M = 2^12`.
pub const SCALE_BITS: u32 = 12;
/// The model's total `M`.
pub const M: u32 = 1 << SCALE_BITS;
/// Lower bound of the state interval `[L, 2^32)`; also the final state that seals a chunk.
pub const RANS_L: u32 = 1 << 16;
/// Bytes of a coded chunk's head: 16 frequencies (u16), 4 way lengths (u32), 64 states (u32).
pub const CHUNK_HEAD_LEN: usize = 2 * 16 + 4 * WAYS + 4 * LANES;
/// Version 3: interleaved rANS states per chunk (16-bit states).
pub const V3_LANES: usize = 128;
/// Version 3: lanes per way (one 512-bit vector of 16-bit states, two 256-bit ones).
pub const V3_WAY_LANES: usize = V3_LANES / WAYS;
/// Version 3: the model's total `M` (8 scale bits).
pub const V3_M: u32 = 256;
/// Version 3: lower bound of the state interval `[L, 2^16)`, and the sealing final state.
pub const V3_RANS_L: u32 = 256;
/// Version 3: bytes of a coded chunk's head: 16 frequencies (u8), 4 way lengths (u32), 128
/// states (u16).
pub const V3_CHUNK_HEAD_LEN: usize = 16 + 4 * WAYS + 2 * V3_LANES;
/// Default chunk size: `2^20` packed bytes (about 700 KB coded for typical int4 weights, so
/// the 304-byte chunk head stays below 0.05 %).
pub const DEFAULT_CHUNK_SHIFT: u8 = 20;
/// Smallest allowed chunk shift (4 KiB chunks).
pub const MIN_CHUNK_SHIFT: u8 = 12;
/// Largest allowed chunk shift (64 MiB chunks).
pub const MAX_CHUNK_SHIFT: u8 = 26;
/// Largest packed byte count a blob may declare (`2^48`): keeps every size computation far
/// from overflow on 64-bit hosts and the chunk index addressable.
pub const MAX_BYTES: u64 = 1 << 48;
