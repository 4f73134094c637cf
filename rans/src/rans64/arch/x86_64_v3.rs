//! x86-64 arms of version 3 (16-bit states, `M = 256`, byte refills): one way's 32 states
//! are two 256-bit byte vectors, and everything per bucket is a byte, so one `vpshufb` looks
//! a field up for 32 lanes at once.
//!
//! A way's state is kept *split*: `s`, the 32 states' low bytes (the slots), and `h`, their
//! high bytes, both in lane order. Keeping it split saves packing the slots out of 16-bit
//! lanes and shifting the high bytes down on every step, and a refill only moves bytes. One
//! step of a way ([`step`]), mirroring `Model3::step`:
//! 1. `b = s >> 4`, `j = s & 15`; `lower = j < div[b]` (`vpshufb`, `vpcmpgtb`); the symbol is
//!    `lower ? b : alias[b]` (`vpshufb`, a blend) and `f = freq[symbol]` (`vpshufb`);
//!    `index = j + (lower ? 0 : cup[b])` in bytes (one `vpshufb` on `b | lower`, which reads
//!    zero where `lower` set the index's top bit, and `vpaddb`: mod 256, exact because the
//!    index is below `f`);
//! 2. `x' = f·h + index` in 16-bit lanes: `f`, `h` and `index` are widened with
//!    `vpunpck{l,h}bw` against zero, one `vpmullw` and one `vpaddw` per 16 lanes (`f ≤ 255`,
//!    `h ≤ 255`: no overflow);
//! 3. `x'`'s low and high bytes back in lane order: each 128-bit half of the two 16-lane
//!    results gathers its low bytes into its low 8 bytes and its high bytes into its high 8
//!    (`vpshufb`), and the halves' quadwords pair up (`vpunpck{l,h}qdq`, which also undoes
//!    the widening's interleave);
//! 4. refill where `x' < 256`, i.e. where its high byte is zero (`vpcmpeqb`): the mask moves
//!    to a general register (`vpmovmskb`, one byte per 8-lane group); the way's bytes are
//!    consumed in lane order, so each 128-bit half (two groups) takes its bytes from one
//!    16-byte load — the first half at the way pointer, the second after the first half's
//!    refills — and a [`CTL8`] row per group, chosen by its mask and by where its bytes start
//!    in the load, puts byte `k` under the `k`-th refilling lane (one `vpshufb` for all 32
//!    lanes); a refilling lane's low byte becomes its fresh byte and its high byte `x'`
//!    (which is below 256), the others keep `x'`'s bytes (`vpblendvb` ×2).
//!
//! About 36 vector operations per 32 nibbles, against about 57 per 16 in version 2's AVX2
//! step (32-bit lanes, `vpmulld`). The loop is bound by how many steps fit the core's
//! instruction window (docs/design/rans-decode.md), so every instruction counts. The four
//! ways are four independent chains; their split states stay in eight registers. The rounds
//! run in batches ([`sure_rounds`]): no check inside a batch, the ways read through raw
//! pointers, the output written through one.
//!
//! The `avx512` arm runs the same kernel compiled with AVX-512 VL enabled (32 vector
//! registers, so the tables and constants stay in registers); `avx512-vbmi` has a 512-bit
//! kernel ([`rounds3_avx512_vbmi`]) with a way in one vector.

#![allow(clippy::cast_possible_truncation)] // masks and counts of 8-lane groups

use core::arch::x86_64::{
    __m128i, __m256i, _mm_loadl_epi64, _mm_loadu_si128, _mm_setr_epi8, _mm_storeu_si128,
    _mm_unpacklo_epi64, _mm256_add_epi8, _mm256_add_epi16, _mm256_and_si256, _mm256_blendv_epi8,
    _mm256_broadcastsi128_si256, _mm256_castsi128_si256, _mm256_castsi256_si128, _mm256_cmpeq_epi8,
    _mm256_cmpgt_epi8, _mm256_extracti128_si256, _mm256_inserti128_si256, _mm256_movemask_epi8,
    _mm256_mullo_epi16, _mm256_or_si256, _mm256_packus_epi16, _mm256_set1_epi8, _mm256_set1_epi16,
    _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_slli_epi16, _mm256_srli_epi16,
    _mm256_storeu_si256, _mm256_unpackhi_epi8, _mm256_unpackhi_epi64, _mm256_unpacklo_epi8,
    _mm256_unpacklo_epi64,
};
use core::arch::x86_64::{
    __m512i, _mm256_loadu_si256 as load256, _mm512_add_epi8, _mm512_add_epi16, _mm512_and_si512,
    _mm512_broadcast_i32x4, _mm512_cmplt_epu16_mask, _mm512_cvtepi16_epi8, _mm512_cvtepu8_epi16,
    _mm512_loadu_si512, _mm512_mask_mov_epi16, _mm512_mask_slli_epi16, _mm512_maskz_expand_epi16,
    _mm512_maskz_mov_epi16, _mm512_mullo_epi16, _mm512_or_si512, _mm512_set1_epi16,
    _mm512_shuffle_epi8, _mm512_slli_epi16, _mm512_srli_epi16, _mm512_storeu_si512,
    _mm512_ternarylogic_epi32,
};

use super::super::decode::Arm;
use super::super::model3::Model3;
use super::super::{V3_LANES, V3_WAY_LANES, WAYS};
use super::x86_64::{avx2_detected, avx512_detected, avx512_vbmi_detected};

/// Bytes a way must hold unread at the start of a round: a step consumes at most 32 and its
/// loads (two of 16 bytes in the 256-bit kernel, one of 32 in the 512-bit one) end at most 32
/// bytes after the way pointer.
const ROUND_SLACK: usize = 2 * V3_WAY_LANES;

/// The refill controls, 8 bytes per group: row `[n][m]` for a group whose refill mask is `m`
/// and whose way bytes start `n` bytes into the 16 its 128-bit half loads (0 for the first
/// group of a half, the first group's refill count for the second): for the `k`-th set bit
/// `i`, byte `i` is `n + k`, so that `vpshufb` puts the group's `k`-th fresh byte under its
/// `k`-th refilling lane; every other byte is `0x80` (zero). 18 KiB.
#[repr(C, align(8))]
struct Ctl8([[[u8; 8]; 256]; 9]);

static CTL8: Ctl8 = {
    let mut t = [[[0x80u8; 8]; 256]; 9];
    let mut n = 0;
    while n < 9 {
        let mut m = 0;
        while m < 256 {
            let mut k = 0u8;
            let mut i = 0;
            while i < 8 {
                if (m >> i) & 1 == 1 {
                    t[n][m][i] = n as u8 + k;
                    k += 1;
                }
                i += 1;
            }
            m += 1;
        }
        n += 1;
    }
    Ctl8(t)
};

/// The model's four byte tables, each repeated in both 128-bit halves.
#[derive(Clone, Copy)]
struct Tables {
    div: __m256i,
    freq: __m256i,
    cup: __m256i,
    sup: __m256i,
}

/// How many rounds surely fit from `pos` on: a round consumes at most [`ROUND_SLACK`] bytes
/// of a way, so a way holding `k · ROUND_SLACK` unread bytes still holds a round's slack at
/// the start of each of the next `k` rounds. The kernels run that many rounds without a
/// check and then ask again, so they stop at the first round that starts with a way holding
/// less than its slack, as a check per round would.
#[inline(always)]
fn sure_rounds(ways: &[&[u8]; WAYS], pos: &[usize; WAYS]) -> usize {
    (0..WAYS).map(|w| (ways[w].len() - pos[w]) / ROUND_SLACK).min().unwrap_or(0)
}

/// Each way's first unread byte.
#[inline(always)]
fn way_pointers(ways: &[&[u8]; WAYS], pos: &[usize; WAYS]) -> [*const u8; WAYS] {
    core::array::from_fn(|w| ways[w][pos[w]..].as_ptr())
}

/// The way positions back from the way pointers.
#[inline(always)]
fn set_positions(ways: &[&[u8]; WAYS], pos: &mut [usize; WAYS], p: [*const u8; WAYS]) {
    for w in 0..WAYS {
        pos[w] = p[w].addr() - ways[w].as_ptr().addr();
    }
}

/// Whole rounds with `arm`'s version-3 kernel; returns how many (0 if the CPU lacks the arm
/// or the arm has no kernel here).
pub(super) fn rounds3(
    arm: Arm,
    model: &Model3,
    st: &mut [u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    match arm {
        // SAFETY: the CPU supports AVX2 and POPCNT (the guard).
        Arm::Avx2 if avx2_detected() => unsafe { rounds_avx2(model, st, ways, pos, out) },
        // SAFETY: the CPU supports AVX-512 F, BW and VL, hence AVX2, and POPCNT (the guard).
        Arm::Avx512 if avx512_detected() && std_detect_vl() => unsafe {
            rounds_avx512vl(model, st, ways, pos, out)
        },
        // SAFETY: the CPU supports AVX-512 F, BW, VBMI2 and POPCNT (the guard).
        Arm::Avx512Vbmi if avx512_vbmi_detected() => unsafe {
            rounds512(model, st, ways, pos, out)
        },
        _ => 0,
    }
}

/// Whether the CPU has AVX-512 VL (every AVX-512 BW CPU does; checked all the same).
fn std_detect_vl() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(target_feature = "avx512vl")
    }
}

/// One step of a way inside a batch of `rounds_body`.
macro_rules! way_step {
    ($t:expr, $x0:expr, $x1:expr, $at:expr) => {
        // SAFETY: each way held `batch · ROUND_SLACK` unread bytes at the start of the batch
        // (`sure_rounds`) and a step consumes at most 32, so at each step of round `r` of the
        // batch it holds at least `(batch − r) · 64 − 32 ≥ 32` (`step`'s contract).
        unsafe { step($t, $x0, $x1, $at) }
    };
}

/// The kernel's body, the same for both builds: batches of [`sure_rounds`] rounds while
/// `out` has room, the ways read through raw pointers and the bytes written through one;
/// returns how many rounds.
macro_rules! rounds_body {
    ($model:expr, $st:expr, $ways:expr, $pos:expr, $out:expr) => {{
        let (model, st, ways, pos, out): (_, _, &[&[u8]; WAYS], &mut [usize; WAYS], &mut [u8]) =
            ($model, $st, $ways, $pos, $out);
        let rounds = out.len() / V3_LANES;
        let mut done = 0;
        let t = Tables {
            div: table(&model.div),
            freq: table(&model.freq),
            cup: table(&model.cup),
            sup: table(&model.sup),
        };
        let ld = |w: usize| {
            let x = |k: usize| load8x2(&st[32 * w..32 * w + 32], k);
            split(x(0), x(1))
        };
        // The four ways' split states as plain locals, the ways written out: an array
        // indexed in a loop is kept in memory.
        let ((mut a0, mut a1), (mut b0, mut b1)) = (ld(0), ld(1));
        let ((mut c0, mut c1), (mut d0, mut d1)) = (ld(2), ld(3));
        loop {
            let batch = sure_rounds(ways, pos).min(rounds - done);
            if batch == 0 {
                break;
            }
            let [mut pa, mut pb, mut pc, mut pd] = way_pointers(ways, pos);
            let dst = out[done * V3_LANES..(done + batch) * V3_LANES].as_mut_ptr();
            for r in 0..batch {
                let (la, lb, lc, ld_) = (
                    way_step!(&t, &mut a0, &mut a1, &mut pa),
                    way_step!(&t, &mut b0, &mut b1, &mut pb),
                    way_step!(&t, &mut c0, &mut c1, &mut pc),
                    way_step!(&t, &mut d0, &mut d1, &mut pd),
                );
                let (ha, hb, hc, hd) = (
                    way_step!(&t, &mut a0, &mut a1, &mut pa),
                    way_step!(&t, &mut b0, &mut b1, &mut pb),
                    way_step!(&t, &mut c0, &mut c1, &mut pc),
                    way_step!(&t, &mut d0, &mut d1, &mut pd),
                );
                let pairs = [(la, ha), (lb, hb), (lc, hc), (ld_, hd)];
                for (w, (l, h)) in pairs.into_iter().enumerate() {
                    // Lane order: low | high << 4 (the shift stays inside each byte, symbols
                    // being below 16).
                    let v = _mm256_or_si256(l, _mm256_slli_epi16::<4>(h));
                    // SAFETY: round `r < batch` of the `batch` rounds at `dst`: the 32 bytes
                    // at `128r + 32w` are inside it.
                    unsafe {
                        _mm256_storeu_si256(
                            dst.wrapping_add(r * V3_LANES + w * V3_WAY_LANES).cast::<__m256i>(),
                            v,
                        );
                    }
                }
            }
            set_positions(ways, pos, [pa, pb, pc, pd]);
            done += batch;
        }
        for (w, (s, h)) in [(a0, a1), (b0, b1), (c0, c1), (d0, d1)].into_iter().enumerate() {
            let (x0, x1) = join(s, h);
            store8x2(&mut st[32 * w..32 * w + 32], 0, x0);
            store8x2(&mut st[32 * w..32 * w + 32], 1, x1);
        }
        done
    }};
}

#[target_feature(enable = "avx2,popcnt")]
fn rounds_avx2(
    model: &Model3,
    st: &mut [u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    rounds_body!(model, st, ways, pos, out)
}

#[target_feature(enable = "avx2,popcnt,avx512f,avx512bw,avx512vl")]
fn rounds_avx512vl(
    model: &Model3,
    st: &mut [u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    rounds_body!(model, st, ways, pos, out)
}

/// 16 bytes repeated in both 128-bit halves (a `vpshufb` table).
#[target_feature(enable = "avx2")]
#[inline]
fn table(t: &[u8; 16]) -> __m256i {
    // SAFETY: reads the 16 bytes of `t`.
    let v = unsafe { _mm_loadu_si128(t.as_ptr().cast::<__m128i>()) };
    _mm256_broadcastsi128_si256(v)
}

/// Lanes `8k..8k + 8` and `16 + 8k..16 + 8k + 8` of a way's 32 states as one vector: `k = 0`
/// gives the vector whose bytes come first in each 128-bit half after [`split`], `k = 1` the
/// other, so that the split state's bytes are in lane order.
#[target_feature(enable = "avx2")]
#[inline]
fn load8x2(way: &[u16], k: usize) -> __m256i {
    let half = |at: usize| {
        let lanes: &[u16; 8] = way[at..at + 8].try_into().expect("8 states");
        // SAFETY: reads the 16 bytes of `lanes`.
        unsafe { _mm_loadu_si128(lanes.as_ptr().cast::<__m128i>()) }
    };
    _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(half(8 * k)), half(16 + 8 * k))
}

/// Writes back what [`load8x2`] read.
#[target_feature(enable = "avx2")]
#[inline]
fn store8x2(way: &mut [u16], k: usize, v: __m256i) {
    let mut half = |at: usize, h: __m128i| {
        let lanes: &mut [u16; 8] = (&mut way[at..at + 8]).try_into().expect("8 states");
        // SAFETY: writes the 16 bytes of `lanes`.
        unsafe { _mm_storeu_si128(lanes.as_mut_ptr().cast::<__m128i>(), h) }
    };
    half(8 * k, _mm256_castsi256_si128(v));
    half(16 + 8 * k, _mm256_extracti128_si256::<1>(v));
}

/// A way's states, as [`load8x2`] gives them, split into their low and high bytes, both in
/// lane order (`vpackuswb` interleaves the two vectors' 128-bit halves).
#[target_feature(enable = "avx2")]
#[inline]
fn split(x0: __m256i, x1: __m256i) -> (__m256i, __m256i) {
    let low_byte = _mm256_set1_epi16(0xFF);
    let s = _mm256_packus_epi16(_mm256_and_si256(x0, low_byte), _mm256_and_si256(x1, low_byte));
    (s, _mm256_packus_epi16(_mm256_srli_epi16::<8>(x0), _mm256_srli_epi16::<8>(x1)))
}

/// The inverse of [`split`].
#[target_feature(enable = "avx2")]
#[inline]
fn join(s: __m256i, h: __m256i) -> (__m256i, __m256i) {
    (_mm256_unpacklo_epi8(s, h), _mm256_unpackhi_epi8(s, h))
}

/// Eight bytes at `lo` and eight at `hi` in one 128-bit register (two `vmovq` and a
/// `vpunpcklqdq`; no alignment needed).
///
/// # Safety
/// The 8 bytes at `lo` and the 8 bytes at `hi` are readable.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load_two(lo: *const u8, hi: *const u8) -> __m128i {
    // SAFETY: 8 bytes at `lo` are readable (this function's contract); `vmovq` has no
    // alignment requirement.
    let low = unsafe { _mm_loadl_epi64(lo.cast::<__m128i>()) };
    // SAFETY: as above, for `hi`.
    let high = unsafe { _mm_loadl_epi64(hi.cast::<__m128i>()) };
    _mm_unpacklo_epi64(low, high)
}

/// One step of one way, its state split into the slots `s` and the high bytes `h` (both in
/// lane order): returns the 32 symbols, one a byte, in lane order.
///
/// # Safety
/// The 32 bytes at `*at` are readable (the way's unread bytes); `*at` moves past the bytes
/// the step consumed.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn step(t: &Tables, s: &mut __m256i, h: &mut __m256i, at: &mut *const u8) -> __m256i {
    let bytes_apart = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
    ));
    let nibble = _mm256_set1_epi8(0x0F);
    let zero = _mm256_setzero_si256();
    let b = _mm256_and_si256(_mm256_srli_epi16::<4>(*s), nibble);
    let j = _mm256_and_si256(*s, nibble);
    let lower = _mm256_cmpgt_epi8(_mm256_shuffle_epi8(t.div, b), j);
    let sym = _mm256_blendv_epi8(_mm256_shuffle_epi8(t.sup, b), b, lower);
    let f = _mm256_shuffle_epi8(t.freq, sym);
    // `lower` is 0xFF where the slot is in its bucket's lower part: the index byte's top bit
    // set makes `vpshufb` read zero there.
    let index = _mm256_add_epi8(j, _mm256_shuffle_epi8(t.cup, _mm256_or_si256(b, lower)));
    let widen = |v: __m256i| (_mm256_unpacklo_epi8(v, zero), _mm256_unpackhi_epi8(v, zero));
    let ((f0, f1), (h0, h1), (i0, i1)) = (widen(f), widen(*h), widen(index));
    let y0 = _mm256_add_epi16(_mm256_mullo_epi16(f0, h0), i0);
    let y1 = _mm256_add_epi16(_mm256_mullo_epi16(f1, h1), i1);
    // `x'`'s low and high bytes in lane order: each 128-bit half of `y0` and `y1` gathers its
    // low bytes into its low 8 bytes and its high bytes into its high 8 (`vpshufb`), then
    // the halves' low and high quadwords pair up (`vpunpck{l,h}qdq`).
    let (g0, g1) = (_mm256_shuffle_epi8(y0, bytes_apart), _mm256_shuffle_epi8(y1, bytes_apart));
    let (low, high) = (_mm256_unpacklo_epi64(g0, g1), _mm256_unpackhi_epi64(g0, g1));
    // One byte per lane, set where `x' < 256` (its high byte is zero); mask byte `g`: group
    // `g` (lanes `8g..8g + 8`).
    let refill = _mm256_cmpeq_epi8(high, zero);
    let m = _mm256_movemask_epi8(refill).cast_unsigned();
    let (ma, mb, mc, md) = (m & 0xFF, (m >> 8) & 0xFF, (m >> 16) & 0xFF, m >> 24);
    let na = ma.count_ones() as usize;
    let nb = mb.count_ones() as usize;
    let nc = mc.count_ones() as usize;
    let nd = md.count_ones() as usize;
    // Each 128-bit half takes its two groups' bytes from one 16-byte load: groups a and b
    // from the way pointer, c and d from where b's bytes end (at most 16 bytes on).
    let pa = *at;
    let pc = pa.wrapping_add(na + nb);
    *at = pc.wrapping_add(nc + nd);
    // SAFETY: 16 bytes at `pa` and 16 at `pc ≤ pa + 16`: within the 32 readable bytes at
    // `*at` (this function's contract).
    let load = |p: *const u8| unsafe { _mm_loadu_si128(p.cast::<__m128i>()) };
    let pair =
        |lo: __m128i, hi: __m128i| _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lo), hi);
    // SAFETY: two rows of `CTL8` (each 8 bytes; `n ≤ 8`, masks below 256).
    let ctl = |first: u32, n: usize, second: u32| unsafe {
        load_two(CTL8.0[0][first as usize].as_ptr(), CTL8.0[n][second as usize].as_ptr())
    };
    let data = pair(load(pa), load(pc));
    let bytes = _mm256_shuffle_epi8(data, pair(ctl(ma, na, mb), ctl(mc, nc, md)));
    *s = _mm256_blendv_epi8(low, bytes, refill);
    *h = _mm256_blendv_epi8(high, low, refill);
    sym
}

/// One step of a way inside a batch of `rounds512`.
macro_rules! way_step512 {
    ($t:expr, $x:expr, $at:expr) => {
        // SAFETY: as in `way_step`: at least 32 unread bytes at every step of the batch.
        unsafe { step512($t, $x, $at) }
    };
}

/// 16 bytes repeated in the four 128-bit lanes (a `vpshufb` table).
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn table512(t: &[u8; 16]) -> __m512i {
    // SAFETY: reads the 16 bytes of `t`.
    let v = unsafe { _mm_loadu_si128(t.as_ptr().cast::<__m128i>()) };
    _mm512_broadcast_i32x4(v)
}

/// The five byte tables of the 512-bit kernel.
#[derive(Clone, Copy)]
struct Tables512 {
    div: __m512i,
    flo: __m512i,
    fup: __m512i,
    cup: __m512i,
    sup: __m512i,
}

/// One step of one way (32 lanes in lane order): returns the symbols in the low byte of each
/// 16-bit lane.
///
/// # Safety
/// The 32 bytes at `*at` are readable (the way's unread bytes); `*at` moves past the bytes
/// the step consumed.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,popcnt")]
#[inline]
unsafe fn step512(t: &Tables512, x: &mut __m512i, at: &mut *const u8) -> __m512i {
    let low_nibble = _mm512_set1_epi16(0x000F);
    // (x >> 4) & 15 | 0x8000: truth table (A & B) | C.
    let idx = _mm512_ternarylogic_epi32::<0xEA>(
        _mm512_srli_epi16::<4>(*x),
        low_nibble,
        _mm512_set1_epi16(0x8000u16.cast_signed()),
    );
    let j = _mm512_and_si512(*x, low_nibble);
    let lower = _mm512_cmplt_epu16_mask(j, _mm512_shuffle_epi8(t.div, idx));
    let f = _mm512_mask_mov_epi16(
        _mm512_shuffle_epi8(t.fup, idx),
        lower,
        _mm512_shuffle_epi8(t.flo, idx),
    );
    let cup = _mm512_maskz_mov_epi16(!lower, _mm512_shuffle_epi8(t.cup, idx));
    // The symbol's low byte is `b` in the lower part (`idx`'s low byte), `sup[b]` above.
    let sym = _mm512_mask_mov_epi16(_mm512_shuffle_epi8(t.sup, idx), lower, idx);
    let y = _mm512_add_epi16(
        _mm512_mullo_epi16(f, _mm512_srli_epi16::<8>(*x)),
        _mm512_add_epi8(j, cup),
    );
    let refill = _mm512_cmplt_epu16_mask(y, _mm512_set1_epi16(256));
    // SAFETY: the 32 bytes at `*at` are readable (this function's contract).
    let bytes = unsafe { load256(at.cast::<__m256i>()) };
    let fresh = _mm512_maskz_expand_epi16(refill, _mm512_cvtepu8_epi16(bytes));
    *x = _mm512_or_si512(_mm512_mask_slli_epi16::<8>(y, refill, y), fresh);
    *at = at.wrapping_add(refill.count_ones() as usize);
    sym
}

/// Whole rounds with the 512-bit kernel (AVX-512 F + BW + VBMI2: `vpexpandw`) of the
/// `avx512-vbmi` arm (never under Miri, which has no `vpexpandw`); returns how many.
///
/// A way's 32 states are one vector of 16-bit lanes in lane order. A step: `idx = (x >> 4 &
/// 15) | 0x8000` (one `vpternlogd`), so that a `vpshufb` on the words returns the bucket's
/// byte zero-extended; `j = x & 15`; `lower = j < div[b]` into a mask; `f`, the symbol and
/// `cup` by `vpshufb` and masked moves; `x' = f·(x >> 8) + (j + cup mod 256)` (`vpmullw`, a byte
/// add); the refill compares `x' < 256` into a mask, zero-extends the way's next 32 bytes to
/// words, `vpexpandw`s them into the refilling lanes and shifts those lanes left by 8 under
/// the mask. A round's 32 bytes of a way are one `vpmovwb`.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,popcnt")]
fn rounds512(
    model: &Model3,
    st: &mut [u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    let rounds = out.len() / V3_LANES;
    let mut done = 0;
    let t = Tables512 {
        div: table512(&model.div),
        flo: table512(&model.freq),
        fup: table512(&model.fup),
        cup: table512(&model.cup),
        sup: table512(&model.sup),
    };
    let ld = |w: usize| {
        let s: &[u16; 32] = st[32 * w..32 * w + 32].try_into().expect("32 states");
        // SAFETY: reads the 64 bytes of `s`.
        unsafe { _mm512_loadu_si512(s.as_ptr().cast::<__m512i>()) }
    };
    let (mut xa, mut xb, mut xc, mut xd) = (ld(0), ld(1), ld(2), ld(3));
    loop {
        let batch = sure_rounds(ways, pos).min(rounds - done);
        if batch == 0 {
            break;
        }
        let [mut pa, mut pb, mut pc, mut pd] = way_pointers(ways, pos);
        let dst = out[done * V3_LANES..(done + batch) * V3_LANES].as_mut_ptr();
        for r in 0..batch {
            let l = [
                way_step512!(&t, &mut xa, &mut pa),
                way_step512!(&t, &mut xb, &mut pb),
                way_step512!(&t, &mut xc, &mut pc),
                way_step512!(&t, &mut xd, &mut pd),
            ];
            let h = [
                way_step512!(&t, &mut xa, &mut pa),
                way_step512!(&t, &mut xb, &mut pb),
                way_step512!(&t, &mut xc, &mut pc),
                way_step512!(&t, &mut xd, &mut pd),
            ];
            for (w, (l, h)) in l.into_iter().zip(h).enumerate() {
                // Symbols are below 16: low | high << 4 stays in the low byte of each lane.
                let v = _mm512_cvtepi16_epi8(_mm512_or_si512(l, _mm512_slli_epi16::<4>(h)));
                // SAFETY: round `r < batch` of the `batch` rounds at `dst`: its 32 bytes of
                // way `w` are inside them.
                unsafe {
                    _mm256_storeu_si256(
                        dst.wrapping_add(r * V3_LANES + w * V3_WAY_LANES).cast::<__m256i>(),
                        v,
                    );
                };
            }
        }
        set_positions(ways, pos, [pa, pb, pc, pd]);
        done += batch;
    }
    for (w, v) in [xa, xb, xc, xd].into_iter().enumerate() {
        let s: &mut [u16; 32] = (&mut st[32 * w..32 * w + 32]).try_into().expect("32 states");
        // SAFETY: writes the 64 bytes of `s`.
        unsafe { _mm512_storeu_si512(s.as_mut_ptr().cast::<__m512i>(), v) };
    }
    done
}
