//! The CFS1 decoder: header stage, then two interleaved rANS states over one decode table,
//! then the seal.
//!
//! # Structure
//! [`decode_into`] runs the header stage ([`crate::header`]), builds the table and
//! decodes pairs of nibbles. Each output byte `j` is one *pair*: state A decodes nibble `2j`
//! (the low nibble) and renormalises, then state B decodes nibble `2j+1` and renormalises;
//! both draw renormalisation bytes from one shared forward stream.
//!
//! # The fast path and its proof
//! After a step `x = freq · (x >> 12) + bias` with `x ≥ L = 2^23` before it, `x >> 12 ≥ 2^11`
//! and `freq ≥ 1`, so the new `x ≥ 2^11`: two refill bytes (`2^11 → 2^19 → 2^27`) always
//! bring it back to `≥ L`. A pair therefore consumes at most 4 bytes, and a block of
//! `BLOCK = 16` pairs at most `4 × 16 = 64`. While at least 16 pairs are left and at least
//! `WINDOW = 64 + 8` payload bytes remain — the spec's "`remaining ≥ 4 × pairs`" plus 8 bytes
//! of look-ahead — the decoder takes a `&[u8; 72]` window (one length check for the block)
//! and runs the block with no per-byte bounds branch:
//! - before pair `i` (0-based) of the block at most `4i ≤ 60` bytes were consumed (`q_i`);
//!   the pair reads its bytes from `cur`, a register holding the stream from `q_i` on, of
//!   which at least the top 4 bytes are valid;
//! - `cur` for pair `i + 1` is an 8-byte load at `q_i` (issued while pair `i` decodes, so the
//!   load is off the states' dependency chains) shifted past pair `i`'s `≤ 4` bytes: at least
//!   4 valid bytes remain on top;
//! - that load reads `q_i .. q_i + 8 ≤ 68 ≤ 72`: inside the window. The code indexes
//!   `q & 63`, which by `q_i ≤ 60` never changes `q` and only lets the compiler see the
//!   bound (a mask is one instruction, a `min` two).
//!
//! Pairs outside such blocks (the last < 64 payload bytes, the last < 16 pairs) take the
//! checked step, which tests every byte fetch and is the spec's loop verbatim. Both compute
//! the same function — same states, same bytes consumed — so a blob's outcome never depends on
//! which path decoded which pair; a unit test compares the two on valid, damaged and
//! hostile-state blobs.
//!
//! # The dependency chain
//! Each state is a serial chain: `slot = x & 4095` → table load → `freq · (x >> 12)` → `+ bias`
//! → compare with `L` → select the refilled value (≈ 13 cycles on Zen 3/4: 1 + 4 + 3 + 1 + 4).
//! The two states overlap, so a pair costs about one chain latency plus what the ≈ 50
//! instructions per pair add on a 4-ALU core. The one-byte refill is branch-free (a select
//! between `y` and `y << 8 | b0`) because about a third of the steps refill, at random, where
//! a branch would mispredict often. The two-byte refill needs `y < 2^15`, which only a symbol
//! with `freq < 16` can produce (`y ≥ freq · 2^11`), so it is rare on any data the table fits
//! and is a branch to a cold function: that takes its candidate, compare and select (five
//! instructions per state) off every other step — 17.0 → 16.3 cycles per pair on the
//! development timer. A blob built to hit it often only decodes slower. State B's bytes follow
//! A's in the stream, which couples the chains only through a shift of `cur`, never through a
//! load.
//! `docs/PERFORMANCE.md` has the measured numbers (`tetrad bench codecs`).
//!
//! # What the decoder writes
//! On `Ok(n)` exactly `dst[..n]` is written (the decoded bytes). On a header-stage error
//! nothing is written. On a payload-stage error (`E_TRUNCATED`, `E_LEFTOVER`,
//! `E_FINAL_STATE`) `dst[..rawlen]` is set to zero before returning, so no partially decoded
//! data can be mistaken for output; `dst[rawlen..]` is never touched.

use core::hint::select_unpredictable;

use crate::error::DecodeError;
use crate::header::{self, HEADER_LEN, MIN_RANS_LEN, Mode};
use crate::model::DecodeTable;
use crate::{L, PROB_BITS};

/// Pairs per fast block.
const BLOCK: usize = 16;
/// Payload bytes a fast block needs: 4 per pair (module docs), plus 8 bytes of look-ahead.
const WINDOW: usize = 4 * BLOCK + 8;

/// Decodes one CFS1 blob into `dst` and returns the number of bytes written (`rawlen`).
///
/// `dst` must hold at least `rawlen` bytes (read it first with
/// [`Header::parse`](crate::Header::parse) if unknown). See the module docs of
/// `tetrad_fse::decode` — "What the decoder writes" — for what `dst` holds after an error.
/// Builds a 16 KiB decode table on the stack; [`decode_into_scratch`] takes one from the
/// caller instead.
///
/// # Errors
/// Every refusal of `docs/cfs1.md` §5, as a [`DecodeError`] whose
/// [`class`](DecodeError::class) is the spec's name.
///
/// ```
/// let src = b"\x01\x23\x45\x67\x89\xab\xcd\xef".repeat(8);
/// let mut blob = [0u8; 64 + 73];
/// let len = tetrad_fse::encode_into(&src, &mut blob).unwrap();
/// let mut out = [0u8; 64];
/// assert_eq!(tetrad_fse::decode_into(&blob[..len], &mut out), Ok(64));
/// assert_eq!(out[..], src[..]);
/// // One byte short: refused, never a panic.
/// let err = tetrad_fse::decode_into(&blob[..len - 1], &mut out).unwrap_err();
/// assert_eq!(err.class(), "E_RAW_LENGTH");
/// ```
pub fn decode_into(src: &[u8], dst: &mut [u8]) -> Result<usize, DecodeError> {
    let mut table = DecodeTable::new();
    decode_into_scratch(&mut table, src, dst)
}

/// [`decode_into`] with a caller-owned decode table (e.g. a `static` on a small stack, or
/// one reused across many blobs). The table's previous contents do not matter.
///
/// # Errors
/// As [`decode_into`].
pub fn decode_into_scratch(
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

/// Eight stream bytes at `at`, big-endian (first byte on top).
#[inline(always)]
fn load8(win: &[u8; WINDOW], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&win[at..at + 8]);
    u64::from_be_bytes(b)
}

/// Refills `y` (the state after a step, `≥ 2^11`) from the big-endian peek `w` whose top
/// bytes are the next stream bytes; returns the new state and the bytes consumed (0..=2).
#[inline(always)]
fn refill(y: u32, w: u64) -> (u32, usize) {
    if y < 1 << 15 {
        // Only after a symbol with freq < 16 (y ≥ freq · 2^11): rare, so a branch.
        return refill_two(y, w);
    }
    // The top byte of w.
    #[allow(clippy::cast_possible_truncation)]
    let one = (y << 8) | (w >> 56) as u32;
    // `select_unpredictable` asks for cmov: a third of the steps refill, at random.
    (select_unpredictable(y < L, one, y), usize::from(y < L))
}

/// The two-byte refill of a state `y < 2^15`, out of line.
#[cold]
#[inline(never)]
fn refill_two(y: u32, w: u64) -> (u32, usize) {
    // The top two bytes of w.
    #[allow(clippy::cast_possible_truncation)]
    let two = (y << 16) | (w >> 48) as u32;
    (two, 2)
}

/// Decodes `out.len()` pairs from `payload` (the bytes after the two states) and checks the
/// seal.
fn decode_pairs(
    t: &DecodeTable,
    payload: &[u8],
    out: &mut [u8],
    xa: u32,
    xb: u32,
) -> Result<(), DecodeError> {
    let mut s = State { p: 0, xa, xb };
    decode_run(t, payload, out, 0, &mut s)?;
    s.seal(payload.len())
}

/// Where a decode stands between runs: payload offset and the two states.
#[derive(Debug, Clone, Copy)]
pub(crate) struct State {
    /// Payload bytes consumed.
    pub(crate) p: usize,
    /// State A.
    pub(crate) xa: u32,
    /// State B.
    pub(crate) xb: u32,
}

impl State {
    /// The seal: the payload (`len` bytes) consumed exactly and both states back at `L`.
    pub(crate) fn seal(&self, len: usize) -> Result<(), DecodeError> {
        if self.p != len {
            return Err(DecodeError::Leftover { unread: len - self.p });
        }
        if self.xa != L || self.xb != L {
            return Err(DecodeError::FinalState { a: self.xa, b: self.xb });
        }
        Ok(())
    }
}

/// Decodes the next `out.len()` pairs from `payload`, resuming at `st` and leaving it where
/// the run ended; `base` is the index of `out[0]` in the whole output (for error positions).
/// Does not check the seal. The fast blocks and the checked pairs compute the same function,
/// so how the output is split into runs never changes the result (module docs).
pub(crate) fn decode_run(
    t: &DecodeTable,
    payload: &[u8],
    out: &mut [u8],
    base: usize,
    st: &mut State,
) -> Result<(), DecodeError> {
    let State { mut p, mut xa, mut xb } = *st;
    let mut j = 0usize;
    // Fast blocks: `out` has ≥ BLOCK bytes left and `payload` ≥ WINDOW (proof: module docs).
    while let (Some(win), Some(chunk)) = (
        payload.get(p..).and_then(<[u8]>::first_chunk::<WINDOW>),
        out.get_mut(j..).and_then(<[u8]>::first_chunk_mut::<BLOCK>),
    ) {
        let mut q = 0usize;
        // `cur`: the stream from offset q on, big-endian, top 4 bytes valid (a pair needs at
        // most 4). It is the previous pair's 8-byte load shifted past that pair's bytes, so
        // the load sits one pair ahead of its use and off the states' dependency chains.
        let mut cur = load8(win, 0);
        for o in chunk.iter_mut() {
            // q ≤ 4 · (pairs done) ≤ 60, so the mask never changes q; it shows the compiler
            // that q + 8 ≤ 72 = WINDOW.
            let ahead = load8(win, q & 63);
            let (ya, sa) = step(t, xa);
            let (na, ka) = refill(ya, cur);
            // B's bytes follow A's: shift A's (0, 1 or 2) out.
            let (yb, sb) = step(t, xb);
            let (nb, kb) = refill(yb, cur << (8 * ka));
            xa = na;
            xb = nb;
            q += ka + kb;
            cur = ahead << (8 * (ka + kb));
            *o = sa | sb << 4;
        }
        p += q;
        j += BLOCK;
    }
    // Checked pairs: every byte fetch tested.
    for (o, at) in out[j..].iter_mut().zip(base + j..) {
        let sa = checked_step(t, &mut xa, payload, &mut p, at)?;
        let sb = checked_step(t, &mut xb, payload, &mut p, at)?;
        *o = sa | sb << 4;
    }
    *st = State { p, xa, xb };
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

#[cfg(test)]
mod tests {
    //! The fast blocks against the spec's loop: a decoder that takes the checked step for
    //! every pair must give the same outcome (result and bytes) on valid and damaged blobs.

    use super::*;
    use proptest::prelude::*;

    fn reference(src: &[u8], dst: &mut [u8]) -> Result<usize, DecodeError> {
        let parsed = header::parse(src, Some(dst.len()))?;
        let n = parsed.header.len();
        if parsed.header.mode == Mode::Raw {
            dst[..n].copy_from_slice(&src[HEADER_LEN..]);
            return Ok(n);
        }
        let mut t = DecodeTable::new();
        t.rebuild(&parsed.freq);
        let payload = &src[MIN_RANS_LEN..];
        let (mut xa, mut xb) = parsed.states;
        let mut p = 0;
        for (at, o) in dst[..n].iter_mut().enumerate() {
            let sa = checked_step(&t, &mut xa, payload, &mut p, at)?;
            let sb = checked_step(&t, &mut xb, payload, &mut p, at)?;
            *o = sa | sb << 4;
        }
        if p != payload.len() {
            return Err(DecodeError::Leftover { unread: payload.len() - p });
        }
        if xa != L || xb != L {
            return Err(DecodeError::FinalState { a: xa, b: xb });
        }
        Ok(n)
    }

    fn same_outcome(blob: &[u8], n: usize) -> Result<(), TestCaseError> {
        let mut fast = [0u8; 4096];
        let mut slow = [0u8; 4096];
        let n = n.min(fast.len());
        let rf = decode_into(blob, &mut fast[..n]);
        let rs = reference(blob, &mut slow[..n]);
        prop_assert_eq!(rf, rs);
        if let Ok(k) = rf {
            prop_assert_eq!(&fast[..k], &slow[..k]);
        }
        Ok(())
    }

    /// `n` bytes whose nibbles follow `weights` (many tiny weights make the rare symbols
    /// with frequency < 16 whose steps need two refill bytes), from an LCG seeded by `seed`.
    fn blob(weights: &[u32; 16], seed: u64, n: usize) -> ([u8; 4096 + 73], usize) {
        let total: u32 = weights.iter().sum::<u32>().max(1);
        let mut s = seed;
        let mut nib = || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let mut r = u32::try_from(s >> 33).unwrap() % total;
            let mut sym = 0u8;
            for (i, &w) in (0u8..).zip(weights.iter()) {
                sym = i;
                if r < w {
                    break;
                }
                r -= w;
            }
            sym
        };
        let src: [u8; 4096] = core::array::from_fn(|_| nib() | nib() << 4);
        let mut out = [0u8; 4096 + 73];
        let len = crate::encode_into(&src[..n], &mut out).unwrap();
        (out, len)
    }

    fn weights() -> impl Strategy<Value = [u32; 16]> {
        proptest::array::uniform16(prop_oneof![0u32..3, 0u32..3, 0u32..10_000])
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn fast_blocks_equal_the_checked_loop(
            weights in weights(),
            seed in any::<u64>(),
            n in 41usize..4096,
            flips in proptest::collection::vec((any::<usize>(), 1u8..=255), 0..3),
            cut in 0usize..8,
        ) {
            let (mut b, len) = blob(&weights, seed, n);
            same_outcome(&b[..len], n)?;
            for &(at, x) in &flips {
                let at = MIN_RANS_LEN + at % (len - MIN_RANS_LEN).max(1);
                if at < len {
                    b[at] ^= x;
                }
            }
            same_outcome(&b[..len], n)?;
            same_outcome(&b[..len.saturating_sub(cut)], n)?;
            same_outcome(&b[..(len + cut).min(b.len())], n)?;
        }

        #[test]
        fn fast_blocks_equal_the_checked_loop_on_hostile_states(
            states in any::<(u32, u32)>(),
            payload in proptest::collection::vec(any::<u8>(), 64..400),
            n in 16usize..300,
        ) {
            // A table with tiny frequencies (two-byte refills), states anywhere in [L, 2^32),
            // random payload.
            let mut b = [0u8; 49 + 400];
            b[..5].copy_from_slice(b"CFS1\x01");
            b[5..9].copy_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
            for i in 0..16u16 {
                let f = if i == 15 { 4096 - 120 } else { i + 1 };
                b[9 + 2 * usize::from(i)..11 + 2 * usize::from(i)].copy_from_slice(&f.to_le_bytes());
            }
            b[41..45].copy_from_slice(&(states.0 | L).to_le_bytes());
            b[45..49].copy_from_slice(&(states.1 | L).to_le_bytes());
            b[49..49 + payload.len()].copy_from_slice(&payload);
            same_outcome(&b[..49 + payload.len()], n)?;
        }
    }
}
