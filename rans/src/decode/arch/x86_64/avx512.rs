//! The AVX-512 record decode arms: 16 streams per 512-bit vector, 64 in flight. Two builds
//! share the driver: `avx512` (F + BW, plus AVX2 for its gathers; runs under Miri) and
//! `avx512-vbmi` (F + BW + VBMI + VBMI2 + CD, a shorter refill, native only).
//!
//! Lane layout: a group of `32P` streams is held in `P` *pairs* of vectors; pair `p` keeps the
//! even streams `g + 32p + 2i` in one vector and the odd streams `g + 32p + 2i + 1` in the
//! other (lane `i`). The output byte of streams `2i, 2i+1` is then `even | odd << 4` lane by
//! lane, and one `vpmovdb` turns 16 lanes into 16 contiguous output bytes: no byte shuffling.
//!
//! Per step of 16 lanes (one symbol from 16 streams):
//! - slot → symbol without a table gather: the symbol is the largest `s` with
//!   `start[s] ≤ slot` (starts are non-decreasing; absent symbols share the next one's start),
//!   found by a **radix-4 search** over the 16 starts held in registers ([`search`]): three
//!   broadcast compares against `start[4]`, `start[8]`, `start[12]` give the quarter `s1`, then
//!   three `vpermd` (`start[s1 + 1..=3]`) and three compares the symbol within it. Each
//!   compare's mask becomes a constant by a zero-masked move and the three are joined by XOR
//!   (the masks are nested, so `4 ^ 12 ^ 4` counts them);
//! - `avx512-vbmi`, for most tables: a **bucketed search** instead ([`Buckets`],
//!   [`Step::decode_bucketed`]): one `vpermt2b` on the slot's top 7 bits gives the symbol of
//!   the first slot of its 128-slot bucket (`M / 128` slots at other scale bits), and one to
//!   four compares against `start[s + 1..]` count the starts inside the bucket at or below
//!   the slot. The kernel is chosen per table by the most starts any bucket holds past its
//!   first slot (`ahead`, 1–4; more, or fewer than 128 slots: the radix-4 search). Weight
//!   tables need one to four (the tails' rare symbols crowd the first and last buckets:
//!   MiniLM-L6's pooled int4-row table has starts 34 and 108 in bucket 0, so two; the
//!   peaked synthetic Laplace rows of the adapter bench four);
//! - `freq`/`start` of the symbol: two `vpermd` (16 entries fit one register);
//! - `x = freq·(x >> sb) + slot − start` (`vpsrlvd`, `vpmulld`, `vpsubd`, `vpaddd`);
//! - refill, `avx512`: `k = [x<2^23] + [x<2^15]` as two compare masks; the candidate bytes are
//!   fetched by a gather of 4 bytes at `pos − 2` (two 8-lane AVX2 gathers, see below), one
//!   `vpshufb` moves bytes `pos`, `pos+1` to the top of the lane big-endian, and
//!   `x = (x << 8k) | (w >> (32 − 8k))` (`vpsllvd`/`vpsrlvd`; a shift by 32 gives 0);
//! - refill, `avx512-vbmi`: `8k` from the state's leading zeros (`vplzcntd`, then `vpermb` on a
//!   64-byte table: 0–8 zeros → 0, 9–16 → 8, 17 and more → 16), and `x = (x << 8k) | (w >>
//!   (32 − 8k))` as one `vpshldvd` from an **8-byte window** per lane: a lane takes at most 2
//!   bytes a round, so the 8 bytes at its position (two 8-lane `vpgatherdq`; two `vpermt2b`
//!   byte-swap and split them into the next 4 bytes `hi` and the 4 after them `lo`, big-endian)
//!   serve four rounds; each step shifts the window on by `vpshldvd` + `vpsllvd` and adds its
//!   shift to a per-lane count, and the read position moves on by the count's bytes once per
//!   four rounds. The last rounds of a kernel call (fewer than four) gather 4 bytes per step as
//!   before;
//! - output: `vpslld`/`vpord` + `vpmovdb`, one 16-byte store per pair of vectors.
//!
//! **Latency bounds the radix-4 loop, gathers the bucketed one** (Zen 5, measured with
//! dependent chains: a
//! compare into a mask and a masked move 9 cycles, `vpermd` 5, `vpmulld` 3, simple operations
//! 2): the state of a lane is one long dependent chain per step, and the 4-level binary search
//! this arm used before (a `vpermd`, a compare and a masked add per level) was 51 cycles of
//! it. The radix-4 search has the same number of dependent compares as two levels (about 29
//! cycles) for a few more operations, which the ports had spare: +8–10 % (`avx512`) on Zen 5. The
//! `avx512-vbmi` refill is 9 cycles deep where the compare-mask form is about 17, and its one
//! 16-lane gather costs about what two 8-lane ones do: with the search, +25–30 % over the former
//! `avx512` kernel. The bucketed search then took a compare depth and eight operations off the
//! chain (+12 % with two compares, +22 % with one), after which a 16-lane gather per step
//! (about 14 cycles of issue on Zen 5) was the larger cost; the 8-byte window halves the
//! gathers' work (docs/design/rans-decode.md). Measured alternatives
//! (same document): a slot → symbol table gather instead of a search; one 16-lane
//! `vpgatherdd zmm` in the `avx512` build (the same speed; it stays two 8-lane gathers for
//! Miri); 32 / 96 / 128 streams in flight instead of 64; when
//! the four-level and then the radix-4 search made the chain long, a 4-byte window loaded every
//! two rounds, a prefetched 8-byte window and an 8-byte window per lane refilled only when it
//! runs low (fewer gathers, more registers and a branch) were all slower — with the bucketed
//! search the gathers became the bound, and the unconditional 8-byte window above is +13 %
//! (radix-4 tables) to +25 % (bucketed); scalar loads instead of the refill gather; a binary
//! search on 16-bit lanes (two vectors' slots packed by `vpermt2w`, half the operations, but
//! the packing lengthens the chain: no gain); the radix-4 compares as
//! `(start − 1 − slot) >> 31` sign masks with the tables indexed by `−s` (no mask registers,
//! a shorter chain, more operations: +4 %, within the measurement's noise, not kept).
//!
//! **The bucketed loop is throughput-bound** (on a Zen 4 core, whose 512-bit operations issue
//! at half the rate of 256-bit ones): its body alone, replayed in an
//! `asm!` harness without the gathers, takes 59 cycles a round (four vectors) with its real
//! dependencies and 55 with every round made independent. So shortening the chain no longer
//! pays: the search's bound looked up per bucket, beside `first` (one lookup deep instead of
//! two), measured 2 % slower for its extra operations. Fewer operations do not pay one for one
//! either: the window's byte swap and split in two `vpermt2b` (instead of two `vpshufb` and two
//! `vpermt2d`) with the position moved once per four rounds gave +4 %, tiles of 128 rounds
//! (half the driver's per-call work) +3–4 %, but counting the bounds by masked adds (one
//! operation fewer per bound than the zero-masked constants and XOR below) measured the same.
//!
//! Why 8-lane AVX2 gathers in the `avx512` build rather than one 16-lane `vpgatherdd zmm`: on
//! a Zen 4 core they measure the same or faster, and Miri has shims for the AVX2
//! gathers but not the AVX-512 ones, so the kernel runs under Miri (`.ci/miri-tests`). The arm
//! therefore requires `avx512f`, `avx512bw` and `avx2` (every AVX-512 CPU has AVX2; it is
//! checked anyway). The other intrinsics were picked from the ones Miri implements (`vpermd`
//! rather than `vpermw`/`vpermt2*`, variable shifts rather than shifts by an `xmm` count). The
//! `avx512-vbmi` build uses instructions Miri has no shims for (`vpermb`, `vplzcntd`,
//! `vpshldvd`, the 16-lane gather), so it never runs under Miri; it is tested natively wherever
//! the CPU has it (CI requires it there, `TETRAD_REQUIRE_ISA`).
//!
//! As in the AVX2 arm, the kernels never cap `k` by the bytes left: the safe driver only runs
//! them for as many rounds as every lane of the group has 2 bytes per round left (`k ≤ 2` since
//! every state is in `[L, 2^32)`), which also bounds every gather inside the stream. The
//! rounds they cannot cover (a stream's last few bytes) go to the scalar branch-free group.

use crate::decode::scalar;
use crate::table::{SYMBOLS, Table};
use core::arch::x86_64::{
    __m512i, _mm_storeu_si128, _mm256_i32gather_epi32, _mm512_add_epi32, _mm512_and_si512,
    _mm512_castsi256_si512, _mm512_castsi512_si256, _mm512_cmpge_epu32_mask,
    _mm512_cmplt_epu32_mask, _mm512_cvtepi32_epi8, _mm512_extracti64x4_epi64,
    _mm512_i32gather_epi32, _mm512_i32gather_epi64, _mm512_inserti64x4, _mm512_loadu_si512,
    _mm512_lzcnt_epi32, _mm512_mask_add_epi32, _mm512_maskz_mov_epi32, _mm512_mullo_epi32,
    _mm512_or_si512, _mm512_permutex2var_epi8, _mm512_permutexvar_epi8, _mm512_permutexvar_epi32,
    _mm512_set1_epi32, _mm512_setzero_si512, _mm512_shldv_epi32, _mm512_shuffle_epi8,
    _mm512_slli_epi32, _mm512_sllv_epi32, _mm512_srli_epi32, _mm512_srlv_epi32,
    _mm512_storeu_si512, _mm512_sub_epi32, _mm512_xor_si512,
};

/// Rounds per tile (the output of one tile, `TILE · N/2` bytes = 16 KiB at 256 streams, stays
/// in L1). 128 rather than 64: half the driver's per-call work (lane copies, bounds) for
/// +3–4 % (`cargo bench -p tetrad-benches --bench rans`); 256 would fill a 32 KiB L1.
const TILE: usize = 128;
/// Pairs of 16-lane vectors kept in flight by the main kernel (`32·WIDE` streams).
const WIDE: usize = 2;

/// Whether this CPU runs the `avx512` arm: AVX-512 F and BW, and AVX2 for the gathers
/// (runtime detection under `std`, cached by std; the compile-time target features otherwise).
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

/// Whether this CPU runs the `avx512-vbmi` arm: AVX-512 F, BW, VBMI, VBMI2 and CD. Never under
/// Miri, which has no shims for `vpermb`, `vplzcntd`, `vpshldvd` or the 16-lane gather.
#[inline]
pub(in crate::decode) fn vbmi_detected() -> bool {
    #[cfg(feature = "std")]
    {
        !cfg!(miri)
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vbmi")
            && std::is_x86_feature_detected!("avx512vbmi2")
            && std::is_x86_feature_detected!("avx512cd")
    }
    #[cfg(not(feature = "std"))]
    {
        !cfg!(miri)
            && cfg!(all(
                target_feature = "avx512f",
                target_feature = "avx512bw",
                target_feature = "avx512vbmi",
                target_feature = "avx512vbmi2",
                target_feature = "avx512cd"
            ))
    }
}

/// Decodes `rounds` full rounds (the `decode::rounds_with` contract) with the `avx512` arm.
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
    rounds_as::<false>(table, data, x, pos, end, out, rounds);
}

/// [`rounds`] with the `avx512-vbmi` arm (reached through a [`crate::Arm::Avx512Vbmi`]
/// decoder; the scalar branch-free arm, should the CPU lack the features anyway).
pub(in crate::decode) fn rounds_vbmi(
    table: &Table,
    data: &[u8],
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    out: &mut [u8],
    rounds: usize,
) {
    rounds_as::<true>(table, data, x, pos, end, out, rounds);
}

/// The shared driver: tiles of rounds, groups of `32·WIDE` streams, the kernel of `VBMI`.
fn rounds_as<const VBMI: bool>(
    table: &Table,
    data: &[u8],
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    out: &mut [u8],
    rounds: usize,
) {
    let runs = if VBMI { vbmi_detected() } else { detected() };
    if !runs || data.len() > i32::MAX as usize {
        // Unreachable through the public API for the first reason; the gathers take i32
        // offsets for the second (a payload above 2 GiB).
        scalar::rounds_branch_free(table, data, x, pos, end, out, rounds);
        return;
    }
    let n = x.len();
    let start = table.start();
    // Boundary tables of the search's second stage: entry `s` of table `d` is `start[s + d]`
    // (only the entries the search reaches, `s ∈ {0, 4, 8, 12}`, matter).
    let ahead = |d: usize| -> [u32; SYMBOLS] {
        core::array::from_fn(|s| start.get(s + d).copied().unwrap_or(u32::MAX))
    };
    let k = Kernel {
        freq: *table.freq(),
        start: *start,
        ahead: [ahead(1), ahead(2), ahead(3), ahead(4)],
        sb: table.scale_bits(),
        buckets: if VBMI { Buckets::of(start, table.scale_bits()) } else { None },
        data,
    };
    let mut r0 = 0;
    while r0 < rounds {
        let t = TILE.min(rounds - r0);
        let tile = &mut out[r0 * n / 2..(r0 + t) * n / 2];
        let mut g = 0;
        while g + 32 * WIDE <= n {
            group::<WIDE, VBMI>(&k, table, x, pos, end, g, tile, t);
            g += 32 * WIDE;
        }
        while g + 32 <= n {
            group::<1, VBMI>(&k, table, x, pos, end, g, tile, t);
            g += 32;
        }
        while g < n {
            scalar::group::<2, 0>(table, data, x, pos, end, g, tile, t);
            g += 2;
        }
        r0 += t;
    }
}

/// What the kernels read: the table in kernel form and the data.
struct Kernel<'a> {
    freq: [u32; SYMBOLS],
    start: [u32; SYMBOLS],
    /// `start[s + 1]` .. `start[s + 4]` (the first three: the second stage of [`search`]; all
    /// four: [`Step::decode_bucketed`]).
    ahead: [[u32; SYMBOLS]; 4],
    sb: u32,
    /// The bucketed search's table, where the table allows it (`avx512-vbmi` only).
    buckets: Option<Buckets>,
    data: &'a [u8],
}

/// The bucketed slot → symbol search of the `avx512-vbmi` arm ([`Step::decode_bucketed`]): the
/// `M` slots cut into 128 buckets of `M / 128`, and per bucket the symbol of its first slot,
/// looked up by one `vpermt2b` on the slot's top 7 bits. The symbol of a slot is that symbol
/// plus the number of later starts at or below the slot, all of which lie inside the bucket;
/// when no bucket holds more than `ahead` ≤ [`BUCKET_AHEAD`] such starts, `ahead` compares
/// against `start[s + 1..=ahead]` (the [`Kernel::ahead`] tables, by `vpermd`) count them. That
/// is one lookup and one compare depth where [`search`] has two compare depths, and 5 (one
/// compare) to 15 (four) operations where it has 20.
#[derive(Clone, Copy)]
struct Buckets {
    /// `first[b]`: the symbol of slot `b · M / 128` (the largest `s` with `start[s]` at or
    /// below it).
    first: [u8; 128],
    /// The most starts any bucket holds past its first slot, at least 1 (at most
    /// [`BUCKET_AHEAD`]): the compares each step makes.
    ahead: usize,
}

/// The most starts inside one bucket, past its first slot, that [`Buckets`] can count.
const BUCKET_AHEAD: usize = 4;

impl Buckets {
    /// The buckets of a table with `2^sb` slots, or `None` where they cannot serve: fewer than
    /// 128 slots, or a bucket holding more than [`BUCKET_AHEAD`] starts past its first slot
    /// (many rare symbols side by side; [`search`] decodes those tables).
    fn of(start: &[u32; SYMBOLS], sb: u32) -> Option<Buckets> {
        let width = 1u32.checked_shl(sb.checked_sub(7)?)?;
        let mut first = [0u8; 128];
        let mut ahead = 1;
        // s: the largest symbol with start[s] ≤ lo; e: the first symbol after s whose start is
        // past the bucket. Both only move forward (starts are non-decreasing), so the whole
        // table costs about 128 + 2·16 steps: it is built on every call of the driver.
        let (mut s, mut e) = (0, 1);
        for (b, fb) in (0u32..).zip(first.iter_mut()) {
            let lo = b * width;
            while s + 1 < SYMBOLS && start[s + 1] <= lo {
                s += 1;
            }
            e = e.max(s + 1);
            while e < SYMBOLS && start[e] < lo + width {
                e += 1;
            }
            // The starts past lo inside the bucket: symbols s + 1 .. e.
            let inside = e - (s + 1);
            if inside > BUCKET_AHEAD {
                return None;
            }
            ahead = ahead.max(inside);
            #[allow(clippy::cast_possible_truncation)] // s < 16
            {
                *fb = s as u8;
            }
        }
        Some(Buckets { first, ahead })
    }
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
fn group<const P: usize, const VBMI: bool>(
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
        if VBMI {
            // Every arm's call has one contract: `rounds_vbmi` checked `vbmi_detected()`, so
            // the CPU runs AVX-512 F/BW/VBMI/VBMI2/CD; the stream and output bounds are those
            // stated for `kernel` below (`safe` lanes, `o`'s length); `AHEAD` only picks
            // how many bucket compares the kernel makes.
            match k.buckets.map(|b| b.ahead) {
                // SAFETY: the contract above, one bucket compare.
                Some(1) => unsafe { kernel_vbmi::<P, 1>(k, xs, qs, o, half, g / 2, r) },
                // SAFETY: the contract above, two bucket compares.
                Some(2) => unsafe { kernel_vbmi::<P, 2>(k, xs, qs, o, half, g / 2, r) },
                // SAFETY: the contract above, three bucket compares.
                Some(3) => unsafe { kernel_vbmi::<P, 3>(k, xs, qs, o, half, g / 2, r) },
                // SAFETY: the contract above, four bucket compares.
                Some(_) => unsafe { kernel_vbmi::<P, 4>(k, xs, qs, o, half, g / 2, r) },
                // SAFETY: the contract above, no bucket table.
                None => unsafe { kernel_vbmi::<P, 0>(k, xs, qs, o, half, g / 2, r) },
            }
        } else {
            // SAFETY: `detected()` was checked by `rounds`, so the CPU runs AVX-512 F/BW and
            // AVX2; every lane has at least 2·r bytes left in its stream (`safe`), so each of
            // the r steps reads only bytes `pos − 2 .. pos + 2` with `pos + 2 ≤ end ≤
            // data.len() ≤ i32::MAX`; `o` holds at least `(r − 1)·half + g/2 + 16P` bytes
            // (r ≤ t − done rounds of the tile, streams g..g + 32P ≤ N).
            unsafe { kernel::<P>(k, xs, qs, o, half, g / 2, r) };
        }
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

/// The search's boundaries in registers: `start[4]`, `start[8]`, `start[12]` broadcast, and
/// the three [`Kernel::ahead`] tables.
#[derive(Clone, Copy)]
struct Bounds {
    quarters: [__m512i; 3],
    /// `start[s + 1..=4]` ([`Kernel::ahead`]): the radix-4 search reads the first three.
    ahead: [__m512i; 4],
}

impl Bounds {
    /// Loads the kernel's bounds into registers.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    fn load(k: &Kernel<'_>) -> Bounds {
        let q = |s: usize| _mm512_set1_epi32(k.start[s].cast_signed());
        // SAFETY: each `ahead` table is 16 u32 = 64 bytes, an unaligned 512-bit load reads
        // exactly them.
        let a = |d: usize| unsafe { _mm512_loadu_si512(k.ahead[d].as_ptr().cast()) };
        Bounds { quarters: [q(4), q(8), q(12)], ahead: [a(0), a(1), a(2), a(3)] }
    }
}

/// Slot → symbol for 16 lanes: the largest `s` with `start[s] ≤ slot`, by a radix-4 search.
/// The quarter `s1 ∈ {0, 4, 8, 12}` counts the broadcast bounds `start[4]`, `start[8]`,
/// `start[12]` at or below the slot, the offset in it the bounds `start[s1 + 1..=3]` (three
/// `vpermd` by `s1`). Starts are non-decreasing, so each stage's three masks are nested, and
/// the constants `4, 12, 4` (`1, 3, 1`) joined by XOR count them: `4`, `4 ^ 12 = 8`, `8 ^ 4 = 12`.
/// Both stages' compares are independent of each other, so the dependent chain is two compare
/// depths (where a binary search is four).
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn search(slot: __m512i, b: &Bounds) -> __m512i {
    let quarter = nested_count(slot, &b.quarters, &[4, 12, 4]);
    let ahead = [0, 1, 2].map(|d| _mm512_permutexvar_epi32(quarter, b.ahead[d]));
    _mm512_or_si512(quarter, nested_count(slot, &ahead, &[1, 3, 1]))
}

/// `weights` joined by XOR over the nested bounds (`bounds[0] ≤ bounds[1] ≤ …` lane by lane)
/// at or below `slot`: with a prefix of `[1, 3, 1, 7]` the number of them (`1`, `1 ^ 3 = 2`,
/// `2 ^ 1 = 3`, `3 ^ 7 = 4`), with `[4, 12, 4]` four times that. Its callers' lengths are
/// constants, so the fold unrolls.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn nested_count(slot: __m512i, bounds: &[__m512i], weights: &[i32]) -> __m512i {
    bounds.iter().zip(weights).fold(_mm512_setzero_si512(), |acc, (&bound, &weight)| {
        let ge = _mm512_cmpge_epu32_mask(slot, bound);
        _mm512_xor_si512(acc, _mm512_maskz_mov_epi32(ge, _mm512_set1_epi32(weight)))
    })
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
    let (mut xv, mut qv) = load_lanes::<P>(xs, qs);
    let step = Step::load(k);
    let l23 = _mm512_set1_epi32(1 << 23);
    let l15 = _mm512_set1_epi32(1 << 15);
    let eight = _mm512_set1_epi32(8);
    let thirty_two = _mm512_set1_epi32(32);
    let be_top = be_top();
    let data = k.data.as_ptr().cast::<i32>();
    for round in 0..r {
        let mut sym = [_mm512_setzero_si512(); 2 * WIDE];
        for v in 0..2 * P {
            let (sv, xn) = step.decode(xv[v]);
            sym[v] = sv;
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
            // SAFETY: the same bound for the high eight lanes of q: every 4-byte read lies inside
            // `k.data`.
            let whi = unsafe { _mm256_i32gather_epi32::<1>(data, qhi) };
            let w = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(wlo), whi);
            let w = _mm512_shuffle_epi8(w, be_top);
            let fill = _mm512_srlv_epi32(w, _mm512_sub_epi32(thirty_two, sh));
            xv[v] = _mm512_or_si512(_mm512_sllv_epi32(xn, sh), fill);
            qv[v] = _mm512_add_epi32(q, _mm512_srli_epi32::<3>(sh));
        }
        emit::<P>(&sym, out, round * half + ob);
    }
    store_lanes::<P>(&xv, &qv, xs, qs);
}

/// [`kernel`] for the `avx512-vbmi` arm: the same step, with the refill from the state's
/// leading zeros (`vplzcntd`; `vpermb` on [`SHIFT_OF_ZEROS`] gives `8k`), one 16-lane gather
/// and one `vpshldvd` for `x = (x << 8k) | (w >> (32 − 8k))`.
///
/// # Safety
/// As for [`kernel`], with AVX-512 F/BW/VBMI/VBMI2/CD instead of F/BW and AVX2.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,avx512cd")]
unsafe fn kernel_vbmi<const P: usize, const AHEAD: usize>(
    k: &Kernel<'_>,
    xs: &mut [u32; 32 * WIDE],
    qs: &mut [u32; 32 * WIDE],
    out: &mut [u8],
    half: usize,
    ob: usize,
    r: usize,
) {
    let (mut xv, mut qv) = load_lanes::<P>(xs, qs);
    let step = Step::load(k);
    let buckets = BucketRegs::load(k);
    // SAFETY: 64 bytes; loadu has no alignment need.
    let shift_of_zeros = unsafe { _mm512_loadu_si512(SHIFT_OF_ZEROS.as_ptr().cast()) };
    let be_top = be_top();
    let data = k.data.as_ptr().cast::<i32>();
    let step_of = |x: __m512i| {
        if AHEAD > 0 { step.decode_bucketed::<AHEAD>(x, &buckets) } else { step.decode(x) }
    };
    // 8k: byte 0 of each lane indexes the table by the leading-zero count (at most 32); bytes
    // 1..3 are zero and index entry 0, which is 0.
    let shift_of = |xn: __m512i| _mm512_permutexvar_epi8(_mm512_lzcnt_epi32(xn), shift_of_zeros);
    // Four rounds per pair of gathers: a lane takes at most 2 bytes a round, so the 8 bytes at
    // its position serve four steps, each taking what the ones before it left. The window is
    // big-endian in two vectors, `hi` (the next 4 bytes) and `lo` (the 4 after them).
    // SAFETY: (both) 64-byte tables; loadu has no alignment need.
    let window_hi = unsafe { _mm512_loadu_si512(WINDOW_HI.as_ptr().cast()) };
    // SAFETY: `WINDOW_LO` is a 64-byte table; loadu has no alignment need.
    let window_lo = unsafe { _mm512_loadu_si512(WINDOW_LO.as_ptr().cast()) };
    let base = data.cast::<u8>().wrapping_add(2).cast::<i64>();
    let mut round = 0;
    while round + 4 <= r {
        let mut hi = [_mm512_setzero_si512(); 2 * WIDE];
        let mut lo = [_mm512_setzero_si512(); 2 * WIDE];
        for v in 0..2 * P {
            let q = qv[v];
            let (qa, qb) = (_mm512_castsi512_si256(q), _mm512_extracti64x4_epi64::<1>(q));
            // SAFETY: (both gathers) q + 2 = pos and pos + 8 ≤ end ≤ data.len() (the caller's
            // 2·r bytes per lane, less 2 per earlier round at most, with four rounds left), and
            // q + 2 < 2^31: every 8-byte read lies inside `k.data`.
            let a = unsafe { _mm512_i32gather_epi64::<1>(qa, base) };
            // SAFETY: the same bound for the high eight lanes of q: every 8-byte read lies inside
            // `k.data`.
            let b = unsafe { _mm512_i32gather_epi64::<1>(qb, base) };
            hi[v] = _mm512_permutex2var_epi8(a, window_hi, b);
            lo[v] = _mm512_permutex2var_epi8(a, window_lo, b);
        }
        // The bits each lane's window gave up over the four steps.
        let mut used = [_mm512_setzero_si512(); 2 * WIDE];
        for j in 0..4 {
            let mut sym = [_mm512_setzero_si512(); 2 * WIDE];
            for v in 0..2 * P {
                let (sv, xn) = step_of(xv[v]);
                let sh = shift_of(xn);
                xv[v] = _mm512_shldv_epi32(xn, hi[v], sh);
                hi[v] = _mm512_shldv_epi32(hi[v], lo[v], sh);
                lo[v] = _mm512_sllv_epi32(lo[v], sh);
                used[v] = _mm512_add_epi32(used[v], sh);
                sym[v] = sv;
            }
            emit::<P>(&sym, out, (round + j) * half + ob);
        }
        for v in 0..2 * P {
            qv[v] = _mm512_add_epi32(qv[v], _mm512_srli_epi32::<3>(used[v]));
        }
        round += 4;
    }
    while round < r {
        let mut sym = [_mm512_setzero_si512(); 2 * WIDE];
        for v in 0..2 * P {
            let q = qv[v];
            // SAFETY: q + 4 = pos + 2 ≤ end ≤ data.len() (the caller's 2·r bytes per lane, less
            // 2 per earlier round at most), q ≥ 2 since pos ≥ 4, and q < 2^31: every 4-byte
            // read lies inside `k.data`.
            let w = unsafe { _mm512_i32gather_epi32::<1>(q, data) };
            let (sv, xn) = step_of(xv[v]);
            sym[v] = sv;
            let sh = shift_of(xn);
            let w = _mm512_shuffle_epi8(w, be_top);
            xv[v] = _mm512_shldv_epi32(xn, w, sh);
            qv[v] = _mm512_add_epi32(q, _mm512_srli_epi32::<3>(sh));
        }
        emit::<P>(&sym, out, round * half + ob);
        round += 1;
    }
    store_lanes::<P>(&xv, &qv, xs, qs);
}

/// The first `2P` vectors of lane states and positions (the rest stay zero).
#[target_feature(enable = "avx512f")]
#[inline]
fn load_lanes<const P: usize>(
    xs: &[u32; 32 * WIDE],
    qs: &[u32; 32 * WIDE],
) -> ([__m512i; 2 * WIDE], [__m512i; 2 * WIDE]) {
    let mut xv = [_mm512_setzero_si512(); 2 * WIDE];
    let mut qv = [_mm512_setzero_si512(); 2 * WIDE];
    for v in 0..2 * P {
        // SAFETY: lanes 16v..16v+16 of a 32·WIDE-lane array (v < 2P ≤ 2·WIDE); loadu has no
        // alignment need.
        xv[v] = unsafe { _mm512_loadu_si512(xs[16 * v..].as_ptr().cast()) };
        // SAFETY: lanes 16v..16v+16 of the 32·WIDE-lane `qs` (v < 2P ≤ 2·WIDE); loadu has no
        // alignment need.
        qv[v] = unsafe { _mm512_loadu_si512(qs[16 * v..].as_ptr().cast()) };
    }
    (xv, qv)
}

/// Stores what [`load_lanes`] loaded back.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_lanes<const P: usize>(
    xv: &[__m512i; 2 * WIDE],
    qv: &[__m512i; 2 * WIDE],
    xs: &mut [u32; 32 * WIDE],
    qs: &mut [u32; 32 * WIDE],
) {
    for v in 0..2 * P {
        // SAFETY: lanes 16v..16v+16 of a 32·WIDE-lane array; storeu has no alignment need.
        unsafe { _mm512_storeu_si512(xs[16 * v..].as_mut_ptr().cast(), xv[v]) };
        // SAFETY: lanes 16v..16v+16 of the 32·WIDE-lane `qs`; storeu has no alignment need.
        unsafe { _mm512_storeu_si512(qs[16 * v..].as_mut_ptr().cast(), qv[v]) };
    }
}

/// What one decode step reads, in registers: the `freq`/`start` `vpermd` tables, the search
/// bounds, the scale shift and the slot mask.
struct Step {
    freq: __m512i,
    start: __m512i,
    bounds: Bounds,
    scale: __m512i,
    mask: __m512i,
}

impl Step {
    /// Loads the kernel's table into registers.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    fn load(k: &Kernel<'_>) -> Step {
        // SAFETY: `freq` is 16 u32; loadu has no alignment need.
        let freq = unsafe { _mm512_loadu_si512(k.freq.as_ptr().cast()) };
        // SAFETY: `start` is 16 u32; loadu has no alignment need.
        let start = unsafe { _mm512_loadu_si512(k.start.as_ptr().cast()) };
        Step {
            freq,
            start,
            bounds: Bounds::load(k),
            scale: _mm512_set1_epi32(k.sb.cast_signed()),
            mask: _mm512_set1_epi32(((1u32 << k.sb) - 1).cast_signed()),
        }
    }

    /// One decode step of 16 lanes before the refill: `(symbol, freq·(x >> sb) + slot − start)`.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    fn decode(&self, x: __m512i) -> (__m512i, __m512i) {
        let slot = _mm512_and_si512(x, self.mask);
        self.finish(x, slot, search(slot, &self.bounds))
    }

    /// [`Step::decode`] with the bucketed search ([`Buckets`]; the kernel's table has them).
    /// The symbol's bytes 1..3 are left as the lookup made them (table bytes, each below 16):
    /// every later use of it reads its low 4 bits (`vpermd`) or its low byte (the output's
    /// `vpmovdb`), and byte 0 is the symbol.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    #[inline]
    fn decode_bucketed<const AHEAD: usize>(
        &self,
        x: __m512i,
        b: &BucketRegs,
    ) -> (__m512i, __m512i) {
        let slot = _mm512_and_si512(x, self.mask);
        // Byte 0 of each lane, bits 0..7: the slot's top 7 bits (x bits sb − 7 .. sb).
        let bucket = _mm512_srlv_epi32(x, b.shift);
        let first = _mm512_permutex2var_epi8(b.lo, bucket, b.hi);
        // The starts at or below the slot among the next AHEAD (nested: each compare's lanes
        // are a subset of the one before); one compare is a masked add.
        let s = if AHEAD == 1 {
            let ge = _mm512_cmpge_epu32_mask(
                slot,
                _mm512_permutexvar_epi32(first, self.bounds.ahead[0]),
            );
            _mm512_mask_add_epi32(first, ge, first, _mm512_set1_epi32(1))
        } else {
            let bounds = self.bounds.ahead.map(|t| _mm512_permutexvar_epi32(first, t));
            _mm512_add_epi32(first, nested_count(slot, &bounds[..AHEAD], &[1, 3, 1, 7][..AHEAD]))
        };
        self.finish(x, slot, s)
    }

    /// The rest of the step once the symbol `s` of `slot` is known.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    fn finish(&self, x: __m512i, slot: __m512i, s: __m512i) -> (__m512i, __m512i) {
        let f = _mm512_permutexvar_epi32(s, self.freq);
        let st = _mm512_permutexvar_epi32(s, self.start);
        let next = _mm512_add_epi32(
            _mm512_mullo_epi32(f, _mm512_srlv_epi32(x, self.scale)),
            _mm512_sub_epi32(slot, st),
        );
        (s, next)
    }
}

/// [`Buckets`] in registers: the 128-byte table as the two halves of a `vpermt2b`, and the
/// shift that brings a state's top 7 slot bits to the bottom of its lane (zero tables where
/// the kernel has none; the bucketed kernel is then never run).
struct BucketRegs {
    lo: __m512i,
    hi: __m512i,
    shift: __m512i,
}

impl BucketRegs {
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn load(k: &Kernel<'_>) -> BucketRegs {
        let first = k.buckets.map_or([0; 128], |b| b.first);
        // SAFETY: 64 bytes; loadu has no alignment need.
        let half = |h: &[u8; 64]| unsafe { _mm512_loadu_si512(h.as_ptr().cast()) };
        let (halves, _) = first.as_chunks::<64>();
        let (lo, hi) = (half(&halves[0]), half(&halves[1]));
        #[allow(clippy::cast_possible_wrap)] // sb ≤ 15
        let shift = _mm512_set1_epi32(k.sb.saturating_sub(7) as i32);
        BucketRegs { lo, hi, shift }
    }
}

/// `8k` by the leading zeros of a state after its decode step, which is in `[2^8, 2^32)`:
/// 0–8 zeros (`x ≥ 2^23`) need no byte, 9–16 one, 17–24 two; larger counts cannot occur and
/// map to two, so a refill never reads more than the driver's 2 bytes per round.
static SHIFT_OF_ZEROS: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut z = 0;
    while z < 64 {
        t[z] = if z <= 8 {
            0
        } else if z <= 16 {
            8
        } else {
            16
        };
        z += 1;
    }
    t
};

/// `vpermt2b` indices that take dword lane `i`'s window from qword `i` of the two gathers
/// (bytes `8i .. 8i + 8` of the 128-byte pair, the stream's bytes `p .. p + 8`): `WINDOW_HI`
/// the big-endian dword of bytes `p .. p + 4` (byte `k` of the lane is byte `3 − k` of the
/// qword), `WINDOW_LO` that of `p + 4 .. p + 8` (`7 − k`). One permute each does the byte swap
/// and the split into dword lanes.
static WINDOW_HI: [u8; 64] = window_index(3);
/// See [`WINDOW_HI`].
static WINDOW_LO: [u8; 64] = window_index(7);

/// Byte `4i + k` ← byte `8i + top − k` of the gathers' 128 bytes.
const fn window_index(top: u8) -> [u8; 64] {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        #[allow(clippy::cast_possible_truncation)] // i < 64
        let (lane, k) = ((i / 4) as u8, (i % 4) as u8);
        t[i] = 8 * lane + top - k;
        i += 1;
    }
    t
}

/// Bytes `[p−2, p−1, p, p+1]` of a lane → `[0, 0, p+1, p]`: the big-endian pair at the top.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn be_top() -> __m512i {
    // A static table: built with `array::from_fn` here, the mask cost a byte loop (and a
    // store-forwarding stall) on every kernel call.
    static BE_TOP: [i8; 64] = {
        const Z: i8 = -128;
        const BLOCK: [i8; 16] = [Z, Z, 3, 2, Z, Z, 7, 6, Z, Z, 11, 10, Z, Z, 15, 14];
        let mut m = [0i8; 64];
        let mut i = 0;
        while i < 64 {
            m[i] = BLOCK[i % 16];
            i += 1;
        }
        m
    };
    // SAFETY: a 64-byte array; loadu has no alignment need.
    unsafe { _mm512_loadu_si512(BE_TOP.as_ptr().cast()) }
}

/// Writes one round's `16P` output bytes at `at`: streams `2i, 2i + 1` of pair `p` become
/// byte `16p + i` (even stream in the low nibble).
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn emit<const P: usize>(sym: &[__m512i; 2 * WIDE], out: &mut [u8], at: usize) {
    for p in 0..P {
        let b = _mm512_or_si512(sym[2 * p], _mm512_slli_epi32::<4>(sym[2 * p + 1]));
        let bytes = _mm512_cvtepi32_epi8(b);
        let o = &mut out[at + 16 * p..][..16];
        // SAFETY: `o` is exactly 16 bytes; storeu has no alignment need.
        unsafe { _mm_storeu_si128(o.as_mut_ptr().cast(), bytes) };
    }
}

#[cfg(test)]
mod tests {
    //! [`Buckets`] against the table itself: wherever it is built, the bucket's first symbol
    //! plus the starts at or below the slot among the next `ahead` gives every slot's symbol;
    //! where it is refused, some bucket does hold more than [`BUCKET_AHEAD`] starts. The SIMD
    //! kernels that use it are checked against the scalar decoder by the record tests
    //! (`tests/arms.rs`), whose tables reach every `ahead` and the refusal.
    use super::{BUCKET_AHEAD, Buckets, SYMBOLS};
    use crate::table::Table;
    use std::vec::Vec;

    /// Tables with 1, 2, 3 and 4 starts inside the first bucket, a single symbol, many rare
    /// symbols, and pseudo-random ones, at scale bits 7..=15.
    fn tables() -> Vec<Table> {
        let mut out = Vec::new();
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for sb in 7..=15u32 {
            let m = 1u32 << sb;
            let w = m / 128;
            let mut edge = |rare: &[u32]| {
                let mut f = [0u32; SYMBOLS];
                f[..rare.len()].copy_from_slice(rare);
                f[15] = m - rare.iter().sum::<u32>();
                out.push(Table::from_freq(sb, &f).unwrap());
            };
            // k rare symbols, all inside bucket 0, then the rest in symbol 15.
            for k in 1..=5 {
                edge(&[1; 5][..k]);
            }
            edge(&[w, w, w]); // starts exactly on bucket boundaries
            edge(&[w - 1, 1, 1]);
            let mut single = [0u32; SYMBOLS];
            single[8] = m;
            out.push(Table::from_freq(sb, &single).unwrap());
            for _ in 0..200 {
                let mut h = [0u64; SYMBOLS];
                for v in &mut h {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    // Mostly common symbols, some rare or absent.
                    *v = match seed % 8 {
                        0 => 0,
                        1 => seed >> 60,
                        _ => (seed >> 40) % 5000,
                    };
                }
                h[(seed >> 8) as usize % SYMBOLS] += 1;
                out.push(Table::from_histogram(sb, &h).unwrap());
            }
        }
        out
    }

    #[test]
    fn buckets_give_every_slots_symbol_or_are_refused_for_a_reason() {
        let (mut built, mut refused, mut by_ahead) = (0, 0, [0; BUCKET_AHEAD + 1]);
        for t in tables() {
            let (start, sb) = (t.start(), t.scale_bits());
            let width = 1usize << (sb - 7);
            match Buckets::of(start, sb) {
                Some(b) => {
                    built += 1;
                    by_ahead[b.ahead] += 1;
                    assert!((1..=BUCKET_AHEAD).contains(&b.ahead));
                    for slot in 0..1usize << sb {
                        let first = usize::from(b.first[slot / width]);
                        let more = (1..=b.ahead)
                            .filter(|d| start.get(first + d).is_some_and(|&s| s as usize <= slot))
                            .count();
                        assert_eq!(
                            first + more,
                            usize::from(t.symbol(slot)),
                            "sb {sb} slot {slot}"
                        );
                    }
                }
                None => {
                    refused += 1;
                    let width = 1u32 << (sb - 7);
                    let crowded = (0..128).any(|b| {
                        let lo = b * width;
                        let inside = start.iter().filter(|&&s| s > lo && s < lo + width);
                        inside.count() > BUCKET_AHEAD
                    });
                    assert!(crowded, "refused without a crowded bucket: {:?}", t.freq());
                }
            }
        }
        assert!(built > 0 && refused > 0, "built {built}, refused {refused}");
        assert!(by_ahead[1..].iter().all(|&n| n > 0), "ahead counts {by_ahead:?}");
    }

    #[test]
    fn too_few_slots_for_buckets_are_refused() {
        for sb in 1..7 {
            let mut f = [0u32; SYMBOLS];
            f[0] = 1 << sb;
            assert!(Buckets::of(Table::from_freq(sb, &f).unwrap().start(), sb).is_none());
        }
    }
}
