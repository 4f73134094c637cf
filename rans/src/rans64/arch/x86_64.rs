//! x86-64 arms: AVX-512 (one way = one 16-lane vector), in two builds, and AVX2 (one way =
//! two 8-lane vectors). All mirror `Model::step` and the scalar refill exactly.
//!
//! One decode step of a vector of states `x`, with `r = x` rotated left by 24 (the bucket in
//! bits 0..4, which is all `vpermd` looks at, and `j = x & 255` in the top byte):
//! 1. `upper = r ≥ thr24[r]` with `thr24[b] = div[b] << 24` — one permute, one unsigned compare
//!    (0 where the bucket has no upper part: there `hi == lo`);
//! 2. `e = upper ? hi[r] : lo[r]` — one permute beside the compare, one permute under its mask;
//! 3. `x = x + (e >>s 16) + ((e | !0xFFF)·(x >> 12))` — the same `f·q + slot + c` as
//!    `Model::step`, with `f − 4096` as the multiplier so that `x` itself stands for `slot`:
//!    or, two shifts, `vpmulld`, two adds (eleven operations in all, two fewer than masking
//!    out the bucket and the slot);
//! 4. refill: lanes with `x < 2^16` take the next words of the way in lane order. AVX-512: a
//!    compare into a mask, a 32-byte load widened to 16 dwords, `vpexpandd` under the mask,
//!    a masked shift and an OR; the way pointer advances by `2·popcount(mask)`. The
//!    `avx512-vbmi` build ([`refill512_vbmi`]) compares 16-bit words instead, expands the
//!    loaded words straight into the lanes' high halves with `vpexpandw` and shifts them in
//!    with one `vpshldvd` whose count (16 or 0) comes from the state's leading zeros.
//!
//! The AVX2 arm has no 16-entry permute, and on Zen 2 its 8-entry `vpermd` issues once per
//! two cycles with a latency of 8 (measured), so a 16-entry lookup of 32-bit entries (two
//! `vpermd` and a blend) was the bottleneck. It uses the *byte-plane form* instead
//! (`Model::byte_planes`): per bucket four 16-bit fields (`A` = the lower part's `f | sym <<
//! 12`, `B` = `div`, `C` = the upper part's `f | sym << 12`, `E` = the upper part's first index
//! − `div`), each kept as a low-byte and a high-byte 16-byte plane, i.e. a `vpshufb` table
//! (two per cycle, latency 1). A way's 16 states step together ([`step_way`]): their low
//! halves are gathered into one vector of 16-bit words, every field is two `vpshufb` and an
//! OR for all 16 lanes, `lower = j < B` (`j = x & 255`) is one 16-bit compare, `fs = lower ? A
//! : C` one byte blend, `index = j + (lower ? 0 : E)` an andnot and an add; then the two
//! 8-lane halves go back to 32 bits for `x' = (fs & 4095)·(x >> 12) + index` (`vpmulld`).
//! On Zen 2 this took the arm from 1.44 G nibbles/s (the former two-table `vpermd` step) to
//! 2.2-2.3 (a 4096-entry `vpgatherdd` slot table had been slower than either, 1.18 on Zen 3). Its
//! refill tests the high words with one 16-bit compare, and the `movmskps` of that selects a
//! [`REFILL8`] row of two `vpshufb` controls: one places the words (a 16-byte load repeated
//! in both halves), the other lifts the refilling states by 16 bits, and an OR joins them —
//! no widening, no lane-crossing permute, no blend (lifting by a shift and a blend instead of
//! the second control was 2-5 % slower on Zen 2: the shifts share a port with `vpshufb`).
//!
//! Per round a way does two steps (low nibble, high nibble) and its 16 output bytes come from
//! the two entries' symbol fields with two shifts, one `vpternlogd` and one `vpmovdb`
//! (`avx512-vbmi`: a round's 64 bytes from four `vpermt2b`, see [`emit512_vbmi`]; AVX2:
//! [`pack_ways`], two ways' 32 bytes from their 16-bit fields by shifts, a pack, a `vpshufb`
//! and a `vpermd`). The four ways are independent chains.
//!
//! **Chains first, then operations.** One chunk on AVX-512 is four chains of a dozen
//! dependent operations per step, too few to hide their latency, so whole blobs decode two
//! chunks per loop ([`pair_rounds_avx512`]: eight chains, +22 %). With eight chains the loop
//! is bound by the vector ports instead (3.66 GHz here, about 15 cycles per 16-lane step and
//! 20 vector operations, the compares, shifts and permutes sharing ports), so the
//! `avx512-vbmi` build trims operations: no widening, no OR, one compare fewer per refill
//! and a quarter of the output shifts (+24 %). The AVX2 arm's four ways are written out so
//! their eight state vectors stay in registers (a loop over an array of states kept them in
//! memory: 6 % slower); with the `vpshufb` step, stepping all four ways before any refill
//! measured the same as way by way, so the simpler order stays. Pairing chunks on AVX2 is
//! slower (16 ymm registers: the states spill). Design notes: docs/design/rans-decode.md.

use core::arch::x86_64::_mm_loadu_si128;
use core::arch::x86_64::{
    __m256i, __m512i, _mm_storeu_si128, _mm256_add_epi32, _mm256_and_si256, _mm256_blendv_ps,
    _mm256_broadcastsi128_si256, _mm256_castps_si256, _mm256_castsi256_ps, _mm256_cmpeq_epi16,
    _mm256_loadu_si256, _mm256_movemask_ps, _mm256_mullo_epi32, _mm256_or_si256,
    _mm256_packus_epi16, _mm256_permutevar8x32_epi32, _mm256_setr_epi32, _mm256_setzero_si256,
    _mm256_shuffle_epi8, _mm256_slli_epi32, _mm256_srli_epi32, _mm256_storeu_si256,
    _mm512_add_epi32, _mm512_and_si512, _mm512_cmpge_epu32_mask, _mm512_cmplt_epu32_mask,
    _mm512_cvtepi32_epi8, _mm512_cvtepu16_epi32, _mm512_loadu_si512, _mm512_mask_permutexvar_epi32,
    _mm512_mask_slli_epi32, _mm512_mullo_epi32, _mm512_or_si512, _mm512_permutexvar_epi32,
    _mm512_rol_epi32, _mm512_set1_epi32, _mm512_slli_epi32, _mm512_srai_epi32, _mm512_srli_epi32,
    _mm512_storeu_si512, _mm512_ternarylogic_epi32,
};
use core::arch::x86_64::{
    _mm256_add_epi16, _mm256_andnot_si256, _mm256_blend_epi16, _mm256_blendv_epi8,
    _mm256_cmpgt_epi16, _mm256_set1_epi16, _mm256_setr_epi8, _mm256_srli_epi16,
};
use core::arch::x86_64::{
    _mm512_lzcnt_epi32, _mm512_mask_blend_epi64, _mm512_mask_cmpeq_epi16_mask,
    _mm512_maskz_expand_epi16, _mm512_permutex2var_epi8, _mm512_set1_epi8, _mm512_setzero_si512,
    _mm512_shldv_epi32, _mm512_srli_epi16, _mm512_zextsi256_si512,
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

/// Whether this CPU runs AVX-512 F + BW. Under Miri (which has no shim for `vpexpandd`) the
/// arm runs with that one instruction emulated ([`expand_epi32`]), so that Miri checks the
/// rest of its kernel.
pub(super) fn avx512_detected() -> bool {
    has_features!("avx512f", "avx512bw", "popcnt")
}

/// Whether this CPU runs the `avx512-vbmi` arm: AVX-512 F + BW with VBMI, VBMI2 and CD
/// (never under Miri, which has no shim for `vpexpandw` nor `vpshldvd`; the arm is tested
/// natively wherever the CPU has it).
pub(super) fn avx512_vbmi_detected() -> bool {
    !cfg!(miri) && avx512_detected() && has_features!("avx512cd", "avx512vbmi", "avx512vbmi2")
}

/// `vpexpandd` with a zero mask: lane `i` of the result is the next unused lane of `v` (in
/// lane order) where bit `i` of `m` is set, else 0. Natively the instruction; under Miri,
/// which has no shim for it, the same function in scalar code.
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
#[inline]
fn expand_epi32(m: core::arch::x86_64::__mmask16, v: __m512i) -> __m512i {
    #[cfg(not(miri))]
    {
        core::arch::x86_64::_mm512_maskz_expand_epi32(m, v)
    }
    #[cfg(miri)]
    {
        let mut src = [0u32; 16];
        let mut dst = [0u32; 16];
        // SAFETY: both arrays hold 64 bytes.
        unsafe { _mm512_storeu_si512(src.as_mut_ptr().cast(), v) };
        let mut next = 0;
        for (i, d) in dst.iter_mut().enumerate() {
            if (m >> i) & 1 == 1 {
                *d = src[next];
                next += 1;
            }
        }
        // SAFETY: `dst` is 16 u32 = 64 bytes, one unaligned 512-bit load.
        unsafe { _mm512_loadu_si512(dst.as_ptr().cast()) }
    }
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
                _mm512_slli_epi32::<24>(_mm512_loadu_si512($model.thr.as_ptr().cast())),
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
    "avx512f,avx512bw,avx512cd,avx512vbmi,avx512vbmi2,popcnt",
    rounds_avx512_vbmi,
    pair_rounds_avx512_vbmi,
    rounds512_vbmi,
    rounds512_vbmi_pair,
    refill512_vbmi,
    emit512_vbmi
);

/// One decode step of 16 lanes: `(entry, next state before refill)`. Eleven operations.
/// `thr24` holds `div[b] << 24` (the threshold on `j = x & 255`, 0 when the bucket has no
/// upper part, where `hi == lo`).
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
#[inline]
fn step512(x: __m512i, thr24: __m512i, lo: __m512i, hi: __m512i) -> (__m512i, __m512i) {
    // Rotated by 24: the bucket in bits 0..4 (all `vpermd` looks at), `j` in bits 24..32, so
    // `j ≥ div[b]` is one unsigned compare against `div[b] << 24`.
    let r = _mm512_rol_epi32::<24>(x);
    let upper = _mm512_cmpge_epu32_mask(r, _mm512_permutexvar_epi32(r, thr24));
    let e = _mm512_mask_permutexvar_epi32(_mm512_permutexvar_epi32(r, lo), upper, r, hi);
    // x' = f·q + slot + c = x + c + (f − 4096)·q, with q = x >> 12 and f − 4096 = e | !0xFFF.
    #[allow(clippy::cast_possible_wrap)] // the bit pattern 0xFFFF_F000
    let f_less_m = _mm512_or_si512(e, _mm512_set1_epi32(0xFFFF_F000_u32 as i32));
    let q = _mm512_srli_epi32::<12>(x);
    let c = _mm512_srai_epi32::<16>(e);
    let next = _mm512_add_epi32(_mm512_add_epi32(x, c), _mm512_mullo_epi32(f_less_m, q));
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
    let fresh = expand_epi32(need, _mm512_cvtepu16_epi32(words));
    *off += 2 * need.count_ones() as usize;
    _mm512_or_si512(_mm512_mask_slli_epi32::<16>(x, need, x), fresh)
}

/// [`refill512`] with VBMI2 and CD: the lanes below `2^16` are those whose high word is zero,
/// so one 16-bit compare on the odd words gives a mask with a bit at each such lane's high
/// word, which is where `vpexpandw` puts the lane's fresh word straight from the load (no
/// widening); one `vpshldvd` then shifts it in below the state, by 16 exactly in the lanes
/// whose leading-zero count has bit 4 set (a state after a step is at least 16, so below
/// `2^16` it has 16..=27 leading zeros and above it 0..=15). The lane mask is never moved
/// through a general register (the former form took it there and back for a `pext`; that
/// round trip alone takes about 8 cycles on Zen 5).
#[target_feature(enable = "avx512f,avx512bw,avx512cd,avx512vbmi2,popcnt")]
#[inline]
fn refill512_vbmi(x: __m512i, way: &[u8], off: &mut usize) -> __m512i {
    let need_hi = _mm512_mask_cmpeq_epi16_mask(0xAAAA_AAAA, x, _mm512_setzero_si512());
    // SAFETY: as in `refill512`: [off, off + 32) is in `way`.
    let words = unsafe { _mm256_loadu_si256(way.as_ptr().wrapping_add(*off).cast()) };
    let fresh = _mm512_maskz_expand_epi16(need_hi, _mm512_zextsi256_si512(words));
    *off += 2 * need_hi.count_ones() as usize;
    // A lane below 2^16 has 16..=27 leading zeros (a step leaves at least 16), every other
    // lane 0..=15: the shift is 16 exactly where the lane refills.
    let shift = _mm512_and_si512(_mm512_lzcnt_epi32(x), _mm512_set1_epi32(16));
    _mm512_shldv_epi32(x, fresh, shift)
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

/// The byte-plane form of one model (`Model::byte_planes`), each 16-byte plane repeated in
/// both 128-bit halves (a `pshufb` table).
#[derive(Clone, Copy)]
struct Planes256([__m256i; 8]);

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
    let mut planes = Planes256([_mm256_setzero_si256(); 8]);
    for (v, p) in planes.0.iter_mut().zip(model.byte_planes()) {
        // SAFETY: a plane is 16 bytes; the 128-bit load reads exactly them.
        *v = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(p.as_ptr().cast()) });
    }
    // SAFETY: `st` has 64 u32; vector v covers lanes 8v..8v+8, in bounds for v < 8.
    let load = |v: usize| unsafe { _mm256_loadu_si256(st.as_ptr().wrapping_add(8 * v).cast()) };
    let (mut x0, mut x1, mut x2, mut x3) = (load(0), load(1), load(2), load(3));
    let (mut x4, mut x5, mut x6, mut x7) = (load(4), load(5), load(6), load(7));
    let [mut o0, mut o1, mut o2, mut o3] = *pos;
    let [w0, w1, w2, w3] = *ways;
    // One way's step: its 16 lanes decode, then refill in lane order (0..8, 8..16).
    macro_rules! way {
        ($xa:ident, $xb:ident, $way:ident, $o:ident) => {{
            let (f, ya, yb) = step_way($xa, $xb, &planes);
            $xa = refill256(ya, $way, &mut $o);
            $xb = refill256(yb, $way, &mut $o);
            f
        }};
    }
    let rounds = out.len() / LANES;
    let mut r = 0;
    while r < rounds && round_fits(ways, &[o0, o1, o2, o3]) {
        // The four ways are independent chains, written out so their states stay in
        // registers (a loop over an array of states kept them in memory).
        let s1 = [
            way!(x0, x1, w0, o0),
            way!(x2, x3, w1, o1),
            way!(x4, x5, w2, o2),
            way!(x6, x7, w3, o3),
        ];
        let s2 = [
            way!(x0, x1, w0, o0),
            way!(x2, x3, w1, o1),
            way!(x4, x5, w2, o2),
            way!(x6, x7, w3, o3),
        ];
        for h in 0..2 {
            let bytes = pack_ways(s1[2 * h], s2[2 * h], s1[2 * h + 1], s2[2 * h + 1]);
            // SAFETY: r < rounds = out.len() / 64, so bytes 64r + 32h .. + 32 are in `out`.
            unsafe {
                _mm256_storeu_si256(out.as_mut_ptr().wrapping_add(LANES * r + 32 * h).cast(), bytes)
            };
        }
        r += 1;
    }
    for (v, xv) in [x0, x1, x2, x3, x4, x5, x6, x7].into_iter().enumerate() {
        // SAFETY: as for the loads above.
        unsafe { _mm256_storeu_si256(st.as_mut_ptr().wrapping_add(8 * v).cast(), xv) };
    }
    *pos = [o0, o1, o2, o3];
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

/// One decode step of a way's 16 lanes (`x0`: lanes 0..8, `x1`: 8..16) in the byte-plane
/// form (`Model::byte_planes`): returns the selected `f | sym << 12` fields as 16-bit words
/// (word `2i` lane `i`, word `2i + 1` lane `8 + i`) and the two vectors' next states before
/// refill. The lookups run on the low halves of all 16 states at once: each 16-bit field is
/// two `pshufb` (its low-byte plane indexed from the word's low byte, its high-byte plane
/// from the high byte, the other byte zeroed by the index's bit 7) and an OR.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn step_way(x0: __m256i, x1: __m256i, p: &Planes256) -> (__m256i, __m256i, __m256i) {
    let low16 = _mm256_blend_epi16::<0xAA>(x0, _mm256_slli_epi32::<16>(x1));
    // Bytes (0x80, b) per word, and (b, 0x80) by swapping them: b = bits 8..12 of x.
    let index_hi = _mm256_or_si256(
        _mm256_and_si256(low16, _mm256_set1_epi16(0x0F00)),
        _mm256_set1_epi16(0x0080),
    );
    #[rustfmt::skip]
    let swap = _mm256_setr_epi8(
        1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14,
        1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14,
    );
    let index_lo = _mm256_shuffle_epi8(index_hi, swap);
    let field = |k: usize| {
        _mm256_or_si256(
            _mm256_shuffle_epi8(p.0[2 * k], index_lo),
            _mm256_shuffle_epi8(p.0[2 * k + 1], index_hi),
        )
    };
    let j = _mm256_and_si256(low16, _mm256_set1_epi16(0xFF));
    // B ∈ 0..=256 and j ∈ 0..256: a signed 16-bit compare is exact.
    let lower = _mm256_cmpgt_epi16(field(1), j);
    let fs = _mm256_blendv_epi8(field(2), field(0), lower);
    let index = _mm256_add_epi16(j, _mm256_andnot_si256(lower, field(3)));
    let f = _mm256_and_si256(fs, _mm256_set1_epi16(0x0FFF));
    let zero = _mm256_setzero_si256();
    let y0 = _mm256_add_epi32(
        _mm256_mullo_epi32(_mm256_blend_epi16::<0xAA>(f, zero), _mm256_srli_epi32::<12>(x0)),
        _mm256_blend_epi16::<0xAA>(index, zero),
    );
    let y1 = _mm256_add_epi32(
        _mm256_mullo_epi32(_mm256_srli_epi32::<16>(f), _mm256_srli_epi32::<12>(x1)),
        _mm256_srli_epi32::<16>(index),
    );
    (fs, y0, y1)
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
    // SAFETY: the second 32-byte half of the 64-byte row (offset 32).
    let lift = unsafe { _mm256_loadu_si256(row.as_ptr().wrapping_add(32).cast()) };
    *off += 2 * bits.count_ones() as usize;
    _mm256_or_si256(_mm256_shuffle_epi8(x, lift), _mm256_shuffle_epi8(words, place))
}

/// The 32 output bytes of two ways (`a`, then `b`) from their fields of the round's two
/// steps (`step_way`'s word order: `2i` lane `i`, `2i + 1` lane `8 + i`).
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn pack_ways(s1a: __m256i, s2a: __m256i, s1b: __m256i, s2b: __m256i) -> __m256i {
    // Per word: the first step's symbol in bits 0..4, the second's in 4..8.
    let byte = |s1: __m256i, s2: __m256i| {
        _mm256_or_si256(
            _mm256_srli_epi16::<12>(s1),
            _mm256_and_si256(_mm256_srli_epi16::<8>(s2), _mm256_set1_epi16(0xF0)),
        )
    };
    // Per half: a's lanes [0, 8, 1, 9, 2, 10, 3, 11] then b's (half 1: 4..8 and 12..16).
    let packed = _mm256_packus_epi16(byte(s1a, s2a), byte(s1b, s2b));
    // Per half: a's 0..4, a's 8..12, b's 0..4, b's 8..12 (half 1: 4..8, 12..16).
    #[rustfmt::skip]
    let order = _mm256_setr_epi8(
        0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15,
        0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15,
    );
    let grouped = _mm256_shuffle_epi8(packed, order);
    _mm256_permutevar8x32_epi32(grouped, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
}

#[cfg(test)]
mod tests {
    //! The AVX2 refill against its definition (lanes below `2^16`, in lane order, take the
    //! way's next words) for every one of the 256 lane masks, so every [`REFILL8`] row is
    //! checked directly and not only where the round-trip tests happen to reach it; the
    //! AVX-512 step on every slot of many models and both AVX-512 refills likewise.
    use super::super::super::model::{Model, sample_tables};
    use super::{
        avx2_detected, avx512_detected, avx512_vbmi_detected, refill256, refill512, refill512_vbmi,
        step512,
    };
    use core::arch::x86_64::{
        _mm256_loadu_si256, _mm256_storeu_si256, _mm512_loadu_si512, _mm512_slli_epi32,
        _mm512_storeu_si512,
    };

    /// Whether `arm` is detected; if not, says so, and fails where `TETRAD_REQUIRE_ISA`
    /// names it.
    fn runs(arm: &str, detected: bool) -> bool {
        if !detected {
            let required = std::env::var("TETRAD_REQUIRE_ISA").unwrap_or_default();
            assert!(!required.split(',').any(|a| a == arm), "{arm} required but not detected");
            std::eprintln!("{arm} not detected: test not run");
        }
        detected
    }

    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// States as a step can leave them: the lanes in `mask` below `2^16` (at least `low`,
    /// with `low` and `0xFFFF` among them), the others at or above (`0x1_0000`, `u32::MAX`).
    fn states_for<const N: usize>(mask: u32, low: u32, next: &mut impl FnMut() -> u64) -> [u32; N] {
        core::array::from_fn(|lane| {
            let r = u32::try_from(next() >> 32).unwrap_or(0);
            match ((mask >> lane) & 1 == 1, r % 5) {
                (true, 0) => low,
                (true, 1) => 0xFFFF,
                (true, _) => (r & 0xFFFF).max(low),
                (false, 0) => 0x1_0000,
                (false, 1) => u32::MAX,
                (false, _) => r | 0x1_0000,
            }
        })
    }

    /// The refill by its definition: the lanes below `2^16`, in lane order, take the next
    /// little-endian words of `way` from byte `start`; returns the states and the new offset.
    fn refilled<const N: usize>(
        mut lanes: [u32; N],
        way: &[u8],
        start: usize,
    ) -> ([u32; N], usize) {
        let mut at = start;
        for x in &mut lanes {
            if *x < 0x1_0000 {
                *x = (*x << 16) | u32::from(u16::from_le_bytes([way[at], way[at + 1]]));
                at += 2;
            }
        }
        (lanes, at)
    }

    /// [`step512`] on 16 states of `model`: (entries, next states before refill).
    #[target_feature(enable = "avx512f,avx512bw,popcnt")]
    fn step_lanes(model: &Model, xs: &[u32; 16]) -> ([u32; 16], [u32; 16]) {
        // SAFETY: 16 u32 = 64 bytes, one unaligned 512-bit load.
        let load = |v: &[u32; 16]| unsafe { _mm512_loadu_si512(v.as_ptr().cast()) };
        let thr24 = _mm512_slli_epi32::<24>(load(&model.thr));
        let (ev, yv) = step512(load(xs), thr24, load(&model.lo), load(&model.hi));
        let (mut e, mut y) = ([0u32; 16], [0u32; 16]);
        // SAFETY: 16 u32 = 64 bytes, one unaligned 512-bit store.
        unsafe { _mm512_storeu_si512(e.as_mut_ptr().cast(), ev) };
        // SAFETY: `y` is 16 u32 = 64 bytes, one unaligned 512-bit store.
        unsafe { _mm512_storeu_si512(y.as_mut_ptr().cast(), yv) };
        (e, y)
    }

    /// [`refill512`] on 16 states.
    #[target_feature(enable = "avx512f,avx512bw,popcnt")]
    fn refill_lanes(lanes: &[u32; 16], way: &[u8], off: &mut usize) -> [u32; 16] {
        // SAFETY: 16 u32 = 64 bytes, one unaligned 512-bit load.
        let x = unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) };
        let mut got = [0u32; 16];
        let y = refill512(x, way, off);
        // SAFETY: `got` is 16 u32 = 64 bytes, one unaligned 512-bit store.
        unsafe { _mm512_storeu_si512(got.as_mut_ptr().cast(), y) };
        got
    }

    /// [`refill512_vbmi`] on 16 states.
    #[target_feature(enable = "avx512f,avx512bw,avx512cd,avx512vbmi2,popcnt")]
    fn refill_lanes_vbmi(lanes: &[u32; 16], way: &[u8], off: &mut usize) -> [u32; 16] {
        // SAFETY: 16 u32 = 64 bytes, one unaligned 512-bit load.
        let x = unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) };
        let mut got = [0u32; 16];
        let y = refill512_vbmi(x, way, off);
        // SAFETY: `got` is 16 u32 = 64 bytes, one unaligned 512-bit store.
        unsafe { _mm512_storeu_si512(got.as_mut_ptr().cast(), y) };
        got
    }

    /// The AVX-512 step (rotated bucket index, `div << 24` thresholds, `f − 4096` multiplier)
    /// against `Model::step` for every slot of the sample tables (buckets with no upper part
    /// and with no lower part among them), each slot with the smallest, the largest and a
    /// random `x >> 12`.
    #[test]
    fn avx512_step_matches_the_scalar_step_on_every_slot() {
        if !runs("avx512", avx512_detected()) {
            return;
        }
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        for freq in sample_tables() {
            let model = Model::new(freq).unwrap();
            #[allow(clippy::cast_possible_truncation)] // 20 random bits
            for q in [16u32, (1 << 20) - 1, (next() >> 44) as u32 | 16] {
                for base in (0..4096u32).step_by(16) {
                    let xs: [u32; 16] = core::array::from_fn(|l| (q << 12) | (base + l as u32));
                    // SAFETY: the CPU has AVX-512 F + BW (checked above).
                    let (e, y) = unsafe { step_lanes(&model, &xs) };
                    for l in 0..16 {
                        #[allow(clippy::cast_possible_truncation)] // 4-bit field
                        let got = (((e[l] >> 12) & 15) as u8, y[l]);
                        assert_eq!(got, model.step(xs[l]), "freq {freq:?}, x {:#x}", xs[l]);
                    }
                }
            }
        }
    }

    /// Both AVX-512 refills against their definition (lanes below `2^16`, in lane order,
    /// take the way's next words), at the edges of the states a step can leave: 16 (the
    /// smallest: `f ≥ 1`, `x >> 12 ≥ 16`), `0xFFFF`, `0x1_0000` and `u32::MAX`.
    #[test]
    fn avx512_refills_match_their_definition() {
        let arms: [(&str, bool, bool); 2] =
            [("avx512", avx512_detected(), false), ("avx512-vbmi", avx512_vbmi_detected(), true)];
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let way: std::vec::Vec<u8> = (0..96).map(|_| next().to_le_bytes()[3]).collect();
        for (name, detected, vbmi) in arms {
            if !runs(name, detected) {
                continue;
            }
            for round in 0..4096u32 {
                let mask = if round < 16 {
                    [0u32, 0xFFFF, 1 << round, !(1 << round)][round as usize % 4]
                } else {
                    u32::try_from(next() >> 48).unwrap_or(0)
                };
                let start = [0usize, 2, 30, 64][round as usize % 4];
                let lanes: [u32; 16] = states_for(mask, 16, &mut next);
                let (expect, at) = refilled(lanes, &way, start);
                let mut off = start;
                let got = if vbmi {
                    // SAFETY: the CPU has the arm's features (checked above); the refill
                    // reads 32 bytes at `off ≤ 64` of the way's 96.
                    unsafe { refill_lanes_vbmi(&lanes, &way, &mut off) }
                } else {
                    // SAFETY: the CPU has the arm's features (checked above); the refill reads 32
                    // bytes at `off ≤ 64` of the way's 96.
                    unsafe { refill_lanes(&lanes, &way, &mut off) }
                };
                assert_eq!(
                    (got, off),
                    (expect, at),
                    "{name}: mask {mask:#06x}, words from {start}"
                );
            }
        }
    }

    #[test]
    fn avx2_refill_matches_its_definition_for_every_mask() {
        if !runs("avx2", avx2_detected()) {
            return;
        }
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let way: std::vec::Vec<u8> = (0..64).map(|_| next().to_le_bytes()[3]).collect();
        for mask in 0..256u32 {
            for start in [0usize, 2, 14, 32, 48] {
                let lanes: [u32; 8] = states_for(mask, 0, &mut next);
                let (expect, at) = refilled(lanes, &way, start);
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
