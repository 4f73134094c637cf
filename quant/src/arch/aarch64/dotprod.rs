//! The NEON + dot product arm (`SDOT`, FEAT_DotProd): the int8-activation path with `SDOT`,
//! the f32 path of the NEON arm.
//!
//! `SDOT Vd.4S, Vn.16B, Vm.16B` adds to each i32 lane `j` the four products
//! `n[4j + t] · m[4j + t]`, `t < 4`, of signed bytes: exact (each sum of four is at most
//! 4 · 128 · 128 = 2¹⁶ in magnitude), so the group dot products, and with them the results, are
//! bit-identical to the scalar reference (same driver and epilogue as the NEON arm,
//! `neon::q8_chunked`). The intrinsic `vdotq_s32` is unstable on the pinned toolchain, so
//! [`sdot`] emits the instruction with `asm!`.

use core::arch::aarch64::{int8x16_t, int32x4_t, vaddq_s32, vaddvq_s32, vdupq_n_s32};
use core::arch::asm;
use core::ops::Range;

use super::{arr, ld_s8, neon};
use crate::isa::Isa;
use crate::kernels::{Matrix, QuantizedActs};

fn cpu_ok() -> bool {
    Isa::NeonDot.cpu_supports()
}

/// `acc + SDOT(a, b)`: lane `j` gains `Σ_{t<4} a[4j + t] · b[4j + t]` (signed bytes).
///
/// Safe to call from any code compiled with the `dotprod` target feature; elsewhere the caller
/// must have detected the feature (`unsafe` call).
#[inline]
#[target_feature(enable = "neon,dotprod")]
pub(super) fn sdot(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: SDOT reads its three vector registers and writes only `acc`: no memory, stack or
    // flags are touched (hence `pure, nomem, nostack, preserves_flags`). The instruction exists
    // on this CPU because this function carries the `dotprod` target feature, which its callers
    // must guarantee.
    unsafe {
        asm!(
            "sdot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc,
            a = in(vreg) a,
            b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// Exact `Σ w[k] · x[k]` over `k < w.len()` with `SDOT`.
///
/// # Panics
/// If `x` is shorter than `w`.
#[inline]
#[target_feature(enable = "neon,dotprod")]
fn dot_sdot(w: &[i8], x: &[i8]) -> i32 {
    let n = w.len();
    let x = &x[..n];
    let (mut a0, mut a1) = (vdupq_n_s32(0), vdupq_n_s32(0));
    let mut k = 0;
    while k + 32 <= n {
        a0 = sdot(a0, ld_s8(arr(w, k)), ld_s8(arr(x, k)));
        a1 = sdot(a1, ld_s8(arr(w, k + 16)), ld_s8(arr(x, k + 16)));
        k += 32;
    }
    if k + 16 <= n {
        a0 = sdot(a0, ld_s8(arr(w, k)), ld_s8(arr(x, k)));
        k += 16;
    }
    if k < n {
        a1 = sdot(a1, neon::tail_i8(&w[k..]), neon::tail_i8(&x[k..]));
    }
    vaddvq_s32(vaddq_s32(a0, a1))
}

/// f32-activation kernel: the NEON one, after checking this arm's features. Returns `false`,
/// without running, if the CPU lacks NEON or the dot product extension.
pub(crate) fn matmul_f32_rows(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    cpu_ok() && neon::matmul_f32_rows(m, x, s, rows, y)
}

/// int8-activation kernel over `rows` (layout of `crate::scalar::matmul_q8_rows`). Returns
/// `false`, without running, if the CPU lacks NEON or the dot product extension.
pub(crate) fn matmul_q8_rows(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    // SAFETY: `q8_rows` needs NEON and the dot product extension (`Isa::NeonDot`'s features),
    // and takes every shape `q8_entry` lets through.
    unsafe { super::q8_entry(Isa::NeonDot, m, xq, rows, y, q8_rows) }
}

/// # Safety
/// The CPU supports the dot product extension.
#[target_feature(enable = "neon,dotprod")]
unsafe fn q8_rows(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]) {
    if neon::nibble_blocks(m) {
        neon::q8_nibbles(m, xq, rows, y, |a, w, x| sdot(a, w, x));
    } else {
        neon::q8_chunked(m, xq, rows, y, |w, x| dot_sdot(w, x));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::aarch64::{ld_s32, st_s32};

    /// [`sdot`] on arrays.
    #[target_feature(enable = "neon,dotprod")]
    fn sdot_arrays(acc: &[i32; 4], a: &[i8; 16], b: &[i8; 16]) -> [i32; 4] {
        let mut out = [0; 4];
        st_s32(&mut out, sdot(ld_s32(acc), ld_s8(a), ld_s8(b)));
        out
    }

    /// `SDOT` adds the four byte products of each lane to that lane, for random and extreme
    /// operands (−128 · −128 in every position, mixed signs), and `dot_sdot` is exact on every
    /// length up to 100.
    #[test]
    fn sdot_wrapper_matches_its_definition() {
        if !cpu_ok() {
            assert!(
                !std::env::var("TETRAD_REQUIRE_ISA")
                    .is_ok_and(|v| v.split(',').any(|n| n.trim() == "neon-dot")),
                "neon-dot required but the CPU lacks the dot product extension"
            );
            std::eprintln!("SKIPPED: no dot product extension");
            return;
        }
        let mut st = 0x9e37_79b9u32;
        let mut rnd = || {
            st = st.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            i8::from_le_bytes([st.to_le_bytes()[3]])
        };
        let cases: [([i8; 16], [i8; 16], [i32; 4]); 4] = [
            ([-128; 16], [-128; 16], [7, -7, i32::MAX - 65_536, i32::MIN + 65_536]),
            ([127; 16], [-128; 16], [0; 4]),
            (core::array::from_fn(|_| rnd()), core::array::from_fn(|_| rnd()), [1, 2, 3, 4]),
            (core::array::from_fn(|_| rnd()), [1; 16], [0; 4]),
        ];
        for (a, b, acc) in cases {
            // SAFETY: the dot product extension is available (checked above).
            let out = unsafe { sdot_arrays(&acc, &a, &b) };
            for j in 0..4 {
                let want = (0..4).fold(acc[j], |s, t| {
                    s.wrapping_add(i32::from(a[4 * j + t]) * i32::from(b[4 * j + t]))
                });
                assert_eq!(out[j], want, "lane {j}");
            }
        }
        let w: [i8; 100] = core::array::from_fn(|k| if k % 5 == 0 { -128 } else { rnd() });
        let x: [i8; 100] =
            core::array::from_fn(|k| if k % 5 == 0 { -127 } else { rnd().max(-127) });
        for n in 0..=100 {
            let want: i32 =
                w[..n].iter().zip(&x[..n]).map(|(&a, &b)| i32::from(a) * i32::from(b)).sum();
            // SAFETY: the dot product extension is available (checked above).
            assert_eq!(unsafe { dot_sdot(&w[..n], &x[..n]) }, want, "n = {n}");
        }
    }
}
