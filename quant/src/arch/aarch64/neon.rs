//! The NEON arm (128-bit Advanced SIMD), for every format with a value rule, plus the chunk
//! decoders and the int8-activation driver that the `dotprod` and `i8mm` arms share.
//!
//! Decoding (per [`CH`]-column chunk of a row, into an L1 buffer):
//! - int4 (row, grouped): 16 bytes → low nibbles (`AND 0x0F`) and high nibbles (`USHR #4`) →
//!   `ZIP1`/`ZIP2` back into column order (low nibble = even column) → minus 8;
//! - mxfp4: the same nibble split, then a 16-entry `TBL` of `±2·e2m1` (integers in `[−12, 12]`),
//!   with the group scale halved to `2^(e−128)` (`crate::scalar::ue8m0_half`);
//! - fp8 e4m3: no table: the byte is sign-extended to 32 bits (`SXTL` twice), shifted left by 20
//!   and masked with `0x87F0_0000`, which puts sign, exponent and mantissa in f32 position: the
//!   f32 with those bits is exactly `e4m3 · 2⁻¹²⁰`, subnormals included; one multiplication by
//!   `2¹²⁰` (exact) gives the value; NaN codes (`|b| = 0x7F`) are OR-ed to all-ones;
//! - int2-row / int3-g64, 64 columns per step ([`small_codes64`]): the 16 crumb bytes split
//!   into four planes `(v >> 2k) & 3` (`USHR`, `AND`), put back in column order by `ZIP1`/`ZIP2`
//!   byte-wise (planes 0, 1 and 2, 3) then 16-bit-wise; for int3 the 8 third-bit bytes are each
//!   repeated 8 times by `TBL`, tested against `1 << (k % 8)` (`CMTST`) and masked to 4, then
//!   OR-ed in; minus 2 (int2) or 4 (int3). A last partial 64 columns goes through the portable
//!   decoder of `crate::arch`;
//! - int8: used in place; f32 weights: copied out of the (possibly unaligned) byte row.
//!
//! f32 path, int4-row / mxfp4 / int4-grouped `gs % 32 == 0` / fp8 / int2-row / int3-g64
//! ([`f32_fused`]): decoded in registers, 32 columns at a time (int2 / int3: 8 crumb bytes and,
//! for int3, 4 bit bytes per block, [`small_codes32`]), each block shared by up to 4 activation
//! rows, 2 `FMLA` accumulators per row, `acc = fma(part, scale, acc)` per group, the columns past
//! a group's last full block summed on the side.
//!
//! f32 path, other formats ([`f32_chunked`]): `part += w · x` with `FMLA` over 16 columns at a
//! time (4 accumulators of 4 lanes),
//! a zero-padded vector for the last 1–3 columns of a segment, `acc = fma(part, scale, acc)` at
//! each group end, one horizontal sum (`FADDP`) per output. Within the documented tolerance of
//! the scalar reference (the order differs; `docs/kernels.md`).
//!
//! int8 path: `SMULL`/`SMULL2` products (i8 · i8 fits i16: at most 128 · 127) pairwise
//! accumulated into i32 lanes (`SADALP`), summed exactly per group, then the scalar reference's
//! own epilogue `acc += (d as f32) · scale`, `y = acc · sx`: bit-exact. For int4-row, mxfp4
//! and int4-grouped with `gs % 32 == 0` there is no decode buffer: [`q8_nibbles`] unpacks 32
//! codes in registers per 16-byte load and multiplies them against up to 4 activation rows at
//! once (this kernel is shared with the SDOT arm, which passes `SDOT` as the 16-byte step).
//!
//! Every function carries `#[target_feature(enable = "neon")]` (NEON is also a target feature of
//! every build that contains this module); the safe entry points check the CPU first. Vector
//! loads and stores go through the safe helpers of the parent module, which take array
//! references (`super::ld_u8`, `super::arr`, …), so the kernels themselves hold no `unsafe`.

use core::arch::aarch64::{
    float32x4_t, int8x8_t, int8x16_t, int32x4_t, uint8x16_t, vaddq_f32, vaddq_s32, vaddvq_f32,
    vaddvq_s32, vandq_u8, vandq_u32, vceqq_u32, vcombine_u8, vcvtq_f32_s32, vdup_n_u8, vdupq_n_f32,
    vdupq_n_s8, vdupq_n_s32, vdupq_n_u8, vdupq_n_u32, vfmaq_f32, vget_low_s8, vget_low_s16,
    vmovl_high_s8, vmovl_high_s16, vmovl_s8, vmovl_s16, vmull_high_s8, vmull_s8, vmulq_f32,
    vorrq_u8, vorrq_u32, vpadalq_s16, vqtbl1q_s8, vqtbl1q_u8, vreinterpretq_f32_u32,
    vreinterpretq_s8_u8, vreinterpretq_u8_u16, vreinterpretq_u16_u8, vreinterpretq_u32_f32,
    vreinterpretq_u32_s32, vshlq_n_s32, vshrq_n_u8, vsubq_s8, vtstq_u8, vzip1q_u8, vzip1q_u16,
    vzip2q_u8, vzip2q_u16,
};
use core::ops::Range;

use super::{CH, ST, arr, arr_mut, ld_f32, ld_s8, ld_s8x8, ld_u8, ld_u8x8, st_f32, st_s8};
use crate::format::Format;
use crate::kernels::{Matrix, QuantizedActs, Scales};
use crate::scalar;

fn cpu_ok() -> bool {
    crate::isa::Isa::Neon.cpu_supports()
}

/// f32-activation kernel over `rows` (layout of `crate::scalar::matmul_f32_rows`). Returns
/// `false`, without running, if the CPU lacks NEON.
pub(crate) fn matmul_f32_rows(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    if !cpu_ok() {
        return false;
    }
    assert!(x.len() >= s * m.i() && y.len() >= s * rows.len() && rows.end <= m.o());
    // SAFETY: NEON was detected above (and is a target feature of this build).
    unsafe { f32_rows(m, x, s, rows, y) };
    true
}

/// int8-activation kernel over `rows` (layout of `crate::scalar::matmul_q8_rows`). Returns
/// `false`, without running, if the CPU lacks NEON.
pub(crate) fn matmul_q8_rows(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    // SAFETY: `q8_rows` needs NEON only, and takes every shape `q8_entry` lets through.
    unsafe { super::q8_entry(crate::isa::Isa::Neon, m, xq, rows, y, q8_rows) }
}

/// The NEON int8-activation kernel: [`q8_nibbles`] with [`mla16`] where it applies, else
/// [`q8_chunked`] with [`dot_i8`].
#[target_feature(enable = "neon")]
fn q8_rows(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]) {
    if nibble_blocks(m) {
        q8_nibbles(m, xq, rows, y, |a, w, x| mla16(a, w, x));
    } else {
        q8_chunked(m, xq, rows, y, |w, x| dot_i8(w, x));
    }
}

/// Whether `m` is a nibble format whose scale groups start on 32-column blocks (int4-row,
/// mxfp4, int4-grouped with `gs % 32 == 0`): the formats of [`q8_nibbles`].
pub(super) fn nibble_blocks(m: &Matrix<'_>) -> bool {
    match m.format() {
        Format::Int4Row | Format::Mxfp4 => true,
        Format::Int4Grouped => m.group_len().is_multiple_of(32),
        _ => false,
    }
}

/// `±2·e2m1` for the 16 mxfp4 nibbles (bit 3 = sign).
pub(super) static MX_LUT: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// The integer code of one nibble (`nib − 8`, or `±2·e2m1` for mxfp4).
#[inline]
pub(super) fn nibble_code(nib: u8, mx: bool) -> i8 {
    #[allow(clippy::cast_possible_wrap)] // nibble < 16
    let c = if mx { MX_LUT[usize::from(nib & 0xF)] } else { (nib & 0xF) as i8 - 8 };
    c
}

/// The f32-path scale of group `g` of row `o` as this arm uses it (mxfp4 codes are doubled).
fn scale_f32(m: &Matrix<'_>, o: usize, g: usize) -> f32 {
    if let Scales::Ue8m0(e) = m.scales() {
        super::super::UE8M0_HALF[usize::from(e[m.scale_index(o, g)])]
    } else {
        scalar::group_scale(m, o, g)
    }
}

/// A byte row viewed as signed codes.
#[inline]
pub(super) fn as_i8(b: &[u8]) -> &[i8] {
    // SAFETY: `u8` and `i8` have the same size and alignment and every bit pattern is valid for
    // both; the new slice covers exactly the memory of `b` and borrows it for the same lifetime.
    unsafe { core::slice::from_raw_parts(b.as_ptr().cast(), b.len()) }
}

/// 16 packed bytes → the 32 integer codes of their nibbles, in column order.
#[inline]
#[target_feature(enable = "neon")]
pub(super) fn nibble_codes(v: uint8x16_t, mx: bool, lut: int8x16_t) -> (int8x16_t, int8x16_t) {
    let lo = vandq_u8(v, vdupq_n_u8(0x0F));
    let hi = vshrq_n_u8::<4>(v);
    let (a, c) = (vzip1q_u8(lo, hi), vzip2q_u8(lo, hi));
    if mx {
        (vqtbl1q_s8(lut, a), vqtbl1q_s8(lut, c))
    } else {
        let eight = vdupq_n_s8(8);
        (vsubq_s8(vreinterpretq_s8_u8(a), eight), vsubq_s8(vreinterpretq_s8_u8(c), eight))
    }
}

/// 16 bytes of 2-bit fields (field `k` of byte `j` = column `4j + k`) → the 64 fields in
/// column order, as four 16-byte vectors: the four planes `(v ≫ 2k) & 3` (`USHR`, `AND`),
/// interleaved back byte-wise (`ZIP1`/`ZIP2` of planes 0, 1 and of planes 2, 3), then
/// 16-bit-wise. Vectors 0 and 1 depend only on bytes 0..8 of `v`.
#[inline]
#[target_feature(enable = "neon")]
fn crumbs64(v: uint8x16_t) -> [uint8x16_t; 4] {
    let three = vdupq_n_u8(3);
    let p0 = vandq_u8(v, three);
    let p1 = vandq_u8(vshrq_n_u8::<2>(v), three);
    let p2 = vandq_u8(vshrq_n_u8::<4>(v), three);
    let p3 = vshrq_n_u8::<6>(v);
    let (a, b) = (vzip1q_u8(p0, p1), vzip1q_u8(p2, p3)); // columns 0..32 (bytes 0..8)
    let (c, d) = (vzip2q_u8(p0, p1), vzip2q_u8(p2, p3)); // columns 32..64 (bytes 8..16)
    let (a, b) = (vreinterpretq_u16_u8(a), vreinterpretq_u16_u8(b));
    let (c, d) = (vreinterpretq_u16_u8(c), vreinterpretq_u16_u8(d));
    [
        vreinterpretq_u8_u16(vzip1q_u16(a, b)),
        vreinterpretq_u8_u16(vzip2q_u16(a, b)),
        vreinterpretq_u8_u16(vzip1q_u16(c, d)),
        vreinterpretq_u8_u16(vzip2q_u16(c, d)),
    ]
}

/// `1 << (k % 8)` in byte `k`: the bit each replicated byte is tested against.
static BIT_OF_LANE: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];

/// Bytes `first .. first + 8` of `v` as bits (bit `i` of byte `first + j` = column `8j + i`) →
/// 64 bytes in column order, `4` where the bit is set and `0` where not: each byte repeated
/// eight times by a `TBL` (index vector `[first + 2k; 8] ++ [first + 2k + 1; 8]` for output
/// vector `k`), tested against its bit (`CMTST`), masked to `4`. Vectors 0 and 1 depend only
/// on bytes `first .. first + 4`.
#[inline]
#[target_feature(enable = "neon")]
fn bits64_times4(v: uint8x16_t, first: u8) -> [uint8x16_t; 4] {
    let bit = ld_u8(&BIT_OF_LANE);
    let four = vdupq_n_u8(4);
    core::array::from_fn(|k| {
        #[allow(clippy::cast_possible_truncation)] // k < 4
        let j = first + 2 * k as u8;
        let spread = vqtbl1q_u8(v, vcombine_u8(vdup_n_u8(j), vdup_n_u8(j + 1)));
        vandq_u8(vtstq_u8(spread, bit), four)
    })
}

/// The codes (stored value minus offset) from crumb bytes `low` and, for int3, third-bit bytes
/// `high` (from byte `first` on, see [`bits64_times4`]), as four 16-byte vectors in column order.
#[inline]
#[target_feature(enable = "neon")]
fn small_codes(low: uint8x16_t, high: Option<(uint8x16_t, u8)>) -> [int8x16_t; 4] {
    let mut u = crumbs64(low);
    if let Some((h, first)) = high {
        for (c, b) in u.iter_mut().zip(bits64_times4(h, first)) {
            *c = vorrq_u8(*c, b);
        }
    }
    let off = vdupq_n_s8(if high.is_some() { 4 } else { 2 });
    u.map(|c| vsubq_s8(vreinterpretq_s8_u8(c), off))
}

/// The 64 integer codes (stored value minus offset) of one 64-column unit of an int2-row row
/// (16 bytes) or an int3-g64 row (one 24-byte group), in column order as four 16-byte vectors.
///
/// # Panics
/// If `unit` is shorter than 16 bytes (24 for int3).
#[inline]
#[target_feature(enable = "neon")]
fn small_codes64(unit: &[u8], int3: bool) -> [int8x16_t; 4] {
    let low = ld_u8(arr(unit, 0));
    let high = if int3 {
        let h = ld_u8x8(arr(unit, 16));
        Some((vcombine_u8(h, h), 0))
    } else {
        None
    };
    small_codes(low, high)
}

/// The 32 integer codes of columns `col .. col + 32` (`col` a multiple of 32, `col + 32 ≤ I`)
/// of an int2-row or int3-g64 `row`, in column order as two 16-byte vectors: 8 crumb bytes
/// (and for int3 the 4 third-bit bytes of that half group) through [`small_codes`].
#[inline]
#[target_feature(enable = "neon")]
fn small_codes32(m: &Matrix<'_>, row: &[u8], col: usize) -> [int8x16_t; 2] {
    let (low, high) = if m.format() == Format::Int3G64 {
        let (unit, half) = (&row[24 * (col / 64)..][..24], (col / 32) % 2);
        // 8 crumb bytes at 8·half ≤ 8 and the bit bytes 16..24 of the unit.
        let (l, h) = (ld_u8x8(arr(unit, 8 * half)), ld_u8x8(arr(unit, 16)));
        #[allow(clippy::cast_possible_truncation)] // half < 2
        let first = 4 * half as u8;
        (l, Some((vcombine_u8(h, h), first)))
    } else {
        (ld_u8x8(arr(row, col / 4)), None)
    };
    let [a, b, ..] = small_codes(vcombine_u8(low, low), high);
    [a, b]
}

/// Decodes columns `c0 .. c0 + n` (`c0` a multiple of [`CH`], `n ≤ CH`) of `row` into integer
/// codes: a view of `row` itself for int8-row, else the first `n` codes of `buf`.
#[inline]
#[target_feature(enable = "neon")]
pub(super) fn decode_i8<'b>(
    m: &Matrix<'_>,
    row: &'b [u8],
    c0: usize,
    n: usize,
    buf: &'b mut [i8; CH],
) -> &'b [i8] {
    match m.format() {
        Format::Int8Row => return as_i8(&row[c0..c0 + n]),
        Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => {
            let bytes = &row[c0 / 2..(c0 + n).div_ceil(2)];
            let mx = m.format() == Format::Mxfp4;
            let lut = ld_s8(&MX_LUT);
            let full = n / 32;
            for b in 0..full {
                // b < n/32: the 16 bytes at 16·b lie within `bytes` (≥ n/2 bytes), the 32 codes
                // at 32·b within `buf` (32·b + 32 ≤ n ≤ CH).
                let (a, c) = nibble_codes(ld_u8(arr(bytes, 16 * b)), mx, lut);
                st_s8(arr_mut(buf, 32 * b), a);
                st_s8(arr_mut(buf, 32 * b + 16), c);
            }
            for k in 32 * full..n {
                buf[k] = nibble_code(bytes[k / 2] >> (4 * (k % 2)), mx);
            }
        }
        Format::Int2Row | Format::Int3G64 => {
            let int3 = m.format() == Format::Int3G64;
            let unit = if int3 { 24 } else { 16 };
            let full = n / 64;
            for b in 0..full {
                // c0 is a multiple of 64, so unit c0/64 + b starts at column c0 + 64·b.
                let codes = small_codes64(&row[unit * (c0 / 64 + b)..], int3);
                for (k, c) in codes.into_iter().enumerate() {
                    // 64·b + 16·k + 16 ≤ 64·full ≤ n ≤ CH: within `buf`.
                    st_s8(arr_mut(buf, 64 * b + 16 * k), c);
                }
            }
            if 64 * full < n {
                super::super::decode_small_ints(m, row, c0 + 64 * full, &mut buf[64 * full..n]);
            }
        }
        _ => super::super::decode_small_ints(m, row, c0, &mut buf[..n]),
    }
    &buf[..n]
}

/// Eight e4m3 bytes → eight exact f32 values (see the module documentation), NaN codes mapped
/// to NaN.
#[inline]
#[target_feature(enable = "neon")]
fn fp8x8(b: int8x8_t) -> (float32x4_t, float32x4_t) {
    let h = vmovl_s8(b);
    let one = |t: int32x4_t| {
        let bits = vandq_u32(vreinterpretq_u32_s32(vshlq_n_s32::<20>(t)), vdupq_n_u32(0x87F0_0000));
        let v = vmulq_f32(vreinterpretq_f32_u32(bits), vdupq_n_f32(scalar::pow2(120)));
        let nan = vceqq_u32(vandq_u32(bits, vdupq_n_u32(0x7FF0_0000)), vdupq_n_u32(0x07F0_0000));
        vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(v), nan))
    };
    (one(vmovl_s16(vget_low_s16(h))), one(vmovl_high_s16(h)))
}

/// Decodes columns `c0 .. c0 + n` (`c0` a multiple of [`CH`], `n ≤ CH`) of `row` into unscaled
/// f32 values (mxfp4: doubled), the first `n` values of `fbuf`.
#[inline]
#[target_feature(enable = "neon")]
fn decode_f32<'b>(
    m: &Matrix<'_>,
    row: &[u8],
    c0: usize,
    n: usize,
    ibuf: &mut [i8; CH],
    fbuf: &'b mut [f32; CH],
) -> &'b [f32] {
    match m.format() {
        Format::F32 => {
            for (f, c) in fbuf[..n].iter_mut().zip(row[4 * c0..4 * (c0 + n)].chunks_exact(4)) {
                *f = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        Format::Fp8E4m3B128 => {
            let bytes = as_i8(&row[c0..c0 + n]);
            let full = n / 8;
            for b in 0..full {
                // 8·b + 8 ≤ n: within `bytes`, and within `fbuf` (n ≤ CH).
                let (lo, hi) = fp8x8(ld_s8x8(arr(bytes, 8 * b)));
                st_f32(arr_mut(fbuf, 8 * b), lo);
                st_f32(arr_mut(fbuf, 8 * b + 4), hi);
            }
            for (f, &b) in fbuf[8 * full..n].iter_mut().zip(&row[c0 + 8 * full..c0 + n]) {
                *f = scalar::e4m3_to_f32(b);
            }
        }
        _ => {
            let codes = decode_i8(m, row, c0, n, ibuf);
            let full = n / 16;
            for b in 0..full {
                // 16·b + 16 ≤ n = codes.len(): within `codes`, and within `fbuf` (n ≤ CH).
                let v = ld_s8(arr(codes, 16 * b));
                let (l, h) = (vmovl_s8(vget_low_s8(v)), vmovl_high_s8(v));
                let p: &mut [f32; 16] = arr_mut(fbuf, 16 * b);
                st_f32(arr_mut(p, 0), vcvtq_f32_s32(vmovl_s16(vget_low_s16(l))));
                st_f32(arr_mut(p, 4), vcvtq_f32_s32(vmovl_high_s16(l)));
                st_f32(arr_mut(p, 8), vcvtq_f32_s32(vmovl_s16(vget_low_s16(h))));
                st_f32(arr_mut(p, 12), vcvtq_f32_s32(vmovl_high_s16(h)));
            }
            for (f, &c) in fbuf[16 * full..n].iter_mut().zip(&codes[16 * full..]) {
                *f = f32::from(c);
            }
        }
    }
    &fbuf[..n]
}

/// `Σ w[k] · x[k]` over `k < w.len()` as 4 lanes (FMA).
///
/// # Panics
/// If `x` is shorter than `w`.
#[inline]
#[target_feature(enable = "neon")]
fn dot_f32(w: &[f32], x: &[f32]) -> float32x4_t {
    let n = w.len();
    let x = &x[..n];
    let z = vdupq_n_f32(0.0);
    let (mut a0, mut a1, mut a2, mut a3) = (z, z, z, z);
    let mut k = 0;
    while k + 16 <= n {
        // k + 16 ≤ n: every load lies within both slices.
        let (wb, xb): (&[f32; 16], &[f32; 16]) = (arr(w, k), arr(x, k));
        a0 = vfmaq_f32(a0, ld_f32(arr(wb, 0)), ld_f32(arr(xb, 0)));
        a1 = vfmaq_f32(a1, ld_f32(arr(wb, 4)), ld_f32(arr(xb, 4)));
        a2 = vfmaq_f32(a2, ld_f32(arr(wb, 8)), ld_f32(arr(xb, 8)));
        a3 = vfmaq_f32(a3, ld_f32(arr(wb, 12)), ld_f32(arr(xb, 12)));
        k += 16;
    }
    while k + 4 <= n {
        a0 = vfmaq_f32(a0, ld_f32(arr(w, k)), ld_f32(arr(x, k)));
        k += 4;
    }
    if k < n {
        let (mut tw, mut tx) = ([0f32; 4], [0f32; 4]);
        tw[..n - k].copy_from_slice(&w[k..]);
        tx[..n - k].copy_from_slice(&x[k..]);
        a1 = vfmaq_f32(a1, ld_f32(&tw), ld_f32(&tx));
    }
    vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3))
}

/// Up to 16 codes as one vector, zero-padded.
#[inline]
#[target_feature(enable = "neon")]
pub(super) fn tail_i8(s: &[i8]) -> int8x16_t {
    let mut t = [0i8; 16];
    t[..s.len()].copy_from_slice(s);
    ld_s8(&t)
}

/// One 16-byte step of the NEON int8 dot: `w · x` products widened to i16 (exact: at most
/// 128 · 127), pairwise added into the i32 lanes of `acc`.
#[inline]
#[target_feature(enable = "neon")]
fn mla16(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    let acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
    vpadalq_s16(acc, vmull_high_s8(w, x))
}

/// Exact `Σ w[k] · x[k]` over `k < w.len()` (the caller keeps the sum within i32:
/// `I ≤ kernels::MAX_I_Q8`).
///
/// # Panics
/// If `x` is shorter than `w`.
#[inline]
#[target_feature(enable = "neon")]
pub(super) fn dot_i8(w: &[i8], x: &[i8]) -> i32 {
    dot_with(w, x, |a, w, x| mla16(a, w, x))
}

/// Exact `Σ w[k] · x[k]` over `k < w.len()`, 32 then 16 columns at a time into two
/// accumulators, a zero-padded vector for the last 1–15; `step(acc, w, x)` adds the 16 byte
/// products of `w · x` to the i32 lanes of `acc` exactly (NEON [`mla16`], `SDOT`).
///
/// # Panics
/// If `x` is shorter than `w`.
#[inline]
#[target_feature(enable = "neon")]
pub(super) fn dot_with(
    w: &[i8],
    x: &[i8],
    step: impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
) -> i32 {
    let n = w.len();
    let x = &x[..n];
    let (mut a0, mut a1) = (vdupq_n_s32(0), vdupq_n_s32(0));
    let mut k = 0;
    while k + 32 <= n {
        a0 = step(a0, ld_s8(arr(w, k)), ld_s8(arr(x, k)));
        a1 = step(a1, ld_s8(arr(w, k + 16)), ld_s8(arr(x, k + 16)));
        k += 32;
    }
    if k + 16 <= n {
        a0 = step(a0, ld_s8(arr(w, k)), ld_s8(arr(x, k)));
        k += 16;
    }
    if k < n {
        a1 = step(a1, tail_i8(&w[k..]), tail_i8(&x[k..]));
    }
    vaddvq_s32(vaddq_s32(a0, a1))
}

/// The f32-activation kernel: [`f32_fused`] for the nibble formats of [`nibble_blocks`], fp8,
/// int2-row and int3-g64, chunked decode (batch tiles of [`ST`] activation rows) for the rest.
#[target_feature(enable = "neon")]
fn f32_rows(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]) {
    if nibble_blocks(m)
        || matches!(m.format(), Format::Fp8E4m3B128 | Format::Int2Row | Format::Int3G64)
    {
        f32_fused(m, x, s, rows, y);
    } else {
        f32_chunked(m, x, s, rows, y);
    }
}

/// Weights decoded in registers for the f32 path: a 32-column block as 8 × 4 f32 values: the
/// codes of 16 nibble bytes (`nib − 8`, or `±2·e2m1`), of 8 int2 bytes or of half an int3 group
/// ([`small_codes32`]), or 32 fp8 bytes as exact values.
#[inline]
#[target_feature(enable = "neon")]
fn block_f32(m: &Matrix<'_>, row: &[u8], col: usize, lut: int8x16_t) -> [float32x4_t; 8] {
    let (a, c) = match m.format() {
        Format::Fp8E4m3B128 => {
            let b: &[i8; 32] = arr(as_i8(row), col);
            let (v0, v1, v2, v3) = (
                fp8x8(ld_s8x8(arr(b, 0))),
                fp8x8(ld_s8x8(arr(b, 8))),
                fp8x8(ld_s8x8(arr(b, 16))),
                fp8x8(ld_s8x8(arr(b, 24))),
            );
            return [v0.0, v0.1, v1.0, v1.1, v2.0, v2.1, v3.0, v3.1];
        }
        Format::Int2Row | Format::Int3G64 => {
            let [a, c] = small_codes32(m, row, col);
            (a, c)
        }
        _ => nibble_codes(ld_u8(arr(row, col / 2)), m.format() == Format::Mxfp4, lut),
    };
    let f = |v: int8x16_t| {
        let (l, h) = (vmovl_s8(vget_low_s8(v)), vmovl_high_s8(v));
        [
            vcvtq_f32_s32(vmovl_s16(vget_low_s16(l))),
            vcvtq_f32_s32(vmovl_high_s16(l)),
            vcvtq_f32_s32(vmovl_s16(vget_low_s16(h))),
            vcvtq_f32_s32(vmovl_high_s16(h)),
        ]
    };
    let (fa, fc) = (f(a), f(c));
    [fa[0], fa[1], fa[2], fa[3], fc[0], fc[1], fc[2], fc[3]]
}

/// The unscaled f32 value of column `c` of row `o` (bytes `row`) as [`block_f32`] gives it.
#[inline]
fn value_f32(m: &Matrix<'_>, o: usize, row: &[u8], c: usize) -> f32 {
    match m.format() {
        Format::Fp8E4m3B128 => scalar::e4m3_to_f32(row[c]),
        Format::Int2Row | Format::Int3G64 => scalar::code_value(m, o, c),
        f => f32::from(nibble_code(row[c / 2] >> (4 * (c % 2)), f == Format::Mxfp4)),
    }
}

/// Fused f32-activation kernel for the formats of [`nibble_blocks`], fp8-e4m3-b128, int2-row
/// and int3-g64 (groups start on 32-column blocks): weights are decoded in registers
/// ([`block_f32`]), each 32-column block shared by up to 4 activation rows, 2 FMA accumulators
/// per row, `acc = fma(part, scale, acc)` per group; the columns past a group's last full block
/// are summed in f32 on the side. Within the documented tolerance.
#[target_feature(enable = "neon")]
fn f32_fused(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]) {
    let (ni, nr) = (m.i(), rows.len());
    let mut s0 = 0;
    while s0 < s {
        let st = if s - s0 >= 4 {
            4
        } else if s - s0 >= 2 {
            2
        } else {
            1
        };
        let xr = |k: usize| &x[(s0 + k) * ni..(s0 + k + 1) * ni];
        for (r, o) in rows.clone().enumerate() {
            let v: [f32; 4] = match st {
                4 => fused_row_f32::<4>(m, o, [xr(0), xr(1), xr(2), xr(3)]),
                2 => {
                    let v = fused_row_f32::<2>(m, o, [xr(0), xr(1)]);
                    [v[0], v[1], 0.0, 0.0]
                }
                _ => [fused_row_f32::<1>(m, o, [xr(0)])[0], 0.0, 0.0, 0.0],
            };
            for (k, vk) in v.iter().enumerate().take(st) {
                y[(s0 + k) * nr + r] = *vk;
            }
        }
        s0 += st;
    }
}

/// Output row `o` against the `T` activation rows `xs` (each `I` values), see [`f32_fused`].
#[inline]
#[target_feature(enable = "neon")]
fn fused_row_f32<const T: usize>(m: &Matrix<'_>, o: usize, xs: [&[f32]; T]) -> [f32; T] {
    let (ni, gl) = (m.i(), m.group_len());
    let row = m.row_bytes(o);
    let lut = ld_s8(&MX_LUT);
    let zero = vdupq_n_f32(0.0);
    let mut acc = [zero; T];
    let mut tail_acc = [0f32; T];
    for g in 0..m.groups_per_row() {
        let (c0, c1) = (g * gl, ((g + 1) * gl).min(ni));
        let nfull = (c1 - c0) / 32;
        let mut p0 = [zero; T];
        let mut p1 = [zero; T];
        for b in 0..nfull {
            let col = c0 + 32 * b;
            let w = block_f32(m, row, col, lut);
            for ((p0k, p1k), xk) in p0.iter_mut().zip(&mut p1).zip(&xs) {
                let xb: &[f32; 32] = arr(xk, col);
                *p0k = vfmaq_f32(*p0k, w[0], ld_f32(arr(xb, 0)));
                *p1k = vfmaq_f32(*p1k, w[1], ld_f32(arr(xb, 4)));
                *p0k = vfmaq_f32(*p0k, w[2], ld_f32(arr(xb, 8)));
                *p1k = vfmaq_f32(*p1k, w[3], ld_f32(arr(xb, 12)));
                *p0k = vfmaq_f32(*p0k, w[4], ld_f32(arr(xb, 16)));
                *p1k = vfmaq_f32(*p1k, w[5], ld_f32(arr(xb, 20)));
                *p0k = vfmaq_f32(*p0k, w[6], ld_f32(arr(xb, 24)));
                *p1k = vfmaq_f32(*p1k, w[7], ld_f32(arr(xb, 28)));
            }
        }
        let sc = scale_f32(m, o, g);
        let scv = vdupq_n_f32(sc);
        for k in 0..T {
            let mut tail = 0.0f32;
            for (c, &xc) in xs[k].iter().enumerate().take(c1).skip(c0 + 32 * nfull) {
                tail += value_f32(m, o, row, c) * xc;
            }
            acc[k] = vfmaq_f32(acc[k], vaddq_f32(p0[k], p1[k]), scv);
            tail_acc[k] += tail * sc;
        }
    }
    core::array::from_fn(|k| vaddvq_f32(acc[k]) + tail_acc[k])
}

/// The chunked f32-activation kernel (decode into an L1 buffer, batch tiles of [`ST`]
/// activation rows).
#[target_feature(enable = "neon")]
fn f32_chunked(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]) {
    let (ni, gl, nr) = (m.i(), m.group_len(), rows.len());
    let mut ibuf = [0i8; CH];
    let mut fbuf = [0f32; CH];
    let zero = vdupq_n_f32(0.0);
    let mut s0 = 0;
    while s0 < s {
        let st = (s - s0).min(ST);
        for (r, o) in rows.clone().enumerate() {
            let row = m.row_bytes(o);
            let mut acc = [zero; ST];
            let mut part = [zero; ST];
            let (mut g, mut gend, mut c0) = (0, gl.min(ni), 0);
            while c0 < ni {
                let n = (ni - c0).min(CH);
                let w = decode_f32(m, row, c0, n, &mut ibuf, &mut fbuf);
                let mut pos = c0;
                while pos < c0 + n {
                    let end = gend.min(c0 + n);
                    for (k, p) in part[..st].iter_mut().enumerate() {
                        let xs = &x[(s0 + k) * ni + pos..(s0 + k) * ni + end];
                        *p = vaddq_f32(*p, dot_f32(&w[pos - c0..end - c0], xs));
                    }
                    pos = end;
                    if pos == gend {
                        let sc = vdupq_n_f32(scale_f32(m, o, g));
                        for (a, p) in acc[..st].iter_mut().zip(&mut part[..st]) {
                            *a = vfmaq_f32(*a, *p, sc);
                            *p = zero;
                        }
                        g += 1;
                        gend = (gend + gl).min(ni);
                    }
                }
                c0 += n;
            }
            for (k, a) in acc[..st].iter().enumerate() {
                y[(s0 + k) * nr + r] = vaddvq_f32(*a);
            }
        }
        s0 += st;
    }
}

/// The int8-activation driver shared by the NEON and SDOT arms: chunked decode, batch tiles of
/// [`ST`] activation rows, exact group dot products by `dot`, and the scalar reference's
/// epilogue (bit-exact whenever `dot` is exact).
///
/// Generic over `dot`, so each arm gets its own copy, inlined into its `#[target_feature]`
/// entry point where `dot` (a closure defined there) carries the arm's features.
#[inline]
#[target_feature(enable = "neon")]
pub(super) fn q8_chunked(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
    dot: impl Fn(&[i8], &[i8]) -> i32,
) {
    let (ni, gl, nr, s) = (m.i(), m.group_len(), rows.len(), xq.s());
    let mut buf = [0i8; CH];
    let mut s0 = 0;
    while s0 < s {
        let st = (s - s0).min(ST);
        for (r, o) in rows.clone().enumerate() {
            let row = m.row_bytes(o);
            let mut acc = [0f32; ST];
            let mut d = [0i32; ST];
            let (mut g, mut gend, mut c0) = (0, gl.min(ni), 0);
            while c0 < ni {
                let n = (ni - c0).min(CH);
                let w = decode_i8(m, row, c0, n, &mut buf);
                let mut pos = c0;
                while pos < c0 + n {
                    let end = gend.min(c0 + n);
                    for (k, dk) in d[..st].iter_mut().enumerate() {
                        *dk += dot(&w[pos - c0..end - c0], &xq.row(s0 + k).0[pos..end]);
                    }
                    pos = end;
                    if pos == gend {
                        let sc = scalar::group_scale_q8(m, o, g);
                        for (a, dk) in acc[..st].iter_mut().zip(&mut d[..st]) {
                            #[allow(clippy::cast_precision_loss)] // the spec's rounding
                            let df = *dk as f32;
                            *a += df * sc;
                            *dk = 0;
                        }
                        g += 1;
                        gend = (gend + gl).min(ni);
                    }
                }
                c0 += n;
            }
            for (k, a) in acc[..st].iter().enumerate() {
                y[(s0 + k) * nr + r] = *a * xq.row(s0 + k).1;
            }
        }
        s0 += st;
    }
}

/// Fused int8-activation kernel for the formats of [`nibble_blocks`], shared by the NEON and
/// SDOT arms: no decode buffer; each 16-byte load of a weight row is unpacked in registers into
/// 32 codes ([`nibble_codes`]) and multiplied against up to 4 activation rows at once by `dot16`
/// (`acc + Σ` of 16 byte products, exact, spread over the 4 i32 lanes). Per group: the lanes are
/// summed, the columns past the group's last full 32-block are added one by one, and the scalar
/// reference's epilogue follows: bit-exact.
#[inline]
#[target_feature(enable = "neon")]
pub(super) fn q8_nibbles<F>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
    dot16: F,
) where
    F: Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t + Copy,
{
    let (nr, s) = (rows.len(), xq.s());
    let mut s0 = 0;
    while s0 < s {
        let st = if s - s0 >= 4 {
            4
        } else if s - s0 >= 2 {
            2
        } else {
            1
        };
        for (r, o) in rows.clone().enumerate() {
            let v: [f32; 4] = match st {
                4 => nibble_row_q8::<4, F>(m, o, xq, s0, dot16),
                2 => {
                    let v = nibble_row_q8::<2, F>(m, o, xq, s0, dot16);
                    [v[0], v[1], 0.0, 0.0]
                }
                _ => [nibble_row_q8::<1, F>(m, o, xq, s0, dot16)[0], 0.0, 0.0, 0.0],
            };
            for (k, vk) in v.iter().enumerate().take(st) {
                y[(s0 + k) * nr + r] = *vk;
            }
        }
        s0 += st;
    }
}

/// Output row `o` against activation rows `s0 .. s0 + T` (see [`q8_nibbles`]).
#[inline]
#[target_feature(enable = "neon")]
fn nibble_row_q8<const T: usize, F>(
    m: &Matrix<'_>,
    o: usize,
    xq: &QuantizedActs<'_>,
    s0: usize,
    dot16: F,
) -> [f32; T]
where
    F: Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
{
    let (ni, gl) = (m.i(), m.group_len());
    let row = m.row_bytes(o);
    let mx = m.format() == Format::Mxfp4;
    let lut = ld_s8(&MX_LUT);
    let xs: [&[i8]; T] = core::array::from_fn(|k| xq.row(s0 + k).0);
    let mut acc = [0f32; T];
    for g in 0..m.groups_per_row() {
        let (c0, c1) = (g * gl, ((g + 1) * gl).min(ni));
        let nfull = (c1 - c0) / 32;
        let mut a = [vdupq_n_s32(0); T];
        for b in 0..nfull {
            let col = c0 + 32 * b; // even: c0 is a multiple of 32
            // col + 32 ≤ c1 ≤ I: the 16 bytes at col/2 lie within the row's ⌈I/2⌉.
            let (w0, w1) = nibble_codes(ld_u8(arr(row, col / 2)), mx, lut);
            for (ak, x) in a.iter_mut().zip(&xs) {
                // col + 32 ≤ I = x.len().
                let (x0, x1) = (ld_s8(arr(x, col)), ld_s8(arr(x, col + 16)));
                *ak = dot16(dot16(*ak, w0, x0), w1, x1);
            }
        }
        let sc = scalar::group_scale_q8(m, o, g);
        for ((acck, ak), x) in acc.iter_mut().zip(&a).zip(&xs) {
            let mut d = vaddvq_s32(*ak);
            for (c, &xc) in x.iter().enumerate().take(c1).skip(c0 + 32 * nfull) {
                d += i32::from(nibble_code(row[c / 2] >> (4 * (c % 2)), mx)) * i32::from(xc);
            }
            #[allow(clippy::cast_precision_loss)] // the spec's rounding
            let df = d as f32;
            *acck += df * sc;
        }
    }
    core::array::from_fn(|k| acc[k] * xq.row(s0 + k).1)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test indices
mod tests {
    use super::*;

    /// The NEON int8 dot equals the plain sum on every length up to 100 (all tails), with the
    /// extreme codes −128 · −127 and 127 · 127 filling whole vectors.
    #[test]
    fn dot_i8_is_exact() {
        let mut w = [0i8; 100];
        let mut x = [0i8; 100];
        let mut st = 0x1234_5678u32;
        for (k, (a, b)) in w.iter_mut().zip(&mut x).enumerate() {
            st = st.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let [_, _, p, q] = st.to_le_bytes();
            (*a, *b) = match k % 3 {
                0 => (i8::from_le_bytes([p]), i8::from_le_bytes([q]).max(-127)),
                1 => (-128, -127),
                _ => (127, 127),
            };
        }
        for n in 0..=100 {
            let want: i32 =
                w[..n].iter().zip(&x[..n]).map(|(&a, &b)| i32::from(a) * i32::from(b)).sum();
            // SAFETY: NEON is a target feature of this build.
            assert_eq!(unsafe { dot_i8(&w[..n], &x[..n]) }, want, "n = {n}");
        }
    }

    /// The NEON int2 / int3 decoder ([`decode_i8`] via [`small_codes64`]) equals the portable
    /// one on every chunk position the kernels use ([`CH`]-column chunks, so `c0` a multiple of
    /// 256, and lengths with and without a partial 64-column tail), and the 32-column block
    /// decoder of the fused f32 path ([`small_codes32`]) equals it on every full block, for
    /// int2-row and int3-g64 rows of pseudo-random bytes that include all-zero and all-one bytes
    /// (codes −2/1 and −4/3).
    #[test]
    fn neon_small_int_decode_matches_the_portable_one() {
        for (format, i, w, sc) in crate::arch::small_int_tests::matrices() {
            let m = Matrix::new(format, &w, Scales::F32(&sc), 2, i, 0).unwrap();
            for o in 0..2 {
                let row = m.row_bytes(o);
                let mut want = std::vec![0i8; i];
                crate::arch::decode_small_ints(&m, row, 0, &mut want);
                for (c0, n) in crate::arch::small_int_tests::chunk_ranges(i) {
                    let (mut a, mut b) = ([0i8; CH], [0i8; CH]);
                    // SAFETY: NEON is a target feature of this build.
                    let got = unsafe { decode_i8(&m, row, c0, n, &mut a) };
                    crate::arch::decode_small_ints(&m, row, c0, &mut b[..n]);
                    assert_eq!(got, &b[..n], "{format:?} row {o} c0 {c0} n {n}");
                    assert_eq!(got, &want[c0..c0 + n], "{format:?} row {o} c0 {c0} n {n}");
                }
                for col in (0..i / 32).map(|b| 32 * b) {
                    // SAFETY: NEON is a target feature of this build.
                    let v = unsafe { small_codes32(&m, row, col) };
                    let mut out = [0i8; 32];
                    // SAFETY: NEON is a target feature of this build; the store writes the
                    // 16 bytes of the array reference `arr_mut` took from `out`.
                    unsafe { st_s8(arr_mut(&mut out, 0), v[0]) };
                    // SAFETY: NEON is a target feature of this build; 16 bytes at 16 of `out`.
                    unsafe { st_s8(arr_mut(&mut out, 16), v[1]) };
                    assert_eq!(out[..], want[col..col + 32], "{format:?} row {o} block {col}");
                }
            }
        }
    }

    /// fp8 decode in registers equals the scalar definition on all 256 codes.
    #[test]
    fn fp8_decode_matches_scalar() {
        for base in (0..=255u8).step_by(8) {
            let bytes: [i8; 8] = core::array::from_fn(|k| i8::from_le_bytes([base + k as u8]));
            // SAFETY: NEON is a target feature of this build.
            let v = unsafe { ld_s8x8(&bytes) };
            // SAFETY: NEON is a target feature of this build.
            let (lo, hi) = unsafe { fp8x8(v) };
            let mut out = [0f32; 8];
            // SAFETY: NEON is a target feature of this build.
            unsafe { st_f32(arr_mut(&mut out, 0), lo) };
            // SAFETY: NEON is a target feature of this build.
            unsafe { st_f32(arr_mut(&mut out, 4), hi) };
            for (k, v) in out.iter().enumerate() {
                let r = scalar::e4m3_to_f32(base + k as u8);
                assert!(
                    v.to_bits() == r.to_bits() || (v.is_nan() && r.is_nan()),
                    "code {}",
                    base + k as u8
                );
            }
        }
    }
}
