//! One rANS stream: a 32-bit state with byte-wise renormalisation.
//!
//! The encoder walks its symbols **backwards** and writes its bytes **backwards** from the end
//! of the caller's buffer, so the finished stream starts with the final encoder state
//! (big-endian) and continues with the renormalisation bytes in the order the decoder reads
//! them. rANS is last-in-first-out: the decoder undoes the encoder's last step first, so
//! encoding in reverse is what lets the decoder produce the symbols forwards.
//!
//! Three decoders:
//! - [`decode_stream`]: the plain decoder of the spec, including the load-bearing
//!   `else break` (a stream that runs out of bytes keeps decoding from its state alone, which
//!   defines the output on malformed input and is what every arm must reproduce);
//! - [`decode_stream_checked`]: the same plus the seal (initial state in `[L, 2^32)`, every
//!   byte consumed, final state exactly `L`), refusing with `E_STREAM_UNDERRUN`,
//!   `E_STREAM_STATE_RANGE`, `E_STREAM_LEFTOVER`, `E_STREAM_FINAL_STATE` in that order;
//! - the per-symbol steps [`step`] (branchy reference) and [`step_branch_free`], shared with
//!   the batched record decoders in [`crate::decode`].

use crate::error::{EncodeError, StreamError};
use crate::table::{MAX_SLOTS, SYMBOLS, Table};

/// The lower bound of the normalised state interval `[L, 256·L)`: `2^23`.
pub const RANS_L: u32 = 1 << 23;

/// The stream of `n` symbols is at most this many bytes at `scale_bits` (`ceil(n·sb/8) + 4`,
/// saturating).
pub const fn max_stream_len(n: usize, scale_bits: u32) -> usize {
    match n.checked_mul(scale_bits as usize) {
        Some(bits) => (bits / 8 + (bits % 8 != 0) as usize).saturating_add(4),
        None => usize::MAX,
    }
}

/// Encodes one stream core: `sym(k)` is symbol `k` of `count`, all already known codable.
/// Writes backwards ending at `dst.len()`; returns the stream length.
#[inline]
pub(crate) fn encode_core(
    table: &Table,
    count: usize,
    sym: impl Fn(usize) -> u8,
    dst: &mut [u8],
) -> Result<usize, EncodeError> {
    let sb = table.scale_bits();
    let freq = table.freq();
    let start = table.start();
    let x_max_unit = (RANS_L >> sb) << 8;
    let mut x = RANS_L;
    let mut p = dst.len();
    for k in (0..count).rev() {
        let s = usize::from(sym(k)) & (SYMBOLS - 1);
        let f = freq[s];
        let x_max = x_max_unit * f;
        while x >= x_max {
            if p == 0 {
                return Err(scratch(dst.len()));
            }
            p -= 1;
            #[allow(clippy::cast_possible_truncation)] // the low byte, by design.
            {
                dst[p] = x as u8;
            }
            x >>= 8;
        }
        x = ((x / f) << sb) + (x % f) + start[s];
    }
    if p < 4 {
        return Err(scratch(dst.len()));
    }
    p -= 4;
    dst[p..p + 4].copy_from_slice(&x.to_be_bytes());
    Ok(dst.len() - p)
}

fn scratch(available: usize) -> EncodeError {
    EncodeError::Scratch { needed: available as u64 + 1, available: available as u64 }
}

/// Encodes `symbols` (one symbol per byte) as one stream, written backwards so it ends at the
/// end of `dst`: the stream is `dst[dst.len() - len..]` for the returned `len`.
///
/// Refuses a symbol above 15 or with frequency 0 before writing anything
/// (`E_SYMBOL_UNCODABLE`), and a `dst` too small (`E_SCRATCH`; [`max_stream_len`] is always
/// enough).
pub fn encode_stream(table: &Table, symbols: &[u8], dst: &mut [u8]) -> Result<usize, EncodeError> {
    if let Some(index) = symbols.iter().position(|&s| !table.codable(s)) {
        return Err(EncodeError::SymbolUncodable { index, symbol: symbols[index] });
    }
    encode_core(table, symbols.len(), |k| symbols[k], dst)
}

/// What the plain decoder ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamEnd {
    /// The state after the last symbol (`L` for a genuine stream).
    pub state: u32,
    /// Bytes of the stream read, including the 4 state bytes.
    pub consumed: usize,
}

/// One decode step, the spec's reference form: decodes a symbol from `x`, then refills byte by
/// byte from `data[*pos..end]` while `x < L`, stopping (the `else break`) when bytes run out.
#[inline(always)]
pub fn step(table: &Table, x: &mut u32, data: &[u8], pos: &mut usize, end: usize) -> u8 {
    let s = decode_symbol(table, x);
    while *x < RANS_L {
        if *pos < end {
            *x = (*x << 8) | u32::from(data[*pos]);
            *pos += 1;
        } else {
            break;
        }
    }
    s
}

/// The symbol part of a step: `slot = x mod M`, `x = freq·(x >> sb) + slot − start`.
#[inline(always)]
pub(crate) fn decode_symbol(table: &Table, x: &mut u32) -> u8 {
    let sb = table.scale_bits();
    let slot = *x & (table.m() - 1);
    let s = table.symbol(slot as usize & (MAX_SLOTS - 1));
    let si = usize::from(s) & (SYMBOLS - 1);
    // Slot lies in the band of s, so slot − start ≥ 0, and freq·(x >> sb) + slot − start
    // < freq·((x >> sb) + 1) ≤ M·2^(32−sb) = 2^32.
    *x = table.freq()[si] * (*x >> sb) + (slot - table.start()[si]);
    s
}

/// One decode step with closed-form renormalisation: `k = [x<2^23] + [x<2^15] + [x<2^7]`
/// bytes, capped by the bytes left, read as one big-endian window.
///
/// Identical to [`step`] whenever the stream's state was in `[L, 2^32)` before its first
/// step (then `x ≥ 2^8` after every step while bytes remain, so the loop of [`step`] reads
/// exactly `k` bytes); checked decoders refuse every other stream up front.
#[inline(always)]
pub fn step_branch_free(
    table: &Table,
    x: &mut u32,
    data: &[u8],
    pos: &mut usize,
    end: usize,
) -> u8 {
    let s = decode_symbol(table, x);
    let v = *x;
    let k = usize::from(v < 1 << 23) + usize::from(v < 1 << 15) + usize::from(v < 1 << 7);
    let k = k.min(end.saturating_sub(*pos));
    let w = read_be4(data, *pos);
    #[allow(clippy::cast_possible_truncation)] // k ≤ 3.
    let shift = 8 * k as u32;
    #[allow(clippy::cast_possible_truncation)] // k bytes were needed, so the result fits.
    {
        *x = ((u64::from(v) << shift) | (u64::from(w) >> (32 - shift))) as u32;
    }
    *pos += k;
    s
}

/// The 4 bytes at `pos` as a big-endian u32, reading zeros past the end of `data`.
#[inline(always)]
pub(crate) fn read_be4(data: &[u8], pos: usize) -> u32 {
    match data.get(pos..pos + 4) {
        Some(w) => u32::from_be_bytes([w[0], w[1], w[2], w[3]]),
        None => {
            let mut b = [0u8; 4];
            for (i, v) in b.iter_mut().enumerate() {
                *v = data.get(pos + i).copied().unwrap_or(0);
            }
            u32::from_be_bytes(b)
        }
    }
}

/// The plain decoder: `out.len()` symbols (one per byte) from `stream`. Only refuses a stream
/// without an initial state (`E_STREAM_UNDERRUN`); on malformed input it returns whatever the
/// spec's decoder returns.
pub fn decode_stream(
    table: &Table,
    stream: &[u8],
    out: &mut [u8],
) -> Result<StreamEnd, StreamError> {
    let Some(head) = stream.first_chunk::<4>() else {
        return Err(StreamError::Underrun { len: stream.len() });
    };
    let mut x = u32::from_be_bytes(*head);
    let mut pos = 4;
    for o in out.iter_mut() {
        *o = step(table, &mut x, stream, &mut pos, stream.len());
    }
    Ok(StreamEnd { state: x, consumed: pos })
}

/// Checked decode of `out.len()` symbols: the plain decoder plus the seal.
pub fn decode_stream_checked(
    table: &Table,
    stream: &[u8],
    out: &mut [u8],
) -> Result<(), StreamError> {
    let Some(head) = stream.first_chunk::<4>() else {
        return Err(StreamError::Underrun { len: stream.len() });
    };
    let x = u32::from_be_bytes(*head);
    if x < RANS_L {
        return Err(StreamError::StateRange { state: x });
    }
    let end = decode_stream(table, stream, out)?;
    seal(end.state, stream.len() - end.consumed)
}

/// The end-of-stream checks: no bytes left, then final state `L`.
#[inline]
pub(crate) fn seal(state: u32, left: usize) -> Result<(), StreamError> {
    if left != 0 {
        Err(StreamError::Leftover { left })
    } else if state != RANS_L {
        Err(StreamError::FinalState { state })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_symbol_table_stream() {
        let mut f = [0u32; 16];
        f[8] = 1 << 14;
        let t = Table::from_freq(14, &f).unwrap();
        let mut dst = [0u8; 16];
        let n = encode_stream(&t, &[8; 100], &mut dst).unwrap();
        assert_eq!(&dst[16 - n..], &[0x00, 0x80, 0x00, 0x00]);
    }

    #[test]
    fn max_stream_len_formula() {
        assert_eq!(max_stream_len(0, 14), 4);
        assert_eq!(max_stream_len(1, 14), 6);
        assert_eq!(max_stream_len(4, 14), 11);
        assert_eq!(max_stream_len(usize::MAX, 14), usize::MAX);
    }
}
