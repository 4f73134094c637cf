//! The version-2 encoder: chunk by chunk, way by way, backwards.
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
//! codes the full rounds in between, while their words have room: of all four ways at once,
//! each in its own quarter of the chunk (`encode_ways_together`), or of one way at a time
//! when they do not fit. It produces the same words in the same order, so the blob does not
//! depend on the arm, and every arm is tested against the scalar one byte for byte.

use core::sync::atomic::AtomicU8;

use super::arch;
use super::decode::{Arm, SELFTEST_LEN, cached_selftest, selftest_input};
use super::model::{EncodeModel, normalize};
use super::{CHUNK_HEAD_LEN, EncodeError, HEADER_LEN, LANES, MAGIC, MAX_BYTES, MAX_CHUNK_SHIFT};
use super::{MIN_CHUNK_SHIFT, RANS_L, VERSION_2, WAY_LANES, WAYS, chunk_check};

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
        cached_selftest(&SELFTEST, || encode_selftest(self), self, "encoder")
    }

    /// The fastest arm that can encode version 2 here ([`encode_v2_into`] uses it): AVX2
    /// where it runs, else scalar.
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

/// The largest blob an encoder of any version ([`encode_into`], [`encode_v2_into`]) can
/// produce for `n` packed bytes: header, index, chunk checks, and at most the raw bytes for
/// every chunk.
pub fn max_encoded_len(n: usize, chunk_shift: u8) -> usize {
    let shift = chunk_shift.clamp(MIN_CHUNK_SHIFT, MAX_CHUNK_SHIFT);
    HEADER_LEN + 12 * n.div_ceil(1usize << shift) + n
}

/// Encodes packed int4 bytes as an `int4-rans64-t1` blob of the
/// [`DEFAULT_VERSION`](super::DEFAULT_VERSION) (version 3,
/// [`encode_v3_into`](super::encode_v3_into)) into `dst` (at least [`max_encoded_len`]
/// bytes); returns the blob length. Deterministic: the output depends only on `src` and
/// `chunk_shift`.
pub fn encode_into(src: &[u8], chunk_shift: u8, dst: &mut [u8]) -> Result<usize, EncodeError> {
    const { assert!(super::DEFAULT_VERSION == super::VERSION_3) };
    super::encode_v3_into(src, chunk_shift, dst)
}

/// Encodes packed int4 bytes as a version-2 blob into `dst` (at least [`max_encoded_len`]
/// bytes) with [`Arm::best_encoder`]; returns the blob length. For readers that predate
/// version 3. Deterministic: the output depends only on `src` and `chunk_shift`, never on
/// the arm.
pub fn encode_v2_into(src: &[u8], chunk_shift: u8, dst: &mut [u8]) -> Result<usize, EncodeError> {
    encode_blob(Arm::best_encoder(), src, chunk_shift, dst)
}

/// [`encode_v2_into`] with a forced arm (tests, benches): the same bytes, or
/// [`EncodeError::Unavailable`] when the arm cannot encode here ([`Arm::can_encode`]).
pub fn encode_v2_with(
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
    write_blob(VERSION_2, src, chunk_shift, dst, |raw, region| encode_chunk(arm, raw, region))
}

/// The blob framing both versions share: the argument checks, the header, then chunk by chunk
/// the coded bytes (`code_chunk` writes a chunk into a region of its raw length, or `None`
/// when coding would not shrink it, and the chunk is stored raw), its index entry and its
/// check. Returns the blob length.
pub(super) fn write_blob(
    version: u8,
    src: &[u8],
    chunk_shift: u8,
    dst: &mut [u8],
    mut code_chunk: impl FnMut(&[u8], &mut [u8]) -> Option<usize>,
) -> Result<usize, EncodeError> {
    check_chunk_shift_and_room(src.len(), chunk_shift, dst.len())?;
    dst[..4].copy_from_slice(&MAGIC);
    dst[4] = version;
    dst[5] = chunk_shift;
    dst[6..8].fill(0);
    dst[8..16].copy_from_slice(&(src.len() as u64).to_le_bytes());
    let chunk = 1usize << chunk_shift;
    let n_chunks = src.len().div_ceil(chunk);
    let checks = HEADER_LEN + 4 * n_chunks;
    let mut pos = checks + 8 * n_chunks;
    for (c, raw) in src.chunks(chunk).enumerate() {
        let region = &mut dst[pos..pos + raw.len()];
        let stored = match code_chunk(raw, region) {
            Some(n) => n,
            None => {
                region.copy_from_slice(raw);
                raw.len()
            }
        };
        #[allow(clippy::cast_possible_truncation)] // ≤ 2^26
        let stored32 = stored as u32;
        dst[HEADER_LEN + 4 * c..HEADER_LEN + 4 * c + 4].copy_from_slice(&stored32.to_le_bytes());
        let check = chunk_check(&dst[pos..pos + stored]);
        dst[checks + 8 * c..checks + 8 * c + 8].copy_from_slice(&check.to_le_bytes());
        pos += stored;
    }
    Ok(pos)
}

/// The encoders' argument checks, in order: the chunk shift, the input size, the room in
/// `dst` ([`max_encoded_len`]).
fn check_chunk_shift_and_room(
    n: usize,
    chunk_shift: u8,
    dst_len: usize,
) -> Result<(), EncodeError> {
    if !(MIN_CHUNK_SHIFT..=MAX_CHUNK_SHIFT).contains(&chunk_shift) {
        return Err(EncodeError::ChunkShift { got: chunk_shift });
    }
    if n as u64 > MAX_BYTES {
        return Err(EncodeError::TooLarge { got: n as u64 });
    }
    let needed = max_encoded_len(n, chunk_shift);
    if dst_len < needed {
        return Err(EncodeError::OutputTooSmall { got: dst_len, needed });
    }
    Ok(())
}

/// The nibble counts of a chunk. Counted per byte value first, in four tables that take
/// turns (weights repeat a few values, and consecutive increments of one counter would wait
/// for each other's stores), then folded into the 16 nibble counts: one increment per byte
/// instead of two dependent ones per byte.
pub(super) fn nibble_histogram(raw: &[u8]) -> [u64; 16] {
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

/// An estimate of a chunk's coded length in bytes, head included, from its nibble counts and
/// frequencies: `Σ h[s]·(12 − log2 f[s]) / 8`, with `log2` taken piecewise linear between
/// powers of two (below the true value by at most 0.09, so the estimate errs high). It only
/// chooses how the ways are coded, never what is written.
fn estimated_coded_len(hist: &[u64; 16], freq: &[u16; 16]) -> usize {
    let mut bits: u128 = 0; // in 1/65536 bits
    for (&h, &f) in hist.iter().zip(freq) {
        if h == 0 || f == 0 {
            continue;
        }
        let f = u32::from(f);
        let k = 31 - f.leading_zeros();
        let log2 = (k << 16) + ((f << 16) >> k) - (1 << 16);
        bits += u128::from(h) * u128::from((12 << 16) - log2);
    }
    #[allow(clippy::cast_possible_truncation)] // at most 12 bits per nibble of a chunk
    let bytes = (bits >> 19) as usize;
    CHUNK_HEAD_LEN + bytes
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
    let hist = nibble_histogram(raw);
    let freq = normalize(&hist);
    let model = EncodeModel::new(&freq);
    let mut states = [[RANS_L; WAY_LANES]; WAYS];
    let mut words = [0usize; WAYS];
    // A chunk expected within 1/32 of its raw size would likely overflow a quarter late in
    // the pass and then be coded again one way at a time: go there directly.
    let roomy = estimated_coded_len(&hist, &freq) < len - len / 32;
    let together = arm != Arm::Scalar
        && roomy
        && encode_ways_together(arm, raw, &model, &mut states, region, &mut words).is_some();
    if !together {
        states = [[RANS_L; WAY_LANES]; WAYS];
        encode_ways_one_at_a_time(arm, raw, &model, &mut states, region, &mut words)?;
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

/// Codes the ways one after the other, way `w` writing down from the end of the region but
/// never below the words of the ways before it, which are moved into place after the chunk
/// head as each finishes; `words` gets their counts. `None` when they do not fit.
fn encode_ways_one_at_a_time(
    arm: Arm,
    raw: &[u8],
    model: &EncodeModel,
    x: &mut [[u32; WAY_LANES]; WAYS],
    region: &mut [u8],
    words: &mut [usize; WAYS],
) -> Option<()> {
    let mut used = CHUNK_HEAD_LEN;
    for w in 0..WAYS {
        let n = encode_way(arm, raw, w, model, &mut x[w], region, used)?;
        let end = region.len();
        region.copy_within(end - 2 * n..end, used);
        used += 2 * n;
        words[w] = n;
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

#[cfg(test)]
mod tests {
    //! The two ways the chunk encoder codes its ways, checked against each other on chunks
    //! that fit their quarters and on one that does not (the path `encode_chunk` takes only
    //! when its estimate was wrong, so the round trips rarely reach it).
    use super::*;

    fn chunk(random_nibbles: bool, n: usize) -> std::vec::Vec<u8> {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut nibble = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let v =
                if random_nibbles { seed & 15 } else { ((seed & 7) + ((seed >> 3) & 7)) / 2 + 4 };
            u8::try_from(v).unwrap_or(0)
        };
        (0..n).map(|_| nibble() | (nibble() << 4)).collect()
    }

    fn one_way_at_a_time(arm: Arm, raw: &[u8], region: &mut [u8]) -> Option<[usize; WAYS]> {
        let model = EncodeModel::new(&normalize(&nibble_histogram(raw)));
        let mut states = [[RANS_L; WAY_LANES]; WAYS];
        let mut words = [0; WAYS];
        encode_ways_one_at_a_time(arm, raw, &model, &mut states, region, &mut words)?;
        Some(words)
    }

    #[test]
    fn ways_together_equal_one_way_at_a_time_or_refuse() {
        let required = std::env::var("TETRAD_REQUIRE_ISA").unwrap_or_default();
        let mut arms = std::vec![Arm::Scalar];
        if Arm::Avx2.can_encode() {
            arms.push(Arm::Avx2);
        } else {
            assert!(!(cfg!(target_arch = "x86_64") && required.split(',').any(|a| a == "avx2")));
        }
        for arm in arms {
            for (random, n) in [(false, 4096), (false, 70_001), (true, 4096), (true, 70_001)] {
                let raw = chunk(random, n);
                let model = EncodeModel::new(&normalize(&nibble_histogram(&raw)));
                let mut a = std::vec![0u8; n];
                let mut b = std::vec![0u8; n];
                let mut states = [[RANS_L; WAY_LANES]; WAYS];
                let mut words = [0; WAYS];
                let together =
                    encode_ways_together(arm, &raw, &model, &mut states, &mut a, &mut words);
                let single = one_way_at_a_time(arm, &raw, &mut b);
                if random {
                    // 4 bits per nibble: the words exceed their quarters and the region.
                    assert!(together.is_none() && single.is_none(), "{arm} {n}");
                } else {
                    assert_eq!(Some(words), single, "{arm} {n}");
                    let used = CHUNK_HEAD_LEN + 2 * words.iter().sum::<usize>();
                    assert_eq!(a[CHUNK_HEAD_LEN..used], b[CHUNK_HEAD_LEN..used], "{arm} {n}");
                }
            }
        }
    }

    /// Way 0's bytes random, the other ways' all 0x88: the chunk codes to well under its
    /// raw size, but way 0 needs more than its quarter, so `encode_chunk` tries the ways
    /// together, fails, and codes them one at a time, writing the scalar bytes.
    #[test]
    fn a_way_over_its_quarter_falls_back_to_one_way_at_a_time() {
        let n = 64 * 1000;
        let noise = chunk(true, n);
        let raw: std::vec::Vec<u8> =
            (0..n).map(|i| if i % LANES < WAY_LANES { noise[i] } else { 0x88 }).collect();
        let hist = nibble_histogram(&raw);
        assert!(estimated_coded_len(&hist, &normalize(&hist)) < n / 2);
        let mut arms = std::vec![Arm::Scalar];
        if Arm::Avx2.can_encode() {
            arms.push(Arm::Avx2);
        }
        let mut reference: Option<std::vec::Vec<u8>> = None;
        for arm in arms {
            let model = EncodeModel::new(&normalize(&hist));
            let mut region = std::vec![0u8; n];
            let mut states = [[RANS_L; WAY_LANES]; WAYS];
            let mut words = [0; WAYS];
            let together =
                encode_ways_together(arm, &raw, &model, &mut states, &mut region, &mut words);
            assert!(together.is_none(), "{arm}: way 0 fits its quarter after all");
            let used = encode_chunk(arm, &raw, &mut region).expect("codes");
            assert!(used < n / 2);
            match &reference {
                None => reference = Some(region[..used].to_vec()),
                Some(want) => assert_eq!(&region[..used], &want[..], "{arm}"),
            }
        }
    }

    #[test]
    fn the_estimate_errs_high_by_little() {
        for (random, n) in [(false, 1 << 20), (true, 1 << 20)] {
            let raw = chunk(random, n);
            let hist = nibble_histogram(&raw);
            let freq = normalize(&hist);
            let estimate = estimated_coded_len(&hist, &freq);
            let mut region = std::vec![0u8; n];
            let actual = encode_chunk(Arm::Scalar, &raw, &mut region).unwrap_or(n + 100);
            assert!(estimate + 64 >= actual, "estimate {estimate} below actual {actual}");
            assert!(estimate <= actual + actual / 30, "estimate {estimate}, actual {actual}");
        }
    }
}
