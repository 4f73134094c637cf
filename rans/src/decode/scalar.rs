//! The two scalar arms: the reference and the branch-free kernel.
//!
//! Both decode whole rounds of an even number of streams (two streams make one output byte:
//! the even stream's symbol in the low nibble). The reference walks the streams in order with
//! the spec's refill loop; its one data-dependent branch per symbol (refill or not) is what
//! limits it, since at ~2.9 bits per symbol the branch is close to a coin flip.
//!
//! The branch-free kernel removes that branch: `k = [x<2^23] + [x<2^15] + [x<2^7]` bytes are
//! shifted in from one big-endian 4-byte window, `k` capped by the bytes the stream has left.
//! It keeps a group of [`GROUP`] streams in locals so their independent dependency chains
//! overlap in the out-of-order core, and walks the rounds in tiles of [`TILE`] so one tile of
//! output (`TILE · N/2` bytes) stays in L1 while every group passes over it.
//!
//! Within a tile where no stream of the group can run out of bytes (each step reads at most 2,
//! so `2·TILE` bytes left suffice), the cap on `k` is provably inactive and is skipped, and
//! each stream reads from a fixed-size window so the compiler can drop the bounds checks; the
//! format's 14 scale bits get their own instance with the shift and mask as constants.
//! Elsewhere (the last tiles of each stream) the general capped step runs. It runs about 3× the
//! reference arm (`tetrad bench codecs`; docs/PERFORMANCE.md).

use crate::stream::{step, step_branch_free};
use crate::table::{FORMAT_SCALE_BITS, MAX_SCALE_BITS, SYMBOLS, Table};

/// Streams decoded together by the branch-free kernel.
const GROUP: usize = 8;
/// Rounds per tile of the branch-free kernel.
const TILE: usize = 64;
/// Bytes of the per-stream read window of the fast path (≥ 2·TILE + 2, a power of two).
const WINDOW: usize = 256;

/// The reference arm: round by round, stream by stream, [`step`].
pub(super) fn rounds_reference(
    table: &Table,
    data: &[u8],
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    out: &mut [u8],
    rounds: usize,
) {
    let half = x.len() / 2;
    for o in out.chunks_exact_mut(half).take(rounds) {
        for (p, byte) in o.iter_mut().enumerate() {
            let (i, k) = (2 * p, 2 * p + 1);
            let mut pi = pos[i] as usize;
            let mut pk = pos[k] as usize;
            let a = step(table, &mut x[i], data, &mut pi, end[i] as usize);
            let b = step(table, &mut x[k], data, &mut pk, end[k] as usize);
            *byte = a | (b << 4);
            #[allow(clippy::cast_possible_truncation)] // ≤ end, a u32.
            {
                pos[i] = pi as u32;
                pos[k] = pk as u32;
            }
        }
    }
}

/// The branch-free arm: tiles of rounds, groups of streams in registers.
pub(super) fn rounds_branch_free(
    table: &Table,
    data: &[u8],
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    out: &mut [u8],
    rounds: usize,
) {
    let n = x.len();
    let mut r0 = 0;
    while r0 < rounds {
        let t = TILE.min(rounds - r0);
        let tile = &mut out[r0 * n / 2..(r0 + t) * n / 2];
        // The format's 14 scale bits get a kernel with the shift and mask as constants.
        let format = table.scale_bits() == FORMAT_SCALE_BITS;
        let mut g = 0;
        while g + GROUP <= n {
            if format {
                group::<GROUP, FORMAT_SCALE_BITS>(table, data, x, pos, end, g, tile, t);
            } else {
                group::<GROUP, 0>(table, data, x, pos, end, g, tile, t);
            }
            g += GROUP;
        }
        while g < n {
            group::<2, 0>(table, data, x, pos, end, g, tile, t);
            g += 2;
        }
        r0 += t;
    }
}

/// `t` rounds of streams `g..g+G` (G even), writing bytes `g/2..g/2 + G/2` of each round.
///
/// When every stream of the group has at least `2t` bytes left (and the data 2 bytes of slack
/// after that), no refill in this tile can be capped: every state is in `[L, 2^32)` before each
/// step, so `x ≥ 2^8` after it and `k ≤ 2`. The fast loop then skips the cap and reads a
/// 2-byte window. Otherwise the general [`step_branch_free`] runs. `SB` is the table's scale
/// bits when known at compile time, 0 when read from the table.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn group<const G: usize, const SB: u32>(
    table: &Table,
    data: &[u8],
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    g: usize,
    tile: &mut [u8],
    t: usize,
) {
    let half = x.len() / 2;
    let mut xs = [0u32; G];
    let mut ps = [0usize; G];
    let mut fast = true;
    for l in 0..G {
        xs[l] = x[g + l];
        ps[l] = pos[g + l] as usize;
        fast &= ps[l] + 2 * t <= end[g + l] as usize && ps[l] + WINDOW < data.len();
    }
    if fast {
        let sb = if SB == 0 { table.scale_bits() } else { SB };
        // Known bits: mask < 2^15, so the slot index needs no bounds check.
        let mask =
            if SB == 0 { (table.m() - 1) & ((1 << MAX_SCALE_BITS) - 1) } else { (1 << SB) - 1 };
        let sym = table.slot_symbols_padded();
        let freq = table.freq();
        let start = table.start();
        // In this tile each stream reads at most 2t + 2 ≤ WINDOW bytes from where it starts,
        // so a fixed-size window per stream, indexed modulo its size, holds every read (the
        // modulo is a no-op that lets the compiler drop the bounds checks).
        let mut ws = [&[0u8; WINDOW + 1]; G];
        let mut qs = [0usize; G];
        for l in 0..G {
            ws[l] = data[ps[l]..=ps[l] + WINDOW].try_into().expect("window fits: checked above");
        }
        let step = |x: &mut u32, q: &mut usize, w: &[u8; WINDOW + 1]| -> u8 {
            let slot = *x & mask;
            let s = sym[slot as usize];
            let si = usize::from(s) & (SYMBOLS - 1);
            let v = freq[si] * (*x >> sb) + (slot - start[si]);
            let k = u32::from(v < 1 << 23) + u32::from(v < 1 << 15);
            let i = *q & (WINDOW - 1);
            let b = u64::from(u16::from_be_bytes([w[i], w[i + 1]]));
            // (v·2^16 + next two bytes) >> (16 − 8k): v shifted left by k bytes, k bytes in.
            #[allow(clippy::cast_possible_truncation)] // < 2^32 since v < 2^(32 − 8k).
            {
                *x = (((u64::from(v) << 16) | b) >> (16 - 8 * k)) as u32;
            }
            *q += k as usize;
            s
        };
        for r in 0..t {
            let o = &mut tile[r * half + g / 2..][..G / 2];
            for (p, byte) in o.iter_mut().enumerate() {
                let (lo, hi) = xs.split_at_mut(2 * p + 1);
                let (qlo, qhi) = qs.split_at_mut(2 * p + 1);
                let a = step(&mut lo[2 * p], &mut qlo[2 * p], ws[2 * p]);
                let b = step(&mut hi[0], &mut qhi[0], ws[2 * p + 1]);
                *byte = a | (b << 4);
            }
        }
        for l in 0..G {
            ps[l] += qs[l];
        }
    } else {
        let mut es = [0usize; G];
        for l in 0..G {
            es[l] = end[g + l] as usize;
        }
        for r in 0..t {
            let o = &mut tile[r * half + g / 2..][..G / 2];
            for (p, byte) in o.iter_mut().enumerate() {
                let a = step_branch_free(table, &mut xs[2 * p], data, &mut ps[2 * p], es[2 * p]);
                let b = step_branch_free(
                    table,
                    &mut xs[2 * p + 1],
                    data,
                    &mut ps[2 * p + 1],
                    es[2 * p + 1],
                );
                *byte = a | (b << 4);
            }
        }
    }
    for l in 0..G {
        x[g + l] = xs[l];
        #[allow(clippy::cast_possible_truncation)] // ≤ end, a u32.
        {
            pos[g + l] = ps[l] as u32;
        }
    }
}
