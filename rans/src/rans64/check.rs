//! The chunk check of `int4-rans64-t1` version 2: a 64-bit value over a chunk's stored bytes.
//!
//! The seal (final states `L`, every way consumed exactly) is a consistency check, not a
//! checksum: rANS is a near-complete code, so a damaged chunk can be another genuine chunk of
//! other nibbles. How often depends on the model: with distinct frequencies a change spreads
//! through the multiplications and almost always breaks the seal, but where frequencies are
//! equal (near-uniform nibbles, e.g. 8 levels of an int3 grid) the states degenerate into
//! plain digit strings and a flipped bit is just another message — up to 0.9 % of single-bit
//! flips of such chunks were accepted, and with exactly equal power-of-two frequencies nearly
//! all. Version 2 therefore stores this check per chunk and a decoder verifies it before it
//! decodes a byte of the chunk (`E_CHECKSUM`).
//!
//! The function (normative, docs/int4-rans64-t1.md §2.5): the bytes as little-endian u64 words
//! (the last one zero-padded), dealt round-robin to 32 lanes; lane `l` starts at `l` and takes
//! word `w` as `h = rotl(h + w, 29) · P` (wrapping, `P` odd); the result is the length XOR
//! `rotl(h_l, 2·l)` over the lanes. Every lane step is a bijection of `h` for a given word and
//! of the word for a given `h`, so a change confined to one lane — in particular any damaged
//! word, so any single-bit flip or burst of up to 64 bits within a word — always changes the
//! check; other damage escapes with a chance of about 2^-64 (it is not a cryptographic
//! digest: containers carry SHA-256 for that).
//!
//! Speed: one 64-bit multiply per 8 bytes. The scalar form ([`chunk_check_scalar`], the
//! reference) is bound by the multiplier (about 33 GB/s on a Zen 5 core, some 7 % of a
//! decode's time); 32 lanes are four independent 8-lane vector chains, so the AVX-512 DQ form
//! (`vpmullq`, in `arch`) runs several times faster. [`chunk_check`] uses the vector form
//! where the CPU has it and it passed a first-use selftest against the scalar form (they
//! agree on every input: tested), the scalar form otherwise.

use core::sync::atomic::{AtomicU8, Ordering};

use super::arch;

/// The odd multiplier of a lane step (2^64 / golden ratio, rounded to odd).
pub const CHECK_P: u64 = 0x9E37_79B9_7F4A_7C15;

/// Lanes of the check: consecutive words go to consecutive lanes.
pub const CHECK_LANES: usize = 32;

/// The rotation of a lane step.
pub(super) const CHECK_ROT: u32 = 29;

/// Bytes per round of all lanes.
pub(super) const CHECK_BLOCK: usize = 8 * CHECK_LANES;

/// One lane step: `rotl(h + w, 29) · P`.
#[inline(always)]
fn step(h: u64, w: u64) -> u64 {
    h.wrapping_add(w).rotate_left(CHECK_ROT).wrapping_mul(CHECK_P)
}

/// The lanes' starting values (`h[l] = l`).
fn seeds() -> [u64; CHECK_LANES] {
    core::array::from_fn(|l| l as u64)
}

/// Feeds `bytes` to the lanes: whole blocks, then the tail (words from lane 0 on, the last
/// one zero-padded).
fn feed_scalar(h: &mut [u64; CHECK_LANES], bytes: &[u8]) {
    let mut blocks = bytes.chunks_exact(CHECK_BLOCK);
    for block in &mut blocks {
        for (hl, word) in h.iter_mut().zip(block.chunks_exact(8)) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            *hl = step(*hl, u64::from_le_bytes(w));
        }
    }
    for (hl, word) in h.iter_mut().zip(blocks.remainder().chunks(8)) {
        let mut w = [0u8; 8];
        w[..word.len()].copy_from_slice(word);
        *hl = step(*hl, u64::from_le_bytes(w));
    }
}

/// The length XOR the lanes, lane `l` rotated by `2·l`.
fn fold(len: usize, h: &[u64; CHECK_LANES]) -> u64 {
    let mut check = len as u64;
    let mut rot = 0;
    for &hl in h {
        check ^= hl.rotate_left(rot);
        rot += 2;
    }
    check
}

/// The check of a chunk's stored bytes, by the scalar reference (see the module docs).
pub fn chunk_check_scalar(bytes: &[u8]) -> u64 {
    let mut h = seeds();
    feed_scalar(&mut h, bytes);
    fold(bytes.len(), &h)
}

/// The check of a chunk's stored bytes (see the module docs), on the vector form where it
/// runs here: always equal to [`chunk_check_scalar`].
pub fn chunk_check(bytes: &[u8]) -> u64 {
    let mut h = seeds();
    let done = if chunk_check_vectorized() { arch::check_blocks(&mut h, bytes) } else { 0 };
    feed_scalar(&mut h, &bytes[done..]);
    fold(bytes.len(), &h)
}

/// Whether [`chunk_check`] uses the vector form: the CPU has it (`arch::check_blocks`
/// returns 0 where it does not) and it agreed with the scalar form on a fixed input of a few
/// blocks and a tail the first time it was asked. Cached: 0 unknown, 1 no, 2 yes.
pub fn chunk_check_vectorized() -> bool {
    static FORM: AtomicU8 = AtomicU8::new(0);
    match FORM.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let ok = arch::check_blocks_available() && check_selftest();
            FORM.store(if ok { 2 } else { 1 }, Ordering::Relaxed);
            ok
        }
    }
}

/// The vector form against the scalar form on 5 blocks and a 77-byte tail of fixed bytes.
fn check_selftest() -> bool {
    let mut bytes = [0u8; 5 * CHECK_BLOCK + 77];
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    for b in &mut bytes {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *b = s.to_le_bytes()[7];
    }
    let mut h = seeds();
    let done = arch::check_blocks(&mut h, &bytes);
    feed_scalar(&mut h, &bytes[done..]);
    done == 5 * CHECK_BLOCK && fold(bytes.len(), &h) == chunk_check_scalar(&bytes)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test lengths and byte patterns
mod tests {
    use super::*;

    /// The definition written out word by word, without the block loop.
    fn by_words(bytes: &[u8]) -> u64 {
        let mut h: [u64; CHECK_LANES] = core::array::from_fn(|l| l as u64);
        for (k, word) in bytes.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..word.len()].copy_from_slice(word);
            let l = k % CHECK_LANES;
            h[l] = h[l].wrapping_add(u64::from_le_bytes(w)).rotate_left(29).wrapping_mul(CHECK_P);
        }
        let mut r = bytes.len() as u64;
        for (l, &hl) in h.iter().enumerate() {
            r ^= hl.rotate_left(2 * l as u32);
        }
        r
    }

    const MAX: usize = 4 * CHECK_BLOCK + 100;

    fn bytes(n: usize, seed: u64) -> [u8; MAX] {
        let mut b = [0u8; MAX];
        let mut s = seed;
        for v in b.iter_mut().take(n) {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            *v = (s >> 56) as u8;
        }
        b
    }

    #[test]
    fn blocks_and_tail_follow_the_definition_in_both_forms() {
        std::eprintln!("rans64 chunk check: vector form {}", chunk_check_vectorized());
        for n in 0..MAX {
            let b = bytes(n, n as u64);
            let want = by_words(&b[..n]);
            assert_eq!(chunk_check_scalar(&b[..n]), want, "n = {n}");
            assert_eq!(chunk_check(&b[..n]), want, "n = {n}");
            // Unaligned starts: the vector form loads without alignment.
            if n > 3 {
                assert_eq!(chunk_check(&b[3..n]), by_words(&b[3..n]), "n = {n}, offset 3");
            }
        }
    }

    #[test]
    fn fixed_values() {
        // Pinned so that a change of the function cannot pass unnoticed (the Python checker,
        // docs/vectors/rans64_check.py, computes the same values from the spec).
        assert_eq!(chunk_check(&[]), 0x4F18_E5B7_1A4D_B0E2);
        assert_eq!(chunk_check(b"int4-rans64-2"), 0x2874_C048_B7AD_26B9);
        let mut b = [0u8; 768];
        for (k, v) in b.iter_mut().enumerate() {
            *v = k as u8;
        }
        assert_eq!(chunk_check(&b), 0x3899_F0C3_3DE7_3FFB);
        assert_eq!(chunk_check_scalar(&b), 0x3899_F0C3_3DE7_3FFB);
    }

    #[test]
    fn every_single_bit_flip_and_every_damaged_word_changes_the_check() {
        for n in [1usize, 7, 8, 9, 63, 64, 65, 200, 256, 300, 1000] {
            let b = bytes(n, 99 + n as u64);
            let c = chunk_check(&b[..n]);
            for bit in 0..8 * n {
                let mut d = b;
                d[bit / 8] ^= 1 << (bit % 8);
                assert_ne!(chunk_check(&d[..n]), c, "n = {n}, bit {bit}");
            }
            // A whole damaged word (here: every word replaced by its complement).
            for k in 0..n.div_ceil(8) {
                let mut d = b;
                for v in &mut d[8 * k..(8 * k + 8).min(n)] {
                    *v = !*v;
                }
                assert_ne!(chunk_check(&d[..n]), c, "n = {n}, word {k}");
            }
        }
    }

    #[test]
    fn zero_words_and_lane_order_count() {
        // All-zero inputs of different lengths differ (the length is folded in), and swapping
        // two lanes' words changes the check (lanes start from distinct values).
        assert_ne!(chunk_check(&[0u8; 256]), chunk_check(&[0u8; 264]));
        let mut a = [0u8; 256];
        a[0] = 1;
        let mut b = [0u8; 256];
        b[8] = 1;
        assert_ne!(chunk_check(&a), chunk_check(&b));
    }
}
