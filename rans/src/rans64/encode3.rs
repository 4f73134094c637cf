//! The version-3 encoder (scalar): chunk by chunk, way by way, backwards.
//!
//! As in version 2 (`encode.rs`), each way is coded from its last symbol to its first (rounds
//! descending, high nibble before low nibble, lanes descending), writing its bytes down from
//! the end of the chunk's slot in the output; the finished way is moved down to follow the
//! ways before it. A chunk whose coded form would not be strictly smaller than its raw bytes
//! is stored raw, so [`max_encoded_len`](super::max_encoded_len) bounds version 3 too.
//!
//! Encoding symbol `s` (frequency `f`) from state `x ∈ [2^8, 2^16)`: if `x ≥ f << 8`, emit
//! the byte `x & 255` and set `x = x >> 8` (then `x < f << 8`); then
//! `x = (x div f) << 8 + slot(s, x mod f)`, back in `[2^8, 2^16)`. The division is a
//! multiplication by a 24-bit reciprocal, exact for these operands (`EncodeModel3::sym`).

use super::encode::{nibble_histogram, write_blob};
use super::model3::{EncodeModel3, normalize3};
use super::{EncodeError, V3_CHUNK_HEAD_LEN, V3_LANES, V3_RANS_L, V3_WAY_LANES, VERSION_3, WAYS};

/// Encodes packed int4 bytes as a version-3 `int4-rans64-t1` blob into `dst` (at least
/// [`max_encoded_len`](super::max_encoded_len) bytes); returns the blob length.
/// Deterministic: the output depends only on `src` and `chunk_shift`.
///
/// The version [`encode_into`](super::encode_into) writes. Version 3 trades size for decode
/// speed: its 16-bit states and 8-bit frequencies put twice the lanes in a vector and make
/// every table lookup one byte shuffle, for blobs about 0.3–1 % larger than version 2's (the
/// coarser model and the shorter states; `tetrad bench codecs` reports both).
pub fn encode_v3_into(src: &[u8], chunk_shift: u8, dst: &mut [u8]) -> Result<usize, EncodeError> {
    write_blob(VERSION_3, src, chunk_shift, dst, encode_chunk3)
}

/// Codes one chunk into `region` (its raw length); `None` when coding would not shrink it.
fn encode_chunk3(raw: &[u8], region: &mut [u8]) -> Option<usize> {
    let len = raw.len();
    if len <= V3_CHUNK_HEAD_LEN {
        return None;
    }
    let freq = normalize3(&nibble_histogram(raw));
    let model = EncodeModel3::new(&freq);
    let mut states = [[V3_RANS_L; V3_WAY_LANES]; WAYS];
    let mut bytes = [0usize; WAYS];
    let mut used = V3_CHUNK_HEAD_LEN;
    for w in 0..WAYS {
        let n = encode_way3(raw, w, &model, &mut states[w], region, used)?;
        let end = region.len();
        region.copy_within(end - n..end, used);
        used += n;
        bytes[w] = n;
    }
    if used >= len {
        return None;
    }
    region[..16].copy_from_slice(&freq);
    for (w, &n) in bytes.iter().enumerate() {
        #[allow(clippy::cast_possible_truncation)] // n < 2^26
        let n32 = n as u32;
        region[16 + 4 * w..20 + 4 * w].copy_from_slice(&n32.to_le_bytes());
    }
    for (lane, &x) in states.iter().flatten().enumerate() {
        #[allow(clippy::cast_possible_truncation)] // states are below 2^16
        let x16 = x as u16;
        region[32 + 2 * lane..34 + 2 * lane].copy_from_slice(&x16.to_le_bytes());
    }
    Some(used)
}

/// Encodes way `w` backwards, writing bytes down from the end of `region` but never below
/// `floor`; returns the number of bytes, or `None` if they do not fit.
fn encode_way3(
    raw: &[u8],
    w: usize,
    model: &EncodeModel3,
    x: &mut [u32; V3_WAY_LANES],
    region: &mut [u8],
    floor: usize,
) -> Option<usize> {
    let len = raw.len();
    let mut wp = region.len();
    for r in (0..len.div_ceil(V3_LANES)).rev() {
        let base = r * V3_LANES + w * V3_WAY_LANES;
        let active = len.saturating_sub(base).min(V3_WAY_LANES);
        let Some(bytes) = raw.get(base..base + active) else { continue };
        for half in [1u32, 0] {
            for lane in (0..active).rev() {
                let nib = usize::from((bytes[lane] >> (4 * half)) & 15);
                let (f, start, m) = model.sym[nib];
                let mut s = x[lane];
                // Branch-free emit (whether a lane emits is data, about as often as not): the
                // low byte is always written at `wp − 1` and `wp` moves only when it counts.
                // At the floor that byte belongs to the previous way, so only there the emit
                // is a branch (a full region: `None`).
                let emit = s >= f << 8;
                if wp == floor {
                    if emit {
                        return None;
                    }
                } else {
                    #[allow(clippy::cast_possible_truncation)] // the low byte
                    let b = s as u8;
                    region[wp - 1] = b;
                }
                let e = usize::from(emit);
                wp -= e;
                s >>= 8 * e;
                // s div f (EncodeModel3::sym): s < 2^16 and m ≤ 2^24, so q < 2^16.
                #[allow(clippy::cast_possible_truncation)]
                let q = ((u64::from(s) * u64::from(m)) >> 24) as u32;
                x[lane] = (q << 8) + u32::from(model.slots[(start + s - q * f) as usize]);
            }
        }
    }
    Some(region.len() - wp)
}
