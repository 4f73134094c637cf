//! Batched, checked decode of whole records, with selectable arms.
//!
//! A record's `N` streams are independent, so a decoder keeps `N` states in flight and decodes
//! one *round* (one symbol from every stream, `N` consecutive nibbles, `N/2` output bytes) at
//! a time. The driver here, [`Decoder`], owns the per-stream state (`x`, read position, end)
//! in fixed arrays and hands whole rounds to an *arm*, a kernel that must leave exactly the
//! state and output the reference [`step`] would. Partial rounds (at an
//! output chunk boundary, at the end, or when `N` is odd) are decoded here, symbol by symbol,
//! with the reference step.
//!
//! Every arm is checked: a stream whose initial state is below `L` is never decoded from that
//! state (the arms may disagree there, as the reference's unchecked arms do); its state is set
//! to `L` so all arms stay in lock step, and [`Decoder::finish`] refuses it. The seal of every
//! stream is checked at the end, and the error names the lowest-numbered faulty stream with
//! its first fault (`E_STREAM_STATE_RANGE`, `E_STREAM_LEFTOVER`, `E_STREAM_FINAL_STATE`), so
//! every arm reports the same error on a corrupt record.
//!
//! Output written before [`Decoder::finish`] returns `Ok` is not trustworthy: a stream can only
//! be proven genuine after its last symbol.
//!
//! Arms: [`Arm::Scalar`] (the spec's branchy loop, never reads past a stream) and
//! [`Arm::ScalarBranchFree`] (closed-form renormalisation, groups of streams in registers,
//! tiles of rounds so the output stays in L1).
//!
//! # Adding an arm
//! SIMD arms go in `decode/arch/<isa>/…` (the only place `unsafe` is allowed, each block with
//! a `// SAFETY:` comment) and are wired in three places here: a variant of [`Arm`] (plus its
//! name), [`Arm::is_available`] (runtime detection with the `std` feature, `cfg!` otherwise)
//! and the dispatch in `rounds_with`. The kernel contract is `rounds_with`'s: given the `N`
//! (even) stream states `x`, read positions `pos` and ends `end` (all relative to `data`, the
//! payload followed by its zero padding; `data` may end right at the last stream's end), decode
//! `rounds` full rounds into `out` (exactly `rounds · N/2` bytes, two streams per byte, even
//! stream in the low nibble) and leave `x`/`pos` exactly as [`step`] would. Every state is in
//! `[L, 2^32)` on entry (the driver replaced bad ones), so the closed-form refill is exact;
//! refills must still be capped by `end − pos`, and loads past `data.len()` are not allowed
//! (use a scalar tail or the slack of [`Table::slot_symbols_padded`] for table gathers). The
//! table's slot → symbol bytes are [`Table::slot_symbols_padded`], `freq`/`start` are 16-entry
//! arrays. Tests: every test in `tests/` iterates [`Arm::ALL`], so a new arm is checked against
//! the reference by the golden vectors, the round trips, the bit-flip sweep and the properties.

mod scalar;

use crate::error::{DecodeError, StreamError};
use crate::record::{MAX_STREAMS, Record};
use crate::stream::{RANS_L, seal, step};
use crate::table::Table;

/// A decode implementation. Every arm produces byte-identical output and identical errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Arm {
    /// The reference: the spec's loop, one byte-refill branch per byte.
    Scalar,
    /// Scalar with closed-form renormalisation and several streams in flight.
    ScalarBranchFree,
}

impl Arm {
    /// Every arm this build knows, available or not.
    pub const ALL: &'static [Arm] = &[Arm::Scalar, Arm::ScalarBranchFree];

    /// Whether this arm can run on this machine.
    pub fn is_available(self) -> bool {
        match self {
            Arm::Scalar | Arm::ScalarBranchFree => true,
        }
    }

    /// The fastest available arm.
    pub fn best() -> Arm {
        Arm::ScalarBranchFree
    }

    /// The arm's name (`scalar`, `scalar-bf`), as accepted by [`Arm::from_name`].
    pub const fn name(self) -> &'static str {
        match self {
            Arm::Scalar => "scalar",
            Arm::ScalarBranchFree => "scalar-bf",
        }
    }

    /// The arm of a name given by [`Arm::name`].
    pub fn from_name(name: &str) -> Option<Arm> {
        Arm::ALL.iter().copied().find(|a| a.name() == name)
    }
}

impl core::fmt::Display for Arm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Decodes a parsed record into `out` (exactly `packed_bytes` long) with the best arm,
/// checking every stream's seal.
pub fn decode_record(
    table: &Table,
    record: &Record<'_>,
    out: &mut [u8],
) -> Result<(), DecodeError> {
    decode_record_with(Arm::best(), table, record, out)
}

/// [`decode_record`] with a forced arm (`E_PATH_UNAVAILABLE` if it cannot run here).
pub fn decode_record_with(
    arm: Arm,
    table: &Table,
    record: &Record<'_>,
    out: &mut [u8],
) -> Result<(), DecodeError> {
    let expected = record.packed_bytes();
    if out.len() as u64 != expected {
        return Err(DecodeError::OutputLen { got: out.len() as u64, expected });
    }
    let mut d = Decoder::new(arm, table, *record)?;
    d.decode_next(out)?;
    d.finish()
}

/// Checks every stream's seal of a parsed record without keeping the output: decodes through a
/// 4 KiB stack buffer (no allocation). Returns what [`decode_record_with`] would.
pub fn verify_record_with(arm: Arm, table: &Table, record: &Record<'_>) -> Result<(), DecodeError> {
    let mut d = Decoder::new(arm, table, *record)?;
    let mut buf = [0u8; 4096];
    while d.remaining_bytes() > 0 {
        // At most 4096.
        #[allow(clippy::cast_possible_truncation)]
        let k = d.remaining_bytes().min(buf.len() as u64) as usize;
        d.decode_next(&mut buf[..k])?;
    }
    d.finish()
}

/// An incremental record decoder: decode the packed output in chunks of any size (e.g. row
/// tiles that stay in cache), then [`finish`](Decoder::finish) to check every seal.
///
/// Holds about 3 KiB of per-stream state; no allocation.
#[derive(Debug, Clone)]
pub struct Decoder<'t, 'r> {
    table: &'t Table,
    record: Record<'r>,
    arm: Arm,
    x: [u32; MAX_STREAMS],
    pos: [u32; MAX_STREAMS],
    end: [u32; MAX_STREAMS],
    bad_init: [bool; MAX_STREAMS],
    next_byte: u64,
}

impl<'t, 'r> Decoder<'t, 'r> {
    /// A decoder at the start of `record`, using `arm` (`E_PATH_UNAVAILABLE` if it cannot run
    /// here).
    pub fn new(arm: Arm, table: &'t Table, record: Record<'r>) -> Result<Self, DecodeError> {
        if !arm.is_available() {
            return Err(DecodeError::Unavailable { arm });
        }
        let mut d = Decoder {
            table,
            record,
            arm,
            x: [RANS_L; MAX_STREAMS],
            pos: [0; MAX_STREAMS],
            end: [0; MAX_STREAMS],
            bad_init: [false; MAX_STREAMS],
            next_byte: 0,
        };
        let payload = record.payload();
        for i in 0..record.n_streams() {
            let (a, b) = (record.offset(i), record.offset(i + 1));
            let au = a as usize;
            // Parsing guarantees every stream has at least 4 bytes.
            let x = u32::from_be_bytes([
                payload[au],
                payload[au + 1],
                payload[au + 2],
                payload[au + 3],
            ]);
            if x < RANS_L {
                d.bad_init[i] = true;
            } else {
                d.x[i] = x;
            }
            d.pos[i] = a + 4;
            d.end[i] = b;
        }
        Ok(d)
    }

    /// The arm in use.
    pub const fn arm(&self) -> Arm {
        self.arm
    }

    /// The record being decoded.
    pub const fn record(&self) -> &Record<'r> {
        &self.record
    }

    /// Packed bytes decoded so far.
    pub const fn decoded_bytes(&self) -> u64 {
        self.next_byte
    }

    /// Packed bytes still to decode.
    pub const fn remaining_bytes(&self) -> u64 {
        self.record.packed_bytes() - self.next_byte
    }

    /// Decodes the next `out.len()` packed bytes (at most [`remaining_bytes`]; else
    /// `E_OUTPUT_LEN` and nothing is decoded).
    ///
    /// [`remaining_bytes`]: Decoder::remaining_bytes
    pub fn decode_next(&mut self, out: &mut [u8]) -> Result<(), DecodeError> {
        let remaining = self.remaining_bytes();
        if out.len() as u64 > remaining {
            return Err(DecodeError::OutputLen { got: out.len() as u64, expected: remaining });
        }
        let n_streams = self.record.n_streams();
        let nn = n_streams as u64;
        let j0 = 2 * self.next_byte;
        let j1 = (j0 + 2 * out.len() as u64).min(self.record.n_symbols());
        let mut j = j0;
        while j < j1 && !j.is_multiple_of(nn) {
            self.nibble(j, j0, out);
            j += 1;
        }
        if n_streams.is_multiple_of(2) {
            // Bounded by out.len() / (N/2).
            #[allow(clippy::cast_possible_truncation)]
            let rounds = ((j1 - j) / nn) as usize;
            if rounds > 0 {
                #[allow(clippy::cast_possible_truncation)] // < out.len().
                let at = ((j - j0) / 2) as usize;
                let o = &mut out[at..at + rounds * n_streams / 2];
                rounds_with(
                    self.arm,
                    self.table,
                    self.record.payload_padded(),
                    &mut self.x[..n_streams],
                    &mut self.pos[..n_streams],
                    &self.end[..n_streams],
                    o,
                    rounds,
                );
                j += (rounds * n_streams) as u64;
            }
        }
        while j < j1 {
            self.nibble(j, j0, out);
            j += 1;
        }
        self.next_byte += out.len() as u64;
        Ok(())
    }

    /// Decodes nibble `j` with the reference step into `out` (which starts at nibble `j0`).
    #[inline]
    fn nibble(&mut self, j: u64, j0: u64, out: &mut [u8]) {
        let nn = self.record.n_streams() as u64;
        #[allow(clippy::cast_possible_truncation)] // j % N < N ≤ 256.
        let i = (j % nn) as usize;
        let data = self.record.payload();
        let mut p = self.pos[i] as usize;
        let s = step(self.table, &mut self.x[i], data, &mut p, self.end[i] as usize);
        #[allow(clippy::cast_possible_truncation)] // p ≤ end ≤ payload length < 2^32.
        {
            self.pos[i] = p as u32;
        }
        #[allow(clippy::cast_possible_truncation)] // < out.len().
        let b = ((j - j0) / 2) as usize;
        if j & 1 == 0 {
            out[b] = s;
        } else {
            out[b] |= s << 4;
        }
    }

    /// Checks that everything was decoded and every stream's seal holds.
    pub fn finish(&self) -> Result<(), DecodeError> {
        let expected = self.record.packed_bytes();
        if self.next_byte != expected {
            return Err(DecodeError::Incomplete { decoded: self.next_byte, expected });
        }
        for i in 0..self.record.n_streams() {
            let fault = if self.bad_init[i] {
                let s = self.record.stream(i);
                Err(StreamError::StateRange { state: u32::from_be_bytes([s[0], s[1], s[2], s[3]]) })
            } else {
                seal(self.x[i], (self.end[i] - self.pos[i]) as usize)
            };
            fault.map_err(|error| DecodeError::Stream { stream: i, error })?;
        }
        Ok(())
    }
}

/// Decodes `rounds` full rounds with `arm`: `x`, `pos`, `end` hold the `N` (even) streams'
/// state (positions relative to `data`, which is the payload plus any padding after it; a
/// kernel may read past `end` but consumes only up to it), and `out` is exactly
/// `rounds · N/2` bytes.
#[allow(clippy::too_many_arguments)]
fn rounds_with(
    arm: Arm,
    table: &Table,
    data: &[u8],
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    out: &mut [u8],
    rounds: usize,
) {
    debug_assert!(x.len().is_multiple_of(2) && out.len() == rounds * x.len() / 2);
    match arm {
        Arm::Scalar => scalar::rounds_reference(table, data, x, pos, end, out, rounds),
        Arm::ScalarBranchFree => scalar::rounds_branch_free(table, data, x, pos, end, out, rounds),
    }
}
