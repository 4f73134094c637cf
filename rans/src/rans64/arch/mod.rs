//! SIMD arms of `int4-rans64-t1`: the only modules of this format allowed `unsafe`.
//!
//! **Decode.** Each arm exposes a safe `rounds` function: decode as many whole rounds into
//! `out` (a multiple of 64 bytes) as it can *prove* safe — every way holding at least 64 unread bytes
//! at the start of a round, which covers the two 16-word loads of the round — and return how
//! many it did. The scalar reference decodes the rest with checked fetches, so overruns and
//! seal failures are always reported by the scalar code, identically for every arm.
//!
//! **Encode.** [`encode_rounds`] codes whole rounds of one way or of all four, backwards,
//! while the rounds are full and each way's words have room; the scalar encoder does the
//! partial top round and everything near a floor, so the blob is the scalar encoder's byte
//! for byte.
#![allow(unsafe_code)] // The SIMD arms (CONTRIBUTING.md): every block carries a SAFETY comment.

use super::decode::Arm;
use super::model::{EncodeModel, Model};
use super::model3::Model3;
use super::{CHECK_LANES, LANES, V3_LANES, WAY_LANES, WAYS};

#[cfg(all(target_arch = "aarch64", target_feature = "neon", target_endian = "little"))]
mod aarch64;
#[cfg(all(target_arch = "aarch64", target_feature = "neon", target_endian = "little"))]
mod aarch64_v3;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod x86_64;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod x86_64_check;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod x86_64_encode;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod x86_64_v3;

/// Whether the chunk check has a vector form on this CPU (AVX-512 F + DQ).
pub(super) fn check_blocks_available() -> bool {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        x86_64_check::check_avx512_detected()
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        false
    }
}

/// Feeds the whole blocks of `bytes` to the chunk check's lanes on the vector form; returns
/// the bytes consumed (0 where there is none: the caller feeds everything itself).
pub(super) fn check_blocks(h: &mut [u64; CHECK_LANES], bytes: &[u8]) -> usize {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        x86_64_check::check_blocks_avx512(h, bytes)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        let _ = (h, bytes);
        0
    }
}

/// Whether this build has an encode kernel for `arm` (scalar and, on x86-64, AVX2).
pub(super) fn has_encoder(arm: Arm) -> bool {
    match arm {
        Arm::Scalar => true,
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx2 => true,
        _ => false,
    }
}

/// Encodes whole rounds of the `K` ways `first_way..first_way + K` with `arm`, from round
/// `top − 1` down, way `k` writing its words backwards below `wp[k]` and never below
/// `floor[k]`; returns how many rounds it did (0 for the scalar arm, which the caller runs
/// itself).
#[allow(clippy::too_many_arguments)] // the way loop's state, handed over as is
pub(super) fn encode_rounds<const K: usize>(
    arm: Arm,
    raw: &[u8],
    first_way: usize,
    top: usize,
    model: &EncodeModel,
    x: &mut [[u32; WAY_LANES]; K],
    region: &mut [u8],
    wp: &mut [usize; K],
    floor: &[usize; K],
) -> usize {
    match arm {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx2 => {
            x86_64_encode::encode_rounds_avx2(raw, first_way, top, model, x, region, wp, floor)
        }
        _ => {
            let _ = (raw, first_way, top, model, x, region, wp, floor);
            0
        }
    }
}

/// Whether the CPU runs `arm` (scalar is handled by the caller).
pub(super) fn detected(arm: Arm) -> bool {
    match arm {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx2 => x86_64::avx2_detected(),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx512 => x86_64::avx512_detected(),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx512Vbmi => x86_64::avx512_vbmi_detected(),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon", target_endian = "little"))]
        Arm::Neon => aarch64::neon_detected(),
        _ => false,
    }
}

/// One chunk's part of a paired decode ([`pair_rounds`]): its model, states, ways, way
/// positions and output.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code) // only the x86-64 AVX-512 arm has a paired kernel
)]
pub(super) struct Side<'m, 'w> {
    pub(super) model: &'m Model,
    pub(super) st: &'m mut [u32; LANES],
    pub(super) ways: &'m [&'w [u8]; WAYS],
    pub(super) pos: &'m mut [usize; WAYS],
    pub(super) out: &'m mut [u8],
}

/// Decodes whole rounds of two chunks at once with `arm`, under the same contract as
/// [`rounds`] for each; returns how many rounds each got. Only the AVX-512 and AVX-512 VBMI
/// arms have a paired kernel (their single-chunk loop is bound by the latency of four
/// chains); every other arm
/// returns 0 and the caller decodes the chunks one after the other.
pub(super) fn pair_rounds(arm: Arm, a: Side<'_, '_>, b: Side<'_, '_>) -> usize {
    match arm {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx512 => x86_64::pair_rounds_avx512(a, b),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx512Vbmi => x86_64::pair_rounds_avx512_vbmi(a, b),
        _ => {
            let _ = (a, b);
            0
        }
    }
}

/// Decodes whole rounds with `arm`; returns the number of rounds done (0 for the scalar arm,
/// which the caller runs itself).
pub(super) fn rounds(
    arm: Arm,
    model: &Model,
    st: &mut [u32; LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    match arm {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx2 => x86_64::rounds_avx2(model, st, ways, pos, out),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx512 => x86_64::rounds_avx512(model, st, ways, pos, out),
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx512Vbmi => x86_64::rounds_avx512_vbmi(model, st, ways, pos, out),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon", target_endian = "little"))]
        Arm::Neon => aarch64::rounds_neon(model, st, ways, pos, out),
        _ => {
            let _ = (model, st, ways, pos, out);
            0
        }
    }
}

/// Version 3: decodes whole rounds (128 bytes each) into `out` (a multiple of 128 bytes) with
/// `arm` while every way holds at least 64 unread bytes at the start of a round; returns the
/// number of rounds done (0 for an arm without a version-3 kernel: the scalar code decodes).
pub(super) fn rounds3(
    arm: Arm,
    model: &Model3,
    st: &mut [u16; V3_LANES],
    ways: &[&[u8]; WAYS],
    pos: &mut [usize; WAYS],
    out: &mut [u8],
) -> usize {
    match arm {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        Arm::Avx2 | Arm::Avx512 | Arm::Avx512Vbmi => {
            x86_64_v3::rounds3(arm, model, st, ways, pos, out)
        }
        #[cfg(all(target_arch = "aarch64", target_feature = "neon", target_endian = "little"))]
        Arm::Neon => aarch64_v3::rounds3_neon(model, st, ways, pos, out),
        _ => {
            let _ = (model, st, ways, pos, out);
            0
        }
    }
}
