//! The CFS1 encoder: count, normalise, code both nibble streams backwards into the tail of
//! the caller's buffer, then move the payload into place — or write raw.
//!
//! # Scratch without allocation
//! rANS encodes in reverse, so its bytes come out last-first. The encoder writes them
//! backwards from the *end* of `dst` (which is at least `n + 73` bytes), then moves the
//! finished payload down to offset 41 with one `copy_within` and writes header and table in
//! front of it. The payload never needs more room than `n − 33` bytes (see below), so it
//! never reaches the header region: `dst.len() − (n − 33) ≥ 106 > 41`.
//!
//! # The raw-fallback conditions, and why the output does not depend on `dst.len()`
//! The reference writes raw when (1) normalisation fails, (2) the backward output would
//! collide with the 41-byte header+table region of its `max_encoded_len(n) = n + 73`
//! buffer, (3) fewer than 8 bytes remain there for the final states, or (4)
//! `32 + payload_len ≥ n`, where `payload_len = 8 + r` counts the two states and the `r`
//! renormalisation bytes. In that buffer (2) means `r > n + 32` and (3) means `r > n + 24`;
//! both imply `r ≥ n − 40`, which is (4). So (2) and (3) can never change the outcome: the
//! rule is exactly "rANS iff normalisation succeeds and `r < n − 40`", a function of the
//! input alone. This encoder applies it directly: it gives up on rANS as soon as `r` reaches
//! `n − 40` (nothing can shrink `r` again), and checks (4) literally at the end. Inputs of
//! 40 bytes or fewer are raw without coding (`r ≥ 0 ≥ n − 40`). The bytes of `dst` past the
//! returned length are scratch and unspecified.

use crate::error::EncodeError;
use crate::header::{HEADER_LEN, MAGIC, Mode, TABLE_END};
use crate::model::{count_nibbles, normalize};
use crate::{L, PROB_BITS, max_encoded_len};

/// Encodes `src` into `dst` as one CFS1 blob and returns the blob's length.
///
/// `dst` must hold at least [`max_encoded_len`]`(src.len())` bytes; the blob written to
/// `dst[..len]` is the same for every such buffer (byte-identical to the reference encoder),
/// and `dst[len..]` is used as scratch. The blob is never longer than `src.len() + 9` (raw).
///
/// # Errors
/// [`EncodeError::DstTooSmall`] below the bound; [`EncodeError::InputTooLarge`] for inputs of
/// 2^32 bytes or more. Every other input encodes.
///
/// ```
/// let src = [0x88u8; 1000];
/// let mut blob = vec![0u8; tetrad_fse::max_encoded_len(src.len())];
/// let n = tetrad_fse::encode_into(&src, &mut blob).unwrap();
/// assert_eq!(n, 49); // one symbol: header, table, two states, no payload bytes
/// ```
pub fn encode_into(src: &[u8], dst: &mut [u8]) -> Result<usize, EncodeError> {
    let n = src.len();
    let rawlen = u32::try_from(n).map_err(|_| EncodeError::InputTooLarge { len: n })?;
    let needed = max_encoded_len(n);
    if dst.len() < needed {
        return Err(EncodeError::DstTooSmall { needed, available: dst.len() });
    }
    if n > 40
        && let Some(freq) = normalize(&count_nibbles(src))
        && let Some(len) = encode_rans(src, rawlen, &freq, dst)
    {
        return Ok(len);
    }
    Ok(write_raw(src, rawlen, dst))
}

fn write_header(dst: &mut [u8], mode: Mode, rawlen: u32) {
    dst[..4].copy_from_slice(&MAGIC);
    dst[4] = mode.byte();
    dst[5..HEADER_LEN].copy_from_slice(&rawlen.to_le_bytes());
}

fn write_raw(src: &[u8], rawlen: u32, dst: &mut [u8]) -> usize {
    write_header(dst, Mode::Raw, rawlen);
    dst[HEADER_LEN..HEADER_LEN + src.len()].copy_from_slice(src);
    HEADER_LEN + src.len()
}

/// Per-symbol encoder constants.
#[derive(Clone, Copy, Default)]
struct Sym {
    /// `2^19 · freq`: renormalise while `x ≥ bound`.
    bound: u32,
    freq: u32,
    cum: u32,
}

/// Codes `src` backwards into the tail of `dst`; `None` when rANS would not shrink the input
/// (then `dst` holds scratch only and the caller writes raw).
fn encode_rans(src: &[u8], rawlen: u32, freq: &[u16; 16], dst: &mut [u8]) -> Option<usize> {
    let n = src.len();
    let mut syms = [Sym::default(); 16];
    let mut cum = 0u32;
    for (s, &f) in syms.iter_mut().zip(freq.iter()) {
        let f = u32::from(f);
        *s = Sym { bound: f << (31 - PROB_BITS), freq: f, cum };
        cum += f;
    }
    let end = dst.len();
    // Renormalisation bytes allowed: r ≤ n − 41, i.e. r < n − 40 (module docs).
    let floor = end - (n - 41);
    let mut w = end;
    let (mut xa, mut xb) = (L, L);
    for &byte in src.iter().rev() {
        // Nibble 2j+1 (high, state B) is coded before nibble 2j (low, state A): the decoder
        // reads them in the opposite order.
        put(&mut xb, syms[usize::from(byte >> 4)], dst, &mut w, floor)?;
        put(&mut xa, syms[usize::from(byte & 15)], dst, &mut w, floor)?;
    }
    // Flush: read forwards, the stream holds xA (LE) then xB (LE).
    w -= 8;
    dst[w..w + 4].copy_from_slice(&xa.to_le_bytes());
    dst[w + 4..w + 8].copy_from_slice(&xb.to_le_bytes());
    let payload_len = end - w;
    if 32 + payload_len >= n {
        // Unreachable given `floor`, kept as the spec's literal rule.
        return None;
    }
    dst.copy_within(w..end, TABLE_END);
    write_header(dst, Mode::Rans, rawlen);
    for (i, f) in freq.iter().enumerate() {
        dst[HEADER_LEN + 2 * i..HEADER_LEN + 2 * i + 2].copy_from_slice(&f.to_le_bytes());
    }
    Some(TABLE_END + payload_len)
}

/// Encodes one nibble into state `x`, emitting renormalisation bytes backwards at `*w`;
/// `None` once `*w` would pass `floor` (the payload would not shrink the input).
#[inline(always)]
fn put(x: &mut u32, s: Sym, dst: &mut [u8], w: &mut usize, floor: usize) -> Option<()> {
    while *x >= s.bound {
        if *w == floor {
            return None;
        }
        *w -= 1;
        dst[*w] = x.to_le_bytes()[0];
        *x >>= 8;
    }
    // x < 2^19 · freq, so x / freq < 2^19 and the new state is < 2^31.
    *x = ((*x / s.freq) << PROB_BITS) + (*x % s.freq) + s.cum;
    Some(())
}
