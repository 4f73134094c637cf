//! The AVX2 encoder of `int4-rans64-t1`: ways as pairs of 8-lane vectors (lanes 0..8 and
//! 8..16), whole rounds at a time, byte-identical to the scalar encoder (`encode.rs`).
//!
//! The scalar encoder spends about 10 cycles per symbol on a Zen 3 core: a 64-bit multiply
//! for the division, a table load and a word emit, lane after lane. Here one step codes 8
//! lanes:
//!
//! 1. **Per-symbol values** (off the state's dependency chain): the nibbles select, with two
//!    16-entry lookups (two `vpermd` and a blend each), `f | start << 16` and a biased f32
//!    reciprocal of `f`.
//! 2. **Renormalise**: a lane emits its low word when `x ≥ f·2^20`, i.e. when `x >> 20 ≥ f`
//!    (one shift, one signed compare: both sides are below 2^12); emitting lanes continue
//!    with `x >> 16` (a blend). The emitted words go to the output in the scalar order (lanes
//!    descending, written backwards) through one `vpshufb` per 8 lanes whose control, picked
//!    by the lane mask from [`COMPRESS`], packs the words of the emitting lanes at the top of
//!    a 16-byte store ending at the write position; the bytes below them are scratch that
//!    later words overwrite.
//! 3. **Divide** `q = ⌊x / f⌋` for `16f ≤ x < f·2^20` in f32: `x` converts with one rounding
//!    (two above 2^31: a signed convert plus 2^32), the reciprocal is `(1/f)(1 − 2^-21)`
//!    rounded, and their rounded product lies in `(x/f − 1, x/f)` — below because the bias
//!    `2^-21` exceeds the four roundings (`≤ 2^-22` together), above `x/f − 1` because
//!    `x/f < 2^20`. So its truncation is `q` or `q − 1`, and one exact integer correction
//!    (`rem = x − q̂·f`; if `rem ≥ f` then `q̂ + 1`, `rem − f`) gives `q` and `rem`. A unit test
//!    checks the estimate for every `f` at the edges of multiples across the state range.
//! 4. **Place**: `x' = (q << 12) | slots[start + rem]`, the slot read from the model's
//!    4096-entry index → slot table by eight scalar loads (the index masked to 12 bits, so
//!    even a wrong quotient could not read outside it). A `vpgatherdd` does the same in one
//!    instruction and measured no faster on Zen 3 (0.61 G symbols/s either way).
//!
//! One way is two chains of some 45 dependent cycles per step, so the chunk encoder runs
//! the four ways *together* (`K = 4`, eight chains), each writing into its own quarter of
//! the chunk's space; it falls back to one way at a time (`K = 1`) only for chunks whose
//! ways do not fit their quarters (`encode.rs`).

use core::arch::x86_64::{
    __m128i, __m256i, _mm_loadu_si128, _mm_shuffle_epi8, _mm_srli_si128, _mm_storeu_si128,
    _mm256_add_epi32, _mm256_add_ps, _mm256_and_ps, _mm256_and_si256, _mm256_blendv_ps,
    _mm256_castps_si256, _mm256_castsi256_ps, _mm256_castsi256_si128, _mm256_cmpgt_epi32,
    _mm256_cvtepi32_ps, _mm256_cvtepu8_epi32, _mm256_cvttps_epi32, _mm256_extracti128_si256,
    _mm256_loadu_si256, _mm256_movemask_ps, _mm256_mul_ps, _mm256_mullo_epi32, _mm256_or_si256,
    _mm256_packus_epi32, _mm256_permute4x64_epi64, _mm256_set1_epi32, _mm256_set1_ps,
    _mm256_setr_epi32, _mm256_setzero_si256, _mm256_slli_epi32, _mm256_srai_epi32,
    _mm256_srli_epi32, _mm256_storeu_si256, _mm256_sub_epi32,
};

use super::super::model::EncodeModel;
use super::super::{LANES, WAY_LANES};
use super::x86_64::{avx2_detected, lookup16};

/// Room a round needs below the write position: at most 32 words (64 bytes), and each
/// 16-byte store starts up to 16 bytes below the position it writes down from.
const ROUND_ROOM: usize = 80;

/// One row per 8-bit lane mask: the `vpshufb` control that moves the low words of the set
/// lanes (of 8 words, lane `k` at bytes `2k..2k+2`) to the top of 16 bytes, in lane order.
#[repr(C, align(64))]
struct Compress([[u8; 16]; 256]);

static COMPRESS: Compress = {
    let mut t = [[0x80u8; 16]; 256];
    let mut m = 0;
    while m < 256 {
        let mut count = 0;
        let mut bit = 0;
        while bit < 8 {
            count += (m >> bit) & 1;
            bit += 1;
        }
        let mut at = 8 - count; // the first emitted word's slot
        let mut lane = 0u8;
        while lane < 8 {
            if m & (1 << lane) != 0 {
                t[m][2 * at] = 2 * lane;
                t[m][2 * at + 1] = 2 * lane + 1;
                at += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    Compress(t)
};

/// The per-symbol values as 16-entry tables split for 8-entry `vpermd`s.
#[derive(Clone, Copy)]
struct Tables {
    /// `f | start << 16`.
    fs: [__m256i; 2],
    /// The biased reciprocal of `f` (f32 bits; 0 for absent symbols).
    rcp: [__m256i; 2],
}

/// The f32 reciprocal the division uses: `(1/f)(1 − 2^-21)`, rounded (module essay).
#[allow(clippy::cast_possible_truncation)] // the f32 rounding is the point
fn biased_reciprocal(f: u32) -> f32 {
    if f == 0 { 0.0 } else { (1.0 / f64::from(f) * (1.0 - 1.0 / f64::from(1u32 << 21))) as f32 }
}

/// Whole rounds of the `K` ways `first_way..first_way + K` with AVX2, from round `top − 1`
/// down; returns how many (0 if the CPU lacks AVX2). Stops before a round that is not full
/// for these ways or when a way has fewer than [`ROUND_ROOM`] bytes between `wp[k]` and
/// `floor[k]`; the scalar encoder does the rest, so the output is the scalar encoder's,
/// word for word.
#[allow(clippy::too_many_arguments)] // the scalar way loop's state, handed over as is
pub(super) fn encode_rounds_avx2<const K: usize>(
    raw: &[u8],
    first_way: usize,
    top: usize,
    model: &EncodeModel,
    x: &mut [[u32; WAY_LANES]; K],
    region: &mut [u8],
    wp: &mut [usize; K],
    floor: &[usize; K],
) -> usize {
    if !avx2_detected() {
        return 0;
    }
    // SAFETY: the CPU supports AVX2 and POPCNT (checked just above).
    unsafe { encode_rounds256(raw, first_way, top, model, x, region, wp, floor) }
}

#[allow(clippy::too_many_arguments)] // as above
#[target_feature(enable = "avx2,popcnt")]
fn encode_rounds256<const K: usize>(
    raw: &[u8],
    first_way: usize,
    top: usize,
    model: &EncodeModel,
    x: &mut [[u32; WAY_LANES]; K],
    region: &mut [u8],
    wp: &mut [usize; K],
    floor: &[usize; K],
) -> usize {
    let mut fs = [0u32; 16];
    let mut rcp = [0u32; 16];
    for s in 0..16 {
        let (f, start, _) = model.sym[s];
        fs[s] = f | (start << 16);
        rcp[s] = biased_reciprocal(f).to_bits();
    }
    let load = |a: &[u32; 16], h: usize| {
        // SAFETY: every table is 16 u32; each 256-bit load reads 8 of them at offset 0 or 8.
        unsafe { _mm256_loadu_si256(a.as_ptr().wrapping_add(8 * h).cast()) }
    };
    let tables = Tables { fs: [load(&fs, 0), load(&fs, 1)], rcp: [load(&rcp, 0), load(&rcp, 1)] };
    // Way k's lanes 0..8 and 8..16.
    let mut xs: [[__m256i; 2]; K] = core::array::from_fn(|k| [load(&x[k], 0), load(&x[k], 1)]);
    let mut w = *wp;
    let mut done = 0;
    let first = first_way * WAY_LANES;
    while done < top {
        let r = top - 1 - done;
        let base = r * LANES + first;
        let Some(bytes) = raw.get(base..base + K * WAY_LANES) else { break };
        if (0..K).any(|k| w[k] > region.len() || w[k] < floor[k].saturating_add(ROUND_ROOM)) {
            break;
        }
        let mut nibbles = [[_mm256_setzero_si256(); 2]; K];
        for (k, way) in bytes.chunks_exact(WAY_LANES).enumerate() {
            // SAFETY: `way` is 16 bytes long.
            let v = unsafe { _mm_loadu_si128(way.as_ptr().cast()) };
            nibbles[k] = [_mm256_cvtepu8_epi32(v), _mm256_cvtepu8_epi32(_mm_srli_si128::<8>(v))];
        }
        // High nibbles first: the scalar encoder codes a round backwards. All ways step
        // before any writes their words, so the core sees 2K independent chains.
        for half in [1, 0] {
            let mut next = xs;
            let mut emit = [[0usize; 2]; K];
            for k in 0..K {
                for h in 0..2 {
                    let n = if half == 1 {
                        _mm256_srli_epi32::<4>(nibbles[k][h])
                    } else {
                        _mm256_and_si256(nibbles[k][h], _mm256_set1_epi32(15))
                    };
                    (next[k][h], emit[k][h]) = step(xs[k][h], n, &tables, model);
                }
            }
            for k in 0..K {
                put_words(xs[k], emit[k], region, &mut w[k]);
            }
            xs = next;
        }
        done += 1;
    }
    for (lanes, v) in x.iter_mut().zip(xs) {
        for (h, half) in v.into_iter().enumerate() {
            // SAFETY: `lanes` has 16 u32; the store writes 8 of them at offset 0 or 8.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().wrapping_add(8 * h).cast(), half) };
        }
    }
    *wp = w;
    done
}

/// One encode step of 8 lanes coding the nibbles `n`: `(next state, mask of emitting lanes)`.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn step(x: __m256i, n: __m256i, t: &Tables, model: &EncodeModel) -> (__m256i, usize) {
    // The per-symbol values; bit 31 of `sel` is the nibble's bit 3 (the table half).
    let sel = _mm256_slli_epi32::<28>(n);
    let fs = lookup16(n, sel, &t.fs);
    let rcp = _mm256_castsi256_ps(lookup16(n, sel, &t.rcp));
    let f = _mm256_and_si256(fs, _mm256_set1_epi32(0xFFF));
    let f_minus_1 = _mm256_sub_epi32(f, _mm256_set1_epi32(1));
    let start = _mm256_srli_epi32::<16>(fs);
    // Renormalise: keep x where x < f·2^20 (x >> 20 < f), else x >> 16.
    let keep = _mm256_cmpgt_epi32(f, _mm256_srli_epi32::<20>(x));
    #[allow(clippy::cast_sign_loss)] // movemask of 8 lanes: 0..=255
    let emit = !(_mm256_movemask_ps(_mm256_castsi256_ps(keep)) as usize) & 255;
    let s = _mm256_castps_si256(_mm256_blendv_ps(
        _mm256_castsi256_ps(_mm256_srli_epi32::<16>(x)),
        _mm256_castsi256_ps(x),
        _mm256_castsi256_ps(keep),
    ));
    // s as f32: the signed convert reads s ≥ 2^31 as s − 2^32; add 2^32 back there.
    let wrapped = _mm256_castsi256_ps(_mm256_srai_epi32::<31>(s));
    let sf = _mm256_add_ps(
        _mm256_cvtepi32_ps(s),
        _mm256_and_ps(wrapped, _mm256_set1_ps(4_294_967_296.0)),
    );
    let q_est = _mm256_cvttps_epi32(_mm256_mul_ps(sf, rcp));
    // q_est is q or q − 1: one exact correction.
    let rem = _mm256_sub_epi32(s, _mm256_mullo_epi32(q_est, f));
    let over = _mm256_cmpgt_epi32(rem, f_minus_1);
    let q = _mm256_sub_epi32(q_est, over);
    let rem = _mm256_sub_epi32(rem, _mm256_and_si256(over, f));
    let index = _mm256_add_epi32(start, rem);
    let mut at = [0u32; 8];
    // SAFETY: `at` is 8 u32.
    unsafe { _mm256_storeu_si256(at.as_mut_ptr().cast(), index) };
    let t = |k: usize| model.slots[(at[k] & 0xFFF) as usize].cast_signed();
    let slot = _mm256_setr_epi32(t(0), t(1), t(2), t(3), t(4), t(5), t(6), t(7));
    (_mm256_or_si256(_mm256_slli_epi32::<12>(q), slot), emit)
}

/// Writes the low words of a way's emitting lanes (`emit[0]` of `x[0]` = lanes 0..8,
/// `emit[1]` of `x[1]` = lanes 8..16) backwards below `*w`, as the scalar encoder does lane
/// by lane from lane 15 down: lanes 8..16 end at `*w`, lanes 0..8 below them.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn put_words(x: [__m256i; 2], emit: [usize; 2], region: &mut [u8], w: &mut usize) {
    let low = _mm256_set1_epi32(0xFFFF);
    // [a0..a4, b0..b4 | a4..a8, b4..b8] as u16, then the middle quarters swapped.
    let words = _mm256_packus_epi32(_mm256_and_si256(x[0], low), _mm256_and_si256(x[1], low));
    let words = _mm256_permute4x64_epi64::<0b11_01_10_00>(words);
    let mut put = |half: __m128i, mask: usize, w: &mut usize| {
        // SAFETY: a row is 16 bytes.
        let control = unsafe { _mm_loadu_si128(COMPRESS.0[mask].as_ptr().cast()) };
        let packed = _mm_shuffle_epi8(half, control);
        let at = region.as_mut_ptr().wrapping_add(*w - 16);
        // SAFETY: a round starts only with `floor + ROUND_ROOM ≤ *w ≤ region.len()` and moves
        // `*w` down by at most 64 bytes, so the 16 bytes below `*w` are inside `region` (and
        // above the way's floor).
        unsafe { _mm_storeu_si128(at.cast(), packed) };
        *w -= 2 * mask.count_ones() as usize;
    };
    put(_mm256_extracti128_si256::<1>(words), emit[1], w);
    put(_mm256_castsi256_si128(words), emit[0], w);
}

#[cfg(test)]
mod tests {
    //! The f32 division of [`step`] against exact integer division for every frequency, at
    //! the edges of every multiple it can meet (just below, at and above `k·f`) across the
    //! whole state range `16f ≤ x < f·2^20`.
    use super::{avx2_detected, biased_reciprocal};
    use core::arch::x86_64::{
        _mm256_add_ps, _mm256_and_ps, _mm256_castsi256_ps, _mm256_cvtepi32_ps, _mm256_cvttps_epi32,
        _mm256_loadu_si256, _mm256_mul_ps, _mm256_set1_ps, _mm256_srai_epi32, _mm256_storeu_si256,
    };

    /// The estimate `q̂` of [`super::step`] for 8 states and one frequency.
    #[target_feature(enable = "avx2")]
    fn estimate(s: &[u32; 8], f: u32) -> [u32; 8] {
        // SAFETY: 8 u32 in, 8 u32 out.
        let v = unsafe { _mm256_loadu_si256(s.as_ptr().cast()) };
        let wrapped = _mm256_castsi256_ps(_mm256_srai_epi32::<31>(v));
        let sf = _mm256_add_ps(
            _mm256_cvtepi32_ps(v),
            _mm256_and_ps(wrapped, _mm256_set1_ps(4_294_967_296.0)),
        );
        let q = _mm256_cvttps_epi32(_mm256_mul_ps(sf, _mm256_set1_ps(biased_reciprocal(f))));
        let mut out = [0u32; 8];
        // SAFETY: `out` is 8 u32 = 32 bytes, one unaligned 256-bit store.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), q) };
        out
    }

    #[test]
    fn avx2_division_estimate_is_q_or_q_minus_1_for_every_frequency() {
        if !avx2_detected() {
            let required = std::env::var("TETRAD_REQUIRE_ISA").unwrap_or_default();
            assert!(!required.split(',').any(|a| a == "avx2"), "avx2 required but not detected");
            std::eprintln!("avx2 not detected: division test not run");
            return;
        }
        let mut checked = 0u64;
        for f in 1..4096u32 {
            let lo = 16 * f;
            let hi = f * (1 << 20) - 1; // largest state before the division
            // Multiples k·f near both ends and spread between, each probed at −1, 0, +1 and
            // at the last value of its quotient.
            let mut ks: std::vec::Vec<u32> = (16..80).chain((1 << 20) - 64..=(1 << 20)).collect();
            ks.extend((0..200u32).map(|i| 16 + i * (((1 << 20) - 16) / 200)));
            let mut batch = [0u32; 8];
            let mut n = 0;
            let flush = |batch: &[u32; 8]| {
                // SAFETY: the CPU has AVX2 (checked above).
                let got = unsafe { estimate(batch, f) };
                for (s, q) in batch.iter().zip(got) {
                    let exact = s / f;
                    assert!(
                        q == exact || q + 1 == exact,
                        "f {f} x {s}: estimate {q}, exact {exact}"
                    );
                }
            };
            for k in ks {
                for s in [k.wrapping_mul(f).wrapping_sub(1), k.wrapping_mul(f), k * f + f - 1] {
                    if (lo..=hi).contains(&s) && u64::from(k) * u64::from(f) < 1 << 32 {
                        batch[n] = s;
                        n += 1;
                        checked += 1;
                        if n == 8 {
                            flush(&batch);
                            n = 0;
                        }
                    }
                }
            }
            batch[n..].fill(lo);
            flush(&batch);
        }
        assert!(checked > 4095 * 500, "only {checked} states checked");
    }
}
