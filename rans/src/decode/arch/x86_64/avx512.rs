//! The AVX-512 record decode arm (F + BW): 16 streams per 512-bit vector, 64 in flight.
//!
//! Lane layout: a group of `32P` streams is held in `P` *pairs* of vectors; pair `p` keeps the
//! even streams `g + 32p + 2i` in one vector and the odd streams `g + 32p + 2i + 1` in the
//! other (lane `i`). The output byte of streams `2i, 2i+1` is then `even | odd << 4` lane by
//! lane, and one `vpmovdb` turns 16 lanes into 16 contiguous output bytes: no byte shuffling.
//!
//! Per step of 16 lanes (one symbol from 16 streams):
//! - slot → symbol without a table gather: the symbol is the largest `s` with
//!   `start[s] ≤ slot` (starts are non-decreasing; absent symbols share the next one's start),
//!   found by a 4-level binary search over the 16 starts held in registers: one broadcast
//!   compare, then three `vpermd` (the boundary `start[s + step]` of each lane's current
//!   interval) + unsigned compare into a mask + masked add;
//! - `freq`/`start` of the symbol: two `vpermd` (16 entries fit one register);
//! - `x = freq·(x >> sb) + slot − start` (`vpsrlvd`, `vpmulld`, `vpsubd`, `vpaddd`);
//! - refill: `k = [x<2^23] + [x<2^15]` as two compare masks; the candidate bytes are fetched
//!   by a gather of 4 bytes at `pos − 2` (two 8-lane AVX2 gathers, see below), one `vpshufb`
//!   moves bytes `pos`, `pos+1` to the top of the lane big-endian, and
//!   `x = (x << 8k) | (w >> (32 − 8k))` (`vpsllvd`/`vpsrlvd`; a shift by 32 gives 0);
//! - output: `vpslld`/`vpord` + `vpmovdb`, one 16-byte store per pair of vectors.
//!
//! About 27 vector operations and 16 gathered elements per 16 nibbles.
//!
//! Measured alternatives (docs/PERFORMANCE.md, "SIMD arms"): a slot → symbol table gather
//! instead of the binary search is ~5% slower here (it is the faster choice in the AVX2 arm,
//! whose `vpermd` holds only 8 entries); one 16-lane `vpgatherdd zmm` instead of two 8-lane
//! gathers measures the same; 64 streams in flight beat 32 and 128 (`WIDE`); a 4-byte
//! window loaded every two rounds, a prefetched 8-byte window (loads off the state's
//! dependency chain) and scalar loads instead of the refill gather were none of them faster.
//!
//! Why 8-lane AVX2 gathers rather than one 16-lane `vpgatherdd zmm`: on the Zen 4 project
//! machine they measure the same or faster, and Miri has shims for the AVX2 gathers but not
//! the AVX-512 ones, so the kernel runs under Miri (`.ci/miri-tests`). The arm therefore
//! requires `avx512f`, `avx512bw` and `avx2` (every AVX-512 CPU has AVX2; it is checked anyway).
//! The other intrinsics were picked from the ones Miri implements (`vpermd` rather than
//! `vpermw`/`vpermt2*`, variable shifts rather than shifts by an `xmm` count).
//!
//! As in the AVX2 arm, the kernel never caps `k` by the bytes left: the safe driver only runs
//! it for as many rounds as every lane of the group has 2 bytes per round left (`k ≤ 2` since
//! every state is in `[L, 2^32)`), which also bounds every gather inside the stream. The
//! rounds it cannot cover (a stream's last few bytes) go to the scalar branch-free group.

use crate::decode::scalar;
use crate::table::{SYMBOLS, Table};
use core::arch::x86_64::{
    _mm_storeu_si128, _mm256_i32gather_epi32, _mm512_add_epi32, _mm512_and_si512,
    _mm512_castsi256_si512, _mm512_castsi512_si256, _mm512_cmpge_epu32_mask,
    _mm512_cmplt_epu32_mask, _mm512_cvtepi32_epi8, _mm512_extracti64x4_epi64, _mm512_inserti64x4,
    _mm512_loadu_si512, _mm512_mask_add_epi32, _mm512_maskz_mov_epi32, _mm512_mullo_epi32,
    _mm512_or_si512, _mm512_permutexvar_epi32, _mm512_set1_epi32, _mm512_setzero_si512,
    _mm512_shuffle_epi8, _mm512_slli_epi32, _mm512_sllv_epi32, _mm512_srli_epi32,
    _mm512_srlv_epi32, _mm512_storeu_si512, _mm512_sub_epi32,
};

/// Rounds per tile (the output of one tile, `TILE · N/2` bytes, stays in L1).
const TILE: usize = 64;
/// Pairs of 16-lane vectors kept in flight by the main kernel (`32·WIDE` streams).
const WIDE: usize = 2;

/// Whether this CPU runs the arm: AVX-512 F and BW, and AVX2 for the gathers (runtime
/// detection under `std`, cached by std; the compile-time target features otherwise).
#[inline]
pub(in crate::decode) fn detected() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(all(target_feature = "avx512f", target_feature = "avx512bw", target_feature = "avx2"))
    }
}

/// Decodes `rounds` full rounds (the `decode::rounds_with` contract) with AVX-512.
///
/// Only reached through a [`crate::Arm::Avx512`] decoder, which checked availability; should
/// the CPU lack the features anyway, the scalar branch-free arm runs instead (identical
/// output).
pub(in crate::decode) fn rounds(
    table: &Table,
    data: &[u8],
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    out: &mut [u8],
    rounds: usize,
) {
    if !detected() || data.len() > i32::MAX as usize {
        // Unreachable through the public API for the first reason; the gathers take i32
        // offsets for the second (a payload above 2 GiB).
        scalar::rounds_branch_free(table, data, x, pos, end, out, rounds);
        return;
    }
    let n = x.len();
    let start = table.start();
    // Boundary tables of the binary search: entry `s` of level `step` is `start[s + step]`
    // (only the entries the search can reach, `s + step ≤ 15`, matter).
    let level = |step: usize| -> [u32; SYMBOLS] {
        core::array::from_fn(|s| start.get(s + step).copied().unwrap_or(u32::MAX))
    };
    let k = Kernel {
        freq: *table.freq(),
        start: *start,
        b4: level(4),
        b2: level(2),
        b1: level(1),
        sb: table.scale_bits(),
        data,
    };
    let mut r0 = 0;
    while r0 < rounds {
        let t = TILE.min(rounds - r0);
        let tile = &mut out[r0 * n / 2..(r0 + t) * n / 2];
        let mut g = 0;
        while g + 32 * WIDE <= n {
            group::<WIDE>(&k, table, x, pos, end, g, tile, t);
            g += 32 * WIDE;
        }
        while g + 32 <= n {
            group::<1>(&k, table, x, pos, end, g, tile, t);
            g += 32;
        }
        while g < n {
            scalar::group::<2, 0>(table, data, x, pos, end, g, tile, t);
            g += 2;
        }
        r0 += t;
    }
}

/// What the kernel reads: the table in kernel form and the data.
struct Kernel<'a> {
    freq: [u32; SYMBOLS],
    start: [u32; SYMBOLS],
    b4: [u32; SYMBOLS],
    b2: [u32; SYMBOLS],
    b1: [u32; SYMBOLS],
    sb: u32,
    data: &'a [u8],
}

/// Stream of lane `i` of vector `v` in a group starting at `g`: pair `v / 2`, even streams
/// in the even vector, odd streams in the odd one.
#[inline(always)]
const fn stream_of(g: usize, v: usize, i: usize) -> usize {
    g + 32 * (v / 2) + 2 * i + (v & 1)
}

/// `t` rounds of streams `g..g + 32P`: SIMD for as many rounds as every lane has 2 bytes per
/// round left, repeatedly, then the scalar group for the rest.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn group<const P: usize>(
    k: &Kernel<'_>,
    table: &Table,
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    g: usize,
    tile: &mut [u8],
    t: usize,
) {
    let half = x.len() / 2;
    let mut done = 0;
    while done < t {
        let safe = (g..g + 32 * P).map(|l| (end[l] - pos[l]) / 2).min().unwrap_or(0) as usize;
        let r = safe.min(t - done);
        if r == 0 {
            break;
        }
        let o = &mut tile[done * half..];
        let xs: &mut [u32; 32 * WIDE] = &mut [0; 32 * WIDE];
        let qs: &mut [u32; 32 * WIDE] = &mut [0; 32 * WIDE];
        for v in 0..2 * P {
            for i in 0..16 {
                let l = stream_of(g, v, i);
                xs[16 * v + i] = x[l];
                // pos ≥ 4 (every stream starts with its 4 state bytes).
                qs[16 * v + i] = pos[l] - 2;
            }
        }
        // SAFETY: `detected()` was checked by `rounds`, so the CPU runs AVX-512 F/BW and AVX2;
        // every lane has at least 2·r bytes left in its stream (`safe`), so each of the r steps
        // reads only bytes `pos − 2 .. pos + 2` with `pos + 2 ≤ end ≤ data.len() ≤ i32::MAX`;
        // `o` holds at least `(r − 1)·half + g/2 + 16P` bytes (r ≤ t − done rounds of the
        // tile, streams g..g + 32P ≤ N).
        unsafe { kernel::<P>(k, xs, qs, o, half, g / 2, r) };
        for v in 0..2 * P {
            for i in 0..16 {
                let l = stream_of(g, v, i);
                x[l] = xs[16 * v + i];
                pos[l] = qs[16 * v + i] + 2;
            }
        }
        done += r;
    }
    if done < t {
        let rest = &mut tile[done * half..];
        for sub in (g..g + 32 * P).step_by(8) {
            scalar::group::<8, 0>(table, k.data, x, pos, end, sub, rest, t - done);
        }
    }
}

/// `r` rounds of `32P` lanes (`2P` vectors in the [`stream_of`] layout): states `xs`, read
/// positions minus 2 in `qs`; writes bytes `ob .. ob + 16P` of each round (`half` bytes
/// apart) in `out`.
///
/// # Safety
/// The CPU must support AVX-512 F/BW and AVX2, `P ≤ WIDE`, every lane must have at least
/// `2·r` bytes left (`qs[l] + 2 + 2r ≤ end ≤ k.data.len() ≤ i32::MAX`), and every state must
/// be in `[L, 2^32)`; `out` must hold `(r − 1)·half + ob + 16P` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx2")]
unsafe fn kernel<const P: usize>(
    k: &Kernel<'_>,
    xs: &mut [u32; 32 * WIDE],
    qs: &mut [u32; 32 * WIDE],
    out: &mut [u8],
    half: usize,
    ob: usize,
    r: usize,
) {
    let mut xv = [_mm512_setzero_si512(); 2 * WIDE];
    let mut qv = [_mm512_setzero_si512(); 2 * WIDE];
    for v in 0..2 * P {
        // SAFETY: lanes 16v..16v+16 of a 32·WIDE-lane array (v < 2P ≤ 2·WIDE); loadu has no
        // alignment need.
        xv[v] = unsafe { _mm512_loadu_si512(xs[16 * v..].as_ptr().cast()) };
        // SAFETY: as above.
        qv[v] = unsafe { _mm512_loadu_si512(qs[16 * v..].as_ptr().cast()) };
    }
    // SAFETY: each of these five arrays has exactly 16 u32; loadu has no alignment need.
    let freq = unsafe { _mm512_loadu_si512(k.freq.as_ptr().cast()) };
    // SAFETY: 16 u32.
    let start = unsafe { _mm512_loadu_si512(k.start.as_ptr().cast()) };
    // SAFETY: 16 u32.
    let b4 = unsafe { _mm512_loadu_si512(k.b4.as_ptr().cast()) };
    // SAFETY: 16 u32.
    let b2 = unsafe { _mm512_loadu_si512(k.b2.as_ptr().cast()) };
    // SAFETY: 16 u32.
    let b1 = unsafe { _mm512_loadu_si512(k.b1.as_ptr().cast()) };
    let b8 = _mm512_set1_epi32(k.start[8] as i32);
    let sbv = _mm512_set1_epi32(k.sb as i32);
    let mask = _mm512_set1_epi32(((1u32 << k.sb) - 1) as i32);
    let l23 = _mm512_set1_epi32(1 << 23);
    let l15 = _mm512_set1_epi32(1 << 15);
    let one = _mm512_set1_epi32(1);
    let two = _mm512_set1_epi32(2);
    let four = _mm512_set1_epi32(4);
    let eight = _mm512_set1_epi32(8);
    let thirty_two = _mm512_set1_epi32(32);
    // Bytes [p−2, p−1, p, p+1] of a lane → [0, 0, p+1, p]: the big-endian pair at the top.
    let be_top = {
        const Z: i8 = -128;
        const BLOCK: [i8; 16] = [Z, Z, 3, 2, Z, Z, 7, 6, Z, Z, 11, 10, Z, Z, 15, 14];
        let m: [i8; 64] = core::array::from_fn(|i| BLOCK[i % 16]);
        // SAFETY: a 64-byte array; loadu has no alignment need.
        unsafe { _mm512_loadu_si512(m.as_ptr().cast()) }
    };
    let data = k.data.as_ptr().cast::<i32>();
    for round in 0..r {
        let mut sym = [_mm512_setzero_si512(); 2 * WIDE];
        for v in 0..2 * P {
            let x = xv[v];
            let slot = _mm512_and_si512(x, mask);
            // Binary search: s = the largest symbol with start[s] ≤ slot.
            let s = _mm512_maskz_mov_epi32(_mm512_cmpge_epu32_mask(slot, b8), eight);
            let m = _mm512_cmpge_epu32_mask(slot, _mm512_permutexvar_epi32(s, b4));
            let s = _mm512_mask_add_epi32(s, m, s, four);
            let m = _mm512_cmpge_epu32_mask(slot, _mm512_permutexvar_epi32(s, b2));
            let s = _mm512_mask_add_epi32(s, m, s, two);
            let m = _mm512_cmpge_epu32_mask(slot, _mm512_permutexvar_epi32(s, b1));
            let s = _mm512_mask_add_epi32(s, m, s, one);
            sym[v] = s;
            let f = _mm512_permutexvar_epi32(s, freq);
            let st = _mm512_permutexvar_epi32(s, start);
            let xn = _mm512_add_epi32(
                _mm512_mullo_epi32(f, _mm512_srlv_epi32(x, sbv)),
                _mm512_sub_epi32(slot, st),
            );
            let k1 = _mm512_cmplt_epu32_mask(xn, l23);
            let k2 = _mm512_cmplt_epu32_mask(xn, l15);
            let sh = _mm512_maskz_mov_epi32(k1, eight);
            let sh = _mm512_mask_add_epi32(sh, k2, sh, eight);
            let q = qv[v];
            let qlo = _mm512_castsi512_si256(q);
            let qhi = _mm512_extracti64x4_epi64::<1>(q);
            // SAFETY: (both gathers) q + 4 = pos + 2 ≤ end ≤ data.len() (the caller's 2·r
            // bytes per lane, less 2 per earlier round at most), q ≥ 2 since pos ≥ 4, and
            // q < 2^31: every 4-byte read lies inside `k.data`.
            let wlo = unsafe { _mm256_i32gather_epi32::<1>(data, qlo) };
            // SAFETY: as above.
            let whi = unsafe { _mm256_i32gather_epi32::<1>(data, qhi) };
            let w = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(wlo), whi);
            let w = _mm512_shuffle_epi8(w, be_top);
            let fill = _mm512_srlv_epi32(w, _mm512_sub_epi32(thirty_two, sh));
            xv[v] = _mm512_or_si512(_mm512_sllv_epi32(xn, sh), fill);
            qv[v] = _mm512_add_epi32(q, _mm512_srli_epi32::<3>(sh));
        }
        for p in 0..P {
            let b = _mm512_or_si512(sym[2 * p], _mm512_slli_epi32::<4>(sym[2 * p + 1]));
            let bytes = _mm512_cvtepi32_epi8(b);
            let o = &mut out[round * half + ob + 16 * p..][..16];
            // SAFETY: `o` is exactly 16 bytes; storeu has no alignment need.
            unsafe { _mm_storeu_si128(o.as_mut_ptr().cast(), bytes) };
        }
    }
    for v in 0..2 * P {
        // SAFETY: lanes 16v..16v+16 of a 32·WIDE-lane array; storeu has no alignment need.
        unsafe { _mm512_storeu_si512(xs[16 * v..].as_mut_ptr().cast(), xv[v]) };
        // SAFETY: as above.
        unsafe { _mm512_storeu_si512(qs[16 * v..].as_mut_ptr().cast(), qv[v]) };
    }
}
