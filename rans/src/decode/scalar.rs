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

use crate::stream::{step, step_branch_free};
use crate::table::{MAX_SLOTS, SYMBOLS, Table};

/// Streams decoded together by the branch-free kernel.
const GROUP: usize = 8;
/// Rounds per tile of the branch-free kernel.
const TILE: usize = 64;

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
        let mut g = 0;
        while g + GROUP <= n {
            group::<GROUP>(table, data, x, pos, end, g, tile, t);
            g += GROUP;
        }
        while g < n {
            group::<2>(table, data, x, pos, end, g, tile, t);
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
/// 2-byte window. Otherwise the general [`step_branch_free`] runs.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn group<const G: usize>(
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
        let need = ps[l] + 2 * t;
        fast &= need <= end[g + l] as usize && need + 2 <= data.len();
    }
    if fast {
        let sb = table.scale_bits();
        let mask = table.m() - 1;
        let sym = table.slot_symbols_padded();
        let freq = table.freq();
        let start = table.start();
        // Proven above: every read below stays inside `data`.
        let data = &data[..ps.iter().max().copied().unwrap_or(0) + 2 * t + 2];
        let step = |x: &mut u32, p: &mut usize| -> u8 {
            let slot = *x & mask;
            let s = sym[slot as usize & (MAX_SLOTS - 1)];
            let si = usize::from(s) & (SYMBOLS - 1);
            let v = freq[si] * (*x >> sb) + (slot - start[si]);
            let k = u32::from(v < 1 << 23) + u32::from(v < 1 << 15);
            let w = u32::from(u16::from_be_bytes([data[*p], data[*p + 1]]));
            // Two shifts so k = 0 never shifts by 32: (w·2^16) >> (32 − 8k).
            *x = (v << (8 * k)) | (((w << 16) >> 1) >> (31 - 8 * k));
            *p += k as usize;
            s
        };
        for r in 0..t {
            let o = &mut tile[r * half + g / 2..][..G / 2];
            for (p, byte) in o.iter_mut().enumerate() {
                let (lo, hi) = xs.split_at_mut(2 * p + 1);
                let (plo, phi) = ps.split_at_mut(2 * p + 1);
                let a = step(&mut lo[2 * p], &mut plo[2 * p]);
                let b = step(&mut hi[0], &mut phi[0]);
                *byte = a | (b << 4);
            }
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
