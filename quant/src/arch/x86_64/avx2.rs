//! The 256-bit arms, for every format with a value rule: [`plain`] (AVX2 + FMA + F16C,
//! `Isa::Avx2`) and [`vnni`] (the same + AVX-VNNI, `Isa::AvxVnni`).
//!
//! Both arms are generated from one body (`avx2_arm!`); they differ only in the exact int8 dot
//! step `dpbusd(acc, u, s)` = `acc + Σ₄ u·s` (unsigned bytes `u` times signed bytes `s`, four
//! products per i32 lane) and its two-block form `dpbusd2`:
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
//! later, AMD Zen 5; where AVX-512 VNNI is present too, `best()` prefers the AVX-512 arms). No
//! machine available to this project has AVX-VNNI: its tests run under Miri (`docs/kernels.md`,
//! "AVX-VNNI").

// One SAFETY argument covers each block's loads (all in bounds for the same reason); clippy also
// counts the (safe, same-feature) intrinsic calls, which would split blocks into noise.
#![allow(clippy::multiple_unsafe_ops_per_block)]

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

/// Activation codes per chunk of the band kernel `q8_band8` (split into even and odd columns
/// on the stack, 16 KiB, plus 8 KiB of per-block corrections). Rows up to 16 Ki columns (the
/// common FFN widths) are one chunk: each band then reads its rows whole. With 8192-column
/// chunks a 14 336-column matrix from DRAM was read in two passes of partial rows, slower:
/// mxfp4 q8 (AVX2, Zen 4 VM, 9362 × 14 336, fraction of a plain read of the same bytes)
/// 0.48–0.51 → 0.62–0.64, int4-grouped `gs = 32` 0.49 → 0.64–0.66; unchanged in cache.
const QC: usize = 16384;

/// Whether `q8_band8` takes int4-grouped with group length `gs`: a multiple of 32 (whole
/// subgroups) that divides [`QC`] (a chunk never splits a group), i.e. 32, 64, 128, …, 16384.
const fn g32_multiple(gs: usize) -> bool {
    gs != 0 && gs.is_multiple_of(32) && QC.is_multiple_of(gs)
}

/// The body shared by both arms; `$feat` is the `target_feature` list, `$isa` the arm. The
/// instantiating module provides the int8 dot steps `dpbusd` and `dpbusd2`.
macro_rules! avx2_arm {
    ($feat:literal, $isa:expr) => {
        use core::arch::x86_64::*;
        use core::ops::Range;

        use super::{CH, MASKS, MX_LUT, MX_OFF, QC, ST, g32_multiple};
        use crate::arch::x86_64::{
            BandPrefetch, group_sums64, int3_epilogue, row_epilogue8, streams, sums8,
        };
        use crate::format::Format;
        use crate::kernels::{Matrix, QuantizedActs, Scales};
        use crate::scalar;

        fn cpu_ok() -> bool {
            $isa.cpu_supports()
        }

        /// f32-activation kernel over `rows` (layout of `crate::scalar::matmul_f32_rows`). Returns
        /// `false`, without running, if the CPU lacks the arm's features.
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
            // SAFETY: the arm's features were detected above; the shapes were asserted (every
            // pointer access below stays within `x`, `y`, the weight rows and the local buffers).
            unsafe { f32_rows(m, x, s, rows, y) };
            true
        }

        /// int8-activation kernel over `rows` (layout of `crate::scalar::matmul_q8_rows`). Returns
        /// `false`, without running, if the CPU lacks the arm's features.
        pub(crate) fn matmul_q8_rows(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) -> bool {
            if !cpu_ok() {
                return false;
            }
            assert!(
                xq.i() == m.i()
                    && y.len() >= xq.s() * rows.len()
                    && rows.end <= m.o()
                    && m.has_q8()
            );
            // SAFETY: the arm's features were detected above; the shapes were asserted.
            unsafe { q8_rows(m, xq, rows, y) };
            true
        }

        /// The small-batch f32 passes of this arm ([`f32_int4_multi`], [`f32_fp8_multi`]: 8, 4
        /// or 2 activation rows per pass; [`f32_nib_multi`]: 8 or 4) for another arm's
        /// dispatch: runs activation rows `0..n` (layout of `crate::scalar::matmul_f32_rows`)
        /// and returns `n` — for int4-row and fp8 `s` or `s − 1` (a last single row is left to
        /// the caller), for int4-grouped and mxfp4 `s` less up to 3 — or `0` where the passes
        /// do not apply (other formats, too few rows, fp8 activations with an `x · 2⁸` that
        /// overflows, int4-grouped with `gs` not dividing 512). `None`, without running, if
        /// the CPU lacks this arm's features.
        #[allow(dead_code)] // the AVX-512 arms call the plain arm's; the vnni arm's is unused
        pub(crate) fn matmul_f32_small_batch(
            m: &Matrix<'_>,
            x: &[f32],
            s: usize,
            rows: Range<usize>,
            y: &mut [f32],
        ) -> Option<usize> {
            if !cpu_ok() {
                return None;
            }
            assert!(x.len() >= s * m.i() && y.len() >= s * rows.len() && rows.end <= m.o());
            // SAFETY: the arm's features were detected above; the shapes were asserted.
            Some(unsafe { f32_multi_passes(m, x, s, rows, y) })
        }

        /// Whether every finite activation stays finite times `2⁸` (the fp8 kernels that move
        /// the decode's `2⁸` onto the activations need it).
        fn scalable_by_256(x: &[f32]) -> bool {
            finite_magnitude_below(x, (127 + 120) << 23) // |x| < 2¹²⁰
        }

        /// Whether every finite `|x|` has bits below `limit` (a power of two's): branch-free
        /// over the slice (it vectorises), unlike a short-circuiting `all`, which ran as a
        /// scalar loop of 6 % of a 512 × 1024 fp8 GEMV's time. `|x| · 2ᵏ` is exact unless it
        /// overflows, and finite exactly when `|x| < 2¹²⁸⁻ᵏ`.
        fn finite_magnitude_below(x: &[f32], limit: u32) -> bool {
            let over = x.iter().fold(0u32, |any, v| {
                let a = v.to_bits() & 0x7FFF_FFFF;
                any | u32::from(a >= limit && a < 0x7F80_0000)
            });
            over == 0
        }

        /// `2¹²⁰`: e4m3 bits moved into an f32's (`(sext(b) ≪ 20) & 0x87F0_0000`) read as
        /// `e4m3 · 2⁻¹²⁰`, exactly (the e4m3 subnormals land on f32 subnormals).
        const TWO_120: f32 = f32::from_bits((127 + 120) << 23);

        /// Whether every finite activation stays finite times `2¹²⁰` (`|x| < 2⁸`), so that the
        /// fp8 band kernel may decode e4m3 to f32 bits with integer operations only.
        fn scalable_by_2_120(x: &[f32]) -> bool {
            finite_magnitude_below(x, (127 + 8) << 23) // |x| < 2⁸
        }

        /// Activation rows `0..n` of an int4-row or fp8 matrix in passes of 8, 4 or 2 rows, of
        /// an int4-grouped (`gs` dividing 512) or mxfp4 matrix in passes of 8 or 4 (see
        /// [`matmul_f32_small_batch`] for `n`; here, for the grouped formats, up to 3 rows may
        /// be left).
        ///
        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_f32_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn f32_multi_passes(
            m: &Matrix<'_>,
            x: &[f32],
            s: usize,
            rows: Range<usize>,
            y: &mut [f32],
        ) -> usize {
            // 0: int4-row, 1: fp8, 2: int4-grouped, 3: mxfp4.
            let kind = match m.format() {
                Format::Int4Row => 0,
                Format::Fp8E4m3B128 if scalable_by_256(&x[..s * m.i()]) => 1,
                Format::Int4Grouped
                    if m.group_len().is_multiple_of(32) && 512 % m.group_len() == 0 =>
                {
                    2
                }
                Format::Mxfp4 => 3,
                _ => return 0,
            };
            // int4-grouped and mxfp4: passes of 8 or 4 (pairs run faster on the row kernel).
            let min_t = if kind >= 2 { 4 } else { 2 };
            let mut s0 = 0;
            while s - s0 >= min_t {
                let t = match s - s0 {
                    8.. => 8,
                    4.. => 4,
                    _ => 2,
                };
                let r = rows.clone();
                // SAFETY: same contract; activation rows s0 .. s0 + t exist; fp8: every
                // x · 2⁸ is finite where x is; int4-grouped: gs divides 512 (checked above).
                unsafe {
                    match (kind, t) {
                        (0, 8) => f32_int4_multi::<8>(m, x, s0, r, y),
                        (0, 4) => f32_int4_multi::<4>(m, x, s0, r, y),
                        (0, _) => f32_int4_multi::<2>(m, x, s0, r, y),
                        (1, 8) => f32_fp8_multi::<8>(m, x, s0, r, y),
                        (1, 4) => f32_fp8_multi::<4>(m, x, s0, r, y),
                        (1, _) => f32_fp8_multi::<2>(m, x, s0, r, y),
                        (2, 8) => f32_nib_multi::<8, false>(m, x, s0, r, y),
                        (2, 4) => f32_nib_multi::<4, false>(m, x, s0, r, y),
                        (2, _) => f32_nib_multi::<2, false>(m, x, s0, r, y),
                        (_, 8) => f32_nib_multi::<8, true>(m, x, s0, r, y),
                        (_, 4) => f32_nib_multi::<4, true>(m, x, s0, r, y),
                        (_, _) => f32_nib_multi::<2, true>(m, x, s0, r, y),
                    }
                }
                s0 += t;
            }
            s0
        }

        /// The f32-path scale of group `g` of row `o` as this arm uses it (mxfp4 codes are
        /// doubled).
        fn scale_f32(m: &Matrix<'_>, o: usize, g: usize) -> f32 {
            if let Scales::Ue8m0(e) = m.scales() {
                crate::arch::UE8M0_HALF[usize::from(e[m.scale_index(o, g)])]
            } else {
                scalar::group_scale(m, o, g)
            }
        }

        /// The `vhaddps` tree of 4 vectors: lanes `r` and `4 + r` hold halves of `Σ p[r]`.
        #[inline]
        #[target_feature(enable = $feat)]
        fn sums4_half_ps(p: [__m256; 4]) -> __m256 {
            let h = |a: __m256, b: __m256| _mm256_hadd_ps(a, b);
            h(h(p[0], p[1]), h(p[2], p[3]))
        }

        /// [`sums4_half_ps`] of two halves `[lo, hi]` → lane `r` = row `r`'s sum, rows 0..4 of
        /// `lo`, 4..8 of `hi` (the cross-half add of [`sums8_ps`]).
        #[inline]
        #[target_feature(enable = $feat)]
        fn sums8_halves_ps([lo, hi]: [__m256; 2]) -> __m256 {
            _mm256_add_ps(
                _mm256_permute2f128_ps::<0x20>(lo, hi),
                _mm256_permute2f128_ps::<0x31>(lo, hi),
            )
        }

        /// The horizontal sums of 8 vectors as one vector (lane `r` = `Σ p[r]`): one
        /// `vhaddps` tree and a cross-half add.
        #[inline]
        #[target_feature(enable = $feat)]
        fn sums8_ps(p: [__m256; 8]) -> __m256 {
            let h = |a: __m256, b: __m256| _mm256_hadd_ps(a, b);
            let lo = h(h(p[0], p[1]), h(p[2], p[3]));
            let hi = h(h(p[4], p[5]), h(p[6], p[7]));
            _mm256_add_ps(
                _mm256_permute2f128_ps::<0x20>(lo, hi),
                _mm256_permute2f128_ps::<0x31>(lo, hi),
            )
        }

        /// The sum of an activation row's `8 / T` FMA chains in the small-batch passes.
        #[inline]
        #[target_feature(enable = $feat)]
        fn chains_sum<const T: usize>([a0, a1, a2, a3]: [__m256; 4]) -> __m256 {
            match 8 / T {
                4 => _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                2 => _mm256_add_ps(a0, a1),
                _ => a0,
            }
        }

        #[inline]
        #[target_feature(enable = $feat)]
        fn hsum_ps(v: __m256) -> f32 {
            let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_add_ss(s, _mm_shuffle_ps::<1>(s, s));
            _mm_cvtss_f32(s)
        }

        #[inline]
        #[target_feature(enable = $feat)]
        fn hsum_epi32(v: __m256i) -> i32 {
            let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
            _mm_cvtsi128_si32(s)
        }

        /// `Σ w[k] · x[k]` for `k < n` as 8 lanes.
        ///
        /// # Safety
        /// `w` and `x` must be valid for reads of `n` f32 (unaligned is fine); the arm's features
        /// available.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn dot_f32(w: *const f32, x: *const f32, n: usize) -> __m256 {
            let (mut a0, mut a1, mut a2, mut a3) = (
                _mm256_setzero_ps(),
                _mm256_setzero_ps(),
                _mm256_setzero_ps(),
                _mm256_setzero_ps(),
            );
            let mut k = 0;
            while k + 32 <= n {
                // SAFETY: k + 32 ≤ n, both pointers valid for n reads.
                unsafe {
                    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w.add(k)), _mm256_loadu_ps(x.add(k)), a0);
                    a1 = _mm256_fmadd_ps(
                        _mm256_loadu_ps(w.add(k + 8)),
                        _mm256_loadu_ps(x.add(k + 8)),
                        a1,
                    );
                    a2 = _mm256_fmadd_ps(
                        _mm256_loadu_ps(w.add(k + 16)),
                        _mm256_loadu_ps(x.add(k + 16)),
                        a2,
                    );
                    a3 = _mm256_fmadd_ps(
                        _mm256_loadu_ps(w.add(k + 24)),
                        _mm256_loadu_ps(x.add(k + 24)),
                        a3,
                    );
                }
                k += 32;
            }
            while k + 8 <= n {
                // SAFETY: k + 8 ≤ n.
                unsafe {
                    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w.add(k)), _mm256_loadu_ps(x.add(k)), a0)
                };
                k += 8;
            }
            if k < n {
                // SAFETY: MASKS has 16 entries and 1 ≤ n − k ≤ 7, so the 8-lane window is in
                // bounds; the masked loads touch only the first n − k lanes (masked-off lanes never
                // fault).
                unsafe {
                    let mask = _mm256_loadu_si256(MASKS.as_ptr().add(8 - (n - k)).cast());
                    let wv = _mm256_maskload_ps(w.add(k), mask);
                    let xv = _mm256_maskload_ps(x.add(k), mask);
                    a1 = _mm256_fmadd_ps(wv, xv, a1);
                }
            }
            _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))
        }

        /// One 32-byte block of the int8 dot: `acc + Σ w·x` in 8 i32 lanes, as
        /// `dpbusd(acc, |w|, sign(x, w))`: the unsigned operand is `|w| ≤ 128`, the signed one
        /// `x` negated where `w < 0` (zero where `w = 0`), in `[−127, 127]` (module doc).
        #[inline]
        #[target_feature(enable = $feat)]
        fn dot32_i8(acc: __m256i, w: __m256i, x: __m256i) -> __m256i {
            dpbusd(acc, _mm256_abs_epi8(w), _mm256_sign_epi8(x, w))
        }

        /// Exact `Σ w[k] · x[k]` for `k < n` (`x` in `[−127, 127]`).
        ///
        /// # Safety
        /// `w` and `x` valid for reads of `n` bytes; the arm's features available.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn dot_i8(w: *const i8, x: *const i8, n: usize) -> i32 {
            let (mut a0, mut a1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
            let mut k = 0;
            while k + 64 <= n {
                // SAFETY: k + 64 ≤ n.
                unsafe {
                    let w0 = _mm256_loadu_si256(w.add(k).cast());
                    let x0 = _mm256_loadu_si256(x.add(k).cast());
                    let w1 = _mm256_loadu_si256(w.add(k + 32).cast());
                    let x1 = _mm256_loadu_si256(x.add(k + 32).cast());
                    a0 = dot32_i8(a0, w0, x0);
                    a1 = dot32_i8(a1, w1, x1);
                }
                k += 64;
            }
            while k + 32 <= n {
                // SAFETY: k + 32 ≤ n.
                unsafe {
                    let w0 = _mm256_loadu_si256(w.add(k).cast());
                    let x0 = _mm256_loadu_si256(x.add(k).cast());
                    a0 = dot32_i8(a0, w0, x0);
                }
                k += 32;
            }
            if k < n {
                let (mut tw, mut tx) = ([0i8; 32], [0i8; 32]);
                // SAFETY: n − k < 32 bytes are copied from valid ranges into 32-byte locals.
                unsafe {
                    core::ptr::copy_nonoverlapping(w.add(k), tw.as_mut_ptr(), n - k);
                    core::ptr::copy_nonoverlapping(x.add(k), tx.as_mut_ptr(), n - k);
                }
                // SAFETY: the locals are 32 bytes.
                let (wv, xv) = unsafe {
                    (_mm256_loadu_si256(tw.as_ptr().cast()), _mm256_loadu_si256(tx.as_ptr().cast()))
                };
                a1 = dot32_i8(a1, wv, xv);
            }
            hsum_epi32(_mm256_add_epi32(a0, a1))
        }

        /// Splits 16 packed bytes into 32 nibbles in column order (low nibble = even column).
        #[inline]
        #[target_feature(enable = $feat)]
        fn nibbles(v: __m128i) -> (__m128i, __m128i) {
            let m = _mm_set1_epi8(0x0F);
            let lo = _mm_and_si128(v, m);
            let hi = _mm_and_si128(_mm_srli_epi16::<4>(v), m);
            (_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi))
        }

        /// Decodes columns `c0 .. c0 + n` (`c0` a multiple of [`CH`], `n ≤ CH`) of `row` into
        /// integer codes in `buf`, returning a pointer to the codes (into `row` itself for
        /// int8-row).
        #[inline]
        #[target_feature(enable = $feat)]
        fn decode_i8(
            m: &Matrix<'_>,
            row: &[u8],
            c0: usize,
            n: usize,
            buf: &mut [i8; CH],
        ) -> *const i8 {
            match m.format() {
                Format::Int8Row => return row[c0..c0 + n].as_ptr().cast(),
                Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => {
                    let bytes = &row[c0 / 2..(c0 + n).div_ceil(2)];
                    let mx = m.format() == Format::Mxfp4;
                    // SAFETY: MX_LUT has 16 bytes.
                    let lut = unsafe { _mm_loadu_si128(MX_LUT.as_ptr().cast()) };
                    let eight = _mm_set1_epi8(8);
                    let full = n / 32;
                    for b in 0..full {
                        // SAFETY: 16 bytes at 16·b lie within `bytes` (b < n/32, bytes.len() ≥
                        // n/2); the stores write 32 bytes at 32·b < CH.
                        unsafe {
                            let v = _mm_loadu_si128(bytes.as_ptr().add(16 * b).cast());
                            let (a, c) = nibbles(v);
                            let (a, c) = if mx {
                                (_mm_shuffle_epi8(lut, a), _mm_shuffle_epi8(lut, c))
                            } else {
                                (_mm_sub_epi8(a, eight), _mm_sub_epi8(c, eight))
                            };
                            _mm_storeu_si128(buf.as_mut_ptr().add(32 * b).cast(), a);
                            _mm_storeu_si128(buf.as_mut_ptr().add(32 * b + 16).cast(), c);
                        }
                    }
                    for k in 32 * full..n {
                        let nib = (bytes[k / 2] >> (4 * (k % 2))) & 0xF;
                        #[allow(clippy::cast_possible_wrap)] // nibble < 16
                        let c = if mx { MX_LUT[usize::from(nib)] } else { nib as i8 - 8 };
                        buf[k] = c;
                    }
                }
                _ => crate::arch::x86_64::decode_small_ints(m, row, c0, &mut buf[..n]),
            }
            buf.as_ptr()
        }

        /// Decodes columns `c0 .. c0 + n` of `row` into unscaled f32 values (mxfp4: doubled),
        /// returning a pointer to them (into `row` itself for f32 weights).
        #[inline]
        #[target_feature(enable = $feat)]
        fn decode_f32(
            m: &Matrix<'_>,
            row: &[u8],
            c0: usize,
            n: usize,
            ibuf: &mut [i8; CH],
            fbuf: &mut [f32; CH],
        ) -> *const f32 {
            match m.format() {
                Format::F32 => return row[4 * c0..4 * (c0 + n)].as_ptr().cast(),
                Format::Fp8E4m3B128 => {
                    let bytes = &row[c0..c0 + n];
                    let full = n / 8;
                    for b in 0..full {
                        // SAFETY: 8 bytes at 8·b are within `bytes`; 8 f32 stored at 8·b < CH.
                        unsafe {
                            let v = _mm_loadl_epi64(bytes.as_ptr().add(8 * b).cast());
                            _mm256_storeu_ps(fbuf.as_mut_ptr().add(8 * b), fp8x8(v, true));
                        }
                    }
                    for (f, &b) in fbuf[8 * full..n].iter_mut().zip(&bytes[8 * full..]) {
                        *f = scalar::e4m3_to_f32(b);
                    }
                }
                _ => {
                    let codes = decode_i8(m, row, c0, n, ibuf);
                    let full = n / 8;
                    for b in 0..full {
                        // SAFETY: `codes` points at n valid bytes (the row or `ibuf`);
                        // 8·b + 8 ≤ n ≤ CH.
                        unsafe {
                            let t = _mm256_cvtepi8_epi32(_mm_loadl_epi64(codes.add(8 * b).cast()));
                            _mm256_storeu_ps(fbuf.as_mut_ptr().add(8 * b), _mm256_cvtepi32_ps(t));
                        }
                    }
                    for (k, f) in fbuf.iter_mut().enumerate().take(n).skip(8 * full) {
                        // SAFETY: k < n.
                        *f = f32::from(unsafe { *codes.add(k) });
                    }
                }
            }
            fbuf.as_ptr()
        }

        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_f32_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn f32_rows(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]) {
            let fused = match m.format() {
                Format::Int4Row | Format::Mxfp4 | Format::Int2Row | Format::Int3G64 => true,
                Format::Int4Grouped => m.group_len().is_multiple_of(32),
                _ => false,
            };
            if fused {
                // SAFETY: same contract.
                unsafe { f32_fused(m, x, s, rows, y) };
                return;
            }
            if m.format() == Format::Fp8E4m3B128 {
                // SAFETY: same contract.
                unsafe { f32_fp8(m, x, s, rows, y) };
                return;
            }
            if m.format() == Format::Int8Row {
                // SAFETY: same contract.
                unsafe { f32_int8_band8(m, x, s, rows, y) };
                return;
            }
            let (ni, gl, nr) = (m.i(), m.group_len(), rows.len());
            let mut ibuf = [0i8; CH];
            let mut fbuf = [0f32; CH];
            let mut s0 = 0;
            while s0 < s {
                let st = (s - s0).min(ST);
                for (r, o) in rows.clone().enumerate() {
                    let row = m.row_bytes(o);
                    let mut acc = [_mm256_setzero_ps(); ST];
                    let mut part = [_mm256_setzero_ps(); ST];
                    let (mut g, mut gend, mut c0) = (0, gl.min(ni), 0);
                    while c0 < ni {
                        let n = (ni - c0).min(CH);
                        let wp = decode_f32(m, row, c0, n, &mut ibuf, &mut fbuf);
                        let mut pos = c0;
                        while pos < c0 + n {
                            let end = gend.min(c0 + n);
                            for (k, p) in part[..st].iter_mut().enumerate() {
                                let xs = &x[(s0 + k) * ni + pos..(s0 + k) * ni + end];
                                // SAFETY: wp points at n values for columns c0..c0+n and
                                // c0 ≤ pos < end ≤ c0 + n; xs has end − pos values.
                                *p = _mm256_add_ps(*p, unsafe {
                                    dot_f32(wp.add(pos - c0), xs.as_ptr(), end - pos)
                                });
                            }
                            pos = end;
                            if pos == gend {
                                let sc = _mm256_set1_ps(scale_f32(m, o, g));
                                for (a, p) in acc[..st].iter_mut().zip(&mut part[..st]) {
                                    *a = _mm256_fmadd_ps(*p, sc, *a);
                                    *p = _mm256_setzero_ps();
                                }
                                g += 1;
                                gend = (gend + gl).min(ni);
                            }
                        }
                        c0 += n;
                    }
                    for (k, a) in acc[..st].iter().enumerate() {
                        y[(s0 + k) * nr + r] = hsum_ps(*a);
                    }
                }
                s0 += st;
            }
        }

        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn q8_rows(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            if m.format() == Format::Int4Row {
                // SAFETY: same contract.
                unsafe { q8_int4_row(m, xq, rows, y) };
                return;
            }
            if m.format() == Format::Int8Row {
                // SAFETY: same contract.
                unsafe { q8_int8_row(m, xq, rows, y) };
                return;
            }
            if m.format() == Format::Int2Row && m.i() <= PLANES {
                // SAFETY: same contract, and I ≤ PLANES.
                unsafe { q8_int2_row(m, xq, rows, y) };
                return;
            }
            if m.format() == Format::Int3G64 && m.i() <= PLANES {
                // SAFETY: same contract, and I ≤ PLANES.
                unsafe { q8_int3_g64(m, xq, rows, y) };
                return;
            }
            match m.format() {
                Format::Mxfp4 => {
                    // SAFETY: same contract.
                    unsafe {
                        if streams(m) {
                            q8_band8::<true, false, true>(m, xq, rows, y);
                        } else {
                            q8_band8::<true, false, false>(m, xq, rows, y);
                        }
                    }
                    return;
                }
                Format::Int4Grouped if m.group_len() == 32 => {
                    // SAFETY: same contract.
                    unsafe {
                        if streams(m) {
                            q8_band8::<false, false, true>(m, xq, rows, y);
                        } else {
                            q8_band8::<false, false, false>(m, xq, rows, y);
                        }
                    }
                    return;
                }
                Format::Int4Grouped if g32_multiple(m.group_len()) => {
                    // SAFETY: same contract.
                    unsafe {
                        if streams(m) {
                            q8_band8::<false, true, true>(m, xq, rows, y);
                        } else {
                            q8_band8::<false, true, false>(m, xq, rows, y);
                        }
                    }
                    return;
                }
                _ => {}
            }
            let (ni, gl, nr, s) = (m.i(), m.group_len(), rows.len(), xq.s());
            let mut ibuf = [0i8; CH];
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
                        let wp = decode_i8(m, row, c0, n, &mut ibuf);
                        let mut pos = c0;
                        while pos < c0 + n {
                            let end = gend.min(c0 + n);
                            for (k, dk) in d[..st].iter_mut().enumerate() {
                                let xs = &xq.row(s0 + k).0[pos..end];
                                // SAFETY: wp points at n codes for columns c0..c0+n ⊇ pos..end.
                                *dk += unsafe { dot_i8(wp.add(pos - c0), xs.as_ptr(), end - pos) };
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

        /// `Σ nib · x` over the full 64-column blocks of one int4 row for `T` activation rows at
        /// once (one weight load and unpack shared by the `T` rows):
        /// `dpbusd2(acc, nib, x, nib', x')` with `nib ≤ 15`, `|x| ≤ 127` (within `dpbusd2`'s
        /// bound: in the AVX2 arm, pair sums ≤ 3810, two added ≤ 7620, no i16 saturation).
        ///
        /// # Safety
        /// The arm's features available; `row` holds at least `32 · blocks` bytes and every
        /// `xs[k]` at least `64 · blocks`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int4_blocks_q8<const T: usize>(
            row: *const u8,
            xs: [*const i8; T],
            blocks: usize,
        ) -> [i32; T] {
            let mut acc = [_mm256_setzero_si256(); T];
            let mask = _mm256_set1_epi8(0x0F);
            for b in 0..blocks {
                // SAFETY: b < blocks, so the 32 bytes at 32·b are within the row.
                let v = unsafe { _mm256_loadu_si256(row.add(32 * b).cast()) };
                let lo = _mm256_and_si256(v, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), mask);
                let a = _mm256_unpacklo_epi8(lo, hi); // columns 0..16 | 32..48
                let c = _mm256_unpackhi_epi8(lo, hi); // columns 16..32 | 48..64
                let w0 = _mm256_permute2x128_si256::<0x20>(a, c); // columns 0..32
                let w1 = _mm256_permute2x128_si256::<0x31>(a, c); // columns 32..64
                for k in 0..T {
                    // SAFETY: 64 codes at 64·b are within xs[k].
                    let (x0, x1) = unsafe {
                        (
                            _mm256_loadu_si256(xs[k].add(64 * b).cast()),
                            _mm256_loadu_si256(xs[k].add(64 * b + 32).cast()),
                        )
                    };
                    acc[k] = dpbusd2(acc[k], w0, x0, w1, x1);
                }
            }
            let mut out = [0i32; T];
            for k in 0..T {
                out[k] = hsum_epi32(acc[k]);
            }
            out
        }

        /// Fused int4-row int8-activation kernel: `d = Σ nib·x − 8·Σx` (exact), then the scalar
        /// reference's epilogue `((0 + d·s) · sx)`. Activation rows 4 or 2 at a time share each
        /// weight row's loads ([`int4_blocks_q8`]); a single one (`S = 1`, or the last of an odd
        /// batch) takes the 8-row band kernel [`q8_int4_band8`].
        ///
        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn q8_int4_row(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr, s) = (m.i(), rows.len(), xq.s());
            let blocks = ni / 64;
            let mut s0 = 0;
            while s0 < s {
                let st = if s - s0 >= 4 {
                    4
                } else if s - s0 >= 2 {
                    2
                } else {
                    1
                };
                let mut xp = [core::ptr::null::<i8>(); 4];
                let mut xsum = [0i32; 4];
                for k in 0..st {
                    let q = xq.row(s0 + k).0;
                    xp[k] = q.as_ptr();
                    xsum[k] = q.iter().map(|&v| i32::from(v)).sum();
                }
                if st == 1 {
                    // SAFETY: same contract.
                    unsafe { q8_int4_band8(m, xq, s0, xsum[0], rows.clone(), y) };
                    s0 += 1;
                    continue;
                }
                for (r, o) in rows.clone().enumerate() {
                    let row = m.row_bytes(o);
                    // SAFETY: the row has ceil(I/2) ≥ 32·blocks bytes and each activation row I ≥
                    // 64·blocks codes.
                    let d4: [i32; 4] = unsafe {
                        match st {
                            4 => int4_blocks_q8::<4>(row.as_ptr(), xp, blocks),
                            2 => {
                                let d = int4_blocks_q8::<2>(row.as_ptr(), [xp[0], xp[1]], blocks);
                                [d[0], d[1], 0, 0]
                            }
                            _ => [int4_blocks_q8::<1>(row.as_ptr(), [xp[0]], blocks)[0], 0, 0, 0],
                        }
                    };
                    let sc = scalar::group_scale_q8(m, o, 0);
                    for k in 0..st {
                        let (q, sx) = xq.row(s0 + k);
                        let mut d = d4[k] - 8 * xsum[k];
                        for (c, &xv) in q.iter().enumerate().skip(64 * blocks) {
                            d += i32::from((row[c / 2] >> (4 * (c % 2))) & 0xF) * i32::from(xv);
                        }
                        let mut acc = 0.0f32;
                        if ni > 0 {
                            #[allow(clippy::cast_precision_loss)] // the spec's rounding
                            let df = d as f32;
                            acc += df * sc;
                        }
                        y[(s0 + k) * nr + r] = acc * sx;
                    }
                }
                s0 += st;
            }
        }

        /// The 8 exact sums of a band of 8 weight rows against one activation row, as one
        /// vector (lane `r` = row `r`): `step(acc, w, x)` adds one block (`W` bytes of each row
        /// at `w[r]`, `X` activation codes at `x`) into the 8 accumulators, one per row, for
        /// each of the `blocks` full blocks and then the partial last block `tail` (zero-padded
        /// copies), if any; [`sums8`] at the end.
        ///
        /// `STREAM` (a matrix streamed from DRAM, [`streams`]): each block step also prefetches
        /// into L2 the next `8 · W` bytes from `ahead`, the start of a later band (8 rows,
        /// contiguous in the matrix: the next band, or for short rows the first one at least
        /// 16 KiB ahead, `crate::arch::x86_64::band_ahead`), so a band is in flight while this
        /// one is summed. The hardware prefetchers alone, following 8 row streams, kept too few
        /// lines in flight: AVX2, Zen 4 VM, 9362 × 14 336, fraction of a plain read of the same
        /// bytes in the same process: int4-row 0.68–0.71 → 0.87–0.96, int8-row 0.77–0.78 →
        /// 0.89–0.96 (two bands ahead: about the same; one and three bands ahead together:
        /// 0.83).
        ///
        /// # Safety
        /// The arm's features available; every `rows[r]` holds at least `W · blocks` bytes,
        /// `x` at least `X · blocks` codes, the tail's pointers `W` and `X`; `step` reads only
        /// the `W` and `X` bytes at its pointers.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn band8_sums<const W: usize, const X: usize, const STREAM: bool>(
            rows: [*const u8; 8],
            x: *const i8,
            blocks: usize,
            tail: Option<([*const u8; 8], *const i8)>,
            ahead: *const u8,
            step: impl Fn(&mut [__m256i; 8], [*const u8; 8], *const i8),
        ) -> __m256i {
            let mut acc = [_mm256_setzero_si256(); 8];
            for b in 0..blocks {
                if STREAM {
                    for l in 0..8 * W / 64 {
                        // A hint: never faults, whatever the (wrapping) address.
                        _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(8 * W * b + 64 * l).cast());
                    }
                }
                // b < blocks: X codes at X·b, W bytes at W·b of every row.
                let w = core::array::from_fn(|r| rows[r].wrapping_add(W * b));
                step(&mut acc, w, x.wrapping_add(X * b));
            }
            if let Some((w, x)) = tail {
                step(&mut acc, w, x);
            }
            sums8(acc)
        }

        /// `Σ nib · x` of 8 int4 rows against **one** activation row ([`band8_sums`], 64-column
        /// blocks): the block's activation codes are loaded once and split into even and odd
        /// columns ([`split_even_odd`]: the layout of the low and high nibbles of a row's 32
        /// bytes), shared by the 8 rows; a row's block is one load, `& 0x0F`, `≫ 4 & 0x0F` and
        /// one `dpbusd2` (no unpacking into column order). In the zero-padded tail the padding
        /// nibbles meet zero codes. Exact as [`int4_blocks_q8`] (`nib ≤ 15`, `|x| ≤ 127`).
        ///
        /// # Safety
        /// As [`band8_sums`] with `W = 32`, `X = 64`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int4_band8_q8<const STREAM: bool>(
            rows: [*const u8; 8],
            x: *const i8,
            blocks: usize,
            tail: Option<([*const u8; 8], *const i8)>,
            ahead: *const u8,
        ) -> __m256i {
            let mask = _mm256_set1_epi8(0x0F);
            let step = |acc: &mut [__m256i; 8], w: [*const u8; 8], x: *const i8| {
                // SAFETY: x points at 64 codes, each w[r] at 32 bytes (band8_sums).
                let (xe, xo) = unsafe {
                    split_even_odd(
                        _mm256_loadu_si256(x.cast()),
                        _mm256_loadu_si256(x.add(32).cast()),
                    )
                };
                for r in 0..8 {
                    // SAFETY: as above.
                    let w = unsafe { _mm256_loadu_si256(w[r].cast()) };
                    let lo = _mm256_and_si256(w, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(w), mask);
                    acc[r] = dpbusd2(acc[r], lo, xe, hi, xo);
                }
            };
            // SAFETY: the caller's contract.
            unsafe { band8_sums::<32, 64, STREAM>(rows, x, blocks, tail, ahead, step) }
        }

        /// [`q8_int4_row`] for activation row `si` alone (`xsum` = its `Σx`), the GEMV case:
        /// weight rows in bands of 8 through [`int4_band8_q8`] (a final, shorter band repeats
        /// its last row and stores only its own), then the reference's epilogue
        /// `((0 + (d as f32) · s) · sx)` for the 8 rows as lane-wise vector operations (each
        /// lane exactly its row's operations: bit-identical).
        ///
        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn q8_int4_band8(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            si: usize,
            xsum: i32,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let blocks = ni / 64;
            let (q, sx) = xq.row(si);
            let ys = &mut y[si * nr..(si + 1) * nr];
            let Scales::F32(sf) = m.scales() else {
                unreachable!("int4-row has f32 scales (Matrix::new)")
            };
            if ni == 0 {
                for v in ys.iter_mut() {
                    *v = 0.0 * sx; // no groups: acc = 0, y = acc · sx
                }
                return;
            }
            // The partial last block's activation codes, zero-padded.
            let mut xt = [0i8; 64];
            xt[..ni - 64 * blocks].copy_from_slice(&q[64 * blocks..]);
            let off = _mm256_set1_epi32(8 * xsum);
            let stream = streams(m);
            // Each row's partial last block, zero-padded (every band copies the same number
            // of bytes over the same prefix, so the padding stays zero).
            let mut wt = [[0u8; 32]; 8];
            let mut r0 = 0;
            while r0 < nr {
                let nv = (nr - r0).min(8);
                let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                // Copied here, outside the block loop: a call there clobbers every ymm register.
                if ni % 64 != 0 {
                    for (r, t) in wt.iter_mut().enumerate() {
                        let row = m.row_bytes(o[r]);
                        t[..row.len() - 32 * blocks].copy_from_slice(&row[32 * blocks..]);
                    }
                }
                let tail =
                    (ni % 64 != 0).then(|| (core::array::from_fn(|r| wt[r].as_ptr()), xt.as_ptr()));
                // SAFETY: every row has ceil(I/2) ≥ 32·blocks bytes, q has I ≥ 64·blocks
                // codes; the tail copies hold 32 and 64 bytes.
                let d = unsafe {
                    let ahead = crate::arch::x86_64::band_ahead(rp[0], m.row_bytes(0).len());
                    if stream {
                        int4_band8_q8::<true>(rp, q.as_ptr(), blocks, tail, ahead)
                    } else {
                        int4_band8_q8::<false>(rp, q.as_ptr(), blocks, tail, ahead)
                    }
                };
                row_epilogue8(_mm256_sub_epi32(d, off), sf, &o, sx, &mut ys[r0..r0 + nv]);
                r0 += 8;
            }
        }

        /// `Σ w · x` of 8 int8 rows against one activation row ([`band8_sums`], 32-column
        /// blocks): the block's activation codes are loaded once for the 8 rows, each row's
        /// block is one load and one [`dot32_i8`].
        ///
        /// # Safety
        /// As [`band8_sums`] with `W = X = 32`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int8_band8_q8<const STREAM: bool>(
            rows: [*const u8; 8],
            x: *const i8,
            blocks: usize,
            tail: Option<([*const u8; 8], *const i8)>,
            ahead: *const u8,
        ) -> __m256i {
            let step = |acc: &mut [__m256i; 8], w: [*const u8; 8], x: *const i8| {
                // SAFETY: x and each w[r] point at 32 readable bytes (band8_sums).
                let xv = unsafe { _mm256_loadu_si256(x.cast()) };
                for r in 0..8 {
                    // SAFETY: as above.
                    let w = unsafe { _mm256_loadu_si256(w[r].cast()) };
                    acc[r] = dot32_i8(acc[r], w, xv);
                }
            };
            // SAFETY: the caller's contract.
            unsafe { band8_sums::<32, 32, STREAM>(rows, x, blocks, tail, ahead, step) }
        }

        /// One 128-column int2 block into `acc`: `acc[k] += dpbusd(crumbs at bits 2k, plane k)`.
        ///
        /// # Safety
        /// `w` valid for reads of 32 bytes; `p` 32-byte aligned and valid for 128.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn crumb_block(acc: [__m256i; 4], w: *const u8, p: *const i8) -> [__m256i; 4] {
            let three = _mm256_set1_epi8(3);
            // SAFETY: the caller's contract.
            unsafe {
                let w = _mm256_loadu_si256(w.cast());
                let x = |k: usize| _mm256_load_si256(p.add(32 * k).cast());
                [
                    dpbusd(acc[0], _mm256_and_si256(w, three), x(0)),
                    dpbusd(acc[1], _mm256_and_si256(_mm256_srli_epi16::<2>(w), three), x(1)),
                    dpbusd(acc[2], _mm256_and_si256(_mm256_srli_epi16::<4>(w), three), x(2)),
                    dpbusd(acc[3], _mm256_and_si256(_mm256_srli_epi16::<6>(w), three), x(3)),
                ]
            }
        }

        /// Activation codes [`q8_int2_row`] splits into crumb planes (a multiple of 128).
        const PLANES: usize = 32 << 10;

        /// A 32-byte-aligned stack buffer for [`q8_int2_row`]'s crumb planes.
        #[repr(C, align(32))]
        struct Planes(core::mem::MaybeUninit<[i8; PLANES]>);

        /// Splits activation row `q` into the four crumb planes of every 128-column block at
        /// `base` (plane `k` byte `b` = column `128j + 4b + k`, zero past `I`): the layout of
        /// [`q8_int2_row`] and [`q8_int3_g64`].
        ///
        /// # Safety
        /// `base` valid for writes of `128 · ceil(I/128)` bytes (`I = q.len()`).
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn crumb_planes(q: &[i8], base: *mut i8) {
            for j in 0..q.len().div_ceil(128) {
                for k in 0..4 {
                    for b in 0..32 {
                        let c = 128 * j + 4 * b + k;
                        // SAFETY: 128·j + 32·k + b < 128 · ceil(I/128): the caller's contract.
                        unsafe {
                            base.add(128 * j + 32 * k + b).write(q.get(c).copied().unwrap_or(0));
                        }
                    }
                }
            }
        }

        /// int2-row int8-activation kernel (as the AVX-512 one, on 128-column blocks): each
        /// activation row is split once into the four crumb planes of every block (plane `k`
        /// = columns `4b + k`, `b < 32`: the crumbs at bits `2k` of the block's 32 weight
        /// bytes; zero past `I`); then per weight row and block one 32-byte load (the last,
        /// partial block from a zero-padded copy), three shifts, four `& 3` and four `dpbusd`.
        /// `d = Σ crumb·x − 2·Σx` is exact, then the reference's epilogue `((0 + d·s) · sx)`.
        ///
        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_q8_rows`]; `I ≤
        /// PLANES`.
        #[target_feature(enable = $feat)]
        unsafe fn q8_int2_row(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let nb = ni.div_ceil(128);
            let mut planes = Planes(core::mem::MaybeUninit::uninit());
            let base = planes.0.as_mut_ptr().cast::<i8>();
            for si in 0..xq.s() {
                let (q, sx) = xq.row(si);
                let xsum: i32 = q.iter().map(|&v| i32::from(v)).sum();
                // SAFETY: the buffer holds PLANES ≥ 128 · ceil(I/128) bytes (I ≤ PLANES, a
                // multiple of 128).
                unsafe { crumb_planes(q, base) };
                for (r, o) in rows.clone().enumerate() {
                    let row = m.row_bytes(o);
                    let mut a = [_mm256_setzero_si256(); 4];
                    let full = ni / 128;
                    for j in 0..full {
                        // SAFETY: 128·j + 128 ≤ I: the 32 bytes at 32·j are in the row; the
                        // planes of block j were written above.
                        a = unsafe { crumb_block(a, row.as_ptr().add(32 * j), base.add(128 * j)) };
                    }
                    if full < nb {
                        // The partial last block from a zero-padded copy (outside the loop:
                        // a call there clobbers every ymm register).
                        let mut tail = [0u8; 32];
                        tail[..row.len() - 32 * full].copy_from_slice(&row[32 * full..]);
                        // SAFETY: the copy holds 32 bytes; the planes of block `full` were
                        // written above.
                        a = unsafe { crumb_block(a, tail.as_ptr(), base.add(128 * full)) };
                    }
                    let [a0, a1, a2, a3] = a;
                    let d = hsum_epi32(_mm256_add_epi32(
                        _mm256_add_epi32(a0, a1),
                        _mm256_add_epi32(a2, a3),
                    )) - 2 * xsum;
                    let sc = scalar::group_scale_q8(m, o, 0);
                    let mut acc = 0.0f32;
                    if ni > 0 {
                        #[allow(clippy::cast_precision_loss)] // the spec's rounding
                        let df = d as f32;
                        acc += df * sc;
                    }
                    y[si * nr + r] = acc * sx;
                }
            }
        }

        /// int3-g64 int8-activation kernel (as the AVX-512 one, two 64-column groups — 48
        /// weight bytes — per step instead of four). The activation row is split once into
        /// the crumb planes of [`crumb_planes`] (a 128-column block is two groups, group `g`
        /// of the pair in 128-bit lane `g`), and its per-group sums kept. A step loads the two
        /// 16-byte low planes into one vector and the two 8-byte high planes into 16 bytes,
        /// which widen to 32 nibbles ([`nibbles`]: byte `b` of lane `g` = bits `4b .. 4b + 4`
        /// of group `g`'s high plane, the high bits of columns `4b + k`). Per plane `k`:
        /// `u = ((lo ≫ 2k) & 3) | (bit k of the nibble) · 4 ∈ [0, 7]` and one `dpbusd`
        /// against plane `k`. Each lane then sums to its group's `Σ u·x`; `d = Σ u·x − 4·Σx`
        /// (exact), and the reference's epilogue runs per group in order (`acc = acc + (d as
        /// f32) · s`, then `acc · sx`). A last step of one group reads a zero-padded copy.
        ///
        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_q8_rows`]; `I ≤
        /// PLANES`.
        #[target_feature(enable = $feat)]
        unsafe fn q8_int3_g64(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (nr, ng) = (rows.len(), m.groups_per_row());
            let Scales::F32(sf) = m.scales() else {
                unreachable!("scale kind checked by Matrix::new")
            };
            let full = ng / 2;
            let mut planes = Planes(core::mem::MaybeUninit::uninit());
            let base = planes.0.as_mut_ptr().cast::<i8>();
            let mut gsum = [0i32; PLANES / 64];
            for si in 0..xq.s() {
                let (q, sx) = xq.row(si);
                // SAFETY: the buffer holds PLANES ≥ 128 · ceil(I/128) bytes (I ≤ PLANES, a
                // multiple of 128).
                unsafe { crumb_planes(q, base) };
                group_sums64(q, &mut gsum);
                for (r, o) in rows.clone().enumerate() {
                    let row = m.row_bytes(o);
                    let sc = &sf[o * ng..(o + 1) * ng];
                    let mut acc = 0.0f32;
                    for j in 0..full {
                        // SAFETY: groups 2j and 2j + 1 exist: 48 bytes at 48·j are in the row;
                        // the planes of block j were written above.
                        let d = unsafe { int3_pair(row.as_ptr().add(48 * j), base.add(128 * j)) };
                        int3_epilogue(&mut acc, d, 2, &gsum[2 * j..], &sc[2 * j..]);
                    }
                    if full < ng.div_ceil(2) {
                        // The last, single group, from a zero-padded copy (outside the loop:
                        // a call there clobbers every ymm register).
                        let mut tail = [0u8; 48];
                        tail[..24].copy_from_slice(&row[48 * full..]);
                        // SAFETY: the copy holds 48 bytes; the planes of block `full` were
                        // written above.
                        let d = unsafe { int3_pair(tail.as_ptr(), base.add(128 * full)) };
                        int3_epilogue(&mut acc, d, 1, &gsum[2 * full..], &sc[2 * full..]);
                    }
                    y[si * nr + r] = acc * sx;
                }
            }
        }

        /// `Σ u·x` of two int3-g64 groups (48 bytes at `w`) against their crumb planes (128
        /// bytes at `p`), one sum per group; see [`q8_int3_g64`].
        ///
        /// # Safety
        /// `w` valid for reads of 48 bytes; `p` 32-byte aligned and valid for 128.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int3_pair(w: *const u8, p: *const i8) -> [i32; 2] {
            // SAFETY: the caller's contract: group g's planes are at 24·g (16 bytes low, then
            // 8 bytes high), g < 2.
            let (lo, hi) = unsafe {
                let lo = _mm256_loadu2_m128i(w.add(24).cast(), w.cast());
                let h = |g: usize| w.add(24 * g + 16).cast::<i64>().read_unaligned();
                (lo, _mm_set_epi64x(h(1), h(0)))
            };
            let (n0, n1) = nibbles(hi);
            let nib = _mm256_set_m128i(n1, n0);
            let three = _mm256_set1_epi8(3);
            let four = _mm256_set1_epi8(4);
            let u = |crumbs: __m256i, high: __m256i| {
                _mm256_or_si256(_mm256_and_si256(crumbs, three), _mm256_and_si256(high, four))
            };
            let u = [
                u(lo, _mm256_slli_epi16::<2>(nib)),
                u(_mm256_srli_epi16::<2>(lo), _mm256_slli_epi16::<1>(nib)),
                u(_mm256_srli_epi16::<4>(lo), nib),
                u(_mm256_srli_epi16::<6>(lo), _mm256_srli_epi16::<1>(nib)),
            ];
            let mut acc = _mm256_setzero_si256();
            for (k, uk) in u.iter().enumerate() {
                // SAFETY: plane k of the block: 32 bytes at 32·k, aligned.
                acc = dpbusd(acc, *uk, unsafe { _mm256_load_si256(p.add(32 * k).cast()) });
            }
            // Each 128-bit lane (one group) to its sum.
            let t = _mm256_add_epi32(acc, _mm256_shuffle_epi32::<0x4E>(acc));
            let t = _mm256_add_epi32(t, _mm256_shuffle_epi32::<0xB1>(t));
            let (l0, l1) = (_mm256_castsi256_si128(t), _mm256_extracti128_si256::<1>(t));
            [_mm_cvtsi128_si32(l0), _mm_cvtsi128_si32(l1)]
        }

        /// One 32-column block of a nibble row as 4 × 8 f32 values (`nib − 8`, or `±2·e2m1`).
        #[inline]
        #[target_feature(enable = $feat)]
        fn nibble_block_f32(v: __m128i, mx: bool, lut: __m128i) -> [__m256; 4] {
            let (a, c) = nibbles(v);
            let (a, c) = if mx {
                (_mm_shuffle_epi8(lut, a), _mm_shuffle_epi8(lut, c))
            } else {
                let eight = _mm_set1_epi8(8);
                (_mm_sub_epi8(a, eight), _mm_sub_epi8(c, eight))
            };
            let f = |t: __m128i| _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(t));
            [f(a), f(_mm_srli_si128::<8>(a)), f(c), f(_mm_srli_si128::<8>(c))]
        }

        /// The fused f32-activation row kernel shared by the nibble formats and int2 / int3, for
        /// `T` activation rows sharing each weight decode: per block of `8·V` columns (`V`
        /// vectors of 8) `block(col)` decodes the weights to f32 in registers, then `V` FMAs per
        /// activation row into independent chains (four for one row and 64-column blocks — an
        /// int3 group is then two dependent FMAs deep — else two: registers); the group's
        /// partial sum is scaled at each group end (`acc = fma(part, scale, acc)`); the columns
        /// past a group's last full block are summed on the side with `value(c)`. Returns `y`
        /// for the `T` rows.
        ///
        /// # Safety
        /// The arm's features available; every `xs[k]` points at `I` values; every group of
        /// `m` starts on a block (`gs` a multiple of `8·V`).
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn grouped_row_f32<const T: usize, const V: usize>(
            m: &Matrix<'_>,
            o: usize,
            xs: [*const f32; T],
            block: impl Fn(usize) -> [__m256; V],
            value: impl Fn(usize) -> f32,
        ) -> [f32; T] {
            let (ni, gl) = (m.i(), m.group_len());
            let chains = if T == 1 && V == 8 { 4 } else { 2 };
            let mut acc = [_mm256_setzero_ps(); T];
            let mut tail_acc = [0f32; T];
            for g in 0..m.groups_per_row() {
                let (c0, c1) = (g * gl, ((g + 1) * gl).min(ni));
                let nfull = (c1 - c0) / (8 * V);
                let mut p = [[_mm256_setzero_ps(); 4]; T];
                for b in 0..nfull {
                    let col = c0 + 8 * V * b;
                    // col + 8·V ≤ I: the block is within the row.
                    let w = block(col);
                    for k in 0..T {
                        // SAFETY: col + 8·V ≤ I values of xs[k].
                        unsafe {
                            let xp = xs[k].add(col);
                            for (h, wh) in w.iter().enumerate() {
                                let q = &mut p[k][h % chains];
                                *q = _mm256_fmadd_ps(*wh, _mm256_loadu_ps(xp.add(8 * h)), *q);
                            }
                        }
                    }
                }
                let sc = scale_f32(m, o, g);
                let scv = _mm256_set1_ps(sc);
                for k in 0..T {
                    let mut tail = 0.0f32;
                    for c in c0 + 8 * V * nfull..c1 {
                        // SAFETY: c < I.
                        tail += value(c) * unsafe { *xs[k].add(c) };
                    }
                    let [q0, q1, q2, q3] = p[k];
                    let part = if chains == 4 {
                        _mm256_add_ps(_mm256_add_ps(q0, q1), _mm256_add_ps(q2, q3))
                    } else {
                        _mm256_add_ps(q0, q1)
                    };
                    acc[k] = _mm256_fmadd_ps(part, scv, acc[k]);
                    tail_acc[k] += tail * sc;
                }
            }
            let mut out = [0f32; T];
            for k in 0..T {
                out[k] = hsum_ps(acc[k]) + tail_acc[k];
            }
            out
        }

        /// [`grouped_row_f32`] for int4-row, int4-grouped (`gs` a multiple of 32) and mxfp4:
        /// 32-column blocks of 16 nibble bytes ([`nibble_block_f32`]).
        ///
        /// # Safety
        /// The arm's features available; every `xs[k]` points at `I` values.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn nibble_row_f32<const T: usize>(
            m: &Matrix<'_>,
            o: usize,
            xs: [*const f32; T],
        ) -> [f32; T] {
            let row = m.row_bytes(o);
            let mx = m.format() == Format::Mxfp4;
            // SAFETY: MX_LUT has 16 bytes.
            let lut = unsafe { _mm_loadu_si128(MX_LUT.as_ptr().cast()) };
            let block = |col: usize| {
                // SAFETY: col + 32 ≤ I, so the 16 bytes at col/2 are within the row.
                let v = unsafe { _mm_loadu_si128(row.as_ptr().add(col / 2).cast()) };
                nibble_block_f32(v, mx, lut)
            };
            let value = |c: usize| {
                let nib = (row[c / 2] >> (4 * (c % 2))) & 0xF;
                #[allow(clippy::cast_possible_wrap)] // nibble < 16
                let v = if mx { MX_LUT[usize::from(nib)] } else { nib as i8 - 8 };
                f32::from(v)
            };
            // SAFETY: the caller's contract; groups are multiples of 32 columns.
            unsafe { grouped_row_f32::<T, 4>(m, o, xs, block, value) }
        }

        /// [`grouped_row_f32`] for int2-row and int3-g64: 64-column blocks (16 bytes of int2,
        /// or one 24-byte int3 group) decoded with SSE2 (`crate::arch::x86_64::small_codes64`)
        /// and widened to 8 × 8 f32.
        ///
        /// # Safety
        /// The arm's features available; every `xs[k]` points at `I` values.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn small_row_f32<const T: usize>(
            m: &Matrix<'_>,
            o: usize,
            xs: [*const f32; T],
        ) -> [f32; T] {
            let row = m.row_bytes(o);
            let int3 = m.format() == Format::Int3G64;
            let unit = if int3 { 24 } else { 16 };
            let block = |col: usize| {
                let c = crate::arch::x86_64::small_codes64(&row[unit * (col / 64)..], int3);
                let f = |t: __m128i| _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(t));
                let hi = |t: __m128i| f(_mm_srli_si128::<8>(t));
                [f(c[0]), hi(c[0]), f(c[1]), hi(c[1]), f(c[2]), hi(c[2]), f(c[3]), hi(c[3])]
            };
            let value = |c: usize| f32::from(scalar::code_i8(m, o, c).unwrap_or(0));
            // SAFETY: the caller's contract; int2-row has one group, int3-g64 groups of 64.
            unsafe { grouped_row_f32::<T, 8>(m, o, xs, block, value) }
        }

        /// The fused f32 path ([`nibble_row_f32`], [`small_row_f32`]) over `rows`, activation
        /// rows 4, 2 or 1 at a time.
        ///
        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_f32_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn f32_fused(
            m: &Matrix<'_>,
            x: &[f32],
            s: usize,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let small = matches!(m.format(), Format::Int2Row | Format::Int3G64);
            let mut s0 = 0;
            if matches!(m.format(), Format::Int4Grouped | Format::Mxfp4) {
                // SAFETY: same contract. Activation rows 0..n done (n = 0 where the passes do
                // not apply: S = 1, or gs not dividing 512).
                s0 = unsafe { f32_multi_passes(m, x, s, rows.clone(), y) };
            }
            while s0 < s {
                let st = if s - s0 >= 4 {
                    4
                } else if s - s0 >= 2 {
                    2
                } else {
                    1
                };
                if m.format() == Format::Int4Row {
                    // SAFETY: same contract.
                    let n = unsafe { f32_multi_passes(m, x, s, rows.clone(), y) };
                    if n < s {
                        let (xs, ys) = (&x[n * ni..(n + 1) * ni], &mut y[n * nr..(n + 1) * nr]);
                        // SAFETY: same contract, activation row n.
                        unsafe { f32_int4_band8(m, xs, rows.clone(), ys) };
                    }
                    return;
                }
                let band = match m.format() {
                    Format::Mxfp4 => Some(true),
                    Format::Int4Grouped => Some(false),
                    _ => None,
                };
                if let (1, Some(mx)) = (st, band) {
                    let (xs, ys) = (&x[s0 * ni..(s0 + 1) * ni], &mut y[s0 * nr..(s0 + 1) * nr]);
                    // SAFETY: same contract, activation row s0; int4-grouped reaches here with
                    // gs % 32 == 0.
                    unsafe {
                        if mx {
                            f32_nib_band8::<true>(m, xs, rows.clone(), ys);
                        } else {
                            f32_nib_band8::<false>(m, xs, rows.clone(), ys);
                        }
                    }
                    s0 += 1;
                    continue;
                }
                let xp = |k: usize| x[(s0 + k) * ni..].as_ptr();
                for (r, o) in rows.clone().enumerate() {
                    // SAFETY: each pointer addresses the I values of activation row s0 + k.
                    let v: [f32; 4] = unsafe {
                        match st {
                            4 if small => small_row_f32::<4>(m, o, [xp(0), xp(1), xp(2), xp(3)]),
                            4 => nibble_row_f32::<4>(m, o, [xp(0), xp(1), xp(2), xp(3)]),
                            2 => {
                                let v = if small {
                                    small_row_f32::<2>(m, o, [xp(0), xp(1)])
                                } else {
                                    nibble_row_f32::<2>(m, o, [xp(0), xp(1)])
                                };
                                [v[0], v[1], 0.0, 0.0]
                            }
                            _ if small => [small_row_f32::<1>(m, o, [xp(0)])[0], 0.0, 0.0, 0.0],
                            _ => [nibble_row_f32::<1>(m, o, [xp(0)])[0], 0.0, 0.0, 0.0],
                        }
                    };
                    for k in 0..st {
                        y[(s0 + k) * nr + r] = v[k];
                    }
                }
                s0 += st;
            }
        }

        /// The skeleton of the small-batch passes ([`f32_int4_multi`], [`f32_fp8_multi`]) for
        /// activation rows `s0 .. s0 + T`: the columns in blocks of `UNIT` (32 or 128) and in
        /// chunks of `4096 / T` columns whose `T` activation rows are copied, times `xs` (1, `2⁸`
        /// or `2¹²⁰`, exact where the caller says so), into one 16 KiB stack buffer interleaved so
        /// that each 8 columns of the `T` rows are adjacent (`xb[(p·T + k)·8 ..]`: 8-column
        /// piece `p` of the chunk, row `k`; zero past `I`), L1-resident while every weight row
        /// passes over it. Rows go in blocks of about 1 MiB of weights (they stay in L2 across
        /// the chunks), each prefetching the chunk bytes of the row two ahead.
        /// `chunk(row, o, g0, g1, xb)` returns weight row `o`'s sums over blocks `g0..g1` for
        /// the `T` activation rows (8 lanes each); their horizontal sums are added into `y`
        /// (set by the first chunk). `EO` (int4-row: `UNIT` 32, `xs` 1): each 32 columns'
        /// four pieces are those of [`split_even_odd_ps`] instead of column order.
        ///
        /// # Safety
        /// The arm's features available; `x` holds activation rows `s0 .. s0 + T` of `I` values
        /// each, `y` the `S × rows.len()` outputs, `rows.end ≤ O`; `chunk` reads only its row
        /// (or copies of it) and `UNIT · T` buffer values per block from `xb`; `xs · x` is
        /// finite wherever `x` is.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn multi_passes<const T: usize, const UNIT: usize, const EO: bool>(
            m: &Matrix<'_>,
            x: &[f32],
            s0: usize,
            rows: Range<usize>,
            y: &mut [f32],
            xs: f32,
            chunk: impl Fn(&[u8], usize, usize, usize, *const f32) -> [__m256; T],
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let all = ni.div_ceil(UNIT);
            let per = 4096 / T / UNIT; // blocks per chunk
            // Weight bytes per block (for the prefetch): int4 packs two columns a byte, fp8 one.
            let nibbles =
                matches!(m.format(), Format::Int4Row | Format::Int4Grouped | Format::Mxfp4);
            let bpb = if nibbles { UNIT / 2 } else { UNIT };
            let mut xb = [0f32; 4096];
            let rb = (1_048_576 / ni.max(1)).max(8);
            let mut r0 = 0;
            while r0 < nr {
                let r1 = (r0 + rb).min(nr);
                let mut g0 = 0;
                while g0 < all {
                    let g1 = (g0 + per).min(all);
                    debug_assert!(!EO || (UNIT == 32 && xs == 1.0));
                    if EO {
                        // Per 32 columns and activation row, the four pieces of
                        // split_even_odd_ps (zero past I).
                        for bb in 0..(g1 - g0) * UNIT / 32 {
                            let c = UNIT * g0 + 32 * bb;
                            for k in 0..T {
                                let src = &x[(s0 + k) * ni..(s0 + k + 1) * ni];
                                let mut t = [0f32; 32];
                                let sp = if c + 32 <= ni {
                                    src[c..].as_ptr()
                                } else {
                                    t[..ni - c].copy_from_slice(&src[c..]);
                                    t.as_ptr()
                                };
                                // SAFETY: 32 values at sp; piece 4·bb + q of row k is inside
                                // xb (4096 / T / UNIT blocks of UNIT · T values per chunk).
                                unsafe {
                                    let v = split_even_odd_ps(sp);
                                    for (q, vq) in v.into_iter().enumerate() {
                                        let d = xb.as_mut_ptr().add(((4 * bb + q) * T + k) * 8);
                                        _mm256_storeu_ps(d, vq);
                                    }
                                }
                            }
                        }
                    }
                    for p in 0..if EO { 0 } else { (g1 - g0) * UNIT / 8 } {
                        let c = UNIT * g0 + 8 * p;
                        for k in 0..T {
                            let d = &mut xb[(p * T + k) * 8..][..8];
                            let src = &x[(s0 + k) * ni..(s0 + k + 1) * ni];
                            if c + 8 <= ni {
                                // SAFETY: 8 values at src[c..] and at d.
                                unsafe {
                                    let v = _mm256_loadu_ps(src.as_ptr().add(c));
                                    let v = if xs == 1.0 {
                                        v
                                    } else {
                                        _mm256_mul_ps(v, _mm256_set1_ps(xs))
                                    };
                                    _mm256_storeu_ps(d.as_mut_ptr(), v);
                                }
                            } else {
                                d.fill(0.0);
                                for (dv, sv) in d.iter_mut().zip(&src[c.min(ni)..]) {
                                    *dv = sv * xs;
                                }
                            }
                        }
                    }
                    for r in r0..r1 {
                        let (pr, pg) = if r + 2 < r1 { (r + 2, g0) } else { (r0 + r + 2 - r1, g1) };
                        if pr < r1 && pg < all {
                            let pp = m.row_bytes(rows.start + pr).as_ptr().wrapping_add(bpb * pg);
                            for l in (0..bpb * per).step_by(64) {
                                // A hint: never faults, whatever the (wrapping) address.
                                _mm_prefetch::<_MM_HINT_T0>(pp.wrapping_add(l).cast());
                            }
                        }
                        let o = rows.start + r;
                        let sums = chunk(m.row_bytes(o), o, g0, g1, xb.as_ptr());
                        for (k, a) in sums.into_iter().enumerate() {
                            let v = hsum_ps(a);
                            let yk = &mut y[(s0 + k) * nr + r];
                            *yk = if g0 == 0 { v } else { *yk + v };
                        }
                    }
                    g0 = g1;
                }
                r0 = r1;
            }
        }

        /// int4-grouped (`gs` dividing 512: 32, 64, …, 512) and mxfp4 (`MX`), f32 activations,
        /// `T` = 2, 4 or 8 activation rows per pass, in the form of [`f32_int4_multi`]: column
        /// chunks of `4096 / T` (whole groups, since `gs` divides them) copied into the
        /// interleaved 16 KiB buffer; per weight row and 32-column block one decode
        /// ([`nibble_block_f32`], shared by the `T` rows) and one FMA per activation row and 8
        /// columns into `8 / T` chains per row; at each group end `acc = fma(part, scale, acc)`
        /// per activation row (mxfp4: `2^(e − 128)`, the codes being doubled). Replaces the row
        /// kernel [`nibble_row_f32`] (per-group bookkeeping once per 32 columns, every pass
        /// re-reading the activations from their rows): at `S = 4` and 16 on the Zen 2 dev VM
        /// that ran at half int4-row's speed.
        ///
        /// # Safety
        /// The arm's features available; `m` is int4-grouped with `512 % gs == 0` or mxfp4,
        /// `x` holds activation rows `s0 .. s0 + T` of `I` values each, `y` the
        /// `S × rows.len()` outputs, `rows.end ≤ O`.
        #[target_feature(enable = $feat)]
        unsafe fn f32_nib_multi<const T: usize, const MX: bool>(
            m: &Matrix<'_>,
            x: &[f32],
            s0: usize,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let ni = m.i();
            let (blocks, bpg) = (ni / 32, m.group_len() / 32);
            let tn = ni - 32 * blocks;
            let all = blocks + usize::from(tn > 0);
            let (sf, se): (&[f32], &[u8]) = match m.scales() {
                Scales::F32(v) => (v, &[]),
                Scales::Ue8m0(e) => (&[], e),
                Scales::None => (&[], &[]),
            };
            // SAFETY: MX_LUT has 16 bytes.
            let lut = unsafe { _mm_loadu_si128(MX_LUT.as_ptr().cast()) };
            // One chunk (blocks b0..b1, whole groups but for a last partial one) of weight row
            // o: the T activation rows' sums, each group's times its scale.
            let chunk = |row: &[u8], o: usize, b0: usize, b1: usize, xb: *const f32| {
                let sb = m.scale_index(o, 0);
                let mut acc = [_mm256_setzero_ps(); T];
                let mut part = [[_mm256_setzero_ps(); 4]; T];
                let mut wt = [0u8; 16];
                for b in b0..b1 {
                    let w = if b < blocks {
                        row.as_ptr().wrapping_add(16 * b) // 16 bytes: b < blocks
                    } else {
                        wt[..tn.div_ceil(2)].copy_from_slice(&row[16 * blocks..]);
                        wt.as_ptr()
                    };
                    // SAFETY: 16 bytes at w (the row's block b, or the padded copy).
                    let d = nibble_block_f32(unsafe { _mm_loadu_si128(w.cast()) }, MX, lut);
                    let xp = xb.wrapping_add(32 * T * (b - b0));
                    for (q, dq) in d.into_iter().enumerate() {
                        for (k, pk) in part.iter_mut().enumerate() {
                            // SAFETY: the buffer's block b − b0 holds 32 · T values.
                            let xv = unsafe { _mm256_loadu_ps(xp.add((q * T + k) * 8)) };
                            let c = q % (8 / T);
                            pk[c] = _mm256_fmadd_ps(dq, xv, pk[c]);
                        }
                    }
                    if (b + 1) % bpg == 0 || b + 1 == all {
                        let g = b / bpg;
                        let sc = if MX {
                            crate::arch::UE8M0_HALF[usize::from(se[sb + g])]
                        } else {
                            sf[sb + g]
                        };
                        let sc = _mm256_set1_ps(sc);
                        for (a, pk) in acc.iter_mut().zip(part.iter_mut()) {
                            *a = _mm256_fmadd_ps(chains_sum::<T>(*pk), sc, *a);
                            *pk = [_mm256_setzero_ps(); 4];
                        }
                    }
                }
                acc
            };
            // SAFETY: same contract; `chunk` reads 16 bytes per block of the row (or its padded
            // copy) and 32 · T buffer values per block.
            unsafe { multi_passes::<T, 32, false>(m, x, s0, rows, y, 1.0, chunk) };
        }

        /// Fused int4-row f32-activation kernel for `T` = 2, 4 or 8 activation rows sharing each
        /// weight decode (the small-batch case): the columns in chunks of `4096 / T`, whose `T`
        /// activation rows are first copied into one 16 KiB stack buffer, interleaved so that
        /// each 8 columns of the `T` rows are adjacent (`xb[((4·b + q)·T + k)·8 ..]`: block `b`,
        /// quarter `q`, row `k`; zero past `I`; each 16 columns split into even and odd ones, as
        /// for [`f32_int4_band8`]), L1-resident while every weight row passes over it and
        /// addressed from one pointer. Per weight row and 16 columns: its 8 bytes decoded in
        /// byte order (`vpmovzxbd`, `& 0xF` and `≫ 4`, `− 8`, exact conversion), then one FMA
        /// per activation row and 8 columns into its own accumulator, the activations read
        /// from the buffer by the FMA (byte order instead of `vpsrlvd` into column order, Zen 2,
        /// 512 × 1024: S = 2 6.5 → 8.5, S = 4 4.4 → 4.8 G weights/s). Each chunk's `T` sums are added into
        /// `y` (set by the first chunk) and `y` is multiplied by the row's scale at the end:
        /// `(Σ_chunks Σ v·x) · scale`, within the f32 tolerance (module doc). The partial last
        /// block's weight bytes run on a zero-padded copy.
        ///
        /// # Safety
        /// The arm's features available; `m` is int4-row, `x` holds activation rows
        /// `s0 .. s0 + T` of `I` values each, `y` the `S × rows.len()` outputs, `rows.end ≤ O`.
        #[target_feature(enable = $feat)]
        unsafe fn f32_int4_multi<const T: usize>(
            m: &Matrix<'_>,
            x: &[f32],
            s0: usize,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let Scales::F32(sf) = m.scales() else {
                unreachable!("int4-row has f32 scales (Matrix::new)")
            };
            let blocks = ni / 32;
            let tn = ni - 32 * blocks;
            let all = blocks + usize::from(tn > 0);
            if all == 0 {
                for k in 0..T {
                    y[(s0 + k) * nr..(s0 + k + 1) * nr].fill(0.0); // no columns: Σ = 0
                }
                return;
            }
            // acc[k][q % C] += (codes of the 16 bytes at w) · (row k's piece q at xp: even and
            // odd columns of 0..16, then of 16..32): C = 8 / T chains per activation row, 8
            // independent FMA chains in all.
            let step = |acc: &mut [[__m256; 4]; T], w: *const u8, xp: *const f32| {
                // SAFETY: w points at 16 bytes, xp at 4 · T · 8 activations (callers).
                let v = unsafe { int4_split_codes(w) };
                for (q, vq) in v.into_iter().enumerate() {
                    for (k, a) in acc.iter_mut().enumerate() {
                        // SAFETY: as above.
                        let xv = unsafe { _mm256_loadu_ps(xp.add((q * T + k) * 8)) };
                        let c = q % (8 / T);
                        a[c] = _mm256_fmadd_ps(vq, xv, a[c]);
                    }
                }
            };
            // One chunk (blocks b0..b1) of one weight row: the T activation rows' sums.
            let chunk = |row: &[u8], _o: usize, b0: usize, b1: usize, xb: *const f32| {
                let mut acc = [[_mm256_setzero_ps(); 4]; T];
                for b in b0..b1.min(blocks) {
                    // b < blocks: 16 bytes at 16·b of the row; the buffer's block b − b0.
                    let w = row.as_ptr().wrapping_add(16 * b);
                    step(&mut acc, w, xb.wrapping_add(32 * T * (b - b0)));
                }
                if b1 > blocks {
                    let mut wt = [0u8; 16];
                    wt[..tn.div_ceil(2)].copy_from_slice(&row[16 * blocks..]);
                    step(&mut acc, wt.as_ptr(), xb.wrapping_add(32 * T * (blocks - b0)));
                }
                acc.map(|a| chains_sum::<T>(a))
            };
            // SAFETY: same contract; `chunk` reads 16 bytes per block of the row (or its
            // padded copy) and 32 · T buffer values per block.
            unsafe { multi_passes::<T, 32, true>(m, x, s0, rows.clone(), y, 1.0, chunk) };
            for (r, o) in rows.enumerate() {
                for k in 0..T {
                    y[(s0 + k) * nr + r] *= sf[o];
                }
            }
        }

        /// The band loop of the one-activation-row f32 band kernels ([`f32_int4_band8`],
        /// [`f32_nib_band8`], [`f32_fp8_band8`]): `rows` in bands of 8 (a final, shorter band
        /// repeats its last row and stores only its own); `band(o, rp, wt)` gets the band's
        /// row indices, row pointers and each row's bytes from `tail_at` on, zero-padded to
        /// `W` (copied here, outside the kernels' block loops), and returns lane `r` = the
        /// output of row `o[r]`.
        ///
        /// # Safety
        /// The arm's features available; `rows.end ≤ O`, `y.len() == rows.len()`; every row
        /// has at most `tail_at + W` bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn f32_bands8<const W: usize>(
            m: &Matrix<'_>,
            rows: Range<usize>,
            tail_at: usize,
            y: &mut [f32],
            mut band: impl FnMut(&[usize; 8], &[*const u8; 8], &[[u8; W]; 8]) -> __m256,
        ) {
            let nr = rows.len();
            let mut wt = [[0u8; W]; 8];
            let mut r0 = 0;
            while r0 < nr {
                let nv = (nr - r0).min(8);
                let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                for (r, t) in wt.iter_mut().enumerate() {
                    let row = m.row_bytes(o[r]);
                    if tail_at < row.len() {
                        t[..row.len() - tail_at].copy_from_slice(&row[tail_at..]);
                    }
                }
                let mut out = [0f32; 8];
                // SAFETY: out holds 8 f32.
                unsafe { _mm256_storeu_ps(out.as_mut_ptr(), band(&o, &rp, &wt)) };
                y[r0..r0 + nv].copy_from_slice(&out[..nv]);
                r0 += 8;
            }
        }

        /// Columns up to which [`f32_int4_band8`] splits the activations once per call (64 KiB
        /// of stack).
        const EO_MAX: usize = 16_384;

        /// Fused int4-row f32-activation kernel for **one** activation row `x` (the GEMV case),
        /// weight rows in bands of 8 (a final, shorter band repeats its last row and stores only
        /// its own). The activations of each 16 columns are split into even and odd columns
        /// ([`split_even_odd_ps`]) — once per call into a stack buffer where `I` ≤ [`EO_MAX`],
        /// else per band and block — so that a row's 8 weight bytes decode in byte order:
        /// `vpmovzxbd` (byte `k` in lane `k`), `& 0xF` (column `2k`) and `≫ 4` (column
        /// `2k + 1`), `− 8`, exact conversion, one FMA each with the even or the odd
        /// activations into the row's accumulator. The partial last block runs on zero-padded
        /// copies (padding codes meet zero activations). Per row: `Σ v·x` (8 lanes, one
        /// `vhaddps` tree for the band), times the row's scale: within the f32 tolerance
        /// (module doc), like the other arms' orders; both activation sources give the same
        /// bits. The column-order decode it replaced (4 bytes broadcast, `vpsrlvd` by
        /// `4·lane`) was bound by `vpsrlvd` on the Zen 2 dev VM: 9.1 G weights/s in L2
        /// against 16.7 (14.8 with the split per band and block). From DRAM (more than 24 MiB
        /// of weights) each band prefetches the next band's rows into L2, one line per row
        /// every 4 blocks (Zen 2, 4096 × 14336: 15.2 → 15.8).
        ///
        /// # Safety
        /// The arm's features available; `m` is int4-row, `x.len() == I`, `y.len() ==
        /// rows.len()`, `rows.end ≤ O`.
        #[target_feature(enable = $feat)]
        unsafe fn f32_int4_band8(m: &Matrix<'_>, x: &[f32], rows: Range<usize>, y: &mut [f32]) {
            let ni = m.i();
            let Scales::F32(sf) = m.scales() else {
                unreachable!("int4-row has f32 scales (Matrix::new)")
            };
            let blocks = ni / 32;
            let tn = ni - 32 * blocks;
            // The partial last block: activations zero-padded to 32, each row's bytes to 16.
            let mut xt = [0f32; 32];
            xt[..tn].copy_from_slice(&x[32 * blocks..]);
            // The split activations of every block, when they fit (zero-padded tail block).
            let whole = ni <= EO_MAX;
            let mut xeo = [const { core::mem::MaybeUninit::<f32>::uninit() }; EO_MAX + 32];
            let xep = xeo.as_mut_ptr().cast::<f32>();
            if whole {
                // SAFETY: xeo holds EO_MAX + 32 ≥ 32 · ceil(I / 32) values.
                unsafe { split_all(x, &xt, xep) };
            }
            let xep = xep.cast_const(); // 32 values per block written when `whole`
            // From DRAM: the next band's rows, one band ahead, into L2 (a line of each row
            // every 4 blocks).
            let (stream, end) = (streams(m), rows.end);
            let band = |o: &[usize; 8], rp: &[*const u8; 8], wt: &[[u8; 16]; 8]| {
                let mut acc = [_mm256_setzero_ps(); 8];
                let next = stream && o[0] + 8 < end;
                let np: [*const u8; 8] = if next {
                    core::array::from_fn(|r| m.row_bytes((o[0] + 8 + r).min(end - 1)).as_ptr())
                } else {
                    [core::ptr::null(); 8]
                };
                for b in 0..blocks {
                    // b < blocks: 32 activations at 32·b (their split at 32·b of xeo when
                    // `whole`), 16 bytes at 16·b of every row.
                    let w = core::array::from_fn(|r| rp[r].wrapping_add(16 * b));
                    if next && b % 4 == 0 {
                        for p in np {
                            // A hint: never faults, whatever the (wrapping) address.
                            _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(16 * b).cast());
                        }
                    }
                    // SAFETY: as above.
                    let xv = unsafe {
                        if whole {
                            let p = xep.add(32 * b);
                            core::array::from_fn(|k| _mm256_loadu_ps(p.add(8 * k)))
                        } else {
                            split_even_odd_ps(x.as_ptr().add(32 * b))
                        }
                    };
                    // SAFETY: 16 bytes at every w[r].
                    unsafe { int4_split_block(&mut acc, w, xv) };
                }
                if tn > 0 {
                    // SAFETY: xt holds 32 values.
                    let xv = unsafe { split_even_odd_ps(xt.as_ptr()) };
                    let w = core::array::from_fn(|r| wt[r].as_ptr());
                    // SAFETY: 16 bytes in every wt[r].
                    unsafe { int4_split_block(&mut acc, w, xv) };
                }
                let sc: [f32; 8] = core::array::from_fn(|r| sf[o[r]]);
                // SAFETY: sc holds 8 f32.
                _mm256_mul_ps(sums8_ps(acc), unsafe { _mm256_loadu_ps(sc.as_ptr()) })
            };
            // SAFETY: same contract; a row has 16·blocks + 16 bytes at most.
            unsafe { f32_bands8::<16>(m, rows, 16 * blocks, y, band) };
        }

        /// 32 activations at `p` → `[even, odd]` of columns `0..16`, then of `16..32` (8 each,
        /// in order): the pairing of [`f32_int4_band8`]'s byte-order nibble decode.
        ///
        /// # Safety
        /// The arm's features available; `p` points at 32 readable f32.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn split_even_odd_ps(p: *const f32) -> [__m256; 4] {
            let mut v = [_mm256_setzero_ps(); 4];
            for h in 0..2 {
                // SAFETY: 16·h + 16 ≤ 32 values at p (caller).
                let (a, c) = unsafe {
                    let q = p.add(16 * h);
                    (_mm256_loadu_ps(q), _mm256_loadu_ps(q.add(8)))
                };
                // Per 128-bit lane [a0 a2 c0 c2 | a4 a6 c4 c6]; the 64-bit permute orders it.
                let fix = |t: __m256| {
                    _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(t)))
                };
                v[2 * h] = fix(_mm256_shuffle_ps::<0x88>(a, c));
                v[2 * h + 1] = fix(_mm256_shuffle_ps::<0xDD>(a, c));
            }
            v
        }

        /// Every 32-column block's [`split_even_odd_ps`] into `xep` (block `b` at `32·b`): the
        /// full blocks from `x`, a partial last one from `xt` (`x`'s tail, zero-padded to 32).
        ///
        /// # Safety
        /// The arm's features available; `xep` points at `32 · ceil(I / 32)` writable f32.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn split_all(x: &[f32], xt: &[f32; 32], xep: *mut f32) {
            let blocks = x.len() / 32;
            for b in 0..x.len().div_ceil(32) {
                let src = if b < blocks { x[32 * b..].as_ptr() } else { xt.as_ptr() };
                // SAFETY: 32 values at src; 32·b + 32 ≤ 32 · ceil(I / 32) values at xep.
                unsafe {
                    let v = split_even_odd_ps(src);
                    for (k, vk) in v.into_iter().enumerate() {
                        _mm256_storeu_ps(xep.add(32 * b + 8 * k), vk);
                    }
                }
            }
        }

        /// `acc[r] +=` the int4 codes (`nib − 8`) of the 16 bytes at `w[r]` (32 columns)
        /// against one block's split activations `xv` ([`split_even_odd_ps`]): per 8 bytes
        /// `vpmovzxbd`, `& 0xF` (even columns) and `≫ 4` (odd), `− 8`, exact conversion, one
        /// FMA each, in that order.
        ///
        /// # Safety
        /// The arm's features available; every `w[r]` points at 16 readable bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int4_split_block<const R: usize>(
            acc: &mut [__m256; R],
            w: [*const u8; R],
            xv: [__m256; 4],
        ) {
            // Not int4_split_codes per row: decoding a row's 32 columns before its FMAs ran at
            // 14.9 against 17.0 G weights/s (Zen 2, 512 × 1024).
            let (low, eight) = (_mm256_set1_epi32(0xF), _mm256_set1_epi32(8));
            for h in 0..2 {
                let (xe, xo) = (xv[2 * h], xv[2 * h + 1]);
                for (r, ar) in acc.iter_mut().enumerate() {
                    // SAFETY: each w[r] points at 16 bytes (caller).
                    let d = unsafe { _mm_loadl_epi64(w[r].add(8 * h).cast()) };
                    let d = _mm256_cvtepu8_epi32(d);
                    let lo = _mm256_sub_epi32(_mm256_and_si256(d, low), eight);
                    let hi = _mm256_sub_epi32(_mm256_srli_epi32::<4>(d), eight);
                    *ar = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), xe, *ar);
                    *ar = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), xo, *ar);
                }
            }
        }

        /// The int4 codes (`nib − 8`) of the 16 bytes at `w` as f32 in the order of
        /// [`split_even_odd_ps`]: even columns of `0..16`, odd ones, then of `16..32`.
        ///
        /// # Safety
        /// The arm's features available; `w` points at 16 readable bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int4_split_codes(w: *const u8) -> [__m256; 4] {
            let (low, eight) = (_mm256_set1_epi32(0xF), _mm256_set1_epi32(8));
            let mut v = [_mm256_setzero_ps(); 4];
            for h in 0..2 {
                // SAFETY: 8 bytes at w + 8h (caller: 16).
                let d = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(w.add(8 * h).cast()) });
                v[2 * h] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(d, low), eight));
                v[2 * h + 1] =
                    _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32::<4>(d), eight));
            }
            v
        }

        /// One 32-column block of 4 int4-grouped or mxfp4 (`MX`) weight rows (16 bytes at
        /// `w[r]`) into the rows' group sums `part`: mxfp4 by [`nibble_block_f32`] and 4 FMAs
        /// against the 32 activations at `xb`; int4-grouped by [`int4_split_block`] against the
        /// block's split activations (at `split` when given, else split from `xb`).
        ///
        /// # Safety
        /// The arm's features available; 16 bytes at every `w[r]`, 32 values at `xb` and at
        /// `split` when given.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn nib_block4<const MX: bool>(
            part: &mut [__m256; 4],
            w: [*const u8; 4],
            xb: *const f32,
            split: Option<*const f32>,
            lut: __m128i,
        ) {
            // SAFETY: the caller's contract.
            unsafe {
                if MX {
                    let xv: [__m256; 4] = core::array::from_fn(|q| _mm256_loadu_ps(xb.add(8 * q)));
                    for (r, pr) in part.iter_mut().enumerate() {
                        let d = nibble_block_f32(_mm_loadu_si128(w[r].cast()), MX, lut);
                        for q in 0..4 {
                            *pr = _mm256_fmadd_ps(d[q], xv[q], *pr);
                        }
                    }
                } else {
                    let xv = match split {
                        Some(p) => core::array::from_fn(|k| _mm256_loadu_ps(p.add(8 * k))),
                        None => split_even_odd_ps(xb),
                    };
                    int4_split_block(part, w, xv);
                }
            }
        }

        /// The end of group `g` of 4 int4-grouped or mxfp4 (`MX`) rows: `acc[r] = fma(part[r],
        /// scale, acc[r])`, row `r`'s scales at `sc[r]` (`f32`, or UE8M0 bytes for `MX`, as
        /// `2^(e − 128)` for the doubled codes).
        ///
        /// # Safety
        /// A scale of group `g` at every `sc[r]` (the one of the format's kind).
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn nib_group_end<const MX: bool>(
            acc: &mut [__m256; 4],
            part: [__m256; 4],
            sc: &[(*const f32, *const u8); 4],
            g: usize,
        ) {
            for (r, (a, pr)) in acc.iter_mut().zip(part).enumerate() {
                // SAFETY: the caller's contract.
                let s = unsafe {
                    if MX {
                        crate::arch::UE8M0_HALF[usize::from(*sc[r].1.add(g))]
                    } else {
                        *sc[r].0.add(g)
                    }
                };
                *a = _mm256_fmadd_ps(pr, _mm256_set1_ps(s), *a);
            }
        }

        /// The groups `0 .. groups` of `bpg` full 32-column blocks of 4 int4-grouped or mxfp4
        /// (`MX`) weight rows (bytes at `w[r]`) against the activations at `x` (their split,
        /// block by block, at `split` when given): [`nib_block4`] per block,
        /// [`nib_group_end`] per group. Pointers advance by the block, so the loop keeps no
        /// per-block index arithmetic or bounds checks.
        ///
        /// # Safety
        /// The arm's features available; `16 · bpg · groups` bytes at every `w[r]`, `32 · bpg ·
        /// groups` values at `x` (and at `split` when given), `groups` scales at every `sc[r]`
        /// (the one of the format's kind).
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn nib_rows4_sweep<const MX: bool>(
            w: [*const u8; 4],
            x: *const f32,
            split: Option<*const f32>,
            groups: usize,
            bpg: usize,
            sc: &[(*const f32, *const u8); 4],
            lut: __m128i,
        ) -> [__m256; 4] {
            let mut acc = [_mm256_setzero_ps(); 4];
            let (mut w, mut xb, mut xe) = (w, x, split);
            for g in 0..groups {
                let mut part = [_mm256_setzero_ps(); 4];
                for _ in 0..bpg {
                    // SAFETY: one full block at w[r], xb (and xe) (caller).
                    unsafe { nib_block4::<MX>(&mut part, w, xb, xe, lut) };
                    w = w.map(|p| p.wrapping_add(16));
                    xb = xb.wrapping_add(32);
                    xe = xe.map(|p| p.wrapping_add(32));
                }
                // SAFETY: group g < groups has a scale at every sc[r] (caller).
                unsafe { nib_group_end::<MX>(&mut acc, part, sc, g) };
            }
            acc
        }

        /// Fused f32-activation kernel for int4-grouped (`gs` a multiple of 32) and mxfp4
        /// (`MX`) with **one** activation row `x` (the GEMV case; batches of 2 and more share
        /// each decode in [`nibble_row_f32`], faster from `S = 4` on the Zen 2 dev VM): weight
        /// rows in bands of 8 (a final, shorter band repeats its last row and stores only its
        /// own), each half band (4 rows) over the whole row before the other, so that its 4 group
        /// sums and 4 accumulators stay in registers (8 of each spilled; mxfp4, Zen 2, 512 ×
        /// 1024: 6.75 → 7.75 G weights/s; int4-grouped unchanged at 10.6; the same sums in the
        /// same order), its groups of full blocks in one [`nib_rows4_sweep`] (no per-block
        /// index arithmetic: mxfp4 7.75 → 8.9, int4-grouped gs 32 10.6 → 13.6). Per 32-column block the 32 activations are
        /// loaded once for the half band; a row's 16 bytes are split into column-order codes
        /// (`±2·e2m1` by `vpshufb`), widened and converted exactly ([`nibble_block_f32`]), then
        /// 4 FMAs into the row's group sum — int4-grouped instead decodes in byte order against
        /// the activations split into even and odd columns, as [`f32_int4_band8`]
        /// ([`int4_split_block`]; Zen 2, gs 32, 512 × 1024: 7.0 → 10.8 G weights/s, 4096 ×
        /// 14336: 6.3 → 9.3); at each group end
        /// `acc = fma(part, scale, acc)` per row with the row's group scale broadcast (mxfp4:
        /// `2^(e − 128)`, for the doubled codes). The partial last block runs on zero-padded
        /// copies (padding codes meet zero activations). Per row: `Σ acc` (one `vhaddps` tree
        /// for the band): within the f32 tolerance (module doc). Before it (the row kernel
        /// [`nibble_row_f32`], whose per-group bookkeeping ran once per 32 weights) these
        /// formats ran at 2.1 (gs 32) and 3.9 (mxfp4) G weights/s in L2 on the Zen 2 dev VM.
        ///
        /// # Safety
        /// The arm's features available; `m` is int4-grouped with `gs % 32 == 0` or mxfp4,
        /// `x.len() == I`, `y.len() == rows.len()`, `rows.end ≤ O`.
        #[target_feature(enable = $feat)]
        unsafe fn f32_nib_band8<const MX: bool>(
            m: &Matrix<'_>,
            x: &[f32],
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, gl) = (m.i(), m.group_len());
            let (blocks, bpg) = (ni / 32, gl / 32);
            let tn = ni - 32 * blocks;
            let all = blocks + usize::from(tn > 0);
            // SAFETY: MX_LUT has 16 bytes.
            let lut = unsafe { _mm_loadu_si128(MX_LUT.as_ptr().cast()) };
            let (sf, se): (&[f32], &[u8]) = match m.scales() {
                Scales::F32(v) => (v, &[]),
                Scales::Ue8m0(e) => (&[], e),
                Scales::None => (&[], &[]),
            };
            let mut xt = [0f32; 32];
            xt[..tn].copy_from_slice(&x[32 * blocks..ni]);
            // int4-grouped: the byte-order decode of f32_int4_band8, on the activations split
            // once per call where they fit.
            let whole = !MX && ni <= EO_MAX;
            let mut xeo = [const { core::mem::MaybeUninit::<f32>::uninit() }; EO_MAX + 32];
            let xep = xeo.as_mut_ptr().cast::<f32>();
            if whole {
                // SAFETY: xeo holds EO_MAX + 32 ≥ 32 · ceil(I / 32) values.
                unsafe { split_all(&x[..ni], &xt, xep) };
            }
            let xep = xep.cast_const(); // 32 values per block written when `whole`
            let band = |o: &[usize; 8], rp: &[*const u8; 8], wt: &[[u8; 16]; 8]| {
                // Each half band (4 rows) over the whole row: 4 group sums and 4 accumulators
                // stay in registers (8 of each spilled).
                let halves = if o[4] == o[3] { 1 } else { 2 }; // ≤ 4 rows: row 3 repeated
                let mut res = [_mm256_setzero_ps(); 2];
                for (h, rh) in res.iter_mut().enumerate().take(halves) {
                    // Group g's scale of row o[4h + r] is at sb[r] + g.
                    let sb: [usize; 4] = core::array::from_fn(|r| m.scale_index(o[4 * h + r], 0));
                    // The groups of full blocks in one sweep, the rest (a group holding the
                    // padded last block) below.
                    let gfull = blocks / bpg;
                    let w0 = core::array::from_fn(|r| rp[4 * h + r]);
                    let sc = core::array::from_fn(|r| {
                        if MX {
                            (core::ptr::null(), se[sb[r]..].as_ptr())
                        } else {
                            (sf[sb[r]..].as_ptr(), core::ptr::null())
                        }
                    });
                    let split = whole.then_some(xep); // block b's split at 32·b
                    // SAFETY: gfull · bpg ≤ blocks full blocks of every row and of x (and of
                    // its split in xeo when `whole`); gfull ≤ groups scales of every row.
                    let mut acc = unsafe {
                        nib_rows4_sweep::<MX>(w0, x.as_ptr(), split, gfull, bpg, &sc, lut)
                    };
                    for g in gfull..m.groups_per_row() {
                        let mut part = [_mm256_setzero_ps(); 4];
                        for b in g * bpg..((g + 1) * bpg).min(all) {
                            // SAFETY: b < blocks: 32 activations at 32·b (their split at 32·b
                            // of xeo when `whole`) and 16 bytes at 16·b of every row; else the
                            // 32- and 16-long padded copies.
                            unsafe {
                                if b < blocks {
                                    let w = core::array::from_fn(|r| rp[4 * h + r].add(16 * b));
                                    let xs = split.map(|p| p.add(32 * b));
                                    nib_block4::<MX>(&mut part, w, x.as_ptr().add(32 * b), xs, lut);
                                } else {
                                    let w = core::array::from_fn(|r| wt[4 * h + r].as_ptr());
                                    nib_block4::<MX>(&mut part, w, xt.as_ptr(), None, lut);
                                }
                            }
                        }
                        // SAFETY: g < groups: a scale of group g at every sc[r].
                        unsafe { nib_group_end::<MX>(&mut acc, part, &sc, g) };
                    }
                    *rh = sums4_half_ps(acc);
                }
                // Per row the same sums, in the same order, as one vhaddps tree over 8.
                sums8_halves_ps(res)
            };
            // SAFETY: same contract; a row has 16·blocks + 16 bytes at most.
            unsafe { f32_bands8::<16>(m, rows, 16 * blocks, y, band) };
        }

        /// Fused int8-row f32-activation kernel (every `S`): weight rows in bands of 8 (a final,
        /// shorter band repeats its last row and stores only its own), each band against every
        /// activation row in turn (the band's bytes stay in L1/L2 after the first). Per
        /// 8-column step the 8 activations are loaded once for the band; a row's 8 weight bytes
        /// are sign-extended (`vpmovsxbd`) and converted exactly to f32, then one FMA into the
        /// row's accumulator (8 independent FMA chains). The partial last 32 columns run on
        /// zero-padded copies. Per row: `Σ w·x` (one `vhaddps` tree for the band), times the
        /// row's scale: within the f32 tolerance (module doc). From DRAM (`streams`), each
        /// 32-column block of the first activation row prefetches the next 256 bytes of a
        /// later band, as [`band8_sums`].
        ///
        /// # Safety
        /// The arm's features available; `m` is int8-row, `x.len() ≥ s · I`, `y.len() ≥ s ·
        /// rows.len()`, `rows.end ≤ O`.
        #[target_feature(enable = $feat)]
        unsafe fn f32_int8_band8(
            m: &Matrix<'_>,
            x: &[f32],
            s: usize,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let Scales::F32(sf) = m.scales() else {
                unreachable!("int8-row has f32 scales (Matrix::new)")
            };
            let blocks = ni / 32;
            let tn = ni - 32 * blocks;
            let stream = streams(m);
            let mut xt = [0f32; 32];
            let mut wt = [[0u8; 32]; 8];
            let mut r0 = 0;
            while r0 < nr {
                let nv = (nr - r0).min(8);
                let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                if tn > 0 {
                    for (r, t) in wt.iter_mut().enumerate() {
                        t[..tn].copy_from_slice(&m.row_bytes(o[r])[32 * blocks..]);
                    }
                }
                let ahead = crate::arch::x86_64::band_ahead(rp[0], m.row_bytes(0).len());
                let sc: [f32; 8] = core::array::from_fn(|r| sf[o[r]]);
                for si in 0..s {
                    let xs = &x[si * ni..(si + 1) * ni];
                    if tn > 0 {
                        xt[..tn].copy_from_slice(&xs[32 * blocks..]);
                    }
                    let tail = (tn > 0).then(|| (wt.each_ref().map(|t| t.as_ptr()), xt.as_ptr()));
                    // SAFETY: every row holds I ≥ 32·blocks bytes and xs I values; the tail
                    // copies hold 32 of each.
                    let sum = unsafe {
                        if stream && si == 0 {
                            int8_band8_f32::<true>(rp, xs.as_ptr(), blocks, tail, ahead)
                        } else {
                            int8_band8_f32::<false>(rp, xs.as_ptr(), blocks, tail, ahead)
                        }
                    };
                    let mut out = [0f32; 8];
                    // SAFETY: sc and out hold 8 f32.
                    unsafe {
                        _mm256_storeu_ps(
                            out.as_mut_ptr(),
                            _mm256_mul_ps(sum, _mm256_loadu_ps(sc.as_ptr())),
                        );
                    }
                    y[si * nr + r0..si * nr + r0 + nv].copy_from_slice(&out[..nv]);
                }
                r0 += 8;
            }
        }

        /// `Σ w·x` of 8 int8 rows (`rows[r]`, `32 · blocks` bytes, then the zero-padded `tail`
        /// copies of 32) against the f32 activations at `x` (`32 · blocks` values, then the
        /// tail's 32), lane `r` of the result = row `r` ([`f32_int8_band8`]).
        ///
        /// # Safety
        /// The arm's features available; the pointers valid for those reads.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int8_band8_f32<const STREAM: bool>(
            rows: [*const u8; 8],
            x: *const f32,
            blocks: usize,
            tail: Option<([*const u8; 8], *const f32)>,
            ahead: *const u8,
        ) -> __m256 {
            let mut acc = [_mm256_setzero_ps(); 8];
            // 32 columns: 4 steps of 8.
            let block = |acc: &mut [__m256; 8], w: [*const u8; 8], xb: *const f32| {
                for q in 0..4 {
                    // SAFETY: xb points at 32 values, each w[r] at 32 bytes (callers).
                    let xq = unsafe { _mm256_loadu_ps(xb.add(8 * q)) };
                    for r in 0..8 {
                        // SAFETY: as above.
                        let b = unsafe { _mm_loadl_epi64(w[r].add(8 * q).cast()) };
                        let v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
                        acc[r] = _mm256_fmadd_ps(v, xq, acc[r]);
                    }
                }
            };
            for b in 0..blocks {
                if STREAM {
                    for l in 0..4 {
                        // A hint: never faults, whatever the (wrapping) address.
                        _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(256 * b + 64 * l).cast());
                    }
                }
                let w = core::array::from_fn(|r| rows[r].wrapping_add(32 * b));
                block(&mut acc, w, x.wrapping_add(32 * b));
            }
            if let Some((w, xt)) = tail {
                block(&mut acc, w, xt);
            }
            sums8_ps(acc)
        }

        /// Splits 64 activation codes (`x0` = columns 0..32, `x1` = 32..64 of a block) into
        /// the 32 even and the 32 odd columns, in order: the layout of the low and high
        /// nibbles of the block's 32 weight bytes. `vpshufb` gathers the 8 even then the 8 odd
        /// bytes of each 16-byte lane, `vpermq` puts each vector's even qwords in its low half,
        /// two `vperm2i128` join the halves.
        #[inline]
        #[target_feature(enable = $feat)]
        fn split_even_odd(x0: __m256i, x1: __m256i) -> (__m256i, __m256i) {
            #[rustfmt::skip]
            let pat = _mm256_setr_epi8(
                0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
            );
            // qwords [E0 O0 E1 O1] → [E0 E1 O0 O1] (Ek, Ok: even, odd columns of 16 columns).
            let a = _mm256_permute4x64_epi64::<0xD8>(_mm256_shuffle_epi8(x0, pat));
            let b = _mm256_permute4x64_epi64::<0xD8>(_mm256_shuffle_epi8(x1, pat));
            (_mm256_permute2x128_si256::<0x20>(a, b), _mm256_permute2x128_si256::<0x31>(a, b))
        }

        /// The i16 pair sums of 8 + 8 i32 lanes: lane `q` of each 128-bit half of the result
        /// is `[a0+a1, a2+a3, b0+b1, b2+b3][q]` of that half of `a` and `b`. Exact when every
        /// lane of `a` and `b` fits in i16 (`vpackssdw` saturates); the sums are i32.
        #[inline]
        #[target_feature(enable = $feat)]
        fn pack_sum(a: __m256i, b: __m256i) -> __m256i {
            _mm256_madd_epi16(_mm256_packs_epi32(a, b), _mm256_set1_epi16(1))
        }

        /// A 8 × 4 transpose of dwords: `row(r)` gives 4 dwords of row `r`; result `k` has
        /// dword `k` of row `r` in lane `r` (rows `r` and `r + 4` joined by `vinserti128`, then
        /// `vpunpck{l,h}{dq,qdq}` within the 128-bit halves).
        #[inline]
        #[target_feature(enable = $feat)]
        fn transpose8x4(row: impl Fn(usize) -> __m128i) -> [__m256i; 4] {
            let z =
                |j: usize| _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(row(j)), row(j + 4));
            let (z0, z1, z2, z3) = (z(0), z(1), z(2), z(3));
            let (t0, t1) = (_mm256_unpacklo_epi32(z0, z1), _mm256_unpackhi_epi32(z0, z1));
            let (t2, t3) = (_mm256_unpacklo_epi32(z2, z3), _mm256_unpackhi_epi32(z2, z3));
            [
                _mm256_unpacklo_epi64(t0, t2),
                _mm256_unpackhi_epi64(t0, t2),
                _mm256_unpacklo_epi64(t1, t3),
                _mm256_unpackhi_epi64(t1, t3),
            ]
        }

        /// Row `o`'s 16 bytes from `v[o · ng + g]` as one vector (`n = min(16, ng − g)` of
        /// them, zeros past `n`): 4-byte UE8M0 scales of 4 groups per dword.
        #[inline]
        #[target_feature(enable = $feat)]
        fn row16(v: &[u8], o: usize, ng: usize, g: usize) -> __m128i {
            let n = (ng - g).min(16);
            let src = &v[o * ng + g..o * ng + g + n];
            if n == 16 {
                // SAFETY: src holds 16 bytes.
                unsafe { _mm_loadu_si128(src.as_ptr().cast()) }
            } else {
                let mut t = [0u8; 16];
                t[..n].copy_from_slice(src);
                // SAFETY: t holds 16 bytes.
                unsafe { _mm_loadu_si128(t.as_ptr().cast()) }
            }
        }

        /// The f32 scales of groups `g .. g + 4` of the 8 rows `o[r]` (0 past the row's last
        /// group), one vector per group, lane `r` = row `o[r]` (by [`transpose8x4`]).
        #[inline]
        #[target_feature(enable = $feat)]
        fn scales4(sf: &[f32], o: &[usize; 8], ngs: usize, g: usize) -> [__m256i; 4] {
            transpose8x4(|r| {
                let k = (ngs - g).min(4);
                let s = &sf[o[r] * ngs + g..o[r] * ngs + g + k];
                if k == 4 {
                    // SAFETY: s holds 4 f32.
                    return unsafe { _mm_loadu_si128(s.as_ptr().cast()) };
                }
                let mut t = [0f32; 4];
                t[..k].copy_from_slice(s);
                // SAFETY: t holds 4 f32.
                unsafe { _mm_loadu_si128(t.as_ptr().cast()) }
            })
        }

        /// The exact i32 block sums of one row: `cb + Σ (code + offset) · x` over the block's
        /// 64 columns, lane `k` = columns `8k .. 8k + 8` (so lanes 0..4 = the first 32-column
        /// subgroup, 4..8 the second), from the row's 32 bytes of the block at `p`.
        ///
        /// # Safety
        /// The arm's features available; `p` valid for reads of 32 bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn row_block<const MX: bool>(
            p: *const u8,
            cb: __m256i,
            xe: __m256i,
            xo: __m256i,
            low: __m256i,
            lut: __m256i,
        ) -> __m256i {
            // SAFETY: 32 bytes at p (the caller's contract).
            let w = unsafe { _mm256_loadu_si256(p.cast()) };
            let lo = _mm256_and_si256(w, low);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(w), low);
            let (ue, uo) = if MX {
                (_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi))
            } else {
                (lo, hi)
            };
            dpbusd2(cb, ue, xe, uo, xo)
        }

        /// int8-activation kernel for nibble groups of 32 columns (mxfp4 when `MX`, int4-grouped
        /// `gs = 32`) or of a multiple of 32 dividing [`QC`] (int4-grouped, `WIDE`: 64, 128,
        /// …, 16384) with **one output row per i32 lane**: bands of 8 rows share each
        /// activation load, and the reference's epilogue (`acc = acc + (d as f32) · scale`,
        /// groups in order, then `acc · sx`) runs as 8-lane vector operations, each lane
        /// performing exactly the reference's f32 operations for its row: bit-identical.
        ///
        /// Per 64-column block: the activation codes are split once per chunk into even and odd
        /// columns ([`split_even_odd`]), matching the low and high nibbles of the 32 weight
        /// bytes of each row; a row's block is then one load, `& 0x0F`, `≫ 4 & 0x0F`, (mxfp4:
        /// two `vpshufb` to `code + 12`) and one `dpbusd2` ([`row_block`]). The unsigned
        /// operands are the code plus an offset (`nib ≤ 15`; `code + 12 ≤ 24`: within
        /// `dpbusd2`'s bound `u ≤ 64`, so both arms are exact), and the accumulator starts at
        /// `−offset · Σx` over the same lane's columns, so every i32 lane ends at `Σ code · x`
        /// over 8 columns of one subgroup (|·| ≤ 8 · 12 · 127 = 12 192). Two `vpackssdw` +
        /// `vpmaddwd(·, 1)` levels ([`pack_sum`]; exact: lanes and their pair sums fit in i16)
        /// and two `vperm2i128` give per subgroup one vector with row `r`'s exact sum in
        /// lane `r`.
        ///
        /// Epilogue per group: int4: `p = (d as f32) · s` (one `vmulps`, as the reference; the
        /// `gs = 32` scales of 4 groups come by one 8 × 4 transpose, [`transpose8x4`]);
        /// mxfp4: `p = ((d as f32) · 0.5) · 2^(e−127)`, where `(d as f32) · 0.5` is exact
        /// (`|d| < 2¹⁶`), so `p` is the single rounding of `d · 2^(e−128)`: the reference's
        /// `(d as f32) · ue8m0_half(e)`, for every `e` (`e = 0`: `±0`, as `d · (+0.0)`;
        /// `e = 1`: `2^(e−127)` is normal, so no subnormal operand); the UE8M0 bytes of 16
        /// groups come by one transpose, each group's `2^(e−127)` is its byte shifted into the
        /// exponent field. Then `acc = acc + p` (`vaddps`; not an FMA, which would skip the
        /// product's rounding).
        ///
        /// `WIDE` (int4-grouped, `gs = 32k`, `k ≥ 2`): a group's `d` is the i32 sum of its `k`
        /// subgroup sums (both halves of every block in it), added exactly before the
        /// epilogue (`|d| ≤ gs · 8 · 127 < 2²⁴`); the group closes after `k / 2` blocks or at
        /// the row's end; the scales of 4 groups come by one transpose. Groups never span
        /// chunks, as `gs` divides `QC`.
        ///
        /// Rows past the range's last one (a final band of fewer than 8) repeat the last row
        /// and are not stored. Columns: chunks of [`QC`]; between chunks the 8 accumulators
        /// wait in `y` (exact: f32 stored as f32). The last, partial block reads its codes from
        /// zero-padded copies; the codes past `I` meet zero activations.
        ///
        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_q8_rows`].
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
            let (ni, nr, ngs) = (m.i(), rows.len(), m.groups_per_row());
            // 32-column subgroups per row and per group (mxfp4: 1, groups are 32 columns).
            let (nsub, per) = (ni.div_ceil(32), if MX { 1 } else { m.group_len() / 32 });
            if nr == 0 || ni == 0 {
                for v in &mut y[..nr * xq.s()] {
                    *v = 0.0; // no groups: acc = 0, y = 0 · sx = 0 (sx finite, ≥ 0)
                }
                return;
            }
            let (sf, se): (&[f32], &[u8]) = match m.scales() {
                Scales::F32(s) if !MX => (s, &[]),
                Scales::Ue8m0(e) if MX => (&[], e),
                _ => unreachable!("scale kind checked by Matrix::new"),
            };
            // SAFETY: the table holds 16 bytes.
            let lut16 = unsafe { _mm_loadu_si128(MX_OFF.as_ptr().cast()) };
            let lut = _mm256_broadcastsi128_si256(lut16);
            let off = _mm256_set1_epi8(if MX { 12 } else { 8 });
            let low = _mm256_set1_epi8(0x0F);
            let z = _mm256_setzero_si256();
            let mut xbuf = [0i8; QC];
            let mut cbuf = [z; QC / 64];
            for si in 0..xq.s() {
                let (q, sx) = xq.row(si);
                let ys = &mut y[si * nr..(si + 1) * nr];
                let mut c0 = 0;
                while c0 < ni {
                    let cn = (ni - c0).min(QC);
                    let nb = cn.div_ceil(64);
                    for (b, cb) in cbuf[..nb].iter_mut().enumerate() {
                        let col = c0 + 64 * b;
                        let mut t = [0i8; 64];
                        let src: &[i8] = if ni - col >= 64 {
                            &q[col..col + 64]
                        } else {
                            t[..ni - col].copy_from_slice(&q[col..]);
                            &t
                        };
                        // SAFETY: src holds 64 codes; the stores write xbuf[64b .. 64b + 64]
                        // (b < nb ≤ QC / 64).
                        unsafe {
                            let x0 = _mm256_loadu_si256(src.as_ptr().cast());
                            let x1 = _mm256_loadu_si256(src.as_ptr().add(32).cast());
                            let (xe, xo) = split_even_odd(x0, x1);
                            _mm256_storeu_si256(xbuf.as_mut_ptr().add(64 * b).cast(), xe);
                            _mm256_storeu_si256(xbuf.as_mut_ptr().add(64 * b + 32).cast(), xo);
                            *cb = _mm256_sub_epi32(z, dpbusd2(z, off, xe, off, xo));
                        }
                    }
                    let (first, last) = (c0 == 0, c0 + cn == ni);
                    let gc = c0 / 32; // the chunk's first subgroup
                    let mut r0 = 0;
                    while r0 < nr {
                        let nv = (nr - r0).min(8);
                        let o: [usize; 8] =
                            core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                        let rp: [*const u8; 8] =
                            core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                        // From DRAM: the next band's lines, one band ahead, into L2.
                        let pf = if STREAM {
                            BandPrefetch::<8>::next(m, &rows, r0, c0, cn)
                        } else {
                            None
                        };
                        let mut t = [0f32; 8];
                        if !first {
                            t[..nv].copy_from_slice(&ys[r0..r0 + nv]);
                        }
                        // SAFETY: t holds 8 f32.
                        let mut acc = unsafe { _mm256_loadu_ps(t.as_ptr()) };
                        // The partial last block's weight bytes, zero-padded (copied here,
                        // not in the block loop: a call there clobbers every ymm register).
                        let mut tails = [[0u8; 32]; 8];
                        let (lcol, lrem) = (c0 + 64 * (nb - 1), ni - c0 - 64 * (nb - 1));
                        if lrem < 64 {
                            let k = lrem.div_ceil(2);
                            for (r, tr) in tails.iter_mut().enumerate() {
                                tr[..k].copy_from_slice(&m.row_bytes(o[r])[lcol / 2..lcol / 2 + k]);
                            }
                        }
                        let tp: [*const u8; 8] = core::array::from_fn(|r| tails[r].as_ptr());
                        // gs = 32: f32 scales of 4 groups, or UE8M0 bytes of 16 groups, one
                        // vector per 4 groups, lane r = row o[r].
                        let (mut sc4, mut g4) = ([z; 4], 0);
                        // WIDE: the exact sums of the current group's blocks so far.
                        let (mut part0, mut part1) = (z, z);
                        for (b, &cb) in cbuf[..nb].iter().enumerate() {
                            let col = c0 + 64 * b;
                            let rem = ni - col;
                            // Row r's 32 bytes of the block: in the row, or (the partial
                            // last block) in its zero-padded copy.
                            let wp = |r: usize| {
                                if rem >= 64 {
                                    // SAFETY: col + 64 ≤ I: the 32 bytes at col/2 are in row r.
                                    unsafe { rp[r].add(col / 2) }
                                } else {
                                    tp[r]
                                }
                            };
                            // SAFETY: xbuf[64b .. 64b + 64] was written above.
                            let (xe, xo) = unsafe {
                                (
                                    _mm256_loadu_si256(xbuf.as_ptr().add(64 * b).cast()),
                                    _mm256_loadu_si256(xbuf.as_ptr().add(64 * b + 32).cast()),
                                )
                            };
                            if let Some(pf) = &pf {
                                // Hints: never fault, whatever the (wrapping) address.
                                if b % 2 == 0 {
                                    for p in pf.w {
                                        _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(32 * b).cast());
                                    }
                                }
                                if (64 * b) % pf.line_cols == 0 {
                                    for p in pf.s {
                                        _mm_prefetch::<_MM_HINT_T1>(
                                            p.wrapping_add(64 * (64 * b / pf.line_cols)).cast(),
                                        );
                                    }
                                }
                            }
                            let mut h = [z; 4];
                            for (j, hj) in h.iter_mut().enumerate() {
                                // SAFETY: wp(r) points at 32 readable bytes (above).
                                let (a0, a1) = unsafe {
                                    (
                                        row_block::<MX>(wp(2 * j), cb, xe, xo, low, lut),
                                        row_block::<MX>(wp(2 * j + 1), cb, xe, xo, low, lut),
                                    )
                                };
                                *hj = pack_sum(a0, a1);
                            }
                            // Half q of f0 (f1): the sums of subgroup q of rows 0..4 (4..8).
                            let (f0, f1) = (pack_sum(h[0], h[1]), pack_sum(h[2], h[3]));
                            let g = gc + 2 * b; // the block's first subgroup
                            let n = (nsub - g).min(2); // its subgroups (past them d is 0)
                            if WIDE {
                                part0 = _mm256_add_epi32(part0, f0);
                                part1 = _mm256_add_epi32(part1, f1);
                                if (g + 2) % per == 0 || g + n == nsub {
                                    let d = _mm256_add_epi32(
                                        _mm256_permute2x128_si256::<0x20>(part0, part1),
                                        _mm256_permute2x128_si256::<0x31>(part0, part1),
                                    );
                                    let gi = g / per;
                                    // Scales of 4 groups from g4 (the chunk's first
                                    // group, then every fourth).
                                    if gi * per == gc || gi - g4 == 4 {
                                        sc4 = scales4(sf, &o, ngs, gi);
                                        g4 = gi;
                                    }
                                    let sc = _mm256_castsi256_ps(sc4[gi - g4]);
                                    let p = _mm256_mul_ps(_mm256_cvtepi32_ps(d), sc);
                                    acc = _mm256_add_ps(acc, p);
                                    (part0, part1) = (z, z);
                                }
                            } else {
                                let d = [
                                    _mm256_permute2x128_si256::<0x20>(f0, f1),
                                    _mm256_permute2x128_si256::<0x31>(f0, f1),
                                ];
                                if MX {
                                    if b % 8 == 0 {
                                        sc4 = transpose8x4(|r| row16(se, o[r], ngs, g));
                                    }
                                    let v = sc4[(b % 8) / 2];
                                    // This block's two groups: bytes 0, 1 (b even) or 2, 3.
                                    let v = if b % 2 == 0 { v } else { _mm256_srli_epi32::<16>(v) };
                                    let e = _mm256_set1_epi32(0x7F80_0000);
                                    let pw = [
                                        _mm256_and_si256(_mm256_slli_epi32::<23>(v), e),
                                        _mm256_and_si256(_mm256_slli_epi32::<15>(v), e),
                                    ];
                                    let half = _mm256_set1_ps(0.5);
                                    let p = |k: usize| {
                                        let df = _mm256_mul_ps(_mm256_cvtepi32_ps(d[k]), half);
                                        _mm256_mul_ps(df, _mm256_castsi256_ps(pw[k]))
                                    };
                                    acc = _mm256_add_ps(acc, p(0));
                                    if n == 2 {
                                        acc = _mm256_add_ps(acc, p(1));
                                    }
                                } else {
                                    if b % 2 == 0 {
                                        sc4 = scales4(sf, &o, ngs, g);
                                    }
                                    let (s0, s1) = if b % 2 == 0 {
                                        (sc4[0], sc4[1])
                                    } else {
                                        (sc4[2], sc4[3])
                                    };
                                    let p = |dk: __m256i, sk: __m256i| {
                                        _mm256_mul_ps(
                                            _mm256_cvtepi32_ps(dk),
                                            _mm256_castsi256_ps(sk),
                                        )
                                    };
                                    acc = _mm256_add_ps(acc, p(d[0], s0));
                                    if n == 2 {
                                        acc = _mm256_add_ps(acc, p(d[1], s1));
                                    }
                                }
                            }
                        }
                        if last {
                            acc = _mm256_mul_ps(acc, _mm256_set1_ps(sx));
                        }
                        // SAFETY: t holds 8 f32.
                        unsafe { _mm256_storeu_ps(t.as_mut_ptr(), acc) };
                        ys[r0..r0 + nv].copy_from_slice(&t[..nv]);
                        r0 += 8;
                    }
                    c0 += cn;
                }
            }
        }

        /// The low eight e4m3 bytes of `b` → eight exact f32 values, through IEEE half precision
        /// with no float arithmetic on a subnormal operand (which costs a microcode assist per
        /// instruction on AMD Zen: the former `bits · 2¹²⁰` decode, whose `bits` are subnormal
        /// f32 for exponent-0 codes, ran at ~4.5 G weights/s in L2 on random codes).
        /// `(b ≪ 7) & 0xBF80` on the sign-extended 16-bit lane is the f16 `e4m3 · 2⁻⁸` exactly
        /// (f16 has one more exponent bit and subnormals down to 2⁻²⁴, so e4m3 subnormals stay
        /// exact), `vcvtph2ps` (F16C) converts it exactly to a normal f32 (`|e4m3 · 2⁻⁸| ≥ 2⁻¹⁷`,
        /// or zero), and `× 2⁸` is exact. NaN codes (`|b| = 0x7F`) would decode to ±480; `nan`
        /// maps them to all-ones (a NaN), otherwise the caller has checked there are none.
        #[inline]
        #[target_feature(enable = $feat)]
        fn fp8x8(b: __m128i, nan: bool) -> __m256 {
            let t = _mm_cvtepi8_epi16(b);
            #[allow(clippy::cast_possible_wrap)] // bit pattern
            let h = _mm_and_si128(_mm_slli_epi16::<7>(t), _mm_set1_epi16(0xBF80u16 as i16));
            let f = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0));
            if nan {
                let sev = _mm_set1_epi16(0x7F);
                let is_nan = _mm_cmpeq_epi16(_mm_and_si128(t, sev), sev);
                _mm256_or_ps(f, _mm256_castsi256_ps(_mm256_cvtepi16_epi32(is_nan)))
            } else {
                f
            }
        }

        /// Sixteen e4m3 bytes → two vectors of eight exact f32 values, as [`fp8x8`] with the
        /// integer steps done once on 16 lanes.
        #[inline]
        #[target_feature(enable = $feat)]
        fn fp8x16(b: __m128i, nan: bool) -> (__m256, __m256) {
            let t = _mm256_cvtepi8_epi16(b);
            #[allow(clippy::cast_possible_wrap)] // bit pattern
            let h =
                _mm256_and_si256(_mm256_slli_epi16::<7>(t), _mm256_set1_epi16(0xBF80u16 as i16));
            let u = _mm256_set1_ps(256.0);
            let lo = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), u);
            let hi = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256::<1>(h)), u);
            if nan {
                let sev = _mm256_set1_epi16(0x7F);
                let m = _mm256_cmpeq_epi16(_mm256_and_si256(t, sev), sev);
                let ml = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(m));
                let mh = _mm256_cvtepi16_epi32(_mm256_extracti128_si256::<1>(m));
                (
                    _mm256_or_ps(lo, _mm256_castsi256_ps(ml)),
                    _mm256_or_ps(hi, _mm256_castsi256_ps(mh)),
                )
            } else {
                (lo, hi)
            }
        }

        /// Fused fp8-e4m3-b128 f32-activation kernel for one weight row and `T` activation rows:
        /// per 128-column block, decode 16 bytes at a time in registers ([`fp8x16`]; NaN handling
        /// only when the block holds a NaN code), 2 accumulators per activation row,
        /// `acc = fma(part, scale, acc)`.
        ///
        /// # Safety
        /// The arm's features available; every `xs[k]` points at `I` values.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8_row_f32<const T: usize>(
            m: &Matrix<'_>,
            o: usize,
            xs: [*const f32; T],
        ) -> [f32; T] {
            let ni = m.i();
            let row = m.row_bytes(o);
            let mut acc = [_mm256_setzero_ps(); T];
            let mut tail_acc = [0f32; T];
            let nan_code = _mm256_set1_epi8(0x7F);
            for g in 0..m.groups_per_row() {
                let (c0, c1) = (128 * g, (128 * g + 128).min(ni));
                let n8 = (c1 - c0) / 8;
                // NaN codes in the block? (only full 32-byte pieces are probed; the rest is decoded
                // with NaN handling)
                let mut has_nan = (c1 - c0) % 32 != 0;
                for p in 0..(c1 - c0) / 32 {
                    // SAFETY: c0 + 32·p + 32 ≤ c1 ≤ I bytes of the row.
                    let v = unsafe { _mm256_loadu_si256(row.as_ptr().add(c0 + 32 * p).cast()) };
                    let hit = _mm256_cmpeq_epi8(_mm256_and_si256(v, nan_code), nan_code);
                    has_nan |= _mm256_movemask_epi8(hit) != 0;
                }
                let mut p0 = [_mm256_setzero_ps(); T];
                let mut p1 = [_mm256_setzero_ps(); T];
                let mut j = 0;
                while j + 2 <= n8 {
                    let col = c0 + 8 * j;
                    // SAFETY: col + 16 ≤ c1 ≤ I.
                    let b = unsafe { _mm_loadu_si128(row.as_ptr().add(col).cast()) };
                    let (w0, w1) = fp8x16(b, has_nan);
                    for k in 0..T {
                        // SAFETY: col + 16 ≤ I values of xs[k].
                        unsafe {
                            p0[k] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[k].add(col)), p0[k]);
                            p1[k] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[k].add(col + 8)), p1[k]);
                        }
                    }
                    j += 2;
                }
                if j < n8 {
                    let col = c0 + 8 * j;
                    // SAFETY: col + 8 ≤ c1 ≤ I.
                    let w0 = fp8x8(unsafe { _mm_loadl_epi64(row.as_ptr().add(col).cast()) }, true);
                    for k in 0..T {
                        // SAFETY: col + 8 ≤ I values of xs[k].
                        let xv = unsafe { _mm256_loadu_ps(xs[k].add(col)) };
                        p0[k] = _mm256_fmadd_ps(w0, xv, p0[k]);
                    }
                }
                let sc = scalar::group_scale(m, o, g);
                let scv = _mm256_set1_ps(sc);
                for k in 0..T {
                    let mut tail = 0.0f32;
                    for (c, &b) in row.iter().enumerate().take(c1).skip(c0 + 8 * n8) {
                        // SAFETY: c < I.
                        tail += scalar::e4m3_to_f32(b) * unsafe { *xs[k].add(c) };
                    }
                    acc[k] = _mm256_fmadd_ps(_mm256_add_ps(p0[k], p1[k]), scv, acc[k]);
                    tail_acc[k] += tail * sc;
                }
            }
            let mut out = [0f32; T];
            for k in 0..T {
                out[k] = hsum_ps(acc[k]) + tail_acc[k];
            }
            out
        }

        /// 32 e4m3 bytes → four vectors of eight exact f32 values `e4m3 · 2⁻⁸`, columns 0..8,
        /// 8..16, 16..24, 24..32 (the f16 step of [`fp8x16`] without its `× 2⁸`, which the band
        /// kernel moves onto the activations). `vpunpck{l,h}bw(v, v)` puts each byte in both
        /// halves of a 16-bit lane; an arithmetic shift right by 1 and `& 0xBF80` leave the
        /// f16 `(sext(b) ≪ 7) & 0xBF80` of [`fp8x8`], with no lane-crossing widening; the
        /// halves of the two vectors are the four 8-column pieces. With `NAN`, codes
        /// `|b| = 0x7F` become all-ones (a NaN).
        #[inline]
        #[target_feature(enable = $feat)]
        fn fp8x32_low<const NAN: bool>(v: __m256i) -> [__m256; 4] {
            #[allow(clippy::cast_possible_wrap)] // bit pattern
            let keep = _mm256_set1_epi16(0xBF80u16 as i16);
            let a = _mm256_unpacklo_epi8(v, v); // columns 0..8 | 16..24
            let b = _mm256_unpackhi_epi8(v, v); // columns 8..16 | 24..32
            let ha = _mm256_and_si256(_mm256_srai_epi16::<1>(a), keep);
            let hb = _mm256_and_si256(_mm256_srai_epi16::<1>(b), keep);
            let lo = _mm256_castsi256_si128;
            let hi = _mm256_extracti128_si256::<1>;
            let w = [
                _mm256_cvtph_ps(lo(ha)),
                _mm256_cvtph_ps(lo(hb)),
                _mm256_cvtph_ps(hi(ha)),
                _mm256_cvtph_ps(hi(hb)),
            ];
            if !NAN {
                return w;
            }
            let sev = _mm256_set1_epi16(0x7F);
            let ma = _mm256_cmpeq_epi16(_mm256_and_si256(a, sev), sev);
            let mb = _mm256_cmpeq_epi16(_mm256_and_si256(b, sev), sev);
            let m = [lo(ma), lo(mb), hi(ma), hi(mb)];
            core::array::from_fn(|k| {
                _mm256_or_ps(w[k], _mm256_castsi256_ps(_mm256_cvtepi16_epi32(m[k])))
            })
        }

        /// Whether any of the `R` rows' 128 bytes at `w[r]` is an e4m3 NaN code (`|b| = 0x7F`,
        /// i.e. `b | 0x80 = 0xFF`): one `vpor` and one `vpmaxub` per 32 bytes.
        ///
        /// # Safety
        /// The arm's features available; every `w[r]` points at 128 readable bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn band_has_nan<const R: usize>(w: [*const u8; R]) -> bool {
            #[allow(clippy::cast_possible_wrap)] // bit pattern
            let top = _mm256_set1_epi8(0x80u8 as i8);
            let mut mx = _mm256_setzero_si256();
            for p in w {
                for q in 0..4 {
                    // SAFETY: 32 · q + 32 ≤ 128 bytes at p (caller).
                    let v = unsafe { _mm256_loadu_si256(p.add(32 * q).cast()) };
                    mx = _mm256_max_epu8(mx, _mm256_or_si256(v, top));
                }
            }
            let ones = _mm256_cmpeq_epi8(mx, _mm256_set1_epi8(-1));
            _mm256_movemask_epi8(ones) != 0
        }

        /// 8 e4m3 bytes at `p` → eight f32 `e4m3 · 2⁻¹²⁰`, exactly, with integer operations
        /// only: sign-extended to i32 (`vpmovsxbd` from memory), shifted left by 20 and masked
        /// with `0x87F0_0000` (the exponent field `E` under f32's bias is `2^(E − 7 − 120)`;
        /// `E = 0` lands on f32 subnormals of the same value). With `NAN`, codes `|b| = 0x7F`
        /// become all-ones (a NaN), as in [`fp8x32_low`].
        ///
        /// # Safety
        /// The arm's features available; `p` points at 8 readable bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8x8_bits<const NAN: bool>(p: *const u8) -> __m256 {
            #[allow(clippy::cast_possible_wrap)] // bit pattern
            let keep = _mm256_set1_epi32(0x87F0_0000u32 as i32);
            // SAFETY: 8 bytes at p (caller).
            let z = _mm256_cvtepi8_epi32(unsafe { _mm_loadl_epi64(p.cast()) });
            let d = _mm256_and_si256(_mm256_slli_epi32::<20>(z), keep);
            if !NAN {
                return _mm256_castsi256_ps(d);
            }
            let sev = _mm256_set1_epi32(0x7F);
            let nan = _mm256_cmpeq_epi32(_mm256_and_si256(z, sev), sev);
            _mm256_castsi256_ps(_mm256_or_si256(d, nan))
        }

        /// 32 e4m3 bytes at `p` → four [`fp8x8_bits`] vectors (columns 0..8, 8..16, 16..24,
        /// 24..32), `e4m3 · 2⁻¹²⁰` each.
        ///
        /// # Safety
        /// The arm's features available; `p` points at 32 readable bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8x32_bits<const NAN: bool>(p: *const u8) -> [__m256; 4] {
            // SAFETY: 8 bytes at p + 8k for k < 4 (caller: 32 bytes).
            unsafe {
                [
                    fp8x8_bits::<NAN>(p),
                    fp8x8_bits::<NAN>(p.add(8)),
                    fp8x8_bits::<NAN>(p.add(16)),
                    fp8x8_bits::<NAN>(p.add(24)),
                ]
            }
        }

        /// One 128-column block of 4 fp8 weight rows (bytes at `w[r]`) against `xs`, the block's
        /// 128 activations scaled to match `decode`: row `r`'s 8-lane partial sums. `decode(p)`
        /// turns the 16 bytes at `p` into two 8-column vectors, [`fp8x16_bits`] (`e4m3 ·
        /// 2⁻¹²⁰` against `x · 2¹²⁰`) or [`fp8x16_low`] (`e4m3 · 2⁻⁸` against `x · 2⁸`): the
        /// same products either way, added in the same order (two chains per row: columns
        /// `16j .. 16j + 8` into the first, `16j + 8 .. 16j + 16` into the second, then their
        /// sum), so both decodes give the same bits. The 4 rows share each activation
        /// load (8 chains in flight). On the Zen 2 dev VM the f16 route is bound by `vcvtph2ps`
        /// (2 uops per 8 values): in a loop of 4 rows, 3.3 weights per cycle against 5.2 for the
        /// bits. A subnormal weight entering an FMA costs nothing there (the product is
        /// normal); a `vmulps` by `2¹²⁰` of the decoded weights instead takes the
        /// subnormal-operand slow path and halves the rate.
        ///
        /// # Safety
        /// The arm's features available; every `w[r]` points at 128 bytes, `xs` at 128 f32;
        /// `decode` reads 16 bytes at its argument.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8_rows4_block(
            w: [*const u8; 4],
            xs: *const f32,
            decode: impl Fn(*const u8) -> [__m256; 2],
        ) -> [__m256; 4] {
            let mut a = [[_mm256_setzero_ps(); 2]; 4];
            for c in (0..128).step_by(16) {
                // SAFETY: c + 16 ≤ 128 values at xs and bytes at every w[r] (caller).
                unsafe {
                    let xv = [_mm256_loadu_ps(xs.add(c)), _mm256_loadu_ps(xs.add(c + 8))];
                    for (r, ar) in a.iter_mut().enumerate() {
                        let d = decode(w[r].add(c));
                        ar[0] = _mm256_fmadd_ps(d[0], xv[0], ar[0]);
                        ar[1] = _mm256_fmadd_ps(d[1], xv[1], ar[1]);
                    }
                }
            }
            core::array::from_fn(|r| _mm256_add_ps(a[r][0], a[r][1]))
        }

        /// 16 e4m3 bytes at `p` → two vectors of eight exact f32 values `e4m3 · 2⁻⁸`, columns
        /// 0..8 and 8..16: the 128-bit form of [`fp8x32_low`] (the same bits per column).
        ///
        /// # Safety
        /// The arm's features available; `p` points at 16 readable bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8x16_low<const NAN: bool>(p: *const u8) -> [__m256; 2] {
            // SAFETY: 16 bytes at p (caller).
            let v = unsafe { _mm_loadu_si128(p.cast()) };
            #[allow(clippy::cast_possible_wrap)] // bit pattern
            let keep = _mm_set1_epi16(0xBF80u16 as i16);
            let ab = [_mm_unpacklo_epi8(v, v), _mm_unpackhi_epi8(v, v)];
            let w = ab.map(|t| _mm256_cvtph_ps(_mm_and_si128(_mm_srai_epi16::<1>(t), keep)));
            if !NAN {
                return w;
            }
            let sev = _mm_set1_epi16(0x7F);
            core::array::from_fn(|k| {
                let m = _mm_cmpeq_epi16(_mm_and_si128(ab[k], sev), sev);
                _mm256_or_ps(w[k], _mm256_castsi256_ps(_mm256_cvtepi16_epi32(m)))
            })
        }

        /// 16 e4m3 bytes at `p` → two [`fp8x8_bits`] vectors (columns 0..8, 8..16).
        ///
        /// # Safety
        /// The arm's features available; `p` points at 16 readable bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8x16_bits<const NAN: bool>(p: *const u8) -> [__m256; 2] {
            // SAFETY: 8 bytes at p and at p + 8 (caller: 16).
            unsafe { [fp8x8_bits::<NAN>(p), fp8x8_bits::<NAN>(p.add(8))] }
        }

        /// One 128-column fp8 block of one weight row (bytes at `w`) against `T` interleaved
        /// activation rows at `xp` ([`f32_fp8_multi`]'s buffer): the `T` partial sums, in
        /// `8 / T` FMA chains per activation row. `decode(p)` turns the 32 bytes at `p` into
        /// four 8-column vectors: [`fp8x32_low`] (`e4m3 · 2⁻⁸`, buffer `x · 2⁸`) or four
        /// [`fp8x8_bits`] (`e4m3 · 2⁻¹²⁰`, buffer `x · 2¹²⁰`), the same products either way,
        /// added in the same order (bit-identical sums); the caller picks the decode with or
        /// without the NaN mapping.
        ///
        /// # Safety
        /// The arm's features available; `w` points at 128 bytes, `xp` at `128 · T` values;
        /// `decode` reads 32 bytes at its argument.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8_multi_block<const T: usize>(
            w: *const u8,
            xp: *const f32,
            decode: impl Fn(*const u8) -> [__m256; 4],
        ) -> [__m256; T] {
            let mut acc = [[_mm256_setzero_ps(); 4]; T];
            for j in 0..4 {
                // 32 bytes at w + 32·j (caller: w points at 128 bytes).
                let d = decode(w.wrapping_add(32 * j));
                for (p, dp) in d.into_iter().enumerate() {
                    for (k, a) in acc.iter_mut().enumerate() {
                        // SAFETY: as above.
                        let xv = unsafe { _mm256_loadu_ps(xp.add(((4 * j + p) * T + k) * 8)) };
                        let c = p % (8 / T);
                        a[c] = _mm256_fmadd_ps(dp, xv, a[c]);
                    }
                }
            }
            acc.map(|a| chains_sum::<T>(a))
        }

        /// fp8-e4m3-b128, f32 activations, `T` = 2, 4 or 8 activation rows per pass (the
        /// small-batch case), in the form of [`f32_int4_multi`]: column chunks of `4096 / T`
        /// (whole 128-column blocks) whose `T` activation rows are copied once per chunk into a
        /// 16 KiB interleaved stack buffer, multiplied by `2⁸` there (exact: the caller has
        /// checked that every `x · 2⁸` is finite; zero past `I`); per weight row and block one
        /// NaN probe, 32 bytes at a time decoded by [`fp8x32_low`] (`e4m3 · 2⁻⁸`), one FMA per
        /// activation row and 8 columns into `8 / T` chains per row, then `acc = fma(part,
        /// scale, acc)` per activation row at each block end. A partial last block runs on a
        /// zero-padded copy of the row's bytes. Row blocks of about 1 MiB of weights; the bytes
        /// two rows ahead prefetched.
        ///
        /// # Safety
        /// The arm's features available; `m` is fp8-e4m3-b128, `x` holds activation rows
        /// `s0 .. s0 + T` of `I` values each, `y` the `S × rows.len()` outputs, `rows.end ≤ O`.
        #[target_feature(enable = $feat)]
        unsafe fn f32_fp8_multi<const T: usize>(
            m: &Matrix<'_>,
            x: &[f32],
            s0: usize,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, full) = (m.i(), m.i() / 128);
            let Scales::F32(sf) = m.scales() else {
                unreachable!("fp8-e4m3-b128 has f32 scales (Matrix::new)")
            };
            // With two activation rows the buffer holds x · 2¹²⁰ (decode: fp8x8_bits) where
            // that is finite, else x · 2⁸ (fp8x32_low); the products, and so the sums, are the
            // same. With 4 or 8 the FMAs outweigh the shared decode and fp8x32_low's fewer
            // uops win (Zen 2 dev VM, 512 × 1024, G weights/s: S = 2 6.2 → 6.5 with bits,
            // S = 4 4.8 → 4.5).
            let bits = T == 2
                && crate::isa::fp8_bits_decode()
                && scalable_by_2_120(&x[s0 * ni..(s0 + T) * ni]);
            let probe = !m.fp8_nan_free(); // with_nan_codes_checked found none: no probes
            // One chunk (blocks g0..g1) of weight row o: the T activation rows' sums, each
            // block's times its scale.
            let chunk = |row: &[u8], o: usize, g0: usize, g1: usize, xb: *const f32| {
                let mut acc = [_mm256_setzero_ps(); T];
                for g in g0..g1 {
                    let xp = xb.wrapping_add(128 * T * (g - g0));
                    // SAFETY: g < full: 128 bytes at 128·g of the row, else the 128-byte copy;
                    // the buffer's block g − g0 holds 128 · T values.
                    let mut wt = [0u8; 128];
                    let (w, nan) = if g < full {
                        // SAFETY: as above.
                        let w = unsafe { row.as_ptr().add(128 * g) };
                        // SAFETY: 128 bytes at w.
                        (w, probe && unsafe { band_has_nan([w]) })
                    } else {
                        wt[..ni - 128 * full].copy_from_slice(&row[128 * full..]);
                        (wt.as_ptr(), true)
                    };
                    // SAFETY: as above; each decode reads the 32 bytes at its p.
                    let part = unsafe {
                        match (bits, nan) {
                            (true, true) => fp8_multi_block::<T>(w, xp, |p| fp8x32_bits::<true>(p)),
                            (true, false) => {
                                fp8_multi_block::<T>(w, xp, |p| fp8x32_bits::<false>(p))
                            }
                            (false, true) => fp8_multi_block::<T>(w, xp, |p| {
                                fp8x32_low::<true>(_mm256_loadu_si256(p.cast()))
                            }),
                            (false, false) => fp8_multi_block::<T>(w, xp, |p| {
                                fp8x32_low::<false>(_mm256_loadu_si256(p.cast()))
                            }),
                        }
                    };
                    let sc = _mm256_set1_ps(sf[m.scale_index(o, g)]);
                    for (a, p) in acc.iter_mut().zip(part) {
                        *a = _mm256_fmadd_ps(p, sc, *a);
                    }
                }
                acc
            };
            let scale = if bits { TWO_120 } else { 256.0 };
            // SAFETY: same contract; every x · scale is finite where x is (the caller checked
            // x · 2⁸, `bits` x · 2¹²⁰); `chunk` reads 128 bytes per block of the row (or its
            // padded copy), 128 · T buffer values.
            unsafe { multi_passes::<T, 128, false>(m, x, s0, rows, y, scale, chunk) };
        }

        /// The 128-column blocks `0 .. blocks` of 4 fp8 weight rows (bytes at `w[r]`) against
        /// `xs` (their activations, `x · 2¹²⁰` with `BITS`, else `x · 2⁸`): per block one NaN
        /// probe of the 4 rows ([`band_has_nan`], with `probe`), the rows' 8-lane partial sums
        /// ([`fp8_rows4_block`]; [`fp8x16_bits`] with `BITS`, else [`fp8x16_low`], with NaN
        /// handling only where the probe finds a NaN code) and `acc[r] += part[r] · scale`
        /// lane-wise, block `g`'s scale of row `r` at `sc[r] + g`.
        ///
        /// # Safety
        /// The arm's features available; `128 · blocks` bytes at every `w[r]` and values at
        /// `xs`, `blocks` scales at every `sc[r]`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8_rows4_sweep<const BITS: bool>(
            probe: bool,
            mut acc: [__m256; 4],
            w: [*const u8; 4],
            xs: *const f32,
            blocks: usize,
            sc: [*const f32; 4],
        ) -> [__m256; 4] {
            for g in 0..blocks {
                // SAFETY: block g < blocks of every row, of xs and of every scale run (caller).
                unsafe {
                    let (wg, xg) = (w.map(|p| p.add(128 * g)), xs.add(128 * g));
                    let part = match (BITS, probe && band_has_nan(wg)) {
                        (true, true) => fp8_rows4_block(wg, xg, |p| fp8x16_bits::<true>(p)),
                        (true, false) => fp8_rows4_block(wg, xg, |p| fp8x16_bits::<false>(p)),
                        (false, true) => fp8_rows4_block(wg, xg, |p| fp8x16_low::<true>(p)),
                        (false, false) => fp8_rows4_block(wg, xg, |p| fp8x16_low::<false>(p)),
                    };
                    for (r, (a, p)) in acc.iter_mut().zip(part).enumerate() {
                        *a = _mm256_fmadd_ps(p, _mm256_broadcast_ss(&*sc[r].add(g)), *a);
                    }
                }
            }
            acc
        }

        /// fp8-e4m3-b128, f32 activations, one activation row (the GEMV case): weight rows in
        /// bands of 8 (a final, shorter band repeats its last row and stores only its own),
        /// each half of a band (4 rows) swept over the row's full blocks
        /// ([`fp8_rows4_sweep`]: per 128-column block the rows' 8-lane partial sums from
        /// [`fp8_rows4_block`] and `acc[r] = fma(part[r], scale, acc[r])` lane-wise), one
        /// `vhaddps` tree per half at the end. Per block one NaN probe of the 4 rows
        /// ([`band_has_nan`]) picks the decode with NaN handling only where it finds a NaN
        /// code (a probe of whole rows before the sweep was slower from L3: its loads did not
        /// overlap the decode; a matrix from [`Matrix::with_nan_codes_checked`] that found no
        /// NaN code skips the probes). A partial last block runs on zero-padded copies (zero
        /// codes and activations add `0`). The activations are scaled to match
        /// the decode — `x · 2¹²⁰` for the bits decode where every `|x| < 2⁸`, else `x · 2⁸`
        /// for the f16 route (the caller has checked that every `x · 2⁸` is finite) — into a
        /// stack buffer once per call for `I` ≤ 16 384, else per band and 16 384-column chunk.
        /// On the Zen 2 dev VM (bits decode) the sweeps instead of one `vhaddps` tree and
        /// scale per 8-row block measured 11.9 → 14.0 G weights/s at 512 × 1024 (10.6 → 13.0
        /// at 256 × 20 480); the NaN probe is 12 % of the time (15.7 without it).
        ///
        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_f32_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn f32_fp8_band8(m: &Matrix<'_>, x: &[f32], rows: Range<usize>, y: &mut [f32]) {
            const XS_MAX: usize = 16_384; // columns of scaled activations on the stack
            const CHUNK: usize = XS_MAX / 128; // blocks per chunk
            let ni = m.i();
            let full = ni / 128;
            let tn = ni - 128 * full;
            let bits = crate::isa::fp8_bits_decode() && scalable_by_2_120(&x[..ni]);
            let probe = !m.fp8_nan_free(); // with_nan_codes_checked found none: no probes
            let scale = _mm256_set1_ps(if bits { TWO_120 } else { 256.0 });
            // Writes x[from .. from + n] · scale at `to` (n a multiple of 8).
            let scale_into = |from: &[f32], to: *mut f32| {
                for (c, v) in from.chunks_exact(8).enumerate() {
                    // SAFETY: 8 values in v; `to` has room for from.len() values (callers).
                    unsafe {
                        let v = _mm256_mul_ps(_mm256_loadu_ps(v.as_ptr()), scale);
                        _mm256_storeu_ps(to.add(8 * c), v);
                    }
                }
            };
            // The padded tail block, scaled (zero padding stays zero).
            let mut xt = [0f32; 128];
            xt[..tn].copy_from_slice(&x[128 * full..ni]);
            scale_into(&xt.clone(), xt.as_mut_ptr());
            // The full blocks' scaled activations: all of them once per call where I ≤ XS_MAX,
            // else one chunk at a time per band.
            let whole = full <= CHUNK;
            let mut xs = [const { core::mem::MaybeUninit::<f32>::uninit() }; XS_MAX];
            let xsp = xs.as_mut_ptr().cast::<f32>();
            if whole {
                scale_into(&x[..128 * full], xsp);
            }
            let Scales::F32(sf) = m.scales() else {
                unreachable!("fp8-e4m3-b128 has f32 scales (Matrix::new)")
            };
            let band = |o: &[usize; 8], rp: &[*const u8; 8], wt: &[[u8; 128]; 8]| {
                // A band of at most 4 rows repeats row 3 in its second half: skipped (zeros).
                let halves = if o[4] == o[3] { 1 } else { 2 };
                let mut acc = [[_mm256_setzero_ps(); 4]; 2];
                for c0 in (0..full).step_by(CHUNK) {
                    let nb = CHUNK.min(full - c0);
                    if !whole {
                        scale_into(&x[128 * c0..128 * (c0 + nb)], xsp);
                    }
                    let xc = if whole { xsp.wrapping_add(128 * c0) } else { xsp };
                    for (h, ah) in acc.iter_mut().enumerate().take(halves) {
                        // Block g's scale of row o[4h + r] is sf[scale_index(o, 0) + g].
                        let sc = core::array::from_fn(|r| {
                            sf[m.scale_index(o[4 * h + r], 0) + c0..].as_ptr()
                        });
                        let w = core::array::from_fn(|r| rp[4 * h + r].wrapping_add(128 * c0));
                        // SAFETY: blocks c0 .. c0 + nb ≤ full of every row, their scaled
                        // activations at xc (written above), their nb scales at every sc[r].
                        *ah = unsafe {
                            if bits {
                                fp8_rows4_sweep::<true>(probe, *ah, w, xc, nb, sc)
                            } else {
                                fp8_rows4_sweep::<false>(probe, *ah, w, xc, nb, sc)
                            }
                        };
                    }
                }
                if tn > 0 {
                    for (h, ah) in acc.iter_mut().enumerate().take(halves) {
                        let sc = core::array::from_fn(|r| {
                            sf[m.scale_index(o[4 * h + r], 0) + full..].as_ptr()
                        });
                        let w = core::array::from_fn(|r| wt[4 * h + r].as_ptr());
                        // SAFETY: one block: 128 bytes in every copy, 128 values in xt, one
                        // scale at every sc[r].
                        *ah = unsafe {
                            if bits {
                                fp8_rows4_sweep::<true>(probe, *ah, w, xt.as_ptr(), 1, sc)
                            } else {
                                fp8_rows4_sweep::<false>(probe, *ah, w, xt.as_ptr(), 1, sc)
                            }
                        };
                    }
                }
                sums8_halves_ps(acc.map(|a| sums4_half_ps(a)))
            };
            // SAFETY: same contract; a row has 128·full + 128 bytes at most.
            unsafe { f32_bands8::<128>(m, rows, 128 * full, y, band) };
        }

        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_f32_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn f32_fp8(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]) {
            let (ni, nr) = (m.i(), rows.len());
            if scalable_by_256(&x[..s * ni]) {
                // SAFETY: same contract.
                let n = unsafe { f32_multi_passes(m, x, s, rows.clone(), y) };
                if n < s {
                    let (xs, ys) = (&x[n * ni..(n + 1) * ni], &mut y[n * nr..(n + 1) * nr]);
                    // SAFETY: same contract, activation row n; every x · 2⁸ is finite.
                    unsafe { f32_fp8_band8(m, xs, rows, ys) };
                }
                return;
            }
            let mut s0 = 0;
            while s0 < s {
                let st = if s - s0 >= 4 {
                    4
                } else if s - s0 >= 2 {
                    2
                } else {
                    1
                };
                let xp = |k: usize| x[(s0 + k) * ni..].as_ptr();
                for (r, o) in rows.clone().enumerate() {
                    // SAFETY: each pointer addresses the I values of activation row s0 + k.
                    let v: [f32; 4] = unsafe {
                        match st {
                            4 => fp8_row_f32::<4>(m, o, [xp(0), xp(1), xp(2), xp(3)]),
                            2 => {
                                let v = fp8_row_f32::<2>(m, o, [xp(0), xp(1)]);
                                [v[0], v[1], 0.0, 0.0]
                            }
                            _ => [fp8_row_f32::<1>(m, o, [xp(0)])[0], 0.0, 0.0, 0.0],
                        }
                    };
                    for k in 0..st {
                        y[(s0 + k) * nr + r] = v[k];
                    }
                }
                s0 += st;
            }
        }

        /// int8-row int8-activation kernel: weight rows in bands of 8 ([`int8_band8_q8`]: each
        /// activation load shared by the band, one exact i32 sum per row; a final, shorter band
        /// repeats its last row and stores only its own), every activation row against a band
        /// before the next (the band's rows stay in L1/L2), then [`row_epilogue8`].
        ///
        /// # Safety
        /// The arm's features available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn q8_int8_row(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let blocks = ni / 32;
            let Scales::F32(sf) = m.scales() else {
                unreachable!("int8-row has f32 scales (Matrix::new)")
            };
            if ni == 0 {
                for (si, ys) in y[..xq.s() * nr].chunks_exact_mut(nr.max(1)).enumerate() {
                    let sx = xq.row(si).1;
                    for v in ys.iter_mut() {
                        *v = 0.0 * sx; // no groups: acc = 0, y = acc · sx
                    }
                }
                return;
            }
            // The partial last block of each row and of the activation row, zero-padded
            // (every copy covers the same prefix, so the padding stays zero).
            let (mut wt, mut xt) = ([[0u8; 32]; 8], [0i8; 32]);
            let tn = ni - 32 * blocks;
            let stream = streams(m);
            let mut r0 = 0;
            while r0 < nr {
                let nv = (nr - r0).min(8);
                let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                if tn > 0 {
                    for (r, t) in wt.iter_mut().enumerate() {
                        t[..tn].copy_from_slice(&m.row_bytes(o[r])[32 * blocks..]);
                    }
                }
                for si in 0..xq.s() {
                    let (q, sx) = xq.row(si);
                    if tn > 0 {
                        xt[..tn].copy_from_slice(&q[32 * blocks..]);
                    }
                    let tail =
                        (tn > 0).then(|| (core::array::from_fn(|r| wt[r].as_ptr()), xt.as_ptr()));
                    // SAFETY: every row and q hold I ≥ 32·blocks bytes; the tail copies 32.
                    let d = unsafe {
                        let ahead = crate::arch::x86_64::band_ahead(rp[0], m.row_bytes(0).len());
                        // The band's bytes stay cached for the other activation rows.
                        if stream && si == 0 {
                            int8_band8_q8::<true>(rp, q.as_ptr(), blocks, tail, ahead)
                        } else {
                            int8_band8_q8::<false>(rp, q.as_ptr(), blocks, tail, ahead)
                        }
                    };
                    row_epilogue8(d, sf, &o, sx, &mut y[si * nr + r0..si * nr + r0 + nv]);
                }
                r0 += 8;
            }
        }
    };
}

/// The AVX2 + FMA (+ F16C) arm (`Isa::Avx2`): the int8 dot step is `vpmaddubsw` + `vpmaddwd` +
/// `vpaddd`.
pub(crate) mod plain {
    use core::arch::x86_64::{
        __m256i, _mm256_add_epi16, _mm256_add_epi32, _mm256_madd_epi16, _mm256_maddubs_epi16,
        _mm256_set1_epi16,
    };

    /// `acc + Σ₄ u·s` per i32 lane; exact when `u ≤ 128` and `|s| ≤ 127` (no i16 saturation in
    /// `vpmaddubsw`: pair sums ≤ 2 · 128 · 127 = 32 512), which every caller guarantees.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn dpbusd(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)))
    }

    /// `dpbusd(dpbusd(acc, u0, s0), u1, s1)`; the two `vpmaddubsw` results are added as i16
    /// before one `vpmaddwd`, so exact when `u0, u1 ≤ 64` and `|s0|, |s1| ≤ 127` (the sum of two
    /// pair sums ≤ 4 · 64 · 127 = 32 512), which every caller guarantees (int4 nibbles ≤ 15).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn dpbusd2(acc: __m256i, u0: __m256i, s0: __m256i, u1: __m256i, s1: __m256i) -> __m256i {
        let p = _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1));
        _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)))
    }

    avx2_arm!("avx2,fma,f16c", crate::isa::Isa::Avx2);
}

/// The AVX-VNNI arm (`Isa::AvxVnni`): the same kernels, the int8 dot step is one VEX-encoded
/// `vpdpbusd` (`_mm256_dpbusd_avx_epi32`: u8 × s8 products summed four at a time into i32, no
/// saturation). Compiled with `avx2,fma,f16c,avxvnni` only, so no EVEX instruction can appear
/// in it.
pub(crate) mod vnni {
    use core::arch::x86_64::{__m256i, _mm256_dpbusd_avx_epi32};

    /// `acc + Σ₄ u·s` per i32 lane (`u` unsigned, `s` signed; no saturation).
    #[inline]
    #[target_feature(enable = "avx2,fma,avxvnni")]
    fn dpbusd(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_avx_epi32(acc, u, s)
    }

    /// `dpbusd(dpbusd(acc, u0, s0), u1, s1)`.
    #[inline]
    #[target_feature(enable = "avx2,fma,avxvnni")]
    fn dpbusd2(acc: __m256i, u0: __m256i, s0: __m256i, u1: __m256i, s1: __m256i) -> __m256i {
        _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, u0, s0), u1, s1)
    }

    avx2_arm!("avx2,fma,f16c,avxvnni", crate::isa::Isa::AvxVnni);
}

pub(crate) use plain::{matmul_f32_rows, matmul_q8_rows};
