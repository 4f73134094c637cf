//! The aarch64 NEON arm of `int4-rans64-t1`: a way (16 lanes) is four `uint32x4_t` vectors.
//! It mirrors `Model::step` and the scalar refill exactly.
//!
//! NEON has no 32-bit permute, but it has byte table lookups over up to four registers
//! (`tbl` with 64 table bytes), so a 16-entry u32 table lives in four registers and a lane's
//! entry is fetched with the four byte indices `4b, 4b+1, 4b+2, 4b+3` of its bucket `b`
//! (one shift, one mask, one multiply-add: `4b · 0x01010101 + 0x03020100`). The model needs
//! only two such tables: a bucket's lower entry is always its own symbol with `c = −256·b`
//! (so `slot + c = x & 0xFF`) and its threshold is `256·b + div` with `div ≤ 256`, so the arm
//! keeps `own[b] = f_b | b << 12 | div_b << 16` beside the upper entries `hi[b]` (eight
//! registers instead of twelve; `Tables::new` checks that shape). One step of a vector `x`:
//! 1. `own`, `hi` looked up by the bucket `(x >> 8) & 15`;
//! 2. `upper = (x & 0xFF) ≥ div_b` (`vcgeq_u32`), `e = upper ? hi : own` (a bit select);
//! 3. `x = (e & 0xFFF)·(x >> 12) + (upper ? (x & 0xFFF) + (hi >>s 16) : x & 0xFF)`
//!    (`vmlaq_u32`; the same wrapping sum as the scalar `slot + c`);
//! 4. refill: the four `x < 2^16` masks of a way are stacked into one 16-bit lane mask
//!    (`& [1, 2, 4, 8]`, two shift-insert steps, one `vaddvq_u32`); each vector takes its 4-bit
//!    part, loads the next 8 bytes (4 words) of the way, and one `vqtbl1q_u8` with a pattern
//!    from a 16-entry table moves word `k` zero-extended into the lane of the `k`-th set bit
//!    (other lanes get 0). The refilling lanes become `x << 16 | word`; the way pointer
//!    advances by `2·popcount` (from a 16-entry table).
//!
//! Per round a way does two steps. After the low-nibble step, byte 1 of each entry
//! (`symbol << 4 | f >> 8`) is gathered into one byte vector with two `uzp` steps, and after
//! the high-nibble step one shift-right-insert (`vsriq_n_u8::<4>`) merges the two into the
//! way's 16 output bytes.
//!
//! The x86 arms keep all four ways in registers; NEON's 32 registers cannot hold four ways'
//! states, the eight table registers and the temporaries, so this arm decodes two ways at a
//! time (two pairs, interleaved so that eight vector chains overlap) over a *block* of rounds.
//! A round consumes at most 64 bytes of a way (two steps of 16 words), so if every way holds
//! at least `64·B` unread bytes, each of the next `B` rounds starts with at least 64 unread
//! bytes in every way — the arm contract — and the pairs can run those `B` rounds one after
//! the other. The block size is recomputed after each block, so the arm stops exactly where
//! the x86 arms stop (the first round at whose start some way holds fewer than 64 bytes) and
//! hands the rest, with every error, to the scalar code.
//!
//! The module is compiled only for little-endian aarch64 with NEON enabled at compile time
//! (every aarch64 Linux, macOS and Windows target); the kernels still carry
//! `#[target_feature(enable = "neon")]` and the safe entry point checks `neon_detected()`, as
//! the x86 arms do. `unsafe` is the call into the kernel and the raw-pointer loads and stores.

use core::arch::aarch64::{
    uint8x16_t, uint8x16x4_t, uint32x4_t, vaddq_u32, vaddvq_u32, vandq_u32, vbslq_u32, vcgeq_u32,
    vcltq_u32, vcombine_u8, vdup_n_u8, vdupq_n_u8, vdupq_n_u32, vld1_u8, vld1q_u8, vld1q_u32,
    vmlaq_u32, vorrq_u32, vqtbl1q_u8, vqtbl4q_u8, vreinterpretq_s32_u32, vreinterpretq_u8_u16,
    vreinterpretq_u8_u32, vreinterpretq_u16_u32, vreinterpretq_u32_s32, vreinterpretq_u32_u8,
    vshlq_n_u32, vshrq_n_s32, vshrq_n_u32, vsliq_n_u32, vsriq_n_u8, vst1q_u8, vst1q_u32,
    vuzp1q_u16, vuzp2q_u8,
};

use super::super::model::Model;
use super::super::{LANES, WAY_LANES, WAYS};

/// Bytes a way must hold unread at the start of a round for the round's loads to stay inside
/// it: a round consumes at most 64 bytes, and its last load (8 bytes, after at most 56 consumed
/// bytes) ends at most 64 bytes in.
const ROUND_SLACK: usize = 64;

/// Most rounds in one block (4 KiB of output, which stays in L1 while the two pairs fill it).
const MAX_BLOCK: usize = 64;

/// Vectors per way.
const VECS: usize = WAY_LANES / 4;

/// Ways decoded together (interleaved) in a block.
const GROUP: usize = 2;

/// For each 4-bit refill mask, the `vqtbl1q_u8` pattern over 8 loaded bytes (4 little-endian
/// words) that puts word `k` zero-extended into the lane of the `k`-th set bit; the other
/// lanes get index `0x80` (out of range: 0).
static EXPAND4: [[u8; 16]; 16] = {
    let mut t = [[0x80u8; 16]; 16];
    let mut m = 0;
    while m < 16 {
        let mut k = 0u8;
        let mut lane = 0;
        while lane < 4 {
            if m & (1 << lane) != 0 {
                t[m][4 * lane] = 2 * k;
                t[m][4 * lane + 1] = 2 * k + 1;
                k += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    t
};

/// Bytes consumed by a 4-bit refill mask: `2·popcount(m)` (a table, since a scalar popcount
/// goes through the vector unit on base aarch64).
static TAKE4: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut m = 0;
    while m < 16 {
        let mut lane = 0;
        while lane < 4 {
            if m & (1 << lane) != 0 {
                t[m] += 2;
            }
            lane += 1;
        }
        m += 1;
    }
    t
};

/// Whether this CPU runs NEON (runtime detection with `std`, the compile-time target feature
/// without it).
pub(super) fn neon_detected() -> bool {
    #[cfg(feature = "std")]
    {
        std::arch::is_aarch64_feature_detected!("neon")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(target_feature = "neon")
    }
}

/// The model as two 64-byte register tables.
///
/// A bucket's lower entry is always the bucket's own symbol with `c = −256·b` (so that
/// `slot + c = x & 0xFF`), and its threshold is `256·b + div` with `div ≤ 256`; the arm
/// therefore keeps one table `own[b] = f_b | b << 12 | div_b << 16` and the upper entries `hi`,
/// and decides `upper` as `(x & 0xFF) ≥ div_b`. [`Tables::new`] checks that the model has this
/// shape (it always has: `Model::new` builds it so) and refuses otherwise, and the caller then
/// leaves every round to the scalar code.
#[derive(Clone, Copy)]
struct Tables {
    own: uint8x16x4_t,
    hi: uint8x16x4_t,
}

impl Tables {
    #[target_feature(enable = "neon")]
    fn new(model: &Model) -> Option<Tables> {
        let mut own = [0u32; 16];
        for (b, o) in own.iter_mut().enumerate() {
            let bucket = u32::try_from(b).ok()?;
            let base = 256 * bucket;
            let div = model.thr[b].checked_sub(base).filter(|&d| d <= 256)?;
            let own_c = 0u32.wrapping_sub(base) & 0xFFFF; // −256·b as the 16-bit field
            if model.lo[b] >> 16 != own_c || (model.lo[b] >> 12) & 15 != bucket {
                return None;
            }
            *o = (model.lo[b] & 0xFFFF) | (div << 16);
        }
        Some(Tables { own: bytes64(&own), hi: bytes64(&model.hi) })
    }
}

/// 16 u32 entries as four byte registers, entry `b` at bytes `4b..4b+4`, least significant
/// first.
#[target_feature(enable = "neon")]
fn bytes64(table: &[u32; 16]) -> uint8x16x4_t {
    let mut b = [0u8; 64];
    for (dst, v) in b.chunks_exact_mut(4).zip(table) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
    // SAFETY: `b` has 64 bytes; each of the four loads reads 16 at offset 0, 16, 32 or 48.
    let q0 = unsafe { vld1q_u8(b.as_ptr()) };
    // SAFETY: 16 bytes at offset 16 of the 64-byte `b`.
    let q1 = unsafe { vld1q_u8(b.as_ptr().wrapping_add(16)) };
    // SAFETY: 16 bytes at offset 32 of the 64-byte `b`.
    let q2 = unsafe { vld1q_u8(b.as_ptr().wrapping_add(32)) };
    // SAFETY: 16 bytes at offset 48 of the 64-byte `b`.
    let q3 = unsafe { vld1q_u8(b.as_ptr().wrapping_add(48)) };
    uint8x16x4_t(q0, q1, q2, q3)
}

/// Whole rounds with NEON; returns how many (0 if the CPU lacks it). Same contract as the
/// x86 arms: every round it decodes started with at least 64 unread bytes in every way.
pub(super) fn rounds_neon(
    model: &Model,
    st: &mut [u32; LANES],
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
    model: &Model,
    st: &mut [u32; LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    let Some(tables) = Tables::new(model) else { return 0 };
    let rounds = out.len() / LANES;
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
        let dst = &mut out[LANES * done..LANES * (done + block)];
        for w0 in (0..WAYS).step_by(GROUP) {
            let lanes = &mut st[WAY_LANES * w0..WAY_LANES * (w0 + GROUP)];
            let mut group = [&[][..]; GROUP];
            group.copy_from_slice(&ways[w0..w0 + GROUP]);
            ways_block::<GROUP>(&tables, lanes, group, &mut pos[w0..w0 + GROUP], dst, w0);
        }
        done += block;
    }
}

/// Decodes `out.len() / 64` rounds of the `G` ways `w0 .. w0 + G` (their lanes `st`, their
/// streams `ways` at `off`), writing bytes `64r + 16w .. 64r + 16w + 16` of `out` for each
/// round `r` and way `w`. The ways' steps are interleaved so their chains overlap.
///
/// The caller guarantees `ways[g].len() - off[g] ≥ out.len()` (64 bytes per round).
#[target_feature(enable = "neon")]
#[inline]
fn ways_block<const G: usize>(
    t: &Tables,
    st: &mut [u32],
    ways: [&[u8]; G],
    off: &mut [usize],
    out: &mut [u8],
    w0: usize,
) {
    debug_assert!(st.len() == G * WAY_LANES && off.len() == G && out.len().is_multiple_of(LANES));
    debug_assert!((0..G).all(|g| ways[g].len() - off[g] >= out.len()));
    let mut x = [[vdupq_n_u32(0); VECS]; G];
    for (xg, lanes) in x.iter_mut().zip(st.chunks_exact(WAY_LANES)) {
        for (v, xv) in xg.iter_mut().enumerate() {
            // SAFETY: `lanes` has 16 u32; vector v reads lanes 4v..4v+4, in bounds for v < 4.
            *xv = unsafe { vld1q_u32(lanes.as_ptr().wrapping_add(4 * v)) };
        }
    }
    let mut o = [0usize; G];
    o.copy_from_slice(off);
    for round in out.chunks_exact_mut(LANES) {
        // Round start: at least 64 unread bytes per round left in this block (see above).
        // Step 0: the low nibbles, kept as one byte vector per way (symbol in the high half).
        let mut low = [vdupq_n_u8(0); G];
        for g in 0..G {
            let e;
            (e, x[g]) = step(t, x[g]);
            low[g] = symbol_bytes(e);
        }
        for g in 0..G {
            x[g] = refill(x[g], ways[g], &mut o[g]);
        }
        let dst = &mut round[WAY_LANES * w0..WAY_LANES * (w0 + G)];
        for (g, d) in dst.chunks_exact_mut(WAY_LANES).enumerate() {
            let e;
            (e, x[g]) = step(t, x[g]);
            // High nibble from step 1, low nibble from step 0.
            let bytes = vsriq_n_u8::<4>(symbol_bytes(e), low[g]);
            // SAFETY: `d` is exactly 16 bytes (`chunks_exact_mut`).
            unsafe { vst1q_u8(d.as_mut_ptr(), bytes) };
        }
        for g in 0..G {
            x[g] = refill(x[g], ways[g], &mut o[g]);
        }
    }
    for (xg, lanes) in x.iter().zip(st.chunks_exact_mut(WAY_LANES)) {
        for (v, xv) in xg.iter().enumerate() {
            // SAFETY: as for the loads above.
            unsafe { vst1q_u32(lanes.as_mut_ptr().wrapping_add(4 * v), *xv) };
        }
    }
    off.copy_from_slice(&o);
}

/// One decode step of a way's four vectors: `(entries, next states before refill)`.
#[target_feature(enable = "neon")]
#[inline]
fn step(t: &Tables, x: [uint32x4_t; VECS]) -> ([uint32x4_t; VECS], [uint32x4_t; VECS]) {
    let low12 = vdupq_n_u32(0xFFF);
    let low8 = vdupq_n_u32(0xFF);
    let spread = vdupq_n_u32(0x0101_0101);
    let within = vdupq_n_u32(0x0302_0100);
    let four_b = vdupq_n_u32(0x3C);
    let mut e = x;
    let mut next = x;
    for v in 0..VECS {
        let xv = x[v];
        // Byte indices 4b + j of bucket b = (x >> 8) & 15, in each of the lane's four bytes.
        let idx = vreinterpretq_u8_u32(vmlaq_u32(
            within,
            vandq_u32(vshrq_n_u32::<6>(xv), four_b),
            spread,
        ));
        let own = vreinterpretq_u32_u8(vqtbl4q_u8(t.own, idx));
        let hi = vreinterpretq_u32_u8(vqtbl4q_u8(t.hi, idx));
        // slot ≥ thr[b] ⇔ (x & 0xFF) ≥ div[b].
        let in_bucket = vandq_u32(xv, low8);
        let upper = vcgeq_u32(in_bucket, vshrq_n_u32::<16>(own));
        let ev = vbslq_u32(upper, hi, own);
        // slot + c: the upper entry's c, or −256·b for the bucket's own symbol.
        let c_hi = vreinterpretq_u32_s32(vshrq_n_s32::<16>(vreinterpretq_s32_u32(hi)));
        let index = vbslq_u32(upper, vaddq_u32(vandq_u32(xv, low12), c_hi), in_bucket);
        let f = vandq_u32(ev, low12);
        let q = vshrq_n_u32::<12>(xv);
        e[v] = ev;
        next[v] = vmlaq_u32(index, f, q);
    }
    (e, next)
}

/// Refills the lanes below `2^16` from `way` at `*off` (lane order across the four vectors),
/// advancing `*off`.
#[target_feature(enable = "neon")]
#[inline]
fn refill(x: [uint32x4_t; VECS], way: &[u8], off: &mut usize) -> [uint32x4_t; VECS] {
    let limit = vdupq_n_u32(0x1_0000);
    let need = [
        vcltq_u32(x[0], limit),
        vcltq_u32(x[1], limit),
        vcltq_u32(x[2], limit),
        vcltq_u32(x[3], limit),
    ];
    // One 16-bit mask of the way's lanes: lane 4v + i contributes bit 4v + i. Each vector's
    // lanes give bits 0..4 (`& [1, 2, 4, 8]`); shift-left-and-insert stacks them.
    // SAFETY: the array has 4 u32.
    let weights = unsafe { vld1q_u32([1u32, 2, 4, 8].as_ptr()) };
    let b = |v: usize| vandq_u32(need[v], weights);
    let low = vsliq_n_u32::<4>(b(0), b(1));
    let high = vsliq_n_u32::<4>(b(2), b(3));
    let mask = vaddvq_u32(vsliq_n_u32::<8>(low, high));
    let mut o = *off;
    let mut y = x;
    for v in 0..VECS {
        let m = ((mask >> (4 * v)) & 15) as usize;
        debug_assert!(o + 8 <= way.len());
        // SAFETY: `ways_block` starts a round only while `way` holds ≥ 64 unread bytes; within
        // the round at most 56 bytes are consumed before this load (two steps of 16 words, this
        // one the last 4 lanes at worst), so [o, o + 8) is in `way`.
        let words = unsafe { vld1_u8(way.as_ptr().wrapping_add(o)) };
        // SAFETY: every EXPAND4 row is 16 bytes; m < 16.
        let pattern = unsafe { vld1q_u8(EXPAND4[m].as_ptr()) };
        let fresh = vreinterpretq_u32_u8(vqtbl1q_u8(vcombine_u8(words, vdup_n_u8(0)), pattern));
        let shifted = vbslq_u32(need[v], vshlq_n_u32::<16>(x[v]), x[v]);
        y[v] = vorrq_u32(shifted, fresh);
        o += usize::from(TAKE4[m]);
    }
    *off = o;
    y
}

/// Byte 1 of each lane's entry, for the way's 16 lanes in order: `symbol << 4 | f >> 8`.
#[target_feature(enable = "neon")]
#[inline]
fn symbol_bytes(e: [uint32x4_t; VECS]) -> uint8x16_t {
    let u16s = |a: uint32x4_t| vreinterpretq_u16_u32(a);
    // The low halves (`f | symbol << 12`) of lanes 0..8 and 8..16, then their high bytes.
    let h01 = vuzp1q_u16(u16s(e[0]), u16s(e[1]));
    let h23 = vuzp1q_u16(u16s(e[2]), u16s(e[3]));
    vuzp2q_u8(vreinterpretq_u8_u16(h01), vreinterpretq_u8_u16(h23))
}

#[cfg(test)]
pub(super) mod tests {
    //! The arm against a test-local transcription of the scalar round (via `Model::step`): the
    //! same number of rounds as the arm contract allows (so the arm provably runs, rather than
    //! handing everything to the scalar code), the same bytes, states and way positions,
    //! across block boundaries and when resumed mid-chunk.
    use super::super::super::format::{Blob, ChunkBody};
    use super::super::super::{LANES, RANS_L, WAY_LANES, WAYS, encode_v2_into, max_encoded_len};
    use super::{ROUND_SLACK, neon_detected, rounds_neon};
    use crate::rans64::model::Model;

    /// The contract loop in scalar form: whole rounds while every way has ≥ 64 unread bytes.
    fn reference_rounds(
        model: &Model,
        st: &mut [u32; LANES],
        ways: &[&[u8]; WAYS],
        pos: &mut [usize; WAYS],
        out: &mut [u8],
    ) -> usize {
        let mut r = 0;
        for round in out.chunks_exact_mut(LANES) {
            if (0..WAYS).any(|w| ways[w].len() - pos[w] < ROUND_SLACK) {
                break;
            }
            for half in 0..2 {
                for (lane, byte) in round.iter_mut().enumerate() {
                    let w = lane / WAY_LANES;
                    let (sym, mut x) = model.step(st[lane]);
                    if x < RANS_L {
                        let p = pos[w];
                        x = (x << 16) | u32::from(u16::from_le_bytes([ways[w][p], ways[w][p + 1]]));
                        pos[w] = p + 2;
                    }
                    st[lane] = x;
                    *byte = if half == 0 { sym } else { *byte | (sym << 4) };
                }
            }
            r += 1;
        }
        r
    }

    /// Packed int4 bytes whose nibbles follow a peaked distribution of width `spread` (1..=16),
    /// with a rare uniform outlier, from a xorshift generator (the version-3 arm's test data too).
    pub(in super::super) fn sample(n: usize, spread: u64, seed: u64) -> std::vec::Vec<u8> {
        let mut s = seed | 1;
        let mut nib = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = if s & 0xFF < 2 { (s >> 8) & 15 } else { (8 + (s >> 8) % spread) & 15 };
            u8::try_from(v).unwrap_or(0)
        };
        (0..n).map(|_| nib() | (nib() << 4)).collect()
    }

    /// Runs the arm and the reference over every coded chunk of `src`, in pieces of `piece`
    /// rounds, and checks they agree; returns the rounds the arm decoded.
    fn check(src: &[u8], shift: u8, piece: usize) -> usize {
        let mut blob = std::vec![0u8; max_encoded_len(src.len(), shift)];
        let len = encode_v2_into(src, shift, &mut blob).expect("encode");
        let parsed = Blob::parse(&blob[..len]).expect("parse");
        let mut total = 0;
        for chunk in parsed.chunks() {
            let chunk = chunk.expect("chunk");
            let ChunkBody::Coded { model, states, ways } = &chunk.body else { continue };
            let n = chunk.raw_len / LANES * LANES;
            let (mut sa, mut sb) = (*states, *states);
            let (mut pa, mut pb) = ([0usize; WAYS], [0usize; WAYS]);
            let mut a = std::vec![0xA5u8; n];
            let mut b = std::vec![0x5Au8; n];
            let mut at = 0;
            while at < n {
                let end = at.saturating_add(piece.saturating_mul(LANES)).min(n);
                let ra = rounds_neon(model, &mut sa, ways, &mut pa, &mut a[at..end]);
                let rb = reference_rounds(model, &mut sb, ways, &mut pb, &mut b[at..end]);
                assert_eq!(ra, rb, "rounds from byte {at} of chunk {}", chunk.index);
                assert_eq!(a[at..at + ra * LANES], b[at..at + rb * LANES]);
                assert_eq!((sa, pa), (sb, pb), "state after byte {at}");
                total += ra;
                at += ra * LANES;
                if at < end {
                    break;
                }
            }
            assert_eq!(a[..at], src[chunk.index << shift..][..at], "chunk {}", chunk.index);
        }
        total
    }

    #[test]
    fn neon_matches_the_reference_rounds() {
        assert!(neon_detected(), "NEON is a compile-time feature of this target");
        let mut rounds = 0;
        for (spread, seed) in [(1, 1), (2, 7), (3, 11), (5, 13), (9, 17), (16, 19)] {
            let src = sample(50_000, spread, seed);
            for (shift, piece) in [(12, usize::MAX), (14, usize::MAX), (14, 1), (14, 3), (16, 97)] {
                rounds += check(&src, shift, piece);
            }
        }
        assert!(rounds > 5_000, "the NEON arm decoded only {rounds} rounds");
    }
}
