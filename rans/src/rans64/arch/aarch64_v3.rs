//! The aarch64 NEON arm of version 3 (16-bit states, `M = 256`, byte refills). A way's 32
//! states are kept split into bytes, lanes in order: two `uint8x16_t` of low bytes (the slots)
//! and two of high bytes (`x >> 8`), so every per-bucket field is one `vqtbl1q_u8` lookup for
//! 16 lanes and no step needs a pack or an interleave. `vld2q_u8` / `vst2q_u8` split and join
//! the stored `u16` states.
//!
//! One step of a way ([`step`]), mirroring `Model3::step` and the scalar refill, per 16 lanes:
//! 1. `b = slot >> 4`, `j = slot & 15`; `lower = j < div[b]` (`vqtbl1q_u8`, `vcgtq_u8`); the
//!    symbol `lower ? b : sup[b]` (a lookup, a bit select) and `f = freq[symbol]` (a lookup);
//!    `index = j + (lower ? 0 : cup[b])` in bytes (a lookup, `vbicq_u8`, `vaddq_u8`: mod 256,
//!    exact because the index is below `f`);
//! 2. `x' = f·(x >> 8) + index` in 16 bits (`vmull_u8`, `vaddw_u8` and their `_high` forms:
//!    `f ≤ 255`, `x >> 8 ≤ 255`, no overflow), split back into low and high bytes (`vuzp1q_u8`,
//!    `vuzp2q_u8`);
//! 3. refill: `x' < 256` is a zero high byte (`vceqzq_u8`, −1 in a refilling lane). The
//!    refilling lanes take the way's next bytes in lane order: the running sum of that mask
//!    over the 32 lanes (four `vextq_u8` shift-and-add steps per 16 lanes, the first half's
//!    total added to the second) is minus the refills so far, so its complement is each
//!    refilling lane's rank, and one `vqtbl2q_u8` over the way's next 32 bytes per 16 lanes
//!    fetches every lane's byte at once; the way pointer advances by the total. A refilling
//!    lane's high byte becomes its low byte and its low byte the fresh byte (two bit selects
//!    per 16 lanes: `x' < 256`, so `x' << 8 | byte` is just that).
//!
//! A round's 32 output bytes of a way are the low step's symbols with the high step's shifted
//! in (`vsliq_n_u8::<4>`). A step is one dependency chain through the lookups, the multiply
//! and the running sum, so ways are interleaved to overlap chains; the loops over an array of
//! ways unroll only for two of them (four are kept in memory), so, as in the version-2 arm,
//! two ways at a time run over a *block* of rounds. A round consumes at most 64 bytes of a way,
//! so if every way holds at least `64·B` unread bytes, each of the next `B` rounds starts with
//! at least 64 unread bytes in every way — the arm contract — and the pairs can run those `B`
//! rounds one after the other. The block size is recomputed after each block, so the arm stops
//! exactly where the x86 arms stop (the first round at whose start some way holds fewer than
//! 64 bytes) and hands the rest, with every error, to the scalar code.
//!
//! The module is compiled only for little-endian aarch64 with NEON enabled at compile time;
//! the kernel still carries `#[target_feature(enable = "neon")]` and the safe entry point
//! checks `neon_detected()`. `unsafe` is the call into the kernel and the raw-pointer loads
//! and stores.

use core::arch::aarch64::{
    uint8x16_t, uint8x16x2_t, vaddq_u8, vaddw_high_u8, vaddw_u8, vandq_u8, vbicq_u8, vbslq_u8,
    vceqzq_u8, vcgtq_u8, vdupq_laneq_u8, vdupq_n_u8, vextq_u8, vget_low_u8, vgetq_lane_u8,
    vld1q_u8, vld1q_u8_x2, vld2q_u8, vmull_high_u8, vmull_u8, vmvnq_u8, vqtbl1q_u8, vqtbl2q_u8,
    vreinterpretq_u8_u16, vshrq_n_u8, vsliq_n_u8, vst1q_u8, vst2q_u8, vuzp1q_u8, vuzp2q_u8,
};

use super::super::model3::Model3;
use super::super::{V3_LANES, V3_WAY_LANES, WAYS};
use super::aarch64::neon_detected;

/// Bytes a way must hold unread at the start of a round: a step consumes at most 32 and its
/// one 32-byte load ends 32 bytes after the way pointer.
const ROUND_SLACK: usize = 2 * V3_WAY_LANES;

/// Most rounds in one block (8 KiB of output, which stays in L1 while the groups fill it).
const MAX_BLOCK: usize = 64;

/// Ways decoded together (interleaved) in a block.
const GROUP: usize = 2;

/// The model's five byte tables, one register each.
#[derive(Clone, Copy)]
struct Tables {
    div: uint8x16_t,
    freq: uint8x16_t,
    cup: uint8x16_t,
    sup: uint8x16_t,
}

/// A way's 32 states split into bytes, lanes in order: `lo[h]` and `hi[h]` hold the low and
/// high bytes of lanes `16h .. 16h + 16`.
#[derive(Clone, Copy)]
struct Way {
    lo: [uint8x16_t; 2],
    hi: [uint8x16_t; 2],
}

/// Whole rounds with NEON; returns how many (0 if the CPU lacks it). Same contract as the
/// x86 arms: every round it decodes started with at least 64 unread bytes in every way.
pub(super) fn rounds3_neon(
    model: &Model3,
    st: &mut [u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    if !neon_detected() {
        return 0;
    }
    // SAFETY: the CPU supports NEON (checked just above).
    unsafe { rounds_kernel(model, st, ways, pos, out) }
}

#[target_feature(enable = "neon")]
fn rounds_kernel(
    model: &Model3,
    st: &mut [u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    let rounds = out.len() / V3_LANES;
    let t = Tables {
        div: table(&model.div),
        freq: table(&model.freq),
        cup: table(&model.cup),
        sup: table(&model.sup),
    };
    let mut done = 0;
    loop {
        // Rounds that every way can afford at the worst case of 64 bytes per round.
        let fit = (0..WAYS)
            .map(|w| ways[w].len().saturating_sub(pos[w]) / ROUND_SLACK)
            .min()
            .unwrap_or(0);
        let block = fit.min(rounds - done).min(MAX_BLOCK);
        if block == 0 {
            return done;
        }
        let dst = &mut out[V3_LANES * done..V3_LANES * (done + block)];
        for w0 in (0..WAYS).step_by(GROUP) {
            let lanes = &mut st[V3_WAY_LANES * w0..V3_WAY_LANES * (w0 + GROUP)];
            let mut group = [&[][..]; GROUP];
            group.copy_from_slice(&ways[w0..w0 + GROUP]);
            ways_block::<GROUP>(&t, lanes, group, &mut pos[w0..w0 + GROUP], dst, w0);
        }
        done += block;
    }
}

/// Decodes `out.len() / 128` rounds of the `G` ways `w0 .. w0 + G` (their lanes `st`, their
/// streams `ways` at `off`), writing bytes `128r + 32w .. 128r + 32w + 32` of `out` for each
/// round `r` and way `w`. The ways' steps are interleaved so that their chains overlap.
///
/// # Panics
/// Unless every way holds at least 64 unread bytes per round of the block (the caller sizes
/// blocks so).
#[target_feature(enable = "neon")]
#[inline]
fn ways_block<const G: usize>(
    t: &Tables,
    st: &mut [u16],
    ways: [&[u8]; G],
    off: &mut [usize],
    out: &mut [u8],
    w0: usize,
) {
    assert!(st.len() == G * V3_WAY_LANES && off.len() == G);
    // The bound every step's loads rest on, checked once per block.
    let need = out.len() / V3_LANES * ROUND_SLACK;
    assert!((0..G).all(|g| ways[g].len().saturating_sub(off[g]) >= need), "block too long");
    let mut x = [Way { lo: [vdupq_n_u8(0); 2], hi: [vdupq_n_u8(0); 2] }; G];
    for (xg, lanes) in x.iter_mut().zip(st.chunks_exact(V3_WAY_LANES)) {
        let [lo0, hi0] = load_split(lanes[..16].try_into().expect("16 states"));
        let [lo1, hi1] = load_split(lanes[16..].try_into().expect("16 states"));
        *xg = Way { lo: [lo0, lo1], hi: [hi0, hi1] };
    }
    let mut o = [0usize; G];
    o.copy_from_slice(off);
    for round in out.chunks_exact_mut(V3_LANES) {
        let mut low = [[vdupq_n_u8(0); 2]; G];
        for g in 0..G {
            // SAFETY: the block bound asserted above (64 unread bytes per round, and a round
            // consumes at most 64) leaves every round's start at least 64 unread bytes in
            // each way; this step needs 32 and consumes at most 32.
            low[g] = unsafe { step(t, &mut x[g], ways[g], &mut o[g]) };
        }
        let dst = &mut round[V3_WAY_LANES * w0..V3_WAY_LANES * (w0 + G)];
        for (g, d) in dst.chunks_exact_mut(V3_WAY_LANES).enumerate() {
            // SAFETY: the round started with at least 64 unread bytes in each way and the low step
            // consumed at most 32, so at least 32 are left; this step needs 32.
            let high = unsafe { step(t, &mut x[g], ways[g], &mut o[g]) };
            // Low nibble from the first step, high nibble from the second (symbols < 16).
            let (d0, d1) = d.split_at_mut(16);
            store16(d0.try_into().expect("16 bytes"), vsliq_n_u8::<4>(low[g][0], high[0]));
            store16(d1.try_into().expect("16 bytes"), vsliq_n_u8::<4>(low[g][1], high[1]));
        }
    }
    for (xg, lanes) in x.iter().zip(st.chunks_exact_mut(V3_WAY_LANES)) {
        let (s0, s1) = lanes.split_at_mut(16);
        store_split(s0.try_into().expect("16 states"), xg.lo[0], xg.hi[0]);
        store_split(s1.try_into().expect("16 states"), xg.lo[1], xg.hi[1]);
    }
    off.copy_from_slice(&o);
}

/// 16 bytes as one register (a `vqtbl1q_u8` table).
#[target_feature(enable = "neon")]
#[inline]
fn table(t: &[u8; 16]) -> uint8x16_t {
    // SAFETY: reads the 16 bytes of `t`.
    unsafe { vld1q_u8(t.as_ptr()) }
}

/// Sixteen 16-bit states as `[low bytes, high bytes]`, lanes in order.
#[target_feature(enable = "neon")]
#[inline]
fn load_split(s: &[u16; 16]) -> [uint8x16_t; 2] {
    // SAFETY: reads the 32 bytes of `s`; the target is little-endian, so the even bytes are
    // the low bytes.
    let v = unsafe { vld2q_u8(s.as_ptr().cast::<u8>()) };
    [v.0, v.1]
}

/// Writes sixteen 16-bit states from their low and high bytes.
#[target_feature(enable = "neon")]
#[inline]
fn store_split(dst: &mut [u16; 16], lo: uint8x16_t, hi: uint8x16_t) {
    // SAFETY: writes the 32 bytes of `dst` (little-endian: low byte first).
    unsafe { vst2q_u8(dst.as_mut_ptr().cast::<u8>(), uint8x16x2_t(lo, hi)) }
}

/// Writes 16 bytes.
#[target_feature(enable = "neon")]
#[inline]
fn store16(dst: &mut [u8; 16], v: uint8x16_t) {
    // SAFETY: writes the 16 bytes of `dst`.
    unsafe { vst1q_u8(dst.as_mut_ptr(), v) }
}

/// One step of one way: returns the 32 symbols, one a byte, lanes in order.
///
/// # Safety
/// `way` holds at least 32 unread bytes at `*pos`.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn step(t: &Tables, x: &mut Way, way: &[u8], pos: &mut usize) -> [uint8x16_t; 2] {
    let nibble = vdupq_n_u8(0x0F);
    let mut sym = [nibble; 2];
    let mut ylo = [nibble; 2];
    let mut yhi = [nibble; 2];
    let mut need = [nibble; 2];
    for h in 0..2 {
        let (s, q) = (x.lo[h], x.hi[h]);
        let b = vshrq_n_u8::<4>(s);
        let j = vandq_u8(s, nibble);
        let lower = vcgtq_u8(vqtbl1q_u8(t.div, b), j);
        sym[h] = vbslq_u8(lower, b, vqtbl1q_u8(t.sup, b));
        let f = vqtbl1q_u8(t.freq, sym[h]);
        let index = vaddq_u8(j, vbicq_u8(vqtbl1q_u8(t.cup, b), lower));
        let y0 = vaddw_u8(vmull_u8(vget_low_u8(f), vget_low_u8(q)), vget_low_u8(index));
        let y1 = vaddw_high_u8(vmull_high_u8(f, q), index);
        let (y0, y1) = (vreinterpretq_u8_u16(y0), vreinterpretq_u8_u16(y1));
        ylo[h] = vuzp1q_u8(y0, y1);
        yhi[h] = vuzp2q_u8(y0, y1);
        need[h] = vceqzq_u8(yhi[h]);
    }
    // The refilling lanes take the next bytes of the way in lane order. With `need` = −1 in
    // a refilling lane, the running sum `p` over the 32 lanes (four shift-and-add steps per
    // 16 lanes, then the first half's total added to the second) is minus the refills so far,
    // and `!p` = refills so far − 1: in a refilling lane, the index of its byte.
    let zero = vdupq_n_u8(0);
    let scan = |v: uint8x16_t| {
        let v = vaddq_u8(v, vextq_u8::<15>(zero, v));
        let v = vaddq_u8(v, vextq_u8::<14>(zero, v));
        let v = vaddq_u8(v, vextq_u8::<12>(zero, v));
        vaddq_u8(v, vextq_u8::<8>(zero, v))
    };
    let p0 = scan(need[0]);
    let p1 = vaddq_u8(scan(need[1]), vdupq_laneq_u8::<15>(p0));
    // SAFETY: `*pos + 32 ≤ way.len()` (this function's contract), so the 32 bytes read are
    // inside `way`.
    let bytes = unsafe { vld1q_u8_x2(way.as_ptr().wrapping_add(*pos)) };
    let f0 = vqtbl2q_u8(bytes, vmvnq_u8(p0));
    let f1 = vqtbl2q_u8(bytes, vmvnq_u8(p1));
    // At most 32 refills: minus the total mod 256 is the total.
    *pos += usize::from(vgetq_lane_u8::<15>(p1).wrapping_neg());
    // A refilling lane (`x' < 256`): high byte ← its low byte, low byte ← the fresh byte.
    x.hi = [vbslq_u8(need[0], ylo[0], yhi[0]), vbslq_u8(need[1], ylo[1], yhi[1])];
    x.lo = [vbslq_u8(need[0], f0, ylo[0]), vbslq_u8(need[1], f1, ylo[1])];
    sym
}

#[cfg(test)]
mod tests {
    //! The arm against a test-local transcription of the scalar rounds (via `Model3::step`):
    //! the same number of rounds as the arm contract allows (so the arm provably runs rather
    //! than handing everything to the scalar code), the same bytes, states and way positions,
    //! from a fresh chunk and when resumed mid-chunk.
    use super::super::super::format::{Blob, ChunkBody};
    use super::super::super::{V3_LANES, V3_RANS_L, V3_WAY_LANES, WAYS, encode_v3_into};
    use super::super::super::{max_encoded_len, model3::Model3};
    use super::super::aarch64::tests::sample;
    use super::{ROUND_SLACK, neon_detected, rounds3_neon};

    /// The contract loop in scalar form: whole rounds while every way has ≥ 64 unread bytes.
    fn reference_rounds(
        model: &Model3,
        st: &mut [u16; V3_LANES],
        ways: &[&[u8]; WAYS],
        pos: &mut [usize; WAYS],
        out: &mut [u8],
    ) -> usize {
        let mut r = 0;
        for round in out.chunks_exact_mut(V3_LANES) {
            if (0..WAYS).any(|w| ways[w].len() - pos[w] < ROUND_SLACK) {
                break;
            }
            for (w, part) in round.chunks_exact_mut(V3_WAY_LANES).enumerate() {
                let lanes = &mut st[w * V3_WAY_LANES..(w + 1) * V3_WAY_LANES];
                for half in 0..2 {
                    for (x, byte) in lanes.iter_mut().zip(part.iter_mut()) {
                        let (sym, mut y) = model.step(u32::from(*x));
                        if y < V3_RANS_L {
                            y = (y << 8) | u32::from(ways[w][pos[w]]);
                            pos[w] += 1;
                        }
                        *x = u16::try_from(y).expect("16-bit state");
                        *byte = if half == 0 { sym } else { *byte | (sym << 4) };
                    }
                }
            }
            r += 1;
        }
        r
    }

    /// Runs the arm and the reference over every coded chunk of `src`, in pieces of `piece`
    /// rounds, and checks they agree; returns the rounds the arm decoded.
    fn check(src: &[u8], shift: u8, piece: usize) -> usize {
        let mut blob = std::vec![0u8; max_encoded_len(src.len(), shift)];
        let len = encode_v3_into(src, shift, &mut blob).expect("encode");
        let parsed = Blob::parse(&blob[..len]).expect("parse");
        let mut total = 0;
        for chunk in parsed.chunks() {
            let chunk = chunk.expect("chunk");
            let ChunkBody::Coded3 { model, states, ways } = &chunk.body else { continue };
            let n = chunk.raw_len / V3_LANES * V3_LANES;
            let (mut sa, mut sb) = (*states, *states);
            let (mut pa, mut pb) = ([0usize; WAYS], [0usize; WAYS]);
            let mut a = std::vec![0xA5u8; n];
            let mut b = std::vec![0x5Au8; n];
            let mut at = 0;
            while at < n {
                let end = at.saturating_add(piece.saturating_mul(V3_LANES)).min(n);
                let ra = rounds3_neon(model, &mut sa, ways, &mut pa, &mut a[at..end]);
                let rb = reference_rounds(model, &mut sb, ways, &mut pb, &mut b[at..end]);
                assert_eq!(ra, rb, "rounds from byte {at} of chunk {}", chunk.index);
                assert_eq!(a[at..at + ra * V3_LANES], b[at..at + rb * V3_LANES]);
                assert_eq!((sa, pa), (sb, pb), "state after byte {at}");
                total += ra;
                at += ra * V3_LANES;
                if at < end {
                    break;
                }
            }
            assert_eq!(a[..at], src[chunk.index << shift..][..at], "chunk {}", chunk.index);
        }
        total
    }

    #[test]
    fn neon_v3_matches_the_reference_rounds() {
        assert!(neon_detected(), "NEON is a compile-time feature of this target");
        let mut rounds = 0;
        for (spread, seed) in [(1, 1), (2, 7), (3, 11), (5, 13), (9, 17), (16, 19)] {
            let src = sample(50_000, spread, seed);
            for (shift, piece) in [(12, usize::MAX), (14, usize::MAX), (14, 1), (14, 3), (16, 97)] {
                rounds += check(&src, shift, piece);
            }
        }
        assert!(rounds > 2_000, "the NEON arm decoded only {rounds} rounds");
    }
}
