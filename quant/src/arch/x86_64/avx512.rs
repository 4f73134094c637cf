//! The AVX-512 arms (512-bit): [`plain`] (AVX-512 F + BW) and [`vnni`] (F + BW + VNNI), for
//! every format with a value rule, both accumulation modes.
//!
//! Both arms are generated from one body (`avx512_arm!`); they differ only in the exact int8
//! dot step `dpbusd(acc, u, s)` = `acc + Σ₄ u·s` (unsigned bytes `u` times signed bytes `s`,
//! four products per i32 lane):
//! - `vnni`: one `vpdpbusd` (non-saturating, wrapping i32 lanes);
//! - `plain`: `vpmaddubsw` + `vpmaddwd(·, 1)` + `vpaddd`. `vpmaddubsw` saturates its i16 pair
//!   sums, so every caller keeps `u ≤ 128` and `s ∈ [−127, 127]` (pair sums ≤ 32 512): then the
//!   two definitions agree exactly, and the arms are bit-identical to each other and to the
//!   scalar reference on the int8-activation path.
//!
//! The operand trap of `vpdpbusd`: the *first* byte operand is unsigned. Signed weight codes
//! therefore go in as magnitudes (`|w| ≤ 128`) with the sign moved onto the activation
//! (`s = −x` where `w < 0`, a masked subtract; `x ≠ −128` by the activation quantizer), or, for
//! int4, as the raw nibble (`0..=15`) with `8·Σx` subtracted afterwards, or, for 32-column
//! groups, as the code plus an offset (nibble; mxfp4 `code + 12`) with `offset·Σx` subtracted
//! through the accumulator's initial value.
//!
//! Decoding:
//! - int4-row, int8-activation path: 32 bytes → 64 nibbles in column order with `vpmovzxbw`, a
//!   shift by 4 and one `vpternlogd` (`(z | z≪4) & 0x0F0F`);
//! - mxfp4 and int4-grouped `gs = 32`, int8-activation path: 64 bytes → the 64 low nibbles
//!   (even columns) and the 64 high ones (odd columns), against activations split once into
//!   even and odd columns; mxfp4 codes through a 16-entry `vpshufb` table (`code + 12`), or,
//!   where the CPU has VBMI (and not under Miri), `vpermb` on the unmasked bytes;
//! - int4 / mxfp4, f32 path: 16 bytes → 32 nibbles in column order (128-bit `and`/shift/
//!   unpack), `vpmovzxbd`, then `vpermps` from a 16-entry f32 table (`nib − 8`, or the e2m1
//!   value): one instruction per 16 weights, no integer→float conversion;
//! - fp8 e4m3: no table, through IEEE half precision (`vcvtph2ps`, exact, never a subnormal
//!   float operand: see `fp8x16`); with activations de-interleaved and pre-multiplied by `2⁸`
//!   (exact) when they fit a stack buffer, 32 bytes decode without widening
//!   (`fp8x32_even_odd`). A NaN code makes its whole output row NaN (as in the reference), so
//!   the decode never patches NaN in; the row is checked instead;
//! - int2-row, int8-activation path: the activation row split once into the four crumb planes
//!   of each 256-column block, then per 64 weight bytes three shifts, four `& 3` and four
//!   `dpbusd` (`q8_int2_row`);
//! - int3-g64, int8-activation path: four groups per step, the low planes as crumbs against
//!   the same crumb planes of the activations, the high planes widened to nibbles whose bit
//!   `k` is the third bit of plane `k` (`q8_int3_g64`);
//! - int8, int2 and int3 (f32 path, or rows over 32 Ki columns) and int4-grouped with a group
//!   size that is not a multiple of 32: a 256-column chunk decoded into an L1 buffer, then
//!   512-bit dot products per group segment.
//!
//! Group tails never read past a row: partial vectors use zero-masked loads (`vmovdqu8`/
//! `vmovups` with a mask), which do not touch (or fault on) masked-off bytes.
//!
//! f32 path: per group, FMA partial sums in several accumulators, `acc = fma(part, scale, acc)`,
//! one horizontal sum per output: within the documented tolerance of the scalar reference.
//! int8 path: exact i32 group sums, then the scalar reference's epilogue (`acc += (d as f32) ·
//! scale` in group order, `y = acc · sx`): bit-exact. For 32-column groups (mxfp4,
//! int4-grouped `gs = 32`) the epilogue itself is vectorised with one output row per lane:
//! 16 rows at a time, exact group sums transposed into lanes (`vpackssdw`, `vpmaddwd`,
//! `vshufi32x4`), scales gathered per group, and each lane performing the reference's f32
//! operations for its row (see `q8_g32_rows16`).

// One SAFETY argument covers each block's loads (all in bounds for the same reason); clippy also
// counts the (safe, same-feature) intrinsic calls, which would split blocks into noise.
#![allow(clippy::multiple_unsafe_ops_per_block)]

/// Columns decoded per chunk (generic paths).
const CH: usize = 256;
/// Activation rows per batch tile of the generic paths.
const ST: usize = 16;

/// `|code|` of each int4 nibble (`|nib − 8|`); negative codes are the nibbles below 8.
static I4_MAG: [i8; 16] = [8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7];
/// `|code|` of each mxfp4 nibble on the int8 path (`2·e2m1`); bit 3 is the sign.
static MX_MAG: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12];
/// mxfp4 nibble → its int8-path code plus 12 (`2·e2m1 + 12 ∈ [0, 24]`; bit 3 is the sign).
static MX_OFF: [i8; 16] = [12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0];
/// int4 nibble values `nib − 8` as f32.
static I4_F32: [f32; 16] =
    [-8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
/// mxfp4 nibble values (e2m1, bit 3 the sign) as f32, as `crate::scalar::code_value`.
static MX_F32: [f32; 16] =
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0];

/// Mask of the first `n` of 64 byte lanes.
#[inline]
fn mask64(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// Mask of the first `n` of 16 dword lanes.
#[inline]
fn mask16(n: usize) -> u16 {
    if n >= 16 { u16::MAX } else { (1u16 << n) - 1 }
}

/// The body shared by both arms; `$feat` is the `target_feature` list, `$isa` the arm.
macro_rules! avx512_arm {
    ($feat:literal, $feat_vbmi:literal, $isa:expr) => {
        use core::arch::x86_64::*;
        use core::ops::Range;

        use super::{CH, I4_F32, I4_MAG, MX_F32, MX_MAG, MX_OFF, ST, mask16, mask64};
        use crate::arch::x86_64::{
            BandPrefetch, group_sums64, int3_epilogue, row_epilogue8, streams, sums8,
        };
        use crate::format::Format;
        use crate::kernels::{Matrix, QuantizedActs, Scales};
        use crate::scalar;

        fn cpu_ok() -> bool {
            $isa.cpu_supports()
        }

        /// Activation bytes [`AlignedActs`] holds.
        const XA: usize = 32 << 10;

        /// A 64-byte-aligned stack buffer for activation rows.
        #[repr(C, align(64))]
        struct AlignedActs(core::mem::MaybeUninit<[i8; XA]>);

        /// Makes the activation rows `xp[..n]` (`ni` codes each) 64-byte aligned for the
        /// int4-row loop, which loads 64 codes per 32 weight bytes: a load that splits two
        /// cache lines costs a second L1 access, 5–9 % of L2-resident throughput (int4-row q8,
        /// 512 × 1024, best of 3000 calls: 72.6 G w/s with the codes at 0 or 32 mod 64, 66.2
        /// at 16, 68.3 at 48; with this copy 70.5–73.0 at every offset). int8-row, whose
        /// weights are twice the bytes, gained nothing from it (55.8–60.1 either way). Rows not
        /// aligned are copied into `buf` (each at a multiple of 64, zero-padded to one) and
        /// their pointers replaced, when all `n` fit; otherwise nothing changes (correct, just
        /// slower). The copy is `n · ni` bytes per call, against `O · ni / 2` weight bytes.
        ///
        /// # Safety
        /// Each `xp[k]`, `k < n`, is valid for reads of `ni` bytes; afterwards each is valid
        /// for `ni` bytes while `buf` lives.
        #[inline]
        unsafe fn align_acts(xp: &mut [*const i8], n: usize, ni: usize, buf: &mut AlignedActs) {
            let stride = ni.div_ceil(64) * 64;
            if xp[..n].iter().all(|p| p.addr() % 64 == 0) || n * stride > XA {
                return;
            }
            let base = buf.0.as_mut_ptr().cast::<i8>();
            for (k, p) in xp[..n].iter_mut().enumerate() {
                // SAFETY: k · stride + stride ≤ n · stride ≤ XA bytes of `buf`; `*p` is valid
                // for ni bytes (the caller's contract) and `buf` is a separate allocation; the
                // padding up to `stride` is zeroed, so every byte a loop may load (masked or
                // not) is initialised.
                unsafe {
                    let dst = base.add(k * stride);
                    core::ptr::copy_nonoverlapping(*p, dst, ni);
                    core::ptr::write_bytes(dst.add(ni), 0, stride - ni);
                    *p = dst;
                }
            }
        }

        /// Prefetch distances (bytes ahead of the loads) of the weight-streaming loops.
        const PREFETCH: [usize; 3] = [4 << 10, 32 << 10, 128 << 10];

        /// Hints the lines [`PREFETCH`] bytes past `p` into L2, for loops that stream weights
        /// from DRAM at one 64-byte line per call. One core's hardware prefetchers alone keep
        /// too few line fills in flight to reach the read bandwidth; more requests in flight,
        /// at several distances, close most of the gap. Measured on the dev VM (int8-row q8
        /// from DRAM, 128 MiB, three processes, same-process `stream-read` beside it): none
        /// 0.69–0.70 of read; into L2 at 1 or 4 KiB alone 0.71/0.75, at 16–128 KiB alone
        /// 0.80–0.82, at 32 + 64 + 128 KiB 0.84–0.92, at 4 + 32 + 128 KiB 0.80–0.94; into L1
        /// (`T0`) or non-temporal, slower than none. A 64-byte-aligned head (no split weight loads)
        /// changed nothing measurable.
        #[inline(always)]
        fn prefetch_l2(p: *const i8) {
            for d in PREFETCH {
                // SAFETY: a prefetch is a hint: it never faults and reads nothing the program
                // sees, whatever the address (formed with wrapping arithmetic); SSE (in every
                // x86-64 target) is all it needs.
                unsafe { _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(d)) };
            }
        }

        /// f32-activation kernel over `rows` (layout of `crate::scalar::matmul_f32_rows`).
        /// Returns `false`, without running, if the CPU lacks the arm's features.
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
            // access below stays within `x`, `y`, the weight rows and the local buffers).
            unsafe { f32_rows(m, x, s, rows, y) };
            true
        }

        /// int8-activation kernel over `rows` (layout of `crate::scalar::matmul_q8_rows`).
        /// Returns `false`, without running, if the CPU lacks the arm's features.
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

        /// Exact `Σ w·x` of 64 signed codes `w` (`|w| ≤ 128`) and 64 activations
        /// (`[−127, 127]`) added to `acc`: magnitudes times sign-moved activations.
        #[inline]
        #[target_feature(enable = $feat)]
        fn dot64_signed(acc: __m512i, w: __m512i, x: __m512i) -> __m512i {
            let neg = _mm512_movepi8_mask(w);
            let xs = _mm512_mask_sub_epi8(x, neg, _mm512_setzero_si512(), x);
            dpbusd(acc, _mm512_abs_epi8(w), xs)
        }

        /// Exact `Σ w[k] · x[k]` for `k < n` (`x` in `[−127, 127]`, `w` any i8).
        ///
        /// The weights are the stream (from DRAM for a large matrix): each 64-byte line is
        /// prefetched into L2 ahead of its load ([`prefetch_l2`]).
        ///
        /// # Safety
        /// `w` and `x` valid for reads of `n` bytes; the arm's features available.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn dot_i8<const STREAM: bool>(w: *const i8, x: *const i8, n: usize) -> i32 {
            let (mut a0, mut a1) = (_mm512_setzero_si512(), _mm512_setzero_si512());
            let mut k = 0;
            while k + 128 <= n {
                if STREAM {
                    prefetch_l2(w.wrapping_add(k));
                    prefetch_l2(w.wrapping_add(k + 64));
                }
                // SAFETY: k + 128 ≤ n.
                unsafe {
                    let w0 = _mm512_loadu_si512(w.add(k).cast());
                    let x0 = _mm512_loadu_si512(x.add(k).cast());
                    let w1 = _mm512_loadu_si512(w.add(k + 64).cast());
                    let x1 = _mm512_loadu_si512(x.add(k + 64).cast());
                    a0 = dot64_signed(a0, w0, x0);
                    a1 = dot64_signed(a1, w1, x1);
                }
                k += 128;
            }
            while k < n {
                let mk = mask64(n - k);
                // SAFETY: the masked loads read only the first min(64, n − k) bytes, all valid;
                // masked-off lanes are zero and never touched.
                unsafe {
                    let w0 = _mm512_maskz_loadu_epi8(mk, w.add(k));
                    let x0 = _mm512_maskz_loadu_epi8(mk, x.add(k));
                    a0 = dot64_signed(a0, w0, x0);
                }
                k += 64;
            }
            _mm512_reduce_add_epi32(_mm512_add_epi32(a0, a1))
        }

        /// `Σ w[k] · x[k]` for `k < n` as 16 f32 lanes.
        ///
        /// # Safety
        /// `w` and `x` valid for reads of `n` f32 (unaligned is fine); features available.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn dot_f32(w: *const f32, x: *const f32, n: usize) -> __m512 {
            let mut a = [_mm512_setzero_ps(); 4];
            let mut k = 0;
            while k + 64 <= n {
                for (j, aj) in a.iter_mut().enumerate() {
                    // SAFETY: k + 16·j + 16 ≤ k + 64 ≤ n.
                    unsafe {
                        let o = k + 16 * j;
                        *aj = _mm512_fmadd_ps(
                            _mm512_loadu_ps(w.add(o)),
                            _mm512_loadu_ps(x.add(o)),
                            *aj,
                        );
                    }
                }
                k += 64;
            }
            while k < n {
                let mk = mask16(n - k);
                // SAFETY: masked loads of the first min(16, n − k) values, all valid.
                unsafe {
                    let wv = _mm512_maskz_loadu_ps(mk, w.add(k));
                    let xv = _mm512_maskz_loadu_ps(mk, x.add(k));
                    a[1] = _mm512_fmadd_ps(wv, xv, a[1]);
                }
                k += 16;
            }
            _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]))
        }

        /// 32 packed bytes → 64 nibbles (`0..=15`) in column order (low nibble = even column):
        /// `vpmovzxbw`, then `(z | z ≪ 4) & 0x0F0F` per 16-bit lane.
        #[inline]
        #[target_feature(enable = $feat)]
        fn nib64(v: __m256i) -> __m512i {
            let z = _mm512_cvtepu8_epi16(v);
            let z4 = _mm512_slli_epi16::<4>(z);
            _mm512_ternarylogic_epi32::<0xA8>(z, z4, _mm512_set1_epi16(0x0F0F))
        }

        /// `table[idx & 15]` per lane (`vpermd` on the f32 bits: the same shuffle as `vpermps`,
        /// written with the integer form, which Miri can execute).
        #[inline]
        #[target_feature(enable = $feat)]
        fn lut16(idx: __m512i, table: __m512) -> __m512 {
            _mm512_castsi512_ps(_mm512_permutexvar_epi32(idx, _mm512_castps_si512(table)))
        }

        /// Lane `l` = `a[idx[l] & 15]` for `l < 8`, `b[idx[l] & 15]` for `l ≥ 8` (two `vpermd`).
        #[inline]
        #[target_feature(enable = $feat)]
        fn pick16(a: __m512, idx: __m512i, b: __m512) -> __m512 {
            let lo = _mm512_permutexvar_epi32(idx, _mm512_castps_si512(a));
            let both = _mm512_mask_permutexvar_epi32(lo, 0xFF00, idx, _mm512_castps_si512(b));
            _mm512_castsi512_ps(both)
        }

        /// 16 packed bytes → 32 nibbles in column order, as two 16-byte vectors.
        #[inline]
        #[target_feature(enable = $feat)]
        fn nib32(v: __m128i) -> (__m128i, __m128i) {
            let m = _mm_set1_epi8(0x0F);
            let lo = _mm_and_si128(v, m);
            let hi = _mm_and_si128(_mm_srli_epi16::<4>(v), m);
            (_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi))
        }

        /// Decodes columns `c0 .. c0 + n` (`c0` a multiple of [`CH`], `n ≤ CH`) of `row` into
        /// integer codes in `buf` (the generic paths only; int2 and int3 with SSE2).
        #[inline]
        #[target_feature(enable = $feat)]
        fn decode_codes(m: &Matrix<'_>, row: &[u8], c0: usize, n: usize, buf: &mut [i8; CH]) {
            match m.format() {
                Format::Int8Row => {
                    for (d, &b) in buf[..n].iter_mut().zip(&row[c0..c0 + n]) {
                        *d = i8::from_le_bytes([b]);
                    }
                }
                Format::Int4Row | Format::Int4Grouped | Format::Mxfp4 => {
                    let mx = m.format() == Format::Mxfp4;
                    for (k, d) in buf[..n].iter_mut().enumerate() {
                        let c = c0 + k;
                        let nib = usize::from((row[c / 2] >> (4 * (c % 2))) & 0xF);
                        *d = if mx {
                            if nib & 8 != 0 { -MX_MAG[nib] } else { MX_MAG[nib] }
                        } else if nib < 8 {
                            -I4_MAG[nib]
                        } else {
                            I4_MAG[nib]
                        };
                    }
                }
                _ => crate::arch::x86_64::decode_small_ints(m, row, c0, &mut buf[..n]),
            }
        }

        // ---------------------------------------------------------------------------------
        // f32 activations

        /// # Safety
        /// Features available; shapes as asserted by [`matmul_f32_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn f32_rows(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]) {
            // int4-row and fp8 at S ≥ 2: the 256-bit small-batch passes (8, 4 or 2 activation
            // rows per pass over L1-resident activation chunks; `docs/kernels.md`). On Zen 4 a
            // 512-bit FMA has the throughput of two 256-bit ones, and these passes measured
            // 1.2 × (int4-row) and 1.6 × (fp8) faster than this arm's 4-row tiles at S = 16
            // there; the last single row, if any, stays here.
            let (ni, nr) = (m.i(), rows.len());
            let n = if s >= 2 && matches!(m.format(), Format::Int4Row | Format::Fp8E4m3B128) {
                let r = rows.clone();
                crate::arch::x86_64::avx2::plain::matmul_f32_small_batch(m, x, s, r, y).unwrap_or(0)
            } else {
                0
            };
            if n == s {
                return;
            }
            let (x, s, y) = (&x[n * ni..], s - n, &mut y[n * nr..]);
            match m.format() {
                Format::Int4Row => {
                    // SAFETY: same contract.
                    unsafe { f32_tiled(m, x, s, rows, y, Kind::Int4) }
                }
                Format::Int4Grouped if m.group_len() % 32 == 0 => {
                    // SAFETY: same contract.
                    unsafe { f32_tiled(m, x, s, rows, y, Kind::Int4) }
                }
                Format::Mxfp4 => {
                    // SAFETY: same contract.
                    unsafe { f32_tiled(m, x, s, rows, y, Kind::Mx) }
                }
                Format::Fp8E4m3B128 => {
                    // SAFETY: same contract.
                    unsafe { f32_tiled(m, x, s, rows, y, Kind::Fp8) }
                }
                Format::Int8Row | Format::Int2Row | Format::Int3G64 | Format::F32 => {
                    // The AVX2 arm's fused kernels: int8-row on 8-row bands (per 8 weights one
                    // `vpmovsxbd`, one conversion, one FMA; from DRAM the next band
                    // prefetched), int2-row / int3-g64 decoded 64 columns at a time in
                    // registers. This arm's chunked path (codes widened into an L1 buffer,
                    // then a dot) was slower for all three (Zen 4 VM, S = 1, G weights/s, L2 /
                    // DRAM): int8-row 8 / 5 against 28 / 22, int2-row 5.1 / 5.9 against 13.0 /
                    // 12.3, int3-g64 3.6 / 3.3 against 5.6 / 6.7. f32 weights: the AVX2 arm's
                    // 256-bit dot was faster on every core measured (512 × 1024, S = 1: Zen 4
                    // 11.1 against 8.6, Intel Xeon 7.5 against 6.3, Zen 5 13.4 against 10.4;
                    // from DRAM within noise of each other).
                    let r = rows.clone();
                    if !crate::arch::x86_64::avx2::plain::matmul_f32_rows(m, x, s, r, y) {
                        // SAFETY: same contract.
                        unsafe { f32_generic(m, x, s, rows, y) }
                    }
                }
                // SAFETY: same contract.
                _ => unsafe { f32_generic(m, x, s, rows, y) },
            }
        }

        /// The fused f32 paths.
        #[derive(Clone, Copy, PartialEq, Eq)]
        enum Kind {
            Int4,
            Mx,
            Fp8,
        }

        /// Runs a fused f32 path in tiles of 4, 2 or 1 activation rows sharing each weight
        /// decode.
        ///
        /// # Safety
        /// Features available; shapes as asserted by [`matmul_f32_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn f32_tiled(
            m: &Matrix<'_>,
            x: &[f32],
            s: usize,
            rows: Range<usize>,
            y: &mut [f32],
            kind: Kind,
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let ipad = ni.div_ceil(32) * 32;
            // The de-interleaved activations: every value read (the first st · ipad) is
            // written first, so the buffer starts uninitialised — zeroing its 64 KiB on every
            // call cost a 256 × 1024 matrix about 3 %. Only raw pointers into it are used.
            let mut xbuf = core::mem::MaybeUninit::<[f32; XB]>::uninit();
            let xb = xbuf.as_mut_ptr().cast::<f32>();
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
                if kind == Kind::Fp8
                    && st * ipad <= XB
                    && scalable_by_256(&x[s0 * ni..(s0 + st) * ni])
                {
                    for k in 0..st {
                        // SAFETY: st · ipad ≤ XB, so the ipad values at k · ipad lie in the
                        // buffer; `deinterleave` writes all of them before they are scaled.
                        unsafe {
                            let out = xb.add(k * ipad);
                            deinterleave(&x[(s0 + k) * ni..(s0 + k + 1) * ni], out, ipad);
                            for j in 0..ipad {
                                *out.add(j) *= 256.0; // exact: |v| < 2^120 (checked above)
                            }
                        }
                    }
                    let xd = |k: usize| xb.wrapping_add(k * ipad).cast_const();
                    for (r, o) in rows.clone().enumerate() {
                        // SAFETY: each pointer addresses the ipad de-interleaved, scaled values
                        // of activation row s0 + k.
                        let v: [f32; 4] = unsafe {
                            match st {
                                4 => fp8_row_f32::<4, true>(m, o, [xd(0), xd(1), xd(2), xd(3)]),
                                2 => pad(fp8_row_f32::<2, true>(m, o, [xd(0), xd(1)])),
                                _ => pad(fp8_row_f32::<1, true>(m, o, [xd(0)])),
                            }
                        };
                        for k in 0..st {
                            y[(s0 + k) * nr + r] = v[k];
                        }
                    }
                    s0 += st;
                    continue;
                }
                if kind != Kind::Fp8 && st * ipad <= XB {
                    for k in 0..st {
                        // SAFETY: st · ipad ≤ XB, so the ipad values at k · ipad lie in the
                        // buffer.
                        unsafe {
                            let out = xb.add(k * ipad);
                            deinterleave(&x[(s0 + k) * ni..(s0 + k + 1) * ni], out, ipad);
                        }
                    }
                    let xd = |k: usize| xb.wrapping_add(k * ipad).cast_const();
                    for (r, o) in rows.clone().enumerate() {
                        // SAFETY: each pointer addresses the ipad de-interleaved values of
                        // activation row s0 + k.
                        let v: [f32; 4] = unsafe {
                            match (st, kind) {
                                (4, Kind::Mx) => {
                                    nib_row_f32_de::<4, true>(m, o, [xd(0), xd(1), xd(2), xd(3)])
                                }
                                (2, Kind::Mx) => {
                                    pad(nib_row_f32_de::<2, true>(m, o, [xd(0), xd(1)]))
                                }
                                (_, Kind::Mx) => pad(nib_row_f32_de::<1, true>(m, o, [xd(0)])),
                                (4, _) => {
                                    nib_row_f32_de::<4, false>(m, o, [xd(0), xd(1), xd(2), xd(3)])
                                }
                                (2, _) => pad(nib_row_f32_de::<2, false>(m, o, [xd(0), xd(1)])),
                                (_, _) => pad(nib_row_f32_de::<1, false>(m, o, [xd(0)])),
                            }
                        };
                        for k in 0..st {
                            y[(s0 + k) * nr + r] = v[k];
                        }
                    }
                    s0 += st;
                    continue;
                }
                for (r, o) in rows.clone().enumerate() {
                    // SAFETY: each pointer addresses the I values of activation row s0 + k.
                    let v: [f32; 4] = unsafe {
                        match (st, kind) {
                            (4, Kind::Fp8) => {
                                fp8_row_f32::<4, false>(m, o, [xp(0), xp(1), xp(2), xp(3)])
                            }
                            (2, Kind::Fp8) => pad(fp8_row_f32::<2, false>(m, o, [xp(0), xp(1)])),
                            (_, Kind::Fp8) => pad(fp8_row_f32::<1, false>(m, o, [xp(0)])),
                            (4, Kind::Mx) => {
                                nib_row_f32::<4, true>(m, o, [xp(0), xp(1), xp(2), xp(3)])
                            }
                            (2, Kind::Mx) => pad(nib_row_f32::<2, true>(m, o, [xp(0), xp(1)])),
                            (_, Kind::Mx) => pad(nib_row_f32::<1, true>(m, o, [xp(0)])),
                            (4, Kind::Int4) => {
                                nib_row_f32::<4, false>(m, o, [xp(0), xp(1), xp(2), xp(3)])
                            }
                            (2, Kind::Int4) => pad(nib_row_f32::<2, false>(m, o, [xp(0), xp(1)])),
                            (_, Kind::Int4) => pad(nib_row_f32::<1, false>(m, o, [xp(0)])),
                        }
                    };
                    for k in 0..st {
                        y[(s0 + k) * nr + r] = v[k];
                    }
                }
                s0 += st;
            }
        }

        /// Activations per call that the de-interleaved nibble path keeps on the stack
        /// (64 KiB): `S`-tile × `I` rounded up to 32. 16 Ki rather than 8 Ki so that rows up to
        /// 16 384 columns (a 14 336-column down projection) take that path with one activation
        /// row. `avx512-vnni`, f32, S = 1, G weights/s, 8 Ki (zeroed) → 16 Ki (uninitialised),
        /// Zen 4 VM, alternated twice: 512 × 14 336 (in L3) int4-row 21.0–21.1 → 22.7, mxfp4
        /// 17.8–17.9 → 19.6, fp8 11.8–12.5 → 16.5–17.5; 256 × 1024 int4-row 24.2–24.4 →
        /// 25.3–25.6; fp8 9362 × 14 336 (DRAM) 8.1–8.2 → 12.3–12.7 with `fp8_row_f32`'s
        /// prefetch (7.6 without).
        const XB: usize = 16384;

        /// Writes one activation row in the order of the de-interleaved nibble path: per
        /// 32-column block, the 16 even columns then the 16 odd ones; columns past `I` are 0.
        /// All of `out[..ceil(I/32) · 32]` is written.
        ///
        /// # Safety
        /// `out` is valid for writes of `len` floats.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn deinterleave(x: &[f32], out: *mut f32, len: usize) {
            let ni = x.len();
            let ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            let io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
            let mut c = 0;
            while c < ni {
                let rem = ni - c;
                assert!(c + 32 <= len);
                // SAFETY: the masked loads read only columns below I; the two stores write
                // out[c..c + 32], within the `len` floats at `out` (asserted; the caller's
                // contract).
                unsafe {
                    let a = _mm512_maskz_loadu_ps(mask16(rem), x.as_ptr().add(c));
                    let b = _mm512_maskz_loadu_ps(
                        mask16(rem.saturating_sub(16)),
                        x.as_ptr().add(c + 16.min(rem)),
                    );
                    _mm512_storeu_ps(out.add(c), pick16(a, ie, b));
                    _mm512_storeu_ps(out.add(c + 16), pick16(a, io, b));
                }
                c += 32;
            }
        }

        /// As [`nib_row_f32`], on activations de-interleaved by [`deinterleave`]: the 16 bytes
        /// of a 32-column block widen to 16 dwords once (`vpmovzxbd`); `vpermps` reads the low
        /// nibble (even columns) directly and, after a shift by 4, the high nibble (odd
        /// columns). No unpacking in the weight stream.
        ///
        /// # Safety
        /// Features available; every `xd[k]` points at `ceil(I/32)·32` de-interleaved values.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn nib_row_f32_de<const T: usize, const MX: bool>(
            m: &Matrix<'_>,
            o: usize,
            xd: [*const f32; T],
        ) -> [f32; T] {
            let (ni, gl) = (m.i(), m.group_len());
            let stream = streams(m);
            let rp = m.row_bytes(o).as_ptr();
            let tp = if MX { MX_F32.as_ptr() } else { I4_F32.as_ptr() };
            // SAFETY: both tables hold 16 f32.
            let table = unsafe { _mm512_loadu_ps(tp) };
            let mut acc = [_mm512_setzero_ps(); T];
            // 32-column groups (mxfp4, int4-grouped gs = 32): two whole groups per 64-column
            // step, each group's partial sum scaled into an accumulator of its own (even and
            // odd groups: two FMA chains, see [`two_groups_f32`]; no per-group loop, no masked
            // load, the row's scales read directly).
            let mut acc2 = [_mm512_setzero_ps(); T];
            let mut sbuf = [0f32; 16];
            let mut g0 = 0;
            if gl == 32 {
                // Pairs of groups, eight pairs per refill of the 16 scales.
                let pairs = ni / 64;
                let mut p0 = 0;
                while p0 < pairs {
                    row_scales16(m, o, 2 * p0, &mut sbuf);
                    let p1 = (p0 + 8).min(pairs);
                    for (j, pair) in (p0..p1).enumerate() {
                        let col = 64 * pair;
                        if stream && pair % 2 == 0 {
                            prefetch_l2(rp.wrapping_add(col / 2).cast());
                        }
                        let (s0, s1) = (sbuf[(2 * j) & 15], sbuf[(2 * j + 1) & 15]);
                        // SAFETY: col + 64 ≤ I: 32 bytes at col/2 are within the row.
                        let w = unsafe { nib64_f32_de(rp.add(col / 2), table) };
                        // SAFETY: col + 64 ≤ ipad values of every xd[k].
                        unsafe { two_groups_f32(&mut acc, &mut acc2, w, xd, col, s0, s1) };
                    }
                    p0 = p1;
                }
                g0 = 2 * pairs;
                for k in 0..T {
                    acc[k] = _mm512_add_ps(acc[k], acc2[k]);
                }
            }
            for g in g0..m.groups_per_row() {
                let (c0, c1) = (g * gl, ((g + 1) * gl).min(ni));
                let mut p = [[_mm512_setzero_ps(); 4]; T];
                let mut col = c0;
                while col + 64 <= c1 {
                    if stream && col % 128 == 0 {
                        prefetch_l2(rp.wrapping_add(col / 2).cast());
                    }
                    // SAFETY: col + 64 ≤ I: 32 bytes at col/2 are within the row.
                    let w = unsafe { nib64_f32_de(rp.add(col / 2), table) };
                    for k in 0..T {
                        for j in 0..4 {
                            // SAFETY: col + 64 ≤ ipad values of xd[k].
                            let xv = unsafe { _mm512_loadu_ps(xd[k].add(col + 16 * j)) };
                            p[k][j] = _mm512_fmadd_ps(w[j], xv, p[k][j]);
                        }
                    }
                    col += 64;
                }
                while col < c1 {
                    // One 32-column block (or the last, partial one: its bytes are loaded with a
                    // mask, and the activations past I are zero in the buffer).
                    let nb = (c1 - col).div_ceil(2).min(16);
                    // SAFETY: the masked load reads the nb bytes of columns col..min(col+32, c1),
                    // within the row.
                    let z = unsafe {
                        _mm512_cvtepu8_epi32(_mm512_castsi512_si128(_mm512_maskz_loadu_epi8(
                            mask64(nb),
                            rp.add(col / 2).cast(),
                        )))
                    };
                    let we = lut16(z, table);
                    let wo = lut16(_mm512_srli_epi32::<4>(z), table);
                    for k in 0..T {
                        // SAFETY: col + 32 ≤ ipad values of xd[k].
                        unsafe {
                            p[k][0] = _mm512_fmadd_ps(we, _mm512_loadu_ps(xd[k].add(col)), p[k][0]);
                            p[k][1] =
                                _mm512_fmadd_ps(wo, _mm512_loadu_ps(xd[k].add(col + 16)), p[k][1]);
                        }
                    }
                    col += 32;
                }
                let sc = _mm512_set1_ps(row_scale(m, o, g));
                for k in 0..T {
                    let part = _mm512_add_ps(
                        _mm512_add_ps(p[k][0], p[k][1]),
                        _mm512_add_ps(p[k][2], p[k][3]),
                    );
                    acc[k] = _mm512_fmadd_ps(part, sc, acc[k]);
                }
            }
            let mut out = [0f32; T];
            for k in 0..T {
                out[k] = _mm512_reduce_add_ps(acc[k]);
            }
            out
        }

        /// The 64 weights of the 32 nibble bytes at `p`, in column order, through the 16-entry
        /// f32 `table` (`vpermps`): four vectors of 16.
        ///
        /// # Safety
        /// Features available; `p` valid for reads of 32 bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn nib64_f32(p: *const u8, table: __m512) -> [__m512; 4] {
            let (v0, v1) =
                // SAFETY: 32 bytes at p (the caller's contract).
                unsafe { (_mm_loadu_si128(p.cast()), _mm_loadu_si128(p.add(16).cast())) };
            let (a, b) = nib32(v0);
            let (c, d) = nib32(v1);
            [
                lut16(_mm512_cvtepu8_epi32(a), table),
                lut16(_mm512_cvtepu8_epi32(b), table),
                lut16(_mm512_cvtepu8_epi32(c), table),
                lut16(_mm512_cvtepu8_epi32(d), table),
            ]
        }

        /// [`nib64_f32`] in the de-interleaved order of [`nib_row_f32_de`]: per 32 columns the
        /// 16 even (low nibbles) then the 16 odd (high nibbles), no unpacking.
        ///
        /// # Safety
        /// Features available; `p` valid for reads of 32 bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn nib64_f32_de(p: *const u8, table: __m512) -> [__m512; 4] {
            // SAFETY: 32 bytes at p (the caller's contract).
            let (z0, z1) = unsafe {
                (
                    _mm512_cvtepu8_epi32(_mm_loadu_si128(p.cast())),
                    _mm512_cvtepu8_epi32(_mm_loadu_si128(p.add(16).cast())),
                )
            };
            [
                lut16(z0, table),
                lut16(_mm512_srli_epi32::<4>(z0), table),
                lut16(z1, table),
                lut16(_mm512_srli_epi32::<4>(z1), table),
            ]
        }

        /// The f32-path scale of group `g` of row `o`, as `scalar::group_scale`, read
        /// directly (the call costs a third of the time of a 32-column group).
        #[inline]
        fn row_scale(m: &Matrix<'_>, o: usize, g: usize) -> f32 {
            let at = o * m.groups_per_row() + g;
            match m.scales() {
                // 2^(e−127) as f32 bits (e = 0: +0.0; 255 is refused by Matrix::new).
                Scales::Ue8m0(e) => f32::from_bits(u32::from(e[at]) << 23),
                Scales::F32(sv) => sv[at],
                Scales::None => 1.0,
            }
        }

        /// The f32-path scales of groups `g .. g + 16` of row `o` (as [`row_scale`]; those
        /// past the row's last group are 0 or left as they were) into `buf`: UE8M0 bytes widened and
        /// shifted 16 at a time. The 2-group loops read their scales from `buf`, so that each
        /// becomes the broadcast memory operand of its FMA: a scale broadcast from a register
        /// takes a slot on the shuffle port, which the weight decode (`vpmovzxbd`,
        /// `vpermps`) already fills (mxfp4 f32, `avx512-vnni`, Zen 5, 256 × 1024: 29.5 →
        /// 36–37 G weights/s).
        #[inline]
        #[target_feature(enable = $feat)]
        fn row_scales16(m: &Matrix<'_>, o: usize, g: usize, buf: &mut [f32; 16]) {
            let ng = m.groups_per_row();
            let (at, n) = (o * ng + g, (ng - g).min(16));
            match m.scales() {
                Scales::Ue8m0(e) => {
                    let e = &e[at..at + n];
                    // SAFETY: the masked load reads the n ≤ 16 bytes of `e` only; the store
                    // writes the 16 f32 of `buf` (zeros past n). Not a masked store: loads
                    // from a masked store's bytes are not forwarded from it, and the loop's
                    // first scale loads follow it closely.
                    unsafe {
                        let b = _mm512_castsi512_si128(_mm512_maskz_loadu_epi8(
                            mask64(n),
                            e.as_ptr().cast(),
                        ));
                        let v = _mm512_slli_epi32::<23>(_mm512_cvtepu8_epi32(b));
                        _mm512_storeu_ps(buf.as_mut_ptr(), _mm512_castsi512_ps(v));
                    }
                }
                Scales::F32(sv) => buf[..n].copy_from_slice(&sv[at..at + n]),
                Scales::None => buf[..n].fill(1.0),
            }
        }

        /// Two whole 32-column groups at `col` (`w`: their 64 decoded weights, in the order
        /// of `xs`) into each activation row's two accumulators:
        /// `even[k] += (w₀·x₀ + w₁·x₁) · s0`, `odd[k] += (w₂·x₂ + w₃·x₃) · s1`.
        ///
        /// Two accumulators, not one: with both FMAs on one register the loop-carried chain
        /// was two FMA latencies per 64 weights, the bound of the one-activation-row loop
        /// (mxfp4 f32, `avx512-vnni`, Zen 5, 256 × 1024: 29.3 G weights/s against int4-row's
        /// 40.6, whose chains are one FMA long).
        ///
        /// # Safety
        /// Features available; every `xs[k]` valid for reads of `col + 64` f32.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn two_groups_f32<const T: usize>(
            even: &mut [__m512; T],
            odd: &mut [__m512; T],
            w: [__m512; 4],
            xs: [*const f32; T],
            col: usize,
            s0: f32,
            s1: f32,
        ) {
            let (v0, v1) = (_mm512_set1_ps(s0), _mm512_set1_ps(s1));
            for ((a, b), x) in even.iter_mut().zip(odd.iter_mut()).zip(xs) {
                // SAFETY: col + 64 values at x (the caller's contract).
                let xv = |j: usize| unsafe { _mm512_loadu_ps(x.add(col + 16 * j)) };
                let t0 = _mm512_fmadd_ps(w[1], xv(1), _mm512_mul_ps(w[0], xv(0)));
                let t1 = _mm512_fmadd_ps(w[3], xv(3), _mm512_mul_ps(w[2], xv(2)));
                *a = _mm512_fmadd_ps(t0, v0, *a);
                *b = _mm512_fmadd_ps(t1, v1, *b);
            }
        }

        fn pad<const T: usize>(v: [f32; T]) -> [f32; 4] {
            let mut out = [0f32; 4];
            out[..T].copy_from_slice(&v);
            out
        }

        /// Fused f32-activation kernel for one nibble row (int4-row, int4-grouped with
        /// `gs % 32 == 0`, mxfp4 when `MX`) and `T` activation rows: 32 columns per step
        /// decoded with one `vpermps` per 16 weights, four accumulators per activation row.
        ///
        /// # Safety
        /// Features available; every `xs[k]` points at `I` values.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn nib_row_f32<const T: usize, const MX: bool>(
            m: &Matrix<'_>,
            o: usize,
            xs: [*const f32; T],
        ) -> [f32; T] {
            let (ni, gl) = (m.i(), m.group_len());
            let stream = streams(m);
            let row = m.row_bytes(o);
            let rp = row.as_ptr();
            let tp = if MX { MX_F32.as_ptr() } else { I4_F32.as_ptr() };
            // SAFETY: both tables hold 16 f32.
            let table = unsafe { _mm512_loadu_ps(tp) };
            let mut acc = [_mm512_setzero_ps(); T];
            let ng = m.groups_per_row();
            // 32-column groups: two whole groups per 64-column step (`nib_row_f32_de`).
            let mut acc2 = [_mm512_setzero_ps(); T];
            let mut sbuf = [0f32; 16];
            let mut g0 = 0;
            if gl == 32 {
                // Pairs of groups, eight pairs per refill of the 16 scales.
                let pairs = ni / 64;
                let mut p0 = 0;
                while p0 < pairs {
                    row_scales16(m, o, 2 * p0, &mut sbuf);
                    let p1 = (p0 + 8).min(pairs);
                    for (j, pair) in (p0..p1).enumerate() {
                        let col = 64 * pair;
                        if stream && pair % 2 == 0 {
                            prefetch_l2(rp.wrapping_add(col / 2).cast());
                        }
                        // SAFETY: col + 64 ≤ I, so 32 bytes at col/2 are within the row.
                        let w = unsafe { nib64_f32(rp.add(col / 2), table) };
                        let (s0, s1) = (sbuf[(2 * j) & 15], sbuf[(2 * j + 1) & 15]);
                        // SAFETY: col + 64 ≤ I values of every xs[k].
                        unsafe { two_groups_f32(&mut acc, &mut acc2, w, xs, col, s0, s1) };
                    }
                    p0 = p1;
                }
                g0 = 2 * pairs;
                for k in 0..T {
                    acc[k] = _mm512_add_ps(acc[k], acc2[k]);
                }
            }
            for g in g0..ng {
                let (c0, c1) = (g * gl, ((g + 1) * gl).min(ni));
                let mut p = [[_mm512_setzero_ps(); 4]; T];
                let mut col = c0;
                while col + 64 <= c1 {
                    if stream && col % 128 == 0 {
                        prefetch_l2(rp.wrapping_add(col / 2).cast());
                    }
                    // SAFETY: col + 64 ≤ I, so 32 bytes at col/2 are within the row.
                    let w = unsafe { nib64_f32(rp.add(col / 2), table) };
                    for k in 0..T {
                        for j in 0..4 {
                            // SAFETY: col + 64 ≤ I values of xs[k].
                            let xv = unsafe { _mm512_loadu_ps(xs[k].add(col + 16 * j)) };
                            p[k][j] = _mm512_fmadd_ps(w[j], xv, p[k][j]);
                        }
                    }
                    col += 64;
                }
                if col + 32 <= c1 {
                    // SAFETY: col + 32 ≤ I, so 16 bytes at col/2 are within the row.
                    let (a, b) = nib32(unsafe { _mm_loadu_si128(rp.add(col / 2).cast()) });
                    let w0 = lut16(_mm512_cvtepu8_epi32(a), table);
                    let w1 = lut16(_mm512_cvtepu8_epi32(b), table);
                    for k in 0..T {
                        // SAFETY: col + 32 ≤ I values of xs[k].
                        unsafe {
                            p[k][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xs[k].add(col)), p[k][0]);
                            p[k][1] =
                                _mm512_fmadd_ps(w1, _mm512_loadu_ps(xs[k].add(col + 16)), p[k][1]);
                        }
                    }
                    col += 32;
                }
                while col < c1 {
                    // 1..=63 columns left (col even: c0 is a multiple of 32 or 0).
                    let rem = c1 - col;
                    let nb = rem.div_ceil(2);
                    // SAFETY: the masked load reads only the ceil(rem/2) bytes holding columns
                    // col..c1, all within the row.
                    let v = unsafe {
                        _mm512_maskz_loadu_epi8(mask64(nb.min(32)), rp.add(col / 2).cast())
                    };
                    let (a, b) = nib32(_mm512_castsi512_si128(v));
                    let (c, d) = nib32(_mm512_extracti32x4_epi32::<1>(v));
                    let w = [
                        lut16(_mm512_cvtepu8_epi32(a), table),
                        lut16(_mm512_cvtepu8_epi32(b), table),
                        lut16(_mm512_cvtepu8_epi32(c), table),
                        lut16(_mm512_cvtepu8_epi32(d), table),
                    ];
                    for k in 0..T {
                        for j in 0..4 {
                            let mk = mask16(rem.saturating_sub(16 * j));
                            // SAFETY: masked load of the columns below c1 only (the padding
                            // nibble of an odd I is multiplied by a zero lane).
                            let xv = unsafe { _mm512_maskz_loadu_ps(mk, xs[k].add(col + 16 * j)) };
                            p[k][j] = _mm512_fmadd_ps(w[j], xv, p[k][j]);
                        }
                    }
                    col += 64;
                }
                let sc = _mm512_set1_ps(row_scale(m, o, g));
                for k in 0..T {
                    let part = _mm512_add_ps(
                        _mm512_add_ps(p[k][0], p[k][1]),
                        _mm512_add_ps(p[k][2], p[k][3]),
                    );
                    acc[k] = _mm512_fmadd_ps(part, sc, acc[k]);
                }
            }
            let mut out = [0f32; T];
            for k in 0..T {
                out[k] = _mm512_reduce_add_ps(acc[k]);
            }
            out
        }

        /// 16 e4m3 bytes → 16 f32 values `e4m3 · 2⁻⁸` (exact) through IEEE half precision,
        /// with no float arithmetic on subnormal operands (which costs a microcode assist per
        /// instruction on this class of CPU: the former `bits · 2¹²⁰` decode, whose `bits` are
        /// subnormal f32 for exponent-0 codes, ran at half speed on random codes).
        /// `(b ≪ 7) & 0xBF80` on the sign-extended 16-bit lane is the f16 `e4m3 · 2⁻⁸` exactly
        /// — f16 has one more exponent bit and subnormals down to 2⁻²⁴, so e4m3 subnormals stay
        /// exact — then `vcvtph2ps` (exact; the result is a normal f32, `|e4m3 · 2⁻⁸| ≥ 2⁻¹⁷`,
        /// or zero). The factor `2⁸` is restored by the caller (on the activations, see
        /// [`fp8_row_f32`], or by [`fp8x16_unit`]). NaN codes (`|b| = 0x7F`) decode to ±1.875;
        /// callers never let them reach an output (see [`fp8_has_nan`]).
        #[inline]
        #[target_feature(enable = $feat)]
        fn fp8x16(b: __m128i) -> __m512 {
            let t = _mm256_cvtepi8_epi16(b);
            #[allow(clippy::cast_possible_wrap)] // bit pattern
            let h =
                _mm256_and_si256(_mm256_slli_epi16::<7>(t), _mm256_set1_epi16(0xBF80u16 as i16));
            cvtph16(h)
        }

        /// 32 e4m3 bytes → the 16 even-indexed and the 16 odd-indexed ones as f32
        /// `e4m3 · 2⁻⁸` (exact), as [`fp8x16`] but without widening: in each 16-bit lane
        /// `w = b_odd · 2⁸ + b_even`, `(w ≫ₐ 1) & 0xBF80` is the f16 of `b_odd` (sign in bits
        /// 15 and 14, the latter cleared) and `((w ≪ 8) ≫ₐ 1) & 0xBF80` the f16 of `b_even`.
        #[inline]
        #[target_feature(enable = $feat)]
        fn fp8x32_even_odd(w: __m256i) -> (__m512, __m512) {
            #[allow(clippy::cast_possible_wrap)] // bit pattern
            let m = _mm256_set1_epi16(0xBF80u16 as i16);
            let he = _mm256_and_si256(_mm256_srai_epi16::<1>(_mm256_slli_epi16::<8>(w)), m);
            let ho = _mm256_and_si256(_mm256_srai_epi16::<1>(w), m);
            (cvtph16(he), cvtph16(ho))
        }

        /// 16 IEEE halves → 16 f32 (exact): two 8-lane `vcvtph2ps` (F16C) joined by
        /// `vinserti64x4`, the same value as the 16-lane form, which Miri cannot execute.
        #[inline]
        #[target_feature(enable = $feat)]
        fn cvtph16(h: __m256i) -> __m512 {
            let lo = _mm256_castps_si256(_mm256_cvtph_ps(_mm256_castsi256_si128(h)));
            let hi = _mm256_castps_si256(_mm256_cvtph_ps(_mm256_extracti128_si256::<1>(h)));
            _mm512_castsi512_ps(_mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi))
        }

        /// [`fp8x16`] times `2⁸`: the exact e4m3 values (the multiplication is exact and its
        /// operand normal).
        #[inline]
        #[target_feature(enable = $feat)]
        fn fp8x16_unit(b: __m128i) -> __m512 {
            _mm512_mul_ps(fp8x16(b), _mm512_set1_ps(256.0))
        }

        /// Whether any of the `n` bytes at `p` is an e4m3 NaN code (`b & 0x7F == 0x7F`).
        ///
        /// # Safety
        /// Features available; `p` valid for reads of `n` bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8_has_nan(p: *const u8, n: usize) -> bool {
            let sev = _mm512_set1_epi8(0x7F);
            let (mut a0, mut a1) = (_mm512_setzero_si512(), _mm512_setzero_si512());
            let mut k = 0;
            while k + 128 <= n {
                // SAFETY: k + 128 ≤ n.
                unsafe {
                    let v0 = _mm512_loadu_si512(p.add(k).cast());
                    let v1 = _mm512_loadu_si512(p.add(k + 64).cast());
                    a0 = _mm512_max_epu8(a0, _mm512_and_si512(v0, sev));
                    a1 = _mm512_max_epu8(a1, _mm512_and_si512(v1, sev));
                }
                k += 128;
            }
            while k < n {
                // SAFETY: the masked load reads only the first min(64, n − k) bytes, all valid.
                let v = unsafe { _mm512_maskz_loadu_epi8(mask64(n - k), p.add(k).cast()) };
                a0 = _mm512_max_epu8(a0, _mm512_and_si512(v, sev));
                k += 64;
            }
            _mm512_cmpeq_epi8_mask(_mm512_max_epu8(a0, a1), sev) != 0
        }

        /// Whether every activation of `x` is below `2¹²⁰` in magnitude, so that `x · 2⁸` is
        /// finite (and exact: a multiplication by a power of two with a finite result).
        /// NaN activations make it `false` too.
        #[inline]
        #[target_feature(enable = $feat)]
        fn scalable_by_256(x: &[f32]) -> bool {
            // Compared as integers (Miri has no shim for the float compare-to-mask): for
            // |x| (sign cleared), bits < bits(2^120) ⇔ |x| < 2^120; NaN and ∞ bits are above.
            let lim = _mm512_set1_epi32(0x7B80_0000);
            let abs = _mm512_set1_epi32(0x7FFF_FFFF);
            let mut ok = u16::MAX;
            for c in x.chunks(16) {
                // SAFETY: the masked load reads the c.len() ≤ 16 values of the chunk only.
                let v = unsafe { _mm512_maskz_loadu_epi32(mask16(c.len()), c.as_ptr().cast()) };
                ok &= _mm512_cmplt_epi32_mask(_mm512_and_si512(v, abs), lim);
            }
            ok == u16::MAX
        }

        /// Fused fp8-e4m3-b128 f32-activation kernel for one weight row and `T` activation rows.
        ///
        /// A row holding a NaN code is NaN for every activation row (as in the reference, where
        /// the NaN reaches the row's accumulator whatever the activations), so NaN codes are
        /// never decoded: the row is checked (a pre-pass, or, when `DE`, two byte maxima carried
        /// through the decode) and the outputs set to NaN.
        ///
        /// `DE` (the fast path): `xs[k]` are the activations de-interleaved per 32 columns (16
        /// even, then 16 odd, zero past `I`, see [`deinterleave`]) and multiplied by `2⁸`
        /// (exact: [`scalable_by_256`]); 32 weight bytes decode without widening
        /// ([`fp8x32_even_odd`]) to `e4m3 · 2⁻⁸`, so each FMA forms the same real product
        /// `e4m3 · x` as with unscaled activations and exact weights: no multiplication by `2⁸`
        /// per 16 weights, and no operand of any float instruction is subnormal unless an
        /// activation is. Two accumulators per activation row and 128-block.
        ///
        /// Not `DE`: `xs[k]` are the activations; each 16 weight bytes decode through
        /// [`fp8x16_unit`] (exact e4m3 values), four accumulators.
        ///
        /// Either way, per 128-block: `acc = fma(Σ, block scale, acc)`, within the documented
        /// tolerance of the reference.
        ///
        /// # Safety
        /// Features available; every `xs[k]` points at `I` values (not `DE`) or at
        /// `ceil(I/32)·32` values (`DE`).
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn fp8_row_f32<const T: usize, const DE: bool>(
            m: &Matrix<'_>,
            o: usize,
            xs: [*const f32; T],
        ) -> [f32; T] {
            let ni = m.i();
            let rp = m.row_bytes(o).as_ptr();
            // SAFETY: the row holds I bytes. (No probe where with_nan_codes_checked found no
            // NaN code in the matrix.)
            if !DE && !m.fp8_nan_free() && unsafe { fp8_has_nan(rp, ni) } {
                return [f32::NAN; T];
            }
            // DE: the NaN check rides on the decode: the largest byte as unsigned (0xFF is the
            // negative NaN code) and as signed (0x7F the positive one) of the whole row.
            // (Not where with_nan_codes_checked found no NaN code: the maxima stay zero.)
            let probe = !m.fp8_nan_free();
            let (mut max_u, mut max_s) = (_mm256_setzero_si256(), _mm256_setzero_si256());
            let sc_row = match m.scales() {
                Scales::F32(s) => &s[m.scale_index(o, 0)..m.scale_index(o, 0) + m.groups_per_row()],
                _ => unreachable!("fp8 matrices have f32 block scales (Matrix::new)"),
            };
            let mut acc = [_mm512_setzero_ps(); T];
            let full = ni / 128;
            // DE from DRAM: each block's two lines prefetched ahead (`prefetch_l2`); the other
            // form's NaN pre-pass reads the row ahead of its decode instead.
            let stream = DE && streams(m);
            for (g, &scg) in sc_row.iter().enumerate().take(full) {
                let c0 = 128 * g;
                let mut p = [[_mm512_setzero_ps(); 4]; T];
                if DE {
                    if stream {
                        prefetch_l2(rp.wrapping_add(c0).cast());
                        prefetch_l2(rp.wrapping_add(c0 + 64).cast());
                    }
                    for j in 0..4 {
                        // SAFETY: c0 + 128 ≤ I: the 32 bytes at c0 + 32·j are in the row.
                        let v = unsafe { _mm256_loadu_si256(rp.add(c0 + 32 * j).cast()) };
                        if probe {
                            max_u = _mm256_max_epu8(max_u, v);
                            max_s = _mm256_max_epi8(max_s, v);
                        }
                        let (we, wo) = fp8x32_even_odd(v);
                        for k in 0..T {
                            // SAFETY: c0 + 32·j + 32 ≤ ipad values of xs[k].
                            unsafe {
                                let xe = _mm512_loadu_ps(xs[k].add(c0 + 32 * j));
                                let xo = _mm512_loadu_ps(xs[k].add(c0 + 32 * j + 16));
                                p[k][0] = _mm512_fmadd_ps(we, xe, p[k][0]);
                                p[k][1] = _mm512_fmadd_ps(wo, xo, p[k][1]);
                            }
                        }
                    }
                } else {
                    for j in 0..8 {
                        // SAFETY: c0 + 128 ≤ I: the 16 bytes at c0 + 16·j are in the row.
                        let w = fp8x16_unit(unsafe { _mm_loadu_si128(rp.add(c0 + 16 * j).cast()) });
                        for k in 0..T {
                            // SAFETY: c0 + 16·j + 16 ≤ I values of xs[k].
                            let xv = unsafe { _mm512_loadu_ps(xs[k].add(c0 + 16 * j)) };
                            p[k][j % 4] = _mm512_fmadd_ps(w, xv, p[k][j % 4]);
                        }
                    }
                }
                let sc = _mm512_set1_ps(scg);
                for k in 0..T {
                    let part = if DE {
                        _mm512_add_ps(p[k][0], p[k][1])
                    } else {
                        _mm512_add_ps(
                            _mm512_add_ps(p[k][0], p[k][1]),
                            _mm512_add_ps(p[k][2], p[k][3]),
                        )
                    };
                    acc[k] = _mm512_fmadd_ps(part, sc, acc[k]);
                }
            }
            if full * 128 < ni {
                // The last, partial block: masked loads of its columns only.
                let c0 = full * 128;
                let mut p = [[_mm512_setzero_ps(); 4]; T];
                let mut col = c0;
                let mut j = 0;
                while col < ni {
                    if DE {
                        let rem = (ni - col).min(32);
                        // SAFETY: masked load of the rem bytes of columns col..col + rem ≤ I.
                        let b = unsafe { _mm512_maskz_loadu_epi8(mask64(rem), rp.add(col).cast()) };
                        let b = _mm512_castsi512_si256(b);
                        max_u = _mm256_max_epu8(max_u, b);
                        max_s = _mm256_max_epi8(max_s, b);
                        let (we, wo) = fp8x32_even_odd(b);
                        for k in 0..T {
                            // SAFETY: col + 32 ≤ ipad values of xs[k] (zero past I).
                            unsafe {
                                let xe = _mm512_loadu_ps(xs[k].add(col));
                                let xo = _mm512_loadu_ps(xs[k].add(col + 16));
                                p[k][j] = _mm512_fmadd_ps(we, xe, p[k][j]);
                                p[k][j + 1] = _mm512_fmadd_ps(wo, xo, p[k][j + 1]);
                            }
                        }
                        j = (j + 2) % 4;
                        col += 32;
                    } else {
                        let rem = (ni - col).min(16);
                        // SAFETY: masked load of the rem bytes of columns col..col + rem ≤ I.
                        let b = unsafe { _mm512_maskz_loadu_epi8(mask64(rem), rp.add(col).cast()) };
                        let w = fp8x16_unit(_mm512_castsi512_si128(b));
                        for k in 0..T {
                            // SAFETY: masked load of rem values of columns below I.
                            let xv = unsafe { _mm512_maskz_loadu_ps(mask16(rem), xs[k].add(col)) };
                            p[k][j] = _mm512_fmadd_ps(w, xv, p[k][j]);
                        }
                        j = (j + 1) % 4;
                        col += 16;
                    }
                }
                let sc = _mm512_set1_ps(sc_row[full]);
                for k in 0..T {
                    let part = _mm512_add_ps(
                        _mm512_add_ps(p[k][0], p[k][1]),
                        _mm512_add_ps(p[k][2], p[k][3]),
                    );
                    acc[k] = _mm512_fmadd_ps(part, sc, acc[k]);
                }
            }
            #[allow(clippy::cast_possible_wrap)] // bit pattern
            let nan = _mm256_movemask_epi8(_mm256_or_si256(
                _mm256_cmpeq_epi8(max_u, _mm256_set1_epi8(0xFFu8 as i8)),
                _mm256_cmpeq_epi8(max_s, _mm256_set1_epi8(0x7F)),
            ));
            if DE && nan != 0 {
                return [f32::NAN; T];
            }
            let mut out = [0f32; T];
            for k in 0..T {
                out[k] = _mm512_reduce_add_ps(acc[k]);
            }
            out
        }

        /// Decodes columns `c0 .. c0 + n` of `row` into unscaled f32 values, returning a
        /// pointer to them (into `row` itself for f32 weights).
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
            if m.format() == Format::F32 {
                return row[4 * c0..4 * (c0 + n)].as_ptr().cast();
            }
            let codes: *const i8 = if m.format() == Format::Int8Row {
                row[c0..c0 + n].as_ptr().cast()
            } else {
                decode_codes(m, row, c0, n, ibuf);
                ibuf.as_ptr()
            };
            let mut k = 0;
            while k < n {
                let mk = mask64((n - k).min(16));
                // SAFETY: `codes` points at n valid bytes; the masked load reads only those below
                // n; the 16 f32 stored at k ≤ CH − 16 are within fbuf (k is a multiple of 16).
                unsafe {
                    let b = _mm512_castsi512_si128(_mm512_maskz_loadu_epi8(mk, codes.add(k)));
                    let f = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
                    _mm512_storeu_ps(fbuf.as_mut_ptr().add(k), f);
                }
                k += 16;
            }
            fbuf.as_ptr()
        }

        /// Generic f32 path: 256-column chunks decoded once into L1 buffers and reused by up to
        /// [`ST`] activation rows; per group segment a 512-bit FMA dot product.
        ///
        /// # Safety
        /// Features available; shapes as asserted by [`matmul_f32_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn f32_generic(
            m: &Matrix<'_>,
            x: &[f32],
            s: usize,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, gl, nr) = (m.i(), m.group_len(), rows.len());
            let mut ibuf = [0i8; CH];
            let mut fbuf = [0f32; CH];
            let mut s0 = 0;
            while s0 < s {
                let st = (s - s0).min(ST);
                for (r, o) in rows.clone().enumerate() {
                    let row = m.row_bytes(o);
                    let mut acc = [_mm512_setzero_ps(); ST];
                    let mut part = [_mm512_setzero_ps(); ST];
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
                                *p = _mm512_add_ps(*p, unsafe {
                                    dot_f32(wp.add(pos - c0), xs.as_ptr(), end - pos)
                                });
                            }
                            pos = end;
                            if pos == gend {
                                let sc = _mm512_set1_ps(if m.format() == Format::F32 {
                                    1.0
                                } else {
                                    scalar::group_scale(m, o, g)
                                });
                                for (a, p) in acc[..st].iter_mut().zip(&mut part[..st]) {
                                    *a = _mm512_fmadd_ps(*p, sc, *a);
                                    *p = _mm512_setzero_ps();
                                }
                                g += 1;
                                gend = (gend + gl).min(ni);
                            }
                        }
                        c0 += n;
                    }
                    for (k, a) in acc[..st].iter().enumerate() {
                        y[(s0 + k) * nr + r] = _mm512_reduce_add_ps(*a);
                    }
                }
                s0 += st;
            }
        }

        // ---------------------------------------------------------------------------------
        // int8 activations

        /// # Safety
        /// Features available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn q8_rows(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            // int4-row and int8-row GEMV streamed from DRAM: the AVX2 arm's 8-row band
            // kernels (same exact sums, bit-identical results). On the Zen 4 VM (512-bit
            // operations at half rate) they kept closer to the read of the same bytes than
            // this arm's 512-bit bands, in the same runs: int4-row 0.91–0.94 of the read
            // against 0.83–0.90, int8-row 0.92–0.97 against 0.86–0.99 (three alternating
            // runs of each build, `docs/PERFORMANCE.md`, twenty-ninth session); in L2 this
            // arm stays 1.3–1.4 × faster, so only streaming matrices go there.
            if xq.s() == 1
                && streams(m)
                && matches!(m.format(), Format::Int4Row | Format::Int8Row)
                && crate::arch::x86_64::avx2::plain::matmul_q8_rows(m, xq, rows.clone(), y)
            {
                return;
            }
            match m.format() {
                // SAFETY: same contract.
                Format::Int4Row => unsafe { q8_int4_row(m, xq, rows, y) },
                // SAFETY: same contract.
                Format::Int8Row => unsafe { q8_int8_row(m, xq, rows, y) },
                // SAFETY: same contract.
                Format::Int2Row if m.i() <= XA => unsafe { q8_int2_row(m, xq, rows, y) },
                // SAFETY: same contract.
                Format::Int3G64 if m.i() <= XA => unsafe { q8_int3_g64(m, xq, rows, y) },
                Format::Mxfp4 => {
                    // SAFETY: same contract (VBMI detected where its variant runs).
                    unsafe {
                        match (band_special(m), crate::isa::vbmi_lookups()) {
                            (true, true) => q8_mx_rows16_vbmi::<true>(m, xq, rows, y),
                            (false, true) => q8_mx_rows16_vbmi::<false>(m, xq, rows, y),
                            (true, false) => q8_g32_rows16::<true, false, true>(m, xq, rows, y),
                            (false, false) => q8_g32_rows16::<true, false, false>(m, xq, rows, y),
                        }
                    }
                }
                Format::Int4Grouped if m.group_len() == 32 => {
                    // SAFETY: same contract.
                    unsafe {
                        if band_special(m) {
                            q8_g32_rows16::<false, false, true>(m, xq, rows, y);
                        } else {
                            q8_g32_rows16::<false, false, false>(m, xq, rows, y);
                        }
                    }
                }
                Format::Int4Grouped
                    if g32_multiple(m.group_len())
                        && m.o() * m.groups_per_row() <= i32::MAX as usize =>
                {
                    // SAFETY: same contract; the scale indices fit the gather's i32.
                    unsafe {
                        if band_special(m) {
                            q8_g32_rows16::<false, true, true>(m, xq, rows, y);
                        } else {
                            q8_g32_rows16::<false, true, false>(m, xq, rows, y);
                        }
                    }
                }
                // SAFETY: same contract.
                _ => unsafe { q8_generic(m, xq, rows, y) },
            }
        }

        /// The scalar reference's epilogue for a one-group row: `((0 + d·sc) · sx)`.
        #[inline]
        fn epilogue_row(d: i32, sc: f32, sx: f32, ni: usize) -> f32 {
            let mut acc = 0.0f32;
            if ni > 0 {
                #[allow(clippy::cast_precision_loss)] // the spec's rounding
                let df = d as f32;
                acc += df * sc;
            }
            acc * sx
        }

        /// `Σ nib · x` over a whole int4 row (`nib` = the raw nibble `0..=15`) for `T`
        /// activation rows sharing each weight load. Masked tail; the padding nibble of an odd
        /// `I` meets a zero activation lane.
        ///
        /// # Safety
        /// Features available; `row` holds `ceil(I/2)` bytes and every `xs[k]` `I` codes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int4_row_dots<const T: usize, const STREAM: bool>(
            row: *const u8,
            xs: [*const i8; T],
            ni: usize,
        ) -> [i32; T] {
            let mut a0 = [_mm512_setzero_si512(); T];
            let mut a1 = [_mm512_setzero_si512(); T];
            let blocks = ni / 64;
            let mut b = 0;
            while b + 2 <= blocks {
                if STREAM {
                    prefetch_l2(row.wrapping_add(32 * b).cast());
                }
                // SAFETY: b + 2 ≤ blocks: 64 bytes at 32·b are within the row.
                let (w0, w1) = unsafe {
                    (
                        nib64(_mm256_loadu_si256(row.add(32 * b).cast())),
                        nib64(_mm256_loadu_si256(row.add(32 * b + 32).cast())),
                    )
                };
                for k in 0..T {
                    // SAFETY: 128 codes at 64·b are within xs[k].
                    unsafe {
                        a0[k] = dpbusd(a0[k], w0, _mm512_loadu_si512(xs[k].add(64 * b).cast()));
                        a1[k] =
                            dpbusd(a1[k], w1, _mm512_loadu_si512(xs[k].add(64 * b + 64).cast()));
                    }
                }
                b += 2;
            }
            let mut c = 64 * b;
            while c < ni {
                let rem = ni - c;
                // SAFETY: the masked loads read the ceil(rem/2) ≤ 32 row bytes at c/2 and the
                // min(rem, 64) codes at c, all valid.
                unsafe {
                    let wb = _mm512_maskz_loadu_epi8(
                        mask64(rem.div_ceil(2).min(32)),
                        row.add(c / 2).cast(),
                    );
                    let w = nib64(_mm512_castsi512_si256(wb));
                    for k in 0..T {
                        let xv = _mm512_maskz_loadu_epi8(mask64(rem), xs[k].add(c));
                        a0[k] = dpbusd(a0[k], w, xv);
                    }
                }
                c += 64;
            }
            let mut out = [0i32; T];
            for k in 0..T {
                out[k] = _mm512_reduce_add_epi32(_mm512_add_epi32(a0[k], a1[k]));
            }
            out
        }

        /// Exact lane sums of 8 vectors: lane `r` of the result is `Σ lanes of a[r]` (i32;
        /// exact while every sum fits, which the callers' bounds guarantee): each vector's
        /// 256-bit halves added, then the AVX2 arm's [`sums8`].
        #[inline]
        #[target_feature(enable = $feat)]
        fn sums8_512(a: [__m512i; 8]) -> __m256i {
            sums8(core::array::from_fn(|r| {
                _mm256_add_epi32(_mm512_castsi512_si256(a[r]), _mm512_extracti64x4_epi64::<1>(a[r]))
            }))
        }

        /// The 8 exact sums of a band of 8 weight rows against one activation row, as one
        /// vector (lane `r` = row `r`): `step(acc, w, x)` adds one block (`W` bytes of each row
        /// at `w[r]`, `X` activation codes at `x`) into the 8 accumulators, one per row (8
        /// independent `dpbusd` chains, where the one-row kernels had two), for each of the
        /// `blocks` full blocks and then the partial last block `tail` (zero-padded copies), if
        /// any; [`sums8_512`] at the end (one reduction per 8 rows). `STREAM`: each block also
        /// prefetches into L2 the next `8 · W` bytes from `ahead`, the start of a later band
        /// (its 8 rows are contiguous; `crate::arch::x86_64::band_ahead`), so a band is in
        /// flight while this one is summed.
        ///
        /// # Safety
        /// Features available; every `rows[r]` holds at least `W · blocks` bytes, `x` at least
        /// `X · blocks` codes, the tail's pointers `W` and `X`; `step` reads only the `W` and
        /// `X` bytes at its pointers.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn band8_sums_512<const W: usize, const X: usize, const STREAM: bool>(
            rows: [*const u8; 8],
            x: *const i8,
            blocks: usize,
            tail: Option<([*const u8; 8], *const i8)>,
            ahead: *const u8,
            step: impl Fn(&mut [__m512i; 8], [*const u8; 8], *const i8),
        ) -> __m256i {
            let mut acc = [_mm512_setzero_si512(); 8];
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
            sums8_512(acc)
        }

        /// `Σ nib · x` of 8 int4 rows against **one** activation row ([`band8_sums_512`],
        /// 128-column blocks): the block's 128 activation codes are loaded once and split into
        /// even and odd columns ([`split_even_odd`]), shared by the 8 rows; a row's block is
        /// one 64-byte load, `& 0x0F`, `≫ 4 & 0x0F` and two `dpbusd` (no unpacking into column
        /// order). In the zero-padded tail the padding nibbles meet zero codes. Exact: `nib ≤
        /// 15`, `|x| ≤ 127`.
        ///
        /// # Safety
        /// As [`band8_sums_512`] with `W = 64`, `X = 128`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int4_band8_q8<const STREAM: bool>(
            rows: [*const u8; 8],
            x: *const i8,
            blocks: usize,
            tail: Option<([*const u8; 8], *const i8)>,
            ahead: *const u8,
        ) -> __m256i {
            let mask = _mm512_set1_epi8(0x0F);
            let step = |acc: &mut [__m512i; 8], w: [*const u8; 8], x: *const i8| {
                // SAFETY: x points at 128 codes, each w[r] at 64 bytes (band8_sums_512).
                let (xe, xo) = unsafe {
                    split_even_odd(
                        _mm512_loadu_si512(x.cast()),
                        _mm512_loadu_si512(x.add(64).cast()),
                    )
                };
                for r in 0..8 {
                    // SAFETY: as above.
                    let w = unsafe { _mm512_loadu_si512(w[r].cast()) };
                    let lo = _mm512_and_si512(w, mask);
                    let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(w), mask);
                    acc[r] = dpbusd(dpbusd(acc[r], lo, xe), hi, xo);
                }
            };
            // SAFETY: the caller's contract.
            unsafe { band8_sums_512::<64, 128, STREAM>(rows, x, blocks, tail, ahead, step) }
        }

        /// `Σ w · x` of 8 int8 rows against one activation row ([`band8_sums_512`], 64-column
        /// blocks): the block's activation codes are loaded once for the 8 rows, each row's
        /// block is one load and one [`dot64_signed`].
        ///
        /// # Safety
        /// As [`band8_sums_512`] with `W = X = 64`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int8_band8_q8<const STREAM: bool>(
            rows: [*const u8; 8],
            x: *const i8,
            blocks: usize,
            tail: Option<([*const u8; 8], *const i8)>,
            ahead: *const u8,
        ) -> __m256i {
            let step = |acc: &mut [__m512i; 8], w: [*const u8; 8], x: *const i8| {
                // SAFETY: x and each w[r] point at 64 readable bytes (band8_sums_512).
                let xv = unsafe { _mm512_loadu_si512(x.cast()) };
                for r in 0..8 {
                    // SAFETY: as above.
                    let w = unsafe { _mm512_loadu_si512(w[r].cast()) };
                    acc[r] = dot64_signed(acc[r], w, xv);
                }
            };
            // SAFETY: the caller's contract.
            unsafe { band8_sums_512::<64, 64, STREAM>(rows, x, blocks, tail, ahead, step) }
        }

        /// [`q8_int4_row`] for activation row `si` alone (`xsum` = its `Σx`), the GEMV case:
        /// weight rows in bands of 8 through [`int4_band8_q8`] (a final, shorter band repeats
        /// its last row and stores only its own), then the reference's epilogue
        /// `((0 + (d as f32) · s) · sx)` for the 8 rows as lane-wise vector operations (each
        /// lane exactly its row's operations: bit-identical).
        ///
        /// # Safety
        /// Features available; shapes as asserted by [`matmul_q8_rows`].
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
            let blocks = ni / 128;
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
            let mut xt = [0i8; 128];
            xt[..ni - 128 * blocks].copy_from_slice(&q[128 * blocks..]);
            let off = _mm256_set1_epi32(8 * xsum);
            let stream = streams(m);
            // Each row's partial last block, zero-padded (every band copies the same number
            // of bytes over the same prefix, so the padding stays zero).
            let mut wt = [[0u8; 64]; 8];
            let mut r0 = 0;
            while r0 < nr {
                let nv = (nr - r0).min(8);
                let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                if ni % 128 != 0 {
                    for (r, t) in wt.iter_mut().enumerate() {
                        let row = m.row_bytes(o[r]);
                        t[..row.len() - 64 * blocks].copy_from_slice(&row[64 * blocks..]);
                    }
                }
                let tail = (ni % 128 != 0)
                    .then(|| (core::array::from_fn(|r| wt[r].as_ptr()), xt.as_ptr()));
                // SAFETY: every row has ceil(I/2) ≥ 64·blocks bytes, q has I ≥ 128·blocks
                // codes; the tail copies hold 64 bytes and 128 codes.
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

        /// Fused int4-row int8-activation kernel: `d = Σ nib·x − 8·Σx` (exact), then the
        /// scalar reference's epilogue. Activation rows 4 or 2 at a time share each weight
        /// row's loads ([`int4_row_dots`]); a single one (`S = 1`, or the last of an odd batch)
        /// takes the 8-row band kernel [`q8_int4_band8`].
        ///
        /// # Safety
        /// Features available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn q8_int4_row(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr, s) = (m.i(), rows.len(), xq.s());
            let stream = streams(m);
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
                let mut abuf = AlignedActs(core::mem::MaybeUninit::uninit());
                // SAFETY: each xp[k], k < st, points at an activation row of I codes.
                unsafe { align_acts(&mut xp, st, ni, &mut abuf) };
                for (r, o) in rows.clone().enumerate() {
                    let row = m.row_bytes(o).as_ptr();
                    // SAFETY: the row has ceil(I/2) bytes and each activation row I codes.
                    let d4: [i32; 4] = unsafe {
                        match st {
                            4 if stream => int4_row_dots::<4, true>(row, xp, ni),
                            4 => int4_row_dots::<4, false>(row, xp, ni),
                            _ => {
                                // st = 2 (a single activation row took q8_int4_band8).
                                let x2 = [xp[0], xp[1]];
                                let d = if stream {
                                    int4_row_dots::<2, true>(row, x2, ni)
                                } else {
                                    int4_row_dots::<2, false>(row, x2, ni)
                                };
                                [d[0], d[1], 0, 0]
                            }
                        }
                    };
                    let sc = scalar::group_scale_q8(m, o, 0);
                    for k in 0..st {
                        let sx = xq.row(s0 + k).1;
                        y[(s0 + k) * nr + r] = epilogue_row(d4[k] - 8 * xsum[k], sc, sx, ni);
                    }
                }
                s0 += st;
            }
        }

        /// int2-row int8-activation kernel. Each activation row is first split into the four
        /// crumb planes of every 256-column block (plane `k` = columns `4b + k`, `b < 64`: the
        /// crumbs at bits `2k` of the block's 64 weight bytes; zero past `I`), in an aligned
        /// stack buffer; then per weight row and block: one 64-byte load (masked for the last
        /// block), three shifts, four `& 3`, four `dpbusd` (crumb `0..=3` unsigned against the
        /// plane). `d = Σ crumb·x − 2·Σx` is exact (|d| ≤ 3 · 127 · I < 2³¹), then the
        /// reference's one-group epilogue. Rows of more than [`XA`] columns take the generic
        /// path. Weight rows are read once per activation row.
        ///
        /// # Safety
        /// Features available; shapes as asserted by [`matmul_q8_rows`]; `I ≤ XA`.
        #[target_feature(enable = $feat)]
        unsafe fn q8_int2_row(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let nb = ni.div_ceil(256);
            let stream = streams(m);
            let three = _mm512_set1_epi8(3);
            let mut planes = AlignedActs(core::mem::MaybeUninit::uninit());
            let base = planes.0.as_mut_ptr().cast::<i8>();
            for si in 0..xq.s() {
                let (q, sx) = xq.row(si);
                let xsum: i32 = q.iter().map(|&v| i32::from(v)).sum();
                // SAFETY: the buffer holds XA ≥ 256 · nb bytes (I ≤ XA, a multiple of 256).
                unsafe { crumb_planes(q, base) };
                for (r, o) in rows.clone().enumerate() {
                    let row = m.row_bytes(o).as_ptr();
                    let z = _mm512_setzero_si512();
                    let (mut a0, mut a1, mut a2, mut a3) = (z, z, z, z);
                    for j in 0..nb {
                        let rem = ni - 256 * j;
                        if stream {
                            prefetch_l2(row.wrapping_add(64 * j).cast());
                        }
                        // SAFETY: the row has ceil(I/4) bytes: a full block reads the 64 at
                        // 64·j (256·j + 256 ≤ I), the last one the ceil(rem/4) there (masked);
                        // the four planes of block j (256 bytes at 256·j) were written above.
                        unsafe {
                            let w = if rem >= 256 {
                                _mm512_loadu_si512(row.add(64 * j).cast())
                            } else {
                                _mm512_maskz_loadu_epi8(
                                    mask64(rem.div_ceil(4)),
                                    row.add(64 * j).cast(),
                                )
                            };
                            let p = base.add(256 * j);
                            let x = |k: usize| _mm512_load_si512(p.add(64 * k).cast());
                            a0 = dpbusd(a0, _mm512_and_si512(w, three), x(0));
                            a1 = dpbusd(
                                a1,
                                _mm512_and_si512(_mm512_srli_epi16::<2>(w), three),
                                x(1),
                            );
                            a2 = dpbusd(
                                a2,
                                _mm512_and_si512(_mm512_srli_epi16::<4>(w), three),
                                x(2),
                            );
                            a3 = dpbusd(
                                a3,
                                _mm512_and_si512(_mm512_srli_epi16::<6>(w), three),
                                x(3),
                            );
                        }
                    }
                    let d = _mm512_reduce_add_epi32(_mm512_add_epi32(
                        _mm512_add_epi32(a0, a1),
                        _mm512_add_epi32(a2, a3),
                    ));
                    let sc = scalar::group_scale_q8(m, o, 0);
                    y[si * nr + r] = epilogue_row(d - 2 * xsum, sc, sx, ni);
                }
            }
        }

        /// Splits activation row `q` into the four crumb planes of every 256-column block at
        /// `base` (plane `k` byte `b` = column `256j + 4b + k`, zero past `I`; the layout of
        /// [`q8_int2_row`] and [`q8_int3_g64`]).
        ///
        /// # Safety
        /// `base` valid for writes of `256 · ceil(I/256)` bytes (`I = q.len()`).
        unsafe fn crumb_planes(q: &[i8], base: *mut i8) {
            for j in 0..q.len().div_ceil(256) {
                for k in 0..4 {
                    for b in 0..64 {
                        let c = 256 * j + 4 * b + k;
                        // SAFETY: 256·j + 64·k + b < 256 · ceil(I/256): the caller's contract.
                        unsafe {
                            base.add(256 * j + 64 * k + b).write(q.get(c).copied().unwrap_or(0))
                        };
                    }
                }
            }
        }

        /// int3-g64 int8-activation kernel, four 64-column groups (96 weight bytes) per step.
        /// The activation row is split once into crumb planes ([`crumb_planes`]), and its
        /// per-group sums kept. A step loads the four 16-byte low planes into one vector
        /// (group `g` in 128-bit lane `g`) and the four 8-byte high planes into 32 bytes,
        /// which widen to 64 nibbles (`nib64`: byte `16g + b` = bits `4b .. 4b + 4` of group
        /// `g`'s high plane, i.e. the high bits of columns `4b + k`). Per plane `k` (one
        /// `vpternlogd`, `a | (b & c)`): `u = ((lo
        /// ≫ 2k) & 3) | (bit k of the nibble) · 4 ∈ [0, 7]`, one `dpbusd` against plane `k`.
        /// Each 128-bit lane then sums to its group's `Σ u·x`; `d = Σ u·x − 4·Σx` (exact), and
        /// the reference's epilogue runs per group in order (`acc = acc + (d as f32) · s`, then
        /// `acc · sx`). A last step of fewer than four groups reads a zero-padded copy.
        ///
        /// # Safety
        /// Features available; shapes as asserted by [`matmul_q8_rows`]; `I ≤ XA`.
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
            let (full, nq) = (ng / 4, ng.div_ceil(4));
            let mut planes = AlignedActs(core::mem::MaybeUninit::uninit());
            let base = planes.0.as_mut_ptr().cast::<i8>();
            let mut gsum = [0i32; XA / 64];
            for si in 0..xq.s() {
                let (q, sx) = xq.row(si);
                // SAFETY: the buffer holds XA ≥ 256 · ceil(I/256) bytes (I ≤ XA, XA a
                // multiple of 256).
                unsafe { crumb_planes(q, base) };
                group_sums64(q, &mut gsum);
                for (r, o) in rows.clone().enumerate() {
                    let row = m.row_bytes(o);
                    let sc = &sf[o * ng..(o + 1) * ng];
                    let mut acc = 0.0f32;
                    let mut epilogue = |d: [i32; 4], g0: usize, n: usize| {
                        int3_epilogue(&mut acc, d, n, &gsum[g0..], &sc[g0..]);
                    };
                    for qi in 0..full {
                        // SAFETY: groups 4qi .. 4qi + 4 exist: 96 bytes at 96·qi are in the
                        // row; the planes of block qi were written above.
                        let d = unsafe { int3_quad(row.as_ptr().add(96 * qi), base.add(256 * qi)) };
                        epilogue(d, 4 * qi, 4);
                    }
                    if full < nq {
                        let mut tail = [0u8; 96];
                        tail[..row.len() - 96 * full].copy_from_slice(&row[96 * full..]);
                        // SAFETY: the copy holds 96 bytes; the planes of block `full` were
                        // written above.
                        let d = unsafe { int3_quad(tail.as_ptr(), base.add(256 * full)) };
                        epilogue(d, 4 * full, ng - 4 * full);
                    }
                    y[si * nr + r] = acc * sx;
                }
            }
        }

        /// `Σ u·x` of four int3-g64 groups (96 bytes at `w`) against their crumb planes (256
        /// bytes at `p`), one sum per group; see [`q8_int3_g64`].
        ///
        /// # Safety
        /// `w` valid for reads of 96 bytes; `p` 64-byte aligned and valid for 256.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn int3_quad(w: *const u8, p: *const i8) -> [i32; 4] {
            // SAFETY: the caller's contract: group g's planes are at 24·g (16 bytes low, then
            // 8 bytes high), g < 4.
            let (lo, hi) = unsafe {
                let l = |g: usize| _mm_loadu_si128(w.add(24 * g).cast());
                let lo = _mm512_inserti32x4::<3>(
                    _mm512_inserti32x4::<2>(
                        _mm512_inserti32x4::<1>(_mm512_castsi128_si512(l(0)), l(1)),
                        l(2),
                    ),
                    l(3),
                );
                let h = |g: usize| w.add(24 * g + 16).cast::<i64>().read_unaligned();
                (lo, _mm256_setr_epi64x(h(0), h(1), h(2), h(3)))
            };
            let nib = nib64(hi);
            let three = _mm512_set1_epi8(3);
            let four = _mm512_set1_epi8(4);
            let u = [
                _mm512_ternarylogic_epi32::<0xF8>(
                    _mm512_and_si512(_mm512_slli_epi16::<2>(nib), four),
                    lo,
                    three,
                ),
                _mm512_ternarylogic_epi32::<0xF8>(
                    _mm512_and_si512(_mm512_slli_epi16::<1>(nib), four),
                    _mm512_srli_epi16::<2>(lo),
                    three,
                ),
                _mm512_ternarylogic_epi32::<0xF8>(
                    _mm512_and_si512(nib, four),
                    _mm512_srli_epi16::<4>(lo),
                    three,
                ),
                _mm512_ternarylogic_epi32::<0xF8>(
                    _mm512_and_si512(_mm512_srli_epi16::<1>(nib), four),
                    _mm512_srli_epi16::<6>(lo),
                    three,
                ),
            ];
            let mut acc = _mm512_setzero_si512();
            for (k, uk) in u.iter().enumerate() {
                // SAFETY: plane k of the block: 64 bytes at 64·k, aligned.
                acc = dpbusd(acc, *uk, unsafe { _mm512_load_si512(p.add(64 * k).cast()) });
            }
            // Each 128-bit lane (one group) to its sum, in every dword of the lane.
            let t = _mm512_add_epi32(acc, _mm512_shuffle_epi32::<0x4E>(acc));
            let t = _mm512_add_epi32(t, _mm512_shuffle_epi32::<0xB1>(t));
            let mut out = [0i32; 16];
            // SAFETY: out holds 16 i32.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), t) };
            [out[0], out[4], out[8], out[12]]
        }

        /// int8-row int8-activation kernel: weight rows in bands of 8 (a final, shorter band
        /// repeats its last row and stores only its own), each band against every activation
        /// row in turn ([`int8_band8_q8`], 64-column blocks, the last partial block from
        /// zero-padded copies), then the reference's epilogue `((0 + d·s) · sx)` for the 8
        /// rows ([`row_epilogue8`]). The band's bytes stay cached for the later activation
        /// rows, so only the first one prefetches the next band when streaming.
        ///
        /// # Safety
        /// Features available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn q8_int8_row(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr) = (m.i(), rows.len());
            let Scales::F32(sf) = m.scales() else {
                unreachable!("int8-row has f32 scales (Matrix::new)")
            };
            if ni == 0 {
                for si in 0..xq.s() {
                    let sx = xq.row(si).1;
                    for v in &mut y[si * nr..(si + 1) * nr] {
                        *v = 0.0 * sx; // no groups: acc = 0, y = acc · sx
                    }
                }
                return;
            }
            let blocks = ni / 64;
            // The partial last block of each row and activation row, zero-padded (every copy
            // covers the same prefix, so the padding stays zero).
            let (mut wt, mut xt) = ([[0u8; 64]; 8], [0i8; 64]);
            let tn = ni - 64 * blocks;
            let stream = streams(m);
            let mut r0 = 0;
            while r0 < nr {
                let nv = (nr - r0).min(8);
                let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                if tn > 0 {
                    for (r, t) in wt.iter_mut().enumerate() {
                        t[..tn].copy_from_slice(&m.row_bytes(o[r])[64 * blocks..]);
                    }
                }
                for si in 0..xq.s() {
                    let (q, sx) = xq.row(si);
                    if tn > 0 {
                        xt[..tn].copy_from_slice(&q[64 * blocks..]);
                    }
                    let tail =
                        (tn > 0).then(|| (core::array::from_fn(|r| wt[r].as_ptr()), xt.as_ptr()));
                    // SAFETY: every row and q hold I ≥ 64·blocks bytes; the tail copies 64.
                    let d = unsafe {
                        let ahead = crate::arch::x86_64::band_ahead(rp[0], m.row_bytes(0).len());
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

        /// Activation codes per chunk of [`q8_g32_rows16`] (de-interleaved on the stack, 16 KiB,
        /// plus 8 KiB of per-block corrections). Rows up to 16 Ki columns are one chunk, so a
        /// band reads its rows whole: with 8192-column chunks a 14 336-column matrix from DRAM
        /// was read in two passes of partial rows, at 0.62–0.65 of a plain read of the same
        /// bytes (mxfp4 q8, avx512-vnni, Zen 4 VM, 9362 × 14 336); one pass: 0.87; int4-grouped
        /// `gs = 32` 0.56 → 0.77–0.81. Unchanged in cache.
        const QC: usize = 16384;

        /// Whether [`q8_g32_rows16`] takes int4-grouped with group length `gs`: a multiple of
        /// 32 (whole subgroups) that divides [`QC`] (a chunk never splits a group), i.e. 32,
        /// 64, 128, …, 16384.
        const fn g32_multiple(gs: usize) -> bool {
            gs != 0 && gs % 32 == 0 && QC % gs == 0
        }

        /// Splits 128 activation codes (`x0` = columns 0..64, `x1` = 64..128 of a block) into
        /// the 64 even and the 64 odd columns, in order: the layout of the low and high
        /// nibbles of the block's 64 weight bytes. `vpshufb` gathers the 8 even then the 8 odd
        /// bytes of each 16-byte lane, two `vpermd` (the second merged under a mask) put the
        /// qwords in column order.
        #[inline]
        #[target_feature(enable = $feat)]
        fn split_even_odd(x0: __m512i, x1: __m512i) -> (__m512i, __m512i) {
            #[rustfmt::skip]
                            let pat = _mm512_broadcast_i32x4(_mm_setr_epi8(
                        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
            ));
            let (a, b) = (_mm512_shuffle_epi8(x0, pat), _mm512_shuffle_epi8(x1, pat));
            // dwords of a: [E0 O0 E1 O1 E2 O2 E3 O3] in qword pairs; even = E0..E3 of a, then of b.
            let ie = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 0, 1, 4, 5, 8, 9, 12, 13);
            let io = _mm512_setr_epi32(2, 3, 6, 7, 10, 11, 14, 15, 2, 3, 6, 7, 10, 11, 14, 15);
            let xe = _mm512_mask_permutexvar_epi32(_mm512_permutexvar_epi32(ie, a), 0xFF00, ie, b);
            let xo = _mm512_mask_permutexvar_epi32(_mm512_permutexvar_epi32(io, a), 0xFF00, io, b);
            (xe, xo)
        }

        /// Sums of 16 vectors of i32 lanes, 4 per 128-bit lane `q`, into 4 vectors: lane `r` of
        /// result `q` = the sum of the four lanes of 128-bit lane `q` of `a[r]`. Every lane of
        /// `a` must fit in i16 and every pair sum too (|lane| ≤ 16 383): then the two
        /// `vpackssdw` + `vpmaddwd(·, 1)` levels are exact; a 4 × 4 transpose of 128-bit lanes
        /// (`vshufi32x4`) finishes.
        #[inline]
        #[target_feature(enable = $feat)]
        fn reduce16x4(a: [__m512i; 16]) -> [__m512i; 4] {
            let ones = _mm512_set1_epi16(1);
            let mut h = [_mm512_setzero_si512(); 8];
            for (j, hj) in h.iter_mut().enumerate() {
                // lane q: [a2j(0)+a2j(1), a2j(2)+a2j(3), a2j+1(0)+a2j+1(1), a2j+1(2)+a2j+1(3)]
                *hj = _mm512_madd_epi16(_mm512_packs_epi32(a[2 * j], a[2 * j + 1]), ones);
            }
            let mut f = [_mm512_setzero_si512(); 4];
            for (k, fk) in f.iter_mut().enumerate() {
                // lane q: the full sums of rows 4k .. 4k + 4
                *fk = _mm512_madd_epi16(_mm512_packs_epi32(h[2 * k], h[2 * k + 1]), ones);
            }
            let t0 = _mm512_shuffle_i32x4::<0x44>(f[0], f[1]);
            let t1 = _mm512_shuffle_i32x4::<0xEE>(f[0], f[1]);
            let t2 = _mm512_shuffle_i32x4::<0x44>(f[2], f[3]);
            let t3 = _mm512_shuffle_i32x4::<0xEE>(f[2], f[3]);
            [
                _mm512_shuffle_i32x4::<0x88>(t0, t2),
                _mm512_shuffle_i32x4::<0xDD>(t0, t2),
                _mm512_shuffle_i32x4::<0x88>(t1, t3),
                _mm512_shuffle_i32x4::<0xDD>(t1, t3),
            ]
        }

        /// A 16 × 4 transpose of dwords: `row(r)` gives 4 dwords of row `r`; result `k` has
        /// dword `k` of row `r` in lane `r` (16 loads combined into four vectors by
        /// `vinserti32x4`, then `vpunpck{l,h}{dq,qdq}` within 128-bit lanes). `K`: one copy
        /// per band-kernel instance (see [`scales_f32_16x4`]).
        #[inline]
        #[target_feature(enable = $feat)]
        fn transpose16x4<const K: bool, const V: bool>(
            row: impl Fn(usize) -> __m128i,
        ) -> [__m512i; 4] {
            // z(j): 128-bit lane L holds row j + 4L.
            let z = |j: usize| {
                let v = _mm512_castsi128_si512(row(j));
                let v = _mm512_inserti32x4::<1>(v, row(j + 4));
                let v = _mm512_inserti32x4::<2>(v, row(j + 8));
                _mm512_inserti32x4::<3>(v, row(j + 12))
            };
            transpose_lanes4(z(0), z(1), z(2), z(3))
        }

        /// [`transpose16x4`] where all 16 bytes at every `row(r)` are readable: each row is
        /// loaded broadcast to the four 128-bit lanes (done by the load unit) and merged under
        /// a mask (`vpblendmd`), which spares the shuffle port the 12 `vinserti32x4`. `K`: one
        /// copy per band-kernel instance (see [`scales_f32_16x4`]).
        ///
        /// # Safety
        /// Every `row(r)` is valid for reads of 16 bytes.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn transpose16x4_full<const K: bool, const V: bool>(
            row: impl Fn(usize) -> *const u8,
        ) -> [__m512i; 4] {
            // SAFETY: 16 bytes at row(r) are readable (the caller's contract).
            let bc = |r: usize| _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(row(r).cast()) });
            let z = |j: usize| {
                let v = bc(j);
                let v = _mm512_mask_blend_epi32(0x00F0, v, bc(j + 4));
                let v = _mm512_mask_blend_epi32(0x0F00, v, bc(j + 8));
                _mm512_mask_blend_epi32(0xF000, v, bc(j + 12))
            };
            transpose_lanes4(z(0), z(1), z(2), z(3))
        }

        /// The 4 × 4 dword transposes within the 128-bit lanes of `z0 .. z3`.
        #[inline]
        #[target_feature(enable = $feat)]
        fn transpose_lanes4(z0: __m512i, z1: __m512i, z2: __m512i, z3: __m512i) -> [__m512i; 4] {
            let (t0, t1) = (_mm512_unpacklo_epi32(z0, z1), _mm512_unpackhi_epi32(z0, z1));
            let (t2, t3) = (_mm512_unpacklo_epi32(z2, z3), _mm512_unpackhi_epi32(z2, z3));
            [
                _mm512_unpacklo_epi64(t0, t2),
                _mm512_unpackhi_epi64(t0, t2),
                _mm512_unpacklo_epi64(t1, t3),
                _mm512_unpackhi_epi64(t1, t3),
            ]
        }

        /// The f32 group scales of groups `g .. g + n` (`n ≤ 4`) of the 16 rows `o[r]`, one
        /// vector per group, lane `r` = row `o[r]` (int4-grouped; groups past `n` are 0).
        ///
        /// It must be inlined into the band loop: an out-of-line call there clobbers every zmm
        /// register (gs 32 ran at 48 instead of 70 G weights/s). LLVM inlines it only while it
        /// has one caller, so each band-kernel instance calls its own copy: `K` is the
        /// instance's `SPECIAL` (the same for [`scales_ue8_16x16`] and the transposes). The
        /// wider groups gather instead ([`gather_scales16`]).
        #[inline]
        #[target_feature(enable = $feat)]
        fn scales_f32_16x4<const K: bool, const V: bool>(
            s: &[f32],
            o: &[usize; 16],
            ng: usize,
            g: usize,
            n: usize,
        ) -> [__m512; 4] {
            let t = if n == 4 {
                // SAFETY: each slice holds the 4 scales (16 bytes) read.
                unsafe {
                    transpose16x4_full::<K, V>(|r: usize| {
                        s[o[r] * ng + g..o[r] * ng + g + 4].as_ptr().cast()
                    })
                }
            } else {
                let mk = mask16(n);
                transpose16x4::<K, V>(|r: usize| {
                    let sr = &s[o[r] * ng + g..o[r] * ng + g + n];
                    // SAFETY: the masked load reads the n < 4 scales of sr only.
                    _mm512_castsi512_si128(unsafe {
                        _mm512_maskz_loadu_epi32(mk, sr.as_ptr().cast())
                    })
                })
            };
            t.map(|v| _mm512_castsi512_ps(v))
        }

        /// The f32 scales `s[base[r] + g]` of the 16 rows of a band, lane `r` (two AVX2
        /// `vgatherdps`, which Miri implements; all indices are below `2^31`).
        ///
        /// # Safety
        /// Every `base[r] + g` indexes `s` (and fits in i32).
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn gather_scales16(s: &[f32], base: &[i32; 16], g: usize) -> __m512 {
            #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
            let gv = _mm256_set1_epi32(g as i32);
            // SAFETY: base holds 16 i32 (two 32-byte loads); the gathered indices are in s.
            unsafe {
                let i0 = _mm256_add_epi32(_mm256_loadu_si256(base.as_ptr().cast()), gv);
                let i1 = _mm256_add_epi32(_mm256_loadu_si256(base.as_ptr().add(8).cast()), gv);
                let lo = _mm256_i32gather_ps::<4>(s.as_ptr(), i0);
                let hi = _mm256_i32gather_ps::<4>(s.as_ptr(), i1);
                let v = _mm512_castps256_ps512(lo);
                _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castps_pd(v), _mm256_castps_pd(hi)))
            }
        }

        /// The UE8M0 bytes of groups `g .. g + n` (`n ≤ 16`) of the 16 rows `o[r]`, for four
        /// blocks: result `k` holds in lane `r` the bytes of groups `g + 4k .. g + 4k + 4` of
        /// row `o[r]`, group `g + 4k + q` in byte `q` (0 past `n`). `K`: one copy per
        /// band-kernel instance (see [`scales_f32_16x4`]).
        #[inline]
        #[target_feature(enable = $feat)]
        fn scales_ue8_16x16<const K: bool, const V: bool>(
            e: &[u8],
            o: &[usize; 16],
            ng: usize,
            g: usize,
            n: usize,
        ) -> [__m512i; 4] {
            if n == 16 {
                // SAFETY: each slice holds the 16 bytes read.
                unsafe {
                    transpose16x4_full::<K, V>(|r: usize| {
                        e[o[r] * ng + g..o[r] * ng + g + 16].as_ptr()
                    })
                }
            } else {
                let mk = mask64(n);
                transpose16x4::<K, V>(|r: usize| {
                    let er = &e[o[r] * ng + g..o[r] * ng + g + n];
                    // SAFETY: the masked load reads the n < 16 bytes of er only.
                    _mm512_castsi512_si128(unsafe {
                        _mm512_maskz_loadu_epi8(mk, er.as_ptr().cast())
                    })
                })
            }
        }

        /// `2^(e − 127)` as f32 for the byte `q` of every lane of `v` (`e = 0` → `+0.0`;
        /// `e ≤ 254`: a normal f32, never subnormal): the byte shifted into the exponent field.
        #[inline]
        #[target_feature(enable = $feat)]
        fn ue8_pow2(v: __m512i, q: usize) -> __m512 {
            let sh = match q {
                0 => _mm512_slli_epi32::<23>(v),
                1 => _mm512_slli_epi32::<15>(v),
                2 => _mm512_slli_epi32::<7>(v),
                _ => _mm512_srli_epi32::<1>(v),
            };
            _mm512_castsi512_ps(_mm512_and_si512(sh, _mm512_set1_epi32(0x7F80_0000)))
        }

        /// Whether rows of `m` lie a multiple of 4 KiB apart: the band kernel's 16 loads of a
        /// block then fall into one L1 set (8 ways), and [`q8_g32_rows16`] first copies the
        /// band's rows, [`RB`] blocks at a time, into a [`BandBuf`] (avx512-vnni, mxfp4 q8,
        /// 64 × 8192: 33 → 45 G weights/s; int4-grouped `gs = 32` 33 → 49).
        fn restrides(m: &Matrix<'_>) -> bool {
            m.row_bytes(0).len() % 4096 == 0
        }

        /// Whether [`q8_g32_rows16`] runs its instance with the two rare cases —
        /// prefetching from DRAM ([`streams`]) and copying rows ([`restrides`]) — checked per
        /// block. The common case runs an instance without them: the checks alone cost the
        /// cached 512 × 1024 case 2–4 %.
        fn band_special(m: &Matrix<'_>) -> bool {
            m.o() > 0 && (streams(m) || restrides(m))
        }

        /// [`RB`] 64-byte blocks of each of the 16 rows of a band, cache-line aligned.
        #[repr(C, align(64))]
        struct BandBuf([[u8; 64 * RB]; 16]);

        /// Blocks per row in a [`BandBuf`].
        const RB: usize = 8;

        /// int8-activation kernel for nibble groups of 32 columns (mxfp4 when `MX`, int4-grouped
        /// `gs = 32`) or of a multiple of 32 dividing [`QC`] (int4-grouped, `WIDE`: 64, 128,
        /// …, 16384) with **one output row per lane**: bands of 16 rows share each activation
        /// load, and the reference's epilogue (`acc = acc + (d as f32) · scale`, groups in
        /// order, then `acc · sx`) runs as 16-lane vector operations, each lane performing
        /// exactly the reference's f32 operations for its row, so the result is bit-identical.
        ///
        /// Per 128-column block: the activation codes are split once into even and odd
        /// columns ([`split_even_odd`]), which match the low and high nibbles of the 64 weight
        /// bytes of each row; a row's block is then one load, `& 0x0F`, `≫ 4 & 0x0F`, (mxfp4:
        /// two `vpshufb` to `code + 12`) and two `dpbusd`. The unsigned operand is the code
        /// plus an offset (`nib` for int4, `code + 12 ∈ [0, 24]` for mxfp4: ≤ 128, so both arms
        /// are exact), and the accumulator starts at `−offset · Σx` over the same lanes, so
        /// every i32 lane ends at `Σ code · x` over 8 columns of one group (|·| ≤ 12 192). Lane
        /// `4q .. 4q + 4` is group `q` of the block; [`reduce16x4`] gives per group one vector
        /// with row `r`'s exact group sum in lane `r`.
        ///
        /// Epilogue per group: int4: `p = (d as f32) · s` (one `vmulps`, as the reference);
        /// mxfp4: `p = ((d as f32) · 0.5) · 2^(e−127)`, where `(d as f32) · 0.5` is exact
        /// (`|d| < 2¹⁶`), so `p` is the single rounding of `d · 2^(e−128)`: the reference's
        /// `(d as f32) · ue8m0_half(e)`, for every `e` (`e = 0`: `±0`, as `d · (+0.0)`;
        /// `e = 1`: `2^(e−127)` is normal, so no subnormal operand). Then `acc = acc + p`
        /// (`vaddps`; not an FMA, which would skip the product's rounding, e.g. on overflow).
        ///
        /// `WIDE` (int4-grouped, `gs = 32k`, `k ≥ 2`): a group's `d` is the i32 sum of its `k`
        /// subgroup sums, added exactly before the epilogue (`|d| ≤ gs · 8 · 127 < 2²⁴`):
        /// `gs = 64` closes two groups per block, larger groups one per `gs / 128` blocks (or
        /// at the row's end). The scales come by gather ([`gather_scales16`]). Groups never
        /// span chunks, as `gs` divides `QC`.
        ///
        /// Rows past the range's last one (a final band of fewer than 16) repeat the last row
        /// and are not stored. Columns: chunks of [`QC`]; between chunks the 16 accumulators
        /// wait in `y` (exact: f32 stored as f32). Partial blocks use masked loads; the codes
        /// past `I` are 0 and meet zero activations.
        ///
        /// # Safety
        /// Features available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        // Never inlined: inlined into `q8_rows` beside its other instances, the gs = 32 loop
        // ran at 48 instead of 70 G weights/s (avx512-vnni, 512 × 1024).
        #[inline(never)]
        unsafe fn q8_g32_rows16<const MX: bool, const WIDE: bool, const SPECIAL: bool>(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            // SAFETY: the caller's contract; VBMI is not used.
            unsafe { band_body::<MX, WIDE, SPECIAL, false>(m, xq, rows, y) }
        }

        /// [`q8_g32_rows16`] for mxfp4 on a CPU with AVX-512 VBMI: the code lookups are one
        /// `vpermb` each on the raw byte (low nibble) and the byte shifted right by 4 (high
        /// nibble), with the 16-entry table repeated four times, so index bits 4–5 do not
        /// matter and the two `& 0x0F` of the other form are not needed.
        ///
        /// # Safety
        /// The arm's features and VBMI available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat_vbmi)]
        #[inline(never)]
        unsafe fn q8_mx_rows16_vbmi<const SPECIAL: bool>(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            // SAFETY: the caller's contract, VBMI included (its `vpermb` is inlined here).
            unsafe { band_body::<true, false, SPECIAL, true>(m, xq, rows, y) }
        }

        /// The body of [`q8_g32_rows16`] and [`q8_mx_rows16_vbmi`] (`VBMI`: the lookups by
        /// `vpermb`), inlined into each: every instance has one caller, and so do the scale
        /// helpers it calls, whose copies are told apart by `<SPECIAL, VBMI>`.
        ///
        /// # Safety
        /// Features available (VBMI too when `VBMI`); shapes as asserted by
        /// [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        #[inline]
        unsafe fn band_body<
            const MX: bool,
            const WIDE: bool,
            const SPECIAL: bool,
            const VBMI: bool,
        >(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
            let (ni, nr, ngs) = (m.i(), rows.len(), m.groups_per_row());
            // 32-column subgroups per row and per group (mxfp4: 1, groups are 32 columns).
            let (nsub, per) = (ni.div_ceil(32), m.group_len() / 32);
            if nr == 0 || ni == 0 {
                for v in &mut y[..nr * xq.s()] {
                    *v = 0.0; // no groups: acc = 0, y = 0 · sx = 0 (sx finite, ≥ 0)
                }
                return;
            }
            // SAFETY: the table holds 16 bytes.
            let lut = _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(MX_OFF.as_ptr().cast()) });
            let off = _mm512_set1_epi8(if MX { 12 } else { 8 });
            let low = _mm512_set1_epi8(0x0F);
            let mut xbuf = [0i8; QC];
            let mut cbuf = [_mm512_setzero_si512(); QC / 128];
            let stream = SPECIAL && streams(m);
            let restride = SPECIAL && restrides(m);
            let mut wbuf = BandBuf([[0u8; 64 * RB]; 16]);
            for si in 0..xq.s() {
                let (q, sx) = xq.row(si);
                let ys = &mut y[si * nr..(si + 1) * nr];
                let mut c0 = 0;
                while c0 < ni {
                    let cn = (ni - c0).min(QC);
                    let nb = cn.div_ceil(128);
                    for (b, cb) in cbuf[..nb].iter_mut().enumerate() {
                        let col = c0 + 128 * b;
                        let rem = ni - col;
                        // SAFETY: the masked loads read the min(rem, 128) codes at col only;
                        // the stores write xbuf[128b .. 128b + 128] (b < QC / 128).
                        unsafe {
                            let x0 = _mm512_maskz_loadu_epi8(mask64(rem), q.as_ptr().add(col));
                            let x1 = _mm512_maskz_loadu_epi8(
                                mask64(rem.saturating_sub(64)),
                                q.as_ptr().add(col + 64.min(rem)),
                            );
                            let (xe, xo) = split_even_odd(x0, x1);
                            _mm512_storeu_si512(xbuf.as_mut_ptr().add(128 * b).cast(), xe);
                            _mm512_storeu_si512(xbuf.as_mut_ptr().add(128 * b + 64).cast(), xo);
                            let c = dpbusd(dpbusd(_mm512_setzero_si512(), off, xe), off, xo);
                            *cb = _mm512_sub_epi32(_mm512_setzero_si512(), c);
                        }
                    }
                    let (first, last) = (c0 == 0, c0 + cn == ni);
                    let mut r0 = 0;
                    while r0 < nr {
                        let nv = (nr - r0).min(16);
                        let o: [usize; 16] =
                            core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
                        let rp: [*const u8; 16] =
                            core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
                        // From DRAM: the next band's lines (the next chunk's first band after
                        // the last), one band ahead, into L2 (see `band_prefetch`).
                        let pf = if stream {
                            BandPrefetch::<16>::next(m, &rows, r0, c0, cn)
                        } else {
                            None
                        };
                        let mut acc = if first {
                            _mm512_setzero_ps()
                        } else {
                            // SAFETY: the masked load reads the nv values of this band in ys.
                            unsafe { _mm512_maskz_loadu_ps(mask16(nv), ys.as_ptr().add(r0)) }
                        };
                        let mut ue4 = [_mm512_setzero_si512(); 4];
                        // int4-grouped, groups of more than one block: the exact sum of the
                        // current group's blocks so far (chunks start at group boundaries:
                        // QC is a multiple of gs).
                        let mut part = _mm512_setzero_si512();
                        // The band's rows' first scale indices, o[r] · ngs (< s.len() ≤
                        // i32::MAX, checked by the dispatch).
                        #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
                        let sbase: [i32; 16] = core::array::from_fn(|r| (o[r] * ngs) as i32);
                        for (b, &cb) in cbuf[..nb].iter().enumerate() {
                            let col = c0 + 128 * b;
                            let rem = ni - col;
                            // SAFETY: xbuf[128b .. 128b + 128] was written above.
                            let (xe, xo) = unsafe {
                                (
                                    _mm512_loadu_si512(xbuf.as_ptr().add(128 * b).cast()),
                                    _mm512_loadu_si512(xbuf.as_ptr().add(128 * b + 64).cast()),
                                )
                            };
                            let wm = mask64(rem.div_ceil(2));
                            if let Some(pf) = &pf {
                                // Hints: never fault, whatever the (wrapping) address.
                                for p in pf.w {
                                    _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(64 * b).cast());
                                }
                                if (128 * b) % pf.line_cols == 0 {
                                    for p in pf.s {
                                        _mm_prefetch::<_MM_HINT_T1>(
                                            p.wrapping_add(64 * (128 * b / pf.line_cols)).cast(),
                                        );
                                    }
                                }
                            }
                            if restride && b % RB == 0 {
                                // The full blocks b .. b + k of every row into wbuf.
                                let k = ((ni - col) / 128).min(RB);
                                for (r, wr) in wbuf.0.iter_mut().enumerate() {
                                    for j in 0..k {
                                        // SAFETY: col + 128·k ≤ I: the row's bytes col/2 + 64j
                                        // .. + 64 exist; wr holds RB · 64 bytes (j < k ≤ RB).
                                        unsafe {
                                            let v = _mm512_loadu_si512(
                                                rp[r].add(col / 2 + 64 * j).cast(),
                                            );
                                            _mm512_storeu_si512(
                                                wr.as_mut_ptr().add(64 * j).cast(),
                                                v,
                                            );
                                        }
                                    }
                                }
                            }
                            let mut a = [_mm512_setzero_si512(); 16];
                            for (r, ar) in a.iter_mut().enumerate() {
                                // SAFETY: the row has ceil(I/2) bytes; a full block reads the
                                // 64 at col/2 (col + 128 ≤ I), or their copy in wbuf (64 at
                                // 64 · (b mod RB)), a partial one the ceil(rem/2) holding
                                // columns col..I (masked).
                                let w = unsafe {
                                    if restride && rem >= 128 {
                                        _mm512_loadu_si512(
                                            wbuf.0[r].as_ptr().add(64 * (b % RB)).cast(),
                                        )
                                    } else if rem >= 128 {
                                        _mm512_loadu_si512(rp[r].add(col / 2).cast())
                                    } else {
                                        _mm512_maskz_loadu_epi8(wm, rp[r].add(col / 2).cast())
                                    }
                                };
                                let (ue, uo) = if MX && VBMI {
                                    // vpermb reads index bits 0–5 and `lut` repeats the table
                                    // in every 16 bytes: only the nibble's 4 bits matter.
                                    // SAFETY: VBMI is available (the caller's contract).
                                    unsafe {
                                        (
                                            _mm512_permutexvar_epi8(w, lut),
                                            _mm512_permutexvar_epi8(_mm512_srli_epi16::<4>(w), lut),
                                        )
                                    }
                                } else {
                                    let lo = _mm512_and_si512(w, low);
                                    let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(w), low);
                                    if MX {
                                        (_mm512_shuffle_epi8(lut, lo), _mm512_shuffle_epi8(lut, hi))
                                    } else {
                                        (lo, hi)
                                    }
                                };
                                *ar = dpbusd(dpbusd(cb, ue, xe), uo, xo);
                            }
                            let d = reduce16x4(a);
                            let g = (c0 + 128 * b) / 32;
                            let n = (nsub - g).min(4);
                            match m.scales() {
                                Scales::Ue8m0(e) if MX => {
                                    if b % 4 == 0 {
                                        ue4 = scales_ue8_16x16::<SPECIAL, VBMI>(
                                            e,
                                            &o,
                                            ngs,
                                            g,
                                            (ngs - g).min(16),
                                        );
                                    }
                                    let v = ue4[b % 4];
                                    let half = _mm512_set1_ps(0.5);
                                    for (qi, dq) in d.iter().enumerate().take(n) {
                                        let df = _mm512_mul_ps(_mm512_cvtepi32_ps(*dq), half);
                                        acc =
                                            _mm512_add_ps(acc, _mm512_mul_ps(df, ue8_pow2(v, qi)));
                                    }
                                }
                                Scales::F32(s) if !MX => {
                                    // g: the block's first 32-column subgroup, n of them here
                                    // (past them d is 0: codes and activations are 0 there).
                                    if !WIDE {
                                        // gs = 32: four groups per block.
                                        let sc = scales_f32_16x4::<SPECIAL, VBMI>(s, &o, ngs, g, n);
                                        for (dq, sq) in d.iter().zip(&sc).take(n) {
                                            let p = _mm512_mul_ps(_mm512_cvtepi32_ps(*dq), *sq);
                                            acc = _mm512_add_ps(acc, p);
                                        }
                                    } else {
                                        // The block's complete groups: the first, how many and
                                        // their exact sums (one call site for the scale fetch,
                                        // so that it stays inlined).
                                        let z = _mm512_setzero_si512();
                                        let d01 = _mm512_add_epi32(d[0], d[1]);
                                        let d23 = _mm512_add_epi32(d[2], d[3]);
                                        let (gi, cnt, dg) = if per == 2 {
                                            // gs = 64: two groups per block.
                                            (g / 2, n.div_ceil(2), [d01, d23])
                                        } else {
                                            // gs = 128 · 2^k: a group closes after per / 4
                                            // blocks, or at the row's end.
                                            part =
                                                _mm512_add_epi32(part, _mm512_add_epi32(d01, d23));
                                            let closes = (g + 4) & (per - 1) == 0 || g + n == nsub;
                                            (
                                                g >> per.trailing_zeros(),
                                                usize::from(closes),
                                                [part, z],
                                            )
                                        };
                                        for (k, dq) in dg.iter().enumerate().take(cnt) {
                                            // SAFETY: lane r reads s[o[r]·ngs + gi + k], a
                                            // scale of row o[r] (gi + k < ngs).
                                            let sc = unsafe { gather_scales16(s, &sbase, gi + k) };
                                            let p = _mm512_mul_ps(_mm512_cvtepi32_ps(*dq), sc);
                                            acc = _mm512_add_ps(acc, p);
                                            part = z;
                                        }
                                    }
                                }
                                _ => unreachable!("scale kind checked by Matrix::new"),
                            }
                        }
                        if last {
                            acc = _mm512_mul_ps(acc, _mm512_set1_ps(sx));
                        }
                        // SAFETY: the masked store writes the nv values of this band in ys.
                        unsafe { _mm512_mask_storeu_ps(ys.as_mut_ptr().add(r0), mask16(nv), acc) };
                        r0 += 16;
                    }
                    c0 += cn;
                }
            }
        }

        /// Generic int8 path: 256-column chunks decoded once into an L1 buffer of codes, reused
        /// by up to [`ST`] activation rows; exact dot products per group segment.
        ///
        /// # Safety
        /// Features available; shapes as asserted by [`matmul_q8_rows`].
        #[target_feature(enable = $feat)]
        unsafe fn q8_generic(
            m: &Matrix<'_>,
            xq: &QuantizedActs<'_>,
            rows: Range<usize>,
            y: &mut [f32],
        ) {
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
                        decode_codes(m, row, c0, n, &mut ibuf);
                        let mut pos = c0;
                        while pos < c0 + n {
                            let end = gend.min(c0 + n);
                            for (k, dk) in d[..st].iter_mut().enumerate() {
                                let xs = &xq.row(s0 + k).0[pos..end];
                                let ws = &ibuf[pos - c0..end - c0];
                                let (wp, xp) = (ws.as_ptr(), xs.as_ptr());
                                // SAFETY: both slices hold end − pos codes.
                                *dk += unsafe { dot_i8::<false>(wp, xp, end - pos) };
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
    };
}

/// The AVX-512 F + BW arm (`Isa::Avx512`): the int8 dot step is `vpmaddubsw` + `vpmaddwd`.
pub(crate) mod plain {
    use core::arch::x86_64::{
        __m512i, _mm512_add_epi32, _mm512_madd_epi16, _mm512_maddubs_epi16, _mm512_set1_epi16,
    };

    /// `acc + Σ₄ u·s` per i32 lane; exact when `u ≤ 128` and `|s| ≤ 127` (no i16 saturation in
    /// `vpmaddubsw`: pair sums ≤ 2 · 128 · 127 = 32 512), which every caller guarantees.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn dpbusd(acc: __m512i, u: __m512i, s: __m512i) -> __m512i {
        _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)))
    }

    avx512_arm!("avx512f,avx512bw", "avx512f,avx512bw,avx512vbmi", crate::isa::Isa::Avx512);
}

/// The AVX-512 F + BW + VNNI arm (`Isa::Avx512Vnni`): the int8 dot step is one `vpdpbusd`.
pub(crate) mod vnni {
    use core::arch::x86_64::{__m512i, _mm512_dpbusd_epi32};

    /// `acc + Σ₄ u·s` per i32 lane (`u` unsigned, `s` signed; no saturation).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn dpbusd(acc: __m512i, u: __m512i, s: __m512i) -> __m512i {
        _mm512_dpbusd_epi32(acc, u, s)
    }

    avx512_arm!(
        "avx512f,avx512bw,avx512vnni",
        "avx512f,avx512bw,avx512vnni,avx512vbmi",
        crate::isa::Isa::Avx512Vnni
    );
}
