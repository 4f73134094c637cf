//! The NEON + dot product arm (`SDOT`, FEAT_DotProd): the int8-activation path with `SDOT`,
//! the f32 path of the NEON arm.
//!
//! `SDOT Vd.4S, Vn.16B, Vm.16B` adds to each i32 lane `j` the four products
//! `n[4j + t] · m[4j + t]`, `t < 4`, of signed bytes: exact (each sum of four is at most
//! 4 · 128 · 128 = 2¹⁶ in magnitude), so the group dot products, and with them the results, are
//! bit-identical to the scalar reference (same driver and epilogue as the NEON arm,
//! `neon::q8_chunked`). The intrinsic `vdotq_s32` is unstable on the pinned toolchain, so
//! [`sdot`] emits the instruction with `asm!`.

use core::ops::Range;

use super::neon;
use crate::isa::Isa;
use crate::kernels::{Matrix, QuantizedActs};

#[cfg(test)]
fn cpu_ok() -> bool {
    Isa::NeonDot.cpu_supports()
}

int8_acc_insn! {
    /// `acc + SDOT(a, b)`: lane `j` gains `Σ_{t<4} a[4j + t] · b[4j + t]` (signed bytes).
    sdot, "sdot", "neon,dotprod"
}

/// Exact `Σ w[k] · x[k]` over `k < w.len()` with `SDOT`.
///
/// # Panics
/// If `x` is shorter than `w`.
#[inline]
#[target_feature(enable = "neon,dotprod")]
fn dot_sdot(w: &[i8], x: &[i8]) -> i32 {
    neon::dot_with(w, x, |a, w, x| sdot(a, w, x))
}

neon_plus_entries!(Isa::NeonDot, q8_rows);

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
    use crate::arch::aarch64::{ld_s8, ld_s32, st_s32};

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
