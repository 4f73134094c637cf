//! The NEON + int8 matrix multiply arm (`SMMLA`, FEAT_I8MM): the int8-activation path with
//! `SMMLA`, the f32 path of the NEON arm.
//!
//! `SMMLA Vd.4S, Vn.16B, Vm.16B` multiplies the 2 × 8 signed-byte matrix `A` held row-major in
//! `Vn` by the 8 × 2 matrix `B` held column-major in `Vm` and adds the 2 × 2 i32 product,
//! row-major, to `Vd`: lane `2r + c` gains `Σ_{t<8} n[8r + t] · m[8c + t]`. Loading 8 columns
//! of two weight rows into `Vn` and the same 8 columns of two activation rows into `Vm` gives
//! four dot products per instruction — weight rows `o, o+1` × activation rows `s, s+1` — so this
//! arm walks output rows in pairs and activation rows in pairs (an odd last row is paired with
//! itself and the duplicate result discarded). Products are exact (each lane gains at most
//! 8 · 128 · 128 = 2¹⁷ per instruction), so the group dot products and the results are
//! bit-identical to the scalar reference, whose epilogue is reproduced per output.
//!
//! For int4-row, mxfp4 and int4-grouped with `gs % 32 == 0` the weights are unpacked in
//! registers with no decode buffer ([`q8_nibbles`], activation tiles of up to 4 rows); the other
//! integer formats go through the chunked decode ([`q8_chunked`], [`dot2x2`]).
//!
//! The intrinsic `vmmlaq_s32` is unstable on the pinned toolchain, so [`smmla`] emits the
//! instruction with `asm!`.

use core::arch::aarch64::{
    int8x16_t, vaddq_s32, vdupq_n_s32, vreinterpretq_s8_s64, vreinterpretq_s64_s8, vzip1q_s64,
    vzip2q_s64,
};
use core::ops::Range;

use super::{CH, ST, arr, ld_s8, ld_u8, neon, st_s32};
use crate::format::Format;
use crate::isa::Isa;
use crate::kernels::{Matrix, QuantizedActs};
use crate::scalar;

#[cfg(test)]
fn cpu_ok() -> bool {
    Isa::NeonI8mm.cpu_supports()
}

int8_acc_insn! {
    /// `acc + SMMLA(a, b)`: lane `2r + c` gains `Σ_{t<8} a[8r + t] · b[8c + t]` (signed bytes).
    smmla, "smmla", "neon,i8mm"
}

/// One 16-column step: columns 0..8 and 8..16 of rows `p`, `q` interleaved as two 2 × 8
/// matrices (`[p[0..8], q[0..8]]`, `[p[8..16], q[8..16]]`).
#[inline]
#[target_feature(enable = "neon")]
fn pair_halves(p: int8x16_t, q: int8x16_t) -> (int8x16_t, int8x16_t) {
    let (p, q) = (vreinterpretq_s64_s8(p), vreinterpretq_s64_s8(q));
    (vreinterpretq_s8_s64(vzip1q_s64(p, q)), vreinterpretq_s8_s64(vzip2q_s64(p, q)))
}

/// Exact `[w0·x0, w0·x1, w1·x0, w1·x1]` over the `w0.len()` columns of four segments.
///
/// # Panics
/// If `w1`, `x0` or `x1` is shorter than `w0`.
#[inline]
#[target_feature(enable = "neon,i8mm")]
fn dot2x2(w0: &[i8], w1: &[i8], x0: &[i8], x1: &[i8]) -> [i32; 4] {
    let n = w0.len();
    let (w1, x0, x1) = (&w1[..n], &x0[..n], &x1[..n]);
    let (mut a0, mut a1) = (vdupq_n_s32(0), vdupq_n_s32(0));
    let mut k = 0;
    while k + 16 <= n {
        // k + 16 ≤ n and all four slices hold n codes.
        let (vw0, vw1) = (ld_s8(arr(w0, k)), ld_s8(arr(w1, k)));
        let (vx0, vx1) = (ld_s8(arr(x0, k)), ld_s8(arr(x1, k)));
        let (wl, wh) = pair_halves(vw0, vw1);
        let (xl, xh) = pair_halves(vx0, vx1);
        a0 = smmla(a0, wl, xl);
        a1 = smmla(a1, wh, xh);
        k += 16;
    }
    if k < n {
        let (wl, wh) = pair_halves(neon::tail_i8(&w0[k..]), neon::tail_i8(&w1[k..]));
        let (xl, xh) = pair_halves(neon::tail_i8(&x0[k..]), neon::tail_i8(&x1[k..]));
        a0 = smmla(a0, wl, xl);
        a1 = smmla(a1, wh, xh);
    }
    let mut out = [0i32; 4];
    st_s32(&mut out, vaddq_s32(a0, a1));
    out
}

neon_plus_entries!(Isa::NeonI8mm, q8_rows);

/// The int8-activation kernel: [`q8_nibbles`] for the formats of `neon::nibble_blocks`, else
/// [`q8_chunked`].
///
/// # Safety
/// The CPU supports the int8 matrix multiply extension.
#[target_feature(enable = "neon,i8mm")]
unsafe fn q8_rows(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]) {
    if neon::nibble_blocks(m) {
        q8_nibbles(m, xq, rows, y);
    } else {
        q8_chunked(m, xq, rows, y);
    }
}

/// Fused kernel for the nibble formats whose groups start on 32-column blocks: output rows in
/// pairs, activation rows in tiles of up to 4 (two pairs); each 16-byte load of the two weight
/// rows is unpacked in registers (`neon::nibble_codes`) into four 2 × 8 matrices, multiplied by
/// `SMMLA` against the matching 8 × 2 activation blocks. Per group, the lanes hold the four exact
/// dot products of a row pair × activation pair; the columns past the group's last full block
/// are added one by one, then the scalar epilogue per output. Odd rows are paired with
/// themselves and the duplicate discarded.
#[target_feature(enable = "neon,i8mm")]
fn q8_nibbles(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]) {
    let (nr, s) = (rows.len(), xq.s());
    let mut s0 = 0;
    while s0 < s {
        let st = (s - s0).min(4);
        let q = |k: usize| xq.row(s0 + k.min(st - 1)).0;
        let mut r = 0;
        while r < nr {
            let two = r + 1 < nr;
            let o = [rows.start + r, rows.start + r + usize::from(two)];
            // v[j][k]: output row o[j], activation row s0 + k.
            let v: [[f32; 4]; 2] = if st > 2 {
                let v = nibble_pairs_q8::<2>(m, o, [[q(0), q(1)], [q(2), q(3)]]);
                [[v[0][0], v[0][1], v[0][2], v[0][3]], [v[1][0], v[1][1], v[1][2], v[1][3]]]
            } else {
                let v = nibble_pairs_q8::<1>(m, o, [[q(0), q(1)]]);
                [[v[0][0], v[0][1], 0.0, 0.0], [v[1][0], v[1][1], 0.0, 0.0]]
            };
            store_pair(y, xq, s0..s0 + st, nr, r, &v[..1 + usize::from(two)]);
            r += 2;
        }
        s0 += st;
    }
}

/// The reference's epilogue for output rows `r`, `r + 1` (of `nr`) and activation rows `acts`:
/// `y[s·nr + r + j] = v[j][s − acts.start] · sx(s)` for each row `j` of `v` (one or two).
#[inline]
fn store_pair<const N: usize>(
    y: &mut [f32],
    xq: &QuantizedActs<'_>,
    acts: Range<usize>,
    nr: usize,
    r: usize,
    v: &[[f32; N]],
) {
    for (k, s) in acts.enumerate() {
        let sx = xq.row(s).1;
        for (j, vj) in v.iter().enumerate() {
            y[s * nr + r + j] = vj[k] * sx;
        }
    }
}

/// Weight rows `o[0]`, `o[1]` against `P` activation-row pairs `xs`: `acc[j][2p + i]` is the
/// reference's `acc` (before `· sx`) of output row `o[j]` and activation row `xs[p][i]`.
#[inline]
#[target_feature(enable = "neon,i8mm")]
fn nibble_pairs_q8<const P: usize>(
    m: &Matrix<'_>,
    o: [usize; 2],
    xs: [[&[i8]; 2]; P],
) -> [[f32; 4]; 2] {
    let (ni, gl) = (m.i(), m.group_len());
    let rows = [m.row_bytes(o[0]), m.row_bytes(o[1])];
    let mx = m.format() == Format::Mxfp4;
    let lut = ld_s8(&neon::MX_LUT);
    let mut acc = [[0f32; 4]; 2];
    for g in 0..m.groups_per_row() {
        let (c0, c1) = (g * gl, ((g + 1) * gl).min(ni));
        let nfull = (c1 - c0) / 32;
        let mut a = [vdupq_n_s32(0); P];
        for b in 0..nfull {
            let col = c0 + 32 * b; // even: c0 is a multiple of 32
            let (v0, v1) = (ld_u8(arr(rows[0], col / 2)), ld_u8(arr(rows[1], col / 2)));
            let ((a0, b0), (a1, b1)) =
                (neon::nibble_codes(v0, mx, lut), neon::nibble_codes(v1, mx, lut));
            let (wl0, wh0) = pair_halves(a0, a1); // columns 0..8, 8..16 of both rows
            let (wl1, wh1) = pair_halves(b0, b1); // columns 16..24, 24..32
            for (ap, [x0, x1]) in a.iter_mut().zip(&xs) {
                let (x0, x1): (&[i8; 32], &[i8; 32]) = (arr(x0, col), arr(x1, col));
                let (p0, p1) = (ld_s8(arr(x0, 0)), ld_s8(arr(x1, 0)));
                let (q0, q1) = (ld_s8(arr(x0, 16)), ld_s8(arr(x1, 16)));
                let (xl0, xh0) = pair_halves(p0, p1);
                let (xl1, xh1) = pair_halves(q0, q1);
                *ap = smmla(smmla(smmla(smmla(*ap, wl0, xl0), wh0, xh0), wl1, xl1), wh1, xh1);
            }
        }
        for (p, ap) in a.iter().enumerate() {
            let mut lanes = [0i32; 4];
            st_s32(&mut lanes, *ap);
            for j in 0..2 {
                let sc = scalar::group_scale_q8(m, o[j], g);
                for i in 0..2 {
                    let x = xs[p][i];
                    let mut d = lanes[2 * j + i];
                    for (c, &xc) in x.iter().enumerate().take(c1).skip(c0 + 32 * nfull) {
                        let code = neon::nibble_code(rows[j][c / 2] >> (4 * (c % 2)), mx);
                        d += i32::from(code) * i32::from(xc);
                    }
                    #[allow(clippy::cast_precision_loss)] // the spec's rounding
                    let df = d as f32;
                    acc[j][2 * p + i] += df * sc;
                }
            }
        }
    }
    acc
}

/// Output rows in pairs, activation rows in pairs within tiles of [`ST`], chunked decode of both
/// weight rows, [`dot2x2`] per group segment, the scalar epilogue per output.
#[target_feature(enable = "neon,i8mm")]
fn q8_chunked(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]) {
    let (ni, gl, nr, s) = (m.i(), m.group_len(), rows.len(), xq.s());
    let (mut b0, mut b1) = ([0i8; CH], [0i8; CH]);
    let mut s0 = 0;
    while s0 < s {
        let st = (s - s0).min(ST);
        let mut r = 0;
        while r < nr {
            let two = r + 1 < nr;
            let o = [rows.start + r, rows.start + r + usize::from(two)];
            let (row0, row1) = (m.row_bytes(o[0]), m.row_bytes(o[1]));
            let mut acc = [[0f32; ST]; 2];
            let mut d = [[0i32; ST]; 2];
            let (mut g, mut gend, mut c0) = (0, gl.min(ni), 0);
            while c0 < ni {
                let n = (ni - c0).min(CH);
                let w0 = neon::decode_i8(m, row0, c0, n, &mut b0);
                let w1 = neon::decode_i8(m, row1, c0, n, &mut b1);
                let mut pos = c0;
                while pos < c0 + n {
                    let end = gend.min(c0 + n);
                    let (ws0, ws1) = (&w0[pos - c0..end - c0], &w1[pos - c0..end - c0]);
                    let mut k = 0;
                    while k < st {
                        let k1 = if k + 1 < st { k + 1 } else { k };
                        let x0 = &xq.row(s0 + k).0[pos..end];
                        let x1 = &xq.row(s0 + k1).0[pos..end];
                        let v = dot2x2(ws0, ws1, x0, x1);
                        d[0][k] += v[0];
                        d[1][k] += v[2];
                        if k1 != k {
                            d[0][k1] += v[1];
                            d[1][k1] += v[3];
                        }
                        k += 2;
                    }
                    pos = end;
                    if pos == gend {
                        for j in 0..2 {
                            let sc = scalar::group_scale_q8(m, o[j], g);
                            for (a, dk) in acc[j][..st].iter_mut().zip(&mut d[j][..st]) {
                                #[allow(clippy::cast_precision_loss)] // the spec's rounding
                                let df = *dk as f32;
                                *a += df * sc;
                                *dk = 0;
                            }
                        }
                        g += 1;
                        gend = (gend + gl).min(ni);
                    }
                }
                c0 += n;
            }
            store_pair(y, xq, s0..s0 + st, nr, r, &acc[..1 + usize::from(two)]);
            r += 2;
        }
        s0 += st;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::aarch64::ld_s32;

    /// [`smmla`] on arrays.
    #[target_feature(enable = "neon,i8mm")]
    fn smmla_arrays(acc: &[i32; 4], a: &[i8; 16], b: &[i8; 16]) -> [i32; 4] {
        let mut out = [0; 4];
        st_s32(&mut out, smmla(ld_s32(acc), ld_s8(a), ld_s8(b)));
        out
    }

    fn required() -> bool {
        std::env::var("TETRAD_REQUIRE_ISA")
            .is_ok_and(|v| v.split(',').any(|n| n.trim() == "neon-i8mm"))
    }

    /// `SMMLA` computes the documented 2 × 2 block (lane `2r + c` = row `r` of the first operand
    /// times row `c` of the second, plus the accumulator) for random and extreme operands, and
    /// `dot2x2` is exact on every length up to 100 with distinct rows.
    #[test]
    fn smmla_wrapper_matches_its_definition() {
        if !cpu_ok() {
            assert!(!required(), "neon-i8mm required but the CPU lacks the i8mm extension");
            std::eprintln!("SKIPPED: no int8 matrix multiply extension");
            return;
        }
        let mut st = 0x2545_f491u32;
        let mut rnd = || {
            st = st.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            i8::from_le_bytes([st.to_le_bytes()[3]])
        };
        let cases: [([i8; 16], [i8; 16], [i32; 4]); 4] = [
            ([-128; 16], [-128; 16], [5, -5, i32::MAX - 131_072, i32::MIN]),
            ([127; 16], [-128; 16], [0; 4]),
            (core::array::from_fn(|_| rnd()), core::array::from_fn(|_| rnd()), [1, 2, 3, 4]),
            (
                core::array::from_fn(|k| if k < 8 { 1 } else { -1 }),
                core::array::from_fn(|_| rnd()),
                [0; 4],
            ),
        ];
        for (a, b, acc) in cases {
            // SAFETY: i8mm is available (checked above).
            let out = unsafe { smmla_arrays(&acc, &a, &b) };
            for rr in 0..2 {
                for c in 0..2 {
                    let want = (0..8).fold(acc[2 * rr + c], |s, t| {
                        s.wrapping_add(i32::from(a[8 * rr + t]) * i32::from(b[8 * c + t]))
                    });
                    assert_eq!(out[2 * rr + c], want, "lane {}", 2 * rr + c);
                }
            }
        }
        let make = |rnd: &mut dyn FnMut() -> i8, lo: i8| -> [i8; 100] {
            core::array::from_fn(|k| if k % 7 == 0 { lo } else { rnd().max(-127) })
        };
        let (w0, w1) = (make(&mut rnd, -128), make(&mut rnd, 127));
        let (x0, x1) = (make(&mut rnd, -127), make(&mut rnd, 127));
        let dot = |a: &[i8], b: &[i8]| -> i32 {
            a.iter().zip(b).map(|(&p, &q)| i32::from(p) * i32::from(q)).sum()
        };
        for n in 0..=100 {
            let (a, b, c, e) = (&w0[..n], &w1[..n], &x0[..n], &x1[..n]);
            let want = [dot(a, c), dot(a, e), dot(b, c), dot(b, e)];
            // SAFETY: i8mm is available (checked above).
            assert_eq!(unsafe { dot2x2(a, b, c, e) }, want, "n = {n}");
        }
    }
}
