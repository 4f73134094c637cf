//! The AVX2 record decode arm: 8 streams per 256-bit vector, 4 vectors (32 streams) in flight.
//!
//! Per step of 8 lanes (one symbol from 8 streams):
//! - slot → symbol ([`symbol_of`]): a radix-4 search, three compares against broadcast
//!   `start[4]`, `start[8]`, `start[12]` for the quarter, three `vpermd` and compares within
//!   it. It replaced counting all fifteen starts (15 compares and 14 adds; +16 % on Zen 5,
//!   docs/design/rans-decode.md), which had replaced a `vpgatherdd` from the slot → symbol bytes: on
//!   Zen 2 the gather's many micro-operations and long latency crowded the out-of-order window
//!   of the four chains, and the compares decoded 8-10 % faster there. (On Zen 2 `vpermd`
//!   issues once per two cycles with a latency of 8: the radix-4 search has not been measured
//!   on that core.)
//! - `freq`/`start`: one 32-bit word `freq | start << 16` per symbol, looked up in registers
//!   with two `vpermd` (symbols 0–7 and 8–15) and a blend;
//! - `x = freq·(x >> sb) + slot − start` (`vpmulld`);
//! - refill: `k = [x<2^23] + [x<2^15]` bytes (two shifts + compares), taken from a 4-byte
//!   window per lane that serves two rounds: a lane takes at most 2 bytes a round, so one
//!   `vpgatherdd` of the 4 bytes at `pos` (inside the stream whenever two rounds' 4 bytes are
//!   left; no slack past the buffer is ever needed), byte-swapped by `vpshufb` into a
//!   big-endian u32, feeds both steps, each merging its bytes with variable shifts and shifting
//!   the window on (half the gathers: +5–14 % on Zen 5; an 8-byte window per four rounds from
//!   two 4-lane `vpgatherdq` was slower there, 16 `ymm` registers do not hold it). A kernel
//!   call's odd last round gathers the 2 bytes at `pos − 2 .. pos + 2` alone.
//! - output: two symbols per byte, gathered into 16 contiguous bytes per round with
//!   `vpshufb`/`vpermq`.
//!
//! The kernel never caps `k` by the bytes left: the safe driver only runs it for as many
//! rounds as every lane of the group has 2 bytes per round left (`k ≤ 2` since every state is
//! in `[L, 2^32)`), which also bounds every gather inside the stream. The rounds it cannot
//! cover (a stream's last few bytes) go to the scalar branch-free group, which caps `k`.
//! The refill's gather dominated (about one element per cycle on Zen 3), which is what the
//! window halves (`cargo bench -p tetrad-benches --bench rans` measures it on a given core;
//! docs/design/rans-decode.md has the operation count).

use crate::decode::scalar;
use crate::table::{SYMBOLS, Table};
use core::arch::x86_64::{
    __m256i, _mm_cvtsi32_si128, _mm_storeu_si128, _mm256_add_epi32, _mm256_and_si256,
    _mm256_blendv_epi8, _mm256_castsi256_si128, _mm256_cmpeq_epi32, _mm256_cmpgt_epi32,
    _mm256_i32gather_epi32, _mm256_loadu_si256, _mm256_mullo_epi32, _mm256_or_si256,
    _mm256_permute4x64_epi64, _mm256_permutevar8x32_epi32, _mm256_set1_epi32, _mm256_setr_epi8,
    _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_slli_epi32, _mm256_sllv_epi32,
    _mm256_srl_epi32, _mm256_srli_epi32, _mm256_srli_epi64, _mm256_srlv_epi32, _mm256_storeu_si256,
    _mm256_sub_epi32,
};

/// Rounds per tile (the output of one tile, `TILE · N/2` bytes = 16 KiB at 256 streams, stays
/// in L1). 128 rather than 64, as in the AVX-512 driver: half the per-call work (lane copies,
/// bounds), a few per cent faster (`cargo bench -p tetrad-benches --bench rans` measures it).
/// 256 would fill a 32 KiB L1.
const TILE: usize = 128;
/// Vectors of 8 lanes kept in flight by the main kernel.
const WIDE: usize = 4;

/// Whether this CPU runs AVX2 (runtime detection under `std`, cached by std; the compile-time
/// target features otherwise).
#[inline]
pub(in crate::decode) fn detected() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(target_feature = "avx2")
    }
}

/// Decodes `rounds` full rounds (the `decode::rounds_with` contract) with AVX2.
///
/// Only reached through a [`crate::Arm::Avx2`] decoder, which checked availability; should
/// the CPU lack AVX2 anyway, the scalar branch-free arm runs instead (identical output).
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
    let mut lut = [0u32; SYMBOLS];
    for (s, e) in lut.iter_mut().enumerate() {
        // freq ≤ 2^15 and start < 2^15: both fit in 16 bits.
        *e = table.freq()[s] | (table.start()[s] << 16);
    }
    let k = Kernel { start: *table.start(), lut, sb: table.scale_bits(), data };
    let mut r0 = 0;
    while r0 < rounds {
        let t = TILE.min(rounds - r0);
        let tile = &mut out[r0 * n / 2..(r0 + t) * n / 2];
        let mut g = 0;
        while g + 8 * WIDE <= n {
            group::<WIDE>(&k, table, x, pos, end, g, tile, t);
            g += 8 * WIDE;
        }
        while g + 8 <= n {
            group::<1>(&k, table, x, pos, end, g, tile, t);
            g += 8;
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
    start: [u32; SYMBOLS],
    lut: [u32; SYMBOLS],
    sb: u32,
    data: &'a [u8],
}

/// `t` rounds of streams `g..g + 8V`: SIMD for as many rounds as every lane has 2 bytes per
/// round left, repeatedly, then the scalar group for the rest.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn group<const V: usize>(
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
        let safe = (g..g + 8 * V).map(|l| (end[l] - pos[l]) / 2).min().unwrap_or(0) as usize;
        let r = safe.min(t - done);
        if r == 0 {
            break;
        }
        let o = &mut tile[done * half..];
        let xs: &mut [u32; 8 * WIDE] = &mut [0; 8 * WIDE];
        let qs: &mut [u32; 8 * WIDE] = &mut [0; 8 * WIDE];
        for l in 0..8 * V {
            xs[l] = x[g + l];
            // pos ≥ 4 (every stream starts with its 4 state bytes).
            qs[l] = pos[g + l] - 2;
        }
        // SAFETY: `detected()` was checked by `rounds`, so the CPU runs AVX2; every lane has
        // at least 2·r bytes left in its stream (`safe`), so each of the r steps reads only
        // bytes `pos − 2 .. pos + 2` with `pos + 2 ≤ end ≤ data.len() ≤ i32::MAX`.
        unsafe { kernel::<V>(k, xs, qs, o, half, g / 2, r) };
        for l in 0..8 * V {
            x[g + l] = xs[l];
            pos[g + l] = qs[l] + 2;
        }
        done += r;
    }
    if done < t {
        let rest = &mut tile[done * half..];
        for sub in (g..g + 8 * V).step_by(8) {
            scalar::group::<8, 0>(table, k.data, x, pos, end, sub, rest, t - done);
        }
    }
}

/// The search's boundaries in registers (the `avx512` arm's radix-4 search, in 8 lanes):
/// `start[4] − 1`, `start[8] − 1`, `start[12] − 1` broadcast, and per `d ∈ 1..=3` an 8-entry
/// table whose entry `−q mod 8` is `start[4q + d] − 1` for the quarter `q ∈ 0..4`. The `− 1`
/// makes `slot ≥ start` one signed compare (`slot > start − 1`; every value is in `[−1, 2^15]`).
struct Bounds {
    quarters: [__m256i; 3],
    ahead: [__m256i; 3],
}

impl Bounds {
    #[target_feature(enable = "avx2")]
    #[inline]
    fn new(start: &[u32; SYMBOLS]) -> Bounds {
        let below = |s: usize| start[s].cast_signed() - 1;
        let ahead = |d: usize| {
            let mut t = [0i32; 8];
            for q in 0..4 {
                t[(8 - q) % 8] = below(4 * q + d);
            }
            // SAFETY: a 32-byte array; loadu has no alignment need.
            unsafe { _mm256_loadu_si256(t.as_ptr().cast()) }
        };
        Bounds {
            quarters: [4, 8, 12].map(|s| _mm256_set1_epi32(below(s))),
            ahead: [ahead(1), ahead(2), ahead(3)],
        }
    }
}

/// The symbol of each lane's slot: the largest `s` with `start[s] ≤ slot` (the bands
/// `[start[s], start[s] + freq[s])` are consecutive and cover `[0, M)`; a zero-frequency
/// symbol's start equals the next one's, so it is never the largest), by a radix-4 search:
/// three compares against `start[4]`, `start[8]`, `start[12]` count the quarter `q` (each true
/// compare is −1, so their sum is `−q`, which indexes the `ahead` tables mod 8), three
/// `vpermd` fetch `start[4q + 1..=3]` and three compares count the symbol within the quarter.
/// Six compares, three permutes and a few adds where counting all fifteen starts took fifteen
/// compares and fourteen adds.
#[target_feature(enable = "avx2")]
#[inline]
fn symbol_of(slot: __m256i, b: &Bounds) -> __m256i {
    let count = |bounds: [__m256i; 3]| {
        let ge = bounds.map(|t| _mm256_cmpgt_epi32(slot, t));
        _mm256_add_epi32(_mm256_add_epi32(ge[0], ge[1]), ge[2])
    };
    let minus_q = count(b.quarters);
    let minus_within = count(b.ahead.map(|t| _mm256_permutevar8x32_epi32(t, minus_q)));
    let minus_s = _mm256_add_epi32(_mm256_slli_epi32::<2>(minus_q), minus_within);
    _mm256_sub_epi32(_mm256_setzero_si256(), minus_s)
}

/// `r` rounds of `8V` lanes: states `xs`, read positions minus 2 in `qs`; writes bytes
/// `ob .. ob + 4V` of each round (`half` bytes apart) in `out`.
///
/// # Safety
/// The CPU must support AVX2, `V ≤ 4`, and every lane must have at least `2·r` bytes left
/// (`qs[l] + 2 + 2r ≤ end ≤ k.data.len() ≤ i32::MAX`), and every state must be in
/// `[L, 2^32)`.
#[target_feature(enable = "avx2")]
unsafe fn kernel<const V: usize>(
    k: &Kernel<'_>,
    xs: &mut [u32; 8 * WIDE],
    qs: &mut [u32; 8 * WIDE],
    out: &mut [u8],
    half: usize,
    ob: usize,
    r: usize,
) {
    let mut xv = [_mm256_setzero_si256(); WIDE];
    let mut qv = [_mm256_setzero_si256(); WIDE];
    for v in 0..V {
        // SAFETY: lanes 8v..8v+8 of a 32-lane array (v < V ≤ 4); loadu has no alignment need.
        xv[v] = unsafe { _mm256_loadu_si256(xs[8 * v..].as_ptr().cast()) };
        // SAFETY: lanes 8v..8v+8 of the 32-lane `qs` (v < V ≤ 4); loadu has no alignment
        // need.
        qv[v] = unsafe { _mm256_loadu_si256(qs[8 * v..].as_ptr().cast()) };
    }
    // SAFETY: the array has 16 u32; lanes 0..8.
    let lut_lo = unsafe { _mm256_loadu_si256(k.lut.as_ptr().cast()) };
    // SAFETY: lanes 8..16 of the 16.
    let lut_hi = unsafe { _mm256_loadu_si256(k.lut[8..].as_ptr().cast()) };
    let sbv = _mm_cvtsi32_si128(k.sb as i32);
    let mask = _mm256_set1_epi32(((1u32 << k.sb) - 1) as i32);
    let low16 = _mm256_set1_epi32(0xFFFF);
    let seven = _mm256_set1_epi32(7);
    let sixteen = _mm256_set1_epi32(16);
    let thirty_two = _mm256_set1_epi32(32);
    // Bytes [p, p+1, p+2, p+3] (little-endian lane) → the big-endian u32.
    let be32 = _mm256_setr_epi8(
        3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12, //
        3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
    );
    let zero = _mm256_setzero_si256();
    // Bytes [p−2, p−1, p, p+1] (little-endian lane) → big-endian 16-bit value of p, p+1.
    let be16 = _mm256_setr_epi8(
        3, 2, -1, -1, 7, 6, -1, -1, 11, 10, -1, -1, 15, 14, -1, -1, //
        3, 2, -1, -1, 7, 6, -1, -1, 11, 10, -1, -1, 15, 14, -1, -1,
    );
    // Output byte of each 64-bit lane (low byte) → bytes 2v, 2v+1 of each 128-bit half.
    let place: [__m256i; WIDE] = core::array::from_fn(|v| {
        let mut m = [-1i8; 32];
        for h in 0..2 {
            m[16 * h + 2 * v] = 0;
            m[16 * h + 2 * v + 1] = 8;
        }
        // SAFETY: a 32-byte array; loadu has no alignment need.
        unsafe { _mm256_loadu_si256(m.as_ptr().cast()) }
    });
    // After vpermq [0, 2, 1, 3] the low 128 bits hold half 0's 8 bytes then half 1's; the
    // 16-bit pairs interleave back to stream order.
    let unzip = _mm256_setr_epi8(
        0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15, //
        0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
    );
    let bounds = Bounds::new(&k.start);
    let data = k.data.as_ptr().cast::<i32>();
    // One step of a vector before its refill: (symbol, state, k, 8k).
    let step = |x: __m256i| {
        let slot = _mm256_and_si256(x, mask);
        let s = symbol_of(slot, &bounds);
        let lo = _mm256_permutevar8x32_epi32(lut_lo, s);
        let hi = _mm256_permutevar8x32_epi32(lut_hi, s);
        let e = _mm256_blendv_epi8(lo, hi, _mm256_cmpgt_epi32(s, seven));
        let f = _mm256_and_si256(e, low16);
        let st = _mm256_srli_epi32::<16>(e);
        let xn = _mm256_add_epi32(
            _mm256_mullo_epi32(f, _mm256_srl_epi32(x, sbv)),
            _mm256_sub_epi32(slot, st),
        );
        let k1 = _mm256_cmpeq_epi32(_mm256_srli_epi32::<23>(xn), zero);
        let k2 = _mm256_cmpeq_epi32(_mm256_srli_epi32::<15>(xn), zero);
        let kk = _mm256_sub_epi32(zero, _mm256_add_epi32(k1, k2));
        (s, xn, kk, _mm256_slli_epi32::<3>(kk))
    };
    // Even stream's symbol | odd stream's symbol << 4 in the low byte of each u64, placed.
    let place_symbols = |bytes: __m256i, s: __m256i, v: usize| {
        let b = _mm256_or_si256(s, _mm256_srli_epi64::<28>(s));
        _mm256_or_si256(bytes, _mm256_shuffle_epi8(b, place[v]))
    };
    let store = |bytes: __m256i, round: usize, out: &mut [u8]| {
        let bytes = _mm256_shuffle_epi8(_mm256_permute4x64_epi64::<0b11_01_10_00>(bytes), unzip);
        let o = &mut out[round * half + ob..][..4 * V];
        if V == WIDE {
            let low = _mm256_castsi256_si128(bytes);
            // SAFETY: `o` is exactly 16 bytes; storeu has no alignment need.
            unsafe { _mm_storeu_si128(o.as_mut_ptr().cast(), low) };
        } else {
            let mut tmp = [0u8; 32];
            // SAFETY: a 32-byte array; storeu has no alignment need.
            unsafe { _mm256_storeu_si256(tmp.as_mut_ptr().cast(), bytes) };
            o.copy_from_slice(&tmp[..4 * V]);
        }
    };
    // Two rounds per gather: a lane takes at most 2 bytes a round, so the 4 bytes at its
    // position, big-endian, serve both steps (the second takes what the first left).
    let base = data.cast::<u8>().wrapping_add(2).cast::<i32>();
    let mut round = 0;
    while round + 2 <= r {
        let mut wv = [zero; WIDE];
        for v in 0..V {
            // SAFETY: q + 2 = pos and pos + 4 ≤ end ≤ data.len() (the caller's 2·r bytes per
            // lane, less 2 per earlier round at most, with two rounds left); q + 2 < 2^31.
            let w = unsafe { _mm256_i32gather_epi32::<1>(base, qv[v]) };
            wv[v] = _mm256_shuffle_epi8(w, be32);
        }
        for j in 0..2 {
            let mut bytes = zero;
            for v in 0..V {
                let (s, xn, kk, sh) = step(xv[v]);
                let fill = _mm256_srlv_epi32(wv[v], _mm256_sub_epi32(thirty_two, sh));
                xv[v] = _mm256_or_si256(_mm256_sllv_epi32(xn, sh), fill);
                wv[v] = _mm256_sllv_epi32(wv[v], sh);
                qv[v] = _mm256_add_epi32(qv[v], kk);
                bytes = place_symbols(bytes, s, v);
            }
            store(bytes, round + j, out);
        }
        round += 2;
    }
    if round < r {
        let mut bytes = zero;
        for v in 0..V {
            let (s, xn, kk, sh) = step(xv[v]);
            let q = qv[v];
            // SAFETY: q + 4 = pos + 2 ≤ end ≤ data.len() (the caller's 2·r bytes per lane,
            // less 2 per earlier round at most), and q ≥ 2 since pos ≥ 4; q < 2^31.
            let w = unsafe { _mm256_i32gather_epi32::<1>(data, q) };
            let w = _mm256_shuffle_epi8(w, be16);
            let fill = _mm256_srlv_epi32(w, _mm256_sub_epi32(sixteen, sh));
            xv[v] = _mm256_or_si256(_mm256_sllv_epi32(xn, sh), fill);
            qv[v] = _mm256_add_epi32(q, kk);
            bytes = place_symbols(bytes, s, v);
        }
        store(bytes, round, out);
    }
    for v in 0..V {
        // SAFETY: lanes 8v..8v+8 of a 32-lane array; storeu has no alignment need.
        unsafe { _mm256_storeu_si256(xs[8 * v..].as_mut_ptr().cast(), xv[v]) };
        // SAFETY: lanes 8v..8v+8 of the 32-lane `qs`; storeu has no alignment need.
        unsafe { _mm256_storeu_si256(qs[8 * v..].as_mut_ptr().cast(), qv[v]) };
    }
}
