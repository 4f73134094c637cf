//! The CFS1 codec: two interleaved nibble rANS states over a 4096-slot table, with raw
//! fallback — `no_std`, allocation-free, no `unsafe`.
//!
//! # Overview
//! CFS1 is the blob format of the colibrì engine's "FSE variant" codec and its `cfse_pack`
//! container (normative description: `docs/cfs1.md`). It codes any byte string as pairs of
//! nibbles with one static order-0 model: the low nibble of byte `j` goes through rANS state
//! A, the high nibble through state B, both drawing on one 4096-slot frequency table and one
//! shared stream of renormalisation bytes. Order-0 is enough for int4 weight codes because
//! they are statistically white: the order-0 entropy (≈ 2.9 bits per weight for per-row int4
//! of bell-shaped rows) is already the limit, so a blob is ≈ 1.37× smaller than the packed
//! codes. When coding would not shrink the input the blob is the input verbatim ("raw",
//! 9 bytes of header overhead), so a blob is never longer than `n + 9`.
//!
//! This crate writes blobs byte-identical to the reference encoder and refuses exactly what
//! the reference refuses, each refusal as its own [`DecodeError`] variant with the spec's
//! class name ([`DecodeError::class`]). The golden vectors in `docs/vectors/vectors.json`
//! (`cfs1`, `cfs1_rejections`) pin both.
//!
//! | item | what it does |
//! |---|---|
//! | [`encode_into`] | encode into a caller buffer of at least [`max_encoded_len`] bytes |
//! | [`decode_into`] | decode, refusing malformed blobs by name |
//! | [`decode_into_scratch`] | the same with a caller-owned 16 KiB [`DecodeTable`] |
//! | [`Decoder`] | the same in caller-sized pieces (tiles), seal checked with the last one |
//! | [`Header::parse`] | mode and `rawlen` (plus every framing check) without decoding |
//! | [`normalize`], [`count_nibbles`] | the model, exposed for tests and tools |
//!
//! # Examples
//! ```
//! use tetrad_fse::{encode_into, decode_into, max_encoded_len, Header, Mode};
//!
//! // Nibbles peaked at 8, like int4 weight codes.
//! let src: Vec<u8> = (0..4096u32)
//!     .map(|i| {
//!         let lo = [8u8, 8, 7, 9, 8, 6, 10, 8][(i % 8) as usize];
//!         let hi = [8u8, 9, 8, 7, 8, 8, 5, 11][(i * 7 % 8) as usize];
//!         lo | hi << 4
//!     })
//!     .collect();
//! let mut blob = vec![0u8; max_encoded_len(src.len())];
//! let len = encode_into(&src, &mut blob).unwrap();
//! blob.truncate(len);
//!
//! let h = Header::parse(&blob).unwrap();
//! assert_eq!((h.mode, h.len()), (Mode::Rans, 4096));
//! assert!(len < src.len());
//!
//! let mut out = vec![0u8; h.len()];
//! assert_eq!(decode_into(&blob, &mut out), Ok(src.len()));
//! assert_eq!(out, src);
//! ```
//! Incompressible input falls back to raw, and damage is refused by name:
//! ```
//! # use tetrad_fse::{encode_into, decode_into, max_encoded_len, Header, Mode};
//! let src = [0x00u8, 0xff, 0x88];
//! let mut blob = [0u8; max_encoded_len(3)];
//! let len = encode_into(&src, &mut blob).unwrap();
//! assert_eq!(&blob[..len], b"CFS1\x00\x03\x00\x00\x00\x00\xff\x88");
//!
//! let mut out = [0u8; 2];
//! let err = decode_into(&blob[..len], &mut out).unwrap_err();
//! assert_eq!(err.class(), "E_CAPACITY");
//! assert_eq!(err.to_string(), "rawlen is 3 bytes, expected at most the output capacity 2");
//! ```
//!
//! # What the decoder writes
//! On `Ok(n)` exactly `dst[..n]` is written. On a header-stage refusal nothing is written.
//! On a payload-stage refusal (`E_TRUNCATED`, `E_LEFTOVER`, `E_FINAL_STATE`,
//! [`DecodeError::is_payload`]) `dst[..rawlen]` is zeroed before returning, so partially
//! decoded bytes never leak out; `dst[rawlen..]` is never touched. The encoder uses
//! `dst[len..]` as scratch (its contents afterwards are unspecified).
//!
//! # Integrity
//! Mode 1 ends in a seal: the decoder must consume the payload exactly and finish with both
//! states back at `L = 2^23`. A random payload change escapes it with probability about
//! 2^-46. Raw blobs carry no check at all; a container that needs one adds it.
//!
//! # Relation to `tetrad-rans`
//! Both crates are static nibble rANS with 32-bit states, 8-bit renormalisation and
//! `x' = freq · (x >> bits) + slot − cum`, but little else is the same: CFS1 normalises with
//! the reference's floor-and-"big" rule (not largest remainder), fixes 12 probability bits
//! and `L = 2^23`, interleaves exactly two states over one shared byte stream, stores the
//! states little-endian at the front of the payload, and seals with `x == L`. Sharing the
//! table builder or the stream code would mean parameterising exactly the parts that differ,
//! so this crate is self-contained (no dependency on `tetrad-rans`); the common part is a
//! dozen lines of arithmetic.
//!
//! # Crate features
//! None. The crate is `#![no_std]`, never allocates, and forbids `unsafe`; it links into a
//! bare-metal target as is.
//!
//! # Format
//! `docs/cfs1.md` in the repository (the normative description, with the test-vector
//! appendix), which follows the colibrì engine's `cfse_pack` codec byte for byte.
//!
//! # Performance
//! The decoder runs blocks of 16 pairs without per-byte bounds branches where the remaining
//! payload proves them unnecessary, refills branch-free, and loads the stream one pair ahead
//! so that no load sits on the states' dependency chains. Its speed is bounded by the
//! per-state chain (slot → table load → multiply → add → refill select, ≈ 14 cycles
//! measured): the two states overlap, so at best one pair per chain latency. `tetrad bench
//! codecs` and `cargo bench -p tetrad-benches --bench cfs1` measure it; `docs/PERFORMANCE.md`
//! has the numbers, with the CPU and the command.
//!
//! # MSRV
//! The workspace's `rust-version` (1.89).
#![no_std]
#![forbid(unsafe_code)]

mod decode;
mod encode;
mod error;
mod header;
mod incremental;
mod model;

pub use decode::{decode_into, decode_into_scratch};
pub use encode::encode_into;
pub use error::{DecodeError, EncodeError};
pub use header::{HEADER_LEN, Header, MAGIC, MIN_RANS_LEN, Mode, TABLE_END};
pub use incremental::Decoder;
pub use model::{DecodeTable, count_nibbles, normalize};

/// Probability bits of the model: the table has `M = 2^12` slots.
pub const PROB_BITS: u32 = 12;
/// Total frequency of the table: 4096.
pub const M: u32 = 1 << PROB_BITS;
/// Lower bound of a normalised state (and the initial and final state): `2^23`.
pub const L: u32 = 1 << 23;

/// The largest blob [`encode_into`] can write for `n` input bytes, and the smallest output
/// buffer it accepts: `n + 9 + 64` (header, and headroom the reference reserves). Blobs
/// themselves never exceed `n + 9`. Saturates at `usize::MAX`.
#[must_use]
pub const fn max_encoded_len(n: usize) -> usize {
    n.saturating_add(HEADER_LEN + 64)
}
