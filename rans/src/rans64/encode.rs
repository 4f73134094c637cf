//! The encoder: chunk by chunk, way by way, backwards.
//!
//! rANS is a stack, so each way is encoded from its last symbol to its first (rounds
//! descending, high nibble before low nibble, lanes descending), writing its words backwards
//! from the end of the chunk's slot in the output; the finished way is then moved down to
//! sit after the previous ones. Everything happens inside the `raw_len` bytes the chunk may
//! occupy: a coded chunk must be strictly smaller than its raw bytes, so as soon as the words
//! would not fit, the chunk is stored raw instead. That makes [`max_encoded_len`] exact
//! (header + index + input) and means the encoder never needs scratch memory.
//!
//! Division by the frequency uses a 44-bit reciprocal (`m = ceil(2^44 / f)`): for `x < 2^32`
//! and `f ≤ 4095` the error of `x·m / 2^44` is below `2^-12 < 1/f`, so the floor is exact.

use super::model::{EncodeModel, normalize};
use super::{CHUNK_HEAD_LEN, EncodeError, HEADER_LEN, LANES, MAGIC, MAX_BYTES, MAX_CHUNK_SHIFT};
use super::{MIN_CHUNK_SHIFT, RANS_L, VERSION, WAY_LANES, WAYS};

/// The largest blob [`encode_into`] can produce for `n` packed bytes: header, index, and at
/// most the raw bytes for every chunk.
pub fn max_encoded_len(n: usize, chunk_shift: u8) -> usize {
    let shift = chunk_shift.clamp(MIN_CHUNK_SHIFT, MAX_CHUNK_SHIFT);
    HEADER_LEN + 4 * n.div_ceil(1usize << shift) + n
}

/// Encodes packed int4 bytes as an `int4-rans64-t1` blob into `dst` (at least
/// [`max_encoded_len`] bytes); returns the blob length. Deterministic: the output depends
/// only on `src` and `chunk_shift`.
pub fn encode_into(src: &[u8], chunk_shift: u8, dst: &mut [u8]) -> Result<usize, EncodeError> {
    if !(MIN_CHUNK_SHIFT..=MAX_CHUNK_SHIFT).contains(&chunk_shift) {
        return Err(EncodeError::ChunkShift { got: chunk_shift });
    }
    if src.len() as u64 > MAX_BYTES {
        return Err(EncodeError::TooLarge { got: src.len() as u64 });
    }
    let needed = max_encoded_len(src.len(), chunk_shift);
    if dst.len() < needed {
        return Err(EncodeError::OutputTooSmall { got: dst.len(), needed });
    }
    dst[..4].copy_from_slice(&MAGIC);
    dst[4] = VERSION;
    dst[5] = chunk_shift;
    dst[6..8].fill(0);
    dst[8..16].copy_from_slice(&(src.len() as u64).to_le_bytes());
    let chunk = 1usize << chunk_shift;
    let n_chunks = src.len().div_ceil(chunk);
    let mut pos = HEADER_LEN + 4 * n_chunks;
    for (c, raw) in src.chunks(chunk).enumerate() {
        let region = &mut dst[pos..pos + raw.len()];
        let stored = match encode_chunk(raw, region) {
            Some(n) => n,
            None => {
                region.copy_from_slice(raw);
                raw.len()
            }
        };
        #[allow(clippy::cast_possible_truncation)] // ≤ 2^26
        let stored32 = stored as u32;
        dst[HEADER_LEN + 4 * c..HEADER_LEN + 4 * c + 4].copy_from_slice(&stored32.to_le_bytes());
        pos += stored;
    }
    Ok(pos)
}

/// Codes one chunk into `region` (its raw length); `None` when coding would not shrink it.
fn encode_chunk(raw: &[u8], region: &mut [u8]) -> Option<usize> {
    let len = raw.len();
    if len <= CHUNK_HEAD_LEN {
        return None;
    }
    let mut hist = [0u64; 16];
    for &b in raw {
        hist[usize::from(b & 15)] += 1;
        hist[usize::from(b >> 4)] += 1;
    }
    let freq = normalize(&hist);
    let model = EncodeModel::new(&freq);
    let mut states = [RANS_L; LANES];
    let mut words = [0u32; WAYS];
    let mut used = CHUNK_HEAD_LEN;
    for w in 0..WAYS {
        let lanes: &mut [u32; WAY_LANES] =
            (&mut states[w * WAY_LANES..(w + 1) * WAY_LANES]).try_into().ok()?;
        let n = encode_way(raw, w, &model, lanes, region, used)?;
        let end = region.len();
        region.copy_within(end - 2 * n..end, used);
        used += 2 * n;
        #[allow(clippy::cast_possible_truncation)] // n < 2^26
        let n32 = n as u32;
        words[w] = n32;
    }
    if used >= len {
        return None;
    }
    for (s, f) in freq.iter().enumerate() {
        region[2 * s..2 * s + 2].copy_from_slice(&f.to_le_bytes());
    }
    for (w, n) in words.iter().enumerate() {
        region[32 + 4 * w..36 + 4 * w].copy_from_slice(&n.to_le_bytes());
    }
    for (lane, x) in states.iter().enumerate() {
        region[48 + 4 * lane..52 + 4 * lane].copy_from_slice(&x.to_le_bytes());
    }
    Some(used)
}

/// Encodes way `w` backwards, writing words down from the end of `region` but never below
/// `floor`; returns the number of words, or `None` if they do not fit.
fn encode_way(
    raw: &[u8],
    w: usize,
    model: &EncodeModel,
    x: &mut [u32; WAY_LANES],
    region: &mut [u8],
    floor: usize,
) -> Option<usize> {
    let len = raw.len();
    let rounds = len.div_ceil(LANES);
    let mut wp = region.len();
    let first_lane = w * WAY_LANES;
    for r in (0..rounds).rev() {
        let base = r * LANES + first_lane;
        let active = len.saturating_sub(base).min(WAY_LANES);
        let Some(bytes) = raw.get(base..base + active) else { continue };
        // A round emits at most one word per step: 2·active words. With that much room the
        // round runs branch-free (every step stores its candidate word, and the pointer moves
        // only when the word is real); near the floor each word is checked, so the chunk goes
        // raw exactly when its words do not fit.
        let fast = wp >= floor + 4 * active;
        for half in [1u32, 0] {
            for lane in (0..active).rev() {
                let nib = usize::from((bytes[lane] >> (4 * half)) & 15);
                let (f, start, m) = model.sym[nib];
                let mut s = x[lane];
                let emit = s >= f << 20;
                #[allow(clippy::cast_possible_truncation)] // the low word is emitted
                let word = (s as u16).to_le_bytes();
                if fast {
                    region[wp - 2..wp].copy_from_slice(&word);
                    wp -= 2 * usize::from(emit);
                } else if emit {
                    if wp < floor + 2 {
                        return None;
                    }
                    wp -= 2;
                    region[wp..wp + 2].copy_from_slice(&word);
                }
                if emit {
                    s >>= 16;
                }
                #[allow(clippy::cast_possible_truncation)] // q ≤ x < 2^32
                let q = ((u128::from(s) * u128::from(m)) >> 44) as u32;
                let rem = s - q * f;
                x[lane] = (q << 12) | u32::from(model.slots[((start + rem) & 0xFFF) as usize]);
            }
        }
    }
    Some((region.len() - wp) / 2)
}
