//! The NEON record decode arm: 4 streams per 128-bit vector, 4 vectors (16 streams) in flight.
//!
//! NEON has no gather, so the two table-driven parts of a step are per-lane loads: the slot →
//! symbol byte (and the symbol's `freq | start << 16` word) and the two candidate refill bytes
//! (`pos`, `pos + 1`, read as one big-endian 16-bit value). The arithmetic is vectorised: the
//! slot mask, `x = freq·(x >> sb) + slot − start` (`vmlaq_u32`), the refill count
//! `k = [x<2^23] + [x<2^15]` (two compares), and the merge `x << 8k | bytes >> (16 − 8k)` with
//! variable shifts (`vshlq_u32`, negative counts shift right).
//!
//! As in the AVX2 arm, the kernel never caps `k`: the safe driver runs it only for as many
//! rounds as every lane has 2 bytes per round left, and hands the rest (a stream's last bytes)
//! to the scalar branch-free group. The lane loads are ordinary bounds-checked slice reads;
//! the only `unsafe` is the vector load/store of the state arrays.

use crate::decode::scalar;
use crate::table::{MAX_SLOTS, SYMBOLS, Table};
use core::arch::aarch64::{
    uint32x4_t, vaddq_u32, vandq_u32, vcltq_u32, vdupq_n_s32, vdupq_n_u32, vgetq_lane_u32,
    vld1q_u32, vmlaq_u32, vorrq_u32, vreinterpretq_s32_u32, vshlq_n_u32, vshlq_u32, vst1q_u32,
    vsubq_s32, vsubq_u32,
};

/// Rounds per tile (the output of one tile, `TILE · N/2` bytes, stays in L1).
const TILE: usize = 64;
/// Vectors of 4 lanes kept in flight by the main kernel.
const WIDE: usize = 4;

/// Whether this CPU runs NEON (runtime detection under `std`; the compile-time target features
/// otherwise).
#[inline]
pub(in crate::decode) fn detected() -> bool {
    #[cfg(feature = "std")]
    {
        std::arch::is_aarch64_feature_detected!("neon")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(target_feature = "neon")
    }
}

/// Decodes `rounds` full rounds (the `decode::rounds_with` contract) with NEON.
///
/// Only reached through a [`crate::Arm::Neon`] decoder, which checked availability; should the
/// CPU lack NEON anyway, the scalar branch-free arm runs instead (identical output).
pub(in crate::decode) fn rounds(
    table: &Table,
    data: &[u8],
    x: &mut [u32],
    pos: &mut [u32],
    end: &[u32],
    out: &mut [u8],
    rounds: usize,
) {
    if !detected() {
        scalar::rounds_branch_free(table, data, x, pos, end, out, rounds);
        return;
    }
    let n = x.len();
    let mut lut = [0u32; SYMBOLS];
    for (s, e) in lut.iter_mut().enumerate() {
        // freq ≤ 2^15 and start < 2^15: both fit in 16 bits.
        *e = table.freq()[s] | (table.start()[s] << 16);
    }
    let k = Kernel { sym: table.slot_symbols_padded(), lut, sb: table.scale_bits(), data };
    let mut r0 = 0;
    while r0 < rounds {
        let t = TILE.min(rounds - r0);
        let tile = &mut out[r0 * n / 2..(r0 + t) * n / 2];
        let mut g = 0;
        while g + 4 * WIDE <= n {
            group::<WIDE>(&k, table, x, pos, end, g, tile, t);
            g += 4 * WIDE;
        }
        while g + 8 <= n {
            group::<2>(&k, table, x, pos, end, g, tile, t);
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
    sym: &'a [u8; MAX_SLOTS + crate::table::SLOT_SLACK],
    lut: [u32; SYMBOLS],
    sb: u32,
    data: &'a [u8],
}

/// `t` rounds of streams `g..g + 4V` (V even): NEON for as many rounds as every lane has 2
/// bytes per round left, repeatedly, then the scalar group for the rest.
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
        let safe = (g..g + 4 * V).map(|l| (end[l] - pos[l]) / 2).min().unwrap_or(0) as usize;
        let r = safe.min(t - done);
        if r == 0 {
            break;
        }
        let o = &mut tile[done * half..];
        let mut xs = [0u32; 4 * WIDE];
        let mut qs = [0u32; 4 * WIDE];
        xs[..4 * V].copy_from_slice(&x[g..g + 4 * V]);
        qs[..4 * V].copy_from_slice(&pos[g..g + 4 * V]);
        // SAFETY: `rounds` checked `detected()`, so the CPU runs NEON; the kernel itself is
        // safe code apart from that (bounds-checked reads, 2·r bytes left per lane).
        unsafe { kernel::<V>(k, &mut xs, &mut qs, o, half, g / 2, r) };
        x[g..g + 4 * V].copy_from_slice(&xs[..4 * V]);
        pos[g..g + 4 * V].copy_from_slice(&qs[..4 * V]);
        done += r;
    }
    if done < t {
        let rest = &mut tile[done * half..];
        for sub in (g..g + 4 * V).step_by(8) {
            scalar::group::<8, 0>(table, k.data, x, pos, end, sub, rest, t - done);
        }
    }
}

/// `r` rounds of `4V` lanes (states `xs`, read positions `qs`, each lane with at least `2r`
/// bytes left); writes bytes `ob .. ob + 2V` of each round (`half` bytes apart) in `out`.
#[target_feature(enable = "neon")]
fn kernel<const V: usize>(
    k: &Kernel<'_>,
    xs: &mut [u32; 4 * WIDE],
    qs: &mut [u32; 4 * WIDE],
    out: &mut [u8],
    half: usize,
    ob: usize,
    r: usize,
) {
    let mut xv: [uint32x4_t; WIDE] = [vdupq_n_u32(0); WIDE];
    let mut qv: [uint32x4_t; WIDE] = [vdupq_n_u32(0); WIDE];
    for v in 0..V {
        let xa: &[u32; 4] = xs[4 * v..4 * v + 4].try_into().expect("4 lanes");
        let qa: &[u32; 4] = qs[4 * v..4 * v + 4].try_into().expect("4 lanes");
        // SAFETY: `xa` is 4 readable u32.
        xv[v] = unsafe { vld1q_u32(xa.as_ptr()) };
        // SAFETY: `qa` is 4 readable u32.
        qv[v] = unsafe { vld1q_u32(qa.as_ptr()) };
    }
    let sb = k.sb;
    let mask = vdupq_n_u32((1u32 << sb) - 1);
    let neg_sb = vdupq_n_s32(-(sb as i32));
    let low16 = vdupq_n_u32(0xFFFF);
    let l23 = vdupq_n_u32(1 << 23);
    let l15 = vdupq_n_u32(1 << 15);
    let sixteen = vdupq_n_s32(16);
    let zero = vdupq_n_u32(0);
    let sym = k.sym;
    let data = k.data;
    for round in 0..r {
        let mut bytes = [0u8; 2 * WIDE];
        for v in 0..V {
            let x = xv[v];
            let slot = vandq_u32(x, mask);
            let sl = [
                vgetq_lane_u32::<0>(slot),
                vgetq_lane_u32::<1>(slot),
                vgetq_lane_u32::<2>(slot),
                vgetq_lane_u32::<3>(slot),
            ];
            // slot < M ≤ 2^15: the mask lets the compiler drop the bounds checks.
            let s = sl.map(|i| u32::from(sym[i as usize & (MAX_SLOTS - 1)]));
            let e = s.map(|si| k.lut[si as usize & (SYMBOLS - 1)]);
            // SAFETY: `e` is 4 readable u32.
            let ev = unsafe { vld1q_u32(e.as_ptr()) };
            let f = vandq_u32(ev, low16);
            let st = vshlq_u32(ev, vdupq_n_s32(-16));
            let xn = vmlaq_u32(vsubq_u32(slot, st), f, vshlq_u32(x, neg_sb));
            // All-ones per comparison that holds: kneg = −k (mod 2^32).
            let kneg = vaddq_u32(vcltq_u32(xn, l23), vcltq_u32(xn, l15));
            let shs = vreinterpretq_s32_u32(vshlq_n_u32::<3>(vsubq_u32(zero, kneg)));
            let q = qv[v];
            let qa = [
                vgetq_lane_u32::<0>(q),
                vgetq_lane_u32::<1>(q),
                vgetq_lane_u32::<2>(q),
                vgetq_lane_u32::<3>(q),
            ];
            // Every lane has 2 bytes left (the driver's bound), so the reads are in the stream;
            // they are bounds-checked slice reads regardless.
            let w = qa.map(|p| {
                let p = p as usize;
                u32::from(u16::from_be_bytes([data[p], data[p + 1]]))
            });
            // SAFETY: `w` is 4 readable u32.
            let wv = unsafe { vld1q_u32(w.as_ptr()) };
            let fill = vshlq_u32(wv, vsubq_s32(shs, sixteen));
            xv[v] = vorrq_u32(vshlq_u32(xn, shs), fill);
            qv[v] = vsubq_u32(q, kneg);
            #[allow(clippy::cast_possible_truncation)] // symbols < 16.
            {
                bytes[2 * v] = (s[0] | (s[1] << 4)) as u8;
                bytes[2 * v + 1] = (s[2] | (s[3] << 4)) as u8;
            }
        }
        out[round * half + ob..][..2 * V].copy_from_slice(&bytes[..2 * V]);
    }
    for v in 0..V {
        let mut xa = [0u32; 4];
        let mut qa = [0u32; 4];
        // SAFETY: `xa` is 4 writable u32.
        unsafe { vst1q_u32(xa.as_mut_ptr(), xv[v]) };
        // SAFETY: `qa` is 4 writable u32.
        unsafe { vst1q_u32(qa.as_mut_ptr(), qv[v]) };
        xs[4 * v..4 * v + 4].copy_from_slice(&xa);
        qs[4 * v..4 * v + 4].copy_from_slice(&qa);
    }
}
