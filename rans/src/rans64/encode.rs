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
//!
//! The code below is the reference encoder. An encode *arm* (AVX2, `arch/x86_64_encode.rs`)
//! codes the full rounds of a way in between, while their words have room; it produces the
//! same words in the same order, so the blob does not depend on the arm, and every arm is
//! tested against the scalar one byte for byte.

use core::sync::atomic::{AtomicU8, Ordering};

use super::arch;
use super::decode::{Arm, SELFTEST_LEN, selftest_input};
use super::model::{EncodeModel, normalize};
use super::{CHUNK_HEAD_LEN, EncodeError, HEADER_LEN, LANES, MAGIC, MAX_BYTES, MAX_CHUNK_SHIFT};
use super::{MIN_CHUNK_SHIFT, RANS_L, VERSION, WAY_LANES, WAYS};

impl Arm {
    /// Whether the arm can encode here: this build has an encode kernel for it (scalar, and
    /// AVX2 on x86-64), the CPU runs it, and it passed its first-use selftest (the same blob
    /// as the scalar encoder on a fixed input; an arm that disagrees is disabled and
    /// reported on stderr with `std`).
    pub fn can_encode(self) -> bool {
        if self == Arm::Scalar {
            return true;
        }
        if !arch::has_encoder(self) || !self.cpu_supported() {
            return false;
        }
        static SELFTEST: AtomicU8 = AtomicU8::new(0); // only AVX2 has a SIMD encoder
        match SELFTEST.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let ok = encode_selftest(self);
                SELFTEST.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
                #[cfg(feature = "std")]
                if !ok {
                    std::eprintln!(
                        "tetrad-rans: int4-rans64-t1 encode arm {self} disagrees with the scalar encoder on its selftest; disabled"
                    );
                }
                ok
            }
        }
    }

    /// The fastest arm that can encode here ([`encode_into`] uses it): AVX2 where it runs,
    /// else scalar.
    pub fn best_encoder() -> Arm {
        if Arm::Avx2.can_encode() { Arm::Avx2 } else { Arm::Scalar }
    }
}

/// Encodes [`selftest_input`] with `arm` and with the scalar encoder; true when the blobs
/// are the same bytes.
fn encode_selftest(arm: Arm) -> bool {
    let src = selftest_input();
    let mut a = [0u8; SELFTEST_LEN + 64];
    let mut b = [0x5Au8; SELFTEST_LEN + 64];
    match (encode_blob(Arm::Scalar, &src, 12, &mut a), encode_blob(arm, &src, 12, &mut b)) {
        (Ok(na), Ok(nb)) => na == nb && a[..na] == b[..nb],
        _ => false,
    }
}

/// The largest blob [`encode_into`] can produce for `n` packed bytes: header, index, and at
/// most the raw bytes for every chunk.
pub fn max_encoded_len(n: usize, chunk_shift: u8) -> usize {
    let shift = chunk_shift.clamp(MIN_CHUNK_SHIFT, MAX_CHUNK_SHIFT);
    HEADER_LEN + 4 * n.div_ceil(1usize << shift) + n
}

/// Encodes packed int4 bytes as an `int4-rans64-t1` blob into `dst` (at least
/// [`max_encoded_len`] bytes) with [`Arm::best_encoder`]; returns the blob length.
/// Deterministic: the output depends only on `src` and `chunk_shift`, never on the arm.
pub fn encode_into(src: &[u8], chunk_shift: u8, dst: &mut [u8]) -> Result<usize, EncodeError> {
    encode_blob(Arm::best_encoder(), src, chunk_shift, dst)
}

/// [`encode_into`] with a forced arm (tests, benches): the same bytes, or
/// [`EncodeError::Unavailable`] when the arm cannot encode here ([`Arm::can_encode`]).
pub fn encode_with(
    arm: Arm,
    src: &[u8],
    chunk_shift: u8,
    dst: &mut [u8],
) -> Result<usize, EncodeError> {
    if !arm.can_encode() {
        return Err(EncodeError::Unavailable { arm });
    }
    encode_blob(arm, src, chunk_shift, dst)
}

fn encode_blob(
    arm: Arm,
    src: &[u8],
    chunk_shift: u8,
    dst: &mut [u8],
) -> Result<usize, EncodeError> {
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
        let stored = match encode_chunk(arm, raw, region) {
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

/// The nibble counts of a chunk. Counted per byte value first, in four tables that take
/// turns (weights repeat a few values, and consecutive increments of one counter would wait
/// for each other's stores), then folded into the 16 nibble counts: one increment per byte
/// instead of two dependent ones per byte.
fn nibble_histogram(raw: &[u8]) -> [u64; 16] {
    let mut counts = [[0u32; 256]; 4]; // a chunk has at most 2^26 bytes
    let mut quads = raw.chunks_exact(4);
    for q in &mut quads {
        for (table, &b) in counts.iter_mut().zip(q) {
            table[usize::from(b)] += 1;
        }
    }
    for &b in quads.remainder() {
        counts[0][usize::from(b)] += 1;
    }
    let mut hist = [0u64; 16];
    for b in 0..256 {
        let c: u64 = counts.iter().map(|t| u64::from(t[b])).sum();
        hist[b & 15] += c;
        hist[b >> 4] += c;
    }
    hist
}

/// Codes one chunk into `region` (its raw length); `None` when coding would not shrink it.
///
/// With a SIMD arm the four ways are coded *together* first (eight independent chains
/// instead of two), each writing down from the end of its own quarter of the region; when
/// they all fit their quarters their words are moved down into place. When one does not
/// (a chunk near the raw size), the ways are coded one after the other, each writing down
/// from the region's end above the ways before it, as the scalar encoder always does. The
/// words are the same either way, so the blob is too.
fn encode_chunk(arm: Arm, raw: &[u8], region: &mut [u8]) -> Option<usize> {
    let len = raw.len();
    if len <= CHUNK_HEAD_LEN {
        return None;
    }
    let freq = normalize(&nibble_histogram(raw));
    let model = EncodeModel::new(&freq);
    let mut states = [[RANS_L; WAY_LANES]; WAYS];
    let mut words = [0usize; WAYS];
    let together = arm != Arm::Scalar
        && encode_ways_together(arm, raw, &model, &mut states, region, &mut words).is_some();
    if !together {
        states = [[RANS_L; WAY_LANES]; WAYS];
        let mut used = CHUNK_HEAD_LEN;
        for w in 0..WAYS {
            let n = encode_way(arm, raw, w, &model, &mut states[w], region, used)?;
            let end = region.len();
            region.copy_within(end - 2 * n..end, used);
            used += 2 * n;
            words[w] = n;
        }
    }
    let used = CHUNK_HEAD_LEN + 2 * words.iter().sum::<usize>();
    if used >= len {
        return None;
    }
    for (s, f) in freq.iter().enumerate() {
        region[2 * s..2 * s + 2].copy_from_slice(&f.to_le_bytes());
    }
    for (w, &n) in words.iter().enumerate() {
        #[allow(clippy::cast_possible_truncation)] // n < 2^26
        let n32 = n as u32;
        region[32 + 4 * w..36 + 4 * w].copy_from_slice(&n32.to_le_bytes());
    }
    for (lane, x) in states.iter().flatten().enumerate() {
        region[48 + 4 * lane..52 + 4 * lane].copy_from_slice(&x.to_le_bytes());
    }
    Some(used)
}

/// Codes the four ways at once, way `w` writing down from the end of the `w`-th quarter of
/// the region after the chunk head; on success the words sit packed after the head (way 0
/// first) and `words` holds their counts. `None` when a way does not fit its quarter.
fn encode_ways_together(
    arm: Arm,
    raw: &[u8],
    model: &EncodeModel,
    x: &mut [[u32; WAY_LANES]; WAYS],
    region: &mut [u8],
    words: &mut [usize; WAYS],
) -> Option<()> {
    let quarter = (region.len() - CHUNK_HEAD_LEN) / WAYS;
    let floor: [usize; WAYS] = core::array::from_fn(|w| CHUNK_HEAD_LEN + w * quarter);
    let end: [usize; WAYS] = core::array::from_fn(|w| floor[w] + quarter);
    let mut wp = end;
    let mut top = raw.len().div_ceil(LANES);
    while top > 0 {
        top -= arch::encode_rounds(arm, raw, 0, top, model, x, region, &mut wp, &floor);
        let Some(r) = top.checked_sub(1) else { break };
        top = r;
        for w in 0..WAYS {
            scalar_round(raw, r, w, model, &mut x[w], region, &mut wp[w], floor[w])?;
        }
    }
    let mut used = CHUNK_HEAD_LEN;
    for w in 0..WAYS {
        region.copy_within(wp[w]..end[w], used);
        used += end[w] - wp[w];
        words[w] = (end[w] - wp[w]) / 2;
    }
    Some(())
}

/// Encodes way `w` backwards, writing words down from the end of `region` but never below
/// `floor`; returns the number of words, or `None` if they do not fit. `arm` codes the
/// rounds it can (full ones, with room); the scalar loop does the rest.
fn encode_way(
    arm: Arm,
    raw: &[u8],
    w: usize,
    model: &EncodeModel,
    x: &mut [u32; WAY_LANES],
    region: &mut [u8],
    floor: usize,
) -> Option<usize> {
    let mut wp = [region.len()];
    let x = core::array::from_mut(x);
    let mut top = raw.len().div_ceil(LANES);
    while top > 0 {
        top -= arch::encode_rounds(arm, raw, w, top, model, x, region, &mut wp, &[floor]);
        let Some(r) = top.checked_sub(1) else { break };
        top = r;
        scalar_round(raw, r, w, model, &mut x[0], region, &mut wp[0], floor)?;
    }
    Some((region.len() - wp[0]) / 2)
}

/// Codes round `r` of way `w` (lanes descending, high nibbles first), writing words down
/// from `*wp`; `None` when a word would go below `floor`.
#[allow(clippy::too_many_arguments)] // one way's coding state
fn scalar_round(
    raw: &[u8],
    r: usize,
    w: usize,
    model: &EncodeModel,
    x: &mut [u32; WAY_LANES],
    region: &mut [u8],
    wp: &mut usize,
    floor: usize,
) -> Option<()> {
    let len = raw.len();
    let base = r * LANES + w * WAY_LANES;
    let active = len.saturating_sub(base).min(WAY_LANES);
    let Some(bytes) = raw.get(base..base + active) else { return Some(()) };
    // A round emits at most one word per step: 2·active words. With that much room the
    // round runs branch-free (every step stores its candidate word, and the pointer moves
    // only when the word is real); near the floor each word is checked, so the chunk goes
    // raw exactly when its words do not fit.
    let fast = *wp >= floor + 4 * active;
    for half in [1u32, 0] {
        for lane in (0..active).rev() {
            let nib = usize::from((bytes[lane] >> (4 * half)) & 15);
            let (f, start, m) = model.sym[nib];
            let mut s = x[lane];
            let emit = s >= f << 20;
            #[allow(clippy::cast_possible_truncation)] // the low word is emitted
            let word = (s as u16).to_le_bytes();
            if fast {
                region[*wp - 2..*wp].copy_from_slice(&word);
                *wp -= 2 * usize::from(emit);
            } else if emit {
                if *wp < floor + 2 {
                    return None;
                }
                *wp -= 2;
                region[*wp..*wp + 2].copy_from_slice(&word);
            }
            if emit {
                s >>= 16;
            }
            #[allow(clippy::cast_possible_truncation)] // q ≤ x < 2^32
            let q = ((u128::from(s) * u128::from(m)) >> 44) as u32;
            let rem = s - q * f;
            x[lane] = (q << 12) | model.slots[((start + rem) & 0xFFF) as usize];
        }
    }
    Some(())
}
