//! x86-64 arms: AVX-512 (one way = one 16-lane vector), in two builds, and AVX2 (one way =
//! two 8-lane vectors). All mirror `Model::step` and the scalar refill exactly.
//!
//! One decode step of a vector of states `x`, with `t = x >> 8` (bucket in bits 0..4, which is
//! all `vpermd` looks at) and `xs = x << 20` (the slot in the top 12 bits):
//! 1. `upper = xs ≥ thr[t]` — one permute, one unsigned compare;
//! 2. `e = upper ? hi[t] : lo[t]` — two permutes (issued beside the compare) and a blend
//!    under its mask;
//! 3. `x = (e & 0xFFF)·(x >> 12) + (x & 0xFFF) + (e >>s 16)` — and, shift, `vpmulld`, two adds;
//! 4. refill: lanes with `x < 2^16` take the next words of the way in lane order. AVX-512: a
//!    compare into a mask, a 32-byte load widened to 16 dwords, `vpexpandd` under the mask,
//!    a masked shift and an OR; the way pointer advances by `2·popcount(mask)`. The
//!    `avx512-vbmi` build ([`refill512_vbmi`]) compares 16-bit words instead, expands the
//!    loaded words straight into the lanes' high halves with `vpexpandw` and shifts them in
//!    with one masked `vpshldd`, the lane mask coming from `pext` on the scalar side.
//!
//! The AVX2 arm has no 16-entry permute: each lookup is two `vpermd` and a blend on bit 31 of
//! `xs` (bucket bit 3). So it uses the *two-table form* (`Model::two_table_form`): the lower
//! entry carries `div[b]` in its top half, `d = (x & 255) − div[b]` is the compare (its sign
//! picks the entry, so the blend reads it directly) and also the index term of
//! `x' = f·(x >> 12) + d + (e >> 16)`: two lookups, no `thr` table, no compare. Its refill
//! tests the high words with one 16-bit compare, and the `movmskps` of that selects a
//! [`REFILL8`] row of two `vpshufb` controls: one places the words (a 16-byte load repeated
//! in both halves), the other lifts the refilling states by 16 bits, and an OR joins them —
//! no widening, no lane-crossing permute, no blend (+30 % with the two-table step on Zen 3,
//! 1.31 → 1.7 G nibbles/s; a 4096-entry `vpgatherdd` slot table instead of the lookups was
//! slower, 1.18).
//!
//! Per round a way does two steps (low nibble, high nibble) and its 16 output bytes come from
//! the two entries' symbol fields with two shifts, one `vpternlogd` and one `vpmovdb`
//! (`avx512-vbmi`: a round's 64 bytes from four `vpermt2b`, see [`emit512_vbmi`]; AVX2:
//! shifts, masks, two packs and a `vpermd`). The four ways are independent chains.
//!
//! **Chains first, then operations.** One chunk on AVX-512 is four chains of a dozen
//! dependent operations per step, too few to hide their latency, so whole blobs decode two
//! chunks per loop ([`pair_rounds_avx512`]: eight chains, +22 %). With eight chains the loop
//! is bound by the vector ports instead (3.66 GHz here, about 15 cycles per 16-lane step and
//! 20 vector operations, the compares, shifts and permutes sharing ports), so the
//! `avx512-vbmi` build trims operations: no widening, no OR, one compare fewer per refill
//! and a quarter of the output shifts (+24 %). The AVX2 arm steps all eight vectors of a
//! round before any of their refills (eight chains, +38 % over stepping one way at a time);
//! pairing chunks there is slower (16 ymm registers: the states spill). Measurements in
//! docs/PERFORMANCE.md.

use core::arch::x86_64::{__m128i, _mm_loadu_si128};
use core::arch::x86_64::{
    __m256i, __m512i, _mm_storeu_si128, _mm256_add_epi32, _mm256_and_si256, _mm256_blendv_ps,
    _mm256_broadcastsi128_si256, _mm256_castps_si256, _mm256_castsi256_ps, _mm256_castsi256_si128,
    _mm256_cmpeq_epi16, _mm256_loadu_si256, _mm256_movemask_ps, _mm256_mullo_epi32,
    _mm256_or_si256, _mm256_packus_epi16, _mm256_packus_epi32, _mm256_permutevar8x32_epi32,
    _mm256_set1_epi32, _mm256_setr_epi32, _mm256_setzero_si256, _mm256_shuffle_epi8,
    _mm256_slli_epi32, _mm256_srli_epi32, _mm256_storeu_si256, _mm256_sub_epi32, _mm512_add_epi32,
    _mm512_and_si512, _mm512_cmpge_epu32_mask, _mm512_cmplt_epu32_mask, _mm512_cvtepi32_epi8,
    _mm512_cvtepu16_epi32, _mm512_loadu_si512, _mm512_mask_blend_epi32, _mm512_mask_slli_epi32,
    _mm512_maskz_expand_epi32, _mm512_mullo_epi32, _mm512_or_si512, _mm512_permutexvar_epi32,
    _mm512_set1_epi32, _mm512_srai_epi32, _mm512_srli_epi32, _mm512_storeu_si512,
    _mm512_ternarylogic_epi32,
};
use core::arch::x86_64::{
    _mm512_mask_blend_epi64, _mm512_mask_cmpeq_epi16_mask, _mm512_mask_shldi_epi32,
    _mm512_maskz_expand_epi16, _mm512_permutex2var_epi8, _mm512_set1_epi8, _mm512_setzero_si512,
    _mm512_srli_epi16, _mm512_zextsi256_si512, _pext_u32,
};

use super::super::model::Model;
use super::super::{LANES, WAY_LANES, WAYS};
use super::Side;

/// Bytes a way must hold unread at the start of a round for the round's loads to stay inside
/// it: the first step loads 32 bytes and consumes at most 32, the second loads 32 more.
const ROUND_SLACK: usize = 64;

/// Whether every named target feature is on: detected at run time with `std`, else
/// whether the build enables it.
macro_rules! has_features {
    ($($f:tt),+) => {{
        #[cfg(feature = "std")]
        {
            true $(&& std::is_x86_feature_detected!($f))+
        }
        #[cfg(not(feature = "std"))]
        {
            cfg!(all($(target_feature = $f),+))
        }
    }};
}

/// Whether this CPU runs AVX-512 F + BW (never under Miri, which has no shim for
/// `vpexpandd`; the arm is tested natively wherever the CPU has it).
pub(super) fn avx512_detected() -> bool {
    !cfg!(miri) && has_features!("avx512f", "avx512bw", "popcnt")
}

/// Whether this CPU runs the `avx512-vbmi` arm: AVX-512 F + BW with VBMI, VBMI2 and BMI2
/// (never under Miri, as for [`avx512_detected`]).
pub(super) fn avx512_vbmi_detected() -> bool {
    avx512_detected() && has_features!("avx512vbmi", "avx512vbmi2", "bmi2")
}

/// Whether this CPU runs AVX2.
pub(super) fn avx2_detected() -> bool {
    has_features!("avx2", "popcnt")
}

/// Whether every way holds a full round's slack.
#[inline(always)]
fn round_fits(ways: &[&[u8]; WAYS], off: &[usize; WAYS]) -> bool {
    (0..WAYS).all(|w| ways[w].len() - off[w] >= ROUND_SLACK)
}

/// Loads one chunk's tables, states and positions into locals named by the caller (`$t`: the
/// tables, `$x`: the four ways' state vectors, `$o`: the four way offsets).
macro_rules! load512 {
    ($model:expr, $st:expr, $pos:expr, $t:ident, [$x0:ident, $x1:ident, $x2:ident, $x3:ident],
     [$o0:ident, $o1:ident, $o2:ident, $o3:ident]) => {
        // SAFETY: each table is 16 u32 = 64 bytes, an unaligned 512-bit load reads exactly them.
        let $t = unsafe {
            (
                _mm512_loadu_si512($model.thr.as_ptr().cast()),
                _mm512_loadu_si512($model.lo.as_ptr().cast()),
                _mm512_loadu_si512($model.hi.as_ptr().cast()),
            )
        };
        let st: &[u32; LANES] = $st;
        // SAFETY: `st` has 64 u32; lanes 16w..16w+16 are in bounds for w < 4.
        let load = |w: usize| unsafe {
            _mm512_loadu_si512(st.as_ptr().wrapping_add(w * WAY_LANES).cast())
        };
        let (mut $x0, mut $x1, mut $x2, mut $x3) = (load(0), load(1), load(2), load(3));
        let [mut $o0, mut $o1, mut $o2, mut $o3] = *$pos;
    };
}

/// One step of one chunk's four ways with their refills (by `$refill`); evaluates to the
/// four entry vectors (whose symbol fields are the step's nibbles). The caller has checked
/// that the round fits (`round_fits`).
macro_rules! step4 {
    ($refill:ident, $t:ident, [$x0:ident, $x1:ident, $x2:ident, $x3:ident], $ways:expr,
     [$o0:ident, $o1:ident, $o2:ident, $o3:ident]) => {{
        let (thr, lo, hi) = $t;
        let [w0, w1, w2, w3] = *$ways;
        let (e0, y0) = step512($x0, thr, lo, hi);
        let (e1, y1) = step512($x1, thr, lo, hi);
        let (e2, y2) = step512($x2, thr, lo, hi);
        let (e3, y3) = step512($x3, thr, lo, hi);
        $x0 = $refill(y0, w0, &mut $o0);
        $x1 = $refill(y1, w1, &mut $o1);
        $x2 = $refill(y2, w2, &mut $o2);
        $x3 = $refill(y3, w3, &mut $o3);
        [e0, e1, e2, e3]
    }};
}

/// Writes one round's 64 bytes at round `r` of `out` from the entries of its two steps.
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
#[inline]
fn emit512(first: [__m512i; 4], second: [__m512i; 4], out: &mut [u8], r: usize) {
    assert!(LANES * r + LANES <= out.len());
    for (w, (e0, e1)) in first.into_iter().zip(second).enumerate() {
        // Low byte of each lane: bits 0..4 from e0's symbol, 4..8 from e1's.
        let bytes = _mm512_ternarylogic_epi32::<0xE4>(
            _mm512_srli_epi32::<12>(e0),
            _mm512_srli_epi32::<8>(e1),
            _mm512_set1_epi32(0x0F),
        );
        let packed = _mm512_cvtepi32_epi8(bytes);
        // SAFETY: bytes 64r .. 64r + 64 are in `out` (asserted above), so 64r + 16w .. + 16
        // are for w < 4.
        unsafe {
            _mm_storeu_si128(
                out.as_mut_ptr().wrapping_add(LANES * r + WAY_LANES * w).cast(),
                packed,
            )
        };
    }
}

/// Stores one chunk's state vectors and way offsets back.
macro_rules! store512 {
    ($st:expr, $pos:expr, [$x0:ident, $x1:ident, $x2:ident, $x3:ident],
     [$o0:ident, $o1:ident, $o2:ident, $o3:ident]) => {{
        let st: &mut [u32; LANES] = $st;
        for (w, v) in [$x0, $x1, $x2, $x3].into_iter().enumerate() {
            // SAFETY: `st` has 64 u32; lanes 16w..16w+16 are in bounds for w < 4.
            unsafe { _mm512_storeu_si512(st.as_mut_ptr().wrapping_add(w * WAY_LANES).cast(), v) };
        }
        *$pos = [$o0, $o1, $o2, $o3];
    }};
}

/// The single-chunk and the paired loop of an AVX-512 arm, from its target features, its
/// refill and its round writer (the step is shared).
macro_rules! avx512_loops {
    ($name:literal, $detected:ident, $features:literal,
     $entry:ident, $pair_entry:ident, $single:ident, $pair:ident, $refill:ident, $emit:ident) => {
        #[doc = concat!("Whole rounds with the `", $name, "` arm; returns how many (0 if the CPU lacks it).")]
        pub(super) fn $entry(
            model: &Model,
            st: &mut [u32; LANES],
            ways: &[&[u8]; WAYS],
            pos: &mut [usize; WAYS],
            out: &mut [u8],
        ) -> usize {
            if !$detected() {
                return 0;
            }
            // SAFETY: the CPU has every feature `$single` enables (checked just above).
            unsafe { $single(model, st, ways, pos, out) }
        }

        #[doc = concat!("Whole rounds of two coded chunks at once with the `", $name, "` arm")]
        /// (eight independent vector chains instead of four); returns how many rounds each
        /// got (0 if the CPU lacks the arm). Each chunk's lanes, ways and output are its own;
        /// the result is exactly what two single-chunk calls would give for that many rounds.
        pub(super) fn $pair_entry(a: Side<'_, '_>, b: Side<'_, '_>) -> usize {
            if !$detected() {
                return 0;
            }
            // SAFETY: the CPU has every feature `$pair` enables (checked just above).
            unsafe { $pair(a, b) }
        }

        #[target_feature(enable = $features)]
        fn $single(
            model: &Model,
            st: &mut [u32; LANES],
            ways: &[&[u8]; WAYS],
            pos: &mut [usize; WAYS],
            out: &mut [u8],
        ) -> usize {
            load512!(model, st, pos, t, [x0, x1, x2, x3], [o0, o1, o2, o3]);
            let rounds = out.len() / LANES;
            let mut r = 0;
            // The four ways are written out (not a loop over an array) so that their states
            // stay in registers and the four chains interleave.
            while r < rounds && round_fits(ways, &[o0, o1, o2, o3]) {
                let first = step4!($refill, t, [x0, x1, x2, x3], ways, [o0, o1, o2, o3]);
                let second = step4!($refill, t, [x0, x1, x2, x3], ways, [o0, o1, o2, o3]);
                $emit(first, second, out, r);
                r += 1;
            }
            store512!(st, pos, [x0, x1, x2, x3], [o0, o1, o2, o3]);
            r
        }

        /// Two chunks' rounds in one loop: one chunk alone is four chains of dependent
        /// steps whose latency the core cannot hide; two give the scheduler eight.
        #[target_feature(enable = $features)]
        fn $pair(a: Side<'_, '_>, b: Side<'_, '_>) -> usize {
            load512!(a.model, a.st, a.pos, ta, [a0, a1, a2, a3], [p0, p1, p2, p3]);
            load512!(b.model, b.st, b.pos, tb, [b0, b1, b2, b3], [q0, q1, q2, q3]);
            let rounds = (a.out.len() / LANES).min(b.out.len() / LANES);
            let mut r = 0;
            while r < rounds
                && round_fits(a.ways, &[p0, p1, p2, p3])
                && round_fits(b.ways, &[q0, q1, q2, q3])
            {
                let fa = step4!($refill, ta, [a0, a1, a2, a3], a.ways, [p0, p1, p2, p3]);
                let fb = step4!($refill, tb, [b0, b1, b2, b3], b.ways, [q0, q1, q2, q3]);
                let sa = step4!($refill, ta, [a0, a1, a2, a3], a.ways, [p0, p1, p2, p3]);
                let sb = step4!($refill, tb, [b0, b1, b2, b3], b.ways, [q0, q1, q2, q3]);
                $emit(fa, sa, a.out, r);
                $emit(fb, sb, b.out, r);
                r += 1;
            }
            store512!(a.st, a.pos, [a0, a1, a2, a3], [p0, p1, p2, p3]);
            store512!(b.st, b.pos, [b0, b1, b2, b3], [q0, q1, q2, q3]);
            r
        }
    };
}

avx512_loops!(
    "avx512",
    avx512_detected,
    "avx512f,avx512bw,popcnt",
    rounds_avx512,
    pair_rounds_avx512,
    rounds512,
    rounds512_pair,
    refill512,
    emit512
);
avx512_loops!(
    "avx512-vbmi",
    avx512_vbmi_detected,
    "avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi2,popcnt",
    rounds_avx512_vbmi,
    pair_rounds_avx512_vbmi,
    rounds512_vbmi,
    rounds512_vbmi_pair,
    refill512_vbmi,
    emit512_vbmi
);

/// One decode step of 16 lanes: `(entry, next state before refill)`. Thirteen operations.
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
#[inline]
fn step512(x: __m512i, thr: __m512i, lo: __m512i, hi: __m512i) -> (__m512i, __m512i) {
    let t = _mm512_srli_epi32::<8>(x);
    let low12 = _mm512_set1_epi32(0xFFF);
    let slot = _mm512_and_si512(x, low12);
    let upper = _mm512_cmpge_epu32_mask(slot, _mm512_permutexvar_epi32(t, thr));
    // Both halves are looked up while the compare runs; only the blend waits for it.
    let e = _mm512_mask_blend_epi32(
        upper,
        _mm512_permutexvar_epi32(t, lo),
        _mm512_permutexvar_epi32(t, hi),
    );
    let f = _mm512_and_si512(e, low12);
    let q = _mm512_srli_epi32::<12>(x);
    let c = _mm512_srai_epi32::<16>(e);
    let next = _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(f, q), slot), c);
    (e, next)
}

/// Refills the lanes below `2^16` from `way` at `*off` (lane order), advancing `*off`.
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
#[inline]
fn refill512(x: __m512i, way: &[u8], off: &mut usize) -> __m512i {
    let need = _mm512_cmplt_epu32_mask(x, _mm512_set1_epi32(0x1_0000));
    // SAFETY: `rounds512` only starts a round while `way` holds ≥ 64 unread bytes; within the
    // round at most 32 bytes are consumed before this load, so [off, off + 32) is in `way`.
    let words = unsafe { _mm256_loadu_si256(way.as_ptr().wrapping_add(*off).cast()) };
    let fresh = _mm512_maskz_expand_epi32(need, _mm512_cvtepu16_epi32(words));
    *off += 2 * need.count_ones() as usize;
    _mm512_or_si512(_mm512_mask_slli_epi32::<16>(x, need, x), fresh)
}

/// [`refill512`] with VBMI2: the lanes below `2^16` are those whose high word is zero, so
/// one 16-bit compare on the odd words gives a mask with a bit at each such lane's high
/// word, which is where `vpexpandw` puts the lane's fresh word straight from the load (no
/// widening); a masked `vpshldd` then shifts it in below the state. The lane mask for that
/// shift comes from the word mask by `pext` (scalar, off the vector ports): this form has one
/// vector compare and no widening or OR where [`refill512`] has a compare, a widening, a
/// shift and an OR.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,bmi2,popcnt")]
#[inline]
fn refill512_vbmi(x: __m512i, way: &[u8], off: &mut usize) -> __m512i {
    let need_hi = _mm512_mask_cmpeq_epi16_mask(0xAAAA_AAAA, x, _mm512_setzero_si512());
    #[allow(clippy::cast_possible_truncation)] // one bit per lane: 16 bits
    let need = _pext_u32(need_hi, 0xAAAA_AAAA) as u16;
    // SAFETY: as in `refill512`: [off, off + 32) is in `way`.
    let words = unsafe { _mm256_loadu_si256(way.as_ptr().wrapping_add(*off).cast()) };
    let fresh = _mm512_maskz_expand_epi16(need_hi, _mm512_zextsi256_si512(words));
    *off += 2 * need_hi.count_ones() as usize;
    // Lanes in `need`: (x << 16) | (fresh >> 16), i.e. the state shifted up and its word.
    _mm512_mask_shldi_epi32::<16>(x, need, x, fresh)
}

/// Byte 1 of each lane of two entry vectors: the first's 16 lanes to bytes 0..16, the
/// second's to 16..32, repeated in bytes 32..64 (for `vpermt2b`).
static BYTE1_OF_TWO: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut j = 0;
    while j < 64 {
        #[allow(clippy::cast_possible_truncation)] // < 64
        let k = (j % 32) as u8;
        t[j] = if k < 16 { 4 * k + 1 } else { 64 + 4 * (k - 16) + 1 };
        j += 1;
    }
    t
};

/// [`emit512`] with VBMI: byte 1 of an entry holds its symbol in the high nibble, so two
/// `vpermt2b` per step gather the round's 64 symbol bytes (ways 0–1 in the low half, 2–3
/// in the high half, joined by a blend) and one shift, one `vpternlogd` and one 64-byte
/// store write the round; [`emit512`] needs eight shifts, four `vpmovdb` and four stores.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
fn emit512_vbmi(first: [__m512i; 4], second: [__m512i; 4], out: &mut [u8], r: usize) {
    assert!(LANES * r + LANES <= out.len());
    // SAFETY: the table is 64 bytes, one unaligned 512-bit load.
    let idx = unsafe { _mm512_loadu_si512(BYTE1_OF_TWO.as_ptr().cast()) };
    let gather = |e: [__m512i; 4]| {
        let low = _mm512_permutex2var_epi8(e[0], idx, e[1]);
        let high = _mm512_permutex2var_epi8(e[2], idx, e[3]);
        _mm512_mask_blend_epi64(0xF0, low, high)
    };
    let (a, b) = (gather(first), gather(second));
    // Low nibble: the first step's symbol (moved down from bits 4..8); high: the second's.
    let bytes =
        _mm512_ternarylogic_epi32::<0xE4>(_mm512_srli_epi16::<4>(a), b, _mm512_set1_epi8(0x0F));
    // SAFETY: bytes 64r .. 64r + 64 are in `out` (asserted above).
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().wrapping_add(LANES * r).cast(), bytes) };
}

/// Whole rounds with AVX2; returns how many (0 if the CPU lacks it).
pub(super) fn rounds_avx2(
    model: &Model,
    st: &mut [u32; LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    if !avx2_detected() {
        return 0;
    }
    // SAFETY: the CPU supports AVX2 (checked just above).
    unsafe { rounds256(model, st, ways, pos, out) }
}

/// The two-table form of one model (`Model::two_table_form`), split in halves for 8-entry
/// `vpermd`s.
#[derive(Clone, Copy)]
struct Tables256 {
    lo: [__m256i; 2],
    hi: [__m256i; 2],
}

/// One row per 8-bit refill mask: two `vpshufb` controls for a 16-byte load of the way
/// repeated in both 128-bit halves. Bytes 0..32 put word `k` in the low half of the lane of
/// the mask's `k`-th set bit and zero everywhere else; bytes 32..64 move a refilling lane's
/// low half to its high half (its high half is zero: the state is below `2^16`) and keep the
/// other lanes. One 64-byte row is one cache line.
#[repr(C, align(64))]
struct Refill8([[u8; 64]; 256]);

static REFILL8: Refill8 = {
    let mut t = [[0x80u8; 64]; 256];
    let mut m = 0;
    while m < 256 {
        let mut k = 0u8;
        let mut lane = 0;
        while lane < 8 {
            // Byte index of the lane within its 128-bit half (vpshufb does not cross halves).
            #[allow(clippy::cast_possible_truncation)] // < 16
            let at = (4 * (lane % 4)) as u8;
            if m & (1 << lane) != 0 {
                t[m][4 * lane] = 2 * k;
                t[m][4 * lane + 1] = 2 * k + 1;
                t[m][32 + 4 * lane + 2] = at;
                t[m][32 + 4 * lane + 3] = at + 1;
                k += 1;
            } else {
                let mut j = 0u8;
                while j < 4 {
                    t[m][32 + 4 * lane + j as usize] = at + j;
                    j += 1;
                }
            }
            lane += 1;
        }
        m += 1;
    }
    Refill8(t)
};

#[target_feature(enable = "avx2,popcnt")]
fn rounds256(
    model: &Model,
    st: &mut [u32; LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    let load = |a: &[u32; 16], h: usize| {
        // SAFETY: every table is 16 u32; each 256-bit load reads 8 of them at offset 0 or 8.
        unsafe { _mm256_loadu_si256(a.as_ptr().wrapping_add(8 * h).cast()) }
    };
    let (lo, hi) = model.two_table_form();
    let tables = Tables256 { lo: [load(&lo, 0), load(&lo, 1)], hi: [load(&hi, 0), load(&hi, 1)] };
    let mut x = [_mm256_setzero_si256(); 2 * WAYS];
    for (v, xv) in x.iter_mut().enumerate() {
        // SAFETY: `st` has 64 u32; vector v covers lanes 8v..8v+8, in bounds for v < 8.
        *xv = unsafe { _mm256_loadu_si256(st.as_ptr().wrapping_add(8 * v).cast()) };
    }
    let mut off = *pos;
    let rounds = out.len() / LANES;
    let mut r = 0;
    while r < rounds && round_fits(ways, &off) {
        // All eight vectors step before any refills, so the core sees eight independent
        // chains; the refills then run in the format's order (per way: lanes 0..8, 8..16).
        let mut e = [[_mm256_setzero_si256(); 2 * WAYS]; 2];
        for es in &mut e {
            let mut y = [_mm256_setzero_si256(); 2 * WAYS];
            for v in 0..2 * WAYS {
                (es[v], y[v]) = step256(x[v], &tables);
            }
            for v in 0..2 * WAYS {
                x[v] = refill256(y[v], ways[v / 2], &mut off[v / 2]);
            }
        }
        for w in 0..WAYS {
            let packed = pack16(e[0][2 * w], e[1][2 * w], e[0][2 * w + 1], e[1][2 * w + 1]);
            // SAFETY: r < rounds = out.len() / 64, so bytes 64r + 16w .. + 16 are in `out`.
            unsafe {
                _mm_storeu_si128(
                    out.as_mut_ptr().wrapping_add(LANES * r + WAY_LANES * w).cast(),
                    packed,
                )
            };
        }
        r += 1;
    }
    for (v, xv) in x.iter().enumerate() {
        // SAFETY: as for the loads above.
        unsafe { _mm256_storeu_si256(st.as_mut_ptr().wrapping_add(8 * v).cast(), *xv) };
    }
    *pos = off;
    r
}

/// A 16-entry lookup: entries 0..8 / 8..16 by `t`'s low 3 bits, the half by bit 31 of `sel`.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
pub(super) fn lookup16(t: __m256i, sel: __m256i, table: &[__m256i; 2]) -> __m256i {
    let a = _mm256_permutevar8x32_epi32(table[0], t);
    let b = _mm256_permutevar8x32_epi32(table[1], t);
    _mm256_castps_si256(_mm256_blendv_ps(
        _mm256_castsi256_ps(a),
        _mm256_castsi256_ps(b),
        _mm256_castsi256_ps(sel),
    ))
}

/// One decode step of 8 lanes: `(entry, next state before refill)`, in the two-table form
/// (`Model::two_table_form`): the lower entry's top half is the bucket's threshold `div`, so
/// `d = (x & 255) − div` is both the compare (its sign picks the entry) and the index term.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn step256(x: __m256i, tb: &Tables256) -> (__m256i, __m256i) {
    let t = _mm256_srli_epi32::<8>(x);
    // Bit 31 of xs is bit 11 of x: bucket bit 3, which picks the table half.
    let xs = _mm256_slli_epi32::<20>(x);
    let low = lookup16(t, xs, &tb.lo);
    let high = lookup16(t, xs, &tb.hi);
    // Both terms are below 2^9: d < 0 exactly when the slot is in the lower part.
    let d = _mm256_sub_epi32(
        _mm256_and_si256(x, _mm256_set1_epi32(0xFF)),
        _mm256_srli_epi32::<16>(low),
    );
    let e = _mm256_castps_si256(_mm256_blendv_ps(
        _mm256_castsi256_ps(high),
        _mm256_castsi256_ps(low),
        _mm256_castsi256_ps(d),
    ));
    let f = _mm256_and_si256(e, _mm256_set1_epi32(0xFFF));
    let q = _mm256_srli_epi32::<12>(x);
    let index = _mm256_add_epi32(d, _mm256_srli_epi32::<16>(e));
    (e, _mm256_add_epi32(_mm256_mullo_epi32(f, q), index))
}

/// Refills the lanes below `2^16` from `way` at `*off` (lane order), advancing `*off`.
/// A lane is below `2^16` when its high word is zero, which one 16-bit compare tests in bit
/// 31 of each lane (what `movmskps` reads); the mask's [`REFILL8`] row then shuffles the
/// fresh words into place and the refilling states up by 16 bits, with no blend.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn refill256(x: __m256i, way: &[u8], off: &mut usize) -> __m256i {
    let need = _mm256_cmpeq_epi16(x, _mm256_setzero_si256());
    #[allow(clippy::cast_sign_loss)] // movemask of 8 lanes: 0..=255
    let bits = _mm256_movemask_ps(_mm256_castsi256_ps(need)) as usize & 255;
    // SAFETY: `rounds256` only starts a round while `way` holds ≥ 64 unread bytes; within the
    // round at most 48 bytes are consumed before this load, so [off, off + 16) is in `way`.
    let words = _mm256_broadcastsi128_si256(unsafe {
        _mm_loadu_si128(way.as_ptr().wrapping_add(*off).cast())
    });
    let row = &REFILL8.0[bits];
    // SAFETY: a row is 64 bytes: two 32-byte loads at offsets 0 and 32.
    let place = unsafe { _mm256_loadu_si256(row.as_ptr().cast()) };
    // SAFETY: as above.
    let lift = unsafe { _mm256_loadu_si256(row.as_ptr().wrapping_add(32).cast()) };
    *off += 2 * bits.count_ones() as usize;
    _mm256_or_si256(_mm256_shuffle_epi8(x, lift), _mm256_shuffle_epi8(words, place))
}

/// The 16 output bytes of a way from its four entry vectors (lanes 0..8: `a`, 8..16: `b`).
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn pack16(e0a: __m256i, e1a: __m256i, e0b: __m256i, e1b: __m256i) -> __m128i {
    let lo = _mm256_set1_epi32(0x0F);
    let hi = _mm256_set1_epi32(0xF0);
    let byte = |e0: __m256i, e1: __m256i| {
        _mm256_or_si256(
            _mm256_and_si256(_mm256_srli_epi32::<12>(e0), lo),
            _mm256_and_si256(_mm256_srli_epi32::<8>(e1), hi),
        )
    };
    let words = _mm256_packus_epi32(byte(e0a, e1a), byte(e0b, e1b));
    let bytes = _mm256_packus_epi16(words, words);
    let order = _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5);
    _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(bytes, order))
}

#[cfg(test)]
mod tests {
    //! The AVX2 refill against its definition (lanes below `2^16`, in lane order, take the
    //! way's next words) for every one of the 256 lane masks, so every [`REFILL8`] row is
    //! checked directly and not only where the round-trip tests happen to reach it.
    use super::{avx2_detected, refill256};
    use core::arch::x86_64::{_mm256_loadu_si256, _mm256_storeu_si256};

    #[test]
    fn avx2_refill_matches_its_definition_for_every_mask() {
        if !avx2_detected() {
            let required = std::env::var("TETRAD_REQUIRE_ISA").unwrap_or_default();
            assert!(!required.split(',').any(|a| a == "avx2"), "avx2 required but not detected");
            std::eprintln!("avx2 not detected: refill test not run");
            return;
        }
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let way: std::vec::Vec<u8> = (0..64).map(|_| next().to_le_bytes()[3]).collect();
        for mask in 0..256usize {
            for start in [0usize, 2, 14, 32, 48] {
                let mut lanes = [0u32; 8];
                for (lane, x) in lanes.iter_mut().enumerate() {
                    let r = u32::try_from(next() >> 32).unwrap_or(0);
                    *x = match ((mask >> lane) & 1 == 1, r % 5) {
                        (true, 0) => 0,
                        (true, 1) => 0xFFFF,
                        (true, _) => r & 0xFFFF,
                        (false, 0) => 0x1_0000,
                        (false, 1) => u32::MAX,
                        (false, _) => r | 0x1_0000,
                    };
                }
                let mut expect = lanes;
                let mut at = start;
                for x in &mut expect {
                    if *x < 0x1_0000 {
                        *x = (*x << 16) | u32::from(u16::from_le_bytes([way[at], way[at + 1]]));
                        at += 2;
                    }
                }
                let mut off = start;
                let mut got = [0u32; 8];
                // SAFETY: the load covers the 8 u32 of `lanes`.
                let x = unsafe { _mm256_loadu_si256(lanes.as_ptr().cast()) };
                // SAFETY: the CPU has AVX2 (checked above); `refill256` reads 16 bytes at
                // `off ≤ 48` of the way's 64.
                let y = unsafe { refill256(x, &way, &mut off) };
                // SAFETY: the store covers the 8 u32 of `got`.
                unsafe { _mm256_storeu_si256(got.as_mut_ptr().cast(), y) };
                assert_eq!((got, off), (expect, at), "mask {mask:#010b}, words from {start}");
            }
        }
    }
}
