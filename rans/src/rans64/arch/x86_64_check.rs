//! The chunk check (`super::super::check`) on AVX-512 F + DQ: the 32 lanes are four 8-lane
//! vectors, each a chain of `vpaddq`, a rotate (two shifts and an OR: plain shifts, which
//! Miri implements) and `vpmullq` per 256-byte block; the four chains are independent, so the
//! multiplies overlap. It mirrors the scalar reference step for step (same lanes, same
//! words), so the lanes it leaves are exactly the reference's.

use core::arch::x86_64::{
    __m512i, _mm512_add_epi64, _mm512_loadu_si512, _mm512_mullo_epi64, _mm512_or_si512,
    _mm512_set1_epi64, _mm512_slli_epi64, _mm512_srli_epi64, _mm512_storeu_si512,
};

use super::super::check::{CHECK_BLOCK, CHECK_LANES, CHECK_P, CHECK_ROT};

/// Whether this CPU has AVX-512 F and DQ (`vpmullq`).
pub(super) fn check_avx512_detected() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(all(target_feature = "avx512f", target_feature = "avx512dq"))
    }
}

/// Feeds the whole 256-byte blocks of `bytes` to the lanes `h`; returns the bytes consumed.
pub(super) fn check_blocks_avx512(h: &mut [u64; CHECK_LANES], bytes: &[u8]) -> usize {
    if !check_avx512_detected() {
        return 0;
    }
    // SAFETY: AVX-512 F and DQ are available (checked just above).
    unsafe { blocks(h, bytes) }
}

/// # Safety
/// AVX-512 F and DQ must be available.
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn blocks(h: &mut [u64; CHECK_LANES], bytes: &[u8]) -> usize {
    let n = bytes.len() / CHECK_BLOCK;
    #[allow(clippy::cast_possible_wrap)] // the bit pattern of P
    let p = _mm512_set1_epi64(CHECK_P as i64);
    let mut v: [__m512i; 4] = core::array::from_fn(|k| {
        let lanes = &h[8 * k..8 * k + 8];
        // SAFETY: `lanes` is 8 u64 = 64 bytes; the unaligned load reads exactly them.
        unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) }
    });
    for block in bytes.chunks_exact(CHECK_BLOCK) {
        for (vk, words) in v.iter_mut().zip(block.chunks_exact(64)) {
            // SAFETY: `words` is 64 bytes; the unaligned load reads exactly them.
            let w = unsafe { _mm512_loadu_si512(words.as_ptr().cast()) };
            let x = _mm512_add_epi64(*vk, w);
            let r = _mm512_or_si512(
                _mm512_slli_epi64::<{ CHECK_ROT }>(x),
                _mm512_srli_epi64::<{ 64 - CHECK_ROT }>(x),
            );
            *vk = _mm512_mullo_epi64(r, p);
        }
    }
    for (vk, lanes) in v.iter().zip(h.chunks_exact_mut(8)) {
        // SAFETY: `lanes` is 8 u64 = 64 bytes; the unaligned store writes exactly them.
        unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), *vk) };
    }
    n * CHECK_BLOCK
}
