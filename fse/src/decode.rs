//! The CFS1 decoder: header stage, then two interleaved rANS states over one decode table,
//! then the seal.
//!
//! # Structure
//! [`decompress_into`] runs the header stage ([`crate::header`]), builds the table and
//! decodes pairs of nibbles. Each output byte `j` is one *pair*: state A decodes nibble `2j`
//! (the low nibble) and renormalises, then state B decodes nibble `2j+1` and renormalises;
//! both draw renormalisation bytes from one shared forward stream.
//!
//! # The fast path and its proof
//! After a step `x = freq · (x >> 12) + bias` with `x ≥ L = 2^23` before it, `x >> 12 ≥ 2^11`
//! and `freq ≥ 1`, so the new `x ≥ 2^11`: two refill bytes (`2^11 → 2^19 → 2^27`) always
//! bring it back to `≥ L`. A pair therefore consumes at most 4 bytes, and a block of
//! `BLOCK = 16` pairs at most 64. While at least 64 payload bytes remain and at least 16
//! pairs are left, the decoder takes a `&[u8; 64]` window (one length check) and runs the
//! block with no per-byte bounds branch: before pair `i` of the block at most `4i ≤ 60`
//! bytes were consumed, so the 4-byte peek at the consumed offset `q` stays in the window;
//! `q.min(60)` is a no-op by this argument and only lets the compiler see the bound. Pairs
//! outside such blocks (the last < 64 bytes, the last < 16 pairs) go through the checked
//! step, which tests every byte fetch. Both paths compute the same function, so a blob's
//! outcome never depends on which path decoded which pair.
//!
//! # The dependency chain
//! Each state is a serial chain: `slot = x & 4095` → table load → `freq · (x >> 12)` → `+ bias`
//! → compare with `L` → select the refilled value. The two states run in parallel, so one
//! pair costs about one chain latency (≈ 12–14 cycles); the refill is branch-free (a select
//! between `x`, `x << 8 | b0`, `x << 16 | b0 b1`) because renormalisation happens on about a
//! third of the steps at random, where a branch would mispredict often. See
//! `docs/PERFORMANCE.md` for measured numbers.
//!
//! # What the decoder writes
//! On `Ok(n)` exactly `dst[..n]` is written (the decoded bytes). On a header-stage error
//! nothing is written. On a payload-stage error (`E_TRUNCATED`, `E_LEFTOVER`,
//! `E_FINAL_STATE`) `dst[..rawlen]` is set to zero before returning, so no partially decoded
//! data can be mistaken for output; `dst[rawlen..]` is never touched.

use crate::error::DecodeError;
use crate::header::{self, HEADER_LEN, MIN_RANS_LEN, Mode};
use crate::model::DecodeTable;
use crate::{L, PROB_BITS};

/// Pairs per fast block.
const BLOCK: usize = 16;
/// Payload bytes a fast block may consume: 4 per pair (module docs).
const WINDOW: usize = 4 * BLOCK;

/// Decompresses one CFS1 blob into `dst` and returns the number of bytes written (`rawlen`).
///
/// `dst` must hold at least `rawlen` bytes (read it first with
/// [`Header::parse`](crate::Header::parse) if unknown). See the module docs of
/// `tetrad_fse::decode` — "What the decoder writes" — for what `dst` holds after an error.
/// Builds a 16 KiB decode table on the stack; [`decompress_into_with`] takes one from the
/// caller instead.
///
/// # Errors
/// Every refusal of `docs/cfs1.md` §5, as a [`DecodeError`] whose
/// [`class`](DecodeError::class) is the spec's name.
///
/// ```
/// let src = b"\x01\x23\x45\x67\x89\xab\xcd\xef".repeat(8);
/// let mut blob = [0u8; 64 + 73];
/// let len = tetrad_fse::compress_into(&src, &mut blob).unwrap();
/// let mut out = [0u8; 64];
/// assert_eq!(tetrad_fse::decompress_into(&blob[..len], &mut out), Ok(64));
/// assert_eq!(out[..], src[..]);
/// // One byte short: refused, never a panic.
/// let err = tetrad_fse::decompress_into(&blob[..len - 1], &mut out).unwrap_err();
/// assert_eq!(err.class(), "E_RAW_LENGTH");
/// ```
pub fn decompress_into(src: &[u8], dst: &mut [u8]) -> Result<usize, DecodeError> {
    let mut table = DecodeTable::new();
    decompress_into_with(&mut table, src, dst)
}

/// [`decompress_into`] with a caller-owned decode table (e.g. a `static` on a small stack, or
/// one reused across many blobs). The table's previous contents do not matter.
///
/// # Errors
/// As [`decompress_into`].
pub fn decompress_into_with(
    table: &mut DecodeTable,
    src: &[u8],
    dst: &mut [u8],
) -> Result<usize, DecodeError> {
    let parsed = header::parse(src, Some(dst.len()))?;
    let n = parsed.header.len();
    let out = &mut dst[..n];
    match parsed.header.mode {
        Mode::Raw => {
            out.copy_from_slice(&src[HEADER_LEN..]);
            Ok(n)
        }
        Mode::Rans => {
            table.rebuild(&parsed.freq);
            let (a, b) = parsed.states;
            match decode_pairs(table, &src[MIN_RANS_LEN..], out, a, b) {
                Ok(()) => Ok(n),
                Err(e) => {
                    out.fill(0);
                    Err(e)
                }
            }
        }
    }
}

/// One rANS step without renormalisation: the symbol and the new (possibly small) state.
#[inline(always)]
fn step(t: &DecodeTable, x: u32) -> (u32, u8) {
    let e = t.slots[(x & ((1 << PROB_BITS) - 1)) as usize];
    // freq · (x >> 12) + bias ≤ freq · (2^20 − 1) + freq − 1 < 2^32: no overflow for any x.
    let y = u32::from(e.freq) * (x >> PROB_BITS) + u32::from(e.bias_sym & 0xFFF);
    // The top four bits of a u16 fit a u8.
    #[allow(clippy::cast_possible_truncation)]
    let sym = (e.bias_sym >> 12) as u8;
    (y, sym)
}

/// Refills `y` (the state after a step, `≥ 2^11`) from the big-endian peek `w` whose top
/// bytes are the next stream bytes; returns the new state and the bytes consumed (0..=2).
#[inline(always)]
fn refill(y: u32, w: u32) -> (u32, usize) {
    let one = (y << 8) | (w >> 24);
    let two = (y << 16) | (w >> 16);
    let k = usize::from(y < L) + usize::from(y < 1 << 15);
    let x = if y < 1 << 15 {
        two
    } else if y < L {
        one
    } else {
        y
    };
    (x, k)
}

/// Decodes `out.len()` pairs from `payload` (the bytes after the two states) and checks the
/// seal.
fn decode_pairs(
    t: &DecodeTable,
    payload: &[u8],
    out: &mut [u8],
    mut xa: u32,
    mut xb: u32,
) -> Result<(), DecodeError> {
    let mut p = 0usize;
    let mut j = 0usize;
    // Fast blocks: `out` has ≥ BLOCK bytes left and `payload` ≥ WINDOW (proof: module docs).
    while let (Some(win), Some(chunk)) = (
        payload.get(p..).and_then(<[u8]>::first_chunk::<WINDOW>),
        out.get_mut(j..).and_then(<[u8]>::first_chunk_mut::<BLOCK>),
    ) {
        let mut q = 0usize;
        for o in chunk.iter_mut() {
            // q ≤ 4 · (pairs done in this block) ≤ 60: the min never changes q.
            let at = q.min(WINDOW - 4);
            let w = u32::from_be_bytes([win[at], win[at + 1], win[at + 2], win[at + 3]]);
            let (ya, sa) = step(t, xa);
            let (na, ka) = refill(ya, w);
            let (yb, sb) = step(t, xb);
            // B's bytes follow A's: shift A's (0, 1 or 2) out of the peek.
            let (nb, kb) = refill(yb, w << (8 * ka));
            xa = na;
            xb = nb;
            q += ka + kb;
            *o = sa | sb << 4;
        }
        p += q;
        j += BLOCK;
    }
    // Checked pairs: every byte fetch tested.
    for (o, at) in out[j..].iter_mut().zip(j..) {
        let sa = checked_step(t, &mut xa, payload, &mut p, at)?;
        let sb = checked_step(t, &mut xb, payload, &mut p, at)?;
        *o = sa | sb << 4;
    }
    // The seal.
    if p != payload.len() {
        return Err(DecodeError::Leftover { unread: payload.len() - p });
    }
    if xa != L || xb != L {
        return Err(DecodeError::FinalState { a: xa, b: xb });
    }
    Ok(())
}

/// The spec's step with a bounds-checked, byte-at-a-time refill.
#[inline(always)]
fn checked_step(
    t: &DecodeTable,
    x: &mut u32,
    payload: &[u8],
    p: &mut usize,
    at: usize,
) -> Result<u8, DecodeError> {
    let (mut y, s) = step(t, *x);
    while y < L {
        let Some(&b) = payload.get(*p) else {
            return Err(DecodeError::Truncated { at });
        };
        y = (y << 8) | u32::from(b);
        *p += 1;
    }
    *x = y;
    Ok(s)
}
