//! The 256-bit arms, for every format with a value rule: [`Plain`] (AVX2 + FMA + F16C,
//! `Isa::Avx2`) and [`Vnni`] (the same + AVX-VNNI, `Isa::AvxVnni`).
//!
//! The two arms differ only in the exact int8 dot step `dpbusd(acc, u, s)` = `acc + Σ₄ u·s`
//! (unsigned bytes `u` times signed bytes `s`, four products per i32 lane) and its two-block
//! form `dpbusd2`, the methods of [`Dot`]:
//! - `vnni`: one VEX-encoded `vpdpbusd` per block (non-saturating);
//! - `plain`: `vpmaddubsw` + `vpmaddwd(·, 1)` + `vpaddd`. `vpmaddubsw` saturates its i16 pair
//!   sums, so every caller keeps `u ≤ 128` and `s ∈ [−127, 127]` (pair sums ≤ 32 512; for
//!   `dpbusd2`, which adds two pair sums before widening, `u ≤ 64`: int4 nibbles): then the two
//!   definitions agree exactly, and both arms are bit-identical to the scalar reference on the
//!   int8-activation path.
//!
//! The operand rule of `vpdpbusd` (first byte operand unsigned) is met the same way in both:
//! signed weight codes go in as magnitudes `|w| ≤ 128` with the sign moved onto the activation
//! (`sign(x, w)`: `x` negated where `w < 0`, zero where `w = 0`; `x ≠ −128` by the activation
//! quantizer); int4-row goes in as the raw nibble `0..=15` with `8·Σx` subtracted afterwards.
//!
//! Decoding (per 256-column chunk of a row, into an L1 buffer):
//! - int4 (row, grouped): 16 bytes → low/high nibbles (`and`, `srli`) → interleaved back into
//!   column order with `unpacklo/hi_epi8` → minus 8;
//! - mxfp4: the same nibble split, then a 16-entry `pshufb` table of `±2·e2m1` (integers in
//!   `[−12, 12]`), with the group scale halved to `2^(e−128)` (`crate::scalar::ue8m0_half`);
//! - fp8 e4m3: no table, through IEEE half precision (F16C): the byte is sign-extended to 16
//!   bits, shifted left by 7 and masked with `0xBF80` (the f16 `e4m3 · 2⁻⁸`, subnormals
//!   included), `vcvtph2ps`, `× 2⁸` (all exact; no float operand is ever subnormal, see
//!   `fp8x8`); NaN codes (`|b| = 0x7F`) are OR-ed to all-ones where a block holds one;
//! - int8: used in place; int2 / int3: 64 columns at a time with SSE2
//!   (`crate::arch::x86_64::small_codes64`: crumb planes interleaved back by unpacking, int3's
//!   third bits by byte replication and a compare), fused into the f32 path (`small_row_f32`).
//!
//! f32 path (the same code in both arms): `part += w · x` with FMA over 32 columns at a time (4
//! accumulators), a masked load for the tail of each group segment, `acc = fma(part, scale,
//! acc)` at each group end, one horizontal sum per row. Within the documented tolerance of the
//! scalar reference. int4-row with one activation row takes weight rows in bands of 8
//! (`f32_int4_band8`: the activations split into even and odd columns once per call, so that 8
//! weight bytes decode in byte order — `vpmovzxbd`, `& 0xF` and `≫ 4`, `− 8`, exact
//! conversion — into one FMA each per row, the activations loaded once per band).
//! int4-row with 2 to 16 activation rows (`f32_int4_multi`) takes them 8, 4 or 2 per pass over
//! column chunks of `4096 / T` whose activations are copied once per chunk into a 16 KiB
//! interleaved buffer (L1-resident, one pointer), the same decode per 8 columns and one FMA
//! per activation row (8 independent FMA chains in all), row blocks of about 1 MiB of weights
//! so the rows stay in cache across the chunks, and the weight bytes two rows ahead
//! prefetched. fp8 with one activation row does the same as int4-row's (`f32_fp8_band8`): per
//! 128-column block, one NaN probe for the band's 8 rows, the activations scaled once for the
//! band, and one block sum per row, `acc = fma(part, scale, acc)` lane-wise. Where every
//! `|x| < 2⁸` and the CPU takes subnormal FMA operands at full speed (AMD; on Intel each one
//! is a microcode assist, `isa::fp8_bits_decode`) the activations are scaled by `2¹²⁰` and the
//! weights decoded with integer operations only (`fp8x8_bits`: `vpmovsxbd`, `≪ 20`,
//! `& 0x87F0_0000` is the f32 `e4m3 · 2⁻¹²⁰`, subnormals included); otherwise by `2⁸` (the
//! caller checks every `x · 2⁸`
//! is finite, else the row kernel runs) and 32 bytes decoded to f16 per `vpunpck{l,h}bw` pair
//! and converted (`fp8x32_low`, `e4m3 · 2⁻⁸`). The products, so the sums, are the same either
//! way. With 2 to 16 activation rows fp8 takes int4-row's small-batch form (`f32_fp8_multi`,
//! the buffer holding `x · 2¹²⁰` for passes of two rows and `x · 2⁸` otherwise, one NaN probe
//! per row and block, the block scale per activation row).
//! int8-row takes weight rows in bands of 8 for every batch (`f32_int8_band8`: each band
//! against every activation row in turn; per 8 columns one activation load for the band, per
//! row `vpmovsxbd`, exact conversion, one FMA); the AVX-512 arms call it too.
//!
//! int8 path: exact i32 dot products per group (`dot32_i8`, `dpbusd`), summed exactly per group,
//! then `acc += (d as f32) · scale` in the scalar reference's order: bit-exact. int8-row, and
//! int4-row for a single activation row (the GEMV case), take weight rows in **bands of 8**
//! (`q8_int8_row`, `q8_int4_band8`): each activation load is shared by the band's 8 rows (int4:
//! split once into even and odd columns, the layout of the low and high nibbles, so a row's
//! block needs no unpacking), each row has its own accumulator, one `vphaddd` tree gives the 8
//! exact sums, and the epilogue runs lane-wise (`row_epilogue8`). mxfp4 and
//! int4-grouped with `gs` a multiple of 32 dividing 16384 run on a band kernel (`q8_band8`):
//! **one output row per i32 lane**, bands of 8 rows sharing each activation load (split once
//! per chunk into even and odd columns, the layout of the low and high nibbles), the unsigned
//! operand `code + offset` with the accumulator starting at `−offset · Σx`, a pack/madd
//! reduction to one vector of exact group sums per group, and the epilogue as lane-wise f32
//! operations in the reference's order (each lane does exactly its row's operations).
//! int2-row and int3-g64 (`q8_int2_row`, `q8_int3_g64`): each activation row split once into
//! the crumb planes of 128-column blocks, then per block one weight load, shifts and masks
//! into `u ∈ [0, 3]` (int3: `[0, 7]`, the third bit from the high plane's nibbles) and one
//! `dpbusd` per plane; the offset (`2·Σx`, `4·Σx` per group) subtracted exactly.
//!
//! The `vnni` arm is compiled with `avx2,fma,f16c,avxvnni` only (no AVX-512 feature), so LLVM
//! cannot emit an EVEX instruction in it and it runs on any AVX-VNNI CPU (Intel Alder Lake and
//! later, AMD Zen 5; where AVX-512 VNNI is present too, `best()` prefers the AVX-512 arms). Its
//! tests also run under Miri, for machines without it (`docs/kernels.md`, "AVX-VNNI").
//!
//! Layout: the f32-activation path does not use the dot step, so it is one set of functions
//! compiled with `avx2,fma,f16c` and run by both arms; the int8-activation path is written once
//! as `#[inline(always)]` bodies generic over [`Dot`], monomorphised inside each arm's
//! `#[target_feature]` entry points (the [`Dot`] impls of [`Plain`] and [`Vnni`]): a body never
//! runs outside an entry compiled with its arm's features. By format family:
//! - `reduce`: horizontal sums and the dot steps over a run of columns;
//! - `rows`: each path's entry body, which runs the kernel `super::dispatch` names for the call,
//!   and the generic decode-then-dot loops;
//! - `int4_int8_q8`, `int4_int8_f32`: the int4-row and int8-row kernels (bands of 8 rows);
//! - `small_ints`: int2-row and int3-g64;
//! - `grouped`: int4-grouped and mxfp4 (the fused f32 row kernel, the band kernels);
//! - `fp8`: fp8 e4m3;
//! - `batched`: the small-batch f32 passes (2 to 16 activation rows).
//!
//! Unsafe: the f32-path functions are `#[target_feature]` functions, so their intrinsics are safe
//! calls and only loads and stores are unsafe. The int8-path bodies are `#[inline(always)]`
//! functions without target features: a `#[target_feature]` function cannot be always inlined,
//! and a generic body can only carry the features both arms share, so the AVX-VNNI dot step
//! would reach it only after LLVM had optimised it around an opaque call (slower band loops for
//! that arm in the `kernels` bench's mxfp4 and int4-grouped q8 cases). In those bodies every
//! intrinsic call is an unsafe operation, all under one contract (the body runs inside an entry
//! point compiled with its arm's features); they say so with
//! `#[expect(clippy::multiple_unsafe_ops_per_block)]`, as do the f32 functions whose loads
//! and stores still share one bounds argument.

mod batched;
mod fp8;
mod grouped;
mod int4_int8_f32;
mod int4_int8_q8;
mod reduce;
mod rows;
mod small_ints;

pub(super) use small_ints::PLANES;

use core::arch::x86_64::{
    __m256i, _mm256_add_epi16, _mm256_add_epi32, _mm256_dpbusd_avx_epi32, _mm256_madd_epi16,
    _mm256_maddubs_epi16, _mm256_set1_epi16,
};
use core::ops::Range;

use super::{Arm, Avx2};
use crate::isa::Isa;
use crate::kernels::{Matrix, QuantizedActs};

/// Columns decoded per chunk.
const CH: usize = 256;
/// Activation rows per batch tile (accumulators live in a fixed array).
const ST: usize = 16;

/// Lane masks for the tail of a segment: `MASKS[8 - r..][..8]` enables the first `r` lanes.
static MASKS: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];

/// `±2·e2m1` for the 16 mxfp4 nibbles (bit 3 = sign).
static MX_LUT: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// `±2·e2m1 + 12` for the 16 mxfp4 nibbles: the unsigned (offset) codes of the band kernel.
static MX_OFF: [i8; 16] = [12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0];

/// Activation codes per chunk of the band kernel [`grouped::q8_band8`] (split into even and odd
/// columns on the stack, 16 KiB, plus 8 KiB of per-block corrections). Rows up to 16 Ki columns
/// (the common FFN widths) are one chunk: each band then reads its rows whole. With 8192-column
/// chunks a 14 336-column matrix from DRAM was read in two passes of partial rows, slower: mxfp4 q8
/// (AVX2, Zen 4, the `kernels` bench, 9362 × 14 336, fraction of a plain read of the same bytes)
/// 0.48–0.51 → 0.62–0.64, int4-grouped `gs = 32` 0.49 → 0.64–0.66; unchanged in cache.
pub(in crate::arch::x86_64) const QC: usize = 16384;

/// What differs between the two arms: the exact int8 dot step, and the int8-path entry points
/// compiled with the arm's features (each a thin `#[target_feature]` function monomorphising a
/// generic body of this module for `Self`).
///
/// # Safety
/// An implementation's methods may be called only where the CPU has its arm's features
/// ([`Dot::ISA`]).
pub(crate) trait Dot: Sized {
    /// The arm.
    const ISA: Isa;

    /// `acc + Σ₄ u·s` per i32 lane (`u` unsigned bytes, `s` signed); exact for every caller
    /// (`u ≤ 128`, `|s| ≤ 127`: the plain arm's `vpmaddubsw` does not saturate).
    ///
    /// # Safety
    /// The CPU has [`Dot::ISA`]'s features.
    unsafe fn dpbusd(acc: __m256i, u: __m256i, s: __m256i) -> __m256i;

    /// `dpbusd(dpbusd(acc, u0, s0), u1, s1)`; exact for every caller (`u0, u1 ≤ 64`,
    /// `|s0|, |s1| ≤ 127`).
    ///
    /// # Safety
    /// The CPU has [`Dot::ISA`]'s features.
    unsafe fn dpbusd2(acc: __m256i, u0: __m256i, s0: __m256i, u1: __m256i, s1: __m256i) -> __m256i;

    /// [`rows::q8_rows`] for this arm.
    ///
    /// # Safety
    /// The CPU has [`Dot::ISA`]'s features; shapes as asserted by [`matmul_q8_rows`](super::matmul_q8_rows).
    unsafe fn q8_rows(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]);

    /// [`grouped::q8_band8`] for this arm.
    ///
    /// # Safety
    /// As [`Dot::q8_rows`], and `m` a matrix [`grouped::q8_band8`] takes.
    unsafe fn q8_band8<const MX: bool, const WIDE: bool, const STREAM: bool>(
        m: &Matrix<'_>,
        xq: &QuantizedActs<'_>,
        rows: Range<usize>,
        y: &mut [f32],
    );
}

/// The thin entry points of an arm: `$feat`, its `target_feature` list; `$arm`, its type.
macro_rules! dot_entries {
    ($feat:literal, $arm:ty) => {
        #[target_feature(enable = $feat)]
        unsafe fn q8_rows(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            // SAFETY: the caller's contract (this arm's features; the shapes).
            unsafe { rows::q8_rows::<$arm>(m, xq, rows, y) }
        }

        #[target_feature(enable = $feat)]
        // Never inlined: its helpers must inline into its band loop (an out-of-line call there
        // clobbers every vector register), and it must not be merged into `q8_rows` beside its
        // other instances.
        #[inline(never)]
        unsafe fn q8_band8<const MX: bool, const WIDE: bool, const STREAM: bool>(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            // SAFETY: the caller's contract (this arm's features; the shapes and format).
            unsafe { grouped::q8_band8::<$arm, MX, WIDE, STREAM>(m, xq, rows, y) }
        }
    };
}

/// The AVX2 + FMA (+ F16C) arm (`Isa::Avx2`): the int8 dot step is `vpmaddubsw` + `vpmaddwd` +
/// `vpaddd`.
pub(crate) struct Plain;

impl Dot for Plain {
    const ISA: Isa = Isa::Avx2;

    /// Exact when `u ≤ 128` and `|s| ≤ 127` (no i16 saturation in `vpmaddubsw`: pair sums ≤
    /// 2 · 128 · 127 = 32 512), which every caller guarantees.
    #[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
    #[inline(always)]
    unsafe fn dpbusd(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        // SAFETY: the caller has AVX2 (this arm's features), all these intrinsics need.
        unsafe {
            _mm256_add_epi32(
                acc,
                _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)),
            )
        }
    }

    /// The two `vpmaddubsw` results are added as i16 before one `vpmaddwd`, so exact when `u0,
    /// u1 ≤ 64` and `|s0|, |s1| ≤ 127` (the sum of two pair sums ≤ 4 · 64 · 127 = 32 512), which
    /// every caller guarantees (int4 nibbles ≤ 15, mxfp4 offset codes ≤ 24).
    #[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
    #[inline(always)]
    unsafe fn dpbusd2(acc: __m256i, u0: __m256i, s0: __m256i, u1: __m256i, s1: __m256i) -> __m256i {
        // SAFETY: the caller has AVX2 (this arm's features), all these intrinsics need.
        unsafe {
            let p = _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1));
            _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)))
        }
    }

    dot_entries!("avx2,fma,f16c", Plain);
}

/// The AVX-VNNI arm (`Isa::AvxVnni`): the same kernels, the int8 dot step is one VEX-encoded
/// `vpdpbusd` (`_mm256_dpbusd_avx_epi32`: u8 × s8 products summed four at a time into i32, no
/// saturation). Compiled with `avx2,fma,f16c,avxvnni` only, so no EVEX instruction can appear
/// in it.
pub(crate) struct Vnni;

impl Dot for Vnni {
    const ISA: Isa = Isa::AvxVnni;

    #[inline(always)]
    unsafe fn dpbusd(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        // SAFETY: the caller has AVX-VNNI (this arm's features).
        unsafe { _mm256_dpbusd_avx_epi32(acc, u, s) }
    }

    #[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
    #[inline(always)]
    unsafe fn dpbusd2(acc: __m256i, u0: __m256i, s0: __m256i, u1: __m256i, s1: __m256i) -> __m256i {
        // SAFETY: the caller has AVX-VNNI (this arm's features).
        unsafe { _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, u0, s0), u1, s1) }
    }

    dot_entries!("avx2,fma,f16c,avxvnni", Vnni);
}

impl<D: Dot> Arm for Avx2<D> {
    const ISA: Isa = D::ISA;

    unsafe fn f32_rows(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]) {
        // SAFETY: the caller's contract: the CPU has `D::ISA`'s features (AVX2, FMA and F16C among
        // them, this width's f32 path, which has no dot step); the shapes.
        unsafe { rows::f32_rows(m, x, s, rows, y) }
    }

    unsafe fn q8_rows(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]) {
        // SAFETY: the caller's contract: the CPU has `D::ISA`'s features; the shapes.
        unsafe { D::q8_rows(m, xq, rows, y) }
    }
}

/// The small-batch f32 passes (`batched::f32_int4_multi`, `batched::f32_fp8_multi`: 8, 4
/// or 2 activation rows per pass; `batched::f32_nib_multi`: 8 or 4) for another arm's
/// dispatch: runs activation rows `0..n` (layout of `crate::scalar::matmul_f32_rows`) and
/// returns `n` — for int4-row and fp8 `s` or `s − 1` (a last single row is left to the
/// caller), for int4-grouped and mxfp4 `s` less up to 3 — or `0` where the passes do not
/// apply (other formats, too few rows, fp8 activations with an `x · 2⁸` that overflows,
/// int4-grouped with `gs` not dividing 512). `None`, without running, if the CPU lacks
/// AVX2, FMA or F16C.
pub(crate) fn matmul_f32_small_batch(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) -> Option<usize> {
    if !Isa::Avx2.cpu_supports() {
        return None;
    }
    assert!(x.len() >= s * m.i() && y.len() >= s * rows.len() && rows.end <= m.o());
    // SAFETY: AVX2, FMA and F16C were detected above; the shapes were asserted.
    Some(unsafe { batched::f32_multi_passes(m, x, s, rows, y) })
}
