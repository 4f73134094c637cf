//! Static order-0 rANS over the 16-symbol nibble alphabet, and the `int4-rans256-g0` record.
//!
//! `no_std`, no allocation: the caller owns every buffer and the table.
//!
//! # Overview
//! - [`table`]: the frequency [`Table`] (validation in the codec's order, the bit-exact
//!   largest-remainder build from a histogram, slot → symbol lookup), any scale bits 1..=15.
//! - [`stream`]: one rANS stream: encode (backwards into the caller's buffer), the plain
//!   decoder of the spec, and checked decode with the seal.
//! - [`record`]: the `int4-rans256-g0` record: [`max_record_len`], [`encode_record`], and
//!   [`Record::parse_streams`] with the ten ordered refusals.
//! - [`decode`]: batched checked decode of whole records with selectable [`Arm`]s, in one
//!   call ([`decode_record`]) or in chunks ([`Decoder`]).
//! - [`error`]: one error enum per stage; `err.class()` gives the spec's refusal name.
//!
//! # How rANS works here
//! The coder's whole memory is one 32-bit state `x`. Coding symbol `s` with frequency `f`
//! out of `M = 2^sb` maps `x` to `(x div f)·M + (x mod f) + start[s]`: the state grows by a
//! factor of about `M/f`, that is by `log2(M/f)` bits, exactly the symbol's information. The
//! decoder inverts it with one lookup: the low `sb` bits of `x` are a *slot*, the slot lies in
//! the band `[start[s], start[s] + f)` of exactly one symbol, and
//! `x = f·(x >> sb) + slot − start[s]` restores the previous state.
//!
//! To stay in 32 bits the state is kept in the interval `[L, 256·L)` with `L = 2^23`: the
//! decoder, whenever a step leaves `x < L`, shifts in whole bytes until it is back (at most
//! two per symbol here, since `x ≥ 2^8` after every step); the encoder, before a step that
//! would leave the interval, shifts bytes out. Because the two sides shift bytes at mirrored
//! moments, the invariant `x ∈ [L, 256·L)` holds before every encoder step and after every
//! decoder step.
//!
//! rANS is a stack: the decoder pops the symbol the encoder pushed *last*. So the encoder
//! walks the symbols backwards and writes its bytes backwards from the end of its buffer;
//! the finished stream starts with the final encoder state (big-endian), which is the
//! decoder's initial state, followed by the bytes in the order the decoder wants them.
//!
//! # The seal
//! A genuine stream is self-certifying: it starts in `[L, 2^32)`, the decoder consumes it
//! exactly, and after the last symbol the state is back to exactly `L` (the encoder's initial
//! state). Checked decode refuses any stream that breaks one of these (`E_STREAM_UNDERRUN`,
//! `E_STREAM_STATE_RANGE`, `E_STREAM_LEFTOVER`, `E_STREAM_FINAL_STATE`), so corruption is
//! reported by name instead of returning wrong weights, without any reference bytes. Every
//! decode in [`decode`] is checked.
//!
//! # Examples
//! Encode packed int4 bytes as a 256-stream record and decode them back:
//! ```
//! use tetrad_rans::{Record, Table, decode_record, encode_record_packed, max_record_len};
//!
//! let packed: Vec<u8> = (0..10_000u32).map(|i| 0x88 ^ (i % 7) as u8).collect();
//! let mut hist = [0u64; 16];
//! for &b in &packed {
//!     hist[usize::from(b & 15)] += 1;
//!     hist[usize::from(b >> 4)] += 1;
//! }
//! let table = Table::from_histogram(14, &hist)?;
//!
//! let mut blob = vec![0u8; max_record_len(2 * packed.len(), 256)];
//! let len = encode_record_packed(&table, &packed, &mut blob)?;
//! blob.truncate(len);
//!
//! let record = Record::parse(&blob)?;
//! assert_eq!(record.n_symbols(), 20_000);
//! let mut out = vec![0u8; record.packed_bytes() as usize];
//! decode_record(&table, &record, &mut out)?;
//! assert_eq!(out, packed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//! Corruption is refused by name:
//! ```
//! # use tetrad_rans::{Record, Table, decode_record, encode_record_packed, max_record_len};
//! # let packed = [0x98u8; 4096];
//! # let table = Table::from_histogram(14, &[1, 1, 1, 1, 1, 1, 1, 1, 9, 9, 1, 1, 1, 1, 1, 1])?;
//! # let mut blob = vec![0u8; max_record_len(8192, 256)];
//! # let len = encode_record_packed(&table, &packed, &mut blob)?;
//! # blob.truncate(len);
//! blob[1056 + 5] ^= 0x10; // flip a bit in stream 0
//! let record = Record::parse(&blob)?;
//! let mut out = vec![0u8; 4096];
//! let err = decode_record(&table, &record, &mut out).unwrap_err();
//! assert!(err.class().starts_with("E_STREAM_"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Crate features
//! - `std` (default): runtime CPU feature detection of the SIMD decode arms, and
//!   `decode_record_threads` (one record decoded by several threads, streams split in pairs),
//!   and `StreamShare` (one share of the pairs decoded round by round, for callers that cut
//!   the work themselves, as tetrad's threaded fused adapter does).
//!   The codec itself never needs it: without `std`, arms are chosen by `cfg!(target_feature)`.
//!
//! # Format
//! `docs/int4-rans256-g0.md` is the normative description (field tables, refusal order, test
//! vectors).
//!
//! # Unsafe policy
//! The crate root denies `unsafe`; only the SIMD arms under `decode/arch/` may use it, each
//! block with a `// SAFETY:` comment. The scalar arms are safe code.
//!
//! # MSRV
//! Rust 1.89.
#![no_std]
#![deny(unsafe_code)] // `unsafe` is allowed only inside `arch/` modules (CONTRIBUTING.md).

#[cfg(feature = "std")]
extern crate std;

pub mod decode;
pub mod error;
pub mod rans64;
pub mod record;
pub mod stream;
pub mod table;

pub use decode::{Arm, Decoder, decode_record, decode_record_with, verify_record_with};
#[cfg(feature = "std")]
pub use decode::{StreamShare, decode_record_threads};
pub use error::{DecodeError, EncodeError, RecordError, StreamError, TableError};
pub use record::{
    FORMAT_HEAD_LEN, FORMAT_STREAMS, MAX_STREAMS, Nibbles, ParseOrder, Record, encode_record,
    encode_record_packed, head_len, max_record_len,
};
pub use stream::{
    RANS_L, StreamEnd, decode_stream, decode_stream_checked, encode_stream, max_stream_len,
};
pub use table::{FORMAT_SCALE_BITS, MAX_SCALE_BITS, MAX_SLOTS, SYMBOLS, Table, quantize_freq};
