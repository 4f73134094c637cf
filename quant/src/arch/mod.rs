//! The SIMD arms of the kernels (the only place in the crate where `unsafe` is allowed).
//!
//! Every arm computes exactly the functions of `crate::scalar` (bit-exact on the
//! int8-activation paths, within the documented tolerance on the f32 paths) and is tested
//! against it. Arm entry points are safe functions that check the CPU features themselves
//! and return `false` (never run) when they are missing, so a `#[target_feature]` body can
//! never execute on a CPU without the feature.
//!
//! Shared here: the portable decoder of int2 / int3 codes, the reference for the arms' SIMD
//! decoders of those formats (SSE2 `x86_64::small_codes64`, NEON `aarch64::neon`) and their
//! fallback for a last partial 64 columns; and the UE8M0 half-scale table.
#![allow(unsafe_code)]

use crate::format::Format;
use crate::kernels::Matrix;

// Soft-float x86-64 targets (no SSE2, e.g. x86_64-unknown-none) get no SIMD arms.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) mod x86_64;

// Soft-float aarch64 targets (no NEON) get no SIMD arms.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod aarch64;

/// Decodes columns `c0 .. c0 + out.len()` of row `row` (bytes) of an int2-row or int3-g64
/// matrix into integer codes (stored value minus offset). `c0` is a multiple of 64.
#[cfg_attr(
    not(any(
        all(target_arch = "x86_64", target_feature = "sse2"),
        all(target_arch = "aarch64", target_feature = "neon")
    )),
    allow(dead_code)
)]
pub(crate) fn decode_small_ints(m: &Matrix<'_>, row: &[u8], c0: usize, out: &mut [i8]) {
    debug_assert_eq!(c0 % 64, 0);
    match m.format() {
        Format::Int2Row => {
            for (k, v) in out.iter_mut().enumerate() {
                let i = c0 + k;
                #[allow(clippy::cast_possible_wrap)] // crumb < 4
                let c = ((row[i / 4] >> (2 * (i % 4))) & 3) as i8;
                *v = c - 2;
            }
        }
        Format::Int3G64 => {
            for (gk, chunk) in out.chunks_mut(64).enumerate() {
                let grp = &row[(c0 / 64 + gk) * 24..][..24];
                for (k, v) in chunk.iter_mut().enumerate() {
                    let u = ((grp[k >> 2] >> (2 * (k & 3))) & 3)
                        | (((grp[16 + (k >> 3)] >> (k & 7)) & 1) << 2);
                    #[allow(clippy::cast_possible_wrap)] // u < 8
                    let c = u as i8;
                    *v = c - 4;
                }
            }
        }
        _ => {
            debug_assert!(false, "decode_small_ints called for {:?}", m.format());
            out.fill(0);
        }
    }
}

/// `2^(e−128)` for every UE8M0 byte (`0` → `+0.0`, `255` → NaN, never used: refused at load):
/// the mxfp4 group scale paired with doubled e2m1 codes (`crate::scalar::ue8m0_half`).
#[cfg_attr(
    not(any(
        all(target_arch = "x86_64", target_feature = "sse2"),
        all(target_arch = "aarch64", target_feature = "neon")
    )),
    allow(dead_code)
)]
pub(crate) static UE8M0_HALF: [f32; 256] = {
    let mut t = [0f32; 256];
    t[1] = f32::from_bits(1 << 22); // 2^−127 (subnormal)
    let mut e = 2u32;
    while e < 255 {
        // 2^(e−128): biased exponent e − 1.
        t[e as usize] = f32::from_bits((e - 1) << 23);
        e += 1;
    }
    t[255] = f32::NAN;
    t
};

/// Inputs shared by the SIMD int2 / int3 decoders' tests (`x86_64`, `aarch64::neon`).
#[cfg(test)]
#[cfg_attr(
    not(any(
        all(target_arch = "x86_64", target_feature = "sse2"),
        all(target_arch = "aarch64", target_feature = "neon")
    )),
    allow(dead_code)
)]
pub(crate) mod small_int_tests {
    use crate::format::Format;

    /// int2-row `I = 1000`, int3-g64 `I = 1000` and `I = 64`, each two rows of pseudo-random
    /// bytes of which about a fifth are `0x00` and a fifth `0xFF` (codes −2 / 1 and −4 / 3),
    /// unit scales: `(format, I, weights, scales)`.
    pub(crate) fn matrices() -> std::vec::Vec<(Format, usize, std::vec::Vec<u8>, std::vec::Vec<f32>)>
    {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut byte = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            match seed % 5 {
                0 => 0x00,
                1 => 0xFF,
                _ => seed.to_le_bytes()[3],
            }
        };
        [(Format::Int2Row, 1000usize), (Format::Int3G64, 1000), (Format::Int3G64, 64)]
            .into_iter()
            .map(|(format, i)| {
                let (bytes, groups) = match format {
                    Format::Int2Row => (i.div_ceil(4), 1),
                    _ => (i.div_ceil(64) * 24, i.div_ceil(64)),
                };
                let w = (0..2 * bytes).map(|_| byte()).collect();
                (format, i, w, std::vec![1.0f32; 2 * groups])
            })
            .collect()
    }

    /// The `(c0, n)` column ranges the decoders' tests cover in a row of `i` columns: every
    /// 256-column chunk start, lengths with and without a partial 64-column unit.
    pub(crate) fn chunk_ranges(i: usize) -> impl Iterator<Item = (usize, usize)> {
        (0..i)
            .step_by(256)
            .flat_map(move |c0| [1, 63, 64, 65, 128, 200, 256].map(|n| (c0, n.min(i - c0))))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ue8m0_half_table_matches_the_scalar_rule() {
        for e in 0..=255u8 {
            let (t, r) = (super::UE8M0_HALF[usize::from(e)], crate::scalar::ue8m0_half(e));
            assert!(t.to_bits() == r.to_bits() || (t.is_nan() && r.is_nan()), "e = {e}");
        }
    }
}
